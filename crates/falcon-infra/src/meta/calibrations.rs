//! A machine's measured peaks, kept per pool (`falcon doctor --calibrate`): one row per pool, replaced by each
//! calibration; read by the analysis of XLA:CPU captures (the roofline, bound-by and MFU divide by them).

use super::rows::RowExt;
use super::{check_large, check_short, query_err, with_pool, BeginWrite, MetaStore};
use crate::error::{InfraError, Result};

/// A pool's measured peaks.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// The pool it was measured for.
    pub pool: String,
    /// The machine it ran on (its host name).
    pub host: String,
    /// The cores the benchmark used.
    pub cores: i64,
    /// f32 matmul peak of all `cores`, TFLOP/s.
    pub matmul_tflops: f64,
    /// Memory bandwidth of all `cores`, GB/s (10⁹ bytes a second).
    pub memory_gb_per_s: f64,
    /// When, milliseconds since the Unix epoch.
    pub measured_ms: i64,
    /// The method, sizes and repetitions, as JSON.
    pub details: String,
}

const T: &str = "calibrations";
const COLUMNS: &str = "pool, host, cores, matmul_tflops, memory_gb_per_s, measured_ms, details";

impl MetaStore {
    /// Keeps `c` as its pool's calibration, replacing the one before. Peaks must be positive and finite.
    pub async fn put_calibration(&self, c: &Calibration) -> Result<()> {
        check_short(T, "pool", &c.pool)?;
        check_short(T, "host", &c.host)?;
        check_large(T, "details", &c.details)?;
        for (column, v) in [("matmul_tflops", c.matmul_tflops), ("memory_gb_per_s", c.memory_gb_per_s)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(InfraError::InvalidValue {
                    table: T,
                    column,
                    value: v.to_string(),
                    reason: "a peak is a positive, finite number",
                });
            }
        }
        if c.cores < 1 {
            return Err(InfraError::InvalidValue {
                table: T,
                column: "cores",
                value: c.cores.to_string(),
                reason: "a calibration ran on at least one core",
            });
        }
        with_pool!(self, pool => {
            let mut tx = pool.begin_write().await.map_err(query_err("begin transaction"))?;
            sqlx::query("DELETE FROM calibrations WHERE pool = ?")
                .bind(&c.pool)
                .execute(&mut *tx)
                .await
                .map_err(query_err("replace calibration"))?;
            sqlx::query(&format!("INSERT INTO calibrations ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)"))
                .bind(&c.pool)
                .bind(&c.host)
                .bind(c.cores)
                .bind(c.matmul_tflops)
                .bind(c.memory_gb_per_s)
                .bind(c.measured_ms)
                .bind(&c.details)
                .execute(&mut *tx)
                .await
                .map_err(query_err("record calibration"))?;
            tx.commit().await.map_err(query_err("commit calibration"))?;
        });
        Ok(())
    }

    /// The calibration of `pool`, when it has one.
    pub async fn calibration(&self, pool: &str) -> Result<Option<Calibration>> {
        with_pool!(self, pool_ => {
            let row = sqlx::query(&format!("SELECT {COLUMNS} FROM calibrations WHERE pool = ?"))
                .bind(pool)
                .fetch_optional(pool_)
                .await
                .map_err(query_err("read calibration"))?;
            row.map(|r| from_row(&r)).transpose()
        })
    }

    /// The most recent calibration measured on `host` (any pool), when there is one.
    pub async fn latest_calibration_on(&self, host: &str) -> Result<Option<Calibration>> {
        with_pool!(self, pool => {
            let row = sqlx::query(&format!(
                "SELECT {COLUMNS} FROM calibrations WHERE host = ? ORDER BY measured_ms DESC, pool LIMIT 1"
            ))
            .bind(host)
            .fetch_optional(pool)
            .await
            .map_err(query_err("read calibration"))?;
            row.map(|r| from_row(&r)).transpose()
        })
    }

    /// Every pool's calibration, by pool.
    pub async fn calibrations(&self) -> Result<Vec<Calibration>> {
        with_pool!(self, pool => {
            let rows = sqlx::query(&format!("SELECT {COLUMNS} FROM calibrations ORDER BY pool"))
                .fetch_all(pool)
                .await
                .map_err(query_err("list calibrations"))?;
            rows.iter().map(from_row).collect()
        })
    }
}

fn from_row<R: RowExt>(r: &R) -> Result<Calibration> {
    Ok(Calibration {
        pool: r.text(T, "pool")?,
        host: r.text(T, "host")?,
        cores: r.int(T, "cores")?,
        matmul_tflops: r.real(T, "matmul_tflops")?,
        memory_gb_per_s: r.real(T, "memory_gb_per_s")?,
        measured_ms: r.int(T, "measured_ms")?,
        details: r.text(T, "details")?,
    })
}
