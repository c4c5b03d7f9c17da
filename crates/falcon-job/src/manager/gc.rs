//! Removing job folders (`<[jobs] work_dir>/<object-name>/`) that are no longer needed, so a worker that runs
//! for days keeps its disk bounded (`falcon gc`).
//!
//! A folder is removed only when all of these hold: a job record names it (its deterministic object name for
//! one of the job's attempts on a configured pool); the job has ended, longer ago than the age asked for;
//! nothing of it is running (no live process in its recorded group, none carrying its marker); and its outputs
//! were collected — every file of its `artifacts/` folder and its `stdout.log` / `stderr.log` are in the
//! artifact store with the same size. Anything else is kept, with the reason.

use super::JobManager;
use crate::backend::object_name;
use crate::error::Result;
use falcon_core::ids::JobId;
use falcon_infra::meta::JobRecord;
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One job folder and what [`JobManager::collect_job_dirs`] did with it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct JobDirCollection {
    /// The folder.
    pub path: PathBuf,
    /// The job it belongs to, when a record names it.
    pub job: Option<JobId>,
    /// Bytes in it.
    pub bytes: u64,
    /// Whether it is (or, in a dry run, would be) removed.
    pub remove: bool,
    /// Why it is kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept_because: Option<String>,
}

impl JobManager {
    /// Goes over the job folders under `jobs_dir` and removes those of jobs that ended more than `min_age`
    /// ago and whose outputs were collected (see the module docs); with `dry_run`, removes nothing and says
    /// what would go. A folder that cannot be removed is kept with the error as its reason.
    pub async fn collect_job_dirs(
        &self,
        jobs_dir: &Path,
        min_age: Duration,
        dry_run: bool,
    ) -> Result<Vec<JobDirCollection>> {
        let entries = match std::fs::read_dir(jobs_dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                let path = jobs_dir.display().to_string();
                return Err(falcon_infra::InfraError::Io { operation: "reading", path, source }.into());
            }
        };
        let jobs = self.meta.list_jobs(&[]).await?;
        let mut names: HashMap<String, (&JobRecord, i64)> = HashMap::new();
        for job in &jobs {
            // The job's own folder, shared by its attempts (the experiment's configuration snapshot): attempt 0.
            names.insert(job.name.clone(), (job, 0));
            for attempt in 1..=job.attempt.max(1) {
                for pool in &self.pools {
                    let name = object_name(&job.name, u32::try_from(attempt).unwrap_or(1), &pool.name);
                    names.insert(name, (job, attempt));
                }
            }
        }
        let cutoff = super::now().0.saturating_sub(i64::try_from(min_age.as_millis()).unwrap_or(i64::MAX));
        let mut out = Vec::new();
        let mut dirs: Vec<PathBuf> =
            entries.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()).collect();
        // Attempts' folders first, then the jobs' own folders (each goes only once its attempts' folders are gone).
        let name_of = |p: &Path| p.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        dirs.sort_by_key(|p| (names.get(&name_of(p)).is_some_and(|(_, a)| *a == 0), p.clone()));
        let mut left: Vec<String> = Vec::new();
        for path in dirs {
            let name = name_of(&path);
            let found = names.get(&name).copied();
            let kept_because = match found {
                None => Some("no job record names it".to_string()),
                Some((job, 0)) => match left.iter().any(|l| l.starts_with(&format!("{name}-a"))) {
                    true => Some("a folder of one of its attempts is still there".to_string()),
                    false if !job.status.is_terminal() => Some(format!("job {} is {}", job.id, job.status)),
                    false if job.updated.0 > cutoff => Some(format!("job {} ended too recently", job.id)),
                    false => None,
                },
                Some((job, attempt)) => self.keep_reason(job, attempt, &path, cutoff).await,
            };
            let mut entry = JobDirCollection {
                bytes: dir_size(&path),
                job: found.map(|(j, _)| j.id),
                remove: kept_because.is_none(),
                kept_because,
                path,
            };
            if entry.remove && !dry_run {
                if let Err(e) = std::fs::remove_dir_all(&entry.path) {
                    entry.remove = false;
                    entry.kept_because = Some(format!("removing it failed: {e}"));
                } else {
                    tracing::info!("gc: removed job folder {} ({} bytes)", entry.path.display(), entry.bytes);
                }
            }
            // What stays (a dry run counts what it would remove as gone, so it says what the real run does).
            if !entry.remove {
                left.push(name);
            }
            out.push(entry);
        }
        Ok(out)
    }

    /// Why the folder of `job`'s `attempt` must stay, or `None` when it may go.
    async fn keep_reason(&self, job: &JobRecord, attempt: i64, dir: &Path, cutoff: i64) -> Option<String> {
        if !job.status.is_terminal() {
            return Some(format!("job {} is {}", job.id, job.status));
        }
        if job.updated.0 > cutoff {
            return Some(format!("job {} ended too recently", job.id));
        }
        if crate::backend::local::folder_in_use(dir) {
            return Some("a process of it is still running".into());
        }
        let prefix = self.prefix(job);
        let stored: HashMap<String, u64> = match self.artifacts.list(&format!("{prefix}/")).await {
            Ok(objects) => objects.into_iter().map(|o| (o.key, o.size)).collect(),
            Err(e) => return Some(format!("the artifact store could not be listed: {e}")),
        };
        let mut expected = Vec::new();
        for source in ["stdout", "stderr"] {
            let log = dir.join(format!("{source}.log"));
            if log.is_file() {
                expected.push((log, format!("{prefix}/logs/{attempt}/{source}.log")));
            }
        }
        // Files recorded as skipped (a hard link, over a cap, …) were dealt with: not expected in the store.
        let skipped: std::collections::HashSet<String> = match self.meta.job_outputs(job.id).await {
            Ok(rows) => {
                rows.into_iter().filter(|o| o.stored.is_none() && o.skip_reason.is_some()).map(|o| o.path).collect()
            }
            Err(e) => return Some(format!("the job's outputs could not be read: {e}")),
        };
        let artifacts = dir.join("artifacts");
        let mut files = Vec::new();
        regular_files(&artifacts, &mut files);
        for file in files {
            let Ok(relative) = file.strip_prefix(&artifacts) else { continue };
            let rel = relative.to_string_lossy().replace('\\', "/");
            if skipped.contains(&rel) {
                continue;
            }
            expected.push((file, format!("{prefix}/{rel}")));
        }
        let missing = expected
            .iter()
            .filter(|(file, key)| {
                let size = std::fs::symlink_metadata(file).map(|m| m.len()).ok();
                match (size, stored.get(key).copied()) {
                    // A log past the snapshot cap is stored as its last part.
                    (Some(len), Some(_)) if key.contains("/logs/") && len > crate::untrusted::MAX_LOG_BYTES => false,
                    (size, stored) => size.is_none() || stored != size,
                }
            })
            .count();
        (missing > 0).then(|| format!("{missing} of its file(s) are not in the artifact store (not collected)"))
    }
}

fn regular_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        match entry.file_type() {
            Ok(t) if t.is_dir() => regular_files(&entry.path(), out),
            Ok(t) if t.is_file() => out.push(entry.path()),
            _ => {}
        }
    }
}

/// Bytes of the regular files under `dir` (links are not followed).
pub(crate) fn dir_size(dir: &Path) -> u64 {
    let mut files = Vec::new();
    regular_files(dir, &mut files);
    files.iter().filter_map(|f| std::fs::symlink_metadata(f).ok()).map(|m| m.len()).sum()
}
