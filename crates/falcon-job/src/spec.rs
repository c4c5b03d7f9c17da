//! `JobSpec`: the standardized task description the Job module accepts. It carries no business words: an
//! experiment becomes a job through EXP, which fills this in.

use crate::error::{JobError, Result};
use falcon_core::catalog::{self, AcceleratorType};
use falcon_core::config::Platform;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Longest job name: backends append `-a<attempt>-<pool>` and Kubernetes names stop at 63 characters.
pub const MAX_NAME_LEN: usize = 40;

/// A job as submitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// Unique, deterministic name: lowercase letters, digits and `-`, at most 40 characters.
    pub name: String,
    /// Container image (required on Kubernetes pools; ignored by local and Slurm).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Command and arguments.
    pub command: Vec<String>,
    /// Environment variables.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// What it runs on, in the experiment spec's one vocabulary: accelerator, slices, zones, capacity,
    /// reservation, devices, topology.
    pub resources: Resources,
    /// Where its artifacts and logs go: a URI inside the artifact store (default `<store>/jobs/<name>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_uri: Option<String>,
    /// Wall-clock limit of one attempt, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u64>,
    /// Higher is scheduled first.
    #[serde(default)]
    pub priority: i64,
    /// Retries.
    #[serde(default)]
    pub retry: RetryPolicy,
    /// Opaque labels (copied to backend objects).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// What a job asks for: the one definition in `falcon_core::spec`, shared with experiment specs.
pub use falcon_core::spec::Resources;

fn one() -> u32 {
    1
}

/// How capacity is obtained: the one definition in `falcon_core::spec`, shared with experiment specs.
pub use falcon_core::spec::Capacity as CapacityType;

/// Retries owned by the Job module: a preempted attempt or a retryable exit code is resubmitted until the
/// attempts are spent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryPolicy {
    /// Attempts in all, including the first.
    #[serde(default = "one")]
    pub max_attempts: u32,
    /// Exit codes that count as transient (retried like a preemption).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retry_exit_codes: Vec<i32>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { max_attempts: 1, retry_exit_codes: Vec::new() }
    }
}

/// A spec checked against the catalog: what it needs from a pool.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The accelerator type.
    pub accelerator: AcceleratorType,
    /// Chips (or CPU cores) in all.
    pub chips: u32,
    /// Hosts in all.
    pub hosts: u32,
}

impl JobSpec {
    /// A spec as the jobs table holds it. Rows written before the placement moved into `resources` keep
    /// `zones`, `capacity` and `reservation` at the top level; they are read into `resources` (a key present in
    /// both places is refused, as any unknown key is).
    pub fn from_stored(stored: &serde_json::Value) -> Result<JobSpec> {
        let mut value = stored.clone();
        if let Some(object) = value.as_object_mut() {
            for key in ["zones", "capacity", "reservation"] {
                let Some(moved) = object.remove(key) else { continue };
                let Some(resources) = object.get_mut("resources").and_then(|r| r.as_object_mut()) else {
                    return Err(JobError::spec(key, "a stored spec with no `resources` object"));
                };
                if resources.insert(key.to_string(), moved).is_some() {
                    return Err(JobError::spec(key, "given both at the top level and in `resources`"));
                }
            }
        }
        serde_json::from_value(value).map_err(|e| JobError::spec("spec", e.to_string()))
    }

    /// Checks every field and resolves the accelerator. Errors name the field.
    pub fn resolve(&self) -> Result<Resolved> {
        if self.name.is_empty() || self.name.len() > MAX_NAME_LEN {
            return Err(JobError::spec(
                "name",
                format!("must be 1–{MAX_NAME_LEN} characters, got {}", self.name.len()),
            ));
        }
        let valid = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
        if !self.name.chars().all(valid) || self.name.starts_with('-') || self.name.ends_with('-') {
            return Err(JobError::spec(
                "name",
                format!("`{}`: use lowercase letters, digits and inner `-`", self.name),
            ));
        }
        if self.command.is_empty() || self.command[0].trim().is_empty() {
            return Err(JobError::spec("command", "must name a program to run"));
        }
        for key in self.env.keys() {
            let ok = !key.is_empty()
                && !key.starts_with(|c: char| c.is_ascii_digit())
                && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ok {
                return Err(JobError::spec(format!("env.{key}"), "not a valid environment variable name"));
            }
        }
        let accelerator = catalog::lookup(&self.resources.accelerator)
            .map_err(|e| JobError::spec("resources.accelerator", e.to_string()))?;
        if let Some(topology) = &self.resources.topology {
            catalog::check_topology(&accelerator, topology).map_err(|e| JobError::spec("resources.topology", e))?;
        }
        if self.resources.slices == 0 {
            return Err(JobError::spec("resources.slices", "must be at least 1"));
        }
        let (chips, hosts) = if accelerator.platform == Platform::Cpu {
            if self.resources.slices != 1 {
                return Err(JobError::spec(
                    "resources.slices",
                    "a cpu job runs on one host; use resources.devices for cores",
                ));
            }
            let devices = self.resources.devices.unwrap_or(1);
            if devices == 0 {
                return Err(JobError::spec("resources.devices", "must be at least 1"));
            }
            (devices, 1)
        } else {
            if self.resources.devices.is_some() {
                return Err(JobError::spec(
                    "resources.devices",
                    format!("only for cpu; {} has {} chips per slice", accelerator.name, accelerator.chips),
                ));
            }
            (accelerator.chips * self.resources.slices, accelerator.hosts * self.resources.slices)
        };
        if self.resources.capacity == CapacityType::Reservation
            && self.resources.reservation.as_deref().is_none_or(str::is_empty)
        {
            return Err(JobError::spec("resources.reservation", "capacity `reservation` needs a reservation name"));
        }
        if self.retry.max_attempts == 0 || self.retry.max_attempts > 100 {
            return Err(JobError::spec("retry.max_attempts", "must be between 1 and 100"));
        }
        if self.timeout_s == Some(0) {
            return Err(JobError::spec("timeout_s", "must be positive"));
        }
        Ok(Resolved { accelerator, chips, hosts })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn spec(accel: &str) -> JobSpec {
        JobSpec {
            name: "train-1".into(),
            image: None,
            command: vec!["python3".into(), "train.py".into()],
            env: BTreeMap::new(),
            resources: Resources::of(accel, 1),
            artifact_uri: None,
            timeout_s: None,
            priority: 0,
            retry: RetryPolicy::default(),
            labels: BTreeMap::new(),
        }
    }

    #[test]
    fn resolves_chips_and_hosts_from_the_catalog() {
        let mut s = spec("v5e-16");
        s.resources.slices = 2;
        let r = s.resolve().unwrap();
        assert_eq!((r.accelerator.name.as_str(), r.chips, r.hosts), ("v5litepod-16", 32, 8));
        let mut cpu = spec("cpu");
        cpu.resources.devices = Some(4);
        assert_eq!(cpu.resolve().unwrap().chips, 4);
    }

    #[test]
    fn bad_specs_name_the_field() {
        type Mutation = Box<dyn Fn(&mut JobSpec)>;
        let cases: Vec<(Mutation, &str)> = vec![
            (Box::new(|s| s.resources.accelerator = "v6e-7".into()), "resources.accelerator"),
            (Box::new(|s| s.resources.topology = Some("4x4".into())), "resources.topology"),
            (Box::new(|s| s.resources.slices = 0), "resources.slices"),
            (Box::new(|s| s.name = "Bad_Name".into()), "name"),
            (Box::new(|s| s.name = "x".repeat(41)), "name"),
            (Box::new(|s| s.command.clear()), "command"),
            (
                Box::new(|s| {
                    s.env.insert("1BAD".into(), "x".into());
                }),
                "env.1BAD",
            ),
            (Box::new(|s| s.resources.capacity = CapacityType::Reservation), "resources.reservation"),
            (Box::new(|s| s.retry.max_attempts = 0), "retry.max_attempts"),
            (Box::new(|s| s.resources.devices = Some(2)), "resources.devices"),
        ];
        for (mutate, field) in cases {
            let mut s = spec("v6e-8");
            mutate(&mut s);
            let err = s.resolve().unwrap_err();
            assert!(matches!(&err, JobError::InvalidSpec { field: f, .. } if f == field), "{field}: {err}");
        }
        let err = spec("v6e-7").resolve().unwrap_err().to_string();
        assert!(err.contains("v6e-8"), "suggests the closest type: {err}");
    }

    #[test]
    fn stored_specs_of_either_shape_read_the_same() {
        let mut s = spec("v6e-8");
        s.resources.zones = vec!["us-east5-b".into()];
        s.resources.capacity = CapacityType::Reservation;
        s.resources.reservation = Some("r1".into());
        let now = serde_json::to_value(&s).unwrap();
        assert_eq!(JobSpec::from_stored(&now).unwrap(), s);
        // The shape rows had before `resources` held the placement (as the upgrade fixtures store it).
        let before = serde_json::json!({
            "name": "train-1", "command": ["python3", "train.py"],
            "resources": {"accelerator": "v6e-8", "slices": 1},
            "zones": ["us-east5-b"], "capacity": "reservation", "reservation": "r1",
            "priority": 0, "retry": {"max_attempts": 1}
        });
        assert_eq!(JobSpec::from_stored(&before).unwrap(), s);
        let mut both = before.clone();
        both["resources"]["capacity"] = "spot".into();
        let err = JobSpec::from_stored(&both).unwrap_err().to_string();
        assert!(err.contains("capacity") && err.contains("both"), "{err}");
        assert!(JobSpec::from_stored(&serde_json::json!({"zones": []})).is_err());
        assert!(JobSpec::from_stored(&serde_json::json!([1, 2])).is_err());
    }

    #[test]
    fn unknown_fields_are_refused_when_parsing() {
        let err = serde_json::from_value::<JobSpec>(serde_json::json!({
            "name": "a", "command": ["x"], "resources": {"accelerator": "cpu"}, "retries": 3
        }))
        .unwrap_err()
        .to_string();
        assert!(err.contains("retries"), "{err}");
    }
}
