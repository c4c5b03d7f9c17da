//! Data analysis: structured results from experiment artifacts.
//!
//! Owns profile analysis (`profile/`: the XProf tools overview/MFU, op profile, HLO stats, roofline, memory,
//! GPU kernels, steps, XLA:CPU ops, trace export), trace analysis (`trace/`), A/B compare (`compare/`),
//! accuracy alignment (`accuracy/`), tensor dumps (`tensors/`), kernel-bench analysis (`kernel_bench/`) and the
//! memory verdict over every memory series of an experiment (`leak/`),
//! each returning report structs. It never manages experiment state (that is `falcon-exp`) and never renders
//! (that is `falcon-app`).

pub mod accuracy;
pub mod compare;
pub mod error;
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
