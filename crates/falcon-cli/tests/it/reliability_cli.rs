//! Regression tests for hostile and careless input found by the reliability pass (docs/RELIABILITY.md lists
//! each defect with its test).

use crate::common::{code, falcon, json};

#[test]
fn a_since_longer_than_the_epoch_lists_everything_instead_of_overflowing() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(code(&falcon(dir.path(), &["init"])), 0);
    let out = falcon(dir.path(), &["exp", "list", "--since", "106751991168d", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(json(&out)["items"].is_array());
}

#[test]
fn goals_need_a_title_and_a_finite_target() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(code(&falcon(dir.path(), &["init"])), 0);
    for args in [
        &["goal", "create", "--title", "  ", "--metric", "mfu", "--json"][..],
        &["goal", "create", "--title", "t", "--metric", "mfu", "--target", "NaN", "--json"],
        &["goal", "create", "--title", "t", "--metric", "mfu", "--target", "inf", "--json"],
        &["goal", "create", "--title", "t", "--metric", "mfu", "--target", "-inf", "--json"],
    ] {
        let out = falcon(dir.path(), args);
        assert_eq!(code(&out), 2, "{args:?}");
        assert_eq!(json(&out)["error"]["code"], "usage", "{args:?}");
    }
    let listed = json(&falcon(dir.path(), &["goal", "list", "--json"]));
    assert!(listed["items"].as_array().unwrap().is_empty(), "nothing was created: {listed}");
}

#[test]
fn a_nul_byte_in_the_command_is_refused_at_submit() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(code(&falcon(dir.path(), &["init"])), 0);
    let spec = dir.path().join("nul.yaml");
    std::fs::write(
        &spec,
        "name: nul\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [echo, \"a\\0b\"]\nresources: {accelerator: cpu}\n",
    )
    .unwrap();
    let out = falcon(dir.path(), &["exp", "submit", &spec.display().to_string(), "--wait", "--json"]);
    assert_ne!(code(&out), 0);
    let message = json(&out)["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("workload.command") && message.contains("NUL"), "{message}");
    let listed = json(&falcon(dir.path(), &["exp", "list", "--json"]));
    assert!(listed["items"].as_array().unwrap().is_empty(), "nothing recorded");
}

#[test]
fn references_to_missing_goals_and_baselines_are_not_found_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(code(&falcon(d, &["init"])), 0);
    let plain = "name: q\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [true]\nresources: {accelerator: cpu}\n";
    std::fs::write(d.join("goal.yaml"), format!("goal: g-99999\n{plain}")).unwrap();
    std::fs::write(d.join("base.yaml"), format!("baseline: e-99999\n{plain}")).unwrap();
    std::fs::write(d.join("plain.yaml"), plain).unwrap();
    std::fs::write(d.join("sweep.yaml"), "base: plain.yaml\nsweep:\n  config.x: [1, 2]\n").unwrap();
    for (args, field) in [
        (&["exp", "submit", "goal.yaml", "--json"][..], "`goal`: goal g-99999"),
        (&["exp", "submit", "base.yaml", "--json"], "`baseline`: experiment e-99999"),
        (&["session", "submit", "sweep.yaml", "--goal", "g-999", "--json"], "`goal`: goal g-999"),
        (
            &["goal", "create", "--title", "t", "--metric", "mfu", "--baseline", "e-99999", "--json"],
            "`baseline`: experiment e-99999",
        ),
    ] {
        let out = falcon(d, args);
        assert_eq!(code(&out), 3, "{args:?}: {}", String::from_utf8_lossy(&out.stdout));
        let message = json(&out)["error"]["message"].as_str().unwrap().to_string();
        assert!(message.contains(field), "{args:?}: {message}");
    }
    let listed = json(&falcon(d, &["exp", "list", "--json"]));
    assert!(listed["items"].as_array().unwrap().is_empty(), "nothing recorded: {listed}");
    assert!(json(&falcon(d, &["goal", "list", "--json"]))["items"].as_array().unwrap().is_empty());
    // A goal names a baseline that runs after it with `goal set-baseline`, which checks it the same way.
    let goal = json(&falcon(d, &["goal", "create", "--title", "t", "--metric", "mfu", "--json"]));
    let gid = goal["id"].as_str().unwrap();
    let out = falcon(d, &["goal", "set-baseline", gid, "e-99999", "--json"]);
    assert_eq!(code(&out), 3);
    assert!(json(&out)["error"]["message"].as_str().unwrap().contains("`baseline`: experiment e-99999"));
    assert_eq!(code(&falcon(d, &["goal", "set-baseline", "g-99999", "--clear", "--json"])), 3, "a missing goal");
    let cleared = json(&falcon(d, &["goal", "set-baseline", gid, "--clear", "--json"]));
    assert!(cleared["baseline"].is_null(), "{cleared}");
    assert_eq!(code(&falcon(d, &["goal", "set-baseline", gid])), 2, "an experiment or --clear");
}

#[test]
fn specs_and_sweeps_must_be_small_regular_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(code(&falcon(d, &["init"])), 0);
    let fifo = d.join("spec.fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo (coreutils)");
    assert!(made.success());
    std::fs::write(d.join("huge.yaml"), vec![b'#'; (1 << 20) + 1]).unwrap();
    std::fs::write(d.join("sweep.yaml"), "base: /dev/zero\nsweep:\n  config.x: [1]\n").unwrap();
    // Each of these read until memory ran out (/dev/zero) or blocked forever (a FIFO with no writer).
    for (args, says) in [
        (vec!["exp", "submit", "/dev/zero", "--json"], "not a regular file"),
        (vec!["exp", "submit", fifo.to_str().unwrap(), "--json"], "not a regular file"),
        (vec!["exp", "submit", "huge.yaml", "--json"], "at most 1048576"),
        (vec!["session", "submit", "sweep.yaml", "--json"], "not a regular file"),
        (vec!["exp", "submit", ".", "--json"], "a directory"),
    ] {
        let out = falcon(d, &args);
        assert_eq!(code(&out), 1, "{args:?}");
        let message = json(&out)["error"]["message"].as_str().unwrap().to_string();
        assert!(message.contains(says), "{args:?}: {message}");
    }
}

#[test]
fn output_files_never_replace_links_devices_or_fifos() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let batch8 = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../falcon-analysis/tests/data/compare/batch8")
        .display()
        .to_string();
    std::fs::write(d.join("target.md"), "keep me").unwrap();
    std::os::unix::fs::symlink(d.join("target.md"), d.join("link.md")).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(d.join("out.fifo")).status().unwrap().success());
    for target in ["link.md", "out.fifo"] {
        let out = falcon(d, &["profile", "compare", &batch8, &batch8, "-o", target, "--force", "--json"]);
        assert_eq!(code(&out), 4, "{target}");
        assert!(json(&out)["error"]["message"].as_str().unwrap().contains("never replaced"), "{target}");
    }
    assert!(std::fs::symlink_metadata(d.join("link.md")).unwrap().file_type().is_symlink(), "the link is kept");
    assert_eq!(std::fs::read_to_string(d.join("target.md")).unwrap(), "keep me");
    // A device: /dev/full stays a device (as root, a rename over it made it a regular file).
    let out = falcon(d, &["profile", "compare", &batch8, &batch8, "--format", "md", "-o", "/dev/full", "--force"]);
    assert_eq!(code(&out), 4);
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata("/dev/full").unwrap().file_type().is_char_device());
}

#[test]
fn fifos_and_devices_given_to_the_readers_fail_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fifo = d.join("in.fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let fifo = fifo.display().to_string();
    // Each blocked forever on the FIFO or read /dev/zero until memory ran out; the test harness would hang.
    for args in [
        vec!["kernel", "analyze", &fifo, "--json"],
        vec!["kernel", "analyze", "/dev/zero", "--json"],
        vec!["accuracy", "compare", &fifo, &fifo, "--json"],
        vec!["accuracy", "compare", "/dev/zero", "/dev/zero", "--json"],
        vec!["accuracy", "tensors", &fifo, &fifo, "--json"],
        vec!["accuracy", "tensors", "/dev/zero", "/dev/zero", "--json"],
    ] {
        let out = falcon(d, &args);
        assert_eq!(code(&out), 1, "{args:?}");
        assert!(json(&out)["error"]["message"].as_str().unwrap().contains("not a regular file"), "{args:?}");
    }
}

#[test]
fn submit_wait_takes_a_timeout_and_leaves_the_experiment_running() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(code(&falcon(d, &["init"])), 0);
    std::fs::write(
        d.join("slow.yaml"),
        "name: slow\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sleep, '30']\nresources: {accelerator: cpu}\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = falcon(d, &["exp", "submit", "slow.yaml", "--wait", "--timeout", "2s", "--json"]);
    assert_eq!(code(&out), 1, "{}", String::from_utf8_lossy(&out.stdout));
    assert!(started.elapsed() < std::time::Duration::from_secs(25), "gave up at the timeout, not at the end");
    let message = json(&out)["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("e-1") && message.contains("--timeout"), "{message}");
    let shown = json(&falcon(d, &["exp", "show", "e-1", "--json"]));
    assert!(
        !["COMPLETED", "FAILED", "CANCELLED"].contains(&shown["status"].as_str().unwrap()),
        "left running: {shown}"
    );
    assert_eq!(code(&falcon(d, &["exp", "cancel", "e-1"])), 0);
    assert_eq!(code(&falcon(d, &["worker", "--passes", "2"])), 0, "the cancel reaches the job");
    assert_eq!(code(&falcon(d, &["exp", "submit", "slow.yaml", "--timeout", "2s"])), 2, "--timeout needs --wait");
    assert_eq!(code(&falcon(d, &["exp", "submit", "slow.yaml", "--wait", "--timeout", "soon"])), 2);
}

/// A workload that writes what a careless job writes: a 250-character file name, `x\y` beside `x/y`, a control
/// character, a symlink, a FIFO, and a metrics file with a NaN line and a garbage line.
const HOSTILE_OUTPUTS: &str = r#"cd "$FALCON_ARTIFACT_DIR"
long=$(printf 'n%.0s' $(seq 250))
echo long > "$long.txt"
mkdir x && echo slash > x/y && echo backslash > 'x\y'
echo tab > "$(printf 'a\tb')"
ln -s /etc/hostname link
mkfifo pipe
i=0; while [ $i -lt 20 ]; do echo "{\"step\": $i, \"loss\": $((20 - i)), \"train\": {\"acc\": 0.$i}}" >> metrics.jsonl; i=$((i + 1)); done
echo '{"step": 20, "loss": NaN}' >> metrics.jsonl
echo 'this is not json' >> metrics.jsonl
"#;

#[test]
fn every_file_a_job_writes_is_stored_or_listed_as_skipped_and_bad_metrics_lines_are_noted() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(code(&falcon(d, &["init"])), 0);
    std::fs::write(d.join("hostile.sh"), HOSTILE_OUTPUTS).unwrap();
    std::fs::write(
        d.join("hostile.yaml"),
        "name: hostile\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, hostile.sh]\nresources: {accelerator: cpu}\n",
    )
    .unwrap();
    let out = falcon(d, &["exp", "submit", "hostile.yaml", "--wait", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let shown = json(&falcon(d, &["exp", "show", "e-1", "--json"]));
    assert_eq!(shown["status"], "COMPLETED", "{shown}");

    // The metrics are summarised from the 20 good lines; the NaN and the garbage line are notes.
    let loss = &shown["metrics"]["loss"];
    assert!(loss["count"].as_i64().unwrap() > 0 && loss["mean"].as_f64().unwrap().is_finite(), "{shown}");
    assert!(shown["metrics"]["train/acc"].is_object(), "nested fields are flattened: {shown}");
    let notes = shown["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n["line"] == 22 && n["reason"].as_str().unwrap().starts_with("not valid JSON")),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|n| n["line"].is_null() && n["reason"].as_str().unwrap().contains("NaN or infinite")),
        "{notes:?}"
    );
    assert!(notes.iter().all(|n| n["file"].as_str().unwrap().ends_with("metrics.jsonl")), "{notes:?}");

    // Every file is an artifact or skipped with its reason; nothing collides.
    let artifacts = json(&falcon(d, &["exp", "artifacts", "e-1", "--json", "--limit", "1000"]));
    let keys: Vec<String> =
        artifacts["items"].as_array().unwrap().iter().map(|a| a["key"].as_str().unwrap().to_string()).collect();
    let has = |suffix: &str| keys.iter().any(|k| k.ends_with(suffix));
    assert!(has("/x/y") && has("/x%5Cy") && has("/a%09b") && has("/metrics.jsonl"), "{keys:?}");
    assert!(keys.iter().any(|k| k.contains("/nnnnnnnn") && k.contains('~')), "the long name is stored: {keys:?}");
    let skipped = shown["skipped"].as_array().unwrap();
    let reason_of =
        |path: &str| skipped.iter().find(|s| s["path"] == path).map(|s| s["reason"].as_str().unwrap().to_string());
    assert!(reason_of("link").is_some_and(|r| r.contains("symbolic link")), "{skipped:?}");
    assert!(reason_of("pipe").is_some_and(|r| r.contains("FIFO")), "{skipped:?}");
    assert_eq!(skipped.len(), 2, "{skipped:?}");

    // The table names them too, with the control character escaped.
    let text = String::from_utf8(falcon(d, &["exp", "show", "e-1"]).stdout).unwrap();
    assert!(
        text.contains("2 file(s) the job wrote are not stored") && text.contains("link: a symbolic link"),
        "{text}"
    );
    assert!(text.contains("note(s) on its files") && !text.contains('\u{1b}'), "{text}");
}
