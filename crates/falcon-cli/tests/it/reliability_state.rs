//! Nothing waits forever; nothing is created by mistake (issue 15 §4): an experiment no pool can run is refused
//! at submit or failed by the worker instead of sitting in PROVISIONING, only `init` creates a database (a
//! mistyped `--db` creates nothing and says so), and `init --keep` sets up what a kept falcon.toml names.

use crate::common::{code, falcon, json};
use std::path::Path;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn spec(dir: &Path, file: &str, name: &str, resources: &str) -> String {
    let path = dir.join(file);
    std::fs::write(
        &path,
        format!(
            "name: {name}\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [\"true\"]\nresources: {resources}\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

fn pool_config(dir: &Path, file: &str, capacity: u32) -> String {
    let path = dir.join(file);
    std::fs::write(
        &path,
        format!(
            "data_dir = \".falcon\"\n[jobs]\npoll_interval_ms = 50\n\n[[pools]]\nname = \"local\"\nbackend = \"local\"\n\
             zone = \"local\"\nplatform = \"cpu\"\naccelerators = [\"cpu\"]\ncapacity = {capacity}\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

fn no_experiments(dir: &Path, extra: &[&str]) {
    let mut args = extra.to_vec();
    args.extend(["exp", "list", "--json"]);
    let listed = json(&falcon(dir, &args));
    assert!(listed["items"].as_array().unwrap().is_empty(), "nothing recorded: {listed}");
}

#[test]
fn exp_submit_of_an_accelerator_no_pool_offers_is_refused_naming_what_the_pools_offer() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let config = pool_config(d, "falcon.toml", 4);
    assert_eq!(code(&falcon(d, &["--config", &config, "init", "--keep"])), 0);
    let gpu = spec(d, "gpu.yaml", "gpu", "{accelerator: h100-80gb-8}");
    let out = falcon(d, &["exp", "submit", &gpu, "--wait", "--json"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let error = &json(&out)["error"];
    assert_eq!(error["code"], "conflict");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("no pool offers h100-80gb-8") && message.contains("local: cpu, 4 chips (zone local)"),
        "{message}"
    );
    assert!(error["hint"].as_str().unwrap().contains("[[pools]]"), "{error}");

    let big = spec(d, "big.yaml", "big", "{accelerator: cpu, devices: 64}");
    let out = falcon(d, &["exp", "submit", &big, "--json"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let message = json(&out)["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("needs 64 chips of cpu") && message.contains("`local`) has 4"), "{message}");

    let out = falcon(d, &["exp", "submit", &gpu]);
    assert_eq!(code(&out), 4);
    assert!(stderr(&out).contains("no pool offers h100-80gb-8"), "{}", stderr(&out));
    no_experiments(d, &[]);

    let fits = spec(d, "fits.yaml", "fits", "{accelerator: cpu, devices: 4}");
    let out = falcon(d, &["exp", "submit", &fits, "--json"]);
    assert_eq!(code(&out), 0, "a spec a pool can hold is accepted: {}", stderr(&out));
}

#[test]
fn session_submit_with_one_experiment_no_pool_can_run_records_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let config = pool_config(d, "falcon.toml", 4);
    assert_eq!(code(&falcon(d, &["--config", &config, "init", "--keep"])), 0);
    let sweep = d.join("sweep.yaml");
    std::fs::write(
        &sweep,
        "name: s\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [\"true\"]\n\
         resources: {accelerator: cpu, devices: 2}\nsweep:\n  resources.devices: [2, 16]\n",
    )
    .unwrap();
    let out = falcon(d, &["session", "submit", &sweep.display().to_string(), "--json"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let message = json(&out)["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("experiment 2 of the session") && message.contains("needs 16 chips"), "{message}");
    no_experiments(d, &[]);
}

#[test]
fn a_worker_fails_a_job_that_fits_none_of_its_pools_and_the_experiment_fails() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Submitted where a large pool is configured; run by a worker whose only pool is too small for it.
    let large = pool_config(d, "large.toml", 64);
    let small = pool_config(d, "small.toml", 2);
    assert_eq!(code(&falcon(d, &["--config", &large, "init", "--keep"])), 0);
    let wide = spec(d, "wide.yaml", "wide", "{accelerator: cpu, devices: 32}");
    let out = falcon(d, &["--config", &large, "exp", "submit", &wide, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json(&out)["status"], "PROVISIONING");
    let out = falcon(d, &["--config", &small, "worker", "--passes", "2", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let shown = json(&falcon(d, &["--config", &small, "exp", "show", "e-1", "--json"]));
    assert_eq!(shown["status"], "FAILED", "{shown:#}");
    let last = shown["history"].as_array().unwrap().last().unwrap()["reason"].as_str().unwrap().to_string();
    assert!(last.contains("no pool is large enough") && last.contains("has 2"), "{last}");
}

#[test]
fn a_mistyped_db_creates_nothing_and_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(code(&falcon(d, &["init"])), 0);
    let typo = d.join("typo");
    let url = format!("sqlite://{}/x.db", typo.display());
    let fits = spec(d, "fits.yaml", "fits", "{accelerator: cpu}");
    for args in [
        vec!["exp", "list", "--db", &url],
        vec!["exp", "submit", &fits, "--db", &url],
        vec!["goal", "list", "--db", &url],
        vec!["exp", "show", "e-1", "--db", &url],
    ] {
        let out = falcon(d, &args);
        assert_eq!(code(&out), 3, "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(&format!("no Falcon database at {url}")) && err.contains("falcon init"), "{err}");
        let mut json_args = args.clone();
        json_args.push("--json");
        let out = falcon(d, &json_args);
        assert_eq!(code(&out), 3);
        assert_eq!(json(&out)["error"]["code"], "not_found", "{args:?}");
        assert!(!typo.exists(), "{args:?} created {}", typo.display());
    }
    // Also when the whole data dir is mistyped: no folder appears.
    let out = falcon(d, &["exp", "list", "--data-dir", "elsewhere"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(!d.join("elsewhere").exists());
    // The real store was never touched, and `init` is what creates one.
    no_experiments(d, &[]);
    let out = falcon(d, &["--config", "other.toml", "init", "--db", &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(typo.join("x.db").is_file());
    no_experiments(d, &["--db", &url]);
}

#[test]
fn init_keep_creates_the_stores_a_kept_config_names_and_keeps_an_existing_database() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A falcon.toml without a database (a clone with a config but no state): plain `init` refuses to replace
    // it, `init --keep` keeps it and creates the database.
    let config = pool_config(d, "falcon.toml", 3);
    let before = std::fs::read_to_string(&config).unwrap();
    assert_eq!(code(&falcon(d, &["exp", "list"])), 3, "no database yet");
    assert_eq!(code(&falcon(d, &["init"])), 4);
    let out = falcon(d, &["init", "--keep", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json(&out)["connection"]["pools"], serde_json::json!(["local"]));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before, "the file is kept as it was");
    assert!(d.join(".falcon/falcon.db").is_file());
    let out = falcon(d, &["goal", "create", "--title", "kept", "--metric", "mfu", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    // The reverse: a database without a falcon.toml. `init --keep` writes the file and keeps the data.
    std::fs::remove_file(&config).unwrap();
    let out = falcon(d, &["init", "--keep"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(d.join("falcon.toml").is_file());
    let goals = json(&falcon(d, &["goal", "list", "--json"]));
    assert_eq!(goals["items"].as_array().unwrap().len(), 1, "the existing database was kept: {goals}");
    assert_eq!(code(&falcon(d, &["init", "--keep", "--force"])), 2, "--keep and --force exclude each other");
}

#[test]
fn exp_history_says_whether_it_covers_the_whole_series() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(code(&falcon(d, &["init"])), 0);
    // A series that exists but has no completed run yet: an empty history that says it is complete.
    let queued = spec(d, "queued.yaml", "queued", "{accelerator: cpu}");
    assert_eq!(code(&falcon(d, &["exp", "submit", &queued])), 0);
    let out = falcon(d, &["exp", "history", "--name", "queued", "--metric", "step_time_s", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let history = json(&out);
    assert_eq!(history["truncated"], false, "{history}");
    assert_eq!(history["completed"], 0, "{history}");
    assert!(history["note"].is_null() && history["points"].as_array().unwrap().is_empty(), "{history}");
    // A name no experiment has is not found.
    let out = falcon(d, &["exp", "history", "--name", "none-yet", "--metric", "step_time_s", "--json"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(json(&out)["error"]["message"].as_str().unwrap().contains("none-yet"));
}
