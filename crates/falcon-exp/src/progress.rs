//! Waiting on several experiments with something to show: each one's status, why it waits (the job's
//! current reason: queued, waiting for capacity on a pool, submitting failed and retried) and, while it runs,
//! the last step its metrics reached (from the live snapshot of its `metrics*.jsonl` in the artifact store).

use crate::error::{ExpError, Result};
use crate::experiments::experiment_prefix;
use crate::Exp;
use falcon_core::ids::ExperimentId;
use falcon_core::status::ExperimentStatus;

/// The largest live metrics snapshot read for the step reached.
const MAX_SNAPSHOT_BYTES: u64 = 8 << 20;

/// Where one experiment of a wait stands.
#[derive(Debug, Clone, PartialEq)]
pub struct RunProgress {
    /// The experiment.
    pub experiment: ExperimentId,
    /// Its name.
    pub name: String,
    /// Its status.
    pub status: ExperimentStatus,
    /// Why it is where it is, while it is not finished: its job's current reason (`waiting for capacity …`).
    pub reason: Option<String>,
    /// The last step its metrics logged, while it runs.
    pub step: Option<i64>,
}

impl Exp {
    /// Where each of `ids` stands now.
    pub async fn progress(&self, ids: &[ExperimentId]) -> Result<Vec<RunProgress>> {
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            let e = self.meta.get_experiment(id).await?;
            let reason = match e.job {
                Some(job) if !e.status.is_terminal() => self.meta.get_job(job).await?.status_reason,
                _ => None,
            };
            let step = match e.status {
                ExperimentStatus::Running => self.last_step(id).await,
                _ => None,
            };
            out.push(RunProgress { experiment: id, name: e.name, status: e.status, reason, step });
        }
        Ok(out)
    }

    /// Runs the worker loop here until every one of `ids` has ended (or `deadline`), calling `on_tick` with
    /// their progress after each pass. Returns their final progress.
    pub async fn wait_all(
        &self,
        ids: &[ExperimentId],
        deadline: Option<std::time::Instant>,
        mut on_tick: impl FnMut(&[RunProgress]),
    ) -> Result<Vec<RunProgress>> {
        loop {
            let (tick, _) = self.work().await?;
            for e in tick.errors {
                tracing::warn!("{e}");
            }
            let now = self.progress(ids).await?;
            on_tick(&now);
            if now.iter().all(|p| p.status.is_terminal()) {
                return Ok(now);
            }
            if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                let live: Vec<String> = now
                    .iter()
                    .filter(|p| !p.status.is_terminal())
                    .map(|p| format!("{} {}", p.experiment, p.status))
                    .collect();
                return Err(ExpError::Timeout(format!(
                    "{} of {} experiment(s) still live at the --timeout ({}); they keep running (`falcon worker`)",
                    live.len(),
                    ids.len(),
                    live.join(", ")
                )));
            }
            tokio::time::sleep(std::time::Duration::from_millis(self.config.jobs.poll_interval_ms.min(500))).await;
        }
    }

    /// The last `step` in the experiment's live metrics snapshot; `None` when there is none yet (never an error:
    /// progress is best effort).
    async fn last_step(&self, id: ExperimentId) -> Option<i64> {
        let objects = self.artifacts.list(&experiment_prefix(id)).await.ok()?;
        let metrics = objects.iter().filter(|o| {
            let file = o.key.rsplit('/').next().unwrap_or("");
            file.starts_with("metrics") && file.ends_with(".jsonl") && o.size <= MAX_SNAPSHOT_BYTES
        });
        let mut best = None;
        for object in metrics {
            let data = self.artifacts.get(&object.key).await.ok()?;
            best = best.max(last_step_in(&data));
        }
        best
    }
}

/// The `step` of the last line of `data` that is a JSON object with an integer `step`.
fn last_step_in(data: &[u8]) -> Option<i64> {
    String::from_utf8_lossy(data).lines().rev().find_map(|line| {
        let v: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
        v.get("step")?.as_f64().filter(|s| s.is_finite()).map(|s| s as i64)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_last_readable_step_counts() {
        let text = b"{\"step\": 1, \"loss\": 2}\n{\"step\": 7.0}\n{\"step\": 8, \"loss\"";
        assert_eq!(super::last_step_in(text), Some(7), "a line cut mid-write is skipped");
        assert_eq!(super::last_step_in(b""), None);
        assert_eq!(super::last_step_in(b"not json\n{\"loss\": 1}\n"), None);
    }
}
