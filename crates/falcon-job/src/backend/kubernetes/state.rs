//! What a Job's or JobSet's conditions and its pods say about the run, as a [`BackendState`]. Pure.
//!
//! In order:
//! 1. the object is being deleted → `Cancelled`;
//! 2. condition `Complete` (Job) / `Completed` (JobSet) is True → `Succeeded`;
//! 3. condition `Failed` is True → `Preempted` when a pod has the `DisruptionTarget` condition, a pod's
//!    `status.reason` says it lost its node (`Preempted`, `Evicted`, `Terminated`, `NodeLost`, `Shutdown`), or
//!    the condition's reason or message mentions `DisruptionTarget` or preemption; otherwise `Failed` with the
//!    exit code of the first pod to fail (earliest `finishedAt`, then name), or the condition's reason;
//! 4. any pod running (or `Unknown`: its node stopped reporting) → `Running`;
//! 5. a pod is unschedulable (`PodScheduled=False`, reason `Unschedulable`) → `Pending`, unschedulable, with
//!    the scheduler's message;
//! 6. other pending pods → `Pending` with the container's waiting reason (`ContainerCreating`,
//!    `ImagePullBackOff: …`);
//! 7. suspended (waiting for Kueue admission) or no pods yet → `Pending`;
//! 8. every pod finished but the controller has not written the outcome yet → `Running` (transient).
//!
//! Only the terminal conditions count: `FailureTarget` and `SuccessCriteriaMet` come first on Kubernetes ≥ 1.31
//! while pods still terminate; the Job's outcome is final once `Failed` / `Complete` follow.

use super::manifest::CONTAINER;
use crate::backend::BackendState;
use k8s_openapi::api::core::v1::{ContainerStateTerminated, ContainerStatus, Pod};

/// One condition of a Job or JobSet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Condition {
    /// `Complete`, `Failed`, …
    pub type_: String,
    /// `True`, `False`, `Unknown`.
    pub status: String,
    /// Machine-readable reason.
    pub reason: Option<String>,
    /// Human-readable message.
    pub message: Option<String>,
}

/// Everything the state is judged from.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// `Complete` for a Job, `Completed` for a JobSet.
    pub success_type: &'static str,
    /// The object's conditions.
    pub conditions: Vec<Condition>,
    /// `spec.suspend`.
    pub suspended: bool,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// Its pods.
    pub pods: Vec<Pod>,
}

/// The state, by the rules in the module docs.
pub fn evaluate(observed: &Observed) -> BackendState {
    if observed.deleting {
        return BackendState::Cancelled;
    }
    let is_true = |type_: &str| observed.conditions.iter().find(|c| c.type_ == type_).filter(|c| c.status == "True");
    if is_true(observed.success_type).is_some() {
        return BackendState::Succeeded;
    }
    if let Some(failed) = is_true("Failed") {
        return failure(failed, &observed.pods);
    }
    let mut pods: Vec<&Pod> = observed.pods.iter().collect();
    pods.sort_by(|a, b| name(a).cmp(name(b)));
    if pods.iter().any(|p| matches!(phase(p), "Running" | "Unknown")) {
        return BackendState::Running { started: None };
    }
    if let Some(message) = pods.iter().find_map(|p| unschedulable(p)) {
        return BackendState::Pending { reason: message, unschedulable: true };
    }
    if let Some(pod) = pods.iter().find(|p| phase(p) == "Pending") {
        return BackendState::Pending { reason: waiting_reason(pod), unschedulable: false };
    }
    if observed.suspended {
        return BackendState::Pending {
            reason: "suspended: waiting for admission (Kueue)".into(),
            unschedulable: false,
        };
    }
    if pods.is_empty() {
        return BackendState::Pending {
            reason: "waiting for the controller to create pods".into(),
            unschedulable: false,
        };
    }
    BackendState::Running { started: None }
}

fn failure(failed: &Condition, pods: &[Pod]) -> BackendState {
    let why = describe(failed);
    let mut pods: Vec<&Pod> = pods.iter().collect();
    pods.sort_by(|a, b| name(a).cmp(name(b)));
    if let Some(reason) = pods.iter().find_map(|p| disruption(p)) {
        return BackendState::Preempted { reason };
    }
    let lower = why.to_ascii_lowercase();
    if lower.contains("disruptiontarget") || lower.contains("preempt") {
        return BackendState::Preempted { reason: why };
    }
    match first_failed(pods.iter().copied()) {
        Some((pod, terminated)) => {
            let code = terminated.exit_code;
            let detail = match terminated.reason.as_deref() {
                Some(r) if !r.is_empty() && r != "Error" && r != "Completed" => format!(", {r}"),
                _ => String::new(),
            };
            BackendState::Failed {
                exit_code: Some(code),
                reason: format!("exited with status {code} (pod {pod}{detail})"),
            }
        }
        None => BackendState::Failed { exit_code: None, reason: why },
    }
}

/// The pod that failed first (earliest `finishedAt`, then name; those without a time last) with the end state
/// of its failed container: the pod whose exit code, and log, speak for a failed Job or JobSet.
pub fn first_failed<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> Option<(&'a str, &'a ContainerStateTerminated)> {
    pods.into_iter()
        .filter(|p| phase(p) == "Failed")
        .filter_map(|p| failed_container(p).map(|t| (t.finished_at.as_ref().map(|f| f.0), name(p), t)))
        .min_by(|a, b| (a.0.is_none(), a.0, a.1).cmp(&(b.0.is_none(), b.0, b.1)))
        .map(|(_, pod, terminated)| (pod, terminated))
}

/// `Reason: message` of a condition.
fn describe(c: &Condition) -> String {
    match (c.reason.as_deref().filter(|r| !r.is_empty()), c.message.as_deref().filter(|m| !m.is_empty())) {
        (Some(r), Some(m)) => format!("{r}: {m}"),
        (Some(r), None) => r.to_string(),
        (None, Some(m)) => m.to_string(),
        (None, None) => format!("condition {} is {}", c.type_, c.status),
    }
}

fn name(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or_default()
}

fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("Pending")
}

fn unschedulable(pod: &Pod) -> Option<String> {
    if phase(pod) != "Pending" {
        return None;
    }
    let conditions = pod.status.as_ref()?.conditions.as_ref()?;
    let c = conditions.iter().find(|c| c.type_ == "PodScheduled")?;
    (c.status == "False" && c.reason.as_deref() == Some("Unschedulable")).then(|| {
        c.message.clone().filter(|m| !m.is_empty()).unwrap_or_else(|| format!("pod {} is unschedulable", name(pod)))
    })
}

fn waiting_reason(pod: &Pod) -> String {
    let waiting = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .find_map(|c| c.state.as_ref()?.waiting.as_ref());
    match waiting {
        Some(w) => match (w.reason.as_deref(), w.message.as_deref().filter(|m| !m.is_empty())) {
            (Some(r), Some(m)) => format!("pod {}: {r}: {m}", name(pod)),
            (Some(r), None) => format!("pod {}: {r}", name(pod)),
            _ => format!("pod {} is pending", name(pod)),
        },
        None => format!("pod {} is pending", name(pod)),
    }
}

/// Why a pod lost its node, if it did.
fn disruption(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    if let Some(c) = status.conditions.iter().flatten().find(|c| c.type_ == "DisruptionTarget" && c.status == "True") {
        let what = [c.reason.as_deref(), c.message.as_deref()].into_iter().flatten().collect::<Vec<_>>().join(": ");
        return Some(format!("pod {} was disrupted ({what})", name(pod)));
    }
    let reason = status.reason.as_deref()?;
    ["Preempted", "Evicted", "Terminated", "NodeLost", "Shutdown", "NodeShutdown"].contains(&reason).then(|| {
        match status.message.as_deref().filter(|m| !m.is_empty()) {
            Some(m) => format!("pod {} was stopped ({reason}: {m})", name(pod)),
            None => format!("pod {} was stopped ({reason})", name(pod)),
        }
    })
}

fn terminated(c: &ContainerStatus) -> Option<&ContainerStateTerminated> {
    c.state.as_ref()?.terminated.as_ref()
}

/// The terminated state of the pod's workload container, else of any container that failed.
fn failed_container(pod: &Pod) -> Option<&ContainerStateTerminated> {
    let statuses = pod.status.as_ref()?.container_statuses.as_ref()?;
    statuses
        .iter()
        .find(|c| c.name == CONTAINER)
        .and_then(terminated)
        .filter(|t| t.exit_code != 0)
        .or_else(|| statuses.iter().filter_map(terminated).find(|t| t.exit_code != 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": name}, "status": status})).unwrap()
    }

    fn cond(type_: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: "True".into(),
            reason: Some(reason.into()),
            message: Some(message.into()),
        }
    }

    fn observed(conditions: Vec<Condition>, pods: Vec<Pod>) -> Observed {
        Observed { success_type: "Complete", conditions, suspended: false, deleting: false, pods }
    }

    fn terminated(code: i32, reason: &str, finished: &str) -> serde_json::Value {
        json!({"phase": if code == 0 { "Succeeded" } else { "Failed" }, "containerStatuses": [{
            "name": "workload", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": code, "reason": reason, "finishedAt": finished}}}]})
    }

    #[test]
    fn pending_pods_are_told_apart() {
        let unsched = pod(
            "a",
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}]}),
        );
        let creating = pod(
            "b",
            json!({"phase": "Pending", "containerStatuses": [{"name": "workload", "image": "i", "imageID": "", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]}),
        );
        let running = pod("c", json!({"phase": "Running"}));
        assert_eq!(
            evaluate(&observed(vec![], vec![unsched.clone()])),
            BackendState::Pending { reason: "0/3 nodes".into(), unschedulable: true }
        );
        assert_eq!(
            evaluate(&observed(vec![], vec![creating.clone(), unsched.clone()])),
            BackendState::Pending { reason: "0/3 nodes".into(), unschedulable: true }
        );
        assert_eq!(
            evaluate(&observed(vec![], vec![creating.clone()])),
            BackendState::Pending { reason: "pod b: ContainerCreating".into(), unschedulable: false }
        );
        assert_eq!(evaluate(&observed(vec![], vec![unsched, running])), BackendState::Running { started: None });
        assert!(matches!(evaluate(&observed(vec![], vec![])), BackendState::Pending { unschedulable: false, .. }));
        let suspended = Observed { suspended: true, ..observed(vec![], vec![]) };
        assert!(matches!(evaluate(&suspended), BackendState::Pending { reason, .. } if reason.contains("suspended")));
    }

    #[test]
    fn outcomes_come_from_terminal_conditions_only() {
        let done = pod("a", terminated(0, "Completed", "2026-01-01T00:00:00Z"));
        let target = cond("SuccessCriteriaMet", "CompletionsReached", "");
        assert_eq!(
            evaluate(&observed(vec![target.clone()], vec![done.clone()])),
            BackendState::Running { started: None }
        );
        let complete = cond("Complete", "CompletionsReached", "");
        assert_eq!(evaluate(&observed(vec![target, complete], vec![done])), BackendState::Succeeded);
        let deleting = Observed { deleting: true, ..observed(vec![], vec![]) };
        assert_eq!(evaluate(&deleting), BackendState::Cancelled);
    }

    #[test]
    fn failures_name_the_first_failed_pod_and_preemptions_are_recognised() {
        let failed = cond("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit");
        let first = pod("z-first", terminated(3, "Error", "2026-01-01T00:00:00Z"));
        let later = pod("a-later", terminated(143, "Error", "2026-01-01T00:00:05Z"));
        assert_eq!(
            evaluate(&observed(vec![failed.clone()], vec![later, first])),
            BackendState::Failed { exit_code: Some(3), reason: "exited with status 3 (pod z-first)".into() }
        );
        let oom = pod("o", terminated(137, "OOMKilled", "2026-01-01T00:00:00Z"));
        assert!(
            matches!(evaluate(&observed(vec![failed.clone()], vec![oom])), BackendState::Failed { exit_code: Some(137), reason } if reason.contains("OOMKilled"))
        );
        assert_eq!(
            evaluate(&observed(vec![cond("Failed", "DeadlineExceeded", "too long")], vec![])),
            BackendState::Failed { exit_code: None, reason: "DeadlineExceeded: too long".into() }
        );
        let mut preempted = terminated(137, "Error", "2026-01-01T00:00:00Z");
        preempted["conditions"] =
            json!([{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler", "message": "m"}]);
        assert!(
            matches!(evaluate(&observed(vec![failed.clone()], vec![pod("p", preempted)])), BackendState::Preempted { reason } if reason.contains("PreemptionByScheduler"))
        );
        let gone = cond(
            "Failed",
            "PodFailurePolicy",
            "Pod default/p has condition DisruptionTarget matching FailJob rule at index 0",
        );
        assert!(
            matches!(evaluate(&observed(vec![gone], vec![])), BackendState::Preempted { .. }),
            "the pod may be gone already"
        );
        let mut evicted = terminated(137, "Error", "2026-01-01T00:00:00Z");
        evicted["reason"] = json!("Evicted");
        assert!(matches!(evaluate(&observed(vec![failed], vec![pod("e", evicted)])), BackendState::Preempted { .. }));
    }
}
