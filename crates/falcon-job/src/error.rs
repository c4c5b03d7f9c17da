//! The Job module's error type.

use falcon_core::ErrorKind;
use falcon_infra::InfraError;

/// Result alias for this crate.
pub type Result<T, E = JobError> = std::result::Result<T, E>;

/// What can go wrong in job orchestration, naming the job, pool or field involved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// A job spec field is missing or wrong.
    #[error("invalid job spec: {field}: {message}")]
    InvalidSpec {
        /// Dotted path of the field (`resources.accelerator`).
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A pool definition cannot work.
    #[error("pool `{pool}`: {message}")]
    InvalidPool {
        /// Pool name.
        pool: String,
        /// What is wrong.
        message: String,
    },
    /// A `[jobs]` setting that cannot work (a job user range that is none, job folders inside the data dir).
    #[error("{field}: {message}")]
    InvalidSetting {
        /// Dotted path of the setting (`jobs.job_uids`).
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A backend refused or failed an operation.
    #[error("{backend} backend ({pool}): {operation} failed: {message}")]
    Backend {
        /// `local`, `slurm`, `kubernetes`.
        backend: &'static str,
        /// Pool name.
        pool: String,
        /// What was attempted.
        operation: &'static str,
        /// What the backend said.
        message: String,
    },
    /// A job that does not exist.
    #[error("job {0} not found")]
    NotFound(String),
    /// The metadata or artifact store failed.
    #[error(transparent)]
    Store(#[from] InfraError),
}

impl JobError {
    /// How the interface reports it.
    pub fn kind(&self) -> ErrorKind {
        match self {
            JobError::InvalidSpec { .. } => ErrorKind::Usage,
            JobError::InvalidPool { .. } | JobError::InvalidSetting { .. } | JobError::Backend { .. } => {
                ErrorKind::Failure
            }
            JobError::NotFound(_) => ErrorKind::NotFound,
            JobError::Store(e) => e.kind(),
        }
    }

    pub(crate) fn spec(field: impl Into<String>, message: impl Into<String>) -> Self {
        JobError::InvalidSpec { field: field.into(), message: message.into() }
    }
}
