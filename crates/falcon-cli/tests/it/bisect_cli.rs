//! `falcon bisect` as a user runs it: started in one process that returns (a caller that goes away), carried to its
//! answer by another with `--session … --wait` (the session is the state), the JSON the checks read, the exit
//! status of `--fail-on-culprit`, the text; `exp show` of a run names its commit; the API takes a URL only.

use super::common::{code, falcon, json};
use serde_json::Value;
use std::path::Path;

fn make_repo(dest: &Path, args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bisect/make-repo.sh");
    let out = std::process::Command::new("bash").arg(&script).arg(dest).args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_bisection_started_by_one_caller_is_finished_by_another() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(code(&falcon(d, &["init"])), 0);
    let repo = make_repo(&d.join("repo"), &["--commits", "8", "--culprit", "5", "--noise", "0.02"]);
    // The first caller starts it and goes away: the ends' runs are submitted, nothing waits for them.
    let out = falcon(d, &["bisect", "repo/falcon.yaml", "--good", "v-good", "--bad", "v-bad", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let started = json(&out);
    assert_eq!(
        (started["state"].as_str(), started["session"].as_str()),
        (Some("searching"), Some("s-1")),
        "{started:#}"
    );
    assert_eq!(started["runs"], 6, "three runs at each end: {started:#}");
    assert_eq!(started["commits"], 8);
    assert_eq!(started["good"]["commit"], repo["good"]);
    // Another carries it to its answer.
    let out = falcon(d, &["bisect", "--session", "s-1", "--wait", "--json", "--fail-on-culprit"]);
    assert_eq!(code(&out), 5, "a culprit with --fail-on-culprit: {}", String::from_utf8_lossy(&out.stderr));
    let done = json(&out);
    assert_eq!(done["culprit"]["commit"], repo["culprit"], "{done:#}");
    assert_eq!(done["culprit"]["subject"], "Validate every batch twice");
    assert_eq!(done["verdict"]["verdict"], "regressed");
    let tested = done["tested"].as_array().unwrap();
    let runs: u64 = tested.iter().map(|t| t["runs"].as_u64().unwrap()).sum();
    assert_eq!(done["runs"].as_u64(), Some(runs));
    assert!(tested.iter().all(|t| t["commit"].as_str().unwrap().len() == 40 && t["verdict"].is_string()));
    // Asked again: the stored answer, as text.
    let out = falcon(d, &["bisect", "--session", "s-1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("culprit: {}", repo["culprit"].as_str().unwrap())), "{text}");
    // Each run names its commit.
    let first = tested[0]["experiments"][0].as_str().unwrap();
    let out = falcon(d, &["exp", "show", first]);
    let text = String::from_utf8_lossy(&out.stdout);
    let short = &repo["good"].as_str().unwrap()[..12];
    assert!(text.contains(&format!("code {short}")) && text.contains("snapshot code/"), "{text}");
}

#[test]
fn bisect_refuses_what_it_cannot_search() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(code(&falcon(d, &["init"])), 0);
    let repo = make_repo(&d.join("repo"), &["--commits", "4", "--culprit", "0"]);
    let bisect =
        |good: &str, bad: &str| falcon(d, &["--json", "bisect", "repo/falcon.yaml", "--good", good, "--bad", bad]);
    // The ends the wrong way round, one commit twice, a ref that names nothing: refused, nothing recorded.
    let out = bisect("v-bad", "v-good");
    assert_ne!(code(&out), 0);
    assert!(json(&out)["error"]["message"].as_str().unwrap().contains("not an ancestor"), "{}", json(&out));
    let out = bisect("v-good", repo["good"].as_str().unwrap());
    assert!(json(&out)["error"]["message"].as_str().unwrap().contains("one commit"), "{}", json(&out));
    let out = bisect("v-good", "nothing-here");
    assert_eq!(code(&out), 3, "not found");
    let out = falcon(d, &["--json", "session", "show", "s-1"]);
    assert_eq!(code(&out), 3, "no session was recorded: {}", String::from_utf8_lossy(&out.stdout));
    // Without a spec or a session: usage.
    assert_eq!(code(&falcon(d, &["bisect", "--good", "a", "--bad", "b"])), 2);
}
