//! What an agent gets per call, in process: the experiment list with metrics and the session's detail carry each
//! experiment's stored metric summaries (the same numbers `exp show` gives), JSON timestamps come as milliseconds
//! and as RFC 3339 (`created` and `created_iso`), a sweep point that runs its baseline's config is marked a re-run
//! and does not inherit the baseline's `role` label, and `exp diff` keeps bookkeeping apart from configuration.

use super::experiments::{initialised, json, list, show, submit, submit_session};
use falcon_app::experiments::split_bookkeeping;
use falcon_app::requests::{ExperimentDiffRequest, ExperimentListRequest, GoalCreateRequest, GoalListRequest};
use serde_json::Value;
use std::process::Command;

/// A spec whose shell workload logs 20 steps of `step_time_s` (0.1, 0.101, 0.102, …) and `loss`.
const BASE: &str = "name: base\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'for i in \
    $(seq 0 19); do echo \"{\\\"step\\\": $i, \\\"step_time_s\\\": 0.10$((i % 3)), \\\"loss\\\": 2.$((9 - i / 3))}\" \
    >> $FALCON_ARTIFACT_DIR/metrics.jsonl; done']\nconfig: {batch_size: 8}\nresources: {accelerator: cpu}\n\
    labels: {role: baseline, team: perf}\n";

/// The sweep over the base: batch 8 (the baseline's config again) and 16.
const SWEEP: &str = "base: base.yaml\nsweep:\n  config.batch_size: [8, 16]\n";

/// `ms` as `date -u` writes it, plus the milliseconds: an oracle independent of Falcon's own conversion.
fn date_u(ms: i64) -> String {
    let out = Command::new("date")
        .args(["-u", "-d", &format!("@{}", ms.div_euclid(1000)), "+%Y-%m-%dT%H:%M:%S"])
        .output()
        .expect("date");
    assert!(out.status.success());
    format!("{}.{:03}Z", String::from_utf8(out.stdout).unwrap().trim(), ms.rem_euclid(1000))
}

/// Every `<field>` of `object` that has a `<field>_iso` sibling agrees with it; returns the fields checked.
fn iso_siblings_agree(object: &Value) -> Vec<String> {
    let map = object.as_object().unwrap_or_else(|| panic!("not an object: {object}"));
    let mut checked = Vec::new();
    for (key, iso) in map.iter().filter(|(k, _)| k.ends_with("_iso")) {
        let field = key.strip_suffix("_iso").unwrap();
        match (&map[field], iso) {
            (Value::Null, Value::Null) => {}
            (ms, iso) => assert_eq!(iso.as_str().unwrap(), date_u(ms.as_i64().unwrap()), "`{key}` in {object}"),
        }
        checked.push(field.to_string());
    }
    checked.sort();
    checked
}

/// `exp list [--with-metrics]` with these filters.
fn listing(with_metrics: bool) -> ExperimentListRequest {
    ExperimentListRequest { with_metrics, ..ExperimentListRequest::default() }
}

#[tokio::test(flavor = "multi_thread")]
async fn lists_and_sessions_carry_metric_summaries_iso_times_and_reruns() {
    let f = initialised().await;
    let (app, d) = (&f.app, f.path());
    std::fs::write(d.join("base.yaml"), BASE).unwrap();
    std::fs::write(d.join("sweep.yaml"), SWEEP).unwrap();
    let baseline = json(&submit(app, &d.join("base.yaml"), true).await.unwrap());
    assert_eq!((baseline["id"].as_str(), baseline["status"].as_str()), (Some("e-1"), Some("COMPLETED")));
    let create = GoalCreateRequest {
        title: "faster".into(),
        metric: "step_time_s".into(),
        direction: None,
        target: None,
        baseline: Some("e-1".into()),
        priority: falcon_app::requests::DEFAULT_PRIORITY,
        workload: None,
        hardware: None,
    };
    let goal = json(&falcon_app::goals::GoalView::from(app.create_goal(&create).await.unwrap()));
    let gid = goal["id"].as_str().unwrap().to_string();
    let submitted = json(&submit_session(app, &d.join("sweep.yaml"), Some(&gid), None).await.unwrap());
    assert_eq!(submitted["status"], "COMPLETED", "{submitted:#}");

    // exp show: the record's and each transition's times twice.
    let shown = json(&show(app, "e-1", None).await.unwrap());
    assert_eq!(iso_siblings_agree(&shown), ["created", "updated"]);
    let history = shown["history"].as_array().unwrap();
    assert!(history.len() >= 3, "{history:?}");
    for t in history {
        assert_eq!(iso_siblings_agree(t), ["at"]);
    }

    // exp list without metrics: records with their ISO times, no metrics.
    let plain = list(app, listing(false)).await.unwrap();
    let items = plain["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    for item in items {
        assert!(item.get("metrics").is_none(), "metrics only when asked for: {item}");
        assert_eq!(iso_siblings_agree(item), ["created", "updated"]);
    }

    // With metrics: each row has the summaries `exp show` gives for it, so ranking needs no `exp show`.
    let listed = list(app, listing(true)).await.unwrap();
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.iter().map(|i| i["id"].as_str().unwrap()).collect::<Vec<_>>(), ["e-3", "e-2", "e-1"]);
    for item in items {
        let id = item["id"].as_str().unwrap();
        let show = json(&show(app, id, None).await.unwrap());
        assert_eq!(item["metrics"], show["metrics"], "{id}");
        let step = &item["metrics"]["step_time_s"];
        for field in ["count", "mean", "median", "p90", "min", "max", "last", "spread"] {
            assert!(step.get(field).is_some(), "{id}: `{field}` in {step}");
        }
        assert_eq!(step["count"], 18, "{id}: 20 steps less the default warm-up of 2");
        assert_eq!(item["metrics"]["loss"]["count"], 18);
    }
    // Pages keep them: the second page of one row too.
    let first = list(app, ExperimentListRequest { limit: 1, ..listing(true) }).await.unwrap();
    let cursor = first["next_cursor"].as_str().unwrap().to_string();
    let second = list(app, ExperimentListRequest { limit: 1, cursor: Some(cursor), ..listing(true) }).await.unwrap();
    assert_eq!(second["items"][0]["id"], "e-2");
    assert_eq!(second["items"][0]["metrics"], items[1]["metrics"]);
    // The table's median of each metric: `name median` to 4 significant digits.
    let median = items[0]["metrics"]["step_time_s"]["median"].as_f64().unwrap();
    let cell = format!("step_time_s {}", falcon_app::render::numbers::significant(Some(median), 4));
    assert!(cell.contains("step_time_s 0.101"), "{cell}");

    // session show: every experiment with its metrics and whether it re-runs the goal baseline's config.
    let request = falcon_app::requests::SessionShowRequest { id: "s-1".into(), metric: None };
    let detail = app.session_with_metric(request.session().unwrap(), request.metric.as_deref()).await.unwrap();
    let session = json(&detail);
    assert_eq!(session, submitted, "submitting and waiting gives what showing gives");
    assert_eq!(iso_siblings_agree(&session), ["created"]);
    assert_eq!(session["goal"], gid.as_str());
    let experiments = session["experiments"].as_array().unwrap();
    let rows: Vec<(&str, bool, &str)> = experiments
        .iter()
        .map(|e| {
            (e["id"].as_str().unwrap(), e["baseline_rerun"].as_bool().unwrap(), e["labels"]["role"].as_str().unwrap())
        })
        .collect();
    assert_eq!(rows, [("e-2", true, "sweep"), ("e-3", false, "sweep")], "batch 8 is the baseline's config again");
    assert_eq!(experiments[0]["config_hash"], baseline["config_hash"]);
    assert_eq!(experiments[0]["labels"]["team"], "perf", "the other labels are inherited");
    for (e, listed) in experiments.iter().zip([&items[1], &items[0]]) {
        assert_eq!(iso_siblings_agree(e), ["created", "updated"]);
        assert_eq!(e["metrics"], listed["metrics"], "{}", e["id"]);
    }
    let differences: Vec<(&str, &str)> = session["differences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["path"].as_str().unwrap(), r["group"].as_str().unwrap()))
        .collect();
    assert_eq!(differences, [("config.batch_size", "batch_sequence"), ("name", "bookkeeping")]);
    let shown = falcon_app::render::session::text(&detail);
    assert_eq!(shown.matches("re-run of baseline").count(), 1, "{shown}");
    assert!(shown.contains("step_time_s 0.101"), "{shown}");
    // Without the role label, the baseline is the only one `label role=baseline` finds.
    let baselines = list(app, ExperimentListRequest { label: vec!["role=baseline".into()], ..listing(false) });
    assert_eq!(baselines.await.unwrap()["items"].as_array().unwrap().len(), 1);

    // goal list: the goal's times twice (no claim: no lease).
    let r = GoalListRequest::default();
    let goals = json(&app.list_goals(None, r.cursor.as_deref(), r.page_size().unwrap()).await.unwrap());
    assert_eq!(iso_siblings_agree(&goals["items"][0]), ["created", "lease_expires", "updated"]);
    assert_eq!(goals["items"][0]["lease_expires_iso"], Value::Null);

    // exp diff: bookkeeping keeps its group in JSON, and is told apart from the configuration for the text.
    let diff_of = |a: &str, b: &str| {
        let (a, b) = ExperimentDiffRequest { a: a.into(), b: b.into() }.pair().unwrap();
        app.diff_experiments(a, b)
    };
    let changes = diff_of("e-1", "e-3").await.unwrap();
    let diff = json(&falcon_app::contract::DiffBody { changes: falcon_app::contract::changes(&changes) });
    let groups: Vec<(&str, &str)> = diff["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["path"].as_str().unwrap(), c["group"].as_str().unwrap()))
        .collect();
    assert_eq!(
        groups,
        [
            ("config.batch_size", "batch_sequence"),
            ("goal", "bookkeeping"),
            ("labels.role", "bookkeeping"),
            ("name", "bookkeeping")
        ]
    );
    let (config, bookkeeping) = split_bookkeeping(&changes);
    let lines =
        |changes: &[&falcon_app::experiments::Change]| changes.iter().map(|c| c.to_string()).collect::<Vec<_>>();
    assert_eq!(lines(&config), ["config.batch_size: 8 → 16"]);
    assert_eq!(
        lines(&bookkeeping),
        [
            format!("goal: (absent) → \"{gid}\""),
            "labels.role: \"baseline\" → \"sweep\"".to_string(),
            "name: \"base\" → \"base-batch_size16\"".to_string(),
        ]
    );
    let rerun = diff_of("e-1", "e-2").await.unwrap();
    let (config, bookkeeping) = split_bookkeeping(&rerun);
    assert!(config.is_empty() && !bookkeeping.is_empty(), "no configuration differences, only bookkeeping: {rerun:?}");
}
