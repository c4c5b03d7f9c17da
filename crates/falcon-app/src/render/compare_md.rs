//! The profile comparison as Markdown: the sections of [`compare_table`](super::compare_table) (same rows,
//! same numbers) with headings and Markdown tables.

use super::compare_table::sections;
use super::text::sections_to_markdown;
use falcon_analysis::compare::ProfileComparison;
use falcon_exp::diff::Change;

/// Markdown for the comparison; `level` is the heading level of its title (`##` = 2).
pub fn render(c: &ProfileComparison, top: usize, level: usize) -> String {
    render_with(c, top, level, None)
}

/// [`render`] with the experiments' config diff after the header (when both inputs were experiments).
pub fn render_with(c: &ProfileComparison, top: usize, level: usize, config_diff: Option<&[Change]>) -> String {
    sections_to_markdown(&sections(c, top, true, config_diff), level)
}
