//! Experiments end to end: submit a spec (snapshot, hash, job), reconcile job states into the lifecycle, index
//! the artifacts a finished job left, summarise its metrics, and answer show / list (with the stored metric
//! summaries of a page in one read) / logs / diff / compare. Its views carry no serialization: the JSON the
//! front ends return is `falcon_app::contract`'s.

use crate::error::{ExpError, Result};
use crate::lifecycle;
use crate::metrics::MetricSeries;
use crate::Exp;
use falcon_core::artifact::{content_type_for, ArtifactKind};
use falcon_core::ids::{ExperimentId, JobId};
use falcon_core::spec::{canonical_json, falcon_env, substitute, ExperimentSpec};
use falcon_core::stats::{Direction, Verdict};
use falcon_core::status::ExperimentStatus;
use falcon_infra::meta::{
    ArtifactRecord, ExperimentFilter, ExperimentNote, ExperimentRecord, NewArtifact, NewExperiment,
};
use falcon_infra::InfraError;
use falcon_job::{JobSpec, RetryPolicy};
use std::collections::BTreeMap;

pub use falcon_infra::meta::{MetricSummary, Transition};

/// One experiment's metric summaries by metric name, as `exp show` and the lists give them.
pub type MetricSummaries = BTreeMap<String, MetricSummary>;

/// Everything `exp show` prints (its wire view is `falcon_app::contract`'s).
#[derive(Debug, Clone)]
pub struct ExperimentView {
    /// The stored experiment.
    pub record: ExperimentRecord,
    /// The audit log.
    pub history: Vec<Transition>,
    /// Indexed artifacts.
    pub artifacts: Vec<ArtifactRecord>,
    /// Metric summaries by name.
    pub metrics: MetricSummaries,
    /// Summary rows of the analyses run on its artifacts, by tool.
    pub analysis: Vec<falcon_infra::meta::AnalysisSummary>,
    /// Why the job waits or failed, when it says.
    pub job_reason: Option<String>,
    /// Files the job wrote that are not stored (or whose later version was refused), with the reason.
    pub skipped: Vec<SkippedOutput>,
    /// What the readers of its files skipped: malformed metrics lines, NaN values kept out of summaries.
    pub notes: Vec<Note>,
}

/// A file the job wrote that is not among the artifacts as written, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedOutput {
    /// Its path relative to the job's artifact folder.
    pub path: String,
    /// Why.
    pub reason: String,
}

/// Something a reader skipped in one of the experiment's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The file (artifact URI).
    pub file: String,
    /// 1-based line, when the note is about one line.
    pub line: Option<u64>,
    /// What was skipped and why.
    pub reason: String,
}

/// The note source of the metrics reader.
const METRICS_NOTES: &str = "metrics";

/// What one reconcile pass changed.
#[derive(Debug, Default, Clone)]
pub struct ReconcileReport {
    /// Experiments whose status moved.
    pub moved: Vec<(ExperimentId, ExperimentStatus)>,
    /// Problems that did not stop the pass.
    pub errors: Vec<String>,
}

impl Exp {
    /// Records an experiment from a checked spec and queues its job. The spec is stored canonicalized with its
    /// content hash; `${config.…}` placeholders are substituted into the job's command and environment.
    pub async fn submit(&self, spec: &ExperimentSpec) -> Result<ExperimentRecord> {
        self.submit_in(spec, None).await
    }

    /// Fails with "not found", naming the field, when a goal or baseline experiment a record is about to
    /// reference does not exist (instead of a foreign-key error from the store, or a dangling id).
    pub(crate) async fn check_references(
        &self,
        goal: Option<falcon_core::ids::GoalId>,
        baseline: Option<ExperimentId>,
        whose: &str,
    ) -> Result<()> {
        // A missing row is "not found" naming the field; any other store error passes through.
        let named = |e: falcon_infra::InfraError, what: String| match e.kind() {
            falcon_core::ErrorKind::NotFound => ExpError::NotFound(format!("{whose} {what} not found")),
            _ => e.into(),
        };
        if let Some(g) = goal {
            self.meta.get_goal(g).await.map_err(|e| named(e, format!("`goal`: goal {g}")))?;
        }
        if let Some(b) = baseline {
            self.meta.get_experiment(b).await.map_err(|e| named(e, format!("`baseline`: experiment {b}")))?;
        }
        Ok(())
    }

    /// [`Exp::submit`] as part of a session.
    pub async fn submit_in(
        &self,
        spec: &ExperimentSpec,
        session: Option<falcon_core::ids::SessionId>,
    ) -> Result<ExperimentRecord> {
        self.submit_from(spec, session, &crate::code::Origin::default()).await
    }

    /// [`Exp::submit_in`] from `origin`: a spec's `code` is resolved to a commit and snapshotted once
    /// ([`crate::code`]), and the job runs in a checkout of it; a spec without `code` records the work tree
    /// `origin` stands in. A ref that names no commit, a repository that cannot be read, or a snapshot that
    /// cannot be stored refuses the submission before anything is recorded.
    pub async fn submit_from(
        &self,
        spec: &ExperimentSpec,
        session: Option<falcon_core::ids::SessionId>,
        origin: &crate::code::Origin,
    ) -> Result<ExperimentRecord> {
        let resolved = substitute(spec).map_err(|e| ExpError::Invalid(e.to_string()))?;
        self.check_references(spec.goal, spec.baseline, "the spec's").await?;
        let code = self.prepare_code(spec, origin).await?;
        let staged = code.staged.as_deref();
        let result = self.record_and_queue(spec, &resolved, session, code.record.clone(), staged).await;
        if let Some(staged) = staged {
            let _ = std::fs::remove_file(staged); // moved into the job's folder, or left by a failure
        }
        result
    }

    async fn record_and_queue(
        &self,
        spec: &ExperimentSpec,
        resolved: &ExperimentSpec,
        session: Option<falcon_core::ids::SessionId>,
        code: Option<falcon_infra::meta::CodeRecord>,
        staged: Option<&std::path::Path>,
    ) -> Result<ExperimentRecord> {
        // Runs of one spec at two commits are two configurations (a commit only recorded from a work tree is not).
        let hashed_commit = code.as_ref().filter(|c| c.snapshot.is_some()).map(|c| c.commit.as_str());
        let config_hash = falcon_core::spec::config_hash_at(spec, hashed_commit);
        let spec_json: serde_json::Value =
            serde_json::from_str(&canonical_json(&serde_json::to_value(spec).expect("a spec serializes")))
                .expect("canonical JSON parses");
        let new = NewExperiment {
            name: spec.name.clone(),
            scenario: spec.scenario,
            goal: spec.goal,
            session,
            baseline: spec.baseline,
            spec: spec_json,
            config_hash,
            labels: spec.labels.clone(),
            code,
        };
        let record = self.meta.insert_experiment(&new).await?;
        match self.queue_job(&record, resolved, staged).await {
            Ok(job) => {
                self.meta.set_experiment_job(record.id, job).await?;
                self.transition(
                    record.id,
                    ExperimentStatus::Pending,
                    ExperimentStatus::Provisioning,
                    &format!("job {job} queued"),
                    None,
                )
                .await?;
            }
            Err(e) => {
                let reason = format!("could not queue its job: {e}");
                self.transition(record.id, ExperimentStatus::Pending, ExperimentStatus::Failed, &reason, None).await?;
                return Err(e);
            }
        }
        Ok(self.meta.get_experiment(record.id).await?)
    }

    async fn queue_job(
        &self,
        record: &ExperimentRecord,
        spec: &ExperimentSpec,
        staged: Option<&std::path::Path>,
    ) -> Result<JobId> {
        let id = record.id;
        // The snapshot the workload reads through FALCON_EXP_CONFIG, in the job's own folder beside its attempts'
        // (`[jobs] work_dir`): never in the data dir, which a workload must not see.
        let dir = self.config.jobs.work_dir.join(job_name(id));
        std::fs::create_dir_all(&dir).map_err(|e| ExpError::Io(format!("creating {}: {e}", dir.display())))?;
        let config_path = dir.join("config.json");
        std::fs::write(&config_path, canonical_json(&spec.config))
            .map_err(|e| ExpError::Io(format!("writing {}: {e}", config_path.display())))?;
        let mut env = spec.workload.env.clone();
        // FALCON_ARTIFACT_DIR is set by the backend (a local folder it copies into the artifact store).
        env.extend(
            falcon_env(spec, id, &config_path.display().to_string(), "")
                .into_iter()
                .filter(|(k, _)| k != "FALCON_ARTIFACT_DIR"),
        );
        let mut labels = spec.labels.clone();
        labels.insert("falcon.dev/experiment".into(), id.to_string());
        let command = self.place_code(record.code.as_ref(), &dir, staged, &spec.workload.command).await?;
        let job = JobSpec {
            env,
            command,
            artifact_uri: Some(self.artifacts.uri(&experiment_prefix(id))),
            labels,
            ..job_spec_of(spec, job_name(id))
        };
        let jobs = self.jobs().await?;
        Ok(jobs.submit(&job).await?.id)
    }

    /// Every status move of an experiment: checked against the lifecycle ([`lifecycle::can_transition`]), then
    /// applied by the store's compare-and-set (a conflict when another process moved it first).
    async fn transition(
        &self,
        id: ExperimentId,
        from: ExperimentStatus,
        to: ExperimentStatus,
        reason: &str,
        attempt: Option<i64>,
    ) -> Result<()> {
        if !lifecycle::can_transition(from, to) {
            return Err(ExpError::State(format!("experiment {id} cannot move from {from} to {to}")));
        }
        self.meta.transition_experiment(id, from, to, reason, attempt).await?;
        Ok(())
    }

    /// Moves every live experiment to match its job; a finished one gets its artifacts indexed and metrics
    /// summarised. Idempotent; a restarted worker loses nothing. A PENDING experiment older than
    /// [`PENDING_GRACE`] lost its submitter between inserting it and queuing its job: it is linked to its job
    /// when the job exists (found by its deterministic name), else its job is queued from the stored spec (the
    /// experiment was recorded, so it runs); only a stored spec that cannot be read back fails it, with the reason.
    pub async fn reconcile(&self) -> Result<ReconcileReport> {
        let mut report = ReconcileReport::default();
        let pending = ExperimentFilter { status: Some(ExperimentStatus::Pending), limit: 500, ..Default::default() };
        for exp in self.meta.list_experiments(&pending).await? {
            if let Err(e) = self.recover_pending(&exp, &mut report).await {
                report.errors.push(format!("experiment {}: {e}", exp.id));
            }
        }
        for status in [ExperimentStatus::Provisioning, ExperimentStatus::Running] {
            let mut filter = ExperimentFilter { status: Some(status), limit: 500, ..Default::default() };
            loop {
                let page = self.meta.list_experiments(&filter).await?;
                let Some(last) = page.last() else { break };
                filter.before = Some(last.id);
                for exp in page {
                    if let Err(e) = self.reconcile_one(&exp, &mut report).await {
                        report.errors.push(format!("experiment {}: {e}", exp.id));
                    }
                }
            }
        }
        Ok(report)
    }

    async fn recover_pending(&self, exp: &ExperimentRecord, report: &mut ReconcileReport) -> Result<()> {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let age = (now.as_millis() as i64).saturating_sub(exp.created.0);
        if age < PENDING_GRACE.as_millis() as i64 {
            return Ok(()); // its submitter may still be queuing the job
        }
        let job = match exp.job {
            Some(job) => Some(job),
            None => self.meta.find_job_by_name(&job_name(exp.id)).await?.map(|j| j.id),
        };
        let (to, reason) = match job {
            Some(job) => {
                if exp.job.is_none() {
                    self.meta.set_experiment_job(exp.id, job).await?;
                }
                (ExperimentStatus::Provisioning, format!("job {job} queued (linked after its submitter stopped)"))
            }
            None => match self.queue_stranded(exp).await? {
                Ok(job) => {
                    self.meta.set_experiment_job(exp.id, job).await?;
                    (ExperimentStatus::Provisioning, format!("job {job} queued (its submitter stopped before queuing it)"))
                }
                Err(why) => (
                    ExperimentStatus::Failed,
                    format!("its job was never queued: the submitting process stopped first, and {why}; submit the spec again"),
                ),
            },
        };
        match self.transition(exp.id, ExperimentStatus::Pending, to, &reason, None).await {
            Ok(()) => report.moved.push((exp.id, to)),
            Err(ExpError::Store(InfraError::Conflict(_))) => {} // its submitter or another worker moved it
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// Queues the job of a PENDING experiment whose submitter stopped first, from its stored spec: the job's id,
    /// or why the stored spec cannot be run. A submitter that comes back late finds the job's name taken.
    async fn queue_stranded(&self, exp: &ExperimentRecord) -> Result<std::result::Result<JobId, String>> {
        let spec: ExperimentSpec = match serde_json::from_value(exp.spec.clone()) {
            Ok(spec) => spec,
            Err(e) => return Ok(Err(format!("its stored spec cannot be read back ({e})"))),
        };
        let resolved = match substitute(&spec) {
            Ok(resolved) => resolved,
            Err(e) => return Ok(Err(format!("its stored spec cannot be resolved ({e})"))),
        };
        match self.queue_job(exp, &resolved, None).await {
            Ok(job) => Ok(Ok(job)),
            // Its submitter queued it meanwhile: link that one.
            Err(e) => match self.meta.find_job_by_name(&job_name(exp.id)).await? {
                Some(job) => Ok(Ok(job.id)),
                None => Err(e),
            },
        }
    }

    async fn reconcile_one(&self, exp: &ExperimentRecord, report: &mut ReconcileReport) -> Result<()> {
        let Some(job_id) = exp.job else { return Ok(()) };
        let job = self.meta.get_job(job_id).await?;
        let Some(step) = lifecycle::reconcile(
            exp.status,
            exp.attempt,
            job.status,
            job.attempt,
            job.status_reason.as_deref(),
            job.exit_code,
        ) else {
            return Ok(());
        };
        // Through RUNNING when a short job finished between polls is not needed: PROVISIONING may end directly.
        let attempt = (step.attempt != exp.attempt).then_some(step.attempt);
        // Indexed before it ends: a process stopped between the two leaves a live experiment, which the next
        // reconcile indexes again (idempotent) and ends — never a COMPLETED one with part of its outputs indexed
        // (found by the fault campaign: `falcon serve` killed between them left e-5 COMPLETED with one artifact).
        if step.to.is_terminal() {
            self.index_outputs(exp.id, Some(job_id)).await?;
        }
        match self.transition(exp.id, exp.status, step.to, &step.reason, attempt).await {
            Ok(()) => {}
            Err(ExpError::Store(InfraError::Conflict(_))) => return Ok(()), // another worker moved it first
            Err(e) => return Err(e),
        }
        report.moved.push((exp.id, step.to));
        if step.to == ExperimentStatus::Completed {
            self.refresh_noise(&exp.config_hash).await?;
        }
        Ok(())
    }

    /// Indexes the experiment's outputs that are not indexed yet, and re-summarises its metrics files. Called
    /// before a finished experiment's terminal transition.
    ///
    /// The job's outputs come from the Job module's job-outputs record, with the size and SHA-256 the upload
    /// returned (nothing is downloaded again); an object under the experiment's prefix with no such record (an
    /// experiment collected before schema version 3) is read once to hash it.
    pub async fn index_outputs(&self, id: ExperimentId, job: Option<JobId>) -> Result<Vec<ArtifactRecord>> {
        let prefix = experiment_prefix(id);
        let mut known: std::collections::HashSet<String> =
            self.meta.list_artifacts(id, None).await?.into_iter().map(|a| a.key).collect();
        let outputs = match job {
            Some(job) => self.meta.job_outputs(job).await?,
            None => Vec::new(),
        };
        for stored in outputs.iter().filter_map(|o| o.stored.as_ref()) {
            if known.insert(stored.key.clone()) {
                self.index_one(id, job, &prefix, &stored.key, stored.size, stored.sha256.clone()).await?;
            }
        }
        for object in self.artifacts.list(&prefix).await? {
            if known.contains(&object.key) {
                continue;
            }
            let data = self.artifacts.get(&object.key).await?;
            self.index_one(id, job, &prefix, &object.key, data.len() as u64, sha256_hex(&data)).await?;
        }
        let series = self.metric_series(id).await?;
        self.meta.put_metric_summaries(id, &series.summaries(None)).await?;
        // Already COMPLETED (outputs indexed again later): its config's run-to-run noise changes now. Reconcile
        // indexes before the transition and refreshes the noise after it.
        let record = self.meta.get_experiment(id).await?;
        if record.status == ExperimentStatus::Completed {
            self.refresh_noise(&record.config_hash).await?;
        }
        let notes: Vec<ExperimentNote> = series
            .notes
            .iter()
            .map(|n| ExperimentNote {
                source: METRICS_NOTES.into(),
                file: n.file.clone(),
                line: n.line.map(|l| l as u64),
                reason: n.reason.clone(),
            })
            .collect();
        self.meta.put_experiment_notes(id, METRICS_NOTES, &notes).await?;
        Ok(self.meta.list_artifacts(id, None).await?)
    }

    async fn index_one(
        &self,
        id: ExperimentId,
        job: Option<JobId>,
        prefix: &str,
        key: &str,
        size: u64,
        sha256: String,
    ) -> Result<()> {
        let relative = key.strip_prefix(&format!("{prefix}/")).unwrap_or(key);
        let new = NewArtifact {
            experiment: Some(id),
            job,
            kind: ArtifactKind::recognise(relative),
            key: key.to_string(),
            uri: self.artifacts.uri(key),
            size,
            sha256,
            content_type: content_type_for(relative).to_string(),
        };
        match self.meta.insert_artifact(&new).await {
            Ok(_) | Err(InfraError::Conflict(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// The experiment's per-step metrics, from its `metrics*.jsonl` artifacts (with what the reader skipped
    /// in `notes`).
    pub async fn metric_series(&self, id: ExperimentId) -> Result<MetricSeries> {
        let mut series = MetricSeries::default();
        // Attempts in order (a retried attempt's files are under `attempts/<n>/`): a step a restart repeated keeps
        // the last attempt's value.
        let mut artifacts = self.meta.list_artifacts(id, Some(ArtifactKind::Metrics)).await?;
        artifacts.sort_by_key(|a| (crate::goodput::attempt_of_key(&a.key), a.key.clone()));
        for a in artifacts {
            if !a.key.ends_with(".jsonl") {
                continue;
            }
            let data = self.artifacts.get_verified(&a.key, a.size, &a.sha256).await?;
            let text = String::from_utf8_lossy(&data);
            series.merge(MetricSeries::parse(&text, &a.uri));
        }
        Ok(series)
    }

    /// The experiment's metric summaries recomputed from its metrics artifacts with `warmup` steps dropped
    /// (the stored summaries use the default warm-up rule).
    pub async fn metric_summaries(
        &self,
        id: ExperimentId,
        warmup: Option<usize>,
    ) -> Result<BTreeMap<String, MetricSummary>> {
        self.meta.get_experiment(id).await?;
        let series = self.metric_series(id).await?;
        Ok(series.summaries(warmup).into_iter().map(|m| (m.metric.clone(), m)).collect())
    }

    /// Everything known about one experiment.
    pub async fn show(&self, id: ExperimentId) -> Result<ExperimentView> {
        let record = self.meta.get_experiment(id).await?;
        let job_reason = match record.job {
            Some(job) if !record.status.is_terminal() => self.meta.get_job(job).await?.status_reason,
            _ => None,
        };
        let outputs = match record.job {
            Some(job) => self.meta.job_outputs(job).await?,
            None => Vec::new(),
        };
        let mut artifacts = self.meta.list_artifacts(id, None).await?;
        name_artifacts(&mut artifacts, &outputs, &experiment_prefix(id));
        let skipped =
            outputs.into_iter().filter_map(|o| Some(SkippedOutput { reason: o.skip_reason?, path: o.path })).collect();
        Ok(ExperimentView {
            history: self.meta.experiment_history(id).await?,
            artifacts,
            metrics: self.meta.metric_summaries(id).await?.into_iter().map(|m| (m.metric.clone(), m)).collect(),
            analysis: self.meta.analysis_summaries(id).await?,
            job_reason,
            skipped,
            notes: self
                .meta
                .experiment_notes(id)
                .await?
                .into_iter()
                .map(|n| Note { file: n.file, line: n.line, reason: n.reason })
                .collect(),
            record,
        })
    }

    /// One experiment's stored record (no history, artifacts or summaries: [`Exp::show`] has those).
    pub async fn experiment(&self, id: ExperimentId) -> Result<ExperimentRecord> {
        Ok(self.meta.get_experiment(id).await?)
    }

    /// Experiments matching the filter, newest first.
    pub async fn list(&self, filter: &ExperimentFilter) -> Result<Vec<ExperimentRecord>> {
        Ok(self.meta.list_experiments(filter).await?)
    }

    /// The stored metric summaries of several experiments (a page of a list), by experiment and metric name,
    /// read in one query per 500 ids: from the summary rows, never from the metrics files. Every id is a key;
    /// an experiment without summaries (not finished, or it logged no metrics) has an empty map.
    pub async fn metric_summaries_of(&self, ids: &[ExperimentId]) -> Result<BTreeMap<ExperimentId, MetricSummaries>> {
        let rows = self.meta.metric_summaries_of(ids).await?;
        Ok(rows
            .into_iter()
            .map(|(id, summaries)| (id, summaries.into_iter().map(|m| (m.metric.clone(), m)).collect()))
            .collect())
    }

    /// Asks for the experiment to stop: its job is cancelled by the worker holding it; an experiment without
    /// a job is cancelled at once.
    pub async fn cancel(&self, id: ExperimentId) -> Result<ExperimentRecord> {
        let exp = self.meta.get_experiment(id).await?;
        if exp.status.is_terminal() {
            return Err(ExpError::State(format!("experiment {id} is already {}", exp.status)));
        }
        match exp.job {
            Some(job) => {
                self.jobs().await?.cancel(job).await?;
            }
            None => {
                self.transition(
                    id,
                    exp.status,
                    ExperimentStatus::Cancelled,
                    "cancelled before its job was queued",
                    None,
                )
                .await?;
            }
        }
        Ok(self.meta.get_experiment(id).await?)
    }

    /// The experiment's logs: `(attempt/source, text)` for each log the job produced, in key order.
    pub async fn logs(&self, id: ExperimentId) -> Result<Vec<(String, String)>> {
        self.meta.get_experiment(id).await?;
        let prefix = format!("{}/logs", experiment_prefix(id));
        let mut out = Vec::new();
        for object in self.artifacts.list(&prefix).await? {
            let name = object.key.strip_prefix(&format!("{prefix}/")).unwrap_or(&object.key).to_string();
            let data = self.artifacts.get(&object.key).await?;
            out.push((name, String::from_utf8_lossy(&data).into_owned()));
        }
        Ok(out)
    }

    /// Path-level differences between two experiments' specs.
    pub async fn diff(&self, a: ExperimentId, b: ExperimentId) -> Result<Vec<crate::diff::Change>> {
        let (ea, eb) = (self.meta.get_experiment(a).await?, self.meta.get_experiment(b).await?);
        Ok(crate::diff::diff_with_code(&ea, &eb))
    }

    /// The verdict on a metric of two experiments (A is the baseline), at run level: one run a side, the
    /// between-run noise from their config hashes' histories (see [`crate::runs`]). `direction` overrides the
    /// standard direction of known metrics.
    pub async fn compare(
        &self,
        a: ExperimentId,
        b: ExperimentId,
        metric: &str,
        direction: Option<Direction>,
        warmup: Option<usize>,
    ) -> Result<Verdict> {
        use crate::runs::RunSet;
        let (a, b) = (RunSet::Experiments(vec![a]), RunSet::Experiments(vec![b]));
        Ok(self.compare_runs(&a, &b, metric, direction, warmup).await?.verdict)
    }

    /// One worker pass: the Job module's tick, then reconciliation of experiments.
    pub async fn work(&self) -> Result<(falcon_job::TickReport, ReconcileReport)> {
        let jobs = self.jobs().await?;
        let tick = jobs.tick().await?;
        let reconcile = self.reconcile().await?;
        Ok((tick, reconcile))
    }

    /// Runs [`Exp::work`] until the experiment ends (the embedded worker of `exp submit --wait`).
    pub async fn wait(&self, id: ExperimentId, on_change: impl FnMut(&ExperimentRecord)) -> Result<ExperimentRecord> {
        self.wait_until(id, None, on_change).await
    }

    /// [`Exp::wait`] that gives up at `deadline`: the deadline is checked between passes (a pass is never
    /// cut short), and on expiry the experiment is left as it is, still running, with a `Timeout` error.
    pub async fn wait_until(
        &self,
        id: ExperimentId,
        deadline: Option<std::time::Instant>,
        mut on_change: impl FnMut(&ExperimentRecord),
    ) -> Result<ExperimentRecord> {
        let mut last = None;
        loop {
            if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                let exp = self.meta.get_experiment(id).await?;
                return Err(ExpError::Timeout(format!(
                    "{id} is still {} at the --timeout; it keeps running (`falcon exp show {id}`, `falcon worker`)",
                    exp.status
                )));
            }
            let (tick, _) = self.work().await?;
            for e in tick.errors {
                tracing::warn!("{e}");
            }
            let exp = self.meta.get_experiment(id).await?;
            if last != Some(exp.status) {
                on_change(&exp);
                last = Some(exp.status);
            }
            if exp.status.is_terminal() {
                return Ok(exp);
            }
            tokio::time::sleep(std::time::Duration::from_millis(self.config.jobs.poll_interval_ms.min(500))).await;
        }
    }
}

/// The job an experiment spec asks for, named `name`: its workload, resources, timeout, priority and retries
/// (the caller adds the environment, the artifact URI and labels).
pub(crate) fn job_spec_of(spec: &ExperimentSpec, name: String) -> JobSpec {
    JobSpec {
        name,
        image: spec.workload.image.clone(),
        command: spec.workload.command.clone(),
        env: Default::default(),
        resources: spec.resources.clone(),
        artifact_uri: None,
        timeout_s: spec.timeout,
        priority: spec.priority,
        retry: RetryPolicy { max_attempts: spec.retries + 1, retry_exit_codes: spec.retry_on_exit_codes.clone() },
        labels: Default::default(),
    }
}

/// The name of an experiment's job: deterministic, so an experiment whose submitter stopped before linking the
/// job finds it.
/// Gives each artifact whose key is not the file's own name (shortened or escaped) the name the job wrote, from
/// the job's outputs record.
fn name_artifacts(artifacts: &mut [ArtifactRecord], outputs: &[falcon_infra::meta::JobOutput], prefix: &str) {
    let names: std::collections::HashMap<&str, &str> =
        outputs.iter().filter_map(|o| Some((o.stored.as_ref()?.key.as_str(), o.path.as_str()))).collect();
    for a in artifacts {
        let Some(name) = names.get(a.key.as_str()) else { continue };
        let keyed = a.key.strip_prefix(prefix).unwrap_or(&a.key).trim_start_matches('/');
        if keyed != *name {
            a.name = Some(name.to_string());
        }
    }
}

fn job_name(id: ExperimentId) -> String {
    format!("e-{}", id.0)
}

/// How long a PENDING experiment may wait for its submitter to queue its job before reconcile takes over.
pub const PENDING_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// Where an experiment's artifacts live in the artifact store.
pub fn experiment_prefix(id: ExperimentId) -> String {
    format!("experiments/{id}")
}

fn sha256_hex(data: &[u8]) -> String {
    falcon_core::artifact::sha256_hex(data)
}
