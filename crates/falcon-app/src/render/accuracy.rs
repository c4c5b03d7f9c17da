//! Rendering of the accuracy report (`falcon accuracy compare`): terminal tables, Markdown, and a
//! self-contained HTML page with, per compared metric, an inline SVG chart of A and B over steps above
//! their relative error against the tolerance.
//!
//! Values are printed by the shared formatter (at most 4 significant figures), errors as percents; the JSON
//! report is the struct itself.

use super::html::{self, escape};
use super::svg::{self, num, padded_domain, text, tick_label, Linear};
use super::text::{new_table, sections_to_markdown, sections_to_text, Part, Section};
use falcon_analysis::accuracy::align::{AccuracyReport, AlignedPoint, MetricAlignment, SideInfo, Verdict};
use std::fmt::Write;

/// Failing steps listed per metric in text output.
const FAILING_ROWS: usize = 10;

/// A value as the shared formatter writes it (`10.49`, `3.376 G`, [`num`](super::numbers::num)), `nan`/`inf`
/// as such.
pub fn value(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    super::numbers::num(x)
}

/// A relative error as a percent (`1.974 %`, `2.3e-5 %`); `inf`, or `–` when absent.
pub fn pct(x: Option<f64>) -> String {
    match x {
        None => "–".to_string(),
        Some(x) if x.is_nan() => "nan".to_string(),
        Some(x) if x.is_infinite() => "inf".to_string(),
        Some(x) => super::numbers::percent(x * 100.0),
    }
}

fn opt_value(x: Option<f64>) -> String {
    x.map_or_else(|| "–".to_string(), value)
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "PASS",
        Verdict::Fail => "FAIL",
        Verdict::NoOverlap => "NO OVERLAP",
    }
}

fn side_line(label: &str, s: &SideInfo) -> String {
    let format = serde_json::to_value(s.format).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    let offset = if s.step_offset != 0 { format!(", steps {:+}", s.step_offset) } else { String::new() };
    format!("{label}: {} ({format}, {} series{offset})", s.path, s.series)
}

fn with_step(x: Option<f64>, step: Option<i64>, f: impl Fn(Option<f64>) -> String) -> String {
    match (x, step) {
        (Some(_), Some(s)) => format!("{} @ {s}", f(x)),
        _ => f(x),
    }
}

/// The metric table's header and rows (shared by text, Markdown and HTML).
fn metric_rows(r: &AccuracyReport) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let header = vec![
        "metric",
        "A series",
        "B series",
        "steps",
        "max abs err",
        "max rel err",
        "mean rel err",
        "rtol",
        "atol",
        "failing",
        "first divergence",
        "verdict",
    ];
    let rows = r
        .metrics
        .iter()
        .map(|m| {
            vec![
                m.name.clone(),
                m.a_name.clone().unwrap_or_else(|| "–".into()),
                m.b_name.clone().unwrap_or_else(|| "–".into()),
                m.steps_compared.to_string(),
                with_step(m.max_abs_err, m.max_abs_err_step, opt_value),
                with_step(m.max_rel_err, m.max_rel_err_step, pct),
                pct(m.mean_rel_err),
                value(m.rtol),
                value(m.atol),
                m.failing_steps.to_string(),
                m.first_divergence_step.map_or_else(|| "–".into(), |s| s.to_string()),
                verdict_word(m.verdict).to_string(),
            ]
        })
        .collect();
    (header, rows)
}

/// The first failing points of a metric, as rows.
fn failing_rows(m: &MetricAlignment) -> Vec<Vec<String>> {
    m.points
        .iter()
        .filter(|p| !p.pass)
        .take(FAILING_ROWS)
        .map(|p| vec![p.step.to_string(), value(p.a), value(p.b), value(p.abs_err), pct(Some(p.rel_err))])
        .collect()
}

const FAILING_HEADER: [&str; 5] = ["step", "A", "B", "abs err", "rel err"];

fn sections(r: &AccuracyReport, markdown: bool) -> Vec<Section> {
    let mut out = Vec::new();
    let verdict = format!("verdict: {}", verdict_word(r.verdict));
    let mut head = vec![Part::Text(if markdown { format!("**{verdict}**") } else { verdict })];
    let sides = [side_line("A (reference)", &r.a), side_line("B", &r.b)];
    head.push(Part::Text(if markdown {
        sides.iter().map(|l| format!("- {l}")).collect::<Vec<_>>().join("\n")
    } else {
        sides.join("\n")
    }));
    out.push(Section { title: format!("Accuracy comparison: {} (A) → {} (B)", r.a.path, r.b.path), parts: head });

    let (header, rows) = metric_rows(r);
    let mut t = new_table(markdown, header);
    for row in rows {
        t.add_row(row);
    }
    let mut parts = vec![Part::Table(t)];
    if !r.not_compared.is_empty() {
        parts.push(Part::Text(format!(
            "Also on both sides, not compared (ask with --metric): {}",
            r.not_compared.join(", ")
        )));
    }
    out.push(Section { title: "Metrics".into(), parts });

    for m in r.metrics.iter().filter(|m| m.failing_steps > 0) {
        let mut t = new_table(markdown, FAILING_HEADER.to_vec());
        for row in failing_rows(m) {
            t.add_row(row);
        }
        let shown = m.failing_steps.min(FAILING_ROWS);
        let title = if shown < m.failing_steps {
            format!("Failing steps of {} (first {shown} of {})", m.name, m.failing_steps)
        } else {
            format!("Failing steps of {}", m.name)
        };
        out.push(Section { title, parts: vec![Part::Table(t)] });
    }
    if !r.notes.is_empty() {
        let bullet = if markdown { "- " } else { "• " };
        let text = r.notes.iter().map(|n| format!("{bullet}{n}")).collect::<Vec<_>>().join("\n");
        out.push(Section { title: "Notes".into(), parts: vec![Part::Text(text)] });
    }
    out
}

/// Plain-text tables for a terminal.
pub fn render_table(r: &AccuracyReport) -> String {
    sections_to_text(&sections(r, false))
}

/// Markdown.
pub fn render_md(r: &AccuracyReport) -> String {
    sections_to_markdown(&sections(r, true), 1)
}

/// A self-contained HTML page: verdict cards, the metric table, one chart per compared metric, notes.
pub fn render_html(r: &AccuracyReport) -> String {
    let title = format!("Accuracy comparison: {} (A) → {} (B)", r.a.path, r.b.path);
    let mut s = String::from("<section class=\"accuracy\">\n<div class=\"cards\">\n");
    let class = if r.verdict == Verdict::Pass { "good" } else { "bad" };
    s.push_str(&html::card(
        class,
        "verdict",
        &escape(verdict_word(r.verdict)),
        &[side_line("A", &r.a), side_line("B", &r.b)],
    ));
    for m in &r.metrics {
        let class = match m.verdict {
            Verdict::Pass => "good",
            Verdict::Fail => "bad",
            Verdict::NoOverlap => "unsure",
        };
        let mut lines = vec![format!("{} steps, rtol {} atol {}", m.steps_compared, value(m.rtol), value(m.atol))];
        if m.steps_compared > 0 {
            lines.push(format!("max rel err {}", with_step(m.max_rel_err, m.max_rel_err_step, pct)));
        }
        if let Some(step) = m.first_divergence_step {
            lines.push(format!("diverges from step {step}"));
        }
        s.push_str(&html::card(class, &m.name, &escape(verdict_word(m.verdict)), &lines));
    }
    s.push_str("</div>\n<h2>Metrics</h2>\n");
    let (header, rows) = metric_rows(r);
    s.push_str(&html::table(&header, &rows));
    if !r.not_compared.is_empty() {
        s.push_str(&html::note(&format!(
            "Also on both sides, not compared (ask with --metric): {}",
            r.not_compared.join(", ")
        )));
    }
    for m in &r.metrics {
        let _ = writeln!(s, "<h3>{}</h3>", escape(&m.name));
        if m.points.is_empty() {
            s.push_str(&html::note("no step in common: nothing to chart"));
            continue;
        }
        let _ = write!(
            s,
            "<figure class=\"chart accuracy\">\n{}<figcaption>A ({}, blue) and B ({}, purple) by step; below, the relative error |b−a|/|a| against rtol (dashed); failing steps in red{}.</figcaption>\n</figure>\n",
            chart(m),
            escape(m.a_name.as_deref().unwrap_or("–")),
            escape(m.b_name.as_deref().unwrap_or("–")),
            m.first_divergence_step.map_or_else(String::new, |st| format!(", divergence from step {st} on"))
        );
        if m.failing_steps > 0 {
            s.push_str(&html::table(&FAILING_HEADER, &failing_rows(m)));
        }
    }
    if !r.notes.is_empty() {
        s.push_str("<h2>Notes</h2>\n<ul class=\"notes\">\n");
        for n in &r.notes {
            let _ = writeln!(s, "<li>{}</li>", escape(n));
        }
        s.push_str("</ul>\n");
    }
    s.push_str("</section>\n");
    html::render_page(&title, &[s])
}

/// Points drawn as lines (failing points are always marked).
const MAX_LINE_POINTS: usize = 1500;

fn hline(x1: f64, x2: f64, y: f64, stroke: &str, extra: &str) -> String {
    format!(r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{stroke}" {extra}/>"#, num(x1), num(y), num(x2), num(y))
}

fn vline(x: f64, y1: f64, y2: f64, stroke: &str, extra: &str) -> String {
    format!(r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{stroke}" {extra}/>"#, num(x), num(y1), num(x), num(y2))
}

/// Polylines through the finite `(x, y)` pixels, broken where a value is not finite.
fn polylines(pts: &[(f64, Option<f64>)], color: &str) -> String {
    let mut s = String::new();
    let mut run: Vec<String> = Vec::new();
    let flush = |run: &mut Vec<String>, s: &mut String| {
        if run.len() > 1 {
            let _ =
                write!(s, r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="1.6"/>"#, run.join(" "));
        }
        run.clear();
    };
    for (x, y) in pts {
        match y {
            Some(y) => run.push(format!("{},{}", num(*x), num(*y))),
            None => flush(&mut run, &mut s),
        }
    }
    flush(&mut run, &mut s);
    s
}

/// Every `k`-th point (and the last), at most [`MAX_LINE_POINTS`].
fn thinned(points: &[AlignedPoint]) -> Vec<&AlignedPoint> {
    let k = points.len().div_ceil(MAX_LINE_POINTS).max(1);
    let mut out: Vec<&AlignedPoint> = points.iter().step_by(k).collect();
    if let Some(last) = points.last() {
        if out.last().is_none_or(|p| p.step != last.step) {
            out.push(last);
        }
    }
    out
}

/// Two panels over the same step axis: A and B values; the relative error with the rtol line.
fn chart(m: &MetricAlignment) -> String {
    let (w, h) = (960.0, 420.0);
    let (left, right) = (80.0, 930.0);
    let (top1, bottom1) = (30.0, 240.0);
    let (top2, bottom2) = (280.0, 380.0);
    let pts = thinned(&m.points);
    let (s0, s1) = (m.points[0].step as f64, m.points[m.points.len() - 1].step as f64);
    let (d0, d1) = if s1 > s0 { (s0, s1) } else { (s0 - 1.0, s1 + 1.0) };
    let xs = Linear { d0, d1, r0: left, r1: right };
    let vdom = padded_domain(m.points.iter().flat_map(|p| [p.a, p.b]), false).unwrap_or((0.0, 1.0));
    let ys = Linear { d0: vdom.0, d1: vdom.1, r0: bottom1, r1: top1 };
    let finite_rel = m.points.iter().map(|p| p.rel_err).filter(|r| r.is_finite()).fold(0.0f64, f64::max);
    let rel_top = (finite_rel.max(m.rtol) * 1.15).max(1e-12);
    let rs = Linear { d0: 0.0, d1: rel_top, r0: bottom2, r1: top2 };
    let mut s = svg::open(w, h, &format!("{}: A and B by step, relative error", m.name));

    // Axes and grid.
    for t in ys.ticks(5) {
        let y = ys.map(t);
        s.push_str(&hline(left, right, y, "#e9ecef", ""));
        s.push_str(&text(left - 6.0, y + 4.0, "end", "", &tick_label(t)));
    }
    for t in rs.ticks(3) {
        let y = rs.map(t);
        s.push_str(&hline(left, right, y, "#e9ecef", ""));
        s.push_str(&text(left - 6.0, y + 4.0, "end", "", &format!("{}%", tick_label(t * 100.0))));
    }
    for t in xs.ticks(8) {
        let x = xs.map(t);
        s.push_str(&vline(x, bottom2, bottom2 + 4.0, svg::DARK, ""));
        s.push_str(&text(x, bottom2 + 18.0, "middle", "", &tick_label(t)));
    }
    s.push_str(&hline(left, right, bottom1, svg::DARK, ""));
    s.push_str(&hline(left, right, bottom2, svg::DARK, ""));
    s.push_str(&text((left + right) / 2.0, bottom2 + 36.0, "middle", r#"font-weight="600""#, "step"));
    s.push_str(&text(left, top1 - 12.0, "start", r#"font-weight="600""#, &m.name));
    s.push_str(&text(left, top2 - 8.0, "start", r#"font-weight="600""#, "relative error"));
    // Legend.
    s.push_str(&hline(right - 190.0, right - 170.0, top1 - 16.0, svg::BLUE, r#"stroke-width="2""#));
    s.push_str(&text(right - 165.0, top1 - 12.0, "start", "", "A"));
    s.push_str(&hline(right - 130.0, right - 110.0, top1 - 16.0, svg::PURPLE, r#"stroke-width="2""#));
    s.push_str(&text(right - 105.0, top1 - 12.0, "start", "", "B"));
    s.push_str(&hline(right - 70.0, right - 50.0, top2 - 12.0, svg::GREY, r#"stroke-dasharray="5 4""#));
    s.push_str(&text(right - 45.0, top2 - 8.0, "start", "", "rtol"));

    // Divergence.
    if let Some(st) = m.first_divergence_step {
        let x = xs.map(st as f64);
        s.push_str(&vline(x, top1, bottom2, svg::RED, r#"stroke-dasharray="3 3""#));
        s.push_str(&text(
            x + 4.0,
            top1 + 12.0,
            "start",
            &format!(r#"fill="{}""#, svg::RED),
            &format!("diverges at {st}"),
        ));
    }

    // Values.
    let fy = |v: f64| v.is_finite().then(|| ys.map(v));
    let line_a: Vec<(f64, Option<f64>)> = pts.iter().map(|p| (xs.map(p.step as f64), fy(p.a))).collect();
    let line_b: Vec<(f64, Option<f64>)> = pts.iter().map(|p| (xs.map(p.step as f64), fy(p.b))).collect();
    s.push_str(&polylines(&line_a, svg::BLUE));
    s.push_str(&polylines(&line_b, svg::PURPLE));
    let few = m.points.len() <= 200;
    for p in &m.points {
        let x = xs.map(p.step as f64);
        if few {
            for (v, c) in [(p.a, svg::BLUE), (p.b, svg::PURPLE)] {
                if let Some(y) = fy(v) {
                    let _ = write!(s, r#"<circle cx="{}" cy="{}" r="2.5" fill="{c}"/>"#, num(x), num(y));
                }
            }
        }
    }

    // Relative error.
    s.push_str(&hline(left, right, rs.map(m.rtol), svg::GREY, r#"stroke-dasharray="5 4""#));
    let clamp = |r: f64| if r.is_finite() { rs.map(r.min(rel_top)) } else { top2 };
    let line_r: Vec<(f64, Option<f64>)> =
        pts.iter().map(|p| (xs.map(p.step as f64), (!p.rel_err.is_nan()).then(|| clamp(p.rel_err)))).collect();
    s.push_str(&polylines(&line_r, svg::DARK));
    for p in m.points.iter().filter(|p| !p.pass).take(500) {
        let x = xs.map(p.step as f64);
        let y = if p.rel_err.is_nan() { top2 } else { clamp(p.rel_err) };
        let _ = write!(
            s,
            r#"<circle cx="{}" cy="{}" r="3" fill="{}"><title>step {}: A {} B {} rel err {}</title></circle>"#,
            num(x),
            num(y),
            svg::RED,
            p.step,
            escape(&value(p.a)),
            escape(&value(p.b)),
            escape(&pct(Some(p.rel_err)))
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(value(10.49226), "10.49");
        assert_eq!(value(0.68618), "0.6862");
        assert_eq!(value(3375511040.0), "3.376 G");
        assert_eq!(value(0.0), "0");
        assert_eq!(value(2098.0), "2098");
        assert_eq!(value(f64::NAN), "nan");
        assert_eq!(pct(Some(0.019740265)), "1.97 %");
        assert_eq!(pct(Some(2.3e-7)), "2.3e-5 %");
        assert_eq!(pct(Some(f64::INFINITY)), "inf");
        assert_eq!(pct(None), "–");
    }
}
