//! The profile comparison as Markdown. (Being written.)

use falcon_analysis::compare::ProfileComparison;

/// Markdown for the comparison; `level` is the heading level of its title (`##` = 2).
pub fn render(c: &ProfileComparison, top: usize, level: usize) -> String {
    let _ = (c, top, level);
    String::new()
}
