//! Profile use cases: analyse an XProf capture (a `.xplane.pb`, a run directory, an experiment's profile or a
//! `gs://` / `s3://` URI), analyse its trace (or a Chrome / PyTorch trace), fetch it into the cache, export
//! a Chrome trace, and compare two captures (with the experiments' config diff when both are experiments).

use crate::{ctx::Ctx, AppError, Result};
use falcon_core::ids::ExperimentId;
use falcon_core::ErrorKind;
use std::path::{Path, PathBuf};

pub use falcon_analysis::compare::{CompareOptions, ProfileComparison};
pub use falcon_analysis::device::Hardware;
pub use falcon_analysis::profile::partial::{encode_shard, ShardHost, ShardPartial};
pub use falcon_analysis::profile::{AnalyzeOptions, HostProgress, ProfileReport, Tool};
pub use falcon_analysis::service::{ResolvedProfile, TraceRun};
pub use falcon_analysis::trace::{TraceAnalysis, TraceOptions};
pub use falcon_analysis::trace_export::TraceFileExport;

/// A selection of profile tools as every front end takes it (names, `all` for every one): the tools, empty for
/// all. An unknown name is a usage error naming the accepted ones.
pub fn parse_tools<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Vec<Tool>> {
    selection(names, &format!("{}, all", Tool::names()))
}

/// A selection of trace analyses as every front end takes it (names, `all` for every one): the analyses, empty for
/// all.
pub fn parse_trace_analyses<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Vec<TraceAnalysis>> {
    let accepted: Vec<&str> = TraceAnalysis::ALL.map(TraceAnalysis::as_str).into_iter().chain(["all"]).collect();
    selection(names, &accepted.join(", "))
}

fn selection<'a, T: std::str::FromStr + PartialEq>(
    names: impl IntoIterator<Item = &'a str>,
    accepted: &str,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    for name in names.into_iter().map(str::trim).filter(|n| !n.is_empty()) {
        if name.eq_ignore_ascii_case("all") {
            return Ok(Vec::new());
        }
        let v: T = name.parse().map_err(|_| AppError::usage(format!("`{name}`: one of {accepted}")))?;
        if !out.contains(&v) {
            out.push(v);
        }
    }
    Ok(out)
}

/// A profile comparison and, when both inputs were experiments, their config diff (A → B).
#[derive(Debug, Clone)]
pub struct ProfileCompareResult {
    pub comparison: ProfileComparison,
    pub config_diff: Option<Vec<crate::experiments::Change>>,
}

/// A trace export and how many hosts the input had.
#[derive(Debug, Clone)]
pub struct TraceExport {
    pub summary: TraceFileExport,
    pub hosts: usize,
}

/// The experiment an input names, as the analysis service reads it: `e-N` or digits, and not a path.
pub fn experiment_id(input: &str) -> Option<ExperimentId> {
    if Path::new(input).exists()
        || !(input.starts_with("e-") || (!input.is_empty() && input.chars().all(|c| c.is_ascii_digit())))
    {
        return None;
    }
    input.parse().ok()
}

pub(crate) async fn analyze_profile(
    cx: &Ctx,
    target: &str,
    host: Option<&str>,
    options: &AnalyzeOptions,
) -> Result<(ResolvedProfile, ProfileReport)> {
    for (flag, value) in [("model-flops", options.model_flops_per_step), ("peak-tflops", options.peak_tflops)] {
        if let Some(f) = value {
            if !(f.is_finite() && f > 0.0) {
                return Err(AppError::usage(format!("{flag} must be a positive number, not {f}")));
            }
        }
    }
    crate::files::check_input(Path::new(target))?;
    // An experiment's logged `model_flops` are read by the analysis itself (the worker's summary row and this
    // call give one answer): beside the capture's own count, MFU's FLOPs only when the capture has none.
    Ok(cx.analysis().await?.analyze(target, host, options).await?)
}

pub(crate) async fn analyze_trace(
    cx: &Ctx,
    target: &str,
    host: Option<&str>,
    options: &TraceOptions,
) -> Result<TraceRun> {
    if options.max_decompressed_bytes == Some(0) {
        return Err(AppError::usage(format!("{} must be at least 1 (MiB)", falcon_analysis::limits::FLAG)));
    }
    crate::files::check_input(Path::new(target))?;
    Ok(cx.analysis().await?.trace(target, host, options).await?)
}

pub(crate) async fn fetch_profile(cx: &Ctx, target: &str, host: Option<&str>) -> Result<ResolvedProfile> {
    crate::files::check_input(Path::new(target))?;
    Ok(cx.analysis().await?.resolve(target, host).await?)
}

pub(crate) async fn export_trace(
    cx: &Ctx,
    target: &str,
    output: &Path,
    host: Option<&str>,
    force: bool,
) -> Result<TraceExport> {
    crate::files::check_output_target(output, force)?;
    crate::files::check_input(Path::new(target))?;
    let resolved = cx.analysis().await?.resolve(target, host).await?;
    let Some(file) = resolved.files.first().cloned() else {
        return Err(AppError::new(ErrorKind::NotFound, format!("{target}: no profile")));
    };
    let output: PathBuf = output.to_path_buf();
    let summary = tokio::task::spawn_blocking(move || falcon_analysis::trace_export::export_host_trace(&file, &output))
        .await
        .map_err(|e| AppError::new(ErrorKind::Failure, format!("trace export task failed: {e}")))??;
    Ok(TraceExport { summary, hosts: resolved.files.len() })
}

pub(crate) async fn export_trace_gz(cx: &Ctx, id: ExperimentId) -> Result<Vec<u8>> {
    let dir = tempfile::tempdir()
        .map_err(|e| AppError::new(ErrorKind::Failure, format!("a temporary folder for the trace export: {e}")))?;
    let path = dir.path().join(format!("{id}.trace.json.gz"));
    export_trace(cx, &id.to_string(), &path, None, false).await?;
    tokio::fs::read(&path)
        .await
        .map_err(|e| AppError::new(ErrorKind::Failure, format!("reading the exported trace {}: {e}", path.display())))
}

pub(crate) async fn compare_profiles(
    cx: &Ctx,
    a: &str,
    b: &str,
    host: Option<&str>,
    options: &CompareOptions,
) -> Result<ProfileCompareResult> {
    crate::files::check_input(Path::new(a))?;
    crate::files::check_input(Path::new(b))?;
    let ids = experiment_id(a).zip(experiment_id(b));
    let comparison = cx.analysis().await?.compare(a, b, host, options).await?;
    let config_diff = match ids {
        Some((a, b)) => Some(crate::experiments::diff_experiments(cx, a, b).await?),
        None => None,
    };
    Ok(ProfileCompareResult { comparison, config_diff })
}
