//! The analysis module's error type: what went wrong, where, and its kind (exit code).

use falcon_core::ErrorKind;
#[cfg(feature = "service")]
use falcon_infra::InfraError;
use std::path::PathBuf;

/// Result alias for this crate.
pub type Result<T, E = AnalysisError> = std::result::Result<T, E>;

/// Errors of the analysis module.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnalysisError {
    /// The metadata or artifact store failed or refused.
    #[cfg(feature = "service")]
    #[error(transparent)]
    Store(#[from] InfraError),
    /// A profile file that is not a readable XSpace (empty, truncated, corrupt, another format).
    #[error("{}: not a readable XProf profile: {error}", path.display())]
    Decode { path: PathBuf, error: falcon_xplane::DecodeError },
    /// A file that parses, or is refused before parsing, but is not a profile (empty, JSON, no planes).
    #[error("{}: not an XProf profile: {reason}", path.display())]
    NotAProfile { path: PathBuf, reason: String },
    /// No profile where one was asked for (a path with no `.xplane.pb`, an experiment without one).
    #[error("{0}")]
    NotFound(String),
    /// An argument that cannot be used (an unknown host, a bad URI).
    #[error("{0}")]
    Invalid(String),
    /// A local file could not be read or written.
    #[error("{0}")]
    Io(String),
    /// A compressed input that inflates past the cap on decompressed bytes (a decompression bomb, or a genuine
    /// input bigger than the cap): see [`crate::limits`].
    #[error(
        "{}: decompresses to more than {} MiB, the cap on decompressed input; raise it with {} MIB (or {} in falcon.toml for the worker)",
        path.display(), crate::limits::limit_mib(*limit), crate::limits::FLAG, crate::limits::CONFIG_KEY
    )]
    DecompressedTooLarge { path: PathBuf, limit: u64 },
    /// A profile file bigger than the cap on one profile, refused before it is read (see [`crate::limits`]).
    #[error(
        "{}: {size} bytes, over the {} MiB cap on one profile ({} in falcon.toml, or {}); nothing of it was read",
        path.display(), crate::limits::limit_mib(*limit), crate::limits::PROFILE_CONFIG_KEY, crate::limits::PROFILE_ENV_VAR
    )]
    ProfileTooLarge { path: PathBuf, size: u64, limit: u64 },
}

impl AnalysisError {
    /// How the interface reports it (exit code, JSON code).
    pub fn kind(&self) -> ErrorKind {
        match self {
            #[cfg(feature = "service")]
            AnalysisError::Store(e) => e.kind(),
            AnalysisError::NotFound(_) => ErrorKind::NotFound,
            // The input was read and is not what it should be: invalid input (exit 1, the Web API's 422).
            AnalysisError::Decode { .. }
            | AnalysisError::NotAProfile { .. }
            | AnalysisError::ProfileTooLarge { .. } => ErrorKind::Invalid,
            AnalysisError::Invalid(_) | AnalysisError::Io(_) | AnalysisError::DecompressedTooLarge { .. } => {
                ErrorKind::Failure
            }
        }
    }

    /// What to try next, when there is something useful to say.
    pub fn hint(&self) -> Option<String> {
        match self {
            AnalysisError::Decode { .. } | AnalysisError::NotAProfile { .. } => Some(
                "pass the `<host>.xplane.pb` file that jax.profiler / XProf wrote (plugins/profile/<run>/); re-copy it if it was truncated"
                    .into(),
            ),
            AnalysisError::DecompressedTooLarge { .. } => Some(format!(
                "if the file is genuine, pass a larger {} MIB, or set {} (or {}) for the worker's analysis",
                crate::limits::FLAG,
                crate::limits::CONFIG_KEY,
                crate::limits::ENV_VAR
            )),
            AnalysisError::ProfileTooLarge { .. } => Some(format!(
                "if the profile is genuine, raise {} (MiB) in falcon.toml or {}",
                crate::limits::PROFILE_CONFIG_KEY,
                crate::limits::PROFILE_ENV_VAR
            )),
            AnalysisError::NotFound(_) => {
                Some("give a `.xplane.pb` file, a run directory containing plugins/profile/<run>/, an experiment id, or a gs:// URI".into())
            }
            _ => None,
        }
    }
}

/// Fails, naming the file and the cap, when a profile of `len` bytes at `path` is over the cap on one profile
/// ([`crate::limits::max_profile_bytes`]): checked before a byte of it is read (or downloaded).
pub fn check_profile_size(path: &std::path::Path, len: u64) -> Result<()> {
    let limit = crate::limits::max_profile_bytes();
    match len > limit {
        true => Err(AnalysisError::ProfileTooLarge { path: path.to_path_buf(), size: len, limit }),
        false => Ok(()),
    }
}

impl AnalysisError {
    /// The same error with paths inside `cache` (where an experiment's artifacts are copied to be read) given
    /// from the cache on (`e-1/plugins/profile/…`): a reader of the error learns no path of the machine.
    pub fn relative_to(self, cache: &std::path::Path) -> AnalysisError {
        let rebase = |path: PathBuf| path.strip_prefix(cache).map(PathBuf::from).unwrap_or(path);
        let prefix = format!("{}/", cache.display());
        let text = |t: String| t.replace(&prefix, "");
        match self {
            AnalysisError::Decode { path, error } => AnalysisError::Decode { path: rebase(path), error },
            AnalysisError::NotAProfile { path, reason } => {
                AnalysisError::NotAProfile { path: rebase(path), reason: text(reason) }
            }
            AnalysisError::ProfileTooLarge { path, size, limit } => {
                AnalysisError::ProfileTooLarge { path: rebase(path), size, limit }
            }
            AnalysisError::DecompressedTooLarge { path, limit } => {
                AnalysisError::DecompressedTooLarge { path: rebase(path), limit }
            }
            AnalysisError::NotFound(t) => AnalysisError::NotFound(text(t)),
            AnalysisError::Invalid(t) => AnalysisError::Invalid(text(t)),
            AnalysisError::Io(t) => AnalysisError::Io(text(t)),
            other => other,
        }
    }

    /// The error of a compressed input `path` that inflates past `limit` bytes.
    pub fn decompressed_too_large(path: &std::path::Path, limit: u64) -> AnalysisError {
        AnalysisError::DecompressedTooLarge { path: path.to_path_buf(), limit }
    }
}
