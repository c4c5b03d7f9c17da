//! Experiments as a user runs them, in process: on the embedded defaults `falcon init` writes (SQLite, local
//! artifacts, local jobs), a spec file submitted and waited for (the embedded worker of `exp submit --wait`), then
//! shown, listed, compared and diffed; bad specs refused with file, line and column; goals, sessions and pools.
//! A failed workload says why: the failure reason carries the last meaningful line of the workload's stderr; the
//! whole stderr stays in the experiment's logs.
//!
//! The folder helpers here ([`initialised`], [`submit`], [`submit_session`]) are what the other modules of real
//! local jobs use too.

use super::fixtures::write_base_ms_spec;
use falcon_app::experiments::ExperimentDetail;
use falcon_app::goals::{SessionDetail, SessionRequest};
use falcon_app::requests::{
    parse_goal_id, ExperimentCompareRequest, ExperimentDiffRequest, ExperimentListRequest, ExperimentLogLinesRequest,
    ExperimentShowRequest, GoalClaimRequest, GoalCloseRequest, GoalCreateRequest, PageRequest, DEFAULT_LEASE_S,
    DEFAULT_METRIC,
};
use falcon_app::App;
use falcon_core::config::{Config, ConfigLayer, MachineFacts};
use falcon_core::status::{ExperimentStatus, GoalStatus};
use falcon_core::ErrorKind;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A user's folder after `falcon init` and the application over the configuration the CLI reads there.
pub struct Folder {
    pub app: App,
    dir: tempfile::TempDir,
}

impl Folder {
    /// The folder (where `falcon.toml`, `.falcon` and `.falcon-jobs` are).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// The machine as the CLI sizes its local pool for it.
fn machine() -> MachineFacts {
    MachineFacts { cores: std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1) }
}

/// The configuration in `file` as the CLI reads it: its relative paths relative to its folder, over the defaults.
fn load(file: &Path) -> falcon_app::Result<Config> {
    let text = std::fs::read_to_string(file).unwrap();
    let layer = ConfigLayer::from_toml(&text, &file.display().to_string()).unwrap().rebase(file.parent().unwrap());
    let mut config = Config::resolve([layer], machine());
    config.file = Some(file.to_path_buf());
    Ok(config)
}

/// A new folder after `falcon init` (one local CPU pool, SQLite and the artifacts under `.falcon`).
pub async fn initialised() -> Folder {
    initialised_with(None).await
}

/// A new folder with `config` as its `falcon.toml` when given (`falcon init --keep`: its stores created), else
/// after `falcon init`. The folder is open to other users, as a checkout is: as root, each job runs as a user of
/// its own (`[jobs] isolation`), which must reach the test's scripts and its job folder beside the data dir.
pub async fn initialised_with(config: Option<&str>) -> Folder {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    if let Some(text) = config {
        std::fs::write(dir.path().join("falcon.toml"), text).unwrap();
    }
    let request = falcon_app::init::InitRequest {
        config_file: None,
        dir: Some(dir.path().to_path_buf()),
        keep: config.is_some(),
        force: false,
        db: None,
        artifacts: None,
        data_dir: None,
        machine: machine(),
    };
    let report = falcon_app::init::init(&request, load).await.expect("init");
    let app = App::new(load(&report.config_file).unwrap());
    Folder { app, dir }
}

/// `exp submit FILE [--wait]`: the file read and parsed as the CLI does (its path as given names it in errors),
/// then submitted; with `wait`, the embedded worker runs until the experiment ends. The detail `--json` prints.
pub async fn submit(app: &App, file: &Path, wait: bool) -> falcon_app::Result<ExperimentDetail> {
    let text = falcon_app::files::read_spec_file(file)?;
    let spec = falcon_core::spec::parse_spec(&text, &file.display().to_string())?;
    Ok(app.submit_experiment(&spec, wait, None, |_| {}).await?.0)
}

/// `session submit FILE [--goal G] [--repeats N] --wait`: the sweep and the base specs it names read beside it,
/// as the CLI does. The detail `--json` prints.
pub async fn submit_session(
    app: &App,
    file: &Path,
    goal: Option<&str>,
    repeats: Option<usize>,
) -> falcon_app::Result<SessionDetail> {
    let text = falcon_app::files::read_spec_file(file)?;
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let load = move |base: &str| falcon_app::files::read_spec_file(&dir.join(base)).map_err(|e| e.to_string());
    let name = file.file_stem().map_or("session".into(), |s| s.to_string_lossy().into_owned());
    let label = file.display().to_string();
    let goal = goal.map(parse_goal_id).transpose()?;
    let request =
        SessionRequest { name: &name, sweep_text: &text, file_label: &label, goal, wait: true, timeout: None, repeats };
    Ok(app.submit_session(&request, load, |_| {}, |_| {}).await?.0)
}

/// `exp show ID [--warmup N]`.
pub async fn show(app: &App, id: &str, warmup: Option<u32>) -> falcon_app::Result<ExperimentDetail> {
    let (id, warmup) = ExperimentShowRequest { id: id.into(), warmup }.show()?;
    app.show_experiment(id, warmup).await
}

/// `exp list` with the request's filters: the page `--json` prints.
pub async fn list(app: &App, request: ExperimentListRequest) -> falcon_app::Result<Value> {
    let page = app.list_experiments(&request.query()?, request.cursor.as_deref()).await?;
    Ok(json(&page))
}

/// A returned value as the JSON `--json` prints.
pub fn json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap()
}

/// `exp compare A B` on the default metric: the comparison `--json` prints.
async fn compare(app: &App, a: &str, b: &str) -> falcon_app::Result<falcon_app::experiments::RunComparison> {
    let request = ExperimentCompareRequest {
        a: a.into(),
        b: b.into(),
        metric: DEFAULT_METRIC.into(),
        direction: None,
        warmup: None,
    };
    app.compare_experiments(&request.compare()?).await
}

fn spec(dir: &Path, name: &str, base_ms: u32) -> PathBuf {
    let text = format!(
        "name: {name}\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'for i in $(seq 0 19); do \
         echo \"{{\\\"step\\\": $i, \\\"step_time_s\\\": 0.$(({base_ms} + i % 3))}}\" >> $FALCON_ARTIFACT_DIR/metrics.jsonl; done']\n\
         config: {{batch_size: 8}}\nresources: {{accelerator: cpu}}\n"
    );
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn list_request() -> ExperimentListRequest {
    ExperimentListRequest::default()
}

#[tokio::test(flavor = "multi_thread")]
async fn submit_wait_show_list_compare_diff() {
    let f = initialised().await;
    let app = &f.app;
    let base = spec(f.path(), "base", 100);
    let shown = json(&submit(app, &base, true).await.unwrap());
    for field in ["id", "name", "status", "scenario", "config_hash", "spec", "history", "artifacts", "metrics"] {
        assert!(shown.get(field).is_some(), "exp show JSON has `{field}`: {shown:#}");
    }
    assert_eq!(shown["status"], "COMPLETED");
    assert_eq!(shown["metrics"]["step_time_s"]["count"], 18);
    let artifact = &shown["artifacts"][0];
    for field in ["kind", "uri", "size", "sha256"] {
        assert!(artifact.get(field).is_some(), "{artifact:#}");
    }
    let history = shown["history"].as_array().unwrap();
    assert!(history.iter().all(|t| t.get("from").is_some()
        && t.get("to").is_some()
        && t.get("at").is_some()
        && t.get("reason").is_some()));

    // Twice as slow: beyond what one run a side can be wrong about (±33 % with the default between-run floor).
    let slow = spec(f.path(), "slow", 200);
    assert_eq!(submit(app, &slow, true).await.unwrap().view.record.status, ExperimentStatus::Completed);
    let list_of = |r: ExperimentListRequest| list(app, r);
    let all = list_of(ExperimentListRequest { status: Some(ExperimentStatus::Completed), ..list_request() });
    let all = all.await.unwrap();
    assert_eq!(all["items"].as_array().unwrap().len(), 2);
    assert_eq!(all["items"][0]["name"], "slow", "newest first");
    assert_eq!(all["next_cursor"], Value::Null, "one page holds both");
    let recent = list_of(ExperimentListRequest { since: Some("1h".into()), ..list_request() }).await.unwrap();
    assert_eq!(recent["items"].as_array().unwrap().len(), 2);
    let page = list_of(ExperimentListRequest { limit: 1, before: Some("e-2".into()), ..list_request() });
    assert_eq!(page.await.unwrap()["items"][0]["id"], "e-1", "before");
    // Cursor pagination: page 1 names the cursor of page 2, which is the last.
    let first = list_of(ExperimentListRequest { limit: 1, ..list_request() }).await.unwrap();
    assert_eq!(first["items"][0]["id"], "e-2");
    let cursor = first["next_cursor"].as_str().expect("a second page").to_string();
    let second = list_of(ExperimentListRequest { limit: 1, cursor: Some(cursor), ..list_request() }).await.unwrap();
    assert_eq!(second["items"][0]["id"], "e-1");
    assert_eq!(second["next_cursor"], Value::Null);
    let none = list_of(ExperimentListRequest { limit: 0, ..list_request() }).await.unwrap();
    assert_eq!(none["items"].as_array().unwrap().len(), 0, "limit 0 returns no rows");
    let nonsense = list_of(ExperimentListRequest { cursor: Some("nonsense".into()), ..list_request() }).await;
    assert_eq!(nonsense.unwrap_err().kind(), ErrorKind::Usage);
    let unknown = compare(app, "e-1", "e-99999").await.unwrap_err();
    assert_eq!(unknown.kind(), ErrorKind::NotFound);
    assert!(unknown.to_string().contains("e-99999"), "names the missing one: {unknown}");
    let soon = list_of(ExperimentListRequest { since: Some("soon".into()), ..list_request() }).await;
    assert_eq!(soon.unwrap_err().kind(), ErrorKind::Usage);

    let cmp = compare(app, "e-1", "e-2").await.unwrap();
    let verdict = json(&cmp);
    for field in [
        "metric",
        "direction",
        "verdict",
        "a",
        "b",
        "delta_rel",
        "ci_low_rel",
        "ci_high_rel",
        "p_value",
        "runs",
        "between_run_cv",
        "repeats_needed",
        "sides",
        "noise_history",
    ] {
        assert!(verdict.get(field).is_some(), "{verdict:#}");
    }
    assert_eq!(verdict["verdict"], "regressed");
    assert_eq!(verdict["runs"], serde_json::json!({"a": 1, "b": 1}), "one run a side");
    assert_eq!(verdict["between_run_cv"]["source"], "default", "no repeats, no history: the documented floor");
    assert_eq!(verdict["sides"]["b"][0]["experiment"], "e-2");
    // What `--fail-on-regression` fails on (exit 5) one way round, and not the other.
    use falcon_core::stats::VerdictKind;
    assert_eq!(cmp.verdict.verdict, VerdictKind::Regressed);
    assert_ne!(compare(app, "e-2", "e-1").await.unwrap().verdict.verdict, VerdictKind::Regressed);

    let (a, b) = ExperimentDiffRequest { a: "e-1".into(), b: "e-2".into() }.pair().unwrap();
    let changes = app.diff_experiments(a, b).await.unwrap();
    let diff = json(&falcon_app::contract::DiffBody { changes: falcon_app::contract::changes(&changes) });
    let changes = diff["changes"].as_array().unwrap();
    assert!(
        changes.iter().any(|c| c["path"] == "name" && c["kind"] == "changed" && c["a"] == "base" && c["b"] == "slow"),
        "{diff:#}"
    );

    let all_steps = json(&show(app, "e-1", Some(0)).await.unwrap());
    assert_eq!(all_steps["metrics"]["step_time_s"]["count"], 20, "warm-up 0 keeps every step");

    let e1 = falcon_app::experiments::parse_experiment_id("e-1").unwrap();
    app.experiment_logs(e1, None).await.expect("the logs of e-1");
    assert_eq!(show(app, "e-99", None).await.unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(app.cancel_experiment(e1).await.unwrap_err().kind(), ErrorKind::Conflict, "already finished");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_specs_are_refused_with_file_line_and_column() {
    let f = initialised().await;
    let d = f.path();
    // Read and parsed as `exp submit typo.yaml` in the folder does: the path as given names the file.
    let parse = |name: &str| {
        let text = falcon_app::files::read_spec_file(&d.join(name))?;
        Ok::<_, falcon_app::AppError>(falcon_core::spec::parse_spec(&text, name)?)
    };
    std::fs::write(d.join("typo.yaml"), "name: x\nscenario: benchmark\nresouces: {accelerator: cpu}\n").unwrap();
    let err = parse("typo.yaml").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid, "an invalid file is a failure (docs/DESIGN.md §6): {err:?}");
    let message = err.to_string();
    assert!(message.starts_with("typo.yaml:3:1:") && message.contains("did you mean `resources`"), "{message}");
    std::fs::write(
        d.join("product.yaml"),
        "name: x\nscenario: benchmark\nworkload: {framework: jax, command: [python3]}\nconfig:\n  parallelism: {fsdp: 8}\nresources: {accelerator: v5litepod-16}\n",
    )
    .unwrap();
    let err = parse("product.yaml").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid, "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("product.yaml:5:") && message.contains("config.parallelism") && message.contains("16"),
        "{message}"
    );
    assert_eq!(parse("missing.yaml").unwrap_err().kind(), ErrorKind::NotFound);
    let listed = list(&f.app, list_request()).await.unwrap();
    assert!(listed["items"].as_array().unwrap().is_empty(), "nothing recorded for refused specs");
}

#[tokio::test(flavor = "multi_thread")]
async fn goals_sessions_and_pools() {
    let f = initialised().await;
    let app = &f.app;
    let create = GoalCreateRequest {
        title: "faster steps".into(),
        metric: "step_time_s".into(),
        direction: None,
        target: Some(0.11),
        baseline: None,
        priority: falcon_app::requests::DEFAULT_PRIORITY,
        workload: None,
        hardware: None,
    };
    let goal = json(&falcon_app::goals::GoalView::from(app.create_goal(&create).await.unwrap()));
    assert_eq!(
        (goal["id"].as_str(), goal["direction"].as_str(), goal["status"].as_str()),
        (Some("g-1"), Some("minimize"), Some("OPEN"))
    );

    write_base_ms_spec(f.path());
    std::fs::write(
        f.path().join("sweep.yaml"),
        "base: base.yaml\nsweep:\n  config.base_ms: [100, 130]\nname_template: \"run-${config.base_ms}\"\n",
    )
    .unwrap();
    let session = json(&submit_session(app, &f.path().join("sweep.yaml"), Some("g-1"), None).await.unwrap());
    assert_eq!(session["status"], "COMPLETED", "{session:#}");
    let names: Vec<_> =
        session["experiments"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(names, ["run-100", "run-130"]);
    let diffs = session["differences"].as_array().unwrap();
    assert!(diffs.iter().any(|d| d["path"] == "config.base_ms"), "{diffs:?}");
    assert!(!diffs.iter().any(|d| d["path"] == "resources.accelerator"), "only keys that differ");

    let g1 = parse_goal_id("g-1").unwrap();
    let cmp = json(&app.compare_goal(g1).await.unwrap());
    let rows = cmp["rows"].as_array().unwrap();
    assert_eq!(rows[0]["name"], "run-100", "{cmp:#}");
    assert_eq!(rows[0]["rank"], 1);
    assert_eq!(rows[0]["meets_target"], true);
    assert_eq!(rows[1]["meets_target"], false);

    let claim = |id: Option<&str>, owner: &str| {
        let request =
            GoalClaimRequest { id: id.map(String::from), owner: Some(owner.into()), lease_s: DEFAULT_LEASE_S };
        async move {
            let (id, lease_for) = request.claim()?;
            let owner = request.owner.as_deref().unwrap_or_default();
            app.claim_goal(id, owner, lease_for).await.map(falcon_app::goals::GoalView::from)
        }
    };
    let claimed = json(&claim(None, "agent-a").await.unwrap());
    assert_eq!((claimed["status"].as_str(), claimed["owner"].as_str()), (Some("CLAIMED"), Some("agent-a")));
    assert_eq!(claim(None, "agent-b").await.unwrap_err().kind(), ErrorKind::NotFound, "no open goal left");
    assert_eq!(claim(Some("g-1"), "agent-b").await.unwrap_err().kind(), ErrorKind::Conflict, "held by agent-a");
    // `goal release|achieve|abandon`: the owner is `--owner`, else the user's name.
    let user = std::env::var("USER").unwrap_or_else(|_| "falcon".into());
    let close = |to: GoalStatus, reason: &str, owner: &str| {
        let request = GoalCloseRequest { id: "g-1".into(), reason: reason.into(), owner: Some(owner.into()) };
        async move {
            app.close_goal(request.goal()?, to, &request.reason, request.owner.as_deref())
                .await
                .map(falcon_app::goals::GoalView::from)
        }
    };
    let released = json(&close(GoalStatus::Open, "", "agent-a").await.unwrap());
    assert_eq!(released["status"], "OPEN");
    let achieved = json(&close(GoalStatus::Achieved, "0.100 s", &user).await.unwrap());
    assert_eq!(achieved["status"], "ACHIEVED");
    assert_eq!(close(GoalStatus::Abandoned, "", &user).await.unwrap_err().kind(), ErrorKind::Conflict);

    let r = PageRequest::default();
    let pools = json(&app.pools(r.cursor.as_deref(), r.page_size().unwrap()).await.unwrap());
    assert_eq!(pools["items"][0]["name"], "local");
    assert_eq!(pools["items"][0]["used"], 0);
    assert_eq!(pools["next_cursor"], Value::Null);
}

/// The failing workload's spec: no retries, so its one attempt's failure is the experiment's.
fn write_failing_spec(dir: &Path, name: &str, script: &str) -> PathBuf {
    let text = format!(
        "name: {name}\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, '{script}']\n\
         resources: {{accelerator: cpu}}\nretries: 0\n"
    );
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// The `reason` of the last transition in an experiment's JSON.
fn last_reason(shown: &Value) -> String {
    let history = shown["history"].as_array().unwrap_or_else(|| panic!("no history: {shown:#}"));
    history.last().and_then(|t| t["reason"].as_str()).unwrap_or_else(|| panic!("no reason: {shown:#}")).to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_workload_shows_its_last_stderr_line() {
    let f = initialised().await;
    let app = &f.app;
    let spec = write_failing_spec(f.path(), "bad-flag", r#"echo starting; echo "error: bad flag" >&2; exit 2"#);
    let submitted = json(&submit(app, &spec, true).await.unwrap());
    assert_eq!(submitted["status"], "FAILED", "a failed experiment is what `--wait` fails on: {submitted:#}");
    assert_eq!(last_reason(&submitted), "job failed with exit code 2: exited with status 2: error: bad flag");

    let detail = show(app, "e-1", None).await.unwrap();
    let shown = json(&detail);
    assert_eq!(shown["status"], "FAILED");
    let history = shown["history"].as_array().unwrap();
    let last = history.last().unwrap();
    // From RUNNING, or straight from PROVISIONING when the job ended between two polls.
    assert_eq!(last["to"], "FAILED", "{shown:#}");
    let reason = last_reason(&shown);
    assert!(reason.contains("bad flag"), "{reason}");
    assert!(!reason.contains("starting"), "stdout is not the cause: {reason}");

    // The text view shows the same reason, and the logs still hold everything.
    let text = falcon_app::render::experiment::text(&detail);
    assert!(text.contains("error: bad flag"), "{text}");
    let logs = app.experiment_logs(detail.view.record.id, None).await.unwrap();
    let logs: String = logs.iter().map(|(_, text)| text.as_str()).collect();
    assert!(logs.contains("starting") && logs.contains("error: bad flag"), "{logs}");
    // `exp logs --tail 1` (the API's `?tail=1`): the last line of each log, the reason's among them.
    let (id, tail) = ExperimentLogLinesRequest { id: detail.view.record.id.to_string(), tail: Some(1) }.logs().unwrap();
    let last = app.experiment_logs(id, tail).await.unwrap();
    assert!(last.iter().all(|(_, text)| text.lines().count() <= 1), "{last:?}");
    assert!(last.iter().any(|(_, text)| text == "error: bad flag"), "{last:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_traceback_shows_its_exception_and_silence_shows_the_status() {
    let f = initialised().await;
    let app = &f.app;
    let traceback = write_failing_spec(
        f.path(),
        "traceback",
        concat!(
            r#"printf "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"#,
            r#"    raise ValueError(\"bad thing\")\n\033[31mValueError: bad thing\033[0m\n\n" >&2; exit 1"#,
        ),
    );
    let out = json(&submit(app, &traceback, true).await.unwrap());
    assert_eq!(out["status"], "FAILED", "{out:#}");
    assert_eq!(last_reason(&out), "job failed with exit code 1: exited with status 1: ValueError: bad thing");

    // Nothing on stderr: the reason is the exit status alone, as before.
    let quiet = write_failing_spec(f.path(), "quiet", "echo only stdout; exit 3");
    let out = json(&submit(app, &quiet, true).await.unwrap());
    assert_eq!(out["status"], "FAILED", "{out:#}");
    assert_eq!(last_reason(&out), "job failed with exit code 3: exited with status 3");
}
