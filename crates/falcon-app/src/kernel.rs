//! Kernel-bench use cases: analyse a results file (JSONL or CSV, a directory holding one, or an experiment's
//! `kernel_bench` artifact) and compare two.

use crate::{ctx::Ctx, AppError, Result};
use falcon_core::artifact::ArtifactKind;
use falcon_core::ErrorKind;
use std::path::{Path, PathBuf};

pub use falcon_analysis::kernel_bench::{KernelComparison, KernelOptions, KernelReport, KernelResults};

/// What a kernel-bench input may be, for hints.
const KERNEL_INPUT_HINT: &str =
    "give a kernel_bench*.jsonl / .csv results file, a directory holding one, or an experiment id (e-12)";

/// Reads a results file or directory, with hints that speak of kernel-bench results.
fn read(path: &Path) -> Result<KernelResults> {
    crate::files::check_input(path)?;
    falcon_analysis::kernel_bench::read_results(path).map_err(|e| AppError::with_input_hint(e, KERNEL_INPUT_HINT))
}

/// Results read from an input, and a note when an experiment had several results files.
#[derive(Debug, Clone)]
pub struct LoadedResults {
    pub results: KernelResults,
    pub note: Option<String>,
}

pub(crate) async fn analyze_kernels(
    cx: &Ctx,
    input: &str,
    options: &KernelOptions,
) -> Result<(KernelReport, Vec<String>)> {
    if !(options.p.is_finite() && options.p >= 0.0) {
        return Err(AppError::usage(format!("p must be a number ≥ 0, not {}", options.p)));
    }
    for (flag, value) in [("peak-tflops", options.peak_tflops), ("peak-gbs", options.peak_gbs)] {
        if let Some(v) = value {
            if !(v.is_finite() && v > 0.0) {
                return Err(AppError::usage(format!("{flag} must be a positive number, not {v}")));
            }
        }
    }
    let loaded = load_kernel_results(cx, input).await?;
    Ok((falcon_analysis::kernel_bench::analyze(&loaded.results, options), loaded.note.into_iter().collect()))
}

pub(crate) async fn compare_kernels(cx: &Ctx, base: &str, new: &str) -> Result<(KernelComparison, Vec<String>)> {
    let base = load_kernel_results(cx, base).await?;
    let new = load_kernel_results(cx, new).await?;
    let notes = base.note.into_iter().chain(new.note).collect();
    Ok((falcon_analysis::kernel_bench::compare(&base.results, &new.results), notes))
}

/// A local file or directory as is; else an experiment id (`e-12`), whose newest `kernel_bench` results
/// file is fetched into the cache (the stores are opened only then).
async fn load_kernel_results(cx: &Ctx, input: &str) -> Result<LoadedResults> {
    if Path::new(input).exists() {
        return Ok(LoadedResults { results: read(Path::new(input))?, note: None });
    }
    let Some(id) = crate::profiles::experiment_id(input) else {
        return Err(AppError::new(ErrorKind::NotFound, format!("{input}: no such file, directory or experiment"))
            .with_hint(
                "give a kernel_bench*.jsonl / .csv results file, a directory holding one, or an experiment id (e-12)",
            ));
    };
    let paths = cx.analysis().await?.fetch_artifacts(id, ArtifactKind::KernelBench).await?;
    let Some(path) = newest(&paths) else {
        return Err(AppError::new(
            ErrorKind::NotFound,
            format!("{id} has no kernel-bench results (.jsonl / .csv) among its artifacts"),
        ));
    };
    let note = (paths.len() > 1)
        .then(|| format!("{id}: {} kernel_bench files; using the newest, {}", paths.len(), path.display()));
    Ok(LoadedResults { results: read(&path)?, note })
}

/// The newest results file among an experiment's `kernel_bench` artifacts: the last by name (keys sort by
/// the path the workload wrote; numbered or timestamped names sort oldest first).
fn newest(paths: &[PathBuf]) -> Option<PathBuf> {
    paths
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("jsonl") || e.eq_ignore_ascii_case("csv")))
        .max_by(|a, b| a.file_name().cmp(&b.file_name()).then_with(|| a.cmp(b)))
        .cloned()
}
