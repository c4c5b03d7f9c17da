//! The one error type of the infrastructure layer.

use falcon_core::ErrorKind;

/// Result alias for this crate.
pub type Result<T, E = InfraError> = std::result::Result<T, E>;

/// Everything that can go wrong in the metadata or artifact store, with what and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InfraError {
    /// The database URL is not one this store understands.
    #[error("unsupported database URL `{url}`: {reason}")]
    BadDatabaseUrl {
        /// The URL as given (password removed).
        url: String,
        /// Why it was refused.
        reason: String,
    },
    /// The database could not be reached or opened.
    #[error("cannot connect to the metadata store at {url}: {source}")]
    Connect {
        /// The URL (password removed).
        url: String,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
    /// No Falcon database exists at the URL, and this connection may not create one (only `falcon init` does,
    /// so a mistyped `--db` creates nothing).
    #[error("no Falcon database at {url}; run `falcon init` to create it (or check --db / FALCON_DB)")]
    NoDatabase {
        /// The URL (password removed).
        url: String,
    },
    /// Applying the schema migrations failed.
    #[error("migrating the metadata store at {url} failed: {source}")]
    Migrate {
        /// The URL (password removed).
        url: String,
        /// The migrator's error.
        #[source]
        source: sqlx::migrate::MigrateError,
    },
    /// A query failed.
    #[error("metadata store: {context} failed: {source}")]
    Query {
        /// What was being done ("insert experiment").
        context: &'static str,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
    /// A value is too large for the column it was meant for.
    #[error("value for {table}.{column} is {size} {unit}, over the limit of {limit} {unit}; {advice}")]
    ValueTooLarge {
        /// Table name.
        table: &'static str,
        /// Column name.
        column: &'static str,
        /// The value's size, in `unit`s.
        size: usize,
        /// The limit, in `unit`s.
        limit: usize,
        /// `bytes` (documents, 1 MiB) or `characters` (VARCHAR columns).
        unit: &'static str,
        /// What to do instead.
        advice: &'static str,
    },
    /// A row that should exist does not.
    #[error("{what} {id} not found")]
    NotFound {
        /// What was looked up ("experiment").
        what: &'static str,
        /// Its id.
        id: String,
    },
    /// The row changed under us (a compare-and-set lost), or a unique value is taken.
    #[error("conflict: {0}")]
    Conflict(String),
    /// A stored row cannot be read back (an unknown status word, bad JSON).
    #[error("corrupt row in {table}: {message}")]
    CorruptRow {
        /// Table name.
        table: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A value the store cannot take as given (a config-hash filter that is not lowercase hex), refused before
    /// any query.
    #[error("invalid value `{value}` for {table}.{column}: {reason}")]
    InvalidValue {
        /// Table name.
        table: &'static str,
        /// Column name.
        column: &'static str,
        /// The value (control characters escaped, cut to 80 characters).
        value: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// The artifact location is not one this store understands.
    #[error("unsupported artifact location `{location}`: {reason}")]
    BadArtifactLocation {
        /// The location as given.
        location: String,
        /// Why it was refused.
        reason: String,
    },
    /// An object key that could escape its prefix or is otherwise unsafe.
    #[error("invalid artifact key `{key}`: {reason}")]
    InvalidKey {
        /// The key (control characters escaped).
        key: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// The object already exists and artifacts are immutable.
    #[error("artifact {uri} already exists (artifacts are immutable)")]
    AlreadyExists {
        /// Full URI of the object.
        uri: String,
    },
    /// The object does not exist.
    #[error("artifact {uri} not found")]
    ObjectNotFound {
        /// Full URI of the object.
        uri: String,
    },
    /// The object's bytes do not match what was recorded.
    #[error("artifact {uri} failed verification: expected {expected}, found {found}")]
    Integrity {
        /// Full URI of the object.
        uri: String,
        /// What the record says.
        expected: String,
        /// What the store holds.
        found: String,
    },
    /// The storage backend failed.
    #[error("artifact store: {operation} {uri} failed: {source}")]
    Storage {
        /// The operation ("write", "stat").
        operation: &'static str,
        /// Full URI of the object or prefix.
        uri: String,
        /// OpenDAL's error (boxed: it is large).
        #[source]
        source: Box<opendal::Error>,
    },
    /// A local file or folder could not be read, written or created.
    #[error("{operation} {path}: {source}")]
    Io {
        /// What was being done ("reading", "creating").
        operation: &'static str,
        /// The file.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl InfraError {
    /// How the interface should report this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            InfraError::NotFound { .. } | InfraError::ObjectNotFound { .. } | InfraError::NoDatabase { .. } => {
                ErrorKind::NotFound
            }
            InfraError::Conflict(_) | InfraError::AlreadyExists { .. } => ErrorKind::Conflict,
            InfraError::BadDatabaseUrl { .. }
            | InfraError::BadArtifactLocation { .. }
            | InfraError::InvalidKey { .. }
            | InfraError::InvalidValue { .. } => ErrorKind::Usage,
            InfraError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => ErrorKind::NotFound,
            _ => ErrorKind::Failure,
        }
    }
}
