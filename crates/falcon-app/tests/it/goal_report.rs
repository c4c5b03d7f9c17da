//! `goal report` in process: two experiments whose workloads copy real captures (a batch-16 and a batch-8 run
//! of the same model), submitted and run by the embedded worker as `exp submit --wait` runs them, a goal on step
//! time with the batch-16 run as baseline. The use case is [`falcon_app::App::goal_report`], its renderings
//! [`falcon_app::render::goal`], as the CLI calls them; the flags, exit codes and `-o` of the binary stay in
//! falcon-cli's `goal_report_cli`.

use falcon_app::goal_report::GoalReport;
use falcon_app::goals::GoalView;
use falcon_app::render::goal::{num, render_html, render_md, render_table};
use falcon_app::requests::{GoalCreateRequest, GoalReportRequest, DEFAULT_PRIORITY, DEFAULT_TOP};
use falcon_app::App;
use falcon_core::status::ExperimentStatus;
use falcon_core::ErrorKind;
use serde_json::Value;
use std::path::Path;

fn capture_dir(name: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-analysis/tests/data/compare").join(name);
    std::fs::canonicalize(dir).unwrap().display().to_string()
}

/// A spec whose workload copies `crates/falcon-analysis/tests/data/compare/<capture>/*` (metrics, profile,
/// HLO, effective config) into its artifact directory.
fn spec(name: &str, capture: &str, batch: u32, goal: Option<&str>) -> String {
    let goal = goal.map_or(String::new(), |g| format!("goal: {g}\n"));
    format!(
        "name: {name}\nscenario: benchmark\n{goal}workload:\n  framework: shell\n  command: [sh, -c, 'cp -R {}/. $FALCON_ARTIFACT_DIR/']\n\
         config: {{batch_size: {batch}, model: tiny-decoder}}\nresources: {{accelerator: cpu}}\n",
        capture_dir(capture)
    )
}

/// A spec logging a constant `tokens_per_s` for ten steps, with no profile.
fn plain_spec(name: &str, goal: &str, tokens: u32) -> String {
    format!(
        "name: {name}\nscenario: benchmark\ngoal: {goal}\nworkload:\n  framework: shell\n  command: [sh, -c, 'for i in $(seq 0 9); do \
         echo \"{{\\\"step\\\": $i, \\\"tokens_per_s\\\": {tokens}}}\" >> $FALCON_ARTIFACT_DIR/metrics.jsonl; done']\n\
         config: {{tokens: {tokens}}}\nresources: {{accelerator: cpu}}\n"
    )
}

/// `exp submit <name>.yaml --wait` in process: the spec parsed as the CLI parses it, submitted, the worker run
/// here until it ends; the experiment must have completed. Its id.
async fn submit(app: &App, name: &str, text: &str) -> String {
    let spec = falcon_core::spec::parse_spec(text, &format!("{name}.yaml")).unwrap();
    let (detail, _events) = app.submit_experiment(&spec, true, None, |_| {}).await.unwrap();
    let record = &detail.view.record;
    assert_eq!(record.status, ExperimentStatus::Completed, "{:#}", serde_json::to_value(&detail).unwrap());
    record.id.to_string()
}

/// `goal create --title T --metric M [--target X] [--baseline E]`: the goal's id.
async fn create_goal(app: &App, title: &str, metric: &str, target: Option<f64>, baseline: Option<&str>) -> String {
    let request = GoalCreateRequest {
        title: title.into(),
        metric: metric.into(),
        direction: None,
        target,
        baseline: baseline.map(str::to_string),
        priority: DEFAULT_PRIORITY,
        workload: None,
        hardware: None,
    };
    app.create_goal(&request).await.unwrap().id.to_string()
}

/// `goal report G` (default `--top`) as the CLI runs it: the request checked, then the use case.
async fn build(app: &App, id: &str) -> falcon_app::Result<(GoalReport, usize)> {
    let (id, top) = GoalReportRequest { id: id.into(), top: DEFAULT_TOP }.report()?;
    Ok((app.goal_report(id, top).await?, top))
}

/// The JSON document `goal report G --json` prints.
fn json(report: &GoalReport) -> Value {
    serde_json::to_value(report).unwrap()
}

fn notes(report: &Value) -> Vec<String> {
    report["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn a_goal_report_composes_progress_diff_verdicts_and_the_profile_comparison() {
    let h = super::harness::app().await;
    // batch 16 is slower per step: it is the baseline the batch-8 candidate improves on.
    let baseline = submit(&h.app, "batch16", &spec("batch16", "batch16", 16, None)).await;
    let gid = create_goal(&h.app, "faster steps", "step_time_s", Some(0.01), Some(&baseline)).await;
    let best = submit(&h.app, "batch8", &spec("batch8", "batch8", 8, Some(&gid))).await;
    assert_ne!(best, baseline);

    let (built, top) = build(&h.app, &gid).await.unwrap();
    let report = json(&built);
    for field in ["goal", "progress", "best", "baseline", "ranking", "config_diff", "verdicts", "profile", "notes"] {
        assert!(report.get(field).is_some(), "`{field}` in {report:#}");
    }
    assert_eq!(report["goal"]["id"], gid.as_str());
    assert_eq!(report["baseline"], baseline.as_str());
    assert_eq!(report["best"]["experiment"], best.as_str(), "{report:#}");
    assert_eq!(report["best"]["name"], "batch8");

    let p = &report["progress"];
    assert_eq!((p["metric"].as_str(), p["direction"].as_str()), (Some("step_time_s"), Some("minimize")));
    let (b, v, t) =
        (p["baseline_value"].as_f64().unwrap(), p["best_value"].as_f64().unwrap(), p["target"].as_f64().unwrap());
    assert_eq!(t, 0.01);
    assert!(v < b, "batch 8 steps faster: {p:#}");
    assert!((v - 0.0129).abs() < 0.001 && (b - 0.0359).abs() < 0.001, "medians of the logged step times: {p:#}");
    assert_eq!(report["best"]["value"].as_f64(), Some(v));
    assert!((p["delta_vs_baseline"].as_f64().unwrap() - (v - b) / b).abs() < 1e-12);
    let gap = p["gap_closed"].as_f64().unwrap();
    assert!((gap - (v - b) / (t - b)).abs() < 1e-12 && gap > 0.5 && gap < 1.0, "{p:#}");
    assert_eq!(p["meets_target"], false);

    let changes = report["config_diff"].as_array().unwrap();
    assert!(
        changes
            .iter()
            .any(|c| c["path"] == "config.batch_size" && c["a"] == 16 && c["b"] == 8 && c["group"] == "batch_sequence"),
        "{changes:#?}"
    );
    assert!(!changes.iter().any(|c| c["path"] == "config.model"), "only what differs");
    // The best names the goal and has another name: bookkeeping, kept in the list with its group.
    for path in ["goal", "name"] {
        let c = changes.iter().find(|c| c["path"] == path).unwrap_or_else(|| panic!("`{path}` in {changes:#?}"));
        assert_eq!(c["group"], "bookkeeping", "{c}");
    }
    assert_eq!(changes.iter().find(|c| c["path"] == "goal").unwrap()["b"], gid.as_str());

    let verdicts = report["verdicts"].as_array().unwrap();
    assert_eq!(verdicts[0]["metric"], "step_time_s", "the goal's metric first");
    assert_eq!(verdicts[0]["verdict"], "improved", "{:#}", verdicts[0]);
    let metrics: Vec<&str> = verdicts.iter().map(|v| v["metric"].as_str().unwrap()).collect();
    for m in ["tokens_per_s", "tflops_per_device", "loss"] {
        assert!(metrics.contains(&m), "{metrics:?}");
    }
    assert!(!metrics.contains(&"mfu") && !metrics.contains(&"peak_hbm_bytes"), "not logged, so skipped: {metrics:?}");
    assert_eq!(metrics.iter().filter(|m| **m == "step_time_s").count(), 1);

    let profile = &report["profile"];
    assert!(profile["step_time"]["verdict"].is_string(), "{:#}", profile["step_time"]);
    assert!(!profile["ops"].as_array().unwrap().is_empty());
    assert_eq!(profile["a"]["input"], baseline.as_str(), "A is the baseline");
    assert_eq!(profile["b"]["input"], best.as_str());
    assert!(report["notes"].as_array().unwrap().is_empty(), "{:#}", report["notes"]);

    // Built again, the report is the same document.
    assert_eq!(json(&report_of(&h.app, &gid).await)["progress"], report["progress"]);

    // Markdown: the title, the best value and the config change.
    let md = render_md(&built, top);
    assert!(md.starts_with("# Goal report: faster steps\n"), "{md}");
    for needle in [
        "## Progress".to_string(),
        "## Config diff".to_string(),
        "## Metric verdicts".to_string(),
        num(v),
        best.clone(),
        "| config.batch_size | batch_sequence | 16 | 8 |".to_string(),
        "## Bookkeeping (not configuration)".to_string(),
        format!("- goal: (absent) → \"{gid}\""),
    ] {
        assert!(md.contains(&needle), "`{needle}` in:\n{md}");
    }
    // Bookkeeping is not a row of the config diff's table, and comes after it.
    let (config, rest) = md.split_once("## Bookkeeping").unwrap();
    let config = &config[config.find("## Config diff").unwrap()..];
    assert!(!config.contains("| goal |") && !config.contains("| name |"), "{config}");
    assert!(rest.contains("- name: \"batch16\" → \"batch8\""), "{rest}");

    // Terminal tables (the default).
    let table = render_table(&built, top);
    for needle in ["Progress", "Ranking", "config.batch_size", "step_time_s", "improved", &num(v)] {
        assert!(table.contains(needle), "`{needle}` in:\n{table}");
    }
    let at = |needle: &str| table.find(needle).unwrap_or_else(|| panic!("`{needle}` in:\n{table}"));
    assert!(at("config.batch_size") < at("Bookkeeping (not configuration)"), "{table}");
    assert!(at("Bookkeeping (not configuration)") < at("- name: \"batch16\" → \"batch8\""), "{table}");

    // HTML into a file: a self-contained page with the profile comparison's charts, written atomically.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.html");
    let page = render_html(&built, top);
    falcon_app::files::check_output_target(&path, false).unwrap();
    falcon_app::files::write_atomically(&path, format!("{}\n", page.trim_end())).unwrap();
    let html = std::fs::read_to_string(&path).unwrap();
    assert!(html.contains("config.batch_size") && html.contains(&num(v)), "{html}");
    assert!(html.contains("<svg"), "charts from the profile comparison");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "the temporary file was renamed");

    // JSON into a file.
    let path = dir.path().join("report.json");
    falcon_app::files::write_atomically(&path, serde_json::to_string_pretty(&built).unwrap()).unwrap();
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(written["best"]["experiment"], best.as_str());
}

#[tokio::test]
async fn missing_pieces_are_notes_and_unknown_goals_are_not_found() {
    let h = super::harness::app().await;
    let gid = create_goal(&h.app, "more tokens", "tokens_per_s", None, None).await;

    // No baseline, no experiments: everything that can be said is said, with notes; no error.
    let (built, top) = build(&h.app, &gid).await.unwrap();
    let report = json(&built);
    assert_eq!(report["best"], Value::Null);
    assert_eq!(report["baseline"], Value::Null);
    assert_eq!(report["profile"], Value::Null);
    assert_eq!(report["progress"]["direction"], "maximize");
    let said = notes(&report);
    assert!(said.iter().any(|n| n.contains("no baseline")), "{said:?}");
    assert!(said.iter().any(|n| n.contains("no completed experiment")), "{said:?}");
    let md = render_md(&built, top);
    assert!(
        md.starts_with("# Goal report: more tokens") && md.contains("## Notes") && md.contains("no baseline"),
        "{md}"
    );
    assert!(render_table(&built, top).contains("no baseline"));

    // A goal whose best experiment is its baseline (the baseline names the goal in its spec, so the goal names
    // it once it has run)…
    let g2 = create_goal(&h.app, "same", "tokens_per_s", None, None).await;
    let base = submit(&h.app, "base", &plain_spec("base", &g2, 100)).await;
    assert_eq!(base, "e-1");
    let g2_id = falcon_app::goals::parse_goal_id(&g2).unwrap();
    let set = h.app.set_goal_baseline(g2_id, Some("e-1")).await.unwrap();
    let set = serde_json::to_value(GoalView::from(set)).unwrap();
    assert_eq!(set["baseline"], "e-1", "{set}");
    submit(&h.app, "worse", &plain_spec("worse", &g2, 50)).await;
    let report = json(&report_of(&h.app, &g2).await);
    assert_eq!(report["best"]["experiment"], "e-1", "{report:#}");
    assert_eq!(report["progress"]["baseline_value"], 100.0);
    assert_eq!(report["progress"]["delta_vs_baseline"], 0.0);
    assert!(report["config_diff"].as_array().unwrap().is_empty() && report["verdicts"].as_array().unwrap().is_empty());
    assert!(notes(&report).iter().any(|n| n.contains("the best experiment is the baseline")), "{report:#}");

    // …and one whose experiments have no profile: the rest of the report is there, the profile is a note.
    let g3 = create_goal(&h.app, "faster", "tokens_per_s", Some(300.0), Some("e-1")).await;
    let better = submit(&h.app, "better", &plain_spec("better", &g3, 200)).await;
    let (built, top) = build(&h.app, &g3).await.unwrap();
    let report = json(&built);
    assert_eq!(report["best"]["experiment"], better.as_str());
    assert_eq!(report["progress"]["gap_closed"], 0.5, "100 → 200 of 100 → 300");
    assert!(report["config_diff"].as_array().unwrap().iter().any(|c| c["path"] == "config.tokens"), "{report:#}");
    assert_eq!(report["verdicts"][0]["metric"], "tokens_per_s");
    assert_eq!(report["profile"], Value::Null);
    assert!(
        notes(&report).iter().any(|n| n.contains("no profile comparison") && n.contains("no XProf profile")),
        "{report:#}"
    );
    let html = render_html(&built, top);
    assert!(html.contains("no XProf profile") && html.contains("config.tokens"), "{html}");

    // An unknown goal is not found (exit 3); what is no goal id at all is a usage error (exit 2).
    let err = build(&h.app, "g-99").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert_eq!(err.kind().exit_code(), 3);
    assert!(!err.to_string().is_empty());
    let err = build(&h.app, "nonsense").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Usage, "{err}");
    assert_eq!(err.kind().exit_code(), 2);
}

/// The report of `id`, which must build.
async fn report_of(app: &App, id: &str) -> GoalReport {
    build(app, id).await.unwrap().0
}
