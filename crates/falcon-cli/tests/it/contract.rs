//! The JSON contract, pinned: the OpenAPI document `falcon serve` publishes and the MCP tool list (each tool's input
//! and output schema) are compared with the snapshots committed in `contract/`. Both are derived from the Rust
//! types every front end serialises (`--json`, the HTTP bodies, MCP's structured results), so renaming or
//! retyping a field anywhere under them — in `falcon-analysis`, `falcon-exp`, `falcon-app` — changes a snapshot and
//! fails here: a visible, reviewed change. To accept a change on purpose:
//!
//! ```sh
//! FALCON_UPDATE_CONTRACT=1 cargo test -p falcon-cli --test it contract
//! ```
//!
//! and commit the diff of `contract/` with the change (docs/guide/json-contract.md says what may change).

use serde_json::{json, Value};
use std::path::PathBuf;

fn snapshot(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../contract").join(name)
}

/// Compares `now` with the committed snapshot (or writes it when asked), naming the first paths that differ.
fn pinned(name: &str, now: &Value) {
    let path = snapshot(name);
    let text = serde_json::to_string_pretty(now).unwrap() + "\n";
    if std::env::var_os("FALCON_UPDATE_CONTRACT").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (FALCON_UPDATE_CONTRACT=1 writes it)", path.display()));
    let was: Value = serde_json::from_str(&committed).unwrap();
    let mut diffs = Vec::new();
    differences("", &was, now, &mut diffs);
    assert!(
        diffs.is_empty(),
        "the JSON contract changed ({}): {} difference(s), first:\n  {}\nIf this is meant, rerun with \
         FALCON_UPDATE_CONTRACT=1 and commit contract/.",
        path.display(),
        diffs.len(),
        diffs.iter().take(20).cloned().collect::<Vec<_>>().join("\n  ")
    );
}

fn differences(at: &str, was: &Value, now: &Value, out: &mut Vec<String>) {
    match (was, now) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                match b.get(k) {
                    Some(w) => differences(&format!("{at}/{k}"), v, w, out),
                    None => out.push(format!("{at}/{k}: removed")),
                }
            }
            for k in b.keys().filter(|k| !a.contains_key(*k)) {
                out.push(format!("{at}/{k}: added"));
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                differences(&format!("{at}/{i}"), v, w, out);
            }
        }
        _ if was != now => out.push(format!("{at}: {} → {}", short(was), short(now))),
        _ => {}
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 120 {
        format!("{}…", s.chars().take(120).collect::<String>())
    } else {
        s
    }
}

#[test]
fn the_openapi_document_is_the_committed_contract() {
    pinned("openapi.json", &falcon_api::openapi::document());
}

#[test]
fn the_mcp_tools_are_the_committed_contract() {
    let tools: Vec<Value> = falcon_mcp::tools::offered(false)
        .map(|t| {
            json!({
                "name": t.name,
                "title": t.title,
                "writes": t.writes,
                "input_schema": (t.input)(),
                "output_schema": (t.output)(),
            })
        })
        .collect();
    pinned("mcp_tools.json", &Value::Array(tools));
}

/// The comparison can fail: a renamed field is reported with its path, as removed and added.
#[test]
fn a_renamed_field_is_a_difference() {
    let was = json!({"components": {"schemas": {"Overview": {"properties": {"mfu": {"type": "number"}}}}}});
    let now = json!({"components": {"schemas": {"Overview": {"properties": {"flops_share": {"type": "number"}}}}}});
    let mut diffs = Vec::new();
    differences("", &was, &now, &mut diffs);
    assert_eq!(
        diffs,
        [
            "/components/schemas/Overview/properties/mfu: removed",
            "/components/schemas/Overview/properties/flops_share: added"
        ]
    );
}

/// A use case's request is declared once (`falcon_app::requests`): the page size's default and the scenario and
/// status values the CLI's help, the OpenAPI document and the MCP tool's schema show are the type's, so changing
/// them there changes every surface (they had drifted: MCP's page was 20, its scenarios names that do not exist).
#[test]
fn the_list_request_is_declared_once_for_every_surface() {
    use falcon_app::requests::DEFAULT_PAGE;
    use falcon_core::status::{ExperimentStatus, Scenario};
    let scenarios: Vec<Value> = Scenario::ALL.iter().map(|s| s.as_str().into()).collect();
    let statuses: Vec<Value> = ExperimentStatus::ALL.iter().map(|s| s.as_str().into()).collect();
    let values = |schema: &Value, defs: &Value| -> Vec<Value> {
        // An optional enum is `anyOf [it, null]`; it is inline or a `$ref` into the definitions.
        let s = schema.pointer("/anyOf/0").unwrap_or(schema);
        let s = match s.get("$ref").and_then(Value::as_str) {
            Some(r) => defs.get(r.rsplit('/').next().unwrap()).unwrap_or(s),
            None => s,
        };
        // Its values: `enum`, or a documented enum's `oneOf` of `const`s.
        match s.get("enum").and_then(Value::as_array) {
            Some(e) => e.clone(),
            None => s
                .get("oneOf")
                .and_then(Value::as_array)
                .map_or(Vec::new(), |o| o.iter().map(|v| v["const"].clone()).collect()),
        }
    };

    let doc = falcon_api::openapi::document();
    let params = doc.pointer("/paths/~1api~1v1~1experiments/get/parameters").and_then(Value::as_array).unwrap();
    let param =
        |n: &str| params.iter().find(|p| p["name"] == n).unwrap_or_else(|| panic!("no `{n}`"))["schema"].clone();
    let no_defs = Value::Null;
    assert_eq!(param("limit")["default"], DEFAULT_PAGE, "OpenAPI");
    assert_eq!(values(&param("scenario"), &no_defs), scenarios, "OpenAPI");
    assert_eq!(values(&param("status"), &no_defs), statuses, "OpenAPI");

    let tool = falcon_mcp::tools::offered(false).find(|t| t.name == "exp_list").unwrap();
    let input = (tool.input)();
    let defs = input.get("$defs").cloned().unwrap_or(Value::Null);
    assert_eq!(input["properties"]["limit"]["default"], DEFAULT_PAGE, "MCP");
    assert_eq!(values(&input["properties"]["scenario"], &defs), scenarios, "MCP");
    assert_eq!(values(&input["properties"]["status"], &defs), statuses, "MCP");

    // The goal list likewise (its page was 1000 from the CLI, 50 from the API and MCP).
    let goal_statuses: Vec<Value> = falcon_core::status::GoalStatus::ALL.iter().map(|s| s.as_str().into()).collect();
    let goals = doc.pointer("/paths/~1api~1v1~1goals/get/parameters").and_then(Value::as_array).unwrap();
    let goal_param = |n: &str| goals.iter().find(|p| p["name"] == n).unwrap()["schema"].clone();
    assert_eq!(goal_param("limit")["default"], DEFAULT_PAGE, "OpenAPI goals");
    assert_eq!(values(&goal_param("status"), &no_defs), goal_statuses, "OpenAPI goals");
    let tool = falcon_mcp::tools::offered(false).find(|t| t.name == "goal_list").unwrap();
    let goal_input = (tool.input)();
    assert_eq!(goal_input["properties"]["limit"]["default"], DEFAULT_PAGE, "MCP goals");
    assert_eq!(values(&goal_input["properties"]["status"], &no_defs), goal_statuses, "MCP goals");
    let goal_help = help_of(&["goal", "list", "--help"]);
    assert!(goal_help.contains(&format!("[default: {DEFAULT_PAGE}]")), "CLI goal help: {goal_help}");

    // And a list without filters (pools: its page was 1000 from the CLI and the API, 50 from MCP).
    let pools = doc.pointer("/paths/~1api~1v1~1pools/get/parameters").and_then(Value::as_array).unwrap();
    let pool_limit = pools.iter().find(|p| p["name"] == "limit").unwrap()["schema"]["default"].clone();
    assert_eq!(pool_limit, DEFAULT_PAGE, "OpenAPI pools");
    let tool = falcon_mcp::tools::offered(false).find(|t| t.name == "pool_list").unwrap();
    assert_eq!((tool.input)()["properties"]["limit"]["default"], DEFAULT_PAGE, "MCP pools");
    let pool_help = help_of(&["pool", "list", "--help"]);
    assert!(pool_help.contains(&format!("[default: {DEFAULT_PAGE}]")), "CLI pool help: {pool_help}");

    let help = help_of(&["exp", "list", "--help"]);
    assert!(help.contains(&format!("[default: {DEFAULT_PAGE}]")), "CLI help: {help}");
}

/// The profile tools are named once (`Tool`): the MCP schema's values, the OpenAPI pattern and the CLI's possible
/// values are its names and `all` (they were spelled out by hand in seven places).
#[test]
fn the_profile_tools_are_named_once_for_every_surface() {
    use falcon_app::profiles::Tool;
    let mut names: Vec<&str> = Tool::ALL.map(Tool::as_str).to_vec();
    names.push("all");
    let tool = falcon_mcp::tools::offered(false).find(|t| t.name == "profile_analyze").unwrap();
    let input = Value::Object((tool.input)());
    let one = input.pointer("/properties/tool/items/enum");
    assert_eq!(
        one.and_then(Value::as_array).map(|a| a.iter().map(|v| v.as_str().unwrap()).collect::<Vec<_>>()),
        Some(names.clone()),
        "MCP: {input}"
    );
    let doc = falcon_api::openapi::document();
    let params = doc.pointer("/paths/~1api~1v1~1profiles~1{exp}/get/parameters").and_then(Value::as_array).unwrap();
    let pattern =
        params.iter().find(|p| p["name"] == "tool").unwrap()["schema"]["pattern"].as_str().unwrap().to_string();
    assert!(pattern.starts_with(&format!("^({})", names.join("|"))), "OpenAPI: {pattern}");
    let help = help_of(&["profile", "analyze", "--help"]);
    assert!(help.contains(&format!("[possible values: {}]", names.join(", "))), "CLI help: {help}");
}

/// A goal claim's lease: its default and bound written once (`falcon_app::requests`); MCP took any length, the API
/// up to 7 days.
#[test]
fn the_claim_lease_is_declared_once_for_every_surface() {
    use falcon_app::requests::{DEFAULT_LEASE_S, MAX_LEASE_S};
    let doc = falcon_api::openapi::document();
    let body = doc.pointer("/paths/~1api~1v1~1goals~1claim/post/requestBody/content/application~1json/schema").unwrap();
    let body = match body.get("$ref").and_then(Value::as_str) {
        Some(r) => doc.pointer(&r.trim_start_matches('#').replace("~", "~0")).unwrap().clone(),
        None => body.clone(),
    };
    assert_eq!(body["properties"]["lease_s"]["default"], DEFAULT_LEASE_S, "OpenAPI: {body}");
    assert_eq!(body["properties"]["lease_s"]["maximum"], MAX_LEASE_S, "OpenAPI: {body}");
    let tool = falcon_mcp::tools::offered(false).find(|t| t.name == "goal_claim").unwrap();
    let input = (tool.input)();
    assert_eq!(input["properties"]["lease_s"]["default"], DEFAULT_LEASE_S, "MCP");
    assert_eq!(input["properties"]["lease_s"]["maximum"], MAX_LEASE_S, "MCP");
    let help = help_of(&["goal", "claim", "--help"]);
    assert!(help.contains(&format!("[default: {DEFAULT_LEASE_S}]")), "CLI help: {help}");
}

/// A ranked table's rows: the default and bound written once; the API's profile comparison ranked 20 by default,
/// every other surface 10.
#[test]
fn the_ranked_rows_are_declared_once_for_every_surface() {
    use falcon_app::requests::{DEFAULT_TOP, MAX_TOP};
    let doc = falcon_api::openapi::document();
    for path in [
        "/paths/~1api~1v1~1goals~1{id}~1report/get/parameters",
        "/paths/~1api~1v1~1profiles~1{a}~1compare~1{b}/get/parameters",
    ] {
        let params = doc.pointer(path).and_then(Value::as_array).unwrap();
        let top = &params.iter().find(|p| p["name"] == "top").unwrap()["schema"];
        assert_eq!(
            (top["default"].clone(), top["maximum"].clone()),
            (json!(DEFAULT_TOP), json!(MAX_TOP)),
            "OpenAPI {path}"
        );
    }
    for name in ["goal_report", "profile_compare"] {
        let tool = falcon_mcp::tools::offered(false).find(|t| t.name == name).unwrap();
        let input = (tool.input)();
        assert_eq!(input["properties"]["top"]["default"], DEFAULT_TOP, "MCP {name}");
        assert_eq!(input["properties"]["top"]["maximum"], MAX_TOP, "MCP {name}");
    }
    for args in [["goal", "report", "--help"], ["profile", "compare", "--help"]] {
        let help = help_of(&args);
        let top = help.split("--top").nth(1).unwrap_or_else(|| panic!("{args:?}: no --top in {help}"));
        assert!(top.contains(&format!("[default: {DEFAULT_TOP}]")), "CLI {args:?}: {top}");
    }
}

/// The metric a comparison or history reads by default: written once (`DEFAULT_METRIC`), shown by the OpenAPI
/// compare parameter, the MCP `exp_compare` and `exp_history` schemas and the CLI's help.
#[test]
fn the_default_metric_is_declared_once_for_every_surface() {
    use falcon_app::requests::DEFAULT_METRIC;
    let doc = falcon_api::openapi::document();
    let params =
        doc.pointer("/paths/~1api~1v1~1experiments~1{a}~1compare~1{b}/get/parameters").and_then(Value::as_array);
    let metric = &params.unwrap().iter().find(|p| p["name"] == "metric").unwrap()["schema"];
    assert_eq!(metric["default"], DEFAULT_METRIC, "OpenAPI");
    for name in ["exp_compare", "exp_history"] {
        let tool = falcon_mcp::tools::offered(false).find(|t| t.name == name).unwrap();
        assert_eq!((tool.input)()["properties"]["metric"]["default"], DEFAULT_METRIC, "MCP {name}");
    }
    for args in [["exp", "compare", "--help"], ["exp", "history", "--help"]] {
        let help = help_of(&args);
        let metric = help.split("--metric").nth(1).unwrap_or_else(|| panic!("{args:?}: no --metric in {help}"));
        assert!(metric.contains(&format!("[default: {DEFAULT_METRIC}]")), "CLI {args:?}: {metric}");
    }
}

/// `falcon ARGS --help` as one line: its words, one space apart (help wraps at the terminal's width).
fn help_of(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_falcon")).args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A goal's creation is declared once (`GoalCreateRequest`): the priority's default and bound and the direction's
/// values the OpenAPI body, the MCP schema and the CLI's help show are the type's (MCP took any priority and any
/// direction text, the API's body was its own type with its own rules).
#[test]
fn the_goal_create_request_is_declared_once_for_every_surface() {
    use falcon_app::requests::{DEFAULT_PRIORITY, MAX_PRIORITY};
    let directions: Vec<Value> =
        falcon_core::status::Direction::ALL.iter().map(|d| d.as_str().into()).collect::<Vec<_>>();
    let doc = falcon_api::openapi::document();
    let body = doc.pointer("/paths/~1api~1v1~1goals/post/requestBody/content/application~1json/schema").unwrap();
    let body = match body.get("$ref").and_then(Value::as_str) {
        Some(r) => doc.pointer(&r.trim_start_matches('#').replace("~", "~0")).unwrap().clone(),
        None => body.clone(),
    };
    let tool = falcon_mcp::tools::offered(false).find(|t| t.name == "goal_create").unwrap();
    let input = Value::Object((tool.input)());
    for (surface, schema) in [("OpenAPI", &body), ("MCP", &input)] {
        let p = &schema["properties"]["priority"];
        assert_eq!(
            (p["default"].clone(), p["maximum"].clone(), p["minimum"].clone()),
            (json!(DEFAULT_PRIORITY), json!(MAX_PRIORITY), json!(-MAX_PRIORITY)),
            "{surface}: {p}"
        );
        let text = schema.to_string();
        for d in &directions {
            assert!(text.contains(&d.to_string()), "{surface}: no direction {d} in {text}");
        }
    }
    let help = help_of(&["goal", "create", "--help"]);
    let priority = help.split("--priority").nth(1).unwrap_or_else(|| panic!("no --priority in {help}"));
    assert!(priority.contains(&format!("[default: {DEFAULT_PRIORITY}]")), "CLI: {priority}");
    let direction = help.split("--direction").nth(1).unwrap_or_else(|| panic!("no --direction in {help}"));
    assert!(direction.contains("[possible values: maximize, minimize]"), "CLI: {direction}");
}
