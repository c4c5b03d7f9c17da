//! `profile analyze --fan-out N`: a 64-host run analysed by N jobs that EXP submits (on the local backend and on
//! the REAL single-node Slurm cluster of `scripts/services.sh up`, `FALCON_TEST_SLURM_CONF` /
//! `FALCON_TEST_SLURM_PARTITION`; without them the Slurm test fails saying so), merged into the report the
//! single-process analysis prints — byte for byte in `--json`.

use crate::common;

use crate::common::{code, falcon, falcon_with, json};
use std::path::Path;

const TPU: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../falcon-xplane/tests/data/tpu_v6e_inference.xplane.pb");

/// `dir/run`: 64 hosts of the TPU capture, host 17's file cut short (a job killed while writing it).
fn run64(dir: &Path) {
    let run = dir.join("run");
    std::fs::create_dir_all(&run).unwrap();
    let bytes = std::fs::read(TPU).unwrap();
    for i in 0..64 {
        let cut = if i == 17 { bytes.len() / 2 } else { bytes.len() };
        std::fs::write(run.join(format!("host{i:02}.xplane.pb")), &bytes[..cut]).unwrap();
    }
}

fn init(dir: &Path, config: Option<&str>) {
    if let Some(text) = config {
        std::fs::write(dir.join("falcon.toml"), text).unwrap();
    }
    let args: &[&str] = if config.is_some() { &["init", "--keep"] } else { &["init"] };
    let out = falcon(dir, args);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
}

fn analyze(dir: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["--json", "profile", "analyze", "run"];
    args.extend_from_slice(extra);
    let out = falcon(dir, &args);
    assert_eq!(code(&out), 0, "{extra:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The fan-out's session: its experiments, each completed with the shard's partial as an artifact.
fn check_session(dir: &Path, jobs: usize, pool: &str) {
    let newest = json(&falcon(dir, &["--json", "exp", "list", "--limit", "1"]));
    let session = newest["items"][0]["session"].as_str().unwrap().to_string();
    let shown = json(&falcon(dir, &["--json", "session", "show", &session]));
    let experiments = shown["experiments"].as_array().unwrap();
    assert_eq!(experiments.len(), jobs, "{shown}");
    for e in experiments {
        assert_eq!(e["status"], "COMPLETED", "{e}");
        let id = e["id"].as_str().unwrap();
        let show = json(&falcon(dir, &["--json", "exp", "show", id]));
        let text = show.to_string();
        assert!(text.contains("profile-shard.cbor"), "{id} keeps its partial: {text:.2000}");
    }
    // Each job ran on the pool (a short job can end between two checks, so its experiment may never show RUNNING;
    // the job keeps its pool).
    let runs = json(&falcon(dir, &["--json", "goodput", "--session", &session]));
    let pools: Vec<&str> = runs["runs"].as_array().unwrap().iter().filter_map(|r| r["pool"].as_str()).collect();
    assert_eq!(pools, vec![pool; jobs], "{runs}");
}

#[test]
fn a_fan_out_on_the_local_backend_equals_the_single_process_report() {
    let dir = tempfile::tempdir().unwrap();
    run64(dir.path());
    init(dir.path(), None);
    let single = analyze(dir.path(), &[]);
    let report = json(&single);
    assert_eq!(report["files"].as_array().unwrap().len(), 63);
    assert_eq!(report["failed_hosts"][0]["host"], "host17", "{}", report["failed_hosts"]);
    let fanned = analyze(dir.path(), &["--fan-out", "8"]);
    let stderr = String::from_utf8_lossy(&fanned.stderr);
    assert!(stderr.contains("64 hosts in 8 jobs"), "{stderr}");
    assert!(single.stdout == fanned.stdout, "the merged report differs from the single-process one");
    check_session(dir.path(), 8, "local");
    // Other tools, other shard counts: still the same report; the text output too.
    for (tools, n) in [("overview,steps", "3"), ("ops,hlo,roofline,memory,kernels", "64")] {
        let one = analyze(dir.path(), &["--tool", tools]);
        let many = analyze(dir.path(), &["--tool", tools, "--fan-out", n]);
        assert!(one.stdout == many.stdout, "--tool {tools} in {n} jobs differs");
    }
    let text = |extra: &[&str]| {
        let mut args = vec!["profile", "analyze", "run", "--tool", "overview"];
        args.extend_from_slice(extra);
        falcon(dir.path(), &args).stdout
    };
    assert_eq!(text(&["--fan-out", "2"]), text(&[]));
}

/// `dir/run`: 64 hosts of a real multi-host run, eight copies of the 8-process JAX run whose process 5 starts each
/// step 80 ms late (`examples/multihost`): host `host{8c+i:02}` is copy `c` of process `i`.
fn run64_multihost(dir: &Path) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../falcon-analysis/tests/data/multihost/jax-8-late5-80ms/plugins/profile/2026_12_01_00_00_00");
    let run = dir.join("run");
    std::fs::create_dir_all(&run).unwrap();
    for c in 0..8 {
        for i in 0..8 {
            std::fs::copy(
                from.join(format!("host-{i}.xplane.pb")),
                run.join(format!("host{:02}.xplane.pb", 8 * c + i)),
            )
            .unwrap();
        }
    }
}

#[test]
fn a_multi_host_run_fanned_out_names_the_same_straggler_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    run64_multihost(dir.path());
    init(dir.path(), None);
    let single = analyze(dir.path(), &["--tool", "steps"]);
    let report = json(&single);
    let m = &report["multihost"];
    assert_eq!(m["hosts"].as_array().unwrap().len(), 64, "{m:.2000}");
    assert_eq!(m["collectives"][0]["members"], 64, "every host's all-reduce of a step is one instance");
    // The copies of process 5 arrive together, last: the first of them (in host order) is named.
    assert_eq!(m["straggler"]["host"], "host05", "{:.2000}", m["straggler"]);
    assert_eq!(m["straggler"]["steps_late"], 10);
    let fanned = analyze(dir.path(), &["--tool", "steps", "--fan-out", "4"]);
    assert!(String::from_utf8_lossy(&fanned.stderr).contains("64 hosts in 4 jobs"));
    assert!(single.stdout == fanned.stdout, "the merged report differs from the single-process one");
    // `profile trace` says the same of the run.
    let trace = json(&falcon(dir.path(), &["--json", "profile", "trace", "run"]));
    assert_eq!(trace["straggler"], m["straggler"]);
    assert_eq!(trace["hosts"], m["hosts"]);
}

#[test]
fn a_fan_out_on_the_slurm_test_cluster_equals_the_single_process_report() {
    let dir = tempfile::tempdir().unwrap();
    run64(dir.path());
    let config = common::slurm_pool_config();
    init(dir.path(), Some(&config));
    let single = analyze(dir.path(), &[]);
    let fanned = analyze(dir.path(), &["--fan-out", "8", "--timeout", "10m"]);
    let stderr = String::from_utf8_lossy(&fanned.stderr);
    assert!(stderr.contains("64 hosts in 8 jobs"), "{stderr}");
    assert!(single.stdout == fanned.stdout, "the merged report differs from the single-process one");
    check_session(dir.path(), 8, "slurm");
}

#[test]
fn the_configured_threshold_fans_out_a_run_with_more_hosts_and_fan_out_0_runs_here() {
    let dir = tempfile::tempdir().unwrap();
    run64(dir.path());
    init(dir.path(), Some("[analysis]\nfan_out_hosts = 40\n"));
    let auto = analyze(dir.path(), &["--tool", "steps"]);
    assert!(String::from_utf8_lossy(&auto.stderr).contains("64 hosts in 2 jobs"));
    let here = analyze(dir.path(), &["--tool", "steps", "--fan-out", "0"]);
    assert!(!String::from_utf8_lossy(&here.stderr).contains("jobs"), "{}", String::from_utf8_lossy(&here.stderr));
    assert!(auto.stdout == here.stdout);
    // --timeout only bounds a fan-out's wait: with none it is a usage error, not ignored.
    let unused = falcon(dir.path(), &["--json", "profile", "analyze", "run", "--fan-out", "0", "--timeout", "5m"]);
    assert_eq!(code(&unused), 2);
    assert!(String::from_utf8_lossy(&unused.stdout).contains("--timeout"));
    let shown = json(&falcon(dir.path(), &["--json", "config", "show"]));
    assert_eq!(shown["config"]["analysis"]["fan_out_hosts"], 40, "{shown}");
    // A host count at the threshold stays here; 0 is refused by name.
    std::fs::write(dir.path().join("falcon.toml"), "[analysis]\nfan_out_hosts = 64\n").unwrap();
    let stays = analyze(dir.path(), &["--tool", "steps"]);
    assert!(!String::from_utf8_lossy(&stays.stderr).contains("jobs"));
    std::fs::write(dir.path().join("falcon.toml"), "[analysis]\nfan_out_hosts = 0\n").unwrap();
    let zero = falcon(dir.path(), &["--json", "profile", "analyze", "run"]);
    assert_ne!(code(&zero), 0);
    assert!(String::from_utf8_lossy(&zero.stdout).contains("fan_out_hosts = 0"));
}

#[test]
fn a_run_no_host_of_which_can_be_read_fails_fanned_out_as_in_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    for i in 0..4 {
        std::fs::write(run.join(format!("h{i}.xplane.pb")), b"not a profile").unwrap();
    }
    init(dir.path(), None);
    let one = falcon(dir.path(), &["--json", "profile", "analyze", "run"]);
    let many = falcon(dir.path(), &["--json", "profile", "analyze", "run", "--fan-out", "2"]);
    assert_eq!((code(&one), code(&many)), (code(&one), code(&one)));
    assert_ne!(code(&one), 0);
    let message = |o: &std::process::Output| json(o)["error"]["message"].as_str().unwrap().to_string();
    assert!(message(&one).contains("none of the run's 4 hosts could be read"), "{}", message(&one));
    assert_eq!(message(&many), message(&one));
}

#[test]
fn profile_shard_writes_a_partial_and_refuses_what_is_not_a_shard() {
    let dir = tempfile::tempdir().unwrap();
    run64(dir.path());
    let out = falcon(dir.path(), &["--json", "profile", "shard", "run", "--shard", "1/8", "-o", "p.cbor"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out);
    assert_eq!((v["shard"].as_u64(), v["shards"].as_u64(), v["run_hosts"].as_u64()), (Some(1), Some(8), Some(64)));
    // Shard 1 of 8 is hosts 8..16: host17 is not in it.
    assert_eq!((v["hosts_read"].as_u64(), v["hosts_failed"].as_u64()), (Some(8), Some(0)));
    assert_eq!(std::fs::metadata(dir.path().join("p.cbor")).unwrap().len(), v["bytes"].as_u64().unwrap());
    // An existing output is replaced only with --force; a FIFO or a symlink never is.
    let again = falcon(dir.path(), &["--json", "profile", "shard", "run", "--shard", "1/8", "-o", "p.cbor"]);
    assert_eq!(code(&again), 4, "{}", String::from_utf8_lossy(&again.stdout));
    let forced =
        falcon(dir.path(), &["--json", "profile", "shard", "run", "--shard", "1/8", "-o", "p.cbor", "--force"]);
    assert_eq!(code(&forced), 0, "{}", String::from_utf8_lossy(&forced.stdout));
    assert!(std::process::Command::new("mkfifo").arg(dir.path().join("fifo")).status().unwrap().success());
    std::os::unix::fs::symlink(dir.path().join("p.cbor"), dir.path().join("link")).unwrap();
    for target in ["fifo", "link"] {
        let out = falcon(dir.path(), &["--json", "profile", "shard", "run", "--shard", "1/8", "-o", target, "--force"]);
        assert_ne!(code(&out), 0, "{target}");
        assert!(String::from_utf8_lossy(&out.stdout).contains(target), "{target}");
    }
    let two = json(&falcon(dir.path(), &["--json", "profile", "shard", "run", "--shard", "2/8", "-o", "q.cbor"]));
    assert_eq!((two["hosts_read"].as_u64(), two["hosts_failed"].as_u64()), (Some(7), Some(1)));
    for bad in ["8/8", "1", "a/b", "0/0"] {
        let out = falcon(dir.path(), &["--json", "profile", "shard", "run", "--shard", bad, "-o", "x.cbor"]);
        assert_eq!(code(&out), 2, "{bad}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("--shard"), "{bad}");
    }
    // Outside a job, with no --output: where to write is asked for.
    let out = falcon(dir.path(), &["--json", "profile", "shard", "run", "--shard", "0/2"]);
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stdout).contains("FALCON_ARTIFACT_DIR"));
    let inside = falcon_with(
        dir.path(),
        &["profile", "shard", "run", "--shard", "0/2", "--tool", "steps"],
        &[("FALCON_ARTIFACT_DIR", dir.path().to_str().unwrap())],
    );
    assert_eq!(code(&inside), 0, "{}", String::from_utf8_lossy(&inside.stderr));
    assert!(dir.path().join("profile-shard.cbor").is_file());
    // An experiment's profile is analysed in one process.
    let e = falcon(dir.path(), &["--json", "profile", "shard", "e-3", "--shard", "0/2", "-o", "x.cbor"]);
    assert_ne!(code(&e), 0);
    assert!(String::from_utf8_lossy(&e.stdout).contains("one process"), "{}", String::from_utf8_lossy(&e.stdout));
}
