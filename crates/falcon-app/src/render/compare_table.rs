//! The profile comparison as terminal tables, and the section builder the Markdown report (`compare_md`)
//! shares, so the terminal and the Markdown report show the same rows with the same numbers.
//!
//! Numbers are the comparison's JSON values at fixed precision: times in µs with 3 decimals, step times in
//! ms with 3 decimals, relative changes as percents with 2 decimals (signed), MFU as a percent with 4
//! decimals, FLOP rates in GFLOP/s with 2 decimals, operational intensity in FLOP/byte with 3 decimals,
//! memory in MiB with 3 decimals, match confidences with 2 decimals. Sections, in order: header, step time,
//! MFU and totals, memory, top regressions and top improvements (matched ops only), added ops (B only) and
//! removed ops (A only) by self time, categories, roofline changes, matching.

use comfy_table::Table;

use super::text::{dus, mfu_pct, ms_of_s, new_table, p_value, rel_pct, sections_to_text, shorten, us, Part, Section};
use falcon_analysis::compare::{MatchedBy, OpChange, OpSource, OpStatus, ProfileComparison, Side, TimeDelta};
use falcon_core::stats::Verdict;
use falcon_exp::diff::Change;

/// Plain-text tables for a terminal.
pub fn render(c: &ProfileComparison, top: usize) -> String {
    render_with(c, top, None)
}

/// [`render`] with the experiments' config diff after the header (when both inputs were experiments).
pub fn render_with(c: &ProfileComparison, top: usize, config_diff: Option<&[Change]>) -> String {
    sections_to_text(&sections(c, top, false, config_diff))
}

fn mib(bytes: f64) -> String {
    format!("{:.3}", bytes / (1u64 << 20) as f64)
}

fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map_or_else(|| "—".to_string(), f)
}

/// `A → B` of two optional words; `—` when both are absent.
fn arrow(a: Option<&str>, b: Option<&str>) -> String {
    if a.is_none() && b.is_none() {
        return "—".to_string();
    }
    format!("{} → {}", a.unwrap_or("—"), b.unwrap_or("—"))
}

/// A name for a cell: Markdown gets backticks and escaped pipes.
fn code(markdown: bool, s: &str) -> String {
    if markdown {
        format!("`{}`", s.replace('|', "\\|").replace('`', "'"))
    } else {
        // Terminal cells keep a long name (a templated C++ kernel) to its head and an ellipsis.
        shorten(s, 100, 80)
    }
}

/// Plain text for a Markdown cell (pipes escaped); unchanged for the terminal.
fn cell(markdown: bool, s: &str) -> String {
    if markdown {
        s.replace('|', "\\|")
    } else {
        s.to_string()
    }
}

fn bold(markdown: bool, s: &str) -> String {
    if markdown {
        format!("**{s}**")
    } else {
        s.to_string()
    }
}

fn status_word(s: OpStatus) -> &'static str {
    match s {
        OpStatus::Matched => "matched",
        OpStatus::Added => "added",
        OpStatus::Removed => "removed",
    }
}

fn side_device(s: &Side) -> String {
    if s.hardware == "cpu" {
        format!("{} (cpu)", s.device_type)
    } else {
        format!("{} × {} ({})", s.device_cores, s.device_type, s.hardware)
    }
}

/// The sentence of a verdict: change, interval, p-value, word.
pub fn verdict_line(v: &Verdict, markdown: bool) -> String {
    let margin = v.min_effect.map(|e| format!(" vs margin ±{:.1}%", e * 100.0)).unwrap_or_default();
    let ci = match (v.ci_low_rel, v.ci_high_rel) {
        (Some(lo), Some(hi)) => format!(" (CI {} … {}{margin})", rel_pct(Some(lo)), rel_pct(Some(hi))),
        _ => String::new(),
    };
    let mut line = format!(
        "{}: Δ median {}{}, p-value {}, n = {} vs {} → {}",
        v.metric,
        rel_pct(v.delta_rel),
        ci,
        p_value(v.p_value),
        v.a.n,
        v.b.n,
        bold(markdown, v.verdict.as_str())
    );
    let evidence = super::verdict::evidence(v);
    if !evidence.is_empty() {
        line.push_str(&format!(" ({evidence})"));
    }
    line
}

/// How a matched op was paired and how sure it is (`fingerprint 0.93`); `—` for added and removed ops.
pub fn match_cell(o: &OpChange) -> String {
    match (o.matched_by, o.confidence) {
        (Some(by), Some(c)) => format!("{} {c:.2}", matched_by_word(by)),
        (Some(by), None) => matched_by_word(by).to_string(),
        _ => "—".to_string(),
    }
}

fn matched_by_word(by: MatchedBy) -> &'static str {
    match by {
        MatchedBy::Name => "name",
        MatchedBy::DeduplicatedName => "deduplicated name",
        MatchedBy::Fingerprint => "fingerprint",
    }
}

fn op_table(markdown: bool, ops: &[OpChange]) -> Table {
    let mut t = new_table(
        markdown,
        ["op", "category", "status", "A µs", "B µs", "Δ µs", "Δ %", "bound by A → B", "FLOPs B/A", "match"],
    );
    for o in ops {
        let mut name = code(markdown, &o.name);
        if let Some(a) = &o.a_name {
            name.push_str(&format!(" (A: {})", code(markdown, a)));
        }
        t.add_row([
            name,
            cell(markdown, &o.category),
            status_word(o.status).to_string(),
            us(o.a_self_time_us),
            us(o.b_self_time_us),
            dus(o.delta_us),
            if o.status == OpStatus::Added { "new".to_string() } else { rel_pct(o.delta_rel) },
            arrow(o.a_bound_by.as_deref(), o.b_bound_by.as_deref()),
            opt(o.flops_ratio, |r| format!("{r:.3}")),
            match_cell(o),
        ]);
    }
    t
}

/// Ops of one side only (added or removed): name, program, category, occurrences and self time on that side.
fn one_side_table(markdown: bool, ops: &[OpChange], added: bool) -> Table {
    let side = if added { "B" } else { "A" };
    let mut t = new_table(
        markdown,
        ["op".to_string(), "program".to_string(), "category".to_string(), "count".to_string(), format!("{side} µs")],
    );
    for o in ops {
        let (count, us_) =
            if added { (o.b_occurrences, o.b_self_time_us) } else { (o.a_occurrences, o.a_self_time_us) };
        t.add_row([
            code(markdown, &o.name),
            code(markdown, &o.program),
            cell(markdown, &o.category),
            count.to_string(),
            us(us_),
        ]);
    }
    t
}

fn time_row(t: &mut Table, label: &str, d: &TimeDelta) {
    t.add_row([label.to_string(), us(d.a_us), us(d.b_us), dus(d.delta_us), rel_pct(d.delta_rel)]);
}

/// The report's sections, for the terminal (`markdown` false) or Markdown. The first is the header; its
/// title is the report title.
pub fn sections(c: &ProfileComparison, top: usize, markdown: bool, config_diff: Option<&[Change]>) -> Vec<Section> {
    let md = markdown;
    let mut out = Vec::new();

    // Header.
    let mut parts = Vec::new();
    let mut t = new_table(md, ["", "A (baseline)", "B (candidate)"]);
    t.add_row(["input".to_string(), code(md, &c.a.input), code(md, &c.b.input)]);
    t.add_row(["device".to_string(), cell(md, &side_device(&c.a)), cell(md, &side_device(&c.b))]);
    let hosts = |s: &Side| cell(md, &s.files.iter().map(|f| f.host.as_str()).collect::<Vec<_>>().join(", "));
    t.add_row(["hosts".to_string(), hosts(&c.a), hosts(&c.b)]);
    t.add_row(["profiled steps".to_string(), c.a.step_times_ms.len().to_string(), c.b.step_times_ms.len().to_string()]);
    t.add_row(["ops".to_string(), c.a.ops.to_string(), c.b.ops.to_string()]);
    parts.push(Part::Table(t));
    parts.push(Part::Text(match c.op_source {
        OpSource::Device => "op source: device op databases (self times, FLOPs, bytes, roofline)".to_string(),
        OpSource::XlaCpu => "op source: XLA:CPU op profiles (times only)".to_string(),
        OpSource::Kernels => "op source: GPU kernels by name (times only; categories are kernel families)".to_string(),
    }));
    let notes: Vec<String> = c
        .notes
        .iter()
        .map(|n| format!("note: {n}"))
        .chain(c.a.notes.iter().map(|n| format!("note (A): {n}")))
        .chain(c.b.notes.iter().map(|n| format!("note (B): {n}")))
        .collect();
    if !notes.is_empty() {
        let prefix = if md { "- " } else { "" };
        parts.push(Part::Text(notes.iter().map(|n| format!("{prefix}{}", cell(md, n))).collect::<Vec<_>>().join("\n")));
    }
    out.push(Section {
        title: format!("Profile comparison: {} → {}", code(md, &c.a.input), code(md, &c.b.input)),
        parts,
    });

    // Config diff of two experiments.
    if let Some(changes) = config_diff {
        let mut parts = Vec::new();
        if changes.is_empty() {
            parts.push(Part::Text("no differences".to_string()));
        } else {
            let mut t = new_table(md, ["path", "group", "A", "B"]);
            for ch in changes {
                t.add_row([
                    code(md, &ch.path),
                    ch.group.as_str().to_string(),
                    code(md, &falcon_exp::diff::show(ch.a.as_ref())),
                    code(md, &falcon_exp::diff::show(ch.b.as_ref())),
                ]);
            }
            parts.push(Part::Table(t));
        }
        out.push(Section {
            title: format!("Config diff ({} change{})", changes.len(), if changes.len() == 1 { "" } else { "s" }),
            parts,
        });
    }

    // Step time.
    let v = &c.step_time;
    let mut t = new_table(md, ["", "n", "median ms", "mean ms"]);
    t.add_row(["A".to_string(), v.a.n.to_string(), ms_of_s(v.a.median), ms_of_s(v.a.mean)]);
    t.add_row(["B".to_string(), v.b.n.to_string(), ms_of_s(v.b.median), ms_of_s(v.b.mean)]);
    let mut parts = vec![Part::Table(t), Part::Text(verdict_line(v, md))];
    for n in &v.notes {
        parts.push(Part::Text(format!("note: {}", cell(md, n))));
    }
    out.push(Section { title: "Step time".to_string(), parts });

    // MFU and totals.
    let mut t = new_table(md, ["", "A", "B", "Δ", "Δ %"]);
    t.add_row([
        "MFU".to_string(),
        mfu_pct(c.mfu.a),
        mfu_pct(c.mfu.b),
        opt(c.mfu.delta, |d| format!("{:+.4} pp", d * 100.0)),
        "".to_string(),
    ]);
    time_row(&mut t, "op time µs", &c.totals.op_time);
    if let Some(d) = &c.totals.idle_time {
        time_row(&mut t, "idle time µs", d);
    }
    if let Some(d) = &c.totals.total_time {
        time_row(&mut t, "total time µs", d);
    }
    let mut parts = vec![Part::Table(t)];
    if let Some(v) = &c.mfu.verdict {
        parts.push(Part::Text(verdict_line(v, md)));
    } else if c.mfu.a.is_none() && c.mfu.b.is_none() {
        parts.push(Part::Text("MFU: unknown (the profiles carry no model FLOPs)".to_string()));
    }
    out.push(Section { title: "MFU and totals".to_string(), parts });

    // Memory.
    if let Some(m) = &c.memory {
        let mut t = new_table(md, ["", "A", "B", "Δ"]);
        t.add_row([
            "peak MiB".to_string(),
            mib(m.a_peak_bytes as f64),
            mib(m.b_peak_bytes as f64),
            format!("{:+.3}", m.delta_peak_bytes as f64 / (1u64 << 20) as f64),
        ]);
        t.add_row([
            "step growth MiB/step".to_string(),
            opt(m.a_step_growth_bytes, mib),
            opt(m.b_step_growth_bytes, mib),
            opt(m.delta_step_growth_bytes, |d| format!("{:+.3}", d / (1u64 << 20) as f64)),
        ]);
        t.add_row([
            "leak suspected".to_string(),
            m.a_leak_suspected.to_string(),
            m.b_leak_suspected.to_string(),
            "".to_string(),
        ]);
        out.push(Section { title: "Memory (headline allocator)".to_string(), parts: vec![Part::Table(t)] });
    }

    if let Some(section) = super::multihost::compare_section(c, top, md) {
        out.push(section);
    }

    // Ranked op lists: matched ops by their change, then the ops of one side only by their self time.
    let matched = |o: &&OpChange| o.status == OpStatus::Matched;
    for (word, list, total) in [
        ("regressions", &c.regressions, c.ops.iter().filter(matched).filter(|o| o.delta_ps > 0).count()),
        ("improvements", &c.improvements, c.ops.iter().filter(matched).filter(|o| o.delta_ps < 0).count()),
    ] {
        let shown: Vec<OpChange> = list.iter().take(top).cloned().collect();
        let what = if word == "regressions" { "slower" } else { "faster" };
        let title =
            format!("Top {word} ({} of {total} {what} matched op{})", shown.len(), if total == 1 { "" } else { "s" });
        let parts = if shown.is_empty() {
            vec![Part::Text("none".to_string())]
        } else {
            vec![Part::Table(op_table(md, &shown))]
        };
        out.push(Section { title, parts });
    }
    for (list, total, added) in [(&c.added, c.matching.added, true), (&c.removed, c.matching.removed, false)] {
        let shown: Vec<OpChange> = list.iter().take(top).cloned().collect();
        let (word, side) = if added { ("Added", "B") } else { ("Removed", "A") };
        let title = format!("{word} ops ({side} only; {} of {total}, most self time first)", shown.len());
        let parts = if shown.is_empty() {
            vec![Part::Text("none".to_string())]
        } else {
            vec![Part::Table(one_side_table(md, &shown, added))]
        };
        out.push(Section { title, parts });
    }

    // Categories: all in Markdown, the top N on a terminal.
    let n = if md { c.categories.len() } else { c.categories.len().min(top) };
    let device = c.op_source == OpSource::Device;
    let mut header = vec!["category", "ops A/B", "A µs", "B µs", "Δ µs", "Δ %"];
    if device {
        header.push("GFLOP/s A → B");
    }
    let mut t = new_table(md, header);
    for k in c.categories.iter().take(n) {
        let mut row = vec![
            cell(md, &k.category),
            format!("{}/{}", k.a_ops, k.b_ops),
            us(k.a_self_time_us),
            us(k.b_self_time_us),
            dus(k.delta_us),
            rel_pct(k.delta_rel),
        ];
        if device {
            row.push(format!(
                "{} → {}",
                opt(k.a_flop_rate, |r| format!("{r:.2}")),
                opt(k.b_flop_rate, |r| format!("{r:.2}"))
            ));
        }
        t.add_row(row);
    }
    let title = if n < c.categories.len() {
        format!("Categories (top {n} of {} by |Δ|)", c.categories.len())
    } else {
        format!("Categories ({})", c.categories.len())
    };
    out.push(Section { title, parts: vec![Part::Table(t)] });

    // Roofline: ops that crossed the ridge, then the top N by B's self time.
    if !c.roofline.is_empty() {
        let mut parts = Vec::new();
        if let Some(p) = &c.roofline_peaks {
            parts.push(Part::Text(format!(
                "ridge point A {:.3} FLOP/B, B {:.3} FLOP/B; peaks A {:.2} GFLOP/s, {:.2} GiB/s; B {:.2} GFLOP/s, {:.2} GiB/s",
                p.a_ridge_point, p.b_ridge_point, p.a_peak_flop_rate, p.a_peak_hbm_bw, p.b_peak_flop_rate, p.b_peak_hbm_bw
            )));
        }
        let crossed: Vec<_> = c.roofline.iter().filter(|r| r.crossed_ridge).collect();
        let rest = c.roofline.iter().filter(|r| !r.crossed_ridge).take(top);
        let mut t = new_table(
            md,
            ["op", "category", "A OI", "A GFLOP/s", "B OI", "B GFLOP/s", "bound by A → B", "crossed ridge", "B µs"],
        );
        for r in crossed.iter().copied().chain(rest) {
            t.add_row([
                code(md, &r.name),
                cell(md, &r.category),
                format!("{:.3}", r.a_oi),
                format!("{:.2}", r.a_flop_rate),
                format!("{:.3}", r.b_oi),
                format!("{:.2}", r.b_flop_rate),
                format!("{} → {}", r.a_bound_by, r.b_bound_by),
                if r.crossed_ridge { "yes".to_string() } else { "no".to_string() },
                us(r.b_self_time_us),
            ]);
        }
        parts.push(Part::Table(t));
        out.push(Section {
            title: format!(
                "Roofline changes ({} crossed the ridge, {} ops with cost data)",
                crossed.len(),
                c.roofline.len()
            ),
            parts,
        });
    }

    // Matching.
    let m = &c.matching;
    if c.op_source == OpSource::Kernels {
        out.push(Section {
            title: "Kernel matching".to_string(),
            parts: vec![Part::Text(format!(
                "matched {} by exact name, added {}, removed {} (kernels pair by name only)",
                m.matched, m.added, m.removed
            ))],
        });
        return out;
    }
    out.push(Section {
        title: "Op matching".to_string(),
        parts: vec![Part::Text(format!(
            "matched {} (by name {}, by deduplicated name {}, by fingerprint {}), added {}, removed {}; pairs other than exact names need confidence ≥ {:.2} ({} op{} of A left removed below it)",
            m.matched,
            m.by_name,
            m.by_deduplicated_name,
            m.by_fingerprint,
            m.added,
            m.removed,
            m.min_confidence,
            m.rejected,
            if m.rejected == 1 { "" } else { "s" }
        ))],
    });
    out
}
