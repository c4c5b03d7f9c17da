//! `falcon accuracy compare A B` as a user runs it: Megatron-LM golden values of the same BERT model on
//! DGX A100 and DGX H100 pass at the default rtol, `--metric` and `--rtol` change what is compared and how
//! strictly, `--fail-on-mismatch` exits 5 on a `fail` verdict, bad inputs fail with docs/DESIGN.md §6's exit
//! codes, and the Markdown and HTML reports carry the same numbers.

use crate::common::{code, falcon, json};
use serde_json::Value;
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

fn metric<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no metric {name}: {r}"))
}

#[test]
fn golden_a100_vs_h100_json_passes_with_the_documented_shape() {
    let dir = tempfile::tempdir().unwrap();
    let out = falcon(dir.path(), &["accuracy", "compare", &a100(), &h100(), "--json", "--fail-on-mismatch"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let r = json(&out);
    assert_eq!(r["verdict"], "pass");
    assert_eq!(r["a"]["format"], "megatron_golden");
    assert_eq!(r["b"]["series"], 5);
    let metrics = r["metrics"].as_array().unwrap();
    assert_eq!(metrics.len(), 1, "only the loss by default: {r}");
    let m = &metrics[0];
    for key in [
        "name",
        "a_name",
        "b_name",
        "steps_compared",
        "max_abs_err",
        "max_rel_err",
        "mean_rel_err",
        "rtol",
        "atol",
        "first_divergence_step",
        "verdict",
    ] {
        assert!(m.get(key).is_some(), "metrics[0].{key} missing: {m}");
    }
    assert_eq!(m["name"], "lm loss");
    assert_eq!(m["a_name"], "lm loss");
    assert_eq!(m["b_name"], "lm loss");
    assert_eq!(m["steps_compared"], 11);
    assert_eq!(m["rtol"], 0.05);
    assert_eq!(m["atol"], 0.0);
    assert!(m["first_divergence_step"].is_null());
    assert_eq!(m["verdict"], "pass");
    let max_rel = m["max_rel_err"].as_f64().unwrap();
    assert!((max_rel - (9.6868 - 9.49558) / 9.6868).abs() < 1e-9, "{max_rel}");
    assert_eq!(m["points"].as_array().unwrap().len(), 11);
    assert!(r["not_compared"].as_array().unwrap().iter().any(|n| n == "step time (s)"), "{r}");
}

#[test]
fn metric_selects_other_series_and_rtol_tightens() {
    let dir = tempfile::tempdir().unwrap();
    let out = falcon(dir.path(), &["accuracy", "compare", &a100(), &h100(), "--json", "--metric", "iteration-time"]);
    assert_eq!(code(&out), 0, "a mismatch without --fail-on-mismatch exits 0: {}", stderr(&out));
    let r = json(&out);
    assert_eq!(r["metrics"].as_array().unwrap().len(), 1);
    let t = metric(&r, "step time (s)");
    assert_eq!(t["a_name"], "iteration-time");
    assert_eq!(t["steps_compared"], 10);
    assert_eq!(t["verdict"], "fail");
    assert_eq!(r["verdict"], "fail");

    let out = falcon(dir.path(), &["accuracy", "compare", &a100(), &h100(), "--json", "--rtol", "0.005"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let r = json(&out);
    let m = metric(&r, "lm loss");
    assert_eq!(m["rtol"], 0.005);
    assert_eq!(m["failing_steps"], 4);
    assert_eq!(m["first_divergence_step"], 40);
    assert_eq!(m["verdict"], "fail");
}

#[test]
fn fail_on_mismatch_exits_5_with_the_report_still_printed() {
    let dir = tempfile::tempdir().unwrap();
    let out = falcon(
        dir.path(),
        &["accuracy", "compare", &a100(), &h100(), "--json", "--rtol", "0.01", "--fail-on-mismatch"],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    let r = json(&out);
    assert_eq!(r["verdict"], "fail");
    assert_eq!(metric(&r, "lm loss")["first_divergence_step"], 45);
    assert!(stderr(&out).contains("lm loss fails at 2 of 11 steps"), "{}", stderr(&out));
    // Text output too.
    let out = falcon(dir.path(), &["accuracy", "compare", &a100(), &h100(), "--rtol", "0.01", "--fail-on-mismatch"]);
    assert_eq!(code(&out), 5);
    assert!(stdout(&out).contains("verdict: FAIL"), "{}", stdout(&out));
}

#[test]
fn missing_input_exits_3_and_malformed_input_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.json");
    let out = falcon(dir.path(), &["accuracy", "compare", missing.to_str().unwrap(), &h100()]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("nope.json"), "{}", stderr(&out));
    let out = falcon(dir.path(), &["accuracy", "compare", &a100(), missing.to_str().unwrap(), "--json"]);
    assert_eq!(code(&out), 3);
    assert_eq!(json(&out)["error"]["code"], "not_found");

    let bad = dir.path().join("golden.json");
    std::fs::write(&bad, "{\"lm loss\": {\"values\": {\"1\": 10.5,").unwrap();
    let out = falcon(dir.path(), &["accuracy", "compare", &a100(), bad.to_str().unwrap()]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("golden.json"), "{}", stderr(&out));
    let garbage = dir.path().join("train.log");
    std::fs::write(&garbage, "hello\nworld\n").unwrap();
    let out = falcon(dir.path(), &["accuracy", "compare", garbage.to_str().unwrap(), &h100(), "--json"]);
    assert_eq!(code(&out), 1);
    assert_eq!(json(&out)["error"]["code"], "failure");
}

#[test]
fn unknown_metric_and_bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let out = falcon(dir.path(), &["accuracy", "compare", &a100(), &h100(), "--metric", "perplexity"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("`perplexity`") && err.contains("`iteration-time`"), "names the available series: {err}");
    let out = falcon(dir.path(), &["accuracy", "compare", &a100(), &h100(), "--map", "no-equals-sign"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let out = falcon(dir.path(), &["accuracy", "compare", &a100(), &h100(), "--rtol=-1"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

#[test]
fn map_pairs_names_of_generic_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.jsonl");
    let b = dir.path().join("b.csv");
    let mut ja = String::new();
    let mut cb = String::from("step,train_xent\n");
    for step in 1..=10 {
        ja.push_str(&format!("{{\"step\": {step}, \"xent\": {}}}\n", 5.0 - 0.1 * step as f64));
        cb.push_str(&format!("{step},{}\n", (5.0 - 0.1 * step as f64) * 1.001));
    }
    std::fs::write(&a, ja).unwrap();
    std::fs::write(&b, cb).unwrap();
    let (pa, pb) = (a.to_str().unwrap(), b.to_str().unwrap());
    let out = falcon(dir.path(), &["accuracy", "compare", pa, pb, "--json"]);
    assert_eq!(code(&out), 1, "no common loss name: {}", stderr(&out));
    let out = falcon(
        dir.path(),
        &["accuracy", "compare", pa, pb, "--json", "--map", "xent=train_xent", "--fail-on-mismatch"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let r = json(&out);
    let m = metric(&r, "xent");
    assert_eq!(m["b_name"], "train_xent");
    assert_eq!(m["steps_compared"], 10);
    assert_eq!(m["verdict"], "pass");
}

#[test]
fn markdown_and_html_reports() {
    let dir = tempfile::tempdir().unwrap();
    let out = falcon(dir.path(), &["accuracy", "compare", &a100(), &h100(), "--format", "md", "--rtol", "0.005"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let md = stdout(&out);
    assert!(md.starts_with("# Accuracy comparison"), "{md}");
    assert!(md.contains("**verdict: FAIL**"), "{md}");
    assert!(md.contains("| lm loss "), "{md}");
    assert!(md.contains("1.974% @ 50"), "max rel err as in JSON: {md}");
    assert!(md.contains("## Failing steps of lm loss"), "{md}");

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
    assert!(stdout(&out).is_empty(), "the report goes to the file");
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(html.matches("<svg").count(), 2, "one chart per compared metric");
    assert!(html.contains("lm loss") && html.contains("num zeros"));
    assert!(!html.contains("<script"), "self-contained, no scripts");
    assert!(!html.contains("NaN") && !html.contains("inf\""), "no non-finite coordinates");
    // No temporary file left beside it.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("report.html")], "{left:?}");
}

#[test]
fn an_experiment_id_reads_its_metrics_artifact() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(falcon(dir.path(), &["init"]).status.code(), Some(0));
    let local = dir.path().join("reference.jsonl");
    let mut text = String::new();
    for step in 0..5 {
        text.push_str(&format!("{{\"step\": {step}.0, \"learning/loss\": {0}, \"learning/lm_loss\": {0}, \"perf/step_time_seconds\": 0.5}}\n", 3.0 - 0.1 * step as f64));
    }
    std::fs::write(&local, &text).unwrap();
    std::fs::write(
        dir.path().join("m.yaml"),
        format!(
            "name: metrics\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'cp {} $FALCON_ARTIFACT_DIR/metrics.jsonl']\nresources: {{accelerator: cpu}}\n",
            local.display()
        ),
    )
    .unwrap();
    let shown = json(&falcon(dir.path(), &["exp", "submit", "m.yaml", "--wait", "--json"]));
    let id = shown["id"].as_str().unwrap().to_string();
    let out = falcon(dir.path(), &["accuracy", "compare", &id, "reference.jsonl", "--json", "--fail-on-mismatch"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let r = json(&out);
    assert!(r["a"]["path"].as_str().unwrap().ends_with("metrics.jsonl"), "{}", r["a"]);
    assert_eq!(r["a"]["format"], "maxtext_jsonl");
    let m = metric(&r, "lm loss");
    assert_eq!((m["steps_compared"].as_u64(), m["max_abs_err"].as_f64()), (Some(5), Some(0.0)));

    // An experiment without metrics artifacts.
    std::fs::write(
        dir.path().join("n.yaml"),
        "name: none\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'true']\nresources: {accelerator: cpu}\n",
    )
    .unwrap();
    let other =
        json(&falcon(dir.path(), &["exp", "submit", "n.yaml", "--wait", "--json"]))["id"].as_str().unwrap().to_string();
    let out = falcon(dir.path(), &["accuracy", "compare", &other, "reference.jsonl", "--json"]);
    assert_eq!(code(&out), 3, "{}", stdout(&out));
    assert!(json(&out)["error"]["message"].as_str().unwrap().contains("metrics"), "{}", stdout(&out));
}

#[test]
fn accuracy_experiments_are_aligned_with_their_reference_on_completion() {
    // An `accuracy` experiment whose spec names a reference: the interface's analysis step (run by
    // `exp submit --wait`) aligns its metrics with the reference and stores the verdict. Here the run logs
    // exactly the reference's values, so every compared step passes.
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(code(&falcon(dir.path(), &["init"])), 0);
    let reference = data("maxtext_metrics.jsonl");
    let spec = format!(
        "name: acc\nscenario: accuracy\nworkload:\n  framework: shell\n  command: [sh, -c, 'cp {reference} $FALCON_ARTIFACT_DIR/metrics.jsonl']\nconfig:\n  accuracy: {{reference: '{reference}'}}\nresources: {{accelerator: cpu}}\n",
    );
    std::fs::write(dir.path().join("acc.yaml"), spec).unwrap();
    let out = falcon(dir.path(), &["exp", "submit", "acc.yaml", "--wait", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let id = json(&out)["id"].as_str().unwrap().to_string();
    let shown = json(&falcon(dir.path(), &["exp", "show", &id, "--json"]));
    let row = shown["analysis"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tool"] == "accuracy")
        .expect("an accuracy summary row");
    assert_eq!(row["details"]["reference"], reference.as_str(), "{row}");
    assert_eq!(row["details"]["verdict"], "pass", "{row}");
    assert!(row["details"]["metrics"][0]["steps_compared"].as_u64().unwrap() > 0, "{row}");

    // A benchmark experiment with metrics gets no accuracy row (the scenario decides).
    std::fs::write(dir.path().join("b.yaml"), format!("name: b\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'cp {reference} $FALCON_ARTIFACT_DIR/metrics.jsonl']\nresources: {{accelerator: cpu}}\n")).unwrap();
    let b =
        json(&falcon(dir.path(), &["exp", "submit", "b.yaml", "--wait", "--json"]))["id"].as_str().unwrap().to_string();
    let shown = json(&falcon(dir.path(), &["exp", "show", &b, "--json"]));
    assert!(shown["analysis"].as_array().unwrap().iter().all(|r| r["tool"] != "accuracy"), "{shown}");
}
