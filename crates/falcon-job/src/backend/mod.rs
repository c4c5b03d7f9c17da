//! Backends: where jobs actually run. One trait, three implementations (local processes, Slurm, Kubernetes).
//!
//! Every backend object is named deterministically from the job (`<job-name>-a<attempt>-<pool>`), so a worker
//! that restarts finds what it submitted ([`Backend::find`]) and adopts it instead of submitting twice.

pub mod isolation;
pub mod kubernetes;
pub mod local;
pub mod procfs;
pub mod slurm;

use crate::error::Result;
use crate::pool::Pool;
use crate::spec::{JobSpec, Resolved};
use async_trait::async_trait;
use falcon_core::ids::JobId;
use serde::Serialize;
use std::path::PathBuf;

/// What a backend is asked to run.
#[derive(Debug, Clone)]
pub struct Submission<'a> {
    /// Job id (exported as `FALCON_JOB_ID`).
    pub job: JobId,
    /// The backend object name, unique per job, attempt and pool.
    pub name: String,
    /// The spec.
    pub spec: &'a JobSpec,
    /// What the spec resolved to.
    pub resolved: &'a Resolved,
    /// Attempt number, from 1.
    pub attempt: u32,
    /// The pool it was placed on.
    pub pool: &'a Pool,
}

/// A backend's handle on a submitted job (pid directory, Slurm job id, Kubernetes object name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct BackendRef(pub String);

/// What the backend says about a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum BackendState {
    /// Accepted, not running. `unschedulable` marks a capacity stockout (pods unschedulable, Slurm pending on
    /// resources), which the worker fails over from after a while.
    Pending {
        /// The backend's reason.
        reason: String,
        /// Whether the pool cannot provide capacity now.
        unschedulable: bool,
    },
    /// Running; `started`: when the backend says it started, when it says (Slurm's `start_time`), else the job
    /// manager takes the time it saw it running.
    Running { started: Option<falcon_core::time::Millis> },
    /// Finished with exit code 0.
    Succeeded,
    /// Finished unsuccessfully.
    Failed {
        /// Exit code, when known.
        exit_code: Option<i32>,
        /// Why.
        reason: String,
    },
    /// Stopped on request.
    Cancelled,
    /// Lost its resources (spot reclaim, eviction, node loss).
    Preempted {
        /// Why.
        reason: String,
    },
    /// The backend does not know the job (never submitted, or already garbage-collected).
    Missing,
}

/// The logs of one process or pod, complete so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSnapshot {
    /// Process or pod name (becomes `logs/<attempt>/<source>.log`).
    pub source: String,
    /// Everything it has written so far.
    pub text: Vec<u8>,
}

/// A job's CPU use as a backend measures it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CpuUse {
    /// CPU time used so far, in seconds (local `/proc`, Slurm `sstat`).
    Total(f64),
    /// The current rate, in cores (the Kubernetes metrics API); the sampler integrates it.
    Rate(f64),
}

/// One sample of a running job's resource use (see [`Backend::sample`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Sample {
    /// The job's processes together: resident memory in bytes, and CPU.
    Usage { rss_bytes: u64, cpu: CpuUse },
    /// No reading this time: nothing of the job runs right now (not started yet, between steps, ended), or the
    /// backend has nothing newer than its last reading (Slurm refreshes every `JobAcctGatherFrequency`).
    NoReading,
    /// This backend cannot measure the job, and why (the cluster gathers no accounting, the metrics API is not
    /// served): the sampler stops asking and records the reason with the job's outputs.
    Unsupported(String),
}

/// A place jobs run.
#[async_trait]
pub trait Backend: Send + Sync {
    /// `local`, `slurm` or `kubernetes`.
    fn kind(&self) -> &'static str;
    /// Submits; submitting a name that already exists adopts it and returns its handle.
    async fn submit(&self, submission: &Submission<'_>) -> Result<BackendRef>;
    /// Finds a job previously submitted under `name` (after a worker restart).
    async fn find(&self, name: &str) -> Result<Option<BackendRef>>;
    /// Current state.
    async fn status(&self, job: &BackendRef) -> Result<BackendState>;
    /// Stops the job (graceful first where the backend allows it).
    async fn cancel(&self, job: &BackendRef) -> Result<()>;
    /// Logs of every process or pod so far.
    async fn logs(&self, job: &BackendRef) -> Result<Vec<LogSnapshot>>;
    /// The end of what an attempt wrote to its error stream, at most [`TAIL_BYTES`](crate::failure::TAIL_BYTES)
    /// of it and never more read, for the reason of its failure: `stderr.log` on the local and Slurm backends,
    /// the `workload` log of the first failed pod on Kubernetes (stdout and stderr together there). `None` when
    /// there is none, or the backend cannot read it.
    async fn failure_output(&self, _job: &BackendRef) -> Result<Option<Vec<u8>>> {
        Ok(None)
    }
    /// The job's resource use now, for its memory curve (called on a timer of its own, every
    /// `[jobs] sample_interval_ms`, while the job is active). The default cannot sample.
    async fn sample(&self, _job: &BackendRef) -> Result<Sample> {
        Ok(Sample::Unsupported(format!("the {} backend cannot sample resource use", self.kind())))
    }
    /// When an ended attempt's process ended, when the backend knows it better than the job manager's next check
    /// does (the local backend: when its wrapper wrote the exit code; Slurm: the end of its `end_time` second). The
    /// default does not know.
    async fn ended_at(&self, _job: &BackendRef) -> Option<falcon_core::time::Millis> {
        None
    }
    /// A local folder whose files are the job's artifacts (the local backend's `FALCON_ARTIFACT_DIR`).
    fn artifact_dir(&self, _job: &BackendRef) -> Option<PathBuf> {
        None
    }
}

/// Builds the backend a pool's settings describe; local and Slurm job folders live under the boundary's work
/// dir, and local jobs run behind it.
pub async fn for_pool(pool: &Pool, boundary: &isolation::Boundary) -> Result<std::sync::Arc<dyn Backend>> {
    use falcon_core::config::PoolBackend;
    let jobs_dir = boundary.work_dir();
    Ok(match pool.backend {
        PoolBackend::Local => {
            std::sync::Arc::new(local::LocalBackend::new(jobs_dir, &pool.name).with_boundary(boundary.clone()))
        }
        PoolBackend::Slurm => std::sync::Arc::new(slurm::SlurmBackend::from_pool(pool, jobs_dir)?),
        PoolBackend::Kubernetes => std::sync::Arc::new(kubernetes::KubernetesBackend::from_pool(pool).await?),
    })
}

/// The backend object name for a job attempt on a pool: lowercase, `-` separated, at most 63 characters.
pub fn object_name(job_name: &str, attempt: u32, pool: &str) -> String {
    let pool: String =
        pool.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    let mut name = format!("{job_name}-a{attempt}-{pool}");
    name.truncate(63);
    name.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn object_names_are_deterministic_and_kubernetes_safe() {
        assert_eq!(super::object_name("e-12-train", 2, "GKE_us-east5"), "e-12-train-a2-gke-us-east5");
        assert!(super::object_name(&"x".repeat(40), 1, &"p".repeat(40)).len() <= 63);
    }
}
