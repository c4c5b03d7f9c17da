//! Leases are renewed on their own timer, not by ticks: a tick stalled for twice the lease keeps its job, and
//! once the renewal stops (the worker stops) the lease lapses and another worker takes over — on SQLite and
//! on MariaDB.
//!
//! The stall is real: the job replaces its `stdout.log` with a FIFO and opens it for writing only after
//! `STALL`, so the manager's log copy (inside the tick) blocks on it for that long, the way a multi-GB upload
//! would. The other worker is played by claiming through the store exactly as a tick's first step does.

mod common;

use falcon_core::config::PoolConfig;
use falcon_core::ids::JobId;
use falcon_core::status::JobStatus;
use falcon_infra::meta::ConnectOptions;
use falcon_infra::{ArtifactStore, MetaStore};
use falcon_job::backend::local::LocalBackend;
use falcon_job::backend::Backend;
use falcon_job::{JobManager, JobSpec, ManagerConfig, Pool};
use std::os::unix::fs::FileTypeExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LEASE: Duration = Duration::from_secs(1);
/// How long the job keeps the FIFO closed after the manager starts reading it: well over twice the lease.
const STALL_S: &str = "3";

fn fifo_job() -> JobSpec {
    let script = format!(
        "rm -f \"$FALCON_JOB_DIR/stdout.log\" && mkfifo \"$FALCON_JOB_DIR/stdout.log\" && sleep {STALL_S} && \
         echo released > \"$FALCON_JOB_DIR/stdout.log\" && rm \"$FALCON_JOB_DIR/stdout.log\""
    );
    common::shell_job("stalled", &script)
}

/// What happened while worker A's tick was stalled.
struct Outcome {
    stall: Duration,
    /// Whether worker B's claim ever succeeded during the stall.
    taken_by_other: bool,
    meta: MetaStore,
    manager: Arc<JobManager>,
    job: JobId,
    _dir: tempfile::TempDir,
}

async fn stall_a_tick(db: &str, renew: bool) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let meta =
        MetaStore::connect_with(db, &ConnectOptions { create_if_missing: true, ..Default::default() }).await.unwrap();
    let store =
        ArtifactStore::open(&dir.path().join("arts").display().to_string(), &Default::default(), &Default::default())
            .unwrap();
    let pool = Pool::from_config(&PoolConfig::local_cpu(2)).unwrap();
    let backend: Arc<dyn Backend> = Arc::new(LocalBackend::new(dir.path().join("jobs"), "local"));
    let mut config = ManagerConfig::new("worker-a");
    config.lease = LEASE;
    config.log_interval = Duration::ZERO;
    let manager = Arc::new(JobManager::new(meta.clone(), store, vec![pool], vec![backend], config));
    let job = manager.submit(&fifo_job()).await.unwrap().id;
    let report = manager.tick().await.unwrap();
    assert_eq!(report.submitted, [job], "{:?}", report.errors);

    // Wait until the job has put its FIFO in place, so the next tick's log copy blocks on it.
    let fifo = dir.path().join("jobs").join("stalled-a1-local").join("stdout.log");
    let started = Instant::now();
    while !std::fs::symlink_metadata(&fifo).is_ok_and(|m| m.file_type().is_fifo()) {
        assert!(started.elapsed() < Duration::from_secs(10), "the job never made its FIFO");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let keeper = renew.then(|| manager.keep_leases());
    // Worker B tries to claim the job every 100 ms while A's tick is stalled.
    let stalled = Arc::new(AtomicBool::new(true));
    let worker_b = {
        let (meta, stalled) = (meta.clone(), stalled.clone());
        tokio::spawn(async move {
            let mut taken = false;
            while stalled.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(100)).await;
                if !meta.claim_jobs(&[job], "worker-b", LEASE).await.unwrap().is_empty() {
                    taken = true;
                    // Given back at once: the point is only whether it could be taken.
                    meta.release_job(job, "worker-b").await.unwrap();
                }
            }
            taken
        })
    };
    // The tick runs in the test's own future, as the worker loop runs in `falcon worker`'s main future: the
    // FIFO blocks this thread, the renewal and worker B run on the runtime's workers.
    let t = Instant::now();
    let report = manager.tick().await;
    let stall = t.elapsed();
    stalled.store(false, Ordering::SeqCst);
    let taken_by_other = worker_b.await.unwrap();
    let report = report.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    drop(keeper);
    Outcome { stall, taken_by_other, meta, manager, job, _dir: dir }
}

async fn a_stalled_tick_keeps_its_job(db: &str) {
    let out = stall_a_tick(db, true).await;
    assert!(out.stall >= 2 * LEASE, "the tick was stalled for {:?}, not twice the lease", out.stall);
    assert!(!out.taken_by_other, "worker B claimed the job while A's tick was stalled for {:?}", out.stall);
    let job = out.meta.get_job(out.job).await.unwrap();
    assert_eq!((job.status, job.lease_owner.as_deref()), (JobStatus::Running, Some("worker-a")));

    // The renewal stopped with its guard: the lease lapses and another worker takes over.
    tokio::time::sleep(LEASE + Duration::from_millis(300)).await;
    assert_eq!(
        out.meta.claim_jobs(&[out.job], "worker-b", LEASE).await.unwrap(),
        [out.job],
        "a stopped worker's lease lapses"
    );
    out.meta.release_job(out.job, "worker-b").await.unwrap();
    finish(&out).await;
}

/// The premise of the test above: without renewal on its own timer, the same stall loses the job.
async fn without_renewal_the_same_stall_loses_the_job(db: &str) {
    let out = stall_a_tick(db, false).await;
    assert!(out.stall >= 2 * LEASE, "the tick was stalled for {:?}, not twice the lease", out.stall);
    assert!(out.taken_by_other, "the lease survived a {:?} stall without renewal", out.stall);
    finish(&out).await;
}

/// Runs the job to its end, so nothing is left behind.
async fn finish(out: &Outcome) {
    let started = Instant::now();
    loop {
        out.manager.tick().await.unwrap();
        let job = out.meta.get_job(out.job).await.unwrap();
        if job.status.is_terminal() {
            assert_eq!(job.status, JobStatus::Succeeded, "{:?}", job.status_reason);
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the job did not end: {:?}", job.status);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    out.meta.close().await;
}

fn mariadb_url(test: &str) -> String {
    let server = std::env::var("FALCON_TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".into());
    format!("{}/falcon_test_lease_{test}_{}", server.trim_end_matches('/'), std::process::id())
}

async fn drop_mariadb(url: &str) {
    use sqlx::migrate::MigrateDatabase;
    sqlx::MySql::drop_database(url).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_a_stalled_tick_keeps_its_job() {
    let dir = tempfile::tempdir().unwrap();
    a_stalled_tick_keeps_its_job(&format!("sqlite://{}", dir.path().join("m.db").display())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_without_renewal_the_same_stall_loses_the_job() {
    let dir = tempfile::tempdir().unwrap();
    without_renewal_the_same_stall_loses_the_job(&format!("sqlite://{}", dir.path().join("m.db").display())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mariadb_a_stalled_tick_keeps_its_job() {
    let url = mariadb_url("keeps");
    a_stalled_tick_keeps_its_job(&url).await;
    drop_mariadb(&url).await;
}
