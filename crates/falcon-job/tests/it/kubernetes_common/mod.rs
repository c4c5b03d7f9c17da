//! Shared helpers of the Kubernetes backend's integration tests (`kubernetes_backend.rs`, `kubernetes_manager.rs`):
//! a training job spec, pools on a fake cluster, and what the fake cluster saw.

#![allow(dead_code, reason = "each test file uses its own subset of the helpers")]

use fake_kube_apiserver::FakeCluster;
use falcon_core::config::{PoolBackend, PoolConfig};
use falcon_job::{JobSpec, Pool, Resources, RetryPolicy};
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub const IMAGE: &str = "us-docker.pkg.dev/falcon/trainer:1.0";

pub fn spec(name: &str, accelerator: &str, slices: u32) -> JobSpec {
    JobSpec {
        name: name.into(),
        image: Some(IMAGE.into()),
        command: vec!["python3".into(), "-m".into(), "train".into(), "--steps=100".into()],
        env: BTreeMap::from([("XLA_FLAGS".into(), "--xla_dump_to=/tmp/xla".into())]),
        resources: Resources::of(accelerator, slices),
        artifact_uri: None,
        timeout_s: None,
        priority: 0,
        retry: RetryPolicy::default(),
        labels: BTreeMap::from([("experiment".into(), "e-12".into()), ("goal".into(), "MFU > 50%".into())]),
    }
}

pub fn pool_config(name: &str, zone: &str, accelerator: &str, settings: Value) -> PoolConfig {
    let platform = falcon_core::catalog::lookup(accelerator).unwrap().platform;
    PoolConfig {
        name: name.into(),
        backend: PoolBackend::Kubernetes,
        zone: zone.into(),
        platform,
        accelerators: vec![accelerator.into()],
        capacity: 4096,
        settings: serde_json::from_value(settings).unwrap(),
    }
}

pub fn pool_on(fake: &FakeCluster, name: &str, zone: &str, accelerator: &str) -> Pool {
    Pool::from_config(&pool_config(name, zone, accelerator, json!({"api_url": fake.url()}))).unwrap()
}

pub fn posts(fake: &FakeCluster) -> usize {
    fake.request_log().iter().filter(|r| r.starts_with("POST ")).count()
}

/// Pod names with this label selector (`key=value` only).
pub fn pods_with(fake: &FakeCluster, key: &str, value: &str) -> Vec<String> {
    fake.pods()
        .into_iter()
        .filter(|p| p["metadata"]["labels"][key] == value)
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}
