//! The profile comparison as terminal tables. (Being written.)

use falcon_analysis::compare::ProfileComparison;

/// Plain-text tables for a terminal.
pub fn render(c: &ProfileComparison, top: usize) -> String {
    let _ = (c, top);
    String::new()
}
