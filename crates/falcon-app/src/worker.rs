//! The worker loop, one pass at a time: the Job module's tick and EXP's reconcile (through
//! [`falcon_exp::Exp::work`]), then the analyses completed experiments call for (profile, trace, kernel bench,
//! accuracy, memory). `falcon worker`, `exp submit --wait`, `session submit --wait` and the server's embedded
//! worker all run this code.
//!
//! Leases are renewed, and running jobs' resource use sampled, on timers of their own while a loop runs, not
//! by its passes: [`App::start_worker`] (and the embedded loops of `--wait` and `exp logs -f`) hold a
//! [`Background`], so an analysis of large profiles or a multi-GB upload that outlasts `[jobs] lease_s` keeps its
//! jobs and leaves no gap in a memory curve. A loop that ends cleanly ([`Worker::stop`]) writes its running
//! jobs' samples and hands back its leases, so the next worker takes over at once; a killed one's leases lapse
//! after `lease_s`.

use crate::{ctx::Ctx, Result};
use falcon_core::ids::ExperimentId;
use falcon_core::status::ExperimentStatus;
pub use falcon_exp::housekeeping::Background;
use serde::Serialize;
use std::time::Duration;

/// How many completed experiments one pass analyses at most.
pub const ANALYSES_PER_PASS: u32 = 4;

/// Something a pass did or ran into.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum WorkerEvent {
    /// An experiment's status moved.
    Status { experiment: ExperimentId, status: ExperimentStatus },
    /// A completed experiment was analysed and its summary row stored.
    Analyzed { experiment: ExperimentId, analysis: String, mfu: Option<f64> },
    /// An analysis failed; the failure is recorded in its summary row so it is not retried forever.
    AnalysisFailed { experiment: ExperimentId, analysis: String, error: String },
    /// A bisection this pass decided.
    Bisected { session: falcon_core::ids::SessionId, culprit: Option<String>, message: String },
    /// A problem that did not stop the pass (a job that could not be placed, a backend error, …).
    Warning { message: String },
}

/// The longest wait between passes that keep failing ([`Worker::pass_or_back_off`]).
pub const MAX_BACK_OFF: Duration = Duration::from_secs(30);

/// A worker loop in progress: its passes run with the leases renewed in the background until it is dropped.
pub struct Worker<'a> {
    cx: &'a Ctx,
    _background: Background,
    /// Passes that failed in a row.
    failures: u32,
}

impl Worker<'_> {
    /// One pass of the loop ([`App::worker_pass`]).
    pub async fn pass(&self) -> Result<Vec<WorkerEvent>> {
        worker_pass(self.cx).await
    }

    /// One pass for a loop that must outlive a store that goes away for a while (a database restarting, a
    /// connection reset): a failed pass becomes a warning instead of an error, and the wait before the next
    /// pass doubles from `poll` up to [`MAX_BACK_OFF`] while passes keep failing, back to `poll` after one that
    /// succeeds. Returns the pass's events and how long to wait before the next.
    pub async fn pass_or_back_off(&mut self, poll: Duration) -> (Vec<WorkerEvent>, Duration) {
        match self.pass().await {
            Ok(events) => {
                if self.failures > 0 {
                    tracing::info!("worker pass succeeded after {} failed", self.failures);
                }
                self.failures = 0;
                (events, poll)
            }
            Err(e) => {
                self.failures = self.failures.saturating_add(1);
                let wait = back_off(poll, self.failures);
                let message = format!(
                    "worker pass failed ({} in a row; trying again in {:.1} s): {e}",
                    self.failures,
                    wait.as_secs_f64()
                );
                (vec![WorkerEvent::Warning { message }], wait)
            }
        }
    }

    /// Ends the loop cleanly: writes the resource samples of the jobs still running, stops the background
    /// timers and hands back the leases, so the next worker takes the jobs over at once
    /// ([`falcon_exp::Exp::stop_background`]).
    pub async fn stop(self) -> Result<()> {
        Ok(self.cx.exp().await?.stop_background(self._background).await?)
    }
}

pub(crate) async fn start_worker(cx: &Ctx) -> Result<Worker<'_>> {
    Ok(Worker { cx, _background: cx.exp().await?.start_background().await?, failures: 0 })
}

pub(crate) async fn worker_pass(cx: &Ctx) -> Result<Vec<WorkerEvent>> {
    let exp = cx.exp().await?;
    let (tick, reconciled) = exp.work().await?;
    let mut events: Vec<WorkerEvent> =
        tick.errors.iter().chain(&reconciled.errors).map(|e| WorkerEvent::Warning { message: e.to_string() }).collect();
    events.extend(reconciled.moved.iter().map(|(id, status)| WorkerEvent::Status { experiment: *id, status: *status }));
    // Bisections still searching take a step: runs that ended are read, the next ones submitted.
    match exp.advance_bisects().await {
        Ok(steps) => events.extend(steps.into_iter().filter_map(|(session, step)| match step {
            Ok(o) if o.state == "decided" => {
                Some(WorkerEvent::Bisected { session, culprit: o.culprit.map(|c| c.commit), message: o.message })
            }
            Ok(_) => None,
            Err(e) => Some(WorkerEvent::Warning { message: format!("bisection {session}: {e}") }),
        })),
        Err(e) => events.push(WorkerEvent::Warning { message: format!("bisections: {e}") }),
    }
    events.extend(analyze_completed(cx).await);
    Ok(events)
}

pub(crate) async fn analyze_completed(cx: &Ctx) -> Vec<WorkerEvent> {
    analyze_completed_among(cx, None).await
}

pub(crate) async fn analyze_completed_among(cx: &Ctx, among: Option<&[ExperimentId]>) -> Vec<WorkerEvent> {
    let analysis = match cx.analysis().await {
        Ok(a) => a,
        Err(e) => return vec![WorkerEvent::Warning { message: format!("analysis step: {e}") }],
    };
    let limit = among.map_or(ANALYSES_PER_PASS, |ids| ids.len().clamp(1, 1000) as u32);
    let mut events: Vec<WorkerEvent> = match analysis.analyze_pending_among(limit, among).await {
        Ok(done) => done
            .into_iter()
            .map(|d| match d.error {
                Some(error) => WorkerEvent::AnalysisFailed { experiment: d.experiment, analysis: d.tool.into(), error },
                None => WorkerEvent::Analyzed { experiment: d.experiment, analysis: d.tool.into(), mfu: d.mfu },
            })
            .collect(),
        Err(e) => return vec![WorkerEvent::Warning { message: format!("analysis step: {e}") }],
    };
    // Each experiment analysed now has ended: its goodput is kept as a metric, for goals and history.
    let mut analysed: Vec<ExperimentId> = events
        .iter()
        .filter_map(|e| match e {
            WorkerEvent::Analyzed { experiment, .. } | WorkerEvent::AnalysisFailed { experiment, .. } => {
                Some(*experiment)
            }
            _ => None,
        })
        .collect();
    analysed.sort_unstable();
    analysed.dedup();
    for id in analysed {
        events.push(keep_goodput(cx, id).await);
    }
    events
}

/// Computes an ended experiment's goodput and keeps its percentage as the metric `goodput_percent`.
async fn keep_goodput(cx: &Ctx, id: ExperimentId) -> WorkerEvent {
    let kept = async {
        let g = crate::experiment_goodput::experiment_goodput(cx, id).await?;
        if let Some(p) = g.goodput_percent {
            cx.exp().await?.put_derived_metric(id, falcon_exp::goodput::GOODPUT_METRIC, p).await?;
        }
        Ok::<_, crate::AppError>(g.goodput_percent)
    };
    match kept.await {
        Ok(_) => WorkerEvent::Analyzed { experiment: id, analysis: "goodput".into(), mfu: None },
        Err(e) => WorkerEvent::AnalysisFailed { experiment: id, analysis: "goodput".into(), error: e.to_string() },
    }
}

/// The wait after `failures` failed passes in a row: `poll` doubled for each, at most [`MAX_BACK_OFF`] (and at
/// least 100 ms, so a zero poll interval does not spin on a store that is down).
fn back_off(poll: Duration, failures: u32) -> Duration {
    let base = poll.max(Duration::from_millis(100));
    base.saturating_mul(1u32 << failures.min(16)).min(MAX_BACK_OFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_per_failed_pass_up_to_the_cap() {
        let poll = Duration::from_millis(200);
        let waits: Vec<u128> = (1..=9).map(|n| back_off(poll, n).as_millis()).collect();
        assert_eq!(waits, [400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
        assert_eq!(back_off(Duration::ZERO, 1), Duration::from_millis(200));
        assert_eq!(back_off(poll, u32::MAX), MAX_BACK_OFF);
    }
}
