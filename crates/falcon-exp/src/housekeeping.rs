//! What keeps a long-running worker honest: its job leases renewed on their own timer while it works, and
//! job folders of ended, collected jobs removed (`falcon gc`).

use crate::{Exp, Result};
pub use falcon_job::{JobDirCollection, LeaseKeeper};
use std::time::Duration;

impl Exp {
    /// Starts renewing the leases this process's job manager holds, every third of `[jobs] lease_s`, for as
    /// long as the guard lives (see [`falcon_job::JobManager::keep_leases`]). The worker loop holds one, so a
    /// long analysis or upload between or inside ticks keeps its jobs; dropping it (the worker stops) lets
    /// the leases lapse.
    pub async fn keep_leases(&self) -> Result<LeaseKeeper> {
        Ok(self.jobs().await?.keep_leases())
    }

    /// Removes the folders under `<data_dir>/jobs` of jobs that ended more than `min_age` ago and whose
    /// outputs are in the artifact store; with `dry_run`, only says which would go. Every folder is listed,
    /// kept ones with the reason.
    pub async fn collect_job_dirs(&self, min_age: Duration, dry_run: bool) -> Result<Vec<JobDirCollection>> {
        let jobs_dir = self.config.data_dir.join("jobs");
        Ok(self.jobs().await?.collect_job_dirs(&jobs_dir, min_age, dry_run).await?)
    }
}
