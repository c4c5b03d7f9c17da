//! The profile comparison as HTML with inline SVG charts. (Being written.)

use falcon_analysis::compare::ProfileComparison;

/// An HTML fragment (a `<section>`) for the comparison: summary, charts and tables.
pub fn render_section(c: &ProfileComparison, top: usize) -> String {
    let _ = (c, top);
    String::new()
}

/// A complete self-contained page (no external resources) around sections of HTML.
pub fn render_page(title: &str, sections: &[String]) -> String {
    let _ = title;
    sections.concat()
}
