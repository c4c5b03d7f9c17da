//! `falcon accuracy compare A B`: reads two runs' metric series (MaxText, Megatron-LM, tfevents, JSONL/CSV,
//! or an experiment's metrics artifacts), aligns them by step and compares them with tolerances (A is the
//! reference), rendered as terminal tables, Markdown, an HTML page or JSON, on stdout or atomically into a
//! file. With `--fail-on-mismatch`, a `fail` verdict exits 5.

use crate::cli::{AccuracyCompareArgs, GlobalArgs, ReportFormat};
use crate::output::check_output;
use falcon_app::accuracy::{mismatch_reason, AccuracyRequest, Verdict};
use falcon_app::render::accuracy as report;
use falcon_app::App;
use falcon_core::ErrorKind;
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, app: &App, args: &AccuracyCompareArgs) -> anyhow::Result<ExitCode> {
    let format = crate::output::report_format(global, args.format)?;
    if let Some(out) = &args.output {
        check_output(out, args.force)?;
    }
    let req = AccuracyRequest {
        a: args.a.clone(),
        b: args.b.clone(),
        metrics: args.metric.clone(),
        rtol: args.rtol,
        atol: args.atol,
        map: args.map.clone(),
        step_column: args.step_column.clone(),
    };
    let report = app.compare_accuracy(&req).await?;
    let text = match format {
        ReportFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
        ReportFormat::Table => report::render_table(&report),
        ReportFormat::Md => report::render_md(&report),
        ReportFormat::Html => report::render_html(&report),
    };
    crate::output::emit_report(global, args.output.as_deref(), args.force, &text, format)?;
    if args.fail_on_mismatch && report.verdict == Verdict::Fail {
        eprintln!("accuracy mismatch: {}", mismatch_reason(&report));
        return Ok(ExitCode::from(ErrorKind::Regression.exit_code() as u8));
    }
    Ok(ExitCode::SUCCESS)
}
