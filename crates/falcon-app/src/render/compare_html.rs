//! The profile comparison as an HTML section: summary cards, inline SVG charts (roofline moves, step-time
//! distributions, self-time deltas of matched ops; drawn by [`super::svg`]) and tables (regressions and
//! improvements of matched ops with how each was paired, the ops of one side only by self time, categories,
//! roofline, matching), built from the blocks in [`super::html`], which also makes the self-contained page
//! around it ([`super::html::render_page`]).

use super::html::{
    card, escape, fmt_bytes, fmt_delta_us, fmt_frac_pct, fmt_ms, fmt_num, fmt_p, fmt_rel, fmt_us, note, signed, table,
};
use super::svg::{self, Bar, Move, Roof, Series, BLUE, DARK, GREEN, GREY, RED};
use falcon_analysis::compare::{MatchedBy, OpChange, OpStatus, ProfileComparison, RooflineChange, TimeDelta};
use falcon_core::stats::{Verdict, VerdictKind};
use std::fmt::Write;

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

    s.push_str("<h3>Regressions (matched ops, B slower)</h3>\n");
    s.push_str(&op_table(c.regressions.iter().take(top), "no matched op got slower"));
    s.push_str("<h3>Improvements (matched ops, B faster)</h3>\n");
    s.push_str(&op_table(c.improvements.iter().take(top), "no matched op got faster"));
    let _ = writeln!(s, "<h3>Added ops (B only, {} of {})</h3>", c.added.len().min(top), c.matching.added);
    s.push_str(&one_side_table(c.added.iter().take(top), true));
    let _ = writeln!(s, "<h3>Removed ops (A only, {} of {})</h3>", c.removed.len().min(top), c.matching.removed);
    s.push_str(&one_side_table(c.removed.iter().take(top), false));
    s.push_str("<h3>Categories</h3>\n");
    s.push_str(&category_table(c));
    if c.roofline_peaks.is_some() && !c.roofline.is_empty() {
        s.push_str("<h3>Roofline changes</h3>\n");
        s.push_str(&roofline_table(c, top));
    }
    s.push_str("<h3>Op matching</h3>\n");
    let m = &c.matching;
    let mut row: Vec<String> = [m.matched, m.by_name, m.by_deduplicated_name, m.by_fingerprint, m.added, m.removed]
        .into_iter()
        .map(|n| n.to_string())
        .collect();
    row.push(format!("{:.2}", m.min_confidence));
    row.push(m.rejected.to_string());
    s.push_str(&table(
        &[
            "matched",
            "by name",
            "by deduplicated name",
            "by fingerprint",
            "added (B only)",
            "removed (A only)",
            "min confidence",
            "removed below it",
        ],
        &[row],
    ));
    s.push_str(&note(
        "Pairs other than exact name matches carry a confidence (how alike the two computations and their neighbours in execution order are); below the minimum, both ops count as removed and added instead.",
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
    let margin = v.min_effect.map(|e| format!(" vs ±{:.1}%", e * 100.0)).unwrap_or_default();
    let mut lines = vec![
        format!("A {} → B {} (medians)", value(v.a.median), value(v.b.median)),
        format!("Δ {}{ci}{margin}", fmt_rel(v.delta_rel)),
        format!("p = {} · n = {} / {}", fmt_p(v.p_value), v.a.n, v.b.n),
    ];
    let evidence = super::verdict::evidence(v);
    if !evidence.is_empty() {
        lines.push(evidence);
    }
    lines
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
            m.delta
                .filter(|d| d.is_finite())
                .map_or_else(|| "–".to_string(), |d| signed(d, format!("{:.2} pp", d.abs() * 100.0)))
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
        let mut lines = vec![format!(
            "A {} → B {}",
            fmt_bytes(mem.a_peak_bytes as f64, false),
            fmt_bytes(mem.b_peak_bytes as f64, false)
        )];
        if let (Some(a), Some(b)) = (mem.a_step_growth_bytes, mem.b_step_growth_bytes) {
            lines.push(format!("growth per step: A {}, B {}", fmt_bytes(a, true), fmt_bytes(b, true)));
        }
        if mem.a_leak_suspected || mem.b_leak_suspected {
            lines.push(format!(
                "leak suspected: A {} · B {}",
                yes_no(mem.a_leak_suspected),
                yes_no(mem.b_leak_suspected)
            ));
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
        roofs.push(Roof {
            label: "A = B".to_string(),
            peak_gflops: p.b_peak_flop_rate,
            bw_gbs: p.b_peak_hbm_bw * GIB,
            color: DARK,
            dashed: false,
        });
    } else {
        roofs.push(Roof {
            label: "B".to_string(),
            peak_gflops: p.b_peak_flop_rate,
            bw_gbs: p.b_peak_hbm_bw * GIB,
            color: DARK,
            dashed: false,
        });
        roofs.push(Roof {
            label: "A".to_string(),
            peak_gflops: p.a_peak_flop_rate,
            bw_gbs: p.a_peak_hbm_bw * GIB,
            color: GREY,
            dashed: true,
        });
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
        "<figure class=\"chart deltas\">\n{}<figcaption>Top {} regressions (red, B slower) and improvements (green, B faster) of matched ops by change of summed self time; ops of one side only are listed apart.</figcaption>\n</figure>\n",
        svg::hbars(&bars, unit),
        top
    )
}

/// `fingerprint (0.93)`: the tier that paired the op and its confidence; `–` for an op of one side.
fn match_text(o: &OpChange) -> String {
    let by = match o.matched_by {
        Some(MatchedBy::Name) => "name",
        Some(MatchedBy::DeduplicatedName) => "deduplicated name",
        Some(MatchedBy::Fingerprint) => "fingerprint",
        None => return "–".to_string(),
    };
    match o.confidence.filter(|c| c.is_finite()) {
        Some(c) => format!("{by} ({c:.2})"),
        None => by.to_string(),
    }
}

/// Ops of one side only, most self time first: name, program, category, occurrences, self time.
fn one_side_table<'a>(ops: impl Iterator<Item = &'a OpChange>, added: bool) -> String {
    let rows: Vec<Vec<String>> = ops
        .enumerate()
        .map(|(i, o)| {
            let (count, time) =
                if added { (o.b_occurrences, o.b_self_time_us) } else { (o.a_occurrences, o.a_self_time_us) };
            vec![
                (i + 1).to_string(),
                o.name.clone(),
                o.program.clone(),
                o.category.clone(),
                count.to_string(),
                fmt_us(time),
            ]
        })
        .collect();
    if rows.is_empty() {
        return note(if added { "No op is new in B." } else { "No op of A is missing from B." });
    }
    let self_time = if added { "B self" } else { "A self" };
    table(&["#", "op", "program", "category", "count", self_time], &rows)
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
                match_text(o),
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
    let headers = [
        "#",
        "op",
        "program",
        "category",
        "matched by",
        "A self",
        "B self",
        "Δ",
        "Δ %",
        "count A / B",
        "FLOPs B/A",
        "bound by",
    ];
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
                if r.a_bound_by == r.b_bound_by {
                    r.a_bound_by.clone()
                } else {
                    format!("{} → {}", r.a_bound_by, r.b_bound_by)
                },
                if r.crossed_ridge { "yes".to_string() } else { "no".to_string() },
                fmt_us(r.b_self_time_us),
                fmt_delta_us(r.delta_us),
            ]
        })
        .collect();
    let mut s = table(
        &["#", "op", "category", "FLOP/byte A → B", "GFLOP/s A → B", "bound by", "crossed ridge", "B self", "Δ"],
        &rows,
    );
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

#[cfg(test)]
mod tests;
