//! `falcon accuracy tensors A B`: compares two tensor dumps (`.npy`, `.npz`, `.safetensors`, or directories
//! of `.npy` files) tensor by tensor, A being the reference, and prints the report as terminal tables,
//! Markdown, an HTML page or JSON. With `--fail-on-mismatch` it exits 5 when a tensor fails `allclose`, shapes
//! differ, or no tensor could be paired; a missing dump or mapping file exits 3, an unreadable one 1.

use crate::cli::{AccuracyTensorsArgs, GlobalArgs, ReportFormat};
use crate::output::print_stdout;
use falcon_app::accuracy::{tensor_mismatch_reason, TensorOptions, TensorReport};
use falcon_app::render::{html, tensors};
use falcon_app::App;
use falcon_core::ErrorKind;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, app: &App, args: &AccuracyTensorsArgs) -> anyhow::Result<ExitCode> {
    let format = crate::output::report_format(global, args.format)?;
    let options = TensorOptions {
        map: args.map.clone(),
        rtol: args.rtol,
        atol: args.atol,
        threads: None,
        max_decompressed_bytes: args.max_decompressed.map(falcon_app::files::mib_to_bytes),
    };
    let report = app.compare_tensors(Path::new(&args.a), Path::new(&args.b), &options).await?;
    print_stdout(render(&report, format, args.top)?.trim_end_matches('\n'))?;
    if args.fail_on_mismatch && report.mismatched() {
        eprintln!("mismatch: {}", tensor_mismatch_reason(&report));
        return Ok(ExitCode::from(ErrorKind::Regression.exit_code() as u8));
    }
    Ok(ExitCode::SUCCESS)
}

fn render(r: &TensorReport, format: ReportFormat, top: usize) -> anyhow::Result<String> {
    Ok(match format {
        ReportFormat::Json => serde_json::to_string_pretty(r)? + "\n",
        ReportFormat::Table => tensors::render_table(r, top),
        ReportFormat::Md => tensors::render_md(r, top),
        ReportFormat::Html => {
            html::render_page(&format!("Tensor comparison: {} → {}", r.a, r.b), &[tensors::render_html_section(r, top)])
        }
    })
}
