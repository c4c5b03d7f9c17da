//! The one JSON contract (docs/guide/json-contract.md, docs/DESIGN.md §6), checked on the real binary: one object
//! per `--json` call, lists as `{"items", "next_cursor"}`, streams as JSON Lines with `event`, `-o FILE --json`
//! as `{"written", "bytes"}`, `--json` with another `--format` a usage error, `--version --json`, no colour
//! in redirected logs, hints that name the command's own input, and `init --config FILE`.

use crate::common::{code, falcon, falcon_with, json};
use serde_json::Value;
use std::path::Path;

fn under_manifest(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel).display().to_string()
}

fn init(dir: &Path) {
    assert_eq!(code(&falcon(dir, &["init"])), 0);
}

fn quick_spec(dir: &Path) -> String {
    let path = dir.join("q.yaml");
    std::fs::write(
        &path,
        "name: q\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'echo hello; echo \
         \"{\\\"step\\\": 1, \\\"step_time_s\\\": 0.1}\" >> $FALCON_ARTIFACT_DIR/metrics.jsonl']\nresources: {accelerator: cpu}\n",
    )
    .unwrap();
    path.display().to_string()
}

/// Each line of stdout as a JSON object with an `event`.
fn json_lines(stdout: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(stdout);
    text.lines()
        .map(|l| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not one JSON object per line ({e}): {l}"));
            assert!(v.is_object() && v["event"].is_string(), "no `event` in {l}");
            v
        })
        .collect()
}

#[test]
fn lists_are_pages_and_streams_are_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    init(d);
    let spec = quick_spec(d);
    assert_eq!(code(&falcon(d, &["exp", "submit", &spec, "--json"])), 0);

    // The worker with one queued experiment: JSON Lines, at least one, every one with an event.
    let out = falcon(d, &["worker", "--passes", "1", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let lines = json_lines(&out.stdout);
    assert!(!lines.is_empty());
    assert_eq!(lines.last().unwrap()["event"], "pass");

    // Following the logs until the experiment ends: log events, then the end with its status.
    let out = falcon(d, &["exp", "logs", "e-1", "-f", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let lines = json_lines(&out.stdout);
    let end = lines.last().unwrap();
    assert_eq!((end["event"].as_str(), end["status"].as_str()), (Some("end"), Some("COMPLETED")), "{lines:?}");
    assert!(lines.iter().any(|l| l["event"] == "log" && l["text"].as_str().unwrap().contains("hello")), "{lines:?}");

    // Every list command: one object, `items` and `next_cursor`.
    for args in [
        &["exp", "list", "--json"][..],
        &["exp", "artifacts", "e-1", "--json"],
        &["goal", "list", "--json"],
        &["pool", "list", "--json"],
    ] {
        let v = json(&falcon(d, args));
        assert!(v["items"].is_array() && v.get("next_cursor").is_some(), "{args:?}: {v}");
    }
    let artifacts = json(&falcon(d, &["exp", "artifacts", "e-1", "--json", "--limit", "1"]));
    assert_eq!(artifacts["items"].as_array().unwrap().len(), 1);
    let next = artifacts["next_cursor"].as_str().expect("more than one artifact").to_string();
    let rest = json(&falcon(d, &["exp", "artifacts", "e-1", "--json", "--cursor", &next]));
    assert!(!rest["items"].as_array().unwrap().is_empty());

    // Logs on stderr carry no escape bytes when redirected, and NO_COLOR is honoured too.
    for env in [&[][..], &[("NO_COLOR", "1")]] {
        let out = falcon_with(d, &["exp", "list", "-vv"], env);
        assert_eq!(code(&out), 0);
        assert!(!out.stderr.is_empty(), "-vv logs something");
        assert!(!out.stderr.contains(&0x1b), "escape byte in redirected logs");
    }
}

#[test]
fn version_format_and_output_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let v = json(&falcon(d, &["--version", "--json"]));
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));

    // --json with another --format: a usage error, as JSON, on every command that has --format.
    let batch8 = under_manifest("../falcon-analysis/tests/data/compare/batch8");
    let kernel = under_manifest("../falcon-analysis/tests/data/kernel_bench/cpu_results.jsonl");
    for args in [
        vec!["profile", "compare", &batch8, &batch8, "--format", "html", "--json"],
        vec!["goal", "report", "g-1", "--format", "md", "--json"],
        vec!["kernel", "analyze", &kernel, "--format", "table", "--json"],
        vec!["accuracy", "compare", "a", "b", "--format", "html", "--json"],
        vec!["accuracy", "tensors", "a", "b", "--format", "md", "--json"],
    ] {
        let out = falcon(d, &args);
        assert_eq!(code(&out), 2, "{args:?}");
        assert_eq!(json(&out)["error"]["code"], "usage", "{args:?}");
    }
    // --format json with --json is the same thing, not an error.
    assert_eq!(code(&falcon(d, &["kernel", "analyze", &kernel, "--format", "json", "--json"])), 0);

    // -o FILE --json: stdout says what was written; the file holds the JSON report.
    let file = d.join("cmp.json");
    let out = falcon(d, &["profile", "compare", &batch8, &batch8, "-o", &file.display().to_string(), "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let written = json(&out);
    assert_eq!(written["written"], file.display().to_string());
    let body = std::fs::read(&file).unwrap();
    assert_eq!(written["bytes"], body.len());
    let report: Value = serde_json::from_slice(&body).expect("the file is the JSON report");
    assert!(report["ops"].is_array());
}

#[test]
fn hints_name_the_input_and_init_writes_where_config_says() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("results")).unwrap();
    let out = falcon(d, &["kernel", "analyze", "results", "--json"]);
    assert_eq!(code(&out), 3);
    let hint = json(&out)["error"]["hint"].as_str().unwrap().to_string();
    assert!(hint.contains("kernel_bench") && !hint.contains("xplane"), "{hint}");

    let out = falcon(d, &["init", "--config", "sub/my.toml", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(d.join("sub/my.toml").is_file() && !d.join("falcon.toml").exists());
    assert!(d.join("sub/.falcon").is_dir(), "the data dir is relative to the file");
    assert_eq!(code(&falcon(d, &["--config", "sub/my.toml", "doctor", "--json"])), 0);
}
