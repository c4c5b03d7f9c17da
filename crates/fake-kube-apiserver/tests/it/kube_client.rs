//! Proves the FAKE API server speaks what kube-rs (with k8s-openapi types) sends
//! and expects: typed Jobs and Pods, logs, delete propagation, JobSets as
//! `DynamicObject`, and errors mapped to `kube::Error::Api`.

use std::time::Duration;

use fake_kube_apiserver::FakeCluster;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, LogParams, PostParams};
use kube::Client;
use serde_json::json;

fn client_for(cluster: &FakeCluster) -> Client {
    let config = kube::Config::new(cluster.url().parse().unwrap());
    Client::try_from(config).unwrap()
}

fn job(name: &str) -> Job {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "completionMode": "Indexed",
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"app": "falcon"}},
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {"cloud.google.com/gke-tpu-topology": "2x4"},
                    "containers": [{"name": "main", "image": "train:1", "command": ["python", "train.py"]}],
                },
            },
        },
    }))
    .unwrap()
}

async fn wait_running(pods: &Api<Pod>, lp: &ListParams, n: usize) -> Vec<Pod> {
    for _ in 0..200 {
        let list = pods.list(lp).await.unwrap();
        let running =
            list.items.iter().filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")).count();
        if running == n {
            return list.items;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("pods never reached Running");
}

#[tokio::test]
async fn kube_rs_job_lifecycle_against_the_fake() {
    let cluster = FakeCluster::start("kube-rs").await;
    let client = client_for(&cluster);
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");

    let created = jobs.create(&PostParams::default(), &job("train")).await.unwrap();
    assert_eq!(created.metadata.name.as_deref(), Some("train"));
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());

    // Duplicate create -> typed 409.
    match jobs.create(&PostParams::default(), &job("train")).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 409);
            assert_eq!(status.reason, "AlreadyExists");
        }
        other => panic!("expected 409, got {other:?}"),
    }
    // Missing -> typed 404.
    match jobs.get("missing").await {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (404, "NotFound"))
        }
        other => panic!("expected 404, got {other:?}"),
    }
    assert!(jobs.get_opt("missing").await.unwrap().is_none());

    let lp = ListParams::default().labels("job-name=train");
    let running = wait_running(&pods, &lp, 2).await;
    for p in &running {
        let labels = p.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["app"], "falcon");
        assert_eq!(labels["batch.kubernetes.io/job-name"], "train");
        let spec = p.spec.as_ref().unwrap();
        assert_eq!(spec.node_selector.as_ref().unwrap()["cloud.google.com/gke-tpu-topology"], "2x4");
    }

    let pod_name = running[0].metadata.name.clone().unwrap();
    cluster.append_log(&pod_name, "hello from the fake\n");
    let log = pods
        .logs(&pod_name, &LogParams { container: Some("main".into()), tail_lines: Some(100), ..LogParams::default() })
        .await
        .unwrap();
    assert!(log.contains("fake kubelet: started container main with command [python train.py]"), "{log}");
    assert!(log.ends_with("hello from the fake\n"), "{log}");

    cluster.finish_pods("job-name=train,batch.kubernetes.io/job-completion-index=0", 0);
    cluster.finish_pods("job-name=train,batch.kubernetes.io/job-completion-index=1", 7);
    let status = jobs.get_status("train").await.unwrap().status.unwrap();
    let failed =
        status.conditions.unwrap_or_default().into_iter().find(|c| c.type_ == "Failed").expect("Failed condition");
    assert_eq!(failed.status, "True");
    assert_eq!(status.succeeded, Some(1));
    assert_eq!(status.failed, Some(1));
    let after = pods.list(&lp).await.unwrap();
    let codes: Vec<i32> = after
        .items
        .iter()
        .map(|p| {
            p.status.as_ref().unwrap().container_statuses.as_ref().unwrap()[0]
                .state
                .as_ref()
                .unwrap()
                .terminated
                .as_ref()
                .unwrap()
                .exit_code
        })
        .collect();
    assert_eq!(codes, [0, 7]);

    let deleted = jobs.delete("train", &DeleteParams::background()).await.unwrap();
    assert!(deleted.left().is_some_and(|j| j.metadata.name.as_deref() == Some("train")));
    assert!(pods.list(&lp).await.unwrap().items.is_empty());
    assert!(jobs.list(&ListParams::default()).await.unwrap().items.is_empty());

    let requests = cluster.request_log();
    assert!(requests.contains(&"POST /apis/batch/v1/namespaces/default/jobs".to_string()));
    assert!(requests.contains(&"DELETE /apis/batch/v1/namespaces/default/jobs/train".to_string()));
    assert!(requests.contains(&format!("GET /api/v1/namespaces/default/pods/{pod_name}/log")));
}

#[tokio::test]
async fn kube_rs_jobset_as_dynamic_object() {
    let cluster = FakeCluster::start("kube-rs-jobset").await;
    let client = client_for(&cluster);
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("jobset.x-k8s.io", "v1alpha2", "JobSet"));
    let jobsets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");

    let template = serde_json::to_value(job("unused").spec.unwrap()).unwrap();
    let js = DynamicObject::new("multi", &ar).data(json!({
        "spec": {"replicatedJobs": [{"name": "slice", "replicas": 2, "template": {"spec": template}}]},
    }));
    jobsets.create(&PostParams::default(), &js).await.unwrap();
    let children = jobs.list(&ListParams::default().labels("jobset.sigs.k8s.io/jobset-name=multi")).await.unwrap();
    let names: Vec<_> = children.items.iter().filter_map(|j| j.metadata.name.clone()).collect();
    assert_eq!(names, ["multi-slice-0", "multi-slice-1"]);

    cluster.finish_pods("jobset.sigs.k8s.io/jobset-name=multi", 0);
    let got = jobsets.get_status("multi").await.unwrap();
    let conds = got.data["status"]["conditions"].as_array().unwrap();
    assert!(conds.iter().any(|c| c["type"] == "Completed" && c["status"] == "True"));

    jobsets.delete("multi", &DeleteParams::background()).await.unwrap();
    assert!(jobs.list(&ListParams::default()).await.unwrap().items.is_empty());
    assert!(cluster.pods().is_empty());
}

#[tokio::test]
async fn kube_rs_watch_sees_pod_transitions() {
    use futures::{StreamExt, TryStreamExt};
    use kube::api::{WatchEvent, WatchParams};

    let cluster = FakeCluster::start("kube-rs-watch").await;
    let client = client_for(&cluster);
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client, "default");
    jobs.create(&PostParams::default(), &job("watched")).await.unwrap();
    let list = pods.list(&ListParams::default().labels("job-name=watched")).await.unwrap();
    let rv = list.metadata.resource_version.clone().unwrap();
    assert_eq!(list.items.len(), 2);

    let wp = WatchParams::default().labels("job-name=watched").timeout(5);
    let mut stream = pods.watch(&wp, &rv).await.unwrap().boxed();
    cluster.finish_pods("job-name=watched", 0);
    let mut succeeded = std::collections::BTreeSet::new();
    while let Some(ev) = stream.try_next().await.unwrap() {
        match ev {
            WatchEvent::Added(p) | WatchEvent::Modified(p)
                if p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded") =>
            {
                succeeded.insert(p.metadata.name.unwrap());
            }
            WatchEvent::Error(e) => panic!("watch error: {e:?}"),
            _ => {}
        }
        if succeeded.len() == 2 {
            break;
        }
    }
    assert_eq!(succeeded.len(), 2);
}
