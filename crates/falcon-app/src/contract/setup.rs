//! The setup views on the wire: what `init` connected to, and `doctor`'s checks (built from EXP's results, which
//! carry no serialization of their own).

use schemars::JsonSchema;
use serde::Serialize;

/// Which SQL engine a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DbBackend {
    /// SQLite (embedded).
    Sqlite,
    /// MySQL or MariaDB.
    Mysql,
}

impl From<falcon_exp::DbBackend> for DbBackend {
    fn from(b: falcon_exp::DbBackend) -> Self {
        match b {
            falcon_exp::DbBackend::Sqlite => DbBackend::Sqlite,
            falcon_exp::DbBackend::Mysql => DbBackend::Mysql,
        }
    }
}

/// What the stores are connected to, for `falcon init` and status displays.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Connection {
    /// `sqlite` or `mysql`.
    pub database_backend: DbBackend,
    /// The database URL (password removed).
    pub database: String,
    /// Schema version applied.
    pub schema_version: Option<i64>,
    /// Root URI of the artifact store.
    pub artifacts: String,
    /// Names of the configured pools.
    pub pools: Vec<String>,
}

impl From<falcon_exp::Connection> for Connection {
    fn from(c: falcon_exp::Connection) -> Self {
        Connection {
            database_backend: c.database_backend.into(),
            database: c.database,
            schema_version: c.schema_version,
            artifacts: c.artifacts,
            pools: c.pools,
        }
    }
}

/// The result of one check.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Check {
    /// Component checked: `config`, `database`, `artifacts`.
    pub component: String,
    /// What was checked (a URL, a pool list).
    pub target: String,
    /// Whether it works.
    pub ok: bool,
    /// What was found.
    pub detail: String,
    /// What to do, for a failed check (`null` for a passed one: the key is always there).
    pub hint: Option<String>,
    /// How long the check took.
    pub elapsed_ms: u64,
}

impl From<falcon_exp::Check> for Check {
    fn from(c: falcon_exp::Check) -> Self {
        Check {
            component: c.component,
            target: c.target,
            ok: c.ok,
            detail: c.detail,
            hint: c.hint,
            elapsed_ms: c.elapsed_ms,
        }
    }
}

/// All checks.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DoctorReport {
    /// Whether every check passed.
    pub ok: bool,
    /// The checks, in order.
    pub checks: Vec<Check>,
}

impl From<falcon_exp::DoctorReport> for DoctorReport {
    fn from(r: falcon_exp::DoctorReport) -> Self {
        DoctorReport { ok: r.ok, checks: r.checks.into_iter().map(Check::from).collect() }
    }
}
