//! `falcon goal report` as a user runs it: two experiments whose workloads copy real captures (a batch-16 and
//! a batch-8 run of the same model), a goal on step time with the batch-16 run as baseline.

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

/// The report's own number format (six significant digits, trailing zeros dropped), to find values in the text renderings.
fn num(x: f64) -> String {
    let magnitude = x.abs().log10().floor() as i32;
    let decimals = (5 - magnitude).clamp(0, 9) as usize;
    let text = format!("{x:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

fn text(out: &std::process::Output) -> String {
    assert_eq!(code(out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn notes(report: &Value) -> Vec<String> {
    report["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()).collect()
}

/// A spec logging a constant `tokens_per_s` for ten steps, with no profile.
fn plain_spec(dir: &Path, name: &str, goal: &str, tokens: u32) -> String {
    let text = format!(
        "name: {name}\nscenario: benchmark\ngoal: {goal}\nworkload:\n  framework: shell\n  command: [sh, -c, 'for i in $(seq 0 9); do \
         echo \"{{\\\"step\\\": $i, \\\"tokens_per_s\\\": {tokens}}}\" >> $FALCON_ARTIFACT_DIR/metrics.jsonl; done']\n\
         config: {{tokens: {tokens}}}\nresources: {{accelerator: cpu}}\n"
    );
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

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

    let report = json(&falcon(d, &["goal", "report", &gid, "--json"]));
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

    // `--format json` is the same document.
    let again = json(&falcon(d, &["goal", "report", &gid, "--format", "json"]));
    assert_eq!(again["progress"], report["progress"]);

    // Markdown: the title, the best value and the config change.
    let md = text(&falcon(d, &["goal", "report", &gid, "--format", "md"]));
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
    let table = text(&falcon(d, &["goal", "report", &gid]));
    for needle in ["Progress", "Ranking", "config.batch_size", "step_time_s", "improved", &num(v)] {
        assert!(table.contains(needle), "`{needle}` in:\n{table}");
    }
    let at = |needle: &str| table.find(needle).unwrap_or_else(|| panic!("`{needle}` in:\n{table}"));
    assert!(at("config.batch_size") < at("Bookkeeping (not configuration)"), "{table}");
    assert!(at("Bookkeeping (not configuration)") < at("- name: \"batch16\" → \"batch8\""), "{table}");

    // HTML into a file: a self-contained page with the profile comparison's charts.
    let out = falcon(d, &["goal", "report", &gid, "--format", "html", "-o", "report.html"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote report.html"));
    let html = std::fs::read_to_string(d.join("report.html")).unwrap();
    assert!(html.contains("config.batch_size") && html.contains(&num(v)), "{html}");
    assert!(html.contains("<svg"), "charts from the profile comparison");
    let leftovers: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "the temporary file was renamed");

    // JSON into a file.
    let out = falcon(d, &["goal", "report", &gid, "--json", "-o", "report.json"]);
    assert_eq!(code(&out), 0);
    let written: Value = serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
    assert_eq!(written["best"]["experiment"], best.as_str());
}

#[test]
fn missing_pieces_are_notes_and_unknown_goals_are_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(code(&falcon(d, &["init"])), 0);
    let goal = json(&falcon(d, &["goal", "create", "--title", "more tokens", "--metric", "tokens_per_s", "--json"]));
    let gid = goal["id"].as_str().unwrap().to_string();

    // No baseline, no experiments: everything that can be said is said, with notes; exit 0.
    let out = falcon(d, &["goal", "report", &gid, "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let report = json(&out);
    assert_eq!(report["best"], Value::Null);
    assert_eq!(report["baseline"], Value::Null);
    assert_eq!(report["profile"], Value::Null);
    assert_eq!(report["progress"]["direction"], "maximize");
    let said = notes(&report);
    assert!(said.iter().any(|n| n.contains("no baseline")), "{said:?}");
    assert!(said.iter().any(|n| n.contains("no completed experiment")), "{said:?}");
    let md = text(&falcon(d, &["goal", "report", &gid, "--format", "md"]));
    assert!(
        md.starts_with("# Goal report: more tokens") && md.contains("## Notes") && md.contains("no baseline"),
        "{md}"
    );
    assert!(text(&falcon(d, &["goal", "report", &gid])).contains("no baseline"));

    // A goal whose best experiment is its baseline (the baseline names the goal in its spec, so the goal names
    // it once it has run)…
    let g2 = json(&falcon(d, &["goal", "create", "--title", "same", "--metric", "tokens_per_s", "--json"]));
    let g2 = g2["id"].as_str().unwrap().to_string();
    let base = submit(d, &plain_spec(d, "base", &g2, 100));
    assert_eq!(base, "e-1");
    let set = json(&falcon(d, &["goal", "set-baseline", &g2, "e-1", "--json"]));
    assert_eq!(set["baseline"], "e-1", "{set}");
    submit(d, &plain_spec(d, "worse", &g2, 50));
    let report = json(&falcon(d, &["goal", "report", &g2, "--json"]));
    assert_eq!(report["best"]["experiment"], "e-1", "{report:#}");
    assert_eq!(report["progress"]["baseline_value"], 100.0);
    assert_eq!(report["progress"]["delta_vs_baseline"], 0.0);
    assert!(report["config_diff"].as_array().unwrap().is_empty() && report["verdicts"].as_array().unwrap().is_empty());
    assert!(notes(&report).iter().any(|n| n.contains("the best experiment is the baseline")), "{report:#}");

    // …and one whose experiments have no profile: the rest of the report is there, the profile is a note.
    let g3 = json(&falcon(
        d,
        &[
            "goal",
            "create",
            "--title",
            "faster",
            "--metric",
            "tokens_per_s",
            "--baseline",
            "e-1",
            "--target",
            "300",
            "--json",
        ],
    ));
    let g3 = g3["id"].as_str().unwrap().to_string();
    let better = submit(d, &plain_spec(d, "better", &g3, 200));
    let out = falcon(d, &["goal", "report", &g3, "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let report = json(&out);
    assert_eq!(report["best"]["experiment"], better.as_str());
    assert_eq!(report["progress"]["gap_closed"], 0.5, "100 → 200 of 100 → 300");
    assert!(report["config_diff"].as_array().unwrap().iter().any(|c| c["path"] == "config.tokens"), "{report:#}");
    assert_eq!(report["verdicts"][0]["metric"], "tokens_per_s");
    assert_eq!(report["profile"], Value::Null);
    assert!(
        notes(&report).iter().any(|n| n.contains("no profile comparison") && n.contains("no XProf profile")),
        "{report:#}"
    );
    let html = text(&falcon(d, &["goal", "report", &g3, "--format", "html"]));
    assert!(html.contains("no XProf profile") && html.contains("config.tokens"), "{html}");

    let out = falcon(d, &["goal", "report", "g-99", "--json"]);
    assert_eq!(code(&out), 3, "{}", String::from_utf8_lossy(&out.stdout));
    assert!(json(&out)["error"]["message"].is_string());
    assert_eq!(code(&falcon(d, &["goal", "report", "nonsense"])), 2);
}
