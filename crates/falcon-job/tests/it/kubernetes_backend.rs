//! The Kubernetes backend against `fake-kube-apiserver`, a FAKE in-process API server (not Kubernetes: toy
//! Job/JobSet controllers, scheduler and kubelet behind a real HTTP API on 127.0.0.1; no container runs).
//!
//! 1. Golden manifests for a representative of every accelerator family (`tests/data/manifests/<case>.json`;
//!    `FALCON_UPDATE_GOLDEN=1` rewrites those that differ, and the test still fails on them). The goldens are
//!    the program's own output, so `scripts/validate-k8s-manifests.sh` (run by `.ci/run`) checks every Job and
//!    JobSet job template in them against Kubernetes' published schemas with `kubernetes-validate --strict`.
//! 2. The backend alone against a fake cluster: run, fail, preempt, cancel, adopt, multi-host logs, API errors,
//!    resource samples from the (fake) metrics API.
//! 3. The job manager with fake clusters: in `kubernetes_manager.rs`.
//!
//! The helpers both files share are in `kubernetes_common/`.

use crate::kubernetes_common::{pods_with, pool_config, pool_on, posts, spec, IMAGE};
use fake_kube_apiserver::FakeCluster;
use falcon_core::ids::JobId;
use falcon_job::backend::kubernetes::{manifest, KubernetesBackend};
use falcon_job::backend::{object_name, Backend, BackendRef, BackendState, CpuUse, Sample, Submission};
use falcon_job::{CapacityType, JobError, JobSpec, Pool};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

async fn wait_for(
    backend: &KubernetesBackend,
    handle: &BackendRef,
    what: &str,
    done: impl Fn(&BackendState) -> bool,
) -> BackendState {
    let started = Instant::now();
    loop {
        let state = backend.status(handle).await.unwrap();
        if done(&state) {
            return state;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "{what}: still {state:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

// ------------------------------------------------------------------------------------------------ 1. golden

/// One golden case: a name and how its spec differs from the default one.
fn golden_cases() -> Vec<(String, JobSpec)> {
    // Every accelerator type of the catalog (cpu gets a core count below), then capacity and slice variants.
    let mut cases: Vec<(String, JobSpec)> = falcon_core::catalog::all()
        .into_iter()
        .filter(|a| a.name != "cpu")
        .map(|a| (a.name.clone(), spec("train", &a.name, 1)))
        .collect();
    let mut cpu = spec("train", "cpu", 1);
    cpu.resources.devices = Some(4);
    cases.push(("cpu".into(), cpu));
    let mut spot = spec("train", "v6e-8", 1);
    spot.resources.capacity = CapacityType::Spot;
    cases.push(("v6e-8-spot".into(), spot));
    cases.push(("v5litepod-16-2slices".into(), spec("train", "v5litepod-16", 2)));
    cases.push(("h100-80gb-8-2nodes".into(), spec("train", "h100-80gb-8", 2)));
    let mut reservation = spec("train", "v5p-16", 1);
    reservation.resources.capacity = CapacityType::Reservation;
    reservation.resources.reservation = Some("falcon-v5p-res".into());
    cases.push(("v5p-16-reservation".into(), reservation));
    let mut flex = spec("train", "v6e-4", 1);
    flex.resources.capacity = CapacityType::Flex;
    cases.push(("v6e-4-flex".into(), flex));
    cases
}

fn render(spec: &JobSpec) -> Value {
    let resolved = spec.resolve().unwrap();
    let accel = resolved.accelerator.name.clone();
    let pool = Pool::from_config(&pool_config("gke-east", "us-east5-b", &accel, json!({}))).unwrap();
    let sub = Submission {
        job: JobId(42),
        name: object_name(&spec.name, 1, &pool.name),
        spec,
        resolved: &resolved,
        attempt: 1,
        pool: &pool,
    };
    manifest(&sub, "falcon")
}

#[test]
fn manifests_match_the_golden_files() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/manifests");
    let update = std::env::var("FALCON_UPDATE_GOLDEN").is_ok_and(|v| v == "1");
    let mut wrong = Vec::new();
    for (case, spec) in golden_cases() {
        let rendered = render(&spec);
        let text = serde_json::to_string_pretty(&rendered).unwrap() + "\n";
        assert_eq!(text, serde_json::to_string_pretty(&render(&spec)).unwrap() + "\n", "{case}: deterministic");
        let path = dir.join(format!("{case}.json"));
        let golden = std::fs::read_to_string(&path).ok().and_then(|t| serde_json::from_str::<Value>(&t).ok());
        if golden.as_ref() != Some(&rendered) {
            let shown = golden.map_or_else(|| "(missing or not JSON)".to_string(), |g| format!("{g:#}"));
            wrong.push(format!("{case}:\n--- golden\n{shown}\n--- rendered\n{text}"));
            // The update mode rewrites the file, and the test still fails on the change, so a run with the
            // variable set never passes over a difference; the next run compares against the new file.
            if update {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &text).unwrap();
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "manifests differ from tests/data/manifests (FALCON_UPDATE_GOLDEN=1 rewrites them; rewritten now: {update}):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn golden_manifests_say_the_right_things() {
    let cases: BTreeMap<String, Value> = golden_cases().into_iter().map(|(c, s)| (c, render(&s))).collect();
    let pod = |v: &Value| -> Value {
        match v["kind"].as_str().unwrap() {
            "Job" => v["spec"]["template"]["spec"].clone(),
            _ => v["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"].clone(),
        }
    };
    // v6e-8: 2 hosts × 4 chips → a JobSet, one slice of 2 indexed pods, 4 TPUs each, topology 2x4.
    let v6e8 = &cases["v6e-8"];
    assert_eq!(v6e8["kind"], "JobSet");
    assert_eq!(v6e8["apiVersion"], "jobset.x-k8s.io/v1alpha2");
    let rj = &v6e8["spec"]["replicatedJobs"][0];
    assert_eq!((rj["name"].as_str(), rj["replicas"].as_u64()), (Some("slice"), Some(1)));
    assert_eq!(
        (rj["template"]["spec"]["parallelism"].as_u64(), rj["template"]["spec"]["completions"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(rj["template"]["spec"]["completionMode"], "Indexed");
    assert_eq!(rj["template"]["spec"]["backoffLimit"], 0);
    let p = pod(v6e8);
    assert_eq!(p["restartPolicy"], "Never");
    assert_eq!(
        p["nodeSelector"],
        json!({"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "2x4"})
    );
    assert_eq!(p["containers"][0]["resources"], json!({"limits": {"google.com/tpu": "4"}}));
    assert_eq!(p["tolerations"], json!([{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]));
    assert_eq!(p["containers"][0]["name"], "workload");
    assert_eq!(p["containers"][0]["image"], IMAGE);
    // Single-host types are plain Jobs.
    for (case, accel, topology, chips) in [
        ("v4-8", "tpu-v4-podslice", "2x2x1", "4"),
        ("v5p-8", "tpu-v5p-slice", "2x2x1", "4"),
        ("v6e-1", "tpu-v6e-slice", "1x1", "1"),
    ] {
        let v = &cases[case];
        assert_eq!(v["kind"], "Job", "{case}");
        assert_eq!(pod(v)["nodeSelector"]["cloud.google.com/gke-tpu-accelerator"], accel, "{case}");
        assert_eq!(pod(v)["nodeSelector"]["cloud.google.com/gke-tpu-topology"], topology, "{case}");
        assert_eq!(pod(v)["containers"][0]["resources"]["limits"]["google.com/tpu"], chips, "{case}");
    }
    for (case, hosts, topology) in
        [("v4-16", 2, "2x2x2"), ("v5litepod-8", 2, "2x4"), ("v5litepod-16", 4, "4x4"), ("v6e-256", 64, "16x16")]
    {
        let v = &cases[case];
        assert_eq!(v["kind"], "JobSet", "{case}");
        assert_eq!(v["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"], hosts, "{case}");
        assert_eq!(pod(v)["nodeSelector"]["cloud.google.com/gke-tpu-topology"], topology, "{case}");
        assert_eq!(
            v["metadata"]["annotations"]["alpha.jobset.sigs.k8s.io/exclusive-topology"],
            "cloud.google.com/gke-nodepool"
        );
    }
    for (case, gke) in [
        ("a100-40gb-8", "nvidia-tesla-a100"),
        ("a100-80gb-8", "nvidia-a100-80gb"),
        ("h100-80gb-8", "nvidia-h100-80gb"),
        ("h100-mega-80gb-8", "nvidia-h100-mega-80gb"),
        ("h200-141gb-8", "nvidia-h200-141gb"),
    ] {
        let p = pod(&cases[case]);
        assert_eq!(cases[case]["kind"], "Job");
        assert_eq!(p["nodeSelector"], json!({"cloud.google.com/gke-accelerator": gke}), "{case}");
        assert_eq!(p["containers"][0]["resources"], json!({"limits": {"nvidia.com/gpu": "8"}}), "{case}");
        assert_eq!(p["tolerations"][0]["key"], "nvidia.com/gpu", "{case}");
    }
    let cpu = pod(&cases["cpu"]);
    assert_eq!(cpu["containers"][0]["resources"], json!({"requests": {"cpu": "4"}}));
    assert!(cpu.get("nodeSelector").is_none() && cpu.get("tolerations").is_none());
    let spot = pod(&cases["v6e-8-spot"]);
    assert_eq!(spot["nodeSelector"]["cloud.google.com/gke-spot"], "true");
    assert!(spot["tolerations"].as_array().unwrap().iter().any(|t| t["key"] == "cloud.google.com/gke-spot"));
    let two = &cases["v5litepod-16-2slices"];
    assert_eq!(two["spec"]["replicatedJobs"][0]["replicas"], 2);
    assert_eq!(two["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"], 4);
    let gpus = &cases["h100-80gb-8-2nodes"];
    assert_eq!(
        (gpus["kind"].as_str(), gpus["spec"]["replicatedJobs"][0]["replicas"].as_u64()),
        (Some("JobSet"), Some(2))
    );
    assert!(gpus["metadata"].get("annotations").is_none(), "the one-slice-per-node-pool annotation is for TPUs");
    assert_eq!(
        pod(&cases["v5p-16-reservation"])["nodeSelector"]["cloud.google.com/reservation-name"],
        "falcon-v5p-res"
    );
    assert_eq!(pod(&cases["v6e-4-flex"])["nodeSelector"]["cloud.google.com/gke-queued"], "true");
    // Labels everywhere, spec labels sanitized; Falcon's environment.
    for (case, v) in &cases {
        let want = json!({"experiment": "e-12", "goal": "MFU---50", "falcon.dev/job-id": "j-42", "falcon.dev/name": "train-a1-gke-east", "falcon.dev/attempt": "1"});
        assert_eq!(v["metadata"]["labels"], want, "{case}");
        let template_labels = match v["kind"].as_str().unwrap() {
            "Job" => v["spec"]["template"]["metadata"]["labels"].clone(),
            _ => {
                assert_eq!(v["spec"]["replicatedJobs"][0]["template"]["metadata"]["labels"], want, "{case}");
                v["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["labels"].clone()
            }
        };
        assert_eq!(template_labels, want, "{case}");
        let env: Vec<(String, String)> = pod(v)["containers"][0]["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["name"].as_str().unwrap().into(), e["value"].as_str().unwrap().into()))
            .collect();
        assert_eq!(
            env,
            [
                ("XLA_FLAGS".to_string(), "--xla_dump_to=/tmp/xla".to_string()),
                ("FALCON_JOB_ID".into(), "j-42".into()),
                ("FALCON_JOB_NAME".into(), "train-a1-gke-east".into()),
                ("FALCON_JOB_ATTEMPT".into(), "1".into())
            ],
            "{case}"
        );
        assert_eq!(v["metadata"]["namespace"], "falcon");
        assert!(v["spec"]["ttlSecondsAfterFinished"].as_i64().unwrap() >= 7 * 24 * 3600);
    }
}

// ------------------------------------------------------------------------------------------------ 2. backend

/// A fake cluster and a backend on it, for one accelerator type.
struct Fixture {
    fake: FakeCluster,
    pool: Pool,
    backend: KubernetesBackend,
}

async fn fixture(accelerator: &str) -> Fixture {
    let fake = FakeCluster::start("backend-test").await;
    let pool = pool_on(&fake, "gke-east", "us-east5-b", accelerator);
    let backend = KubernetesBackend::from_pool(&pool).await.unwrap();
    Fixture { fake, pool, backend }
}

impl Fixture {
    async fn submit(&self, spec: &JobSpec, job: JobId) -> Result<BackendRef, JobError> {
        let resolved = spec.resolve().unwrap();
        let sub = Submission {
            job,
            name: object_name(&spec.name, 1, &self.pool.name),
            spec,
            resolved: &resolved,
            attempt: 1,
            pool: &self.pool,
        };
        self.backend.submit(&sub).await
    }
}

#[tokio::test]
async fn a_single_host_job_runs_and_its_pod_logs_are_read() {
    let fx = fixture("v6e-4").await;
    let handle = fx.submit(&spec("solo", "v6e-4", 1), JobId(1)).await.unwrap();
    let name = "solo-a1-gke-east";
    assert_eq!(handle, BackendRef(format!("job/{name}")));
    assert_eq!(fx.fake.jobs().len(), 1);
    assert_eq!(posts(&fx.fake), 1);
    wait_for(&fx.backend, &handle, "running", |s| matches!(s, BackendState::Running { .. })).await;

    let pods = pods_with(&fx.fake, "job-name", name);
    assert_eq!(pods.len(), 1);
    let pod = fx.fake.pods().into_iter().find(|p| p["metadata"]["name"] == pods[0].as_str()).unwrap();
    assert_eq!(pod["metadata"]["labels"]["falcon.dev/job-id"], "j-1");
    assert_eq!(pod["spec"]["nodeSelector"]["cloud.google.com/gke-tpu-topology"], "2x2");
    fx.fake.append_log(&pods[0], "step 1 loss 2.5\n");
    let logs = fx.backend.logs(&handle).await.unwrap();
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0].source, pods[0]);
    let text = String::from_utf8(logs[0].text.clone()).unwrap();
    assert!(
        text.contains("fake kubelet: started container workload with command [python3 -m train --steps=100]"),
        "{text}"
    );
    assert!(text.ends_with("step 1 loss 2.5\n"), "{text}");

    assert_eq!(fx.fake.finish_pods(&format!("job-name={name}"), 0), 1);
    assert_eq!(
        wait_for(&fx.backend, &handle, "succeeded", |s| !matches!(s, BackendState::Running { .. })).await,
        BackendState::Succeeded
    );
    assert_eq!(fx.backend.logs(&handle).await.unwrap().len(), 1, "a finished pod's log is still there");
}

#[tokio::test]
async fn resource_use_comes_from_the_metrics_api_where_the_cluster_serves_one() {
    let mut fx = fixture("v6e-16").await; // a JobSet of 4 hosts
    let backend = fx.backend.clone();
    // Asked twice at once, the second read waits for metrics-server's refresh.
    fx.backend = backend.clone().with_metrics_refresh(Duration::from_secs(3600));
    let handle = fx.submit(&spec("measured", "v6e-16", 1), JobId(3)).await.unwrap();
    wait_for(&fx.backend, &handle, "running", |s| matches!(s, BackendState::Running { .. })).await;
    // A bare cluster: no metrics API, so the backend says it cannot sample.
    match fx.backend.sample(&handle).await.unwrap() {
        Sample::Unsupported(why) => assert!(why.contains("no metrics API") && why.contains("404"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(fx.backend.sample(&handle).await.unwrap(), Sample::NoReading, "not asked again so soon");
    fx.backend = backend.with_metrics_refresh(Duration::ZERO);
    fx.fake.serve_metrics(true);
    let selector = "jobset.sigs.k8s.io/jobset-name=measured-a1-gke-east";
    assert_eq!(fx.backend.sample(&handle).await.unwrap(), Sample::NoReading, "no pod has metrics yet");
    assert_eq!(fx.fake.set_pod_usage(selector, "250m", "512Mi"), 4);
    // The JobSet runs once its first pod does; metrics-server reports running pods only, so wait for all four.
    let started = Instant::now();
    while fx.fake.pods().iter().filter(|p| p["status"]["phase"] == "Running").count() < 4 {
        assert!(started.elapsed() < Duration::from_secs(20), "the four pods never all ran: {:?}", fx.fake.pods());
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(
        fx.backend.sample(&handle).await.unwrap(),
        Sample::Usage { rss_bytes: 4 * (512 << 20), cpu: CpuUse::Rate(1.0) },
        "the four hosts' memory and CPU rate summed"
    );
}

#[tokio::test]
async fn a_pending_pod_is_pending_and_has_no_log_yet() {
    let fx = fixture("cpu").await;
    fx.fake.set_auto_run(false);
    let mut cpu = spec("idle", "cpu", 1);
    cpu.resources.devices = Some(2);
    let handle = fx.submit(&cpu, JobId(2)).await.unwrap();
    let state = wait_for(
        &fx.backend,
        &handle,
        "pending",
        |s| matches!(s, BackendState::Pending { reason, .. } if reason.contains("ContainerCreating")),
    )
    .await;
    assert!(matches!(state, BackendState::Pending { unschedulable: false, .. }));
    assert!(
        fx.backend.logs(&handle).await.unwrap().is_empty(),
        "a pod that has not started is skipped (the API answers 400)"
    );
    fx.fake.start_pods("job-name=idle-a1-gke-east");
    wait_for(&fx.backend, &handle, "running", |s| matches!(s, BackendState::Running { .. })).await;
}

#[tokio::test]
async fn an_unschedulable_job_reports_the_scheduler_message() {
    let fx = fixture("v6e-4").await;
    fx.fake.set_schedulable(false);
    let handle = fx.submit(&spec("stuck", "v6e-4", 1), JobId(3)).await.unwrap();
    let state = wait_for(&fx.backend, &handle, "unschedulable", |s| {
        matches!(s, BackendState::Pending { unschedulable: true, .. })
    })
    .await;
    assert_eq!(
        state,
        BackendState::Pending { reason: fake_kube_apiserver::UNSCHEDULABLE_MESSAGE.into(), unschedulable: true }
    );
    assert!(fx.backend.logs(&handle).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_failing_job_reports_its_exit_code() {
    let fx = fixture("h100-80gb-8").await;
    let handle = fx.submit(&spec("crash", "h100-80gb-8", 1), JobId(4)).await.unwrap();
    wait_for(&fx.backend, &handle, "running", |s| matches!(s, BackendState::Running { .. })).await;
    fx.fake.finish_pods("job-name=crash-a1-gke-east", 3);
    let state = wait_for(&fx.backend, &handle, "failed", |s| !matches!(s, BackendState::Running { .. })).await;
    match state {
        BackendState::Failed { exit_code: Some(3), reason } => {
            assert!(reason.starts_with("exited with status 3 (pod crash-a1-gke-east-"), "{reason}")
        }
        other => panic!("expected a failure with exit code 3, got {other:?}"),
    }
}

#[tokio::test]
async fn a_failure_is_explained_by_the_end_of_the_failed_pods_log() {
    let fx = fixture("v5litepod-16").await;
    let handle = fx.submit(&spec("why", "v5litepod-16", 1), JobId(12)).await.unwrap();
    wait_for(&fx.backend, &handle, "running", |s| matches!(s, BackendState::Running { .. })).await;
    assert_eq!(fx.backend.failure_output(&handle).await.unwrap(), None, "nothing failed yet");
    let hosts: Vec<(String, String)> = fx
        .fake
        .pods()
        .into_iter()
        .filter(|p| p["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] == "why-a1-gke-east")
        .map(|p| {
            let index =
                p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"].as_str().unwrap().to_string();
            (index, p["metadata"]["name"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(hosts.len(), 4, "{hosts:?}");
    for (index, pod) in &hosts {
        fx.fake.append_log(pod, "step 1 loss 2.5\n");
        if index == "2" {
            // 49 lines of 2 kB and the error: more than one answer holds, so the last line is asked for again.
            for i in 0..49 {
                fx.fake.append_log(pod, &format!("debug {i}: {}\n", "x".repeat(2000)));
            }
            fx.fake.append_log(pod, "Traceback (most recent call last):\nValueError: bad shard\n");
        } else {
            fx.fake.append_log(pod, "error: not this one\n");
        }
    }
    fx.fake.finish_pods("job-name=why-a1-gke-east-slice-0,batch.kubernetes.io/job-completion-index=2", 42);
    let state = wait_for(&fx.backend, &handle, "failed", |s| !matches!(s, BackendState::Running { .. })).await;
    assert!(matches!(state, BackendState::Failed { exit_code: Some(42), .. }), "{state:?}");
    let said = fx.backend.failure_output(&handle).await.unwrap().expect("the failed pod's log");
    assert!(said.len() <= falcon_job::failure::TAIL_BYTES, "{} bytes", said.len());
    assert_eq!(falcon_job::failure::meaningful_line(&said).as_deref(), Some("ValueError: bad shard"));
}

#[tokio::test]
async fn a_preempted_job_is_reported_as_preempted() {
    let fx = fixture("v6e-4").await;
    let handle = fx.submit(&spec("spotty", "v6e-4", 1), JobId(5)).await.unwrap();
    wait_for(&fx.backend, &handle, "running", |s| matches!(s, BackendState::Running { .. })).await;
    assert_eq!(
        fx.fake.preempt_pods("falcon.dev/name=spotty-a1-gke-east"),
        1,
        "the pod template carries Falcon's labels"
    );
    let state = wait_for(&fx.backend, &handle, "preempted", |s| !matches!(s, BackendState::Running { .. })).await;
    assert!(
        matches!(&state, BackendState::Preempted { reason } if reason.contains("PreemptionByScheduler")),
        "{state:?}"
    );
}

#[tokio::test]
async fn cancel_deletes_the_job_and_its_pods() {
    let fx = fixture("v6e-4").await;
    let handle = fx.submit(&spec("stopme", "v6e-4", 1), JobId(6)).await.unwrap();
    wait_for(&fx.backend, &handle, "running", |s| matches!(s, BackendState::Running { .. })).await;
    fx.backend.cancel(&handle).await.unwrap();
    assert!(fx
        .fake
        .request_log()
        .contains(&"DELETE /apis/batch/v1/namespaces/default/jobs/stopme-a1-gke-east".to_string()));
    assert!(fx.fake.jobs().is_empty());
    assert!(fx.fake.pods().is_empty(), "background propagation deletes the pods");
    assert_eq!(fx.backend.status(&handle).await.unwrap(), BackendState::Missing);
    fx.backend.cancel(&handle).await.unwrap();
    assert!(fx.backend.logs(&handle).await.unwrap().is_empty());
}

#[tokio::test]
async fn submitting_twice_adopts_and_a_new_backend_finds_the_object() {
    let fx = fixture("v6e-4").await;
    let s = spec("twice", "v6e-4", 1);
    let first = fx.submit(&s, JobId(7)).await.unwrap();
    let second = fx.submit(&s, JobId(7)).await.unwrap();
    assert_eq!(first, second);
    assert_eq!(fx.fake.jobs().len(), 1, "never two objects");

    // Someone else's object of the same name is not adopted.
    let err = fx.submit(&s, JobId(8)).await.unwrap_err().to_string();
    assert!(err.contains("belongs to Falcon job j-7") && err.contains("gke-east") && err.contains("submit"), "{err}");

    // A worker restart: a new backend value finds it by name.
    let restarted = KubernetesBackend::from_pool(&fx.pool).await.unwrap();
    assert_eq!(restarted.find("twice-a1-gke-east").await.unwrap(), Some(first.clone()));
    assert_eq!(restarted.find("nothing-a1-gke-east").await.unwrap(), None);
    wait_for(&restarted, &first, "running", |s| matches!(s, BackendState::Running { .. })).await;
    // A bare name (as recorded before the submission finished) is understood too.
    assert_eq!(
        restarted.status(&BackendRef("twice-a1-gke-east".into())).await.unwrap(),
        BackendState::Running { started: None }
    );
}

#[tokio::test]
async fn a_multi_host_jobset_runs_every_host_and_reads_every_log() {
    let fx = fixture("v6e-8").await;
    let handle = fx.submit(&spec("multi", "v6e-8", 2), JobId(9)).await.unwrap();
    let name = "multi-a1-gke-east";
    assert_eq!(handle, BackendRef(format!("jobset/{name}")));
    assert_eq!(fx.fake.jobsets().len(), 1);
    assert_eq!(fx.fake.jobs().len(), 2, "one child Job per slice");
    assert_eq!(fx.backend.find(name).await.unwrap(), Some(handle.clone()), "a child Job is not taken for the object");
    wait_for(&fx.backend, &handle, "running", |s| matches!(s, BackendState::Running { .. })).await;
    let pods = pods_with(&fx.fake, "jobset.sigs.k8s.io/jobset-name", name);
    assert_eq!(pods.len(), 4, "2 slices × 2 hosts");
    // The JobSet runs once a pod does; the fake kubelet starts the others a moment apart (a pod not started
    // has no log yet, which the backend rightly skips), so every host is waited for before reading logs.
    let started = Instant::now();
    while !fx
        .fake
        .pods()
        .iter()
        .filter(|p| pods.iter().any(|n| p["metadata"]["name"] == n.as_str()))
        .all(|p| p["status"]["phase"] == "Running")
    {
        assert!(started.elapsed() < Duration::from_secs(20), "not every host started");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    for pod in fx.fake.pods() {
        assert_eq!(pod["spec"]["containers"][0]["resources"]["limits"]["google.com/tpu"], "4");
        assert_eq!(pod["spec"]["nodeSelector"]["cloud.google.com/gke-tpu-accelerator"], "tpu-v6e-slice");
    }
    for pod in &pods {
        fx.fake.append_log(pod, &format!("hello from {pod}\n"));
    }
    let logs = fx.backend.logs(&handle).await.unwrap();
    let sources: Vec<&str> = logs.iter().map(|l| l.source.as_str()).collect();
    assert_eq!(sources, pods.iter().map(String::as_str).collect::<Vec<_>>());
    for log in &logs {
        let text = String::from_utf8_lossy(&log.text);
        assert!(
            text.contains("fake kubelet: started container workload")
                && text.ends_with(&format!("hello from {}\n", log.source)),
            "{text}"
        );
    }
    fx.fake.finish_pods(&format!("jobset.sigs.k8s.io/jobset-name={name}"), 0);
    assert_eq!(
        wait_for(&fx.backend, &handle, "succeeded", |s| !matches!(s, BackendState::Running { .. })).await,
        BackendState::Succeeded
    );
}

#[tokio::test]
async fn a_multi_host_failure_or_preemption_is_read_from_the_failed_child() {
    let fx = fixture("v5litepod-16").await;
    let failing = fx.submit(&spec("mfail", "v5litepod-16", 1), JobId(10)).await.unwrap();
    wait_for(&fx.backend, &failing, "running", |s| matches!(s, BackendState::Running { .. })).await;
    fx.fake.finish_pods("job-name=mfail-a1-gke-east-slice-0,batch.kubernetes.io/job-completion-index=2", 42);
    let state = wait_for(&fx.backend, &failing, "failed", |s| !matches!(s, BackendState::Running { .. })).await;
    assert!(matches!(state, BackendState::Failed { exit_code: Some(42), .. }), "{state:?}");

    let preempted = fx.submit(&spec("mpre", "v5litepod-16", 1), JobId(11)).await.unwrap();
    wait_for(&fx.backend, &preempted, "running", |s| matches!(s, BackendState::Running { .. })).await;
    fx.fake.preempt_pods("job-name=mpre-a1-gke-east-slice-0,batch.kubernetes.io/job-completion-index=1");
    let state = wait_for(&fx.backend, &preempted, "preempted", |s| !matches!(s, BackendState::Running { .. })).await;
    assert!(matches!(state, BackendState::Preempted { .. }), "{state:?}");
}

#[tokio::test]
async fn api_errors_are_backend_errors_and_a_retry_submits_once() {
    let fx = fixture("v6e-4").await;
    let s = spec("flaky", "v6e-4", 1);
    fx.fake.fail_next_requests(1, 500);
    let err = fx.submit(&s, JobId(12)).await.unwrap_err();
    match &err {
        JobError::Backend { backend, pool, operation, message } => {
            assert_eq!((*backend, pool.as_str(), *operation), ("kubernetes", "gke-east", "submit"));
            assert!(message.contains("HTTP 500") && message.contains("InternalError"), "{message}");
        }
        other => panic!("expected a backend error, got {other:?}"),
    }
    assert!(fx.fake.jobs().is_empty(), "nothing half-submitted");
    let handle = fx.submit(&s, JobId(12)).await.unwrap();
    assert_eq!(fx.fake.jobs().len(), 1);
    assert_eq!(posts(&fx.fake), 2, "the failed POST and the retry");

    fx.fake.fail_next_requests(1, 500);
    let err = fx.backend.status(&handle).await.unwrap_err();
    assert!(matches!(&err, JobError::Backend { operation: "status", message, .. } if message.contains("500")), "{err}");
    fx.fake.fail_next_requests(1, 500);
    assert!(matches!(fx.backend.cancel(&handle).await.unwrap_err(), JobError::Backend { operation: "cancel", .. }));
    assert_eq!(fx.fake.jobs().len(), 1, "a failed cancel deleted nothing");
}

#[tokio::test]
async fn an_unreachable_api_server_is_a_backend_error() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let pool = Pool::from_config(&pool_config(
        "gke-gone",
        "us-east5-b",
        "v6e-4",
        json!({"api_url": format!("http://127.0.0.1:{port}")}),
    ))
    .unwrap();
    let backend = KubernetesBackend::from_pool(&pool).await.unwrap();
    let s = spec("lost", "v6e-4", 1);
    let resolved = s.resolve().unwrap();
    let sub = Submission {
        job: JobId(13),
        name: "lost-a1-gke-gone".into(),
        spec: &s,
        resolved: &resolved,
        attempt: 1,
        pool: &pool,
    };
    let err = backend.submit(&sub).await.unwrap_err();
    assert!(matches!(&err, JobError::Backend { pool, operation: "submit", .. } if pool == "gke-gone"), "{err}");
    let err = backend.find("lost-a1-gke-gone").await.unwrap_err().to_string();
    assert!(err.contains("gke-gone") && err.contains("find"), "{err}");
}

#[tokio::test]
async fn jobs_without_an_image_or_with_too_long_names_are_refused_before_any_request() {
    let fx = fixture("v6e-8").await;
    let mut no_image = spec("noimg", "v6e-8", 1);
    no_image.image = None;
    let err = fx.submit(&no_image, JobId(14)).await.unwrap_err().to_string();
    assert!(err.contains("image"), "{err}");
    let long = spec(&"l".repeat(40), "v6e-8", 1);
    let resolved = long.resolve().unwrap();
    let pool = pool_on(&fx.fake, "gke-us-east5-b-v6e", "us-east5-b", "v6e-8");
    let sub = Submission {
        job: JobId(15),
        name: object_name(&long.name, 1, &pool.name),
        spec: &long,
        resolved: &resolved,
        attempt: 1,
        pool: &pool,
    };
    let err = fx.backend.submit(&sub).await.unwrap_err().to_string();
    assert!(err.contains("at most") && err.contains("63"), "{err}");
    assert_eq!(posts(&fx.fake), 0);
}

#[tokio::test]
async fn pool_settings_are_checked_and_a_kubeconfig_context_works() {
    let fake = FakeCluster::start("settings").await;
    let bad = |settings: Value| Pool::from_config(&pool_config("gke-x", "us-east5-b", "v6e-4", settings)).unwrap();
    let err = KubernetesBackend::from_pool(&bad(json!({"contxt": "prod"}))).await.unwrap_err().to_string();
    assert!(err.contains("pool `gke-x`") && err.contains("settings.contxt"), "{err}");
    let err = KubernetesBackend::from_pool(&bad(json!({"api_url": 5}))).await.unwrap_err().to_string();
    assert!(err.contains("settings.api_url"), "{err}");
    let err = KubernetesBackend::from_pool(&bad(json!({"api_url": "not a url"}))).await.unwrap_err().to_string();
    assert!(err.contains("settings.api_url"), "{err}");
    let err = KubernetesBackend::from_pool(&bad(json!({"api_url": fake.url(), "namespace": "Bad_NS"})))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("settings.namespace"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("config");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}\ncontexts:\n- name: fake-ctx\n  context:\n    cluster: fake\n    user: nobody\n    namespace: team-a\nusers:\n- name: nobody\n  user: {{}}\ncurrent-context: fake-ctx\n",
            fake.url()
        ),
    )
    .unwrap();
    let path = kubeconfig.display().to_string();
    let err = KubernetesBackend::from_pool(&bad(json!({"kubeconfig": path, "context": "no-such-context"})))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("gke-x") && err.contains("settings.context `no-such-context`"), "{err}");
    let pool = bad(json!({"kubeconfig": path, "context": "fake-ctx"}));
    let backend = KubernetesBackend::from_pool(&pool).await.unwrap();
    assert_eq!(backend.namespace(), "team-a", "the context's namespace");
    let s = spec("ctx", "v6e-4", 1);
    let resolved = s.resolve().unwrap();
    let sub = Submission {
        job: JobId(16),
        name: "ctx-a1-gke-x".into(),
        spec: &s,
        resolved: &resolved,
        attempt: 1,
        pool: &pool,
    };
    backend.submit(&sub).await.unwrap();
    assert!(fake.request_log().contains(&"POST /apis/batch/v1/namespaces/team-a/jobs".to_string()));
    let ns = bad(json!({"kubeconfig": path, "namespace": "team-b"}));
    assert_eq!(KubernetesBackend::from_pool(&ns).await.unwrap().namespace(), "team-b", "the setting wins");
}
