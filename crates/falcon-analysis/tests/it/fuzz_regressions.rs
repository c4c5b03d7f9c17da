//! Inputs the fuzz targets (`fuzz/`, `scripts/fuzz.sh`) found, each a test: the error still names a position
//! inside the input.

use falcon_analysis::tensors::{compare_dumps, TensorOptions};
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz").join(name)
}

/// The numbers after `word` in `message`.
fn numbers_after(message: &str, word: &str) -> Vec<usize> {
    message
        .match_indices(word)
        .filter_map(|(i, _)| {
            let rest = &message[i + word.len()..];
            rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len())].parse().ok()
        })
        .collect()
}

#[test]
fn an_npy_header_dict_cut_short_names_a_byte_inside_the_file() {
    // The header's declared length fits the file but its dict ends inside a string: the offset was counted from
    // the header's start and past its end (byte 176 of 132).
    let path = data("npy-header-past-end.npy");
    let len = std::fs::metadata(&path).unwrap().len() as usize;
    let e = compare_dumps(&path, &path, &TensorOptions::default()).unwrap_err().to_string();
    let bytes = numbers_after(&e, "byte ");
    assert!(!bytes.is_empty() && bytes.iter().all(|&b| b <= len), "{e}");
}

#[test]
fn a_golden_values_json_error_at_a_line_start_has_column_1_not_0() {
    golden_error_inside("megatron-golden-column0.json");
}

#[test]
fn a_golden_values_json_error_after_non_ascii_text_counts_characters_not_bytes() {
    golden_error_inside("megatron-golden-bytes-column.json");
}

fn golden_error_inside(name: &str) {
    let path = data(name);
    let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
    let e = falcon_analysis::accuracy::megatron::parse_golden(&text, "golden.json").unwrap_err().to_string();
    let after = e.strip_prefix("golden.json:").expect(&e);
    let mut parts = after.splitn(3, ':');
    let (line, col): (usize, usize) = (parts.next().unwrap().parse().unwrap(), parts.next().unwrap().parse().unwrap());
    let lines: Vec<&str> = text.split('\n').collect();
    assert!(line >= 1 && line <= lines.len(), "{e}");
    assert!(col >= 1 && col <= lines[line - 1].chars().count() + 1, "{e}");
}
