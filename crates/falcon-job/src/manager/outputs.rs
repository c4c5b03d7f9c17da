//! Collecting a job's outputs into the artifact store: logs and local artifacts copied while it runs and once
//! at its end (the final collection, tried again before the job may end), its resource-use series, and the
//! last meaningful line of a failed attempt's error stream.

use super::sampling::Upload;
use super::{now, JobManager};
use crate::backend::{Backend, BackendRef};
use crate::error::Result;
use crate::failure;
use falcon_core::ids::JobId;
use falcon_core::status::JobStatus;
use falcon_infra::meta::{JobChanges, JobRecord};
use falcon_infra::InfraError;
use std::time::{Duration, Instant};

/// The fewest times the final collection of an ended job's outputs is tried (once per tick) before giving up.
pub const COLLECT_TRIES: u32 = 10;

/// What the final collection came to.
pub(super) enum Collected {
    Done,
    Retry,
    GaveUp(String),
}

impl JobManager {
    /// The final collection of an ended job's outputs, which must succeed before the job is terminal: on a
    /// failure the job stays RUNNING ("collecting outputs", tried again next tick) for at least
    /// [`COLLECT_TRIES`] tries and `collect_patience`, then gives up with the reason (the job then ends FAILED:
    /// its data is not all there). The tries and the time of the first are counted in the store, so a worker
    /// killed meanwhile does not start the count again: its successor continues it.
    pub(super) async fn collect_final(
        &self,
        job: &JobRecord,
        backend: &dyn Backend,
        handle: &BackendRef,
    ) -> Result<Collected> {
        let Err(e) = self.copy_outputs(job, backend, handle, true).await else {
            return Ok(Collected::Done);
        };
        let (tries, since) = self.meta.record_collect_failure(job.id).await?;
        let failing_for = Duration::from_millis(u64::try_from(now().0.saturating_sub(since.0)).unwrap_or(0));
        if tries >= i64::from(COLLECT_TRIES) && failing_for >= self.config.collect_patience {
            return Ok(Collected::GaveUp(format!("its outputs could not be collected after {tries} tries: {e}")));
        }
        let reason = format!(
            "collecting outputs: try {tries} failed ({e}); trying again (it fails after {COLLECT_TRIES} tries and {}s)",
            self.config.collect_patience.as_secs()
        );
        tracing::warn!("job {}: {reason}", job.id);
        if job.status == JobStatus::Running {
            self.meta.set_job_status_reason(job.id, &reason).await?;
        } else {
            let changes = JobChanges { started: Some(now()), ..Default::default() };
            self.transition(job, JobStatus::Running, &reason, changes).await?;
        }
        Ok(Collected::Retry)
    }

    /// The last meaningful line of what a failed attempt wrote to its error stream ([`failure`]), when its
    /// backend can read it. A read that fails only leaves the reason without its cause.
    pub(super) async fn failure_cause(
        &self,
        job: &JobRecord,
        backend: &dyn Backend,
        handle: &BackendRef,
    ) -> Option<String> {
        match backend.failure_output(handle).await {
            Ok(bytes) => bytes.as_deref().and_then(failure::meaningful_line),
            Err(e) => {
                tracing::warn!("job {}: reading the end of its error output failed (its reason lacks it): {e}", job.id);
                None
            }
        }
    }

    /// Copies logs and local artifacts into the store: at most every `log_interval` while running, always at the
    /// end. Files that cannot be stored are recorded as skipped in the job's outputs; an error is a store
    /// failure, and nothing stored before it is lost.
    pub(super) async fn copy_outputs(
        &self,
        job: &JobRecord,
        backend: &dyn Backend,
        handle: &BackendRef,
        last: bool,
    ) -> Result<()> {
        let due = self.with_tracked(job.id, |t| {
            let due = last || t.last_copy.is_none_or(|at| at.elapsed() >= self.config.log_interval);
            if due {
                t.last_copy = Some(Instant::now());
            }
            due
        });
        if !due {
            return Ok(());
        }
        let prefix = self.prefix(job);
        for log in backend.logs(handle).await? {
            let rel = format!("logs/{}/{}.log", job.attempt, sanitize(&log.source));
            self.sync.put_live(job.id, &format!("{prefix}/{rel}"), &rel, log.text).await?;
        }
        self.copy_samples(job.id, &prefix, last).await?;
        if let Some(dir) = backend.artifact_dir(handle) {
            self.sync.upload_dir(job.id, job.attempt, &dir, &prefix, last).await?;
        }
        Ok(())
    }

    /// Writes the job's resource-use series (or why it has none), merging what an earlier worker stored first.
    pub(super) async fn copy_samples(&self, job: JobId, prefix: &str, last: bool) -> Result<()> {
        match self.sampling.upload(job, last) {
            None => Ok(()),
            Some(Upload::Skip { rel, reason }) => self.sync.record_skip_once(job, &rel, &reason).await,
            Some(Upload::Series { rel, attempt, mut text, merge }) => {
                let key = format!("{prefix}/{rel}");
                if merge {
                    let stored = match self.artifacts.get(&key).await {
                        Ok(bytes) => falcon_core::resources::read(&String::from_utf8_lossy(&bytes)).samples,
                        Err(InfraError::ObjectNotFound { .. }) => Vec::new(),
                        Err(e) => return Err(e.into()),
                    };
                    self.sampling.merge_stored(job, attempt, &stored);
                    if let Some(Upload::Series { text: merged, .. }) = self.sampling.upload(job, true) {
                        text = merged;
                    }
                }
                self.sync.put_live(job, &key, &rel, text).await
            }
        }
    }
}

fn sanitize(source: &str) -> String {
    source.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect()
}
