//! Rendering a [`Submission`] as the Kubernetes object that runs it: pure, no I/O, deterministic (the same
//! submission always gives the same JSON, byte for byte once pretty-printed).
//!
//! Shape (after xpk's JobSet, research brief `jobs.md` §1.1–1.3):
//!
//! - **one host** (`resolved.hosts == 1`: a CPU job, a GPU node, a single-host TPU slice such as `v4-8`,
//!   `v5p-8`, `v6e-1`): a `batch/v1` **Job**, `parallelism = completions = 1`;
//! - **more hosts** (a multi-host TPU slice such as `v6e-8` = 2 hosts × 4 chips, or `slices > 1`): a
//!   `jobset.x-k8s.io/v1alpha2` **JobSet** with one replicatedJob named [`REPLICATED_JOB`] (`slice`),
//!   `replicas = spec.resources.slices`, each child Job `parallelism = completions = hosts per slice`,
//!   `completionMode: Indexed`; `failurePolicy.maxRestarts: 0`. TPU JobSets carry xpk's annotation
//!   `alpha.jobset.sigs.k8s.io/exclusive-topology: cloud.google.com/gke-nodepool` (one slice per node pool).
//!
//! Every Job (single or child) has `backoffLimit: 0` and a `podFailurePolicy` that fails it at once when a pod
//! gets the `DisruptionTarget` condition, so a preemption is told apart from a crash by the Job's failure
//! reason (`PodFailurePolicy`) even after the preempted pod is gone. Falcon owns retries, so Kubernetes retries
//! nothing. Pods: `restartPolicy: Never`, one container named [`CONTAINER`] (`workload`) with the spec's image,
//! command and environment plus `FALCON_JOB_ID`, `FALCON_JOB_NAME` (the object name, as on the local backend)
//! and `FALCON_JOB_ATTEMPT`.
//!
//! Placement (GKE labels and taints, `jobs.md` §1.2):
//!
//! | platform | nodeSelector | container resources | toleration |
//! |---|---|---|---|
//! | TPU | `cloud.google.com/gke-tpu-accelerator: <gke_accelerator>`, `cloud.google.com/gke-tpu-topology: <topology>` | limits `google.com/tpu: <chips per host>` | `google.com/tpu` Exists NoSchedule |
//! | GPU | `cloud.google.com/gke-accelerator: <gke_accelerator>` | limits `nvidia.com/gpu: <chips per host>` | `nvidia.com/gpu` Exists NoSchedule |
//! | CPU | — | requests `cpu: <devices>` | — |
//!
//! Capacity type, as chosen here:
//!
//! - `on_demand`: nothing added;
//! - `spot`: nodeSelector `cloud.google.com/gke-spot: "true"` and a toleration for the GKE spot taint
//!   (`cloud.google.com/gke-spot` Equal `"true"` NoSchedule);
//! - `reservation`: nodeSelector `cloud.google.com/reservation-name: <spec.resources.reservation>`;
//! - `flex` (flex-start / Dynamic Workload Scheduler): nodeSelector `cloud.google.com/gke-queued: "true"` and a
//!   toleration for the queued-provisioning taint (`cloud.google.com/gke-queued` Equal `"true"` NoSchedule).
//!   The cluster must turn the pending pods into a provisioning request (xpk does it with Kueue's `dws-prov`
//!   admission check, `jobs.md` §1.5); without that the pods stay unschedulable and Falcon fails over.
//!
//! Labels on the object, on child Job templates and on pod templates: `falcon.dev/job-id`, `falcon.dev/name`
//! (the object name), `falcon.dev/attempt`, plus the spec's labels with keys and values rewritten into valid
//! label syntax (Falcon's own labels win on a clash). Optional pool settings: `kueue_queue` adds the label
//! `kueue.x-k8s.io/queue-name` to the top object; `service_account` sets the pods' `serviceAccountName`.
//! `ttlSecondsAfterFinished` is [`TTL_SECONDS_AFTER_FINISHED`] (7 days) on the Job or JobSet: Falcon copies
//! logs itself, the object only lingers for people to look at.

use crate::backend::Submission;
use crate::spec::CapacityType;
use falcon_core::config::Platform;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Label: the Falcon job id (`j-12`).
pub const LABEL_JOB_ID: &str = "falcon.dev/job-id";
/// Label: the backend object name (`train-a1-gke-east`).
pub const LABEL_NAME: &str = "falcon.dev/name";
/// Label: the attempt number.
pub const LABEL_ATTEMPT: &str = "falcon.dev/attempt";
/// The one container of every pod.
pub const CONTAINER: &str = "workload";
/// The replicatedJob of a JobSet.
pub const REPLICATED_JOB: &str = "slice";
/// JobSet API version.
pub const JOBSET_API_VERSION: &str = "jobset.x-k8s.io/v1alpha2";
/// How long a finished Job or JobSet is kept: 7 days.
pub const TTL_SECONDS_AFTER_FINISHED: i64 = 7 * 24 * 3600;
/// Longest label value and label-key name part.
const MAX_LABEL: usize = 63;

/// What a submission becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    /// `batch/v1` Job (one host).
    Job,
    /// `jobset.x-k8s.io/v1alpha2` JobSet (more than one host).
    JobSet,
}

impl ObjectKind {
    /// The kind a submission becomes: a Job for one host, a JobSet otherwise.
    pub fn of(sub: &Submission<'_>) -> ObjectKind {
        if sub.resolved.hosts <= 1 {
            ObjectKind::Job
        } else {
            ObjectKind::JobSet
        }
    }

    /// `job` or `jobset`: the prefix of a backend handle (`job/<name>`).
    pub fn prefix(self) -> &'static str {
        match self {
            ObjectKind::Job => "job",
            ObjectKind::JobSet => "jobset",
        }
    }
}

/// The Job or JobSet for a submission, as JSON (see the module docs for the shape). Pure and deterministic.
pub fn manifest(sub: &Submission<'_>, namespace: &str) -> Value {
    let labels = labels(sub);
    let pod = json!({
        "metadata": {"labels": labels},
        "spec": pod_spec(sub),
    });
    let accel = &sub.resolved.accelerator;
    match ObjectKind::of(sub) {
        ObjectKind::Job => json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": object_metadata(sub, namespace, &labels, None),
            "spec": {
                "parallelism": 1,
                "completions": 1,
                "backoffLimit": 0,
                "podFailurePolicy": pod_failure_policy(),
                "ttlSecondsAfterFinished": TTL_SECONDS_AFTER_FINISHED,
                "template": pod,
            },
        }),
        ObjectKind::JobSet => {
            let hosts = accel.hosts.max(1);
            let annotations = (accel.platform == Platform::Tpu)
                .then(|| json!({"alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"}));
            json!({
                "apiVersion": JOBSET_API_VERSION,
                "kind": "JobSet",
                "metadata": object_metadata(sub, namespace, &labels, annotations),
                "spec": {
                    "failurePolicy": {"maxRestarts": 0},
                    "ttlSecondsAfterFinished": TTL_SECONDS_AFTER_FINISHED,
                    "replicatedJobs": [{
                        "name": REPLICATED_JOB,
                        "replicas": sub.spec.resources.slices,
                        "template": {
                            "metadata": {"labels": labels},
                            "spec": {
                                "parallelism": hosts,
                                "completions": hosts,
                                "completionMode": "Indexed",
                                "backoffLimit": 0,
                                "podFailurePolicy": pod_failure_policy(),
                                "template": pod,
                            },
                        },
                    }],
                },
            })
        }
    }
}

/// The longest object name a submission may have: 63 for a Job; for a JobSet, short enough that the pod
/// host names `<name>-slice-<job index>-<pod index>` stay within 63 characters (the JobSet webhook refuses
/// longer ones).
pub fn max_name_len(sub: &Submission<'_>) -> usize {
    match ObjectKind::of(sub) {
        ObjectKind::Job => MAX_LABEL,
        ObjectKind::JobSet => {
            let digits = |n: u32| n.saturating_sub(1).to_string().len();
            let suffix = 1
                + REPLICATED_JOB.len()
                + 1
                + digits(sub.spec.resources.slices)
                + 1
                + digits(sub.resolved.accelerator.hosts);
            MAX_LABEL.saturating_sub(suffix)
        }
    }
}

fn object_metadata(
    sub: &Submission<'_>,
    namespace: &str,
    labels: &Map<String, Value>,
    annotations: Option<Value>,
) -> Value {
    let mut labels = labels.clone();
    if let Some(queue) = sub.pool.setting("kueue_queue") {
        labels.insert("kueue.x-k8s.io/queue-name".into(), json!(label_value(queue)));
    }
    let mut meta = json!({"name": sub.name, "namespace": namespace, "labels": labels});
    if let Some(annotations) = annotations {
        meta["annotations"] = annotations;
    }
    meta
}

/// Fails the Job at once when a pod is disrupted (preemption, eviction, node shutdown).
fn pod_failure_policy() -> Value {
    json!({"rules": [{"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]})
}

/// Spec labels (sanitized), then Falcon's.
fn labels(sub: &Submission<'_>) -> Map<String, Value> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for (key, value) in &sub.spec.labels {
        if let Some(key) = label_key(key) {
            out.insert(key, label_value(value));
        }
    }
    out.insert(LABEL_JOB_ID.into(), label_value(&sub.job.to_string()));
    out.insert(LABEL_NAME.into(), label_value(&sub.name));
    out.insert(LABEL_ATTEMPT.into(), sub.attempt.to_string());
    out.into_iter().map(|(k, v)| (k, Value::String(v))).collect()
}

fn pod_spec(sub: &Submission<'_>) -> Value {
    let accel = &sub.resolved.accelerator;
    let mut node_selector: BTreeMap<&str, String> = BTreeMap::new();
    let mut tolerations: Vec<Value> = Vec::new();
    let mut resources = json!({});
    match accel.platform {
        Platform::Tpu => {
            if let Some(gke) = accel.gke_accelerator {
                node_selector.insert("cloud.google.com/gke-tpu-accelerator", gke.to_string());
            }
            if let Some(topology) = &accel.topology {
                node_selector.insert("cloud.google.com/gke-tpu-topology", topology.clone());
            }
        }
        Platform::Gpu => {
            if let Some(gke) = accel.gke_accelerator {
                node_selector.insert("cloud.google.com/gke-accelerator", gke.to_string());
            }
        }
        Platform::Cpu => resources = json!({"requests": {"cpu": sub.resolved.chips.to_string()}}),
    }
    if let Some(device) = accel.k8s_resource() {
        resources = json!({"limits": {device: accel.chips_per_host.to_string()}});
        tolerations.push(json!({"key": device, "operator": "Exists", "effect": "NoSchedule"}));
    }
    match sub.spec.resources.capacity {
        CapacityType::OnDemand => {}
        CapacityType::Spot => {
            node_selector.insert("cloud.google.com/gke-spot", "true".into());
            tolerations.push(json!({"key": "cloud.google.com/gke-spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}));
        }
        CapacityType::Reservation => {
            let name = sub.spec.resources.reservation.as_deref().unwrap_or_default();
            node_selector.insert("cloud.google.com/reservation-name", label_value(name));
        }
        CapacityType::Flex => {
            node_selector.insert("cloud.google.com/gke-queued", "true".into());
            tolerations.push(json!({"key": "cloud.google.com/gke-queued", "operator": "Equal", "value": "true", "effect": "NoSchedule"}));
        }
    }
    let mut container = json!({
        "name": CONTAINER,
        "command": sub.spec.command,
        "env": env(sub),
        "resources": resources,
    });
    if let Some(image) = &sub.spec.image {
        container["image"] = json!(image);
    }
    let mut spec = json!({"restartPolicy": "Never", "containers": [container]});
    if !node_selector.is_empty() {
        spec["nodeSelector"] = json!(node_selector);
    }
    if !tolerations.is_empty() {
        spec["tolerations"] = json!(tolerations);
    }
    if let Some(account) = sub.pool.setting("service_account") {
        spec["serviceAccountName"] = json!(account);
    }
    spec
}

/// The spec's variables (sorted by name), then Falcon's, which replace any of the same name.
fn env(sub: &Submission<'_>) -> Vec<Value> {
    let falcon = [
        ("FALCON_JOB_ID", sub.job.to_string()),
        ("FALCON_JOB_NAME", sub.name.clone()),
        ("FALCON_JOB_ATTEMPT", sub.attempt.to_string()),
    ];
    let mut out: Vec<Value> = sub
        .spec
        .env
        .iter()
        .filter(|(name, _)| !falcon.iter().any(|(f, _)| f == name))
        .map(|(name, value)| json!({"name": name, "value": value}))
        .collect();
    out.extend(falcon.into_iter().map(|(name, value)| json!({"name": name, "value": value})));
    out
}

/// A valid label value: at most 63 characters of `[A-Za-z0-9-_.]`, starting and ending with a letter or digit
/// (or empty). Other characters become `-`.
pub fn label_value(raw: &str) -> String {
    let mapped: String = raw
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '-' })
        .take(MAX_LABEL)
        .collect();
    mapped.trim_matches(|c: char| !c.is_ascii_alphanumeric()).to_string()
}

/// A valid label key (`[prefix/]name`), or `None` when nothing usable is left. The name part follows
/// [`label_value`]'s rules; the prefix becomes a lowercase DNS subdomain of at most 253 characters.
pub fn label_key(raw: &str) -> Option<String> {
    let (prefix, name) = match raw.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, raw),
    };
    let name = label_value(name);
    if name.is_empty() {
        return None;
    }
    let prefix = prefix
        .map(|p| {
            let mapped: String = p
                .chars()
                .map(|c| c.to_ascii_lowercase())
                .map(|c| if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-' { c } else { '-' })
                .take(253)
                .collect();
            mapped.trim_matches(|c: char| !c.is_ascii_alphanumeric()).to_string()
        })
        .filter(|p| !p.is_empty());
    Some(match prefix {
        Some(prefix) => format!("{prefix}/{name}"),
        None => name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::Pool;
    use crate::spec::{JobSpec, Resources, RetryPolicy};
    use falcon_core::config::{PoolBackend, PoolConfig};
    use falcon_core::ids::JobId;
    use k8s_openapi::api::batch::v1::{Job, JobTemplateSpec};

    fn spec(accel: &str, slices: u32) -> JobSpec {
        JobSpec {
            name: "train".into(),
            image: Some("img:1".into()),
            command: vec!["python3".into(), "train.py".into()],
            env: BTreeMap::from([("FALCON_JOB_ID".into(), "spoofed".into()), ("LR".into(), "0.1".into())]),
            resources: Resources { capacity: CapacityType::Spot, ..Resources::of(accel, slices) },
            artifact_uri: None,
            timeout_s: None,
            priority: 0,
            retry: RetryPolicy::default(),
            labels: BTreeMap::from([("Team Name".into(), "ML Perf!".into()), ("falcon.dev/name".into(), "x".into())]),
        }
    }

    fn pool(platform: Platform, accel: &str) -> Pool {
        Pool::from_config(&PoolConfig {
            name: "gke".into(),
            backend: PoolBackend::Kubernetes,
            zone: "us-east5-b".into(),
            platform,
            accelerators: vec![accel.into()],
            capacity: 1024,
            settings: BTreeMap::new(),
        })
        .unwrap()
    }

    fn render(accel: &str, platform: Platform, slices: u32) -> Value {
        let spec = spec(accel, slices);
        let resolved = spec.resolve().unwrap();
        let pool = pool(platform, accel);
        let sub = Submission {
            job: JobId(3),
            name: "train-a1-gke".into(),
            spec: &spec,
            resolved: &resolved,
            attempt: 1,
            pool: &pool,
        };
        manifest(&sub, "ns")
    }

    #[test]
    fn a_job_manifest_is_a_valid_typed_job_and_round_trips() {
        let value = render("v6e-4", Platform::Tpu, 1);
        let job: Job = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(serde_json::to_value(&job).unwrap(), value, "no field is lost or misspelled");
        let env = &value["spec"]["template"]["spec"]["containers"][0]["env"];
        assert_eq!(env.as_array().unwrap().iter().filter(|e| e["name"] == "FALCON_JOB_ID").count(), 1);
        assert!(env.as_array().unwrap().iter().any(|e| e["name"] == "FALCON_JOB_ID" && e["value"] == "j-3"));
        let labels = &value["metadata"]["labels"];
        assert_eq!(labels["Team-Name"], "ML-Perf");
        assert_eq!(labels["falcon.dev/name"], "train-a1-gke", "Falcon's labels win");
        assert_eq!(value, render("v6e-4", Platform::Tpu, 1), "deterministic");
    }

    #[test]
    fn a_jobset_template_is_a_valid_typed_job_template() {
        let value = render("v6e-8", Platform::Tpu, 2);
        assert_eq!(value["kind"], "JobSet");
        let template = &value["spec"]["replicatedJobs"][0]["template"];
        let typed: JobTemplateSpec = serde_json::from_value(template.clone()).unwrap();
        assert_eq!(&serde_json::to_value(&typed).unwrap(), template);
        assert_eq!(value["spec"]["replicatedJobs"][0]["replicas"], 2);
        assert_eq!(template["spec"]["parallelism"], 2);
    }

    #[test]
    fn labels_are_sanitized() {
        assert_eq!(label_value("Hello World!"), "Hello-World");
        assert_eq!(label_value("--x--"), "x");
        assert_eq!(label_value(&"a".repeat(70)).len(), 63);
        assert_eq!(label_value(&format!("{}-b", "a".repeat(62))), "a".repeat(62));
        assert_eq!(label_value("ümlaut"), "mlaut");
        assert_eq!(label_key("Example.COM/My Key"), Some("example.com/My-Key".into()));
        assert_eq!(label_key("a/b/c"), Some("a-b/c".into()));
        assert_eq!(label_key("/x"), Some("x".into()));
        assert_eq!(label_key("!!!"), None);
    }
}
