//! Inputs the fuzz targets (`fuzz/`, `scripts/fuzz.sh`) found, each a test: a syntax error at the end of a file
//! whose last line has no newline names a line inside the file (the YAML parser's end mark is on the next one).

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
