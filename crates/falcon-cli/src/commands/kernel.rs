//! `falcon kernel analyze|compare`: kernel-bench results (a JSONL/CSV file, a directory holding one, or an
//! experiment's `kernel_bench` artifact) analysed or compared with `falcon_analysis::kernel_bench`, rendered by
//! [`falcon_app::render::kernel`].

use crate::cli::{GlobalArgs, KernelAnalyzeArgs, KernelCommand, KernelCompareArgs, ReportFormat};
use crate::output::{print_stdout, CliFailure};
use crate::settings;
use falcon_analysis::kernel_bench::{self, KernelOptions, KernelResults};
use falcon_analysis::service::Analysis;
use falcon_app::render::kernel as render;
use falcon_core::artifact::ArtifactKind;
use falcon_core::ids::ExperimentId;
use falcon_core::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, command: &KernelCommand) -> anyhow::Result<ExitCode> {
    let mut loader = Loader { global, analysis: None };
    let result = match command {
        KernelCommand::Analyze(args) => analyze(global, &mut loader, args).await,
        KernelCommand::Compare(args) => compare(global, &mut loader, args).await,
    };
    if let Some(analysis) = &loader.analysis {
        analysis.close().await;
    }
    result
}

async fn analyze(global: &GlobalArgs, loader: &mut Loader<'_>, args: &KernelAnalyzeArgs) -> anyhow::Result<ExitCode> {
    if !(args.p.is_finite() && args.p >= 0.0) {
        return Err(CliFailure::new(ErrorKind::Usage, format!("--p must be a number ≥ 0, not {}", args.p)).into());
    }
    for (flag, value) in [("--peak-tflops", args.peak_tflops), ("--peak-gbs", args.peak_gbs)] {
        if let Some(v) = value {
            if !(v.is_finite() && v > 0.0) {
                return Err(
                    CliFailure::new(ErrorKind::Usage, format!("{flag} must be a positive number, not {v}")).into()
                );
            }
        }
    }
    let format = format_of(global, args.format);
    let results = loader.load(&args.results, format).await?;
    let options = KernelOptions { p: args.p, peak_tflops: args.peak_tflops, peak_gbs: args.peak_gbs };
    let report = kernel_bench::analyze(&results, &options);
    let text = render::render_report(&report, format.into())?;
    print_stdout(text.trim_end_matches('\n'))?;
    Ok(ExitCode::SUCCESS)
}

async fn compare(global: &GlobalArgs, loader: &mut Loader<'_>, args: &KernelCompareArgs) -> anyhow::Result<ExitCode> {
    let format = format_of(global, args.format);
    let base = loader.load(&args.base, format).await?;
    let new = loader.load(&args.new, format).await?;
    let comparison = kernel_bench::compare(&base, &new);
    let text = render::render_comparison(&comparison, format.into())?;
    print_stdout(text.trim_end_matches('\n'))?;
    if args.fail_on_regression && comparison.has_regression() {
        eprintln!("regression: {}", render::regression_reason(&comparison));
        return Ok(ExitCode::from(ErrorKind::Regression.exit_code() as u8));
    }
    Ok(ExitCode::SUCCESS)
}

fn format_of(global: &GlobalArgs, format: Option<ReportFormat>) -> ReportFormat {
    if global.json {
        ReportFormat::Json
    } else {
        format.unwrap_or(ReportFormat::Table)
    }
}

/// Reads inputs, connecting to the stores only when an input is an experiment.
struct Loader<'a> {
    global: &'a GlobalArgs,
    analysis: Option<Analysis>,
}

impl Loader<'_> {
    /// A local file or directory as is; else an experiment id (`e-12`), whose newest `kernel_bench` results
    /// file is fetched into the cache.
    async fn load(&mut self, input: &str, format: ReportFormat) -> anyhow::Result<KernelResults> {
        if Path::new(input).exists() {
            return Ok(kernel_bench::read_results(Path::new(input))?);
        }
        let Some(id) = experiment_id(input) else {
            return Err(CliFailure::new(
                ErrorKind::NotFound,
                format!("{input}: no such file, directory or experiment"),
            )
            .with_hint(
                "give a kernel_bench*.jsonl / .csv results file, a directory holding one, or an experiment id (e-12)",
            )
            .into());
        };
        if self.analysis.is_none() {
            let loaded = settings::load(self.global)?;
            self.analysis = Some(Analysis::connect(&loaded.config).await?);
        }
        let Some(analysis) = self.analysis.as_ref() else {
            anyhow::bail!("the analysis service is not connected");
        };
        let paths = analysis.fetch_artifacts(id, ArtifactKind::KernelBench).await?;
        let Some(path) = newest(&paths) else {
            return Err(CliFailure::new(
                ErrorKind::NotFound,
                format!("{id} has no kernel-bench results (.jsonl / .csv) among its artifacts"),
            )
            .into());
        };
        if format != ReportFormat::Json && paths.len() > 1 {
            eprintln!("{id}: {} kernel_bench files; using the newest, {}", paths.len(), path.display());
        }
        Ok(kernel_bench::read_results(&path)?)
    }
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

/// The experiment an input names: `e-N` or digits (when no such path exists).
fn experiment_id(input: &str) -> Option<ExperimentId> {
    if !(input.starts_with("e-") || (!input.is_empty() && input.chars().all(|c| c.is_ascii_digit()))) {
        return None;
    }
    input.parse().ok()
}
