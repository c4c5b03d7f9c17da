//! Upgrading a database the quickstart made at schema version 2 to the latest (version 3: job outputs,
//! experiment notes, MySQL's long artifact URIs; version 4: the within-run spread of metric summaries and the
//! run-noise table; version 5: API tokens; version 6: jobs' collection failures; version 7: dashboard sign-in
//! sessions; version 8: experiments' code versions, session kinds and outcomes): the data is all there afterwards and the new columns and tables work, on SQLite and on MariaDB.
//!
//! The fixtures in `tests/data/upgrade/` were made by the quickstart's commands (`falcon init`, the baseline
//! and the variant of `examples/jax_transformer` submitted with `--wait`, `profile analyze`) at schema version 2:
//! the SQLite file as written, the MariaDB database as `mariadb-dump` printed it.

use crate::common;

use falcon_core::artifact::ArtifactKind;
use falcon_core::ids::{ExperimentId, JobId};
use falcon_core::status::ExperimentStatus;
use falcon_infra::meta::{
    ExperimentFilter, ExperimentNote, JobOutput, MetricSummary, NewArtifact, RunNoise, StoredOutput,
};
use falcon_infra::MetaStore;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/upgrade");

async fn check_upgraded(store: &MetaStore) {
    let status = store.migration_status().await.unwrap();
    assert_eq!((status.applied, status.latest), (Some(9), 9));
    let exps = store.list_experiments(&ExperimentFilter { limit: 10, ..Default::default() }).await.unwrap();
    assert_eq!(exps.len(), 2, "both quickstart experiments survive");
    assert!(exps.iter().all(|e| e.status == ExperimentStatus::Completed), "{exps:?}");
    let variant = ExperimentId(2);
    let artifacts = store.list_artifacts(variant, None).await.unwrap();
    assert!(artifacts.iter().any(|a| a.kind == ArtifactKind::Metrics), "{artifacts:?}");
    assert!(artifacts.iter().any(|a| a.kind == ArtifactKind::Xprof), "{artifacts:?}");
    let summaries = store.metric_summaries(variant).await.unwrap();
    assert!(!summaries.is_empty());
    assert!(summaries.iter().all(|s| s.spread.is_none()), "written before version 4: no spread {summaries:?}");
    let job = exps.iter().find(|e| e.id == variant).unwrap().job.unwrap();
    assert!(store.job_outputs(job).await.unwrap().is_empty(), "collected before version 3: no records");
    let rec = store.get_job(job).await.unwrap();
    assert_eq!((rec.collect_failures, rec.collect_failing_since), (0, None), "version 6: no collection failed");
    assert!(store.experiment_notes(variant).await.unwrap().is_empty());
    assert!(exps.iter().all(|e| e.code.is_none()), "recorded before version 8: no code version");

    // The new tables and the long URIs work on the upgraded database.
    let output = JobOutput {
        path: "metrics.jsonl".into(),
        stored: Some(StoredOutput { key: "experiments/e-2/metrics.jsonl".into(), size: 1, sha256: "ab".into() }),
        skip_reason: None,
        live: true,
    };
    store.put_job_output(job, &output).await.unwrap();
    assert_eq!(store.job_outputs(job).await.unwrap(), [output]);
    let note = ExperimentNote { source: "metrics".into(), file: "m".into(), line: Some(3), reason: "bad".into() };
    store.put_experiment_notes(variant, "metrics", std::slice::from_ref(&note)).await.unwrap();
    assert_eq!(store.experiment_notes(variant).await.unwrap(), [note]);
    let long_key = format!("experiments/e-2/{}", "d/".repeat(400) + "f");
    let new = NewArtifact {
        experiment: Some(variant),
        job: Some(JobId(job.0)),
        kind: ArtifactKind::Other,
        key: long_key.clone(),
        uri: format!("file:///srv/quickstart/.falcon/artifacts/{long_key}"),
        size: 1,
        sha256: "ab".into(),
        content_type: "application/octet-stream".into(),
    };
    store.insert_artifact(&new).await.expect("a URI longer than 768 characters is indexed");
    assert!(
        matches!(store.insert_artifact(&new).await, Err(falcon_infra::InfraError::Conflict(_))),
        "the same URI twice is still a conflict"
    );

    // Version 4: the spread column takes values, and the run-noise table starts empty and fills from the
    // summaries of the completed quickstart runs.
    let hash = exps.iter().find(|e| e.id == variant).unwrap().config_hash.clone();
    let metric = summaries[0].metric.clone();
    assert_eq!(store.run_noise(&hash, &metric).await.unwrap(), None, "run_noise starts empty");
    let with_spread: Vec<MetricSummary> =
        summaries.iter().map(|s| MetricSummary { spread: Some(0.01), ..s.clone() }).collect();
    store.put_metric_summaries(variant, &with_spread).await.unwrap();
    assert_eq!(store.metric_summaries(variant).await.unwrap(), with_spread);
    let noise = store.refresh_run_noise(&hash).await.unwrap();
    let expected: Vec<RunNoise> = summaries
        .iter()
        .filter(|s| s.median.is_finite() && s.median > 0.0)
        .map(|s| RunNoise {
            config_hash: hash.clone(),
            metric: s.metric.clone(),
            runs: 1,
            mean_log: s.median.ln(),
            m2_log: 0.0,
        })
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(noise, expected, "one completed run of the variant's config");
    assert_eq!(store.run_noise(&hash, &metric).await.unwrap().as_ref(), noise.iter().find(|n| n.metric == metric));
    assert_eq!(store.refresh_run_noise(&hash).await.unwrap(), noise);
    let prefix = &hash[..12];
    assert!(store.config_hashes_with_prefix(prefix, 10).await.unwrap().contains(&hash));
}

#[tokio::test]
async fn a_quickstart_sqlite_database_of_version_2_upgrades_with_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("falcon.db");
    std::fs::copy(format!("{DATA}/quickstart-0002.sqlite"), &path).unwrap();
    let store = MetaStore::connect(&format!("sqlite://{}", path.display())).await.expect("opens and migrates");
    check_upgraded(&store).await;
    store.close().await;
}

#[tokio::test]
async fn a_quickstart_mariadb_database_of_version_2_upgrades_with_its_data() {
    use sqlx::migrate::MigrateDatabase;
    let db = format!("falcon_upgrade_{}", uuid::Uuid::new_v4().simple());
    let url = format!("{}/{db}", common::mysql_server_url().trim_end_matches('/'));
    sqlx::MySql::create_database(&url).await.expect("MariaDB is needed: run scripts/services.sh up");
    let dump = std::fs::read_to_string(format!("{DATA}/quickstart-0002.mysql.sql")).unwrap();
    {
        use sqlx::Connection;
        let mut conn = sqlx::MySqlConnection::connect(&url).await.unwrap();
        sqlx::raw_sql(&dump).execute(&mut conn).await.expect("the version-2 dump loads");
        conn.close().await.unwrap();
    }
    let store_url = url.clone();
    let outcome = async move {
        let store = MetaStore::connect(&store_url).await.expect("opens and migrates");
        check_upgraded(&store).await;
        store.close().await;
    };
    let result = tokio::spawn(outcome).await;
    sqlx::MySql::drop_database(&url).await.unwrap();
    if let Err(panic) = result {
        std::panic::resume_unwind(panic.into_panic());
    }
}
