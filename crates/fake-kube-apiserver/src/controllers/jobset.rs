//! The fake JobSet controller: a JobSet's child Jobs (one per replica of each replicated job, labelled as
//! JobSet labels them), and its status from theirs (the success policy, failure on any failed child).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::validate::{causes_to_error, validate_job_spec};
use super::{
    cond, has_condition, i64_at, label_map, str_at, LABEL_JOBSET_NAME, LABEL_JOB_GLOBAL_INDEX, LABEL_JOB_INDEX,
    LABEL_RESTART_ATTEMPT, LABEL_RJ_NAME, LABEL_RJ_REPLICAS,
};
use crate::selector::labels_of;
use crate::store::{name_of, obj_mut, uid_of, Inner, Key, Res};
use crate::util::{now_rfc3339, ApiError};

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

impl Inner {
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

    pub(super) fn reconcile_jobset(&mut self, k: &Key) {
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
}
