//! Column limits and missing databases, the same on SQLite and on MariaDB: a value over a column's limit is
//! refused before any query with an error naming "table.column" and the limit (MySQL's `VARCHAR(N)` would
//! otherwise fail with a driver error while SQLite stored anything), and connecting to a database that does not
//! exist is "not found" and creates nothing; only `MetaStore::create` creates one.

use crate::common;

use falcon_core::artifact::ArtifactKind;
use falcon_core::ids::ExperimentId;
use falcon_core::status::{Direction, GoalStatus, Scenario};
use falcon_core::ErrorKind;
use falcon_infra::meta::{column_limit, NewArtifact, NewExperiment, NewGoal};
use falcon_infra::{InfraError, MetaStore};
use std::time::Duration;

fn goal(title: String) -> NewGoal {
    NewGoal {
        title,
        workload: None,
        hardware: None,
        metric: "mfu".into(),
        direction: Direction::Maximize,
        target: None,
        baseline: None,
        priority: 0,
    }
}

fn artifact(experiment: ExperimentId, key: String, uri: String) -> NewArtifact {
    NewArtifact {
        experiment: Some(experiment),
        job: None,
        kind: ArtifactKind::Other,
        key,
        uri,
        size: 1,
        sha256: "0".repeat(64),
        content_type: "text/plain".into(),
    }
}

fn experiment_like() -> NewExperiment {
    NewExperiment {
        name: "limits".into(),
        scenario: Scenario::Benchmark,
        goal: None,
        session: None,
        baseline: None,
        spec: serde_json::json!({}),
        config_hash: "h".into(),
        labels: Default::default(),
        code: None,
    }
}

/// Asserts `err` is the column-limit error for `table.column` at `limit` characters.
fn assert_limit(err: InfraError, table: &str, column: &str, limit: usize) {
    assert!(
        matches!(&err, InfraError::ValueTooLarge { table: t, column: c, limit: l, unit: "characters", .. }
            if *t == table && *c == column && *l == limit),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains(&format!("{table}.{column}")) && text.contains(&format!("{limit} characters")), "{text}");
}

async fn varchar_limits_are_enforced_identically(store: MetaStore) {
    // Characters, not bytes, as MySQL's utf8mb4 VARCHAR counts them: 1,024 two-byte characters fit a title.
    let fits = store.insert_goal(&goal("é".repeat(1024))).await.unwrap();
    assert_eq!(store.get_goal(fits.id).await.unwrap().title.chars().count(), 1024, "stored whole, not truncated");
    let err = store.insert_goal(&goal("é".repeat(1025))).await.unwrap_err();
    assert_limit(err, "goals", "title", 1024);
    let mut long_workload = goal("ok".into());
    long_workload.workload = Some("w".repeat(256));
    assert_limit(store.insert_goal(&long_workload).await.unwrap_err(), "goals", "workload", 255);
    assert_eq!(store.list_goals(None).await.unwrap().len(), 1, "a refused goal leaves no row");

    let err = store.claim_goal(fits.id, &"o".repeat(256), Duration::from_secs(60)).await.unwrap_err();
    assert_limit(err, "goals", "owner", 255);
    let err = store
        .transition_goal(fits.id, GoalStatus::Open, GoalStatus::Abandoned, "why", Some(&"a".repeat(256)))
        .await
        .unwrap_err();
    assert_limit(err, "goal_transitions", "actor", 255);
    assert_eq!(store.get_goal(fits.id).await.unwrap().status, GoalStatus::Open, "nothing half-written");

    let key = |n: usize| format!("experiments/e-1/{}", "k".repeat(n - "experiments/e-1/".len()));
    let uri = |n: usize| format!("file:///a/{}", "u".repeat(n - "file:///a/".len()));
    let e = store.insert_experiment(&experiment_like()).await.unwrap().id;
    assert_limit(
        store.insert_experiment(&NewExperiment { name: "n".repeat(256), ..experiment_like() }).await.unwrap_err(),
        "experiments",
        "name",
        255,
    );
    let uri_limit = column_limit("artifacts", "uri");
    store.insert_artifact(&artifact(e, key(1024), uri(uri_limit))).await.unwrap();
    let err = store.insert_artifact(&artifact(e, key(1025), uri(700))).await.unwrap_err();
    assert_limit(err, "artifacts", "object_key", 1024);
    let err = store.insert_artifact(&artifact(e, key(100), uri(uri_limit + 1))).await.unwrap_err();
    assert_limit(err, "artifacts", "uri", uri_limit);
    assert_eq!(store.list_artifacts(e, None).await.unwrap().len(), 1, "refused artifacts leave no row");
}

on_both_databases!(varchar_limits_are_enforced_identically);

/// Every `VARCHAR(N)` column of the MySQL schema (after all migrations) has the same limit in the store code,
/// so a column added or widened in a migration without the store knowing fails here.
#[test]
fn the_store_knows_every_varchar_limit_of_the_mysql_schema() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/mysql");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    // (table, column) → the column's type as the last migration that names it leaves it.
    let mut types: std::collections::BTreeMap<(String, String), String> = Default::default();
    for file in &files {
        let sql = std::fs::read_to_string(file).unwrap();
        let mut table = String::new();
        for line in sql.lines().map(|l| l.split("--").next().unwrap().trim()) {
            let words: Vec<&str> = line.split_whitespace().collect();
            let (column, kind) = match words.as_slice() {
                ["CREATE", "TABLE", name, ..] => {
                    table = name.to_string();
                    continue;
                }
                ["ALTER", "TABLE", name, "ADD", "COLUMN", column, kind, ..]
                | ["ALTER", "TABLE", name, "MODIFY", column, kind, ..] => {
                    table = name.to_string();
                    (*column, *kind)
                }
                [column, kind, ..]
                    if !table.is_empty() && !column.chars().any(|c| !c.is_ascii_lowercase() && c != '_') =>
                {
                    (*column, *kind)
                }
                _ => continue,
            };
            types.insert((table.clone(), column.to_string()), kind.trim_end_matches(',').to_ascii_uppercase());
        }
    }
    let mut checked = 0;
    for ((table, column), kind) in &types {
        if let Some(n) = kind.strip_prefix("VARCHAR(").and_then(|r| r.strip_suffix(')')) {
            assert_eq!(column_limit(table, column), n.parse::<usize>().unwrap(), "{table}.{column} is {kind}");
            checked += 1;
        }
    }
    assert!(checked > 30, "the schema was read ({checked} VARCHAR columns): {types:?}");
    assert!(types.contains_key(&("goals".to_string(), "title".to_string())), "{types:?}");
}

#[tokio::test]
async fn a_missing_sqlite_database_is_not_found_and_nothing_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("typo/x.db").display());
    let err = MetaStore::connect(&url).await.unwrap_err();
    assert!(matches!(err, InfraError::NoDatabase { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::NotFound);
    let text = err.to_string();
    assert!(text.contains(&url) && text.contains("falcon init"), "{text}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no folder, no file");

    let created = MetaStore::create(&url).await.unwrap();
    created.insert_goal(&goal("kept".into())).await.unwrap();
    created.close().await;
    let reopened = MetaStore::connect(&url).await.unwrap();
    assert_eq!(reopened.list_goals(None).await.unwrap().len(), 1, "connect opens what create made");
    reopened.close().await;
}

#[tokio::test]
async fn a_missing_mysql_database_is_not_found_and_nothing_is_created() {
    use sqlx::migrate::MigrateDatabase;
    let server = common::mysql_server_url();
    let url = format!("{}/falcon_test_missing_{}", server.trim_end_matches('/'), uuid::Uuid::new_v4().simple());
    let err = MetaStore::connect(&url).await.unwrap_err();
    assert!(matches!(err, InfraError::NoDatabase { .. }), "{err:?} (is MariaDB up? scripts/services.sh up)");
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(err.to_string().contains("falcon init"), "{err}");
    assert!(!sqlx::MySql::database_exists(&url).await.unwrap(), "connect created no database");

    let created = MetaStore::create(&url).await.unwrap();
    created.close().await;
    let reopened = MetaStore::connect(&url).await.unwrap();
    assert!(reopened.migration_status().await.unwrap().is_current());
    reopened.close().await;
    sqlx::MySql::drop_database(&url).await.unwrap();
}
