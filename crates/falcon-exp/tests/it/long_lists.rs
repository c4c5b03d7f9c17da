//! Lists EXP builds from many experiments read all of them: `goal compare` ranked only the newest 1,000
//! completed experiments of a goal (so an older best one was missed without a word) and `session show` stopped
//! at 1,000 experiments.

use falcon_core::ids::ExperimentId;
use falcon_core::status::{Direction, ExperimentStatus, Scenario};
use falcon_exp::Exp;
use falcon_infra::meta::{MetricSummary, NewExperiment, NewGoal, NewSession};
use falcon_infra::MetaStore;

const N: usize = 1_201;

fn experiment(
    i: usize,
    goal: Option<falcon_core::ids::GoalId>,
    session: Option<falcon_core::ids::SessionId>,
) -> NewExperiment {
    NewExperiment {
        name: format!("run-{i}"),
        scenario: Scenario::Benchmark,
        goal,
        session,
        baseline: None,
        spec: serde_json::json!({ "name": format!("run-{i}"), "config": { "i": i } }),
        config_hash: format!("h{i}"),
        labels: Default::default(),
        code: None,
    }
}

async fn setup() -> (tempfile::TempDir, Exp, MetaStore) {
    let dir = crate::harness::job_dir();
    let config = crate::harness::config_under(dir.path(), "");
    let exp = Exp::init(&config).await.unwrap();
    let meta = MetaStore::connect(&config.db).await.unwrap();
    (dir, exp, meta)
}

#[tokio::test]
async fn goal_compare_ranks_every_completed_experiment_of_the_goal() {
    let (_dir, exp, meta) = setup().await;
    let goal = exp
        .create_goal(&NewGoal {
            title: "throughput".into(),
            workload: None,
            hardware: None,
            metric: "tokens_per_s".into(),
            direction: Direction::Maximize,
            target: None,
            baseline: None,
            priority: 0,
        })
        .await
        .unwrap();
    let news: Vec<_> = (0..N).map(|i| experiment(i, Some(goal.id), None)).collect();
    let ids: Vec<ExperimentId> = meta.insert_experiments(&news).await.unwrap();
    for (i, id) in ids.iter().enumerate() {
        meta.transition_experiment(*id, ExperimentStatus::Pending, ExperimentStatus::Completed, "test", None)
            .await
            .unwrap();
        // The oldest experiment is the best: a ranking of the newest 1,000 misses it.
        let v = (N - i) as f64;
        let s = MetricSummary {
            metric: "tokens_per_s".into(),
            count: 1,
            mean: v,
            median: v,
            p90: v,
            min: v,
            max: v,
            last: v,
            spread: None,
        };
        meta.put_metric_summaries(*id, &[s]).await.unwrap();
    }
    let comparison = exp.compare_goal(goal.id).await.unwrap();
    assert_eq!(comparison.rows.len(), N, "every completed experiment is ranked");
    assert_eq!(comparison.rows[0].experiment, ids[0], "the best (and oldest) one ranks first");
    assert_eq!(comparison.rows[0].value, N as f64);
}

#[tokio::test]
async fn session_show_lists_every_experiment_in_submission_order() {
    let (_dir, exp, meta) = setup().await;
    let session = meta
        .insert_session(&NewSession {
            goal: None,
            name: "big".into(),
            spec: serde_json::json!({}),
            kind: Default::default(),
        })
        .await
        .unwrap();
    let news: Vec<_> = (0..N).map(|i| experiment(i, None, Some(session.id))).collect();
    let ids = meta.insert_experiments(&news).await.unwrap();
    let view = exp.session(session.id).await.unwrap();
    let listed: Vec<ExperimentId> = view.experiments.iter().map(|e| e.id).collect();
    assert_eq!(listed, ids, "all {N}, oldest first");
}
