//! Exercises the FAKE Kubernetes API server over real HTTP with reqwest.

use std::time::Duration;

use fake_kube_apiserver::{FakeCluster, UNSCHEDULABLE_MESSAGE};
use serde_json::{json, Value};

const JOBS: &str = "/apis/batch/v1/namespaces/default/jobs";
const PODS: &str = "/api/v1/namespaces/default/pods";
const JOBSETS: &str = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets";

struct T {
    c: FakeCluster,
    http: reqwest::Client,
}

impl T {
    async fn new() -> T {
        T { c: FakeCluster::start("test").await, http: reqwest::Client::new() }
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let r = self.http.get(format!("{}{path}", self.c.url())).send().await.unwrap();
        let code = r.status().as_u16();
        (code, r.json().await.unwrap())
    }

    async fn get_text(&self, path: &str) -> (u16, String) {
        let r = self.http.get(format!("{}{path}", self.c.url())).send().await.unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let r = self.http.post(format!("{}{path}", self.c.url())).json(body).send().await.unwrap();
        let code = r.status().as_u16();
        (code, r.json().await.unwrap())
    }

    async fn delete(&self, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self.http.delete(format!("{}{path}", self.c.url()));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.unwrap();
        let code = r.status().as_u16();
        (code, r.json().await.unwrap())
    }

    fn pods_of(&self, job: &str) -> Vec<Value> {
        self.c.pods().into_iter().filter(|p| p["metadata"]["labels"]["job-name"] == job).collect()
    }

    fn job(&self, name: &str) -> Value {
        self.c.jobs().into_iter().find(|j| j["metadata"]["name"] == name).unwrap_or_else(|| panic!("no job {name}"))
    }
}

async fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..200 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("timed out waiting for: {what}");
}

fn job_body(name: &str, parallelism: u32) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"falcon.dev/run": "r1"}},
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "completionMode": "Indexed",
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"app": "falcon", "falcon.dev/run": "r1"}},
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {
                        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
                        "cloud.google.com/gke-tpu-topology": "2x4",
                    },
                    "tolerations": [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [{
                        "name": "main",
                        "image": "us-docker.pkg.dev/falcon/train:1",
                        "command": ["python", "-m", "train"],
                        "args": ["--steps", "10"],
                        "resources": {"limits": {"google.com/tpu": "4"}},
                    }],
                },
            },
        },
    })
}

fn condition<'a>(obj: &'a Value, ctype: &str) -> Option<&'a Value> {
    obj["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == ctype)
}

#[tokio::test]
async fn job_with_two_pods_runs_then_fails_with_exit_code() {
    let t = T::new().await;
    let body = job_body("train", 2);
    let (code, created) = t.post(JOBS, &body).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["kind"], "Job");
    assert_eq!(created["apiVersion"], "batch/v1");
    let meta = &created["metadata"];
    assert_eq!(meta["namespace"], "default");
    assert_eq!(meta["generation"], 1);
    assert!(meta["uid"].as_str().unwrap().len() >= 32);
    assert!(meta["resourceVersion"].as_str().unwrap().parse::<u64>().is_ok());
    let ts = meta["creationTimestamp"].as_str().unwrap();
    assert_eq!(ts.len(), 20, "{ts}");
    assert!(ts.ends_with('Z') && ts.as_bytes()[10] == b'T', "{ts}");

    let pods = t.pods_of("train");
    assert_eq!(pods.len(), 2);
    for (i, pod) in pods.iter().enumerate() {
        let name = pod["metadata"]["name"].as_str().unwrap();
        let prefix = format!("train-{i}-");
        assert!(name.starts_with(&prefix), "{name}");
        let suffix = &name[prefix.len()..];
        assert_eq!(suffix.len(), 5);
        assert!(suffix.chars().all(|c| c.is_ascii_lowercase()), "{name}");
        let labels = &pod["metadata"]["labels"];
        assert_eq!(labels["job-name"], "train");
        assert_eq!(labels["batch.kubernetes.io/job-name"], "train");
        assert_eq!(labels["batch.kubernetes.io/job-completion-index"], i.to_string());
        assert_eq!(labels["app"], "falcon");
        assert_eq!(labels["falcon.dev/run"], "r1");
        let tmpl = &body["spec"]["template"]["spec"];
        assert_eq!(pod["spec"]["nodeSelector"], tmpl["nodeSelector"]);
        assert_eq!(pod["spec"]["tolerations"], tmpl["tolerations"]);
        assert_eq!(pod["spec"]["containers"], tmpl["containers"]);
        let owner = &pod["metadata"]["ownerReferences"][0];
        assert_eq!(owner["kind"], "Job");
        assert_eq!(owner["name"], "train");
        assert_eq!(owner["uid"], created["metadata"]["uid"]);
        assert_eq!(owner["controller"], true);
        assert_eq!(pod["kind"], "Pod");
        assert_eq!(pod["apiVersion"], "v1");
    }

    wait_until("both pods Running", || t.pods_of("train").iter().all(|p| p["status"]["phase"] == "Running")).await;
    let job = t.job("train");
    assert_eq!(job["status"]["active"], 2);
    assert_eq!(job["status"]["ready"], 2);
    assert!(job["status"]["startTime"].is_string());

    assert_eq!(t.c.finish_pods("job-name=train", 3), 2);
    for pod in t.pods_of("train") {
        assert_eq!(pod["status"]["phase"], "Failed");
        assert_eq!(pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 3);
    }
    let (code, job) = t.get(&format!("{JOBS}/train/status")).await;
    assert_eq!(code, 200);
    let failed = condition(&job, "Failed").expect("Failed condition");
    assert_eq!(failed["status"], "True");
    assert_eq!(failed["reason"], "BackoffLimitExceeded");
    assert_eq!(job["status"]["failed"], 2);
    assert_eq!(job["status"]["active"], 0);
    assert!(condition(&job, "Complete").is_none());
}

#[tokio::test]
async fn job_completes_when_all_pods_succeed() {
    let t = T::new().await;
    t.post(JOBS, &job_body("ok", 2)).await;
    t.c.finish_pods("job-name=ok", 0);
    let job = t.job("ok");
    let complete = condition(&job, "Complete").expect("Complete condition");
    assert_eq!(complete["status"], "True");
    assert_eq!(job["status"]["succeeded"], 2);
    assert_eq!(job["status"]["completedIndexes"], "0-1");
    assert!(job["status"]["completionTime"].is_string());
    for pod in t.pods_of("ok") {
        assert_eq!(pod["status"]["phase"], "Succeeded");
        let term = &pod["status"]["containerStatuses"][0]["state"]["terminated"];
        assert_eq!(term["exitCode"], 0);
        assert_eq!(term["reason"], "Completed");
    }
}

#[tokio::test]
async fn completions_beyond_parallelism_get_new_pods() {
    let t = T::new().await;
    let mut body = job_body("waves", 1);
    body["spec"]["completions"] = json!(3);
    t.post(JOBS, &body).await;
    for i in 0..3 {
        let sel = format!("job-name=waves,batch.kubernetes.io/job-completion-index={i}");
        assert_eq!(t.c.finish_pods(&sel, 0), 1, "index {i}");
    }
    assert_eq!(t.pods_of("waves").len(), 3);
    assert!(condition(&t.job("waves"), "Complete").is_some());
}

#[tokio::test]
async fn unschedulable_pods_stay_pending_until_capacity_returns() {
    let t = T::new().await;
    t.c.set_schedulable(false);
    t.post(JOBS, &job_body("stuck", 2)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pods = t.pods_of("stuck");
    assert_eq!(pods.len(), 2);
    for pod in &pods {
        assert_eq!(pod["status"]["phase"], "Pending");
        let c = condition(pod, "PodScheduled").unwrap();
        assert_eq!(c["status"], "False");
        assert_eq!(c["reason"], "Unschedulable");
        assert_eq!(c["message"], UNSCHEDULABLE_MESSAGE);
        assert_eq!(c["message"], "0/3 nodes are available: 3 Insufficient google.com/tpu.");
    }
    // No node yet: the log endpoint refuses, like the real API server.
    let name = pods[0]["metadata"]["name"].as_str().unwrap();
    let (code, _) = t.get_text(&format!("{PODS}/{name}/log")).await;
    assert_eq!(code, 400);

    t.c.set_schedulable(true);
    wait_until("pods Running after capacity returns", || {
        t.pods_of("stuck").iter().all(|p| p["status"]["phase"] == "Running")
    })
    .await;
}

#[tokio::test]
async fn auto_run_off_keeps_pods_pending_until_started() {
    let t = T::new().await;
    t.c.set_auto_run(false);
    t.post(JOBS, &job_body("manual", 1)).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let pod = &t.pods_of("manual")[0];
    assert_eq!(pod["status"]["phase"], "Pending");
    assert_eq!(condition(pod, "PodScheduled").unwrap()["status"], "True");
    assert_eq!(t.c.start_pods("job-name=manual"), 1);
    assert_eq!(t.pods_of("manual")[0]["status"]["phase"], "Running");
}

#[tokio::test]
async fn jobset_creates_child_jobs_and_tracks_their_outcome() {
    let t = T::new().await;
    let job_template = job_body("unused", 2);
    let body = json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "multi"},
        "spec": {
            "replicatedJobs": [{
                "name": "slice",
                "replicas": 2,
                "template": {
                    "metadata": {"labels": {"tier": "tpu"}},
                    "spec": job_template["spec"],
                },
            }],
        },
    });
    let (code, created) = t.post(JOBSETS, &body).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["kind"], "JobSet");

    let (_, list) = t.get(&format!("{JOBS}?labelSelector=jobset.sigs.k8s.io/jobset-name%3Dmulti")).await;
    let names: Vec<&str> =
        list["items"].as_array().unwrap().iter().map(|j| j["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["multi-slice-0", "multi-slice-1"]);
    for (i, job) in list["items"].as_array().unwrap().iter().enumerate() {
        let l = &job["metadata"]["labels"];
        assert_eq!(l["jobset.sigs.k8s.io/jobset-name"], "multi");
        assert_eq!(l["jobset.sigs.k8s.io/replicatedjob-name"], "slice");
        assert_eq!(l["jobset.sigs.k8s.io/job-index"], i.to_string());
        assert_eq!(l["tier"], "tpu");
        assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "JobSet");
    }
    let pods = t.c.pods();
    assert_eq!(pods.len(), 4);
    for pod in &pods {
        let l = &pod["metadata"]["labels"];
        assert_eq!(l["jobset.sigs.k8s.io/jobset-name"], "multi");
        assert_eq!(l["jobset.sigs.k8s.io/replicatedjob-name"], "slice");
        assert!(l["job-name"].as_str().unwrap().starts_with("multi-slice-"));
        assert_eq!(pod["spec"]["subdomain"], "multi");
    }

    t.c.finish_pods("jobset.sigs.k8s.io/jobset-name=multi", 0);
    let (_, js) = t.get(&format!("{JOBSETS}/multi")).await;
    assert_eq!(condition(&js, "Completed").unwrap()["status"], "True");
    assert_eq!(js["status"]["terminalState"], "Completed");
    assert_eq!(js["status"]["replicatedJobsStatus"][0]["succeeded"], 2);
}

#[tokio::test]
async fn jobset_fails_when_a_child_job_fails() {
    let t = T::new().await;
    let body = json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js"},
        "spec": {"replicatedJobs": [{
            "name": "w", "replicas": 2,
            "template": {"spec": {"parallelism": 1, "template": {"spec": {
                "containers": [{"name": "main", "image": "img"}],
            }}}},
        }]},
    });
    assert_eq!(t.post(JOBSETS, &body).await.0, 201);
    assert_eq!(t.c.jobs().len(), 2);
    // JobSet defaulting: restartPolicy OnFailure, Indexed completion mode.
    assert_eq!(t.job("js-w-0")["spec"]["template"]["spec"]["restartPolicy"], "OnFailure");
    assert_eq!(t.job("js-w-0")["spec"]["completionMode"], "Indexed");
    t.c.finish_pods("job-name=js-w-1", 1);
    let js = &t.c.jobsets()[0];
    let failed = condition(js, "Failed").expect("JobSet Failed condition");
    assert_eq!(failed["status"], "True");
    assert_eq!(js["status"]["terminalState"], "Failed");
    // The failed child is kept; the still-active one was torn down with its pods.
    let names: Vec<String> = t.c.jobs().iter().map(|j| j["metadata"]["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(names, ["js-w-1"]);
    assert!(condition(&t.job("js-w-1"), "Failed").is_some());
}

#[tokio::test]
async fn label_selectors_filter_lists() {
    let t = T::new().await;
    for (name, team) in [("a", "ml"), ("b", "ml"), ("c", "infra")] {
        let mut body = job_body(name, 1);
        body["metadata"]["labels"] = json!({"team": team, "falcon.dev/exp": name});
        assert_eq!(t.post(JOBS, &body).await.0, 201);
    }
    let names = |v: &Value| -> Vec<String> {
        v["items"].as_array().unwrap().iter().map(|j| j["metadata"]["name"].as_str().unwrap().to_string()).collect()
    };
    let (code, all) = t.get(JOBS).await;
    assert_eq!(code, 200);
    assert_eq!(all["kind"], "JobList");
    assert_eq!(all["apiVersion"], "batch/v1");
    assert!(all["metadata"]["resourceVersion"].is_string());
    assert_eq!(names(&all), ["a", "b", "c"]);
    let (_, ml) = t.get(&format!("{JOBS}?labelSelector=team%3Dml&limit=500")).await;
    assert_eq!(names(&ml), ["a", "b"]);
    let (_, both) = t.get(&format!("{JOBS}?labelSelector=team%3Dml,falcon.dev/exp%3Db")).await;
    assert_eq!(names(&both), ["b"]);
    let (_, exists) = t.get(&format!("{JOBS}?labelSelector=team")).await;
    assert_eq!(names(&exists), ["a", "b", "c"]);
    let (_, none) = t.get(&format!("{JOBS}?labelSelector=nope")).await;
    assert_eq!(names(&none), Vec::<String>::new());
    let (_, pods) = t.get(&format!("{PODS}?labelSelector=job-name%3Dc")).await;
    assert_eq!(pods["kind"], "PodList");
    assert_eq!(pods["items"].as_array().unwrap().len(), 1);
    let (_, other_ns) = t.get("/apis/batch/v1/namespaces/other/jobs").await;
    assert_eq!(names(&other_ns), Vec::<String>::new());
    let (_, cluster_wide) = t.get("/apis/batch/v1/jobs?labelSelector=team%3Dinfra").await;
    assert_eq!(names(&cluster_wide), ["c"]);
    let (_, by_field) = t.get(&format!("{JOBS}?fieldSelector=metadata.name%3Db")).await;
    assert_eq!(names(&by_field), ["b"]);
}

#[tokio::test]
async fn pod_log_has_kubelet_line_and_appended_text() {
    let t = T::new().await;
    t.post(JOBS, &job_body("logs", 1)).await;
    wait_until("pod Running", || t.pods_of("logs").iter().all(|p| p["status"]["phase"] == "Running")).await;
    let name = t.pods_of("logs")[0]["metadata"]["name"].as_str().unwrap().to_string();
    t.c.append_log(&name, "step 1 loss=2.5\n");
    t.c.append_log(&name, "step 2 loss=1.9\n");
    let (code, text) = t.get_text(&format!("{PODS}/{name}/log?container=main&timestamps=true")).await;
    assert_eq!(code, 200);
    assert!(
        text.starts_with("fake kubelet: started container main with command [python -m train --steps 10]\n"),
        "{text}"
    );
    assert!(text.contains("step 1 loss=2.5\nstep 2 loss=1.9\n"), "{text}");
    let (_, tail) = t.get_text(&format!("{PODS}/{name}/log?tailLines=1&follow=true")).await;
    assert_eq!(tail, "step 2 loss=1.9\n");
    // Logs stay readable after the pod terminates.
    t.c.finish_pods("job-name=logs", 0);
    let (code, text) = t.get_text(&format!("{PODS}/{name}/log")).await;
    assert_eq!(code, 200);
    assert!(text.contains("step 2"));
    let (code, err) = t.get(&format!("{PODS}/{name}/log?container=sidecar")).await;
    assert_eq!(code, 400);
    assert_eq!(err["reason"], "BadRequest");
}

#[tokio::test]
async fn delete_propagation_policies() {
    let t = T::new().await;
    t.post(JOBS, &job_body("bg", 2)).await;
    t.post(JOBS, &job_body("orphan", 1)).await;
    assert_eq!(t.pods_of("bg").len(), 2);

    let (code, deleted) = t
        .delete(
            &format!("{JOBS}/bg"),
            Some(json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})),
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(deleted["kind"], "Job");
    assert_eq!(deleted["metadata"]["name"], "bg");
    assert!(t.pods_of("bg").is_empty());
    assert_eq!(t.get(&format!("{JOBS}/bg")).await.0, 404);

    let (code, _) = t.delete(&format!("{JOBS}/orphan?propagationPolicy=Orphan"), None).await;
    assert_eq!(code, 200);
    let left = t.pods_of("orphan");
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["metadata"]["ownerReferences"], json!([]));

    let name = left[0]["metadata"]["name"].as_str().unwrap().to_string();
    let (code, pod) = t.delete(&format!("{PODS}/{name}"), None).await;
    assert_eq!(code, 200);
    assert_eq!(pod["kind"], "Pod");
    assert!(t.c.pods().is_empty());

    // JobSets: Background by default, removing child jobs and their pods.
    let js = json!({"metadata": {"name": "gone"}, "spec": {"replicatedJobs": [{
        "name": "w", "replicas": 2, "template": {"spec": job_body("x", 1)["spec"]}}]}});
    assert_eq!(t.post(JOBSETS, &js).await.0, 201);
    assert_eq!(t.c.jobs().len(), 2);
    assert_eq!(t.c.pods().len(), 2);
    assert_eq!(t.delete(&format!("{JOBSETS}/gone"), None).await.0, 200);
    assert!(t.c.jobsets().is_empty());
    assert!(t.c.jobs().is_empty());
    assert!(t.c.pods().is_empty());
}

#[tokio::test]
async fn conflicts_and_not_found_use_status_objects() {
    let t = T::new().await;
    assert_eq!(t.post(JOBS, &job_body("dup", 1)).await.0, 201);
    let (code, st) = t.post(JOBS, &job_body("dup", 1)).await;
    assert_eq!(code, 409);
    assert_eq!(st["kind"], "Status");
    assert_eq!(st["apiVersion"], "v1");
    assert_eq!(st["status"], "Failure");
    assert_eq!(st["reason"], "AlreadyExists");
    assert_eq!(st["code"], 409);
    assert_eq!(st["message"], "jobs.batch \"dup\" already exists");
    assert_eq!(t.c.jobs().len(), 1);
    assert_eq!(t.pods_of("dup").len(), 1);

    for (path, msg) in [
        (format!("{JOBS}/missing"), "jobs.batch \"missing\" not found"),
        (format!("{PODS}/missing"), "pods \"missing\" not found"),
        (format!("{PODS}/missing/log"), "pods \"missing\" not found"),
        (format!("{JOBSETS}/missing"), "jobsets.jobset.x-k8s.io \"missing\" not found"),
        ("/apis/batch/v1/namespaces/elsewhere/jobs/dup".to_string(), "jobs.batch \"dup\" not found"),
    ] {
        let (code, st) = t.get(&path).await;
        assert_eq!(code, 404, "{path}");
        assert_eq!(st["kind"], "Status");
        assert_eq!(st["status"], "Failure");
        assert_eq!(st["reason"], "NotFound");
        assert_eq!(st["code"], 404);
        assert_eq!(st["message"], msg);
    }
    let (code, st) = t.delete(&format!("{JOBS}/missing"), None).await;
    assert_eq!((code, st["reason"].as_str()), (404, Some("NotFound")));
    let (code, st) = t.get("/apis/nonsense/v9/things").await;
    assert_eq!((code, st["reason"].as_str()), (404, Some("NotFound")));

    // Validation: a Job's pods must not restart in place.
    let mut bad = job_body("bad", 1);
    bad["spec"]["template"]["spec"].as_object_mut().unwrap().remove("restartPolicy");
    let (code, st) = t.post(JOBS, &bad).await;
    assert_eq!(code, 422);
    assert_eq!(st["reason"], "Invalid");
    assert!(st["message"].as_str().unwrap().contains("spec.template.spec.restartPolicy"), "{st}");
    let (code, st) = t.post(JOBS, &json!({"spec": {}})).await;
    assert_eq!((code, st["reason"].as_str()), (422, Some("Invalid")));
}

#[tokio::test]
async fn injected_failures_and_request_log() {
    let t = T::new().await;
    t.c.fail_next_requests(2, 500);
    for _ in 0..2 {
        let (code, st) = t.post(JOBS, &job_body("flaky", 1)).await;
        assert_eq!(code, 500);
        assert_eq!(st["kind"], "Status");
        assert_eq!(st["reason"], "InternalError");
        assert_eq!(st["code"], 500);
    }
    assert!(t.c.jobs().is_empty(), "failed requests must not change state");
    assert_eq!(t.post(JOBS, &job_body("flaky", 1)).await.0, 201);
    t.c.fail_next_requests(1, 503);
    assert_eq!(t.get(JOBS).await.0, 503);
    assert_eq!(t.get(JOBS).await.0, 200);
    let (code, v) = t.get("/version").await;
    assert_eq!(code, 200);
    assert_eq!(v["gitVersion"], "v1.33.0-fake");
    let log = t.c.request_log();
    assert_eq!(
        log,
        [
            "POST /apis/batch/v1/namespaces/default/jobs",
            "POST /apis/batch/v1/namespaces/default/jobs",
            "POST /apis/batch/v1/namespaces/default/jobs",
            "GET /apis/batch/v1/namespaces/default/jobs",
            "GET /apis/batch/v1/namespaces/default/jobs",
            "GET /version",
        ]
    );
}

#[tokio::test]
async fn preemption_fails_the_job_with_pod_failure_policy() {
    let t = T::new().await;
    t.post(JOBS, &job_body("pre", 2)).await;
    wait_until("Running", || t.pods_of("pre").iter().all(|p| p["status"]["phase"] == "Running")).await;
    assert_eq!(t.c.preempt_pods("job-name=pre,batch.kubernetes.io/job-completion-index=0"), 1);
    let pods = t.c.pods();
    let pre = pods.iter().find(|p| p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == "0").unwrap();
    assert_eq!(pre["status"]["phase"], "Failed");
    assert_eq!(pre["status"]["reason"], "Preempted");
    assert_eq!(condition(pre, "DisruptionTarget").unwrap()["status"], "True");
    let job = t.job("pre");
    let failed = condition(&job, "Failed").unwrap();
    assert_eq!(failed["reason"], "PodFailurePolicy");
    assert!(failed["message"].as_str().unwrap().contains("preempted"), "{failed}");
    assert!(failed["message"].as_str().unwrap().contains("DisruptionTarget"), "{failed}");
    // The other, still-running pod was terminated by the job controller.
    assert_eq!(t.pods_of("pre").len(), 1);
}

#[tokio::test]
async fn pod_failure_policy_ignore_replaces_preempted_pod() {
    let t = T::new().await;
    let mut body = job_body("resilient", 1);
    body["spec"]["podFailurePolicy"] = json!({"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
        {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
    ]});
    t.post(JOBS, &body).await;
    t.c.preempt_pods("job-name=resilient");
    let pods = t.pods_of("resilient");
    assert_eq!(pods.len(), 2, "preempted pod kept, replacement created");
    assert!(condition(&t.job("resilient"), "Failed").is_none());
    t.c.finish_pods("job-name=resilient", 42);
    let failed = condition(&t.job("resilient"), "Failed").cloned().unwrap();
    assert_eq!(failed["reason"], "PodFailurePolicy");
    assert!(
        failed["message"].as_str().unwrap().contains("failed with exit code 42 matching FailJob rule at index 1"),
        "{failed}"
    );
}

#[tokio::test]
async fn watch_streams_events() {
    let t = T::new().await;
    t.post(JOBS, &job_body("w1", 1)).await;
    let url = format!("{}{PODS}?watch=true&timeoutSeconds=1&labelSelector=job-name%3Dw1", t.c.url());
    let resp = tokio::spawn({
        let http = t.http.clone();
        async move { http.get(url).send().await.unwrap().text().await.unwrap() }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    t.c.finish_pods("job-name=w1", 0);
    let text = resp.await.unwrap();
    let events: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events[0]["type"], "ADDED");
    assert_eq!(events[0]["object"]["kind"], "Pod");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "MODIFIED");
    assert_eq!(last["object"]["status"]["phase"], "Succeeded");
    assert!(events.iter().all(|e| e["object"]["metadata"]["labels"]["job-name"] == "w1"));
}

#[tokio::test]
async fn shutdown_stops_serving() {
    let t = T::new().await;
    assert_eq!(t.get("/version").await.0, 200);
    t.c.shutdown();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let r = t.http.get(format!("{}/version", t.c.url())).timeout(Duration::from_secs(2)).send().await;
    assert!(r.is_err(), "server still answering after shutdown: {r:?}");
}
