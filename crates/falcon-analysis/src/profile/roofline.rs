//! XProf's roofline model (`roofline_model` tool): where the program and each op sit against the
//! device's compute and memory-bandwidth roofs.
//!
//! # Rules (XProf 2.24.2 `xprof/convert/op_stats_to_roofline_model.cc`, `op_metrics_to_record.h`)
//!
//! * XProf draws it for TPU and GPU only; Falcon also for XLA:CPU captures, whose ops it costs from their HLO
//!   ([`crate::op_metrics`]' `cpu_costs`) against the measured or given CPU peak (per core; main memory in the
//!   HBM slot). Without costs it is empty (`available = false`); `notes` says why a roofline is empty or
//!   partial: no FLOPs/bytes per op (no HLO programs in the capture), or no peak to draw the roofs from.
//! * **Table properties**: `peak_flop_rate` = peak TFLOP/s × 1000 (GFLOP/s per core);
//!   `peak_hbm_bw` = GiB(peak HBM GB/s); TPU: CMEM read/write peaks (MemBwType 3/4) when the device
//!   has CMEM, else VMEM read/write peaks (5/6) when it has merged VMEM; GPU: VMEM = SRAM rd/wr
//!   (1/2, shown by XProf as "SHM/L1"). Ridge points = peak GFLOP/s ÷ (peak GiB/s × 1.073741824)
//!   (i.e. ÷ the GB/s peak), 0 when a peak is 0.
//! * **Records** (computed for `include_infeed_outfeed` = true; the `false` variant of XProf only
//!   removes infeed/outfeed ops and time, and is [`Roofline::program_excluding_infeed_outfeed`]):
//!   - `Total` *Program* row: sums flops, model flops, bytes and memory breakdown of every op except
//!     categories that may have inner ops (call, conditional, while, megacore fusion); its time is
//!     the db's `total_time_ps` (so it includes IDLE); occurrences 1.
//!   - `Total` per-op rows ([`Roofline::points`]): every op with occurrences > 0, sorted by self
//!     time desc (tie: name asc), at most 1000; self-time fractions are of `total_time`.
//!   - `Average` Program row (TPU only): over complete steps, time ÷ number of steps (all zeros,
//!     bound `Unknown`, without steps, as XProf). Per-step Program rows: one per step
//!     ([`crate::op_metrics::OpMetricsDb::steps`]).
//! * **Per record** (time = `time_ps` summed over cores, so rates are per-core averages):
//!   measured (normalized) GFLOP/s = flops ÷ time_ns; model GFLOP/s = model_flops ÷ time_ns;
//!   memory BW = GiB(bytes ÷ time_ns); HBM BW from the breakdown's memory space 1 (all bytes when
//!   the op has no breakdown); CMEM/VMEM read/write BW from spaces 2/3; operational intensity =
//!   flops ÷ bytes; per-memory OI = flops ÷ that memory's bytes.
//! * **Bound by**: start `Unknown` at utilization 0; candidates in order Compute (GFLOP/s ÷ peak),
//!   HBM (HBM GiB/s ÷ GiB(peak)), TPU: CMEM Read/Write, VMEM Read/Write (only with bytes > 0 and
//!   peak > 0), GPU: `Shm/L1` (HBM GiB/s ÷ GiB(SRAM wr peak)); strictly greater wins; the
//!   bottleneck OI is that resource's OI.
//! * roofline efficiency = max(flops utilization, max memory utilization) where the memory
//!   utilizations use the table peaks (CMEM only with CMEM, VMEM only with merged VMEM);
//!   compute efficiency = GFLOP/s ÷ peak GFLOP/s; optimal FLOP rate = GFLOP/s ÷ efficiency.
//!   Copy-start/done rows can exceed 1 (their bytes/time are meaningless, as XProf notes).

use serde::Serialize;

use crate::device::{giga_to_gibi, safe_divide, DeviceInfo, Hardware};
use crate::op_metrics::{combine_breakdown, OpMetrics, OpMetricsDb};
use crate::steps::StepReport;

/// XProf's `kMaxNumRecords`.
const MAX_RECORDS: usize = 1000;

/// One roofline record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RooflinePoint {
    /// Op name, or `Program`.
    pub name: String,
    pub category: String,
    /// `Total`, `Average`, or the step number.
    pub step: String,
    /// 0 for Program rows, else 1-based rank by self time.
    pub rank: u64,
    pub program_id: u64,
    pub occurrences: u64,
    pub total_time_us: f64,
    pub avg_time_us: f64,
    pub self_time_us: f64,
    pub avg_self_time_us: f64,
    /// Fraction of the db's total time (0 for Program rows).
    pub self_time_fraction: f64,
    pub cumulative_self_time_fraction: f64,
    pub dma_stall_fraction: f64,
    /// `total_time_us` ÷ device cores.
    pub total_time_per_core_us: f64,
    /// `time` ÷ total time.
    pub total_time_fraction: f64,
    pub flops: u64,
    pub model_flops: u64,
    pub bytes_accessed: u64,
    /// XProf "Normalized FLOP Rate (GFLOP/s)".
    pub measured_flop_rate_gflops: f64,
    pub model_flop_rate_gflops: f64,
    pub measured_memory_bw_gibs: f64,
    pub hbm_bw_gibs: f64,
    pub cmem_read_bw_gibs: f64,
    pub cmem_write_bw_gibs: f64,
    pub vmem_read_bw_gibs: f64,
    pub vmem_write_bw_gibs: f64,
    pub operational_intensity: f64,
    pub hbm_operational_intensity: f64,
    pub cmem_read_operational_intensity: f64,
    pub cmem_write_operational_intensity: f64,
    pub vmem_read_operational_intensity: f64,
    pub vmem_write_operational_intensity: f64,
    pub bottleneck_operational_intensity: f64,
    pub bound_by: String,
    pub optimal_flop_rate_gflops: f64,
    /// Fractions (0..1; copy ops may exceed 1).
    pub roofline_efficiency: f64,
    pub compute_efficiency: f64,
    pub max_mem_bw_utilization: f64,
    pub include_infeed_outfeed: bool,
    pub source_info: String,
}

/// The roofline of one capture.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Roofline {
    /// False for CPU-only captures (everything else empty / 0).
    pub available: bool,
    pub device_type: String,
    pub megacore: bool,
    pub has_cmem: bool,
    pub has_merged_vmem: bool,
    pub peak_flop_rate_gflops: f64,
    pub peak_hbm_bw_gibs: f64,
    pub peak_cmem_read_bw_gibs: f64,
    pub peak_cmem_write_bw_gibs: f64,
    pub peak_vmem_read_bw_gibs: f64,
    pub peak_vmem_write_bw_gibs: f64,
    /// XProf's `hbm_ridge_point` table property (FLOP/byte).
    pub ridge_point: f64,
    pub cmem_read_ridge_point: f64,
    pub cmem_write_ridge_point: f64,
    pub vmem_read_ridge_point: f64,
    pub vmem_write_ridge_point: f64,
    /// The `Total` Program row, infeed/outfeed included.
    pub program: RooflinePoint,
    /// The `Total` Program row without infeed/outfeed ops and time.
    pub program_excluding_infeed_outfeed: RooflinePoint,
    /// `Total` per-op rows.
    pub points: Vec<RooflinePoint>,
    /// The `Average` Program row (TPU only).
    pub average_step: Option<RooflinePoint>,
    /// Per-step Program rows.
    pub steps: Vec<RooflinePoint>,
    /// Why the roofline is empty or has no roofs (see the module doc).
    pub notes: Vec<String>,
}

/// Table peaks (GiB/s and GFLOP/s) used for efficiencies.
struct Peaks {
    flop: f64,
    hbm: f64,
    cmem_rd: f64,
    cmem_wr: f64,
    vmem_rd: f64,
    vmem_wr: f64,
    has_cmem: bool,
    has_merged_vmem: bool,
}

/// XProf `MayHaveInnerOps`.
fn may_have_inner_ops(category: &str) -> bool {
    matches!(category, "call" | "conditional" | "while" | "megacore fusion")
}

/// XProf `IsInfeedOrOutfeed`.
fn is_infeed_or_outfeed(category: &str) -> bool {
    category.contains("infeed") || category.contains("outfeed")
}

fn gibs(bytes: u64, time_ps: u64) -> f64 {
    giga_to_gibi(safe_divide(bytes as f64, time_ps as f64 / 1000.0))
}

/// Fills the rate / roofline columns of a record (XProf `SetRooflineMetrics` + efficiencies).
fn set_roofline_metrics(p: &mut RooflinePoint, m: &OpMetrics, device: &DeviceInfo, peaks: &Peaks) {
    let time_ns = m.time_ps as f64 / 1000.0;
    p.flops = m.flops;
    p.model_flops = m.model_flops;
    p.bytes_accessed = m.bytes_accessed;
    p.measured_flop_rate_gflops = safe_divide(m.flops as f64, time_ns);
    p.model_flop_rate_gflops = safe_divide(m.model_flops as f64, time_ns);
    p.measured_memory_bw_gibs = gibs(m.bytes_accessed, m.time_ps);
    p.operational_intensity = safe_divide(m.flops as f64, m.bytes_accessed as f64);
    let (mut hbm, mut cmem_rd, mut cmem_wr, mut vmem_rd, mut vmem_wr) = (0u64, 0u64, 0u64, 0u64, 0u64);
    for b in &m.memory_accessed_breakdown {
        match (b.memory_space, b.operation_type) {
            (1, _) => hbm += b.bytes_accessed,
            (2, 1) => cmem_rd += b.bytes_accessed,
            (2, 2) => cmem_wr += b.bytes_accessed,
            (3, 1) => vmem_rd += b.bytes_accessed,
            (3, 2) => vmem_wr += b.bytes_accessed,
            _ => {}
        }
    }
    if m.memory_accessed_breakdown.is_empty() {
        hbm = m.bytes_accessed;
    }
    p.hbm_bw_gibs = gibs(hbm, m.time_ps);
    p.cmem_read_bw_gibs = gibs(cmem_rd, m.time_ps);
    p.cmem_write_bw_gibs = gibs(cmem_wr, m.time_ps);
    p.vmem_read_bw_gibs = gibs(vmem_rd, m.time_ps);
    p.vmem_write_bw_gibs = gibs(vmem_wr, m.time_ps);
    let oi = |bytes: u64| safe_divide(m.flops as f64, bytes as f64);
    p.hbm_operational_intensity = oi(hbm);
    p.cmem_read_operational_intensity = oi(cmem_rd);
    p.cmem_write_operational_intensity = oi(cmem_wr);
    p.vmem_read_operational_intensity = oi(vmem_rd);
    p.vmem_write_operational_intensity = oi(vmem_wr);

    // Bound by (per-resource utilizations against the PerfEnv peaks).
    let bws = &device.peak_bws_giga_bytes_per_second;
    let mut bound = "Unknown";
    let mut util = 0.0;
    let mut bottleneck_oi = 0.0;
    let mut consider = |name: &'static str, u: f64, o: f64| {
        if util < u {
            bound = name;
            util = u;
            bottleneck_oi = o;
        }
    };
    consider("Compute", safe_divide(p.measured_flop_rate_gflops, device.peak_gflops()), p.operational_intensity);
    // A CPU's main memory sits in the HBM slot; it is named for what it is.
    let main_memory = if device.hardware == Hardware::CpuOnly { "DRAM" } else { "HBM" };
    consider(main_memory, safe_divide(p.hbm_bw_gibs, giga_to_gibi(bws[0])), p.hbm_operational_intensity);
    match device.hardware {
        Hardware::Tpu => {
            let candidates = [
                ("CMEM Read", cmem_rd, bws[3], p.cmem_read_bw_gibs, p.cmem_read_operational_intensity),
                ("CMEM Write", cmem_wr, bws[4], p.cmem_write_bw_gibs, p.cmem_write_operational_intensity),
                ("VMEM Read", vmem_rd, bws[5], p.vmem_read_bw_gibs, p.vmem_read_operational_intensity),
                ("VMEM Write", vmem_wr, bws[6], p.vmem_write_bw_gibs, p.vmem_write_operational_intensity),
            ];
            for (name, bytes, peak, bw, o) in candidates {
                if bytes > 0 && peak != 0.0 {
                    consider(name, safe_divide(bw, giga_to_gibi(peak)), o);
                }
            }
        }
        Hardware::Gpu => {
            if bws[2] != 0.0 {
                consider("Shm/L1", safe_divide(p.hbm_bw_gibs, giga_to_gibi(bws[2])), p.hbm_operational_intensity);
            }
        }
        Hardware::CpuOnly => {}
    }
    p.bound_by = bound.to_string();
    p.bottleneck_operational_intensity = bottleneck_oi;

    // Efficiencies against the table peaks.
    let cmem_wr_u = if peaks.has_cmem { safe_divide(p.cmem_write_bw_gibs, peaks.cmem_wr) } else { 0.0 };
    let cmem_rd_u = if peaks.has_cmem { safe_divide(p.cmem_read_bw_gibs, peaks.cmem_rd) } else { 0.0 };
    let vmem_rd_u = if peaks.has_merged_vmem { safe_divide(p.vmem_read_bw_gibs, peaks.vmem_rd) } else { 0.0 };
    let vmem_wr_u = if peaks.has_merged_vmem { safe_divide(p.vmem_write_bw_gibs, peaks.vmem_wr) } else { 0.0 };
    let flops_u = safe_divide(p.measured_flop_rate_gflops, peaks.flop);
    let hbm_u = safe_divide(p.hbm_bw_gibs, peaks.hbm);
    let max_mem = [cmem_wr_u, cmem_rd_u, hbm_u, vmem_wr_u, vmem_rd_u].into_iter().fold(0.0, f64::max);
    let efficiency = max_mem.max(flops_u);
    p.optimal_flop_rate_gflops = safe_divide(p.measured_flop_rate_gflops, efficiency);
    p.roofline_efficiency = efficiency;
    p.compute_efficiency = flops_u;
    p.max_mem_bw_utilization = max_mem;
}

/// XProf `ConvertOpMetricsToRooflineModelRecord`.
fn record(
    m: &OpMetrics,
    step: &str,
    total_time_ps: u64,
    steps_divisor: Option<usize>,
    device: &DeviceInfo,
    peaks: &Peaks,
    include_infeed_outfeed: bool,
) -> RooflinePoint {
    let mut p = RooflinePoint {
        name: m.name.clone(),
        category: m.category.clone(),
        step: step.to_string(),
        program_id: m.program_id,
        occurrences: m.occurrences,
        total_time_us: m.time_ps as f64 / 1e6,
        self_time_us: m.self_time_ps as f64 / 1e6,
        source_info: m.source_info.clone(),
        include_infeed_outfeed,
        ..RooflinePoint::default()
    };
    p.avg_time_us = safe_divide(p.total_time_us, m.occurrences as f64);
    p.avg_self_time_us = safe_divide(p.self_time_us, m.occurrences as f64);
    if let Some(n) = steps_divisor {
        p.total_time_us = safe_divide(p.total_time_us, n as f64);
        p.self_time_us = safe_divide(p.self_time_us, n as f64);
    }
    p.total_time_per_core_us = safe_divide(p.total_time_us, f64::from(device.device_cores));
    p.total_time_fraction = safe_divide(m.time_ps as f64, total_time_ps as f64);
    p.dma_stall_fraction = safe_divide(m.dma_stall_ps as f64, m.time_ps as f64);
    set_roofline_metrics(&mut p, m, device, peaks);
    p
}

/// XProf `GenerateRooflineModelProgramRecord`.
fn program_record(
    db: &OpMetricsDb,
    step: &str,
    steps_divisor: Option<usize>,
    device: &DeviceInfo,
    peaks: &Peaks,
    include_infeed_outfeed: bool,
) -> RooflinePoint {
    let mut program = OpMetrics {
        name: "Program".to_string(),
        category: "Program".to_string(),
        occurrences: 1,
        ..OpMetrics::default()
    };
    let mut infeed_outfeed_ps = 0u64;
    for m in &db.ops {
        if may_have_inner_ops(&m.category) {
            continue;
        }
        if !include_infeed_outfeed && is_infeed_or_outfeed(&m.category) {
            infeed_outfeed_ps += m.time_ps;
            continue;
        }
        program.flops += m.flops;
        program.model_flops += m.model_flops;
        program.bytes_accessed += m.bytes_accessed;
        combine_breakdown(&mut program.memory_accessed_breakdown, &m.memory_accessed_breakdown);
    }
    let total = db.total_time_ps.saturating_sub(infeed_outfeed_ps);
    program.time_ps = total;
    record(&program, step, total, steps_divisor, device, peaks, include_infeed_outfeed)
}

/// XProf `SortedOpMetricsDb`: self time desc, tie name asc.
pub(crate) fn sorted_ops(db: &OpMetricsDb) -> Vec<&OpMetrics> {
    let mut ops: Vec<&OpMetrics> = db.ops.iter().collect();
    ops.sort_by(|a, b| b.self_time_ps.cmp(&a.self_time_ps).then_with(|| a.name.cmp(&b.name)));
    ops
}

/// The table peaks of a device (XProf `InitializeRooflineModelDatabaseFromOpStats`).
fn table_peaks(device: &DeviceInfo) -> Peaks {
    let bws = &device.peak_bws_giga_bytes_per_second;
    let peak_flop = device.peak_gflops();
    let peak_hbm = giga_to_gibi(bws[0]);
    let has_cmem = device.hardware == Hardware::Tpu && device.has_cmem;
    let has_merged_vmem = match device.hardware {
        Hardware::Tpu => device.has_merged_vmem,
        _ => true,
    };
    let (mut cmem_rd, mut cmem_wr, mut vmem_rd, mut vmem_wr) = (0.0, 0.0, 0.0, 0.0);
    match device.hardware {
        Hardware::Tpu if has_cmem => {
            cmem_rd = giga_to_gibi(bws[3]);
            cmem_wr = giga_to_gibi(bws[4]);
        }
        Hardware::Tpu if has_merged_vmem => {
            vmem_rd = giga_to_gibi(bws[5]);
            vmem_wr = giga_to_gibi(bws[6]);
        }
        Hardware::Gpu => {
            vmem_rd = giga_to_gibi(bws[1]);
            vmem_wr = giga_to_gibi(bws[2]);
        }
        _ => {}
    }
    Peaks { flop: peak_flop, hbm: peak_hbm, cmem_rd, cmem_wr, vmem_rd, vmem_wr, has_cmem, has_merged_vmem }
}

/// (peak GFLOP/s, peak HBM GiB/s) of a device, as the roofline uses them.
pub(crate) fn peaks_of(device: &DeviceInfo) -> (f64, f64) {
    let p = table_peaks(device);
    (p.flop, p.hbm)
}

/// The roofline columns of one op (used by HLO stats).
pub(crate) fn roofline_point_for_op(m: &OpMetrics, total_time_ps: u64, device: &DeviceInfo) -> RooflinePoint {
    record(m, "Total", total_time_ps, None, device, &table_peaks(device), true)
}

/// Builds the roofline of a capture's device ops.
pub fn roofline(db: &OpMetricsDb, device: &DeviceInfo, steps: &StepReport) -> Roofline {
    if device.hardware == Hardware::CpuOnly && !db.has_hlo_costs {
        return Roofline {
            notes: vec![
                "no roofline: the ops have no FLOPs or bytes (the capture holds no HLO program for its XLA:CPU ops)"
                    .into(),
            ],
            ..Roofline::default()
        };
    }
    let mut notes = Vec::new();
    if !db.has_hlo_costs {
        notes.push("no FLOPs or bytes per op (no HLO cost analysis in the capture): every point sits at 0".into());
    }
    if device.peak_gflops() <= 0.0 {
        notes.push(format!("no peak FLOP rate for {}: no compute roof, bound-by unknown", device.device_type));
    }
    let peaks = table_peaks(device);
    let peak_flop = peaks.flop;
    let (cmem_rd, cmem_wr, vmem_rd, vmem_wr) = (peaks.cmem_rd, peaks.cmem_wr, peaks.vmem_rd, peaks.vmem_wr);
    let (has_cmem, has_merged_vmem, peak_hbm) = (peaks.has_cmem, peaks.has_merged_vmem, peaks.hbm);
    // Ridge points: GFLOP/s ÷ GB/s (XProf GibiToGiga of the GiB/s peaks).
    let ridge = |bw_gibs: f64| safe_divide(peak_flop, bw_gibs * 1.073_741_824);

    let program = program_record(db, "Total", None, device, &peaks, true);
    let program_excluding_infeed_outfeed = program_record(db, "Total", None, device, &peaks, false);
    let total_us = db.total_time_ps as f64 / 1e6;
    let mut points = Vec::new();
    let mut cumulative = 0.0;
    for m in sorted_ops(db).into_iter().take(MAX_RECORDS) {
        if m.occurrences == 0 {
            continue;
        }
        let mut p = record(m, "Total", db.total_time_ps, None, device, &peaks, true);
        p.rank = points.len() as u64 + 1;
        p.self_time_fraction = safe_divide(p.self_time_us, total_us);
        cumulative += p.self_time_fraction;
        p.cumulative_self_time_fraction = cumulative;
        points.push(p);
    }

    let average_step = (device.hardware == Hardware::Tpu).then(|| {
        let mut complete = OpMetricsDb::default();
        for s in &db.steps {
            complete.merge(&s.db);
        }
        program_record(&complete, "Average", Some(db.steps.len().max(steps.steps.len())), device, &peaks, true)
    });
    // One Program row per step; a step without ops of its own (e.g. GPU steps, whose HLO ops
    // Falcon cannot cost) gets an empty db, i.e. an all-zero row, as XProf shows for them.
    let empty = OpMetricsDb::default();
    let mut step_nums: Vec<i64> = steps.steps.iter().map(|s| s.step_num).collect();
    step_nums.extend(db.steps.iter().map(|s| s.step_num));
    step_nums.sort_unstable();
    step_nums.dedup();
    let step_rows = step_nums
        .into_iter()
        .map(|n| {
            let step_db = db.steps.iter().find(|s| s.step_num == n).map_or(&empty, |s| &s.db);
            program_record(step_db, &n.to_string(), None, device, &peaks, true)
        })
        .collect();

    Roofline {
        available: true,
        device_type: device.device_type.clone(),
        megacore: device.hardware == Hardware::Tpu && device.has_megacore,
        has_cmem,
        has_merged_vmem,
        peak_flop_rate_gflops: peak_flop,
        peak_hbm_bw_gibs: peak_hbm,
        peak_cmem_read_bw_gibs: cmem_rd,
        peak_cmem_write_bw_gibs: cmem_wr,
        peak_vmem_read_bw_gibs: vmem_rd,
        peak_vmem_write_bw_gibs: vmem_wr,
        ridge_point: ridge(peak_hbm),
        cmem_read_ridge_point: ridge(cmem_rd),
        cmem_write_ridge_point: ridge(cmem_wr),
        vmem_read_ridge_point: ridge(vmem_rd),
        vmem_write_ridge_point: ridge(vmem_wr),
        program,
        program_excluding_infeed_outfeed,
        points,
        average_step,
        steps: step_rows,
        notes,
    }
}
