//! Job orchestration: standardized job specs run on resource pools.
//!
//! Owns [`JobSpec`], pools, the [`scheduler`], the backends (local processes, Slurm, Kubernetes), the
//! monitor that moves statuses, collects logs and samples each job's resource use (memory, CPU time), retries, and leases (which worker holds a job), and the
//! [`failure`] line picker that puts a failed attempt's last word (`error: bad flag`) into its reason. It knows
//! no business words: no experiment, no goal. EXP hands it a spec and reads back statuses.

pub mod backend;
mod error;
pub mod failure;
pub mod manager;
pub mod pool;
pub mod scheduler;
pub mod spec;
mod sync;

pub use error::{JobError, Result};
pub use manager::{
    Background, JobDirCollection, JobManager, ManagerConfig, PoolUsage, TickReport, COLLECT_TRIES, MAX_SAMPLES,
};
pub use pool::Pool;
pub use spec::{CapacityType, JobSpec, Resources, RetryPolicy};
