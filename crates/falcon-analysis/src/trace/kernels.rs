//! The kernel and op view of a GPU trace whose events say how they were launched (PyTorch profiler traces:
//! [`crate::timeline::Launch`]): the kernel table, the framework ops that launched the kernels, kernel type
//! shares, launch statistics and the launch-bound call.
//!
//! # Definitions
//!
//! - **Kernel rows** are [`KernelStat`]s, XProf's `kernel_stats` shape: one row per (name, grid, block,
//!   registers, shared memory, launching op), over every GPU device event of the trace that is a kernel
//!   (memcpy and memset events are not kernels). Tensor-core use is decided by the name, with the rules of
//!   [`crate::gpu_kernels::is_kernel_using_tensor_core`] (XProf's patterns and the Hopper ones: `nvjet_sm90`,
//!   `sm90_xmma`, cuDNN `sdpa … wgmma`, CUTLASS, Triton GEMM templates). Times in µs.
//! - **The launching op** of a device event is the innermost host event running on the launching thread at
//!   the start of its launch call, CUDA runtime and driver calls (`cuda…`, `cu…`) left out: with PyTorch this
//!   is the `aten::` op whose `External id` the kernel carries (`aten::mm`, `aten::copy_`). Its **scope** is
//!   the outermost host event around the launch that does not wrap a whole step (so not `ProfilerStep#N`, not
//!   the profiler's own span): the user's `record_function` ranges, `Optimizer.step#…`, autograd's
//!   `evaluate_function: …`, or the top-level `aten::` op itself.
//! - **Framework ops** ([`FrameworkOpRow`]): per launching op (and per scope), the kernels it launched and
//!   their device time, beside the op's host time — the summed durations of the host events of that name
//!   (inclusive of what they call), over the whole trace.
//! - **Kernel types** ([`KernelTypeRow`]): the device time of kernels (compute), communication kernels
//!   (NCCL), memcpy and memset events, as shares of their sum.
//! - **Launch statistics** ([`LaunchStats`]), over the steps: kernels and all device launches a step, the
//!   kernels' median and mean duration, the launch calls' mean duration, the launch delay (device start minus
//!   the launch call's start: mean, median, p90), the host's time per launch (step time ÷ launches a step)
//!   and the share of kernels shorter than the call that launched them.
//! - **Launch-bound**: the device waits on the host for at least 20 % of the steps
//!   ([`super::host`]'s threshold, by the launch rule of [`super::launch`]) *and* the host spends more time
//!   per launch than the median kernel runs — the host cannot issue kernels as fast as the device finishes
//!   them. What to try: fewer, larger kernels (`torch.compile`), CUDA graphs (`torch.compile(mode=
//!   "reduce-overhead")`, `torch.cuda.graphs`), a larger batch per step. Host-bound with long kernels is not
//!   launch-bound: the host is busy elsewhere (input, Python between launches) — the gaps say where.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::host::{innermost_segments, StepSpans};
use crate::gpu_kernels::{is_kernel_using_tensor_core, is_op_tensor_core_eligible, KernelStat};
use crate::timeline::{Device, DeviceKind, EventClass, Timeline};

/// Device time and host time of one framework op (or scope).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct FrameworkOpRow {
    pub name: String,
    /// Device events it launched (kernels, copies, memsets).
    pub launches: u64,
    /// Their device time, µs.
    pub device_time_us: f64,
    /// `device_time_us` over all device time of launches with a known op.
    pub device_share: f64,
    /// Host events of this name over the trace.
    pub host_calls: u64,
    /// Their summed duration, µs (inclusive of what they call).
    pub host_time_us: f64,
}

/// One kind of device work and its share.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct KernelTypeRow {
    /// `compute`, `communication`, `memcpy` or `memset`.
    pub kind: String,
    pub count: u64,
    pub time_us: f64,
    /// `time_us` over the sum of all kinds' times.
    pub share: f64,
}

/// Mean, median and 90th percentile of a sample, µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Spread {
    pub mean: f64,
    pub median: f64,
    pub p90: f64,
}

impl Spread {
    fn of(mut xs: Vec<f64>) -> Option<Spread> {
        if xs.is_empty() {
            return None;
        }
        xs.sort_by(f64::total_cmp);
        let q = |p: f64| {
            let pos = p * (xs.len() - 1) as f64;
            let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
            xs[lo] + (xs[hi] - xs[lo]) * (pos - lo as f64)
        };
        Some(Spread { mean: xs.iter().sum::<f64>() / xs.len() as f64, median: q(0.5), p90: q(0.9) })
    }
}

/// Launch statistics over the steps (see the module doc).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct LaunchStats {
    pub steps: usize,
    /// Kernels a step (memcpy and memset events left out), mean over steps.
    pub kernels_per_step: f64,
    /// Every device launch a step (kernels, memcpy, memset), mean over steps.
    pub launches_per_step: f64,
    /// Kernel durations, µs.
    pub kernel_us: Spread,
    /// Durations of the launch calls, µs.
    pub launch_call_us: Spread,
    /// Device start minus the launch call's start, µs.
    pub launch_delay_us: Spread,
    /// Step time ÷ launches a step, µs: how often the host issued work.
    pub host_us_per_launch: f64,
    /// Kernels that ran shorter than the call that launched them, 0..1.
    pub kernels_shorter_than_launch: f64,
    /// The share of the steps the device waits on the host (the trace breakdown's `host_wait`), when known.
    pub host_wait_fraction: Option<f64>,
    /// The call (see the module doc).
    pub launch_bound: bool,
    /// Why, with the numbers, and what to try — one line.
    pub summary: String,
}

/// The kernel and op view of a trace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct KernelView {
    pub kernels: Vec<KernelStat>,
    /// By launching op, most device time first.
    pub ops: Vec<FrameworkOpRow>,
    /// By scope (outermost host range around the launch), most device time first.
    pub scopes: Vec<FrameworkOpRow>,
    pub kernel_types: Vec<KernelTypeRow>,
    pub launch: Option<LaunchStats>,
}

/// Whether a host event name is a CUDA runtime or driver call (`cudaLaunchKernel`, `cuLaunchKernelEx`).
pub fn is_cuda_call(name: &str) -> bool {
    let rest = name.strip_prefix("cuda").or_else(|| name.strip_prefix("cu"));
    rest.and_then(|r| r.chars().next()).is_some_and(|c| c.is_ascii_uppercase())
}

/// Where on the host each device event was launched from: (op, scope) host event names, per event of `dev`.
fn launching_ops(tl: &Timeline, dev: &Device, spans: &StepSpans) -> Vec<(Option<u32>, Option<u32>)> {
    // Per thread: innermost segments of the non-CUDA-call events, and the top-level non-wrapper events.
    // (start, end, event index) lists: innermost segments, and top-level ranges.
    type Ranges = Vec<(i64, i64, usize)>;
    let mut per_thread: HashMap<u32, (Ranges, Ranges)> = HashMap::new();
    let wanted: std::collections::BTreeSet<u32> = dev.launches.iter().filter_map(|l| l.launch_thread).collect();
    for t in wanted {
        let Some(thread) = tl.host_threads.get(t as usize) else { continue };
        let keep: Vec<usize> = (0..thread.events.len())
            .filter(|&i| thread.events[i].dur_ps > 0 && !is_cuda_call(tl.name(thread.events[i].name)))
            .collect();
        let events: Vec<crate::timeline::Event> = keep.iter().map(|&i| thread.events[i]).collect();
        let inner: Vec<(i64, i64, usize)> =
            innermost_segments(&events).into_iter().map(|(a, b, i)| (a, b, keep[i])).collect();
        let mut order: Vec<usize> = keep
            .iter()
            .copied()
            .filter(|&i| {
                let e = &thread.events[i];
                !spans.encloses_step(e.start_ps, e.end_ps())
            })
            .collect();
        order.sort_by_key(|&i| (thread.events[i].start_ps, std::cmp::Reverse(thread.events[i].dur_ps)));
        let mut top: Vec<(i64, i64, usize)> = Vec::new();
        for i in order {
            let e = &thread.events[i];
            if top.last().is_none_or(|&(_, end, _)| e.start_ps >= end) {
                top.push((e.start_ps, e.end_ps(), i));
            }
        }
        per_thread.insert(t, (inner, top));
    }
    let find = |list: &[(i64, i64, usize)], t: i64| -> Option<usize> {
        let i = list.partition_point(|&(a, _, _)| a <= t);
        let &(a, b, idx) = list.get(i.checked_sub(1)?)?;
        (a <= t && t < b).then_some(idx)
    };
    dev.launches
        .iter()
        .map(|l| {
            let (Some(t), Some(at)) = (l.launch_thread, l.launch_ps) else { return (None, None) };
            let Some((inner, top)) = per_thread.get(&t) else { return (None, None) };
            let events = &tl.host_threads[t as usize].events;
            let op = find(inner, at).map(|i| events[i].name);
            let scope = find(top, at).map(|i| events[i].name).or(op);
            (op, scope)
        })
        .collect()
}

fn is_memset(name: &str) -> bool {
    name.to_ascii_lowercase().contains("memset")
}

/// The kernel and op view of the GPU devices of `tl` that record launches, over the step `windows` of the
/// first such device (sorted, disjoint) — empty when none does. `host_wait_fraction` is the trace
/// breakdown's host wait over the steps.
pub fn kernel_view(tl: &Timeline, windows: &[(i64, i64)], host_wait_fraction: Option<f64>) -> KernelView {
    let devices: Vec<&Device> = tl
        .devices
        .iter()
        .filter(|d| d.kind == DeviceKind::Gpu && !d.launches.is_empty() && d.launches.len() == d.events.len())
        .collect();
    if devices.is_empty() {
        return KernelView::default();
    }
    let spans = StepSpans::new(windows);
    // Kernel rows keyed as XProf groups them.
    type Key = (String, [u32; 3], [u32; 3], u32, u32, String);
    let mut rows: BTreeMap<Key, (u64, i64, i64, i64, f64)> = BTreeMap::new();
    let mut by_op: HashMap<u32, (u64, i64)> = HashMap::new();
    let mut by_scope: HashMap<u32, (u64, i64)> = HashMap::new();
    let mut types: BTreeMap<&'static str, (u64, i64)> = BTreeMap::new();
    let mut kernel_durations: Vec<f64> = Vec::new();
    let mut call_durations: Vec<f64> = Vec::new();
    let mut delays: Vec<f64> = Vec::new();
    let (mut launches_in_steps, mut kernels_in_steps, mut shorter) = (0u64, 0u64, 0u64);
    let in_steps = |t: i64| {
        let i = windows.partition_point(|&(a, _)| a <= t);
        i > 0 && t < windows[i - 1].1
    };
    for dev in &devices {
        let ops = launching_ops(tl, dev, &spans);
        for (i, e) in dev.events.iter().enumerate() {
            let l = &dev.launches[i];
            let name = tl.name(e.name);
            let kind = match e.class {
                EventClass::MemCopy if is_memset(name) => "memset",
                EventClass::MemCopy | EventClass::InfeedOutfeed => "memcpy",
                EventClass::Collective(_) => "communication",
                _ => "compute",
            };
            let t = types.entry(kind).or_default();
            t.0 += 1;
            t.1 += e.dur_ps;
            let (op, scope) = ops[i];
            if let Some(op) = op {
                let r = by_op.entry(op).or_default();
                r.0 += 1;
                r.1 += e.dur_ps;
            }
            if let Some(scope) = scope {
                let r = by_scope.entry(scope).or_default();
                r.0 += 1;
                r.1 += e.dur_ps;
            }
            let is_kernel = matches!(kind, "compute" | "communication");
            if is_kernel {
                let op_name = op.map(|o| tl.name(o).to_string()).unwrap_or_default();
                let key = (name.to_string(), l.grid, l.block, l.registers_per_thread, l.shared_memory_bytes, op_name);
                let r = rows.entry(key).or_insert((0, 0, i64::MAX, i64::MIN, 0.0));
                r.0 += 1;
                r.1 += e.dur_ps;
                r.2 = r.2.min(e.dur_ps);
                r.3 = r.3.max(e.dur_ps);
                if r.0 == 1 {
                    r.4 = f64::from(l.occupancy_percent.unwrap_or(0.0));
                }
            }
            if in_steps(e.start_ps) {
                launches_in_steps += 1;
                if let Some(at) = l.launch_ps {
                    delays.push((e.start_ps - at) as f64 / 1e6);
                    call_durations.push(l.launch_dur_ps as f64 / 1e6);
                    if is_kernel && e.dur_ps < l.launch_dur_ps {
                        shorter += 1;
                    }
                }
                if is_kernel {
                    kernels_in_steps += 1;
                    kernel_durations.push(e.dur_ps as f64 / 1e6);
                }
            }
        }
    }
    let mut kernels: Vec<KernelStat> = rows
        .into_iter()
        .map(|((name, grid, block, regs, shmem, op_name), (n, total, min, max, occ))| {
            let uses_tc = is_kernel_using_tensor_core(&name);
            KernelStat {
                is_op_tensor_core_eligible: uses_tc
                    || is_op_tensor_core_eligible(&op_name)
                    || is_torch_matmul(&op_name),
                is_kernel_using_tensor_core: uses_tc,
                name,
                op_name,
                occurrences: n,
                total_time_us: total as f64 / 1e6,
                avg_time_us: total as f64 / 1e6 / n as f64,
                min_time_us: min as f64 / 1e6,
                max_time_us: max as f64 / 1e6,
                registers_per_thread: regs,
                static_shmem_bytes: shmem,
                dynamic_shmem_bytes: 0,
                block_dim: block,
                grid_dim: grid,
                occupancy_percent: occ,
            }
        })
        .collect();
    kernels.sort_by(|a, b| b.total_time_us.total_cmp(&a.total_time_us).then_with(|| a.name.cmp(&b.name)));
    let host_time = host_time_by_name(tl);
    let op_rows = |m: HashMap<u32, (u64, i64)>| -> Vec<FrameworkOpRow> {
        let total: i64 = m.values().map(|v| v.1).sum();
        let mut v: Vec<FrameworkOpRow> = m
            .into_iter()
            .map(|(name, (n, ps))| {
                let (calls, host_ps) = host_time.get(&name).copied().unwrap_or_default();
                FrameworkOpRow {
                    name: tl.name(name).to_string(),
                    launches: n,
                    device_time_us: ps as f64 / 1e6,
                    device_share: if total > 0 { ps as f64 / total as f64 } else { 0.0 },
                    host_calls: calls,
                    host_time_us: host_ps as f64 / 1e6,
                }
            })
            .collect();
        v.sort_by(|a, b| b.device_time_us.total_cmp(&a.device_time_us).then_with(|| a.name.cmp(&b.name)));
        v
    };
    let type_total: i64 = types.values().map(|t| t.1).sum();
    let kernel_types = ["compute", "communication", "memcpy", "memset"]
        .iter()
        .filter_map(|&k| types.get(k).map(|&(n, ps)| (k, n, ps)))
        .map(|(k, n, ps)| KernelTypeRow {
            kind: k.to_string(),
            count: n,
            time_us: ps as f64 / 1e6,
            share: if type_total > 0 { ps as f64 / type_total as f64 } else { 0.0 },
        })
        .collect();
    let steps = windows.len();
    // torch.compile's kernels are Triton's: such a step is compiled already, and what is left is CUDA graphs.
    let compiled = kernels.iter().any(|k| k.name.starts_with("triton_"));
    let launch = (steps > 0 && launches_in_steps > 0).then(|| {
        let step_us: f64 = windows.iter().map(|&(a, b)| (b - a) as f64 / 1e6).sum::<f64>() / steps as f64;
        let launches_per_step = launches_in_steps as f64 / steps as f64;
        let kernels_per_step = kernels_in_steps as f64 / steps as f64;
        let kernel_us = Spread::of(kernel_durations).unwrap_or_default();
        let host_us_per_launch = step_us / launches_per_step;
        let waits = host_wait_fraction.is_some_and(|f| f >= falcon_core::bound::HOST_BOUND_THRESHOLD);
        let launch_bound = waits && host_us_per_launch > kernel_us.median;
        let summary = launch_summary(
            LaunchCall { launch_bound, waits, compiled },
            host_wait_fraction,
            kernels_per_step,
            host_us_per_launch,
            &kernel_us,
        );
        LaunchStats {
            steps,
            kernels_per_step,
            launches_per_step,
            kernel_us,
            launch_call_us: Spread::of(call_durations).unwrap_or_default(),
            launch_delay_us: Spread::of(delays).unwrap_or_default(),
            host_us_per_launch,
            kernels_shorter_than_launch: if kernels_in_steps > 0 {
                shorter as f64 / kernels_in_steps as f64
            } else {
                0.0
            },
            host_wait_fraction,
            launch_bound,
            summary,
        }
    });
    KernelView { kernels, ops: op_rows(by_op), scopes: op_rows(by_scope), kernel_types, launch }
}

/// The facts [`launch_summary`] words: the call, whether the host waits, whether the step is compiled.
struct LaunchCall {
    launch_bound: bool,
    waits: bool,
    compiled: bool,
}

fn launch_summary(
    call: LaunchCall,
    host_wait: Option<f64>,
    kernels_per_step: f64,
    host_us_per_launch: f64,
    kernel_us: &Spread,
) -> String {
    let LaunchCall { launch_bound, waits, compiled } = call;
    let wait = host_wait.map_or("unknown".to_string(), |f| format!("{:.0}%", 100.0 * f));
    if launch_bound {
        format!(
            "launch-bound: the device waits on the host {wait} of the step, and the host issues a launch every \
             {host_us_per_launch:.1} µs while the median kernel runs {:.1} µs ({kernels_per_step:.0} kernels a \
             step): {}",
            kernel_us.median,
            if compiled {
                "the step is torch.compile'd already (Triton kernels): add CUDA graphs \
                 (torch.compile(mode=\"reduce-overhead\") or torch.cuda.CUDAGraph), or a larger batch per step"
            } else {
                "try CUDA graphs (torch.compile(mode=\"reduce-overhead\") or torch.cuda.CUDAGraph), torch.compile \
                 to fuse the small kernels, or a larger batch per step"
            }
        )
    } else if waits {
        format!(
            "host-bound but not by launches: the device waits on the host {wait} of the step although kernels \
             (median {:.1} µs) outlast the host's {host_us_per_launch:.1} µs per launch — the host is busy elsewhere \
             (input pipeline, Python between steps, syncs): see the gaps",
            kernel_us.median
        )
    } else {
        format!(
            "not launch-bound: the device waits on the host {wait} of the step ({kernels_per_step:.0} kernels a step, \
             median {:.1} µs, a launch every {host_us_per_launch:.1} µs)",
            kernel_us.median
        )
    }
}

/// PyTorch's matmul-family ops (eligible for tensor cores).
fn is_torch_matmul(op: &str) -> bool {
    ["aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear", "aten::_scaled_mm"]
        .contains(&op)
        || op.contains("attention")
        || op.contains("conv")
}

/// Per host event name: (events, summed duration ps) over every host thread.
fn host_time_by_name(tl: &Timeline) -> HashMap<u32, (u64, i64)> {
    let mut out: HashMap<u32, (u64, i64)> = HashMap::new();
    for t in &tl.host_threads {
        for e in &t.events {
            let r = out.entry(e.name).or_default();
            r.0 += 1;
            r.1 += e.dur_ps.max(0);
        }
    }
    out
}

/// The family a kernel belongs to, for comparing two traces' device time by kind: `gemm`, `attention`,
/// `triton fused`, `xla fused` (XLA:GPU's fusion kernels, `loop_*_fusion`, `input_reduce_fusion`, …),
/// `elementwise`, `reduction`, `normalization`, `optimizer`, `copy`, `memcpy`, `memset`, `communication`, `other`.
pub fn kernel_family(name: &str, class: EventClass) -> &'static str {
    let l = name.to_ascii_lowercase();
    let has = |s: &str| l.contains(s);
    match class {
        EventClass::MemCopy if has("memset") => return "memset",
        EventClass::MemCopy | EventClass::InfeedOutfeed => return "memcpy",
        EventClass::Collective(_) => return "communication",
        _ => {}
    }
    if has("sdpa") || has("flash") || has("fmha") || has("attention") {
        "attention"
    } else if l.starts_with("triton_") && (has("_mm") || has("matmul") || has("gemm"))
        || is_kernel_using_tensor_core(name)
        || has("gemm")
        || has("nvjet")
        || has("cutlass")
    {
        "gemm"
    } else if l.starts_with("triton_") {
        "triton fused"
    } else if has("fusion") {
        "xla fused"
    } else if has("multi_tensor_apply") || has("adam") {
        "optimizer"
    } else if has("layer_norm") || has("layernorm") || has("rms_norm") || has("batch_norm") || has("gammabeta") {
        "normalization"
    } else if has("reduce_kernel") || has("softmax") || has("reduction") {
        "reduction"
    } else if has("copy_kernel") || has("bfloat16_copy") || has("direct_copy") {
        "copy"
    } else if has("elementwise") || has("dropout") || has("fill") {
        "elementwise"
    } else {
        "other"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_calls_are_told_from_framework_ops() {
        for n in ["cudaLaunchKernel", "cuLaunchKernelEx", "cudaMemcpyAsync", "cudaGraphLaunch", "cuMemcpyHtoDAsync"] {
            assert!(is_cuda_call(n), "{n}");
        }
        for n in ["aten::mm", "cudnn_convolution", "cuda", "cub::DeviceReduce", "curand"] {
            assert!(!is_cuda_call(n), "{n}");
        }
    }

    #[test]
    fn spreads_and_families() {
        let s = Spread::of(vec![1.0, 2.0, 3.0, 4.0, 10.0]).unwrap();
        assert_eq!((s.mean, s.median), (4.0, 3.0));
        assert!((s.p90 - 7.6).abs() < 1e-9);
        assert!(Spread::of(Vec::new()).is_none());
        assert_eq!(kernel_family("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", EventClass::Compute), "gemm");
        assert_eq!(
            kernel_family("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16", EventClass::Compute),
            "attention"
        );
        assert_eq!(kernel_family("triton_poi_fused_native_dropout_relu_view_18", EventClass::Compute), "triton fused");
        assert_eq!(kernel_family("loop_multiply_fusion_3", EventClass::Compute), "xla fused");
        assert_eq!(kernel_family("input_reduce_fusion_12", EventClass::Compute), "xla fused");
        assert_eq!(kernel_family("Memset (Device)", EventClass::MemCopy), "memset");
        assert_eq!(kernel_family("Memcpy HtoD (Pinned -> Device)", EventClass::MemCopy), "memcpy");
    }
}
