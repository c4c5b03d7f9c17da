//! `falcon bisect`: which commit moved a metric. A bisection is a session (kind `bisect`): its parameters — the
//! spec, the ends resolved to commits, the first-parent commits between them with their subjects — are the
//! session's spec, its runs are experiments (the spec at a commit, submitted under the session), and its answer
//! is the session's outcome. The session is the state: [`Exp::advance_bisect`] reads the runs, asks the pure
//! [`plan`] what to run next, submits it, and records the outcome once decided — whoever calls it (`--wait`, the
//! worker each pass, a caller that came back after dying) continues the same search.
//!
//! Runs at a commit are the completed, live and failed experiments with the spec's name and the commit's config
//! hash (`config_hash_at`: the spec's configuration with the commit), wherever they were submitted: the search
//! reuses them, across its probes and across bisections.

pub mod plan;

use crate::code::{self, Origin};
use crate::error::{ExpError, Result};
use crate::runs::Source;
use crate::Exp;
use falcon_core::ids::{ExperimentId, SessionId};
use falcon_core::spec::{config_hash_at, Code, ExperimentSpec};
use falcon_core::stats::{direction_for, Direction, Verdict};
use falcon_core::status::ExperimentStatus;
use falcon_infra::meta::{ExperimentFilter, NewSession, SessionKind, SessionRecord};
use plan::{Class, CommitRuns, Decision, Options};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// The most commits a bisection searches (the first-parent commits between its ends).
pub const MAX_COMMITS: usize = 5_000;
/// Default runs a commit gets before its first verdict.
pub const DEFAULT_MIN_RUNS: usize = 3;
/// Default cap of runs at a commit.
pub const DEFAULT_MAX_RUNS: usize = 10;

/// What `falcon bisect` asks for.
#[derive(Debug, Clone)]
pub struct BisectRequest {
    /// The spec run at each commit (its `code.repo` names the repository unless `repo` does).
    pub spec: ExperimentSpec,
    /// The repository, when not the spec's `code.repo`.
    pub repo: Option<String>,
    /// The good end (a ref).
    pub good: String,
    /// The bad end (a ref).
    pub bad: String,
    /// The metric.
    pub metric: String,
    /// Which way is better, when the metric has no standard direction.
    pub direction: Option<Direction>,
    /// Runs a commit gets before its first verdict.
    pub min_runs: usize,
    /// The cap of runs at a commit.
    pub max_runs: usize,
    /// Commits probed at once; `None`: two when the pools have room for both probes' runs at once, else one.
    pub probes: Option<usize>,
    /// The session's name; default `bisect <name> <good>..<bad>`.
    pub name: Option<String>,
}

/// One commit of the range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    /// Full SHA.
    pub commit: String,
    /// Subject.
    pub subject: String,
    /// Author.
    pub author: String,
    /// Committer date.
    pub date: String,
}

/// A bisection's parameters, as its session keeps them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BisectParams {
    /// The spec (canonical JSON), `code.repo` resolved.
    pub spec: serde_json::Value,
    /// The repository as recorded.
    pub repo: String,
    /// Whether the repository is a local path (a CLI bisection may use one; the API may not).
    pub local_repos: bool,
    /// The ends as asked.
    pub good_ref: String,
    /// The ends as asked.
    pub bad_ref: String,
    /// The metric.
    pub metric: String,
    /// Which way is better.
    pub direction: Direction,
    /// Runs before a first verdict.
    pub min_runs: usize,
    /// The cap of runs.
    pub max_runs: usize,
    /// Commits probed at once.
    pub probes: usize,
    /// The good end, then the first-parent commits after it up to the bad end.
    pub commits: Vec<Commit>,
}

/// What a bisection says (stored as the session's outcome once decided).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BisectOutcome {
    /// The session.
    pub session: SessionId,
    /// `searching` or `decided`.
    pub state: String,
    /// The culprit, when one was found.
    pub culprit: Option<Commit>,
    /// The culprit against its parent.
    pub culprit_verdict: Option<Verdict>,
    /// The bad end against the good end, once both have their runs.
    pub verdict: Option<Verdict>,
    /// The good end.
    pub good: Commit,
    /// The bad end.
    pub bad: Commit,
    /// Commits in the range (the good end included).
    pub commits: usize,
    /// Experiments the search used (reused ones included).
    pub runs: usize,
    /// Every commit with runs, in commit order.
    pub tested: Vec<Tested>,
    /// When only skipped or inconclusive commits separate the last good one from the first bad one: the
    /// commits the change may be in.
    pub candidates: Vec<Commit>,
    /// What it came to, in a sentence.
    pub message: String,
    /// The metric.
    pub metric: String,
}

/// One commit tested.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tested {
    /// Full SHA.
    pub commit: String,
    /// Subject.
    pub subject: String,
    /// Its place in the range (0: the good end).
    pub index: usize,
    /// Runs at it (completed, live and failed).
    pub runs: usize,
    /// Runs with the metric.
    pub measured: usize,
    /// Runs that failed or have no metric.
    pub failed: usize,
    /// `good`, `bad`, `skipped`, `inconclusive`, `pending` (runs going or to add) or `undecided` (the answer came
    /// without its verdict).
    pub verdict: String,
    /// The geometric mean of its runs' medians.
    pub median: Option<f64>,
    /// Relative change against the good end, when compared.
    pub delta_rel: Option<f64>,
    /// Its experiments.
    pub experiments: Vec<ExperimentId>,
}

impl Exp {
    /// Starts a bisection from `origin`: resolves the ends in the repository, lists the first-parent commits
    /// between them, records the session and takes its first step (the ends' runs submitted).
    pub async fn start_bisect(&self, request: &BisectRequest, origin: &Origin) -> Result<BisectOutcome> {
        let repo_name = match (&request.repo, &request.spec.code) {
            (Some(repo), _) => repo.clone(),
            (None, Some(code)) => code.repo.clone(),
            (None, None) => {
                return Err(ExpError::Invalid(format!(
                    "`{}` names no repository: add `code: {{repo: PATH_OR_URL}}` to the spec, or pass --repo",
                    request.spec.name
                )))
            }
        };
        let direction = request.direction.or_else(|| direction_for(&request.metric)).ok_or_else(|| {
            ExpError::Invalid(format!(
                "`{}` has no standard direction; say whether higher or lower is better",
                request.metric
            ))
        })?;
        if request.min_runs < 2 || request.max_runs < request.min_runs || request.max_runs > 100 {
            return Err(ExpError::Invalid(format!(
                "runs a commit: at least 2 before a verdict and a cap from there to 100 (got {} and {})",
                request.min_runs, request.max_runs
            )));
        }
        self.check_placeable(&request.spec)?;
        let mirrors = self.config.data_dir.join("code").join("mirrors");
        let repo = code::open(&repo_name, origin, &mirrors).await?;
        let (good, _) = repo.resolve(&request.good).await?;
        let (bad, _) = repo.resolve(&request.bad).await?;
        if good == bad {
            return Err(ExpError::Invalid(format!("--good and --bad are one commit ({})", code::short(&good))));
        }
        let mut shas = vec![good.clone()];
        shas.extend(repo.first_parents(&good, &bad).await?);
        if shas.len() > MAX_COMMITS + 1 {
            return Err(ExpError::Invalid(format!(
                "{} commits lie between the ends; at most {MAX_COMMITS}: narrow the range",
                shas.len() - 1
            )));
        }
        let mut commits = Vec::with_capacity(shas.len());
        for sha in &shas {
            let info = repo.describe(sha).await?;
            commits.push(Commit { commit: info.commit, subject: info.subject, author: info.author, date: info.date });
        }
        let mut spec = request.spec.clone();
        spec.code = Some(Code { repo: repo.name.clone(), reference: good.clone() });
        let probes = match request.probes {
            Some(p) => p.clamp(1, 8),
            None => self.default_probes(&spec, request.min_runs).await,
        };
        let params = BisectParams {
            spec: serde_json::to_value(&spec).expect("a spec serializes"),
            repo: repo.name.clone(),
            local_repos: origin.local_repos,
            good_ref: request.good.clone(),
            bad_ref: request.bad.clone(),
            metric: request.metric.clone(),
            direction,
            min_runs: request.min_runs,
            max_runs: request.max_runs,
            probes,
            commits,
        };
        let name = request
            .name
            .clone()
            .unwrap_or_else(|| format!("bisect {} {}..{}", request.spec.name, code::short(&good), code::short(&bad)));
        let session = self
            .meta
            .insert_session(&NewSession {
                goal: request.spec.goal,
                name,
                spec: serde_json::json!({ "bisect": params }),
                kind: SessionKind::Bisect,
            })
            .await?;
        self.advance_bisect(session.id).await
    }

    /// Two probes when the pools that offer the spec's accelerator have room for both probes' first runs at
    /// once, else one (a configuration without pools: one).
    async fn default_probes(&self, spec: &ExperimentSpec, min_runs: usize) -> usize {
        let Ok(pools) = self.pools().await else { return 1 };
        let need = spec.devices().unwrap_or(1).max(1) as usize;
        let free: usize = pools
            .iter()
            .filter(|p| p.pool.accelerators.iter().any(|a| a == &spec.resources.accelerator))
            .map(|p| p.pool.capacity.saturating_sub(p.used) as usize / need)
            .sum();
        if free >= 2 * min_runs {
            2
        } else {
            1
        }
    }

    /// One step of a bisection (see the module docs); a decided one returns its stored outcome.
    pub async fn advance_bisect(&self, id: SessionId) -> Result<BisectOutcome> {
        let session = self.meta.get_session(id).await?;
        if let Some(outcome) = stored_outcome(&session)? {
            return Ok(outcome);
        }
        let Search { params, spec, runs, experiments, plan } = self.search(&session).await?;
        let origin = Origin { work_dir: None, local_repos: params.local_repos };
        let mut runs = runs;
        let mut experiments = experiments;
        for (i, k) in &plan.submit {
            let mut at = spec.clone();
            at.code = Some(Code { repo: params.repo.clone(), reference: params.commits[*i].commit.clone() });
            for _ in 0..*k {
                let record = self.submit_from(&at, Some(id), &origin).await?;
                runs.entry(*i).or_default().live += 1;
                experiments.entry(*i).or_default().push(record.id);
            }
        }
        let outcome = outcome_of(id, &params, &plan, &runs, &experiments);
        if outcome.state == "decided" {
            let value = serde_json::to_value(&outcome).expect("an outcome serializes");
            match self.meta.end_session(id, &value).await {
                Ok(_) => {}
                Err(falcon_infra::InfraError::Conflict(_)) => {
                    // Another caller decided it first: its answer stands.
                    return stored_outcome(&self.meta.get_session(id).await?)?
                        .ok_or_else(|| ExpError::State(format!("session {id} was decided without an outcome")));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(outcome)
    }

    /// Takes a step of every bisection still searching (the worker's pass): each one's outcome, or why its step
    /// failed (the others still go).
    pub async fn advance_bisects(&self) -> Result<Vec<(SessionId, Result<BisectOutcome>)>> {
        let open = self.meta.open_sessions(SessionKind::Bisect, 50).await?;
        let mut out = Vec::with_capacity(open.len());
        for session in open {
            out.push((session.id, self.advance_bisect(session.id).await));
        }
        Ok(out)
    }

    /// A bisection's state now, without taking a step.
    pub async fn bisect(&self, id: SessionId) -> Result<BisectOutcome> {
        let session = self.meta.get_session(id).await?;
        if let Some(outcome) = stored_outcome(&session)? {
            return Ok(outcome);
        }
        let Search { params, runs, experiments, mut plan, .. } = self.search(&session).await?;
        plan.decision = None; // said once a step records it
        Ok(outcome_of(id, &params, &plan, &runs, &experiments))
    }

    /// A bisection's parameters, its runs by commit and what the planner makes of them now.
    async fn search(&self, session: &SessionRecord) -> Result<Search> {
        let params = params_of(session)?;
        let spec: ExperimentSpec = serde_json::from_value(params.spec.clone())
            .map_err(|e| ExpError::Invalid(format!("session {}: its spec cannot be read back: {e}", session.id)))?;
        let index: HashMap<String, usize> =
            params.commits.iter().enumerate().map(|(i, c)| (config_hash_at(&spec, Some(&c.commit)), i)).collect();
        let (runs, experiments) = self.runs_by_commit(&spec.name, &index, &params.metric).await?;
        let opts = Options {
            metric: params.metric.clone(),
            direction: params.direction,
            min_runs: params.min_runs,
            max_runs: params.max_runs,
            probes: params.probes,
        };
        let plan = plan::plan(params.commits.len(), &runs, &opts);
        Ok(Search { params, spec, runs, experiments, plan })
    }

    /// The runs of `name` at each commit `index` maps a config hash to.
    async fn runs_by_commit(
        &self,
        name: &str,
        index: &HashMap<String, usize>,
        metric: &str,
    ) -> Result<(BTreeMap<usize, CommitRuns>, BTreeMap<usize, Vec<ExperimentId>>)> {
        let all = self.all_experiments(ExperimentFilter { name: Some(name.to_string()), ..Default::default() }).await?;
        let mut runs: BTreeMap<usize, CommitRuns> = BTreeMap::new();
        let mut ids: BTreeMap<usize, Vec<ExperimentId>> = BTreeMap::new();
        for e in all.iter().rev() {
            let Some(&i) = index.get(&e.config_hash) else { continue };
            let r = runs.entry(i).or_default();
            ids.entry(i).or_default().push(e.id);
            match e.status {
                ExperimentStatus::Completed => match self.sample_run(e, metric, Source::SummaryOrReread).await {
                    Ok(s) => r.samples.push(s.sample),
                    Err(ExpError::NotFound(_)) => r.failed += 1,
                    Err(other) => return Err(other),
                },
                ExperimentStatus::Failed | ExperimentStatus::Cancelled => r.failed += 1,
                _ => r.live += 1,
            }
        }
        Ok((runs, ids))
    }
}

/// A bisection as its runs stand.
struct Search {
    params: BisectParams,
    spec: ExperimentSpec,
    runs: BTreeMap<usize, CommitRuns>,
    experiments: BTreeMap<usize, Vec<ExperimentId>>,
    plan: plan::Plan,
}

fn params_of(session: &SessionRecord) -> Result<BisectParams> {
    if session.kind != SessionKind::Bisect {
        return Err(ExpError::Invalid(format!("session {} is a sweep, not a bisection", session.id)));
    }
    let value = session.spec.get("bisect").cloned().unwrap_or_default();
    serde_json::from_value(value)
        .map_err(|e| ExpError::Invalid(format!("session {}: its bisection cannot be read back: {e}", session.id)))
}

fn stored_outcome(session: &SessionRecord) -> Result<Option<BisectOutcome>> {
    if session.kind != SessionKind::Bisect {
        return Err(ExpError::Invalid(format!("session {} is a sweep, not a bisection", session.id)));
    }
    session
        .outcome
        .clone()
        .map(|v| {
            serde_json::from_value(v)
                .map_err(|e| ExpError::Invalid(format!("session {}: its outcome cannot be read back: {e}", session.id)))
        })
        .transpose()
}

fn geometric_mean(samples: &[falcon_core::stats::RunSample]) -> Option<f64> {
    let logs: Vec<f64> = samples.iter().map(|s| s.median).filter(|m| *m > 0.0 && m.is_finite()).map(f64::ln).collect();
    (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

fn outcome_of(
    id: SessionId,
    params: &BisectParams,
    plan: &plan::Plan,
    runs: &BTreeMap<usize, CommitRuns>,
    experiments: &BTreeMap<usize, Vec<ExperimentId>>,
) -> BisectOutcome {
    let commits = &params.commits;
    let last = commits.len() - 1;
    let tested: Vec<Tested> = runs
        .iter()
        .map(|(&i, r)| {
            let (class, versus) = match plan.classes.get(&i) {
                Some((c, v)) => (*c, v.clone()),
                None => (Class::Pending, None),
            };
            // A probe still short of a verdict when the answer came did not need one.
            let class = match (class, plan.decision.is_some()) {
                (Class::Pending, true) => "undecided",
                (c, _) => c.as_str(),
            };
            Tested {
                commit: commits[i].commit.clone(),
                subject: commits[i].subject.clone(),
                index: i,
                runs: r.samples.len() + r.live + r.failed,
                measured: r.samples.len(),
                failed: r.failed,
                verdict: class.to_string(),
                median: geometric_mean(&r.samples),
                delta_rel: versus.and_then(|v| v.delta_rel),
                experiments: experiments.get(&i).cloned().unwrap_or_default(),
            }
        })
        .collect();
    let used: usize = tested.iter().map(|t| t.runs).sum();
    let (state, culprit, culprit_verdict, candidates, message) = match &plan.decision {
        None => {
            let live: usize = runs.values().map(|r| r.live).sum();
            ("searching", None, None, Vec::new(), format!("searching: {live} run(s) going, {used} used so far"))
        }
        Some(Decision::Culprit { index, verdict }) => {
            let c = &commits[*index];
            let change = verdict.delta_rel.map(|d| format!(" ({:+.1} %)", d * 100.0)).unwrap_or_default();
            let message = format!(
                "{} \"{}\" changed {}{change} against its parent: {} runs at {} commits",
                code::short(&c.commit),
                c.subject,
                params.metric,
                used,
                tested.len()
            );
            ("decided", Some(c.clone()), Some((**verdict).clone()), Vec::new(), message)
        }
        Some(Decision::NoChange) => {
            let how = plan.ends.as_ref().map_or("inconclusive", |v| v.verdict.as_str());
            let message = format!(
                "no culprit: the ends do not differ in {} ({how} after {used} runs); nothing to search",
                params.metric
            );
            ("decided", None, None, Vec::new(), message)
        }
        Some(Decision::Range { good, bad }) => {
            let range: Vec<Commit> = commits[good + 1..=*bad].to_vec();
            let message = format!(
                "no single culprit: the change is in one of {} commits after {} up to {} (the ones between were \
                 skipped or inconclusive)",
                range.len(),
                code::short(&commits[*good].commit),
                code::short(&commits[*bad].commit)
            );
            ("decided", None, None, range, message)
        }
        Some(Decision::EndFails { index }) => {
            let which = if *index == 0 { "good" } else { "bad" };
            let message = format!(
                "no culprit: the {which} end {} fails to run (see its experiments' logs)",
                code::short(&commits[*index].commit)
            );
            ("decided", None, None, Vec::new(), message)
        }
    };
    BisectOutcome {
        session: id,
        state: state.into(),
        culprit,
        culprit_verdict,
        verdict: plan.ends.clone(),
        good: commits[0].clone(),
        bad: commits[last].clone(),
        commits: commits.len(),
        runs: used,
        tested,
        candidates,
        message,
        metric: params.metric.clone(),
    }
}
