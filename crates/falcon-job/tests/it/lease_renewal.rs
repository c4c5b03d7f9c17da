//! Leases are renewed on their own timer, not by ticks: a tick stalled for twice the lease keeps its job, and
//! once the renewal stops (the worker stops) the lease lapses and another worker takes over — on SQLite and
//! on MariaDB.
//!
//! The stall is real: the artifact store is an S3 endpoint that, while the test says so, answers each upload only
//! after `STALL` — the time a multi-GB upload takes — so the manager's log copy (inside the tick) waits that long.
//! (A FIFO in the log's place stalled ticks before issue 44; the collector no longer opens one.) The other worker
//! is played by claiming through the store exactly as a tick's first step does.

use crate::common;

use falcon_core::config::PoolConfig;
use falcon_core::ids::JobId;
use falcon_core::status::JobStatus;
use falcon_infra::meta::ConnectOptions;
use falcon_infra::{ArtifactStore, MetaStore};
use falcon_job::backend::local::LocalBackend;
use falcon_job::backend::Backend;
use falcon_job::{JobManager, JobSpec, ManagerConfig, Pool};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LEASE: Duration = Duration::from_secs(1);
/// How long the slow store keeps each upload waiting while stalled: well over twice the lease with the two logs.
const STALL: Duration = Duration::from_millis(1600);

fn logging_job() -> JobSpec {
    common::shell_job("stalled", "echo running; echo warning >&2; sleep 3")
}

/// An S3 endpoint on loopback that takes every upload and, while `stalled` is set, answers it only after `STALL`
/// (reads answer "no such key"). Its address, as the store's endpoint.
fn slow_store(stalled: Arc<AtomicBool>) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let stalled = stalled.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let (mut first, mut length) = (String::new(), 0usize);
                if reader.read_line(&mut first).unwrap_or(0) == 0 {
                    return;
                }
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some((k, v)) = line.split_once(':') {
                        if k.eq_ignore_ascii_case("content-length") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                }
                let mut body = vec![0u8; length];
                let _ = reader.read_exact(&mut body);
                let answer = if first.starts_with("PUT ") {
                    if stalled.load(Ordering::SeqCst) {
                        std::thread::sleep(STALL);
                    }
                    "HTTP/1.1 200 OK\r\nETag: \"e\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string()
                } else {
                    let body = "<Error><Code>NoSuchKey</Code></Error>";
                    format!(
                        "HTTP/1.1 404 Not Found\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\
                         Connection: close\r\n\r\n{body}",
                        body.len()
                    )
                };
                let mut conn = conn;
                let _ = conn.write_all(answer.as_bytes());
            });
        }
    });
    format!("http://{addr}")
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
    let slow = Arc::new(AtomicBool::new(false));
    let s3 = falcon_core::config::S3Config {
        endpoint: Some(slow_store(slow.clone())),
        region: None,
        anonymous: true,
        access_key_id: None,
        secret_access_key: None,
    };
    let store = ArtifactStore::open("s3://slow/falcon", &Default::default(), &s3).unwrap();
    let pool = Pool::from_config(&PoolConfig::local_cpu(2)).unwrap();
    let backend: Arc<dyn Backend> = Arc::new(LocalBackend::new(dir.path().join("jobs"), "local"));
    let mut config = ManagerConfig::new("worker-a");
    config.lease = LEASE;
    config.log_interval = Duration::ZERO;
    let manager = Arc::new(JobManager::new(meta.clone(), store, vec![pool], vec![backend], config));
    let job = manager.submit(&logging_job()).await.unwrap().id;
    let report = manager.tick().await.unwrap();
    assert_eq!(report.submitted, [job], "{:?}", report.errors);

    // Wait until the job has written its logs, so the next tick has uploads to make.
    let log = dir.path().join("jobs").join("stalled-a1-local").join("stdout.log");
    let started = Instant::now();
    while std::fs::metadata(&log).map_or(0, |m| m.len()) == 0 {
        assert!(started.elapsed() < Duration::from_secs(10), "the job never logged");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    slow.store(true, Ordering::SeqCst);

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
    // The tick runs in the test's own future, as the worker loop runs in `falcon worker`'s main future; the
    // renewal and worker B run on the runtime's workers.
    let t = Instant::now();
    let report = manager.tick().await;
    let stall = t.elapsed();
    slow.store(false, Ordering::SeqCst);
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
