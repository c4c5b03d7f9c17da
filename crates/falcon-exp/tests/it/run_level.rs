//! Run-level verdicts through EXP: experiments whose metrics files hold steps with a run-level factor (sd 6 %)
//! and per-step noise (2 %), indexed the way a finished job's outputs are (summaries with spreads, the
//! config hash's noise row refreshed), then compared by experiment lists, sessions and config hashes, ranked
//! in a goal, and followed in a history.

use falcon_core::ids::{ExperimentId, SessionId};
use falcon_core::stats::rng::Rng;
use falcon_core::stats::verdict::NoiseSource;
use falcon_core::stats::VerdictKind;
use falcon_core::status::{Direction, ExperimentStatus, Scenario};
use falcon_core::ErrorKind;
use falcon_exp::runs::RunSet;
use falcon_exp::{Exp, ExpError};
use falcon_infra::meta::{ExperimentFilter, NewExperiment, NewGoal, NewSession};
use falcon_infra::{ArtifactStore, MetaStore, PutMode};

struct Env {
    _dir: tempfile::TempDir,
    exp: Exp,
    meta: MetaStore,
    store: ArtifactStore,
    rng: Rng,
}

async fn setup() -> Env {
    let dir = crate::harness::job_dir();
    let config = crate::harness::config_under(dir.path(), "");
    let exp = Exp::init(&config).await.unwrap();
    let meta = MetaStore::connect(&config.db).await.unwrap();
    let store = ArtifactStore::open(&config.artifacts, &config.gcs, &config.s3).unwrap();
    Env { _dir: dir, exp, meta, store, rng: Rng::new(16) }
}

fn hash(tag: char) -> String {
    std::iter::repeat_n(tag, 64).collect()
}

impl Env {
    fn normal(&mut self) -> f64 {
        self.rng.standard_normal()
    }

    /// One completed run of config `tag` with step times around `level` (times a run factor of sd 6 %),
    /// indexed like a finished job's.
    async fn run(
        &mut self,
        name: &str,
        tag: char,
        level: f64,
        goal: Option<falcon_core::ids::GoalId>,
        session: Option<SessionId>,
    ) -> ExperimentId {
        self.run_with(name, tag, level, 0.06, goal, session).await
    }

    /// A goal to lower `step_time_s` to 0.05 s.
    async fn step_time_goal(&self, title: &str) -> falcon_infra::meta::GoalRecord {
        let goal = NewGoal {
            title: title.into(),
            workload: None,
            hardware: None,
            metric: "step_time_s".into(),
            direction: Direction::Minimize,
            target: Some(0.05),
            baseline: None,
            priority: 0,
        };
        self.exp.create_goal(&goal).await.unwrap()
    }

    async fn run_with(
        &mut self,
        name: &str,
        tag: char,
        level: f64,
        run_sd: f64,
        goal: Option<falcon_core::ids::GoalId>,
        session: Option<SessionId>,
    ) -> ExperimentId {
        let new = NewExperiment {
            name: name.into(),
            scenario: Scenario::Benchmark,
            goal,
            session,
            baseline: None,
            spec: serde_json::json!({ "name": name, "config": { "tag": tag.to_string() } }),
            config_hash: hash(tag),
            labels: Default::default(),
            code: None,
        };
        let id = self.meta.insert_experiment(&new).await.unwrap().id;
        let factor = (run_sd * self.normal()).exp();
        let mut text = String::new();
        for step in 0..40 {
            let t = level * factor * (1.0 + 0.02 * self.normal());
            text.push_str(&format!("{{\"step\": {step}, \"step_time_s\": {t}, \"tokens_per_s\": {}}}\n", 1000.0 / t));
        }
        let key = format!("{}/metrics.jsonl", falcon_exp::experiments::experiment_prefix(id));
        self.store.put_bytes(&key, text.into_bytes(), PutMode::Create).await.unwrap();
        self.meta
            .transition_experiment(id, ExperimentStatus::Pending, ExperimentStatus::Completed, "test", None)
            .await
            .unwrap();
        self.exp.index_outputs(id, None).await.unwrap();
        id
    }
}

fn set(ids: &[ExperimentId]) -> RunSet {
    RunSet::Experiments(ids.to_vec())
}

#[tokio::test]
async fn a_a_pairs_of_one_config_are_never_a_change_and_use_the_config_history() {
    let mut env = setup().await;
    let mut ids = Vec::new();
    for i in 0..6 {
        ids.push(env.run(&format!("base-r{}", i + 1), 'a', 0.15, None, None).await);
    }
    let noise = env.meta.run_noise(&hash('a'), "step_time_s").await.unwrap().expect("noise row");
    assert_eq!(noise.runs, 6, "every completed run of the hash is in its noise row");
    let mut calls = 0;
    for i in 0..ids.len() {
        for j in i + 1..ids.len() {
            let c = env.exp.compare_runs(&set(&[ids[i]]), &set(&[ids[j]]), "step_time_s", None, None).await.unwrap();
            let v = &c.verdict;
            assert!(matches!(v.verdict, VerdictKind::Same | VerdictKind::Inconclusive), "{i} vs {j}: {v:?}");
            let cv = v.between_run_cv.as_ref().unwrap();
            // 6 runs of the hash, the 2 compared taken out: 4 others, 3 degrees of freedom.
            assert_eq!((cv.source, cv.dof), (NoiseSource::History, 3.0), "{i} vs {j}");
            assert_eq!(c.noise_history[0].runs, 4);
            assert_eq!(v.runs.map(|r| (r.a, r.b)), Some((1, 1)));
            assert!(c.sides.a[0].spread.unwrap() > 0.0 && c.sides.a[0].n_steps > 30);
            calls += 1;
        }
    }
    assert_eq!(calls, 15);
    // Sides of several runs: the noise comes from the runs themselves.
    let c = env.exp.compare_runs(&set(&ids[..3]), &set(&ids[3..]), "step_time_s", None, None).await.unwrap();
    assert!(matches!(c.verdict.verdict, VerdictKind::Same | VerdictKind::Inconclusive), "{:?}", c.verdict);
    assert_eq!(c.verdict.between_run_cv.unwrap().source, NoiseSource::Runs);
}

#[tokio::test]
async fn repeats_by_session_and_config_hash_find_a_large_shift_and_ask_for_repeats_on_a_small_one() {
    let mut env = setup().await;
    let session = NewSession { goal: None, name: "a".into(), spec: serde_json::json!({}), kind: Default::default() };
    let sa = env.meta.insert_session(&session).await.unwrap().id;
    for i in 0..3 {
        env.run(&format!("a-r{i}"), 'a', 0.10, None, Some(sa)).await;
    }
    for i in 0..3 {
        env.run(&format!("b-r{i}"), 'b', 0.14, None, None).await;
    }
    let prefix: String = hash('b').chars().take(12).collect();
    let b: RunSet = format!("config:{prefix}").parse().unwrap();
    let c = env.exp.compare_runs(&RunSet::Session(sa), &b, "step_time_s", None, None).await.unwrap();
    assert_eq!(c.verdict.verdict, VerdictKind::Regressed, "{:?}", c.verdict);
    assert_eq!(c.verdict.runs.map(|r| (r.a, r.b)), Some((3, 3)));
    assert_eq!(c.sides.b.len(), 3);
    // tokens_per_s (higher is better) on the same runs: the same shift is a regression too.
    let t = env.exp.compare_runs(&RunSet::Session(sa), &b, "tokens_per_s", None, None).await.unwrap();
    assert_eq!(t.verdict.verdict, VerdictKind::Regressed);

    // +10 % with one run a side and no history: inconclusive, with the runs it would take.
    let x = env.run("x", 'c', 0.10, None, None).await;
    let y = env.run("y", 'd', 0.11, None, None).await;
    let v = env.exp.compare(x, y, "step_time_s", None, None).await.unwrap();
    assert_eq!(v.verdict, VerdictKind::Inconclusive, "{v:?}");
    assert_eq!(v.between_run_cv.unwrap().source, NoiseSource::Default);
    assert!(v.repeats_needed.is_some_and(|n| n >= 2), "{v:?}");

    // What cannot be resolved is said by name.
    let missing = env.exp.compare_runs(&set(&[x]), &set(&[ExperimentId(99_999)]), "step_time_s", None, None).await;
    assert_eq!(missing.unwrap_err().kind(), ErrorKind::NotFound);
    let none: RunSet = "config:0123456789ab".parse().unwrap();
    assert!(matches!(env.exp.resolve_runs(&none).await, Err(ExpError::NotFound(_))));
    let empty = NewSession { goal: None, name: "e".into(), spec: serde_json::json!({}), kind: Default::default() };
    let empty = RunSet::Session(env.meta.insert_session(&empty).await.unwrap().id);
    assert!(matches!(env.exp.resolve_runs(&empty).await, Err(ExpError::NotFound(m)) if m.contains("no completed")));
}

#[tokio::test]
async fn a_history_finds_a_thirty_percent_shift_after_four_runs_and_names_what_it_lacks() {
    let mut env = setup().await;
    let mut ids = Vec::new();
    for i in 0..7 {
        let level = if i < 4 { 0.10 } else { 0.13 };
        // Run-to-run noise of 2 % here: the detector's power at 6 % is measured in falcon-core's tests.
        ids.push(env.run_with("nightly", 'a', level, 0.02, None, None).await);
    }
    let filter = ExperimentFilter { name: Some("nightly".into()), ..Default::default() };
    let h = env.exp.history(&filter, "step_time_s").await.unwrap();
    assert_eq!(h.points.len(), 7);
    assert_eq!(h.changes.len(), 1, "{h:?}");
    let c = &h.changes[0];
    assert_eq!((c.index, c.experiment, c.regression), (4, ids[4], Some(true)));
    assert!(c.delta_rel > 0.15 && c.ci_low_rel > 0.0, "{c:?}");
    assert!(h.noise.is_some() && !h.power_note.is_empty());
    // The 12-character prefix `exp list` prints selects the series too.
    let prefix: String = hash('a').chars().take(12).collect();
    let by_hash = ExperimentFilter { config_hash: Some(prefix), ..Default::default() };
    assert_eq!(env.exp.history(&by_hash, "step_time_s").await.unwrap().points.len(), 7);
    // Unknown names and metrics are "not found".
    let unknown = ExperimentFilter { name: Some("nightlyy".into()), ..Default::default() };
    assert!(
        matches!(env.exp.history(&unknown, "step_time_s").await, Err(ExpError::NotFound(m)) if m.contains("nightlyy"))
    );
    let metric = env.exp.history(&filter, "step_tim_s").await;
    assert!(matches!(&metric, Err(ExpError::NotFound(m)) if m.contains("step_time_s")), "{metric:?}");
}

#[tokio::test]
async fn goal_rows_carry_verdicts_and_a_baseline_rerun_is_never_the_best() {
    let mut env = setup().await;
    let goal = env.step_time_goal("faster").await;
    let base = env.run("base", 'a', 0.10, Some(goal.id), None).await;
    env.exp.set_goal_baseline(goal.id, Some(base)).await.unwrap();
    // A re-run of the baseline's config that happened to be faster, and a real improvement run twice.
    let rerun = env.run("base-again", 'a', 0.093, Some(goal.id), None).await;
    let v1 = env.run("fast-r1", 'f', 0.06, Some(goal.id), None).await;
    let v2 = env.run("fast-r2", 'f', 0.06, Some(goal.id), None).await;
    let cmp = env.exp.compare_goal(goal.id).await.unwrap();
    let row = |id| cmp.rows.iter().find(|r| r.experiment == id).unwrap();
    assert!(row(base).baseline && row(base).verdict.is_none());
    assert!(row(rerun).baseline_rerun && row(rerun).verdict.is_none());
    for v in [v1, v2] {
        let verdict = row(v).verdict.as_ref().expect("verdict against the baseline");
        assert_eq!(verdict.runs.map(|r| (r.a, r.b)), Some((2, 2)), "baseline config's runs vs this config's");
        assert_eq!(row(v).statistic, "median");
    }
    let best = cmp.best.as_ref().unwrap();
    assert_eq!(cmp.progress.best_value, Some(best.value));
    assert!([v1, v2].contains(&best.experiment), "{best:?}");
    assert_eq!(cmp.rows.iter().position(|r| r.experiment == best.experiment), Some(0));

    // A goal whose fastest run is a re-run of the baseline's config, and whose other config is slower: the re-run
    // is not a win, so the best is the baseline itself (gap closed 0).
    let g2 = env.step_time_goal("noise").await;
    let base = env.run_with("b", 'x', 0.10, 0.0, Some(g2.id), None).await;
    env.exp.set_goal_baseline(g2.id, Some(base)).await.unwrap();
    let lucky = env.run_with("b-again", 'x', 0.08, 0.0, Some(g2.id), None).await;
    env.run_with("slower", 'y', 0.12, 0.0, Some(g2.id), None).await;
    let cmp = env.exp.compare_goal(g2.id).await.unwrap();
    assert_eq!(cmp.rows[0].experiment, lucky, "ranked by value");
    assert_eq!(cmp.best.as_ref().map(|b| b.experiment), Some(base));
    assert_eq!(cmp.progress.gap_closed, Some(0.0));
}
