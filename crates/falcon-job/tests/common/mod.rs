//! Shared test helpers of the Job module's integration tests.

#![allow(dead_code, reason = "each test file uses its own subset of the helpers")]

use falcon_job::{JobSpec, Resources, RetryPolicy};
use std::collections::BTreeMap;

/// A one-CPU local job running `sh -c script`, with no environment, retries or artifact URI of its own.
pub fn shell_job(name: &str, script: &str) -> JobSpec {
    JobSpec {
        name: name.into(),
        image: None,
        command: vec!["sh".into(), "-c".into(), script.into()],
        env: BTreeMap::new(),
        resources: Resources { accelerator: "cpu".into(), slices: 1, devices: Some(1), topology: None },
        zones: vec![],
        capacity: Default::default(),
        reservation: None,
        artifact_uri: None,
        timeout_s: None,
        priority: 0,
        retry: RetryPolicy::default(),
        labels: BTreeMap::new(),
    }
}
