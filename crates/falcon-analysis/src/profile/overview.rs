//! The performance overview of a capture (XProf's overview page as its CLI `get_overview` reports
//! it), plus Falcon's MFU.
//!
//! # Rules
//!
//! * `device_type`, `device_cores`: XProf's run environment ([`crate::device`]); `hosts` = 1 per
//!   XSpace (the caller combines hosts).
//! * `step_time_ms`: [`crate::steps::StepReport::step_time_ms`] (mean, sample stddev, n).
//! * `device_duty_cycle_percent` (TPU): 100 × busy ÷ (busy + idle) of XProf's duty-cycle tracker
//!   ([`crate::op_metrics::OpMetricsDb::busy_time_ps`]); 0 on GPU/CPU, where XProf does not
//!   compute it.
//! * `device_idle_percent` = 100 × (1 − total op time ÷ total time) of the device db
//!   (`IdleTimeRatio`); 0 for CPU-only captures.
//! * The roofline-derived fields are those XProf's CLI `get_overview` fills from the *first row of
//!   the roofline table*, i.e. the `Total` Program row with infeed/outfeed included
//!   ([`crate::roofline::Roofline::program`]): `flops_utilization` = its `compute_efficiency`
//!   (measured GFLOP/s ÷ peak; the CLI's `compute_efficiency_percent`), `roofline_efficiency`
//!   (the CLI's `roofline_efficiency_percent` and `flop_rate_utilization_relative_to_roofline`),
//!   `hbm_bw_utilization` = its `max_mem_bw_utilization` (the CLI's `hbm_bw_utilization_percent`
//!   and `max_mem_bw_utilization_percent`), `bound_by`, `operational_intensity` (FLOP/byte, all
//!   bytes). All fractions are 0..1. On CPU-only captures they are 0 / `Unknown`.
//! * `compute_16bit_percent` / `compute_32bit_percent`: share of device compute time in 16-/32-bit
//!   precision (XProf `device_compute_16bit_percent`; GPU only, from
//!   [`crate::op_metrics::OpMetricsDb::precision`]; 0 when unknown).
//! * **MFU** (fraction, `None` when it cannot be computed): model FLOPs per step ÷ (mean step time
//!   × device cores × peak FLOP/s per core). Peak = [`DeviceInfo::peak_teraflops_per_second`]
//!   (device stats, else the catalog: see `peak_source`). FLOPs = the caller's
//!   `model_flops_per_step` when given (`mfu_flops_source = "caller model flops"`), else the
//!   profile's `model_flops` cost stats (`"profile cost stats"`): the per-step dbs' model FLOPs ÷
//!   number of steps, or all device model FLOPs ÷ number of steps when ops are not split by step.
//!   Without steps the whole profile is used: total device model FLOPs ÷ (device time summed over
//!   cores × peak per core) — the `Total` Program row's model FLOP rate ÷ peak; a caller's per-step
//!   FLOPs cannot be used then. Ops that may contain other ops (call/while/conditional/megacore
//!   fusion) are not counted, as in the roofline's Program row.

use falcon_xplane::XSpace;
use serde::Serialize;

use crate::device::{safe_divide, DeviceInfo, Hardware, PeakSource};
use crate::op_metrics::OpMetricsDb;
use crate::roofline::Roofline;
use crate::steps::{StepReport, StepTimeStats};

/// The overview of one capture.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Overview {
    pub device_type: String,
    pub device_cores: u32,
    pub hosts: u32,
    pub step_time_ms: StepTimeStats,
    pub device_duty_cycle_percent: f64,
    pub device_idle_percent: f64,
    /// Measured FLOP rate ÷ peak (Program row `compute_efficiency`), 0..1.
    pub flops_utilization: f64,
    /// Program row `roofline_efficiency`, 0..1.
    pub roofline_efficiency: f64,
    /// Program row `max_mem_bw_utilization` (HBM on these devices), 0..1.
    pub hbm_bw_utilization: f64,
    pub bound_by: String,
    pub operational_intensity: f64,
    pub mfu: Option<f64>,
    /// `profile cost stats` or `caller model flops` ("" when MFU is unknown).
    pub mfu_flops_source: String,
    /// Model FLOPs per step used for MFU (whole-profile model FLOPs when there are no steps).
    pub mfu_model_flops: Option<f64>,
    pub compute_16bit_percent: f64,
    pub compute_32bit_percent: f64,
    pub peak_source: PeakSource,
    pub peak_teraflops_per_second: f64,
    /// Caveats (missing costs, assumptions).
    pub notes: Vec<String>,
}

fn may_have_inner_ops(category: &str) -> bool {
    matches!(category, "call" | "conditional" | "while" | "megacore fusion")
}

fn program_model_flops(db: &OpMetricsDb) -> f64 {
    db.ops.iter().filter(|o| !may_have_inner_ops(&o.category)).map(|o| o.model_flops as f64).sum()
}

/// Builds the overview.
pub fn overview(
    space: &XSpace,
    device: &DeviceInfo,
    db: &OpMetricsDb,
    steps: &StepReport,
    roofline: &Roofline,
    model_flops_per_step: Option<f64>,
) -> Overview {
    let _ = space;
    let mut o = Overview {
        device_type: device.device_type.clone(),
        device_cores: device.device_cores,
        hosts: 1,
        step_time_ms: steps.step_time_ms.clone(),
        peak_source: device.peak_source,
        peak_teraflops_per_second: device.peak_teraflops_per_second,
        bound_by: "Unknown".to_string(),
        notes: db.notes.clone(),
        ..Overview::default()
    };
    if device.hardware == Hardware::CpuOnly {
        return o;
    }
    if device.hardware == Hardware::Tpu {
        o.device_duty_cycle_percent =
            100.0 * safe_divide(db.busy_time_ps as f64, (db.busy_time_ps + db.idle_time_ps) as f64);
    }
    o.device_idle_percent = 100.0 * (1.0 - safe_divide(db.total_op_time_ps as f64, db.total_time_ps as f64));
    let p = &roofline.program;
    o.flops_utilization = p.compute_efficiency;
    o.roofline_efficiency = p.roofline_efficiency;
    o.hbm_bw_utilization = p.max_mem_bw_utilization;
    o.bound_by = if p.bound_by.is_empty() { "Unknown".to_string() } else { p.bound_by.clone() };
    o.operational_intensity = p.operational_intensity;
    let precision_total = (db.precision.compute_16bit_ps + db.precision.compute_32bit_ps) as f64;
    o.compute_16bit_percent = 100.0 * safe_divide(db.precision.compute_16bit_ps as f64, precision_total);
    o.compute_32bit_percent = 100.0 * safe_divide(db.precision.compute_32bit_ps as f64, precision_total);

    // MFU.
    let peak_flops_per_core = device.peak_teraflops_per_second * 1e12;
    if peak_flops_per_core <= 0.0 {
        o.notes.push("MFU unknown: no peak FLOP rate for this device".to_string());
        return o;
    }
    let n_steps = steps.steps.len();
    if n_steps > 0 && steps.step_time_ms.mean > 0.0 {
        let (flops, source) = match model_flops_per_step {
            Some(f) if f > 0.0 => (f, "caller model flops"),
            _ => {
                let total = if db.steps.is_empty() {
                    program_model_flops(db)
                } else {
                    db.steps.iter().map(|s| program_model_flops(&s.db)).sum()
                };
                (total / n_steps as f64, "profile cost stats")
            }
        };
        if flops > 0.0 {
            let step_s = steps.step_time_ms.mean / 1e3;
            o.mfu = Some(flops / (step_s * f64::from(device.device_cores.max(1)) * peak_flops_per_core));
            o.mfu_flops_source = source.to_string();
            o.mfu_model_flops = Some(flops);
        } else {
            o.notes.push("MFU unknown: no model FLOPs in the profile and none given".to_string());
        }
    } else {
        let flops = program_model_flops(db);
        if flops > 0.0 && db.total_time_ps > 0 {
            o.mfu = Some(flops / (db.total_time_ps as f64 * 1e-12 * peak_flops_per_core));
            o.mfu_flops_source = "profile cost stats".to_string();
            o.mfu_model_flops = Some(flops);
            o.notes.push(
                "no steps: MFU over the whole profile (model FLOPs ÷ (device time summed over cores × peak))"
                    .to_string(),
            );
        } else {
            o.notes.push("MFU unknown: no steps and no model FLOPs in the profile".to_string());
        }
    }
    o
}
