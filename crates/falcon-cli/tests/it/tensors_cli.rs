//! `falcon accuracy tensors` at the process boundary: the global `--json` and `--format json` print the same
//! document, and `--fail-on-mismatch` exits 5 with the reason on stderr. The use case's outcomes (formats, --top,
//! tolerances, what counts as a mismatch, missing and corrupt input) are tested in process in
//! falcon-app/tests/it/tensors.rs.

use crate::common::{code, falcon, json};
use std::path::{Path, PathBuf};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-analysis/tests/data/tensors").canonicalize().unwrap()
}

fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The process boundary of the JSON output: the global `--json` exits 0 and prints the same document as
/// `--format json` (the `seconds` it took aside). The report's contents are tested in process in
/// falcon-app/tests/it/tensors.rs.
#[test]
fn json_is_the_report_struct() {
    let tmp = tempfile::tempdir().unwrap();
    let d = data();
    let out = falcon(
        tmp.path(),
        &["--json", "accuracy", "tensors", arg(&d.join("a.safetensors")), arg(&d.join("b.safetensors"))],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v = json(&out);
    // --format json is the same document.
    let out2 = falcon(
        tmp.path(),
        &["accuracy", "tensors", arg(&d.join("a.safetensors")), arg(&d.join("b.safetensors")), "--format", "json"],
    );
    assert_eq!(code(&out2), 0, "{}", stderr(&out2));
    let mut v2 = json(&out2);
    v2["seconds"] = v["seconds"].clone();
    assert_eq!(v2, v);
}

/// The process boundary of `--fail-on-mismatch`: exit 5 on a mismatch with the reason on stderr, 0 without the flag
/// or once `--rtol`/`--atol` widen the tolerances (echoed on stdout). What counts as a mismatch is tested in process
/// in falcon-app/tests/it/tensors.rs.
#[test]
fn fail_on_mismatch_exits_5_and_tolerances_can_be_widened() {
    let tmp = tempfile::tempdir().unwrap();
    let d = data();
    let (a, pass, fail) = (d.join("f32_pass_a.npy"), d.join("f32_pass_b.npy"), d.join("f32_fail_b.npy"));
    let out = falcon(tmp.path(), &["accuracy", "tensors", arg(&a), arg(&pass), "--fail-on-mismatch"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = falcon(tmp.path(), &["accuracy", "tensors", arg(&a), arg(&fail), "--fail-on-mismatch"]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(stderr(&out).contains("mismatch: 1 of 1 tensors fail allclose (f32_fail_b)"), "{}", stderr(&out));
    // Without the flag the report is printed and the exit is 0.
    assert_eq!(code(&falcon(tmp.path(), &["accuracy", "tensors", arg(&a), arg(&fail)])), 0);
    let out = falcon(
        tmp.path(),
        &["accuracy", "tensors", arg(&a), arg(&fail), "--rtol", "1e-2", "--atol", "1e-3", "--fail-on-mismatch"],
    );
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert!(stdout(&out).contains("rtol 0.01, atol 0.001"), "{}", stdout(&out));
}
