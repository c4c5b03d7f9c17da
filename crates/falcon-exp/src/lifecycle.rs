//! The experiment lifecycle: which transitions are valid, and how a job's status maps onto its experiment.
//!
//! `PENDING → PROVISIONING → RUNNING → COMPLETED | FAILED | CANCELLED`; cancel from any live state; a preempted
//! job sends the experiment back to `PROVISIONING` with the next attempt (the Job module retries; EXP records
//! each attempt). Pure code: the service applies the result through the metadata store's compare-and-set.
//!
//! A step's reason keeps the job's own reason whole, so a failure shows its cause: the Job module ends a failed
//! attempt's reason with the last meaningful line of its stderr (`job failed with exit code 2: exited with
//! status 2: error: bad flag`), and a retried attempt's with what it said (`attempt 1 ended (exit code 42 is
//! retryable (error: …): retrying as attempt 2 of 3); attempt 2 queued`).

use falcon_core::status::{ExperimentStatus as E, JobStatus as J};

/// Whether `from → to` is a valid experiment transition.
pub fn can_transition(from: E, to: E) -> bool {
    use E::*;
    match (from, to) {
        (Pending, Provisioning | Failed | Cancelled) => true,
        // A short job can finish between two polls, so PROVISIONING may end directly.
        (Provisioning, Running | Completed | Failed | Cancelled) => true,
        // Back to PROVISIONING: preempted, the next attempt is queued.
        (Running, Completed | Failed | Cancelled | Provisioning) => true,
        _ => false,
    }
}

/// What the experiment should become given its job's status, or `None` when nothing changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The new status.
    pub to: E,
    /// Why, for the audit log.
    pub reason: String,
    /// The attempt the experiment is on afterwards.
    pub attempt: i64,
}

/// Reconciles an experiment (status, attempt) with its job (status, attempt, reason, exit code).
pub fn reconcile(
    exp: E,
    exp_attempt: i64,
    job: J,
    job_attempt: i64,
    job_reason: Option<&str>,
    exit_code: Option<i64>,
) -> Option<Step> {
    if exp.is_terminal() {
        return None;
    }
    let why = |default: &str| job_reason.map_or_else(|| default.to_string(), str::to_string);
    let step = |to: E, reason: String| {
        (exp != to && can_transition(exp, to)).then_some(Step { to, reason, attempt: job_attempt.max(exp_attempt) })
    };
    match job {
        // A later attempt queued while the experiment ran: the previous one was preempted or failed retryably.
        J::Queued | J::Submitted | J::Pending if job_attempt > exp_attempt && exp == E::Running => Some(Step {
            to: E::Provisioning,
            reason: format!("attempt {exp_attempt} ended ({}); attempt {job_attempt} queued", why("preempted")),
            attempt: job_attempt,
        }),
        J::Queued | J::Submitted | J::Pending => step(E::Provisioning, why("job queued")),
        J::Running => step(E::Running, why("job running")),
        J::Succeeded => step(E::Completed, "job succeeded".into()),
        J::Failed => step(
            E::Failed,
            match exit_code {
                // The workload succeeded but the job did not (its outputs could not be stored): say both.
                Some(0) => format!("job failed although its workload exited 0: {}", why("failed")),
                Some(code) => format!("job failed with exit code {code}: {}", why("failed")),
                None => format!("job failed: {}", why("failed")),
            },
        ),
        J::Cancelled => step(E::Cancelled, why("job cancelled")),
        J::Preempted => step(E::Failed, format!("preempted and no retries left: {}", why("preempted"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_forward_transitions_and_cancel_from_live_states() {
        for s in E::ALL {
            assert!(!can_transition(*s, *s), "{s} → {s}");
            if s.is_terminal() {
                assert!(E::ALL.iter().all(|t| !can_transition(*s, *t)), "nothing leaves {s}");
            } else {
                assert!(can_transition(*s, E::Cancelled), "cancel from {s}");
            }
        }
        assert!(!can_transition(E::Pending, E::Running), "PROVISIONING comes first");
        assert!(can_transition(E::Running, E::Provisioning), "preemption");
    }

    #[test]
    fn job_states_map_onto_the_experiment() {
        let r = |e, ea, j, ja| reconcile(e, ea, j, ja, None, None).map(|s| (s.to, s.attempt));
        assert_eq!(r(E::Pending, 1, J::Queued, 1), Some((E::Provisioning, 1)));
        assert_eq!(r(E::Provisioning, 1, J::Pending, 1), None);
        assert_eq!(r(E::Provisioning, 1, J::Running, 1), Some((E::Running, 1)));
        assert_eq!(r(E::Running, 1, J::Succeeded, 1), Some((E::Completed, 1)));
        assert_eq!(r(E::Provisioning, 1, J::Succeeded, 1), Some((E::Completed, 1)), "a short job");
        assert_eq!(r(E::Running, 1, J::Queued, 2), Some((E::Provisioning, 2)), "preempted, retried");
        assert_eq!(r(E::Running, 2, J::Preempted, 2), Some((E::Failed, 2)), "retries spent");
        assert_eq!(r(E::Completed, 1, J::Failed, 1), None, "terminal stays");
        let failed = reconcile(E::Running, 1, J::Failed, 1, Some("exited with status 3"), Some(3)).unwrap();
        assert_eq!(failed.reason, "job failed with exit code 3: exited with status 3");
    }

    #[test]
    fn the_cause_of_a_failure_reaches_the_experiment() {
        let failed =
            reconcile(E::Running, 1, J::Failed, 1, Some("exited with status 2: error: bad flag"), Some(2)).unwrap();
        assert_eq!(
            (failed.to, failed.reason.as_str()),
            (E::Failed, "job failed with exit code 2: exited with status 2: error: bad flag")
        );
        let killed = reconcile(E::Provisioning, 1, J::Failed, 1, Some("the process ended: Killed"), None).unwrap();
        assert_eq!(killed.reason, "job failed: the process ended: Killed");
        let uncollected = "its outputs could not be collected after 10 tries: no space left on device";
        let unstored = reconcile(E::Running, 1, J::Failed, 1, Some(uncollected), Some(0)).unwrap();
        assert_eq!(unstored.reason, format!("job failed although its workload exited 0: {uncollected}"));
        let retried = "exit code 42 is retryable (error: flaky): retrying as attempt 2 of 3";
        let requeued = reconcile(E::Running, 1, J::Queued, 2, Some(retried), None).unwrap();
        assert_eq!((requeued.to, requeued.attempt), (E::Provisioning, 2));
        assert_eq!(
            requeued.reason,
            "attempt 1 ended (exit code 42 is retryable (error: flaky): retrying as attempt 2 of 3); attempt 2 queued"
        );
    }
}
