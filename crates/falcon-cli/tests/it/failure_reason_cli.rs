//! A failed workload says why, as a user sees it: `falcon exp submit --wait` on the embedded defaults (SQLite,
//! local artifacts, local jobs), then `exp show`. The failure reason carries the last meaningful line of the
//! workload's stderr; the whole stderr stays in `exp logs`.

use crate::common::{code, falcon, json};
use std::path::Path;

fn write_spec(dir: &Path, name: &str, script: &str) -> String {
    let text = format!(
        "name: {name}\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, '{script}']\n\
         resources: {{accelerator: cpu}}\nretries: 0\n"
    );
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The `reason` of the last transition in an `exp show --json` object.
fn last_reason(shown: &serde_json::Value) -> String {
    let history = shown["history"].as_array().unwrap_or_else(|| panic!("no history: {shown:#}"));
    history.last().and_then(|t| t["reason"].as_str()).unwrap_or_else(|| panic!("no reason: {shown:#}")).to_string()
}

#[test]
fn a_failed_workload_shows_its_last_stderr_line() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(code(&falcon(dir.path(), &["init"])), 0);
    let spec = write_spec(dir.path(), "bad-flag", r#"echo starting; echo "error: bad flag" >&2; exit 2"#);
    let out = falcon(dir.path(), &["exp", "submit", &spec, "--wait", "--json"]);
    assert_eq!(code(&out), 1, "a failed experiment fails `--wait`: {}", String::from_utf8_lossy(&out.stderr));
    let submitted = json(&out);
    assert_eq!(submitted["status"], "FAILED", "{submitted:#}");
    assert_eq!(last_reason(&submitted), "job failed with exit code 2: exited with status 2: error: bad flag");

    let show = falcon(dir.path(), &["exp", "show", "e-1", "--json"]);
    assert_eq!(code(&show), 0);
    let shown = json(&show);
    assert_eq!(shown["status"], "FAILED");
    let history = shown["history"].as_array().unwrap();
    let last = history.last().unwrap();
    // From RUNNING, or straight from PROVISIONING when the job ended between two polls.
    assert_eq!(last["to"], "FAILED", "{shown:#}");
    let reason = last_reason(&shown);
    assert!(reason.contains("bad flag"), "{reason}");
    assert!(!reason.contains("starting"), "stdout is not the cause: {reason}");

    // The text view shows the same reason, and the logs still hold everything.
    let text = falcon(dir.path(), &["exp", "show", "e-1"]);
    assert_eq!(code(&text), 0);
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("error: bad flag"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
    let logs = falcon(dir.path(), &["exp", "logs", "e-1"]);
    let logs = String::from_utf8_lossy(&logs.stdout);
    assert!(logs.contains("starting") && logs.contains("error: bad flag"), "{logs}");
}

#[test]
fn a_python_traceback_shows_its_exception_and_silence_shows_the_status() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(code(&falcon(dir.path(), &["init"])), 0);
    let traceback = write_spec(
        dir.path(),
        "traceback",
        concat!(
            r#"printf "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"#,
            r#"    raise ValueError(\"bad thing\")\n\033[31mValueError: bad thing\033[0m\n\n" >&2; exit 1"#,
        ),
    );
    let out = falcon(dir.path(), &["exp", "submit", &traceback, "--wait", "--json"]);
    assert_eq!(code(&out), 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(last_reason(&json(&out)), "job failed with exit code 1: exited with status 1: ValueError: bad thing");

    // Nothing on stderr: the reason is the exit status alone, as before.
    let quiet = write_spec(dir.path(), "quiet", "echo only stdout; exit 3");
    let out = falcon(dir.path(), &["exp", "submit", &quiet, "--wait", "--json"]);
    assert_eq!(code(&out), 1);
    assert_eq!(last_reason(&json(&out)), "job failed with exit code 3: exited with status 3");
}
