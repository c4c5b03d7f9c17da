//! The profile comparison as HTML: summary cards, inline SVG charts (roofline moves, step-time
//! distributions, op self-time deltas; drawn by [`super::svg`]) and tables. The page is self-contained:
//! inline stylesheet, no scripts, fonts, images or other external resources.

use super::svg::{self, Bar, Move, Roof, Series, BLUE, DARK, GREEN, GREY, RED};
use falcon_analysis::compare::{OpChange, OpStatus, ProfileComparison, RooflineChange, TimeDelta};
use falcon_core::stats::{Verdict, VerdictKind};
use std::fmt::Write;

/// `s` with `& < > " '` replaced by entities: safe as element text and as a quoted attribute value.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(ch),
        }
    }
    out
}

/// A `<table>` of text cells (escaped here). Cells that look numeric (`12.5 ms`, `+3 %`, `–`) are
/// right-aligned; a cell starting with `+` or `−`/`-` followed by a digit is coloured as a worse/better delta
/// when the column header starts with `Δ`.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = String::from("<div class=\"table-wrap\"><table>\n<thead><tr>");
    for h in headers {
        let _ = write!(s, "<th>{}</th>", escape(h));
    }
    s.push_str("</tr></thead>\n<tbody>\n");
    for row in rows {
        s.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let delta = headers.get(i).is_some_and(|h| h.starts_with('Δ'));
            let mut class = Vec::new();
            if looks_numeric(cell) {
                class.push("num");
            }
            if delta && cell.starts_with('+') && cell.chars().nth(1).is_some_and(|c| c.is_ascii_digit()) {
                class.push("worse");
            } else if delta && (cell.starts_with('−') || cell.starts_with('-')) && cell.chars().nth(1).is_some_and(|c| c.is_ascii_digit()) {
                class.push("better");
            }
            if class.is_empty() {
                let _ = write!(s, "<td>{}</td>", escape(cell));
            } else {
                let _ = write!(s, "<td class=\"{}\">{}</td>", class.join(" "), escape(cell));
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody>\n</table></div>\n");
    s
}

fn looks_numeric(cell: &str) -> bool {
    let t = cell.trim_start_matches(['+', '-', '−']);
    t == "–" || t.chars().next().is_some_and(|c| c.is_ascii_digit())
}

// ---------------------------------------------------------------------------------------------------------
// Number formatting

/// A time given in microseconds, in the unit that suits it (`812 ns`, `3.4 µs`, `12.48 ms`, `2.1 s`).
pub fn fmt_us(us: f64) -> String {
    if !us.is_finite() {
        return "–".to_string();
    }
    let a = us.abs();
    if a >= 1e6 {
        format!("{:.3} s", us / 1e6)
    } else if a >= 1e3 {
        format!("{:.2} ms", us / 1e3)
    } else if a >= 1.0 || a == 0.0 {
        format!("{us:.1} µs")
    } else {
        format!("{:.0} ns", us * 1e3)
    }
}

/// A signed time delta in microseconds (`+1.20 ms`, `−3.4 µs`).
pub fn fmt_delta_us(us: f64) -> String {
    signed(us, fmt_us(us.abs()))
}

fn signed(v: f64, abs_text: String) -> String {
    if !v.is_finite() {
        "–".to_string()
    } else if v > 0.0 {
        format!("+{abs_text}")
    } else if v < 0.0 {
        format!("−{abs_text}")
    } else {
        abs_text
    }
}

/// A relative change (`+12.3 %`); `–` when absent.
pub fn fmt_rel(r: Option<f64>) -> String {
    match r.filter(|r| r.is_finite()) {
        None => "–".to_string(),
        Some(r) => {
            let p = r * 100.0;
            let text = if p.abs() >= 100.0 { format!("{:.0} %", p.abs()) } else { format!("{:.1} %", p.abs()) };
            signed(p, text)
        }
    }
}

/// Bytes with a binary prefix (`1.50 GiB`), signed when `sign`.
pub fn fmt_bytes(b: f64, sign: bool) -> String {
    if !b.is_finite() {
        return "–".to_string();
    }
    let a = b.abs();
    let text = [(1u64 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
        .into_iter()
        .find(|(d, _)| a >= *d as f64)
        .map_or_else(|| format!("{a:.0} B"), |(d, u)| format!("{:.2} {u}", a / d as f64));
    if sign {
        signed(b, text)
    } else {
        text
    }
}

fn fmt_p(p: Option<f64>) -> String {
    match p.filter(|p| p.is_finite()) {
        None => "–".to_string(),
        Some(p) if p != 0.0 && p < 1e-3 => format!("{p:.1e}"),
        Some(p) => format!("{p:.3}"),
    }
}

fn fmt_frac_pct(x: Option<f64>) -> String {
    match x.filter(|x| x.is_finite()).map(|x| x * 100.0) {
        None => "–".to_string(),
        Some(p) if p != 0.0 && p.abs() < 0.01 => format!("{p:.2e} %"),
        Some(p) => format!("{p:.2} %"),
    }
}

fn fmt_ms(ms: Option<f64>) -> String {
    ms.filter(|m| m.is_finite()).map_or_else(|| "–".to_string(), |m| fmt_us(m * 1e3))
}

fn fmt_num(x: f64) -> String {
    if x.is_finite() {
        svg::si(x)
    } else {
        "–".to_string()
    }
}

/// GB per GiB.
const GIB: f64 = 1.073_741_824;

fn verdict_class(v: VerdictKind) -> &'static str {
    match v {
        VerdictKind::Improved => "good",
        VerdictKind::Regressed => "bad",
        VerdictKind::Same => "same",
        VerdictKind::Inconclusive => "unsure",
    }
}

// ---------------------------------------------------------------------------------------------------------
// Section

/// An HTML fragment (a `<section>`) for the comparison: summary, charts and tables; `top` is how many ops
/// the charts and ranked tables show.
pub fn render_section(c: &ProfileComparison, top: usize) -> String {
    let mut s = String::from("<section class=\"profile-compare\">\n");
    let _ = writeln!(s, "<h2>Profile comparison: {} (A) → {} (B)</h2>", escape(&c.a.input), escape(&c.b.input));
    s.push_str(&sides_table(c));
    s.push_str(&cards(c));

    s.push_str("<h3>Roofline: how the top ops moved</h3>\n");
    s.push_str(&roofline_chart(c, top));
    s.push_str("<h3>Step-time distributions</h3>\n");
    s.push_str(&step_chart(c));
    s.push_str("<h3>Largest op self-time changes</h3>\n");
    s.push_str(&delta_chart(c, top));

    s.push_str("<h3>Regressions (B slower)</h3>\n");
    s.push_str(&op_table(c.regressions.iter().take(top), "no op got slower"));
    s.push_str("<h3>Improvements (B faster)</h3>\n");
    s.push_str(&op_table(c.improvements.iter().take(top), "no op got faster"));
    s.push_str("<h3>Categories</h3>\n");
    s.push_str(&category_table(c));
    if c.roofline_peaks.is_some() && !c.roofline.is_empty() {
        s.push_str("<h3>Roofline changes</h3>\n");
        s.push_str(&roofline_table(c, top));
    }
    s.push_str("<h3>Op matching</h3>\n");
    let m = &c.matching;
    s.push_str(&table(
        &["matched", "by name", "by deduplicated name", "by fingerprint", "added (B only)", "removed (A only)"],
        &[vec![m.matched, m.by_name, m.by_deduplicated_name, m.by_fingerprint, m.added, m.removed].into_iter().map(|n| n.to_string()).collect()],
    ));
    s.push_str(&notes(c));
    s.push_str("</section>\n");
    s
}

fn sides_table(c: &ProfileComparison) -> String {
    let row = |name: &str, side: &falcon_analysis::compare::Side| {
        vec![
            name.to_string(),
            side.input.clone(),
            side.device_type.clone(),
            side.hardware.clone(),
            side.device_cores.to_string(),
            side.step_times_ms.len().to_string(),
            side.ops.to_string(),
            side.files.len().to_string(),
        ]
    };
    table(&["side", "input", "device", "hardware", "cores", "steps", "ops", "files"], &[row("A", &c.a), row("B", &c.b)])
}

fn card(class: &str, label: &str, value_html: &str, lines: &[String]) -> String {
    let mut s = format!("<div class=\"card {class}\"><div class=\"label\">{}</div><div class=\"value\">{value_html}</div>", escape(label));
    for l in lines {
        let _ = write!(s, "<div class=\"sub\">{}</div>", escape(l));
    }
    s.push_str("</div>\n");
    s
}

fn delta_card(label: &str, d: &TimeDelta) -> String {
    let class = match d.delta_ps.cmp(&0) {
        std::cmp::Ordering::Greater => "bad",
        std::cmp::Ordering::Less => "good",
        std::cmp::Ordering::Equal => "same",
    };
    let value = format!("{} ({})", fmt_delta_us(d.delta_us), fmt_rel(d.delta_rel));
    card(class, label, &escape(&value), &[format!("A {} → B {}", fmt_us(d.a_us), fmt_us(d.b_us))])
}

fn verdict_lines(v: &Verdict, value: impl Fn(Option<f64>) -> String) -> Vec<String> {
    let ci = match (v.ci_low_rel, v.ci_high_rel) {
        (Some(lo), Some(hi)) => format!(" [{}, {}]", fmt_rel(Some(lo)), fmt_rel(Some(hi))),
        _ => String::new(),
    };
    vec![
        format!("A {} → B {} (medians)", value(v.a.median), value(v.b.median)),
        format!("Δ {}{ci}", fmt_rel(v.delta_rel)),
        format!("p = {} · n = {} / {}", fmt_p(v.p_value), v.a.n, v.b.n),
    ]
}

fn cards(c: &ProfileComparison) -> String {
    let mut s = String::from("<div class=\"cards\">\n");
    let v = &c.step_time;
    let word = format!("<span class=\"verdict\">{}</span>", escape(v.verdict.as_str()));
    s.push_str(&card(verdict_class(v.verdict), "step time", &word, &verdict_lines(v, |m| fmt_ms(m.map(|x| x * 1e3)))));

    let m = &c.mfu;
    if m.a.is_some() || m.b.is_some() {
        let (class, word) = match &m.verdict {
            Some(v) => (verdict_class(v.verdict), v.verdict.as_str().to_string()),
            None => ("same", fmt_frac_pct(m.b)),
        };
        let mut lines = vec![format!(
            "A {} → B {} (Δ {})",
            fmt_frac_pct(m.a),
            fmt_frac_pct(m.b),
            m.delta.filter(|d| d.is_finite()).map_or_else(|| "–".to_string(), |d| signed(d, format!("{:.2} pp", d.abs() * 100.0)))
        )];
        if let Some(v) = &m.verdict {
            lines.push(format!("p = {} · n = {} / {}", fmt_p(v.p_value), v.a.n, v.b.n));
        }
        s.push_str(&card(class, "MFU", &format!("<span class=\"verdict\">{}</span>", escape(&word)), &lines));
    } else {
        s.push_str(&card("same", "MFU", "–", &["unknown (no model FLOPs)".to_string()]));
    }

    s.push_str(&delta_card("op time", &c.totals.op_time));
    if let Some(d) = &c.totals.idle_time {
        s.push_str(&delta_card("idle time", d));
    }
    if let Some(d) = &c.totals.total_time {
        s.push_str(&delta_card("device time", d));
    }
    if let Some(mem) = &c.memory {
        let class = match mem.delta_peak_bytes.cmp(&0) {
            std::cmp::Ordering::Greater => "bad",
            std::cmp::Ordering::Less => "good",
            std::cmp::Ordering::Equal => "same",
        };
        let mut lines = vec![format!("A {} → B {}", fmt_bytes(mem.a_peak_bytes as f64, false), fmt_bytes(mem.b_peak_bytes as f64, false))];
        if let (Some(a), Some(b)) = (mem.a_step_growth_bytes, mem.b_step_growth_bytes) {
            lines.push(format!("growth per step: A {}, B {}", fmt_bytes(a, true), fmt_bytes(b, true)));
        }
        if mem.a_leak_suspected || mem.b_leak_suspected {
            lines.push(format!("leak suspected: A {} · B {}", yes_no(mem.a_leak_suspected), yes_no(mem.b_leak_suspected)));
        }
        s.push_str(&card(class, "memory peak", &escape(&fmt_bytes(mem.delta_peak_bytes as f64, true)), &lines));
    }
    let mt = &c.matching;
    s.push_str(&card(
        "same",
        "ops",
        &escape(&format!("{} matched", mt.matched)),
        &[format!("{} added · {} removed", mt.added, mt.removed), format!("A {} ops · B {} ops", c.a.ops, c.b.ops)],
    ));
    s.push_str("</div>\n");
    s
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn note(text: &str) -> String {
    format!("<p class=\"note\">{}</p>\n", escape(text))
}

/// The roofline rows the chart and table show: every op that crossed the ridge, then the rest of the top
/// `top` by B's self time (the order of `c.roofline`).
fn roofline_selection(c: &ProfileComparison, top: usize) -> Vec<&RooflineChange> {
    let mut out: Vec<&RooflineChange> = c.roofline.iter().filter(|r| r.crossed_ridge).collect();
    out.extend(c.roofline.iter().take(top).filter(|r| !r.crossed_ridge));
    out
}

fn plottable(r: &RooflineChange) -> bool {
    [r.a_oi, r.a_flop_rate, r.b_oi, r.b_flop_rate].iter().all(|v| v.is_finite() && *v > 0.0)
}

fn move_color(delta_us: f64, b_us: f64) -> &'static str {
    let tol = (b_us.abs() * 1e-3).max(1e-6);
    if !delta_us.is_finite() || delta_us.abs() <= tol {
        GREY
    } else if delta_us > 0.0 {
        RED
    } else {
        GREEN
    }
}

fn roofline_chart(c: &ProfileComparison, top: usize) -> String {
    let Some(p) = &c.roofline_peaks else {
        return note("No roofline: the captures have no FLOP or byte counts (CPU-only captures).");
    };
    if c.roofline.is_empty() {
        return note("No roofline: no matched op has FLOP and byte counts on both sides.");
    }
    let same = (p.a_peak_flop_rate - p.b_peak_flop_rate).abs() <= 1e-9 * p.a_peak_flop_rate.abs().max(1.0)
        && (p.a_peak_hbm_bw - p.b_peak_hbm_bw).abs() <= 1e-9 * p.a_peak_hbm_bw.abs().max(1.0);
    let mut roofs = Vec::new();
    if same {
        roofs.push(Roof { label: "A = B".to_string(), peak_gflops: p.b_peak_flop_rate, bw_gbs: p.b_peak_hbm_bw * GIB, color: DARK, dashed: false });
    } else {
        roofs.push(Roof { label: "B".to_string(), peak_gflops: p.b_peak_flop_rate, bw_gbs: p.b_peak_hbm_bw * GIB, color: DARK, dashed: false });
        roofs.push(Roof { label: "A".to_string(), peak_gflops: p.a_peak_flop_rate, bw_gbs: p.a_peak_hbm_bw * GIB, color: GREY, dashed: true });
    }
    let sel = roofline_selection(c, top);
    let mut moves = Vec::new();
    let mut key = 0;
    let mut skipped = 0;
    for r in &sel {
        if !plottable(r) {
            skipped += 1;
            continue;
        }
        key += 1;
        moves.push(Move {
            key: key.to_string(),
            title: format!(
                "{key}. {} ({}): OI {} → {} FLOP/B, {} → {} GFLOP/s, {} → {}{}; B self time {} ({})",
                r.name,
                r.category,
                fmt_num(r.a_oi),
                fmt_num(r.b_oi),
                fmt_num(r.a_flop_rate),
                fmt_num(r.b_flop_rate),
                r.a_bound_by,
                r.b_bound_by,
                if r.crossed_ridge { ", crossed the ridge" } else { "" },
                fmt_us(r.b_self_time_us),
                fmt_delta_us(r.delta_us)
            ),
            a: (r.a_oi, r.a_flop_rate),
            b: (r.b_oi, r.b_flop_rate),
            color: move_color(r.delta_us, r.b_self_time_us),
            highlight: r.crossed_ridge,
        });
    }
    let mut s = String::from("<figure class=\"chart roofline\">\n");
    s.push_str(&svg::roofline(&roofs, &moves));
    let crossed = sel.iter().filter(|r| r.crossed_ridge).count();
    let _ = writeln!(
        s,
        "<figcaption>Each arrow runs from an op's point in A (hollow) to its point in B; numbers are the # column of the roofline table. Shown: {} op{} ({} crossed the ridge) of {} with FLOP and byte counts on both sides.{}</figcaption>",
        moves.len(),
        if moves.len() == 1 { "" } else { "s" },
        crossed,
        c.roofline.len(),
        if skipped > 0 {
            format!(" {skipped} selected op{} with zero FLOPs or bytes cannot sit on log axes and are only in the table.", if skipped == 1 { "" } else { "s" })
        } else {
            String::new()
        }
    );
    s.push_str("</figure>\n");
    s
}

fn step_chart(c: &ProfileComparison) -> String {
    let finite = |v: &[f64]| v.iter().filter(|x| x.is_finite()).count();
    if finite(&c.a.step_times_ms) == 0 && finite(&c.b.step_times_ms) == 0 {
        return note("No per-step times: the captures have no step markers.");
    }
    let series = [
        Series { label: "A".to_string(), values: c.a.step_times_ms.clone(), color: GREY },
        Series { label: "B".to_string(), values: c.b.step_times_ms.clone(), color: BLUE },
    ];
    format!(
        "<figure class=\"chart steps\">\n{}<figcaption>Every profiled step as a dot; boxes span the quartiles, whiskers the range, the dark bar is the median.</figcaption>\n</figure>\n",
        svg::strip_box(&series, "step time (ms)")
    )
}

fn op_label(o: &OpChange) -> String {
    let tag = match o.status {
        OpStatus::Matched => "",
        OpStatus::Added => " (new in B)",
        OpStatus::Removed => " (only in A)",
    };
    format!("{}{tag}", o.name)
}

fn delta_chart(c: &ProfileComparison, top: usize) -> String {
    let regs: Vec<&OpChange> = c.regressions.iter().take(top).filter(|o| o.delta_us.is_finite()).collect();
    let imps: Vec<&OpChange> = c.improvements.iter().take(top).filter(|o| o.delta_us.is_finite()).collect();
    if regs.is_empty() && imps.is_empty() {
        return note("No op changed its self time.");
    }
    let max = regs.iter().chain(&imps).map(|o| o.delta_us.abs()).fold(0.0, f64::max);
    let (div, unit) = if max >= 1e6 {
        (1e6, "Δ self time (s)")
    } else if max >= 1e3 {
        (1e3, "Δ self time (ms)")
    } else {
        (1.0, "Δ self time (µs)")
    };
    let bar = |o: &&OpChange, color| {
        Some(Bar {
            label: op_label(o),
            title: format!(
                "{} [{}] {}: A {} → B {} ({}, {})",
                o.name,
                o.program,
                o.category,
                fmt_us(o.a_self_time_us),
                fmt_us(o.b_self_time_us),
                fmt_delta_us(o.delta_us),
                fmt_rel(o.delta_rel)
            ),
            value: o.delta_us / div,
            value_text: format!("{} ({})", fmt_delta_us(o.delta_us), fmt_rel(o.delta_rel)),
            color,
        })
    };
    let mut bars: Vec<Option<Bar>> = regs.iter().map(|o| bar(o, RED)).collect();
    if !regs.is_empty() && !imps.is_empty() {
        bars.push(None);
    }
    bars.extend(imps.iter().map(|o| bar(o, GREEN)));
    format!(
        "<figure class=\"chart deltas\">\n{}<figcaption>Top {} regressions (red, B slower) and improvements (green, B faster) by change of summed self time.</figcaption>\n</figure>\n",
        svg::hbars(&bars, unit),
        top
    )
}

fn op_table<'a>(ops: impl Iterator<Item = &'a OpChange>, empty: &str) -> String {
    let ops: Vec<&OpChange> = ops.collect();
    // XLA:CPU ops have no costs: no FLOPs or bound-by columns then
    let costs = ops.iter().any(|o| o.flops_ratio.is_some() || o.a_bound_by.is_some() || o.b_bound_by.is_some());
    let rows: Vec<Vec<String>> = ops
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let name = match &o.a_name {
                Some(a) => format!("{} (A: {a})", op_label(o)),
                None => op_label(o),
            };
            let bound = match (&o.a_bound_by, &o.b_bound_by) {
                (Some(a), Some(b)) if a == b => a.clone(),
                (Some(a), Some(b)) => format!("{a} → {b}"),
                (a, b) => a.clone().or(b.clone()).unwrap_or_else(|| "–".to_string()),
            };
            vec![
                (i + 1).to_string(),
                name,
                o.program.clone(),
                o.category.clone(),
                o.matched_by.map_or_else(|| "–".to_string(), |m| format!("{m:?}").to_lowercase()),
                fmt_us(o.a_self_time_us),
                fmt_us(o.b_self_time_us),
                fmt_delta_us(o.delta_us),
                fmt_rel(o.delta_rel),
                format!("{} / {}", o.a_occurrences, o.b_occurrences),
                o.flops_ratio.map_or_else(|| "–".to_string(), |r| format!("{r:.2}×")),
                bound,
            ]
        })
        .map(|mut row| {
            if !costs {
                row.truncate(10);
            }
            row
        })
        .collect();
    if rows.is_empty() {
        return note(empty);
    }
    let headers = ["#", "op", "program", "category", "matched by", "A self", "B self", "Δ", "Δ %", "count A / B", "FLOPs B/A", "bound by"];
    table(&headers[..if costs { 12 } else { 10 }], &rows)
}

fn category_table(c: &ProfileComparison) -> String {
    if c.categories.is_empty() {
        return note("No categories.");
    }
    let rate = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (None, None) => "–".to_string(),
        (a, b) => format!("{} → {}", a.map_or("–".to_string(), fmt_num), b.map_or("–".to_string(), fmt_num)),
    };
    let rates = c.categories.iter().any(|k| k.a_flop_rate.is_some() || k.b_flop_rate.is_some());
    let rows: Vec<Vec<String>> = c
        .categories
        .iter()
        .map(|k| {
            let mut row = vec![
                k.category.clone(),
                fmt_us(k.a_self_time_us),
                fmt_us(k.b_self_time_us),
                fmt_delta_us(k.delta_us),
                fmt_rel(k.delta_rel),
                format!("{} / {}", k.a_ops, k.b_ops),
            ];
            if rates {
                row.push(rate(k.a_flop_rate, k.b_flop_rate));
            }
            row
        })
        .collect();
    let headers = ["category", "A self", "B self", "Δ", "Δ %", "ops A / B", "GFLOP/s A → B"];
    table(&headers[..if rates { 7 } else { 6 }], &rows)
}

fn roofline_table(c: &ProfileComparison, top: usize) -> String {
    let mut key = 0;
    let rows: Vec<Vec<String>> = roofline_selection(c, top)
        .into_iter()
        .map(|r| {
            let k = if plottable(r) {
                key += 1;
                key.to_string()
            } else {
                "–".to_string()
            };
            vec![
                k,
                r.name.clone(),
                r.category.clone(),
                format!("{} → {}", fmt_num(r.a_oi), fmt_num(r.b_oi)),
                format!("{} → {}", fmt_num(r.a_flop_rate), fmt_num(r.b_flop_rate)),
                if r.a_bound_by == r.b_bound_by { r.a_bound_by.clone() } else { format!("{} → {}", r.a_bound_by, r.b_bound_by) },
                if r.crossed_ridge { "yes".to_string() } else { "no".to_string() },
                fmt_us(r.b_self_time_us),
                fmt_delta_us(r.delta_us),
            ]
        })
        .collect();
    let mut s = table(&["#", "op", "category", "FLOP/byte A → B", "GFLOP/s A → B", "bound by", "crossed ridge", "B self", "Δ"], &rows);
    if let Some(p) = &c.roofline_peaks {
        let gib = |x: f64| if x.is_finite() { format!("{x:.1}") } else { "–".to_string() };
        s.push_str(&note(&format!(
            "Peaks: A {}FLOP/s, HBM {} GiB/s ({}B/s), ridge {} FLOP/byte; B {}FLOP/s, HBM {} GiB/s ({}B/s), ridge {} FLOP/byte.",
            svg::si(p.a_peak_flop_rate * 1e9),
            gib(p.a_peak_hbm_bw),
            svg::si(p.a_peak_hbm_bw * GIB * 1e9),
            fmt_num(p.a_ridge_point),
            svg::si(p.b_peak_flop_rate * 1e9),
            gib(p.b_peak_hbm_bw),
            svg::si(p.b_peak_hbm_bw * GIB * 1e9),
            fmt_num(p.b_ridge_point)
        )));
    }
    s
}

fn notes(c: &ProfileComparison) -> String {
    let mut items: Vec<String> = c.notes.clone();
    items.extend(c.a.notes.iter().map(|n| format!("A: {n}")));
    items.extend(c.b.notes.iter().map(|n| format!("B: {n}")));
    items.extend(c.step_time.notes.iter().map(|n| format!("step time: {n}")));
    if let Some(v) = &c.mfu.verdict {
        items.extend(v.notes.iter().map(|n| format!("MFU: {n}")));
    }
    if items.is_empty() {
        return String::new();
    }
    let mut s = String::from("<h3>Notes</h3>\n<ul class=\"notes\">\n");
    for n in items {
        let _ = writeln!(s, "<li>{}</li>", escape(&n));
    }
    s.push_str("</ul>\n");
    s
}

// ---------------------------------------------------------------------------------------------------------
// Page

const STYLE: &str = r#"
:root { color-scheme: light; --fg: #212529; --muted: #6c757d; --line: #dee2e6; --bg: #ffffff; --panel: #f8f9fa;
  --good: #2b8a3e; --bad: #c92a2a; --unsure: #e67700; --same: #495057; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif; }
header.page { padding: 18px 28px; border-bottom: 1px solid var(--line); background: var(--panel); }
header.page h1 { margin: 0; font-size: 22px; word-break: break-all; }
header.page p { margin: 4px 0 0; color: var(--muted); font-size: 12px; }
main { padding: 8px 28px 40px; max-width: 1280px; }
section { margin: 18px 0 30px; }
h2 { font-size: 19px; margin: 18px 0 10px; word-break: break-all; }
h3 { font-size: 16px; margin: 26px 0 8px; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: var(--panel); font-weight: 600; white-space: nowrap; }
td { max-width: 460px; overflow-wrap: anywhere; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.worse { color: var(--bad); } td.better { color: var(--good); }
table.pairs th { text-align: left; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 14px 0; }
.card { border: 1px solid var(--line); border-left: 5px solid var(--same); border-radius: 6px; padding: 10px 14px;
  min-width: 210px; background: var(--panel); }
.card .label { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
.card .value { font-size: 20px; font-weight: 650; margin: 2px 0 4px; font-variant-numeric: tabular-nums; }
.card .sub { font-size: 12.5px; color: var(--fg); font-variant-numeric: tabular-nums; }
.card.good { border-left-color: var(--good); } .card.good .value { color: var(--good); }
.card.bad { border-left-color: var(--bad); } .card.bad .value { color: var(--bad); }
.card.unsure { border-left-color: var(--unsure); } .card.unsure .value { color: var(--unsure); }
.card.same .value { color: var(--same); }
figure { margin: 8px 0 14px; }
figure svg { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 6px; background: #fff; }
figcaption { font-size: 12.5px; color: var(--muted); margin-top: 4px; max-width: 960px; }
p.note { color: var(--muted); font-style: italic; margin: 6px 0; }
ul.notes li { margin: 2px 0; }
footer { padding: 12px 28px; color: var(--muted); font-size: 12px; border-top: 1px solid var(--line); }
"#;

/// A complete self-contained HTML5 page (inline stylesheet; no scripts, fonts, images or other requests)
/// titled `title` around already-rendered sections.
pub fn render_page(title: &str, sections: &[String]) -> String {
    let mut s = String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    s.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    // An empty data: icon, so that no browser asks for /favicon.ico.
    s.push_str("<link rel=\"icon\" href=\"data:,\">\n");
    let _ = writeln!(s, "<title>{}</title>", escape(title));
    let _ = writeln!(s, "<style>{STYLE}</style>\n</head>\n<body>");
    let _ = writeln!(
        s,
        "<header class=\"page\"><h1>{}</h1><p>falcon {}</p></header>\n<main>",
        escape(title),
        escape(env!("CARGO_PKG_VERSION"))
    );
    for sec in sections {
        s.push_str(sec);
        if !sec.ends_with('\n') {
            s.push('\n');
        }
    }
    s.push_str("</main>\n<footer>Self-contained report: inline styles and SVG, no scripts or external resources.</footer>\n</body>\n</html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use falcon_analysis::compare::{CategoryChange, MatchSummary, MemoryDelta, MfuDelta, OpSource, RooflinePeaks, Side, Totals};
    use falcon_core::stats::{Direction, SampleStats};

    fn side(input: &str, steps: Vec<f64>) -> Side {
        Side {
            input: input.to_string(),
            files: Vec::new(),
            device_type: "TPU v6 lite".to_string(),
            hardware: "tpu".to_string(),
            device_cores: 1,
            step_times_ms: steps,
            ops: 3,
            op_time_ps: 1_000_000,
            total_time_ps: Some(2_000_000),
            idle_time_ps: Some(1_000_000),
            mfu: Some(0.3),
            notes: vec!["a <note>".to_string()],
        }
    }

    fn verdict(kind: VerdictKind, a: Option<f64>, b: Option<f64>) -> Verdict {
        Verdict {
            metric: "step_time_s".to_string(),
            direction: Direction::LowerIsBetter,
            verdict: kind,
            a: SampleStats { n: 3, median: a, mean: a },
            b: SampleStats { n: 3, median: b, mean: b },
            delta_rel: Some(0.1),
            ci_low_rel: Some(0.05),
            ci_high_rel: Some(0.15),
            p_value: Some(0.001),
            notes: Vec::new(),
        }
    }

    fn td(a: f64, b: f64) -> TimeDelta {
        TimeDelta { a_us: a, b_us: b, delta_us: b - a, delta_ps: ((b - a) * 1e6) as i64, delta_rel: Some((b - a) / a) }
    }

    fn op(name: &str, a: f64, b: f64) -> OpChange {
        OpChange {
            name: name.to_string(),
            a_name: None,
            program: "jit_step".to_string(),
            category: "fusion".to_string(),
            status: OpStatus::Matched,
            matched_by: None,
            a_self_time_us: a,
            b_self_time_us: b,
            delta_us: b - a,
            delta_rel: Some((b - a) / a),
            delta_ps: ((b - a) * 1e6) as i64,
            a_occurrences: 1,
            b_occurrences: 1,
            a_flops: None,
            b_flops: None,
            flops_ratio: None,
            a_bytes: None,
            b_bytes: None,
            a_flop_rate: None,
            b_flop_rate: None,
            a_bandwidth: None,
            b_bandwidth: None,
            a_bound_by: None,
            b_bound_by: None,
        }
    }

    fn rl(name: &str, a: (f64, f64), b: (f64, f64), crossed: bool, b_us: f64, delta: f64) -> RooflineChange {
        RooflineChange {
            name: name.to_string(),
            category: "fusion".to_string(),
            a_oi: a.0,
            a_flop_rate: a.1,
            b_oi: b.0,
            b_flop_rate: b.1,
            a_bound_by: "HBM".to_string(),
            b_bound_by: if crossed { "Compute" } else { "HBM" }.to_string(),
            crossed_ridge: crossed,
            b_self_time_us: b_us,
            delta_us: delta,
        }
    }

    /// A comparison with real A→B roofline moves: 12 ops, two of them (outside the top 4 by B time) crossed
    /// the ridge.
    fn sample() -> ProfileComparison {
        let mut roofline: Vec<RooflineChange> = (0..12)
            .map(|i| {
                let f = 1.0 + i as f64;
                rl(&format!("fusion.{i}"), (0.5 * f, 300.0 * f), (0.7 * f, 450.0 * f), false, 1000.0 / f, -10.0 * f + 30.0)
            })
            .collect();
        roofline[9] = rl("convolution.<9>", (200.0, 2e5), (900.0, 6e5), true, 100.0, -40.0);
        roofline[11] = rl("dot&11", (900.0, 7e5), (300.0, 3e5), true, 80.0, 25.0);
        ProfileComparison {
            a: side("exp-<a>", vec![10.0, 11.0, 10.5, 12.0]),
            b: side("exp-\"b\"", vec![11.0, 12.5, 11.8, 12.2]),
            op_source: OpSource::Device,
            step_time: verdict(VerdictKind::Regressed, Some(0.0105), Some(0.012)),
            mfu: MfuDelta { a: Some(0.3), b: Some(0.28), delta: Some(-0.02), verdict: None },
            totals: Totals { op_time: td(100.0, 120.0), idle_time: Some(td(50.0, 40.0)), total_time: Some(td(150.0, 160.0)) },
            ops: vec![op("fusion.1", 10.0, 30.0), op("fusion.2", 30.0, 10.0)],
            categories: vec![CategoryChange {
                category: "fusion".to_string(),
                a_self_time_us: 40.0,
                b_self_time_us: 40.0,
                delta_us: 0.0,
                delta_rel: Some(0.0),
                delta_ps: 0,
                a_ops: 2,
                b_ops: 2,
                a_flops: Some(10),
                b_flops: Some(10),
                a_bytes: None,
                b_bytes: None,
                a_flop_rate: Some(1.0),
                b_flop_rate: None,
            }],
            roofline,
            roofline_peaks: Some(RooflinePeaks {
                a_peak_flop_rate: 918_000.0,
                b_peak_flop_rate: 459_000.0,
                a_peak_hbm_bw: 1525.5,
                b_peak_hbm_bw: 800.0,
                a_ridge_point: 560.4,
                b_ridge_point: 534.3,
            }),
            regressions: vec![op("fusion.1 <script>alert(1)</script>", 10.0, 30.0)],
            improvements: vec![op("fusion.2", 30.0, 10.0)],
            memory: Some(MemoryDelta {
                a_peak_bytes: 1 << 30,
                b_peak_bytes: 3 << 29,
                delta_peak_bytes: 1 << 29,
                a_step_growth_bytes: Some(0.0),
                b_step_growth_bytes: Some(1024.0),
                delta_step_growth_bytes: Some(1024.0),
                a_leak_suspected: false,
                b_leak_suspected: true,
            }),
            matching: MatchSummary { matched: 12, by_name: 10, by_deduplicated_name: 1, by_fingerprint: 1, added: 0, removed: 0 },
            notes: vec!["note with & and <b>".to_string()],
        }
    }

    /// Everything empty or non-finite.
    fn degenerate() -> ProfileComparison {
        let mut c = sample();
        c.a.step_times_ms = vec![f64::NAN, f64::INFINITY];
        c.b.step_times_ms = Vec::new();
        c.step_time = Verdict {
            delta_rel: None,
            ci_low_rel: Some(f64::NAN),
            ci_high_rel: None,
            p_value: Some(f64::NAN),
            ..verdict(VerdictKind::Inconclusive, None, Some(f64::INFINITY))
        };
        c.mfu = MfuDelta { a: Some(f64::NAN), b: None, delta: Some(f64::INFINITY), verdict: None };
        c.totals = Totals { op_time: TimeDelta { a_us: 0.0, b_us: 0.0, delta_us: 0.0, delta_ps: 0, delta_rel: None }, idle_time: None, total_time: None };
        c.ops.clear();
        c.categories.clear();
        c.regressions = vec![OpChange { delta_us: f64::NAN, ..op("x", f64::NAN, f64::INFINITY) }];
        c.improvements.clear();
        c.roofline = vec![
            rl("zero", (0.0, 0.0), (0.0, 0.0), false, 0.0, 0.0),
            rl("nan", (f64::NAN, 1.0), (1.0, f64::INFINITY), true, f64::NAN, f64::NAN),
            rl("same", (1.0, 1.0), (1.0, 1.0), false, 1.0, 0.0),
        ];
        c.roofline_peaks = Some(RooflinePeaks {
            a_peak_flop_rate: 0.0,
            b_peak_flop_rate: f64::NAN,
            a_peak_hbm_bw: 0.0,
            b_peak_hbm_bw: f64::INFINITY,
            a_ridge_point: 0.0,
            b_ridge_point: f64::NAN,
        });
        c.memory = None;
        c
    }

    fn assert_clean(html: &str) {
        for bad in ["NaN", "inf\"", "=\"inf", "Infinity", "\"-0\""] {
            assert!(!html.contains(bad), "output contains {bad:?}");
        }
        let lower = html.to_lowercase();
        let allowed = lower.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
        let http = lower.matches("http://").count() + lower.matches("https://").count();
        assert_eq!(http, allowed, "only the SVG namespace may name a URL");
        assert!(!lower.contains("<script"), "no scripts");
        assert!(!lower.contains("url("), "no external references from CSS");
    }

    #[test]
    fn escape_replaces_markup_characters() {
        assert_eq!(escape(r#"<a href="x">Tom & 'Jerry'</a>"#), "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;");
        assert_eq!(escape("plain µs → ok"), "plain µs → ok");
        let t = table(&["op", "Δ"], &[vec!["<b>".to_string(), "+1.0 ms".to_string()]]);
        assert!(t.contains("<td>&lt;b&gt;</td>") && t.contains("<td class=\"num worse\">+1.0 ms</td>"), "{t}");
    }

    #[test]
    fn section_escapes_names_and_is_clean() {
        let c = sample();
        let html = render_page("A <vs> B", &[render_section(&c, 4)]);
        assert!(!html.contains("<script>alert"), "op names are escaped");
        assert!(html.contains("fusion.1 &lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("<title>A &lt;vs&gt; B</title>"));
        assert!(html.contains("exp-&quot;b&quot;"));
        assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
        for word in ["regressed", "step time", "MFU", "memory peak", "leak suspected"] {
            assert!(html.contains(word), "missing {word}");
        }
        assert_eq!(html.matches("<svg").count(), 3, "roofline, steps and delta charts");
        assert_clean(&html);
    }

    /// The chart's arrows: the top 4 by B time plus the two that crossed the ridge, one group each.
    #[test]
    fn roofline_has_one_arrow_per_shown_op() {
        let c = sample();
        let chart = roofline_chart(&c, 4);
        assert_eq!(chart.matches("class=\"op-move\"").count(), 6, "{chart}");
        assert_eq!(chart.matches("class=\"arrow\"").count(), 6, "every op moved");
        assert_eq!(chart.matches("class=\"roof\"").count(), 2, "A and B roofs differ");
        assert!(chart.contains("stroke-opacity=\"0.25\""), "crossed ops are highlighted");
        assert!(chart.contains("convolution.&lt;9&gt;") && chart.contains("dot&amp;11"));
        let table = roofline_table(&c, 4);
        assert!(table.find("convolution.&lt;9&gt;").unwrap() < table.find("fusion.0").unwrap(), "crossed first");
        // same frames: one roof; an op that did not move has no arrow line but still its group
        let mut same = c.clone();
        same.roofline_peaks = Some(RooflinePeaks { b_peak_flop_rate: 918_000.0, b_peak_hbm_bw: 1525.5, b_ridge_point: 560.4, ..c.roofline_peaks.clone().unwrap() });
        same.roofline = vec![rl("still", (1.0, 10.0), (1.0, 10.0), false, 5.0, 0.0)];
        let chart = roofline_chart(&same, 4);
        assert_eq!(chart.matches("class=\"roof\"").count(), 1);
        assert_eq!(chart.matches("class=\"op-move\"").count(), 1);
        assert_eq!(chart.matches("class=\"arrow\"").count(), 0);
        assert_clean(&chart);
    }

    #[test]
    fn degenerate_inputs_render_without_nan() {
        let c = degenerate();
        let html = render_page("degenerate", &[render_section(&c, 10)]);
        assert_clean(&html);
        let chart = roofline_chart(&c, 10);
        assert_eq!(chart.matches("class=\"op-move\"").count(), 1, "only the positive finite op is placed");
        // no roofline at all, no steps, no ops, top 0
        let mut none = degenerate();
        none.roofline_peaks = None;
        none.a.step_times_ms.clear();
        none.regressions.clear();
        let html = render_section(&none, 0);
        assert!(html.contains("No roofline") && html.contains("No per-step times") && html.contains("No op changed"));
        assert!(!html.contains("<svg"));
        assert_clean(&html);
        // one step each, identical: zero ranges
        let mut flat = sample();
        flat.a.step_times_ms = vec![5.0];
        flat.b.step_times_ms = vec![5.0];
        flat.regressions = vec![op("z", 1.0, 1.0)];
        flat.improvements.clear();
        assert_clean(&render_section(&flat, 3));
        // roofline entries but empty list
        let mut empty = sample();
        empty.roofline.clear();
        assert!(roofline_chart(&empty, 3).contains("No roofline"));
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_us(12_480.0), "12.48 ms");
        assert_eq!(fmt_us(0.5), "500 ns");
        assert_eq!(fmt_us(2_100_000.0), "2.100 s");
        assert_eq!(fmt_delta_us(-3.44), "−3.4 µs");
        assert_eq!(fmt_rel(Some(1.8708)), "+187 %");
        assert_eq!(fmt_rel(Some(-0.0123)), "−1.2 %");
        assert_eq!(fmt_rel(Some(f64::NAN)), "–");
        assert_eq!(fmt_bytes((3u64 << 29) as f64, false), "1.50 GiB");
        assert_eq!(fmt_bytes(-2048.0, true), "−2.00 KiB");
        assert_eq!(svg::si(918_000.0 * 1e9), "918 T");
        assert_eq!(svg::decade_label(-2), "0.01");
        assert_eq!(svg::decade_label(4), "10k");
        assert_eq!(svg::num(f64::NAN), "0");
        assert_eq!(svg::num(-0.04), "0");
    }
}
