//! `falcon profile …`: analyse XProf captures, fetch them, export Chrome traces. The use cases are
//! [`falcon_app::profiles`] and the reports' tables and Markdown [`falcon_app::render::profile`]; this module
//! parses arguments and prints.

use crate::cli::{GlobalArgs, ProfileAnalyzeArgs, ProfileCommand, ProfileTraceArgs};
use crate::output::{print_json, print_json_bytes, print_stdout, CliFailure};
use falcon_app::profiles::{AnalyzeOptions, HostProgress};
use falcon_app::reports::Report;
use falcon_app::App;
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, app: &App, command: &ProfileCommand) -> anyhow::Result<ExitCode> {
    // The analysis service opens the stores when it starts, so a bad configuration fails here, as before.
    app.config()?;
    match command {
        ProfileCommand::Analyze(args) => analyze(global, app, args).await,
        ProfileCommand::Compare(args) => crate::commands::profile_compare::run(global, app, args).await,
        ProfileCommand::Shard(args) => crate::commands::profile_fan_out::shard(global, app, args).await,
        ProfileCommand::Trace(args) => trace(global, app, args).await,
        ProfileCommand::Fetch { target, host } => fetch(global, app, target, host.as_deref()).await,
        ProfileCommand::ExportTrace { target, output, host, force } => {
            export_trace(global, app, target, output, host.as_deref(), *force).await
        }
    }
}

async fn analyze(global: &GlobalArgs, app: &App, args: &ProfileAnalyzeArgs) -> anyhow::Result<ExitCode> {
    let request = falcon_app::requests::ProfileAnalyzeRequest {
        input: args.target.clone(),
        tool: args.tool.clone(),
        host: args.host.clone(),
        model_flops: args.model_flops,
        peak_tflops: args.peak_tflops,
    };
    let options = request.options()?; // its errors name the field (`peak_tflops=-1.0: at least 0`, an unknown tool)
    let options = AnalyzeOptions { progress: hosts_bar(), ..options };
    if global.json {
        // An experiment's analysis is one of its kept reports: read from the store once computed.
        if let Some((id, report)) = Report::answering_analysis(&args.target, args.host.as_deref(), &options) {
            print_json_bytes(&app.report(id, &report).await?)?;
            return Ok(ExitCode::SUCCESS);
        }
    } else {
        eprintln!("falcon profile: resolving {} …", args.target);
    }
    let fanned = match args.host {
        Some(_) => None,
        None => app.fan_out_shards(&args.target, args.fan_out).await?,
    };
    if fanned.is_none() && args.timeout.is_some() {
        return Err(CliFailure::usage(
            "--timeout bounds the wait for a fan-out's jobs; this run is analysed here (no --fan-out N, or fewer hosts \
             than [analysis] fan_out_hosts)",
        )
        .into());
    }
    let (resolved, report) = match fanned {
        Some(shards) => crate::commands::profile_fan_out::analyze(global, app, args, shards, &options).await?,
        None => app.analyze_profile(&args.target, args.host.as_deref(), &options).await?,
    };
    if global.json {
        print_json(&report)?;
    } else {
        print_stdout(&falcon_app::render::profile::analysis(&resolved, &report, args.top, args.markdown))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A bar on stderr over a remote run's hosts as they download (drawn only on a terminal; `--json`'s stdout is
/// untouched).
fn hosts_bar() -> HostProgress {
    let bar = indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {pos}/{len} hosts {wide_bar} {elapsed}") {
        bar.set_style(style);
    }
    HostProgress(Some(std::sync::Arc::new(move |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        if done >= total {
            bar.finish_and_clear();
        }
    })))
}

async fn trace(global: &GlobalArgs, app: &App, args: &ProfileTraceArgs) -> anyhow::Result<ExitCode> {
    use falcon_app::profiles::TraceOptions;
    let request = falcon_app::requests::ProfileTraceRequest {
        input: args.target.clone(),
        analysis: args.analysis.clone(),
        host: args.host.clone(),
    };
    let options = request.options()?; // its errors name the field or the unknown analysis
    let options = TraceOptions {
        top_gaps: args.top_gaps,
        max_decompressed_bytes: args.max_decompressed.map(falcon_app::files::mib_to_bytes),
        ..options
    };
    if global.json {
        if let Some((id, report)) = Report::answering_trace(&args.target, args.host.as_deref(), &options) {
            print_json_bytes(&app.report(id, &report).await?)?;
            return Ok(ExitCode::SUCCESS);
        }
    } else {
        eprintln!("falcon profile: reading the trace of {} …", args.target);
    }
    let run = app.analyze_trace(&args.target, args.host.as_deref(), &options).await?;
    if global.json {
        print_json(&run)?;
    } else {
        print_stdout(&falcon_app::render::profile::trace(&run, args.top, args.markdown))?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn fetch(global: &GlobalArgs, app: &App, target: &str, host: Option<&str>) -> anyhow::Result<ExitCode> {
    let resolved = app.fetch_profile(target, host).await?;
    if global.json {
        print_json(&resolved)?;
    } else {
        for f in &resolved.files {
            print_stdout(&format!("{}\t{}", f.host, f.path.display()))?;
        }
        eprintln!("{} file(s), {} bytes downloaded", resolved.files.len(), resolved.downloaded_bytes);
    }
    Ok(ExitCode::SUCCESS)
}

async fn export_trace(
    global: &GlobalArgs,
    app: &App,
    target: &str,
    output: &std::path::Path,
    host: Option<&str>,
    force: bool,
) -> anyhow::Result<ExitCode> {
    let export = app.export_trace(target, output, host, force).await?;
    let summary = &export.summary;
    if global.json {
        // The `-o FILE --json` contract (`wrote FILE` on stderr; `written`, `bytes`, `format` on stdout), plus
        // what the export counted.
        eprintln!("wrote {}", summary.output.display());
        print_json(&Written {
            written: summary.output.display().to_string(),
            bytes: summary.bytes_written,
            format: "json",
            host: &summary.host,
            planes: summary.planes,
            lines: summary.lines,
            events: summary.events,
        })?;
    } else {
        print_stdout(&format!(
            "wrote {} ({} events, {} bytes) from host {}{}",
            summary.output.display(),
            summary.events,
            summary.bytes_written,
            summary.host,
            if export.hosts > 1 {
                format!(" (of {} hosts; --host picks another)", export.hosts)
            } else {
                String::new()
            }
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `export-trace -o FILE --json`: the file written (a Chrome trace, gzipped when its name ends in `.gz`) and
/// the planes, lines and events it holds.
#[derive(serde::Serialize)]
struct Written<'a> {
    written: String,
    bytes: u64,
    format: &'static str,
    host: &'a str,
    planes: usize,
    lines: usize,
    events: usize,
}
