//! `falcon doctor`: checks every configured component and says what is wrong and what to do.

use crate::error::store_hint;
use falcon_core::config::Config;
use falcon_infra::meta::ConnectOptions;
use falcon_infra::{ArtifactStore, InfraError, MetaStore, PutMode};
use std::time::{Duration, Instant};

/// The result of one check.
#[derive(Debug, Clone)]
pub struct Check {
    /// Component checked: `config`, `database`, `artifacts`.
    pub component: String,
    /// What was checked (a URL, a pool list).
    pub target: String,
    /// Whether it works.
    pub ok: bool,
    /// What was found.
    pub detail: String,
    /// What to do, for a failed check (`null` for a passed one: the key is always there).
    pub hint: Option<String>,
    /// How long the check took.
    pub elapsed_ms: u64,
}

/// All checks.
#[derive(Debug, Clone)]
pub struct DoctorReport {
    /// Whether every check passed.
    pub ok: bool,
    /// The checks, in order.
    pub checks: Vec<Check>,
}

/// Checks the configuration, the database (reachable, schema current) and the artifact store (a real write,
/// read and delete). Never changes the database schema.
pub async fn doctor(config: &Config) -> DoctorReport {
    let checks =
        vec![check_pools(config), check_database(config).await, check_artifacts(config).await, check_workloads(config)];
    DoctorReport { ok: checks.iter().all(|c| c.ok), checks }
}

fn check_pools(config: &Config) -> Check {
    let started = Instant::now();
    let problems = config.problems();
    let pools: Vec<String> = config
        .pools
        .iter()
        .map(|p| {
            format!("{}: backend {:?}, zone {}, {:?}, capacity {}", p.name, p.backend, p.zone, p.platform, p.capacity)
                .to_lowercase()
        })
        .collect();
    let (ok, detail, hint) = if problems.is_empty() {
        (true, format!("{} pool(s): {}", pools.len(), pools.join("; ")), None)
    } else {
        let detail = problems.iter().map(|p| format!("{}: {}", p.field, p.message)).collect::<Vec<_>>().join("; ");
        (false, detail, Some("fix the [[pools]] entries in falcon.toml".to_string()))
    };
    Check { component: "config".into(), target: "pools".into(), ok, detail, hint, elapsed_ms: elapsed(started) }
}

/// What keeps a local pool's workloads from Falcon's store (`[jobs] isolation`): failed when `auto` cannot keep
/// them apart on this machine, or a job's user could not reach its folder.
fn check_workloads(config: &Config) -> Check {
    use falcon_job::backend::isolation::{Boundary, Mode};
    let started = Instant::now();
    let boundary = Boundary::from_config(config, config.file.as_deref());
    let local = config.pools.iter().any(|p| p.backend == falcon_core::config::PoolBackend::Local);
    let chosen_off = config.jobs.isolation == falcon_core::config::Isolation::None;
    let (ok, hint) = match (boundary.mode(), boundary.check_reachable()) {
        (_, Err(e)) => (false, Some(e)),
        (Mode::Off(_), _) if local && !chosen_off => (
            false,
            Some(
                "run the worker as root (each job then runs as a user of its own; util-linux's setpriv is needed), \
                 or where user namespaces are allowed; or set [jobs] isolation = \"none\" to accept it"
                    .into(),
            ),
        ),
        _ => (true, None),
    };
    let target = config.jobs.work_dir.display().to_string();
    Check { component: "workloads".into(), target, ok, detail: boundary.describe(), hint, elapsed_ms: elapsed(started) }
}

async fn check_database(config: &Config) -> Check {
    let started = Instant::now();
    let options =
        ConnectOptions { max_connections: 1, acquire_timeout: Duration::from_secs(5), create_if_missing: false };
    let outcome: Result<String, (String, Option<String>)> = async {
        let store = MetaStore::open(&config.db, &options).await.map_err(failure)?;
        let status = store.migration_status().await.map_err(failure)?;
        store.close().await;
        let backend = format!("{:?}", store.backend()).to_lowercase();
        match status.applied {
            Some(v) if v == status.latest => Ok(format!("{backend} reachable, schema version {v} (current)")),
            Some(v) if v > status.latest => Err((
                format!("{backend} reachable, schema version {v} is newer than this build knows ({})", status.latest),
                Some("upgrade falcon".into()),
            )),
            applied => Err((
                format!(
                    "{backend} reachable, schema version {} but this build needs {}",
                    applied.map_or("none".into(), |v| v.to_string()),
                    status.latest
                ),
                Some("run `falcon init --keep` (or any command that connects) to apply the migrations".into()),
            )),
        }
    }
    .await;
    finish("database", falcon_core::config::redact_url(&config.db), started, outcome)
}

async fn check_artifacts(config: &Config) -> Check {
    let started = Instant::now();
    let mut target = config.artifacts.clone();
    let outcome: Result<String, (String, Option<String>)> = async {
        let store = ArtifactStore::open(&config.artifacts, &config.gcs, &config.s3).map_err(failure)?;
        target = store.uri("").trim_end_matches('/').to_string();
        let key = format!(".falcon-doctor/probe-{}", uuid::Uuid::new_v4().simple());
        let payload = format!("falcon doctor probe {key}");
        let put = store.put_bytes(&key, payload.clone().into_bytes(), PutMode::Create).await.map_err(failure)?;
        let read = store.get_verified(&key, put.size, &put.sha256).await;
        let deleted = store.delete(&key).await;
        read.map_err(failure)?;
        deleted.map_err(failure)?;
        Ok(format!("write, read back (sha256 verified) and delete of {} bytes succeeded", put.size))
    }
    .await;
    finish("artifacts", target, started, outcome)
}

fn finish(
    component: &str,
    target: String,
    started: Instant,
    outcome: Result<String, (String, Option<String>)>,
) -> Check {
    let (ok, detail, hint) = match outcome {
        Ok(detail) => (true, detail, None),
        Err((detail, hint)) => (false, detail, hint),
    };
    Check { component: component.into(), target, ok, detail, hint, elapsed_ms: elapsed(started) }
}

fn failure(e: InfraError) -> (String, Option<String>) {
    let hint = store_hint(&e);
    (error_chain(&e), hint)
}

/// The error and its sources, joined, so the root cause (e.g. "Connection refused") is visible.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

fn elapsed(started: Instant) -> u64 {
    started.elapsed().as_millis() as u64
}
