//! `profile analyze` and `profile trace` reports as terminal tables or Markdown: one renderer per report, the
//! format chosen by `markdown` (headings and Markdown tables, else plain headings and box tables), so both
//! forms show the same rows and numbers. JSON is the report structs themselves.

use super::numbers::{bytes, duration_ms, duration_us, fraction_percent, num, percent, signed_percent, TimeUnit};
use super::text::{new_table, shorten};
use crate::contract::AnalysisSummary;
use falcon_analysis::device::Hardware;
use falcon_analysis::profile::{ProfileReport, Tool};
use falcon_analysis::service::{ResolvedProfile, TraceRun};
use falcon_analysis::trace::host::HostActivityKind;
use falcon_core::bound::BoundBy;

/// The longest kernel name a terminal table shows whole; longer ones keep [`KERNEL_NAME_KEPT`] characters and
/// end in `…` (Markdown shows every name whole).
const KERNEL_NAME_MAX: usize = 80;
/// The characters a shortened kernel name keeps before its `…`.
const KERNEL_NAME_KEPT: usize = 77;

/// `profile analyze`'s report of `resolved`: its header line, then one section per tool run (overview,
/// ops, HLO stats, roofline, memory, GPU kernels, steps: [`ProfileReport::tools`]), at most `top` rows per
/// table, then the report's notes. A tool with nothing to show prints one line saying why (`roofline: …`),
/// never a bare header. One string, lines separated by `\n`, no final newline.
pub fn analysis(resolved: &ResolvedProfile, report: &ProfileReport, top: usize, markdown: bool) -> String {
    let md = markdown;
    let mut out = Vec::new();
    if md {
        out.push(format!("# Profile analysis of `{}`", resolved.input));
    }
    out.push(format!("{} — {}", resolved.input, header(report)));
    let cpu = report.device.hardware == Hardware::CpuOnly;
    // An empty kernel table's reason is the kernel tool's own note, printed once, in its section.
    let kernel_reason = report
        .kernels
        .as_ref()
        .filter(|k| k.is_empty())
        .and_then(|_| report.notes.iter().find(|n| n.contains("kernel")));
    for tool in &report.tools {
        match tool {
            Tool::Overview => overview_section(&mut out, report, md),
            Tool::Ops => ops_section(&mut out, report, top, md),
            Tool::Hlo => hlo_section(&mut out, report, top, md, cpu),
            Tool::Roofline => roofline_section(&mut out, report, top, md),
            Tool::Memory => memory_section(&mut out, report, md),
            Tool::Kernels => kernels_section(&mut out, report, top, md, kernel_reason),
            Tool::Steps => {
                steps_section(&mut out, report, top, md);
                if let Some(m) = &report.multihost {
                    out.extend(super::multihost::sections(&super::multihost::MultiHostView::of(m), top, md));
                    out.extend(m.notes.iter().map(|n| format!("note: {n}")));
                }
            }
        }
    }
    out.extend(report.notes.iter().filter(|n| Some(*n) != kernel_reason).map(|note| format!("note: {note}")));
    out.join("\n")
}

/// The step time of a stored profile summary row with what it is: `21.411 ms (host step markers; device
/// 15.869 ms)`. `None` when the row has no step time.
pub fn summary_step_time(a: &AnalysisSummary) -> Option<String> {
    let ms = a.step_time_ms?;
    let mut what = Vec::new();
    if let Some(source) = a.details.get("step_time_source").and_then(|s| s.as_str()) {
        what.push(source.to_string());
    }
    if let Some(d) = a.details.get("device_step_time_ms").and_then(|d| d.as_f64()) {
        what.push(format!("device {}", duration_ms(d)));
    }
    let ms = duration_ms(ms);
    Some(if what.is_empty() { ms } else { format!("{ms} ({})", what.join("; ")) })
}

/// The header after the input: devices (on XLA:CPU captures the CPU count and threads the capture shows)
/// and hosts.
fn header(report: &ProfileReport) -> String {
    let hosts: Vec<&str> = report.files.iter().map(|f| f.host.as_str()).collect();
    let hosts = format!("{} host{}: {}", hosts.len(), if hosts.len() == 1 { "" } else { "s" }, hosts.join(", "));
    let d = &report.device;
    match d.cpu_threads {
        Some(t) if d.hardware == Hardware::CpuOnly && d.device_cores > 0 => format!(
            "{} × CPU (XLA:CPU: {} intra-op thread{}, {} of {} threads ran ops; {hosts})",
            d.device_cores,
            t.intra_op_threads,
            if t.intra_op_threads == 1 { "" } else { "s" },
            t.op_threads,
            t.threads
        ),
        _ if d.hardware == Hardware::CpuOnly => format!("CPU, core count unknown: no XLA:CPU op threads ({hosts})"),
        _ => format!("{} × {} ({hosts})", d.device_cores, d.device_type),
    }
}

/// `unknown` for a value the report leaves `null` (its note says why).
fn known(value: Option<String>) -> String {
    value.unwrap_or_else(|| "unknown (see notes)".to_string())
}

fn overview_section(out: &mut Vec<String>, report: &ProfileReport, md: bool) {
    let Some(o) = &report.overview else {
        return;
    };
    out.push(heading(md, "Overview"));
    let mut t = new_table(md, ["metric", "value"]);
    let step = if o.step_time_ms.n > 0 {
        let (mean, stddev) = (duration_ms(o.step_time_ms.mean), duration_ms(o.step_time_ms.stddev));
        let mut step = format!("{mean} ± {stddev} (n={})", o.step_time_ms.n);
        if let Some(source) = &o.step_time_source {
            step.push_str(&format!(", {source}"));
        }
        step
    } else {
        "no step markers".to_string()
    };
    t.add_row(["step time".to_string(), step]);
    if let Some(d) = &o.device_step_time_ms {
        t.add_row([
            "device step time".to_string(),
            format!("{} ± {} (first to last device op in each step)", duration_ms(d.mean), duration_ms(d.stddev)),
        ]);
    }
    t.add_row(["device duty cycle".to_string(), known(o.device_duty_cycle_percent.map(percent))]);
    t.add_row(["device idle".to_string(), known(o.device_idle_percent.map(percent))]);
    t.add_row(["FLOPS utilization".to_string(), known(o.flops_utilization.map(pct))]);
    // A CPU's roofline memory is its main memory.
    let cpu = report.device.hardware == Hardware::CpuOnly;
    let memory = if cpu { "memory BW utilization" } else { "HBM BW utilization" };
    t.add_row([memory.to_string(), known(o.hbm_bw_utilization.map(pct))]);
    let bound = o.bound_by.map(|b| match &o.bound_by_resource {
        Some(r) => format!("{b} ({r})"),
        None => b.to_string(),
    });
    t.add_row(["bound by".to_string(), known(bound)]);
    t.add_row([
        "operational intensity".to_string(),
        known(o.operational_intensity.map(|x| format!("{} FLOP/B", num(x)))),
    ]);
    let mfu = o.mfu.map(|m| {
        let mut v = pct(m);
        if let (Some(f), Some(source)) = (o.mfu_model_flops, &o.mfu_flops_source) {
            v.push_str(&format!(" ({} FLOPs a step from {source}", num(f)));
            if let Some(p) = o.mfu_peak_teraflops_per_second {
                let how = match o.peak_source {
                    falcon_analysis::device::PeakSource::Measured => "measured peak",
                    falcon_analysis::device::PeakSource::Given => "given peak",
                    _ => "peak",
                };
                let of = if cpu { format!("of {} cores", o.device_cores) } else { "a device".to_string() };
                v.push_str(&format!(", {how} {} TFLOP/s {of}", num(p)));
            }
            v.push(')');
        }
        v
    });
    t.add_row(["MFU".to_string(), known(mfu)]);
    if let Some(f) = o.capture_model_flops {
        let mut v = format!("{} (the capture's HLO)", num(f));
        if let Some(logged) = o.logged_model_flops {
            v.push_str(&format!(
                "; the workload logs {} ({})",
                num(logged),
                signed_percent(100.0 * (f / logged - 1.0))
            ));
        }
        t.add_row(["FLOPs a step".to_string(), v]);
    }
    if let Some(h) = o.hfu {
        t.add_row(["HFU (rematerialization counted)".to_string(), pct(h)]);
    }
    out.push(t.to_string());
    out.extend(o.notes.iter().map(|note| format!("note: {note}")));
    findings_section(out, report, md);
}

/// What to act on (GPU captures): one line per finding, largest share first, with the ops behind it.
fn findings_section(out: &mut Vec<String>, report: &ProfileReport, md: bool) {
    let Some(findings) = report.findings.as_ref().filter(|f| !f.is_empty()) else {
        return;
    };
    out.push(heading(md, "Findings"));
    for (i, f) in findings.iter().enumerate() {
        let bullet = if md { "-".to_string() } else { format!("{}.", i + 1) };
        out.push(format!("{bullet} {}", f.summary));
        if !f.ops.is_empty() {
            let ops: Vec<String> = f.ops.iter().map(|o| shorten(o, 60, 40)).collect();
            out.push(format!("   ops: {}", ops.join(", ")));
        }
    }
}

fn ops_section(out: &mut Vec<String>, report: &ProfileReport, top: usize, md: bool) {
    if let Some(cpu) = &report.cpu_ops {
        if cpu.ops.is_empty() {
            out.push("\nops: no XLA:CPU op events (events with an `hlo_op` stat) in the capture".to_string());
            return;
        }
        if let Some(b) = &report.time_breakdown {
            breakdown_section(out, b, top, md);
        }
        out.push(heading(md, &format!("XLA:CPU ops by total time ({} of {})", cpu.ops.len().min(top), cpu.ops.len())));
        let rows = &cpu.ops[..cpu.ops.len().min(top)];
        let total = TimeUnit::for_column_us(rows.iter().map(|r| r.total_time_us));
        let avg = TimeUnit::for_column_us(rows.iter().map(|r| r.avg_time_us));
        let (total_h, avg_h) = (format!("total {}", total.symbol()), format!("avg {}", avg.symbol()));
        let mut t = new_table(md, ["module", "op", "#", total_h.as_str(), avg_h.as_str()]);
        for r in rows {
            t.add_row([
                r.hlo_module.clone(),
                r.name.clone(),
                r.occurrences.to_string(),
                total.fmt(r.total_time_us),
                avg.fmt(r.avg_time_us),
            ]);
        }
        out.push(t.to_string());
        return;
    }
    if let Some(ops) = &report.framework_ops {
        framework_ops_section(out, report, ops, top, md);
        return;
    }
    let Some(trees) = &report.op_profile else {
        return;
    };
    let root = &trees.by_category;
    if root.children.is_empty() {
        out.push(
            "\nops: the op profile is empty: no HLO ops in the capture's device op metrics (see notes)".to_string(),
        );
        return;
    }
    let total = root.metrics.raw_time_ps.max(1) as f64;
    out.push(heading(
        md,
        &format!("Op profile by category ({} of {})", root.children.len().min(top), root.children.len()),
    ));
    let rows = &root.children[..root.children.len().min(top)];
    let unit = TimeUnit::for_column_us(rows.iter().map(|c| c.metrics.raw_time_ps as f64 / 1e6));
    let time = format!("time {}", unit.symbol());
    let mut t = new_table(md, ["category", "#", time.as_str(), "share"]);
    for c in rows {
        t.add_row([
            c.name.clone(),
            c.metrics.occurrences.to_string(),
            unit.fmt(c.metrics.raw_time_ps as f64 / 1e6),
            percent(100.0 * c.metrics.raw_time_ps as f64 / total),
        ]);
    }
    out.push(t.to_string());
}

/// "Where does the time go": op time and wall time, then the shares by category, name scope and source line.
fn breakdown_section(
    out: &mut Vec<String>,
    b: &falcon_analysis::profile::time_breakdown::TimeBreakdown,
    top: usize,
    md: bool,
) {
    let wall = b.wall_time_us.map_or("no steps".to_string(), |w| {
        format!("{} of {} step(s), {}× parallel", duration_us(w), b.steps, num(b.parallelism.unwrap_or(0.0)))
    });
    out.push(heading(md, &format!("Where the time goes: {} of op time ({wall})", duration_us(b.op_time_us))));
    for (title, rows) in [("category", &b.by_category), ("name scope", &b.by_scope), ("source line", &b.by_source)] {
        if rows.is_empty() {
            continue;
        }
        let unit = TimeUnit::for_column_us(rows.iter().take(top).map(|r| r.time_us));
        let time = format!("time {}", unit.symbol());
        let mut t = new_table(md, [title, "ops", time.as_str(), "share of op time"]);
        for r in rows.iter().take(top) {
            t.add_row([
                shorten(&r.name, KERNEL_NAME_MAX, KERNEL_NAME_KEPT),
                r.ops.to_string(),
                unit.fmt(r.time_us),
                pct(r.share),
            ]);
        }
        if rows.len() > top {
            let rest: f64 = rows[top..].iter().map(|r| r.share).sum();
            t.add_row([format!("({} more)", rows.len() - top), String::new(), String::new(), pct(rest)]);
        }
        out.push(t.to_string());
    }
    out.extend(b.notes.iter().map(|n| format!("note: {n}")));
}

fn hlo_section(out: &mut Vec<String>, report: &ProfileReport, top: usize, md: bool, cpu: bool) {
    let Some(rows) = &report.ops else {
        return;
    };
    if rows.is_empty() {
        out.push(if cpu {
            "\nhlo: XLA:CPU captures have no device op metrics, so no HLO stats (as in XProf); the per-op XLA:CPU \
             profile is `--tool ops` (`cpu_ops` in JSON)"
                .to_string()
        } else {
            "\nhlo: no HLO ops in the capture's device op metrics (see notes)".to_string()
        });
        return;
    }
    out.push(heading(md, &format!("Top HLO ops by self time ({} of {})", rows.len().min(top), rows.len())));
    let unit = TimeUnit::for_column_us(rows.iter().take(top).map(|r| r.self_time_us));
    let time = format!("self {}", unit.symbol());
    let bw = if cpu { "DRAM GiB/s" } else { "HBM GiB/s" };
    let mut t = new_table(md, ["program", "op", "category", "#", time.as_str(), "GFLOP/s", bw, "bound by"]);
    for r in rows.iter().take(top) {
        t.add_row([
            r.program_id.to_string(),
            r.name.clone(),
            r.category.clone(),
            r.occurrences.to_string(),
            unit.fmt(r.self_time_us),
            num(r.flop_rate_gflops),
            num(r.hbm_bw_gibs),
            bound_word(&r.bound_by),
        ]);
    }
    out.push(t.to_string());
}

/// An op row's XProf resource (`HBM`, `Compute`, …) in the one vocabulary, with the resource beside it.
fn bound_word(resource: &str) -> String {
    match BoundBy::from_xprof_resource(resource) {
        Some(BoundBy::Memory) => format!("memory ({resource})"),
        Some(b) => b.to_string(),
        None => "unknown".to_string(),
    }
}

fn roofline_section(out: &mut Vec<String>, report: &ProfileReport, top: usize, md: bool) {
    let Some(r) = &report.roofline else {
        return;
    };
    if !r.available {
        let why =
            r.notes.first().map_or("no device ops".to_string(), |n| n.trim_start_matches("no roofline: ").to_string());
        out.push(format!("\nroofline: {why}"));
        return;
    }
    out.push(heading(md, "Roofline"));
    let cpu = report.device.hardware == Hardware::CpuOnly;
    let (memory, per) = if cpu { ("DRAM", " (a core)") } else { ("HBM", "") };
    if r.peak_flop_rate_gflops > 0.0 {
        out.push(format!(
            "peak {} GFLOP/s, {memory} {} GiB/s, ridge point {} FLOP/B{per}",
            num(r.peak_flop_rate_gflops),
            num(r.peak_hbm_bw_gibs),
            num(r.ridge_point)
        ));
    }
    let p = &r.program;
    out.push(format!(
        "program: {} GFLOP/s, {memory} {} GiB/s, {} FLOP/B → bound by {}",
        num(p.measured_flop_rate_gflops),
        num(p.hbm_bw_gibs),
        num(p.operational_intensity),
        bound_word(&p.bound_by)
    ));
    if !r.points.is_empty() {
        let unit = TimeUnit::for_column_us(r.points.iter().take(top).map(|q| q.self_time_us));
        let time = format!("self {}", unit.symbol());
        let bw = format!("{memory} GiB/s");
        let mut t = new_table(md, ["op", "category", time.as_str(), "GFLOP/s", bw.as_str(), "FLOP/B", "bound by"]);
        for q in r.points.iter().take(top) {
            t.add_row([
                q.name.clone(),
                q.category.clone(),
                unit.fmt(q.self_time_us),
                num(q.measured_flop_rate_gflops),
                num(q.hbm_bw_gibs),
                num(q.operational_intensity),
                bound_word(&q.bound_by),
            ]);
        }
        out.push(t.to_string());
    }
    out.extend(r.notes.iter().map(|n| format!("note: roofline: {n}")));
}

fn memory_section(out: &mut Vec<String>, report: &ProfileReport, md: bool) {
    let Some(m) = &report.memory else {
        return;
    };
    if m.allocators.is_empty() {
        let why = m
            .notes
            .first()
            .map_or("no allocator events".to_string(), |n| n.trim_start_matches("no memory profile: ").to_string());
        out.push(format!("\nmemory: {why}"));
        return;
    }
    out.push(heading(md, "Memory"));
    let mut line = format!("peak {}", bytes(m.peak_bytes as f64));
    if let Some(a) = &m.peak_allocator {
        line.push_str(&format!(" on allocator `{a}`"));
    }
    if m.memory_capacity_bytes > 0 {
        line.push_str(&format!(" of {}", bytes(m.memory_capacity_bytes as f64)));
    }
    if m.leak_suspected {
        line.push_str("; memory grows step after step (leak suspected)");
    }
    out.push(line);
}

fn kernels_section(out: &mut Vec<String>, report: &ProfileReport, top: usize, md: bool, reason: Option<&String>) {
    let Some(kernels) = &report.kernels else {
        return;
    };
    if kernels.is_empty() {
        out.push(format!(
            "\nkernels: {}",
            reason.map_or("no GPU kernel events in the capture (kernel stats come from CUDA/ROCm kernels only)", |r| r)
        ));
        return;
    }
    out.push(heading(md, &format!("GPU kernels by total time ({} of {})", kernels.len().min(top), kernels.len())));
    let total: f64 = kernels.iter().map(|k| k.total_time_us).sum::<f64>().max(f64::MIN_POSITIVE);
    let tc: f64 = kernels.iter().filter(|k| k.is_kernel_using_tensor_core).map(|k| k.total_time_us).sum();
    let shown = &kernels[..kernels.len().min(top)];
    let sum = TimeUnit::for_column_us(shown.iter().map(|k| k.total_time_us));
    let each = TimeUnit::for_column_us(shown.iter().flat_map(|k| [k.avg_time_us, k.min_time_us, k.max_time_us]));
    let (s, e) = (sum.symbol(), each.symbol());
    let header = [
        "kernel".to_string(),
        "op".to_string(),
        "#".to_string(),
        format!("total {s}"),
        "share".to_string(),
        format!("avg {e}"),
        format!("min {e}"),
        format!("max {e}"),
        "TC".to_string(),
    ];
    let mut t = new_table(md, header);
    for k in shown {
        t.add_row([
            if md { k.name.clone() } else { shorten(&k.name, KERNEL_NAME_MAX, KERNEL_NAME_KEPT) },
            shorten(&k.op_name, 40, 30),
            k.occurrences.to_string(),
            sum.fmt(k.total_time_us),
            pct(k.total_time_us / total),
            each.fmt(k.avg_time_us),
            each.fmt(k.min_time_us),
            each.fmt(k.max_time_us),
            if k.is_kernel_using_tensor_core { "yes".to_string() } else { String::new() },
        ]);
    }
    out.push(t.to_string());
    out.push(format!("tensor cores: {} of kernel time", pct(tc / total)));
    if let Some(types) = report.kernel_types.as_ref().filter(|t| !t.is_empty()) {
        let parts: Vec<String> = types.iter().map(|t| format!("{} {} ({})", t.kind, pct(t.share), t.count)).collect();
        out.push(format!("device time by kind: {}", parts.join(", ")));
    }
    if let Some(l) = &report.launch {
        out.push(heading(md, "Launches"));
        out.push(format!(
            "{} kernels a step ({} launches with copies and memsets) over {} steps; kernels median {}, mean {}; \
             launch calls mean {}; launch to start median {} (p90 {}); a launch every {} of step time; {} of \
             kernels shorter than their launch call",
            num(l.kernels_per_step.round()),
            num(l.launches_per_step.round()),
            l.steps,
            duration_us(l.kernel_us.median),
            duration_us(l.kernel_us.mean),
            duration_us(l.launch_call_us.mean),
            duration_us(l.launch_delay_us.median),
            duration_us(l.launch_delay_us.p90),
            duration_us(l.host_us_per_launch),
            pct(l.kernels_shorter_than_launch)
        ));
        out.push(l.summary.clone());
    }
}

/// Device time by launching framework op (Chrome traces), and by scope.
fn framework_ops_section(
    out: &mut Vec<String>,
    report: &ProfileReport,
    ops: &[falcon_analysis::trace::kernels::FrameworkOpRow],
    top: usize,
    md: bool,
) {
    if ops.is_empty() {
        out.push("\nops: no device work with a known launching op in the trace".to_string());
        return;
    }
    let scopes = report.framework_scopes.as_deref().unwrap_or_default();
    for (title, rows) in [("Framework ops by device time", ops), ("Scopes by device time", scopes)] {
        if rows.is_empty() {
            continue;
        }
        out.push(heading(md, &format!("{title} ({} of {})", rows.len().min(top), rows.len())));
        let device = TimeUnit::for_column_us(rows.iter().take(top).map(|r| r.device_time_us));
        let host = TimeUnit::for_column_us(rows.iter().take(top).map(|r| r.host_time_us));
        let (device_h, host_h) = (format!("device {}", device.symbol()), format!("host {}", host.symbol()));
        let mut t = new_table(md, ["op", "launches", device_h.as_str(), "share", "host calls", host_h.as_str()]);
        for r in rows.iter().take(top) {
            t.add_row([
                shorten(&r.name, 70, 50),
                r.launches.to_string(),
                device.fmt(r.device_time_us),
                pct(r.device_share),
                r.host_calls.to_string(),
                host.fmt(r.host_time_us),
            ]);
        }
        out.push(t.to_string());
    }
}

fn steps_section(out: &mut Vec<String>, report: &ProfileReport, top: usize, md: bool) {
    let Some(s) = &report.steps else {
        return;
    };
    if s.steps.is_empty() {
        out.push(
            "\nsteps: no step markers in the capture (no device `Steps` line, no `train…`/`test…` step annotation)"
                .to_string(),
        );
        return;
    }
    out.push(heading(
        md,
        &format!("Steps ({} of {}, from {})", s.steps.len().min(top), s.steps.len(), serde_name(&s.source)),
    ));
    let first = s.steps.first().map_or(0, |st| st.start_ps);
    let shown = &s.steps[..s.steps.len().min(top)];
    let start = TimeUnit::for_column_us(shown.iter().map(|st| (st.start_ps - first) as f64 / 1e6));
    let duration = TimeUnit::for_column_us(shown.iter().map(|st| st.duration_ps as f64 / 1e6));
    let (start_h, duration_h) = (format!("start {}", start.symbol()), format!("duration {}", duration.symbol()));
    let mut t = new_table(md, ["step", start_h.as_str(), duration_h.as_str()]);
    for st in shown {
        t.add_row([
            st.step_num.to_string(),
            start.fmt((st.start_ps - first) as f64 / 1e6),
            duration.fmt(st.duration_ps as f64 / 1e6),
        ]);
    }
    out.push(t.to_string());
    out.push(format!(
        "step time {} ± {} (n={})",
        duration_ms(s.step_time_ms.mean),
        duration_ms(s.step_time_ms.stddev),
        s.step_time_ms.n
    ));
}

/// `profile trace`'s report: the header line, where the step time goes, the first `top` steps, collective
/// overlap, the longest idle gaps, the host-bound verdict and the notes. One string, lines separated by `\n`,
/// no final newline.
pub fn trace(run: &TraceRun, top: usize, markdown: bool) -> String {
    let md = markdown;
    let r = &run.report;
    let mut out = Vec::new();
    if md {
        out.push(format!("# Trace analysis of `{}`", run.resolved.input));
    }
    // Hosts are named when the run has several.
    let several_hosts = r.devices.iter().any(|d| r.devices.first().is_some_and(|f| f.host != d.host));
    let mut devices: Vec<String> = r
        .devices
        .iter()
        .map(|d| if several_hosts { format!("{}: {}", d.host, d.name) } else { d.name.clone() })
        .collect();
    let count = devices.len();
    if count > 8 {
        devices.truncate(8);
        devices.push(format!("… {} more", count - 8));
    }
    out.push(format!(
        "{} — {} device(s): {}; {} events; steps by {} ({})",
        run.resolved.input,
        count,
        devices.join(", "),
        run.events_read,
        serde_name(&r.step_detection.rule),
        r.step_detection.steps
    ));
    if let Some(t) = &r.total {
        out.push(heading(md, "Where the step time goes (all steps, mean over devices)"));
        let share = |x: f64| if t.duration_us > 0.0 { percent(100.0 * x / t.duration_us) } else { "—".into() };
        let rows = [
            ("compute", t.compute_us),
            ("collective: waiting for peers", t.wait_for_peers_us),
            ("collective: transfer (exposed)", t.transfer_us),
            ("memcpy / infeed-outfeed", t.memcpy_us),
            ("host wait (device waits on the host)", t.host_wait_us),
            ("other", t.other_us),
            ("idle", t.idle_us),
        ];
        let unit = TimeUnit::for_column_us(rows.iter().map(|(_, v)| *v).chain([t.hidden_collective_us]));
        let mut table = new_table(md, ["category", unit.symbol(), "share"]);
        for (name, v) in rows {
            table.add_row([name.to_string(), unit.fmt(v), share(v)]);
        }
        table.add_row([
            "collective hidden under compute".to_string(),
            unit.fmt(t.hidden_collective_us),
            "(beside)".to_string(),
        ]);
        out.push(table.to_string());
    }
    if !r.steps.is_empty() {
        out.push(heading(md, &format!("Steps ({} of {})", r.steps.len().min(top), r.steps.len())));
        // One unit for the row's times: the durations' (every other column is a part of one).
        let unit = TimeUnit::for_column_us(r.steps.iter().take(top).map(|s| s.breakdown.duration_us));
        let duration = format!("duration {}", unit.symbol());
        let mut table = new_table(
            md,
            ["step", duration.as_str(), "compute", "wait for peers", "transfer", "memcpy", "host wait", "idle"],
        );
        for s in r.steps.iter().take(top) {
            let b = &s.breakdown;
            table.add_row([
                s.step.to_string(),
                unit.fmt(b.duration_us),
                unit.fmt(b.compute_us),
                unit.fmt(b.wait_for_peers_us),
                unit.fmt(b.transfer_us),
                unit.fmt(b.memcpy_us),
                unit.fmt(b.host_wait_us),
                unit.fmt(b.idle_us),
            ]);
        }
        out.push(table.to_string());
    }
    out.extend(super::multihost::sections(
        &super::multihost::MultiHostView {
            hosts: &r.hosts,
            collectives: &r.collectives,
            late_steps: &r.late_steps,
            straggler: r.straggler.as_ref(),
        },
        top,
        md,
    ));
    if !r.overlap.is_empty() {
        out.push(heading(md, "Collectives: hidden under compute vs exposed"));
        let unit = TimeUnit::for_column_us(r.overlap.iter().map(|o| o.total_us));
        let (total, exposed) = (format!("total {}", unit.symbol()), format!("exposed {}", unit.symbol()));
        let mut table = new_table(md, ["kind", total.as_str(), exposed.as_str(), "hidden"]);
        for o in &r.overlap {
            table.add_row([
                o.kind.clone(),
                unit.fmt(o.total_us),
                unit.fmt(o.exposed_us),
                percent(100.0 * o.hidden_fraction),
            ]);
        }
        out.push(table.to_string());
    }
    if !r.gaps.is_empty() {
        out.push(heading(md, "Longest device idle gaps"));
        let start = TimeUnit::for_column_us(r.gaps.iter().map(|g| g.start_us));
        let duration = TimeUnit::for_column_us(r.gaps.iter().map(|g| g.duration_us));
        let (start_h, duration_h) = (format!("start {}", start.symbol()), format!("duration {}", duration.symbol()));
        let mut table =
            new_table(md, ["device", start_h.as_str(), duration_h.as_str(), "waited for", "host meanwhile"]);
        for g in &r.gaps {
            let host: Vec<String> = g
                .host_activity
                .iter()
                .take(3)
                .map(|h| match h.activity {
                    HostActivityKind::Work => format!("{} ({})", h.name, duration_us(h.overlap_us)),
                    HostActivityKind::Wait => {
                        format!("{} ({}, waiting on the device)", h.name, duration_us(h.overlap_us))
                    }
                    HostActivityKind::DeviceRuntime | HostActivityKind::Wrapper => {
                        format!("{} ({}, device runtime)", h.name, duration_us(h.overlap_us))
                    }
                })
                .collect();
            let on = r.devices.iter().find(|d| d.device == g.device).map_or("", |d| d.host.as_str());
            table.add_row([
                if several_hosts { format!("{on}: {}", g.device_name) } else { g.device_name.clone() },
                start.fmt(g.start_us),
                duration.fmt(g.duration_us),
                match g.cause {
                    Some(falcon_analysis::trace::launch::GapCause::HostWait) => "the host's launch".to_string(),
                    Some(falcon_analysis::trace::launch::GapCause::KernelWait) => "queued work".to_string(),
                    None => "—".to_string(),
                },
                host.join("; "),
            ]);
        }
        out.push(table.to_string());
    }
    if let Some(h) = &r.host_bound {
        out.push(format!(
            "\nhost-bound: {} of step time the device waits on the host (the breakdown's host wait: {} of {}) → {}",
            percent(100.0 * h.fraction),
            duration_us(h.host_wait_us),
            duration_us(h.step_time_us),
            h.bound_by.map_or_else(|| format!("not host-bound (verdict {})", h.verdict), |b| format!("bound by {b}"))
        ));
        out.push(match r.host_wait_rule {
            Some(falcon_analysis::trace::launch::HostWaitRule::Launch) => "host wait by the launch: an idle gap is \
                host wait when the work that ended it was launched after it began (HTA's rule)"
                .to_string(),
            Some(falcon_analysis::trace::launch::HostWaitRule::HostActivity) => "host wait by host activity: the \
                trace records no launch calls, so idle time is host wait while a host thread works"
                .to_string(),
            None => "host wait: by the launch on devices whose trace records launches, else by host activity".into(),
        });
    }
    if let Some(t) = r.total.filter(|t| t.kernel_wait_us > 0.0) {
        out.push(format!(
            "kernel wait: {} of the idle time ended in work queued before the gap (a dependency or a sync)",
            duration_us(t.kernel_wait_us)
        ));
    }
    if let Some(o) = &r.profiler_overhead {
        out.push(o.summary.clone());
    }
    out.extend(r.notes.iter().map(|note| format!("note: {note}")));
    out.join("\n")
}

/// A section heading: `## text` between blank lines in Markdown, else a blank line and the text.
fn heading(markdown: bool, text: &str) -> String {
    if markdown {
        format!("\n## {text}\n")
    } else {
        format!("\n{text}")
    }
}

fn pct(fraction: f64) -> String {
    fraction_percent(Some(fraction))
}

/// The name a unit enum serializes as (`?` for anything else).
fn serde_name<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_else(|| "?".into())
}

#[cfg(test)]
mod tests {
    use super::{shorten, KERNEL_NAME_KEPT, KERNEL_NAME_MAX};

    #[test]
    fn short_names_are_kept_whole() {
        let name = "x".repeat(KERNEL_NAME_MAX);
        assert_eq!(shorten(&name, KERNEL_NAME_MAX, KERNEL_NAME_KEPT), name);
        assert_eq!(shorten("", KERNEL_NAME_MAX, KERNEL_NAME_KEPT), "");
    }

    #[test]
    fn long_ascii_names_keep_77_characters_and_an_ellipsis() {
        let name = "k".repeat(KERNEL_NAME_MAX + 1);
        let short = shorten(&name, KERNEL_NAME_MAX, KERNEL_NAME_KEPT);
        assert_eq!(short, format!("{}…", "k".repeat(KERNEL_NAME_KEPT)));
    }

    #[test]
    fn a_cut_inside_a_multi_byte_character_does_not_panic() {
        // Byte 77 falls inside the third byte of a four-byte character: a byte slice would panic there.
        let name = format!("{}𝛼{}", "a".repeat(75), "b".repeat(10));
        assert!(!name.is_char_boundary(KERNEL_NAME_KEPT));
        let short = shorten(&name, KERNEL_NAME_MAX, KERNEL_NAME_KEPT);
        assert_eq!(short, format!("{}𝛼b…", "a".repeat(75)));
        assert_eq!(short.chars().count(), KERNEL_NAME_KEPT + 1);
        // Over 80 bytes but not over 80 characters: whole.
        let wide = "é".repeat(60);
        assert!(wide.len() > KERNEL_NAME_MAX);
        assert_eq!(shorten(&wide, KERNEL_NAME_MAX, KERNEL_NAME_KEPT), wide);
    }
}
