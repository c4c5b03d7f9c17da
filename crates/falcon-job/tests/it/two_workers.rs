//! Two real worker processes share 200 jobs; one is killed with SIGKILL mid-run. Every job must run exactly
//! once and end SUCCEEDED — on SQLite and on MariaDB.

use crate::common;

use falcon_core::status::JobStatus;
use falcon_infra::{ArtifactStore, MetaStore};
use falcon_job::backend::local::LocalBackend;
use falcon_job::backend::Backend;
use falcon_job::{JobManager, JobSpec, ManagerConfig, Pool};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

const JOBS: usize = 200;

/// A worker process, killed when dropped (so a failing test leaves nothing running).
struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn worker(db: &str, dir: &std::path::Path, owner: &str) -> Worker {
    let child = Command::new(env!("CARGO_BIN_EXE_falcon-job-worker"))
        .args([
            "--db",
            db,
            "--owner",
            owner,
            "--capacity",
            "8",
            "--lease-ms",
            "2000",
            "--poll-ms",
            "50",
            "--log-ms",
            "200",
        ])
        .args([
            "--artifacts",
            &dir.join("arts").display().to_string(),
            "--jobs-dir",
            &dir.join("jobs").display().to_string(),
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(dir.join(format!("{owner}.log"))).unwrap())
        .spawn()
        .expect("start falcon-job-worker");
    Worker(child)
}

async fn every_job_runs_exactly_once(db: &str) {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs.txt");
    let meta = MetaStore::create(db).await.unwrap();
    let store =
        ArtifactStore::open(&dir.path().join("arts").display().to_string(), &Default::default(), &Default::default())
            .unwrap();
    // A manager used only to submit: its pool and backend are never ticked.
    let pool = Pool::from_config(&falcon_core::config::PoolConfig::local_cpu(8)).unwrap();
    let backend: Arc<dyn Backend> = Arc::new(LocalBackend::new(dir.path().join("jobs"), "local"));
    let submitter = JobManager::new(meta.clone(), store, vec![pool], vec![backend], ManagerConfig::new("submitter"));
    for i in 0..JOBS {
        let script = format!("echo $FALCON_JOB_ID >> {}; sleep 0.1", runs.display());
        let spec = JobSpec { priority: (i % 3) as i64, ..common::shell_job(&format!("job-{i}"), &script) };
        submitter.submit(&spec).await.unwrap();
    }

    let mut workers =
        vec![("worker-a", worker(db, dir.path(), "worker-a")), ("worker-b", worker(db, dir.path(), "worker-b"))];
    let started = Instant::now();
    // Kill (SIGKILL) whichever worker holds unfinished work once some jobs are done.
    let (victim, orphaned) = loop {
        let done = meta.list_jobs(&[JobStatus::Succeeded]).await.unwrap().len();
        let unfinished = meta
            .list_jobs(&[JobStatus::Queued, JobStatus::Submitted, JobStatus::Pending, JobStatus::Running])
            .await
            .unwrap();
        let holder = |name: &str| -> Vec<_> {
            unfinished.iter().filter(|j| j.lease_owner.as_deref() == Some(name)).map(|j| j.id).collect()
        };
        if done >= 30 {
            let held: Vec<_> = ["worker-a", "worker-b"].iter().map(|w| (*w, holder(w))).collect();
            if let Some((name, ids)) =
                held.into_iter().filter(|(_, ids)| !ids.is_empty()).max_by_key(|(_, ids)| ids.len())
            {
                let i = workers.iter().position(|(w, _)| *w == name).unwrap();
                let (_, mut killed) = workers.remove(i);
                killed.0.kill().expect("SIGKILL the worker");
                killed.0.wait().unwrap();
                break (name, ids);
            }
        }
        if started.elapsed() > Duration::from_secs(60) {
            let logs: Vec<String> = ["worker-a", "worker-b"]
                .iter()
                .map(|w| std::fs::read_to_string(dir.path().join(format!("{w}.log"))).unwrap_or_default())
                .collect();
            panic!(
                "no worker held unfinished work after 30 jobs ({done} done); worker logs:\n{}",
                logs.join("\n---\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let killed_at = meta.list_jobs(&[JobStatus::Succeeded]).await.unwrap().len();

    loop {
        let all = meta.list_jobs(&[]).await.unwrap();
        if all.iter().all(|j| j.status.is_terminal()) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(240), "not all jobs finished");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(workers);

    let all = meta.list_jobs(&[]).await.unwrap();
    let failed: Vec<_> = all
        .iter()
        .filter(|j| j.status != JobStatus::Succeeded)
        .map(|j| (j.id, j.status, j.status_reason.clone()))
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
    let text = std::fs::read_to_string(&runs).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), JOBS, "each job ran once: {} runs recorded", lines.len());
    lines.sort();
    lines.dedup();
    assert_eq!(lines.len(), JOBS, "no job ran twice");
    for id in &orphaned {
        let job = all.iter().find(|j| j.id == *id).unwrap();
        assert_eq!(job.status, JobStatus::Succeeded, "the killed worker's job {id} was finished by the other");
    }
    eprintln!("{victim} killed after {killed_at} jobs; the other worker took over the {} jobs it held", orphaned.len());
    assert!(killed_at < JOBS, "the worker was killed while work remained ({killed_at} done)");
    meta.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_two_workers_one_killed() {
    let dir = tempfile::tempdir().unwrap();
    every_job_runs_exactly_once(&format!("sqlite://{}", dir.path().join("jobs.db").display())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_two_workers_one_killed() {
    let server = std::env::var("FALCON_TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".into());
    let url = format!("{}/falcon_test_workers_{}", server.trim_end_matches('/'), std::process::id());
    every_job_runs_exactly_once(&url).await;
    use sqlx::migrate::MigrateDatabase;
    sqlx::MySql::drop_database(&url).await.unwrap();
}
