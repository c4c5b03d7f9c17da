//! The job-outputs record and experiment notes, on SQLite and on MariaDB alike (conformance).

use falcon_core::ids::JobId;
use falcon_core::status::Scenario;
use falcon_infra::meta::{ExperimentNote, JobOutput, NewExperiment, NewJob, StoredOutput};
use falcon_infra::{InfraError, MetaStore};
use std::collections::BTreeMap;

async fn a_job(store: &MetaStore, name: &str) -> JobId {
    let new = NewJob { name: name.into(), spec: serde_json::json!({}), priority: 0, labels: BTreeMap::new() };
    store.insert_job(&new).await.unwrap().id
}

fn stored(path: &str, key: &str, size: u64) -> JobOutput {
    JobOutput {
        path: path.into(),
        stored: Some(StoredOutput { key: key.into(), size, sha256: "0".repeat(64) }),
        skip_reason: None,
        live: false,
    }
}

async fn job_outputs_are_replaced_per_path_and_listed_in_path_order(store: MetaStore) {
    let job = a_job(&store, "j1").await;
    let other = a_job(&store, "j2").await;
    // A 1000-character path (longer than any index MySQL takes) and one differing only past its 768th character.
    let long_a = format!("{}a", "p".repeat(999));
    let long_b = format!("{}b", "p".repeat(999));
    store.put_job_output(job, &stored(&long_b, "k/b", 2)).await.unwrap();
    store.put_job_output(job, &stored(&long_a, "k/a", 1)).await.unwrap();
    store.put_job_output(job, &stored("metrics.jsonl", "k/m", 10)).await.unwrap();
    let grown = JobOutput { live: true, ..stored("metrics.jsonl", "k/m", 20) };
    store.put_job_output(job, &grown).await.unwrap();
    let skipped = JobOutput {
        path: "pipe".into(),
        stored: None,
        skip_reason: Some(format!("not a regular file {}", "x".repeat(5000))),
        live: false,
    };
    store.put_job_output(job, &skipped).await.unwrap();
    store.put_job_output(other, &stored("metrics.jsonl", "o/m", 1)).await.unwrap();

    let listed = store.job_outputs(job).await.unwrap();
    let paths: Vec<&str> = listed.iter().map(|o| o.path.as_str()).collect();
    assert_eq!(paths, ["metrics.jsonl", "pipe", long_a.as_str(), long_b.as_str()], "byte order on both backends");
    assert_eq!(listed[0], grown, "the second record of a path replaces the first");
    let reason = listed[1].skip_reason.as_deref().unwrap();
    assert!(listed[1].stored.is_none() && reason.chars().count() == 2001 && reason.ends_with('…'), "{reason}");
    assert_eq!(store.job_outputs(other).await.unwrap().len(), 1);

    let too_long_key = stored("f", &"k".repeat(1025), 1);
    let err = store.put_job_output(job, &too_long_key).await.unwrap_err();
    assert!(matches!(err, InfraError::ValueTooLarge { table: "job_outputs", column: "object_key", .. }), "{err}");
}

async fn notes_are_replaced_per_source(store: MetaStore) {
    let exp = store
        .insert_experiment(&NewExperiment {
            name: "n".into(),
            scenario: Scenario::Benchmark,
            goal: None,
            session: None,
            baseline: None,
            spec: serde_json::json!({}),
            config_hash: "h".into(),
            labels: BTreeMap::new(),
            code: None,
        })
        .await
        .unwrap()
        .id;
    let note = |source: &str, line: Option<u64>, reason: &str| ExperimentNote {
        source: source.into(),
        file: "file:///a/metrics.jsonl".into(),
        line,
        reason: reason.into(),
    };
    store
        .put_experiment_notes(exp, "metrics", &[note("metrics", Some(2), "bad"), note("metrics", None, "nan")])
        .await
        .unwrap();
    store.put_experiment_notes(exp, "other", &[note("other", None, "kept")]).await.unwrap();
    store.put_experiment_notes(exp, "metrics", &[note("metrics", Some(5), "again")]).await.unwrap();
    let notes = store.experiment_notes(exp).await.unwrap();
    assert_eq!(notes, [note("metrics", Some(5), "again"), note("other", None, "kept")]);
    store.put_experiment_notes(exp, "metrics", &[]).await.unwrap();
    assert_eq!(store.experiment_notes(exp).await.unwrap().len(), 1);
}

on_both_databases!(job_outputs_are_replaced_per_path_and_listed_in_path_order, notes_are_replaced_per_source);
