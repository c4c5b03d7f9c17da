//! What keeps a long-running worker honest: its job leases renewed and its jobs' resource use sampled on
//! timers of their own while it works, and job folders of ended, collected jobs removed (`falcon gc`).

use crate::{Exp, Result};
pub use falcon_job::{Background, JobDirCollection};
use std::time::Duration;

impl Exp {
    /// Starts the job manager's timers for as long as the guard lives (see
    /// [`falcon_job::JobManager::start_background`]): the leases it holds renewed every third of `[jobs]
    /// lease_s`, and every active job's memory and CPU time sampled every `[jobs] sample_interval_ms` (the
    /// experiment's memory curve). The worker loop holds one, so a long analysis or upload between or inside
    /// ticks keeps its jobs; dropping it (the worker stops) lets the leases lapse.
    pub async fn start_background(&self) -> Result<Background> {
        Ok(self.jobs().await?.start_background())
    }

    /// A clean stop of a worker loop: writes the resource samples of its running jobs
    /// ([`Exp::flush_samples`]), stops the background timers (`background`), then hands back every lease it
    /// holds, so the next worker takes its jobs over at once rather than after `[jobs] lease_s`.
    pub async fn stop_background(&self, background: Background) -> Result<()> {
        let flushed = self.flush_samples().await;
        drop(background);
        self.jobs().await?.release_leases().await?;
        flushed
    }

    /// Writes the resource samples of every job this process's job manager still samples (see
    /// [`falcon_job::JobManager::flush_samples`]): every loop that held [`Exp::start_background`] calls it when it
    /// ends, so stopping a worker loses no sample. Nothing to do when no job manager was built.
    pub async fn flush_samples(&self) -> Result<()> {
        Ok(self.jobs().await?.flush_samples().await?)
    }

    /// Removes the folders under `[jobs] work_dir` of jobs that ended more than `min_age` ago and whose
    /// outputs are in the artifact store; with `dry_run`, only says which would go. Every folder is listed,
    /// kept ones with the reason.
    pub async fn collect_job_dirs(&self, min_age: Duration, dry_run: bool) -> Result<Vec<JobDirCollection>> {
        let jobs_dir = self.config.jobs.work_dir.clone();
        Ok(self.jobs().await?.collect_job_dirs(&jobs_dir, min_age, dry_run).await?)
    }
}
