//! The fake's "controllers": a Job controller, a JobSet controller, a scheduler
//! and a kubelet, all simplified. They are level-triggered: `reconcile` looks at
//! the whole store and moves it one step towards the desired state, and runs
//! after every change.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::selector::{labels_of, LabelSelector};
use crate::store::{invalid, is_owned_by, key, name_of, obj_mut, uid_of, Inner, Key, PodRuntime, Res};
use crate::util::{now_rfc3339, random_suffix, ApiError};

/// The message a pod gets while the fake cluster is "out of TPUs".
pub const UNSCHEDULABLE_MESSAGE: &str = "0/3 nodes are available: 3 Insufficient google.com/tpu.";
/// How long after scheduling the fake kubelet starts a pod's containers (auto-run).
pub const START_DELAY: Duration = Duration::from_millis(200);
const NODES: usize = 3;

pub(crate) const LABEL_JOB_NAME: &str = "job-name";
pub(crate) const LABEL_BATCH_JOB_NAME: &str = "batch.kubernetes.io/job-name";
pub(crate) const LABEL_INDEX: &str = "batch.kubernetes.io/job-completion-index";
pub(crate) const LABEL_CONTROLLER_UID: &str = "controller-uid";
pub(crate) const LABEL_BATCH_CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
pub(crate) const LABEL_JOBSET_NAME: &str = "jobset.sigs.k8s.io/jobset-name";
pub(crate) const LABEL_RJ_NAME: &str = "jobset.sigs.k8s.io/replicatedjob-name";
pub(crate) const LABEL_RJ_REPLICAS: &str = "jobset.sigs.k8s.io/replicatedjob-replicas";
pub(crate) const LABEL_JOB_INDEX: &str = "jobset.sigs.k8s.io/job-index";
pub(crate) const LABEL_JOB_GLOBAL_INDEX: &str = "jobset.sigs.k8s.io/job-global-index";
pub(crate) const LABEL_RESTART_ATTEMPT: &str = "jobset.sigs.k8s.io/restart-attempt";

fn str_at<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    v.pointer(ptr).and_then(Value::as_str)
}

fn i64_at(v: &Value, ptr: &str) -> Option<i64> {
    v.pointer(ptr).and_then(Value::as_i64)
}

fn phase(pod: &Value) -> &str {
    str_at(pod, "/status/phase").unwrap_or("Pending")
}

fn is_terminal_phase(p: &str) -> bool {
    p == "Succeeded" || p == "Failed"
}

fn has_condition(obj: &Value, ctype: &str, status: &str) -> bool {
    obj.pointer("/status/conditions").and_then(Value::as_array).is_some_and(|cs| {
        cs.iter().any(|c| {
            c.get("type").and_then(Value::as_str) == Some(ctype)
                && c.get("status").and_then(Value::as_str) == Some(status)
        })
    })
}

fn cond(ctype: &str, status: &str, reason: Option<&str>, message: Option<&str>, now: &str) -> Value {
    let mut c = json!({
        "type": ctype,
        "status": status,
        "lastProbeTime": null,
        "lastTransitionTime": now,
    });
    if let Some(r) = reason {
        c["reason"] = json!(r);
    }
    if let Some(m) = message {
        c["message"] = json!(m);
    }
    c
}

fn containers(pod: &Value) -> Vec<Value> {
    pod.pointer("/spec/containers").and_then(Value::as_array).cloned().unwrap_or_default()
}

fn container_names(pod: &Value) -> Vec<String> {
    containers(pod).iter().map(|c| c.get("name").and_then(Value::as_str).unwrap_or("").to_string()).collect()
}

fn container_status_base(c: &Value) -> Value {
    json!({
        "name": c.get("name").and_then(Value::as_str).unwrap_or(""),
        "image": c.get("image").and_then(Value::as_str).unwrap_or(""),
        "imageID": "",
        "restartCount": 0,
    })
}

/// `[python train.py --x]`, like the Go `%v` of the command+args slice.
fn command_line(c: &Value) -> String {
    let parts: Vec<String> = ["command", "args"]
        .iter()
        .filter_map(|f| c.get(*f).and_then(Value::as_array))
        .flatten()
        .map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))
        .collect();
    format!("[{}]", parts.join(" "))
}

// ---------------------------------------------------------------- pod states

fn set_pod_unschedulable(pod: &mut Value, now: &str) {
    pod["status"] = json!({
        "phase": "Pending",
        "qosClass": "BestEffort",
        "conditions": [cond("PodScheduled", "False", Some("Unschedulable"), Some(UNSCHEDULABLE_MESSAGE), now)],
    });
}

fn set_pod_scheduled(pod: &mut Value, node: &str, now: &str) {
    obj_mut(pod, "spec").insert("nodeName".into(), json!(node));
    let names = container_names(pod).join(" ");
    let unready = format!("containers with unready status: [{names}]");
    let statuses: Vec<Value> = containers(pod)
        .iter()
        .map(|c| {
            let mut s = container_status_base(c);
            s["ready"] = json!(false);
            s["started"] = json!(false);
            s["state"] = json!({"waiting": {"reason": "ContainerCreating"}});
            s
        })
        .collect();
    pod["status"] = json!({
        "phase": "Pending",
        "qosClass": "BestEffort",
        "startTime": now,
        "conditions": [
            cond("PodReadyToStartContainers", "False", None, None, now),
            cond("Initialized", "True", None, None, now),
            cond("Ready", "False", Some("ContainersNotReady"), Some(&unready), now),
            cond("ContainersReady", "False", Some("ContainersNotReady"), Some(&unready), now),
            cond("PodScheduled", "True", None, None, now),
        ],
        "containerStatuses": statuses,
    });
}

fn set_pod_running(pod: &mut Value, started_at: &str) {
    let statuses: Vec<Value> = containers(pod)
        .iter()
        .map(|c| {
            let mut s = container_status_base(c);
            s["ready"] = json!(true);
            s["started"] = json!(true);
            s["containerID"] = json!(format!("fake://{}", crate::util::new_uid()));
            s["state"] = json!({"running": {"startedAt": started_at}});
            s
        })
        .collect();
    let start_time = str_at(pod, "/status/startTime").unwrap_or(started_at).to_string();
    pod["status"] = json!({
        "phase": "Running",
        "qosClass": "BestEffort",
        "startTime": start_time,
        "conditions": [
            cond("PodReadyToStartContainers", "True", None, None, started_at),
            cond("Initialized", "True", None, None, started_at),
            cond("Ready", "True", None, None, started_at),
            cond("ContainersReady", "True", None, None, started_at),
            cond("PodScheduled", "True", None, None, started_at),
        ],
        "containerStatuses": statuses,
    });
}

fn set_pod_terminated(pod: &mut Value, exit_code: i32, preempted: bool, started_at: &str, now: &str) {
    let failed = preempted || exit_code != 0;
    let why = if failed { "PodFailed" } else { "PodCompleted" };
    let old_statuses = pod.pointer("/status/containerStatuses").and_then(Value::as_array).cloned().unwrap_or_default();
    let statuses: Vec<Value> = containers(pod)
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let code = if preempted {
                137
            } else if i == 0 {
                exit_code
            } else {
                0
            };
            let mut s = container_status_base(c);
            s["ready"] = json!(false);
            s["started"] = json!(false);
            let cid = old_statuses
                .get(i)
                .and_then(|o| o.get("containerID"))
                .cloned()
                .unwrap_or_else(|| json!(format!("fake://{}", crate::util::new_uid())));
            s["containerID"] = cid.clone();
            s["state"] = json!({"terminated": {
                "exitCode": code,
                "reason": if code == 0 { "Completed" } else { "Error" },
                "startedAt": started_at,
                "finishedAt": now,
                "containerID": cid,
            }});
            s
        })
        .collect();
    let mut conditions = vec![
        cond("PodReadyToStartContainers", "False", None, None, now),
        cond("Initialized", "True", Some(why), None, now),
        cond("Ready", "False", Some(why), None, now),
        cond("ContainersReady", "False", Some(why), None, now),
        cond("PodScheduled", "True", None, None, now),
    ];
    if preempted {
        conditions.insert(
            0,
            cond(
                "DisruptionTarget",
                "True",
                Some("PreemptionByScheduler"),
                Some("fake-kube-apiserver: the pod was preempted (simulated preemption of its node)"),
                now,
            ),
        );
    }
    let start_time = str_at(pod, "/status/startTime").unwrap_or(started_at).to_string();
    let mut status = json!({
        "phase": if failed { "Failed" } else { "Succeeded" },
        "qosClass": "BestEffort",
        "startTime": start_time,
        "conditions": conditions,
        "containerStatuses": statuses,
    });
    if preempted {
        status["reason"] = json!("Preempted");
        status["message"] =
            json!("Preempted in order to admit critical pod (fake-kube-apiserver simulated preemption)");
    }
    pod["status"] = status;
}

// ---------------------------------------------------------------- validation & defaults

type Cause = (String, &'static str, String);

fn validate_pod_spec(spec: Option<&Value>, prefix: &str, for_job: bool, causes: &mut Vec<Cause>) {
    let Some(spec) = spec.filter(|s| s.is_object()) else {
        causes.push((prefix.to_string(), "FieldValueRequired", "Required value".into()));
        return;
    };
    match spec.get("containers").and_then(Value::as_array) {
        Some(cs) if !cs.is_empty() => {
            for (i, c) in cs.iter().enumerate() {
                if c.get("name").and_then(Value::as_str).is_none_or(str::is_empty) {
                    causes.push((
                        format!("{prefix}.containers[{i}].name"),
                        "FieldValueRequired",
                        "Required value".into(),
                    ));
                }
                if c.get("image").and_then(Value::as_str).is_none_or(str::is_empty) {
                    causes.push((
                        format!("{prefix}.containers[{i}].image"),
                        "FieldValueRequired",
                        "Required value".into(),
                    ));
                }
            }
        }
        _ => causes.push((format!("{prefix}.containers"), "FieldValueRequired", "Required value".into())),
    }
    if for_job {
        match spec.get("restartPolicy").and_then(Value::as_str) {
            Some("Never") | Some("OnFailure") => {}
            None | Some("") => causes.push((
                format!("{prefix}.restartPolicy"),
                "FieldValueRequired",
                "Required value: valid values: \"OnFailure\", \"Never\"".into(),
            )),
            Some(other) => causes.push((
                format!("{prefix}.restartPolicy"),
                "FieldValueNotSupported",
                format!("Unsupported value: \"{other}\": supported values: \"OnFailure\", \"Never\""),
            )),
        }
    }
}

fn validate_job_spec(spec: Option<&Value>, prefix: &str, causes: &mut Vec<Cause>) {
    let Some(spec) = spec.filter(|s| s.is_object()) else {
        causes.push((prefix.to_string(), "FieldValueRequired", "Required value".into()));
        return;
    };
    for f in ["parallelism", "completions", "backoffLimit"] {
        if let Some(v) = spec.get(f).filter(|v| !v.is_null()) {
            if v.as_i64().is_none_or(|n| n < 0) {
                causes.push((
                    format!("{prefix}.{f}"),
                    "FieldValueInvalid",
                    format!("Invalid value: {v}: must be greater than or equal to 0"),
                ));
            }
        }
    }
    if spec.get("completionMode").and_then(Value::as_str) == Some("Indexed")
        && spec.get("completions").is_none_or(Value::is_null)
    {
        causes.push((
            format!("{prefix}.completions"),
            "FieldValueRequired",
            "Required value: when completion mode is Indexed".into(),
        ));
    }
    validate_pod_spec(spec.pointer("/template/spec"), &format!("{prefix}.template.spec"), true, causes);
}

fn causes_to_error(res: Res, name: &str, causes: Vec<Cause>) -> ApiError {
    invalid(res, name, causes.iter().map(|(f, r, m)| (f.as_str(), *r, m.clone())).collect())
}

fn label_map(v: &Value, ptr: &str) -> Map<String, Value> {
    v.pointer(ptr).and_then(Value::as_object).cloned().unwrap_or_default()
}

/// Defaulting the API server and the Job controller do on create.
fn default_job(job: &mut Value) {
    let uid = uid_of(job).unwrap_or_default().to_string();
    let name = name_of(job).to_string();
    let spec = obj_mut(job, "spec");
    let parallelism_unset = spec.get("parallelism").is_none_or(Value::is_null);
    let completions_unset = spec.get("completions").is_none_or(Value::is_null);
    if parallelism_unset {
        spec.insert("parallelism".into(), json!(1));
        if completions_unset {
            spec.insert("completions".into(), json!(1));
        }
    }
    spec.entry("backoffLimit").or_insert(json!(6));
    spec.entry("completionMode").or_insert(json!("NonIndexed"));
    spec.entry("suspend").or_insert(json!(false));
    let has_pfp = spec.get("podFailurePolicy").is_some_and(|p| !p.is_null());
    spec.entry("podReplacementPolicy").or_insert(json!(if has_pfp { "Failed" } else { "TerminatingOrFailed" }));
    spec.entry("manualSelector").or_insert(json!(false));
    let user_template_labels = label_map(job, "/spec/template/metadata/labels");
    {
        let template = obj_mut(&mut job["spec"], "template");
        if !template.get("metadata").is_some_and(Value::is_object) {
            template.insert("metadata".into(), json!({}));
        }
        let tmeta = template["metadata"].as_object_mut().expect("object");
        if !tmeta.get("labels").is_some_and(Value::is_object) {
            tmeta.insert("labels".into(), json!({}));
        }
        let labels = tmeta["labels"].as_object_mut().expect("object");
        labels.insert(LABEL_BATCH_CONTROLLER_UID.into(), json!(uid));
        labels.insert(LABEL_BATCH_JOB_NAME.into(), json!(name));
        labels.insert(LABEL_CONTROLLER_UID.into(), json!(uid));
        labels.insert(LABEL_JOB_NAME.into(), json!(name));
    }
    job["spec"]
        .as_object_mut()
        .expect("object")
        .entry("selector")
        .or_insert(json!({"matchLabels": {LABEL_BATCH_CONTROLLER_UID: uid}}));
    let meta = obj_mut(job, "metadata");
    if meta.get("labels").and_then(Value::as_object).is_none_or(Map::is_empty) && !user_template_labels.is_empty() {
        meta.insert("labels".into(), Value::Object(user_template_labels));
    }
    job["status"] = json!({});
}

fn merge_into(dst: &mut Value, ptr_parent: &[&str], extra: &Map<String, Value>) {
    let mut cur = dst;
    for seg in ptr_parent {
        if !cur.get(*seg).is_some_and(Value::is_object) {
            cur[*seg] = json!({});
        }
        cur = &mut cur[*seg];
    }
    let m = cur.as_object_mut().expect("object");
    for (k, v) in extra {
        m.insert(k.clone(), v.clone());
    }
}

// ---------------------------------------------------------------- pod failure policy

enum Verdict {
    Ignore,
    Fail { reason: String, message: String },
}

fn failure_verdict(job: &Value, pod: &Value, ns: &str) -> Verdict {
    let pod_name = name_of(pod);
    let preempted =
        has_condition(pod, "DisruptionTarget", "True") || str_at(pod, "/status/reason") == Some("Preempted");
    let preempt_note = if preempted { "; the pod was preempted" } else { "" };
    let failed_containers: Vec<(String, i64)> = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .map(|ss| {
            ss.iter()
                .filter_map(|s| {
                    let code = s.pointer("/state/terminated/exitCode")?.as_i64()?;
                    let name = s.get("name")?.as_str()?.to_string();
                    (code != 0).then_some((name, code))
                })
                .collect()
        })
        .unwrap_or_default();
    let rules = job.pointer("/spec/podFailurePolicy/rules").and_then(Value::as_array).cloned().unwrap_or_default();
    for (i, rule) in rules.iter().enumerate() {
        let action = rule.get("action").and_then(Value::as_str).unwrap_or("");
        let mut hit: Option<String> = None;
        if let Some(oec) = rule.get("onExitCodes").filter(|v| v.is_object()) {
            let cname = oec.get("containerName").and_then(Value::as_str);
            let op_in = oec.get("operator").and_then(Value::as_str) != Some("NotIn");
            let values: Vec<i64> = oec
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_i64).collect())
                .unwrap_or_default();
            for (c, code) in &failed_containers {
                if cname.is_some_and(|want| want != c) {
                    continue;
                }
                if values.contains(code) == op_in {
                    hit = Some(format!(
                        "Container {c} for pod {ns}/{pod_name} failed with exit code {code} matching {action} rule at index {i}"
                    ));
                    break;
                }
            }
        }
        if hit.is_none() {
            if let Some(pats) = rule.get("onPodConditions").and_then(Value::as_array) {
                for p in pats {
                    let ctype = p.get("type").and_then(Value::as_str).unwrap_or("");
                    let status = p.get("status").and_then(Value::as_str).unwrap_or("True");
                    if has_condition(pod, ctype, status) {
                        hit = Some(format!(
                            "Pod {ns}/{pod_name} has condition {ctype} matching {action} rule at index {i}"
                        ));
                        break;
                    }
                }
            }
        }
        if let Some(msg) = hit {
            match action {
                "Ignore" => return Verdict::Ignore,
                "FailJob" => {
                    return Verdict::Fail { reason: "PodFailurePolicy".into(), message: format!("{msg}{preempt_note}") }
                }
                // Count / FailIndex: fall through to the default accounting.
                _ => break,
            }
        }
    }
    if preempted {
        Verdict::Fail {
            reason: "PodFailurePolicy".into(),
            message: format!(
                "Pod {ns}/{pod_name} has condition DisruptionTarget matching FailJob rule (fake default){preempt_note}"
            ),
        }
    } else {
        Verdict::Fail {
            reason: "BackoffLimitExceeded".into(),
            message: "Job has reached the specified backoff limit".into(),
        }
    }
}

fn index_ranges(idx: &std::collections::BTreeSet<u32>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut iter = idx.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end += 1;
            iter.next();
        }
        out.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
    }
    out.join(",")
}

// ---------------------------------------------------------------- the controllers

impl Inner {
    /// POST a Job (from a client or from the JobSet controller).
    pub fn create_job(&mut self, ns: &str, mut body: Value) -> Result<Value, ApiError> {
        let name = body.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
        let mut causes = Vec::new();
        validate_job_spec(body.get("spec"), "spec", &mut causes);
        if !causes.is_empty() {
            return Err(causes_to_error(Res::Job, &name, causes));
        }
        if let Some(m) = body.as_object_mut() {
            m.remove("status");
        }
        self.create(Res::Job, ns, body, |_, job| {
            default_job(job);
            Ok(())
        })
    }

    /// POST a bare Pod (not owned by a Job).
    pub fn create_bare_pod(&mut self, ns: &str, body: Value) -> Result<Value, ApiError> {
        let name = body.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
        let mut causes = Vec::new();
        validate_pod_spec(body.get("spec"), "spec", false, &mut causes);
        if !causes.is_empty() {
            return Err(causes_to_error(Res::Pod, &name, causes));
        }
        self.create_pod(ns, body)
    }

    fn create_pod(&mut self, ns: &str, body: Value) -> Result<Value, ApiError> {
        self.create(Res::Pod, ns, body, |inner, pod| {
            let now = now_rfc3339();
            let mut rt = PodRuntime::default();
            if inner.schedulable {
                let node = format!("fake-node-{}", inner.node_counter % NODES);
                inner.node_counter += 1;
                set_pod_scheduled(pod, &node, &now);
                rt.scheduled_at = Some(Instant::now());
            } else {
                set_pod_unschedulable(pod, &now);
            }
            for c in container_names(pod) {
                rt.logs.insert(c, String::new());
            }
            let uid = uid_of(pod).unwrap_or_default().to_string();
            inner.pods_rt.insert(uid, rt);
            Ok(())
        })
    }

    /// POST a JobSet: validate, default, store. Child Jobs appear on reconcile.
    pub fn create_jobset(&mut self, ns: &str, mut body: Value) -> Result<Value, ApiError> {
        let name = body.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
        let mut causes = Vec::new();
        // JobSet's webhook defaults restartPolicy=OnFailure and completionMode=Indexed.
        if let Some(rjs) = body.pointer_mut("/spec/replicatedJobs").and_then(Value::as_array_mut) {
            for rj in rjs.iter_mut() {
                if let Some(jspec) = rj.pointer_mut("/template/spec").filter(|v| v.is_object()) {
                    jspec.as_object_mut().expect("object").entry("completionMode").or_insert(json!("Indexed"));
                    if jspec.get("completions").is_none_or(Value::is_null) {
                        let p = jspec.get("parallelism").and_then(Value::as_i64).unwrap_or(1);
                        jspec["completions"] = json!(p);
                    }
                    if let Some(pspec) = jspec.pointer_mut("/template/spec").and_then(Value::as_object_mut) {
                        pspec.entry("restartPolicy").or_insert(json!("OnFailure"));
                    }
                }
                if let Some(m) = rj.as_object_mut() {
                    m.entry("replicas").or_insert(json!(1));
                }
            }
        }
        match body.pointer("/spec/replicatedJobs").and_then(Value::as_array) {
            Some(rjs) if !rjs.is_empty() => {
                for (i, rj) in rjs.iter().enumerate() {
                    if rj.get("name").and_then(Value::as_str).is_none_or(str::is_empty) {
                        causes.push((
                            format!("spec.replicatedJobs[{i}].name"),
                            "FieldValueRequired",
                            "Required value".into(),
                        ));
                    }
                    validate_job_spec(
                        rj.pointer("/template/spec"),
                        &format!("spec.replicatedJobs[{i}].template.spec"),
                        &mut causes,
                    );
                }
            }
            _ => causes.push(("spec.replicatedJobs".into(), "FieldValueRequired", "Required value".into())),
        }
        if !causes.is_empty() {
            return Err(causes_to_error(Res::JobSet, &name, causes));
        }
        if let Some(m) = body.as_object_mut() {
            m.remove("status");
        }
        self.create(Res::JobSet, ns, body, |_, js| {
            let spec = obj_mut(js, "spec");
            spec.entry("successPolicy").or_insert(json!({"operator": "All"}));
            spec.entry("network").or_insert(json!({"enableDNSHostnames": true, "publishNotReadyAddresses": true}));
            js["status"] = json!({});
            Ok(())
        })
    }

    /// Run all controllers until nothing changes (bounded).
    pub fn reconcile(&mut self) {
        for _ in 0..16 {
            let before = self.rv;
            for k in self.keys_of(Res::JobSet) {
                self.reconcile_jobset(&k);
            }
            for k in self.keys_of(Res::Job) {
                self.reconcile_job(&k);
            }
            if self.rv == before {
                break;
            }
        }
    }

    fn owned(&self, res: Res, ns: &str, owner_uid: &str) -> Vec<(Key, Value)> {
        self.objects
            .iter()
            .filter(|((r, n, _), v)| *r == res && n == ns && is_owned_by(v, owner_uid))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    fn reconcile_job(&mut self, k: &Key) {
        let Some(job) = self.objects.get(k).cloned() else {
            return;
        };
        if has_condition(&job, "Complete", "True") || has_condition(&job, "Failed", "True") {
            return;
        }
        let ns = k.1.clone();
        let uid = uid_of(&job).unwrap_or_default().to_string();
        let parallelism = i64_at(&job, "/spec/parallelism").unwrap_or(1).max(0) as u32;
        let target = i64_at(&job, "/spec/completions").map(|c| c.max(0) as u32).unwrap_or(parallelism);
        let indexed = str_at(&job, "/spec/completionMode") == Some("Indexed");
        let suspended = job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
        let pods = self.owned(Res::Pod, &ns, &uid);

        let mut track = self.jobs_rt.remove(&uid).unwrap_or_default();
        // Pods that vanished while active count as failed (like the real controller).
        let present: std::collections::HashSet<String> =
            pods.iter().filter_map(|(_, p)| uid_of(p).map(str::to_string)).collect();
        let vanished: Vec<String> = track.active.iter().filter(|u| !present.contains(*u)).cloned().collect();
        for u in vanished {
            track.active.remove(&u);
            if track.counted.insert(u) {
                track.failed += 1;
                track.first_failure.get_or_insert_with(|| {
                    ("BackoffLimitExceeded".into(), "Job has reached the specified backoff limit".into())
                });
            }
        }
        let mut active_keys: Vec<Key> = Vec::new();
        let mut active_indexes = std::collections::BTreeSet::new();
        let mut ready = 0u64;
        for (pk, pod) in &pods {
            let puid = uid_of(pod).unwrap_or_default().to_string();
            let idx = labels_of(pod).get(LABEL_INDEX).and_then(|s| s.parse::<u32>().ok());
            match phase(pod) {
                "Succeeded" => {
                    track.active.remove(&puid);
                    if track.counted.insert(puid) {
                        track.succeeded += 1;
                        if let Some(i) = idx {
                            track.succeeded_indexes.insert(i);
                        }
                    }
                }
                "Failed" => {
                    track.active.remove(&puid);
                    if track.counted.insert(puid) {
                        match failure_verdict(&job, pod, &ns) {
                            Verdict::Ignore => {}
                            Verdict::Fail { reason, message } => {
                                track.failed += 1;
                                track.first_failure.get_or_insert((reason, message));
                            }
                        }
                    }
                }
                _ => {
                    track.active.insert(puid);
                    active_keys.push(pk.clone());
                    if let Some(i) = idx {
                        active_indexes.insert(i);
                    }
                    if phase(pod) == "Running" {
                        ready += 1;
                    }
                }
            }
        }
        let done = if indexed {
            track.succeeded_indexes.len() as u64 >= target as u64
        } else {
            track.succeeded >= target as u64
        };
        let now = now_rfc3339();
        let mut new_conditions: Vec<Value> = Vec::new();
        let mut completion_time = None;
        if let Some((reason, message)) = track.first_failure.clone() {
            // The real controller terminates the remaining active pods.
            for pk in &active_keys {
                if let Some(p) = self.remove(pk) {
                    if let Some(u) = uid_of(&p) {
                        track.active.remove(u);
                        if track.counted.insert(u.to_string()) {
                            track.failed += 1;
                        }
                    }
                }
            }
            active_keys.clear();
            ready = 0;
            new_conditions.push(cond("FailureTarget", "True", Some(&reason), Some(&message), &now));
            new_conditions.push(cond("Failed", "True", Some(&reason), Some(&message), &now));
        } else if (done && target > 0) || (target == 0 && !suspended) {
            for pk in &active_keys {
                if let Some(p) = self.remove(pk) {
                    if let Some(u) = uid_of(&p) {
                        track.active.remove(u);
                    }
                }
            }
            active_keys.clear();
            ready = 0;
            let msg = "Reached expected number of succeeded pods";
            new_conditions.push(cond("SuccessCriteriaMet", "True", Some("CompletionsReached"), Some(msg), &now));
            new_conditions.push(cond("Complete", "True", Some("CompletionsReached"), Some(msg), &now));
            completion_time = Some(now.clone());
        } else if !suspended {
            let room = parallelism.saturating_sub(active_keys.len() as u32);
            let wanted: Vec<u32> = (0..target)
                .filter(|i| !track.succeeded_indexes.contains(i) && !active_indexes.contains(i))
                .take(room as usize)
                .collect();
            for i in wanted {
                if let Some(pod) = self.job_pod(&job, i) {
                    match self.create_pod(&ns, pod) {
                        Ok(p) => {
                            if let Some(u) = uid_of(&p) {
                                track.active.insert(u.to_string());
                            }
                            active_keys.push(key(Res::Pod, &ns, name_of(&p)));
                        }
                        Err(e) => {
                            tracing::warn!("fake job controller: pod create failed: {}", e.message)
                        }
                    }
                }
            }
        }
        let (active, succeeded, failed) = (active_keys.len() as u64, track.succeeded, track.failed);
        let completed_indexes = indexed.then(|| index_ranges(&track.succeeded_indexes));
        self.jobs_rt.insert(uid, track);
        self.modify(k, |j| {
            let status = obj_mut(j, "status");
            status.insert("active".into(), json!(active));
            status.insert("ready".into(), json!(ready));
            status.insert("succeeded".into(), json!(succeeded));
            status.insert("failed".into(), json!(failed));
            status.insert("terminating".into(), json!(0));
            status.insert("uncountedTerminatedPods".into(), json!({}));
            if let Some(ci) = completed_indexes {
                status.insert("completedIndexes".into(), json!(ci));
            }
            if !suspended {
                status.entry("startTime").or_insert(json!(now.clone()));
            }
            if let Some(ct) = completion_time {
                status.insert("completionTime".into(), json!(ct));
            }
            if suspended && !has_condition(j, "Suspended", "True") {
                new_conditions.push(cond("Suspended", "True", Some("JobSuspended"), Some("Job suspended"), &now));
            }
            if !new_conditions.is_empty() {
                let status = obj_mut(j, "status");
                let conds = status.entry("conditions").or_insert(json!([]));
                if let Some(a) = conds.as_array_mut() {
                    a.extend(new_conditions);
                }
            }
        });
    }

    /// The pod the Job controller creates for completion index `index`.
    fn job_pod(&self, job: &Value, index: u32) -> Option<Value> {
        let job_name = name_of(job);
        let ns = str_at(job, "/metadata/namespace")?;
        let uid = uid_of(job)?;
        let template = job.pointer("/spec/template")?;
        let mut labels = label_map(template, "/metadata/labels");
        labels.insert(LABEL_JOB_NAME.into(), json!(job_name));
        labels.insert(LABEL_BATCH_JOB_NAME.into(), json!(job_name));
        labels.insert(LABEL_INDEX.into(), json!(index.to_string()));
        let mut annotations = label_map(template, "/metadata/annotations");
        annotations.insert(LABEL_INDEX.into(), json!(index.to_string()));
        let mut spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
        if str_at(job, "/spec/completionMode") == Some("Indexed") {
            if let Some(m) = spec.as_object_mut() {
                m.entry("hostname").or_insert(json!(format!("{job_name}-{index}")));
            }
        }
        let prefix = format!("{job_name}-{index}-");
        Some(json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": format!("{prefix}{}", random_suffix(5)),
                "generateName": prefix,
                "namespace": ns,
                "labels": labels,
                "annotations": annotations,
                "ownerReferences": [{
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": job_name,
                    "uid": uid,
                    "controller": true,
                    "blockOwnerDeletion": true,
                }],
            },
            "spec": spec,
        }))
    }

    /// Build the child Jobs of a JobSet (once per JobSet uid).
    fn materialize_jobset(&mut self, js: &Value, ns: &str) {
        let js_name = name_of(js).to_string();
        let uid = uid_of(js).unwrap_or_default().to_string();
        let dns = js.pointer("/spec/network/enableDNSHostnames").and_then(Value::as_bool) != Some(false);
        let subdomain = str_at(js, "/spec/network/subdomain").unwrap_or(&js_name).to_string();
        let rjs = js.pointer("/spec/replicatedJobs").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut global = 0u64;
        for rj in rjs {
            let rj_name = rj.get("name").and_then(Value::as_str).unwrap_or("").to_string();
            let replicas = rj.get("replicas").and_then(Value::as_i64).unwrap_or(1).max(0);
            for i in 0..replicas {
                let job_name = format!("{js_name}-{rj_name}-{i}");
                let mut extra = Map::new();
                extra.insert(LABEL_JOBSET_NAME.into(), json!(js_name));
                extra.insert(LABEL_RJ_NAME.into(), json!(rj_name));
                extra.insert(LABEL_RJ_REPLICAS.into(), json!(replicas.to_string()));
                extra.insert(LABEL_JOB_INDEX.into(), json!(i.to_string()));
                extra.insert(LABEL_JOB_GLOBAL_INDEX.into(), json!(global.to_string()));
                extra.insert(LABEL_RESTART_ATTEMPT.into(), json!("0"));
                global += 1;
                let template = rj.get("template").cloned().unwrap_or_else(|| json!({}));
                let mut job = json!({
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "metadata": {
                        "name": job_name,
                        "namespace": ns,
                        "labels": label_map(&template, "/metadata/labels"),
                        "annotations": label_map(&template, "/metadata/annotations"),
                        "ownerReferences": [{
                            "apiVersion": "jobset.x-k8s.io/v1alpha2",
                            "kind": "JobSet",
                            "name": js_name,
                            "uid": uid,
                            "controller": true,
                            "blockOwnerDeletion": true,
                        }],
                    },
                    "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
                });
                merge_into(&mut job, &["metadata", "labels"], &extra);
                merge_into(&mut job, &["metadata", "annotations"], &extra);
                merge_into(&mut job, &["spec", "template", "metadata", "labels"], &extra);
                merge_into(&mut job, &["spec", "template", "metadata", "annotations"], &extra);
                if dns {
                    if let Some(ps) = job.pointer_mut("/spec/template/spec").and_then(Value::as_object_mut) {
                        ps.entry("subdomain").or_insert(json!(subdomain.clone()));
                    }
                }
                if let Err(e) = self.create_job(ns, job) {
                    tracing::warn!("fake jobset controller: job {job_name} not created: {}", e.message);
                }
            }
        }
    }

    fn reconcile_jobset(&mut self, k: &Key) {
        let Some(js) = self.objects.get(k).cloned() else {
            return;
        };
        let ns = k.1.clone();
        let uid = uid_of(&js).unwrap_or_default().to_string();
        if self.jobsets_materialized.insert(uid.clone()) {
            self.materialize_jobset(&js, &ns);
        }
        if has_condition(&js, "Completed", "True") || has_condition(&js, "Failed", "True") {
            return;
        }
        let children = self.owned(Res::Job, &ns, &uid);
        let rjs = js.pointer("/spec/replicatedJobs").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut per_rj: BTreeMap<String, [u64; 5]> = BTreeMap::new(); // ready, succeeded, failed, active, suspended
        let mut expected: BTreeMap<String, u64> = BTreeMap::new();
        for rj in &rjs {
            let n = rj.get("name").and_then(Value::as_str).unwrap_or("").to_string();
            expected.insert(n.clone(), rj.get("replicas").and_then(Value::as_i64).unwrap_or(1).max(0) as u64);
            per_rj.insert(n, [0; 5]);
        }
        let mut any_failed = false;
        let mut active_children = Vec::new();
        for (ck, job) in &children {
            let rj = labels_of(job).get(LABEL_RJ_NAME).cloned().unwrap_or_default();
            let e = per_rj.entry(rj).or_insert([0; 5]);
            if has_condition(job, "Failed", "True") {
                e[2] += 1;
                any_failed = true;
            } else if has_condition(job, "Complete", "True") {
                e[1] += 1;
            } else {
                active_children.push(ck.clone());
                if job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) {
                    e[4] += 1;
                } else {
                    e[3] += 1;
                    let want = i64_at(job, "/spec/parallelism").unwrap_or(1).max(0) as u64;
                    let r = i64_at(job, "/status/ready").unwrap_or(0).max(0) as u64
                        + i64_at(job, "/status/succeeded").unwrap_or(0).max(0) as u64;
                    if r >= want {
                        e[0] += 1;
                    }
                }
            }
        }
        let op_any = str_at(&js, "/spec/successPolicy/operator") == Some("Any");
        let targets: Vec<String> = js
            .pointer("/spec/successPolicy/targetReplicatedJobs")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_else(|| expected.keys().cloned().collect());
        let succeeded_of = |n: &String| per_rj.get(n).map(|c| c[1]).unwrap_or(0);
        let succeeded = if op_any {
            targets.iter().any(|n| succeeded_of(n) > 0)
        } else {
            !targets.is_empty() && targets.iter().all(|n| succeeded_of(n) >= expected.get(n).copied().unwrap_or(0))
        };
        let now = now_rfc3339();
        let mut new_cond = None;
        let mut terminal = None;
        if any_failed {
            for ck in &active_children {
                self.delete_cascade(ck, false);
            }
            new_cond = Some(cond(
                "Failed",
                "True",
                Some("FailedJobs"),
                Some("jobset failed due to one or more job failures"),
                &now,
            ));
            terminal = Some("Failed");
        } else if succeeded {
            new_cond =
                Some(cond("Completed", "True", Some("AllJobsCompleted"), Some("jobset completed successfully"), &now));
            terminal = Some("Completed");
        }
        let rj_status: Vec<Value> = per_rj
            .iter()
            .map(|(n, c)| {
                json!({"name": n, "ready": c[0], "succeeded": c[1], "failed": c[2], "active": c[3], "suspended": c[4]})
            })
            .collect();
        self.modify(k, |j| {
            let status = obj_mut(j, "status");
            status.insert("restarts".into(), json!(0));
            status.insert("replicatedJobsStatus".into(), json!(rj_status));
            if let Some(t) = terminal {
                status.insert("terminalState".into(), json!(t));
            }
            if let Some(c) = new_cond {
                let conds = status.entry("conditions").or_insert(json!([]));
                if let Some(a) = conds.as_array_mut() {
                    a.push(c);
                }
            }
        });
    }

    // ------------------------------------------------------------ kubelet & scheduler

    /// One step of the fake scheduler and kubelet: schedule pending pods when the
    /// cluster is schedulable, start scheduled ones after `START_DELAY` (auto-run).
    pub fn kubelet_tick(&mut self) {
        let before = self.rv;
        let now_i = Instant::now();
        for k in self.keys_of(Res::Pod) {
            let Some(pod) = self.objects.get(&k) else {
                continue;
            };
            if phase(pod) != "Pending" {
                continue;
            }
            let uid = uid_of(pod).unwrap_or_default().to_string();
            let scheduled_at = self.pods_rt.get(&uid).and_then(|r| r.scheduled_at);
            match scheduled_at {
                None if self.schedulable => {
                    let node = format!("fake-node-{}", self.node_counter % NODES);
                    self.node_counter += 1;
                    let now = now_rfc3339();
                    self.modify(&k, |p| set_pod_scheduled(p, &node, &now));
                    self.pods_rt.entry(uid).or_default().scheduled_at = Some(now_i);
                }
                Some(t) if self.auto_run && now_i.duration_since(t) >= START_DELAY => {
                    self.start_pod(&k);
                }
                _ => {}
            }
        }
        if self.rv != before {
            self.reconcile();
        }
    }

    /// Pending -> Running, writing the kubelet's first log line per container.
    pub fn start_pod(&mut self, k: &Key) {
        let Some(pod) = self.objects.get(k).cloned() else {
            return;
        };
        if phase(&pod) != "Pending" {
            return;
        }
        let uid = uid_of(&pod).unwrap_or_default().to_string();
        let now = now_rfc3339();
        if str_at(&pod, "/spec/nodeName").is_none() {
            let node = format!("fake-node-{}", self.node_counter % NODES);
            self.node_counter += 1;
            self.modify(k, |p| set_pod_scheduled(p, &node, &now));
        }
        let rt = self.pods_rt.entry(uid).or_default();
        rt.scheduled_at.get_or_insert(Instant::now());
        rt.started_at = Some(now.clone());
        for c in containers(&pod) {
            let cname = c.get("name").and_then(Value::as_str).unwrap_or("").to_string();
            let line = format!("fake kubelet: started container {cname} with command {}\n", command_line(&c));
            let log = rt.logs.entry(cname).or_default();
            log.insert_str(0, &line);
        }
        self.modify(k, |p| set_pod_running(p, &now));
    }

    /// Terminate pods matching `selector` (all namespaces) that are not yet terminal.
    pub fn terminate_pods(&mut self, selector: &LabelSelector, exit_code: i32, preempted: bool) -> usize {
        let mut n = 0;
        for k in self.keys_of(Res::Pod) {
            let Some(pod) = self.objects.get(&k) else {
                continue;
            };
            if !selector.matches_object(pod) || is_terminal_phase(phase(pod)) {
                continue;
            }
            self.start_pod(&k);
            let uid = self.objects.get(&k).and_then(uid_of).unwrap_or_default().to_string();
            let started = self.pods_rt.get(&uid).and_then(|r| r.started_at.clone()).unwrap_or_else(now_rfc3339);
            let now = now_rfc3339();
            self.modify(&k, |p| set_pod_terminated(p, exit_code, preempted, &started, &now));
            n += 1;
        }
        self.reconcile();
        n
    }

    /// Force pods matching `selector` to Running, whatever the scheduling flags say.
    pub fn start_pods(&mut self, selector: &LabelSelector) -> usize {
        let mut n = 0;
        for k in self.keys_of(Res::Pod) {
            let Some(pod) = self.objects.get(&k) else {
                continue;
            };
            if selector.matches_object(pod) && phase(pod) == "Pending" {
                self.start_pod(&k);
                n += 1;
            }
        }
        self.reconcile();
        n
    }

    /// Log text of a pod's container, or an API error like the real kubelet path gives.
    pub fn pod_log(&self, ns: &str, name: &str, container: Option<&str>) -> Result<String, ApiError> {
        let pod = self.get(Res::Pod, ns, name).ok_or_else(|| crate::store::not_found(Res::Pod, name))?;
        let names = container_names(pod);
        let cname = match container {
            Some(c) if !c.is_empty() => {
                if !names.iter().any(|n| n == c) {
                    return Err(ApiError::bad_request(format!("container {c} is not valid for pod {name}")));
                }
                c.to_string()
            }
            _ => names.first().cloned().unwrap_or_default(),
        };
        if phase(pod) == "Pending" {
            if str_at(pod, "/spec/nodeName").is_none() {
                return Err(ApiError::bad_request(format!("pod {name} does not have a host assigned")));
            }
            return Err(ApiError::bad_request(format!(
                "container \"{cname}\" in pod \"{name}\" is waiting to start: ContainerCreating"
            )));
        }
        let uid = uid_of(pod).unwrap_or_default();
        Ok(self.pods_rt.get(uid).and_then(|r| r.logs.get(&cname)).cloned().unwrap_or_default())
    }

    /// Append text to the first container's log of the first pod named `pod`.
    pub fn append_log(&mut self, pod: &str) -> Option<&mut String> {
        let (uid, first) = self.objects.iter().find(|((r, _, n), _)| *r == Res::Pod && n == pod).map(|(_, v)| {
            (uid_of(v).unwrap_or_default().to_string(), container_names(v).into_iter().next().unwrap_or_default())
        })?;
        Some(self.pods_rt.entry(uid).or_default().logs.entry(first).or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        let s: std::collections::BTreeSet<u32> = [0, 1, 2, 4, 6, 7].into_iter().collect();
        assert_eq!(index_ranges(&s), "0-2,4,6-7");
    }

    #[test]
    fn command_lines() {
        let c = json!({"command": ["python", "-m", "train"], "args": ["--steps", 3]});
        assert_eq!(command_line(&c), "[python -m train --steps 3]");
        assert_eq!(command_line(&json!({})), "[]");
    }
}
