//! The performance overview of a capture (XProf's overview page as its CLI `get_overview` reports
//! it), plus Falcon's MFU.
//!
//! # Rules
//!
//! * `device_type`, `device_cores`: XProf's run environment ([`crate::device`]; on XLA:CPU captures the
//!   CPU count read from the capture's threads, where XProf reports 0); `hosts` = 1 per XSpace (the
//!   caller combines hosts).
//! * **Unknown is `null`**, never 0: every field below that cannot be computed for a capture is `None`
//!   and a note says why.
//! * `step_time_ms`: [`crate::steps::StepReport::step_time_ms`] (mean, sample stddev, n).
//! * `device_duty_cycle_percent`: TPU: 100 × busy ÷ (busy + idle) of XProf's duty-cycle tracker
//!   ([`crate::op_metrics::OpMetricsDb::busy_time_ps`]). XLA:CPU: the trace breakdown's duty cycle of the
//!   executor threads over the steps ([`crate::trace::BreakdownUs::duty_cycle`], the definition the
//!   `trace` summary row and `falcon profile trace` use, so the two never differ); XProf shows 0 there.
//!   GPU: `null` (XProf does not compute it; `falcon profile trace` gives the GPUs' duty cycle).
//! * `device_idle_percent`: TPU/GPU = 100 × (1 − total op time ÷ total time) of the device db
//!   (`IdleTimeRatio`); XLA:CPU = 100 − the duty cycle (idle or waiting on the host).
//! * The roofline-derived fields are those XProf's CLI `get_overview` fills from the *first row of
//!   the roofline table*, i.e. the `Total` Program row with infeed/outfeed included
//!   ([`crate::roofline::Roofline::program`]): `flops_utilization` = its `compute_efficiency`
//!   (measured GFLOP/s ÷ peak; the CLI's `compute_efficiency_percent`), `roofline_efficiency`
//!   (the CLI's `roofline_efficiency_percent` and `flop_rate_utilization_relative_to_roofline`),
//!   `hbm_bw_utilization` = its `max_mem_bw_utilization` (the CLI's `hbm_bw_utilization_percent`
//!   and `max_mem_bw_utilization_percent`), `operational_intensity` (FLOP/byte, all bytes). All
//!   fractions are 0..1. They are `null` when the ops have no FLOPs/bytes (XLA:CPU captures; GPU
//!   captures without an HLO proto) or the peak they divide by is unknown.
//! * `bound_by` ([`BoundBy`], the vocabulary of [`falcon_core::bound`]): on TPU/GPU the Program row's
//!   bound (`compute`, or `memory` with XProf's resource name — `HBM`, `CMEM Read`, … — in
//!   `bound_by_resource`); `null` when XProf's is `Unknown`. On XLA:CPU there is no roofline; the
//!   host check of the trace breakdown decides (`host` / `partly_host`), else `null` with a note.
//! * `compute_16bit_percent` / `compute_32bit_percent`: share of device compute time in 16-/32-bit
//!   precision (XProf `device_compute_16bit_percent`; GPU only, from
//!   [`crate::op_metrics::OpMetricsDb::precision`]; `null` when no compute time has a precision).
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

use falcon_core::bound::BoundBy;
use falcon_xplane::XSpace;
use serde::Serialize;

use crate::device::{safe_divide, DeviceInfo, Hardware, PeakSource};
use crate::op_metrics::OpMetricsDb;
use crate::roofline::Roofline;
use crate::steps::{StepReport, StepTimeStats};

/// The overview of one capture.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Overview {
    pub device_type: String,
    pub device_cores: u32,
    pub hosts: u32,
    pub step_time_ms: StepTimeStats,
    pub device_duty_cycle_percent: Option<f64>,
    pub device_idle_percent: Option<f64>,
    /// Measured FLOP rate ÷ peak (Program row `compute_efficiency`), 0..1.
    pub flops_utilization: Option<f64>,
    /// Program row `roofline_efficiency`, 0..1.
    pub roofline_efficiency: Option<f64>,
    /// Program row `max_mem_bw_utilization` (HBM on these devices), 0..1.
    pub hbm_bw_utilization: Option<f64>,
    /// What limits the program (`compute`, `memory`, `host`, `partly_host`; `null` when unknown).
    pub bound_by: Option<BoundBy>,
    /// XProf's roofline resource behind `bound_by` (`Compute`, `HBM`, `CMEM Read`, …), `null` when none.
    pub bound_by_resource: Option<String>,
    pub operational_intensity: Option<f64>,
    pub mfu: Option<f64>,
    /// `profile cost stats` (the capture's own programs), `caller model flops` or `logged model_flops (median
    /// per step)` (`null` when MFU is unknown).
    pub mfu_flops_source: Option<String>,
    /// Model FLOPs per step used for MFU (whole-profile model FLOPs when there are no steps).
    pub mfu_model_flops: Option<f64>,
    /// The peak MFU divides by, TFLOP/s per device: on a GPU the catalog's dense bf16 figure for the chip
    /// (989 for an H100 or H200), elsewhere [`Overview::peak_teraflops_per_second`].
    pub mfu_peak_teraflops_per_second: Option<f64>,
    /// The capture's own model FLOPs per step (HLO cost analysis of the programs that ran, rematerialized ops
    /// left out); `null` when the capture has no costs.
    pub capture_model_flops: Option<f64>,
    /// Hardware FLOPs utilization: every FLOP the device executed per step, rematerialization included, over
    /// the same time and peak as MFU.
    pub hfu: Option<f64>,
    /// The model FLOPs per step the workload logged (`model_flops`), when it logs them.
    pub logged_model_flops: Option<f64>,
    /// How the step time was measured: `host step markers` (the wall time the program sees per step, launch and
    /// waits included) or `device Steps line` (XProf's device step markers).
    pub step_time_source: Option<String>,
    /// With host step markers: the device's busy span in each step (first kernel start to last kernel end),
    /// the step time XProf reports on GPU.
    pub device_step_time_ms: Option<StepTimeStats>,
    pub compute_16bit_percent: Option<f64>,
    pub compute_32bit_percent: Option<f64>,
    pub peak_source: PeakSource,
    /// Peak TFLOP/s per core (`null` when `peak_source` is `none`).
    pub peak_teraflops_per_second: Option<f64>,
    /// Caveats (missing costs, assumptions, why a field is `null`).
    pub notes: Vec<String>,
}

fn may_have_inner_ops(category: &str) -> bool {
    matches!(category, "call" | "conditional" | "while" | "megacore fusion")
}

/// Whether an op recomputes what an earlier op computed (XLA's rematerialization pass names the copies
/// `….remat`; JAX's `checkpoint`/`remat` scopes say it in the framework name).
pub(crate) fn is_rematerialization(o: &crate::op_metrics::OpMetrics) -> bool {
    o.name.contains(".remat") || o.provenance.contains("remat") || o.provenance.contains("rematted_computation")
}

/// The model FLOPs of the db's ops (without the ones that may contain others); rematerialized ops only when
/// `with_remat` (hardware FLOPs).
fn program_model_flops(db: &OpMetricsDb, with_remat: bool) -> f64 {
    db.ops
        .iter()
        .filter(|o| !may_have_inner_ops(&o.category) && (with_remat || !is_rematerialization(o)))
        .map(|o| o.model_flops as f64)
        .sum()
}

/// What every overview starts from: the device, the steps and the op database's notes.
fn base_overview(device: &DeviceInfo, db: &OpMetricsDb, steps: &StepReport) -> Overview {
    Overview {
        device_type: device.device_type.clone(),
        device_cores: device.device_cores,
        hosts: 1,
        step_time_ms: steps.step_time_ms.clone(),
        peak_source: device.peak_source,
        peak_teraflops_per_second: (device.peak_source != PeakSource::None && device.peak_teraflops_per_second > 0.0)
            .then_some(device.peak_teraflops_per_second),
        notes: db.notes.clone(),
        ..Overview::default()
    }
}

/// The overview of an XLA:CPU capture from its [`cpu_trace`] (computed beforehand, on another thread beside the
/// other tools, or by [`overview`]), its costed op database and roofline.
pub fn cpu_overview_of(
    trace: &crate::trace::TraceReport,
    device: &DeviceInfo,
    db: &OpMetricsDb,
    steps: &StepReport,
    roofline: &Roofline,
) -> Overview {
    let mut o = base_overview(device, db, steps);
    cpu_overview(trace, device, db, steps, roofline, &mut o);
    o
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
    if device.hardware == Hardware::CpuOnly {
        return cpu_overview_of(&cpu_trace(space), device, db, steps, roofline);
    }
    let mut o = base_overview(device, db, steps);
    if device.hardware == Hardware::Tpu {
        o.device_duty_cycle_percent =
            Some(100.0 * safe_divide(db.busy_time_ps as f64, (db.busy_time_ps + db.idle_time_ps) as f64));
    } else {
        o.notes.push(
            "device duty cycle unknown: XProf computes it on TPU only (`falcon profile trace` gives each GPU's \
             duty cycle over the steps)"
                .to_string(),
        );
    }
    o.device_idle_percent = Some(100.0 * (1.0 - safe_divide(db.total_op_time_ps as f64, db.total_time_ps as f64)));
    let p = &roofline.program;
    let flops_known = db.has_hlo_costs && device.peak_gflops() > 0.0;
    let bw_known = db.has_hlo_costs && device.peak_bws_giga_bytes_per_second[0] > 0.0;
    if !db.has_hlo_costs {
        o.notes.push(
            "FLOPS and HBM bandwidth utilization, operational intensity and bound-by unknown: the ops have no \
             FLOPs/bytes (no HLO cost analysis in the capture)"
                .to_string(),
        );
    } else {
        if !flops_known {
            o.notes.push(format!("FLOPS utilization unknown: no peak FLOP rate for {}", device.device_type));
        }
        if !bw_known {
            o.notes
                .push(format!("HBM bandwidth utilization unknown: no peak HBM bandwidth for {}", device.device_type));
        }
    }
    o.flops_utilization = flops_known.then_some(p.compute_efficiency);
    o.hbm_bw_utilization = bw_known.then_some(p.max_mem_bw_utilization);
    o.roofline_efficiency = (flops_known || bw_known).then_some(p.roofline_efficiency);
    o.operational_intensity = db.has_hlo_costs.then_some(p.operational_intensity);
    o.bound_by = BoundBy::from_xprof_resource(&p.bound_by);
    o.bound_by_resource = o.bound_by.map(|_| p.bound_by.clone());
    if o.bound_by.is_none() && db.has_hlo_costs {
        o.notes.push("bound-by unknown: no resource of the roofline's Program row is utilized (XProf: Unknown)".into());
    }
    let precision_total = (db.precision.compute_16bit_ps + db.precision.compute_32bit_ps) as f64;
    if precision_total > 0.0 {
        o.compute_16bit_percent = Some(100.0 * db.precision.compute_16bit_ps as f64 / precision_total);
        o.compute_32bit_percent = Some(100.0 * db.precision.compute_32bit_ps as f64 / precision_total);
    }

    // MFU.
    o.step_time_source = match steps.source {
        crate::steps::StepSource::HostStepAnnotations => Some("host step markers".to_string()),
        crate::steps::StepSource::DeviceStepsLine => Some("device Steps line".to_string()),
        crate::steps::StepSource::TraceMarkers => Some("host step markers".to_string()),
        crate::steps::StepSource::None => None,
    };
    let catalog_peak = (device.hardware == Hardware::Gpu).then(|| crate::device::catalog_peak_tflops(device)).flatten();
    let peak_tflops = catalog_peak.unwrap_or(device.peak_teraflops_per_second);
    let peak_flops_per_core = peak_tflops * 1e12;
    if peak_flops_per_core <= 0.0 {
        o.notes.push("MFU unknown: no peak FLOP rate for this device".to_string());
        return o;
    }
    o.mfu_peak_teraflops_per_second = Some(peak_tflops);
    let n_steps = steps.steps.len();
    if n_steps > 0 && steps.step_time_ms.mean > 0.0 {
        let per_step = |f: &dyn Fn(&OpMetricsDb) -> f64| {
            let total = if db.steps.is_empty() { f(db) } else { db.steps.iter().map(|s| f(&s.db)).sum() };
            total / n_steps as f64
        };
        let capture = per_step(&|d| program_model_flops(d, false));
        let hardware = per_step(&|d| program_model_flops(d, true));
        let step_s = steps.step_time_ms.mean / 1e3;
        let denominator = step_s * f64::from(device.device_cores.max(1)) * peak_flops_per_core;
        if capture > 0.0 {
            o.capture_model_flops = Some(capture);
            o.hfu = Some(hardware / denominator);
        }
        let (flops, source) = match model_flops_per_step {
            Some(f) if f > 0.0 => (f, "caller model flops"),
            _ => (capture, "profile cost stats"),
        };
        if flops > 0.0 {
            o.mfu = Some(flops / denominator);
            o.mfu_flops_source = Some(source.to_string());
            o.mfu_model_flops = Some(flops);
        } else {
            o.notes.push("MFU unknown: no model FLOPs in the profile and none given".to_string());
        }
    } else {
        let flops = program_model_flops(db, false);
        if flops > 0.0 && db.total_time_ps > 0 {
            o.mfu = Some(flops / (db.total_time_ps as f64 * 1e-12 * peak_flops_per_core));
            o.mfu_flops_source = Some("profile cost stats".to_string());
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

/// Brings in the model FLOPs a step the workload logged: MFU from them when the capture has no FLOPs of its
/// own (and no caller gave any), else both are kept and, when they differ by more than 20 %, a note says which
/// MFU uses and why.
pub fn with_logged_flops(o: &mut Overview, logged: Option<f64>) {
    let Some(logged) = logged.filter(|f| f.is_finite() && *f > 0.0) else { return };
    o.logged_model_flops = Some(logged);
    let Some(mfu_flops) = o.mfu_model_flops else {
        // No FLOPs in the capture: the logged ones, over the same step time and peak.
        if let (Some(peak), true) = (o.mfu_peak_teraflops_per_second, o.step_time_ms.mean > 0.0) {
            let cores = f64::from(o.device_cores.max(1));
            o.mfu = Some(logged / (o.step_time_ms.mean / 1e3 * cores * peak * 1e12));
            o.mfu_flops_source = Some("logged model_flops (median per step)".to_string());
            o.mfu_model_flops = Some(logged);
        }
        return;
    };
    let ratio = mfu_flops / logged;
    if (ratio - 1.0).abs() > 0.2 && o.mfu_flops_source.as_deref() == Some("profile cost stats") {
        o.notes.push(format!(
            "the workload logs model_flops = {logged:.3e} a step, the capture's programs cost {mfu_flops:.3e} \
             ({ratio:.2}×): MFU uses the capture's count. A count from XLA's `cost_analysis()` leaves the cuBLAS and \
             cuDNN library calls out on GPU (JAX issues 16008 and 20184), so an MFU from it reads {:.1}% here",
            o.mfu.map_or(0.0, |m| 100.0 * m / ratio)
        ));
    }
}

/// The XLA:CPU part of the overview: CPU count, duty cycle and host verdict from the executor threads'
/// timeline (the trace breakdown `falcon profile trace` computes); FLOPs a step, utilizations, operational
/// intensity and the roofline's bound-by from the ops costed from the capture's HLO, against the measured or given
/// peak (MFU: [`cpu_mfu`]).
fn cpu_overview(
    trace: &crate::trace::TraceReport,
    device: &DeviceInfo,
    db: &OpMetricsDb,
    steps: &StepReport,
    roofline: &Roofline,
    o: &mut Overview,
) {
    if let Some(t) = device.cpu_threads {
        o.notes.push(format!(
            "XLA:CPU: device_cores = {} CPU(s), counted from the threads of XLA:CPU's intra-op pool (sized to the \
             machine's cores by default; {} of the capture's {} threads ran XLA ops); XProf reports 0 cores",
            device.device_cores, t.op_threads, t.threads
        ));
    }
    match trace.total.and_then(|t| t.duty_cycle()) {
        Some(duty) => {
            o.device_duty_cycle_percent = Some(100.0 * duty);
            o.device_idle_percent = Some(100.0 * (1.0 - duty));
            o.notes.push(format!(
                "XLA:CPU: duty cycle = the executor threads' busy share of the {} step(s) of the trace breakdown \
                 (as `falcon profile trace` and the trace summary row); XProf shows 0",
                trace.steps.len()
            ));
        }
        None => o.notes.push("device duty cycle unknown: no XLA:CPU op events in the capture".to_string()),
    }
    o.step_time_source = (!steps.steps.is_empty()).then(|| "host step markers".to_string());
    let p = &roofline.program;
    let flops_known = db.has_hlo_costs && device.peak_gflops() > 0.0;
    let bw_known = db.has_hlo_costs && device.peak_bws_giga_bytes_per_second[0] > 0.0;
    if db.has_hlo_costs {
        o.operational_intensity = Some(p.operational_intensity);
        let n_steps = steps.steps.len();
        if n_steps > 0 {
            // The database holds the executions inside the steps only (`op_metrics::cpu_op_db`).
            let capture = program_model_flops(db, false) / n_steps as f64;
            if capture > 0.0 {
                o.capture_model_flops = Some(capture);
            }
        }
        if !flops_known {
            o.notes.push(
                "FLOPS utilization and MFU unknown: no CPU peak FLOP rate — run `falcon doctor --calibrate` once to \
                 measure this machine's, or pass --peak-tflops"
                    .to_string(),
            );
        }
        if !bw_known {
            o.notes.push(
                "memory bandwidth utilization unknown: no measured memory bandwidth (`falcon doctor --calibrate`)"
                    .to_string(),
            );
        }
    } else {
        o.notes.push(
            "FLOPS and memory bandwidth utilization and operational intensity unknown: the capture holds no HLO \
             program for its XLA:CPU ops"
                .to_string(),
        );
    }
    o.flops_utilization = flops_known.then_some(p.compute_efficiency);
    o.hbm_bw_utilization = bw_known.then_some(p.max_mem_bw_utilization);
    o.roofline_efficiency = (flops_known || bw_known).then_some(p.roofline_efficiency);
    // A host-bound run is host-bound whatever its ops are; otherwise the roofline's Program row decides.
    let host = trace.host_bound.as_ref();
    o.bound_by = host.and_then(|h| h.bound_by);
    if o.bound_by.is_some() {
        return;
    }
    if flops_known && bw_known {
        o.bound_by = BoundBy::from_xprof_resource(&p.bound_by);
        o.bound_by_resource = o.bound_by.map(|_| p.bound_by.clone());
        if let (Some(b), Some(h)) = (o.bound_by, host) {
            o.notes.push(format!(
                "bound by {b} on the roofline of the costed ops (measured {:.3} TFLOP/s, {:.2} GB/s, {:.2} FLOP/byte; \
                 ridge {:.2} FLOP/byte); the device waits on the host {:.1}% of the step time (not host-bound)",
                p.measured_flop_rate_gflops * f64::from(device.device_cores.max(1)) / 1e3,
                p.hbm_bw_gibs * 1.073_741_824 * f64::from(device.device_cores.max(1)),
                p.operational_intensity,
                roofline.ridge_point,
                100.0 * h.fraction
            ));
        }
    }
    if o.bound_by.is_none() {
        o.notes.push(match host {
            Some(h) if flops_known && bw_known => format!(
                "bound-by unknown: no resource of the roofline's Program row is utilized, and the device waits on \
                 the host only {:.1}% of the step time (not host-bound)",
                100.0 * h.fraction
            ),
            Some(h) => format!(
                "bound-by unknown: no measured CPU peaks for the roofline (`falcon doctor --calibrate`), and the \
                 device waits on the host only {:.1}% of the step time (not host-bound)",
                100.0 * h.fraction
            ),
            None => "bound-by unknown: no steps for the host check".to_string(),
        });
    }
}

/// What the XLA:CPU overview reads of the executor threads' timeline: the trace breakdown and host check
/// `falcon profile trace` computes. The costly part of a CPU overview, independent of the other tools.
pub fn cpu_trace(space: &XSpace) -> crate::trace::TraceReport {
    cpu_trace_of(&cpu_timeline(space))
}

/// The timeline [`cpu_trace`] analyses (a copy of the capture's events: the capture can be freed once it is built).
pub fn cpu_timeline(space: &XSpace) -> crate::timeline::Timeline {
    super::hlo::collectives::xspace_timeline(space, "")
}

/// [`cpu_trace`] of a timeline built by [`cpu_timeline`].
pub fn cpu_trace_of(timeline: &crate::timeline::Timeline) -> crate::trace::TraceReport {
    use crate::trace::{analyze_trace, TraceAnalysis, TraceOptions};
    let options = TraceOptions {
        analyses: vec![TraceAnalysis::Breakdown, TraceAnalysis::Host],
        top_host_events: 0,
        ..TraceOptions::default()
    };
    analyze_trace(timeline, &options)
}

/// MFU of an XLA:CPU capture: model FLOPs a step — the caller's (`--model-flops`, or the run's logged
/// `model_flops` the application passes as the caller's), else the capture's own from its HLO — over the mean step
/// time and the machine's peak (the device's peak per core × its cores: measured by `falcon doctor --calibrate`, or
/// given with `--peak-tflops`). Either missing leaves `mfu` `null` with a note naming what to do.
pub fn cpu_mfu(o: &mut Overview, caller: Option<(f64, &str)>, device: &DeviceInfo) {
    let step_s = o.step_time_ms.mean / 1e3;
    let cores = f64::from(device.device_cores.max(1));
    let peak = Some(device.peak_teraflops_per_second * cores).filter(|p| p.is_finite() && *p > 0.0);
    let flops =
        caller.filter(|(f, _)| f.is_finite() && *f > 0.0).or(o.capture_model_flops.map(|f| (f, "profile cost stats")));
    match (flops, peak) {
        (Some((f, source)), Some(peak)) if o.step_time_ms.n > 0 && step_s > 0.0 => {
            o.mfu = Some(f / (step_s * peak * 1e12));
            o.mfu_flops_source = Some(source.to_string());
            o.mfu_model_flops = Some(f);
            o.mfu_peak_teraflops_per_second = Some(peak);
            o.hfu = None;
            let how = match device.peak_source {
                PeakSource::Measured => "the measured peak",
                _ => "the given peak",
            };
            // Four significant figures, as every number a person reads.
            let ms = step_s * 1e3;
            let decimals = (3 - ms.abs().max(1e-9).log10().floor() as i32).clamp(0, 6) as usize;
            o.notes.push(format!(
                "MFU = {source} ({f:.3e} FLOPs per step) ÷ (mean step {ms:.decimals$} ms × {how} {peak:.4} TFLOP/s of \
                 {cores} core(s))"
            ));
        }
        (Some(_), Some(_)) => o.notes.push("MFU unknown: no steps in the capture to divide the FLOPs by".into()),
        (None, Some(_)) => o.notes.push(
            "MFU unknown: no model FLOPs — the capture holds no HLO program and the run logs no `model_flops` \
             metric; pass --model-flops FLOPS_PER_STEP"
                .into(),
        ),
        (_, None) => o.notes.push(
            "MFU unknown: no CPU peak FLOP rate — run `falcon doctor --calibrate` once to measure this machine's, or \
             pass --peak-tflops with the machine's peak TFLOP/s"
                .into(),
        ),
    }
}
