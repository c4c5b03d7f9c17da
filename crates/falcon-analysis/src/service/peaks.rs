//! The measured CPU peaks (`falcon doctor --calibrate`) an XLA:CPU capture's roofline, bound-by and MFU divide
//! by: read from the metadata store for the pool an experiment ran on, or the machine a bare path is read on.

use falcon_core::ids::ExperimentId;

use super::Analysis;

impl Analysis {
    /// The measured CPU peaks an XLA:CPU capture is read against (`falcon doctor --calibrate`): those of the pool
    /// the experiment's job ran on; for a capture that is no experiment's, the latest measured on this machine.
    /// `None` when none was measured (or the store cannot say: the analysis goes on without).
    pub(super) async fn cpu_peak(&self, experiment: Option<ExperimentId>) -> Option<crate::profile::CpuPeak> {
        let meta = self.meta().await.ok()?;
        let c = match experiment {
            Some(id) => {
                let job = meta.get_experiment(id).await.ok()?.job?;
                let pool = meta.get_job(job).await.ok()?.pool?;
                meta.calibration(&pool).await.ok()??
            }
            None => {
                let host = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
                meta.latest_calibration_on(host.trim()).await.ok()??
            }
        };
        let when = falcon_core::time::Millis(c.measured_ms).to_rfc3339();
        Some(crate::profile::CpuPeak {
            tflops: c.matmul_tflops,
            memory_gb_per_s: c.memory_gb_per_s,
            cores: u32::try_from(c.cores).unwrap_or(1).max(1),
            measured: format!("pool {} on {} at {when}", c.pool, c.host),
        })
    }
}
