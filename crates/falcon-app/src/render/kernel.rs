//! Rendering of kernel-bench reports (`falcon kernel analyze|compare`) as terminal tables, Markdown, a
//! self-contained HTML page, or JSON (the structs themselves). The three text forms share one row model, so
//! they show the same cells.
//!
//! Numbers ([`super::numbers`]): at most 4 significant figures — times in ms, TFLOP/s, GB/s, % of roofline,
//! speed-ups with `×`, relative changes as signed percents.

use super::html;
use super::text::{new_table, p_value, rel_pct};
use super::Format as ReportFormat;
use falcon_analysis::kernel_bench::{KernelComparison, KernelDelta, KernelReport, KernelRow, RooflineBound, RowKey};
use falcon_core::stats::VerdictKind;
use std::collections::BTreeSet;

const NONE: &str = "—";

/// The analysis in `format`.
pub fn render_report(r: &KernelReport, format: ReportFormat) -> serde_json::Result<String> {
    Ok(match format {
        ReportFormat::Json => serde_json::to_string_pretty(r)? + "\n",
        ReportFormat::Table => report_text(r, false),
        ReportFormat::Md => report_text(r, true),
        ReportFormat::Html => report_html(r),
    })
}

/// The comparison in `format`.
pub fn render_comparison(c: &KernelComparison, format: ReportFormat) -> serde_json::Result<String> {
    Ok(match format {
        ReportFormat::Json => serde_json::to_string_pretty(c)? + "\n",
        ReportFormat::Table => comparison_text(c, false),
        ReportFormat::Md => comparison_text(c, true),
        ReportFormat::Html => comparison_html(c),
    })
}

/// Why `--fail-on-regression` fails: the rows that regressed or became incorrect.
pub fn regression_reason(c: &KernelComparison) -> String {
    let mut why: Vec<String> = c
        .rows
        .iter()
        .filter(|d| d.verdict.verdict == VerdictKind::Regressed)
        .map(|d| format!("{} {} ({})", label(&d.kernel, &d.variant), d.shape_key, rel_pct(d.verdict.delta_rel)))
        .collect();
    why.extend(
        c.rows
            .iter()
            .filter(|d| d.became_incorrect())
            .map(|d| format!("{} {} became incorrect", label(&d.kernel, &d.variant), d.shape_key)),
    );
    why.join("; ")
}

// ---------------------------------------------------------------------------------------------------------
// Number formatting

use super::numbers::{num, num_opt as sig};

fn ms(x: f64) -> String {
    num(x)
}

fn pct(f: Option<f64>) -> String {
    super::numbers::fraction_percent(f)
}

fn times(x: Option<f64>) -> String {
    x.filter(|x| x.is_finite()).map_or_else(|| NONE.to_string(), |x| format!("{}×", num(x)))
}

fn frac(v: Option<f64>) -> String {
    sig(v)
}

fn correct_word(c: Option<bool>) -> &'static str {
    match c {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "?",
    }
}

fn label(kernel: &str, variant: &str) -> String {
    format!("{kernel}/{variant}")
}

fn or_dash(s: &str) -> String {
    if s.is_empty() {
        NONE.to_string()
    } else {
        s.to_string()
    }
}

/// Markdown cell text: pipes escaped; unchanged for the terminal.
fn md_cell(markdown: bool, s: String) -> String {
    if markdown {
        s.replace('|', "\\|")
    } else {
        s
    }
}

// ---------------------------------------------------------------------------------------------------------
// Analysis

/// Whether the rows span more than one hardware type (then each row shows its own).
fn hardware_column(hw: impl Iterator<Item = String>) -> (bool, String) {
    let set: BTreeSet<String> = hw.collect();
    let shown = set.iter().map(|h| or_dash(h)).collect::<Vec<_>>().join(", ");
    (set.len() > 1, shown)
}

fn report_model(r: &KernelReport) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let (per_row_hw, _) = hardware_column(r.rows.iter().map(|x| x.hardware.clone()));
    let mut header = vec!["kernel", "variant", "shape", "dtype"];
    if per_row_hw {
        header.push("hardware");
    }
    header.extend([
        "correct",
        "n",
        "median ms",
        "IQR ms",
        "min ms",
        "mean ms",
        "TFLOP/s",
        "GB/s",
        "% roofline",
        "speed-up",
    ]);
    let rows = r
        .rows
        .iter()
        .map(|x: &KernelRow| {
            let mut row = vec![
                x.kernel.clone(),
                if x.reference { format!("{} (ref)", x.variant) } else { x.variant.clone() },
                or_dash(&x.shape_key),
                or_dash(&x.dtype),
            ];
            if per_row_hw {
                row.push(or_dash(&x.hardware));
            }
            let roof = match (x.roofline_fraction, x.bound) {
                (Some(f), Some(RooflineBound::Compute)) => format!("{} (compute)", pct(Some(f))),
                (Some(f), Some(RooflineBound::Memory)) => format!("{} (memory)", pct(Some(f))),
                (f, _) => pct(f),
            };
            row.extend([
                correct_word(x.correct).to_string(),
                x.n.to_string(),
                ms(x.median_ms),
                ms(x.iqr_ms),
                ms(x.min_ms),
                ms(x.mean_ms),
                sig(x.achieved_tflops),
                sig(x.achieved_gbs),
                roof,
                times(x.speedup),
            ]);
            row
        })
        .collect();
    (header, rows)
}

fn summary_lines(r: &KernelReport) -> Vec<String> {
    let (_, hw) = hardware_column(r.rows.iter().map(|x| x.hardware.clone()));
    let kernels: BTreeSet<&str> = r.rows.iter().map(|x| x.kernel.as_str()).collect();
    vec![
        format!("{} rows, {} kernel(s), hardware {hw}", r.rows.len(), kernels.len()),
        format!(
            "fast_{} = {} ({} of {} variants correct and more than {}× faster than their reference)",
            r.fast_p.p,
            frac(r.fast_p.value),
            r.fast_p.count,
            r.fast_p.n,
            r.fast_p.p
        ),
        format!("fast_0 = {} ({} of {} correct with a reference)", frac(r.fast_0.value), r.fast_0.count, r.fast_0.n),
        format!(
            "correct: {} · geomean speed-up of correct variants: {}",
            pct(r.correct_fraction),
            times(r.geomean_speedup)
        ),
    ]
}

fn report_text(r: &KernelReport, markdown: bool) -> String {
    let mut out = String::new();
    if markdown {
        out.push_str(&format!("## Kernel bench: `{}`\n\n", r.path));
        for line in summary_lines(r) {
            out.push_str(&format!("- {line}\n"));
        }
        out.push('\n');
    } else {
        out.push_str(&format!("Kernel bench: {}\n", r.path));
        for line in summary_lines(r) {
            out.push_str(&format!("  {line}\n"));
        }
    }
    let (header, rows) = report_model(r);
    let mut t = new_table(markdown, header);
    for row in rows {
        t.add_row(row.into_iter().map(|c| md_cell(markdown, c)).collect::<Vec<_>>());
    }
    out.push_str(&t.to_string());
    out.push('\n');
    notes_text(&mut out, &r.notes, markdown);
    out
}

fn notes_text(out: &mut String, notes: &[String], markdown: bool) {
    if notes.is_empty() {
        return;
    }
    out.push_str(if markdown { "\n### Notes\n\n" } else { "\nNotes\n" });
    for n in notes {
        out.push_str(&format!("{}{n}\n", if markdown { "- " } else { "  - " }));
    }
}

fn notes_html(notes: &[String]) -> String {
    if notes.is_empty() {
        return String::new();
    }
    let mut s = String::from("<section class=\"notes\">\n<h2>Notes</h2>\n<ul class=\"notes\">\n");
    for n in notes {
        s.push_str(&format!("<li>{}</li>\n", html::escape(n)));
    }
    s.push_str("</ul>\n</section>\n");
    s
}

fn report_html(r: &KernelReport) -> String {
    let fast_class = match r.fast_p.value {
        Some(v) if v > 0.0 => "good",
        Some(_) => "bad",
        None => "unsure",
    };
    let correct_class = match r.correct_fraction {
        Some(v) if v >= 1.0 => "good",
        Some(_) => "bad",
        None => "unsure",
    };
    let mut cards = String::from("<section class=\"summary\">\n<div class=\"cards\">\n");
    cards.push_str(&html::card(
        fast_class,
        &format!("fast_{}", r.fast_p.p),
        &html::escape(&frac(r.fast_p.value)),
        &[format!("{} of {} variants correct and > {}× faster", r.fast_p.count, r.fast_p.n, r.fast_p.p)],
    ));
    cards.push_str(&html::card(
        correct_class,
        "correct (fast_0)",
        &html::escape(&pct(r.correct_fraction)),
        &[format!("fast_0 = {} ({} of {})", frac(r.fast_0.value), r.fast_0.count, r.fast_0.n)],
    ));
    cards.push_str(&html::card(
        "same",
        "geomean speed-up",
        &html::escape(&times(r.geomean_speedup)),
        &["correct variants vs their reference".to_string()],
    ));
    cards.push_str("</div>\n");
    for line in summary_lines(r).iter().take(1) {
        cards.push_str(&html::note(line));
    }
    cards.push_str("</section>\n");
    let (header, rows) = report_model(r);
    let table = format!("<section class=\"rows\">\n<h2>Results</h2>\n{}</section>\n", html::table(&header, &rows));
    html::render_page(&format!("Kernel bench: {}", r.path), &[cards, table, notes_html(&r.notes)])
}

// ---------------------------------------------------------------------------------------------------------
// Comparison

fn comparison_model(c: &KernelComparison) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let (per_row_hw, _) = hardware_column(c.rows.iter().map(|x| x.hardware.clone()));
    let mut header = vec!["kernel", "variant", "shape", "dtype"];
    if per_row_hw {
        header.push("hardware");
    }
    header.extend(["base ms", "new ms", "Δ median", "95% CI", "p-value", "speed-up", "verdict", "correct"]);
    let rows = c
        .rows
        .iter()
        .map(|d: &KernelDelta| {
            let mut row = vec![d.kernel.clone(), d.variant.clone(), or_dash(&d.shape_key), or_dash(&d.dtype)];
            if per_row_hw {
                row.push(or_dash(&d.hardware));
            }
            let ci = match (d.verdict.ci_low_rel, d.verdict.ci_high_rel) {
                (Some(lo), Some(hi)) => format!("{} … {}", rel_pct(Some(lo)), rel_pct(Some(hi))),
                _ => NONE.to_string(),
            };
            let correct = if d.base_correct == d.new_correct {
                correct_word(d.new_correct).to_string()
            } else {
                format!("{} → {}", correct_word(d.base_correct), correct_word(d.new_correct))
            };
            row.extend([
                sig(d.base_median_ms),
                sig(d.new_median_ms),
                rel_pct(d.verdict.delta_rel),
                ci,
                p_value(d.verdict.p_value),
                times(d.speedup),
                d.verdict.verdict.as_str().to_string(),
                correct,
            ]);
            row
        })
        .collect();
    (header, rows)
}

fn counts_line(c: &KernelComparison) -> String {
    let mut s = format!(
        "{} matched rows: {} regressed · {} improved · {} same · {} inconclusive",
        c.rows.len(),
        c.regressed,
        c.improved,
        c.same,
        c.inconclusive
    );
    if c.became_incorrect > 0 {
        s.push_str(&format!(" · {} became incorrect", c.became_incorrect));
    }
    s
}

fn key_text(k: &RowKey) -> String {
    let mut s = label(&k.kernel, &k.variant);
    for part in [&k.shape_key, &k.dtype, &k.hardware] {
        if !part.is_empty() {
            s.push(' ');
            s.push_str(part);
        }
    }
    s
}

fn unmatched_lines(c: &KernelComparison) -> Vec<String> {
    let mut out = Vec::new();
    for (what, keys) in [("only in base", &c.only_in_base), ("only in new", &c.only_in_new)] {
        if !keys.is_empty() {
            out.push(format!("{what} ({}): {}", keys.len(), keys.iter().map(key_text).collect::<Vec<_>>().join(", ")));
        }
    }
    out
}

fn comparison_text(c: &KernelComparison, markdown: bool) -> String {
    let mut out = String::new();
    if markdown {
        out.push_str(&format!("## Kernel bench comparison: `{}` → `{}`\n\n- {}\n", c.base, c.new, counts_line(c)));
        for line in unmatched_lines(c) {
            out.push_str(&format!("- {line}\n"));
        }
        out.push('\n');
    } else {
        out.push_str(&format!("Kernel bench comparison: {} → {}\n  time_ms, lower is better; Δ = (new − base) / base of the medians\n  {}\n", c.base, c.new, counts_line(c)));
        for line in unmatched_lines(c) {
            out.push_str(&format!("  {line}\n"));
        }
    }
    if !c.rows.is_empty() {
        let (header, rows) = comparison_model(c);
        let mut t = new_table(markdown, header);
        for row in rows {
            t.add_row(row.into_iter().map(|x| md_cell(markdown, x)).collect::<Vec<_>>());
        }
        out.push_str(&t.to_string());
        out.push('\n');
    }
    notes_text(&mut out, &c.notes, markdown);
    out
}

fn comparison_html(c: &KernelComparison) -> String {
    let mut cards = String::from("<section class=\"summary\">\n<div class=\"cards\">\n");
    let verdict_card =
        |class: &str, word: &str, n: usize| html::card(if n > 0 { class } else { "same" }, word, &n.to_string(), &[]);
    cards.push_str(&verdict_card("bad", "regressed", c.regressed));
    cards.push_str(&verdict_card("good", "improved", c.improved));
    cards.push_str(&html::card("same", "same", &c.same.to_string(), &[]));
    cards.push_str(&verdict_card("unsure", "inconclusive", c.inconclusive));
    if c.became_incorrect > 0 {
        cards.push_str(&html::card("bad", "became incorrect", &c.became_incorrect.to_string(), &[]));
    }
    cards.push_str("</div>\n");
    cards.push_str(&html::note(&format!(
        "{} — time_ms, lower is better; Δ = (new − base) / base of the medians",
        counts_line(c)
    )));
    for line in unmatched_lines(c) {
        cards.push_str(&html::note(&line));
    }
    cards.push_str("</section>\n");
    let mut sections = vec![cards];
    if !c.rows.is_empty() {
        // html::table colours the `Δ median` column: + is worse (slower), − is better.
        let (header, rows) = comparison_model(c);
        sections.push(format!("<section class=\"rows\">\n<h2>Rows</h2>\n{}</section>\n", html::table(&header, &rows)));
    }
    sections.push(notes_html(&c.notes));
    html::render_page(&format!("Kernel bench comparison: {} → {}", c.base, c.new), &sections)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn significant_digits() {
        assert_eq!(sig(Some(2.28712)), "2.287");
        assert_eq!(sig(Some(0.0123456)), "0.01235");
        assert_eq!(sig(Some(1234.5)), "1235");
        assert_eq!(sig(Some(123456.0)), "123.5 k");
        assert_eq!(sig(Some(0.0)), "0");
        assert_eq!(sig(None), NONE);
        assert_eq!(sig(Some(f64::NAN)), NONE);
        assert_eq!((pct(Some(0.8765)), times(Some(123.456))), ("87.65 %".to_string(), "123.5×".to_string()));
    }
}
