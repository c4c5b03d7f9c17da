//! `falcon exp …` as a user runs it, on the embedded defaults (SQLite, local artifacts, local jobs).

use crate::common;

use crate::common::{falcon, json};
use std::path::Path;

fn spec(dir: &Path, name: &str, base_ms: u32) -> String {
    let text = format!(
        "name: {name}\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'for i in $(seq 0 19); do \
         echo \"{{\\\"step\\\": $i, \\\"step_time_s\\\": 0.$(({base_ms} + i % 3))}}\" >> $FALCON_ARTIFACT_DIR/metrics.jsonl; done']\n\
         config: {{batch_size: 8}}\nresources: {{accelerator: cpu}}\n"
    );
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn submit_wait_show_list_compare_diff() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(falcon(dir.path(), &["init"]).status.code(), Some(0));
    let base = spec(dir.path(), "base", 100);
    let out = falcon(dir.path(), &["exp", "submit", &base, "--wait", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let shown = json(&out);
    for field in ["id", "name", "status", "scenario", "config_hash", "spec", "history", "artifacts", "metrics"] {
        assert!(shown.get(field).is_some(), "exp show JSON has `{field}`: {shown:#}");
    }
    assert_eq!(shown["status"], "COMPLETED");
    assert_eq!(shown["metrics"]["step_time_s"]["count"], 18);
    let artifact = &shown["artifacts"][0];
    for field in ["kind", "uri", "size", "sha256"] {
        assert!(artifact.get(field).is_some(), "{artifact:#}");
    }
    let history = shown["history"].as_array().unwrap();
    assert!(history.iter().all(|t| t.get("from").is_some()
        && t.get("to").is_some()
        && t.get("at").is_some()
        && t.get("reason").is_some()));

    // Twice as slow: beyond what one run a side can be wrong about (±33 % with the default between-run floor).
    let slow = spec(dir.path(), "slow", 200);
    assert_eq!(falcon(dir.path(), &["exp", "submit", &slow, "--wait"]).status.code(), Some(0));
    let list = json(&falcon(dir.path(), &["exp", "list", "--json", "--status", "completed"]));
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
    assert_eq!(list["items"][0]["name"], "slow", "newest first");
    assert_eq!(list["next_cursor"], serde_json::Value::Null, "one page holds both");
    assert_eq!(
        json(&falcon(dir.path(), &["exp", "list", "--json", "--since", "1h"]))["items"].as_array().unwrap().len(),
        2
    );
    let page = json(&falcon(dir.path(), &["exp", "list", "--json", "--limit", "1", "--before", "e-2"]));
    assert_eq!(page["items"][0]["id"], "e-1", "--before");
    // Cursor pagination: page 1 names the cursor of page 2, which is the last.
    let first = json(&falcon(dir.path(), &["exp", "list", "--json", "--limit", "1"]));
    assert_eq!(first["items"][0]["id"], "e-2");
    let cursor = first["next_cursor"].as_str().expect("a second page").to_string();
    let second = json(&falcon(dir.path(), &["exp", "list", "--json", "--limit", "1", "--cursor", &cursor]));
    assert_eq!(second["items"][0]["id"], "e-1");
    assert_eq!(second["next_cursor"], serde_json::Value::Null);
    let none = json(&falcon(dir.path(), &["exp", "list", "--json", "--limit", "0"]));
    assert_eq!(none["items"].as_array().unwrap().len(), 0, "--limit 0 returns no rows");
    assert_eq!(falcon(dir.path(), &["exp", "list", "--json", "--cursor", "nonsense"]).status.code(), Some(2));
    let unknown = falcon(dir.path(), &["exp", "compare", "e-1", "e-99999", "--metric", "step_time_s", "--json"]);
    assert_eq!(unknown.status.code(), Some(3));
    assert!(json(&unknown)["error"]["message"].as_str().unwrap().contains("e-99999"), "names the missing one");
    assert_eq!(falcon(dir.path(), &["exp", "list", "--since", "soon"]).status.code(), Some(2));

    let out = falcon(dir.path(), &["exp", "compare", "e-1", "e-2", "--json"]);
    let verdict = json(&out);
    for field in [
        "metric",
        "direction",
        "verdict",
        "a",
        "b",
        "delta_rel",
        "ci_low_rel",
        "ci_high_rel",
        "p_value",
        "runs",
        "between_run_cv",
        "repeats_needed",
        "sides",
        "noise_history",
    ] {
        assert!(verdict.get(field).is_some(), "{verdict:#}");
    }
    assert_eq!(verdict["verdict"], "regressed");
    assert_eq!(verdict["runs"], serde_json::json!({"a": 1, "b": 1}), "one run a side");
    assert_eq!(verdict["between_run_cv"]["source"], "default", "no repeats, no history: the documented floor");
    assert_eq!(verdict["sides"]["b"][0]["experiment"], "e-2");
    assert_eq!(falcon(dir.path(), &["exp", "compare", "e-1", "e-2", "--fail-on-regression"]).status.code(), Some(5));
    assert_eq!(falcon(dir.path(), &["exp", "compare", "e-2", "e-1", "--fail-on-regression"]).status.code(), Some(0));

    let diff = json(&falcon(dir.path(), &["exp", "diff", "e-1", "e-2", "--json"]));
    let changes = diff["changes"].as_array().unwrap();
    assert!(
        changes.iter().any(|c| c["path"] == "name" && c["kind"] == "changed" && c["a"] == "base" && c["b"] == "slow"),
        "{diff:#}"
    );

    let all_steps = json(&falcon(dir.path(), &["exp", "show", "e-1", "--warmup", "0", "--json"]));
    assert_eq!(all_steps["metrics"]["step_time_s"]["count"], 20, "--warmup 0 keeps every step");

    let logs = falcon(dir.path(), &["exp", "logs", "e-1"]);
    assert_eq!(logs.status.code(), Some(0));
    assert_eq!(falcon(dir.path(), &["exp", "show", "e-99"]).status.code(), Some(3));
    assert_eq!(falcon(dir.path(), &["exp", "cancel", "e-1", "--json"]).status.code(), Some(4), "already finished");
}

#[test]
fn bad_specs_are_refused_with_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(falcon(dir.path(), &["init"]).status.code(), Some(0));
    std::fs::write(dir.path().join("typo.yaml"), "name: x\nscenario: benchmark\nresouces: {accelerator: cpu}\n")
        .unwrap();
    let out = falcon(dir.path(), &["exp", "submit", "typo.yaml", "--json"]);
    assert_eq!(out.status.code(), Some(1), "an invalid file is a failure (docs/DESIGN.md §6)");
    let err = json(&out);
    let message = err["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("typo.yaml:3:1:") && message.contains("did you mean `resources`"), "{message}");
    std::fs::write(
        dir.path().join("product.yaml"),
        "name: x\nscenario: benchmark\nworkload: {framework: jax, command: [python3]}\nconfig:\n  parallelism: {fsdp: 8}\nresources: {accelerator: v5litepod-16}\n",
    )
    .unwrap();
    let out = falcon(dir.path(), &["exp", "submit", "product.yaml"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("product.yaml:5:") && stderr.contains("config.parallelism") && stderr.contains("16"),
        "{stderr}"
    );
    assert_eq!(falcon(dir.path(), &["exp", "submit", "missing.yaml"]).status.code(), Some(3));
    let list = json(&falcon(dir.path(), &["exp", "list", "--json"]));
    assert!(list["items"].as_array().unwrap().is_empty(), "nothing recorded for refused specs");
}

#[test]
fn goals_sessions_and_pools() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(falcon(dir.path(), &["init"]).status.code(), Some(0));
    let goal = json(&falcon(
        dir.path(),
        &["goal", "create", "--title", "faster steps", "--metric", "step_time_s", "--target", "0.11", "--json"],
    ));
    assert_eq!(
        (goal["id"].as_str(), goal["direction"].as_str(), goal["status"].as_str()),
        (Some("g-1"), Some("minimize"), Some("OPEN"))
    );

    common::write_base_ms_spec(dir.path());
    std::fs::write(
        dir.path().join("sweep.yaml"),
        "base: base.yaml\nsweep:\n  config.base_ms: [100, 130]\nname_template: \"run-${config.base_ms}\"\n",
    )
    .unwrap();
    let out = falcon(dir.path(), &["session", "submit", "sweep.yaml", "--goal", "g-1", "--wait", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let session = json(&out);
    assert_eq!(session["status"], "COMPLETED", "{session:#}");
    let names: Vec<_> =
        session["experiments"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(names, ["run-100", "run-130"]);
    let diffs = session["differences"].as_array().unwrap();
    assert!(diffs.iter().any(|d| d["path"] == "config.base_ms"), "{diffs:?}");
    assert!(!diffs.iter().any(|d| d["path"] == "resources.accelerator"), "only keys that differ");

    let cmp = json(&falcon(dir.path(), &["goal", "compare", "g-1", "--json"]));
    let rows = cmp["rows"].as_array().unwrap();
    assert_eq!(rows[0]["name"], "run-100", "{cmp:#}");
    assert_eq!(rows[0]["rank"], 1);
    assert_eq!(rows[0]["meets_target"], true);
    assert_eq!(rows[1]["meets_target"], false);

    let claimed = json(&falcon(dir.path(), &["goal", "claim", "--next", "--owner", "agent-a", "--json"]));
    assert_eq!((claimed["status"].as_str(), claimed["owner"].as_str()), (Some("CLAIMED"), Some("agent-a")));
    let none = falcon(dir.path(), &["goal", "claim", "--next", "--owner", "agent-b", "--json"]);
    assert_eq!(none.status.code(), Some(3), "no open goal left");
    assert_eq!(
        falcon(dir.path(), &["goal", "claim", "g-1", "--owner", "agent-b"]).status.code(),
        Some(4),
        "held by agent-a"
    );
    let released = json(&falcon(dir.path(), &["goal", "release", "g-1", "--owner", "agent-a", "--json"]));
    assert_eq!(released["status"], "OPEN");
    let achieved = json(&falcon(dir.path(), &["goal", "achieve", "g-1", "--reason", "0.100 s", "--json"]));
    assert_eq!(achieved["status"], "ACHIEVED");
    assert_eq!(falcon(dir.path(), &["goal", "abandon", "g-1"]).status.code(), Some(4));

    let pools = json(&falcon(dir.path(), &["pool", "list", "--json"]));
    assert_eq!(pools["items"][0]["name"], "local");
    assert_eq!(pools["items"][0]["used"], 0);
    assert_eq!(pools["next_cursor"], serde_json::Value::Null);
}
