//! The profile comparison as Markdown: the sections of [`compare_table`](super::compare_table) (same rows,
//! same numbers) with headings and Markdown tables.

use super::compare_table::{sections, Part};
use falcon_analysis::compare::ProfileComparison;
use falcon_exp::diff::Change;

/// Markdown for the comparison; `level` is the heading level of its title (`##` = 2).
pub fn render(c: &ProfileComparison, top: usize, level: usize) -> String {
    render_with(c, top, level, None)
}

/// [`render`] with the experiments' config diff after the header (when both inputs were experiments).
pub(crate) fn render_with(c: &ProfileComparison, top: usize, level: usize, config_diff: Option<&[Change]>) -> String {
    let level = level.clamp(1, 5);
    let mut out = String::new();
    for (i, s) in sections(c, top, true, config_diff).iter().enumerate() {
        let hashes = "#".repeat(if i == 0 { level } else { level + 1 });
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{hashes} {}\n", s.title));
        for part in &s.parts {
            out.push('\n');
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Table(t) => out.push_str(&t.to_string()),
            }
            out.push('\n');
        }
    }
    out
}
