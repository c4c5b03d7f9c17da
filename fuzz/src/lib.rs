//! What the fuzz targets share: a scratch file per process for the parsers that read a path (so each target goes
//! through the same file-reading code as `falcon`), and the check every error must pass.
//!
//! Every target asserts, besides "no panic" (any panic is a crash) and bounded memory (libFuzzer's
//! `-malloc_limit_mb` / `-rss_limit_mb`, set by `scripts/fuzz.sh`): an error names the input it is about, and
//! every position it gives — `file:LINE[:COL]`, `line N`, `byte N`, `offset N` — lies inside that input.

use std::path::PathBuf;

/// Decompressed bytes a target lets a parser inflate (a gzip or zip bomb stops here, with an error).
pub const MAX_INFLATE: u64 = 64 << 20;

/// A file named `name` in this process's scratch folder, holding `data`.
pub fn file(name: &str, data: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("falcon-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let path = dir.join(name);
    std::fs::write(&path, data).expect("scratch file");
    path
}

/// The input as text, as the parsers that read text get it (invalid UTF-8 replaced).
pub fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// Checks an error message: it names `input` (a file name or label) and every position in it lies inside
/// `data` (lines counted from 1, a column within its line's length + 1, bytes within the length). Text the
/// message quotes from the input (`"…"`, with `\"` escapes) is the input's, not a position, and is skipped.
pub fn check_error(full_message: &str, input: &str, data: &[u8]) {
    assert!(full_message.contains(input), "the error does not name the input `{input}`: {full_message}");
    let unquoted = without_quotes(full_message);
    let message = unquoted.as_str();
    let text = String::from_utf8_lossy(data);
    let lines: Vec<&str> = text.split('\n').collect();
    // YAML (and so the spec and sweep parsers) also breaks lines at a lone `\r`: count lines both ways.
    let yaml_lines = text.replace("\r\n", "\n").chars().filter(|&c| c == '\n' || c == '\r').count() + 1;
    let line_ok = |n: usize| n >= 1 && n <= lines.len().max(yaml_lines);
    let columns_checkable = !text.contains('\r');
    // `input:LINE` and `input:LINE:COL`
    let mut rest = message;
    while let Some(at) = rest.find(&format!("{input}:")) {
        let after = &rest[at + input.len() + 1..];
        let (line, tail) = number(after);
        if let Some(line) = line {
            assert!(line_ok(line), "line {line} is outside the input ({} lines): {message}", lines.len());
            if let Some(col) = tail.strip_prefix(':').and_then(|t| number(t).0).filter(|_| columns_checkable) {
                let width = lines.get(line - 1).map_or(0, |l| l.chars().count());
                assert!(
                    col >= 1 && col <= width + 1,
                    "column {col} is outside line {line} ({width} characters): {message}"
                );
            }
        }
        rest = after;
    }
    for (word, is_line) in [("line ", true), ("byte ", false), ("offset ", false)] {
        let mut rest = message;
        while let Some(at) = rest.find(word) {
            let after = &rest[at + word.len()..];
            if let (Some(n), _) = number(after) {
                if is_line {
                    assert!(line_ok(n), "line {n} is outside the input ({} lines): {message}", lines.len());
                } else {
                    assert!(n <= data.len(), "byte {n} is past the end ({} bytes): {message}", data.len());
                }
            }
            rest = after;
        }
    }
}

/// `message` with every double-quoted part (Rust's `{:?}` of a string: `\"` and `\\` escaped) left out.
fn without_quotes(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let (mut quoted, mut escaped) = (false, false);
    for c in message.chars() {
        match (quoted, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (true, false, '"') => quoted = false,
            (true, false, _) => {}
            (false, _, '"') => {
                quoted = true;
                out.push_str("\"…\"");
            }
            (false, _, c) => out.push(c),
        }
    }
    out
}

/// The decimal number at the start of `s` (digits only), and what follows it.
fn number(s: &str) -> (Option<usize>, &str) {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    (s[..end].parse().ok(), &s[end..])
}

/// The tensor-dump targets (`npy`, `npz`, `safetensors`): `data` as the file `name`, opened through the path
/// `falcon accuracy tensors` takes (header, index, inflation capped) and compared with itself tensor by tensor,
/// which reads and decodes every value.
pub fn tensor_dump(name: &str, data: &[u8]) {
    use falcon_analysis::tensors::{compare_dumps, TensorOptions};
    let path = file(name, data);
    let options =
        TensorOptions { threads: Some(1), max_decompressed_bytes: Some(MAX_INFLATE), ..TensorOptions::default() };
    if let Err(e) = compare_dumps(&path, &path, &options) {
        check_error(&e.to_string(), name, data);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn quoted_input_is_not_read_for_positions() {
        let message = r#"train.log:4: "1754654208.0,offset 1754654208." is not a number: "a \"line 99\" b""#;
        assert_eq!(super::without_quotes(message), "train.log:4: \"…\" is not a number: \"…\"");
        super::check_error(message, "train.log", b"1\n2\n3\n4\n");
    }
}
