//! The job manager: accepts jobs, and in each [`JobManager::tick`] claims jobs (leases), places queued ones
//! with the [`scheduler`](crate::scheduler), submits them, polls their backends, moves statuses, retries,
//! fails over from pools without capacity, enforces timeouts, carries out cancels, and copies logs and local
//! artifacts into the artifact store. A failed attempt's reason ends with the last meaningful line of its
//! error stream (`exited with status 2: error: bad flag`, see [`failure`](crate::failure)).
//!
//! Every state lives in the metadata store; the in-memory part is only timing (when a job became
//! unschedulable, when logs were last copied). A manager killed at any point loses nothing: another one claims
//! its jobs once their leases lapse and reconciles them against the backends by their deterministic names.
//!
//! This file holds the manager's setup, the tick (claiming, placing, submitting) and the leases;
//! `manager/reconcile.rs` reconciles one job against its backend, `manager/outputs.rs` collects its outputs.

use crate::backend::{object_name, Backend, BackendRef, Submission};
use crate::error::{JobError, Result};
use crate::pool::Pool;
use crate::scheduler::{schedule, Decision, PoolLoad, QueuedJob};
use crate::spec::{JobSpec, Resolved};
use crate::sync::ArtifactSync;
use falcon_core::ids::JobId;
use falcon_core::status::JobStatus;
use falcon_core::time::Millis;
use falcon_infra::meta::{JobChanges, JobRecord, JobTransition, NewJob};
use falcon_infra::{ArtifactStore, InfraError, MetaStore};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod gc;
mod outputs;
mod reconcile;
mod sampling;
pub use gc::JobDirCollection;
pub use outputs::COLLECT_TRIES;
use sampling::Sampling;
pub use sampling::MAX_SAMPLES;

const ACTIVE: [JobStatus; 4] = [JobStatus::Queued, JobStatus::Submitted, JobStatus::Pending, JobStatus::Running];

/// Timings and identity of a manager.
#[derive(Debug, Clone)]
pub struct ManagerConfig {
    /// This worker's name in leases.
    pub owner: String,
    /// How long a claim lasts without renewal.
    pub lease: Duration,
    /// Pause between ticks in [`JobManager::run`].
    pub poll_interval: Duration,
    /// How long a job may stay unschedulable on a pool before it moves to the next fitting pool.
    pub capacity_timeout: Duration,
    /// How often logs and artifacts of running jobs are copied.
    pub log_interval: Duration,
    /// How long an ended job's outputs are tried again (at least [`COLLECT_TRIES`] times) before the job fails
    /// with its outputs uncollected.
    pub collect_patience: Duration,
    /// How often each active job's resource use is sampled while [`JobManager::start_background`] runs; `None`
    /// turns sampling off.
    pub sample_interval: Option<Duration>,
    /// How much of a job's files is collected (`[jobs] max_artifact_mib`, `max_experiment_artifacts_mib`).
    pub caps: crate::sync::Caps,
}

impl ManagerConfig {
    /// Defaults: 30 s leases, 1 s polling, 60 s capacity timeout, 5 s log copies, 250 ms resource samples.
    pub fn new(owner: impl Into<String>) -> Self {
        ManagerConfig {
            owner: owner.into(),
            lease: Duration::from_secs(30),
            poll_interval: Duration::from_secs(1),
            capacity_timeout: Duration::from_secs(60),
            log_interval: Duration::from_secs(5),
            collect_patience: Duration::from_secs(300),
            sample_interval: Some(Duration::from_millis(falcon_core::config::DEFAULT_SAMPLE_INTERVAL_MS)),
            caps: crate::sync::Caps::default(),
        }
    }

    /// The timings configured in `[jobs]` of falcon.toml.
    pub fn from_config(owner: impl Into<String>, jobs: &falcon_core::config::JobsConfig) -> Self {
        ManagerConfig {
            owner: owner.into(),
            lease: Duration::from_secs(jobs.lease_s),
            poll_interval: Duration::from_millis(jobs.poll_interval_ms),
            capacity_timeout: Duration::from_secs(jobs.capacity_timeout_s),
            log_interval: Duration::from_secs(jobs.log_interval_s),
            collect_patience: Duration::from_secs(jobs.collect_patience_s),
            sample_interval: (jobs.sample_interval_ms > 0).then(|| Duration::from_millis(jobs.sample_interval_ms)),
            caps: crate::sync::Caps::from_config(jobs),
        }
    }
}

/// What one tick did.
#[derive(Debug, Default, Clone, Serialize, schemars::JsonSchema)]
pub struct TickReport {
    /// Jobs this manager holds after claiming.
    pub held: usize,
    /// Jobs submitted to a backend.
    pub submitted: Vec<JobId>,
    /// Jobs that reached an end state.
    pub finished: Vec<JobId>,
    /// Queued jobs that could not be placed, with the reason.
    pub waiting: Vec<(JobId, String)>,
    /// Problems that did not stop the tick (a backend down): the job stays as it was.
    pub errors: Vec<String>,
}

/// A pool and what it carries now.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PoolUsage {
    /// The pool.
    #[serde(flatten)]
    pub pool: Pool,
    /// Chips held by submitted, pending and running jobs.
    pub used: u32,
    /// Jobs running.
    pub running: u32,
    /// Jobs submitted but not running yet.
    pub waiting: u32,
}

/// A manager's timers that run beside its ticks while it lives — lease renewal ([`JobManager::keep_leases`])
/// and, with [`JobManager::start_background`], resource sampling. They stop when it is dropped or
/// [`Background::stop`]ped.
#[derive(Debug)]
pub struct Background {
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Background {
    /// Stops the timers (the same as dropping it).
    pub fn stop(self) {}
}

impl Drop for Background {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

#[derive(Default)]
struct Tracked {
    unschedulable_since: Option<Instant>,
    last_copy: Option<Instant>,
}

/// The Job module's service.
pub struct JobManager {
    meta: MetaStore,
    artifacts: ArtifactStore,
    pools: Vec<Pool>,
    backends: Vec<Arc<dyn Backend>>,
    config: ManagerConfig,
    tracked: Mutex<HashMap<JobId, Tracked>>,
    sync: ArtifactSync,
    sampling: Arc<Sampling>,
}

impl JobManager {
    /// A manager over these pools, `backends[i]` running the jobs of `pools[i]`.
    pub fn new(
        meta: MetaStore,
        artifacts: ArtifactStore,
        pools: Vec<Pool>,
        backends: Vec<Arc<dyn Backend>>,
        config: ManagerConfig,
    ) -> Self {
        assert_eq!(pools.len(), backends.len(), "one backend per pool");
        let sync = ArtifactSync::new(artifacts.clone(), meta.clone(), config.caps);
        JobManager {
            meta,
            artifacts,
            pools,
            backends,
            config,
            tracked: Mutex::new(HashMap::new()),
            sync,
            sampling: Arc::new(Sampling::default()),
        }
    }

    /// A manager for the configured pools and timings: validates every pool and builds its backend (job
    /// folders under `[jobs] work_dir`, local jobs behind the `[jobs] isolation` boundary). A pool that cannot work
    /// is an error naming it.
    pub async fn from_config(
        meta: MetaStore,
        artifacts: ArtifactStore,
        config: &falcon_core::config::Config,
        owner: impl Into<String>,
    ) -> Result<Self> {
        let pools = crate::pool::pools_from_config(&config.pools)?;
        // A `[jobs]` setting that cannot work is refused here, never worked around: a mistyped `job_uids` must not
        // quietly leave workloads without their boundary.
        let boundary_settings = ["jobs.job_uids", "jobs.work_dir", "jobs.max_artifact_mib"];
        if let Some(p) = config.problems().into_iter().find(|p| boundary_settings.contains(&p.field.as_str())) {
            return Err(JobError::InvalidSetting { field: p.field, message: p.message });
        }
        let boundary = crate::backend::isolation::Boundary::from_config(config, config.file.as_deref());
        if !boundary.isolated() && pools.iter().any(|p| p.backend == falcon_core::config::PoolBackend::Local) {
            tracing::warn!("{}", boundary.describe());
        }
        let mut backends = Vec::with_capacity(pools.len());
        for pool in &pools {
            backends.push(crate::backend::for_pool(pool, &boundary).await?);
        }
        Ok(Self::new(meta, artifacts, pools, backends, ManagerConfig::from_config(owner, &config.jobs)))
    }

    /// The pools.
    pub fn pools(&self) -> &[Pool] {
        &self.pools
    }

    /// Each pool with the chips held and jobs waiting on it right now, and the jobs queued overall.
    pub async fn pool_usage(&self) -> Result<Vec<PoolUsage>> {
        let active = self.meta.list_jobs(&ACTIVE).await?;
        let mut usage: Vec<PoolUsage> =
            self.pools.iter().map(|p| PoolUsage { pool: p.clone(), used: 0, running: 0, waiting: 0 }).collect();
        for job in &active {
            let Some(i) = job.pool.as_ref().and_then(|n| self.pools.iter().position(|p| &p.name == n)) else {
                continue;
            };
            if job.status == JobStatus::Queued {
                continue;
            }
            if let Ok((_, resolved)) = parse_spec(job) {
                usage[i].used += resolved.chips;
            }
            if job.status == JobStatus::Running {
                usage[i].running += 1;
            } else {
                usage[i].waiting += 1;
            }
        }
        Ok(usage)
    }

    /// Validates and queues a job. A spec error names the field; nothing is recorded then.
    pub async fn submit(&self, spec: &JobSpec) -> Result<JobRecord> {
        spec.resolve()?;
        if let Some(uri) = &spec.artifact_uri {
            if self.artifacts.key_of(uri).is_none() {
                return Err(JobError::spec(
                    "artifact_uri",
                    format!("`{uri}` is not inside the artifact store {}", self.artifacts.uri("")),
                ));
            }
        }
        let new = NewJob {
            name: spec.name.clone(),
            spec: serde_json::to_value(spec).expect("a job spec serializes"),
            priority: spec.priority,
            labels: spec.labels.clone(),
        };
        Ok(self.meta.insert_job(&new).await?)
    }

    /// One job.
    pub async fn get(&self, id: JobId) -> Result<JobRecord> {
        self.meta.get_job(id).await.map_err(not_found(id))
    }

    /// A job's status log.
    pub async fn history(&self, id: JobId) -> Result<Vec<JobTransition>> {
        self.get(id).await?;
        Ok(self.meta.job_history(id).await?)
    }

    /// Asks for a job to be cancelled; the manager holding it stops it on the backend at its next tick.
    pub async fn cancel(&self, id: JobId) -> Result<JobRecord> {
        self.meta.request_job_cancel(id).await.map_err(not_found(id))?;
        self.get(id).await
    }

    /// Runs ticks until `shutdown` completes, with the leases renewed and the jobs' resource use sampled on
    /// timers of their own meanwhile ([`JobManager::start_background`]), so a tick that outlasts the lease loses
    /// nothing.
    pub async fn run(&self, shutdown: impl std::future::Future<Output = ()>) {
        let _background = self.start_background();
        tokio::pin!(shutdown);
        loop {
            match self.tick().await {
                Ok(report) => {
                    for e in &report.errors {
                        tracing::warn!("{e}");
                    }
                }
                Err(e) => tracing::error!("job manager tick failed: {e}"),
            }
            tokio::select! {
                _ = &mut shutdown => return,
                _ = tokio::time::sleep(self.config.poll_interval) => {}
            }
        }
    }

    /// Extends the leases this manager still holds on active jobs (never one it lost); how many.
    pub async fn renew_leases(&self) -> Result<u64> {
        Ok(self.meta.renew_leases(&self.config.owner, self.config.lease).await?)
    }

    /// Starts renewing this manager's leases every third of the lease, on a task of its own, for as long as
    /// the returned guard lives: a tick, an analysis or an upload that takes longer than the lease then keeps
    /// its jobs. Dropping the guard (the worker stops) stops the renewals, so the leases lapse and another
    /// worker takes over. A renewal that fails is logged and tried again at the next interval.
    pub fn keep_leases(&self) -> Background {
        Background { tasks: vec![self.lease_task()] }
    }

    /// Starts the manager's timers for as long as the returned guard lives: lease renewal
    /// ([`JobManager::keep_leases`]) and, unless `sample_interval` is `None`, sampling every active job's
    /// resource use (see `manager/sampling.rs`). Every worker loop holds one.
    pub fn start_background(&self) -> Background {
        let mut tasks = vec![self.lease_task()];
        if let Some(every) = self.config.sample_interval {
            let sampling = Arc::clone(&self.sampling);
            tasks.push(tokio::spawn(async move {
                let mut timer = tokio::time::interval(every);
                timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
                loop {
                    timer.tick().await;
                    sampling.tick();
                }
            }));
        }
        Background { tasks }
    }

    fn lease_task(&self) -> tokio::task::JoinHandle<()> {
        let meta = self.meta.clone();
        let owner = self.config.owner.clone();
        let lease = self.config.lease;
        let every = (lease / 3).max(Duration::from_millis(10));
        tokio::spawn(async move {
            let mut timer = tokio::time::interval(every);
            timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                timer.tick().await;
                match meta.renew_leases(&owner, lease).await {
                    Ok(n) => tracing::trace!("renewed {n} lease(s) of {owner}"),
                    Err(e) => tracing::warn!("renewing the job leases of {owner} failed (will retry): {e}"),
                }
            }
        })
    }

    /// One pass over every active job.
    pub async fn tick(&self) -> Result<TickReport> {
        let mut report = TickReport::default();
        let active = self.meta.list_jobs(&ACTIVE).await?;
        let ids: Vec<JobId> = active.iter().map(|j| j.id).collect();
        let mine = self.meta.claim_jobs(&ids, &self.config.owner, self.config.lease).await?;
        report.held = mine.len();
        let mut queued = Vec::new();
        for id in mine {
            // Re-read after claiming: another worker may have moved it before our lease began.
            let job = self.meta.get_job(id).await?;
            let outcome = match job.status {
                JobStatus::Queued => {
                    if job.cancel_requested {
                        self.finish(
                            &job,
                            JobStatus::Cancelled,
                            "cancelled before it started",
                            JobChanges::default(),
                            &mut report,
                        )
                        .await
                    } else {
                        match self.adopt_placed(&job).await {
                            Ok(true) => Ok(()),
                            Ok(false) => {
                                queued.push(job);
                                Ok(())
                            }
                            Err(e) => Err(e),
                        }
                    }
                }
                s if !s.is_terminal() => self.reconcile(&job, &mut report).await,
                _ => Ok(()),
            };
            if let Err(e) = outcome {
                report.errors.push(format!("job {id}: {e}"));
            }
        }
        self.place(queued, &active, &mut report).await?;
        Ok(report)
    }

    /// A queued job whose placement was recorded but whose submission was not (a worker died in between):
    /// adopt it if the backend has it.
    async fn adopt_placed(&self, job: &JobRecord) -> Result<bool> {
        let (Some(pool_name), Some(name)) = (&job.pool, &job.backend_ref) else { return Ok(false) };
        let Some(i) = self.pools.iter().position(|p| &p.name == pool_name) else { return Ok(false) };
        match self.backends[i].find(name).await? {
            Some(found) => {
                let changes = JobChanges { placement: Some(Some((pool_name.clone(), found.0))), ..Default::default() };
                self.transition(
                    job,
                    JobStatus::Submitted,
                    &format!("adopted from pool {pool_name} after a worker restart"),
                    changes,
                )
                .await?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    async fn place(&self, queued: Vec<JobRecord>, active: &[JobRecord], report: &mut TickReport) -> Result<()> {
        if queued.is_empty() {
            return Ok(());
        }
        let mut load = vec![PoolLoad::default(); self.pools.len()];
        for job in active.iter().filter(|j| j.status != JobStatus::Queued) {
            let Some(i) = job.pool.as_ref().and_then(|p| self.pools.iter().position(|pool| &pool.name == p)) else {
                continue;
            };
            if let Ok((_, resolved)) = parse_spec(job) {
                load[i].used += resolved.chips;
                if job.status != JobStatus::Running {
                    load[i].waiting += 1;
                }
            }
        }
        let mut parsed = Vec::new();
        for job in queued {
            match parse_spec(&job) {
                Ok((spec, resolved)) => parsed.push((job, spec, resolved)),
                Err(e) => {
                    let reason = format!("the stored spec is not valid: {e}");
                    self.finish(&job, JobStatus::Failed, &reason, JobChanges::default(), report).await?;
                }
            }
        }
        let candidates: Vec<QueuedJob<'_>> = parsed
            .iter()
            .map(|(job, spec, resolved)| QueuedJob {
                id: job.id,
                priority: job.priority,
                accelerator: &resolved.accelerator.name,
                chips: resolved.chips,
                zones: &spec.resources.zones,
                excluded: &job.excluded_pools,
                has_image: spec.image.is_some(),
            })
            .collect();
        let decisions = schedule(&candidates, &self.pools, &mut load);
        let by_id: HashMap<JobId, &(JobRecord, JobSpec, Resolved)> = parsed.iter().map(|p| (p.0.id, p)).collect();
        for decision in decisions {
            match decision {
                // Fits none of this worker's pools, whatever their load: it would wait forever, so it fails
                // (EXP then fails its experiment with this reason).
                Decision::Unplaceable { job, reason } => {
                    let (record, _, _) = by_id[&job];
                    if let Err(e) = self.finish(record, JobStatus::Failed, &reason, JobChanges::default(), report).await
                    {
                        report.errors.push(format!("job {job}: failing it ({reason}) failed: {e}"));
                    }
                }
                Decision::Wait { job, reason } => {
                    let (record, _, _) = by_id[&job];
                    if record.status_reason.as_deref() != Some(reason.as_str()) {
                        self.meta.set_job_status_reason(job, &reason).await?;
                    }
                    report.waiting.push((job, reason));
                }
                Decision::Place { job, pool, why } => {
                    let (record, spec, resolved) = by_id[&job];
                    match self.submit_to(record, spec, resolved, pool, &why).await {
                        Ok(()) => report.submitted.push(job),
                        // The pool cannot run it as configured (a job folder its user cannot reach): retrying
                        // would only repeat it, so the job fails with the reason.
                        Err(e @ JobError::InvalidPool { .. }) => {
                            let reason = format!("pool {} cannot run it: {e}", self.pools[pool].name);
                            if let Err(e) =
                                self.finish(record, JobStatus::Failed, &reason, JobChanges::default(), report).await
                            {
                                report.errors.push(format!("job {job}: failing it ({reason}) failed: {e}"));
                            }
                        }
                        Err(e) => {
                            // Shown beside QUEUED so the person waiting sees why; the next tick tries again.
                            let reason =
                                format!("submitting to pool {} failed, will retry: {e}", self.pools[pool].name);
                            self.meta.set_job_status_reason(job, &reason).await?;
                            report.errors.push(format!("job {job}: {e} (it stays queued)"));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    async fn submit_to(
        &self,
        job: &JobRecord,
        spec: &JobSpec,
        resolved: &Resolved,
        pool: usize,
        why: &str,
    ) -> Result<()> {
        let pool_cfg = &self.pools[pool];
        let attempt = u32::try_from(job.attempt).unwrap_or(1);
        let name = object_name(&spec.name, attempt, &pool_cfg.name);
        // Recorded first: if this worker dies after the backend accepts the job, the next one finds it by name.
        self.meta.set_job_placement(job.id, &pool_cfg.name, &name).await?;
        let sub = Submission { job: job.id, name, spec, resolved, attempt, pool: pool_cfg };
        let handle = self.backends[pool].submit(&sub).await?;
        self.track_sampling(job, pool, &handle);
        let changes = JobChanges { placement: Some(Some((pool_cfg.name.clone(), handle.0))), ..Default::default() };
        self.transition(job, JobStatus::Submitted, &format!("placed on pool {}: {why}", pool_cfg.name), changes)
            .await?;
        Ok(())
    }

    async fn transition(&self, job: &JobRecord, to: JobStatus, reason: &str, changes: JobChanges) -> Result<()> {
        self.meta.transition_job(job.id, job.status, to, reason, changes).await.map(|_| ()).map_err(|e| match e {
            InfraError::Conflict(m) => JobError::Store(InfraError::Conflict(m)),
            other => other.into(),
        })
    }

    async fn finish(
        &self,
        job: &JobRecord,
        to: JobStatus,
        reason: &str,
        changes: JobChanges,
        report: &mut TickReport,
    ) -> Result<()> {
        self.transition(job, to, reason, changes).await?;
        self.meta.release_job(job.id, &self.config.owner).await?;
        self.tracked.lock().expect("tracked map lock").remove(&job.id);
        self.sampling.forget(job.id);
        report.finished.push(job.id);
        Ok(())
    }

    /// Samples an active job's resource use from now on (when sampling is on).
    fn track_sampling(&self, job: &JobRecord, pool: usize, handle: &BackendRef) {
        if self.config.sample_interval.is_some() {
            let prefix = self.prefix(job);
            self.sampling.track(job.id, job.attempt, Arc::clone(&self.backends[pool]), handle.clone(), prefix);
        }
    }

    /// Hands back every lease this manager holds, for a clean stop: another worker takes the jobs over at once
    /// (they keep running on their backends). Call it after the last tick, with the background timers stopped.
    pub async fn release_leases(&self) -> Result<u64> {
        Ok(self.meta.release_leases(&self.config.owner).await?)
    }

    /// Writes the series of every job still sampled (running ones), so a worker that stops loses none of the
    /// samples it took since its last copy; the next worker merges them with its own. Every worker loop calls
    /// it when it ends. A store failure is reported after every job was tried.
    pub async fn flush_samples(&self) -> Result<()> {
        let mut first_error = None;
        for (job, prefix) in self.sampling.tracked() {
            if let Err(e) = self.copy_samples(job, &prefix, true).await {
                tracing::warn!("job {job}: writing its resource samples failed: {e}");
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The key prefix of a job's artifacts.
    fn prefix(&self, job: &JobRecord) -> String {
        job.spec
            .get("artifact_uri")
            .and_then(|u| u.as_str())
            .and_then(|uri| self.artifacts.key_of(uri))
            .unwrap_or_else(|| format!("jobs/{}", job.name))
    }

    fn with_tracked<T>(&self, id: JobId, f: impl FnOnce(&mut Tracked) -> T) -> T {
        f(self.tracked.lock().expect("tracked map lock").entry(id).or_default())
    }
}

fn parse_spec(job: &JobRecord) -> Result<(JobSpec, Resolved)> {
    let spec = JobSpec::from_stored(&job.spec)?;
    let resolved = spec.resolve()?;
    Ok((spec, resolved))
}

fn not_found(id: JobId) -> impl FnOnce(InfraError) -> JobError {
    move |e| match e {
        InfraError::NotFound { .. } => JobError::NotFound(id.to_string()),
        other => other.into(),
    }
}

fn now() -> Millis {
    Millis(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis() as i64)
}
