//! `falcon worker`: the orchestration loop ([`falcon_app::App::worker_pass`]: the Job module's ticks, EXP's
//! reconcile, the analyses completed experiments call for) as a daemon.

use crate::cli::{GlobalArgs, WorkerArgs};
use crate::output::print_json_line;
use falcon_app::worker::WorkerEvent;
use falcon_app::App;
use std::process::ExitCode;
use std::time::Duration;

pub async fn run(global: &GlobalArgs, app: &App, args: &WorkerArgs) -> anyhow::Result<ExitCode> {
    let config = app.config()?;
    let poll = Duration::from_millis(config.jobs.poll_interval_ms);
    eprintln!("falcon worker: {} pool(s), polling every {} ms; Ctrl-C stops", config.pools.len(), poll.as_millis());
    let mut passes = 0u64;
    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    // Leases are renewed on their own timer from here until the loop ends. A pass that fails (the database
    // restarting) is a warning and the next waits longer: the worker outlives the outage.
    let mut worker = app.start_worker().await?;
    loop {
        let (events, wait) = worker.pass_or_back_off(poll).await;
        report_events(global.json, &events)?;
        passes += 1;
        if global.json {
            // Each pass ends with a line of its own, so a consumer sees the loop is alive even when idle.
            print_json_line(&serde_json::json!({ "event": "pass", "pass": passes, "events": events.len() }))?;
        }
        if args.passes.is_some_and(|n| passes >= n) {
            break;
        }
        tokio::select! {
            _ = &mut stop => break,
            _ = tokio::time::sleep(wait) => {}
        }
    }
    if let Err(e) = worker.stop().await {
        // Handing the leases back only lets the next worker start at once; unreturned, they lapse.
        tracing::warn!("stopping the worker: {e} (its leases lapse after [jobs] lease_s instead)");
    }
    Ok(ExitCode::SUCCESS)
}

/// Shows a pass's events. With `json_lines`, every event is one line of JSON on stdout (`{"event": "status" |
/// "analyzed" | "analysis_failed" | "warning", …}`); otherwise status moves and analyses go to stderr.
/// Warnings and failed analyses are also log warnings either way.
pub(crate) fn report_events(json_lines: bool, events: &[WorkerEvent]) -> anyhow::Result<()> {
    for event in events {
        if json_lines {
            print_json_line(event)?;
        }
        match event {
            WorkerEvent::Warning { message } => tracing::warn!("{message}"),
            WorkerEvent::AnalysisFailed { experiment, analysis, error } => {
                tracing::warn!("{analysis} analysis of {experiment} failed: {error}")
            }
            _ if json_lines => {}
            WorkerEvent::Status { experiment, status } => eprintln!("falcon worker: {experiment} → {status}"),
            WorkerEvent::Analyzed { experiment, analysis, mfu } => eprintln!(
                "falcon worker: {experiment} {analysis} analysed{}",
                mfu.map_or(String::new(), |m| {
                    format!(" (MFU {})", falcon_app::render::numbers::fraction_percent(Some(m)))
                })
            ),
            WorkerEvent::Bisected { session, message, .. } => {
                eprintln!("falcon worker: bisection {session}: {message}")
            }
        }
    }
    Ok(())
}
