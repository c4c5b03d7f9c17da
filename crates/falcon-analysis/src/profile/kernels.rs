//! GPU kernel statistics: XProf's `kernel_stats` tool (one row per distinct kernel launch
//! configuration), plus a per-step breakdown of device time by event class.
//!
//! # Kernel rows (XProf `xprof/convert/xplane_to_kernel_stats_db.cc`,
//! `xprof/utils/kernel_stats_utils.cc`, `xprof/utils/gpu_event_stats.cc`)
//!
//! - Device planes are the `/device:GPU:*` planes; a capture with `/device:TPU:*` planes (or with
//!   no GPU plane at all, e.g. a CPU-only capture) has no kernel rows and says so in a note.
//! - Every event on a non-derived line (XProf `IsDerivedThreadId`: line ids `0xdeadbeef..`, also
//!   seen sign-extended to 64 bits) with a non-zero duration and a non-empty `kernel_details` stat
//!   is one kernel launch. Its duration is `duration_ps / 1000` in whole nanoseconds
//!   (`XEventVisitor::DurationNs`).
//! - `kernel_details` is split on spaces/newlines into `key:value` tokens (`ParseKernelLaunchParams`):
//!   `regs`, `static_shared`, `dynamic_shared`, `grid:x,y,z`, `block:x,y,z`, `occ_pct`. Other keys
//!   (e.g. the legacy `shm:` of older TensorFlow) are ignored, dims default to `1,1,1`.
//! - Op name: the `tf_op` stat parsed with XProf's `ParseTfOpFullname` (`name:Type` gives `name`;
//!   a JAX-style lower-case type or an empty type also gives the part before `:`; otherwise the
//!   whole string). No `tf_op` stat -> empty op name and "not eligible".
//! - Tensor cores: the kernel *uses* them when its name contains one of XProf's patterns
//!   (`h884`, `s1688`, `hmma`, `xmma_gemm`, ...) or, past XProf, one of the Ampere and Hopper names XProf
//!   misses ([`HOPPER_TENSOR_CORE_PATTERNS`]: cuBLAS's `nvjet_*`, `sm80_xmma`/`sm90_xmma`, CUTLASS
//!   `tensorop`, `wgmma`, cuDNN and PyTorch flash attention, XLA's Triton `gemm_fusion_dot`, Inductor's
//!   Triton matmul templates); a plane whose `device_vendor` stat is set and is not `Nvidia` never does. The *op* is eligible when its name matches `IsOpTensorCoreEligible`
//!   (`…Conv2D`, `…/MatMul`, `BatchMatMul…`, ...), its `equation` stat is a two-operand einsum
//!   (`IsEinsumTensorCoreEligible`), or the kernel uses tensor cores.
//! - Launches are grouped by (name, grid, block, registers, static and dynamic shared memory,
//!   tensor-core flags, op name) over all GPU planes; each group keeps occurrences, total, min and
//!   max duration; the occupancy of the first launch seen is kept (XProf's map key ignores it).
//! - Rows are sorted by total duration descending, ties by the key tuple ascending in XProf's order
//!   (`KernelReportLessThanComparator`), and capped at 1000 rows (`kMaxNumOfKernels`).
//! - Times are microseconds: `total/min/max = ns / 1000`; `avg = (total_ns / occurrences) / 1000`
//!   with integer division, as XProf's data table.
//!
//! # Per-step breakdown (XProf `xprof/convert/xplane_to_step_events.cc`, `xprof/utils/event_span.h`)
//!
//! - A GPU event takes part when it has a `correlation_id` (as XProf). It belongs to the step of its
//!   `group_id`: a group maps to the step that includes the longest `Steps`-line marker of that group
//!   (the rule `steps::detect_steps` uses to pick step spans). Without device `Steps` markers (steps
//!   from host annotations) an event belongs to the step its start falls in, clipped to the step.
//! - Classes (`ClassifyGpuEvent`): `MemcpyHToD`/`MemcpyH2D` host-to-device, `MemcpyDToH`/`MemcpyD2H`
//!   device-to-host, `MemcpyDToD`/`MemcpyD2D`/`MemcpyP2P` device-to-device (case-insensitive
//!   prefixes), `nccl*` collectives, anything else compute: 16-bit when its `shape` stat contains
//!   `half`, or (no shape) its name contains `half` or `fp16`; else 32-bit.
//! - XProf makes the events of a step non-overlapping, the higher-priority class winning
//!   (`DEVICE_COMPUTE_16 > DEVICE_COMPUTE_32 > DEVICE_TO_HOST > DEVICE_TO_DEVICE >
//!   DEVICE_COLLECTIVES > HOST_TO_DEVICE`); here that is done per GPU and the per-GPU times are
//!   summed, so each class total is at most step duration × number of GPUs.
//! - `kernel_time_us` is the plain sum of the step's kernel durations (the same nanoseconds as the
//!   kernel rows), so the steps' sum never exceeds `total_kernel_time_us`.
//!
//! # FLOPs
//!
//! XProf only gets GPU op FLOPs from HLO cost analysis of the modules in `/host:metadata`
//! (`Hlo Proto` stats). Without them (TensorFlow graph-mode captures) there are none; this module
//! reports `has_hlo_costs` and never estimates FLOPs.

use std::collections::BTreeMap;

use falcon_xplane::{XEvent, XLine, XPlane, XSpace, XStat};
use serde::Serialize;

pub use crate::gpu_kernels::{
    is_einsum_tensor_core_eligible, is_kernel_using_tensor_core, is_op_tensor_core_eligible, KernelStat,
    HOPPER_TENSOR_CORE_PATTERNS,
};
use crate::steps::{StepReport, STEPS_LINE};

/// Prefix of GPU device planes.
pub const GPU_PLANE_PREFIX: &str = "/device:GPU:";
/// Prefix of TPU device planes.
pub const TPU_PLANE_PREFIX: &str = "/device:TPU:";
/// XProf's plane of HLO protos.
pub const METADATA_PLANE: &str = "/host:metadata";
/// XProf keeps at most this many kernel rows (`kMaxNumOfKernels`).
pub const MAX_KERNEL_ROWS: usize = 1000;

/// Start of XProf's derived line ids (`kThreadIdDerivedMin`).
const DERIVED_LINE_ID_MIN: i64 = 0xdead_beef;
/// Generous bound on derived line ids (XProf uses fewer than 300).
const DERIVED_LINE_ID_SPAN: i64 = 1024;

/// Device time of one step by event class (see the module docs).
#[derive(serde::Deserialize, Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StepKernelBreakdown {
    pub step_num: i64,
    /// Step start, picoseconds since the Unix epoch.
    pub start_ps: i128,
    pub duration_ps: i64,
    /// GPUs with at least one event in this step.
    pub gpu_count: usize,
    pub kernel_count: u64,
    /// Sum of this step's kernel durations.
    pub kernel_time_us: f64,
    /// Non-overlapped time per class, summed over GPUs.
    pub compute_16bit_us: f64,
    pub compute_32bit_us: f64,
    pub host_to_device_us: f64,
    pub device_to_host_us: f64,
    pub device_to_device_us: f64,
    pub collectives_us: f64,
    /// Share of compute time that is 16-bit, in percent (0 without compute).
    pub compute_16bit_percent: f64,
}

/// Kernel statistics of one capture.
#[derive(serde::Deserialize, Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct KernelReport {
    /// XProf kernel_stats rows, longest total first, at most [`MAX_KERNEL_ROWS`].
    pub kernels: Vec<KernelStat>,
    /// Distinct kernel rows before the cap.
    pub distinct_kernels: usize,
    /// Kernel launches over all GPUs.
    pub kernel_launches: u64,
    /// Sum of all kernel durations (not only the kept rows).
    pub total_kernel_time_us: f64,
    /// GPU planes with at least one kernel.
    pub gpus_with_kernels: usize,
    pub per_step: Vec<StepKernelBreakdown>,
    /// Whether `/host:metadata` holds HLO protos (the only source of GPU op FLOPs in XProf).
    pub has_hlo_costs: bool,
    pub notes: Vec<String>,
}

/// Computes the kernel statistics and per-step breakdown of `space` (rules in the module docs).
pub fn kernel_stats(space: &XSpace, steps: &StepReport) -> KernelReport {
    let has_hlo_costs = has_hlo_protos(space);
    let mut report = KernelReport { has_hlo_costs, ..KernelReport::default() };
    let has_tpu = space.planes_with_prefix(TPU_PLANE_PREFIX).next().is_some();
    let gpus: Vec<&XPlane> = if has_tpu { Vec::new() } else { space.planes_with_prefix(GPU_PLANE_PREFIX).collect() };
    if gpus.is_empty() {
        let kind = if has_tpu { "a TPU" } else { "a non-GPU" };
        report.notes.push(format!(
            "{kind} capture: kernel statistics come from GPU (CUDA/ROCm) kernel events only, so \
             there are none (as in XProf)"
        ));
        return report;
    }

    let mut groups: BTreeMap<KernelKey, KernelAcc> = BTreeMap::new();
    let mut legacy_shm = false;
    let mut has_hlo_op = false;
    for plane in &gpus {
        let ids = StatIds::of(plane);
        let vendor_ok = plane_vendor_is_nvidia_or_unset(plane);
        let mut plane_has_kernel = false;
        for line in plane.lines.iter().filter(|l| !is_derived_line(l)) {
            for event in &line.events {
                let dur_ns = event.duration_ps.max(0) / 1000;
                if dur_ns == 0 {
                    continue;
                }
                let Some(details) = ids.str(plane, event, ids.kernel_details) else {
                    continue;
                };
                if details.is_empty() {
                    continue;
                }
                plane_has_kernel = true;
                legacy_shm |= details.split([' ', '\n']).any(|t| t.starts_with("shm:"));
                has_hlo_op |= ids.str(plane, event, ids.hlo_op).is_some();
                let name = plane.event_name(event);
                let launch = parse_kernel_launch_params(details);
                let uses_tc = vendor_ok && is_kernel_using_tensor_core(name);
                let (op_name, eligible) = match ids.str(plane, event, ids.tf_op) {
                    Some(tf_op) if !tf_op.is_empty() => {
                        let op = tf_op_name(tf_op).to_owned();
                        let equation = ids.str(plane, event, ids.equation).unwrap_or("");
                        let eligible =
                            is_einsum_tensor_core_eligible(equation) || is_op_tensor_core_eligible(&op) || uses_tc;
                        (op, eligible)
                    }
                    _ => (String::new(), false),
                };
                let key = KernelKey {
                    name: name.to_owned(),
                    grid: launch.grid,
                    block: launch.block,
                    regs: launch.regs,
                    static_shmem: launch.static_shmem,
                    dynamic_shmem: launch.dynamic_shmem,
                    uses_tc,
                    eligible,
                    op_name,
                };
                let dur = dur_ns.unsigned_abs();
                let acc = groups.entry(key).or_insert(KernelAcc {
                    occurrences: 0,
                    total_ns: 0,
                    min_ns: dur,
                    max_ns: dur,
                    occupancy: launch.occupancy,
                });
                acc.occurrences += 1;
                acc.total_ns = acc.total_ns.saturating_add(dur);
                acc.min_ns = acc.min_ns.min(dur);
                acc.max_ns = acc.max_ns.max(dur);
            }
        }
        if plane_has_kernel {
            report.gpus_with_kernels += 1;
        }
    }

    report.distinct_kernels = groups.len();
    report.kernel_launches = groups.values().map(|a| a.occurrences).sum();
    let total_ns: u64 = groups.values().map(|a| a.total_ns).sum();
    report.total_kernel_time_us = ns_to_us(total_ns);

    let mut rows: Vec<(KernelKey, KernelAcc)> = groups.into_iter().collect();
    // BTreeMap order is the key order, so a stable sort by total (desc) leaves ties in XProf's
    // `KernelReportLessThanComparator` order.
    rows.sort_by_key(|r| std::cmp::Reverse(r.1.total_ns));
    rows.truncate(MAX_KERNEL_ROWS);
    report.kernels = rows.into_iter().map(|(k, a)| to_stat(k, a)).collect();

    report.per_step = per_step_breakdown(&gpus, steps);

    if report.kernel_launches == 0 {
        report.notes.push("the GPU planes hold no kernel events (no `kernel_details` stat)".to_owned());
    }
    if report.distinct_kernels > MAX_KERNEL_ROWS {
        report.notes.push(format!(
            "{} distinct kernels; only the {MAX_KERNEL_ROWS} with the longest total time are \
             listed (XProf kMaxNumOfKernels)",
            report.distinct_kernels
        ));
    }
    if legacy_shm {
        report.notes.push(
            "kernel_details uses the legacy `shm:` key, which XProf does not parse: shared memory \
             is reported as 0 (as in XProf)"
                .to_owned(),
        );
    }
    if has_hlo_costs {
        if has_hlo_op {
            report.notes.push(
                "op names are taken from `tf_op` stats only; XProf may instead name XLA kernels \
                 by the HLO instruction's op metadata from /host:metadata"
                    .to_owned(),
            );
        }
    } else {
        report.notes.push(
            "no HLO proto in /host:metadata: GPU ops have no FLOP counts (XProf derives them from \
             HLO cost analysis); none are estimated"
                .to_owned(),
        );
    }
    if !steps.steps.is_empty() && report.per_step.iter().all(|s| s.gpu_count == 0) {
        report.notes.push("no GPU event could be attributed to a step".to_owned());
    }
    report
}

// ---------------------------------------------------------------------------------------------
// Kernel rows.

/// XProf's grouping key, fields in `KernelReportLessThanComparator` order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct KernelKey {
    name: String,
    grid: [u32; 3],
    block: [u32; 3],
    regs: u32,
    static_shmem: u32,
    dynamic_shmem: u32,
    uses_tc: bool,
    eligible: bool,
    op_name: String,
}

#[derive(Debug, Clone, Copy)]
struct KernelAcc {
    occurrences: u64,
    total_ns: u64,
    min_ns: u64,
    max_ns: u64,
    occupancy: f64,
}

fn ns_to_us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

fn to_stat(k: KernelKey, a: KernelAcc) -> KernelStat {
    let avg_ns = a.total_ns.checked_div(a.occurrences).unwrap_or(0);
    KernelStat {
        name: k.name,
        op_name: k.op_name,
        occurrences: a.occurrences,
        total_time_us: ns_to_us(a.total_ns),
        avg_time_us: ns_to_us(avg_ns),
        min_time_us: ns_to_us(a.min_ns),
        max_time_us: ns_to_us(a.max_ns),
        registers_per_thread: k.regs,
        static_shmem_bytes: k.static_shmem,
        dynamic_shmem_bytes: k.dynamic_shmem,
        block_dim: k.block,
        grid_dim: k.grid,
        occupancy_percent: a.occupancy,
        is_op_tensor_core_eligible: k.eligible,
        is_kernel_using_tensor_core: k.uses_tc,
    }
}

/// Launch parameters parsed from a `kernel_details` stat.
#[derive(Debug, Clone, Copy, PartialEq)]
struct LaunchParams {
    regs: u32,
    static_shmem: u32,
    dynamic_shmem: u32,
    grid: [u32; 3],
    block: [u32; 3],
    occupancy: f64,
}

/// XProf `ParseKernelLaunchParams`.
fn parse_kernel_launch_params(details: &str) -> LaunchParams {
    let mut p =
        LaunchParams { regs: 0, static_shmem: 0, dynamic_shmem: 0, grid: [1, 1, 1], block: [1, 1, 1], occupancy: 0.0 };
    for token in details.split([' ', '\n']) {
        let mut kv = token.split(':');
        let (Some(key), Some(value), None) = (kv.next(), kv.next(), kv.next()) else {
            continue;
        };
        match key {
            "regs" => {
                if let Ok(v) = value.parse() {
                    p.regs = v;
                }
            }
            "static_shared" => {
                if let Ok(v) = value.parse() {
                    p.static_shmem = v;
                }
            }
            "dynamic_shared" => {
                if let Ok(v) = value.parse() {
                    p.dynamic_shmem = v;
                }
            }
            "block" => {
                if let Some(d) = parse_dim3(value) {
                    p.block = d;
                }
            }
            "grid" => {
                if let Some(d) = parse_dim3(value) {
                    p.grid = d;
                }
            }
            "occ_pct" => {
                if let Ok(v) = value.parse() {
                    p.occupancy = v;
                }
            }
            _ => {}
        }
    }
    p
}

fn parse_dim3(value: &str) -> Option<[u32; 3]> {
    let mut it = value.split(',');
    let d = [it.next()?.parse().ok()?, it.next()?.parse().ok()?, it.next()?.parse().ok()?];
    it.next().is_none().then_some(d)
}

/// The op name XProf takes from a `tf_op` stat (`ParseTfOpFullname(..).name`).
fn tf_op_name(full: &str) -> &str {
    let Some((name, ty)) = full.split_once(':') else {
        return full;
    };
    if name == "Iterator" {
        return full;
    }
    if (is_tf_op_name(name) && is_tf_op_type(ty)) || ty.is_empty() || is_jax_op_type(ty) {
        name
    } else {
        full
    }
}

/// `[A-Za-z0-9.][A-Za-z0-9_.\/>-]*`
fn is_tf_op_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '.')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '>' | '-'))
}

/// `[A-Z_][a-zA-Z0-9_]*`
fn is_tf_op_type(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `[a-z_][a-z0-9_]*(\[.*\])?`
fn is_jax_op_type(s: &str) -> bool {
    let (head, bracket) = match s.find('[') {
        Some(i) => (&s[..i], Some(&s[i..])),
        None => (s, None),
    };
    let mut chars = head.chars();
    let head_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    head_ok && bracket.is_none_or(|b| b.ends_with(']'))
}

fn plane_vendor_is_nvidia_or_unset(plane: &XPlane) -> bool {
    match plane.plane_stat("device_vendor").and_then(|s| plane.stat_str(s)) {
        None | Some("") => true,
        Some(v) => v == "Nvidia",
    }
}

fn has_hlo_protos(space: &XSpace) -> bool {
    space.plane_by_name(METADATA_PLANE).is_some_and(|p| {
        let Some(id) = p.stat_metadata_by_name("Hlo Proto").map(|m| m.id) else {
            return false;
        };
        p.event_metadata.values().any(|m| m.stats.iter().any(|s| s.metadata_id == id))
    })
}

fn is_derived_line(line: &XLine) -> bool {
    let in_range = |id: i64| (DERIVED_LINE_ID_MIN..DERIVED_LINE_ID_MIN + DERIVED_LINE_ID_SPAN).contains(&id);
    // Some writers store the 32-bit id sign-extended (0xdeadbeef -> -559038737).
    in_range(line.id) || in_range(line.id.wrapping_add(1 << 32))
}

/// Stat ids of one plane, resolved once (names are unique per plane).
struct StatIds {
    kernel_details: Option<i64>,
    tf_op: Option<i64>,
    equation: Option<i64>,
    hlo_op: Option<i64>,
    group_id: Option<i64>,
    correlation_id: Option<i64>,
    shape: Option<i64>,
}

impl StatIds {
    fn of(plane: &XPlane) -> Self {
        let mut ids = StatIds {
            kernel_details: None,
            tf_op: None,
            equation: None,
            hlo_op: None,
            group_id: None,
            correlation_id: None,
            shape: None,
        };
        for m in plane.stat_metadata.values() {
            let slot = match m.name.as_str() {
                "kernel_details" => &mut ids.kernel_details,
                "tf_op" => &mut ids.tf_op,
                "equation" => &mut ids.equation,
                "hlo_op" => &mut ids.hlo_op,
                "group_id" => &mut ids.group_id,
                "correlation_id" => &mut ids.correlation_id,
                "shape" => &mut ids.shape,
                _ => continue,
            };
            // Deterministic if a writer ever repeats a name: keep the smallest id.
            if slot.is_none_or(|s| m.id < s) {
                *slot = Some(m.id);
            }
        }
        ids
    }

    /// The event's stat with this id, then its metadata's (as XProf's visitor).
    fn stat<'a>(plane: &'a XPlane, event: &'a XEvent, id: Option<i64>) -> Option<&'a XStat> {
        plane.event_stat_by_id(event, id)
    }

    fn str<'a>(&self, plane: &'a XPlane, event: &'a XEvent, id: Option<i64>) -> Option<&'a str> {
        plane.stat_str(Self::stat(plane, event, id)?)
    }

    fn int(&self, plane: &XPlane, event: &XEvent, id: Option<i64>) -> Option<i64> {
        Self::stat(plane, event, id)?.value.as_i64()
    }
}

// ---------------------------------------------------------------------------------------------
// Per-step breakdown.

/// XProf GPU event classes, in increasing priority (`EventType` numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    HostToDevice = 0,
    Collectives = 1,
    DeviceToDevice = 2,
    DeviceToHost = 3,
    Compute32 = 4,
    Compute16 = 5,
}

const CLASS_COUNT: usize = 6;

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// XProf `ClassifyGpuEvent` (with CUPTI's `MemcpyH2D`-style names accepted as well).
fn classify_gpu_event(name: &str, tensor_shapes: &str) -> Class {
    let any = |prefixes: &[&str]| prefixes.iter().any(|p| starts_with_ignore_case(name, p));
    if any(&["MemcpyHToD", "MemcpyH2D"]) {
        Class::HostToDevice
    } else if any(&["MemcpyDToH", "MemcpyD2H"]) {
        Class::DeviceToHost
    } else if any(&["MemcpyDToD", "MemcpyD2D", "MemcpyP2P"]) {
        Class::DeviceToDevice
    } else if starts_with_ignore_case(name, "nccl") {
        Class::Collectives
    } else {
        let half = if tensor_shapes.is_empty() {
            name.contains("half") || name.contains("fp16")
        } else {
            tensor_shapes.contains("half")
        };
        if half {
            Class::Compute16
        } else {
            Class::Compute32
        }
    }
}

#[derive(Clone, Copy)]
struct Interval {
    start: i128,
    end: i128,
    class: Class,
}

/// Non-overlapped time per class: in every instant the highest-priority active class gets it.
fn non_overlapped(intervals: &[Interval]) -> [i128; CLASS_COUNT] {
    let mut points: Vec<(i128, i32, usize)> = Vec::with_capacity(intervals.len() * 2);
    for iv in intervals.iter().filter(|iv| iv.end > iv.start) {
        points.push((iv.start, 1, iv.class as usize));
        points.push((iv.end, -1, iv.class as usize));
    }
    points.sort_unstable();
    let mut active = [0i32; CLASS_COUNT];
    let mut out = [0i128; CLASS_COUNT];
    let mut prev: Option<i128> = None;
    for (t, delta, class) in points {
        if let Some(p) = prev {
            if t > p {
                if let Some(top) = (0..CLASS_COUNT).rev().find(|&c| active[c] > 0) {
                    out[top] += t - p;
                }
            }
        }
        active[class] += delta;
        prev = Some(t);
    }
    out
}

#[derive(Default)]
struct StepAcc {
    /// Per GPU plane index.
    per_gpu: BTreeMap<usize, Vec<Interval>>,
    kernel_count: u64,
    kernel_ns: u64,
}

/// Maps a group id to the index of the step including its longest device `Steps` marker.
fn group_to_step(gpus: &[&XPlane], steps: &StepReport) -> BTreeMap<i64, usize> {
    let mut longest: BTreeMap<i64, (i128, i64)> = BTreeMap::new();
    for plane in gpus {
        let ids = StatIds::of(plane);
        for line in plane.lines.iter().filter(|l| l.name == STEPS_LINE) {
            for event in &line.events {
                let Some(gid) = ids.int(plane, event, ids.group_id) else {
                    continue;
                };
                let span = (line.event_start_ps(event), event.duration_ps.max(0));
                let slot = longest.entry(gid).or_insert(span);
                if span.1 > slot.1 {
                    *slot = span;
                }
            }
        }
    }
    longest
        .into_iter()
        .filter_map(|(gid, (start, dur))| {
            let end = start + i128::from(dur);
            steps
                .steps
                .iter()
                .position(|s| s.start_ps <= start && end <= s.start_ps + i128::from(s.duration_ps))
                .map(|i| (gid, i))
        })
        .collect()
}

fn per_step_breakdown(gpus: &[&XPlane], steps: &StepReport) -> Vec<StepKernelBreakdown> {
    if steps.steps.is_empty() {
        return Vec::new();
    }
    let by_group = group_to_step(gpus, steps);
    let by_time = by_group.is_empty();
    let mut accs: Vec<StepAcc> = steps.steps.iter().map(|_| StepAcc::default()).collect();

    for (gpu, plane) in gpus.iter().enumerate() {
        let ids = StatIds::of(plane);
        for line in plane.lines.iter().filter(|l| !is_derived_line(l)) {
            for event in &line.events {
                if ids.int(plane, event, ids.correlation_id).is_none_or(|c| c < 0) {
                    continue;
                }
                let mut start = line.event_start_ps(event);
                let mut end = start + i128::from(event.duration_ps.max(0));
                let step = if by_time {
                    steps
                        .steps
                        .iter()
                        .position(|s| s.start_ps <= start && start < s.start_ps + i128::from(s.duration_ps))
                } else {
                    ids.int(plane, event, ids.group_id).and_then(|g| by_group.get(&g).copied())
                };
                let Some(step) = step else { continue };
                let Some(acc) = accs.get_mut(step) else {
                    continue;
                };
                if by_time {
                    if let Some(s) = steps.steps.get(step) {
                        start = start.max(s.start_ps);
                        end = end.min(s.start_ps + i128::from(s.duration_ps));
                    }
                }
                let name = plane.event_name(event);
                let shapes = ids.str(plane, event, ids.shape).unwrap_or("");
                let class = classify_gpu_event(name, shapes);
                acc.per_gpu.entry(gpu).or_default().push(Interval { start, end, class });
                let is_kernel = ids.str(plane, event, ids.kernel_details).is_some_and(|d| !d.is_empty());
                let dur_ns = (event.duration_ps.max(0) / 1000).unsigned_abs();
                if is_kernel && dur_ns > 0 {
                    acc.kernel_count += 1;
                    acc.kernel_ns = acc.kernel_ns.saturating_add(dur_ns);
                }
            }
        }
    }

    steps
        .steps
        .iter()
        .zip(accs)
        .map(|(step, acc)| {
            let mut by_class = [0i128; CLASS_COUNT];
            for intervals in acc.per_gpu.values() {
                for (total, t) in by_class.iter_mut().zip(non_overlapped(intervals)) {
                    *total += t;
                }
            }
            let us = |c: Class| by_class[c as usize] as f64 / 1e6;
            let c16 = us(Class::Compute16);
            let c32 = us(Class::Compute32);
            StepKernelBreakdown {
                step_num: step.step_num,
                start_ps: step.start_ps,
                duration_ps: step.duration_ps,
                gpu_count: acc.per_gpu.len(),
                kernel_count: acc.kernel_count,
                kernel_time_us: ns_to_us(acc.kernel_ns),
                compute_16bit_us: c16,
                compute_32bit_us: c32,
                host_to_device_us: us(Class::HostToDevice),
                device_to_host_us: us(Class::DeviceToHost),
                device_to_device_us: us(Class::DeviceToDevice),
                collectives_us: us(Class::Collectives),
                compute_16bit_percent: if c16 + c32 > 0.0 { 100.0 * c16 / (c16 + c32) } else { 0.0 },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_launch_params() {
        let p = parse_kernel_launch_params(
            "regs:32 static_shared:128\ndynamic_shared:16384 grid:2,3,4 block:32,1,1 occ_pct:25.5",
        );
        assert_eq!(p.regs, 32);
        assert_eq!(p.static_shmem, 128);
        assert_eq!(p.dynamic_shmem, 16384);
        assert_eq!(p.grid, [2, 3, 4]);
        assert_eq!(p.block, [32, 1, 1]);
        assert!((p.occupancy - 25.5).abs() < 1e-12);
        // Legacy `shm:` and malformed tokens are ignored; dims default to 1.
        let q = parse_kernel_launch_params("regs:16 shm:99 grid:1,2 block:x,1,1 occ_pct=3");
        assert_eq!((q.regs, q.static_shmem, q.dynamic_shmem), (16, 0, 0));
        assert_eq!((q.grid, q.block), ([1, 1, 1], [1, 1, 1]));
        assert_eq!(q.occupancy, 0.0);
    }

    #[test]
    fn tensor_core_rules() {
        assert!(is_kernel_using_tensor_core("volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_tn"));
        assert!(!is_kernel_using_tensor_core("void Eigen::internal::EigenMetaKernel"));
        // Ampere and Hopper (XProf says false for all of these).
        for tc in [
            "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",
            "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_TNN",
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
            "sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc",
            "cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_bf16_bf16_128x128x64_1x1x1_0_tnn_align8",
            "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0",
            "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>",
            "fmha_cutlassF_bf16_aligned_64x64_rf_sm80",
            "gemm_fusion_dot_53",
            "triton_tem_fused_mm_4",
        ] {
            assert!(is_kernel_using_tensor_core(tc), "{tc}");
        }
        for cuda_cores in
            ["volta_sgemm_128x64_nn", "loop_convert_fusion_15", "triton_poi_fused_add_0", "fusion_583", "Memset 0"]
        {
            assert!(!is_kernel_using_tensor_core(cuda_cores), "{cuda_cores}");
        }
        assert!(is_op_tensor_core_eligible("model/dense/MatMul"));
        assert!(is_op_tensor_core_eligible("model/conv/Conv2D"));
        assert!(is_op_tensor_core_eligible("a/BatchMatMulV2"));
        assert!(!is_op_tensor_core_eligible("MatMul"));
        assert!(is_einsum_tensor_core_eligible("ab,bc->ac"));
        assert!(!is_einsum_tensor_core_eligible("ab->ba"));
        assert!(!is_einsum_tensor_core_eligible(""));
    }

    #[test]
    fn tf_op_names() {
        assert_eq!(tf_op_name("model/dense/MatMul:MatMul"), "model/dense/MatMul");
        assert_eq!(tf_op_name("jit(f)/dot_general:dot_general"), "jit(f)/dot_general");
        assert_eq!(tf_op_name("a/b:"), "a/b");
        assert_eq!(tf_op_name("Iterator::Batch"), "Iterator::Batch");
        assert_eq!(tf_op_name("no colon"), "no colon");
        assert_eq!(tf_op_name("x y:Not A Type"), "x y:Not A Type");
    }

    #[test]
    fn classes_and_overlap() {
        assert_eq!(classify_gpu_event("MemcpyH2D", ""), Class::HostToDevice);
        assert_eq!(classify_gpu_event("memcpyDToH", ""), Class::DeviceToHost);
        assert_eq!(classify_gpu_event("MemcpyP2P", ""), Class::DeviceToDevice);
        assert_eq!(classify_gpu_event("ncclAllReduceKernel", ""), Class::Collectives);
        assert_eq!(classify_gpu_event("k<half>", ""), Class::Compute16);
        assert_eq!(classify_gpu_event("k<half>", "(float[2])"), Class::Compute32);
        assert_eq!(classify_gpu_event("k", "(half[2])"), Class::Compute16);
        let t = non_overlapped(&[
            Interval { start: 0, end: 10, class: Class::HostToDevice },
            Interval { start: 5, end: 8, class: Class::Compute32 },
            Interval { start: 20, end: 25, class: Class::Compute16 },
            Interval { start: 22, end: 30, class: Class::Compute32 },
        ]);
        assert_eq!(t[Class::HostToDevice as usize], 7);
        assert_eq!(t[Class::Compute32 as usize], 3 + 5);
        assert_eq!(t[Class::Compute16 as usize], 5);
    }
}
