//! The fake's "controllers": a Job controller, a JobSet controller, a scheduler
//! and a kubelet, all simplified. They are level-triggered: `reconcile` looks at
//! the whole store and moves it one step towards the desired state, and runs
//! after every change.
//!
//! This file holds the shared constants and JSON helpers and runs the controllers (`reconcile`); `pods.rs` is
//! the scheduler and kubelet (pod states, logs), `job.rs` the Job controller (with the pod failure policy),
//! `jobset.rs` the JobSet controller, `validate.rs` the create-time validation and defaulting.

mod job;
mod jobset;
mod pods;
mod validate;

use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::store::{is_owned_by, Inner, Key, Res};

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

pub(super) fn str_at<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    v.pointer(ptr).and_then(Value::as_str)
}

pub(super) fn i64_at(v: &Value, ptr: &str) -> Option<i64> {
    v.pointer(ptr).and_then(Value::as_i64)
}

pub(super) fn phase(pod: &Value) -> &str {
    str_at(pod, "/status/phase").unwrap_or("Pending")
}

pub(super) fn is_terminal_phase(p: &str) -> bool {
    p == "Succeeded" || p == "Failed"
}

pub(super) fn has_condition(obj: &Value, ctype: &str, status: &str) -> bool {
    obj.pointer("/status/conditions").and_then(Value::as_array).is_some_and(|cs| {
        cs.iter().any(|c| {
            c.get("type").and_then(Value::as_str) == Some(ctype)
                && c.get("status").and_then(Value::as_str) == Some(status)
        })
    })
}

pub(super) fn cond(ctype: &str, status: &str, reason: Option<&str>, message: Option<&str>, now: &str) -> Value {
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

pub(super) fn containers(pod: &Value) -> Vec<Value> {
    pod.pointer("/spec/containers").and_then(Value::as_array).cloned().unwrap_or_default()
}

pub(super) fn container_names(pod: &Value) -> Vec<String> {
    containers(pod).iter().map(|c| c.get("name").and_then(Value::as_str).unwrap_or("").to_string()).collect()
}

pub(super) fn label_map(v: &Value, ptr: &str) -> Map<String, Value> {
    v.pointer(ptr).and_then(Value::as_object).cloned().unwrap_or_default()
}

impl Inner {
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
}
