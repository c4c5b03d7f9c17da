//! The second security pass (issue 44; docs/RELIABILITY.md, "Security"), one test per finding, on the real binary
//! over a fresh store: a workload cannot reach Falcon's store, configuration, credentials or another
//! experiment's artifacts; collection follows no link, no hard link, no FIFO, keeps no sparse or oversized file;
//! a stored artifact changed behind Falcon's back is refused and recorded; a profile cannot take the memory; the
//! lows (ids in one spelling, JSON-RPC's parse error, no file contents in errors, a long name recorded). The
//! connection findings are `security_connections.rs`.
//!
//! Run as root (as CI does), jobs run as users of their own: every job of these tests is one.

use crate::common;

use crate::common::serve::{client, get_json, project, Server};
use crate::common::{code, falcon, falcon_with, json};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Submits `spec` (YAML text) and waits for it to end; its `exp show --json`.
fn run(dir: &Path, name: &str, spec: &str, env: &[(&str, &str)]) -> Value {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, spec).unwrap();
    let out =
        falcon_with(dir, &["exp", "submit", &path.to_string_lossy(), "--wait", "--timeout", "120s", "--json"], env);
    assert_eq!(code(&out), 0, "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let id = json(&out)["id"].as_str().unwrap().to_string();
    json(&falcon(dir, &["exp", "show", &id, "--json"]))
}

fn shell(name: &str, script: &str) -> String {
    let script = script.replace('\'', "'\"'\"'");
    format!("name: {name}\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, '{script}']\nresources: {{accelerator: cpu}}\n")
}

/// The stored bytes of an experiment's artifact (the local store under the test's data dir).
fn stored(dir: &Path, id: &str, path: &str) -> Option<Vec<u8>> {
    std::fs::read(dir.join(".falcon/artifacts/experiments").join(id).join(path)).ok()
}

fn skipped<'a>(shown: &'a Value, path: &str) -> Option<&'a str> {
    shown["skipped"].as_array()?.iter().find(|s| s["path"] == path).and_then(|s| s["reason"].as_str())
}

/// Finding 1 (medium): on the local backend a job ran as the server's user in a folder that sees `falcon.toml`
/// and `.falcon/`: it created an admin token with `falcon token create`, hard-linked the database into its
/// artifacts (the collector's open and close dropped SQLite's locks; a copy of the token hashes was served), and
/// overwrote another experiment's stored artifact. Now the job runs as a user of its own in a namespace where
/// none of that is there, with an environment without Falcon's settings.
#[test]
fn a_workload_reaches_neither_the_store_nor_the_configuration_nor_another_experiments_artifacts() {
    let dir = project(None);
    let d = dir.path();
    let victim = run(d, "victim", &shell("victim", "echo victim > $FALCON_ARTIFACT_DIR/result.txt"), &[]);
    assert_eq!(victim["status"], "COMPLETED", "{victim:#}");
    let victim_id = victim["id"].as_str().unwrap().to_string();

    let f = env!("CARGO_BIN_EXE_falcon");
    let root = d.display();
    let attack = format!(
        "A=$FALCON_ARTIFACT_DIR; id -u > $A/uid.txt; env > $A/env.txt; \
         {f} token create --name evil --scope admin --json > $A/token.txt 2>&1; \
         {f} --config {root}/falcon.toml token create --name evil2 --scope admin --json >> $A/token.txt 2>&1; \
         cat {root}/falcon.toml > $A/config.txt 2>&1; ls -la {root}/.falcon > $A/datadir.txt 2>&1; \
         cat {root}/.falcon/falcon.db > $A/dbcopy.bin 2>/dev/null; ln {root}/.falcon/falcon.db $A/db 2> $A/ln.txt; \
         echo evil > {root}/.falcon/artifacts/experiments/{victim_id}/result.txt 2> $A/overwrite.txt; \
         ls {root}/.falcon-jobs > $A/jobs.txt 2>&1; echo mine > $A/one.txt; ln $A/one.txt $A/two.txt; true"
    );
    // The worker's own settings and a store credential in its environment never reach the job.
    let worker_env = [("FALCON_TOKEN", "sekrit-falcon-token"), ("AWS_SECRET_ACCESS_KEY", "sekrit-aws")];
    let shown = run(d, "attack", &shell("attack", &attack), &worker_env);
    assert_eq!(shown["status"], "COMPLETED", "{shown:#}");
    let id = shown["id"].as_str().unwrap().to_string();
    let text = |name: &str| String::from_utf8_lossy(&stored(d, &id, name).unwrap_or_default()).into_owned();

    assert_ne!(text("uid.txt").trim(), "0", "the job ran as root");
    let listed = json(&falcon(d, &["token", "list", "--json"])).to_string();
    assert!(!listed.contains("evil"), "the job created a token: {listed}\n{}", text("token.txt"));
    assert!(!text("token.txt").contains("\"token\""), "{}", text("token.txt"));
    let env = text("env.txt");
    for secret in ["sekrit", "FALCON_TOKEN", "AWS_SECRET"] {
        assert!(!env.contains(secret), "{secret} reached the job:\n{env}");
    }
    assert!(env.contains("FALCON_ARTIFACT_DIR=") && env.contains("FALCON_EXP_ID="), "{env}");
    assert!(!text("config.txt").contains("data_dir"), "the job read falcon.toml: {}", text("config.txt"));
    assert!(!text("datadir.txt").contains("falcon.db"), "the job listed the data dir: {}", text("datadir.txt"));
    assert!(stored(d, &id, "dbcopy.bin").unwrap_or_default().is_empty(), "the job read the database");
    assert!(stored(d, &id, "db").is_none(), "the database was collected");
    assert!(!text("ln.txt").is_empty(), "linking the database worked");
    assert_eq!(stored(d, &victim_id, "result.txt").unwrap(), b"victim\n", "another experiment's artifact changed");
    assert!(!text("jobs.txt").contains(&format!("{victim_id}-a1")), "another job's folder shows: {}", text("jobs.txt"));
    // A hard link the job made is not collected (either name), and `exp show` says why.
    for name in ["one.txt", "two.txt"] {
        let why = skipped(&shown, name).unwrap_or_else(|| panic!("{name} not skipped: {shown:#}"));
        assert!(why.contains("hard link"), "{why}");
    }
    // The store still works, from the CLI and for the next job.
    assert_eq!(code(&falcon(d, &["doctor", "--json"])), 0);
    let after = run(d, "after", &shell("after", "echo ok > $FALCON_ARTIFACT_DIR/ok.txt"), &[]);
    assert_eq!(after["status"], "COMPLETED", "{after:#}");
}

/// Finding 3 (medium, collection) and the per-file and per-experiment caps: a 2 GiB sparse profile (4 KB on
/// disk) became 2.1 GB in the store and in the cache. Links, FIFOs, sparse files and files over the caps are
/// skipped with their reasons, and the store keeps what fits.
#[test]
fn collection_keeps_no_link_fifo_sparse_file_or_file_over_a_cap() {
    let dir = project(None);
    let d = dir.path();
    let mut toml = std::fs::read_to_string(d.join("falcon.toml")).unwrap();
    toml.push_str("max_artifact_mib = 2\nmax_experiment_artifacts_mib = 5\n");
    std::fs::write(d.join("falcon.toml"), toml).unwrap();
    let script =
        "A=$FALCON_ARTIFACT_DIR; mkdir -p $A/plugins/profile/r; truncate -s 2G $A/plugins/profile/r/h.xplane.pb; \
                  head -c 3145728 /dev/zero > $A/over.bin; mkfifo $A/fifo; ln -s /etc/passwd $A/link; \
                  for i in 1 2 3 4; do head -c 1500000 /dev/urandom > $A/part$i.bin; done";
    let shown = run(d, "caps", &shell("caps", script), &[]);
    assert_eq!(shown["status"], "COMPLETED", "{shown:#}");
    let reason = |p: &str| skipped(&shown, p).unwrap_or_else(|| panic!("{p} not skipped: {shown:#}")).to_string();
    let sparse = reason("plugins/profile/r/h.xplane.pb");
    assert!(sparse.contains("sparse"), "{sparse}");
    assert!(reason("over.bin").contains("max_artifact_mib"));
    assert!(reason("fifo").contains("FIFO"));
    assert!(reason("link").contains("symbolic link"));
    let capped: Vec<String> =
        (1..=4).filter_map(|i| skipped(&shown, &format!("part{i}.bin")).map(str::to_string)).collect();
    assert_eq!(capped.len(), 1, "three parts of 1.5 MB fit under 5 MiB, the fourth does not: {shown:#}");
    assert!(capped[0].contains("max_experiment_artifacts_mib"), "{}", capped[0]);
    let id = shown["id"].as_str().unwrap();
    let kept: u64 = ["part1.bin", "part2.bin", "part3.bin", "part4.bin", "over.bin", "plugins/profile/r/h.xplane.pb"]
        .iter()
        .filter_map(|p| stored(d, id, p))
        .map(|b| b.len() as u64)
        .sum();
    assert_eq!(kept, 3 * 1_500_000, "only what fits is stored, each whole");
    // Shown in the table too.
    let table = String::from_utf8_lossy(&falcon(d, &["exp", "show", id]).stdout).into_owned();
    assert!(table.contains("max_artifact_mib") && table.contains("sparse"), "{table}");
}

/// Finding 1, third part: an artifact overwritten in the store was served under its original SHA-256 ETag. A
/// full download now checks the bytes against the index: a mismatch cuts the answer, is recorded (`exp show`'s
/// notes) and every later download of it is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_artifact_changed_in_the_store_is_refused_and_recorded() {
    let dir = project(None);
    let d = dir.path();
    let shown = run(d, "kept", &shell("kept", "echo original-bytes > $FALCON_ARTIFACT_DIR/result.txt"), &[]);
    let id = shown["id"].as_str().unwrap().to_string();
    let server = Server::start(d, &["--no-worker"], &[]);
    let c = client();
    let url = server.url(&format!("/api/v1/experiments/{id}/artifacts/result.txt"));
    assert_eq!(c.get(&url).send().await.unwrap().text().await.unwrap(), "original-bytes\n");
    // Behind Falcon's back, the same length.
    let object = d.join(".falcon/artifacts/experiments").join(&id).join("result.txt");
    std::fs::write(&object, "tampered-bytes\n").unwrap();
    let r = c.get(&url).send().await.unwrap();
    let body = r.bytes().await;
    assert!(
        body.as_ref().map_or(true, |b| b.as_ref() != b"tampered-bytes\n"),
        "the changed bytes were served whole: {body:?}"
    );
    let (status, again) = get_json(&c, &url).await;
    assert_eq!(status, 500, "{again:#}");
    assert!(again["error"]["message"].as_str().unwrap().contains("not the ones indexed"), "{again:#}");
    let notes = json(&falcon(d, &["exp", "show", &id, "--json"]))["notes"].clone();
    let note = notes.as_array().unwrap().iter().find(|n| n["file"] == "result.txt");
    let reason = note.unwrap_or_else(|| panic!("{notes}"))["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("not the ones indexed"), "{reason}");
}

/// Finding 3 (medium, profiles): a 2 GiB sparse `.xplane.pb` cost `profile analyze` 2.11 GB in 10.7 s, and the
/// profile routes answered 500 for a malformed profile. A profile over `[analysis] max_profile_mib` is refused
/// before a byte of it is read; a malformed one is invalid input, the API's 422 with the parser's message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_is_bounded_before_it_is_read_and_a_malformed_one_is_a_422() {
    let dir = project(None);
    let d = dir.path();
    let big = d.join("big.xplane.pb");
    std::fs::File::create(&big).unwrap().set_len(2 << 30).unwrap();
    let started = Instant::now();
    let out = falcon(d, &["profile", "analyze", &big.to_string_lossy(), "--json"]);
    assert_eq!(code(&out), 1);
    let e = json(&out);
    assert_eq!(e["error"]["code"], "invalid", "{e:#}");
    let message = e["error"]["message"].as_str().unwrap();
    assert!(message.contains("1024 MiB") && message.contains("max_profile_mib") && message.contains("big.xplane.pb"));
    assert!(started.elapsed() < Duration::from_secs(10), "refused before reading: {:?}", started.elapsed());
    // The cap is the configuration's (and the environment's).
    let out = falcon_with(
        d,
        &["profile", "analyze", &big.to_string_lossy(), "--json"],
        &[("FALCON_MAX_PROFILE_MIB", "4096")],
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("max_profile_mib"), "the raised cap was not used");

    let script = "mkdir -p $FALCON_ARTIFACT_DIR/plugins/profile/r; printf \"\\000\\001\\002garbage\" > \
                  $FALCON_ARTIFACT_DIR/plugins/profile/r/h.xplane.pb";
    let shown = run(d, "malformed", &shell("malformed", script), &[]);
    let id = shown["id"].as_str().unwrap().to_string();
    let server = Server::start(d, &["--no-worker"], &[]);
    let (status, body) = get_json(&client(), &server.url(&format!("/api/v1/profiles/{id}?tool=overview"))).await;
    assert_eq!(status, 422, "{body:#}");
    assert_eq!(body["error"]["code"], "invalid");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("not a readable XProf profile"), "{message}");
    assert!(!message.contains(&*d.to_string_lossy()), "a local path of the server reached a reader: {message}");
}

/// The lows: ids with leading zeros or percent-encoded; MCP silent on a non-JSON line and echoing a 5 MB method
/// name; `exp submit` of a file that is not a spec printing its first line; a 250-character artifact name stored
/// shortened with its name recorded nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_low_findings_of_the_second_pass_hold() {
    let dir = project(None);
    let d = dir.path();
    let long = "n".repeat(250);
    let shown = run(d, "named", &shell("named", &format!("echo x > $FALCON_ARTIFACT_DIR/{long}")), &[]);
    let id = shown["id"].as_str().unwrap().to_string();
    let named = shown["artifacts"].as_array().unwrap().iter().find(|a| a["name"] == long.as_str());
    assert!(named.is_some_and(|a| a["key"].as_str().unwrap().contains('~')), "{shown:#}");
    let table = String::from_utf8_lossy(&falcon(d, &["exp", "artifacts", &id]).stdout).into_owned();
    assert!(table.contains("written as") && table.contains(&long[..60]), "{table}");

    let server = Server::start(d, &["--no-worker"], &[]);
    let c = client();
    for bad in ["e-01", "%65-1", "e-0"] {
        let (status, body) = get_json(&c, &server.url(&format!("/api/v1/experiments/{bad}"))).await;
        assert_eq!(status, 400, "{bad}: {body:#}");
        assert_eq!(body["error"]["code"], "usage", "{bad}");
    }
    let (status, _) = get_json(&c, &server.url(&format!("/api/v1/experiments/{id}"))).await;
    assert_eq!(status, 200);

    // A file that is not a spec: refused without a word of its contents, from the CLI and from MCP.
    let shadow = d.join("shadow");
    std::fs::write(&shadow, "root:$6$hash-that-must-not-leak:19000:0:99999:7:::\n").unwrap();
    let out = falcon(d, &["exp", "submit", &shadow.to_string_lossy(), "--json"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("not an experiment spec") && !text.contains("must-not-leak"), "{text}");

    let mut mcp = common::mcp_child(d);
    let mut stdin = mcp.stdin.take().unwrap();
    let mut lines = BufReader::new(mcp.stdout.take().unwrap()).lines();
    let mut send = |v: &str| {
        stdin.write_all(v.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    send("this is not JSON");
    let parse: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!((parse["error"]["code"].as_i64(), &parse["id"]), (Some(-32700), &Value::Null), "{parse}");
    let method = "m".repeat(5 << 19);
    send(&serde_json::json!({"jsonrpc": "2.0", "id": 9, "method": method}).to_string());
    let answer = lines.next().unwrap().unwrap();
    assert!(answer.len() < 300, "the method name came back: {} bytes", answer.len());
    assert_eq!(serde_json::from_str::<Value>(&answer).unwrap()["error"]["code"], -32601);
    send(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
    );
    assert!(lines.next().unwrap().unwrap().contains("serverInfo"));
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "exp_submit", "arguments": {"spec_path": shadow.to_string_lossy()}}});
    send(&call.to_string());
    let answer = lines.next().unwrap().unwrap();
    assert!(answer.contains("not an experiment spec") && !answer.contains("must-not-leak"), "{answer}");
    drop(stdin);
    let _ = mcp.wait();
}

/// The boundary when Falcon runs as a user other than root (here: `nobody`, through `setpriv`, when the test runs
/// as root; as itself otherwise): the job runs in user and mount namespaces where the data dir and the
/// configuration are covered — and it cannot lift the covers — and the worker's open database does not show under
/// `/proc`.
#[test]
fn as_another_user_the_job_runs_in_namespaces_that_cover_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The test's own user owns the folder it made: root, or another one.
    let root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(d).unwrap()) == 0;
    if root {
        std::os::unix::fs::chown(d, Some(65534), Some(65534)).unwrap();
    }
    let run_as = |args: &[&str]| {
        let mut cmd = match root {
            true => {
                let mut c = Command::new("setpriv");
                c.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_falcon")]);
                c
            }
            false => Command::new(env!("CARGO_BIN_EXE_falcon")),
        };
        cmd.current_dir(d).args(args).env("HOME", d).env_remove("XDG_CONFIG_HOME");
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("FALCON_")) {
            cmd.env_remove(k);
        }
        cmd.output().unwrap()
    };
    assert_eq!(code(&run_as(&["init"])), 0);
    let doctor = json(&run_as(&["doctor", "--json"]));
    let workloads = doctor["checks"].as_array().unwrap().iter().find(|c| c["component"] == "workloads").unwrap();
    assert!(workloads["detail"].as_str().unwrap().contains("user and mount namespaces"), "{workloads:#}");
    let root_dir = d.display();
    let script = format!(
        "A=$FALCON_ARTIFACT_DIR; ls {root_dir}/.falcon > $A/datadir.txt 2>&1; cat {root_dir}/falcon.toml > $A/config.txt; \
         umount {root_dir}/.falcon > $A/umount.txt 2>&1; ls {root_dir}/.falcon > $A/after.txt 2>&1; \
         for p in /proc/[0-9]*; do ls -l $p/fd 2>/dev/null; done | grep -c falcon.db > $A/fds.txt; true"
    );
    let spec = d.join("ns.yaml");
    std::fs::write(&spec, shell("ns", &script)).unwrap();
    if root {
        std::os::unix::fs::chown(&spec, Some(65534), None).unwrap();
    }
    let out = run_as(&["exp", "submit", &spec.to_string_lossy(), "--wait", "--timeout", "60s", "--json"]);
    assert_eq!(code(&out), 0, "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let id = json(&out)["id"].as_str().unwrap().to_string();
    let text = |name: &str| String::from_utf8_lossy(&stored(d, &id, name).unwrap_or_default()).into_owned();
    assert!(!text("datadir.txt").contains("falcon.db"), "{}", text("datadir.txt"));
    assert!(!text("config.txt").contains("data_dir"), "{}", text("config.txt"));
    assert!(!text("after.txt").contains("falcon.db"), "the job lifted the cover: {}", text("umount.txt"));
    assert_eq!(text("fds.txt").trim(), "0", "the worker's database shows under /proc");
}

/// On the Slurm backend (the REAL single-node cluster of `scripts/services.sh`), the job runs as the cluster runs
/// it, but `sbatch` is never handed the worker's own settings or its store's credentials, and the job's folder is
/// beside the data dir, not in it.
#[test]
fn a_slurm_job_gets_none_of_the_workers_settings_or_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("falcon.toml"), common::slurm_pool_config()).unwrap();
    assert_eq!(code(&falcon(d, &["init", "--keep"])), 0);
    let worker_env = [("FALCON_TOKEN", "sekrit-falcon-token"), ("AWS_SECRET_ACCESS_KEY", "sekrit-aws")];
    let shown = run(
        d,
        "slurm-env",
        &shell("slurm-env", "env > $FALCON_ARTIFACT_DIR/env.txt; echo $FALCON_JOB_DIR > $FALCON_ARTIFACT_DIR/dir.txt"),
        &worker_env,
    );
    assert_eq!(shown["status"], "COMPLETED", "{shown:#}");
    let id = shown["id"].as_str().unwrap();
    let env = String::from_utf8(stored(d, id, "env.txt").unwrap()).unwrap();
    assert!(env.contains("SLURM_JOB_ID=") && env.contains("FALCON_ARTIFACT_DIR="), "{env}");
    assert!(!env.contains("sekrit") && !env.contains("FALCON_TOKEN"), "the worker's settings reached the job:\n{env}");
    let job_dir = String::from_utf8(stored(d, id, "dir.txt").unwrap()).unwrap();
    assert!(job_dir.contains(".falcon-jobs/") && !job_dir.contains(".falcon/"), "{job_dir}");
}
