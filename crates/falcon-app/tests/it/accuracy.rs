//! `accuracy compare A B` in process (`App::compare_accuracy` and the renderers `falcon accuracy compare` prints):
//! Megatron-LM golden values of the same BERT model on DGX A100 and DGX H100 pass at the default rtol, the
//! metrics and rtol asked for change what is compared and how strictly, a `fail` verdict says why (what
//! `--fail-on-mismatch` prints), bad inputs fail with the kinds of docs/DESIGN.md §6 (so its exit codes), the
//! Markdown and HTML reports carry the same numbers, and experiments are inputs whose analysis step aligns them
//! with their reference.

use super::harness::message;
use falcon_app::accuracy::{mismatch_reason, AccuracyReport, AccuracyRequest, Verdict};
use falcon_app::render::accuracy as report;
use falcon_app::App;
use falcon_core::ErrorKind;
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

/// The request of `accuracy compare A B` without options.
fn request(a: &str, b: &str) -> AccuracyRequest {
    AccuracyRequest { a: a.to_string(), b: b.to_string(), ..AccuracyRequest::default() }
}

/// The report as `--json` prints it.
async fn compare(app: &App, req: &AccuracyRequest) -> (AccuracyReport, Value) {
    let r = app.compare_accuracy(req).await.unwrap_or_else(|e| panic!("{req:?}: {}", message(&e)));
    let v = serde_json::to_value(&r).unwrap();
    (r, v)
}

fn metric<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no metric {name}: {r}"))
}

/// Submits the spec `text` and waits for it (`exp submit FILE --wait`): the experiment's id, its job completed.
pub(super) async fn submit_and_wait(app: &App, text: &str, file: &str) -> String {
    super::harness::submit_and_wait(app, text, file).await.view.record.id.to_string()
}

/// The experiment as `exp show ID --json` prints it.
async fn show(app: &App, id: &str) -> Value {
    serde_json::to_value(app.show_experiment(id.parse().unwrap(), None).await.unwrap()).unwrap()
}

/// The golden values of A100 against H100 pass: only the loss is compared by default, with the documented
/// fields, the default rtol and the maximum relative error of the data.
#[tokio::test]
async fn golden_a100_vs_h100_json_passes_with_the_documented_shape() {
    let h = super::harness::app().await;
    let (report, r) = compare(&h.app, &request(&a100(), &h100())).await;
    assert_ne!(report.verdict, Verdict::Fail, "--fail-on-mismatch would not fail");
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

/// A metric asked for by A's name compares that series only (a mismatch is a report, not an error); a tighter
/// rtol fails the loss from its first diverging step.
#[tokio::test]
async fn metric_selects_other_series_and_rtol_tightens() {
    let h = super::harness::app().await;
    let req = AccuracyRequest { metrics: vec!["iteration-time".into()], ..request(&a100(), &h100()) };
    let (_, r) = compare(&h.app, &req).await;
    assert_eq!(r["metrics"].as_array().unwrap().len(), 1);
    let t = metric(&r, "step time (s)");
    assert_eq!(t["a_name"], "iteration-time");
    assert_eq!(t["steps_compared"], 10);
    assert_eq!(t["verdict"], "fail");
    assert_eq!(r["verdict"], "fail");

    let req = AccuracyRequest { rtol: Some(0.005), ..request(&a100(), &h100()) };
    let (_, r) = compare(&h.app, &req).await;
    let m = metric(&r, "lm loss");
    assert_eq!(m["rtol"], 0.005);
    assert_eq!(m["failing_steps"], 4);
    assert_eq!(m["first_divergence_step"], 40);
    assert_eq!(m["verdict"], "fail");
}

/// A `fail` verdict at rtol 0.01: the report is whole (JSON and text), and the reason `--fail-on-mismatch`
/// prints names the failing steps.
#[tokio::test]
async fn fail_on_mismatch_exits_5_with_the_report_still_printed() {
    let h = super::harness::app().await;
    let req = AccuracyRequest { rtol: Some(0.01), ..request(&a100(), &h100()) };
    let (report, r) = compare(&h.app, &req).await;
    assert_eq!(report.verdict, Verdict::Fail, "--fail-on-mismatch exits 5 on it");
    assert_eq!(r["verdict"], "fail");
    assert_eq!(metric(&r, "lm loss")["first_divergence_step"], 45);
    let why = mismatch_reason(&report);
    assert!(why.contains("lm loss fails at 2 of 11 steps"), "{why}");
    // Text output too.
    let text = report::render_table(&report);
    assert!(text.contains("verdict: FAIL"), "{text}");
}

/// A missing input is not found (exit 3) and names it; a malformed one is a failure (exit 1) naming the file.
#[tokio::test]
async fn missing_input_exits_3_and_malformed_input_exits_1() {
    let h = super::harness::app().await;
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.json");
    let missing = missing.to_str().unwrap();
    let err = h.app.compare_accuracy(&request(missing, &h100())).await.unwrap_err();
    assert_eq!(err.kind().exit_code(), 3, "{}", message(&err));
    assert!(message(&err).contains("nope.json"), "{}", message(&err));
    let err = h.app.compare_accuracy(&request(&a100(), missing)).await.unwrap_err();
    assert_eq!(err.kind().exit_code(), 3);
    assert_eq!(err.kind().code(), "not_found");

    let bad = dir.path().join("golden.json");
    std::fs::write(&bad, "{\"lm loss\": {\"values\": {\"1\": 10.5,").unwrap();
    let err = h.app.compare_accuracy(&request(&a100(), bad.to_str().unwrap())).await.unwrap_err();
    assert_eq!(err.kind().exit_code(), 1, "{}", message(&err));
    assert!(message(&err).contains("golden.json"), "{}", message(&err));
    let garbage = dir.path().join("train.log");
    std::fs::write(&garbage, "hello\nworld\n").unwrap();
    let err = h.app.compare_accuracy(&request(garbage.to_str().unwrap(), &h100())).await.unwrap_err();
    assert_eq!(err.kind().exit_code(), 1);
    assert_eq!(err.kind().code(), "failure");
}

/// A metric neither side has fails naming the series there are; a `--map` entry without `=` and a negative
/// rtol are usage errors (exit 2).
#[tokio::test]
async fn unknown_metric_and_bad_arguments() {
    let h = super::harness::app().await;
    let req = AccuracyRequest { metrics: vec!["perplexity".into()], ..request(&a100(), &h100()) };
    let err = h.app.compare_accuracy(&req).await.unwrap_err();
    assert_eq!(err.kind().exit_code(), 1, "{}", message(&err));
    let err = message(&err);
    assert!(err.contains("`perplexity`") && err.contains("`iteration-time`"), "names the available series: {err}");
    let req = AccuracyRequest { map: vec!["no-equals-sign".into()], ..request(&a100(), &h100()) };
    let err = h.app.compare_accuracy(&req).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Usage, "{}", message(&err));
    assert_eq!(err.kind().exit_code(), 2);
    let req = AccuracyRequest { rtol: Some(-1.0), ..request(&a100(), &h100()) };
    let err = h.app.compare_accuracy(&req).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Usage, "{}", message(&err));
    assert_eq!(err.kind().exit_code(), 2);
}

/// Generic JSONL and CSV inputs with no loss name in common fail; a map entry pairs A's name with B's.
#[tokio::test]
async fn map_pairs_names_of_generic_inputs() {
    let h = super::harness::app().await;
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
    let err = h.app.compare_accuracy(&request(pa, pb)).await.unwrap_err();
    assert_eq!(err.kind().exit_code(), 1, "no common loss name: {}", message(&err));
    let req = AccuracyRequest { map: vec!["xent=train_xent".into()], ..request(pa, pb) };
    let (report, r) = compare(&h.app, &req).await;
    assert_ne!(report.verdict, Verdict::Fail, "--fail-on-mismatch would not fail: {r}");
    let m = metric(&r, "xent");
    assert_eq!(m["b_name"], "train_xent");
    assert_eq!(m["steps_compared"], 10);
    assert_eq!(m["verdict"], "pass");
}

/// The Markdown report carries the verdict, the table and the failing steps with the JSON's numbers; the HTML
/// page has one chart per compared metric, no script and no non-finite coordinate.
#[tokio::test]
async fn markdown_and_html_reports() {
    let h = super::harness::app().await;
    let req = AccuracyRequest { rtol: Some(0.005), ..request(&a100(), &h100()) };
    let (r, _) = compare(&h.app, &req).await;
    let md = report::render_md(&r);
    assert!(md.starts_with("# Accuracy comparison"), "{md}");
    assert!(md.contains("**verdict: FAIL**"), "{md}");
    assert!(md.contains("| lm loss "), "{md}");
    assert!(md.contains("1.97 % @ 50"), "max rel err as in JSON: {md}");
    assert!(md.contains("## Failing steps of lm loss"), "{md}");

    let req = AccuracyRequest { metrics: vec!["lm loss".into(), "num-zeros".into()], ..request(&a100(), &h100()) };
    let (r, _) = compare(&h.app, &req).await;
    let html = report::render_html(&r);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(html.matches("<svg").count(), 2, "one chart per compared metric");
    assert!(html.contains("lm loss") && html.contains("num zeros"));
    assert!(!html.contains("<script"), "self-contained, no scripts");
    assert!(!html.contains("NaN") && !html.contains("inf\""), "no non-finite coordinates");
}

/// An experiment id as A reads the experiment's metrics artifact; an experiment without one is not found
/// (exit 3), saying so.
#[tokio::test]
async fn an_experiment_id_reads_its_metrics_artifact() {
    let h = super::harness::app().await;
    let dir = tempfile::tempdir().unwrap();
    super::harness::enterable(dir.path());
    let local = dir.path().join("reference.jsonl");
    let mut text = String::new();
    for step in 0..5 {
        text.push_str(&format!("{{\"step\": {step}.0, \"learning/loss\": {0}, \"learning/lm_loss\": {0}, \"perf/step_time_seconds\": 0.5}}\n", 3.0 - 0.1 * step as f64));
    }
    std::fs::write(&local, &text).unwrap();
    let spec = format!(
        "name: metrics\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'cp {} $FALCON_ARTIFACT_DIR/metrics.jsonl']\nresources: {{accelerator: cpu}}\n",
        local.display()
    );
    let id = submit_and_wait(&h.app, &spec, "m.yaml").await;
    let req = request(&id, local.to_str().unwrap());
    let (report, r) = compare(&h.app, &req).await;
    assert_ne!(report.verdict, Verdict::Fail, "--fail-on-mismatch would not fail: {r}");
    assert!(r["a"]["path"].as_str().unwrap().ends_with("metrics.jsonl"), "{}", r["a"]);
    assert_eq!(r["a"]["format"], "maxtext_jsonl");
    let m = metric(&r, "lm loss");
    assert_eq!((m["steps_compared"].as_u64(), m["max_abs_err"].as_f64()), (Some(5), Some(0.0)));

    // An experiment without metrics artifacts.
    let other = submit_and_wait(
        &h.app,
        "name: none\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'true']\nresources: {accelerator: cpu}\n",
        "n.yaml",
    )
    .await;
    let err = h.app.compare_accuracy(&request(&other, local.to_str().unwrap())).await.unwrap_err();
    assert_eq!(err.kind().exit_code(), 3, "{}", message(&err));
    assert!(message(&err).contains("metrics"), "{}", message(&err));
}

/// An `accuracy` experiment whose spec names a reference: the interface's analysis step (run by the submission
/// with wait) aligns its metrics with the reference and stores the verdict. Here the run logs exactly the
/// reference's values, so every compared step passes.
#[tokio::test]
async fn accuracy_experiments_are_aligned_with_their_reference_on_completion() {
    let h = super::harness::app().await;
    let reference = data("maxtext_metrics.jsonl");
    let spec = format!(
        "name: acc\nscenario: accuracy\nworkload:\n  framework: shell\n  command: [sh, -c, 'cp {reference} $FALCON_ARTIFACT_DIR/metrics.jsonl']\nconfig:\n  accuracy: {{reference: '{reference}'}}\nresources: {{accelerator: cpu}}\n",
    );
    let id = submit_and_wait(&h.app, &spec, "acc.yaml").await;
    let shown = show(&h.app, &id).await;
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
    let spec = format!(
        "name: b\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'cp {reference} $FALCON_ARTIFACT_DIR/metrics.jsonl']\nresources: {{accelerator: cpu}}\n"
    );
    let b = submit_and_wait(&h.app, &spec, "b.yaml").await;
    let shown = show(&h.app, &b).await;
    assert!(shown["analysis"].as_array().unwrap().iter().all(|r| r["tool"] != "accuracy"), "{shown}");
}
