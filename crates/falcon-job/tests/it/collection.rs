//! Collection finishes before a job is terminal: a job whose outputs cannot be stored stays RUNNING
//! ("collecting outputs") and is tried again, then ends FAILED with the reason — never SUCCEEDED with data
//! missing. The store failure is real: the local artifact store's `jobs` folder is a regular file, so every
//! write under it fails (as root too).

use falcon_core::config::PoolConfig;
use falcon_core::ids::JobId;
use falcon_core::status::JobStatus;
use falcon_infra::meta::JobRecord;
use falcon_infra::{ArtifactStore, MetaStore};
use falcon_job::backend::local::LocalBackend;
use falcon_job::backend::Backend;
use falcon_job::{JobManager, ManagerConfig, Pool, COLLECT_TRIES};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::shell_job as shell;

/// Ticks `manager` until the job is terminal (failing the test after `limit`), and returns it.
async fn tick_to_the_end(manager: &JobManager, meta: &MetaStore, id: JobId, limit: Duration) -> JobRecord {
    let started = Instant::now();
    loop {
        manager.tick().await.unwrap();
        let job = meta.get_job(id).await.unwrap();
        if job.status.is_terminal() {
            return job;
        }
        assert!(started.elapsed() < limit, "not ended after {limit:?}: {job:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A metadata store in `dir`, and a local artifact store there that fails every write under `jobs/` (its `jobs`
/// folder is a regular file: the returned path, to remove when the store should come back).
async fn failing_stores(dir: &std::path::Path) -> (MetaStore, ArtifactStore, std::path::PathBuf) {
    let meta = MetaStore::create(&format!("sqlite://{}", dir.join("m.db").display())).await.unwrap();
    let arts = dir.join("arts");
    std::fs::create_dir_all(&arts).unwrap();
    let blocker = arts.join("jobs");
    std::fs::write(&blocker, "not a folder").unwrap();
    let store = ArtifactStore::open(&arts.display().to_string(), &Default::default(), &Default::default()).unwrap();
    (meta, store, blocker)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_whose_outputs_cannot_be_stored_keeps_collecting_then_fails_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (meta, store, blocker) = failing_stores(dir.path()).await;
    let backend: Arc<dyn Backend> = Arc::new(LocalBackend::new(dir.path().join("jobs"), "local"));
    let mut config = ManagerConfig::new("worker-test");
    config.log_interval = Duration::from_millis(50);
    config.collect_patience = Duration::ZERO; // give up after COLLECT_TRIES ticks
    let pool = Pool::from_config(&PoolConfig::local_cpu(4)).unwrap();
    let manager = JobManager::new(meta.clone(), store.clone(), vec![pool], vec![backend], config);

    let script = "echo done; echo '{\"step\": 1, \"loss\": 1}' > $FALCON_ARTIFACT_DIR/metrics.jsonl";
    let recovers = manager.submit(&shell("recovers", script)).await.unwrap();
    let started = Instant::now();
    // Until the process has exited and a final collection failed, the job is not terminal.
    loop {
        manager.tick().await.unwrap();
        let job = meta.get_job(recovers.id).await.unwrap();
        assert!(!job.status.is_terminal(), "terminal with its outputs uncollected: {job:?}");
        if job.status_reason.as_deref().is_some_and(|r| r.starts_with("collecting outputs: try 1 failed")) {
            assert_eq!(job.status, JobStatus::Running);
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "no failed collection seen: {job:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The store comes back: the next try collects everything and the job succeeds.
    std::fs::remove_file(&blocker).unwrap();
    manager.tick().await.unwrap();
    let job = meta.get_job(recovers.id).await.unwrap();
    assert_eq!(job.status, JobStatus::Succeeded, "{job:?}");
    assert_eq!(store.get("jobs/recovers/logs/1/stdout.log").await.unwrap().as_ref(), b"done\n");
    let outputs = meta.job_outputs(recovers.id).await.unwrap();
    let paths: Vec<&str> = outputs.iter().map(|o| o.path.as_str()).collect();
    assert!(paths.contains(&"metrics.jsonl") && paths.contains(&"logs/1/stdout.log"), "{paths:?}");
    assert!(outputs.iter().all(|o| o.stored.is_some() && o.skip_reason.is_none()), "{outputs:?}");

    // A store that never comes back: bounded tries, then FAILED naming why.
    std::fs::write(blocker.join("lost"), "not a folder").unwrap();
    let lost = manager.submit(&shell("lost", script)).await.unwrap();
    let job = tick_to_the_end(&manager, &meta, lost.id, Duration::from_secs(60)).await;
    assert_eq!(job.status, JobStatus::Failed, "{job:?}");
    let reason = job.status_reason.unwrap();
    assert!(reason.contains(&format!("could not be collected after {COLLECT_TRIES} tries")), "{reason}");
}

/// Every worker here lives for one tick and is then dropped, as if killed: the next one takes the job over when
/// the lease lapses. The failed tries are counted in the store, so the job still ends FAILED after the tries and
/// the patience; counted in each worker's memory, every worker would start again at try 1 and it never would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_killed_while_the_store_fails_continue_the_count_and_the_job_still_fails() {
    let dir = tempfile::tempdir().unwrap();
    let (meta, store, _blocker) = failing_stores(dir.path()).await;
    let worker = |n: usize| {
        let backend: Arc<dyn Backend> = Arc::new(LocalBackend::new(dir.path().join("jobs"), "local"));
        let mut config = ManagerConfig::new(format!("worker-{n}"));
        config.lease = Duration::from_millis(100);
        config.log_interval = Duration::from_millis(50);
        config.collect_patience = Duration::from_millis(600);
        let pool = Pool::from_config(&PoolConfig::local_cpu(4)).unwrap();
        JobManager::new(meta.clone(), store.clone(), vec![pool], vec![backend], config)
    };
    let script = "echo '{\"step\": 1, \"loss\": 1}' > $FALCON_ARTIFACT_DIR/metrics.jsonl";
    let job = worker(0).submit(&shell("killed", script)).await.unwrap();
    let started = Instant::now();
    let mut tries_seen = Vec::new();
    let mut workers = 0;
    let job = loop {
        workers += 1;
        worker(workers).tick().await.unwrap(); // ... and the worker is gone
        let job = meta.get_job(job.id).await.unwrap();
        if job.status.is_terminal() {
            break job;
        }
        if job.collect_failures > 0 && tries_seen.last() != Some(&job.collect_failures) {
            tries_seen.push(job.collect_failures);
            let reason = job.status_reason.as_deref().unwrap_or_default();
            assert!(
                reason.starts_with(&format!("collecting outputs: try {} failed", job.collect_failures)),
                "{reason}"
            );
        }
        assert!(started.elapsed() < Duration::from_secs(60), "never gave up after {workers} workers: {job:?}");
        tokio::time::sleep(Duration::from_millis(150)).await; // the lease lapses
    };
    assert_eq!(job.status, JobStatus::Failed, "{job:?}");
    let reason = job.status_reason.as_deref().unwrap_or_default();
    assert!(reason.contains("its outputs could not be collected after"), "{reason}");
    assert!(job.collect_failures >= i64::from(COLLECT_TRIES), "{job:?}");
    assert!(
        tries_seen.len() >= 3 && tries_seen.windows(2).all(|w| w[0] < w[1]),
        "one count across workers: {tries_seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_files_are_replaced_and_every_other_file_is_written_once() {
    let dir = tempfile::tempdir().unwrap();
    let meta = MetaStore::create(&format!("sqlite://{}", dir.path().join("m.db").display())).await.unwrap();
    let store =
        ArtifactStore::open(&dir.path().join("arts").display().to_string(), &Default::default(), &Default::default())
            .unwrap();
    let backend: Arc<dyn Backend> = Arc::new(LocalBackend::new(dir.path().join("jobs"), "local"));
    let mut config = ManagerConfig::new("worker-test");
    config.log_interval = Duration::from_millis(50);
    let pool = Pool::from_config(&PoolConfig::local_cpu(4)).unwrap();
    let manager = JobManager::new(meta.clone(), store.clone(), vec![pool], vec![backend], config);
    // Both files settle (2 s unchanged) and are copied while the job runs; then both change.
    let script = "cd $FALCON_ARTIFACT_DIR; echo v1 > ckpt.bin; echo '{\"step\": 1, \"loss\": 1}' > metrics.jsonl; \
                  sleep 3; echo v2-longer > ckpt.bin; echo '{\"step\": 2, \"loss\": 2}' >> metrics.jsonl; sleep 3";
    let job = manager.submit(&shell("twice", script)).await.unwrap();
    let job = tick_to_the_end(&manager, &meta, job.id, Duration::from_secs(30)).await;
    assert_eq!(job.status, JobStatus::Succeeded);
    let metrics = store.get("jobs/twice/metrics.jsonl").await.unwrap();
    assert_eq!(metrics.as_ref(), b"{\"step\": 1, \"loss\": 1}\n{\"step\": 2, \"loss\": 2}\n", "the live file is whole");
    assert_eq!(store.get("jobs/twice/ckpt.bin").await.unwrap().as_ref(), b"v1\n", "the first version is kept");
    let outputs = meta.job_outputs(job.id).await.unwrap();
    let ckpt = outputs.iter().find(|o| o.path == "ckpt.bin").unwrap();
    assert_eq!(ckpt.stored.as_ref().map(|s| s.size), Some(3));
    let reason = ckpt.skip_reason.as_deref().unwrap_or_default();
    assert!(reason.contains("changed after it was stored"), "the refusal is recorded: {ckpt:?}");
    let m = outputs.iter().find(|o| o.path == "metrics.jsonl").unwrap();
    assert!(m.live && m.skip_reason.is_none() && m.stored.as_ref().map(|s| s.size) == Some(metrics.len() as u64));
}

/// Found by the fault campaign (bench/faults, worker killed ×100 on MariaDB): a worker killed between storing a
/// write-once file and recording it left an object no row knew of; every later worker's put was refused ("already
/// exists") and the job stayed in "collecting outputs" forever. Now the stored object is adopted: recorded with
/// its own size and SHA-256, the job succeeds; a file that differs from it keeps the stored version and the
/// refusal is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_stored_by_a_killed_worker_but_never_recorded_is_adopted() {
    let dir = tempfile::tempdir().unwrap();
    let meta = MetaStore::create(&format!("sqlite://{}", dir.path().join("m.db").display())).await.unwrap();
    let arts = dir.path().join("arts");
    let store = ArtifactStore::open(&arts.display().to_string(), &Default::default(), &Default::default()).unwrap();
    let backend: Arc<dyn Backend> = Arc::new(LocalBackend::new(dir.path().join("jobs"), "local"));
    let mut config = ManagerConfig::new("worker-test");
    config.collect_patience = Duration::ZERO;
    let pool = Pool::from_config(&PoolConfig::local_cpu(4)).unwrap();
    let manager = JobManager::new(meta.clone(), store.clone(), vec![pool], vec![backend], config);

    // What the killed worker stored: the same bytes for same.bin, other bytes for changed.bin.
    store.put_bytes("jobs/adopt/out/same.bin", b"same bytes\n".to_vec(), Default::default()).await.unwrap();
    store.put_bytes("jobs/adopt/out/changed.bin", b"first version\n".to_vec(), Default::default()).await.unwrap();
    let script = "mkdir -p $FALCON_ARTIFACT_DIR/out; echo 'same bytes' > $FALCON_ARTIFACT_DIR/out/same.bin; \
                  echo 'second version, longer' > $FALCON_ARTIFACT_DIR/out/changed.bin";
    let job = manager.submit(&shell("adopt", script)).await.unwrap();
    let job = tick_to_the_end(&manager, &meta, job.id, Duration::from_secs(20)).await;
    assert_eq!(job.status, JobStatus::Succeeded, "{job:?}");
    let outputs = meta.job_outputs(job.id).await.unwrap();
    let find = |path: &str| outputs.iter().find(|o| o.path == path).unwrap_or_else(|| panic!("{path}: {outputs:?}"));
    let same = find("out/same.bin");
    let stored = same.stored.as_ref().unwrap();
    assert_eq!(
        (stored.size, stored.sha256.as_str()),
        (11, falcon_core::artifact::sha256_hex(b"same bytes\n").as_str())
    );
    assert_eq!(same.skip_reason, None);
    let changed = find("out/changed.bin");
    let stored = changed.stored.as_ref().unwrap();
    assert_eq!(stored.sha256, falcon_core::artifact::sha256_hex(b"first version\n"), "the first version is kept");
    let reason = changed.skip_reason.as_deref().unwrap();
    assert!(reason.contains("differs from the version an earlier worker stored (14 bytes stored, now 23)"), "{reason}");
    assert_eq!(store.get("jobs/adopt/out/changed.bin").await.unwrap().as_ref(), b"first version\n");
}
