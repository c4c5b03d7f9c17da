//! The `falcon` binary as a user runs it: exit codes, JSON on stdout, the error envelope, config precedence.

use crate::common::{code, falcon_with as falcon, json};

#[test]
fn init_then_doctor_works_on_the_embedded_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let out = falcon(dir.path(), &["init"], &[]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(dir.path().join("falcon.toml")).unwrap();
    assert!(
        text.contains("data_dir = \".falcon\"")
            && text.contains("backend = \"local\"")
            && text.contains("platform = \"cpu\""),
        "{text}"
    );
    assert!(dir.path().join(".falcon/falcon.db").exists());
    assert!(dir.path().join(".falcon/artifacts").is_dir());
    let shown = json(&falcon(dir.path(), &["config", "show", "--json", "--data-dir", "moved"], &[]));
    assert_eq!(shown["config"]["db"], "sqlite://moved/falcon.db", "--data-dir moves the database too");

    let out = falcon(dir.path(), &["doctor", "--json"], &[]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stdout));
    let report = json(&out);
    assert_eq!(report["ok"], true);
    let components: Vec<&str> =
        report["checks"].as_array().unwrap().iter().map(|c| c["component"].as_str().unwrap()).collect();
    assert_eq!(components, ["config", "database", "artifacts", "workloads", "calibration"]);
    assert_eq!(report["checks"][4]["detail"], "local: not measured (`falcon doctor --calibrate`)");
    assert!(report["calibration"].is_null(), "measured only when asked");

    // --calibrate measures this machine and keeps it for the local pool; doctor then lists it, and a capture read
    // here is costed against it (the example's XLA:CPU capture: MFU and bound-by known, the peak named).
    let out = falcon(dir.path(), &["doctor", "--calibrate", "--json"], &[]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let c = &json(&out)["calibration"];
    let (tflops, gbs) = (c["matmul_tflops"].as_f64().unwrap(), c["memory_gb_per_s"].as_f64().unwrap());
    assert!(tflops > 1e-3 && gbs > 0.1, "{c}");
    assert_eq!((c["kept"][0]["pool"].as_str(), c["kept"][0]["matmul_tflops"].as_f64()), (Some("local"), Some(tflops)));
    assert_eq!(c["matmul_runs"].as_array().unwrap().len(), 6);
    let detail =
        json(&falcon(dir.path(), &["doctor", "--json"], &[]))["checks"][4]["detail"].as_str().unwrap().to_string();
    assert!(detail.starts_with("local: ") && detail.contains("TFLOP/s f32 matmul"), "{detail}");
    let capture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-analysis/tests/data/compare/batch8");
    let r = json(&falcon(
        dir.path(),
        &["profile", "analyze", capture.to_str().unwrap(), "--tool", "overview", "--json"],
        &[],
    ));
    let o = &r["overview"];
    assert_eq!(
        (o["peak_source"].as_str(), o["mfu_peak_teraflops_per_second"].as_f64()),
        (Some("measured"), Some(tflops))
    );
    assert!(o["mfu"].as_f64().is_some_and(|m| m > 0.0) && !o["bound_by"].is_null(), "{o}");
    assert!(
        r["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("measured, not catalogued")),
        "{r}"
    );
    // A pool that is not configured is refused, naming the pools there are; --pool needs --calibrate.
    let out = falcon(dir.path(), &["doctor", "--calibrate", "--pool", "nope", "--json"], &[]);
    assert_ne!(code(&out), 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("pool `nope` is not configured"), "{out:?}");
    assert_eq!(code(&falcon(dir.path(), &["doctor", "--pool", "local"], &[])), 2);

    // From a subfolder the file is found upward and its relative paths still mean the same place.
    let sub = dir.path().join("a/b");
    std::fs::create_dir_all(&sub).unwrap();
    let out = falcon(&sub, &["config", "show", "--json"], &[]);
    let shown = json(&out);
    assert_eq!(shown["file"], dir.path().join("falcon.toml").display().to_string());
    assert_eq!(shown["config"]["data_dir"], dir.path().join(".falcon").display().to_string());
    let out = falcon(&sub, &["doctor"], &[]);
    assert_eq!(code(&out), 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("all checks passed"));
}

#[test]
fn init_refuses_to_overwrite_without_force() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(code(&falcon(dir.path(), &["init"], &[])), 0);
    let out = falcon(dir.path(), &["init", "--json"], &[]);
    assert_eq!(code(&out), 4);
    let err = json(&out);
    assert_eq!(err["error"]["code"], "conflict");
    assert!(err["error"]["hint"].as_str().unwrap().contains("--force"));
    assert_eq!(code(&falcon(dir.path(), &["init", "--force"], &[])), 0);
}

#[test]
fn doctor_names_a_dead_database_and_an_unwritable_artifact_dir() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, "not a folder").unwrap();
    let unwritable = blocker.join("artifacts");
    let out = falcon(
        dir.path(),
        &["doctor", "--json", "--db", "mysql://nobody@127.0.0.1:1/x", "--artifacts", &unwritable.display().to_string()],
        &[],
    );
    assert_eq!(code(&out), 1);
    let report = json(&out);
    assert_eq!(report["ok"], false);
    let failed: Vec<_> = report["checks"].as_array().unwrap().iter().filter(|c| c["ok"] == false).collect();
    assert_eq!(failed.len(), 2, "{report:#}");
    assert_eq!(failed[0]["component"], "database");
    assert!(failed[0]["detail"].as_str().unwrap().contains("Connection refused"), "{report:#}");
    assert_eq!(failed[1]["component"], "artifacts");
    assert!(failed[1]["detail"].as_str().unwrap().contains(&unwritable.display().to_string()), "{report:#}");
    assert!(failed.iter().all(|c| c["hint"].is_string()));
    // --calibrate against a dead database: the same report (the calibration is kept there), nothing measured.
    let out = falcon(dir.path(), &["doctor", "--json", "--calibrate", "--db", "mysql://nobody@127.0.0.1:1/x"], &[]);
    assert_eq!(code(&out), 1);
    let report = json(&out);
    assert!(report["calibration"].is_null() && report["checks"][1]["ok"] == false, "{report:#}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--calibrate skipped"), "{out:?}");
}

#[test]
fn layers_override_in_order_file_env_flags() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("falcon.toml"), "db = \"sqlite://from-file.db\"\nartifacts = \"arts\"\n").unwrap();
    let show = |args: &[&str], env: &[(&str, &str)]| {
        json(&falcon(dir.path(), &[&["config", "show", "--json"], args].concat(), env))
    };
    let file = show(&[], &[]);
    assert_eq!(file["config"]["db"], format!("sqlite://{}", dir.path().join("from-file.db").display()));
    assert_eq!(file["config"]["artifacts"], dir.path().join("arts").display().to_string());
    let env = show(&[], &[("FALCON_DB", "mysql://u:secret@db/falcon")]);
    assert_eq!(env["config"]["db"], "mysql://u:***@db/falcon", "env wins over the file; the password is hidden");
    let flag = show(&["--db", "sqlite://flag.db"], &[("FALCON_DB", "mysql://u@db/falcon")]);
    assert_eq!(flag["config"]["db"], "sqlite://flag.db", "flags win over env");
    let data_dir = show(&["--data-dir", "elsewhere"], &[]);
    assert_eq!(data_dir["config"]["data_dir"], "elsewhere");
}

#[test]
fn errors_have_the_right_exit_code_and_envelope() {
    let dir = tempfile::tempdir().unwrap();
    let out = falcon(dir.path(), &["doctor", "--json", "--config", "missing.toml"], &[]);
    assert_eq!(code(&out), 3);
    assert_eq!(json(&out)["error"]["code"], "not_found");

    std::fs::write(dir.path().join("falcon.toml"), "data_dir = \".falcon\"\ndatabase = \"x\"\n").unwrap();
    let out = falcon(dir.path(), &["doctor", "--json"], &[]);
    assert_eq!(code(&out), 1, "a corrupt config is a failure");
    let message = json(&out)["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("falcon.toml") && message.contains("database") && message.contains("line 2"), "{message}");

    let out = falcon(dir.path(), &["frobnicate", "--json"], &[]);
    assert_eq!(code(&out), 2);
    assert_eq!(json(&out)["error"]["code"], "usage");
    let out = falcon(dir.path(), &["frobnicate"], &[]);
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("frobnicate"));

    std::fs::remove_file(dir.path().join("falcon.toml")).unwrap();
    let out = falcon(dir.path(), &["doctor"], &[("FALCON_GCS_ANONYMOUS", "maybe")]);
    assert_eq!(code(&out), 1);
    assert!(String::from_utf8_lossy(&out.stderr).contains("FALCON_GCS_ANONYMOUS"));
}

#[test]
fn version_and_help_exit_zero() {
    let dir = tempfile::tempdir().unwrap();
    let out = falcon(dir.path(), &["--version"], &[]);
    assert_eq!(code(&out), 0);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&format!("falcon {}", env!("CARGO_PKG_VERSION"))));
    let out = falcon(dir.path(), &["--help"], &[]);
    assert_eq!(code(&out), 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("doctor"));
}
