//! EXP end to end on the embedded defaults: a spec becomes an experiment and a local job, runs, and leaves
//! indexed artifacts and metric summaries; two runs compare with a verdict.

use falcon_core::config::{Config, ConfigLayer, MachineFacts};
use falcon_core::spec::parse_spec;
use falcon_core::status::ExperimentStatus;
use falcon_exp::Exp;

fn config(dir: &std::path::Path) -> Config {
    let layer = ConfigLayer::from_toml("data_dir = \".falcon\"\n[jobs]\npoll_interval_ms = 50\n", "falcon.toml")
        .unwrap()
        .rebase(dir);
    Config::resolve([layer], MachineFacts { cores: 2 })
}

/// Runs `test` with an `Exp` on SQLite (in `dir`) and again on a new MariaDB database (dropped afterwards).
async fn on_both<F, Fut>(test: F)
where
    F: Fn(Exp) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let dir = crate::harness::job_dir();
    test(Exp::init(&config(dir.path())).await.unwrap()).await;
    let server = std::env::var("FALCON_TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".into());
    let url = format!("{}/falcon_test_exp_{}", server.trim_end_matches('/'), uuid_like());
    let dir = crate::harness::job_dir();
    let mut cfg = config(dir.path());
    cfg.db = url.clone();
    let exp =
        Exp::init(&cfg).await.unwrap_or_else(|e| panic!("MariaDB is needed ({server}): {e}; run scripts/test.sh"));
    test(exp.clone()).await;
    exp.close().await;
    use sqlx::migrate::MigrateDatabase;
    sqlx::MySql::drop_database(&url).await.unwrap();
}

fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{}_{nanos}", std::process::id())
}

/// A workload that writes 20 steps of metrics with a step time around `base` seconds and a profile-like file.
fn spec(name: &str, base: f64) -> String {
    format!(
        r#"name: {name}
scenario: benchmark
workload:
  framework: shell
  command:
    - sh
    - -c
    - |
      for i in $(seq 0 19); do
        t=$(awk -v i=$i -v b={base} 'BEGIN {{ printf "%.4f", b + (i % 5) * 0.001 }}')
        echo "{{\"step\": $i, \"loss\": $((100 - i)), \"step_time_s\": $t}}" >> $FALCON_ARTIFACT_DIR/metrics.jsonl
      done
      mkdir -p $FALCON_ARTIFACT_DIR/plugins/profile/run1
      echo xplane > $FALCON_ARTIFACT_DIR/plugins/profile/run1/host.xplane.pb
      cp $FALCON_EXP_CONFIG $FALCON_ARTIFACT_DIR/config_effective.json
      echo "profile steps $FALCON_PROFILE_START_STEP+$FALCON_PROFILE_NUM_STEPS batch ${{config.batch_size}}"
config:
  batch_size: 8
  parallelism: {{dp: 1, fsdp: 1, tp: 1, pp: 1, ep: 1, sp: 1}}
resources: {{accelerator: cpu, devices: 1}}
profile: {{enabled: true, start_step: 10, num_steps: 3}}
labels: {{team: perf}}
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_runs_to_completion_with_artifacts_metrics_and_a_verdict() {
    on_both(spec_runs_to_completion).await;
}

async fn spec_runs_to_completion(exp: Exp) {
    let base = exp.submit(&parse_spec(&spec("base", 0.100), "base.yaml").unwrap()).await.unwrap();
    assert_eq!(base.status, ExperimentStatus::Provisioning);
    assert!(base.job.is_some());
    let done = exp.wait(base.id, |_| {}).await.unwrap();
    assert_eq!(done.status, ExperimentStatus::Completed, "{:?}", exp.show(base.id).await.unwrap().history);

    let view = exp.show(base.id).await.unwrap();
    let kinds: Vec<_> =
        view.artifacts.iter().map(|a| (a.key.rsplit('/').next().unwrap().to_string(), a.kind.as_str())).collect();
    for expected in [
        ("metrics.jsonl", "metrics"),
        ("host.xplane.pb", "xprof"),
        ("config_effective.json", "config"),
        ("stdout.log", "logs"),
    ] {
        assert!(kinds.iter().any(|(k, kind)| k == expected.0 && *kind == expected.1), "{expected:?} in {kinds:?}");
    }
    let step = &view.metrics["step_time_s"];
    assert_eq!(step.count, 18, "20 steps, 2 warm-up steps excluded");
    assert!((step.median - 0.102).abs() < 1e-9, "{step:?}");
    let logs = exp.logs(base.id).await.unwrap();
    let stdout = &logs.iter().find(|(n, _)| n == "1/stdout.log").unwrap().1;
    assert_eq!(stdout, "profile steps 10+3 batch 8\n", "substitution and FALCON_PROFILE_* reached the workload");
    let history: Vec<_> = view.history.iter().map(|t| t.to).collect();
    assert_eq!(history.first(), Some(&ExperimentStatus::Pending));
    assert_eq!(history.last(), Some(&ExperimentStatus::Completed));

    // A variant twice as slow: a regression even from one run a side (beyond the ±33 % the default between-run
    // floor leaves open; +20 % from one run each is inconclusive); the same run compared with itself: same.
    let slow = exp.submit(&parse_spec(&spec("slow", 0.200), "slow.yaml").unwrap()).await.unwrap();
    exp.wait(slow.id, |_| {}).await.unwrap();
    let verdict =
        serde_json::to_value(exp.compare(base.id, slow.id, "step_time_s", None, None).await.unwrap()).unwrap();
    assert_eq!(verdict["verdict"], "regressed", "{verdict:#}");
    assert_eq!(verdict["direction"], "lower_is_better");
    let same = serde_json::to_value(exp.compare(base.id, base.id, "step_time_s", None, None).await.unwrap()).unwrap();
    assert_eq!(same["verdict"], "same", "{same:#}");
    let changes = exp.diff(base.id, slow.id).await.unwrap();
    assert!(changes.iter().any(|c| c.path == "name"), "{changes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exit_code_the_spec_calls_transient_is_retried() {
    on_both(transient_exit).await;
}

async fn transient_exit(exp: Exp) {
    let marks = tempfile::tempdir().unwrap();
    // Exits 3 the first time it runs in `dir`, 0 the next; 4 is not listed, so it is final.
    let spec = |name: &str, dir: &std::path::Path, code: i32| {
        format!(
            "name: {name}\nscenario: benchmark\nworkload: {{framework: shell, command: [sh, -c, 'if [ -e {m} ]; then \
             exit 0; fi; touch {m}; exit {code}']}}\nresources: {{accelerator: cpu}}\nretries: 1\n\
             retry_on_exit_codes: [3, 134]\n",
            m = dir.join("ran").display()
        )
    };
    let (a, b) = (marks.path().join("a"), marks.path().join("b"));
    // A scratch folder every job may write in (jobs run as users of their own).
    use std::os::unix::fs::PermissionsExt;
    for d in [marks.path(), &a, &b] {
        std::fs::create_dir_all(d).unwrap();
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let rec = exp.submit(&parse_spec(&spec("transient", &a, 3), "t.yaml").unwrap()).await.unwrap();
    let done = exp.wait(rec.id, |_| {}).await.unwrap();
    assert_eq!(done.status, ExperimentStatus::Completed, "exit 3 is listed: retried, and the retry succeeds");
    let view = exp.show(rec.id).await.unwrap();
    assert_eq!(view.history.last().map(|t| t.attempt), Some(2), "{:?}", view.history);
    assert_eq!(view.record.spec["retry_on_exit_codes"], serde_json::json!([3, 134]));

    let rec = exp.submit(&parse_spec(&spec("final", &b, 4), "f.yaml").unwrap()).await.unwrap();
    let done = exp.wait(rec.id, |_| {}).await.unwrap();
    assert_eq!(done.status, ExperimentStatus::Failed, "exit 4 is not listed: not retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_workload_fails_the_experiment_and_cancel_works() {
    on_both(failing_and_cancel).await;
}

async fn failing_and_cancel(exp: Exp) {
    let text =
        "name: broken\nscenario: benchmark\nworkload: {framework: shell, command: [sh, -c, 'echo boom >&2; exit 3']}\n\
                resources: {accelerator: cpu}\nretries: 0\n";
    let rec = exp.submit(&parse_spec(text, "broken.yaml").unwrap()).await.unwrap();
    let done = exp.wait(rec.id, |_| {}).await.unwrap();
    assert_eq!(done.status, ExperimentStatus::Failed);
    let view = exp.show(rec.id).await.unwrap();
    assert!(view.history.last().unwrap().reason.contains("exit code 3"), "{:?}", view.history);
    assert!(exp.logs(rec.id).await.unwrap().iter().any(|(n, t)| n == "1/stderr.log" && t == "boom\n"));
    let err = exp.cancel(rec.id).await.unwrap_err();
    assert_eq!(err.kind(), falcon_core::ErrorKind::Conflict);

    let sleeper = "name: sleeper\nscenario: benchmark\nworkload: {framework: shell, command: [sleep, '60']}\nresources: {accelerator: cpu}\n";
    let rec = exp.submit(&parse_spec(sleeper, "s.yaml").unwrap()).await.unwrap();
    let mut seen_running = false;
    for _ in 0..200 {
        exp.work().await.unwrap();
        if exp.show(rec.id).await.unwrap().record.status == ExperimentStatus::Running {
            seen_running = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(seen_running);
    exp.cancel(rec.id).await.unwrap();
    let done = exp.wait(rec.id, |_| {}).await.unwrap();
    assert_eq!(done.status, ExperimentStatus::Cancelled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_finds_the_shift_across_runs() {
    on_both(history_shift).await;
}

async fn history_shift(exp: Exp) {
    for i in 0..20 {
        let base = if i < 10 { 0.100 } else { 0.130 };
        let jitter = (i % 3) as f64 * 0.001;
        let text = spec("nightly", base + jitter);
        let rec = exp.submit(&parse_spec(&text, "nightly.yaml").unwrap()).await.unwrap();
        assert_eq!(exp.wait(rec.id, |_| {}).await.unwrap().status, ExperimentStatus::Completed);
    }
    let filter = falcon_exp::ExperimentFilter { name: Some("nightly".into()), ..Default::default() };
    let history = exp.history(&filter, "step_time_s").await.unwrap();
    assert_eq!(history.points.len(), 20);
    assert_eq!(history.changes.len(), 1, "{:?}", history.changes);
    let change = &history.changes[0];
    assert_eq!(change.index, 10);
    assert_eq!(change.regression, Some(true), "step time went up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_becomes_a_session_whose_status_aggregates() {
    on_both(sweep_session).await;
}

async fn sweep_session(exp: Exp) {
    let dir = crate::harness::job_dir();
    std::fs::write(dir.path().join("base.yaml"), spec("sweep-base", 0.1)).unwrap();
    let load = |p: &str| std::fs::read_to_string(dir.path().join(p)).map_err(|e| e.to_string());
    let clash = "base: base.yaml\nsweep:\n  config.batch_size: [8, 16]\n  priority: [0, 1]\nname_template: \"bs${config.batch_size}\"\n";
    let err = falcon_exp::sweep::expand(clash, "sweep.yaml", load).unwrap_err();
    assert!(err.to_string().contains("sweep.yaml"), "two combinations with one name are refused: {err}");
    let sweep = "base: base.yaml\nsweep:\n  config.batch_size: [8, 16]\nname_template: \"bs${config.batch_size}\"\n";
    let specs = falcon_exp::sweep::expand(sweep, "sweep.yaml", load).unwrap();
    assert_eq!(specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["bs8", "bs16"]);
    let view = exp.submit_session("bs-sweep", None, serde_json::json!({"file": "sweep.yaml"}), &specs).await.unwrap();
    assert_eq!(view.status, ExperimentStatus::Running, "freshly submitted experiments are provisioning");
    for e in &view.experiments {
        exp.wait(e.id, |_| {}).await.unwrap();
    }
    let view = exp.session(view.session.id).await.unwrap();
    assert_eq!(view.status, ExperimentStatus::Completed);
    assert_eq!(view.experiments.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["bs8", "bs16"]);
    assert!(view.experiments.iter().all(|e| e.session == Some(view.session.id)));
    assert!(view.differences.iter().any(|d| d.path == "config.batch_size"), "{:?}", view.differences);
    assert!(!view.differences.iter().any(|d| d.path == "resources.accelerator"), "only keys that differ");
}
