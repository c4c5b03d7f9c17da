//! Data analysis: structured results from experiment artifacts.
//!
//! Owns profile analysis (`profile/`: the XProf tools overview/MFU, op profile, HLO stats, roofline, memory,
//! GPU kernels, steps, XLA:CPU ops, trace export), trace analysis (`trace/`), A/B compare (`compare/`),
//! accuracy alignment (`accuracy/`), tensor dumps (`tensors/`), kernel-bench analysis (`kernel_bench/`) and the
//! memory verdict over every memory series of an experiment (`leak/`) and goodput (`goodput/`: of the time an
//! experiment held its accelerators, the productive share and the badput by cause, from its attempts and step clock),
//! each returning report structs. It never manages experiment state (that is `falcon-exp`) and never renders
//! (that is `falcon-app`).
//!
//! # In detail
//!
//! - **Owns:** profile, trace, compare, accuracy, kernel-bench analysis, the memory verdict; report structs. The
//!   `service` feature (default) adds the analysis service over the stores; without it the crate is its parsers and
//!   analyses alone, as the fuzz targets build it. Profile tools, all in `src/profile/`: `planes` (plane and line
//!   names), `device` (planes, peaks), `op_metrics` (XProf OpMetricsDb), `hlo_stats`, `op_profile`, `roofline`,
//!   `overview`, `memory`, `kernels`, `steps`, `cpu_ops`, `trace_export`; `profile` runs them over a capture's hosts;
//!   `hlo/` (the programs' HloProtos in a capture: `proto` the prost messages, `metadata` opcode, fusion category,
//!   name scope, source line, `program` the graph, `cost` XProf's GPU cost model, `ops` each GPU op's
//!   category/FLOPs/bytes/text, `attribution` kernels inside XLA command buffers charged to their HLO ops),
//!   `op_metrics/` (XProf's op database: `planes.rs` per plane, `proto.rs` stat readers, `gpu_costs.rs` fills GPU ops from the HloProtos), `findings` (what a GPU engineer acts on: HBM-bound attention,
//!   GEMMs off tensor cores, f32 compute, time outside ops), `time_breakdown` (op time on XLA:CPU by category, name
//!   scope and source line beside the steps' wall time), `from_trace` (a profile report from a Chrome trace: kernels,
//!   framework ops, launches); `timeline/` (XSpace and Chrome traces into one `Timeline`; `Device.launches` beside
//!   its events: each kernel's stream, correlation, launch call and thread, grid/block); `trace/` (breakdown,
//!   overlap, gaps, host, steps; `launch` host wait by the launch — HTA's rule — per device and stream, gaps' causes;
//!   `kernels` the kernel table, launching ops and scopes, kernel kinds, launch statistics and the launch-bound call;
//!   `overhead` the profiler's overhead from traced against unprofiled step times); `compare` (A/B: `kernel_rows`
//!   kernels by name for traces; `matching` pairs ops by name, deduplicated name and a scored fingerprint —
//!   `signature`: opcode, shape and fused ops from the HloProtos, framework op, neighbourhood — pairs below
//!   confidence 0.8 are reported added/removed; op/category/roofline/memory deltas; step-time and MFU verdicts
//!   through `falcon_core::stats::compare`); `accuracy` (readers: `maxtext`, `megatron`, `tfevents`, `generic`,
//!   `read` (format detection); `align`: name map, step alignment, per-metric verdicts); `tensors`
//!   (npy/npz/safetensors dumps, per-tensor error metrics); `kernel_bench` (results format, analysis, compare);
//!   `leak` (the memory verdict: series from the profile's memory at step ends, logged memory metrics and the sampled
//!   RSS aligned to steps by the metrics' `time`; Theil–Sen growth after warm-up, leak when the interval is above 0,
//!   the growth reaches max(64 MiB, 5 % of the peak) and the second half keeps growing); `input` finds and validates
//!   files; `service` resolves experiment ids / `gs://` URIs into a local cache and keeps summary rows
//!   (`service/pending.rs`: the analyses the worker owes; `service/memory.rs`: the `memory` row, after the profile row it reads)
//! - **Must not:** manage experiment state; render (that is `falcon-app`)
//! - **Invariants:** results are serde structs; every tool's numbers are compared with XProf's output on real
//!   captures; one host's XSpace is in memory at a time

pub mod accuracy;
pub mod compare;
pub mod error;
pub mod goodput;
pub mod gpu_kernels;
pub mod input;
pub mod kernel_bench;
pub mod leak;
pub mod limits;
pub mod planes;
pub mod profile;
#[cfg(feature = "service")]
pub mod service;
pub mod tensors;
pub mod timeline;
pub mod trace;

// The profile tools keep their short paths (`falcon_analysis::device`, `falcon_analysis::memory`, …).
pub use profile::{
    cpu_ops, device, findings, hlo_stats, kernels, memory, op_metrics, op_profile, overview, roofline, steps,
    trace_export,
};
