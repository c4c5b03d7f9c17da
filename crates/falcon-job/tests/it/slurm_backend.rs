//! The Slurm backend against the REAL single-node Slurm cluster of `scripts/services.sh up`
//! (`FALCON_TEST_SLURM_CONF`, `FALCON_TEST_SLURM_PARTITION` from `.cache/services.env`; `scripts/test.sh`
//! sets them). Without them every test fails, saying so: none is skipped.
//!
//! Tests run in parallel on a small node: each uses its own job names (unique per run, since Slurm remembers
//! finished jobs for `MinJobAge`), and the one that fills the node holds the write half of [`NODE`] so that
//! no other test's job competes with it. Jobs a test leaves behind are cancelled by a guard, even on panic.

use falcon_core::config::{Platform, PoolBackend, PoolConfig};
use falcon_core::ids::JobId;
use falcon_core::status::JobStatus;
use falcon_infra::{ArtifactStore, MetaStore};
use falcon_job::backend::slurm::{parse_squeue, SlurmBackend, SlurmJob};
use falcon_job::backend::{object_name, Backend, BackendRef, BackendState, CpuUse, Sample, Submission};
use falcon_job::{JobError, JobManager, JobSpec, ManagerConfig, Pool, Resources, RetryPolicy};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::RwLock;

/// Tests whose jobs share the node hold it for reading; the test that fills the node holds it for writing.
static NODE: RwLock<()> = RwLock::const_new(());

#[derive(Clone)]
struct Cluster {
    conf: String,
    partition: String,
}

fn cluster() -> Cluster {
    let var = |key: &str| {
        std::env::var(key).ok().filter(|v| !v.trim().is_empty()).unwrap_or_else(|| {
            panic!(
                "{key} is not set: these tests need the single-node Slurm cluster of scripts/services.sh. \
                 Run them with scripts/test.sh (or `scripts/services.sh up && source .cache/services.env` first)."
            )
        })
    };
    Cluster { conf: var("FALCON_TEST_SLURM_CONF"), partition: var("FALCON_TEST_SLURM_PARTITION") }
}

/// A job name unique to this test run (lowercase, digits, `-`; at most 40 characters).
fn unique(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let tag = (nanos as u64 ^ (u64::from(std::process::id()) << 40)) % 36u64.pow(7);
    let mut base36 = String::new();
    let mut v = tag;
    for _ in 0..7 {
        base36.insert(0, char::from_digit((v % 36) as u32, 36).unwrap());
        v /= 36;
    }
    format!("{prefix}-{base36}{}", N.fetch_add(1, Ordering::Relaxed))
}

fn pool_config(cluster: &Cluster, partition: &str) -> PoolConfig {
    PoolConfig {
        name: "slurm".into(),
        backend: PoolBackend::Slurm,
        zone: "local".into(),
        platform: Platform::Cpu,
        accelerators: vec!["cpu".into()],
        capacity: 2,
        settings: BTreeMap::from([
            ("slurm_conf".to_string(), serde_json::Value::String(cluster.conf.clone())),
            ("partition".to_string(), serde_json::Value::String(partition.into())),
        ]),
    }
}

fn pool(cluster: &Cluster) -> Pool {
    Pool::from_config(&pool_config(cluster, &cluster.partition)).unwrap()
}

fn backend(pool: &Pool, dir: &Path) -> SlurmBackend {
    SlurmBackend::from_pool(pool, dir).unwrap()
}

fn spec(name: &str, script: &str, cpus: u32) -> JobSpec {
    JobSpec {
        name: name.into(),
        image: None,
        command: vec!["sh".into(), "-c".into(), script.into()],
        env: BTreeMap::from([("GREETING".into(), "hello there".into())]),
        resources: Resources { devices: Some(cpus), ..Resources::of("cpu", 1) },
        artifact_uri: None,
        timeout_s: Some(600),
        priority: 0,
        retry: RetryPolicy::default(),
        labels: BTreeMap::new(),
    }
}

async fn submit(backend: &SlurmBackend, pool: &Pool, spec: &JobSpec) -> Result<BackendRef, JobError> {
    let resolved = spec.resolve().unwrap();
    let sub = Submission {
        job: JobId(1),
        name: object_name(&spec.name, 1, &pool.name),
        spec,
        resolved: &resolved,
        attempt: 1,
        pool,
    };
    backend.submit(&sub).await
}

/// Polls `status` until `done` accepts it; panics with the last state after `limit`.
async fn wait_for(
    backend: &SlurmBackend,
    job: &BackendRef,
    limit: Duration,
    done: impl Fn(&BackendState) -> bool,
) -> BackendState {
    let started = Instant::now();
    loop {
        let state = backend.status(job).await.unwrap();
        if done(&state) {
            return state;
        }
        assert!(started.elapsed() < limit, "job {} still {state:?} after {limit:?}", job.0);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every job Slurm holds now with this name.
fn squeue_named(cluster: &Cluster, name: &str) -> Vec<SlurmJob> {
    let out = std::process::Command::new("squeue")
        .arg("--json")
        .env("SLURM_CONF", &cluster.conf)
        .output()
        .expect("run squeue");
    assert!(out.status.success(), "squeue --json: {}", String::from_utf8_lossy(&out.stderr));
    parse_squeue(&String::from_utf8_lossy(&out.stdout)).unwrap().into_iter().filter(|j| j.name == name).collect()
}

/// Cancels the Slurm jobs it was given when dropped (also when a test panics).
struct Scancel {
    conf: String,
    ids: Vec<u64>,
}

impl Scancel {
    fn new(cluster: &Cluster) -> Self {
        Scancel { conf: cluster.conf.clone(), ids: Vec::new() }
    }

    fn add(&mut self, job: &BackendRef) {
        self.ids.extend(SlurmBackend::job_id(job));
    }
}

impl Drop for Scancel {
    fn drop(&mut self) {
        for id in &self.ids {
            let _ = std::process::Command::new("scancel").arg(id.to_string()).env("SLURM_CONF", &self.conf).output();
        }
    }
}

/// A one-CPU job of `script`, submitted to the test cluster under a unique name from `prefix`. Its folder, its
/// backend, a guard that cancels it and a read hold on the node live as long as this does.
struct OneJob {
    slurm: SlurmBackend,
    job: BackendRef,
    _guard: Scancel,
    _dir: tempfile::TempDir,
    _node: tokio::sync::RwLockReadGuard<'static, ()>,
}

async fn one_job(prefix: &str, script: &str) -> OneJob {
    let cluster = cluster();
    let node = NODE.read().await;
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(&cluster);
    let slurm = backend(&pool, dir.path());
    let job = submit(&slurm, &pool, &spec(&unique(prefix), script, 1)).await.unwrap();
    let mut guard = Scancel::new(&cluster);
    guard.add(&job);
    OneJob { slurm, job, _guard: guard, _dir: dir, _node: node }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_and_succeeds_with_its_logs_and_artifacts() {
    let cluster = cluster();
    let _node = NODE.read().await;
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(&cluster);
    let slurm = backend(&pool, dir.path());
    let name = unique("ok");
    let script = "echo $GREETING from $FALCON_JOB_NAME attempt $FALCON_JOB_ATTEMPT; echo oops >&2; \
                  mkdir -p $FALCON_ARTIFACT_DIR/plugins/profile; echo profile > $FALCON_ARTIFACT_DIR/plugins/profile/h.pb; sleep 2";
    let job = submit(&slurm, &pool, &spec(&name, script, 1)).await.unwrap();
    let mut guard = Scancel::new(&cluster);
    guard.add(&job);
    let object = object_name(&name, 1, "slurm");
    let id = SlurmBackend::job_id(&job).expect("a Slurm job id in the handle");
    assert_eq!(job.0, format!("{id}@{object}"));
    let folder = dir.path().join(&object);
    assert_eq!(std::fs::read_to_string(folder.join("jobid")).unwrap(), id.to_string());
    assert!(std::fs::read_to_string(folder.join("job.sh")).unwrap().contains(&format!("#SBATCH --job-name={object}")));
    let in_slurm = squeue_named(&cluster, &object);
    assert_eq!(
        in_slurm.iter().map(|j| j.job_id).collect::<Vec<_>>(),
        [id],
        "Slurm holds the job under its object name"
    );

    wait_for(&slurm, &job, Duration::from_secs(60), |s| matches!(s, BackendState::Running { .. })).await;
    let end = wait_for(&slurm, &job, Duration::from_secs(60), |s| {
        !matches!(s, BackendState::Running { .. } | BackendState::Pending { .. })
    })
    .await;
    assert_eq!(end, BackendState::Succeeded);
    let logs = slurm.logs(&job).await.unwrap();
    let log =
        |source: &str| logs.iter().find(|l| l.source == source).map(|l| String::from_utf8_lossy(&l.text).to_string());
    assert_eq!(log("stdout").as_deref(), Some(format!("hello there from {object} attempt 1\n").as_str()));
    assert_eq!(log("stderr").as_deref(), Some("oops\n"));
    let artifacts = slurm.artifact_dir(&job).unwrap();
    assert_eq!(artifacts, folder.join("artifacts"));
    assert_eq!(std::fs::read_to_string(artifacts.join("plugins/profile/h.pb")).unwrap(), "profile\n");
    assert!(folder.join("final.json").exists(), "the end state is kept for when Slurm forgets the job");
    // A bare job id works too (the folder is found by its jobid file).
    let bare = BackendRef(id.to_string());
    assert_eq!(slurm.status(&bare).await.unwrap(), BackendState::Succeeded);
    assert_eq!(slurm.artifact_dir(&bare), Some(folder.join("artifacts")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_job_s_memory_and_cpu_time_are_sampled_with_sstat() {
    // Keeps 160 MiB and spins for CPU time, for about 6 s; the cluster gathers accounting every second.
    let script =
        "python3 -c 'import time\nkeep = b\"x\" * (160 << 20)\nt = time.time()\nwhile time.time() - t < 6: pass'";
    let one = one_job("sampled", script).await;
    let (slurm, job) = (&one.slurm, &one.job);
    wait_for(slurm, job, Duration::from_secs(60), |s| matches!(s, BackendState::Running { .. })).await;
    let started = Instant::now();
    let (rss, cpu) = loop {
        match slurm.sample(job).await.unwrap() {
            Sample::Usage { rss_bytes, cpu: CpuUse::Total(cpu_s) } if rss_bytes > 150 << 20 && cpu_s >= 1.0 => {
                break (rss_bytes, cpu_s)
            }
            Sample::Unsupported(why) => panic!("the test cluster gathers accounting, yet: {why}"),
            other => assert!(started.elapsed() < Duration::from_secs(20), "still {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert!(rss < 1 << 30, "{rss} bytes: the batch step's memory, not the node's");
    assert!(cpu < 60.0, "{cpu} s");
    wait_for(slurm, job, Duration::from_secs(60), |s| *s == BackendState::Succeeded).await;
    assert_eq!(slurm.sample(job).await.unwrap(), Sample::NoReading, "nothing runs after the end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_job_reports_its_exit_code() {
    let script =
        "echo before failing; printf 'Traceback (most recent call last):\\nValueError: bad shard\\n\\n' >&2; exit 3";
    let one = one_job("exit3", script).await;
    let (slurm, job) = (&one.slurm, &one.job);
    let end = wait_for(slurm, job, Duration::from_secs(60), |s| {
        !matches!(s, BackendState::Running { .. } | BackendState::Pending { .. })
    })
    .await;
    match &end {
        BackendState::Failed { exit_code: Some(3), reason } => {
            assert!(reason.contains("exited with status 3") && reason.contains("FAILED"), "{reason}")
        }
        other => panic!("expected Failed with exit code 3, got {other:?}"),
    }
    let stdout = slurm.logs(job).await.unwrap().into_iter().find(|l| l.source == "stdout").unwrap();
    assert_eq!(stdout.text, b"before failing\n");
    assert_eq!(slurm.status(job).await.unwrap(), end, "asking again gives the same answer");
    // The end of its stderr.log, for the reason of the failure.
    let said = slurm.failure_output(job).await.unwrap().expect("stderr.log is there");
    assert_eq!(falcon_job::failure::meaningful_line(&said).as_deref(), Some("ValueError: bad shard"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_a_running_job() {
    let one = one_job("cancel", "echo started; sleep 60").await;
    let (slurm, job) = (&one.slurm, &one.job);
    wait_for(slurm, job, Duration::from_secs(60), |s| matches!(s, BackendState::Running { .. })).await;
    let started = Instant::now();
    slurm.cancel(job).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(12), "cancel took {:?}", started.elapsed());
    assert_eq!(
        slurm.status(job).await.unwrap(),
        BackendState::Cancelled,
        "cancel returns once Slurm has ended the job"
    );
    slurm.cancel(job).await.unwrap();
    assert_eq!(slurm.status(job).await.unwrap(), BackendState::Cancelled, "cancelling again changes nothing");
    let id = SlurmBackend::job_id(job).unwrap();
    let in_slurm: Vec<_> =
        squeue_named(&cluster(), job.0.split_once('@').unwrap().1).into_iter().map(|j| (j.job_id, j.state)).collect();
    assert_eq!(in_slurm, [(id, "CANCELLED".to_string())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submitting_twice_adopts_and_a_restarted_backend_finds_the_job() {
    let cluster = cluster();
    let _node = NODE.read().await;
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(&cluster);
    let name = unique("twice");
    let object = object_name(&name, 1, "slurm");
    let job_spec = spec(&name, "sleep 30", 1);
    let mut guard = Scancel::new(&cluster);

    let first = backend(&pool, dir.path());
    assert_eq!(first.find(&object).await.unwrap(), None, "nothing submitted yet");
    let job = submit(&first, &pool, &job_spec).await.unwrap();
    guard.add(&job);
    assert_eq!(submit(&first, &pool, &job_spec).await.unwrap(), job, "the same object name adopts the job");

    // A worker restart: a new backend value over the same folder.
    let restarted = backend(&pool, dir.path());
    assert_eq!(restarted.find(&object).await.unwrap(), Some(job.clone()));
    assert_eq!(submit(&restarted, &pool, &job_spec).await.unwrap(), job);

    // A worker that died between sbatch and recording the id: Slurm still knows the job by name.
    std::fs::remove_file(dir.path().join(&object).join("jobid")).unwrap();
    let again = backend(&pool, dir.path());
    assert_eq!(submit(&again, &pool, &job_spec).await.unwrap(), job, "found by name in squeue, not submitted again");
    let id = SlurmBackend::job_id(&job).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join(&object).join("jobid")).unwrap(),
        id.to_string(),
        "the id is recorded again"
    );

    let in_slurm = squeue_named(&cluster, &object);
    assert_eq!(in_slurm.iter().map(|j| j.job_id).collect::<Vec<_>>(), [id], "exactly one Slurm job: {in_slurm:?}");

    // Another jobs folder with the same object name does not claim this job (its output path differs).
    let other_dir = tempfile::tempdir().unwrap();
    assert_eq!(backend(&pool, other_dir.path()).find(&object).await.unwrap(), None);

    again.cancel(&job).await.unwrap();
    assert_eq!(again.status(&job).await.unwrap(), BackendState::Cancelled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_partition_is_a_clear_error_and_leaves_nothing() {
    let cluster = cluster();
    let dir = tempfile::tempdir().unwrap();
    let pool = Pool::from_config(&pool_config(&cluster, "nosuchpartition")).unwrap();
    let slurm = backend(&pool, dir.path());
    let name = unique("badpart");
    let object = object_name(&name, 1, "slurm");
    let err = submit(&slurm, &pool, &spec(&name, "true", 1)).await.unwrap_err();
    match &err {
        JobError::Backend { backend: "slurm", pool, operation: "submit", message } => {
            assert_eq!(pool, "slurm");
            assert!(message.contains("sbatch") && message.contains("Invalid partition name specified"), "{message}");
        }
        other => panic!("expected a backend error, got {other:?}"),
    }
    assert!(err.to_string().contains("slurm backend (slurm): submit failed"), "{err}");
    assert!(!dir.path().join(&object).join("jobid").exists(), "no jobid recorded");
    assert!(!dir.path().join(&object).exists(), "the folder is removed");
    assert_eq!(slurm.find(&object).await.unwrap(), None);
    assert!(squeue_named(&cluster, &object).is_empty(), "no Slurm job");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_foreign_ids_are_missing() {
    let cluster = cluster();
    let _node = NODE.read().await;
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(&cluster);
    let slurm = backend(&pool, dir.path());
    let nobody = BackendRef("987654321@nobody-a1-slurm".into());
    assert_eq!(slurm.status(&nobody).await.unwrap(), BackendState::Missing);
    slurm.cancel(&nobody).await.unwrap();
    assert!(slurm.logs(&nobody).await.unwrap().is_empty());
    assert_eq!(slurm.status(&BackendRef("987654321".into())).await.unwrap(), BackendState::Missing);
    let err = slurm.status(&BackendRef("not-a-job".into())).await.unwrap_err().to_string();
    assert!(err.contains("not a Slurm job handle"), "{err}");

    // A job Slurm has forgotten (MinJobAge passed) is answered from the end state kept in its folder.
    let gone = "gone-a1-slurm";
    std::fs::create_dir_all(dir.path().join(gone)).unwrap();
    std::fs::write(dir.path().join(gone).join("jobid"), "987654320").unwrap();
    let record = r#"{"job_id": 987654320, "name": "gone-a1-slurm", "job_state": "FAILED", "state_reason": "NonZeroExitCode", "exit_code": 768}"#;
    std::fs::write(dir.path().join(gone).join("final.json"), record).unwrap();
    let forgotten = BackendRef(format!("987654320@{gone}"));
    assert!(matches!(slurm.status(&forgotten).await.unwrap(), BackendState::Failed { exit_code: Some(3), .. }));
    assert_eq!(slurm.find(gone).await.unwrap(), Some(forgotten.clone()), "a recorded id is adopted, never resubmitted");
    let gone_spec = spec("gone", "true", 1);
    assert_eq!(submit(&slurm, &pool, &gone_spec).await.unwrap(), forgotten);
    assert!(squeue_named(&cluster, gone).is_empty(), "nothing was submitted");
    assert_eq!(
        slurm.status(&BackendRef("987654321@gone-a1-slurm".into())).await.unwrap(),
        BackendState::Missing,
        "another id's record is not used"
    );

    // A real id under another name (an id reused after a cluster reset) is not ours: Missing, never cancelled.
    let job = submit(&slurm, &pool, &spec(&unique("foreign"), "sleep 20", 1)).await.unwrap();
    let mut guard = Scancel::new(&cluster);
    guard.add(&job);
    let id = SlurmBackend::job_id(&job).unwrap();
    let foreign = BackendRef(format!("{id}@someone-else-a1-slurm"));
    assert_eq!(slurm.status(&foreign).await.unwrap(), BackendState::Missing);
    slurm.cancel(&foreign).await.unwrap();
    assert!(
        matches!(slurm.status(&job).await.unwrap(), BackendState::Pending { .. } | BackendState::Running { .. }),
        "untouched"
    );
    slurm.cancel(&job).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_behind_a_full_node_is_pending_unschedulable() {
    let cluster = cluster();
    let _node = NODE.write().await;
    let out =
        std::process::Command::new("sinfo").args(["-h", "-o", "%c"]).env("SLURM_CONF", &cluster.conf).output().unwrap();
    let cpus: u32 = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .and_then(|l| l.trim().trim_end_matches('+').parse().ok())
        .expect("sinfo -o %c");
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(&cluster);
    let slurm = backend(&pool, dir.path());
    let mut guard = Scancel::new(&cluster);
    let hog = submit(&slurm, &pool, &spec(&unique("hog"), "sleep 120", cpus)).await.unwrap();
    guard.add(&hog);
    wait_for(&slurm, &hog, Duration::from_secs(90), |s| matches!(s, BackendState::Running { .. })).await;
    let waiting = submit(&slurm, &pool, &spec(&unique("behind"), "true", 1)).await.unwrap();
    guard.add(&waiting);
    let state = wait_for(&slurm, &waiting, Duration::from_secs(30), |s| {
        matches!(s, BackendState::Pending { unschedulable: true, .. })
    })
    .await;
    match state {
        BackendState::Pending { reason, .. } => assert!(reason == "Resources" || reason == "Priority", "{reason}"),
        other => panic!("{other:?}"),
    }
    // What the manager does on a stockout: cancel the pending job (it never ran), then free the node.
    slurm.cancel(&waiting).await.unwrap();
    assert_eq!(slurm.status(&waiting).await.unwrap(), BackendState::Cancelled);
    slurm.cancel(&hog).await.unwrap();
    assert_eq!(slurm.status(&hog).await.unwrap(), BackendState::Cancelled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_job_manager_runs_jobs_on_a_slurm_pool() {
    let cluster = cluster();
    let _node = NODE.read().await;
    let dir = tempfile::tempdir().unwrap();
    let meta = MetaStore::create(&format!("sqlite://{}", dir.path().join("m.db").display())).await.unwrap();
    let store =
        ArtifactStore::open(&dir.path().join("arts").display().to_string(), &Default::default(), &Default::default())
            .unwrap();
    let pool = pool(&cluster);
    let slurm: Arc<dyn Backend> = Arc::new(backend(&pool, &dir.path().join("jobs")));
    let mut config = ManagerConfig::new("worker-slurm-test");
    config.log_interval = Duration::from_millis(100);
    let manager = JobManager::new(meta.clone(), store.clone(), vec![pool], vec![slurm], config);
    let mut guard = Scancel::new(&cluster);

    let ok_name = unique("mgr-ok");
    let fail_name = unique("mgr-fail");
    let script = "echo $GREETING from $FALCON_JOB_ID; echo warn >&2; mkdir -p $FALCON_ARTIFACT_DIR/out; echo result > $FALCON_ARTIFACT_DIR/out/r.txt";
    let ok = manager.submit(&spec(&ok_name, script, 1)).await.unwrap();
    let failing = manager
        .submit(&spec(&fail_name, "echo before failing; echo \"error: bad flag\" >&2; exit 3", 1))
        .await
        .unwrap();
    let started = Instant::now();
    loop {
        let report = manager.tick().await.unwrap();
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        let mut done = true;
        for id in [ok.id, failing.id] {
            let job = meta.get_job(id).await.unwrap();
            if let Some(handle) = &job.backend_ref {
                guard
                    .ids
                    .extend(SlurmBackend::job_id(&BackendRef(handle.clone())).filter(|id| !guard.ids.contains(id)));
            }
            done &= job.status.is_terminal();
        }
        if done {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(90), "jobs did not finish in 90 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let done = meta.get_job(ok.id).await.unwrap();
    assert_eq!((done.status, done.exit_code), (JobStatus::Succeeded, Some(0)));
    assert_eq!(done.pool.as_deref(), Some("slurm"));
    let handle = done.backend_ref.clone().unwrap();
    assert!(handle.ends_with(&format!("@{}", object_name(&ok_name, 1, "slurm"))), "{handle}");
    let stdout = store.get(&format!("jobs/{ok_name}/logs/1/stdout.log")).await.unwrap();
    assert_eq!(std::str::from_utf8(&stdout).unwrap(), format!("hello there from {}\n", ok.id));
    assert_eq!(store.get(&format!("jobs/{ok_name}/logs/1/stderr.log")).await.unwrap().as_ref(), b"warn\n");
    assert_eq!(store.get(&format!("jobs/{ok_name}/out/r.txt")).await.unwrap().as_ref(), b"result\n");
    let steps: Vec<_> = manager.history(ok.id).await.unwrap().into_iter().map(|t| t.to).collect();
    assert_eq!(steps.first(), Some(&JobStatus::Queued));
    assert_eq!(steps.get(1), Some(&JobStatus::Submitted));
    assert_eq!(steps.last(), Some(&JobStatus::Succeeded));

    let failed = meta.get_job(failing.id).await.unwrap();
    assert_eq!((failed.status, failed.exit_code), (JobStatus::Failed, Some(3)));
    let reason = failed.status_reason.unwrap_or_default();
    assert!(reason.contains("exited with status 3"), "{reason}");
    assert!(reason.ends_with(": error: bad flag"), "the failure carries its last stderr line: {reason}");
    assert_eq!(store.get(&format!("jobs/{fail_name}/logs/1/stdout.log")).await.unwrap().as_ref(), b"before failing\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_controller_is_an_error_never_a_missing_job() {
    let cluster = cluster();
    let dir = tempfile::tempdir().unwrap();
    // The same cluster's configuration with a port nothing listens on: squeue then exits 0 with an empty job
    // list and an `errors` entry (tests/data/slurm/CONTROLLER_DOWN.md), which must not read as "no jobs".
    let conf: String = std::fs::read_to_string(&cluster.conf)
        .unwrap()
        .lines()
        .map(|l| if l.starts_with("SlurmctldPort=") { "SlurmctldPort=1\n".to_string() } else { format!("{l}\n") })
        .collect();
    let dead_conf = dir.path().join("slurm.conf");
    std::fs::write(&dead_conf, conf).unwrap();
    let dead = Cluster { conf: dead_conf.display().to_string(), partition: cluster.partition.clone() };
    let pool = pool(&dead);
    let jobs = dir.path().join("jobs");
    let slurm = backend(&pool, &jobs);
    std::fs::create_dir_all(jobs.join("known-a1-slurm")).unwrap();
    std::fs::write(jobs.join("known-a1-slurm").join("jobid"), "41").unwrap();
    let name = unique("dead");
    let job_spec = spec(&name, "true", 1);
    let some_job = BackendRef("42@some-job-a1-slurm".into());
    let (status, cancel, submitted, known) = tokio::join!(
        slurm.status(&some_job),
        slurm.cancel(&some_job),
        submit(&slurm, &pool, &job_spec),
        slurm.find("known-a1-slurm"),
    );
    for (what, err) in
        [("status", status.unwrap_err()), ("cancel", cancel.unwrap_err()), ("submit", submitted.unwrap_err())]
    {
        let text = err.to_string();
        assert!(
            text.contains(&format!("{what} failed")) && text.contains("Failed while looking for jobs"),
            "{what}: {text}"
        );
    }
    assert!(
        !jobs.join(object_name(&name, 1, "slurm")).exists(),
        "nothing written for a submission that never happened"
    );
    assert_eq!(
        known.unwrap(),
        Some(BackendRef("41@known-a1-slurm".into())),
        "a recorded id stands without the controller"
    );
}
