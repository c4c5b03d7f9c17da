//! `falcon worker`: the orchestration loop (the Job module's ticks and EXP's reconcile) as a daemon.

use crate::cli::{GlobalArgs, WorkerArgs};
use crate::output::print_json;
use crate::settings;
use std::process::ExitCode;
use std::time::Duration;

pub async fn run(global: &GlobalArgs, args: &WorkerArgs) -> anyhow::Result<ExitCode> {
    let loaded = settings::load(global)?;
    let exp = falcon_exp::Exp::connect(&loaded.config).await?;
    let poll = Duration::from_millis(loaded.config.jobs.poll_interval_ms);
    eprintln!("falcon worker: {} pool(s), polling every {} ms; Ctrl-C stops", loaded.config.pools.len(), poll.as_millis());
    let mut passes = 0u64;
    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    loop {
        let (tick, reconciled) = exp.work().await?;
        for e in tick.errors.iter().chain(&reconciled.errors) {
            tracing::warn!("{e}");
        }
        for (id, status) in &reconciled.moved {
            if global.json {
                print_json(&serde_json::json!({ "experiment": id, "status": status }))?;
            } else {
                eprintln!("falcon worker: {id} → {status}");
            }
        }
        passes += 1;
        if args.passes.is_some_and(|n| passes >= n) {
            break;
        }
        tokio::select! {
            _ = &mut stop => break,
            _ = tokio::time::sleep(poll) => {}
        }
    }
    exp.close().await;
    Ok(ExitCode::SUCCESS)
}
