//! Code versions and `falcon bisect`, in process, on real git repositories made by the repository's own script
//! (`examples/bisect/make-repo.sh`: a small workload whose history slows each step by ~8 % at one commit, with
//! ~3 % run-to-run noise): a spec's `code` resolved, snapshotted once and checked out where the job runs; a work
//! tree recorded; refs and paths refused before anything is recorded; a bisection that names the culprit (and
//! none on a flat range), reusing its runs; the same on the REAL single-node Slurm cluster.

use super::experiments::{initialised, initialised_with, Folder};
use super::fixtures::slurm_pool_config;
use super::harness::message;
use falcon_app::requests::{BisectStartRequest, ExperimentHistoryRequest, ExperimentListRequest};
use falcon_core::status::ExperimentStatus;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `make-repo.sh DEST ARGS…`: the repository and what the script says about it (`good`, `bad`, `culprit`, …).
fn make_repo(dest: &Path, args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bisect/make-repo.sh");
    let out = Command::new("bash").arg(&script).arg(dest).args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    super::harness::enterable(dest);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The spec the generated repository carries, its `code.repo` read from its folder (as the CLI reads it).
fn repo_spec(repo: &Path, reference: &str) -> falcon_core::spec::ExperimentSpec {
    let text = std::fs::read_to_string(repo.join("falcon.yaml")).unwrap();
    let mut spec = falcon_core::spec::parse_spec(&text, "falcon.yaml").unwrap();
    spec.anchor_code(repo);
    spec.code.as_mut().unwrap().reference = reference.to_string();
    spec
}

/// `git -C dir ARGS`'s output, trimmed.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap()
}

async fn run(f: &Folder, spec: &falcon_core::spec::ExperimentSpec) -> Value {
    let (detail, _) = f.app.submit_experiment(spec, true, None, |_| {}).await.unwrap();
    assert_eq!(detail.view.record.status, ExperimentStatus::Completed, "{:#}", json(&detail));
    json(&detail)
}

fn code_objects(f: &Folder) -> Vec<PathBuf> {
    let dir = f.path().join(".falcon/artifacts/code");
    std::fs::read_dir(&dir).map_or(Vec::new(), |d| d.flatten().map(|e| e.path()).collect())
}

#[tokio::test]
async fn a_spec_with_code_runs_in_a_checkout_and_stores_its_snapshot_once() {
    let f = initialised().await;
    f.app.submit_from(f.path().to_path_buf());
    let repo_dir = f.path().join("repo");
    let repo = make_repo(&repo_dir, &["--commits", "4", "--culprit", "0", "--steps", "6", "--step-ms", "5"]);
    let head = repo["bad"].as_str().unwrap();
    // `python3 -S bench.py` names a file of the repository: it runs only in the checkout.
    let first = run(&f, &repo_spec(&repo_dir, "main")).await;
    let second = run(&f, &repo_spec(&repo_dir, "main")).await;
    for e in [&first, &second] {
        let code = &e["code"];
        assert_eq!(code["commit"], head, "{e:#}");
        assert_eq!((code["branch"].as_str(), code["origin"].as_str()), (Some("main"), Some("spec")));
        assert_eq!(code["subject"].as_str(), Some(git(&repo_dir, &["log", "-1", "--format=%s", "main"]).as_str()));
        assert!(e["metrics"]["step_time_s"]["count"].as_u64().unwrap() >= 3, "{e:#}");
    }
    assert_eq!(first["code"]["snapshot"], second["code"]["snapshot"]);
    assert_eq!(first["config_hash"], second["config_hash"], "one commit, one configuration");
    let objects = code_objects(&f);
    assert_eq!(objects.len(), 1, "one snapshot for two experiments at one commit: {objects:?}");
    assert!(first["code"]["snapshot"]["key"].as_str().unwrap().starts_with("code/"));
    // Another commit: its own snapshot and configuration; the diff shows the code change beside the config.
    let good = repo["good"].as_str().unwrap();
    let third = run(&f, &repo_spec(&repo_dir, good)).await;
    assert_eq!(third["code"]["commit"], good);
    assert_eq!(third["code"]["branch"], Value::Null, "a SHA names no branch");
    assert_ne!(third["config_hash"], first["config_hash"]);
    assert_eq!(code_objects(&f).len(), 2);
    let (a, b) = (first["id"].as_str().unwrap().parse().unwrap(), third["id"].as_str().unwrap().parse().unwrap());
    let changes = json(&falcon_app::contract::changes(&f.app.diff_experiments(a, b).await.unwrap()));
    let commit = changes.as_array().unwrap().iter().find(|c| c["path"] == "code.commit").unwrap_or_else(|| {
        panic!("{changes:#}");
    });
    assert_eq!(
        (commit["a"].as_str(), commit["b"].as_str(), commit["group"].as_str()),
        (Some(head), Some(good), Some("code"))
    );
    assert!(!changes.as_array().unwrap().iter().any(|c| c["path"] == "code.ref"), "the ref gives way: {changes:#}");
    // Listed by commit (a prefix) and branch; a history by branch.
    let list = |commit: Option<&str>, branch: Option<&str>| ExperimentListRequest {
        commit: commit.map(str::to_string),
        branch: branch.map(str::to_string),
        ..Default::default()
    };
    let page = f.app.list_experiments(&list(Some(&head[..7]), None).query().unwrap(), None).await.unwrap();
    assert_eq!(page.items.len(), 2);
    let page = f.app.list_experiments(&list(None, Some("main")).query().unwrap(), None).await.unwrap();
    assert_eq!(page.items.len(), 2);
    let page = f.app.list_experiments(&list(Some("0000000"), None).query().unwrap(), None).await.unwrap();
    assert!(page.items.is_empty());
    let bad = f.app.list_experiments(&list(Some("xyz1"), None).query().unwrap(), None).await.map(|_| ()).unwrap_err();
    assert!(message(&bad).contains("hex"), "{}", message(&bad));
    let history = ExperimentHistoryRequest {
        name: None,
        config_hash: None,
        label: Vec::new(),
        branch: Some("main".into()),
        metric: "step_time_s".into(),
    };
    let history = json(&f.app.history(&history).await.unwrap());
    assert_eq!(history["points"].as_array().unwrap().len(), 2, "{history:#}");
}

#[tokio::test]
async fn a_spec_without_code_records_the_work_tree_it_was_submitted_from() {
    let f = initialised().await;
    let tree = f.path().join("work");
    make_repo(&tree, &["--commits", "3", "--culprit", "0", "--steps", "3", "--step-ms", "5"]);
    let head = String::from_utf8(
        Command::new("git").arg("-C").arg(&tree).args(["rev-parse", "HEAD"]).output().unwrap().stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    let text = "name: plain\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'echo \
                \"{\\\"step\\\": 0, \\\"step_time_s\\\": 0.1}\" > $FALCON_ARTIFACT_DIR/metrics.jsonl']\n\
                resources: {accelerator: cpu}\n";
    let spec = falcon_core::spec::parse_spec(text, "plain.yaml").unwrap();
    // From a folder inside the work tree.
    f.app.submit_from(tree.join("notes-folder-that-does-not-matter").parent().unwrap().to_path_buf());
    let clean = run(&f, &spec).await;
    let code = &clean["code"];
    assert_eq!((code["commit"].as_str(), code["origin"].as_str()), (Some(head.as_str()), Some("work_tree")));
    assert_eq!((code["branch"].as_str(), code["dirty"].as_bool()), (Some("main"), Some(false)), "{code:#}");
    assert_eq!(code["snapshot"], Value::Null, "a work tree is recorded, not checked out");
    // A change: dirty, with the hash of the change; another change, another hash.
    std::fs::write(tree.join("notes.md"), "changed\n").unwrap();
    let dirty = run(&f, &spec).await;
    assert_eq!(dirty["code"]["dirty"], true);
    let hash = dirty["code"]["diff_sha256"].as_str().unwrap().to_string();
    assert_eq!(hash.len(), 64);
    std::fs::write(tree.join("untracked.txt"), "new\n").unwrap();
    let dirtier = run(&f, &spec).await;
    assert_ne!(dirtier["code"]["diff_sha256"].as_str().unwrap(), hash);
    assert_eq!(clean["config_hash"], dirty["config_hash"], "a recorded commit is not part of the configuration");
}

#[tokio::test]
async fn bad_refs_and_paths_are_refused_before_anything_is_recorded() {
    let f = initialised().await;
    let repo_dir = f.path().join("repo");
    make_repo(&repo_dir, &["--commits", "3", "--culprit", "0"]);
    // As a server takes it: a local repository is refused, naming why.
    let e = f.app.submit_experiment(&repo_spec(&repo_dir, "main"), false, None, |_| {}).await.unwrap_err();
    assert!(message(&e).contains("must be a URL"), "{}", message(&e));
    f.app.submit_from(f.path().to_path_buf());
    let e = f.app.submit_experiment(&repo_spec(&repo_dir, "no-such-branch"), false, None, |_| {}).await.unwrap_err();
    assert!(message(&e).contains("`no-such-branch` names no commit"), "{}", message(&e));
    let mut missing = repo_spec(&repo_dir, "main");
    missing.code.as_mut().unwrap().repo = f.path().join("nowhere").display().to_string();
    let e = f.app.submit_experiment(&missing, false, None, |_| {}).await.unwrap_err();
    assert!(message(&e).contains("nowhere"), "{}", message(&e));
    // A ref that git would read as an option never reaches it: the spec is refused where it is written.
    let text = std::fs::read_to_string(repo_dir.join("falcon.yaml")).unwrap().replace("ref: main", "ref: --output=x");
    let e = falcon_core::spec::parse_spec(&text, "falcon.yaml").unwrap_err();
    assert_eq!(e.path, "code.ref", "{e}");
    let page = f.app.list_experiments(&ExperimentListRequest::default().query().unwrap(), None).await.unwrap();
    assert!(page.items.is_empty(), "nothing recorded");
}

fn bisect_request(repo: &Path, args: (u32, u32)) -> BisectStartRequest {
    BisectStartRequest {
        spec: std::fs::read_to_string(repo.join("falcon.yaml")).unwrap(),
        repo: Some(repo.display().to_string()),
        good: "v-good".into(),
        bad: "v-bad".into(),
        metric: "step_time_s".into(),
        direction: None,
        min_runs: args.0,
        max_runs: args.1,
        probes: None,
        name: None,
        wait: true,
        timeout_s: None,
    }
}

/// Starts a bisection and carries it to its answer, as `falcon bisect … --wait --json` prints it.
async fn bisect(f: &Folder, request: &BisectStartRequest) -> Value {
    let started = f.app.start_bisect(request).await.unwrap();
    json(&f.app.wait_bisect(started.session, None, |_| {}).await.unwrap())
}

async fn names_the_culprit(f: Folder, args: &[&str]) {
    f.app.submit_from(f.path().to_path_buf());
    let repo_dir = f.path().join("repo");
    let repo = make_repo(&repo_dir, args);
    let view = bisect(&f, &bisect_request(&repo_dir, (3, 10))).await;
    assert_eq!(view["state"], "decided", "{view:#}");
    assert_eq!(view["culprit"]["commit"], repo["culprit"], "{view:#}");
    assert_eq!(view["culprit"]["subject"], "Validate every batch twice");
    assert_eq!(view["verdict"]["verdict"], "regressed", "{view:#}");
    assert_eq!(view["culprit_verdict"]["verdict"], "regressed", "{view:#}");
    let tested = view["tested"].as_array().unwrap();
    let runs: u64 = tested.iter().map(|t| t["runs"].as_u64().unwrap()).sum();
    assert_eq!(view["runs"].as_u64(), Some(runs));
    let culprit = tested.iter().find(|t| t["commit"] == repo["culprit"]).unwrap();
    assert_eq!(culprit["verdict"], "bad");
    eprintln!("{}: {} runs at {} commits", view["message"], runs, tested.len());
    // Again: every run it needs is there, so it answers at once and runs nothing.
    let again = f.app.start_bisect(&bisect_request(&repo_dir, (3, 10))).await.unwrap();
    let again = json(&again);
    assert_eq!(
        (again["state"].as_str(), &again["culprit"]["commit"]),
        (Some("decided"), &repo["culprit"]),
        "{again:#}"
    );
    assert_eq!(again["runs"].as_u64(), Some(runs), "the runs are reused");
}

#[tokio::test]
async fn bisect_names_the_commit_that_slowed_the_step() {
    names_the_culprit(initialised().await, &["--commits", "10", "--culprit", "6", "--noise", "0.02"]).await;
}

#[tokio::test]
async fn bisect_names_no_culprit_on_a_range_without_a_regression() {
    let f = initialised().await;
    f.app.submit_from(f.path().to_path_buf());
    let repo_dir = f.path().join("repo");
    make_repo(&repo_dir, &["--commits", "6", "--culprit", "0", "--noise", "0.02"]);
    let view = bisect(&f, &bisect_request(&repo_dir, (3, 5))).await;
    assert_eq!(view["state"], "decided", "{view:#}");
    assert_eq!(view["culprit"], Value::Null, "{view:#}");
    assert!(view["message"].as_str().unwrap().starts_with("no culprit"), "{view:#}");
    assert!(matches!(view["verdict"]["verdict"].as_str(), Some("same" | "inconclusive")), "{view:#}");
    assert_eq!(view["tested"].as_array().unwrap().len(), 2, "only the ends ran: {view:#}");
}

#[tokio::test]
async fn bisect_on_the_slurm_test_cluster() {
    // The checkout happens where the job runs: the batch script unpacks the snapshot on the node.
    names_the_culprit(
        initialised_with(Some(&slurm_pool_config())).await,
        &["--commits", "6", "--culprit", "4", "--noise", "0.02"],
    )
    .await;
}
