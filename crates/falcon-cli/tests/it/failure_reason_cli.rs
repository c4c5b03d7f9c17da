//! A failed workload at the process boundary: `falcon exp submit --wait --json` on the embedded defaults (SQLite,
//! local artifacts, local jobs) exits 1 and still prints the experiment's detail. The failure reason (the last
//! meaningful line of the workload's stderr, a Python exception, the exit status alone) and the logs are tested in
//! process in falcon-app/tests/it/experiments.rs.

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

/// The process boundary of a failed experiment: `exp submit --wait --json` exits 1 with the experiment's detail
/// (status FAILED) still on stdout. The reason it shows is tested in process in falcon-app/tests/it/experiments.rs.
#[test]
fn a_failed_workload_shows_its_last_stderr_line() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(code(&falcon(dir.path(), &["init"])), 0);
    let spec = write_spec(dir.path(), "bad-flag", r#"echo starting; echo "error: bad flag" >&2; exit 2"#);
    let out = falcon(dir.path(), &["exp", "submit", &spec, "--wait", "--json"]);
    assert_eq!(code(&out), 1, "a failed experiment fails `--wait`: {}", String::from_utf8_lossy(&out.stderr));
    let submitted = json(&out);
    assert_eq!(submitted["status"], "FAILED", "{submitted:#}");
}
