//! `falcon doctor --calibrate`: this machine's measured peaks, kept per pool for the XLA:CPU roofline, bound-by and
//! MFU (a CPU has no catalogued peak, and its real one depends on the machine and on the cores a pool offers).
//!
//! # What is measured (fixed work: six 1024² products and five 128 MiB copies, under a second on two modern cores)
//!
//! - **f32 matmul peak**: square `N × N` products (`N` = 1024), one row block per core, each core running the
//!   single-threaded sgemm of `matrixmultiply` (through `ndarray`, the kernels Rust's numeric crates use: runtime
//!   SIMD detection, FMA where the CPU has it) at once on every core; FLOPs = 2·N³ a product; the best of
//!   [`MATMUL_RUNS`] runs (a peak, not a mean). XLA:CPU's own GEMMs (Eigen, YNNPACK) reach about this rate.
//! - **memory bandwidth**: STREAM's *copy* on every core at once over [`COPY_BYTES`] (far beyond any cache),
//!   counted as STREAM counts it (bytes read + bytes written), the best of [`COPY_RUNS`] runs.
//!
//! The cores are those the process may use (`available_parallelism`: the affinity mask and cgroup quota), the
//! cores a local pool's jobs get. A pool elsewhere (a Slurm partition) is measured by running the command on one of
//! its nodes with `--pool NAME`: the row names the host it ran on.

use falcon_infra::meta::Calibration;
use ndarray::{Array2, Axis, Slice};
use serde::Serialize;
use std::time::Instant;

/// Side of the square matrices.
pub const MATMUL_N: usize = 1024;
/// Matmul repetitions (the best counts).
pub const MATMUL_RUNS: usize = 6;
/// Bytes copied a run (the source; as many are written).
pub const COPY_BYTES: usize = 128 << 20;
/// Copy repetitions (the best counts).
pub const COPY_RUNS: usize = 5;

/// One measurement of this machine.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measurement {
    /// Cores used.
    pub cores: usize,
    /// Best f32 matmul rate over all cores, TFLOP/s.
    pub matmul_tflops: f64,
    /// Best copy bandwidth over all cores, GB/s (read + written).
    pub memory_gb_per_s: f64,
    /// Every matmul run, TFLOP/s.
    pub matmul_runs: Vec<f64>,
    /// Every copy run, GB/s.
    pub copy_runs: Vec<f64>,
    /// Side of the matrices.
    pub matmul_n: usize,
    /// Bytes copied a run.
    pub copy_bytes: usize,
    /// How long the measurement took, milliseconds.
    pub elapsed_ms: u64,
}

/// The cores this process may use.
pub fn available_cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Measures this machine's f32 matmul peak and memory bandwidth on `cores` cores at once (blocking).
pub fn measure(cores: usize) -> Measurement {
    let cores = cores.max(1);
    let started = Instant::now();
    let n = MATMUL_N;
    // Each core multiplies its own row block of A by B: the blocks together are one N × N product.
    let a = Array2::<f32>::from_shape_fn((n, n), |(i, j)| ((i * 7 + j * 3) % 17) as f32 * 0.125);
    let b = Array2::<f32>::from_shape_fn((n, n), |(i, j)| ((i * 5 + j * 11) % 13) as f32 * 0.25);
    let rows = n.div_ceil(cores);
    let mut matmul_runs = Vec::with_capacity(MATMUL_RUNS);
    for _ in 0..MATMUL_RUNS {
        let t = Instant::now();
        std::thread::scope(|scope| {
            for c in 0..cores {
                let (lo, hi) = ((c * rows).min(n), ((c + 1) * rows).min(n));
                let (a, b) = (&a, &b);
                scope.spawn(move || std::hint::black_box(a.slice_axis(Axis(0), Slice::from(lo..hi)).dot(b)));
            }
        });
        matmul_runs.push(2.0 * (n as f64).powi(3) / t.elapsed().as_secs_f64().max(1e-9) / 1e12);
    }
    let chunk = (COPY_BYTES / 4).div_ceil(cores);
    let source = vec![1.0f32; chunk * cores];
    let mut dest = vec![0.0f32; chunk * cores];
    let mut copy_runs = Vec::with_capacity(COPY_RUNS);
    for _ in 0..COPY_RUNS {
        let t = Instant::now();
        std::thread::scope(|scope| {
            for (d, s) in dest.chunks_mut(chunk).zip(source.chunks(chunk)) {
                scope.spawn(move || d.copy_from_slice(s));
            }
        });
        std::hint::black_box(&dest);
        copy_runs.push(2.0 * (source.len() * 4) as f64 / t.elapsed().as_secs_f64().max(1e-9) / 1e9);
    }
    let best = |v: &[f64]| v.iter().copied().fold(0.0f64, f64::max);
    Measurement {
        cores,
        matmul_tflops: best(&matmul_runs),
        memory_gb_per_s: best(&copy_runs),
        matmul_runs,
        copy_runs,
        matmul_n: n,
        copy_bytes: source.len() * 4,
        elapsed_ms: started.elapsed().as_millis() as u64,
    }
}

/// The row kept for `pool` of a measurement taken on `host` at `measured_ms`.
pub fn calibration_of(pool: &str, host: &str, m: &Measurement, measured_ms: i64) -> Calibration {
    let details = serde_json::json!({
        "method": "f32 matmul (ndarray/matrixmultiply sgemm, a row block per core) and STREAM copy, the best run of each",
        "measurement": m,
    });
    Calibration {
        pool: pool.to_string(),
        host: host.to_string(),
        cores: m.cores as i64,
        matmul_tflops: m.matmul_tflops,
        memory_gb_per_s: m.memory_gb_per_s,
        measured_ms,
        details: details.to_string(),
    }
}

impl crate::Exp {
    /// Measures this machine ([`measure`], on every core this process may use) and keeps the result for each of
    /// `pools` (each must be configured), replacing what they kept; the measurement and the rows kept.
    pub async fn calibrate(&self, pools: &[String]) -> crate::Result<(Measurement, Vec<Calibration>)> {
        for pool in pools {
            if !self.config.pools.iter().any(|p| &p.name == pool) {
                return Err(crate::ExpError::NotFound(format!(
                    "pool `{pool}` is not configured (falcon.toml [[pools]]: {})",
                    self.config.pools.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
                )));
            }
        }
        let cores = available_cores();
        let m = tokio::task::spawn_blocking(move || measure(cores))
            .await
            .map_err(|e| crate::ExpError::Io(format!("the calibration benchmark failed: {e}")))?;
        let (host, at) = (crate::hostname(), now_ms());
        let mut kept = Vec::with_capacity(pools.len());
        for pool in pools {
            let c = calibration_of(pool, &host, &m, at);
            self.meta.put_calibration(&c).await?;
            kept.push(c);
        }
        Ok((m, kept))
    }

    /// Every pool's kept calibration, by pool.
    pub async fn calibrations(&self) -> crate::Result<Vec<Calibration>> {
        Ok(self.meta.calibrations().await?)
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measurement_is_positive_bounded_and_consistent() {
        let m = measure(2);
        assert_eq!((m.cores, m.matmul_runs.len(), m.copy_runs.len()), (2, MATMUL_RUNS, COPY_RUNS));
        // Any machine this runs on does between 1 GFLOP/s and 100 TFLOP/s, and copies 0.1 GB/s to 10 TB/s.
        assert!((1e-3..100.0).contains(&m.matmul_tflops), "{m:?}");
        assert!((0.1..10_000.0).contains(&m.memory_gb_per_s), "{m:?}");
        assert!(
            m.matmul_runs.iter().all(|r| *r <= m.matmul_tflops) && m.copy_runs.iter().all(|r| *r <= m.memory_gb_per_s)
        );
        let c = calibration_of("local", "vm", &m, 5);
        assert_eq!((c.pool.as_str(), c.cores, c.matmul_tflops), ("local", 2, m.matmul_tflops));
        let details: serde_json::Value = serde_json::from_str(&c.details).unwrap();
        assert_eq!(details["measurement"]["matmul_n"], MATMUL_N);
    }
}
