//! One experiment's goodput: EXP's record of its attempts, devices and step clock, handed to analysis. Used by
//! `exp show` (`experiments`) and by the report across runs (`goodput`).

use crate::ctx::Ctx;
use crate::error::{AppError, Result};
use falcon_analysis::goodput::{goodput, Attempt, Goodput, GoodputInput, StepRecord};
use falcon_core::ids::ExperimentId;
use falcon_exp::goodput::GoodputRecord;

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
