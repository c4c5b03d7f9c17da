//! The profile comparison as terminal tables, and the section builder the Markdown report (`compare_md`)
//! shares, so the terminal and the Markdown report show the same rows with the same numbers.
//!
//! Numbers are the comparison's JSON values written by the shared formatter ([`super::numbers`]): at most 4
//! significant figures; times in one unit a column (`ns`, `µs`, `ms`, `s`: the one its largest value reads
//! best in), named in the column's header (a row's label in the totals table); relative changes as signed
//! percents; MFU as a percent and its change in percentage points; FLOP rates in GFLOP/s, operational
//! intensity in FLOP/byte, memory in binary units, match confidences with 2 decimals. Sections, in order: header, step time,
//! MFU and totals, memory, top regressions and top improvements (matched ops only), added ops (B only) and
//! removed ops (A only) by self time, categories, roofline changes, matching.

use comfy_table::Table;

use super::numbers::{bytes, num, num_opt, percent, signed, signed_bytes, TimeUnit};
use super::text::{mfu_pct, new_table, p_value, rel_pct, sections_to_text, shorten, Part, Section};
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
    let margin = v.min_effect.map(|e| format!(" vs margin ±{}", percent(e * 100.0))).unwrap_or_default();
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
    let unit = TimeUnit::for_column_us(ops.iter().flat_map(|o| [o.a_self_time_us, o.b_self_time_us, o.delta_us]));
    let u = unit.symbol();
    let mut t = new_table(
        markdown,
        [
            "op".to_string(),
            "category".to_string(),
            "status".to_string(),
            format!("A {u}"),
            format!("B {u}"),
            format!("Δ {u}"),
            "Δ %".to_string(),
            "bound by A → B".to_string(),
            "FLOPs B/A".to_string(),
            "match".to_string(),
        ],
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
            unit.fmt(o.a_self_time_us),
            unit.fmt(o.b_self_time_us),
            unit.fmt_signed(o.delta_us),
            if o.status == OpStatus::Added { "new".to_string() } else { rel_pct(o.delta_rel) },
            arrow(o.a_bound_by.as_deref(), o.b_bound_by.as_deref()),
            num_opt(o.flops_ratio),
            match_cell(o),
        ]);
    }
    t
}

/// Ops of one side only (added or removed): name, program, category, occurrences and self time on that side.
fn one_side_table(markdown: bool, ops: &[OpChange], added: bool) -> Table {
    let side = if added { "B" } else { "A" };
    let time = |o: &OpChange| if added { o.b_self_time_us } else { o.a_self_time_us };
    let unit = TimeUnit::for_column_us(ops.iter().map(time));
    let mut t = new_table(
        markdown,
        [
            "op".to_string(),
            "program".to_string(),
            "category".to_string(),
            "count".to_string(),
            format!("{side} {}", unit.symbol()),
        ],
    );
    for o in ops {
        let count = if added { o.b_occurrences } else { o.a_occurrences };
        t.add_row([
            code(markdown, &o.name),
            code(markdown, &o.program),
            cell(markdown, &o.category),
            count.to_string(),
            unit.fmt(time(o)),
        ]);
    }
    t
}

/// A row of the totals table: `label` and the unit of its larger side (`op time ms`), A, B, Δ and Δ %.
fn time_row(t: &mut Table, label: &str, d: &TimeDelta) {
    let unit = TimeUnit::for_column_us([d.a_us, d.b_us]);
    t.add_row([
        format!("{label} {}", unit.symbol()),
        unit.fmt(d.a_us),
        unit.fmt(d.b_us),
        unit.fmt_signed(d.delta_us),
        rel_pct(d.delta_rel),
    ]);
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
        OpSource::XlaCpu => "op source: XLA:CPU op profiles (FLOPs and bytes from the captures' HLO)".to_string(),
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
                let values = super::numbers::config_values(&[ch.a.as_ref(), ch.b.as_ref()]);
                t.add_row([
                    code(md, &ch.path),
                    ch.group.as_str().to_string(),
                    code(md, &values[0]),
                    code(md, &values[1]),
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
    // Step times are in seconds; one unit for the table.
    let unit =
        TimeUnit::for_column_us([v.a.median, v.a.mean, v.b.median, v.b.mean].into_iter().flatten().map(|s| s * 1e6));
    let time = |s: Option<f64>| s.map_or_else(|| "—".to_string(), |s| unit.fmt(s * 1e6));
    let (median, mean) = (format!("median {}", unit.symbol()), format!("mean {}", unit.symbol()));
    let mut t = new_table(md, ["", "n", median.as_str(), mean.as_str()]);
    t.add_row(["A".to_string(), v.a.n.to_string(), time(v.a.median), time(v.a.mean)]);
    t.add_row(["B".to_string(), v.b.n.to_string(), time(v.b.median), time(v.b.mean)]);
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
        opt(c.mfu.delta, |d| format!("{} pp", signed(d * 100.0))),
        "".to_string(),
    ]);
    time_row(&mut t, "op time", &c.totals.op_time);
    if let Some(d) = &c.totals.idle_time {
        time_row(&mut t, "idle time", d);
    }
    if let Some(d) = &c.totals.total_time {
        time_row(&mut t, "total time", d);
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
            "peak".to_string(),
            bytes(m.a_peak_bytes as f64),
            bytes(m.b_peak_bytes as f64),
            signed_bytes(m.delta_peak_bytes as f64),
        ]);
        t.add_row([
            "step growth per step".to_string(),
            opt(m.a_step_growth_bytes, bytes),
            opt(m.b_step_growth_bytes, bytes),
            opt(m.delta_step_growth_bytes, signed_bytes),
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
    let unit = TimeUnit::for_column_us(
        c.categories.iter().take(n).flat_map(|k| [k.a_self_time_us, k.b_self_time_us, k.delta_us]),
    );
    let u = unit.symbol();
    let mut header = vec![
        "category".to_string(),
        "ops A/B".to_string(),
        format!("A {u}"),
        format!("B {u}"),
        format!("Δ {u}"),
        "Δ %".to_string(),
    ];
    if device {
        header.push("GFLOP/s A → B".to_string());
    }
    let mut t = new_table(md, header);
    for k in c.categories.iter().take(n) {
        let mut row = vec![
            cell(md, &k.category),
            format!("{}/{}", k.a_ops, k.b_ops),
            unit.fmt(k.a_self_time_us),
            unit.fmt(k.b_self_time_us),
            unit.fmt_signed(k.delta_us),
            rel_pct(k.delta_rel),
        ];
        if device {
            row.push(format!("{} → {}", num_opt(k.a_flop_rate), num_opt(k.b_flop_rate)));
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
                "ridge point A {} FLOP/B, B {} FLOP/B; peaks A {} GFLOP/s, {} GiB/s; B {} GFLOP/s, {} GiB/s",
                num(p.a_ridge_point),
                num(p.b_ridge_point),
                num(p.a_peak_flop_rate),
                num(p.a_peak_hbm_bw),
                num(p.b_peak_flop_rate),
                num(p.b_peak_hbm_bw)
            )));
        }
        let crossed: Vec<_> = c.roofline.iter().filter(|r| r.crossed_ridge).collect();
        let rest = c.roofline.iter().filter(|r| !r.crossed_ridge).take(top);
        let rows: Vec<_> = crossed.iter().copied().chain(rest).collect();
        let unit = TimeUnit::for_column_us(rows.iter().map(|r| r.b_self_time_us));
        let mut t = new_table(
            md,
            [
                "op".to_string(),
                "category".to_string(),
                "A OI".to_string(),
                "A GFLOP/s".to_string(),
                "B OI".to_string(),
                "B GFLOP/s".to_string(),
                "bound by A → B".to_string(),
                "crossed ridge".to_string(),
                format!("B {}", unit.symbol()),
            ],
        );
        for r in rows {
            t.add_row([
                code(md, &r.name),
                cell(md, &r.category),
                num(r.a_oi),
                num(r.a_flop_rate),
                num(r.b_oi),
                num(r.b_flop_rate),
                format!("{} → {}", r.a_bound_by, r.b_bound_by),
                if r.crossed_ridge { "yes".to_string() } else { "no".to_string() },
                unit.fmt(r.b_self_time_us),
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
