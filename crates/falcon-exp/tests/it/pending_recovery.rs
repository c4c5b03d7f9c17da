//! A submitter that stops between inserting an experiment and queuing (or linking) its job leaves a PENDING
//! experiment; reconcile takes it over after the grace period: linked to its job when the job exists, its job
//! queued from the stored spec when it does not (found by the fault campaign: `falcon serve` killed between the
//! two left an experiment FAILED "never queued"), failed with the reason only when the stored spec cannot be read
//! back. A young PENDING experiment is left to its submitter.

use falcon_core::status::{ExperimentStatus, Scenario};
use falcon_exp::Exp;
use falcon_infra::meta::{NewExperiment, NewJob};
use falcon_infra::MetaStore;
use std::collections::BTreeMap;

fn new_experiment(name: &str) -> NewExperiment {
    NewExperiment {
        name: name.into(),
        scenario: Scenario::Benchmark,
        goal: None,
        session: None,
        baseline: None,
        spec: serde_json::json!({"name": name}),
        config_hash: "h".into(),
        labels: BTreeMap::new(),
        code: None,
    }
}

#[tokio::test]
async fn stranded_pending_experiments_are_linked_or_failed_after_the_grace_period() {
    let dir = crate::harness::job_dir();
    let cfg = crate::harness::config_under(dir.path(), "");
    let exp = Exp::init(&cfg).await.unwrap();
    let meta = MetaStore::connect(&cfg.db).await.unwrap();

    // Crashed before queuing its job; crashed after queuing but before linking; still being submitted.
    let no_job = meta.insert_experiment(&new_experiment("no-job")).await.unwrap().id;
    // The same crash with a real spec stored, as `Exp::submit` stores it.
    let spec = falcon_core::spec::parse_spec(
        "name: stranded\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [echo, '${config.n}']\n\
         config: {n: 7}\nresources: {accelerator: cpu}\n",
        "stranded.yaml",
    )
    .unwrap();
    let stored = serde_json::to_value(&spec).unwrap();
    let stranded =
        meta.insert_experiment(&NewExperiment { spec: stored, ..new_experiment("stranded") }).await.unwrap().id;
    let unlinked = meta.insert_experiment(&new_experiment("unlinked")).await.unwrap().id;
    let job =
        NewJob { name: format!("e-{}", unlinked.0), spec: serde_json::json!({}), priority: 0, labels: BTreeMap::new() };
    let job = meta.insert_job(&job).await.unwrap().id;
    // Both strand older than the grace period (the store's clock is the only way to age a row).
    let path = falcon_core::config::sqlite_path(&cfg.db).unwrap();
    {
        use sqlx::Connection;
        let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{path}")).await.unwrap();
        sqlx::query("UPDATE experiments SET created_ms = created_ms - 3600000").execute(&mut conn).await.unwrap();
        conn.close().await.unwrap();
    }
    let young = meta.insert_experiment(&new_experiment("young")).await.unwrap().id;

    let report = exp.reconcile().await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let failed = exp.show(no_job).await.unwrap();
    assert_eq!(failed.record.status, ExperimentStatus::Failed);
    let reason = &failed.history.last().unwrap().reason;
    assert!(reason.contains("never queued") && reason.contains("cannot be read back"), "{reason}");
    let queued = exp.show(stranded).await.unwrap();
    assert_eq!(queued.record.status, ExperimentStatus::Provisioning, "{:?}", queued.history);
    let queued_job = meta.get_job(queued.record.job.expect("linked to the job it queued")).await.unwrap();
    assert_eq!(queued_job.name, format!("e-{}", stranded.0));
    assert!(queued_job.spec.to_string().contains("\"7\""), "the command substituted: {}", queued_job.spec);
    let linked = exp.show(unlinked).await.unwrap();
    assert_eq!((linked.record.status, linked.record.job), (ExperimentStatus::Provisioning, Some(job)));
    assert_eq!(exp.show(young).await.unwrap().record.status, ExperimentStatus::Pending, "left to its submitter");
    // Idempotent.
    assert!(exp
        .reconcile()
        .await
        .unwrap()
        .moved
        .iter()
        .all(|(id, _)| *id != no_job && *id != unlinked && *id != stranded));
}
