//! `falcon profile analyze` at the process boundary: bad input exits 1 with the JSON error envelope on stdout (or
//! `error:` on stderr) and a missing one exits 3; a `gs://` run fanned out to jobs that run the `falcon` binary
//! itself prints the same report as one process. The use case's outcomes (the analyses of files, run directories,
//! `gs://` URIs and experiments, the errors' kinds, summary rows) are tested in process in
//! falcon-app/tests/it/profile.rs.

use crate::common::{falcon, falcon_with, json};
use std::path::{Path, PathBuf};
use std::process::Command;

fn capture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-xplane/tests/data").join(name)
}

/// The process boundary of bad input: exit 1 with the `{"error": {"message": …}}` envelope on stdout under
/// `--json`, or `error:` on stderr without it; a missing file exits 3. What each error says and its kind are tested
/// in process in falcon-app/tests/it/profile.rs.
#[test]
fn bad_inputs_fail_with_clear_errors_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let cases = crate::common::bad_xplanes();
    for (name, bytes) in &cases {
        std::fs::write(dir.path().join(name), bytes).unwrap();
        let out = falcon(dir.path(), &["profile", "analyze", name, "--json"]);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", String::from_utf8_lossy(&out.stdout));
        let err = json(&out);
        assert!(err["error"]["message"].is_string(), "{name}: the error envelope: {err}");
        let out = falcon(dir.path(), &["profile", "analyze", name]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("error:"), "{name}");
    }
    let out = falcon(dir.path(), &["profile", "analyze", "no-such-file.xplane.pb", "--json"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stdout));
}

/// The process boundary of `--fan-out`: a `gs://` run of three hosts (one cut off mid-write) analysed in one
/// process and fanned out to two jobs, which run the `falcon` binary itself, exits 0 both ways with the same report
/// byte for byte. Fetching and analysing `gs://` URIs is tested in process in falcon-app/tests/it/profile.rs.
/// Needs the GCS emulator (`FALCON_TEST_GCS_ENDPOINT`).
#[test]
fn a_gs_uri_is_fetched_from_the_bucket_and_analysed() {
    let endpoint = std::env::var("FALCON_TEST_GCS_ENDPOINT").unwrap_or_else(|_| {
        panic!("the GCS emulator is needed: FALCON_TEST_GCS_ENDPOINT is not set (run scripts/test.sh, which starts it)")
    });
    let bucket = format!("falcon-profile-{}", std::process::id());
    let curl = |args: &[&str]| {
        let out = Command::new("curl").arg("-fsS").args(args).output().expect("curl");
        assert!(out.status.success(), "curl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    curl(&[
        "-X",
        "POST",
        "-H",
        "Content-Type: application/json",
        "-d",
        &format!("{{\"name\":\"{bucket}\"}}"),
        &format!("{endpoint}/storage/v1/b"),
    ]);

    let dir = tempfile::tempdir().unwrap();
    let gcs_env = [("FALCON_GCS_ENDPOINT", endpoint.as_str()), ("FALCON_GCS_ANONYMOUS", "1")];
    let run = |args: &[&str]| falcon_with(dir.path(), args, &gcs_env);

    // A run of three hosts, one cut off mid-write.
    let bytes = std::fs::read(capture("tpu_v6e_inference.xplane.pb")).unwrap();
    for (host, body) in [("w-0", &bytes[..]), ("w-1", &bytes[..]), ("w-2", &bytes[..bytes.len() / 2])] {
        let path = dir.path().join(format!("{host}.upload"));
        std::fs::write(&path, body).unwrap();
        let name = format!("team%2Frun2%2Fplugins%2Fprofile%2F2026_02_03_04_05_06%2F{host}.xplane.pb");
        curl(&[
            "-X",
            "POST",
            "--data-binary",
            &format!("@{}", path.display()),
            "-H",
            "Content-Type: application/octet-stream",
            &format!("{endpoint}/upload/storage/v1/b/{bucket}/o?uploadType=media&name={name}"),
        ]);
    }

    // Fanned out to two jobs (the local backend), each downloading only its hosts: the same report, byte for byte.
    assert_eq!(run(&["init"]).status.code(), Some(0));
    let uri = format!("gs://{bucket}/team/run2");
    let one = run(&["--json", "profile", "analyze", &uri]);
    let two = run(&["--json", "profile", "analyze", &uri, "--fan-out", "2"]);
    assert_eq!((one.status.code(), two.status.code()), (Some(0), Some(0)), "{}", String::from_utf8_lossy(&two.stdout));
    assert!(
        String::from_utf8_lossy(&two.stderr).contains("3 hosts in 2 jobs"),
        "{}",
        String::from_utf8_lossy(&two.stderr)
    );
    assert!(one.stdout == two.stdout, "the merged report of gs:// differs from the single-process one");
}
