//! Kernel-bench results: the file format, the per-row analysis (achieved TFLOP/s and GB/s, % of roofline,
//! speed-up over the reference variant, KernelBench's `fast_p`) and the comparison of two runs.
//!
//! **Format** (documented for users in `examples/kernel_bench/README.md`): JSONL, one object per
//! (kernel, variant, shape, dtype) measurement, or CSV with the same columns:
//!
//! | field | type | meaning |
//! |---|---|---|
//! | `kernel` | string, required | the problem (`matmul`) |
//! | `variant` | string, required | the implementation (`jnp_dot`, `fori_k128`) |
//! | `reference` | bool, default false | true on the baseline variant of its kernel + shape + dtype + hardware |
//! | `correct` | bool, optional | the workload's own check of this variant against the reference |
//! | `shape` | any JSON, optional | kept as JSON; rendered as a key (`k=256,m=256,n=256`, `256x256`) |
//! | `dtype` | string, optional | `fp32`, `bf16`, … |
//! | `hardware` | string, optional | accelerator type as in the catalog (`v5p-8`, `h100-80gb-8`) or `cpu` |
//! | `times_ms` | array of numbers ≥ 0, required, non-empty | timing samples, milliseconds per call |
//! | `flops` | number ≥ 0, optional | floating-point operations per call |
//! | `bytes` | number ≥ 0, optional | bytes moved to/from memory per call |
//!
//! Other fields are ignored. Two rows with the same (kernel, variant, shape, dtype, hardware), or two
//! reference rows in one (kernel, shape, dtype, hardware) group, are an error. Errors name `file:line` and the
//! field; the readers never panic.
//!
//! **Analysis** ([`analyze`]): per row n, median, p25/p75 (IQR), min, max, mean of `times_ms`
//! (Hyndman–Fan type 7 percentiles, as NumPy); achieved TFLOP/s = flops / median_s / 1e12, GB/s =
//! bytes / median_s / 1e9; % of roofline = achieved FLOP/s / min(peak FLOP/s, intensity × peak B/s) with
//! intensity = flops / bytes, per chip, where peaks are known (the catalog by `hardware`, or the caller's
//! overrides); speed-up = reference median / variant median within the (kernel, shape, dtype, hardware)
//! group; `fast_p` = (correct non-reference rows with speed-up > p) / (all non-reference rows).
//!
//! **Comparison** ([`compare`]): rows matched by (kernel, variant, shape, dtype, hardware); each pair gets
//! the shared verdict ([`falcon_core::stats::compare`], metric `time_ms`, lower is better).

mod analyze;
mod compare;
mod format;

pub use analyze::{analyze, FastP, KernelOptions, KernelReport, KernelRow, PeakSource, RooflineBound};
pub use compare::{compare, compare_with, KernelComparison, KernelDelta, RowKey};
pub use format::{parse_csv, parse_jsonl, read_results, shape_key, KernelResult, KernelResults, ResultsFormat};
