//! `falcon kernel analyze|compare` at the process boundary: `--fail-on-regression` exits 5 with the regressed
//! rows on stderr, and clap refuses a bad `--p` with exit 2. The use case's outcomes (JSON shapes, the text formats,
//! experiments as inputs, the kinds of bad input) are tested in process in falcon-app/tests/it/kernel.rs.

use crate::common::{code, falcon, json};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-analysis/tests/data/kernel_bench").join(name)
}

fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The process boundary of `--fail-on-regression`: a regressed row exits 5 with the JSON report still on stdout
/// and the row named on stderr; without the flag the same comparison exits 0. The verdicts themselves are tested
/// in process in falcon-app/tests/it/kernel.rs.
#[test]
fn a_slower_run_fails_the_regression_gate() {
    let dir = tempfile::tempdir().unwrap();
    // The base run with every sample of the first row doubled: that row regressed.
    let base = std::fs::read_to_string(data("cpu_results.jsonl")).unwrap();
    let mut lines: Vec<Value> = base.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let slow: Vec<f64> = lines[0]["times_ms"].as_array().unwrap().iter().map(|t| t.as_f64().unwrap() * 2.0).collect();
    lines[0]["times_ms"] = serde_json::json!(slow);
    let text: String = lines.iter().map(|v| format!("{v}\n")).collect();
    std::fs::write(dir.path().join("kernel_bench_slow.jsonl"), text).unwrap();
    let base = data("cpu_results.jsonl");
    let out = falcon(
        dir.path(),
        &["kernel", "compare", arg(&base), "kernel_bench_slow.jsonl", "--fail-on-regression", "--json"],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert_eq!(json(&out)["regressed"], 1);
    assert!(stderr(&out).contains("regression: matmul/jnp_dot"), "{}", stderr(&out));
    // Without the flag a regression is not a failure.
    let out = falcon(dir.path(), &["kernel", "compare", arg(&base), "kernel_bench_slow.jsonl", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// The process boundary of bad arguments: clap refuses `--p -1` with exit 2. The kinds of bad input (not found,
/// malformed, out-of-range peaks) and so their exit codes are tested in process in falcon-app/tests/it/kernel.rs.
#[test]
fn bad_inputs_get_their_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let out = falcon(dir.path(), &["kernel", "analyze", arg(&data("cpu_results.jsonl")), "--p", "-1", "--json"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}
