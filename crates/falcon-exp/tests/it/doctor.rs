//! `doctor` against real stores: a working local setup passes; a dead database and an unwritable artifact
//! directory each fail with a hint, in one report.

use falcon_core::config::{Config, ConfigLayer, MachineFacts};
use falcon_exp::{doctor, Exp};

fn config(layer: ConfigLayer) -> Config {
    Config::resolve([layer], MachineFacts { cores: 2 })
}

#[tokio::test]
async fn a_fresh_local_setup_passes_every_check() {
    let dir = crate::harness::job_dir();
    let cfg = config(ConfigLayer { data_dir: Some(dir.path().join(".falcon")), ..Default::default() });
    let exp = Exp::init(&cfg).await.unwrap();
    let conn = exp.connection().await.unwrap();
    assert_eq!(conn.schema_version, Some(9));
    assert_eq!(conn.pools, ["local"]);
    exp.close().await;
    let report = doctor(&cfg).await;
    assert!(report.ok, "{report:#?}");
    let components: Vec<_> = report.checks.iter().map(|c| c.component.as_str()).collect();
    assert_eq!(components, ["config", "database", "artifacts", "workloads"]);
    assert!(report.checks[3].detail.contains("workloads run as"), "{:?}", report.checks[3]);
    assert!(report.checks[1].detail.contains("(current)"), "{:?}", report.checks[1]);
    assert!(report.checks[2].detail.contains("sha256 verified"));
    let leftovers =
        std::fs::read_dir(dir.path().join(".falcon/artifacts/.falcon-doctor")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(leftovers, 0, "the probe object is deleted");
}

#[tokio::test]
async fn an_unmigrated_or_missing_database_is_reported_not_created() {
    let dir = crate::harness::job_dir();
    let cfg = config(ConfigLayer { data_dir: Some(dir.path().join("never-initialised")), ..Default::default() });
    let report = doctor(&cfg).await;
    let db = &report.checks[1];
    assert!(!db.ok && db.hint.as_deref().unwrap().contains("falcon init"), "{db:?}");
    assert!(!dir.path().join("never-initialised/falcon.db").exists(), "doctor creates nothing");
}

#[tokio::test]
async fn dead_database_and_unwritable_artifacts_are_both_named() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let unwritable = file.path().join("artifacts");
    let cfg = config(ConfigLayer {
        db: Some("mysql://nobody@127.0.0.1:1/x".into()),
        artifacts: Some(unwritable.display().to_string()),
        ..Default::default()
    });
    let report = doctor(&cfg).await;
    assert!(!report.ok);
    let db = &report.checks[1];
    assert!(!db.ok && db.target == "mysql://nobody@127.0.0.1:1/x", "{db:?}");
    assert!(db.detail.contains("127.0.0.1:1"), "{db:?}");
    assert!(db.hint.as_deref().unwrap().contains("MySQL"), "{db:?}");
    let arts = &report.checks[2];
    assert!(!arts.ok && arts.detail.contains(&unwritable.display().to_string()), "{arts:?}");
    assert!(arts.hint.is_some());
    assert!(report.checks[0].ok, "the pools are fine");
}

#[tokio::test]
async fn bad_pools_fail_the_config_check() {
    let mut pool = falcon_core::config::PoolConfig::local_cpu(2);
    pool.capacity = 0;
    let dir = crate::harness::job_dir();
    let cfg = config(ConfigLayer { data_dir: Some(dir.path().into()), pools: Some(vec![pool]), ..Default::default() });
    let report = doctor(&cfg).await;
    assert!(!report.checks[0].ok && report.checks[0].detail.contains("pools[0].capacity"), "{:?}", report.checks[0]);
}
