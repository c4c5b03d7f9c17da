//! The MetaStore suite, run on SQLite and on MariaDB alike: experiments, goals, sessions, tokens and writers
//! here; jobs, leases and goal claims in `metastore/leases.rs`; the runs of a config (artifacts, summaries,
//! noise, config-hash lookups) in `metastore/runs.rs`. Every test is listed once in `on_both_databases!` below.

#[path = "metastore/leases.rs"]
mod leases;
#[path = "metastore/runs.rs"]
mod runs;

use leases::{
    a_clean_stop_releases_every_lease_of_its_owner_only,
    collection_failures_are_counted_in_the_store_and_cleared_by_a_new_run, goal_claims_are_atomic_ordered_and_leased,
    jobs_record_status_history_and_leases, lease_renewal_extends_only_live_leases_of_active_jobs,
};
use runs::{
    analysis_work_list_is_completed_experiments_with_matching_artifacts_and_no_row, artifacts_are_indexed_once,
    config_hash_filter_matches_a_hex_prefix, run_noise_is_welford_over_completed_runs_of_one_hash,
    spread_round_trips_some_and_none, summaries_are_replaced_not_duplicated,
    summaries_of_many_experiments_come_in_one_read,
};

use falcon_core::ids::ExperimentId;
use falcon_core::status::{Direction, ExperimentStatus, GoalStatus, Scenario};
use falcon_infra::meta::{AnalysisSummary, ExperimentFilter, NewExperiment, NewGoal, NewJob, NewSession};
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
        code: None,
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
    assert_eq!(status.latest, 9);
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
            kind: Default::default(),
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

async fn calibrations_are_kept_per_pool_and_replaced(store: MetaStore) {
    use falcon_infra::meta::Calibration;
    assert_eq!(store.calibration("local").await.unwrap(), None);
    let c = |pool: &str, host: &str, tflops: f64, at: i64| Calibration {
        pool: pool.into(),
        host: host.into(),
        cores: 2,
        matmul_tflops: tflops,
        memory_gb_per_s: 12.5,
        measured_ms: at,
        details: r#"{"method":"test"}"#.into(),
    };
    store.put_calibration(&c("local", "vm-a", 0.1, 1000)).await.unwrap();
    store.put_calibration(&c("other", "vm-a", 0.2, 2000)).await.unwrap();
    store.put_calibration(&c("local", "vm-a", 0.15, 3000)).await.unwrap();
    assert_eq!(store.calibration("local").await.unwrap(), Some(c("local", "vm-a", 0.15, 3000)), "replaced");
    assert_eq!(store.calibrations().await.unwrap().len(), 2);
    assert_eq!(store.latest_calibration_on("vm-a").await.unwrap().map(|c| c.pool), Some("local".into()));
    assert_eq!(store.latest_calibration_on("vm-b").await.unwrap(), None);
    for bad in
        [c("local", "vm-a", f64::NAN, 1), c("local", "vm-a", 0.0, 1), Calibration { cores: 0, ..c("l", "h", 1.0, 1) }]
    {
        let e = store.put_calibration(&bad).await.unwrap_err();
        assert!(matches!(e, InfraError::InvalidValue { table: "calibrations", .. }), "{e}");
    }
    assert_eq!(
        store.calibration("local").await.unwrap().map(|c| c.matmul_tflops),
        Some(0.15),
        "a refusal changes nothing"
    );
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
    calibrations_are_kept_per_pool_and_replaced,
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
