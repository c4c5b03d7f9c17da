//! Repeats and run-level verdicts from the command line: `session submit --repeats`, `exp compare` with a
//! session and a config-hash prefix per side, `goal compare` rows with verdicts and the baseline's re-runs
//! marked, and `exp history` by config-hash prefix (its table, and exit 3 for an unknown name or metric).

use crate::common;

use crate::common::{code, falcon, json};

#[test]
fn repeats_sessions_config_hashes_goal_rows_and_history() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(code(&falcon(dir.path(), &["init"])), 0);
    common::write_base_ms_spec(dir.path());
    std::fs::write(
        dir.path().join("sweep.yaml"),
        "base: base.yaml\nsweep:\n  config.base_ms: [100, 130]\nname_template: \"run-${config.base_ms}\"\nrepeats: 2\n",
    )
    .unwrap();
    let goal = ["goal", "create", "--title", "faster", "--metric", "step_time_s", "--target", "0.09", "--json"];
    assert_eq!(json(&falcon(dir.path(), &goal))["id"], "g-1");

    // --repeats replaces the file's `repeats: 2`: each point three times, one config hash per point.
    let out =
        falcon(dir.path(), &["session", "submit", "sweep.yaml", "--goal", "g-1", "--repeats", "3", "--wait", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let session = json(&out);
    let experiments = session["experiments"].as_array().unwrap();
    let names: Vec<&str> = experiments.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["run-100-r1", "run-100-r2", "run-100-r3", "run-130-r1", "run-130-r2", "run-130-r3"]);
    let hash = |i: usize| experiments[i]["config_hash"].as_str().unwrap().to_string();
    assert_eq!(hash(0), hash(2));
    assert_ne!(hash(0), hash(3));
    let slow_prefix = format!("config:{}", &hash(3)[..12]);

    // Three runs against three: the +30 % is a regression (one run a side could not tell).
    let cmp = json(&falcon(dir.path(), &["exp", "compare", "e-1,e-2,e-3", &slow_prefix, "--json"]));
    assert_eq!(cmp["verdict"], "regressed", "{cmp:#}");
    assert_eq!(cmp["runs"], serde_json::json!({"a": 3, "b": 3}));
    assert_eq!(cmp["sides"]["b"].as_array().unwrap().len(), 3);
    let single = json(&falcon(dir.path(), &["exp", "compare", "e-1", "e-4", "--json"]));
    assert_eq!(single["verdict"], "regressed", "the other runs of each hash give the noise: {single:#}");
    assert_eq!(single["between_run_cv"]["source"], "history");
    let text = falcon(dir.path(), &["exp", "compare", "s-1", &slow_prefix]);
    assert_eq!(code(&text), 0);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.starts_with("step_time_s: inconclusive") || text.starts_with("step_time_s: regressed"), "{text}");
    assert!(text.contains("6 vs 3 runs"), "the session's six runs against the three: {text}");
    assert_eq!(code(&falcon(dir.path(), &["exp", "compare", "config:zzzzzzzzzzzz", "e-1"])), 2);
    assert_eq!(code(&falcon(dir.path(), &["exp", "compare", "config:0123456789ab", "e-1"])), 3);

    // Goal rows: the baseline and its re-runs are marked; the other config carries a verdict.
    assert_eq!(code(&falcon(dir.path(), &["goal", "set-baseline", "g-1", "e-1"])), 0);
    let goal = json(&falcon(dir.path(), &["goal", "compare", "g-1", "--json"]));
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
    let table = falcon(dir.path(), &["goal", "compare", "g-1"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.contains("re-run of baseline") && table.contains("regressed, 3 vs 3 runs"), "{table}");

    // History by the 12-character prefix `exp list` prints.
    let prefix = &hash(0)[..12];
    let h = json(&falcon(dir.path(), &["exp", "history", "--config-hash", prefix, "--json"]));
    assert_eq!(h["points"].as_array().unwrap().len(), 3, "{h:#}");
    assert_eq!(h["changes"].as_array().unwrap().len(), 0);
    assert!(h["power_note"].as_str().is_some_and(|n| !n.is_empty()));
    let shown = falcon(dir.path(), &["exp", "history", "--config-hash", prefix]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("step_time_s: 3 run(s), 0 shift(s)") && shown.contains("▄▄▄"), "{shown}");
    assert_eq!(code(&falcon(dir.path(), &["exp", "history", "--name", "no-such-run"])), 3);
    assert_eq!(code(&falcon(dir.path(), &["exp", "history", "--config-hash", prefix, "--metric", "stepp"])), 3);
    assert_eq!(code(&falcon(dir.path(), &["exp", "history", "--config-hash", "xyz"])), 2);
}
