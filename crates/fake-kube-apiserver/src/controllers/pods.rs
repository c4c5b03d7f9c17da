//! The fake scheduler and kubelet: pods created scheduled (or unschedulable), started after `START_DELAY`,
//! finished or preempted when a test says so, and their container logs.

use std::time::Instant;

use serde_json::{json, Value};

use super::validate::{causes_to_error, validate_pod_spec};
use super::{
    cond, container_names, containers, is_terminal_phase, phase, str_at, NODES, START_DELAY, UNSCHEDULABLE_MESSAGE,
};
use crate::selector::LabelSelector;
use crate::store::{obj_mut, uid_of, Inner, Key, PodRuntime, Res};
use crate::util::{now_rfc3339, ApiError};

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

impl Inner {
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

    pub(super) fn create_pod(&mut self, ns: &str, body: Value) -> Result<Value, ApiError> {
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
    fn command_lines() {
        let c = json!({"command": ["python", "-m", "train"], "args": ["--steps", 3]});
        assert_eq!(command_line(&c), "[python -m train --steps 3]");
        assert_eq!(command_line(&json!({})), "[]");
    }
}
