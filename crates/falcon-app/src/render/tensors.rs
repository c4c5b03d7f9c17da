//! The tensor dump comparison (`falcon accuracy tensors`) as terminal tables, Markdown, or an HTML section.
//! All three show the same rows with the same numbers: the summary, the `top` worst tensors (failing first,
//! then by relative L2 error), shape mismatches, names found on one side only, and notes.
//!
//! Errors are shown in scientific notation with 3 significant digits, values and cosine by the shared formatter
//! (4 significant figures; a cosine that would read `1` as `1−δ`), the share of close elements as a percent
//! (never rounded up to 100 % when an element is not close).

use super::text::new_table;
use super::{html, numbers};
use falcon_analysis::tensors::{TensorDiff, TensorReport};
use std::fmt::Write;

const HEADER: [&str; 11] = [
    "tensor",
    "dtype",
    "shape",
    "max abs err",
    "at (A → B)",
    "max rel err",
    "rel L2",
    "cosine",
    "max ULP",
    "close",
    "result",
];

/// Terminal tables.
pub fn render_table(r: &TensorReport, top: usize) -> String {
    render_text(r, top, false)
}

/// Markdown, with `## ` headings.
pub fn render_md(r: &TensorReport, top: usize) -> String {
    render_text(r, top, true)
}

fn render_text(r: &TensorReport, top: usize, md: bool) -> String {
    let mut out = String::new();
    let heading = |out: &mut String, level: usize, title: &str| {
        if md {
            let _ = writeln!(out, "{} {title}\n", "#".repeat(level));
        } else {
            let _ = writeln!(out, "{title}");
        }
    };
    heading(&mut out, 2, "Tensor comparison");
    let bullet = if md { "- " } else { "  " };
    for line in summary_lines(r) {
        let _ = writeln!(out, "{bullet}{line}");
    }
    if !r.tensors.is_empty() {
        out.push('\n');
        heading(&mut out, 3, &format!("Tensors ({} of {}, worst first)", r.tensors.len().min(top), r.tensors.len()));
        let mut t = new_table(md, HEADER.to_vec());
        for d in r.tensors.iter().take(top) {
            t.add_row(row(d));
        }
        let _ = writeln!(out, "{t}");
        if r.tensors.len() > top {
            let _ = writeln!(
                out,
                "{}… {} more (raise --top, or use --json for every tensor)",
                if md { "\n" } else { "" },
                r.tensors.len() - top
            );
        }
    }
    if !r.shape_mismatches.is_empty() {
        out.push('\n');
        heading(&mut out, 3, &format!("Shape mismatches ({}, not compared)", r.shape_mismatches.len()));
        let mut t = new_table(md, vec!["tensor", "A shape", "B shape", "A dtype", "B dtype"]);
        for s in r.shape_mismatches.iter().take(top) {
            t.add_row(vec![
                pair_name(&s.a_name, &s.name),
                shape(&s.shape_a),
                shape(&s.shape_b),
                s.dtype_a.clone(),
                s.dtype_b.clone(),
            ]);
        }
        let _ = writeln!(out, "{t}");
        if r.shape_mismatches.len() > top {
            let _ = writeln!(out, "… {} more", r.shape_mismatches.len() - top);
        }
    }
    for (title, names) in [("Only in A", &r.only_in_a), ("Only in B", &r.only_in_b)] {
        if names.is_empty() {
            continue;
        }
        out.push('\n');
        heading(&mut out, 3, &format!("{title} ({})", names.len()));
        for n in names.iter().take(top) {
            let _ = writeln!(out, "{bullet}{}", if md { format!("`{n}`") } else { n.clone() });
        }
        if names.len() > top {
            let _ = writeln!(out, "{bullet}… {} more", names.len() - top);
        }
    }
    if !r.notes.is_empty() {
        out.push('\n');
        heading(&mut out, 3, "Notes");
        for n in &r.notes {
            let _ = writeln!(out, "{bullet}{n}");
        }
    }
    out
}

/// An HTML section: summary cards, the tensor table, mismatches, one-sided names and notes.
pub fn render_html_section(r: &TensorReport, top: usize) -> String {
    let mut s = String::from("<section class=\"tensor-compare\">\n<h2>Tensor comparison</h2>\n");
    let _ =
        writeln!(s, "<p>A (reference) <code>{}</code> · B <code>{}</code></p>", html::escape(&r.a), html::escape(&r.b));
    s.push_str("<div class=\"cards\">\n");
    let class = if r.mismatched() { "bad" } else { "good" };
    let compared = r.tensors.len();
    s.push_str(&html::card(
        class,
        "allclose",
        &format!("<span class=\"verdict\">{} / {compared} pass</span>", r.passed),
        &[format!("{} fail", r.failed), tolerance_line(r)],
    ));
    if let Some(worst) = r.tensors.first() {
        s.push_str(&html::card(
            if worst.allclose { "good" } else { "bad" },
            "worst tensor",
            &format!("<code>{}</code>", html::escape(&worst.name)),
            &[format!("rel L2 {}", opt_sci(worst.rel_l2)), format!("max abs err {}", sci(worst.max_abs_err))],
        ));
    }
    s.push_str(&html::card(
        if r.shape_mismatches.is_empty() && r.only_in_a.is_empty() && r.only_in_b.is_empty() {
            "same"
        } else {
            "unsure"
        },
        "matching",
        &format!("{compared} paired"),
        &[
            format!(
                "{} shape mismatch{}",
                r.shape_mismatches.len(),
                if r.shape_mismatches.len() == 1 { "" } else { "es" }
            ),
            format!("{} only in A · {} only in B", r.only_in_a.len(), r.only_in_b.len()),
        ],
    ));
    s.push_str(&html::card(
        "same",
        "read",
        &html::escape(&html::fmt_bytes(r.bytes_compared as f64, false)),
        &[throughput(r)],
    ));
    s.push_str("</div>\n");
    if !r.tensors.is_empty() {
        let _ = writeln!(s, "<h3>Tensors ({} of {}, worst first)</h3>", r.tensors.len().min(top), r.tensors.len());
        let rows: Vec<Vec<String>> = r.tensors.iter().take(top).map(row).collect();
        s.push_str(&html::table(&HEADER, &rows));
        if r.tensors.len() > top {
            s.push_str(&html::note(&format!(
                "… {} more (raise --top, or use --json for every tensor)",
                r.tensors.len() - top
            )));
        }
    }
    if !r.shape_mismatches.is_empty() {
        let _ = writeln!(s, "<h3>Shape mismatches ({}, not compared)</h3>", r.shape_mismatches.len());
        let rows: Vec<Vec<String>> = r
            .shape_mismatches
            .iter()
            .take(top)
            .map(|m| {
                vec![
                    pair_name(&m.a_name, &m.name),
                    shape(&m.shape_a),
                    shape(&m.shape_b),
                    m.dtype_a.clone(),
                    m.dtype_b.clone(),
                ]
            })
            .collect();
        s.push_str(&html::table(&["tensor", "A shape", "B shape", "A dtype", "B dtype"], &rows));
    }
    for (title, names) in [("Only in A", &r.only_in_a), ("Only in B", &r.only_in_b)] {
        if names.is_empty() {
            continue;
        }
        let _ = writeln!(s, "<h3>{title} ({})</h3>\n<ul>", names.len());
        for n in names.iter().take(top) {
            let _ = writeln!(s, "<li><code>{}</code></li>", html::escape(n));
        }
        if names.len() > top {
            let _ = writeln!(s, "<li>… {} more</li>", names.len() - top);
        }
        s.push_str("</ul>\n");
    }
    if !r.notes.is_empty() {
        s.push_str("<h3>Notes</h3>\n<ul>\n");
        for n in &r.notes {
            let _ = writeln!(s, "<li>{}</li>", html::escape(n));
        }
        s.push_str("</ul>\n");
    }
    s.push_str("</section>\n");
    s
}

fn summary_lines(r: &TensorReport) -> Vec<String> {
    let mut lines = vec![format!("A (reference): {}", r.a), format!("B: {}", r.b)];
    let verdict = if r.mismatched() { "MISMATCH" } else { "match" };
    lines.push(format!(
        "{verdict}: {} compared, {} pass, {} fail · {} shape mismatch{} · {} only in A · {} only in B",
        r.tensors.len(),
        r.passed,
        r.failed,
        r.shape_mismatches.len(),
        if r.shape_mismatches.len() == 1 { "" } else { "es" },
        r.only_in_a.len(),
        r.only_in_b.len()
    ));
    lines.push(tolerance_line(r));
    lines.push(format!("{} read · {}", numbers::bytes(r.bytes_compared as f64), throughput(r)));
    lines
}

fn throughput(r: &TensorReport) -> String {
    let gbs = if r.seconds > 0.0 { r.bytes_compared as f64 / r.seconds / 1e9 } else { 0.0 };
    format!("{} ({} GB/s)", numbers::duration_s(r.seconds), numbers::num(gbs))
}

/// The tolerances in use: one pair when every tensor has the same, else "per dtype".
fn tolerance_line(r: &TensorReport) -> String {
    let mut pairs: Vec<(f64, f64)> = r.tensors.iter().map(|t| (t.rtol, t.atol)).collect();
    pairs.sort_by(|x, y| x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal));
    pairs.dedup();
    match pairs.as_slice() {
        [] => "allclose: |b − a| ≤ atol + rtol·|a|".to_string(),
        [(rt, at)] => {
            format!("allclose: |b − a| ≤ atol + rtol·|a| with rtol {}, atol {}", numbers::num(*rt), numbers::num(*at))
        }
        _ => "allclose: |b − a| ≤ atol + rtol·|a| with torch.testing's tolerances per dtype".to_string(),
    }
}

fn row(d: &TensorDiff) -> Vec<String> {
    let dtype = match &d.dtype_b {
        Some(b) => format!("{}→{b}", d.dtype),
        None => d.dtype.clone(),
    };
    let at = match (&d.max_abs_err_index, d.a_at_max_abs_err, d.b_at_max_abs_err) {
        (Some(i), Some(a), Some(b)) => {
            format!("[{}] {} → {}", i.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","), short(a), short(b))
        }
        _ => "—".to_string(),
    };
    let mut rel = opt_sci(d.max_rel_err);
    if d.zero_a_nonzero_b > 0 {
        rel.push_str(&format!(" (+{} a=0)", d.zero_a_nonzero_b));
    }
    let mut result = if d.allclose { "pass".to_string() } else { "FAIL".to_string() };
    let specials: Vec<String> = [("NaN", d.nan_a, d.nan_b), ("Inf", d.inf_a, d.inf_b)]
        .iter()
        .filter(|(_, a, b)| a + b > 0)
        .map(|(w, a, b)| format!("{w} {a}/{b}"))
        .collect();
    if !specials.is_empty() {
        result.push_str(&format!(" ({})", specials.join(", ")));
    }
    vec![
        pair_name(&d.a_name, &d.name),
        dtype,
        shape(&d.shape),
        sci(d.max_abs_err),
        at,
        rel,
        opt_sci(d.rel_l2),
        d.cosine.map_or_else(|| "—".to_string(), cosine),
        d.max_ulp.map_or_else(|| "—".to_string(), |u| u.to_string()),
        close_pct(d),
        result,
    ]
}

fn pair_name(a: &str, b: &str) -> String {
    if a == b {
        b.to_string()
    } else {
        format!("{a} → {b}")
    }
}

fn shape(s: &[usize]) -> String {
    if s.is_empty() {
        "scalar".to_string()
    } else {
        s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("×")
    }
}

/// Scientific notation, 3 significant digits; plain `0` for zero.
fn sci(x: f64) -> String {
    if x == 0.0 {
        "0".to_string()
    } else {
        format!("{x:.2e}")
    }
}

fn opt_sci(x: Option<f64>) -> String {
    x.map_or_else(|| "—".to_string(), sci)
}

/// A value at the max-error position, short ([`numbers::num`]).
fn short(x: f64) -> String {
    numbers::num(x)
}

/// Cosine with 4 significant figures; one that would read `1` but is not (within 5e-5 of it) as `1−δ`.
fn cosine(c: f64) -> String {
    if c == 1.0 {
        "1".to_string()
    } else if c < 1.0 && numbers::num(c) == "1" {
        format!("1−{:.1e}", 1.0 - c)
    } else {
        numbers::num(c)
    }
}

fn close_pct(d: &TensorDiff) -> String {
    if d.allclose {
        return numbers::percent(100.0);
    }
    let p = d.close_fraction * 100.0;
    if p > 99.99 {
        ">99.99 %".to_string()
    } else {
        numbers::percent((p * 100.0).floor() / 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use falcon_analysis::tensors::ShapeMismatch;

    fn diff(name: &str, allclose: bool) -> TensorDiff {
        TensorDiff {
            name: name.into(),
            a_name: name.into(),
            dtype: "f32".into(),
            dtype_b: None,
            shape: vec![2, 3],
            elements: 6,
            max_abs_err: 0.003,
            max_abs_err_index: Some(vec![1, 2]),
            a_at_max_abs_err: Some(0.5),
            b_at_max_abs_err: Some(0.503),
            max_rel_err: Some(0.006),
            zero_a_nonzero_b: 0,
            mean_abs_err: 0.0005,
            rel_l2: Some(1e-3),
            cosine: Some(0.9999990),
            max_ulp: Some(12345),
            rtol: 1.3e-6,
            atol: 1e-5,
            allclose,
            close_fraction: if allclose { 1.0 } else { 5.0 / 6.0 },
            nan_a: 0,
            nan_b: if allclose { 0 } else { 1 },
            inf_a: 0,
            inf_b: 0,
        }
    }

    fn report() -> TensorReport {
        TensorReport {
            a: "a<dir>".into(),
            b: "b".into(),
            tensors: vec![diff("layer.0/w", false), diff("embed", true)],
            only_in_a: vec!["extra".into()],
            only_in_b: vec![],
            shape_mismatches: vec![ShapeMismatch {
                name: "s".into(),
                a_name: "s".into(),
                shape_a: vec![3, 4],
                shape_b: vec![4, 3],
                dtype_a: "f32".into(),
                dtype_b: "f32".into(),
            }],
            passed: 1,
            failed: 1,
            bytes_compared: 48,
            seconds: 0.001,
            notes: vec!["map line 3: `x` is not in A".into()],
        }
    }

    #[test]
    fn text_formats_show_the_same_rows() {
        let r = report();
        let table = render_table(&r, 1);
        assert!(table.contains("MISMATCH: 2 compared, 1 pass, 1 fail"), "{table}");
        assert!(table.contains("layer.0/w") && !table.contains("│ embed"), "{table}");
        assert!(table.contains("… 1 more"), "{table}");
        assert!(
            table.contains("[1,2] 0.5 → 0.503") && table.contains("3.00e-3") && table.contains("FAIL (NaN 0/1)"),
            "{table}"
        );
        assert!(table.contains("83.33 %") && table.contains("4×3") && table.contains("extra"), "{table}");
        assert!(table.contains("1−1.0e-6"), "{table}");
        assert_eq!(
            (cosine(1.0), cosine(1.0 - 1.6e-14), cosine(0.98765432), cosine(0.99994)),
            ("1".into(), "1−1.6e-14".into(), "0.9877".into(), "0.9999".into())
        );
        let md = render_md(&r, 5);
        assert!(md.starts_with("## Tensor comparison"), "{md}");
        assert!(
            md.contains("| layer.0/w") && md.contains("| embed") && md.contains("`extra`") && md.contains("### Notes"),
            "{md}"
        );
    }

    #[test]
    fn html_escapes_names() {
        let s = render_html_section(&report(), 5);
        assert!(s.contains("a&lt;dir&gt;") && !s.contains("a<dir>"), "{s}");
        assert!(s.contains("1 / 2 pass"), "{s}");
    }
}
