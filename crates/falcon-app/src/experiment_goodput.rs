//! One experiment's goodput: EXP's record of its attempts (and how each ended), devices and step clock, handed to
//! analysis. Used by `exp show` (`experiments`) and by the report across runs (`goodput`).

use crate::ctx::Ctx;
use crate::error::{AppError, Result};
use falcon_analysis::goodput::{goodput, Attempt, Goodput, GoodputInput, Outcome, StepRecord};
use falcon_core::ids::ExperimentId;
use falcon_core::status::JobStatus;
use falcon_exp::goodput::{AttemptTimes, GoodputRecord};

/// What analysis computes goodput from, built from EXP's record.
pub fn input_of(record: &GoodputRecord) -> GoodputInput {
    GoodputInput {
        attempts: record
            .attempts
            .iter()
            .map(|a| Attempt {
                attempt: a.attempt,
                queued_ms: a.queued_ms,
                running_ms: a.running_ms,
                ended_ms: a.ended_ms,
                chips: record.chips,
                outcome: outcome_of(a),
            })
            .collect(),
        steps: record
            .clock
            .iter()
            .map(|c| StepRecord {
                step: c.step,
                time_s: c.time_s,
                step_time_s: c.step_time_s,
                event: c.event.clone(),
                event_s: c.event_s,
            })
            .collect(),
        host_wait: record.host_wait_fraction.map(|fraction| falcon_analysis::goodput::HostWait { fraction }),
    }
}

/// How an attempt ended: completed when the Job module recorded it succeeded (exit code 0, or none recorded);
/// failed when it failed, was cancelled (killed) or preempted, or exited non-zero; unknown while it has not ended.
pub fn outcome_of(a: &AttemptTimes) -> Outcome {
    match (a.ended, a.exit_code) {
        (Some(JobStatus::Succeeded), None | Some(0)) => Outcome::Completed,
        (Some(_), _) => Outcome::Failed,
        (None, _) => Outcome::Unknown,
    }
}

/// One experiment's goodput; what could not be read is the goodput's `reason`, never a failure of the caller.
pub(crate) async fn experiment_goodput(cx: &Ctx, id: ExperimentId) -> Result<Goodput> {
    Ok(of_record(cx.exp().await?.goodput_record(id).await.map_err(AppError::from)))
}

pub(crate) fn of_record(record: Result<GoodputRecord>) -> Goodput {
    match record {
        Ok(record) => goodput(&input_of(&record)),
        Err(e) => Goodput::unknown(format!("its attempts or metrics could not be read: {e}")),
    }
}
