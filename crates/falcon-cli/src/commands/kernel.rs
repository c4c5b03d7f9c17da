//! `falcon kernel analyze|compare`: kernel-bench results (a JSONL/CSV file, a directory holding one, or an
//! experiment's `kernel_bench` artifact) analysed or compared by `falcon_app::kernel`, rendered by
//! [`falcon_app::render::kernel`].

use crate::cli::{GlobalArgs, KernelAnalyzeArgs, KernelCommand, KernelCompareArgs, ReportFormat};
use crate::output::print_stdout;
use falcon_app::render::kernel as render;
use falcon_app::App;
use falcon_core::ErrorKind;
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, app: &App, command: &KernelCommand) -> anyhow::Result<ExitCode> {
    match command {
        KernelCommand::Analyze(args) => analyze(global, app, args).await,
        KernelCommand::Compare(args) => compare(global, app, args).await,
    }
}

async fn analyze(global: &GlobalArgs, app: &App, args: &KernelAnalyzeArgs) -> anyhow::Result<ExitCode> {
    let format = format_of(global, args.format)?;
    let request = falcon_app::requests::KernelAnalyzeRequest {
        input: args.results.clone(),
        p: args.p,
        peak_tflops: args.peak_tflops,
        peak_gbs: args.peak_gbs,
    };
    let options = request.options()?;
    let (report, notes) = app.analyze_kernels(&args.results, &options).await?;
    show_notes(format, &notes);
    let text = render::render_report(&report, format.into())?;
    print_stdout(text.trim_end_matches('\n'))?;
    Ok(ExitCode::SUCCESS)
}

async fn compare(global: &GlobalArgs, app: &App, args: &KernelCompareArgs) -> anyhow::Result<ExitCode> {
    let format = format_of(global, args.format)?;
    let (comparison, notes) = app.compare_kernels(&args.base, &args.new).await?;
    show_notes(format, &notes);
    let text = render::render_comparison(&comparison, format.into())?;
    print_stdout(text.trim_end_matches('\n'))?;
    if args.fail_on_regression && comparison.has_regression() {
        eprintln!("regression: {}", render::regression_reason(&comparison));
        return Ok(ExitCode::from(ErrorKind::Regression.exit_code() as u8));
    }
    Ok(ExitCode::SUCCESS)
}

/// Which input file was picked, on stderr (not in JSON mode).
fn show_notes(format: ReportFormat, notes: &[String]) {
    if format != ReportFormat::Json {
        for n in notes {
            eprintln!("{n}");
        }
    }
}

fn format_of(global: &GlobalArgs, format: Option<ReportFormat>) -> anyhow::Result<ReportFormat> {
    crate::output::report_format(global, format)
}
