//! A finished experiment's outputs are indexed before it ends: when indexing fails part-way (here a metrics file
//! its job recorded but the store does not serve), the experiment stays live and the next reconcile indexes
//! and ends it — never COMPLETED with part of its outputs indexed and no metrics. Found by the fault campaign
//! (`bench/faults`, serve-kill on MariaDB): `falcon serve` killed between the terminal transition and the
//! indexing left e-5 COMPLETED with one artifact of five, and nothing indexed it again.

use falcon_core::status::{ExperimentStatus, JobStatus, Scenario};
use falcon_exp::Exp;
use falcon_infra::meta::{JobChanges, JobOutput, NewExperiment, NewJob, StoredOutput};
use falcon_infra::{ArtifactStore, MetaStore, PutMode};
use std::collections::BTreeMap;

#[tokio::test]
async fn a_finished_experiment_ends_only_once_its_outputs_are_indexed() {
    let dir = crate::harness::job_dir();
    let cfg = crate::harness::config_under(dir.path(), "");
    let exp = Exp::init(&cfg).await.unwrap();
    let meta = MetaStore::connect(&cfg.db).await.unwrap();
    let store = ArtifactStore::open(&cfg.artifacts, &cfg.gcs, &cfg.s3).unwrap();

    let new = NewExperiment {
        name: "indexed".into(),
        scenario: Scenario::Benchmark,
        goal: None,
        session: None,
        baseline: None,
        spec: serde_json::json!({"name": "indexed"}),
        config_hash: "h".into(),
        labels: BTreeMap::new(),
        code: None,
    };
    let id = meta.insert_experiment(&new).await.unwrap().id;
    let job = NewJob { name: id.to_string(), spec: serde_json::json!({}), priority: 0, labels: BTreeMap::new() };
    let job = meta.insert_job(&job).await.unwrap().id;
    meta.set_experiment_job(id, job).await.unwrap();
    meta.transition_experiment(id, ExperimentStatus::Pending, ExperimentStatus::Provisioning, "queued", None)
        .await
        .unwrap();
    for (from, to) in [
        (JobStatus::Queued, JobStatus::Submitted),
        (JobStatus::Submitted, JobStatus::Running),
        (JobStatus::Running, JobStatus::Succeeded),
    ] {
        let changes = JobChanges { exit_code: (to == JobStatus::Succeeded).then_some(0), ..Default::default() };
        meta.transition_job(job, from, to, "test", changes).await.unwrap();
    }
    // The job module recorded its metrics file; the store does not have it (yet).
    let text = b"{\"step\": 0, \"step_time_s\": 0.5}\n{\"step\": 1, \"step_time_s\": 0.25}\n".to_vec();
    let key = format!("{}/metrics.jsonl", falcon_exp::experiments::experiment_prefix(id));
    let stored =
        StoredOutput { key: key.clone(), size: text.len() as u64, sha256: falcon_core::artifact::sha256_hex(&text) };
    let output = JobOutput { path: "metrics.jsonl".into(), stored: Some(stored), skip_reason: None, live: true };
    meta.put_job_output(job, &output).await.unwrap();

    let report = exp.reconcile().await.unwrap();
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    let shown = exp.show(id).await.unwrap();
    assert_eq!(shown.record.status, ExperimentStatus::Provisioning, "ended before its outputs were indexed");

    store.put_bytes(&key, text, PutMode::Create).await.unwrap();
    let report = exp.reconcile().await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let shown = exp.show(id).await.unwrap();
    assert_eq!(shown.record.status, ExperimentStatus::Completed);
    assert_eq!(shown.artifacts.iter().map(|a| a.key.as_str()).collect::<Vec<_>>(), [key.as_str()]);
    assert!(shown.metrics.contains_key("step_time_s"), "its metrics summarised: {:?}", shown.metrics);
}
