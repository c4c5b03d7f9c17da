//! `falcon profile …`: analyse XProf captures, fetch them, export Chrome traces. The use cases are
//! [`falcon_app::profiles`]; this module parses arguments and renders the reports.

use crate::cli::{GlobalArgs, ProfileAnalyzeArgs, ProfileCommand, ProfileTraceArgs, ToolArg, TraceAnalysisArg};
use crate::output::{print_json, print_stdout};
use comfy_table::presets::{ASCII_MARKDOWN, UTF8_FULL_CONDENSED};
use comfy_table::{ContentArrangement, Table};
use falcon_app::profiles::{AnalyzeOptions, Hardware, ProfileReport, ResolvedProfile, Tool, TraceRun};
use falcon_app::App;
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, app: &App, command: &ProfileCommand) -> anyhow::Result<ExitCode> {
    // The analysis service opens the stores when it starts, so a bad configuration fails here, as before.
    app.config()?;
    match command {
        ProfileCommand::Analyze(args) => analyze(global, app, args).await,
        ProfileCommand::Compare(args) => crate::commands::profile_compare::run(global, app, args).await,
        ProfileCommand::Trace(args) => trace(global, app, args).await,
        ProfileCommand::Fetch { target, host } => fetch(global, app, target, host.as_deref()).await,
        ProfileCommand::ExportTrace { target, output, host, force } => {
            export_trace(global, app, target, output, host.as_deref(), *force).await
        }
    }
}

async fn analyze(global: &GlobalArgs, app: &App, args: &ProfileAnalyzeArgs) -> anyhow::Result<ExitCode> {
    let tools: Vec<Tool> = if args.tool.contains(&ToolArg::All) {
        Vec::new()
    } else {
        args.tool
            .iter()
            .map(|t| match t {
                ToolArg::All | ToolArg::Overview => Tool::Overview,
                ToolArg::Ops => Tool::Ops,
                ToolArg::Hlo => Tool::Hlo,
                ToolArg::Roofline => Tool::Roofline,
                ToolArg::Memory => Tool::Memory,
                ToolArg::Kernels => Tool::Kernels,
                ToolArg::Steps => Tool::Steps,
            })
            .collect()
    };
    let options = AnalyzeOptions { tools, model_flops_per_step: args.model_flops };
    if !global.json {
        eprintln!("falcon profile: resolving {} …", args.target);
    }
    let (resolved, report) = app.analyze_profile(&args.target, args.host.as_deref(), &options).await?;
    if global.json {
        print_json(&report)?;
    } else {
        render(&resolved, &report, args)?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn trace(global: &GlobalArgs, app: &App, args: &ProfileTraceArgs) -> anyhow::Result<ExitCode> {
    use falcon_app::profiles::{TraceAnalysis, TraceOptions};
    let analyses: Vec<TraceAnalysis> = if args.analysis.contains(&TraceAnalysisArg::All) {
        Vec::new()
    } else {
        args.analysis
            .iter()
            .map(|a| match a {
                TraceAnalysisArg::All | TraceAnalysisArg::Breakdown => TraceAnalysis::Breakdown,
                TraceAnalysisArg::Overlap => TraceAnalysis::Overlap,
                TraceAnalysisArg::Gaps => TraceAnalysis::Gaps,
                TraceAnalysisArg::Host => TraceAnalysis::Host,
                TraceAnalysisArg::Steps => TraceAnalysis::Steps,
            })
            .collect()
    };
    let options = TraceOptions {
        analyses,
        top_gaps: args.top_gaps,
        max_decompressed_bytes: args.max_decompressed.map(falcon_app::files::mib_to_bytes),
        ..TraceOptions::default()
    };
    if !global.json {
        eprintln!("falcon profile: reading the trace of {} …", args.target);
    }
    let run = app.analyze_trace(&args.target, args.host.as_deref(), &options).await?;
    if global.json {
        print_json(&run)?;
    } else {
        render_trace(&run, args)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn render_trace(run: &TraceRun, args: &ProfileTraceArgs) -> anyhow::Result<()> {
    let md = args.markdown;
    let r = &run.report;
    if md {
        print_stdout(&format!("# Trace analysis of `{}`", run.resolved.input))?;
    }
    let devices: Vec<String> = r.devices.iter().map(|d| d.name.clone()).collect();
    print_stdout(&format!(
        "{} — {} device(s): {}; {} events; steps by {} ({})",
        run.resolved.input,
        devices.len(),
        devices.join(", "),
        run.events_read,
        serde_json::to_value(r.step_detection.rule)?.as_str().unwrap_or("?"),
        r.step_detection.steps
    ))?;
    if let Some(t) = &r.total {
        heading(md, "Where the step time goes (all steps, mean over devices)")?;
        let mut table = new_table(md, ["category", "µs", "share"]);
        let share =
            |x: f64| if t.duration_us > 0.0 { format!("{:.1}%", 100.0 * x / t.duration_us) } else { "—".into() };
        for (name, v) in [
            ("compute", t.compute_us),
            ("collective (exposed)", t.collective_us),
            ("memcpy / infeed-outfeed", t.memcpy_us),
            ("host wait", t.host_wait_us),
            ("other", t.other_us),
            ("idle", t.idle_us),
        ] {
            table.add_row([name.to_string(), format!("{v:.1}"), share(v)]);
        }
        table.add_row([
            "collective hidden under compute".to_string(),
            format!("{:.1}", t.hidden_collective_us),
            "(beside)".to_string(),
        ]);
        print_stdout(&table.to_string())?;
    }
    if !r.steps.is_empty() {
        heading(md, &format!("Steps ({} of {})", r.steps.len().min(args.top), r.steps.len()))?;
        let mut table = new_table(md, ["step", "duration µs", "compute", "collective", "memcpy", "host wait", "idle"]);
        for s in r.steps.iter().take(args.top) {
            let b = &s.breakdown;
            table.add_row([
                s.step.to_string(),
                format!("{:.1}", b.duration_us),
                format!("{:.1}", b.compute_us),
                format!("{:.1}", b.collective_us),
                format!("{:.1}", b.memcpy_us),
                format!("{:.1}", b.host_wait_us),
                format!("{:.1}", b.idle_us),
            ]);
        }
        print_stdout(&table.to_string())?;
    }
    if !r.overlap.is_empty() {
        heading(md, "Collectives: hidden under compute vs exposed")?;
        let mut table = new_table(md, ["kind", "total µs", "exposed µs", "hidden"]);
        for o in &r.overlap {
            table.add_row([
                o.kind.clone(),
                format!("{:.1}", o.total_us),
                format!("{:.1}", o.exposed_us),
                format!("{:.1}%", 100.0 * o.hidden_fraction),
            ]);
        }
        print_stdout(&table.to_string())?;
    }
    if !r.gaps.is_empty() {
        heading(md, "Longest device idle gaps")?;
        let mut table = new_table(md, ["device", "start µs", "duration µs", "host busy with"]);
        for g in &r.gaps {
            let host: Vec<String> =
                g.host_activity.iter().take(3).map(|h| format!("{} ({:.0} µs)", h.name, h.overlap_us)).collect();
            table.add_row([
                g.device_name.clone(),
                format!("{:.1}", g.start_us),
                format!("{:.1}", g.duration_us),
                host.join("; "),
            ]);
        }
        print_stdout(&table.to_string())?;
    }
    if let Some(h) = &r.host_bound {
        print_stdout(&format!(
            "\nhost-bound: {:.1}% of step time the device waits on the host → {}",
            100.0 * h.fraction,
            serde_json::to_value(h.verdict)?.as_str().unwrap_or("?")
        ))?;
    }
    for note in &r.notes {
        print_stdout(&format!("note: {note}"))?;
    }
    Ok(())
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
        print_json(summary)?;
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

fn new_table<const N: usize>(markdown: bool, header: [&str; N]) -> Table {
    let mut t = Table::new();
    t.load_preset(if markdown { ASCII_MARKDOWN } else { UTF8_FULL_CONDENSED })
        .set_content_arrangement(if markdown { ContentArrangement::Disabled } else { ContentArrangement::Dynamic })
        .set_header(header);
    t
}

fn heading(markdown: bool, text: &str) -> anyhow::Result<()> {
    if markdown {
        print_stdout(&format!("\n## {text}\n"))
    } else {
        print_stdout(&format!("\n{text}"))
    }
}

fn pct(fraction: f64) -> String {
    format!("{:.2}%", fraction * 100.0)
}

fn render(resolved: &ResolvedProfile, report: &ProfileReport, args: &ProfileAnalyzeArgs) -> anyhow::Result<()> {
    let md = args.markdown;
    let top = args.top;
    let hosts: Vec<&str> = report.files.iter().map(|f| f.host.as_str()).collect();
    if md {
        print_stdout(&format!("# Profile analysis of `{}`", resolved.input))?;
    }
    print_stdout(&format!(
        "{} — {} × {} ({} host{}: {})",
        resolved.input,
        report.device.device_cores,
        report.device.device_type,
        hosts.len(),
        if hosts.len() == 1 { "" } else { "s" },
        hosts.join(", ")
    ))?;
    if let Some(o) = &report.overview {
        heading(md, "Overview")?;
        let mut t = new_table(md, ["metric", "value"]);
        let step = if o.step_time_ms.n > 0 {
            format!("{:.3} ms ± {:.3} (n={})", o.step_time_ms.mean, o.step_time_ms.stddev, o.step_time_ms.n)
        } else {
            "no step markers".to_string()
        };
        t.add_row(["step time".to_string(), step]);
        if report.device.hardware == Hardware::CpuOnly {
            t.add_row([
                "device".to_string(),
                "none (XLA:CPU capture): no device utilization; per-op times below".to_string(),
            ]);
            print_stdout(&t.to_string())?;
        } else {
            t.add_row(["device duty cycle".to_string(), format!("{:.1}%", o.device_duty_cycle_percent)]);
            t.add_row(["device idle".to_string(), format!("{:.1}%", o.device_idle_percent)]);
            t.add_row(["FLOPS utilization".to_string(), pct(o.flops_utilization)]);
            t.add_row(["HBM BW utilization".to_string(), pct(o.hbm_bw_utilization)]);
            t.add_row(["bound by".to_string(), o.bound_by.clone()]);
            t.add_row(["operational intensity".to_string(), format!("{:.4} FLOP/B", o.operational_intensity)]);
            t.add_row(["MFU".to_string(), o.mfu.map_or("n/a".to_string(), pct)]);
            print_stdout(&t.to_string())?;
        }
    }
    if let Some(rows) = &report.ops {
        if !rows.is_empty() {
            heading(md, &format!("Top HLO ops by self time ({} of {})", rows.len().min(top), rows.len()))?;
            let mut t =
                new_table(md, ["program", "op", "category", "#", "self µs", "GFLOP/s", "HBM GiB/s", "bound by"]);
            for r in rows.iter().take(top) {
                t.add_row([
                    r.program_id.to_string(),
                    r.name.clone(),
                    r.category.clone(),
                    r.occurrences.to_string(),
                    format!("{:.1}", r.self_time_us),
                    format!("{:.2}", r.flop_rate_gflops),
                    format!("{:.2}", r.hbm_bw_gibs),
                    r.bound_by.clone(),
                ]);
            }
            print_stdout(&t.to_string())?;
        }
    }
    if let Some(cpu) = &report.cpu_ops {
        if !cpu.ops.is_empty() {
            heading(md, &format!("XLA:CPU ops by total time ({} of {})", cpu.ops.len().min(top), cpu.ops.len()))?;
            let mut t = new_table(md, ["module", "op", "#", "total µs", "avg µs"]);
            for r in cpu.ops.iter().take(top) {
                t.add_row([
                    r.hlo_module.clone(),
                    r.name.clone(),
                    r.occurrences.to_string(),
                    format!("{:.1}", r.total_time_us),
                    format!("{:.2}", r.avg_time_us),
                ]);
            }
            print_stdout(&t.to_string())?;
        }
    }
    if let Some(r) = &report.roofline {
        if r.peak_flop_rate_gflops > 0.0 {
            heading(md, "Roofline")?;
            print_stdout(&format!(
                "peak {:.0} GFLOP/s, HBM {:.1} GiB/s, ridge point {:.2} FLOP/B",
                r.peak_flop_rate_gflops, r.peak_hbm_bw_gibs, r.ridge_point
            ))?;
        }
    }
    if let Some(m) = &report.memory {
        if m.peak_bytes > 0 {
            heading(md, "Memory")?;
            print_stdout(&format!("peak {:.2} GiB", m.peak_bytes as f64 / (1u64 << 30) as f64))?;
        }
    }
    if let Some(kernels) = &report.kernels {
        if !kernels.is_empty() {
            heading(md, &format!("GPU kernels by total time ({} of {})", kernels.len().min(top), kernels.len()))?;
            let mut t = new_table(md, ["kernel", "#", "total µs", "avg µs", "min µs", "max µs"]);
            for k in kernels.iter().take(top) {
                let mut name = k.name.clone();
                if !md && name.len() > 80 {
                    name.truncate(77);
                    name.push('…');
                }
                t.add_row([
                    name,
                    k.occurrences.to_string(),
                    format!("{:.1}", k.total_time_us),
                    format!("{:.2}", k.avg_time_us),
                    format!("{:.2}", k.min_time_us),
                    format!("{:.2}", k.max_time_us),
                ]);
            }
            print_stdout(&t.to_string())?;
        }
    }
    for note in &report.notes {
        print_stdout(&format!("note: {note}"))?;
    }
    Ok(())
}
