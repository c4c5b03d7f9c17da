//! The MetaStore suite, part: the runs of a config — artifacts, analysis summaries, the analysis work list,
//! run noise and spread, and lookups by config hash.

use super::experiment;
use falcon_core::artifact::ArtifactKind;
use falcon_core::ids::ExperimentId;
use falcon_core::status::ExperimentStatus;
use falcon_infra::meta::{AnalysisSummary, ExperimentFilter, MetricSummary, NewArtifact, NewExperiment, RunNoise};
use falcon_infra::{InfraError, MetaStore};

pub(crate) async fn artifacts_are_indexed_once(store: MetaStore) {
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

pub(crate) async fn summaries_are_replaced_not_duplicated(store: MetaStore) {
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

pub(crate) async fn analysis_work_list_is_completed_experiments_with_matching_artifacts_and_no_row(store: MetaStore) {
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

pub(crate) async fn spread_round_trips_some_and_none(store: MetaStore) {
    let exp = store.insert_experiment(&experiment("spread", &[])).await.unwrap().id;
    let with = MetricSummary { spread: Some(0.0123), ..median_summary("step_time_s", 0.5) };
    let without = median_summary("tokens_per_s", 9000.0);
    store.put_metric_summaries(exp, &[with.clone(), without.clone()]).await.unwrap();
    assert_eq!(store.metric_summaries(exp).await.unwrap(), [with, without]);
}

pub(crate) async fn summaries_of_many_experiments_come_in_one_read(store: MetaStore) {
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

pub(crate) async fn run_noise_is_welford_over_completed_runs_of_one_hash(store: MetaStore) {
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

pub(crate) async fn config_hash_filter_matches_a_hex_prefix(store: MetaStore) {
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
