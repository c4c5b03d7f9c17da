//! Text the terminal and Markdown renderers share: tables (comfy-table, UTF-8 on a terminal, Markdown pipes
//! otherwise), reports as titled sections of text and tables (one model, two forms, so the terminal and a
//! Markdown report show the same rows), and the number formats of the comparison reports (all from
//! [`numbers`]).

use comfy_table::presets::{ASCII_MARKDOWN, UTF8_FULL_CONDENSED};
use comfy_table::{ContentArrangement, Table};

use super::numbers;

/// Sections as terminal text: each title, then its parts, a blank line between sections.
pub fn sections_to_text(sections: &[Section]) -> String {
    let mut out = String::new();
    for (i, s) in sections.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&s.title);
        out.push('\n');
        for part in &s.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Table(t) => out.push_str(&t.to_string()),
            }
            out.push('\n');
        }
    }
    out
}

/// Sections as Markdown: the first title at heading `level`, the others one level below.
pub fn sections_to_markdown(sections: &[Section], level: usize) -> String {
    let level = level.clamp(1, 5);
    let mut out = String::new();
    for (i, s) in sections.iter().enumerate() {
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

/// One part of a section.
pub enum Part {
    /// A line (or paragraph) of text.
    Text(String),
    Table(Table),
}

/// A titled block of the report.
pub struct Section {
    pub title: String,
    pub parts: Vec<Part>,
}

/// A table for the terminal (`markdown` false) or Markdown.
pub fn new_table(markdown: bool, header: impl Into<comfy_table::Row>) -> Table {
    let mut t = Table::new();
    t.load_preset(if markdown { ASCII_MARKDOWN } else { UTF8_FULL_CONDENSED })
        .set_content_arrangement(if markdown { ContentArrangement::Disabled } else { ContentArrangement::Dynamic })
        .set_header(header);
    t
}

/// A relative change as a signed percent (`+2.5 %`, [`numbers::relative_percent`]); `—` when undefined.
pub fn rel_pct(r: Option<f64>) -> String {
    numbers::relative_percent(r)
}

/// A fraction (MFU) as a percent (`31.25 %`); `—` when absent.
pub fn mfu_pct(f: Option<f64>) -> String {
    numbers::fraction_percent(f)
}

/// A p-value ([`numbers::p_value`]): `0.0123`, `1.6e-4`.
pub fn p_value(p: Option<f64>) -> String {
    numbers::p_value(p)
}

/// `s` whole when it has at most `max` characters, else its first `kept` characters and `…`. Counts
/// characters, not bytes, so a name with multi-byte characters is never cut inside one.
pub fn shorten(s: &str, max: usize, kept: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(kept).collect();
    out.push('…');
    out
}

/// `s` with control characters escaped (`\n`, `\u{1b}`), so a file name cannot drive the terminal.
pub fn printable(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}
