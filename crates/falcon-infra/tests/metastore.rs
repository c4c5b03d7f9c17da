//! The MetaStore suite, run on SQLite and on MariaDB alike.

mod common;

use falcon_core::artifact::ArtifactKind;
use falcon_core::ids::{ExperimentId, JobId};
use falcon_core::status::{Direction, ExperimentStatus, GoalStatus, JobStatus, Scenario};
use falcon_infra::meta::{
    AnalysisSummary, ExperimentFilter, JobChanges, MetricSummary, NewArtifact, NewExperiment, NewGoal, NewJob,
    NewSession, RunNoise,
};
use falcon_infra::{InfraError, MetaStore};
use std::collections::BTreeMap;
use std::time::Duration;

fn experiment(name: &str, labels: &[(&str, &str)]) -> NewExperiment {
    NewExperiment {
        name: name.into(),
        scenario: Scenario::Benchmark,
        goal: None,
        session: None,
        baseline: None,
        spec: serde_json::json!({"name": name, "config": {"batch_size": 256, "parallelism": {"fsdp": 16}}}),
        config_hash: format!("hash-{name}"),
        labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    }
}

fn goal(title: &str, priority: i64) -> NewGoal {
    NewGoal {
        title: title.into(),
        workload: Some("llama3-8b".into()),
        hardware: Some("v5litepod-256".into()),
        metric: "mfu".into(),
        direction: Direction::Maximize,
        target: Some(0.45),
        baseline: None,
        priority,
    }
}

async fn migrations_are_current_and_reapplying_is_harmless(store: MetaStore) {
    let status = store.migration_status().await.unwrap();
    assert!(status.is_current(), "{status:?}");
    assert_eq!(status.latest, 7);
    store.migrate().await.unwrap();
    assert_eq!(store.migration_status().await.unwrap(), status);
}

async fn experiments_round_trip_with_labels_and_history(store: MetaStore) {
    let new = experiment("llama-fsdp16", &[("team", "perf"), ("model", "llama3-8b")]);
    let rec = store.insert_experiment(&new).await.unwrap();
    assert_eq!(rec.status, ExperimentStatus::Pending);
    assert_eq!(rec.attempt, 1);
    assert_eq!(rec.spec, new.spec);
    assert_eq!(rec.labels, new.labels);
    assert_eq!(store.get_experiment(rec.id).await.unwrap(), rec);
    let history = store.experiment_history(rec.id).await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!((history[0].from, history[0].to), (None, ExperimentStatus::Pending));
    let missing = store.get_experiment(ExperimentId(rec.id.0 + 1000)).await.unwrap_err();
    assert!(matches!(missing, InfraError::NotFound { what: "experiment", .. }), "{missing}");
}

async fn transitions_are_compare_and_set_and_audited(store: MetaStore) {
    let id = store.insert_experiment(&experiment("a", &[])).await.unwrap().id;
    store
        .transition_experiment(id, ExperimentStatus::Pending, ExperimentStatus::Provisioning, "job j-1 queued", None)
        .await
        .unwrap();
    store
        .transition_experiment(id, ExperimentStatus::Provisioning, ExperimentStatus::Running, "job running", None)
        .await
        .unwrap();
    store
        .transition_experiment(id, ExperimentStatus::Running, ExperimentStatus::Provisioning, "preempted", Some(2))
        .await
        .unwrap();
    let stale = store
        .transition_experiment(id, ExperimentStatus::Running, ExperimentStatus::Completed, "late writer", None)
        .await
        .unwrap_err();
    assert!(matches!(&stale, InfraError::Conflict(m) if m.contains("PROVISIONING")), "{stale}");
    let rec = store.get_experiment(id).await.unwrap();
    assert_eq!((rec.status, rec.attempt), (ExperimentStatus::Provisioning, 2));
    let history = store.experiment_history(id).await.unwrap();
    let steps: Vec<_> = history.iter().map(|t| (t.from, t.to, t.attempt, t.reason.as_str())).collect();
    assert_eq!(
        steps,
        [
            (None, ExperimentStatus::Pending, 1, "recorded"),
            (Some(ExperimentStatus::Pending), ExperimentStatus::Provisioning, 1, "job j-1 queued"),
            (Some(ExperimentStatus::Provisioning), ExperimentStatus::Running, 1, "job running"),
            (Some(ExperimentStatus::Running), ExperimentStatus::Provisioning, 2, "preempted"),
        ]
    );
    let missing = store
        .transition_experiment(ExperimentId(999_999), ExperimentStatus::Pending, ExperimentStatus::Running, "x", None)
        .await
        .unwrap_err();
    assert!(matches!(missing, InfraError::NotFound { .. }), "{missing}");
}

async fn listing_filters_orders_and_pages(store: MetaStore) {
    let g1 = store.insert_goal(&goal("g1", 0)).await.unwrap().id;
    let g2 = store.insert_goal(&goal("g2", 0)).await.unwrap().id;
    let mut ids = Vec::new();
    for i in 0..12 {
        let mut new = experiment(&format!("e{i}"), &[("team", if i % 2 == 0 { "perf" } else { "infra" })]);
        new.goal = Some(if i < 8 { g1 } else { g2 });
        new.scenario = if i % 3 == 0 { Scenario::Profiling } else { Scenario::Benchmark };
        ids.push(store.insert_experiment(&new).await.unwrap().id);
    }
    for id in &ids[..4] {
        store
            .transition_experiment(*id, ExperimentStatus::Pending, ExperimentStatus::Provisioning, "go", None)
            .await
            .unwrap();
    }
    let filter = ExperimentFilter {
        status: Some(ExperimentStatus::Pending),
        goal: Some(g1),
        labels: vec![("team".into(), "perf".into())],
        ..Default::default()
    };
    let found: Vec<_> = store.list_experiments(&filter).await.unwrap().into_iter().map(|e| e.id).collect();
    assert_eq!(found, [ids[6], ids[4]], "pending, goal g1, team=perf, newest first");
    assert_eq!(store.count_experiments(&filter).await.unwrap(), 2);

    let by_scenario = ExperimentFilter { scenario: Some(Scenario::Profiling), ..Default::default() };
    let names: Vec<_> = store.list_experiments(&by_scenario).await.unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["e9", "e6", "e3", "e0"]);

    let mut page = ExperimentFilter { limit: 5, ..Default::default() };
    let mut seen = Vec::new();
    loop {
        let rows = store.list_experiments(&page).await.unwrap();
        if rows.is_empty() {
            break;
        }
        page.before = Some(rows.last().unwrap().id);
        seen.extend(rows.into_iter().map(|e| e.id));
    }
    let mut expected = ids.clone();
    expected.reverse();
    assert_eq!(seen, expected, "cursor pages cover everything once, newest first");
    let none = ExperimentFilter { labels: vec![("team".into(), "nobody".into())], ..Default::default() };
    assert!(store.list_experiments(&none).await.unwrap().is_empty());

    // Each label condition is a join: a repeated condition repeats no experiment, two values of one key match none.
    let twice = ExperimentFilter { labels: vec![("team".into(), "perf".into()); 2], ..filter.clone() };
    let found: Vec<_> = store.list_experiments(&twice).await.unwrap().into_iter().map(|e| e.id).collect();
    assert_eq!(found, [ids[6], ids[4]]);
    assert_eq!(store.count_experiments(&twice).await.unwrap(), 2);
    let both = ExperimentFilter {
        labels: vec![("team".into(), "perf".into()), ("team".into(), "infra".into())],
        ..Default::default()
    };
    assert!(store.list_experiments(&both).await.unwrap().is_empty());
    // As many conditions as allowed run; one more is refused before any query (SQLite joins 64 tables at most).
    let labels = |n: usize| (0..n).map(|i| (format!("k{i}"), "v".to_string())).collect::<Vec<_>>();
    let most = ExperimentFilter { labels: labels(falcon_infra::meta::MAX_LABEL_FILTERS), ..Default::default() };
    assert!(store.list_experiments(&most).await.unwrap().is_empty());
    let over = ExperimentFilter { labels: labels(falcon_infra::meta::MAX_LABEL_FILTERS + 1), ..Default::default() };
    let err = store.list_experiments(&over).await.unwrap_err();
    assert!(matches!(err, InfraError::InvalidValue { .. }) && err.to_string().contains("at most 32"), "{err}");
    let err = store.count_experiments(&over).await.unwrap_err();
    assert!(matches!(err, InfraError::InvalidValue { .. }), "{err}");
}

async fn oversized_values_are_refused_naming_table_and_column(store: MetaStore) {
    let mut big = experiment("big", &[]);
    big.spec = serde_json::json!({ "blob": "x".repeat(1024 * 1024 + 1) });
    let err = store.insert_experiment(&big).await.unwrap_err().to_string();
    assert!(err.contains("experiments.spec") && err.contains("1048576"), "{err}");
    let long_label = experiment("l", &[("team", &"v".repeat(300))]);
    let err = store.insert_experiment(&long_label).await.unwrap_err().to_string();
    assert!(err.contains("experiment_labels.label_value"), "{err}");
    let err = store
        .put_analysis_summary(
            ExperimentId(1),
            &AnalysisSummary {
                tool: "overview".into(),
                mfu: None,
                step_time_ms: None,
                duty_cycle: None,
                peak_memory_bytes: None,
                bound_by: None,
                details: serde_json::json!({ "rows": "y".repeat(2 << 20) }),
            },
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("analysis_summaries.details"), "{err}");
    let id = store.insert_experiment(&experiment("ok", &[])).await.unwrap().id;
    let err = store
        .transition_experiment(id, ExperimentStatus::Pending, ExperimentStatus::Running, &"r".repeat(1 << 21), None)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("experiment_transitions.reason"), "{err}");
    assert_eq!(store.count_experiments(&ExperimentFilter::default()).await.unwrap(), 1, "nothing half-written");
    assert_eq!(store.get_experiment(id).await.unwrap().status, ExperimentStatus::Pending);
}

async fn goals_and_sessions_round_trip(store: MetaStore) {
    let low = store.insert_goal(&goal("low", 1)).await.unwrap();
    let high = store.insert_goal(&goal("high", 5)).await.unwrap();
    let high_later = store.insert_goal(&goal("high later", 5)).await.unwrap();
    assert_eq!(low.status, GoalStatus::Open);
    assert_eq!(low.target, Some(0.45));
    let order: Vec<_> = store.list_goals(Some(GoalStatus::Open)).await.unwrap().into_iter().map(|g| g.id).collect();
    assert_eq!(order, [high.id, high_later.id, low.id], "highest priority first, then oldest");
    assert!(store.list_goals(Some(GoalStatus::Achieved)).await.unwrap().is_empty());
    let session = store
        .insert_session(&NewSession {
            goal: Some(high.id),
            name: "sweep".into(),
            spec: serde_json::json!({"sweep": {"config.batch_size": [128, 256]}}),
        })
        .await
        .unwrap();
    assert_eq!(store.get_session(session.id).await.unwrap(), session);
    let mut member = experiment("member", &[]);
    member.session = Some(session.id);
    member.goal = Some(high.id);
    let member = store.insert_experiment(&member).await.unwrap();
    let in_session = ExperimentFilter { session: Some(session.id), ..Default::default() };
    assert_eq!(store.list_experiments(&in_session).await.unwrap(), [member]);
}

async fn jobs_record_status_history_and_leases(store: MetaStore) {
    let new = NewJob {
        name: "falcon-e-1-a1".into(),
        spec: serde_json::json!({"image": "x", "command": ["python3", "train.py"]}),
        priority: 3,
        labels: BTreeMap::from([("falcon/owner".into(), "exp".into())]),
    };
    let job = store.insert_job(&new).await.unwrap();
    assert_eq!((job.status, job.attempt, job.priority), (JobStatus::Queued, 1, 3));
    let dup = store.insert_job(&new).await.unwrap_err();
    assert!(matches!(&dup, InfraError::Conflict(m) if m.contains("falcon-e-1-a1")), "{dup}");

    store
        .transition_job(
            job.id,
            JobStatus::Queued,
            JobStatus::Submitted,
            "placed on pool local",
            JobChanges { placement: Some(Some(("local".into(), "falcon-j1-a1".into()))), ..Default::default() },
        )
        .await
        .unwrap();
    store
        .transition_job(
            job.id,
            JobStatus::Submitted,
            JobStatus::Running,
            "pid 42",
            JobChanges { started: Some(falcon_core::time::Millis(5)), ..Default::default() },
        )
        .await
        .unwrap();
    store
        .transition_job(
            job.id,
            JobStatus::Running,
            JobStatus::Failed,
            "exited with status 3",
            JobChanges { exit_code: Some(3), ..Default::default() },
        )
        .await
        .unwrap();
    let rec = store.get_job(job.id).await.unwrap();
    assert_eq!(
        (rec.status, rec.exit_code, rec.status_reason.as_deref()),
        (JobStatus::Failed, Some(3), Some("exited with status 3"))
    );
    let history = store.job_history(job.id).await.unwrap();
    assert_eq!(
        history.iter().map(|t| t.to).collect::<Vec<_>>(),
        [JobStatus::Queued, JobStatus::Submitted, JobStatus::Running, JobStatus::Failed]
    );
    assert_eq!(history[3].exit_code, Some(3));
    assert_eq!(
        (rec.pool.as_deref(), rec.backend_ref.as_deref(), rec.started),
        (Some("local"), Some("falcon-j1-a1"), Some(falcon_core::time::Millis(5)))
    );
    store
        .transition_job(
            job.id,
            JobStatus::Failed,
            JobStatus::Queued,
            "retry",
            JobChanges {
                attempt: Some(2),
                placement: Some(None),
                excluded_pools: Some(vec!["local".into()]),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let rec = store.get_job(job.id).await.unwrap();
    assert_eq!(
        (rec.attempt, rec.pool, rec.backend_ref, rec.excluded_pools),
        (2, None, None, vec!["local".to_string()])
    );
    assert!(!rec.cancel_requested);
    store.request_job_cancel(job.id).await.unwrap();
    assert!(store.get_job(job.id).await.unwrap().cancel_requested);
    assert_eq!(store.list_jobs(&[JobStatus::Queued]).await.unwrap().len(), 1);
    assert!(store.list_jobs(&[JobStatus::Running]).await.unwrap().is_empty());

    assert!(store.claim_job(job.id, "worker-a", Duration::from_millis(300)).await.unwrap());
    assert!(!store.claim_job(job.id, "worker-b", Duration::from_secs(30)).await.unwrap(), "a live lease is exclusive");
    assert!(store.claim_job(job.id, "worker-a", Duration::from_millis(300)).await.unwrap(), "the owner renews");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        store.claim_job(job.id, "worker-b", Duration::from_secs(30)).await.unwrap(),
        "an expired lease is taken over"
    );
    assert_eq!(store.get_job(job.id).await.unwrap().lease_owner.as_deref(), Some("worker-b"));
    store.release_job(job.id, "worker-a").await.unwrap();
    assert_eq!(
        store.get_job(job.id).await.unwrap().lease_owner.as_deref(),
        Some("worker-b"),
        "only the owner releases"
    );
    store.release_job(job.id, "worker-b").await.unwrap();
    assert_eq!(store.get_job(job.id).await.unwrap().lease_owner, None);
    assert!(matches!(store.get_job(JobId(424242)).await.unwrap_err(), InfraError::NotFound { .. }));
}

async fn collection_failures_are_counted_in_the_store_and_cleared_by_a_new_run(store: MetaStore) {
    let new = NewJob { name: "collect".into(), spec: serde_json::json!({}), priority: 0, labels: BTreeMap::new() };
    let job = store.insert_job(&new).await.unwrap();
    assert_eq!((job.collect_failures, job.collect_failing_since), (0, None));
    let placed = JobChanges { placement: Some(Some(("local".into(), "pid-1".into()))), ..Default::default() };
    store.transition_job(job.id, JobStatus::Queued, JobStatus::Running, "pid 1", placed).await.unwrap();
    let (tries, since) = store.record_collect_failure(job.id).await.unwrap();
    assert_eq!(tries, 1);
    tokio::time::sleep(Duration::from_millis(20)).await;
    // A second worker (or the same one, restarted) continues the count; the first failure's time stays.
    assert_eq!(store.record_collect_failure(job.id).await.unwrap(), (2, since));
    let rec = store.get_job(job.id).await.unwrap();
    assert_eq!((rec.collect_failures, rec.collect_failing_since), (2, Some(since)));
    // A status change of the same run keeps it; a new attempt (a new run) starts afresh.
    store
        .transition_job(job.id, JobStatus::Running, JobStatus::Failed, "gave up", JobChanges::default())
        .await
        .unwrap();
    assert_eq!(store.get_job(job.id).await.unwrap().collect_failures, 2);
    let retry = JobChanges { attempt: Some(2), placement: Some(None), ..Default::default() };
    store.transition_job(job.id, JobStatus::Failed, JobStatus::Queued, "retry", retry).await.unwrap();
    let rec = store.get_job(job.id).await.unwrap();
    assert_eq!((rec.collect_failures, rec.collect_failing_since), (0, None));
    assert_eq!(store.record_collect_failure(job.id).await.unwrap().0, 1);
    assert!(matches!(store.record_collect_failure(JobId(424242)).await.unwrap_err(), InfraError::NotFound { .. }));
}

async fn lease_renewal_extends_only_live_leases_of_active_jobs(store: MetaStore) {
    let mut ids = Vec::new();
    for name in ["renew-held", "renew-lapsed", "renew-ended", "renew-other"] {
        let new = NewJob { name: name.into(), spec: serde_json::json!({}), priority: 0, labels: BTreeMap::new() };
        ids.push(store.insert_job(&new).await.unwrap().id);
    }
    let [held, lapsed, ended, other] = [ids[0], ids[1], ids[2], ids[3]];
    assert!(store.claim_job(held, "worker-a", Duration::from_secs(5)).await.unwrap());
    assert!(store.claim_job(lapsed, "worker-a", Duration::from_millis(1)).await.unwrap());
    assert!(store.claim_job(ended, "worker-a", Duration::from_secs(5)).await.unwrap());
    assert!(store.claim_job(other, "worker-b", Duration::from_secs(5)).await.unwrap());
    store
        .transition_job(ended, JobStatus::Queued, JobStatus::Cancelled, "cancelled", JobChanges::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let before: Vec<_> = lease_snapshot(&store, &ids).await;

    assert_eq!(store.renew_leases("worker-a", Duration::from_secs(600)).await.unwrap(), 1, "only the live lease");
    let after = lease_snapshot(&store, &ids).await;
    assert!(after[0].1.unwrap().0 >= before[0].1.unwrap().0 + 500_000, "the held lease now runs ~600 s: {after:?}");
    assert_eq!(after[1..], before[1..], "a lapsed lease, an ended job's and another owner's are untouched");
    assert!(store.claim_job(lapsed, "worker-b", Duration::from_secs(60)).await.unwrap(), "the lapsed one is free");
    assert_eq!(store.renew_leases("worker-a", Duration::from_secs(600)).await.unwrap(), 1);
    assert_eq!(
        store.get_job(lapsed).await.unwrap().lease_owner.as_deref(),
        Some("worker-b"),
        "renewal never takes back a lease another worker claimed"
    );
    assert_eq!(store.renew_leases("nobody", Duration::from_secs(600)).await.unwrap(), 0);
}

async fn a_clean_stop_releases_every_lease_of_its_owner_only(store: MetaStore) {
    let mut ids = Vec::new();
    for name in ["release-a1", "release-a2", "release-b"] {
        let new = NewJob { name: name.into(), spec: serde_json::json!({}), priority: 0, labels: BTreeMap::new() };
        ids.push(store.insert_job(&new).await.unwrap().id);
    }
    assert!(store.claim_job(ids[0], "stopping", Duration::from_secs(600)).await.unwrap());
    assert!(store.claim_job(ids[1], "stopping", Duration::from_secs(600)).await.unwrap());
    assert!(store.claim_job(ids[2], "staying", Duration::from_secs(600)).await.unwrap());
    assert_eq!(store.release_leases("stopping").await.unwrap(), 2);
    let after = lease_snapshot(&store, &ids).await;
    assert_eq!((after[0].clone(), after[1].clone()), ((None, None), (None, None)));
    assert_eq!(after[2].0.as_deref(), Some("staying"));
    assert!(store.claim_job(ids[0], "next", Duration::from_secs(60)).await.unwrap(), "taken over at once");
    assert_eq!(store.release_leases("nobody").await.unwrap(), 0);
}

async fn tokens_are_kept_as_hashes_found_live_and_revoked(store: MetaStore) {
    assert!(!store.any_live_token().await.unwrap());
    assert!(!store.any_token_ever().await.unwrap());
    let t = store.insert_token("ci-bot", "write", "hash-of-secret").await.unwrap();
    assert_eq!((t.name.as_str(), t.scope.as_str(), t.revoked), ("ci-bot", "write", None));
    let again = store.insert_token("ci-bot", "read", "other-hash").await;
    assert!(matches!(again, Err(falcon_infra::InfraError::Conflict(_))), "{again:?}");
    assert!(store.any_live_token().await.unwrap());
    assert_eq!(store.find_live_token("hash-of-secret").await.unwrap().map(|t| t.name), Some("ci-bot".to_string()));
    assert_eq!(store.find_live_token("unknown-hash").await.unwrap(), None);
    let revoked = store.revoke_token("ci-bot").await.unwrap();
    assert!(revoked.revoked.is_some());
    assert_eq!(store.find_live_token("hash-of-secret").await.unwrap(), None, "a revoked token finds nothing");
    assert!(!store.any_live_token().await.unwrap());
    assert!(store.revoke_token("ci-bot").await.is_err(), "no live token of that name");
    assert_eq!(store.list_tokens().await.unwrap(), vec![revoked], "the row stays, its name reserved");
    assert!(store.any_token_ever().await.unwrap(), "a store that held a token never reads as never having had one");
}

async fn signins_speak_for_live_tokens_until_ended_or_expired(store: MetaStore) {
    use falcon_core::time::Millis;
    let now = Millis(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64);
    let hour = Millis(now.0 + 3_600_000);
    assert!(store.insert_signin("s-hash", "nobody", hour).await.is_err(), "no live token of that name");
    store.insert_token("admin-a", "admin", "hash-a").await.unwrap();
    store.insert_signin("s-1", "admin-a", hour).await.unwrap();
    store.insert_signin("s-2", "admin-a", hour).await.unwrap();
    store.insert_signin("s-old", "admin-a", Millis(now.0 - 1)).await.unwrap();
    let found = store.find_signin_token("s-1", now).await.unwrap().expect("a live session");
    assert_eq!((found.name.as_str(), found.scope.as_str()), ("admin-a", "admin"));
    assert_eq!(store.find_signin_token("s-old", now).await.unwrap(), None, "expired");
    assert_eq!(store.find_signin_token("unknown", now).await.unwrap(), None);
    assert!(store.end_signin("s-1").await.unwrap(), "signed out");
    assert!(!store.end_signin("s-1").await.unwrap(), "once");
    assert_eq!(store.find_signin_token("s-1", now).await.unwrap(), None, "a session signed out is gone");
    assert!(store.find_signin_token("s-2", now).await.unwrap().is_some(), "the other one still speaks");
    store.revoke_token("admin-a").await.unwrap();
    assert_eq!(store.find_signin_token("s-2", now).await.unwrap(), None, "revoking the token ends its sessions");
    assert!(store.insert_signin("s-3", "admin-a", hour).await.is_err(), "no session for a revoked token");
}

/// Each job's (lease owner, lease expiry).
async fn lease_snapshot(store: &MetaStore, ids: &[JobId]) -> Vec<(Option<String>, Option<falcon_core::time::Millis>)> {
    let mut out = Vec::new();
    for id in ids {
        let job = store.get_job(*id).await.unwrap();
        out.push((job.lease_owner, job.lease_expires));
    }
    out
}

async fn artifacts_are_indexed_once(store: MetaStore) {
    let exp = store.insert_experiment(&experiment("a", &[])).await.unwrap().id;
    let row = |key: &str, kind| NewArtifact {
        experiment: Some(exp),
        job: None,
        kind,
        key: format!("experiments/{exp}/{key}"),
        uri: format!("gs://bucket/experiments/{exp}/{key}"),
        size: 1234,
        sha256: "ab".repeat(32),
        content_type: "application/x-protobuf".into(),
    };
    store.insert_artifact(&row("plugins/profile/r/h.xplane.pb", ArtifactKind::Xprof)).await.unwrap();
    store.insert_artifact(&row("metrics.jsonl", ArtifactKind::Metrics)).await.unwrap();
    let all = store.list_artifacts(exp, None).await.unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].size, 1234);
    let profiles = store.list_artifacts(exp, Some(ArtifactKind::Xprof)).await.unwrap();
    assert_eq!(profiles.len(), 1);
    assert!(profiles[0].uri.ends_with("h.xplane.pb"));
    let dup = store.insert_artifact(&row("metrics.jsonl", ArtifactKind::Metrics)).await.unwrap_err();
    assert!(matches!(dup, InfraError::Conflict(_)), "{dup}");
}

async fn summaries_are_replaced_not_duplicated(store: MetaStore) {
    let exp = store.insert_experiment(&experiment("a", &[])).await.unwrap().id;
    let summary = |metric: &str, mean: f64| MetricSummary {
        metric: metric.into(),
        count: 90,
        mean,
        median: mean,
        p90: mean * 1.1,
        min: mean * 0.9,
        max: mean * 1.2,
        last: mean,
        spread: Some(mean * 0.05),
    };
    store.put_metric_summaries(exp, &[summary("step_time_s", 0.5), summary("loss", 2.0)]).await.unwrap();
    store.put_metric_summaries(exp, &[summary("step_time_s", 0.4)]).await.unwrap();
    assert_eq!(store.metric_summaries(exp).await.unwrap(), [summary("step_time_s", 0.4)]);
    let analysis = AnalysisSummary {
        tool: "overview".into(),
        mfu: Some(0.41),
        step_time_ms: Some(412.5),
        duty_cycle: Some(0.93),
        peak_memory_bytes: Some(15_000_000_000),
        bound_by: Some("compute".into()),
        details: serde_json::json!({"device_type": "TPU v6e"}),
    };
    store.put_analysis_summary(exp, &analysis).await.unwrap();
    store.put_analysis_summary(exp, &AnalysisSummary { mfu: Some(0.44), ..analysis.clone() }).await.unwrap();
    let stored = store.analysis_summaries(exp).await.unwrap();
    assert_eq!(stored, [AnalysisSummary { mfu: Some(0.44), ..analysis }]);
}

async fn concurrent_writers_lose_nothing(store: MetaStore) {
    const WRITERS: usize = 8;
    const EACH: usize = 25;
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for i in 0..EACH {
                let id = store
                    .insert_experiment(&experiment(&format!("w{w}-{i}"), &[("writer", &w.to_string())]))
                    .await
                    .unwrap()
                    .id;
                store
                    .transition_experiment(id, ExperimentStatus::Pending, ExperimentStatus::Provisioning, "go", None)
                    .await
                    .unwrap();
                ids.push(id);
            }
            ids
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort();
    all.dedup();
    assert_eq!(all.len(), WRITERS * EACH, "every insert got its own id");
    assert_eq!(store.count_experiments(&ExperimentFilter::default()).await.unwrap() as usize, WRITERS * EACH);
    let provisioning = ExperimentFilter { status: Some(ExperimentStatus::Provisioning), ..Default::default() };
    assert_eq!(store.count_experiments(&provisioning).await.unwrap() as usize, WRITERS * EACH);
    for w in 0..WRITERS {
        let mine = ExperimentFilter { labels: vec![("writer".into(), w.to_string())], ..Default::default() };
        assert_eq!(store.count_experiments(&mine).await.unwrap() as usize, EACH);
    }
    for id in all.iter().step_by(17) {
        assert_eq!(store.experiment_history(*id).await.unwrap().len(), 2);
    }

    // Racing compare-and-set writers on one row: exactly one wins, the rest get a conflict.
    let contested = store.insert_experiment(&experiment("contested", &[])).await.unwrap().id;
    let racers: Vec<_> = (0..16)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .transition_experiment(
                        contested,
                        ExperimentStatus::Pending,
                        ExperimentStatus::Provisioning,
                        &format!("racer {i}"),
                        None,
                    )
                    .await
            })
        })
        .collect();
    let mut wins = 0;
    for r in racers {
        match r.await.unwrap() {
            Ok(_) => wins += 1,
            Err(InfraError::Conflict(_)) => {}
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
    assert_eq!(wins, 1);
    assert_eq!(store.experiment_history(contested).await.unwrap().len(), 2);

    // Racing lease claims on one job: exactly one owner.
    let job = store
        .insert_job(&NewJob {
            name: "contested-job".into(),
            spec: serde_json::json!({}),
            priority: 0,
            labels: BTreeMap::new(),
        })
        .await
        .unwrap()
        .id;
    let claims: Vec<_> = (0..16)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(
                async move { store.claim_job(job, &format!("worker-{i}"), Duration::from_secs(60)).await.unwrap() },
            )
        })
        .collect();
    let mut owners = 0;
    for c in claims {
        owners += usize::from(c.await.unwrap());
    }
    assert_eq!(owners, 1);

    // Racing batch claims over the same 60 jobs: every job ends up with exactly one holder.
    let mut ids = Vec::new();
    for i in 0..60 {
        let job =
            NewJob { name: format!("batch-{i}"), spec: serde_json::json!({}), priority: 0, labels: BTreeMap::new() };
        ids.push(store.insert_job(&job).await.unwrap().id);
    }
    let claimers: Vec<_> = (0..4)
        .map(|w| {
            let (store, ids) = (store.clone(), ids.clone());
            tokio::spawn(async move {
                store.claim_jobs(&ids, &format!("batch-worker-{w}"), Duration::from_secs(60)).await.unwrap()
            })
        })
        .collect();
    let mut held = Vec::new();
    for c in claimers {
        held.extend(c.await.unwrap());
    }
    held.sort();
    assert_eq!(held, ids, "each job claimed by exactly one worker");
}

async fn sweeps_insert_all_or_nothing(store: MetaStore) {
    let good = experiment("ok", &[]);
    let mut bad = experiment("bad", &[]);
    bad.name = "n".repeat(300);
    let err = store.insert_experiments(&[good.clone(), bad]).await.unwrap_err().to_string();
    assert!(err.contains("experiments.name"), "{err}");
    assert_eq!(store.count_experiments(&ExperimentFilter::default()).await.unwrap(), 0);
    let ids = store.insert_experiments(&[good.clone(), good]).await.unwrap();
    assert_eq!(ids.len(), 2);
    assert!(ids[0] < ids[1]);
}

async fn goal_claims_are_atomic_ordered_and_leased(store: MetaStore) {
    let low = store.insert_goal(&goal("low", 1)).await.unwrap().id;
    let high = store.insert_goal(&goal("high", 9)).await.unwrap().id;
    // 20 concurrent claimers, 2 goals: exactly two winners, the high-priority goal among them.
    let claimers: Vec<_> = (0..20)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(
                async move { store.claim_next_goal(&format!("agent-{i}"), Duration::from_secs(60)).await.unwrap() },
            )
        })
        .collect();
    let mut won = Vec::new();
    for c in claimers {
        if let Some(g) = c.await.unwrap() {
            won.push((g.id, g.owner.unwrap()));
        }
    }
    won.sort();
    assert_eq!(won.len(), 2, "{won:?}");
    assert_eq!(won.iter().map(|w| w.0).collect::<Vec<_>>(), {
        let mut v = vec![low, high];
        v.sort();
        v
    });
    assert!(store.claim_next_goal("late", Duration::from_secs(60)).await.unwrap().is_none());

    // 20 concurrent claimers of one goal: one winner.
    let single = store.insert_goal(&goal("single", 100)).await.unwrap().id;
    let racers: Vec<_> = (0..20)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store.claim_goal(single, &format!("racer-{i}"), Duration::from_secs(60)).await.unwrap()
            })
        })
        .collect();
    let mut winners = 0;
    for r in racers {
        winners += usize::from(r.await.unwrap().is_some());
    }
    assert_eq!(winners, 1);

    // A lapsed lease makes the goal claimable again; the owner can renew; release reopens it.
    let third = store.insert_goal(&goal("third", 5)).await.unwrap().id;
    let claimed = store.claim_goal(third, "a", Duration::from_millis(200)).await.unwrap().unwrap();
    assert_eq!((claimed.status, claimed.owner.as_deref()), (GoalStatus::Claimed, Some("a")));
    assert!(store.claim_goal(third, "b", Duration::from_secs(60)).await.unwrap().is_none());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(store.claim_next_goal("b", Duration::from_secs(60)).await.unwrap().unwrap().id, third);
    let released =
        store.transition_goal(third, GoalStatus::Claimed, GoalStatus::Open, "handing over", Some("b")).await.unwrap();
    assert_eq!((released.status, released.owner), (GoalStatus::Open, None));
    let achieved =
        store.transition_goal(high, GoalStatus::Claimed, GoalStatus::Achieved, "MFU 46%", Some("x")).await.unwrap();
    assert_eq!(achieved.status, GoalStatus::Achieved);
    let err = store.transition_goal(high, GoalStatus::Claimed, GoalStatus::Abandoned, "late", None).await.unwrap_err();
    assert!(matches!(&err, InfraError::Conflict(m) if m.contains("ACHIEVED")), "{err}");
}

async fn analysis_work_list_is_completed_experiments_with_matching_artifacts_and_no_row(store: MetaStore) {
    let mut ids = Vec::new();
    for (name, key) in [
        ("xplane", "plugins/profile/r/h.xplane.pb"),
        ("torch", "rank0.pt.trace.json.gz"),
        ("hlo", "m.hlo.txt"),
        ("running", "p/h.xplane.pb"),
    ] {
        let id = store.insert_experiment(&experiment(name, &[])).await.unwrap().id;
        let kind = ArtifactKind::recognise(key);
        store
            .insert_artifact(&NewArtifact {
                experiment: Some(id),
                job: None,
                kind,
                key: format!("experiments/{id}/{key}"),
                uri: format!("file:///a/experiments/{id}/{key}"),
                size: 1,
                sha256: "ab".repeat(32),
                content_type: "application/octet-stream".into(),
            })
            .await
            .unwrap();
        store
            .transition_experiment(id, ExperimentStatus::Pending, ExperimentStatus::Running, "run", None)
            .await
            .unwrap();
        if name != "running" {
            store
                .transition_experiment(id, ExperimentStatus::Running, ExperimentStatus::Completed, "done", None)
                .await
                .unwrap();
        }
        ids.push(id);
    }
    let profiles =
        store.experiments_awaiting_analysis("profile", ArtifactKind::Xprof, &[".xplane.pb"], 10).await.unwrap();
    assert_eq!(profiles, [ids[0]], "completed, with a profile, not the running one");
    let traces =
        store.experiments_awaiting_analysis("trace", ArtifactKind::Trace, &[".json", ".json.gz"], 10).await.unwrap();
    assert_eq!(traces, [ids[1]], "a Chrome trace, not an HLO dump");
    let row = AnalysisSummary {
        tool: "trace".into(),
        mfu: None,
        step_time_ms: None,
        duty_cycle: None,
        peak_memory_bytes: None,
        bound_by: None,
        details: serde_json::json!({}),
    };
    store.put_analysis_summary(ids[1], &row).await.unwrap();
    assert!(store
        .experiments_awaiting_analysis("trace", ArtifactKind::Trace, &[".json", ".json.gz"], 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        store.experiments_awaiting_analysis("trace", ArtifactKind::Trace, &[], 10).await.unwrap(),
        [ids[2]],
        "any key without suffixes"
    );
}

/// A summary whose every statistic is `median` (the run-noise tests read only the median).
fn median_summary(metric: &str, median: f64) -> MetricSummary {
    MetricSummary {
        metric: metric.into(),
        count: 10,
        mean: median,
        median,
        p90: median,
        min: median,
        max: median,
        last: median,
        spread: None,
    }
}

/// Records an experiment of `config_hash`, moves it to `status` through the lifecycle and stores `summaries`.
async fn run_of(
    store: &MetaStore,
    name: &str,
    config_hash: &str,
    status: ExperimentStatus,
    summaries: &[MetricSummary],
) -> ExperimentId {
    let new = NewExperiment { config_hash: config_hash.into(), ..experiment(name, &[]) };
    let id = store.insert_experiment(&new).await.unwrap().id;
    let path = [ExperimentStatus::Pending, ExperimentStatus::Provisioning, ExperimentStatus::Running, status];
    for step in path.windows(2).take_while(|w| w[0] != status) {
        store.transition_experiment(id, step[0], step[1], "test", None).await.unwrap();
    }
    store.put_metric_summaries(id, summaries).await.unwrap();
    id
}

const HASH_A: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90";
const HASH_B: &str = "a1b2c3d4ffff0718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90";
const HASH_C: &str = "0fedcba9876543210fedcba9876543210fedcba9876543210fedcba987654321";

async fn spread_round_trips_some_and_none(store: MetaStore) {
    let exp = store.insert_experiment(&experiment("spread", &[])).await.unwrap().id;
    let with = MetricSummary { spread: Some(0.0123), ..median_summary("step_time_s", 0.5) };
    let without = median_summary("tokens_per_s", 9000.0);
    store.put_metric_summaries(exp, &[with.clone(), without.clone()]).await.unwrap();
    assert_eq!(store.metric_summaries(exp).await.unwrap(), [with, without]);
    let old: MetricSummary = serde_json::from_value(serde_json::json!({
        "metric": "loss", "count": 1, "mean": 1.0, "median": 1.0, "p90": 1.0, "min": 1.0, "max": 1.0, "last": 1.0
    }))
    .unwrap();
    assert_eq!(old.spread, None, "JSON written before the field existed reads as no spread");
}

async fn summaries_of_many_experiments_come_in_one_read(store: MetaStore) {
    let a = run_of(
        &store,
        "a",
        HASH_A,
        ExperimentStatus::Completed,
        &[MetricSummary { spread: Some(0.01), ..median_summary("step_time_s", 0.5) }, median_summary("loss", 2.5)],
    )
    .await;
    let b = run_of(&store, "b", HASH_B, ExperimentStatus::Running, &[median_summary("tokens_per_s", 9000.0)]).await;
    let none = run_of(&store, "none", HASH_C, ExperimentStatus::Completed, &[]).await;
    let other = run_of(&store, "other", HASH_C, ExperimentStatus::Completed, &[median_summary("loss", 1.0)]).await;
    let missing = ExperimentId(999_999);

    let got = store.metric_summaries_of(&[b, a, none, missing, a]).await.unwrap();
    assert_eq!(got.keys().copied().collect::<Vec<_>>(), [a, b, none, missing], "every id asked for, once");
    for id in [a, b, none] {
        assert_eq!(got[&id], store.metric_summaries(id).await.unwrap(), "{id}: the same rows as one by one");
    }
    assert_eq!(got[&a].iter().map(|m| m.metric.as_str()).collect::<Vec<_>>(), ["loss", "step_time_s"]);
    assert_eq!(got[&a][1].spread, Some(0.01));
    assert!(got[&none].is_empty() && got[&missing].is_empty());
    assert!(!got.contains_key(&other), "only the ids asked for");
    assert!(store.metric_summaries_of(&[]).await.unwrap().is_empty());

    // More ids than one query binds: still every one, with its rows.
    let mut many: Vec<ExperimentId> = (1..=1200).map(|i| ExperimentId(1_000_000 + i)).collect();
    many.push(other);
    let got = store.metric_summaries_of(&many).await.unwrap();
    assert_eq!(got.len(), 1201);
    assert_eq!(got[&other], [median_summary("loss", 1.0)]);
}

async fn run_noise_is_welford_over_completed_runs_of_one_hash(store: MetaStore) {
    let medians = [1.0, 1.1, 0.9, 1.05];
    for (i, m) in medians.iter().enumerate() {
        let summaries = [median_summary("step_time_s", *m), median_summary("loss", if i == 0 { 0.0 } else { -1.0 })];
        run_of(&store, &format!("a{i}"), HASH_A, ExperimentStatus::Completed, &summaries).await;
    }
    run_of(&store, "a-running", HASH_A, ExperimentStatus::Running, &[median_summary("step_time_s", 5.0)]).await;
    run_of(&store, "b", HASH_B, ExperimentStatus::Completed, &[median_summary("step_time_s", 3.0)]).await;
    let b_rows = store.refresh_run_noise(HASH_B).await.unwrap();
    assert_eq!(b_rows.len(), 1);

    let rows = store.refresh_run_noise(HASH_A).await.unwrap();
    let logs: Vec<f64> = medians.iter().map(|m: &f64| m.ln()).collect();
    let mean = logs.iter().sum::<f64>() / logs.len() as f64;
    let m2: f64 = logs.iter().map(|l| (l - mean).powi(2)).sum();
    assert_eq!(rows.len(), 1, "loss has no median > 0, so no row: {rows:?}");
    let row = &rows[0];
    assert_eq!((row.config_hash.as_str(), row.metric.as_str(), row.runs), (HASH_A, "step_time_s", 4));
    assert!((row.mean_log - mean).abs() < 1e-12, "{} vs {mean}", row.mean_log);
    assert!((row.m2_log - m2).abs() < 1e-12, "{} vs {m2}", row.m2_log);
    assert_eq!(store.run_noise(HASH_A, "step_time_s").await.unwrap().as_ref(), Some(row));
    assert_eq!(store.run_noise(HASH_A, "loss").await.unwrap(), None);
    assert_eq!(store.run_noise(HASH_C, "step_time_s").await.unwrap(), None);
    assert_eq!(store.refresh_run_noise(HASH_A).await.unwrap(), rows, "idempotent");
    assert_eq!(store.run_noise(HASH_A, "step_time_s").await.unwrap().as_ref(), Some(row));
    let b = store.run_noise(HASH_B, "step_time_s").await.unwrap();
    assert_eq!(
        b,
        Some(RunNoise {
            config_hash: HASH_B.into(),
            metric: "step_time_s".into(),
            runs: 1,
            mean_log: 3f64.ln(),
            m2_log: 0.0
        })
    );
    assert_eq!(b_rows, [b.unwrap()], "the other hash is untouched");

    // A metric that loses its last usable run loses its row; a hash with no completed run has none.
    assert!(store.refresh_run_noise(HASH_C).await.unwrap().is_empty());
    let b_exp = store
        .list_experiments(&ExperimentFilter { config_hash: Some(HASH_B.into()), ..Default::default() })
        .await
        .unwrap()[0]
        .id;
    store.put_metric_summaries(b_exp, &[median_summary("step_time_s", -2.0)]).await.unwrap();
    assert!(store.refresh_run_noise(HASH_B).await.unwrap().is_empty());
    assert_eq!(store.run_noise(HASH_B, "step_time_s").await.unwrap(), None);
}

async fn config_hash_filter_matches_a_hex_prefix(store: MetaStore) {
    let a1 = run_of(&store, "a1", HASH_A, ExperimentStatus::Completed, &[]).await;
    let a2 = run_of(&store, "a2", HASH_A, ExperimentStatus::Pending, &[]).await;
    let b = run_of(&store, "b", HASH_B, ExperimentStatus::Completed, &[]).await;
    let c = run_of(&store, "c", HASH_C, ExperimentStatus::Completed, &[]).await;
    // Not a config hash Falcon writes, but one a LIKE that ignores case (SQLite's) would match.
    run_of(&store, "upper", &HASH_A.to_uppercase(), ExperimentStatus::Completed, &[]).await;
    let ids = |rows: Vec<falcon_infra::meta::ExperimentRecord>| rows.into_iter().map(|e| e.id).collect::<Vec<_>>();
    let by = |h: &str| ExperimentFilter { config_hash: Some(h.into()), ..Default::default() };
    assert_eq!(ids(store.list_experiments(&by(&HASH_A[..12])).await.unwrap()), [a2, a1], "12-char prefix");
    assert_eq!(store.count_experiments(&by(&HASH_A[..12])).await.unwrap(), 2);
    assert_eq!(ids(store.list_experiments(&by(HASH_A)).await.unwrap()), [a2, a1], "the full hash");
    assert_eq!(ids(store.list_experiments(&by(HASH_B)).await.unwrap()), [b]);
    assert_eq!(ids(store.list_experiments(&by("a1b2c3d4")).await.unwrap()), [b, a2, a1], "shared prefix");
    assert_eq!(ids(store.list_experiments(&by("0f")).await.unwrap()), [c]);
    assert!(store.list_experiments(&by("ffff")).await.unwrap().is_empty());
    for bad in ["ab%", "", "A1B2", "a_b", "a1b2 "] {
        let err = store.list_experiments(&by(bad)).await.unwrap_err();
        assert!(matches!(err, InfraError::InvalidValue { column: "config_hash", .. }), "{bad:?}: {err}");
        assert!(err.to_string().contains("config_hash"), "{err}");
        assert_eq!(err.kind(), falcon_core::ErrorKind::Usage);
        let err = store.count_experiments(&by(bad)).await.unwrap_err();
        assert!(matches!(err, InfraError::InvalidValue { column: "config_hash", .. }), "{bad:?}: {err}");
        let err = store.config_hashes_with_prefix(bad, 10).await.unwrap_err();
        assert!(matches!(err, InfraError::InvalidValue { column: "config_hash", .. }), "{bad:?}: {err}");
    }
    assert_eq!(store.config_hashes_with_prefix("a1b2", 10).await.unwrap(), [HASH_A, HASH_B], "distinct, sorted");
    assert_eq!(store.config_hashes_with_prefix("a1b2", 1).await.unwrap(), [HASH_A]);
    assert_eq!(store.config_hashes_with_prefix(HASH_C, 10).await.unwrap(), [HASH_C]);
    assert!(store.config_hashes_with_prefix("ffff", 10).await.unwrap().is_empty());
}

on_both_databases!(
    spread_round_trips_some_and_none,
    summaries_of_many_experiments_come_in_one_read,
    run_noise_is_welford_over_completed_runs_of_one_hash,
    config_hash_filter_matches_a_hex_prefix,
    analysis_work_list_is_completed_experiments_with_matching_artifacts_and_no_row,
    goal_claims_are_atomic_ordered_and_leased,
    migrations_are_current_and_reapplying_is_harmless,
    experiments_round_trip_with_labels_and_history,
    transitions_are_compare_and_set_and_audited,
    listing_filters_orders_and_pages,
    oversized_values_are_refused_naming_table_and_column,
    goals_and_sessions_round_trip,
    jobs_record_status_history_and_leases,
    collection_failures_are_counted_in_the_store_and_cleared_by_a_new_run,
    lease_renewal_extends_only_live_leases_of_active_jobs,
    a_clean_stop_releases_every_lease_of_its_owner_only,
    tokens_are_kept_as_hashes_found_live_and_revoked,
    signins_speak_for_live_tokens_until_ended_or_expired,
    artifacts_are_indexed_once,
    summaries_are_replaced_not_duplicated,
    concurrent_writers_lose_nothing,
    sweeps_insert_all_or_nothing,
);

#[tokio::test]
async fn bad_urls_and_dead_servers_are_reported_clearly() {
    let err = MetaStore::connect("postgres://x/y").await.unwrap_err().to_string();
    assert!(err.contains("postgres://x/y") && err.contains("mysql://"), "{err}");
    let err = MetaStore::connect("mysql://root@127.0.0.1:3306").await.unwrap_err().to_string();
    assert!(err.contains("name a database"), "{err}");
    let started = std::time::Instant::now();
    let err = MetaStore::connect("mysql://nobody:pw@127.0.0.1:1/x").await.unwrap_err().to_string();
    assert!(err.contains("127.0.0.1:1") && !err.contains("pw@"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(15), "a refused connection fails fast");
}

#[tokio::test]
async fn sqlite_file_uses_wal_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("nested/dir/meta.db").display());
    let store = MetaStore::create(&url).await.unwrap();
    let id = store.insert_experiment(&experiment("kept", &[])).await.unwrap().id;
    store.close().await;
    assert!(dir.path().join("nested/dir/meta.db-wal").exists() || dir.path().join("nested/dir/meta.db").exists());
    let reopened = MetaStore::connect(&url).await.unwrap();
    assert_eq!(reopened.get_experiment(id).await.unwrap().name, "kept");
    let mode: String = {
        use sqlx::Row;
        let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
        sqlx::query("PRAGMA journal_mode").fetch_one(&pool).await.unwrap().get(0)
    };
    assert_eq!(mode, "wal");
}
