//! The job manager with fake Kubernetes clusters (`fake-kube-apiserver`, a FAKE in-process API server; see
//! `kubernetes_backend.rs`): with two, capacity failover to another zone, and a restarted manager that adopts
//! what the previous one submitted; with one, the sampled series of a job on a cluster with and without a
//! metrics API.

use crate::kubernetes_common::{pods_with, pool_on, posts, spec};
use fake_kube_apiserver::FakeCluster;
use falcon_core::ids::JobId;
use falcon_core::status::JobStatus;
use falcon_infra::{ArtifactStore, MetaStore};
use falcon_job::backend::kubernetes::KubernetesBackend;
use falcon_job::backend::{object_name, Backend, Submission};
use falcon_job::{JobManager, ManagerConfig, Pool};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Env {
    meta: MetaStore,
    store: ArtifactStore,
    _dir: tempfile::TempDir,
}

async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let meta = MetaStore::create(&format!("sqlite://{}", dir.path().join("m.db").display())).await.unwrap();
    let store =
        ArtifactStore::open(&dir.path().join("arts").display().to_string(), &Default::default(), &Default::default())
            .unwrap();
    Env { meta, store, _dir: dir }
}

async fn manager(env: &Env, pools: &[Pool], owner: &str, lease: Duration) -> JobManager {
    let mut backends: Vec<Arc<dyn Backend>> = Vec::new();
    for pool in pools {
        backends.push(Arc::new(KubernetesBackend::from_pool(pool).await.unwrap()));
    }
    let mut config = ManagerConfig::new(owner);
    config.lease = lease;
    config.poll_interval = Duration::from_millis(50);
    config.capacity_timeout = Duration::from_secs(1);
    config.log_interval = Duration::from_millis(100);
    JobManager::new(env.meta.clone(), env.store.clone(), pools.to_vec(), backends, config)
}

/// Ticks until the job's record satisfies `done`.
async fn tick_until(
    manager: &JobManager,
    env: &Env,
    id: JobId,
    what: &str,
    done: impl Fn(&falcon_infra::meta::JobRecord) -> bool,
) {
    let started = Instant::now();
    loop {
        let report = manager.tick().await.unwrap();
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        let job = env.meta.get_job(id).await.unwrap();
        if done(&job) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{what}: job still {:?} ({:?})",
            job.status,
            job.status_reason
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stocked_out_zone_is_left_for_the_next_one() {
    let east = FakeCluster::start("east").await;
    let west = FakeCluster::start("west").await;
    east.set_schedulable(false);
    let pools = [pool_on(&east, "gke-east", "us-east5-b", "v6e-8"), pool_on(&west, "gke-west", "us-west4-a", "v6e-8")];
    let env = env().await;
    let manager = manager(&env, &pools, "worker-1", Duration::from_secs(30)).await;
    let mut s = spec("failover", "v6e-8", 1);
    s.resources.zones = vec!["us-east5-b".into(), "us-west4-a".into()];
    let job = manager.submit(&s).await.unwrap();

    tick_until(&manager, &env, job.id, "placed on east first", |j| j.pool.as_deref() == Some("gke-east")).await;
    assert_eq!(east.jobsets().len(), 1);
    tick_until(&manager, &env, job.id, "running on west", |j| {
        j.status == JobStatus::Running && j.pool.as_deref() == Some("gke-west")
    })
    .await;

    let history = manager.history(job.id).await.unwrap();
    let moved =
        history.iter().find(|t| t.to == JobStatus::Queued && t.reason.contains("moved off pool gke-east: no capacity"));
    assert!(moved.is_some_and(|t| t.reason.contains("Insufficient google.com/tpu")), "{history:#?}");
    assert!(history.iter().any(|t| t.to == JobStatus::Pending), "it waited as pending on east");
    assert!(east.jobsets().is_empty() && east.jobs().is_empty() && east.pods().is_empty(), "cancelled on east");
    assert!(east.request_log().contains(
        &"DELETE /apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets/failover-a1-gke-east".to_string()
    ));
    let record = env.meta.get_job(job.id).await.unwrap();
    assert_eq!(record.excluded_pools, ["gke-east"]);
    assert_eq!(record.backend_ref.as_deref(), Some("jobset/failover-a1-gke-west"));

    let west_name = "failover-a1-gke-west";
    let pods = pods_with(&west, "jobset.sigs.k8s.io/jobset-name", west_name);
    assert_eq!(pods.len(), 2, "v6e-8: 2 hosts");
    for pod in &pods {
        west.append_log(pod, "training done\n");
    }
    west.finish_pods(&format!("jobset.sigs.k8s.io/jobset-name={west_name}"), 0);
    tick_until(&manager, &env, job.id, "succeeded", |j| j.status.is_terminal()).await;
    let done = env.meta.get_job(job.id).await.unwrap();
    assert_eq!((done.status, done.exit_code), (JobStatus::Succeeded, Some(0)));
    for pod in &pods {
        let log = env.store.get(&format!("jobs/failover/logs/1/{pod}.log")).await.unwrap();
        let text = String::from_utf8_lossy(&log);
        assert!(
            text.contains("fake kubelet: started container workload") && text.ends_with("training done\n"),
            "{text}"
        );
    }
    assert_eq!(west.jobsets().len(), 1, "finished objects stay (ttl) for people to look at");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_job_s_reason_ends_with_its_last_log_line() {
    let fake = FakeCluster::start("why").await;
    let pools = [pool_on(&fake, "gke-solo", "us-east5-b", "v6e-4")];
    let env = env().await;
    let manager = manager(&env, &pools, "worker-why", Duration::from_secs(30)).await;
    let job = manager.submit(&spec("bad-flag", "v6e-4", 1)).await.unwrap();
    tick_until(&manager, &env, job.id, "running", |j| j.status == JobStatus::Running).await;
    let pod = pods_with(&fake, "job-name", "bad-flag-a1-gke-solo").remove(0);
    fake.append_log(&pod, "starting\n\u{1b}[31merror: bad flag\u{1b}[0m\n");
    fake.finish_pods("job-name=bad-flag-a1-gke-solo", 2);
    tick_until(&manager, &env, job.id, "failed", |j| j.status.is_terminal()).await;
    let failed = env.meta.get_job(job.id).await.unwrap();
    assert_eq!((failed.status, failed.exit_code), (JobStatus::Failed, Some(2)));
    assert_eq!(failed.status_reason, Some(format!("exited with status 2 (pod {pod}): error: bad flag")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_manager_adopts_the_running_job() {
    let fake = FakeCluster::start("restart").await;
    let pools = [pool_on(&fake, "gke-solo", "us-east5-b", "v6e-4")];
    let env = env().await;
    let lease = Duration::from_millis(1500);
    let first = manager(&env, &pools, "worker-a", lease).await;
    let job = first.submit(&spec("adopt", "v6e-4", 1)).await.unwrap();
    tick_until(&first, &env, job.id, "running", |j| j.status == JobStatus::Running).await;
    drop(first);

    // A new manager (new backend values, same metadata store) holds nothing until the old lease lapses.
    let second = manager(&env, &pools, "worker-b", lease).await;
    assert_eq!(second.tick().await.unwrap().held, 0, "the first manager's lease still holds");
    tokio::time::sleep(lease + Duration::from_millis(200)).await;
    let report = second.tick().await.unwrap();
    assert_eq!((report.held, report.errors.len()), (1, 0), "{report:?}");
    assert_eq!(env.meta.get_job(job.id).await.unwrap().lease_owner.as_deref(), Some("worker-b"));

    fake.finish_pods("job-name=adopt-a1-gke-solo", 0);
    tick_until(&second, &env, job.id, "succeeded", |j| j.status.is_terminal()).await;
    assert_eq!(env.meta.get_job(job.id).await.unwrap().status, JobStatus::Succeeded);
    assert_eq!(fake.jobs().len(), 1, "exactly one Job");
    assert_eq!(posts(&fake), 1, "no second POST");
    let pod = pods_with(&fake, "job-name", "adopt-a1-gke-solo").remove(0);
    assert!(env.store.get(&format!("jobs/adopt/logs/1/{pod}.log")).await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submission_whose_worker_died_before_recording_it_is_adopted() {
    let fake = FakeCluster::start("half").await;
    let pools = [pool_on(&fake, "gke-solo", "us-east5-b", "v6e-4")];
    let env = env().await;
    let manager = manager(&env, &pools, "worker-c", Duration::from_secs(30)).await;
    let s = spec("half", "v6e-4", 1);
    let job = manager.submit(&s).await.unwrap();
    // What a worker does before dying: record the placement, submit, and never record the submission.
    let name = object_name(&s.name, 1, &pools[0].name);
    env.meta.set_job_placement(job.id, &pools[0].name, &name).await.unwrap();
    let resolved = s.resolve().unwrap();
    let backend = KubernetesBackend::from_pool(&pools[0]).await.unwrap();
    let sub =
        Submission { job: job.id, name: name.clone(), spec: &s, resolved: &resolved, attempt: 1, pool: &pools[0] };
    backend.submit(&sub).await.unwrap();

    tick_until(&manager, &env, job.id, "adopted", |j| j.status != JobStatus::Queued).await;
    let history = manager.history(job.id).await.unwrap();
    assert!(history.iter().any(|t| t.reason.contains("adopted from pool gke-solo")), "{history:#?}");
    assert_eq!(env.meta.get_job(job.id).await.unwrap().backend_ref, Some(format!("job/{name}")));
    tick_until(&manager, &env, job.id, "running", |j| j.status == JobStatus::Running).await;
    fake.finish_pods(&format!("job-name={name}"), 0);
    tick_until(&manager, &env, job.id, "succeeded", |j| j.status.is_terminal()).await;
    assert_eq!(env.meta.get_job(job.id).await.unwrap().status, JobStatus::Succeeded);
    assert_eq!((fake.jobs().len(), posts(&fake)), (1, 1), "one object, one POST");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manager_keeps_a_series_where_metrics_are_served_and_says_why_not_elsewhere() {
    for served in [true, false] {
        let fake = FakeCluster::start("sampled").await;
        fake.serve_metrics(served);
        let pools = [pool_on(&fake, "gke-solo", "us-east5-b", "v6e-4")];
        let env = env().await;
        let backend: Arc<dyn Backend> =
            Arc::new(KubernetesBackend::from_pool(&pools[0]).await.unwrap().with_metrics_refresh(Duration::ZERO));
        let mut config = ManagerConfig::new("worker-sampler");
        config.poll_interval = Duration::from_millis(50);
        config.log_interval = Duration::from_millis(100);
        config.sample_interval = Some(Duration::from_millis(50));
        let manager = JobManager::new(env.meta.clone(), env.store.clone(), pools.to_vec(), vec![backend], config);
        let _background = manager.start_background();
        let job = manager.submit(&spec("sampled", "v6e-4", 1)).await.unwrap();
        tick_until(&manager, &env, job.id, "running", |j| j.status == JobStatus::Running).await;
        fake.set_pod_usage("job-name=sampled-a1-gke-solo", "2", "1Gi");
        tokio::time::sleep(Duration::from_millis(600)).await;
        fake.finish_pods("job-name=sampled-a1-gke-solo", 0);
        tick_until(&manager, &env, job.id, "succeeded", |j| j.status.is_terminal()).await;
        let outputs = env.meta.job_outputs(job.id).await.unwrap();
        let row = outputs.iter().find(|o| o.path == "resources/1/usage.jsonl").expect("a series row");
        if served {
            let text = env.store.get("jobs/sampled/resources/1/usage.jsonl").await.unwrap();
            let series = falcon_core::resources::read(&String::from_utf8_lossy(&text));
            let s = &series.samples;
            assert!(s.len() >= 4 && s.iter().all(|x| x.rss_bytes == 1 << 30), "{s:?}");
            // 2 cores integrated over the span between the first and the last sample.
            let span = s.last().unwrap().time - s[0].time;
            assert!((s.last().unwrap().cpu_s - 2.0 * span).abs() < 0.01, "{s:?}");
        // 3 decimals a line
        } else {
            assert!(row.stored.is_none(), "{row:?}");
            let why = row.skip_reason.as_deref().unwrap();
            assert!(why.starts_with("resource use not sampled: the cluster serves no metrics API"), "{why}");
        }
    }
}
