//! The crate's integration tests: one binary (linking it once is most of what a test binary costs), a module
//! per file.

mod accuracy_align;
mod accuracy_readers;
mod big_cpu_overview;
mod compare;
mod cpu_costs;
mod cpu_ops;
mod fuzz_regressions;
mod gpu_hlo_costs;
mod hostile_inputs;
mod kernel_bench;
mod multihost;
mod pytorch_traces;
mod shards;
mod steps;
mod tensors;
mod tfevents;
mod time_breakdown;
mod timeline_readers;
mod trace_analysis;
mod trace_export;
mod xprof_device;
mod xprof_kernels;
mod xprof_memory;
mod xprof_op_profile;
mod xprof_tpu;
