//! The requests every front end takes (`falcon_app::requests`), through the use cases: their defaults, bounds and
//! enum values are what the application does, whichever surface sent them.

use falcon_app::requests::{
    lease, top, ExperimentListRequest, GoalCreateRequest, GoalListRequest, PageRequest, DEFAULT_LEASE_S, DEFAULT_PAGE,
    MAX_LEASE_S, MAX_PAGE, MAX_TOP,
};
use falcon_core::status::{ExperimentStatus, GoalStatus, Scenario};
use falcon_core::ErrorKind;
use serde_json::json;

fn goal(i: usize) -> GoalCreateRequest {
    GoalCreateRequest {
        title: format!("goal {i}"),
        metric: "step_time_s".into(),
        direction: None,
        target: None,
        baseline: None,
        priority: i as i64,
        workload: None,
        hardware: None,
    }
}

/// A goal list without a page size pages at the one default; the cursor gives the rest; a page past the bound is
/// refused as usage.
#[tokio::test]
async fn the_goal_list_pages_at_the_one_default() {
    let h = super::harness::app().await;
    let n = DEFAULT_PAGE as usize + 10;
    for i in 0..n {
        h.app.create_goal(&goal(i)).await.unwrap();
    }
    let r = GoalListRequest::default();
    let first = h.app.list_goals(None, None, r.page_size().unwrap()).await.unwrap();
    assert_eq!(first.items.len(), DEFAULT_PAGE as usize);
    let cursor = first.next_cursor.expect("a second page");
    let rest = h.app.list_goals(None, Some(&cursor), r.page_size().unwrap()).await.unwrap();
    assert_eq!((rest.items.len(), rest.next_cursor), (10, None));
    let too_many = GoalListRequest { limit: MAX_PAGE + 1, ..GoalListRequest::default() };
    assert_eq!(too_many.page_size().unwrap_err().kind(), ErrorKind::Usage);
    // A claim with the default lease holds it; the status filter reads core's enum.
    let claimed = h.app.claim_goal(None, "agent", lease(DEFAULT_LEASE_S).unwrap()).await.unwrap();
    assert_eq!(claimed.status, GoalStatus::Claimed);
    let only: GoalListRequest = serde_json::from_value(json!({"status": "claimed"})).unwrap();
    let page = h.app.list_goals(only.status.map(|s| s.as_str()), None, only.page_size().unwrap()).await.unwrap();
    assert_eq!(page.items.len(), 1);
}

/// The experiment list's request: its default, its bound, core's enums read case-insensitively, unknown fields
/// and unknown values refused with what was expected.
#[tokio::test]
async fn the_experiment_list_request_is_what_the_list_does() {
    let h = super::harness::app().await;
    let r = ExperimentListRequest::default();
    assert_eq!(r.query().unwrap().limit, DEFAULT_PAGE);
    let page = h.app.list_experiments(&r.query().unwrap(), None).await.unwrap();
    assert!(page.items.is_empty() && page.next_cursor.is_none());
    let too_many = ExperimentListRequest { limit: MAX_PAGE + 1, ..ExperimentListRequest::default() };
    assert_eq!(too_many.query().unwrap_err().kind(), ErrorKind::Usage);
    let typed: ExperimentListRequest =
        serde_json::from_value(json!({"status": "completed", "scenario": "BENCHMARK", "label": "a=1"})).unwrap();
    assert_eq!(typed.status, Some(ExperimentStatus::Completed));
    assert_eq!(typed.scenario, Some(Scenario::Benchmark));
    assert_eq!(typed.label, ["a=1"]);
    let err = serde_json::from_value::<ExperimentListRequest>(json!({"scenario": "smoke"})).unwrap_err().to_string();
    assert!(err.contains("smoke") && err.contains("benchmark"), "{err}");
    assert!(serde_json::from_value::<ExperimentListRequest>(json!({"colour": "red"})).is_err());
}

/// `before` and a cursor both bound the ids from above; given together, like every other filter, they combine:
/// the lower one holds, whichever it is. A cursor that is no id is refused.
#[tokio::test]
async fn before_and_a_cursor_combine_the_lower_holding() {
    let h = super::harness::app().await;
    let spec = falcon_core::spec::parse_spec(
        "name: paging\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [true]\nresources: {accelerator: cpu}\n",
        "paging.yaml",
    )
    .unwrap();
    for _ in 0..6 {
        h.app.submit_experiment(&spec, false, None, |_| {}).await.unwrap();
    }
    let ids = |before: Option<&str>, cursor: Option<&str>| {
        let q = ExperimentListRequest { before: before.map(String::from), ..ExperimentListRequest::default() };
        let app = &h.app;
        let cursor = cursor.map(String::from);
        async move {
            let page = app.list_experiments(&q.query().unwrap(), cursor.as_deref()).await.unwrap();
            page.items.iter().map(|i| i.record.id.to_string()).collect::<Vec<_>>()
        }
    };
    assert_eq!(ids(Some("e-5"), Some("e-3")).await, ["e-2", "e-1"]);
    assert_eq!(ids(Some("e-3"), Some("e-5")).await, ["e-2", "e-1"]);
    assert_eq!(ids(None, Some("e-4")).await, ["e-3", "e-2", "e-1"]);
    assert_eq!(ids(Some("e-4"), None).await, ["e-3", "e-2", "e-1"]);
    let q = ExperimentListRequest::default().query().unwrap();
    let err = h.app.list_experiments(&q, Some("x-1")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Usage);
}

/// The bounds of the shared defaults: a lease of 1 s to 7 days, ranked rows 1 to 1000, a page 0 to 1000.
#[test]
fn the_shared_bounds_refuse_what_is_past_them() {
    for bad in [0, MAX_LEASE_S + 1] {
        assert_eq!(lease(bad).unwrap_err().kind(), ErrorKind::Usage, "lease {bad}");
    }
    assert_eq!(lease(MAX_LEASE_S).unwrap().as_secs(), MAX_LEASE_S);
    for bad in [0, MAX_TOP + 1] {
        assert_eq!(top(bad).unwrap_err().kind(), ErrorKind::Usage, "top {bad}");
    }
    assert_eq!(PageRequest { limit: 0, cursor: None }.page_size().unwrap(), 0);
    assert!(PageRequest { limit: MAX_PAGE + 1, cursor: None }.page_size().is_err());
}

/// A goal's creation: the one request type, its rules applied whichever front end built it (the CLI's flags
/// convert to it in process, the API and MCP read it from JSON): the default priority, the metric's direction
/// when none is given, a metric, baseline or priority its schema refuses refused by the use case too.
#[tokio::test]
async fn a_goal_create_request_is_checked_by_its_own_schema_on_every_path() {
    use falcon_app::requests::{read, DEFAULT_PRIORITY, MAX_PRIORITY};
    let h = super::harness::app().await;
    let r: GoalCreateRequest = read(json!({"title": "faster", "metric": "mfu"}).as_object().unwrap().clone()).unwrap();
    assert_eq!(r.priority, DEFAULT_PRIORITY);
    let g = h.app.create_goal(&r).await.unwrap();
    assert_eq!(g.direction.as_str(), "maximize", "mfu's standard direction");
    for (bad, says) in [
        (GoalCreateRequest { metric: "step time".into(), ..goal(1) }, "metric=step time"),
        (GoalCreateRequest { baseline: Some("12".into()), ..goal(1) }, "baseline=12"),
        (GoalCreateRequest { priority: MAX_PRIORITY + 1, ..goal(1) }, "priority=1000001: at most 1000000"),
        (GoalCreateRequest { title: " ".into(), ..goal(1) }, "title must not be empty"),
    ] {
        let err = h.app.create_goal(&bad).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Usage, "{bad:?}");
        assert!(err.to_string().contains(says), "{says}: {err}");
    }
    let typed: GoalCreateRequest =
        serde_json::from_value(json!({"title": "t", "metric": "loss", "direction": "MINIMIZE", "priority": 3.0}))
            .unwrap();
    assert_eq!((typed.direction.map(|d| d.as_str()), typed.priority), (Some("minimize"), 3));
}

/// A history's request: a series must be named, the metric is the one default unless named, and the schema's
/// rules hold on the CLI's path too.
#[tokio::test]
async fn a_history_request_names_its_series_and_takes_the_one_default_metric() {
    use falcon_app::requests::{read, ExperimentHistoryRequest, DEFAULT_METRIC};
    let h = super::harness::app().await;
    let r: ExperimentHistoryRequest = read(json!({"name": "train"}).as_object().unwrap().clone()).unwrap();
    assert_eq!(r.metric, DEFAULT_METRIC);
    let none = h.app.history(&r).await.unwrap_err();
    assert_eq!(none.kind(), ErrorKind::NotFound, "no runs of that name yet: {none}");
    let unnamed = ExperimentHistoryRequest { name: None, ..r.clone() };
    assert!(h.app.history(&unnamed).await.unwrap_err().to_string().contains("name the series"));
    let bad = ExperimentHistoryRequest { metric: "step time".into(), ..r };
    assert_eq!(h.app.history(&bad).await.unwrap_err().kind(), ErrorKind::Usage);
}

/// A claim and its close: one request type each, read from JSON as the API's body and MCP's arguments are, or
/// built by the CLI; the lease default and bound and the canonical goal id are the type's, on every path.
#[tokio::test]
async fn a_claim_and_its_close_take_the_one_lease_and_the_canonical_id() {
    use falcon_app::requests::{read, GoalClaimRequest, GoalCloseRequest};
    let h = super::harness::app().await;
    let g = h.app.create_goal(&goal(1)).await.unwrap();
    let r: GoalClaimRequest =
        read(json!({"id": g.id.to_string(), "owner": "agent-1"}).as_object().unwrap().clone()).unwrap();
    assert_eq!(r.lease_s, DEFAULT_LEASE_S);
    let (id, lease_for) = r.claim().unwrap();
    assert_eq!((id, lease_for.as_secs()), (Some(g.id), DEFAULT_LEASE_S));
    let claimed = h.app.claim_goal(id, "agent-1", lease_for).await.unwrap();
    assert_eq!(claimed.owner.as_deref(), Some("agent-1"));
    for (bad, says) in [
        (json!({"lease_s": MAX_LEASE_S + 1}), "lease_s"),
        (json!({"lease_s": 0}), "lease_s"),
        (json!({"id": "7"}), "id=7"),
        (json!({"owner": "  "}), "owner"),
        (json!({"lease": 60}), "lease"),
    ] {
        let err = read::<GoalClaimRequest>(bad.as_object().unwrap().clone()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Usage, "{bad}");
        assert!(err.to_string().contains(says), "{says}: {err}");
    }
    // Built in process, the same schema holds.
    let built = GoalClaimRequest { id: None, owner: None, lease_s: MAX_LEASE_S + 1 };
    assert_eq!(built.claim().unwrap_err().kind(), ErrorKind::Usage);
    let close: GoalCloseRequest =
        read(json!({"id": g.id.to_string(), "reason": null, "owner": "agent-1"}).as_object().unwrap().clone()).unwrap();
    let closed =
        h.app.close_goal(close.goal().unwrap(), GoalStatus::Achieved, &close.reason, close.owner.as_deref()).await;
    assert_eq!(closed.unwrap().status, GoalStatus::Achieved);
    let bare = GoalCloseRequest { id: "1".into(), ..close };
    assert_eq!(bare.goal().unwrap_err().kind(), ErrorKind::Usage, "a goal id in requests is g-N");
}

/// Showing an experiment or a session: the id as the CLI and MCP write it (`e-3` or `3`), the warm-up and the
/// grid's metric checked by the type.
#[test]
fn show_requests_take_both_id_spellings_and_check_their_options() {
    use falcon_app::requests::{read, ExperimentShowRequest, SessionShowRequest};
    for id in ["e-12", "12"] {
        let r: ExperimentShowRequest = read(json!({"id": id, "warmup": 3}).as_object().unwrap().clone()).unwrap();
        let (e, warmup) = r.show().unwrap();
        assert_eq!((e.to_string(), warmup), ("e-12".to_string(), Some(3)));
    }
    for bad in [json!({"id": "e-012"}), json!({"id": "e-1", "warmup": -1}), json!({"id": "e-1", "tail": 1})] {
        assert!(read::<ExperimentShowRequest>(bad.as_object().unwrap().clone()).is_err(), "{bad}");
    }
    let s: SessionShowRequest = read(json!({"id": "2", "metric": "loss"}).as_object().unwrap().clone()).unwrap();
    assert_eq!(s.session().unwrap().to_string(), "s-2");
    let err = read::<SessionShowRequest>(json!({"id": "s-2", "metric": "a b"}).as_object().unwrap().clone());
    assert_eq!(err.unwrap_err().kind(), ErrorKind::Usage);
}

/// The requests that name experiments or a goal: both id spellings, the page and ranked-rows bounds — the CLI's
/// `goal report --top 0` is refused as the API and MCP refuse it (it used to pass unchecked).
#[test]
fn id_requests_and_their_bounds_hold_on_every_path() {
    use falcon_app::requests::{
        read, ExperimentArtifactsRequest, ExperimentDiffRequest, ExperimentRef, GoalRef, GoalReportRequest, DEFAULT_TOP,
    };
    let (a, b) = ExperimentDiffRequest { a: "3".into(), b: "e-4".into() }.pair().unwrap();
    assert_eq!((a.to_string(), b.to_string()), ("e-3".into(), "e-4".into()));
    assert!(ExperimentDiffRequest { a: "e-3".into(), b: "x".into() }.pair().is_err());
    assert_eq!(ExperimentRef { id: "7".into() }.experiment().unwrap().to_string(), "e-7");
    assert_eq!(GoalRef { id: "g-2".into() }.goal().unwrap().to_string(), "g-2");
    let art: ExperimentArtifactsRequest = read(json!({"id": "e-1"}).as_object().unwrap().clone()).unwrap();
    assert_eq!(art.page().unwrap().1, DEFAULT_PAGE as usize);
    let over = ExperimentArtifactsRequest { limit: MAX_PAGE + 1, ..art };
    assert_eq!(over.page().unwrap_err().kind(), ErrorKind::Usage);
    let r: GoalReportRequest = read(json!({"id": "5"}).as_object().unwrap().clone()).unwrap();
    assert_eq!(r.report().unwrap().1, DEFAULT_TOP as usize);
    for top in [0, MAX_TOP + 1] {
        let bad = GoalReportRequest { top, ..r.clone() };
        assert_eq!(bad.report().unwrap_err().kind(), ErrorKind::Usage, "top {top}");
    }
}

/// The profile requests: the tool and analysis names their schemas list are the analysis' own (`Tool::ALL`,
/// `TraceAnalysis::ALL`, and `all`), an unknown one refused naming them; the comparison's rows bounded as every
/// ranked table's — the CLI's `profile compare --top 0` is refused as the API and MCP refuse it.
#[test]
fn profile_requests_list_the_analysis_own_names_and_bound_their_rows() {
    use falcon_app::profiles::{Tool, TraceAnalysis};
    use falcon_app::requests::{read, ProfileAnalyzeRequest, ProfileCompareRequest, ProfileTraceRequest};
    // The values a list's items may take, through the `$ref` to their definition.
    fn listed(schema: &serde_json::Value, field: &str) -> serde_json::Value {
        let items = &schema["properties"][field]["items"];
        match items["$ref"].as_str().and_then(|r| r.strip_prefix("#/$defs/")) {
            Some(name) => schema["$defs"][name]["enum"].clone(),
            None => items["enum"].clone(),
        }
    }
    let schema = serde_json::to_value(schemars::schema_for!(ProfileAnalyzeRequest)).unwrap();
    let expected: Vec<&str> = Tool::ALL.map(Tool::as_str).into_iter().chain(["all"]).collect();
    assert_eq!(listed(&schema, "tool"), json!(expected), "{schema:#}");
    let schema = serde_json::to_value(schemars::schema_for!(ProfileTraceRequest)).unwrap();
    let expected: Vec<&str> = TraceAnalysis::ALL.map(TraceAnalysis::as_str).into_iter().chain(["all"]).collect();
    assert_eq!(listed(&schema, "analysis"), json!(expected), "{schema:#}");

    let one: ProfileAnalyzeRequest = read(json!({"input": "e-1", "tool": "ops"}).as_object().unwrap().clone()).unwrap();
    assert_eq!(one.options().unwrap().tools, vec![Tool::ALL.into_iter().find(|t| t.as_str() == "ops").unwrap()]);
    let all: ProfileAnalyzeRequest = read(json!({"input": "e-1"}).as_object().unwrap().clone()).unwrap();
    assert!(all.options().unwrap().tools.is_empty(), "no tool named: every tool");
    let bad = ProfileAnalyzeRequest { tool: vec!["opz".into()], ..all };
    let err = bad.options().unwrap_err().to_string();
    assert!(err.contains("`opz`") && err.contains(Tool::ALL[0].as_str()), "{err}");
    let trace = ProfileTraceRequest { input: "t.json".into(), analysis: vec!["gapz".into()], host: None };
    assert!(trace.options().unwrap_err().to_string().contains("breakdown"), "the accepted names are listed");

    let cmp: ProfileCompareRequest = read(json!({"a": "e-1", "b": "e-2"}).as_object().unwrap().clone()).unwrap();
    assert_eq!(cmp.options().unwrap().top, falcon_app::requests::DEFAULT_TOP as usize);
    for top in [0, MAX_TOP + 1] {
        assert_eq!(ProfileCompareRequest { top, ..cmp.clone() }.options().unwrap_err().kind(), ErrorKind::Usage);
    }
}
