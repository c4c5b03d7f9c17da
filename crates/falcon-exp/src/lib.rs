//! EXP, the experiment-management module, and the facade the application layer (`falcon-app`) calls.
//!
//! The application layer never touches storage: it builds an [`Exp`] from a [`falcon_core::config::Config`]
//! and calls methods on it: `doctor`, submit (spec → canonical snapshot + hash → job), the lifecycle driven by
//! job states, config diffs, metric summaries, verdicts and change points, sessions (sweeps) and goals (claims
//! with leases, ranking, progress, verdicts).
//!
//! # In detail
//!
//! - **Owns:** the `Exp` facade the application layer calls: `connect`, `doctor`; `submit` (spec → canonical snapshot
//!   and hash → `JobSpec` → Job module), `reconcile`/`work`/`wait` (job states → lifecycle), artifact indexing from the
//!   job-outputs record (no download) and metric summaries with notes on what the reader skipped, recovery of PENDING
//!   experiments whose submitter stopped, `show` (with `skipped[]` and `notes[]`)/`list`/`logs`/`diff`; `runs`
//!   (run-level `compare_runs` over `RunSet`s: experiment lists, sessions, config-hash prefixes; history noise from
//!   the `run_noise` row, compared runs left out), `history` (run values per series, shifts with effect, interval and
//!   power note); `progress` (`wait_all`: each waited experiment's status, why it waits, the step its live metrics
//!   reached); sessions (sweeps with `repeats`; `base: e-N` starts a sweep from a run's stored spec, its points'
//!   baseline — `expand_sweep`), goals (claims with leases, compare with run-level verdicts per config and the
//!   baseline's re-runs marked); `lifecycle` (valid transitions, job → experiment mapping), `diff` (by path, grouped,
//!   N-way; bookkeeping fields — name, goal, session, baseline, Falcon's labels — apart from configuration), `sweep`,
//!   `metrics` (series and summaries over `falcon_core::metrics_jsonl`); `code` (a spec's `code` resolved with git,
//!   its tree snapshotted once per tree and checked out where the job runs; a work tree recorded) and `bisect`
//!   (a search for the commit that moved a metric, as a session: the pure `bisect::plan` and its steps)
//! - **Must not:** parse profiles or compute MFU (that is analysis); talk to a cluster directly (that is Job); run
//!   git through a shell, or on a local path a server was handed (`code::Origin`)
//! - **Invariants:** the interface gets services only from constructors here and in analysis; every status move is
//!   validated by `lifecycle` and applied as a compare-and-set; the job manager is built lazily, so commands that run
//!   no job never need every pool's backend; a verdict between experiments is run-level (the run is the unit of
//!   evidence), and lists and goal comparisons read summary rows, never metrics files

pub mod bisect;
pub mod calibrate;
pub mod code;
pub mod diff;
mod doctor;
mod error;
pub mod experiments;
pub mod goals;
pub mod goodput;
pub mod history;
pub mod housekeeping;
pub mod lifecycle;
pub mod metrics;
pub mod outputs;
pub mod progress;
pub mod runs;
/// Sweep files (pure: no I/O), kept in `falcon-core` beside the spec so the fuzz targets parse them without the storage stack.
pub use falcon_core::sweep;
pub mod tokens;

pub use doctor::{doctor, Check, DoctorReport};
pub use error::{ExpError, Result};
pub use experiments::PENDING_GRACE;
pub use falcon_infra::meta::{
    AnalysisSummary, ArtifactRecord, Calibration, CodeRecord, CodeSnapshot, ExperimentFilter, ExperimentRecord,
    GoalRecord, NewGoal, SessionKind, SessionRecord,
};
pub use falcon_infra::DbBackend;
pub use falcon_job::PoolUsage;
pub use history::HISTORY_READS;

use falcon_core::config::Config;
use falcon_infra::{ArtifactStore, MetaStore};

/// The EXP service: the metadata and artifact stores, wired from configuration.
#[derive(Clone)]
pub struct Exp {
    meta: MetaStore,
    artifacts: ArtifactStore,
    config: Config,
    owner: String,
    jobs: std::sync::Arc<tokio::sync::OnceCell<std::sync::Arc<falcon_job::JobManager>>>,
}

impl std::fmt::Debug for Exp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exp").field("meta", &self.meta).field("artifacts", &self.artifacts).finish()
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_else(|_| "host".into())
}

/// What an [`Exp`] is connected to, for `falcon init` and status displays.
#[derive(Debug, Clone)]
pub struct Connection {
    /// `sqlite` or `mysql`.
    pub database_backend: falcon_infra::DbBackend,
    /// The database URL (password removed).
    pub database: String,
    /// Schema version applied.
    pub schema_version: Option<i64>,
    /// Root URI of the artifact store.
    pub artifacts: String,
    /// Names of the configured pools.
    pub pools: Vec<String>,
}

impl Exp {
    /// Connects both stores, applying pending schema migrations and creating the local artifact directory when
    /// missing. The database must exist: a missing SQLite file or MySQL database is "not found" (exit 3) and
    /// nothing is created, so a mistyped `--db` cannot start an empty store; [`Exp::init`] creates it.
    pub async fn connect(config: &Config) -> Result<Exp> {
        Self::with_meta(config, MetaStore::connect(&config.db).await?)
    }

    /// [`Exp::connect`], creating the SQLite file (and its folder) or the MySQL database when missing: what
    /// `falcon init` does.
    pub async fn init(config: &Config) -> Result<Exp> {
        Self::with_meta(config, MetaStore::create(&config.db).await?)
    }

    fn with_meta(config: &Config, meta: MetaStore) -> Result<Exp> {
        let artifacts = ArtifactStore::open(&config.artifacts, &config.gcs, &config.s3)?;
        let owner = format!("falcon-{}-{}", hostname(), std::process::id());
        Ok(Exp { meta, artifacts, config: config.clone(), owner, jobs: Default::default() })
    }

    /// The Job module, built on first use from the configured pools (so commands that never run jobs do not
    /// need every pool's backend reachable).
    pub(crate) async fn jobs(&self) -> Result<std::sync::Arc<falcon_job::JobManager>> {
        let jobs = self
            .jobs
            .get_or_try_init(|| async {
                let manager = falcon_job::JobManager::from_config(
                    self.meta.clone(),
                    self.artifacts.clone(),
                    &self.config,
                    self.owner.clone(),
                )
                .await?;
                Ok::<_, ExpError>(std::sync::Arc::new(manager))
            })
            .await?;
        Ok(jobs.clone())
    }

    /// What this service is connected to.
    pub async fn connection(&self) -> Result<Connection> {
        let status = self.meta.migration_status().await?;
        Ok(Connection {
            database_backend: self.meta.backend(),
            database: self.meta.url().to_string(),
            schema_version: status.applied,
            artifacts: self.artifacts.uri("").trim_end_matches('/').to_string(),
            pools: self.config.pools.iter().map(|p| p.name.clone()).collect(),
        })
    }

    /// How many experiments match `filter` (its page size and cursor ignored).
    pub async fn count(&self, filter: &ExperimentFilter) -> Result<u64> {
        Ok(u64::try_from(self.meta.count_experiments(filter).await?).unwrap_or(0))
    }

    /// The configuration this service was built from.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Closes the database pool.
    pub async fn close(&self) {
        self.meta.close().await;
    }
}
