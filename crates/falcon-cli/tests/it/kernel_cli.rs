//! `falcon kernel analyze|compare` as a user runs it, on the example workload's real results: JSON shapes,
//! the text formats, experiments as inputs, and the exit codes (0 ok, 1 malformed, 2 usage, 3 not found,
//! 5 regression with --fail-on-regression).

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

#[test]
fn analyze_gives_rows_speedups_and_fast_p_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let file = data("cpu_results.jsonl");
    let out = falcon(dir.path(), &["kernel", "analyze", arg(&file), "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let r = json(&out);
    let rows = r["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 18);
    assert_eq!(r["format"], "jsonl");
    assert_eq!(r["fast_p"]["p"], 1.0);
    assert_eq!(r["fast_p"]["n"], 14);
    assert_eq!(r["fast_0"]["count"], 12);
    let first = &rows[0];
    for key in [
        "kernel",
        "variant",
        "reference",
        "correct",
        "shape",
        "shape_key",
        "dtype",
        "hardware",
        "n",
        "median_ms",
        "p25_ms",
        "p75_ms",
        "iqr_ms",
        "min_ms",
        "mean_ms",
        "achieved_tflops",
        "achieved_gbs",
        "roofline_fraction",
        "speedup",
    ] {
        assert!(first.get(key).is_some(), "row has `{key}`: {first}");
    }
    assert_eq!(first["shape"], serde_json::json!({"m": 256, "k": 256, "n": 256}));
    assert_eq!(first["speedup"], 1.0);
    assert!(rows.iter().all(|row| row["roofline_fraction"].is_null()), "cpu has no peaks");
    // Speed-ups follow from the medians in the same JSON.
    let reference = first["median_ms"].as_f64().unwrap();
    for row in rows.iter().take(6) {
        let want = reference / row["median_ms"].as_f64().unwrap();
        assert!((row["speedup"].as_f64().unwrap() - want).abs() < 1e-12 * want);
    }

    // Peaks given: a roofline for every row; --p changes fast_p.
    let out = falcon(
        dir.path(),
        &["kernel", "analyze", arg(&file), "--peak-tflops", "1", "--peak-gbs", "50", "--p", "0.5", "--json"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let r = json(&out);
    assert_eq!(r["fast_p"]["p"], 0.5);
    for row in r["rows"].as_array().unwrap() {
        let f = row["roofline_fraction"].as_f64().unwrap();
        assert!(f > 0.0 && f < 1.0, "{row}");
        assert_eq!(row["peak_source"], "override");
    }
}

#[test]
fn analyze_renders_table_markdown_and_html() {
    let dir = tempfile::tempdir().unwrap();
    let file = data("cpu_results.jsonl");
    let table = falcon(dir.path(), &["kernel", "analyze", arg(&file)]);
    assert_eq!(code(&table), 0, "{}", stderr(&table));
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(
        text.contains("fast_1 = ") && text.contains("fori_k128_off_by_one") && text.contains("jnp_dot (ref)"),
        "{text}"
    );
    assert!(text.contains("hardware `cpu` has no peak figures"), "{text}");
    let md = falcon(dir.path(), &["kernel", "analyze", arg(&file), "--format", "md"]);
    let text = String::from_utf8(md.stdout).unwrap();
    assert!(text.starts_with("## Kernel bench") && text.contains("| kernel"), "{text}");
    let page = falcon(dir.path(), &["kernel", "analyze", arg(&file), "--format", "html"]);
    assert_eq!(code(&page), 0);
    let html = String::from_utf8(page.stdout).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<table>") && html.contains("fast_1"), "{html}");
    assert!(!html.contains("<script"));
}

#[test]
fn compare_a_run_with_itself_and_with_a_second_run() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (data("cpu_results.jsonl"), data("cpu_results_run2.jsonl"));
    let out = falcon(dir.path(), &["kernel", "compare", arg(&a), arg(&a), "--fail-on-regression", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let c = json(&out);
    assert_eq!(c["same"], 18);
    assert_eq!(c["regressed"], 0);
    for row in c["rows"].as_array().unwrap() {
        assert_eq!(row["verdict"]["verdict"], "same");
        assert_eq!(row["verdict"]["metric"], "time_ms");
        assert_eq!(row["verdict"]["direction"], "lower_is_better");
    }

    let out = falcon(dir.path(), &["kernel", "compare", arg(&a), arg(&b), "--json"]);
    assert_eq!(code(&out), 0, "without --fail-on-regression a regression is not a failure");
    let c = json(&out);
    let total: u64 = ["same", "regressed", "improved", "inconclusive"].iter().map(|k| c[*k].as_u64().unwrap()).sum();
    assert_eq!(total, 18);
    let regressed = c["regressed"].as_u64().unwrap();
    let gated = falcon(dir.path(), &["kernel", "compare", arg(&a), arg(&b), "--fail-on-regression", "--json"]);
    assert_eq!(code(&gated), if regressed > 0 { 5 } else { 0 });

    for format in ["table", "md", "html"] {
        let out = falcon(dir.path(), &["kernel", "compare", arg(&a), arg(&b), "--format", format]);
        assert_eq!(code(&out), 0, "{format}: {}", stderr(&out));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("matched rows"), "{format}: {text}");
    }
}

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
    let out = falcon(
        dir.path(),
        &[
            "kernel",
            "compare",
            arg(&data("cpu_results.jsonl")),
            "kernel_bench_slow.jsonl",
            "--fail-on-regression",
            "--json",
        ],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    let c = json(&out);
    assert_eq!(c["regressed"], 1);
    assert_eq!(c["same"], 17);
    assert_eq!(c["rows"][0]["verdict"]["verdict"], "regressed");
    assert!(stderr(&out).contains("regression: matmul/jnp_dot"), "{}", stderr(&out));
}

#[test]
fn bad_inputs_get_their_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    // Not found: 3.
    for missing in ["no_such.jsonl", "e-99"] {
        let out = falcon(dir.path(), &["kernel", "analyze", missing, "--json"]);
        assert_eq!(code(&out), 3, "{missing}: {}", String::from_utf8_lossy(&out.stdout));
        assert_eq!(json(&out)["error"]["code"], "not_found");
    }
    // Malformed: 1, and the message names file:line and the field.
    std::fs::write(dir.path().join("bad.jsonl"), "{\"kernel\":\"mm\",\"variant\":\"a\",\"times_ms\":[1]}\n{\"kernel\":\"mm\",\"variant\":\"b\",\"times_ms\":[1,\"x\"]}\n").unwrap();
    let out = falcon(dir.path(), &["kernel", "analyze", "bad.jsonl", "--json"]);
    assert_eq!(code(&out), 1);
    let msg = json(&out)["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains("bad.jsonl:2: field `times_ms[1]`"), "{msg}");
    let out = falcon(dir.path(), &["kernel", "compare", "bad.jsonl", arg(&data("cpu_results.jsonl"))]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("bad.jsonl:2"), "{}", stderr(&out));
    // Usage: 2.
    let out = falcon(dir.path(), &["kernel", "analyze", arg(&data("cpu_results.jsonl")), "--p", "-1", "--json"]);
    assert_eq!(code(&out), 2);
    let out = falcon(dir.path(), &["kernel", "analyze", arg(&data("cpu_results.jsonl")), "--peak-tflops", "0"]);
    assert_eq!(code(&out), 2);
}

#[test]
fn experiments_are_inputs() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(code(&falcon(dir.path(), &["init"])), 0);
    let mut ids = Vec::new();
    for (name, file) in [("run1", "cpu_results.jsonl"), ("run2", "cpu_results_run2.jsonl")] {
        let spec = format!(
            "name: kb-{name}\nscenario: kernel_bench\nworkload:\n  framework: shell\n  command: [sh, -c, 'cp {} $FALCON_ARTIFACT_DIR/kernel_bench_results.jsonl']\nresources: {{accelerator: cpu}}\n",
            data(file).display()
        );
        std::fs::write(dir.path().join(format!("{name}.yaml")), spec).unwrap();
        let out = falcon(dir.path(), &["exp", "submit", &format!("{name}.yaml"), "--wait", "--json"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        ids.push(json(&out)["id"].as_str().unwrap().to_string());
    }
    // `exp submit --wait` ran the interface's analysis step: the kernel-bench summary row is stored.
    let shown = json(&falcon(dir.path(), &["exp", "show", &ids[0], "--json"]));
    let row = shown["analysis"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tool"] == "kernel_bench")
        .expect("a kernel_bench summary row");
    assert_eq!(row["details"]["rows"], 18, "{row}");
    assert!(row["details"]["fast_p"]["value"].is_number(), "{row}");

    let out = falcon(dir.path(), &["kernel", "analyze", &ids[0], "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let by_id = json(&out);
    let by_file = json(&falcon(dir.path(), &["kernel", "analyze", arg(&data("cpu_results.jsonl")), "--json"]));
    assert_eq!(by_id["rows"], by_file["rows"], "the fetched artifact is the file");
    assert!(by_id["path"].as_str().unwrap().ends_with("kernel_bench_results.jsonl"));

    let out = falcon(dir.path(), &["kernel", "compare", &ids[0], &ids[1], "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let by_ids = json(&out);
    let by_files = json(&falcon(
        dir.path(),
        &["kernel", "compare", arg(&data("cpu_results.jsonl")), arg(&data("cpu_results_run2.jsonl")), "--json"],
    ));
    assert_eq!(by_ids["rows"], by_files["rows"]);

    // An experiment without kernel-bench results: not found.
    std::fs::write(dir.path().join("plain.yaml"), "name: plain\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [true]\nresources: {accelerator: cpu}\n").unwrap();
    let plain = json(&falcon(dir.path(), &["exp", "submit", "plain.yaml", "--wait", "--json"]));
    let out = falcon(dir.path(), &["kernel", "analyze", plain["id"].as_str().unwrap(), "--json"]);
    assert_eq!(code(&out), 3, "{}", String::from_utf8_lossy(&out.stdout));
}
