//! The name mapping file: one `A_NAME B_NAME` or `A_NAME=B_NAME` per line; `#` starts a comment (at the start
//! of a line or after whitespace); blank lines are skipped. Errors name the file and the line.

use crate::error::{AnalysisError, Result};
use std::path::Path;

/// One mapping: tensor `a` of dump A is tensor `b` of dump B (`line` is 1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapEntry {
    pub a: String,
    pub b: String,
    pub line: usize,
}

/// Reads and checks a mapping file.
pub fn read(path: &Path) -> Result<Vec<MapEntry>> {
    let text = std::fs::read(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            AnalysisError::NotFound(format!("name mapping file not found: {}", path.display()))
        } else {
            AnalysisError::Io(format!("cannot read {}: {e}", path.display()))
        }
    })?;
    let text =
        String::from_utf8(text).map_err(|_| AnalysisError::Invalid(format!("{}: not UTF-8 text", path.display())))?;
    parse(&text).map_err(|(line, what)| AnalysisError::Invalid(format!("{}:{line}: {what}", path.display())))
}

/// Parses mapping text; an error is `(line, what)`.
pub fn parse(text: &str) -> Result<Vec<MapEntry>, (usize, String)> {
    let mut out: Vec<MapEntry> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = strip_comment(raw).trim();
        if content.is_empty() {
            continue;
        }
        let (a, b) = if let Some((a, b)) = content.split_once('=') {
            (a.trim(), b.trim())
        } else {
            let mut parts = content.split_whitespace();
            match (parts.next(), parts.next(), parts.next()) {
                (Some(a), Some(b), None) => (a, b),
                _ => return Err((line, format!("expected `A_NAME B_NAME` or `A_NAME=B_NAME`, found `{content}`"))),
            }
        };
        if a.is_empty()
            || b.is_empty()
            || a.contains(char::is_whitespace)
            || b.contains(char::is_whitespace)
            || b.contains('=')
        {
            return Err((line, format!("expected `A_NAME B_NAME` or `A_NAME=B_NAME`, found `{content}`")));
        }
        if let Some(prev) = out.iter().find(|e| e.a == a) {
            return Err((line, format!("`{a}` is already mapped on line {}", prev.line)));
        }
        if let Some(prev) = out.iter().find(|e| e.b == b) {
            return Err((line, format!("`{b}` is already the target of line {}", prev.line)));
        }
        out.push(MapEntry { a: a.to_string(), b: b.to_string(), line });
    }
    Ok(out)
}

fn strip_comment(line: &str) -> &str {
    let mut prev_ws = true;
    for (i, c) in line.char_indices() {
        if c == '#' && prev_ws {
            return &line[..i];
        }
        prev_ws = c.is_whitespace();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_and_comments() {
        let m = parse("# header\nx y\n  layer.0#w = l0/w   # trailing\n\n").unwrap();
        assert_eq!(
            m,
            [
                MapEntry { a: "x".into(), b: "y".into(), line: 2 },
                MapEntry { a: "layer.0#w".into(), b: "l0/w".into(), line: 3 }
            ]
        );
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(parse("x y\njust_one\n").unwrap_err().0, 2);
        assert_eq!(parse("x y z").unwrap_err().0, 1);
        assert_eq!(parse("x=\n").unwrap_err().0, 1);
        let (line, what) = parse("x y\nx z\n").unwrap_err();
        assert_eq!(line, 2);
        assert!(what.contains("line 1"), "{what}");
        assert_eq!(parse("x y\nz y\n").unwrap_err().0, 2);
    }
}
