//! Repeats and run-level verdicts at the process boundary: after `session submit --repeats`, the text `goal compare`
//! and `exp history` print, and the exit codes of a config-hash side clap refuses (2), one that matches nothing
//! (3), an unknown name or metric for `exp history` (3). The use case's outcomes (repeats, comparisons with a
//! session and a config-hash prefix per side, goal rows with verdicts, a metric's history) are tested in process in
//! falcon-app/tests/it/run_level.rs.

use crate::common;

use crate::common::{code, falcon, json};

/// The process boundary of run-level verdicts: the text of `exp history` and `goal compare`, and the exit codes of
/// bad config-hash sides and unknown history queries. The verdicts and the history are tested in process in
/// falcon-app/tests/it/run_level.rs.
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

    // Each point three times, one config hash per point.
    let out =
        falcon(dir.path(), &["session", "submit", "sweep.yaml", "--goal", "g-1", "--repeats", "3", "--wait", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let session = json(&out);
    let hash = session["experiments"][0]["config_hash"].as_str().unwrap().to_string();

    assert_eq!(code(&falcon(dir.path(), &["exp", "compare", "config:zzzzzzzzzzzz", "e-1"])), 2);
    assert_eq!(code(&falcon(dir.path(), &["exp", "compare", "config:0123456789ab", "e-1"])), 3);

    // Goal rows: the baseline's re-runs are marked; the other config carries a verdict.
    assert_eq!(code(&falcon(dir.path(), &["goal", "set-baseline", "g-1", "e-1"])), 0);
    let table = falcon(dir.path(), &["goal", "compare", "g-1"]);
    assert_eq!(code(&table), 0, "{}", String::from_utf8_lossy(&table.stderr));
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.contains("re-run of baseline") && table.contains("regressed, 3 vs 3 runs"), "{table}");

    // History by the 12-character prefix `exp list` prints.
    let prefix = &hash[..12];
    let shown = falcon(dir.path(), &["exp", "history", "--config-hash", prefix]);
    assert_eq!(code(&shown), 0, "{}", String::from_utf8_lossy(&shown.stderr));
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("step_time_s: 3 run(s), 0 shift(s)"), "{shown}");
    assert_eq!(code(&falcon(dir.path(), &["exp", "history", "--name", "no-such-run"])), 3);
    assert_eq!(code(&falcon(dir.path(), &["exp", "history", "--config-hash", prefix, "--metric", "stepp"])), 3);
    assert_eq!(code(&falcon(dir.path(), &["exp", "history", "--config-hash", "xyz"])), 2);
}
