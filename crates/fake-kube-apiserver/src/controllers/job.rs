//! The fake Job controller: pods per completion index up to the parallelism, success and failure counted
//! (a pod failure policy decides what a failed pod means), and the Job's status and conditions.

use serde_json::{json, Value};

use super::validate::{causes_to_error, default_job, validate_job_spec};
use super::{cond, has_condition, i64_at, label_map, phase, str_at, LABEL_BATCH_JOB_NAME, LABEL_INDEX, LABEL_JOB_NAME};
use crate::selector::labels_of;
use crate::store::{key, name_of, obj_mut, uid_of, Inner, Key, Res};
use crate::util::{now_rfc3339, random_suffix, ApiError};

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

    pub(super) fn reconcile_job(&mut self, k: &Key) {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        let s: std::collections::BTreeSet<u32> = [0, 1, 2, 4, 6, 7].into_iter().collect();
        assert_eq!(index_ranges(&s), "0-2,4,6-7");
    }
}
