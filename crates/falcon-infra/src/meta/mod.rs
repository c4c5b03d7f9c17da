//! The metadata store: SQL tables for goals, sessions, experiments, jobs, the artifact index and summaries.
//!
//! One schema, two backends: SQLite (a file in the data dir, WAL) by default and MySQL/MariaDB by URL. Each
//! backend has its own versioned migrations (`migrations/sqlite`, `migrations/mysql`), applied at connect.
//! Queries are written once and run on either pool through [`with_pool!`]; both drivers take `?`
//! placeholders.

mod artifacts;
mod calibrations;
mod experiments;
mod goals;
mod jobs;
mod outputs;
mod rows;
mod summaries;
mod tokens;

pub use artifacts::{ArtifactRecord, NewArtifact};
pub use calibrations::Calibration;
pub use experiments::{
    CodeRecord, CodeSnapshot, ExperimentFilter, ExperimentRecord, NewExperiment, Transition, MAX_LABEL_FILTERS,
};
pub use goals::{GoalRecord, NewGoal, NewSession, SessionKind, SessionRecord};
pub use jobs::{JobChanges, JobRecord, JobTransition, NewJob};
pub use outputs::{ExperimentNote, JobOutput, StoredOutput};
pub use summaries::{AnalysisSummary, MetricSummary, RunNoise};
pub use tokens::TokenRecord;

use crate::error::{InfraError, Result};
use falcon_core::config::redact_url;
use falcon_core::time::Millis;
use sqlx::migrate::{MigrateDatabase, Migrator};
use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::Row;
use std::str::FromStr;
use std::time::Duration;

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("./migrations/sqlite");
static MYSQL_MIGRATIONS: Migrator = sqlx::migrate!("./migrations/mysql");

/// The largest value any column takes: 1 MiB. Larger data belongs in the artifact store.
pub const MAX_VALUE_BYTES: usize = 1024 * 1024;
/// The largest short string (names, label keys and values, statuses).
pub const MAX_SHORT_CHARS: usize = 255;

/// The most characters a bounded text column holds: MySQL's `VARCHAR(N)` of the schema, counted in characters
/// as MySQL counts them. The store enforces it before any query on both backends, so SQLite (which has no
/// length limit) refuses exactly what MySQL would, with the same "table.column" error. Columns not named
/// here are `VARCHAR(255)`; the document columns (`MEDIUMTEXT`) are bounded by [`MAX_VALUE_BYTES`] instead.
pub fn column_limit(table: &str, column: &str) -> usize {
    match (table, column) {
        ("goals", "title") | ("artifacts", "object_key") | ("job_outputs", "object_key") => 1024,
        // TEXT since schema version 3 (unique through its hash); bounded so a key of 1024 bytes and any base fit.
        ("artifacts", "uri") => 2048,
        // A SHA-1 or SHA-256 commit in hex.
        ("experiments", "code_commit") => 64,
        ("sessions", "kind") => 32,
        _ => MAX_SHORT_CHARS,
    }
}

/// Which SQL engine a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbBackend {
    /// SQLite (embedded).
    Sqlite,
    /// MySQL or MariaDB.
    Mysql,
}

#[derive(Clone)]
pub(crate) enum Pool {
    Sqlite(SqlitePool),
    Mysql(MySqlPool),
}

/// Runs the same query code on whichever pool the store holds: `with_pool!(self, pool => body)`.
macro_rules! with_pool {
    ($store:expr, $pool:ident => $body:expr) => {
        match &$store.pool {
            $crate::meta::Pool::Sqlite($pool) => $body,
            $crate::meta::Pool::Mysql($pool) => $body,
        }
    };
}
pub(crate) use with_pool;

/// Starts a write transaction. On SQLite it takes the write lock at once (`BEGIN IMMEDIATE`), so concurrent
/// writers queue on the busy timeout instead of failing when a read lock cannot be upgraded.
pub(crate) trait BeginWrite {
    type Db: sqlx::Database;
    async fn begin_write(&self) -> sqlx::Result<sqlx::Transaction<'static, Self::Db>>;
}

impl BeginWrite for SqlitePool {
    type Db = sqlx::Sqlite;
    async fn begin_write(&self) -> sqlx::Result<sqlx::Transaction<'static, sqlx::Sqlite>> {
        self.begin_with("BEGIN IMMEDIATE").await
    }
}

impl BeginWrite for MySqlPool {
    type Db = sqlx::MySql;
    async fn begin_write(&self) -> sqlx::Result<sqlx::Transaction<'static, sqlx::MySql>> {
        self.begin().await
    }
}

/// How to connect.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Pool size.
    pub max_connections: u32,
    /// How long to wait for a connection before failing.
    pub acquire_timeout: Duration,
    /// Create the SQLite file (and its folder) / MySQL database when missing. Off by default: only
    /// [`MetaStore::create`] (`falcon init`) creates a database, so a mistyped URL creates nothing and fails
    /// with [`InfraError::NoDatabase`].
    pub create_if_missing: bool,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions { max_connections: 8, acquire_timeout: Duration::from_secs(10), create_if_missing: false }
    }
}

/// Applied versus known schema migrations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationStatus {
    /// Highest version applied to the database.
    pub applied: Option<i64>,
    /// Highest version this build knows.
    pub latest: i64,
}

impl MigrationStatus {
    /// Whether the database is at this build's schema.
    pub fn is_current(&self) -> bool {
        self.applied == Some(self.latest)
    }
}

/// The metadata store. Cheap to clone (a pool handle).
#[derive(Clone)]
pub struct MetaStore {
    pub(crate) pool: Pool,
    url: String,
}

impl std::fmt::Debug for MetaStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetaStore").field("url", &self.url).finish()
    }
}

impl MetaStore {
    /// Connects to an existing store at `sqlite://PATH` or `mysql://USER[:PASS]@HOST[:PORT]/DB` and applies
    /// pending migrations. A missing SQLite file or MySQL database is [`InfraError::NoDatabase`] (nothing is
    /// created: no folder, no file).
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, &ConnectOptions::default()).await
    }

    /// [`MetaStore::connect`], creating the SQLite file (and its folder) or the MySQL database when missing:
    /// what `falcon init` and tests that set up a fresh store use.
    pub async fn create(url: &str) -> Result<Self> {
        Self::connect_with(url, &ConnectOptions { create_if_missing: true, ..ConnectOptions::default() }).await
    }

    /// [`MetaStore::connect`] with explicit options.
    pub async fn connect_with(url: &str, options: &ConnectOptions) -> Result<Self> {
        let store = Self::open(url, options).await?;
        store.migrate().await?;
        Ok(store)
    }

    /// Connects without migrating (for `doctor`, which reports the schema state instead of changing it).
    pub async fn open(url: &str, options: &ConnectOptions) -> Result<Self> {
        let redacted = redact_url(url);
        let connect_err = |source| InfraError::Connect { url: redacted.clone(), source };
        let pool = if let Some(path) = falcon_core::config::sqlite_path(url) {
            if path.is_empty() {
                return Err(InfraError::BadDatabaseUrl {
                    url: redacted,
                    reason: "no file path after `sqlite://`".into(),
                });
            }
            if path != ":memory:" {
                if options.create_if_missing {
                    if let Some(parent) = std::path::Path::new(path).parent().filter(|p| !p.as_os_str().is_empty()) {
                        std::fs::create_dir_all(parent).map_err(|e| connect_err(sqlx::Error::Io(e)))?;
                    }
                } else if !std::path::Path::new(path).is_file() {
                    return Err(InfraError::NoDatabase { url: redacted });
                }
            }
            let opts = SqliteConnectOptions::from_str(url)
                .map_err(|e| InfraError::BadDatabaseUrl { url: redacted.clone(), reason: e.to_string() })?
                .create_if_missing(options.create_if_missing)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(Duration::from_secs(30))
                .foreign_keys(true);
            // No ping before handing out a connection: an SQLite connection is a file handle in this process
            // that cannot go stale, and the ping is one more round trip to the connection's thread per query.
            // MySQL keeps the ping: a server restart or timeout does break its connections.
            let pool = SqlitePoolOptions::new()
                .test_before_acquire(false)
                .max_connections(options.max_connections)
                .acquire_timeout(options.acquire_timeout)
                .connect_with(opts)
                .await
                .map_err(connect_err)?;
            Pool::Sqlite(pool)
        } else if url.starts_with("mysql://") || url.starts_with("mariadb://") {
            let url = url.replacen("mariadb://", "mysql://", 1);
            let opts = MySqlConnectOptions::from_str(&url)
                .map_err(|e| InfraError::BadDatabaseUrl { url: redacted.clone(), reason: e.to_string() })?;
            if opts.get_database().is_none() {
                return Err(InfraError::BadDatabaseUrl {
                    url: redacted,
                    reason: "name a database after the host, e.g. mysql://root@127.0.0.1:3306/falcon".into(),
                });
            }
            // One direct connection first: a pool only reports "timed out", while this surfaces the cause
            // (connection refused, access denied, unknown database) at once.
            match direct_mysql_connection(&opts, options.acquire_timeout).await {
                Ok(()) => {}
                Err(e) if is_unknown_database(&e) => {
                    if !options.create_if_missing {
                        return Err(InfraError::NoDatabase { url: redacted });
                    }
                    sqlx::MySql::create_database(&url).await.map_err(connect_err)?;
                }
                Err(e) => return Err(connect_err(e)),
            }
            let pool = MySqlPoolOptions::new()
                .max_connections(options.max_connections)
                .acquire_timeout(options.acquire_timeout)
                .connect_with(opts)
                .await
                .map_err(connect_err)?;
            Pool::Mysql(pool)
        } else {
            return Err(InfraError::BadDatabaseUrl {
                url: redacted,
                reason: "expected sqlite://PATH or mysql://USER@HOST:PORT/DATABASE".into(),
            });
        };
        Ok(MetaStore { pool, url: redact_url(url) })
    }

    /// The backend in use.
    pub fn backend(&self) -> DbBackend {
        match self.pool {
            Pool::Sqlite(_) => DbBackend::Sqlite,
            Pool::Mysql(_) => DbBackend::Mysql,
        }
    }

    /// The URL, with any password removed.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Applies pending migrations (idempotent, safe to run from several processes at once).
    pub async fn migrate(&self) -> Result<()> {
        let err = |source| InfraError::Migrate { url: self.url.clone(), source };
        match &self.pool {
            Pool::Sqlite(pool) => SQLITE_MIGRATIONS.run(pool).await.map_err(err),
            Pool::Mysql(pool) => MYSQL_MIGRATIONS.run(pool).await.map_err(err),
        }
    }

    /// Which schema version the database is at.
    pub async fn migration_status(&self) -> Result<MigrationStatus> {
        let latest = match self.pool {
            Pool::Sqlite(_) => &SQLITE_MIGRATIONS,
            Pool::Mysql(_) => &MYSQL_MIGRATIONS,
        }
        .iter()
        .map(|m| m.version)
        .max()
        .unwrap_or(0);
        let table_exists = self.migrations_table_exists().await?;
        let applied = if table_exists {
            with_pool!(self, pool => {
                sqlx::query("SELECT MAX(version) AS v FROM _sqlx_migrations WHERE success = TRUE")
                    .fetch_one(pool)
                    .await
                    .and_then(|row| row.try_get::<Option<i64>, _>("v"))
            })
            .map_err(|source| InfraError::Query { context: "read migration version", source })?
        } else {
            None
        };
        Ok(MigrationStatus { applied, latest })
    }

    async fn migrations_table_exists(&self) -> Result<bool> {
        let found = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query(
                "SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
            )
            .fetch_one(pool)
            .await
            .and_then(|r| r.try_get::<i64, _>("n")),
            Pool::Mysql(pool) => sqlx::query(
                "SELECT COUNT(*) AS n FROM information_schema.tables \
                 WHERE table_schema = DATABASE() AND table_name = '_sqlx_migrations'",
            )
            .fetch_one(pool)
            .await
            .and_then(|r| r.try_get::<i64, _>("n")),
        };
        found.map(|n| n > 0).map_err(|source| InfraError::Query { context: "look for the migrations table", source })
    }

    /// Closes the pool, waiting for connections to finish.
    pub async fn close(&self) {
        with_pool!(self, pool => pool.close().await)
    }
}

async fn direct_mysql_connection(opts: &MySqlConnectOptions, timeout: Duration) -> sqlx::Result<()> {
    use sqlx::Connection;
    match tokio::time::timeout(timeout, sqlx::MySqlConnection::connect_with(opts)).await {
        Ok(Ok(conn)) => conn.close().await,
        Ok(Err(e)) => Err(e),
        Err(_) => Err(sqlx::Error::PoolTimedOut),
    }
}

fn is_unknown_database(e: &sqlx::Error) -> bool {
    // MySQL/MariaDB error 1049: ER_BAD_DB_ERROR ("Unknown database").
    matches!(e, sqlx::Error::Database(db) if db.code().as_deref() == Some("42000") && db.message().contains("Unknown database"))
}

/// The current time.
pub(crate) fn now() -> Millis {
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    Millis(d.as_millis() as i64)
}

/// Refuses a text value over the 1 MiB column limit, naming the table and column.
pub(crate) fn check_large(table: &'static str, column: &'static str, value: &str) -> Result<()> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(InfraError::ValueTooLarge {
            table,
            column,
            size: value.len(),
            limit: MAX_VALUE_BYTES,
            unit: "bytes",
            advice:
                "the metadata store keeps nothing over 1 MiB: write the data to the artifact store and keep its URI",
        });
    }
    Ok(())
}

/// Refuses a string over its column's [`column_limit`] (255 characters for names, labels and other short
/// fields), naming the table and column; the same on SQLite and MySQL.
pub(crate) fn check_short(table: &'static str, column: &'static str, value: &str) -> Result<()> {
    let limit = column_limit(table, column);
    let chars = value.chars().count();
    if chars > limit {
        return Err(InfraError::ValueTooLarge {
            table,
            column,
            size: chars,
            limit,
            unit: "characters",
            advice: "the metadata store holds the same column limits on SQLite and MySQL; shorten the value",
        });
    }
    Ok(())
}

/// Refuses a config-hash or commit prefix that is empty or not lowercase hex (`[0-9a-f]+`), naming the table and
/// column, so a prefix match (`LIKE 'prefix%'`) can never carry a wildcard of its own.
pub(crate) fn check_hex_prefix(table: &'static str, column: &'static str, value: &str) -> Result<()> {
    check_short(table, column, value)?;
    let commit = column == "code_commit";
    let reason = if value.is_empty() {
        if commit {
            "empty; give a commit SHA or a prefix of one"
        } else {
            "empty; give a config hash or a prefix of one"
        }
    } else if !value.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        if commit {
            "a commit SHA or its prefix is lowercase hex (0-9, a-f)"
        } else {
            "a config hash or its prefix is lowercase hex (0-9, a-f)"
        }
    } else {
        return Ok(());
    };
    Err(InfraError::InvalidValue {
        table,
        column,
        value: value.chars().take(80).collect::<String>().escape_default().to_string(),
        reason,
    })
}

/// Maps a driver error of a query to our error, naming what was being done.
pub(crate) fn query_err(context: &'static str) -> impl FnOnce(sqlx::Error) -> InfraError {
    move |source| InfraError::Query { context, source }
}

/// The id of the row an `INSERT` created, on either backend.
pub(crate) trait LastId {
    fn last_id(&self) -> i64;
}

impl LastId for sqlx::sqlite::SqliteQueryResult {
    fn last_id(&self) -> i64 {
        self.last_insert_rowid()
    }
}

impl LastId for sqlx::mysql::MySqlQueryResult {
    fn last_id(&self) -> i64 {
        self.last_insert_id() as i64
    }
}
