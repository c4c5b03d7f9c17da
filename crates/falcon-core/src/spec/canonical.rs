//! The canonical snapshot: JSON with sorted keys and no whitespace, and its content hash.
//!
//! Numbers are written as serde_json writes them, so `256` and `256.0` stay different (the workload reads
//! them as an integer and a float). Keys are sorted by their UTF-8 bytes whatever map order serde_json was
//! built with.

use super::ExperimentSpec;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// `value` as canonical JSON: object keys sorted, no whitespace, strings escaped as serde_json does.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// What [`config_hash`] hashes: `{"config": <config>, "resources": {"accelerator", "slices", "devices"}}`.
///
/// The parts that decide what the workload computes and on what count: the whole `config` snapshot, the
/// accelerator type (its canonical catalog name, so `v5e-16` and `v5litepod-16` hash alike), the number of
/// slices and, for `cpu`, the number of devices. Left out, because they change where or how cheaply the run
/// happens but not what it measures: zones, capacity type, reservation, topology (fixed by the type); and
/// everything outside config and resources (name, workload, profile, timeout, priority, retries, labels).
pub fn hashed_part(spec: &ExperimentSpec) -> Value {
    let mut resources = json!({
        "accelerator": spec.resources.accelerator,
        "slices": spec.resources.slices,
    });
    if let Some(devices) = spec.resources.devices {
        resources["devices"] = json!(devices);
    }
    json!({ "config": spec.config, "resources": resources })
}

/// Hex SHA-256 of the canonical JSON of [`hashed_part`]: equal for specs that run the same configuration
/// on the same hardware shape.
pub fn config_hash(spec: &ExperimentSpec) -> String {
    config_hash_at(spec, None)
}

/// [`config_hash`] of a spec whose `code` resolved to `commit`: the full commit joins the hashed part (as
/// `"code"`), so runs of one spec at two commits are two configurations, each with its own run-to-run history.
/// A commit a work tree only recorded (a spec without `code`) is not hashed: `None` gives [`config_hash`].
pub fn config_hash_at(spec: &ExperimentSpec, commit: Option<&str>) -> String {
    let mut part = hashed_part(spec);
    if let Some(commit) = commit {
        part["code"] = json!(commit);
    }
    let digest = Sha256::digest(canonical_json(&part).as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_compact_and_escaped() {
        let v: Value =
            serde_json::from_str(r#"{"b": [1, {"z": 1, "a": "x\"y"}], "a": null, "é": 1.5, "A": true}"#).unwrap();
        assert_eq!(canonical_json(&v), r#"{"A":true,"a":null,"b":[1,{"a":"x\"y","z":1}],"é":1.5}"#);
        assert_eq!(canonical_json(&json!("plain")), r#""plain""#);
        assert_eq!(canonical_json(&json!({})), "{}");
    }
}
