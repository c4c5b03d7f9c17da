//! Shared test helpers of the Job module's integration tests.

#![allow(dead_code, reason = "each test file uses its own subset of the helpers")]

use falcon_core::config::PoolConfig;
use falcon_infra::{ArtifactStore, MetaStore};
use falcon_job::backend::local::LocalBackend;
use falcon_job::backend::Backend;
use falcon_job::{JobManager, JobSpec, ManagerConfig, Pool, Resources, RetryPolicy};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// A job manager over one local pool of 4 CPUs (cancel grace 500 ms), with SQLite and a local artifact store,
/// all in a temporary folder that lives as long as this does.
pub struct LocalEnv {
    pub manager: JobManager,
    pub meta: MetaStore,
    pub store: ArtifactStore,
    pub dir: tempfile::TempDir,
}

/// [`LocalEnv`] with this manager configuration.
pub async fn local_env(config: ManagerConfig) -> LocalEnv {
    let dir = tempfile::tempdir().unwrap();
    let meta = MetaStore::create(&format!("sqlite://{}", dir.path().join("m.db").display())).await.unwrap();
    let store =
        ArtifactStore::open(&dir.path().join("arts").display().to_string(), &Default::default(), &Default::default())
            .unwrap();
    let pool = Pool::from_config(&PoolConfig::local_cpu(4)).unwrap();
    let backend: Arc<dyn Backend> =
        Arc::new(LocalBackend::new(dir.path().join("jobs"), "local").with_grace(Duration::from_millis(500)));
    let manager = JobManager::new(meta.clone(), store.clone(), vec![pool], vec![backend], config);
    LocalEnv { manager, meta, store, dir }
}

/// A one-CPU local job running `sh -c script`, with no environment, retries or artifact URI of its own.
pub fn shell_job(name: &str, script: &str) -> JobSpec {
    JobSpec {
        name: name.into(),
        image: None,
        command: vec!["sh".into(), "-c".into(), script.into()],
        env: BTreeMap::new(),
        resources: Resources { devices: Some(1), ..Resources::of("cpu", 1) },
        artifact_uri: None,
        timeout_s: None,
        priority: 0,
        retry: RetryPolicy::default(),
        labels: BTreeMap::new(),
    }
}
