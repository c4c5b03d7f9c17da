//! `falcon accuracy tensors A B`: compares two tensor dumps (`.npy`, `.npz`, `.safetensors`, or directories
//! of `.npy` files) tensor by tensor, A being the reference, and prints the report as terminal tables,
//! Markdown, an HTML page or JSON. With `--fail-on-mismatch` it exits 5 when a tensor fails `allclose`, shapes
//! differ, or no tensor could be paired; a missing dump or mapping file exits 3, an unreadable one 1.

use crate::cli::{AccuracyTensorsArgs, GlobalArgs, ReportFormat};
use crate::output::{print_stdout, CliFailure};
use falcon_analysis::error::AnalysisError;
use falcon_analysis::tensors::{compare_dumps, TensorOptions, TensorReport};
use falcon_app::render::{html, tensors};
use falcon_core::ErrorKind;
use std::path::PathBuf;
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, args: &AccuracyTensorsArgs) -> anyhow::Result<ExitCode> {
    let format = if global.json { ReportFormat::Json } else { args.format.unwrap_or(ReportFormat::Table) };
    let options = TensorOptions { map: args.map.clone(), rtol: args.rtol, atol: args.atol, threads: None };
    let (a, b) = (PathBuf::from(&args.a), PathBuf::from(&args.b));
    let report = tokio::task::spawn_blocking(move || compare_dumps(&a, &b, &options)).await?.map_err(failure)?;
    print_stdout(render(&report, format, args.top)?.trim_end_matches('\n'))?;
    if args.fail_on_mismatch && report.mismatched() {
        eprintln!("mismatch: {}", mismatch_reason(&report));
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

/// The analysis error with a hint for this command (the analysis module's hints speak of profiles).
fn failure(e: AnalysisError) -> anyhow::Error {
    let message = e.to_string();
    let f = match e {
        AnalysisError::NotFound(_) => CliFailure::new(ErrorKind::NotFound, message)
            .with_hint("give a .npy file, a .npz archive, a .safetensors file or a directory of .npy files (and an existing --map file)"),
        AnalysisError::Invalid(_) => CliFailure::new(ErrorKind::Failure, message)
            .with_hint("dumps are read as np.save / np.savez / safetensors write them; re-save the tensor (e.g. as float32) if its dtype is not supported"),
        other => CliFailure::new(other.kind(), message),
    };
    f.into()
}

/// Why the report counts as a mismatch, in one line.
fn mismatch_reason(r: &TensorReport) -> String {
    let mut why = Vec::new();
    if r.failed > 0 {
        let worst: Vec<&str> = r.tensors.iter().filter(|t| !t.allclose).take(3).map(|t| t.name.as_str()).collect();
        why.push(format!(
            "{} of {} tensors fail allclose ({}{})",
            r.failed,
            r.tensors.len(),
            worst.join(", "),
            if r.failed > 3 { ", …" } else { "" }
        ));
    }
    if !r.shape_mismatches.is_empty() {
        why.push(format!(
            "{} shape mismatch{}",
            r.shape_mismatches.len(),
            if r.shape_mismatches.len() == 1 { "" } else { "es" }
        ));
    }
    if r.tensors.is_empty() && r.shape_mismatches.is_empty() {
        why.push("no tensor names in common (pass --map)".to_string());
    }
    why.join("; ")
}
