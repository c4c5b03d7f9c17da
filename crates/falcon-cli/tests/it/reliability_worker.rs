//! The worker keeps its promises (issue 15 §5): a worker that runs for days keeps its disk bounded with
//! `falcon gc`, which never removes a running job's folder nor one whose outputs were not collected.

use crate::common::{code, falcon, json};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn write_spec(dir: &Path, name: &str, script: &str) -> String {
    let text = format!(
        "name: {name}\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, '{script}']\n\
         resources: {{accelerator: cpu}}\n"
    );
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The job folders under `.falcon/jobs`, by name.
/// The attempts' folders in `[jobs] work_dir` (beside each, the job's own folder its attempts share, `e-N`).
fn job_dirs(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join(".falcon-jobs"))
        .map(|e| e.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.retain(|n| n.contains("-a"));
    names.sort();
    names
}

fn paths(items: &Value, kind: &str) -> Vec<String> {
    let mut out: Vec<String> = items
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == kind)
        .map(|i| {
            let p = PathBuf::from(i["path"].as_str().unwrap());
            p.file_name().unwrap().to_string_lossy().into_owned()
        })
        .collect();
    out.sort();
    out
}

fn plant_cache_file(dir: &Path, relative: &str, bytes: usize, age: Duration) -> PathBuf {
    let path = dir.join(".falcon/cache/profiles").join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, vec![7u8; bytes]).unwrap();
    let at = SystemTime::now() - age;
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_times(std::fs::FileTimes::new().set_accessed(at).set_modified(at)).unwrap();
    path
}

#[test]
fn gc_removes_collected_job_folders_and_trims_the_cache_but_never_a_running_job() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    assert_eq!(code(&falcon(dir, &["init"])), 0);
    // Short leases: each `falcon` call below is a new worker, which may take over a job once the last one's
    // lease lapsed.
    let mut toml = std::fs::read_to_string(dir.join("falcon.toml")).unwrap();
    toml.push_str("\n[jobs]\nlease_s = 1\n");
    std::fs::write(dir.join("falcon.toml"), toml).unwrap();
    // Two experiments that ran to the end (e-1, e-2): their folders hold an artifact and logs, all collected.
    for name in ["done-a", "done-b"] {
        let spec = write_spec(dir, name, "echo hello; echo 42 > $FALCON_ARTIFACT_DIR/result.txt");
        let out = falcon(dir, &["exp", "submit", &spec, "--wait", "--json"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(json(&out)["status"], "COMPLETED");
    }
    // One that ended (e-3) but whose folder gained a file after the collection: not collected, so kept.
    let spec = write_spec(dir, "late", "echo late");
    assert_eq!(code(&falcon(dir, &["exp", "submit", &spec, "--wait", "--json"])), 0);
    // One still running (e-4).
    let spec = write_spec(dir, "running", "sleep 60");
    let out = falcon(dir, &["exp", "submit", &spec, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let running_id = json(&out)["id"].as_str().unwrap().to_string();
    assert_eq!(running_id, "e-4");
    assert_eq!(code(&falcon(dir, &["worker", "--passes", "2"])), 0);
    let all = job_dirs(dir);
    // Job folders are named after the job's object: `<experiment>-a<attempt>-<pool>`.
    let (done_a, done_b, late, running) = (
        "e-1-a1-local".to_string(),
        "e-2-a1-local".to_string(),
        "e-3-a1-local".to_string(),
        "e-4-a1-local".to_string(),
    );
    assert_eq!(all, [done_a.clone(), done_b.clone(), late.clone(), running.clone()]);
    std::fs::write(dir.join(".falcon-jobs").join(&late).join("artifacts/after.txt"), "written after the end").unwrap();

    // The profile cache: 3 × 1000 bytes, one used long ago, one an hour ago, one just now.
    let oldest = plant_cache_file(dir, "e-1/plugins/profile/r/host.xplane.pb", 1000, Duration::from_secs(7200));
    let older = plant_cache_file(dir, "e-2/plugins/profile/r/host.xplane.pb", 1000, Duration::from_secs(3600));
    let fresh = plant_cache_file(dir, "e-3/plugins/profile/r/host.xplane.pb", 1000, Duration::ZERO);

    // By default (jobs that ended more than 7 days ago, a 10 GiB cache) nothing here is old or big enough.
    let out = falcon(dir, &["gc", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["removed"], serde_json::json!([]), "{report:#}");
    assert_eq!(report["bytes"], 0);
    assert_eq!(report["cache"]["bytes_before"], 3000);
    assert_eq!(job_dirs(dir).len(), 4);

    // A dry run lists exactly what the real run then removes, and removes nothing.
    let args = ["gc", "--older-than", "0s", "--cache-cap", "1500", "--json"];
    let out = falcon(dir, &[&args[..], &["--dry-run"]].concat());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let dry = json(&out);
    assert_eq!(dry["dry_run"], true);
    // The two ended jobs' attempt folders, then each job's own folder (its configuration snapshot).
    let gone = ["e-1".to_string(), done_a.clone(), "e-2".into(), done_b.clone()];
    assert_eq!(paths(&dry["removed"], "job_dir"), gone, "{dry:#}");
    assert_eq!(dry["removed"].as_array().unwrap().iter().filter(|i| i["kind"] == "cache_file").count(), 2);
    assert!(dry["bytes"].as_u64().unwrap() > 2000, "job folders and cache files are counted: {dry:#}");
    let kept = dry["kept"].as_array().unwrap();
    let reason =
        |name: &str| kept.iter().find(|k| k["path"].as_str().unwrap().ends_with(name)).map(|k| k["reason"].to_string());
    let why = reason(&running).unwrap();
    assert!(["SUBMITTED", "PENDING", "RUNNING"].iter().any(|s| why.contains(s)), "{dry:#}");
    assert!(reason(&late).unwrap().contains("not collected"), "{dry:#}");
    assert_eq!(job_dirs(dir).len(), 4, "a dry run removes nothing");
    assert!(oldest.exists() && older.exists());

    let out = falcon(dir, &args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let done = json(&out);
    assert_eq!(done["dry_run"], false);
    assert_eq!(done["removed"], dry["removed"], "the dry run said what the real run did");
    assert_eq!(done["bytes"], dry["bytes"]);
    assert_eq!(job_dirs(dir), [late.clone(), running.clone()], "the running job's folder and the uncollected one stay");
    assert!(
        dir.join(".falcon-jobs/e-3").is_dir() && !dir.join(".falcon-jobs/e-1").exists(),
        "a job's own folder goes with its attempts'"
    );
    assert!(!oldest.exists() && !older.exists() && fresh.exists(), "least recently used first, down to the cap");
    assert_eq!(done["cache"]["bytes_after"], 1000);

    // The experiments' artifacts are still in the store: only the local copies went.
    let shown = json(&falcon(dir, &["exp", "show", "e-1", "--json"]));
    assert!(shown["artifacts"].as_array().unwrap().iter().any(|a| a["uri"].as_str().unwrap().ends_with("result.txt")));

    // Once the running job ends and is collected, its folder goes too.
    assert_eq!(code(&falcon(dir, &["exp", "cancel", &running_id])), 0);
    let started = std::time::Instant::now();
    loop {
        assert_eq!(code(&falcon(dir, &["worker", "--passes", "2"])), 0);
        let shown = json(&falcon(dir, &["exp", "show", &running_id, "--json"]));
        if shown["status"] == "CANCELLED" {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the cancel was not carried out: {shown:#}");
        std::thread::sleep(Duration::from_millis(500));
    }
    let out = falcon(dir, &["gc", "--older-than", "0s", "--json"]);
    assert_eq!(paths(&json(&out)["removed"], "job_dir"), ["e-4".to_string(), running]);
    assert_eq!(job_dirs(dir), [late]);
}

#[test]
fn gc_refuses_bad_durations_and_sizes_as_usage_errors() {
    let d = tempfile::tempdir().unwrap();
    assert_eq!(code(&falcon(d.path(), &["init"])), 0);
    for args in [&["gc", "--older-than", "soon", "--json"][..], &["gc", "--cache-cap", "lots", "--json"]] {
        let out = falcon(d.path(), args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert_eq!(json(&out)["error"]["code"], "usage", "{args:?}");
    }
}

#[test]
fn submit_wait_analyses_the_experiment_it_submitted_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(code(&falcon(d, &["init"])), 0);
    // A Chrome trace: each completed experiment awaits the `trace` analysis.
    std::fs::write(
        d.join("t.trace.json"),
        r#"{"traceEvents":[{"name":"step","ph":"X","ts":0,"dur":10,"pid":1,"tid":1}]}"#,
    )
    .unwrap();
    let trace = d.join("t.trace.json");
    let script = format!("cp {} $FALCON_ARTIFACT_DIR/", trace.display());
    let other = write_spec(d, "other", &script);
    let mine = write_spec(d, "mine", &script);
    // Someone else's experiment, queued first: the embedded loop of the next --wait runs its job too.
    assert_eq!(code(&falcon(d, &["exp", "submit", &other, "--json"])), 0);
    let out = falcon(d, &["exp", "submit", &mine, "--wait", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json(&out)["id"], "e-2");
    let tools = |id: &str| -> Vec<Value> {
        let shown = json(&falcon(d, &["exp", "show", id, "--json"]));
        assert_eq!(shown["status"], "COMPLETED", "{shown}");
        shown["analysis"].as_array().unwrap().iter().map(|a| a["tool"].clone()).collect()
    };
    assert_eq!(tools("e-2"), [Value::from("trace")], "its own experiment is analysed");
    assert!(tools("e-1").is_empty(), "another's experiment is left to the worker");
    // The worker analyses it.
    assert_eq!(code(&falcon(d, &["worker", "--passes", "1"])), 0);
    assert_eq!(tools("e-1"), [Value::from("trace")]);
}

/// A pass that fails — the metadata store answering errors for a while, as a restarting database does — is a
/// warning, not the end of the worker: it waits longer after each failed pass (the poll interval doubled per
/// failure) and carries on, and once the store answers again it runs the queue to its end.
#[test]
fn a_worker_outlives_failed_passes_backing_off_and_then_ends_the_queue() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(code(&falcon(d, &["init"])), 0);
    let spec = write_spec(d, "through", "echo done");
    assert_eq!(code(&falcon(d, &["exp", "submit", &spec, "--json"])), 0);
    // The store fails every pass: the jobs table is away (renamed by another process).
    let db = d.join(".falcon/falcon.db");
    let rename = |from: &str, to: &str| {
        let script = format!(
            "import sqlite3; c = sqlite3.connect({:?}, isolation_level=None); c.execute('ALTER TABLE {from} RENAME TO {to}')",
            db.display().to_string()
        );
        let out = std::process::Command::new("python3").args(["-c", &script]).output().expect("run python3");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    rename("jobs", "jobs_away");
    let out = falcon(d, &["worker", "--passes", "3", "--json"]);
    assert_eq!(code(&out), 0, "the worker outlives failed passes: {}", stderr(&out));
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let warnings: Vec<&str> =
        lines.iter().filter(|l| l["event"] == "warning").map(|l| l["message"].as_str().unwrap()).collect();
    assert_eq!(warnings.len(), 3, "{lines:?}");
    for (n, (warning, wait)) in warnings.iter().zip(["2.0", "4.0", "8.0"]).enumerate() {
        let expected = format!("worker pass failed ({} in a row; trying again in {wait} s): ", n + 1);
        assert!(warning.starts_with(&expected) && warning.contains("jobs"), "{warning}");
    }
    assert_eq!(lines.iter().filter(|l| l["event"] == "pass").count(), 3, "{lines:?}");
    // The store answers again: the queue runs to its end.
    rename("jobs_away", "jobs");
    let started = std::time::Instant::now();
    loop {
        assert_eq!(code(&falcon(d, &["worker", "--passes", "2"])), 0);
        let shown = json(&falcon(d, &["exp", "show", "e-1", "--json"]));
        if shown["status"] == "COMPLETED" {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "not completed: {shown}");
    }
}
