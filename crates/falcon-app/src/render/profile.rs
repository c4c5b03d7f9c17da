//! `profile analyze` and `profile trace` reports as terminal tables or Markdown: one renderer per report, the
//! format chosen by `markdown` (headings and Markdown tables, else plain headings and box tables), so both
//! forms show the same rows and numbers. JSON is the report structs themselves.

use super::compare_table::new_table;
use falcon_analysis::device::Hardware;
use falcon_analysis::profile::ProfileReport;
use falcon_analysis::service::{ResolvedProfile, TraceRun};

/// The longest kernel name a terminal table shows whole; longer ones keep [`KERNEL_NAME_KEPT`] characters and
/// end in `…` (Markdown shows every name whole).
const KERNEL_NAME_MAX: usize = 80;
/// The characters a shortened kernel name keeps before its `…`.
const KERNEL_NAME_KEPT: usize = 77;

/// `profile analyze`'s report of `resolved`: its header line, then overview, top HLO ops, XLA:CPU ops,
/// roofline, memory and GPU kernels (at most `top` rows per table), then the report's notes. One string, lines
/// separated by `\n`, no final newline.
pub fn analysis(resolved: &ResolvedProfile, report: &ProfileReport, top: usize, markdown: bool) -> String {
    let md = markdown;
    let mut out = Vec::new();
    let hosts: Vec<&str> = report.files.iter().map(|f| f.host.as_str()).collect();
    if md {
        out.push(format!("# Profile analysis of `{}`", resolved.input));
    }
    out.push(format!(
        "{} — {} × {} ({} host{}: {})",
        resolved.input,
        report.device.device_cores,
        report.device.device_type,
        hosts.len(),
        if hosts.len() == 1 { "" } else { "s" },
        hosts.join(", ")
    ));
    if let Some(o) = &report.overview {
        out.push(heading(md, "Overview"));
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
        } else {
            t.add_row(["device duty cycle".to_string(), format!("{:.1}%", o.device_duty_cycle_percent)]);
            t.add_row(["device idle".to_string(), format!("{:.1}%", o.device_idle_percent)]);
            t.add_row(["FLOPS utilization".to_string(), pct(o.flops_utilization)]);
            t.add_row(["HBM BW utilization".to_string(), pct(o.hbm_bw_utilization)]);
            t.add_row(["bound by".to_string(), o.bound_by.clone()]);
            t.add_row(["operational intensity".to_string(), format!("{:.4} FLOP/B", o.operational_intensity)]);
            t.add_row(["MFU".to_string(), o.mfu.map_or("n/a".to_string(), pct)]);
        }
        out.push(t.to_string());
    }
    if let Some(rows) = report.ops.as_ref().filter(|rows| !rows.is_empty()) {
        out.push(heading(md, &format!("Top HLO ops by self time ({} of {})", rows.len().min(top), rows.len())));
        let mut t = new_table(md, ["program", "op", "category", "#", "self µs", "GFLOP/s", "HBM GiB/s", "bound by"]);
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
        out.push(t.to_string());
    }
    if let Some(cpu) = report.cpu_ops.as_ref().filter(|cpu| !cpu.ops.is_empty()) {
        out.push(heading(md, &format!("XLA:CPU ops by total time ({} of {})", cpu.ops.len().min(top), cpu.ops.len())));
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
        out.push(t.to_string());
    }
    if let Some(r) = report.roofline.as_ref().filter(|r| r.peak_flop_rate_gflops > 0.0) {
        out.push(heading(md, "Roofline"));
        out.push(format!(
            "peak {:.0} GFLOP/s, HBM {:.1} GiB/s, ridge point {:.2} FLOP/B",
            r.peak_flop_rate_gflops, r.peak_hbm_bw_gibs, r.ridge_point
        ));
    }
    if let Some(m) = report.memory.as_ref().filter(|m| m.peak_bytes > 0) {
        out.push(heading(md, "Memory"));
        out.push(format!("peak {:.2} GiB", m.peak_bytes as f64 / (1u64 << 30) as f64));
    }
    if let Some(kernels) = report.kernels.as_ref().filter(|k| !k.is_empty()) {
        out.push(heading(md, &format!("GPU kernels by total time ({} of {})", kernels.len().min(top), kernels.len())));
        let mut t = new_table(md, ["kernel", "#", "total µs", "avg µs", "min µs", "max µs"]);
        for k in kernels.iter().take(top) {
            t.add_row([
                if md { k.name.clone() } else { shorten(&k.name, KERNEL_NAME_MAX, KERNEL_NAME_KEPT) },
                k.occurrences.to_string(),
                format!("{:.1}", k.total_time_us),
                format!("{:.2}", k.avg_time_us),
                format!("{:.2}", k.min_time_us),
                format!("{:.2}", k.max_time_us),
            ]);
        }
        out.push(t.to_string());
    }
    out.extend(report.notes.iter().map(|note| format!("note: {note}")));
    out.join("\n")
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
    let devices: Vec<String> = r.devices.iter().map(|d| d.name.clone()).collect();
    out.push(format!(
        "{} — {} device(s): {}; {} events; steps by {} ({})",
        run.resolved.input,
        devices.len(),
        devices.join(", "),
        run.events_read,
        serde_name(&r.step_detection.rule),
        r.step_detection.steps
    ));
    if let Some(t) = &r.total {
        out.push(heading(md, "Where the step time goes (all steps, mean over devices)"));
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
        out.push(table.to_string());
    }
    if !r.steps.is_empty() {
        out.push(heading(md, &format!("Steps ({} of {})", r.steps.len().min(top), r.steps.len())));
        let mut table = new_table(md, ["step", "duration µs", "compute", "collective", "memcpy", "host wait", "idle"]);
        for s in r.steps.iter().take(top) {
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
        out.push(table.to_string());
    }
    if !r.overlap.is_empty() {
        out.push(heading(md, "Collectives: hidden under compute vs exposed"));
        let mut table = new_table(md, ["kind", "total µs", "exposed µs", "hidden"]);
        for o in &r.overlap {
            table.add_row([
                o.kind.clone(),
                format!("{:.1}", o.total_us),
                format!("{:.1}", o.exposed_us),
                format!("{:.1}%", 100.0 * o.hidden_fraction),
            ]);
        }
        out.push(table.to_string());
    }
    if !r.gaps.is_empty() {
        out.push(heading(md, "Longest device idle gaps"));
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
        out.push(table.to_string());
    }
    if let Some(h) = &r.host_bound {
        out.push(format!(
            "\nhost-bound: {:.1}% of step time the device waits on the host → {}",
            100.0 * h.fraction,
            serde_name(&h.verdict)
        ));
    }
    out.extend(r.notes.iter().map(|note| format!("note: {note}")));
    out.join("\n")
}

/// `s` whole when it has at most `max` characters, else its first `kept` characters and `…`. Counts
/// characters, not bytes, so a name with multi-byte characters is never cut inside one.
pub fn shorten(s: &str, max: usize, kept: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(kept).collect();
    out.push('…');
    out
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
    format!("{:.2}%", fraction * 100.0)
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
