//! `falcon accuracy compare A B` at the process boundary: `--fail-on-mismatch` exits 5 on a `fail` verdict with
//! the report still printed and the reason on stderr, and `-o` writes the HTML report to its file alone. The use
//! case's outcomes (the verdicts, the compared metrics, the reports' numbers, bad inputs and their kinds,
//! experiments as inputs) are tested in process in falcon-app/tests/it/accuracy.rs.

use crate::common::{code, falcon, json};
use std::path::Path;

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../falcon-analysis/tests/data/accuracy")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

fn a100() -> String {
    data("bert_mcore_tp1_pp2__dev_dgx_a100.json")
}

fn h100() -> String {
    data("bert_mcore_tp1_pp2__dev_dgx_h100.json")
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The process boundary of `--fail-on-mismatch`: exit 5 on a `fail` verdict with the report (JSON or text) still on
/// stdout and the reason on stderr; without the flag the same verdict exits 0. Which steps fail and why is tested in
/// process in falcon-app/tests/it/accuracy.rs.
#[test]
fn fail_on_mismatch_exits_5_with_the_report_still_printed() {
    let dir = tempfile::tempdir().unwrap();
    let out = falcon(
        dir.path(),
        &["accuracy", "compare", &a100(), &h100(), "--json", "--rtol", "0.01", "--fail-on-mismatch"],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert_eq!(json(&out)["verdict"], "fail");
    assert!(stderr(&out).contains("lm loss fails at 2 of 11 steps"), "{}", stderr(&out));
    // Text output too.
    let out = falcon(dir.path(), &["accuracy", "compare", &a100(), &h100(), "--rtol", "0.01", "--fail-on-mismatch"]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(stdout(&out).contains("verdict: FAIL"), "{}", stdout(&out));
    // Without the flag a `fail` verdict exits 0.
    let out = falcon(dir.path(), &["accuracy", "compare", &a100(), &h100(), "--json", "--rtol", "0.01"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json(&out)["verdict"], "fail");
}

/// The process boundary of `-o`: the HTML report goes to its file, nothing to stdout, and no temporary file is
/// left beside it. The reports' contents (Markdown and HTML) are tested in process in
/// falcon-app/tests/it/accuracy.rs.
#[test]
fn markdown_and_html_reports() {
    let dir = tempfile::tempdir().unwrap();
    let html_path = dir.path().join("report.html");
    let out = falcon(
        dir.path(),
        &[
            "accuracy",
            "compare",
            &a100(),
            &h100(),
            "--format",
            "html",
            "-o",
            html_path.to_str().unwrap(),
            "--metric",
            "lm loss",
            "--metric",
            "num-zeros",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "the report goes to the file: {}", stdout(&out));
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    // No temporary file left beside it.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("report.html")], "{left:?}");
}
