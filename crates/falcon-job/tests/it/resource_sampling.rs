//! Resource sampling on the local backend, end to end: real processes, SQLite, a local artifact store. A job
//! that keeps memory shows it growing in its `resources/<attempt>/usage.jsonl`; the series is stored as a live
//! output; samples an earlier worker stored are kept; sampling can be turned off.

use crate::common;

use falcon_core::ids::JobId;
use falcon_core::resources::{read, ResourceSample};
use falcon_core::status::JobStatus;
use falcon_infra::PutMode;
use falcon_job::backend::local::LocalBackend;
use falcon_job::backend::{Backend, Sample};
use falcon_job::{JobSpec, ManagerConfig};
use std::time::{Duration, Instant};

type Env = common::LocalEnv;

async fn env(sample_interval: Option<Duration>) -> Env {
    let mut config = ManagerConfig::new("sampler-test");
    config.log_interval = Duration::from_millis(200);
    config.sample_interval = sample_interval;
    common::local_env(config).await
}

/// A job whose Python child keeps `mib` MiB more every 0.1 s, `steps` times, then exits.
fn keeper(name: &str, mib: u32, steps: u32) -> JobSpec {
    let script = format!(
        "python3 -c 'import time\nkeep = []\nfor _ in range({steps}):\n    keep.append(b\"x\" * ({mib} << 20))\n    \
         time.sleep(0.1)\ntime.sleep(0.3)'"
    );
    common::shell_job(name, &script)
}

async fn run(env: &Env, id: JobId) {
    let _background = env.manager.start_background();
    let started = Instant::now();
    while !env.meta.get_job(id).await.unwrap().status.is_terminal() {
        let report = env.manager.tick().await.unwrap();
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        assert!(started.elapsed() < Duration::from_secs(60), "the job did not finish");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_growing_job_has_a_growing_memory_curve_stored_as_a_live_output() {
    let env = env(Some(Duration::from_millis(50))).await;
    let job = env.manager.submit(&keeper("grows", 16, 20)).await.unwrap();
    run(&env, job.id).await;
    assert_eq!(env.meta.get_job(job.id).await.unwrap().status, JobStatus::Succeeded);

    let outputs = env.meta.job_outputs(job.id).await.unwrap();
    let row = outputs.iter().find(|o| o.path == "resources/1/usage.jsonl").expect("the series is an output");
    assert!(row.live && row.skip_reason.is_none(), "{row:?}");
    let stored = row.stored.as_ref().unwrap();
    assert_eq!(stored.key, "jobs/grows/resources/1/usage.jsonl");
    let series = read(std::str::from_utf8(&env.store.get(&stored.key).await.unwrap()).unwrap());
    assert!(series.notes.is_empty(), "{:?}", series.notes);
    let s = &series.samples;
    assert!(s.len() >= 10, "{} samples", s.len());
    let (lo, hi) = (s.iter().map(|x| x.rss_bytes).min().unwrap(), s.iter().map(|x| x.rss_bytes).max().unwrap());
    // 20 × 16 MiB kept by the child: the tree's RSS grows by most of 320 MiB.
    assert!(hi - lo > 200 << 20, "RSS grew by {} MiB only", (hi - lo) >> 20);
    assert!(s.windows(2).all(|w| w[0].time < w[1].time && w[0].cpu_s <= w[1].cpu_s + 1e-9), "{s:?}");
    assert!(s.last().unwrap().cpu_s > 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn samples_an_earlier_worker_stored_are_kept_and_sampling_can_be_off() {
    let env = env(Some(Duration::from_millis(50))).await;
    // What a worker that died mid-job left: two samples, from before this worker's first.
    let earlier = [
        ResourceSample { time: 1_000.0, rss_bytes: 1 << 20, cpu_s: 0.5 },
        ResourceSample { time: 1_001.0, rss_bytes: 2 << 20, cpu_s: 0.75 },
    ];
    let text: String = earlier.iter().map(ResourceSample::to_line).collect();
    env.store.put_bytes("jobs/merged/resources/1/usage.jsonl", text.into_bytes(), PutMode::Overwrite).await.unwrap();
    let job = env.manager.submit(&keeper("merged", 1, 5)).await.unwrap();
    run(&env, job.id).await;
    let stored = env.store.get("jobs/merged/resources/1/usage.jsonl").await.unwrap();
    let series = read(std::str::from_utf8(&stored).unwrap());
    assert_eq!(series.samples[..2], earlier);
    assert!(series.samples.len() > 4, "this worker's samples follow: {:?}", series.samples);

    let off = env_off().await;
    let job = off.manager.submit(&keeper("unsampled", 1, 3)).await.unwrap();
    run(&off, job.id).await;
    let outputs = off.meta.job_outputs(job.id).await.unwrap();
    assert!(outputs.iter().all(|o| !o.path.starts_with("resources/")), "{outputs:?}");
}

async fn env_off() -> Env {
    env(None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_backend_samples_only_a_running_tree() {
    let dir = tempfile::tempdir().unwrap();
    let backend = LocalBackend::new(dir.path(), "local");
    let unknown = falcon_job::backend::BackendRef("never-started".into());
    assert_eq!(backend.sample(&unknown).await.unwrap(), Sample::NoReading);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_worker_writes_the_samples_of_its_running_jobs() {
    let mut config = ManagerConfig::new("stopping-worker");
    config.log_interval = Duration::from_secs(3600); // no copy while it runs: only the flush writes
    config.sample_interval = Some(Duration::from_millis(50));
    let env = common::local_env(config).await;
    let job = env.manager.submit(&keeper("long", 1, 30)).await.unwrap();
    let background = env.manager.start_background();
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(1500) {
        env.manager.tick().await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!env.meta.get_job(job.id).await.unwrap().status.is_terminal(), "still running");
    env.manager.flush_samples().await.unwrap();
    drop(background);
    let stored = env.store.get("jobs/long/resources/1/usage.jsonl").await.unwrap();
    let series = read(std::str::from_utf8(&stored).unwrap());
    assert!(series.samples.len() >= 10, "{} samples written at the stop", series.samples.len());
}
