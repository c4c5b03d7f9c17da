//! `falcon worker`: the orchestration loop (the Job module's ticks and EXP's reconcile) as a daemon.

use crate::cli::{GlobalArgs, WorkerArgs};
use crate::output::print_json;
use crate::settings;
use std::process::ExitCode;
use std::time::Duration;

pub async fn run(global: &GlobalArgs, args: &WorkerArgs) -> anyhow::Result<ExitCode> {
    let loaded = settings::load(global)?;
    let exp = falcon_exp::Exp::connect(&loaded.config).await?;
    let analysis = falcon_analysis::service::Analysis::connect(&loaded.config).await?;
    let poll = Duration::from_millis(loaded.config.jobs.poll_interval_ms);
    eprintln!(
        "falcon worker: {} pool(s), polling every {} ms; Ctrl-C stops",
        loaded.config.pools.len(),
        poll.as_millis()
    );
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
        analyze_completed(global.json, &analysis).await;
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
    analysis.close().await;
    Ok(ExitCode::SUCCESS)
}

/// The analysis step of the loop: completed experiments with a profile, kernel-bench results or (accuracy
/// scenario) metrics and no summary yet get analysed
/// (a failure is recorded in the summary row and logged, never stops the loop).
pub(crate) async fn analyze_completed(json_lines: bool, analysis: &falcon_analysis::service::Analysis) {
    match analysis.analyze_pending(4).await {
        Ok(done) => {
            for d in done {
                match (&d.error, json_lines) {
                    (Some(e), _) => tracing::warn!("{} analysis of {} failed: {e}", d.tool, d.experiment),
                    (None, true) => {
                        let _ = print_json(
                            &serde_json::json!({ "experiment": d.experiment, "analysis": d.tool, "mfu": d.mfu }),
                        );
                    }
                    (None, false) => eprintln!(
                        "falcon worker: {} {} analysed{}",
                        d.experiment,
                        d.tool,
                        d.mfu.map_or(String::new(), |m| format!(" (MFU {:.2}%)", m * 100.0))
                    ),
                }
            }
        }
        Err(e) => tracing::warn!("profile analysis step: {e}"),
    }
}
