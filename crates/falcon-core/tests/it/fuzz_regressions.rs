//! Inputs the fuzz targets (`fuzz/`, `scripts/fuzz.sh`) found, each a test: a spec or sweep error names a line
//! and column inside the file (the YAML parser places end-of-input marks and implicit null nodes on the line
//! after a last line without a newline).

use std::path::PathBuf;

fn text(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz").join(name);
    String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned()
}

fn check(file: &str, text: &str, e: &falcon_core::spec::SpecError) {
    let lines: Vec<&str> = text.split('\n').collect();
    assert_eq!(e.file, file, "{e}");
    assert!(e.line >= 1 && e.line <= lines.len(), "line {} of {}: {e}", e.line, lines.len());
    assert!(e.column >= 1 && e.column <= lines[e.line - 1].chars().count() + 1, "{e}");
}

#[test]
fn a_spec_cut_inside_a_flow_mapping_names_its_last_line() {
    let t = text("spec-eof.yaml");
    let e = falcon_core::spec::parse_spec(&t, "spec.yaml").unwrap_err();
    check("spec.yaml", &t, &e);
}

#[test]
fn a_sweep_cut_inside_a_flow_sequence_names_its_last_line() {
    let t = text("sweep-eof.yaml");
    let e = falcon_core::sweep::expand(&t, "sweep.yaml", |_| Err("no base".into())).unwrap_err();
    check("sweep.yaml", &t, &e);
}

/// `? ## comment` and no newline: the complex key is an implicit null whose node the YAML parser places on the
/// line after the last; the "unknown field `null`" error named spec.yaml:2:1 of a one-line file. (No key of it is
/// a spec field, so it is now "not an experiment spec", its keys unshown — issue 44 — at a line inside the file.)
#[test]
fn an_implicit_null_key_at_the_end_names_a_line_inside_the_file() {
    let t = text("spec-null-key-at-eof.yaml");
    let e = falcon_core::spec::parse_spec(&t, "spec.yaml").unwrap_err();
    assert!(e.to_string().contains("not an experiment spec"), "{e}");
    check("spec.yaml", &t, &e);
}

/// Lone `\r` line breaks and a `---` at the very end: the second document's start mark lay past the last line.
#[test]
fn a_second_document_at_the_end_names_a_line_inside_the_file() {
    let t = text("spec-second-document-at-eof.yaml");
    let e = falcon_core::spec::parse_spec(&t, "spec.yaml").unwrap_err();
    assert!(e.to_string().contains("second YAML document"), "{e}");
    check("spec.yaml", &t, &e);
}
