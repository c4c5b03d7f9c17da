//! The renderers every front end shares: analysis reports (structs from `falcon-analysis`, composed with EXP's
//! where a use case needs both) as text tables, Markdown and self-contained HTML pages with inline SVG charts.
//! JSON is the structs themselves. The text tables and the Markdown of a report come from one section model
//! (`compare_table`), so both show the same rows; the terminal front end picks the text form.

pub mod accuracy;
pub mod compare_html;
pub mod compare_md;
pub mod compare_table;
pub mod goal;
pub mod html;
pub mod kernel;
pub mod markup;
pub mod numbers;
pub mod svg;
pub mod tensors;

/// The document formats a report renders to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Text tables for a terminal.
    Table,
    /// Markdown.
    Md,
    /// A self-contained HTML page.
    Html,
    /// The report struct as JSON.
    Json,
}
