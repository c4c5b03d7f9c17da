//! The MetaStore suite, part: jobs (status history, leases and their renewal, collection failures) and goal
//! claims — what a worker or an agent holds for a while.

use super::goal;
use falcon_core::ids::JobId;
use falcon_core::status::{GoalStatus, JobStatus};
use falcon_infra::meta::{JobChanges, NewJob};
use falcon_infra::{InfraError, MetaStore};
use std::collections::BTreeMap;
use std::time::Duration;

pub(crate) async fn jobs_record_status_history_and_leases(store: MetaStore) {
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

pub(crate) async fn collection_failures_are_counted_in_the_store_and_cleared_by_a_new_run(store: MetaStore) {
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

pub(crate) async fn lease_renewal_extends_only_live_leases_of_active_jobs(store: MetaStore) {
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

pub(crate) async fn a_clean_stop_releases_every_lease_of_its_owner_only(store: MetaStore) {
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

/// Each job's (lease owner, lease expiry).
async fn lease_snapshot(store: &MetaStore, ids: &[JobId]) -> Vec<(Option<String>, Option<falcon_core::time::Millis>)> {
    let mut out = Vec::new();
    for id in ids {
        let job = store.get_job(*id).await.unwrap();
        out.push((job.lease_owner, job.lease_expires));
    }
    out
}

pub(crate) async fn goal_claims_are_atomic_ordered_and_leased(store: MetaStore) {
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
