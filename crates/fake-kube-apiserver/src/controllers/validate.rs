//! What the fake API server checks and fills in on create: required pod and Job fields (as `Invalid` errors
//! with their causes) and the Job defaults the API server and the Job controller set.

use serde_json::{json, Map, Value};

use super::{label_map, LABEL_BATCH_CONTROLLER_UID, LABEL_BATCH_JOB_NAME, LABEL_CONTROLLER_UID, LABEL_JOB_NAME};
use crate::store::{invalid, name_of, obj_mut, uid_of, Res};
use crate::util::ApiError;

pub(super) type Cause = (String, &'static str, String);

pub(super) fn validate_pod_spec(spec: Option<&Value>, prefix: &str, for_job: bool, causes: &mut Vec<Cause>) {
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

pub(super) fn validate_job_spec(spec: Option<&Value>, prefix: &str, causes: &mut Vec<Cause>) {
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

pub(super) fn causes_to_error(res: Res, name: &str, causes: Vec<Cause>) -> ApiError {
    invalid(res, name, causes.iter().map(|(f, r, m)| (f.as_str(), *r, m.clone())).collect())
}

/// Defaulting the API server and the Job controller do on create.
pub(super) fn default_job(job: &mut Value) {
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
