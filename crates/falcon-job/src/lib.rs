//! Job orchestration: standardized job specs run on resource pools.
//!
//! Owns [`JobSpec`], pools, the [`scheduler`], the backends (local processes, Slurm, Kubernetes), the
//! monitor that moves statuses, collects logs and samples each job's resource use (memory, CPU time), retries, and leases (which worker holds a job), and the
//! [`failure`] line picker that puts a failed attempt's last word (`error: bad flag`) into its reason. It knows
//! no business words: no experiment, no goal. EXP hands it a spec and reads back statuses.
//!
//! # In detail
//!
//! - **Owns:** `JobSpec` (validated against the catalog), `Pool`, the pure `scheduler`, the `Backend` trait with
//!   `local` (process groups, state in a job folder; `procfs` samples a process tree), `slurm`
//!   (sbatch/squeue/scancel; `sstat` samples) and `kubernetes` (kube-rs; Job or JobSet; the metrics API samples)
//!   backends, and `JobManager` (leases renewed and resource use sampled on timers of their own by `start_background`
//!   while a worker runs — `manager/sampling.rs` keeps each attempt's series, at most 10,000 samples, written like a
//!   log to `resources/<attempt>/usage.jsonl`, or why the backend cannot sample; placement, reconcile, retries,
//!   capacity failover, timeouts, cancel, and output collection in `sync.rs`: every file stored under a key that maps
//!   back to its name or recorded as skipped, live snapshots for logs and metrics, everything else written once);
//!   `falcon-job-worker`, a minimal worker binary for process-level tests
//! - **Must not:** know business words (experiment, goal); analyse data
//! - **Invariants:** a job is claimed by one worker at a time (batch lease claim in one transaction); its placement
//!   is recorded before the backend sees it, and backend objects have deterministic names
//!   (`<job>-a<attempt>-<pool>`), so a restarted worker adopts instead of resubmitting; every status change is
//!   compare-and-set with a history row; logs of failed and cancelled jobs are always copied; a failed attempt's
//!   reason ends with the last meaningful line of its stderr (`failure`, read from at most its last 64 KiB); a job is
//!   terminal only after its outputs are collected (a failing collection keeps it RUNNING, "collecting outputs", then
//!   fails it with the reason; its failed tries are counted in the store, so a worker that takes the job over
//!   continues the count); a workload never reaches Falcon's store: on the local backend it runs behind the
//!   `backend::isolation` boundary (a user id of its own as root, namespaces hiding the data dir, configuration and
//!   credentials, an environment without Falcon's), and every file it could have written is read as `untrusted`
//!   (no link followed, no FIFO opened, no hard link collected, never more than a cap)

pub mod backend;
mod error;
pub mod failure;
pub mod manager;
pub mod pool;
pub mod scheduler;
pub mod spec;
mod sync;
pub mod untrusted;

pub use error::{JobError, Result};
pub use manager::{
    Background, JobDirCollection, JobManager, ManagerConfig, PoolUsage, TickReport, COLLECT_TRIES, MAX_SAMPLES,
};
pub use pool::Pool;
pub use spec::{CapacityType, JobSpec, Resources, RetryPolicy};
pub use sync::Caps;
