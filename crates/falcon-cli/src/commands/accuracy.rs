//! `falcon accuracy compare A B`: reads two runs' metric series (MaxText, Megatron-LM, tfevents, JSONL/CSV,
//! or an experiment's metrics artifacts), aligns them by step and compares them with tolerances (A is the
//! reference), rendered as terminal tables, Markdown, an HTML page or JSON, on stdout or atomically into a
//! file. With `--fail-on-mismatch`, a `fail` verdict exits 5.

use crate::cli::{AccuracyCompareArgs, GlobalArgs, ReportFormat};
use crate::output::{check_output, print_stdout, write_atomically, CliFailure};
use crate::settings;
use falcon_analysis::accuracy::align::{align, AccuracyReport, AlignOptions, Verdict};
use falcon_analysis::accuracy::read::{read_path, ReadOptions};
use falcon_analysis::error::AnalysisError;
use falcon_analysis::service::Analysis;
use falcon_app::render::accuracy as report;
use falcon_core::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const INPUT_HINT: &str =
    "give a metrics file (MaxText metrics JSONL or console log, Megatron-LM log or golden-values JSON, \
     TensorBoard event file or directory, JSONL, CSV) or an experiment id (e-N)";

pub async fn run(global: &GlobalArgs, args: &AccuracyCompareArgs) -> anyhow::Result<ExitCode> {
    let format = if global.json { ReportFormat::Json } else { args.format.unwrap_or(ReportFormat::Table) };
    if let Some(out) = &args.output {
        check_output(out)?;
    }
    let options = options(args)?;
    let (a, b) = inputs(global, args).await?;
    let read_opts = ReadOptions { step_column: args.step_column.clone() };
    let report = tokio::task::spawn_blocking(move || -> Result<AccuracyReport, AnalysisError> {
        let ra = read_path(&a, &read_opts)?;
        let rb = read_path(&b, &read_opts)?;
        align(&ra, &rb, &options)
    })
    .await
    .map_err(|e| anyhow::anyhow!("accuracy task failed: {e}"))??;

    let text = match format {
        ReportFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
        ReportFormat::Table => report::render_table(&report),
        ReportFormat::Md => report::render_md(&report),
        ReportFormat::Html => report::render_html(&report),
    };
    match &args.output {
        Some(path) => {
            write_atomically(path, &text)?;
            eprintln!("wrote {}", path.display());
        }
        None => print_stdout(text.trim_end_matches('\n'))?,
    }
    if args.fail_on_mismatch && report.verdict == Verdict::Fail {
        eprintln!("accuracy mismatch: {}", mismatch_reason(&report));
        return Ok(ExitCode::from(ErrorKind::Regression.exit_code() as u8));
    }
    Ok(ExitCode::SUCCESS)
}

/// The alignment options from the arguments; usage errors for bad tolerances and `--map` entries.
fn options(args: &AccuracyCompareArgs) -> anyhow::Result<AlignOptions> {
    for (flag, v) in [("--rtol", args.rtol), ("--atol", args.atol)] {
        if let Some(v) = v {
            if !(v.is_finite() && v >= 0.0) {
                return Err(
                    CliFailure::new(ErrorKind::Usage, format!("{flag} must be a finite number ≥ 0, not {v}")).into()
                );
            }
        }
    }
    let mut map = Vec::with_capacity(args.map.len());
    for entry in &args.map {
        match entry.split_once('=') {
            Some((x, y)) if !x.trim().is_empty() && !y.trim().is_empty() => {
                map.push((x.trim().to_string(), y.trim().to_string()))
            }
            _ => {
                return Err(CliFailure::new(ErrorKind::Usage, format!("--map {entry:?}: expected A_NAME=B_NAME"))
                    .with_hint("e.g. --map 'learning/lm_loss=lm loss'")
                    .into())
            }
        }
    }
    Ok(AlignOptions { metrics: args.metric.clone(), rtol: args.rtol, atol: args.atol, map, b_step_offset: None })
}

/// The local paths of A and B: as given when they exist, else an experiment's metrics artifacts (the
/// stores are opened only then).
async fn inputs(global: &GlobalArgs, args: &AccuracyCompareArgs) -> anyhow::Result<(PathBuf, PathBuf)> {
    if Path::new(&args.a).exists() && Path::new(&args.b).exists() {
        return Ok((PathBuf::from(&args.a), PathBuf::from(&args.b)));
    }
    let loaded = settings::load(global)?;
    let analysis = Analysis::connect(&loaded.config).await?;
    let resolved = async {
        let a = analysis.accuracy_inputs(&args.a).await?;
        let b = analysis.accuracy_inputs(&args.b).await?;
        Ok::<_, AnalysisError>((a, b))
    }
    .await;
    analysis.close().await;
    resolved.map_err(|e| match e {
        AnalysisError::NotFound(msg) => CliFailure::new(ErrorKind::NotFound, msg).with_hint(INPUT_HINT).into(),
        other => anyhow::Error::from(other),
    })
}

/// Why the verdict is `fail`, in a line.
fn mismatch_reason(r: &AccuracyReport) -> String {
    let mut why = Vec::new();
    for m in &r.metrics {
        match m.verdict {
            Verdict::Fail => {
                let mut s = format!(
                    "{} fails at {} of {} steps (rtol {}, atol {})",
                    m.name, m.failing_steps, m.steps_compared, m.rtol, m.atol
                );
                if let Some(step) = m.first_divergence_step {
                    s.push_str(&format!(", diverging from step {step}"));
                }
                why.push(s);
            }
            Verdict::NoOverlap if m.requested => why.push(format!("{}: no step in common", m.name)),
            _ => {}
        }
    }
    if why.is_empty() {
        why.push("nothing was compared".to_string());
    }
    why.join("; ")
}
