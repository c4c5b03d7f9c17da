//! Goals and sessions: optimization targets agents claim, and batches of experiments submitted together.

use crate::error::{ExpError, Result};
use crate::Exp;
use falcon_core::ids::{ExperimentId, GoalId, SessionId};
use falcon_core::spec::ExperimentSpec;
use falcon_core::stats::{compare_runs, CompareOptions, Direction, RunSample, STANDARD_METRICS};
use falcon_core::status::{ExperimentStatus, GoalStatus};
use falcon_core::summary::{profile_column, ProfileColumn, PROFILE_TOOL};
use falcon_infra::meta::{ExperimentFilter, ExperimentRecord, GoalRecord, NewGoal, NewSession, SessionRecord};
use std::time::Duration;

/// One row of `goal compare`: an experiment's value of the goal's metric against the baseline.
#[derive(Debug, Clone)]
pub struct GoalRow {
    /// Rank, 1 = best in the goal's direction.
    pub rank: usize,
    /// The experiment.
    pub experiment: ExperimentId,
    /// Its name.
    pub name: String,
    /// Its config hash.
    pub config_hash: String,
    /// The experiment's value of the goal metric: the statistic `statistic` names.
    pub value: f64,
    /// What `value` is: `median` (the median of the run's logged metric after warm-up) or `profile` (the
    /// profile analysis' summary value, for `mfu`, `duty_cycle`, `peak_hbm_bytes`, `profile_step_time_ms`).
    pub statistic: &'static str,
    /// Relative change against the baseline's median, when there is a baseline with the metric.
    pub delta_vs_baseline: Option<f64>,
    /// Whether it reaches the goal's target.
    pub meets_target: Option<bool>,
    /// This row is the goal's baseline.
    pub baseline: bool,
    /// A re-run of the baseline's config (same config hash): its difference is run-to-run noise, never a
    /// win; it is not counted as the goal's best.
    pub baseline_rerun: bool,
    /// The run-level verdict of this row's config against the baseline's (every completed run of the goal
    /// with each hash, the baseline included); `null` for the baseline's own config or without a baseline.
    pub verdict: Option<falcon_core::stats::Verdict>,
}

/// The result of `goal compare` (its wire view is `falcon_app::contract`'s).
#[derive(Debug, Clone)]
pub struct GoalComparison {
    /// The goal.
    pub goal: GoalRecord,
    /// Its baseline's value, when known.
    pub baseline_value: Option<f64>,
    /// Completed experiments with the metric, best first.
    pub rows: Vec<GoalRow>,
    /// The goal's best experiment: the top row that is not a re-run of the baseline's config (the baseline
    /// itself when nothing beats it).
    pub best: Option<GoalRow>,
    /// The target and how far the best experiment got towards it.
    pub progress: GoalProgress,
}

/// A goal's target and progress (the best experiment against the baseline and the target).
#[derive(Debug, Clone)]
pub struct GoalProgress {
    /// The goal's metric.
    pub metric: String,
    /// Which way it should move.
    pub direction: falcon_core::status::Direction,
    /// The baseline's value (median of its metric).
    pub baseline_value: Option<f64>,
    /// The best experiment's value.
    pub best_value: Option<f64>,
    /// The goal's target.
    pub target: Option<f64>,
    /// `(best − baseline) / baseline`.
    pub delta_vs_baseline: Option<f64>,
    /// `(best − baseline) / (target − baseline)`: the fraction of the baseline→target gap closed (1 = target
    /// reached, above 1 = beyond it, below 0 = worse than the baseline).
    pub gap_closed: Option<f64>,
    /// Whether the best reaches the target.
    pub meets_target: Option<bool>,
}

impl GoalProgress {
    fn of(goal: &GoalRecord, baseline_value: Option<f64>, best: Option<&GoalRow>) -> GoalProgress {
        let best_value = best.map(|r| r.value);
        let gap_closed = match (baseline_value, goal.target, best_value) {
            (Some(b), Some(t), Some(v)) if t != b => Some((v - b) / (t - b)),
            _ => None,
        };
        GoalProgress {
            metric: goal.metric.clone(),
            direction: goal.direction,
            baseline_value,
            best_value,
            target: goal.target,
            delta_vs_baseline: best.and_then(|r| r.delta_vs_baseline),
            gap_closed,
            meets_target: best.and_then(|r| r.meets_target),
        }
    }
}

/// Metric verdicts between two experiments of a goal, and why some could not be given.
#[derive(Debug, Clone, Default)]
pub struct GoalVerdicts {
    /// The goal's metric first (in the goal's direction), then each standard metric both logged.
    pub verdicts: Vec<falcon_core::stats::Verdict>,
    /// What was not compared, and why.
    pub notes: Vec<String>,
}

/// A session with its experiments and aggregate status.
#[derive(Debug, Clone)]
pub struct SessionView {
    /// The session.
    pub session: SessionRecord,
    /// Aggregate: COMPLETED when all completed, RUNNING while any is live, else FAILED or CANCELLED.
    pub status: ExperimentStatus,
    /// Its experiments, in submission order.
    pub experiments: Vec<ExperimentRecord>,
    /// Spec keys whose values differ between the experiments.
    pub differences: Vec<crate::diff::NwayRow>,
}

impl Exp {
    /// Records a goal (`OPEN`).
    pub async fn create_goal(&self, goal: &NewGoal) -> Result<GoalRecord> {
        self.check_references(None, goal.baseline, "the goal's").await?;
        Ok(self.meta.insert_goal(goal).await?)
    }

    /// Sets (or, with `None`, clears) a goal's baseline: for a baseline that runs after the goal exists (its
    /// spec names the goal), so the goal can name it once it does.
    pub async fn set_goal_baseline(&self, id: GoalId, baseline: Option<ExperimentId>) -> Result<GoalRecord> {
        self.meta.get_goal(id).await?;
        self.check_references(None, baseline, "the goal's").await?;
        Ok(self.meta.set_goal_baseline(id, baseline).await?)
    }

    /// Goals, optionally of one status; highest priority first, then oldest.
    pub async fn goals(&self, status: Option<GoalStatus>) -> Result<Vec<GoalRecord>> {
        Ok(self.meta.list_goals(status).await?)
    }

    /// One goal.
    pub async fn goal(&self, id: GoalId) -> Result<GoalRecord> {
        Ok(self.meta.get_goal(id).await?)
    }

    /// Claims a goal for `owner` for `lease` (`None`: the best open one). A goal someone else holds is a
    /// conflict; no claimable goal is not found.
    pub async fn claim_goal(&self, id: Option<GoalId>, owner: &str, lease: Duration) -> Result<GoalRecord> {
        match id {
            None => self
                .meta
                .claim_next_goal(owner, lease)
                .await?
                .ok_or_else(|| ExpError::NotFound("no open goal to claim".into())),
            Some(id) => self
                .meta
                .claim_goal(id, owner, lease)
                .await?
                .ok_or_else(|| ExpError::State(format!("goal {id} is held by someone else or closed"))),
        }
    }

    /// Moves a claimed (or open) goal to `to`: release (OPEN), achieve, abandon.
    pub async fn close_goal(
        &self,
        id: GoalId,
        to: GoalStatus,
        reason: &str,
        actor: Option<&str>,
    ) -> Result<GoalRecord> {
        let goal = self.meta.get_goal(id).await?;
        if matches!(goal.status, GoalStatus::Achieved | GoalStatus::Abandoned) {
            return Err(ExpError::State(format!("goal {id} is already {}", goal.status)));
        }
        if let (Some(actor), Some(owner)) = (actor, goal.owner.as_deref()) {
            if actor != owner && to == GoalStatus::Open {
                return Err(ExpError::State(format!("goal {id} is held by {owner}, not {actor}")));
            }
        }
        Ok(self.meta.transition_goal(id, goal.status, to, reason, actor).await?)
    }

    /// Ranks a goal's completed experiments on its metric (from summary rows: nothing is re-read) against its
    /// baseline. Each config's runs get a run-level verdict against the baseline config's runs; a re-run of
    /// the baseline's config is marked and never counted as the best.
    pub async fn compare_goal(&self, id: GoalId) -> Result<GoalComparison> {
        let goal = self.meta.get_goal(id).await?;
        let direction = Direction::from(goal.direction);
        let baseline = match goal.baseline {
            Some(b) => Some(self.meta.get_experiment(b).await?),
            None => None,
        };
        let baseline_value = match &baseline {
            Some(b) => self.goal_metric_value(b.id, &goal.metric).await?.map(|(v, _)| v),
            None => None,
        };
        // Every completed experiment of the goal, however many: a ranking of a first page would miss the best.
        let filter =
            ExperimentFilter { goal: Some(id), status: Some(ExperimentStatus::Completed), ..Default::default() };
        let mut experiments = self.all_experiments(filter).await?;
        experiments.reverse();
        let mut rows = Vec::new();
        let mut samples: Vec<(ExperimentRecord, RunSample)> = Vec::new();
        for exp in experiments {
            if let Some((value, sample)) = self.goal_metric_value(exp.id, &goal.metric).await? {
                let is_baseline = goal.baseline == Some(exp.id);
                let rerun = !is_baseline && baseline.as_ref().is_some_and(|b| b.config_hash == exp.config_hash);
                rows.push(GoalRow {
                    rank: 0,
                    experiment: exp.id,
                    name: exp.name.clone(),
                    config_hash: exp.config_hash.clone(),
                    value,
                    statistic: if sample.n_steps > 0 || profile_column(&goal.metric).is_none() {
                        "median"
                    } else {
                        "profile"
                    },
                    delta_vs_baseline: baseline_value.filter(|b| *b != 0.0).map(|b| (value - b) / b),
                    meets_target: goal.target.map(|t| match direction {
                        Direction::HigherIsBetter => value >= t,
                        Direction::LowerIsBetter => value <= t,
                    }),
                    baseline: is_baseline,
                    baseline_rerun: rerun,
                    verdict: None,
                });
                samples.push((exp, sample));
            }
        }
        if let Some(b) = &baseline {
            let mut base_runs: Vec<RunSample> =
                samples.iter().filter(|(e, _)| e.config_hash == b.config_hash).map(|(_, s)| *s).collect();
            // A baseline outside the goal (or not completed) still counts as a baseline run.
            let mut base_extra = None;
            if !samples.iter().any(|(e, _)| e.id == b.id) {
                if let Some((_, sample)) = self.goal_metric_value(b.id, &goal.metric).await? {
                    base_runs.push(sample);
                    base_extra = Some(sample);
                }
            }
            let mut by_hash: std::collections::BTreeMap<&str, Vec<RunSample>> = Default::default();
            for (e, s) in &samples {
                by_hash.entry(e.config_hash.as_str()).or_default().push(*s);
            }
            let mut verdicts: std::collections::BTreeMap<&str, falcon_core::stats::Verdict> = Default::default();
            if !base_runs.is_empty() {
                for (hash, runs) in by_hash.iter().filter(|(h, _)| **h != b.config_hash) {
                    // The runs on both sides are taken out of their hashes' histories (stored medians).
                    let sides = samples
                        .iter()
                        .filter(|(e, _)| e.config_hash == b.config_hash || e.config_hash == *hash)
                        .map(|(e, s)| (e.config_hash.as_str(), true, (s.n_steps > 0).then_some(s.median)))
                        .chain(base_extra.map(|s| {
                            let completed = b.status == ExperimentStatus::Completed;
                            (b.config_hash.as_str(), completed, (s.n_steps > 0).then_some(s.median))
                        }));
                    let (noise, _) = self.history_noise(&goal.metric, sides).await?;
                    let v = compare_runs(&goal.metric, direction, &base_runs, runs, noise, &CompareOptions::default());
                    verdicts.insert(hash, v);
                }
            }
            for row in &mut rows {
                row.verdict = verdicts.get(row.config_hash.as_str()).cloned();
            }
        }
        rows.sort_by(|a, b| match direction {
            Direction::HigherIsBetter => b.value.total_cmp(&a.value),
            Direction::LowerIsBetter => a.value.total_cmp(&b.value),
        });
        for (i, row) in rows.iter_mut().enumerate() {
            row.rank = i + 1;
        }
        // A re-run of the baseline's config ranking above the rest is run-to-run noise, not a win: the best is
        // the best row of any other config, or the baseline itself when none beats it.
        let best = rows.iter().find(|r| !r.baseline_rerun).cloned();
        let progress = GoalProgress::of(&goal, baseline_value, best.as_ref());
        Ok(GoalComparison { goal, baseline_value, rows, best, progress })
    }

    /// Verdicts from experiment `a` (the baseline) to `b` on the goal's metric, in the goal's direction, and
    /// on every standard metric ([`STANDARD_METRICS`]) both logged. A metric that cannot be compared is a
    /// note, never a failure.
    pub async fn goal_verdicts(&self, goal: &GoalRecord, a: ExperimentId, b: ExperimentId) -> GoalVerdicts {
        let mut out = GoalVerdicts::default();
        let logged = |id: ExperimentId| async move {
            self.show(id).await.map(|v| v.metrics.into_keys().collect::<std::collections::BTreeSet<String>>())
        };
        let (in_a, in_b) = match (logged(a).await, logged(b).await) {
            (Ok(x), Ok(y)) => (x, y),
            (Err(e), _) | (_, Err(e)) => {
                out.notes.push(format!("metric verdicts: {e}"));
                return out;
            }
        };
        if in_a.contains(&goal.metric) && in_b.contains(&goal.metric) {
            match self.compare(a, b, &goal.metric, Some(goal.direction.into()), None).await {
                Ok(v) => out.verdicts.push(v),
                Err(e) => out.notes.push(format!("verdict on `{}`: {e}", goal.metric)),
            }
        } else {
            out.notes.push(format!(
                "no verdict on `{}`: it is not a logged metric of both experiments (profile metrics are compared in the profile section)",
                goal.metric
            ));
        }
        for metric in STANDARD_METRICS.iter().filter(|m| **m != goal.metric && in_a.contains(**m) && in_b.contains(**m))
        {
            match self.compare(a, b, metric, None, None).await {
                Ok(v) => out.verdicts.push(v),
                Err(e) => out.notes.push(format!("verdict on `{metric}`: {e}")),
            }
        }
        out
    }

    /// An experiment's value of a goal metric and its run sample: the median of its logged metric of that
    /// name (with the stored spread and step count); else, for the profile metrics (`mfu`, `duty_cycle`,
    /// `peak_hbm_bytes`, `profile_step_time_ms`), the value stored by the profile analysis' summary row (a
    /// sample of 0 steps) — so goals on MFU never reopen a profile.
    async fn goal_metric_value(&self, id: ExperimentId, metric: &str) -> Result<Option<(f64, RunSample)>> {
        if let Some(m) = self.meta.metric_summaries(id).await?.into_iter().find(|m| m.metric == metric) {
            let sample =
                RunSample { median: m.median, spread: m.spread.unwrap_or(0.0), n_steps: m.count.max(0) as usize };
            return Ok(Some((m.median, sample)));
        }
        let Some(column) = profile_column(metric) else { return Ok(None) };
        let summaries = self.meta.analysis_summaries(id).await?;
        let Some(row) = summaries.into_iter().find(|a| a.tool == PROFILE_TOOL) else { return Ok(None) };
        let value = match column {
            ProfileColumn::Mfu => row.mfu,
            ProfileColumn::DutyCycle => row.duty_cycle,
            ProfileColumn::PeakMemoryBytes => row.peak_memory_bytes.map(|b| b as f64),
            ProfileColumn::StepTimeMs => row.step_time_ms,
        };
        Ok(value.map(|v| (v, RunSample { median: v, spread: 0.0, n_steps: 0 })))
    }

    /// A sweep's specs ([`crate::sweep::expand_points_repeated`]; `load_base` reads the spec files a `base`
    /// names), with `base: e-N` resolved here: that experiment's stored spec is the base, and every point takes
    /// it as its `baseline` unless the sweep sets one. An unknown experiment is not found.
    pub async fn expand_sweep(
        &self,
        sweep_text: &str,
        file: &str,
        load_base: impl Fn(&str) -> std::result::Result<String, String>,
        repeats: Option<usize>,
    ) -> Result<Vec<crate::sweep::SweepPoint>> {
        let Some(base) = crate::sweep::base_experiment(sweep_text, file)? else {
            return Ok(crate::sweep::expand_points_repeated(sweep_text, file, load_base, repeats)?);
        };
        let record = self.meta.get_experiment(base).await.map_err(|e| match e.kind() {
            falcon_core::ErrorKind::NotFound => {
                ExpError::NotFound(format!("{file}: the sweep's `base`: experiment {base} not found"))
            }
            _ => e.into(),
        })?;
        let base_text = record.spec.to_string();
        let inherited = record.spec.get("baseline").and_then(|b| b.as_str()).map(str::to_string);
        let name = base.to_string();
        let points = crate::sweep::expand_points_repeated(
            sweep_text,
            file,
            |b| if b == name { Ok(base_text.clone()) } else { load_base(b) },
            repeats,
        )?;
        Ok(points
            .into_iter()
            .map(|mut p| {
                if p.spec.baseline.map(|b| b.to_string()) == inherited {
                    p.spec.baseline = Some(base);
                }
                p
            })
            .collect())
    }

    /// Records a session and submits every spec of it (a sweep's expansion) under it.
    pub async fn submit_session(
        &self,
        name: &str,
        goal: Option<GoalId>,
        sweep: serde_json::Value,
        specs: &[ExperimentSpec],
    ) -> Result<SessionView> {
        self.submit_session_from(name, goal, sweep, specs, &crate::code::Origin::default()).await
    }

    /// [`Exp::submit_session`] from `origin` (see [`Exp::submit_from`]).
    pub async fn submit_session_from(
        &self,
        name: &str,
        goal: Option<GoalId>,
        sweep: serde_json::Value,
        specs: &[ExperimentSpec],
        origin: &crate::code::Origin,
    ) -> Result<SessionView> {
        if specs.is_empty() {
            return Err(ExpError::Invalid("the session has no experiments".into()));
        }
        self.check_references(goal, None, "the session's").await?;
        for (i, spec) in specs.iter().enumerate() {
            self.check_placeable(spec).map_err(|e| match e {
                ExpError::State(m) => {
                    ExpError::State(format!("experiment {} of the session ({}): {m}", i + 1, spec.name))
                }
                other => other,
            })?;
        }
        let session = self
            .meta
            .insert_session(&NewSession { goal, name: name.to_string(), spec: sweep, kind: Default::default() })
            .await?;
        for spec in specs {
            let mut spec = spec.clone();
            if spec.goal.is_none() {
                spec.goal = goal;
            }
            self.submit_from(&spec, Some(session.id), origin).await?;
        }
        self.session(session.id).await
    }

    /// Every experiment matching `filter` (its `limit` and `before` are replaced), newest first, read in pages
    /// so no list stops at a page size without saying so.
    pub(crate) async fn all_experiments(&self, filter: ExperimentFilter) -> Result<Vec<ExperimentRecord>> {
        let mut filter = ExperimentFilter { limit: 500, before: None, ..filter };
        let mut all = Vec::new();
        loop {
            let page = self.meta.list_experiments(&filter).await?;
            let full = page.len() == filter.limit as usize;
            filter.before = page.last().map(|e| e.id);
            all.extend(page);
            if !full {
                return Ok(all);
            }
        }
    }

    /// A session, its experiments, aggregate status and differing keys.
    pub async fn session(&self, id: SessionId) -> Result<SessionView> {
        let session = self.meta.get_session(id).await?;
        let mut experiments =
            self.all_experiments(ExperimentFilter { session: Some(id), ..Default::default() }).await?;
        experiments.reverse();
        let status = aggregate(experiments.iter().map(|e| e.status));
        let specs: Vec<(String, serde_json::Value)> =
            experiments.iter().map(|e| (e.id.to_string(), e.spec.clone())).collect();
        let inputs: Vec<(&str, &serde_json::Value)> = specs.iter().map(|(n, v)| (n.as_str(), v)).collect();
        let differences = crate::diff::diff_many(&inputs);
        Ok(SessionView { session, status, experiments, differences })
    }
}

impl Exp {
    /// Refuses (exit 4, nothing recorded) a spec that none of this configuration's pools could ever run: no
    /// pool offers its accelerator in its zones, or none is large enough. The message names what the pools
    /// offer. A configuration without pools accepts everything (a worker elsewhere decides), and a spec whose
    /// resources are invalid passes here so that submitting reports the field.
    pub fn check_placeable(&self, spec: &ExperimentSpec) -> Result<()> {
        if self.config.pools.is_empty() {
            return Ok(());
        }
        let pools = falcon_job::pool::pools_from_config(&self.config.pools)?;
        let job = crate::experiments::job_spec_of(spec, "placement-check".into());
        let Ok(resolved) = job.resolve() else { return Ok(()) };
        let queued = falcon_job::scheduler::QueuedJob {
            id: falcon_core::ids::JobId(0),
            priority: spec.priority,
            accelerator: &resolved.accelerator.name,
            chips: resolved.chips,
            zones: &job.resources.zones,
            excluded: &[],
            has_image: job.image.is_some(),
        };
        match falcon_job::scheduler::never_fits(&queued, &pools) {
            Some(reason) => Err(ExpError::State(format!("no configured pool can run `{}`: {reason}", spec.name))),
            None => Ok(()),
        }
    }

    /// The configured pools and their current load (from the Job module).
    pub async fn pools(&self) -> Result<Vec<falcon_job::PoolUsage>> {
        Ok(self.jobs().await?.pool_usage().await?)
    }
}

/// A session's status from its experiments'.
pub fn aggregate(statuses: impl Iterator<Item = ExperimentStatus>) -> ExperimentStatus {
    use ExperimentStatus::*;
    let all: Vec<_> = statuses.collect();
    if all.iter().any(|s| matches!(s, Running | Provisioning)) {
        Running
    } else if all.contains(&Pending) {
        Pending
    } else if all.iter().all(|s| *s == Completed) {
        Completed
    } else if all.contains(&Failed) {
        Failed
    } else {
        Cancelled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ExperimentStatus::*;

    #[test]
    fn session_status_aggregates() {
        assert_eq!(aggregate([Completed, Completed].into_iter()), Completed);
        assert_eq!(aggregate([Completed, Running].into_iter()), Running);
        assert_eq!(aggregate([Completed, Failed, Cancelled].into_iter()), Failed);
        assert_eq!(aggregate([Cancelled, Completed].into_iter()), Cancelled);
        assert_eq!(aggregate([Pending, Completed].into_iter()), Pending);
    }
}
