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
    /// What `--calibrate` measured and kept (`null` without it).
    pub calibration: Option<CalibrationReport>,
}

impl From<falcon_exp::DoctorReport> for DoctorReport {
    fn from(r: falcon_exp::DoctorReport) -> Self {
        DoctorReport { ok: r.ok, checks: r.checks.into_iter().map(Check::from).collect(), calibration: None }
    }
}

/// `falcon doctor --calibrate`: this machine's measured peaks and the pools that keep them.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CalibrationReport {
    /// Cores the benchmark ran on (every core this process may use).
    pub cores: usize,
    /// Best f32 matmul rate over all cores, TFLOP/s.
    pub matmul_tflops: f64,
    /// Best memory bandwidth over all cores (STREAM copy: bytes read + written), GB/s.
    pub memory_gb_per_s: f64,
    /// Every matmul run, TFLOP/s.
    pub matmul_runs: Vec<f64>,
    /// Every copy run, GB/s.
    pub copy_runs: Vec<f64>,
    /// Side of the square f32 matrices.
    pub matmul_n: usize,
    /// Bytes copied a run.
    pub copy_bytes: usize,
    /// How long it took, milliseconds.
    pub elapsed_ms: u64,
    /// The pools that keep it.
    pub kept: Vec<PoolCalibration>,
}

/// A pool's kept calibration.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PoolCalibration {
    /// The pool.
    pub pool: String,
    /// The machine it was measured on.
    pub host: String,
    /// Cores it ran on.
    pub cores: i64,
    /// f32 matmul peak of all of them, TFLOP/s.
    pub matmul_tflops: f64,
    /// Memory bandwidth of all of them, GB/s.
    pub memory_gb_per_s: f64,
    /// When (RFC 3339).
    pub measured: String,
}

impl From<&falcon_exp::Calibration> for PoolCalibration {
    fn from(c: &falcon_exp::Calibration) -> Self {
        PoolCalibration {
            pool: c.pool.clone(),
            host: c.host.clone(),
            cores: c.cores,
            matmul_tflops: c.matmul_tflops,
            memory_gb_per_s: c.memory_gb_per_s,
            measured: falcon_core::time::Millis(c.measured_ms).to_rfc3339(),
        }
    }
}

impl CalibrationReport {
    pub(crate) fn of(m: falcon_exp::calibrate::Measurement, kept: &[falcon_exp::Calibration]) -> Self {
        CalibrationReport {
            cores: m.cores,
            matmul_tflops: m.matmul_tflops,
            memory_gb_per_s: m.memory_gb_per_s,
            matmul_runs: m.matmul_runs,
            copy_runs: m.copy_runs,
            matmul_n: m.matmul_n,
            copy_bytes: m.copy_bytes,
            elapsed_ms: m.elapsed_ms,
            kept: kept.iter().map(PoolCalibration::from).collect(),
        }
    }
}
