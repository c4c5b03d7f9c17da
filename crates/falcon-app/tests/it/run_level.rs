//! Repeats and run-level verdicts, in process: a session submitted with repeats, a comparison with a session and a
//! config-hash prefix per side, a goal's rows with verdicts and the baseline's re-runs marked, and a metric's
//! history by config-hash prefix (its points and sparkline; not found for an unknown name or metric).

use super::experiments::{initialised, json, submit_session};
use super::fixtures::write_base_ms_spec;
use falcon_app::experiments::RunComparison;
use falcon_app::requests::{parse_goal_id, ExperimentCompareRequest, ExperimentHistoryRequest, GoalCreateRequest};
use falcon_app::App;
use falcon_core::ErrorKind;

/// `exp compare A B` on the default metric.
async fn compare(app: &App, a: &str, b: &str) -> falcon_app::Result<RunComparison> {
    let request = ExperimentCompareRequest {
        a: a.into(),
        b: b.into(),
        metric: falcon_app::requests::DEFAULT_METRIC.into(),
        direction: None,
        warmup: None,
    };
    app.compare_experiments(&request.compare()?).await
}

/// `exp history --config-hash H [--metric M]` or `--name N`.
fn history(name: Option<&str>, config_hash: Option<&str>, metric: &str) -> ExperimentHistoryRequest {
    ExperimentHistoryRequest {
        name: name.map(String::from),
        config_hash: config_hash.map(String::from),
        label: Vec::new(),
        branch: None,
        metric: metric.into(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn repeats_sessions_config_hashes_goal_rows_and_history() {
    let f = initialised().await;
    let app = &f.app;
    write_base_ms_spec(f.path());
    std::fs::write(
        f.path().join("sweep.yaml"),
        "base: base.yaml\nsweep:\n  config.base_ms: [100, 130]\nname_template: \"run-${config.base_ms}\"\nrepeats: 2\n",
    )
    .unwrap();
    let goal = GoalCreateRequest {
        title: "faster".into(),
        metric: "step_time_s".into(),
        direction: None,
        target: Some(0.09),
        baseline: None,
        priority: falcon_app::requests::DEFAULT_PRIORITY,
        workload: None,
        hardware: None,
    };
    assert_eq!(app.create_goal(&goal).await.unwrap().id.to_string(), "g-1");

    // Repeats asked for replace the file's `repeats: 2`: each point three times, one config hash per point.
    let session = json(&submit_session(app, &f.path().join("sweep.yaml"), Some("g-1"), Some(3)).await.unwrap());
    let experiments = session["experiments"].as_array().unwrap();
    let names: Vec<&str> = experiments.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["run-100-r1", "run-100-r2", "run-100-r3", "run-130-r1", "run-130-r2", "run-130-r3"]);
    let hash = |i: usize| experiments[i]["config_hash"].as_str().unwrap().to_string();
    assert_eq!(hash(0), hash(2));
    assert_ne!(hash(0), hash(3));
    let slow_prefix = format!("config:{}", &hash(3)[..12]);

    // Three runs against three: the +30 % is a regression (one run a side could not tell).
    let cmp = json(&compare(app, "e-1,e-2,e-3", &slow_prefix).await.unwrap());
    assert_eq!(cmp["verdict"], "regressed", "{cmp:#}");
    assert_eq!(cmp["runs"], serde_json::json!({"a": 3, "b": 3}));
    assert_eq!(cmp["sides"]["b"].as_array().unwrap().len(), 3);
    let single = json(&compare(app, "e-1", "e-4").await.unwrap());
    assert_eq!(single["verdict"], "regressed", "the other runs of each hash give the noise: {single:#}");
    assert_eq!(single["between_run_cv"]["source"], "history");
    let text = falcon_app::render::verdict::line(&compare(app, "s-1", &slow_prefix).await.unwrap().verdict);
    assert!(text.starts_with("step_time_s: inconclusive") || text.starts_with("step_time_s: regressed"), "{text}");
    assert!(text.contains("6 vs 3 runs"), "the session's six runs against the three: {text}");
    assert_eq!(compare(app, "config:zzzzzzzzzzzz", "e-1").await.unwrap_err().kind(), ErrorKind::Usage);
    assert_eq!(compare(app, "config:0123456789ab", "e-1").await.unwrap_err().kind(), ErrorKind::NotFound);

    // Goal rows: the baseline and its re-runs are marked; the other config carries a verdict.
    let g1 = parse_goal_id("g-1").unwrap();
    app.set_goal_baseline(g1, Some("e-1")).await.unwrap();
    let compared = app.compare_goal(g1).await.unwrap();
    let goal = json(&compared);
    let rows = goal["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    for row in rows {
        assert_eq!(row["statistic"], "median");
        match row["name"].as_str().unwrap() {
            "run-100-r1" => assert!(row["baseline"] == true && row["verdict"].is_null()),
            n if n.starts_with("run-100") => {
                assert!(row["baseline_rerun"] == true && row["verdict"].is_null(), "{row}")
            }
            _ => {
                assert_eq!(row["verdict"]["verdict"], "regressed", "{row}");
                assert_eq!(row["verdict"]["runs"], serde_json::json!({"a": 3, "b": 3}));
            }
        }
    }
    // The table's verdict column.
    let cells: Vec<String> = compared.rows.iter().map(falcon_app::render::goal::row_verdict).collect();
    assert!(cells.iter().any(|c| c == "re-run of baseline"), "{cells:?}");
    assert!(cells.iter().any(|c| c.contains("regressed, 3 vs 3 runs")), "{cells:?}");

    // History by the 12-character prefix `exp list` prints.
    let prefix = &hash(0)[..12];
    let view = app.history(&history(None, Some(prefix), "step_time_s")).await.unwrap();
    let h = json(&view);
    assert_eq!(h["points"].as_array().unwrap().len(), 3, "{h:#}");
    assert_eq!(h["changes"].as_array().unwrap().len(), 0);
    assert!(h["power_note"].as_str().is_some_and(|n| !n.is_empty()));
    assert_eq!(
        (view.history.metric.as_str(), view.history.points.len(), view.history.changes.len()),
        ("step_time_s", 3, 0)
    );
    let values: Vec<f64> = view.history.points.iter().map(|p| p.value).collect();
    let sparkline = falcon_app::render::sparkline(&values);
    assert!(sparkline.contains("▄▄▄"), "{sparkline}");
    let unknown = app.history(&history(Some("no-such-run"), None, "step_time_s")).await.unwrap_err();
    assert_eq!(unknown.kind(), ErrorKind::NotFound, "{unknown}");
    let metric = app.history(&history(None, Some(prefix), "stepp")).await.unwrap_err();
    assert_eq!(metric.kind(), ErrorKind::NotFound, "{metric}");
    let bad = app.history(&history(None, Some("xyz"), "step_time_s")).await.unwrap_err();
    assert_eq!(bad.kind(), ErrorKind::Usage, "{bad}");
}
