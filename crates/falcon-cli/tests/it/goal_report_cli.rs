//! `falcon goal report` at the process boundary: two experiments whose workloads copy real captures (a batch-16
//! and a batch-8 run of the same model), a goal on step time with the batch-16 run as baseline; `--format json` is
//! `--json`, `-o` writes the HTML or JSON report to its file, and an unknown goal exits 3 (2 for an id clap
//! refuses). The use case's outcomes (progress, the config diff, verdicts, the profile comparison, notes for what is
//! missing) are tested in process in falcon-app/tests/it/goal_report.rs.

use crate::common::{code, falcon, json};
use serde_json::Value;
use std::path::Path;

fn capture_dir(name: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-analysis/tests/data/compare").join(name);
    std::fs::canonicalize(dir).unwrap().display().to_string()
}

/// A spec whose workload copies `crates/falcon-analysis/tests/data/compare/<capture>/*` (metrics, profile,
/// HLO, effective config) into its artifact directory.
fn spec(dir: &Path, name: &str, capture: &str, batch: u32, goal: Option<&str>) -> String {
    let goal = goal.map_or(String::new(), |g| format!("goal: {g}\n"));
    let text = format!(
        "name: {name}\nscenario: benchmark\n{goal}workload:\n  framework: shell\n  command: [sh, -c, 'cp -R {}/. $FALCON_ARTIFACT_DIR/']\n\
         config: {{batch_size: {batch}, model: tiny-decoder}}\nresources: {{accelerator: cpu}}\n",
        capture_dir(capture)
    );
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn submit(dir: &Path, file: &str) -> String {
    let out = falcon(dir, &["exp", "submit", file, "--wait", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let shown = json(&out);
    assert_eq!(shown["status"], "COMPLETED", "{shown:#}");
    shown["id"].as_str().unwrap().to_string()
}

/// The process boundary of `goal report`'s outputs: `--format json` prints what `--json` does, and `-o` writes
/// the HTML and the JSON report to their files. What the report composes is tested in process in
/// falcon-app/tests/it/goal_report.rs.
#[test]
fn a_goal_report_composes_progress_diff_verdicts_and_the_profile_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(code(&falcon(d, &["init"])), 0);
    // batch 16 is slower per step: it is the baseline the batch-8 candidate improves on.
    let baseline = submit(d, &spec(d, "batch16", "batch16", 16, None));
    let goal = json(&falcon(
        d,
        &[
            "goal",
            "create",
            "--title",
            "faster steps",
            "--metric",
            "step_time_s",
            "--target",
            "0.01",
            "--baseline",
            &baseline,
            "--json",
        ],
    ));
    let gid = goal["id"].as_str().unwrap().to_string();
    let best = submit(d, &spec(d, "batch8", "batch8", 8, Some(&gid)));
    assert_ne!(best, baseline);

    // `--format json` is `--json`.
    let out = falcon(d, &["goal", "report", &gid, "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let report = json(&out);
    let again = json(&falcon(d, &["goal", "report", &gid, "--format", "json"]));
    assert_eq!(again["progress"], report["progress"]);

    // HTML into a file: nothing on stdout, "wrote …" on stderr, no temporary file left.
    let out = falcon(d, &["goal", "report", &gid, "--format", "html", "-o", "report.html"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote report.html"));
    let leftovers: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "the temporary file was renamed");

    // JSON into a file.
    let out = falcon(d, &["goal", "report", &gid, "--json", "-o", "report.json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let written: Value = serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
    assert_eq!(written["best"]["experiment"], best.as_str());
}

/// The process boundary of `goal report`'s exit codes: 0 on a goal with no experiments, 3 with the JSON error
/// envelope for an unknown goal, 2 for an id clap refuses. The notes for what is missing are tested in process in
/// falcon-app/tests/it/goal_report.rs.
#[test]
fn missing_pieces_are_notes_and_unknown_goals_are_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(code(&falcon(d, &["init"])), 0);
    let goal = json(&falcon(d, &["goal", "create", "--title", "more tokens", "--metric", "tokens_per_s", "--json"]));
    let gid = goal["id"].as_str().unwrap().to_string();

    // No baseline, no experiments: exit 0.
    let out = falcon(d, &["goal", "report", &gid, "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));

    let out = falcon(d, &["goal", "report", "g-99", "--json"]);
    assert_eq!(code(&out), 3, "{}", String::from_utf8_lossy(&out.stdout));
    assert!(json(&out)["error"]["message"].is_string());
    assert_eq!(code(&falcon(d, &["goal", "report", "nonsense"])), 2);
}
