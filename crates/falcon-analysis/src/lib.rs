//! Data analysis: structured results from experiment artifacts.
//!
//! Owns profile analysis (overview/MFU, op profile, HLO stats, roofline, memory, steps), trace analysis,
//! A/B compare, accuracy alignment and kernel-bench analysis, each returning report structs. It never manages
//! experiment state (that is `falcon-exp`) and never renders (that is the interface). Filled by the analysis
//! issues; the foundation issue places it in the workspace with its allowed dependencies.

pub mod accuracy;
pub mod compare;
pub mod cpu_ops;
pub mod device;
pub mod error;
pub mod hlo_stats;
pub mod input;
pub mod kernel_bench;
pub mod kernels;
pub mod memory;
pub mod op_metrics;
pub mod op_profile;
pub mod overview;
pub mod profile;
pub mod roofline;
pub mod service;
pub mod steps;
pub mod tensors;
pub mod timeline;
pub mod trace;
pub mod trace_export;
