//! Rendering of analysis reports (structs from `falcon-analysis`, composed with EXP's where the command
//! needs both) as terminal tables, Markdown and self-contained HTML pages. JSON is the structs themselves.

pub mod accuracy;
pub mod compare_html;
pub mod compare_md;
pub mod compare_table;
pub mod goal;
pub mod html;
pub mod kernel;
pub mod svg;
pub mod tensors;
