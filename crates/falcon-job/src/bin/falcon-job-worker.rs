//! A minimal job worker process: one local pool, the job manager's loop, until SIGTERM/SIGINT.
//!
//! It exists so the lease and adoption guarantees can be tested with real processes killed by a real SIGKILL,
//! until `falcon worker` (the interface's daemon) runs the same loop.
//!
//! Usage: `falcon-job-worker --db URL --artifacts DIR --jobs-dir DIR --owner NAME [--capacity N]
//!         [--lease-ms N] [--poll-ms N]`

use falcon_core::config::PoolConfig;
use falcon_infra::{ArtifactStore, MetaStore};
use falcon_job::backend::local::LocalBackend;
use falcon_job::backend::Backend;
use falcon_job::{JobManager, ManagerConfig, Pool};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

#[tokio::main]
async fn main() {
    if let Err(message) = run().await {
        eprintln!("falcon-job-worker: {message}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), String> {
    let mut args: HashMap<String, String> = HashMap::new();
    let mut argv = std::env::args().skip(1);
    while let Some(flag) = argv.next() {
        let key = flag.strip_prefix("--").ok_or_else(|| format!("unexpected argument `{flag}`"))?.to_string();
        let value = argv.next().ok_or_else(|| format!("--{key} needs a value"))?;
        args.insert(key, value);
    }
    let get = |k: &str| args.get(k).cloned().ok_or_else(|| format!("missing --{k}"));
    let number = |k: &str, default: u64| -> Result<u64, String> {
        args.get(k).map_or(Ok(default), |v| v.parse().map_err(|_| format!("--{k}: `{v}` is not a number")))
    };
    let meta = MetaStore::connect(&get("db")?).await.map_err(|e| e.to_string())?;
    let artifacts =
        ArtifactStore::open(&get("artifacts")?, &Default::default(), &Default::default()).map_err(|e| e.to_string())?;
    let pool = Pool::from_config(&PoolConfig::local_cpu(number("capacity", 4)? as u32)).map_err(|e| e.to_string())?;
    let backend: Arc<dyn Backend> =
        Arc::new(LocalBackend::new(get("jobs-dir")?, &pool.name).with_grace(Duration::from_secs(2)));
    let mut config = ManagerConfig::new(get("owner")?);
    config.lease = Duration::from_millis(number("lease-ms", 30_000)?);
    config.poll_interval = Duration::from_millis(number("poll-ms", 1_000)?);
    config.log_interval = Duration::from_millis(number("log-ms", 5_000)?);
    let manager = JobManager::new(meta, artifacts, vec![pool], vec![backend], config);
    let mut term =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(|e| e.to_string())?;
    manager
        .run(async move {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        })
        .await;
    Ok(())
}
