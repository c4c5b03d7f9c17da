//! EXP's error type: what went wrong, its kind (exit code), and a hint for the person or agent reading it.

use falcon_core::ErrorKind;
use falcon_infra::InfraError;

/// Result alias for this crate.
pub type Result<T, E = ExpError> = std::result::Result<T, E>;

/// Errors of the EXP module.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExpError {
    /// The metadata or artifact store failed or refused.
    #[error(transparent)]
    Store(#[from] InfraError),
    /// The Job module refused or failed.
    #[error(transparent)]
    Job(#[from] falcon_job::JobError),
    /// A spec, metric file or argument that cannot be used.
    #[error("{0}")]
    Invalid(String),
    /// The request does not fit the current state (cancel a finished experiment).
    #[error("{0}")]
    State(String),
    /// Something asked for does not exist.
    #[error("{0}")]
    NotFound(String),
    /// A local file could not be written.
    #[error("{0}")]
    Io(String),
    /// A wait ran past its deadline (the work itself goes on).
    #[error("{0}")]
    Timeout(String),
    /// A spec or sweep file that does not parse or validate (with where, and a hint).
    #[error(transparent)]
    Spec(#[from] falcon_core::spec::SpecError),
}

impl ExpError {
    /// How the interface reports it (exit code, JSON code).
    pub fn kind(&self) -> ErrorKind {
        match self {
            ExpError::Store(e) => e.kind(),
            ExpError::Job(e) => e.kind(),
            ExpError::Invalid(_) => ErrorKind::Invalid,
            ExpError::State(_) => ErrorKind::Conflict,
            ExpError::NotFound(_) => ErrorKind::NotFound,
            ExpError::Io(_) | ExpError::Timeout(_) => ErrorKind::Failure,
            ExpError::Spec(e) => e.kind(),
        }
    }

    /// What to try next, when there is something useful to say.
    pub fn hint(&self) -> Option<String> {
        match self {
            ExpError::Store(e) => store_hint(e),
            ExpError::Job(falcon_job::JobError::InvalidPool { .. }) => {
                Some("fix the [[pools]] entries in falcon.toml".into())
            }
            ExpError::Spec(e) => e.hint.clone(),
            _ => None,
        }
    }
}

/// Hints for store failures, shared by errors and `doctor`.
pub(crate) fn store_hint(e: &InfraError) -> Option<String> {
    let hint = match e {
        InfraError::BadDatabaseUrl { .. } => "set --db / FALCON_DB to sqlite://PATH or mysql://USER@HOST:PORT/DATABASE",
        InfraError::Connect { url, .. } if url.starts_with("mysql") => {
            "is the MySQL/MariaDB server running and reachable, and may this user connect? Check --db / FALCON_DB"
        }
        InfraError::Connect { .. } => "check that the data directory exists and is writable (--data-dir, --db); `falcon init` creates it",
        InfraError::NoDatabase { .. } => {
            "`falcon init` creates it (nothing else does); if it should exist, check --db / FALCON_DB and --data-dir"
        }
        InfraError::Migrate { .. } => "the database schema could not be brought up to date; check the user may create tables",
        InfraError::BadArtifactLocation { .. } => "set --artifacts / FALCON_ARTIFACTS to a directory, gs://BUCKET/PREFIX or s3://BUCKET/PREFIX",
        InfraError::Io { .. } => "check that the artifact directory can be created and written (--artifacts)",
        InfraError::Storage { uri, .. } if uri.starts_with("gs://") => {
            "check the bucket exists, the credentials (or `[gcs] anonymous = true` for an emulator) and `[gcs] endpoint`"
        }
        InfraError::Storage { uri, .. } if uri.starts_with("s3://") => "check the bucket, region, endpoint and credentials",
        InfraError::Storage { .. } => "check that the artifact directory is writable (--artifacts)",
        InfraError::ValueTooLarge { .. } => "write large data to the artifact store and keep its URI",
        _ => return None,
    };
    Some(hint.to_string())
}
