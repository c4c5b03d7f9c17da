//! `falcon profile compare A B` at the process boundary: the global `--json` and `--format json` print the same
//! comparison, `--fail-on-regression` exits 5 after printing with a reason on stderr, `-o` writes its file whole or
//! not at all (4 for an existing file without `--force`), and bad inputs exit with the code docs/DESIGN.md §6 gives
//! them, clap's 2 included. The use case's outcomes (zero deltas against itself, per-op deltas that add up, the
//! Markdown report's numbers, config diffs and new ops) are tested in process in falcon-app/tests/it/compare.rs.

use crate::common::{code, falcon, json};
use std::path::{Path, PathBuf};

fn compare_data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../falcon-analysis/tests/data/compare")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

fn capture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-xplane/tests/data").join(name).to_str().unwrap().to_string()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The process boundary of `--fail-on-regression`: a regression exits 0 without the flag and 5 with it, after
/// printing the same comparison (JSON or the table) and a reason on stderr; reversed, an improvement exits 0. The
/// comparison's numbers are tested in process in falcon-app/tests/it/compare.rs.
#[test]
fn batch8_against_batch16_regresses_with_deltas_that_add_up() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (compare_data("batch8"), compare_data("batch16"));
    let out = falcon(dir.path(), &["profile", "compare", &a, &b, "--json"]);
    assert_eq!(code(&out), 0, "a regression without --fail-on-regression exits 0: {}", stderr(&out));
    let c = json(&out);

    // --format json is --json; --fail-on-regression exits 5 after printing, with a reason on stderr.
    let out = falcon(dir.path(), &["profile", "compare", &a, &b, "--format", "json", "--fail-on-regression"]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert_eq!(json(&out)["step_time"], c["step_time"]);
    assert!(stderr(&out).contains("regress"), "{}", stderr(&out));
    let out = falcon(dir.path(), &["profile", "compare", &a, &b, "--fail-on-regression"]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(stdout(&out).contains("Step time"), "the table is printed before exiting 5");
    // Reversed, B is faster: not a regression.
    let out = falcon(dir.path(), &["profile", "compare", &b, &a, "--json", "--fail-on-regression"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// The process boundary of `-o`: the HTML report goes to its file, nothing to stdout, "wrote …" to stderr, and no
/// temporary file is left. The TPU comparison itself (zero deltas, a still roofline) is tested in process in
/// falcon-app/tests/it/compare.rs.
#[test]
fn a_tpu_capture_against_itself_has_zero_deltas_and_a_still_roofline() {
    let dir = tempfile::tempdir().unwrap();
    let a = capture("tpu_v6e_inference.xplane.pb");
    let out = falcon(dir.path(), &["profile", "compare", &a, &a, "--format", "html", "-o", "report.html"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "-o writes the file, not stdout");
    assert!(stderr(&out).contains("wrote report.html"), "{}", stderr(&out));
    assert!(dir.path().join("report.html").is_file());
    let leftovers: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary files left: {leftovers:?}");
}

/// The process boundary of `-o`: a new file is written (exit 0), an existing one is kept without `--force` (exit 4)
/// and replaced with it, and a folder that is not there fails without creating it (3 under `--json`, with the
/// error envelope). The rendered documents are tested in process in falcon-app/tests/it/compare.rs.
#[test]
fn output_files_are_written_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let a = compare_data("batch8");
    let out = falcon(dir.path(), &["profile", "compare", &a, &a, "--format", "md", "-o", "cmp.md"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = falcon(dir.path(), &["profile", "compare", &a, &a, "--json", "-o", "cmp.md"]);
    assert_eq!(code(&out), 4, "an existing file is replaced only with --force: {}", stderr(&out));
    assert!(std::fs::read_to_string(dir.path().join("cmp.md")).unwrap().starts_with("# Profile comparison"));
    let out = falcon(dir.path(), &["profile", "compare", &a, &a, "--json", "-o", "cmp.md", "--force"]);
    assert_eq!(code(&out), 0, "an existing file is replaced with --force: {}", stderr(&out));

    let out = falcon(dir.path(), &["profile", "compare", &a, &a, "-o", "missing/dir/cmp.txt"]);
    assert_ne!(code(&out), 0);
    assert!(stderr(&out).contains("missing/dir"), "{}", stderr(&out));
    assert!(!dir.path().join("missing").exists(), "nothing written");
    let out = falcon(dir.path(), &["profile", "compare", &a, &a, "--json", "-o", "missing/cmp.json"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(json(&out)["error"]["message"].as_str().unwrap().contains("missing"));
}

/// The process boundary of bad inputs: not found exits 3 and unreadable exits 1, named on stderr or in the JSON
/// error envelope; captures of different platforms exit 1; an unknown `--format` is clap's 2. What the errors say
/// and their kinds are tested in process in falcon-app/tests/it/compare.rs.
#[test]
fn bad_inputs_fail_with_clear_errors_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let a = compare_data("batch8");

    let out = falcon(dir.path(), &["profile", "compare", &a, "no-such-run.xplane.pb"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("no-such-run.xplane.pb"), "{}", stderr(&out));
    let out = falcon(dir.path(), &["profile", "compare", "nowhere", &a, "--json"]);
    assert_eq!(code(&out), 3);
    assert!(json(&out)["error"]["message"].as_str().unwrap().contains("nowhere"));

    std::fs::write(
        dir.path().join("x.xplane.pb"),
        (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect::<Vec<u8>>(),
    )
    .unwrap();
    let out = falcon(dir.path(), &["profile", "compare", &a, "x.xplane.pb"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("x.xplane.pb"), "{}", stderr(&out));
    let out = falcon(dir.path(), &["profile", "compare", "x.xplane.pb", &a, "--json"]);
    assert_eq!(code(&out), 1);
    assert!(json(&out)["error"]["message"].as_str().unwrap().contains("x.xplane.pb"));

    let tpu = capture("tpu_v6e_inference.xplane.pb");
    let out = falcon(dir.path(), &["profile", "compare", &tpu, &a, "--json"]);
    assert_eq!(code(&out), 1, "{}", stdout(&out));

    let out = falcon(dir.path(), &["profile", "compare", &a, &a, "--format", "pdf"]);
    assert_eq!(code(&out), 2, "an unknown format is a usage error");
}
