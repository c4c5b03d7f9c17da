//! `falcon exp …` and `falcon goal …` at the process boundary, on the embedded defaults (SQLite, local artifacts,
//! local jobs): the exit codes of `exp submit --wait`, `exp compare --fail-on-regression`, clap's refusals, unknown
//! and finished experiments, refused specs (with file, line and column on stderr or in the JSON error envelope)
//! and goals that cannot be claimed or abandoned. The use case's outcomes (what is shown, listed, compared and
//! diffed; sessions, goals and pools) are tested in process in falcon-app/tests/it/experiments.rs.

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

/// The process boundary of `exp`: `submit --wait` exits 0, `compare --fail-on-regression` exits 5 on a regression
/// and 0 on an improvement, an unknown experiment exits 3 (named in the JSON error envelope), clap refuses a bad
/// `--cursor` or `--since` with 2, and cancelling a finished experiment exits 4. What is shown, listed, compared and
/// diffed is tested in process in falcon-app/tests/it/experiments.rs.
#[test]
fn submit_wait_show_list_compare_diff() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(falcon(dir.path(), &["init"]).status.code(), Some(0));
    let base = spec(dir.path(), "base", 100);
    let out = falcon(dir.path(), &["exp", "submit", &base, "--wait"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // Twice as slow: beyond what one run a side can be wrong about (±33 % with the default between-run floor).
    let slow = spec(dir.path(), "slow", 200);
    let out = falcon(dir.path(), &["exp", "submit", &slow, "--wait"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));

    assert_eq!(falcon(dir.path(), &["exp", "compare", "e-1", "e-2", "--fail-on-regression"]).status.code(), Some(5));
    assert_eq!(falcon(dir.path(), &["exp", "compare", "e-2", "e-1", "--fail-on-regression"]).status.code(), Some(0));
    let unknown = falcon(dir.path(), &["exp", "compare", "e-1", "e-99999", "--metric", "step_time_s", "--json"]);
    assert_eq!(unknown.status.code(), Some(3));
    assert!(json(&unknown)["error"]["message"].as_str().unwrap().contains("e-99999"), "names the missing one");

    assert_eq!(falcon(dir.path(), &["exp", "list", "--json", "--cursor", "nonsense"]).status.code(), Some(2));
    assert_eq!(falcon(dir.path(), &["exp", "list", "--since", "soon"]).status.code(), Some(2));
    assert_eq!(falcon(dir.path(), &["exp", "show", "e-99"]).status.code(), Some(3));
    assert_eq!(falcon(dir.path(), &["exp", "cancel", "e-1", "--json"]).status.code(), Some(4), "already finished");
    // `--tail N` reaches the request: the last line of each log; with `--follow` it is a usage error.
    let tails = falcon(dir.path(), &["exp", "logs", "e-1", "--tail", "1", "--json"]);
    assert_eq!(tails.status.code(), Some(0), "{}", String::from_utf8_lossy(&tails.stderr));
    let tails = json(&tails);
    assert!(tails.as_object().is_some_and(|m| !m.is_empty()), "{tails}");
    assert!(tails.as_object().unwrap().values().all(|t| t.as_str().unwrap().lines().count() <= 1), "{tails}");
    assert_eq!(falcon(dir.path(), &["exp", "logs", "e-1", "--tail", "1", "--follow"]).status.code(), Some(2));
}

/// The process boundary of refused specs: an invalid file exits 1 with `file:line:column:` at the start of the JSON
/// error envelope's message, or `file:line:` on stderr; a missing file exits 3. What the messages say and that
/// nothing is recorded are tested in process in falcon-app/tests/it/experiments.rs.
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
    assert!(message.starts_with("typo.yaml:3:1:"), "{message}");
    std::fs::write(
        dir.path().join("product.yaml"),
        "name: x\nscenario: benchmark\nworkload: {framework: jax, command: [python3]}\nconfig:\n  parallelism: {fsdp: 8}\nresources: {accelerator: v5litepod-16}\n",
    )
    .unwrap();
    let out = falcon(dir.path(), &["exp", "submit", "product.yaml"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("product.yaml:5:"), "{stderr}");
    assert_eq!(falcon(dir.path(), &["exp", "submit", "missing.yaml"]).status.code(), Some(3));
}

/// The process boundary of goal claims: with the only goal claimed, `goal claim --next` exits 3 (no open goal) and
/// claiming it for another owner exits 4; an achieved goal cannot be abandoned (4). Goals, sessions and pools
/// themselves are tested in process in falcon-app/tests/it/experiments.rs.
#[test]
fn goals_sessions_and_pools() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(falcon(dir.path(), &["init"]).status.code(), Some(0));
    let goal = json(&falcon(
        dir.path(),
        &["goal", "create", "--title", "faster steps", "--metric", "step_time_s", "--target", "0.11", "--json"],
    ));
    assert_eq!(goal["id"], "g-1");

    let claimed = falcon(dir.path(), &["goal", "claim", "--next", "--owner", "agent-a", "--json"]);
    assert_eq!(claimed.status.code(), Some(0), "{}", String::from_utf8_lossy(&claimed.stderr));
    let none = falcon(dir.path(), &["goal", "claim", "--next", "--owner", "agent-b", "--json"]);
    assert_eq!(none.status.code(), Some(3), "no open goal left");
    assert_eq!(
        falcon(dir.path(), &["goal", "claim", "g-1", "--owner", "agent-b"]).status.code(),
        Some(4),
        "held by agent-a"
    );
    assert_eq!(falcon(dir.path(), &["goal", "release", "g-1", "--owner", "agent-a"]).status.code(), Some(0));
    assert_eq!(falcon(dir.path(), &["goal", "achieve", "g-1", "--reason", "0.100 s"]).status.code(), Some(0));
    assert_eq!(falcon(dir.path(), &["goal", "abandon", "g-1"]).status.code(), Some(4));
}
