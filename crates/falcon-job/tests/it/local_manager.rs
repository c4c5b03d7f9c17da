//! The job manager end to end on the local backend (real processes) and SQLite.

use crate::common;

use falcon_core::config::PoolConfig;
use falcon_core::ids::JobId;
use falcon_core::status::JobStatus;
use falcon_infra::{ArtifactStore, MetaStore};
use falcon_job::backend::local::LocalBackend;
use falcon_job::backend::Backend;
use falcon_job::{JobError, JobManager, JobSpec, ManagerConfig, Pool, Resources, RetryPolicy};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

type Env = common::LocalEnv;

async fn env() -> Env {
    let mut config = ManagerConfig::new("worker-test");
    config.log_interval = Duration::from_millis(100);
    common::local_env(config).await
}

fn shell(name: &str, script: &str) -> JobSpec {
    JobSpec { env: BTreeMap::from([("GREETING".into(), "hello".into())]), ..common::shell_job(name, script) }
}

async fn run_until_done(env: &Env, ids: &[JobId], limit: Duration) {
    let started = Instant::now();
    loop {
        let report = env.manager.tick().await.unwrap();
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        let mut done = true;
        for id in ids {
            done &= env.meta.get_job(*id).await.unwrap().status.is_terminal();
        }
        if done {
            return;
        }
        assert!(started.elapsed() < limit, "jobs did not finish in {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_and_its_logs_and_artifacts_are_kept() {
    let env = env().await;
    let script = "echo $GREETING from $FALCON_JOB_ID; echo oops >&2; mkdir -p $FALCON_ARTIFACT_DIR/plugins/profile/r; \
                  echo profile > $FALCON_ARTIFACT_DIR/plugins/profile/r/h.xplane.pb";
    let job = env.manager.submit(&shell("ok-job", script)).await.unwrap();
    run_until_done(&env, &[job.id], Duration::from_secs(20)).await;
    let done = env.meta.get_job(job.id).await.unwrap();
    assert_eq!((done.status, done.exit_code), (JobStatus::Succeeded, Some(0)));
    let stdout = env.store.get("jobs/ok-job/logs/1/stdout.log").await.unwrap();
    assert_eq!(std::str::from_utf8(&stdout).unwrap(), format!("hello from {}\n", job.id));
    assert_eq!(env.store.get("jobs/ok-job/logs/1/stderr.log").await.unwrap().as_ref(), b"oops\n");
    assert_eq!(env.store.get("jobs/ok-job/plugins/profile/r/h.xplane.pb").await.unwrap().as_ref(), b"profile\n");
    let steps: Vec<_> = env.manager.history(job.id).await.unwrap().into_iter().map(|t| t.to).collect();
    assert_eq!(steps.first(), Some(&JobStatus::Queued));
    assert_eq!(steps.get(1), Some(&JobStatus::Submitted));
    assert_eq!(steps.last(), Some(&JobStatus::Succeeded));
    assert!(done.lease_owner.is_none(), "the lease is released at the end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_job_records_its_exit_code_and_keeps_logs() {
    let env = env().await;
    let job = env.manager.submit(&shell("fails", "echo before failing; exit 3")).await.unwrap();
    run_until_done(&env, &[job.id], Duration::from_secs(20)).await;
    let done = env.meta.get_job(job.id).await.unwrap();
    assert_eq!((done.status, done.exit_code), (JobStatus::Failed, Some(3)));
    assert_eq!(done.status_reason.as_deref(), Some("exited with status 3"));
    assert_eq!(env.store.get("jobs/fails/logs/1/stdout.log").await.unwrap().as_ref(), b"before failing\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_reason_carries_the_last_line_of_stderr() {
    let env = env().await;
    let job =
        env.manager.submit(&shell("bad-flag", "echo starting; echo \"error: bad flag\" >&2; exit 2")).await.unwrap();
    // 2 MB of stderr before the error, in lines and in one long line: only the end is read for the reason.
    let noisy = env
        .manager
        .submit(&shell(
            "noisy",
            "i=0; while [ $i -lt 20000 ]; do echo \"warning: step $i is slow, as it has been for a long while now\"; \
             i=$((i+1)); done >&2; head -c 1000000 /dev/zero | tr '\\0' x >&2; \
             printf '\\n\\033[31mOSError: disk full\\033[0m\\n\\n' >&2; exit 1",
        ))
        .await
        .unwrap();
    run_until_done(&env, &[job.id, noisy.id], Duration::from_secs(30)).await;
    let done = env.meta.get_job(job.id).await.unwrap();
    assert_eq!((done.status, done.exit_code), (JobStatus::Failed, Some(2)));
    assert_eq!(done.status_reason.as_deref(), Some("exited with status 2: error: bad flag"));
    let last = env.manager.history(job.id).await.unwrap().pop().unwrap();
    assert_eq!((last.to, last.reason.as_str()), (JobStatus::Failed, "exited with status 2: error: bad flag"));
    assert_eq!(env.store.get("jobs/bad-flag/logs/1/stderr.log").await.unwrap().as_ref(), b"error: bad flag\n");
    let noisy = env.meta.get_job(noisy.id).await.unwrap();
    assert_eq!(noisy.status_reason.as_deref(), Some("exited with status 1: OSError: disk full"));
    let stderr = env.store.get("jobs/noisy/logs/1/stderr.log").await.unwrap();
    assert!(stderr.len() > 2_000_000, "the whole log is still kept: {} bytes", stderr.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_failure_says_what_the_attempt_said() {
    let env = env().await;
    let mut spec = shell(
        "flaky-said",
        "echo \"error: attempt $FALCON_JOB_ATTEMPT failed\" >&2; [ $FALCON_JOB_ATTEMPT -ge 2 ] || exit 42",
    );
    spec.retry = RetryPolicy { max_attempts: 3, retry_exit_codes: vec![42] };
    let job = env.manager.submit(&spec).await.unwrap();
    run_until_done(&env, &[job.id], Duration::from_secs(20)).await;
    let history = env.manager.history(job.id).await.unwrap();
    let failed = history.iter().find(|t| t.to == JobStatus::Failed).expect("attempt 1 failed");
    assert_eq!(failed.reason, "exited with status 42: error: attempt 1 failed");
    let requeued = history.iter().find(|t| t.to == JobStatus::Queued && t.attempt == 2).expect("requeued");
    assert_eq!(requeued.reason, "exit code 42 is retryable (error: attempt 1 failed): retrying as attempt 2 of 3");
    let finished = env.meta.get_job(job.id).await.unwrap();
    assert_eq!(
        (finished.status, finished.status_reason.as_deref()),
        (JobStatus::Succeeded, Some("exited with status 0")),
        "a success says nothing of its stderr"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_the_process_group_and_keeps_logs() {
    let env = env().await;
    let job = env.manager.submit(&shell("sleeper", "echo started; sleep 30 & wait")).await.unwrap();
    let started = Instant::now();
    while env.meta.get_job(job.id).await.unwrap().status != JobStatus::Running {
        env.manager.tick().await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pid: i32 =
        std::fs::read_to_string(env.dir.path().join("jobs/sleeper-a1-local/pid")).unwrap().trim().parse().unwrap();
    env.manager.cancel(job.id).await.unwrap();
    run_until_done(&env, &[job.id], Duration::from_secs(20)).await;
    assert_eq!(env.meta.get_job(job.id).await.unwrap().status, JobStatus::Cancelled);
    let group_alive = std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let fields: Vec<String> =
            stat.rsplit_once(')').map(|(_, r)| r.split_whitespace().map(str::to_string).collect()).unwrap_or_default();
        fields.len() > 2 && fields[0] != "Z" && fields[2] == pid.to_string()
    });
    assert!(!group_alive, "no process of the job's group survives (sleep child included)");
    assert_eq!(env.store.get("jobs/sleeper/logs/1/stdout.log").await.unwrap().as_ref(), b"started\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_fails_the_job() {
    let env = env().await;
    let mut spec = shell("slow", "sleep 30");
    spec.timeout_s = Some(1);
    let job = env.manager.submit(&spec).await.unwrap();
    run_until_done(&env, &[job.id], Duration::from_secs(20)).await;
    let done = env.meta.get_job(job.id).await.unwrap();
    assert_eq!(done.status, JobStatus::Failed);
    assert_eq!(done.status_reason.as_deref(), Some("timed out after 1 s"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retryable_exit_code_is_resubmitted_until_attempts_are_spent() {
    let env = env().await;
    let mut spec = shell("flaky", "echo attempt $FALCON_JOB_ATTEMPT; [ $FALCON_JOB_ATTEMPT -ge 2 ] || exit 42");
    spec.retry = RetryPolicy { max_attempts: 3, retry_exit_codes: vec![42] };
    let job = env.manager.submit(&spec).await.unwrap();
    run_until_done(&env, &[job.id], Duration::from_secs(20)).await;
    let history = env.manager.history(job.id).await.unwrap();
    let steps: Vec<_> = history.iter().map(|t| (t.to, t.attempt)).collect();
    assert!(steps.contains(&(JobStatus::Failed, 1)), "{steps:?}");
    assert!(
        history.iter().any(|t| t.to == JobStatus::Queued && t.reason.contains("retrying as attempt 2 of 3")),
        "{steps:?}"
    );
    let finished = env.meta.get_job(job.id).await.unwrap();
    assert_eq!((finished.status, finished.attempt), (JobStatus::Succeeded, 2));
    assert_eq!(env.store.get("jobs/flaky/logs/1/stdout.log").await.unwrap().as_ref(), b"attempt 1\n");
    assert_eq!(env.store.get("jobs/flaky/logs/2/stdout.log").await.unwrap().as_ref(), b"attempt 2\n");
}

#[tokio::test]
async fn a_job_that_fits_no_pool_fails_with_the_reason_and_bad_specs_are_refused() {
    let env = env().await;
    let mut spec = shell("tpu-job", "true");
    spec.resources = Resources::of("v6e-8", 1);
    spec.resources.zones = vec!["us-east5".into()];
    let job = env.manager.submit(&spec).await.unwrap();
    // It would wait forever: no pool of this manager offers it, whatever their load. It fails, saying so.
    let report = env.manager.tick().await.unwrap();
    assert!(report.waiting.is_empty(), "{:?}", report.waiting);
    assert_eq!(report.finished, [job.id]);
    let rec = env.meta.get_job(job.id).await.unwrap();
    assert_eq!(rec.status, JobStatus::Failed);
    let last = env.manager.history(job.id).await.unwrap().pop().unwrap();
    assert_eq!(last.to, JobStatus::Failed);
    assert!(
        last.reason.starts_with("no pool offers v6e-8 in us-east5; the pools offer: ") && last.reason.contains("cpu"),
        "{}",
        last.reason
    );

    let mut bad = shell("bad", "true");
    bad.resources.accelerator = "v6e-7".into();
    let err = env.manager.submit(&bad).await.unwrap_err();
    assert!(matches!(&err, JobError::InvalidSpec { field, .. } if field == "resources.accelerator"), "{err}");
    let mut bad_topology = shell("bad-topo", "true");
    bad_topology.resources = Resources { topology: Some("2x8".into()), ..Resources::of("v5litepod-16", 1) };
    assert!(env.manager.submit(&bad_topology).await.unwrap_err().to_string().contains("4x4"));
    assert_eq!(env.meta.list_jobs(&[]).await.unwrap().len(), 1, "nothing recorded for refused specs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_built_from_configuration_runs_jobs_and_refuses_bad_pools() {
    use falcon_core::config::{Config, ConfigLayer, MachineFacts};
    let dir = tempfile::Builder::new()
        .permissions(<std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755))
        .tempdir()
        .unwrap(); // as root, jobs run as users of their own, who must reach the job folders beside the data dir
    let toml = "data_dir = \".falcon\"\n[jobs]\npoll_interval_ms = 50\nlease_s = 5\n\n[[pools]]\nname = \"cpu\"\nbackend = \"local\"\nzone = \"local\"\n\
                platform = \"cpu\"\naccelerators = [\"cpu\"]\ncapacity = 2\n";
    let layer = ConfigLayer::from_toml(toml, "falcon.toml").unwrap().rebase(dir.path());
    let config = Config::resolve([layer], MachineFacts { cores: 2 });
    let meta = MetaStore::create(&config.db).await.unwrap();
    let store = ArtifactStore::open(&config.artifacts, &config.gcs, &config.s3).unwrap();
    let manager = JobManager::from_config(meta.clone(), store.clone(), &config, "w").await.unwrap();
    assert_eq!(manager.pools().len(), 1);
    let job = manager.submit(&shell("from-config", "echo ok")).await.unwrap();
    let started = Instant::now();
    while !meta.get_job(job.id).await.unwrap().status.is_terminal() {
        manager.tick().await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(20));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(meta.get_job(job.id).await.unwrap().status, JobStatus::Succeeded);
    // Job folders live beside the data dir, never in it (a workload must not see the store).
    assert!(dir.path().join(".falcon-jobs/from-config-a1-cpu/pid").exists(), "job folders live in [jobs] work_dir");
    assert!(!dir.path().join(".falcon/jobs").exists(), "no job folder in the data dir");

    let bad = ConfigLayer::from_toml(
        "[[pools]]\nname = \"tpus\"\nbackend = \"kubernetes\"\nzone = \"z\"\nplatform = \"tpu\"\naccelerators = [\"v6e-7\"]\ncapacity = 8\n",
        "falcon.toml",
    )
    .unwrap();
    let config = Config::resolve([bad], MachineFacts { cores: 2 });
    let err = JobManager::from_config(meta.clone(), store, &config, "w").await.err().expect("refused").to_string();
    assert!(err.contains("pool `tpus`") && err.contains("v6e-8"), "{err}");
    let missing = ConfigLayer::from_toml("[[pools]]\nname = \"x\"\nbackend = \"slurm\"\n", "falcon.toml").unwrap_err();
    assert!(missing.to_string().contains("missing field"), "{missing}");
}

#[tokio::test]
async fn a_dead_backend_leaves_the_job_queued_with_the_reason() {
    let dir = tempfile::Builder::new()
        .permissions(<std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755))
        .tempdir()
        .unwrap(); // as root, jobs run as users of their own, who must reach the job folders beside the data dir
    let meta = MetaStore::create(&format!("sqlite://{}", dir.path().join("m.db").display())).await.unwrap();
    let store =
        ArtifactStore::open(&dir.path().join("arts").display().to_string(), &Default::default(), &Default::default())
            .unwrap();
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, "x").unwrap();
    let pool = Pool::from_config(&PoolConfig::local_cpu(2)).unwrap();
    let backend: Arc<dyn Backend> = Arc::new(LocalBackend::new(blocker.join("jobs"), "local"));
    let manager = JobManager::new(meta.clone(), store, vec![pool], vec![backend], ManagerConfig::new("w"));
    let job = manager.submit(&shell("stuck", "true")).await.unwrap();
    let report = manager.tick().await.unwrap();
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    let rec = meta.get_job(job.id).await.unwrap();
    assert_eq!((rec.status, rec.pool.as_deref()), (JobStatus::Queued, Some("local")));
    let reason = rec.status_reason.unwrap();
    assert!(reason.contains("submitting to pool local failed, will retry") && reason.contains("not-a-dir"), "{reason}");
    assert_eq!(manager.history(job.id).await.unwrap().len(), 1, "no transition: nothing half-submitted");
}
