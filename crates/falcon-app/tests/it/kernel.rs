//! `kernel analyze|compare` in process (`App::analyze_kernels`, `App::compare_kernels` and the renderers
//! `falcon kernel` prints), on the example workload's real results: JSON shapes, the text formats, experiments
//! as inputs, and the kinds of failure (so the exit codes: 1 malformed, 2 usage, 3 not found) and the regression
//! `--fail-on-regression` fails on (5).

use super::accuracy::submit_and_wait;
use super::harness::message;
use falcon_app::kernel::{KernelComparison, KernelReport};
use falcon_app::render::kernel as render;
use falcon_app::render::Format;
use falcon_app::requests::{default_kernel_p, KernelAnalyzeRequest};
use falcon_app::{App, Result};
use falcon_core::ErrorKind;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-analysis/tests/data/kernel_bench").join(name)
}

fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `kernel analyze INPUT` without options.
fn analysis(input: &str) -> KernelAnalyzeRequest {
    KernelAnalyzeRequest { input: input.to_string(), p: default_kernel_p(), peak_tflops: None, peak_gbs: None }
}

/// `kernel analyze` as the CLI runs it: the request checked, then the use case.
async fn analyze(app: &App, request: &KernelAnalyzeRequest) -> Result<KernelReport> {
    let options = request.options()?;
    Ok(app.analyze_kernels(&request.input, &options).await?.0)
}

/// The analysis as `--json` prints it.
async fn analyze_json(app: &App, request: &KernelAnalyzeRequest) -> Value {
    let report = analyze(app, request).await.unwrap_or_else(|e| panic!("{request:?}: {}", message(&e)));
    serde_json::to_value(&report).unwrap()
}

/// `kernel compare BASE NEW`.
async fn compare(app: &App, base: &str, new: &str) -> Result<KernelComparison> {
    Ok(app.compare_kernels(base, new).await?.0)
}

/// The analysis of the CPU run: every row with its fields, speed-ups from the medians, `fast_p`; with peaks
/// given, a roofline fraction for every row, and `p` moves `fast_p`.
#[tokio::test]
async fn analyze_gives_rows_speedups_and_fast_p_as_json() {
    let h = super::harness::app().await;
    let file = data("cpu_results.jsonl");
    let r = analyze_json(&h.app, &analysis(arg(&file))).await;
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

    // Peaks given: a roofline for every row; p changes fast_p.
    let request = KernelAnalyzeRequest { p: 0.5, peak_tflops: Some(1.0), peak_gbs: Some(50.0), ..analysis(arg(&file)) };
    let r = analyze_json(&h.app, &request).await;
    assert_eq!(r["fast_p"]["p"], 0.5);
    for row in r["rows"].as_array().unwrap() {
        let f = row["roofline_fraction"].as_f64().unwrap();
        assert!(f > 0.0 && f < 1.0, "{row}");
        assert_eq!(row["peak_source"], "override");
    }
}

/// The table names `fast_1`, the kernels and the reference, and says the CPU has no peaks; Markdown and a
/// self-contained HTML page carry the same table.
#[tokio::test]
async fn analyze_renders_table_markdown_and_html() {
    let h = super::harness::app().await;
    let file = data("cpu_results.jsonl");
    let report = analyze(&h.app, &analysis(arg(&file))).await.unwrap();
    let text = render::render_report(&report, Format::Table).unwrap();
    assert!(
        text.contains("fast_1 = ") && text.contains("fori_k128_off_by_one") && text.contains("jnp_dot (ref)"),
        "{text}"
    );
    assert!(text.contains("hardware `cpu` has no peak figures"), "{text}");
    let text = render::render_report(&report, Format::Md).unwrap();
    assert!(text.starts_with("## Kernel bench") && text.contains("| kernel"), "{text}");
    let html = render::render_report(&report, Format::Html).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<table>") && html.contains("fast_1"), "{html}");
    assert!(!html.contains("<script"));
}

/// A run compared with itself: every row the same (time, lower is better), nothing regressed; with a second run,
/// every row has a verdict and the gate fails exactly when a row regressed; every text format says how many rows
/// matched.
#[tokio::test]
async fn compare_a_run_with_itself_and_with_a_second_run() {
    let h = super::harness::app().await;
    let (a, b) = (data("cpu_results.jsonl"), data("cpu_results_run2.jsonl"));
    let same = compare(&h.app, arg(&a), arg(&a)).await.unwrap();
    assert!(!same.has_regression(), "--fail-on-regression passes");
    let c = serde_json::to_value(&same).unwrap();
    assert_eq!(c["same"], 18);
    assert_eq!(c["regressed"], 0);
    for row in c["rows"].as_array().unwrap() {
        assert_eq!(row["verdict"]["verdict"], "same");
        assert_eq!(row["verdict"]["metric"], "time_ms");
        assert_eq!(row["verdict"]["direction"], "lower_is_better");
    }

    let comparison = compare(&h.app, arg(&a), arg(&b)).await.unwrap();
    let c = serde_json::to_value(&comparison).unwrap();
    let total: u64 = ["same", "regressed", "improved", "inconclusive"].iter().map(|k| c[*k].as_u64().unwrap()).sum();
    assert_eq!(total, 18);
    let regressed = c["regressed"].as_u64().unwrap();
    assert_eq!(comparison.has_regression(), regressed > 0, "--fail-on-regression exits 5 exactly then");

    for format in [Format::Table, Format::Md, Format::Html] {
        let text = render::render_comparison(&comparison, format).unwrap();
        assert!(text.contains("matched rows"), "{format:?}: {text}");
    }
}

/// The base run with every sample of the first row doubled: that row regressed, the others are the same, and the
/// reason `--fail-on-regression` prints names it.
#[tokio::test]
async fn a_slower_run_fails_the_regression_gate() {
    let h = super::harness::app().await;
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(data("cpu_results.jsonl")).unwrap();
    let mut lines: Vec<Value> = base.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let slow: Vec<f64> = lines[0]["times_ms"].as_array().unwrap().iter().map(|t| t.as_f64().unwrap() * 2.0).collect();
    lines[0]["times_ms"] = serde_json::json!(slow);
    let text: String = lines.iter().map(|v| format!("{v}\n")).collect();
    let slow = dir.path().join("kernel_bench_slow.jsonl");
    std::fs::write(&slow, text).unwrap();
    let comparison = compare(&h.app, arg(&data("cpu_results.jsonl")), arg(&slow)).await.unwrap();
    assert!(comparison.has_regression(), "--fail-on-regression exits 5");
    let c = serde_json::to_value(&comparison).unwrap();
    assert_eq!(c["regressed"], 1);
    assert_eq!(c["same"], 17);
    assert_eq!(c["rows"][0]["verdict"]["verdict"], "regressed");
    let why = render::regression_reason(&comparison);
    assert!(why.starts_with("matmul/jnp_dot"), "{why}");
}

/// Not found (exit 3): a missing file and an unknown experiment; malformed (exit 1): the message names file:line
/// and the field; usage (exit 2): a negative `p`, a zero peak.
#[tokio::test]
async fn bad_inputs_get_their_exit_codes() {
    let h = super::harness::app().await;
    let dir = tempfile::tempdir().unwrap();
    // Not found: 3.
    for missing in ["no_such.jsonl", "e-99"] {
        let err = analyze(&h.app, &analysis(missing)).await.unwrap_err();
        assert_eq!(err.kind().exit_code(), 3, "{missing}: {}", message(&err));
        assert_eq!(err.kind().code(), "not_found");
    }
    // Malformed: 1, and the message names file:line and the field.
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"kernel\":\"mm\",\"variant\":\"a\",\"times_ms\":[1]}\n{\"kernel\":\"mm\",\"variant\":\"b\",\"times_ms\":[1,\"x\"]}\n").unwrap();
    let err = analyze(&h.app, &analysis(arg(&bad))).await.unwrap_err();
    assert_eq!(err.kind().exit_code(), 1, "{}", message(&err));
    let msg = message(&err);
    assert!(msg.contains("bad.jsonl:2: field `times_ms[1]`"), "{msg}");
    let err = compare(&h.app, arg(&bad), arg(&data("cpu_results.jsonl"))).await.unwrap_err();
    assert_eq!(err.kind().exit_code(), 1, "{}", message(&err));
    assert!(message(&err).contains("bad.jsonl:2"), "{}", message(&err));
    // Usage: 2.
    let file = data("cpu_results.jsonl");
    let err = analyze(&h.app, &KernelAnalyzeRequest { p: -1.0, ..analysis(arg(&file)) }).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Usage, "{}", message(&err));
    assert_eq!(err.kind().exit_code(), 2);
    let err =
        analyze(&h.app, &KernelAnalyzeRequest { peak_tflops: Some(0.0), ..analysis(arg(&file)) }).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Usage, "{}", message(&err));
    assert_eq!(err.kind().exit_code(), 2);
}

/// Experiments are inputs: the submission with wait stores the kernel-bench summary row; an id analyses and
/// compares as its results file does; an experiment without kernel-bench results is not found (exit 3).
#[tokio::test]
async fn experiments_are_inputs() {
    let h = super::harness::app().await;
    let mut ids = Vec::new();
    for (name, file) in [("run1", "cpu_results.jsonl"), ("run2", "cpu_results_run2.jsonl")] {
        let spec = format!(
            "name: kb-{name}\nscenario: kernel_bench\nworkload:\n  framework: shell\n  command: [sh, -c, 'cp {} $FALCON_ARTIFACT_DIR/kernel_bench_results.jsonl']\nresources: {{accelerator: cpu}}\n",
            data(file).display()
        );
        ids.push(submit_and_wait(&h.app, &spec, &format!("{name}.yaml")).await);
    }
    // The submission with wait ran the interface's analysis step: the kernel-bench summary row is stored.
    let shown = serde_json::to_value(h.app.show_experiment(ids[0].parse().unwrap(), None).await.unwrap()).unwrap();
    let row = shown["analysis"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tool"] == "kernel_bench")
        .expect("a kernel_bench summary row");
    assert_eq!(row["details"]["rows"], 18, "{row}");
    assert!(row["details"]["fast_p"]["value"].is_number(), "{row}");

    let by_id = analyze_json(&h.app, &analysis(&ids[0])).await;
    let by_file = analyze_json(&h.app, &analysis(arg(&data("cpu_results.jsonl")))).await;
    assert_eq!(by_id["rows"], by_file["rows"], "the fetched artifact is the file");
    assert!(by_id["path"].as_str().unwrap().ends_with("kernel_bench_results.jsonl"));

    let by_ids = serde_json::to_value(compare(&h.app, &ids[0], &ids[1]).await.unwrap()).unwrap();
    let by_files = serde_json::to_value(
        compare(&h.app, arg(&data("cpu_results.jsonl")), arg(&data("cpu_results_run2.jsonl"))).await.unwrap(),
    )
    .unwrap();
    assert_eq!(by_ids["rows"], by_files["rows"]);

    // An experiment without kernel-bench results: not found.
    let plain = submit_and_wait(
        &h.app,
        "name: plain\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [true]\nresources: {accelerator: cpu}\n",
        "plain.yaml",
    )
    .await;
    let err = analyze(&h.app, &analysis(&plain)).await.unwrap_err();
    assert_eq!(err.kind().exit_code(), 3, "{}", message(&err));
}
