//! Reconciling one claimed job against its backend: cancels, timeouts, the backend's state turned into a status
//! change, retries of retryable failures and preemptions, and failover from a pool without capacity.

use super::outputs::Collected;
use super::{now, JobManager, TickReport};
use crate::backend::{BackendRef, BackendState};
use crate::error::Result;
use crate::failure;
use crate::spec::JobSpec;
use falcon_core::status::JobStatus;
use falcon_infra::meta::{JobChanges, JobRecord};
use std::time::Instant;

impl JobManager {
    pub(super) async fn reconcile(&self, job: &JobRecord, report: &mut TickReport) -> Result<()> {
        let (Some(pool_name), Some(handle)) = (&job.pool, &job.backend_ref) else {
            return self
                .finish(
                    job,
                    JobStatus::Failed,
                    "active without a placement (corrupt row)",
                    JobChanges::default(),
                    report,
                )
                .await;
        };
        let Some(pool) = self.pools.iter().position(|p| &p.name == pool_name) else {
            return self
                .finish(
                    job,
                    JobStatus::Failed,
                    &format!("pool `{pool_name}` is no longer configured"),
                    JobChanges::default(),
                    report,
                )
                .await;
        };
        let backend = &self.backends[pool];
        let handle = BackendRef(handle.clone());
        self.track_sampling(job, pool, &handle);
        if job.cancel_requested {
            // Copy first: on Kubernetes the delete takes the pods, and their logs, with it.
            let _ = self.copy_outputs(job, backend.as_ref(), &handle, true).await;
            backend.cancel(&handle).await?;
            return match self.collect_final(job, backend.as_ref(), &handle).await? {
                Collected::Done => {
                    self.finish(job, JobStatus::Cancelled, "cancelled on request", JobChanges::default(), report).await
                }
                Collected::Retry => Ok(()),
                Collected::GaveUp(why) => {
                    self.finish(job, JobStatus::Failed, &why, JobChanges::default(), report).await
                }
            };
        }
        let spec = JobSpec::from_stored(&job.spec)?;
        if let (JobStatus::Running, Some(limit), Some(started)) = (job.status, spec.timeout_s, job.started) {
            if now().0 - started.0 > (limit as i64) * 1000 {
                let _ = self.copy_outputs(job, backend.as_ref(), &handle, true).await;
                backend.cancel(&handle).await?;
                let reason = match self.collect_final(job, backend.as_ref(), &handle).await? {
                    Collected::Done => format!("timed out after {limit} s"),
                    Collected::Retry => return Ok(()),
                    Collected::GaveUp(why) => format!("timed out after {limit} s; {why}"),
                };
                return self.finish(job, JobStatus::Failed, &reason, JobChanges::default(), report).await;
            }
        }
        let state = backend.status(&handle).await?;
        if !matches!(state, BackendState::Pending { unschedulable: true, .. }) {
            self.with_tracked(job.id, |t| t.unschedulable_since = None);
        }
        match state {
            BackendState::Pending { reason, unschedulable } => {
                if job.status == JobStatus::Submitted {
                    self.transition(job, JobStatus::Pending, &reason, JobChanges::default()).await?;
                }
                if unschedulable {
                    let since = self.with_tracked(job.id, |t| *t.unschedulable_since.get_or_insert_with(Instant::now));
                    if since.elapsed() >= self.config.capacity_timeout {
                        return self.fail_over(job, pool, &handle, &reason).await;
                    }
                }
                Ok(())
            }
            BackendState::Running { started } => {
                if job.status != JobStatus::Running {
                    // The backend's own start time, when it gives one, never before the job's last change.
                    let at = started.map(|s| s.max(job.updated).min(now()));
                    let changes = JobChanges { started: Some(at.unwrap_or_else(now)), at, ..Default::default() };
                    self.transition(job, JobStatus::Running, &format!("running on pool {pool_name}"), changes).await?;
                }
                if let Err(e) = self.copy_outputs(job, backend.as_ref(), &handle, false).await {
                    tracing::warn!("job {}: copying logs and artifacts failed (retried at the next copy): {e}", job.id);
                }
                Ok(())
            }
            BackendState::Succeeded => {
                match self.collect_final(job, backend.as_ref(), &handle).await? {
                    Collected::Done => {}
                    Collected::Retry => return Ok(()),
                    Collected::GaveUp(why) => {
                        let changes = JobChanges { exit_code: Some(0), ..Default::default() };
                        return self.finish(job, JobStatus::Failed, &why, changes, report).await;
                    }
                }
                let at = self.ended_at(job, backend.as_ref(), &handle).await;
                let changes = JobChanges { exit_code: Some(0), at, ..Default::default() };
                self.finish(job, JobStatus::Succeeded, "exited with status 0", changes, report).await
            }
            BackendState::Failed { exit_code, reason } => {
                let uncollected = match self.collect_final(job, backend.as_ref(), &handle).await? {
                    Collected::Done => None,
                    Collected::Retry => return Ok(()),
                    Collected::GaveUp(why) => Some(why),
                };
                let cause = self.failure_cause(job, backend.as_ref(), &handle).await;
                let reason = failure::with_cause(reason, cause.as_deref());
                let reason = match uncollected {
                    None => reason,
                    Some(why) => format!("{reason}; {why}"),
                };
                let retryable = exit_code.is_some_and(|c| spec.retry.retry_exit_codes.contains(&c));
                let at = self.ended_at(job, backend.as_ref(), &handle).await;
                let changes = JobChanges { exit_code: exit_code.map(i64::from), at, ..Default::default() };
                let ended = self.finish(job, JobStatus::Failed, &reason, changes, report).await;
                if retryable {
                    let code = exit_code.unwrap_or(-1);
                    let why = match &cause {
                        Some(cause) => format!("exit code {code} is retryable ({cause})"),
                        None => format!("exit code {code} is retryable"),
                    };
                    self.retry(job, JobStatus::Failed, &spec, &why).await?;
                }
                ended
            }
            BackendState::Preempted { reason } => {
                let reason = match self.collect_final(job, backend.as_ref(), &handle).await? {
                    Collected::Done => reason,
                    Collected::Retry => return Ok(()),
                    Collected::GaveUp(why) => format!("{reason}; {why}"),
                };
                let changes =
                    JobChanges { at: self.ended_at(job, backend.as_ref(), &handle).await, ..Default::default() };
                let ended = self.finish(job, JobStatus::Preempted, &reason, changes, report).await;
                self.retry(job, JobStatus::Preempted, &spec, "preempted").await?;
                ended
            }
            BackendState::Cancelled => match self.collect_final(job, backend.as_ref(), &handle).await? {
                Collected::Done => {
                    self.finish(job, JobStatus::Cancelled, "cancelled on the backend", JobChanges::default(), report)
                        .await
                }
                Collected::Retry => Ok(()),
                Collected::GaveUp(why) => {
                    self.finish(job, JobStatus::Failed, &why, JobChanges::default(), report).await
                }
            },
            BackendState::Missing => {
                self.finish(
                    job,
                    JobStatus::Failed,
                    &format!("pool {pool_name} no longer knows {}", handle.0),
                    JobChanges::default(),
                    report,
                )
                .await
            }
        }
    }

    /// When an ended attempt's process ended, as its backend knows it (the job manager sees it at its next check),
    /// never before the job's last change nor after now.
    async fn ended_at(
        &self,
        job: &JobRecord,
        backend: &dyn crate::backend::Backend,
        handle: &BackendRef,
    ) -> Option<falcon_core::time::Millis> {
        backend.ended_at(handle).await.map(|at| at.max(job.updated).min(now()))
    }

    /// Puts a finished attempt back in the queue when attempts remain (the Job module owns retries).
    async fn retry(&self, job: &JobRecord, from: JobStatus, spec: &JobSpec, why: &str) -> Result<()> {
        if job.attempt >= i64::from(spec.retry.max_attempts) {
            return Ok(());
        }
        let next = job.attempt + 1;
        let reason = format!("{why}: retrying as attempt {next} of {}", spec.retry.max_attempts);
        let changes = JobChanges { attempt: Some(next), placement: Some(None), ..Default::default() };
        let current = JobRecord { status: from, ..job.clone() };
        self.transition(&current, JobStatus::Queued, &reason, changes).await?;
        Ok(())
    }

    /// Moves a job off a pool that cannot provide capacity, to be placed elsewhere.
    async fn fail_over(&self, job: &JobRecord, pool: usize, handle: &BackendRef, reason: &str) -> Result<()> {
        let pool_name = &self.pools[pool].name;
        self.backends[pool].cancel(handle).await?;
        let mut excluded = job.excluded_pools.clone();
        excluded.push(pool_name.clone());
        let waited = self.config.capacity_timeout.as_secs();
        let text = format!("moved off pool {pool_name}: no capacity for {waited} s ({reason})");
        let changes = JobChanges { placement: Some(None), excluded_pools: Some(excluded), ..Default::default() };
        self.transition(job, JobStatus::Queued, &text, changes).await?;
        self.with_tracked(job.id, |t| t.unschedulable_since = None);
        Ok(())
    }
}
