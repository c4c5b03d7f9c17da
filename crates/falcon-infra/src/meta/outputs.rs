//! What was collected of each job's outputs, and what readers skipped in an experiment's files.
//!
//! The job-outputs record is the hand-off between the Job module, which uploads a job's files and writes one
//! row per file (the object it stored, or why it could not), and EXP, which indexes an experiment's artifacts
//! from those rows and shows the skipped ones. Neither knows the other's types: both speak these rows.

use super::rows::RowExt;
use super::{check_large, check_short, now, query_err, with_pool, BeginWrite, MetaStore};
use crate::error::Result;
use falcon_core::ids::{ExperimentId, JobId};
use sha2::{Digest, Sha256};

/// The longest skip reason or note kept, in characters (longer ones are cut, marked with `…`).
const MAX_REASON_CHARS: usize = 2000;

/// One file a job wrote: the object it is stored as, or why it is not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobOutput {
    /// The file's path relative to the job's output folder, as written (lossy UTF-8 for display).
    pub path: String,
    /// What was stored; `None` when skipped.
    pub stored: Option<StoredOutput>,
    /// Why it was not stored (or why a later version was refused), when it was not.
    pub skip_reason: Option<String>,
    /// A snapshot replaced while the job runs (a log, a metrics file), frozen when the job ends.
    pub live: bool,
}

/// The object a job output is stored as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredOutput {
    /// Key in the artifact store.
    pub key: String,
    /// Bytes stored.
    pub size: u64,
    /// Hex SHA-256 of the bytes stored.
    pub sha256: String,
}

/// A note about one of an experiment's files: something a reader skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExperimentNote {
    /// What read the file (`metrics`).
    pub source: String,
    /// The file (an artifact URI).
    pub file: String,
    /// 1-based line, when the note is about one line.
    pub line: Option<u64>,
    /// What was skipped and why.
    pub reason: String,
}

impl MetaStore {
    /// Records what was collected of one of a job's files, replacing what was recorded of it before.
    pub async fn put_job_output(&self, job: JobId, output: &JobOutput) -> Result<()> {
        check_large("job_outputs", "path", &output.path)?;
        if let Some(s) = &output.stored {
            check_short("job_outputs", "object_key", &s.key)?;
        }
        let path_hash = hex::encode(Sha256::digest(output.path.as_bytes()));
        let reason = output.skip_reason.as_deref().map(cut);
        let at = now();
        with_pool!(self, pool => {
            let mut tx = pool.begin_write().await.map_err(query_err("begin transaction"))?;
            sqlx::query("DELETE FROM job_outputs WHERE job_id = ? AND path_sha256 = ?")
                .bind(job.0)
                .bind(&path_hash)
                .execute(&mut *tx)
                .await
                .map_err(query_err("replace job output"))?;
            sqlx::query(
                "INSERT INTO job_outputs (job_id, path, path_sha256, object_key, size_bytes, sha256, skip_reason, \
                 live, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(job.0)
            .bind(&output.path)
            .bind(&path_hash)
            .bind(output.stored.as_ref().map(|s| s.key.as_str()))
            .bind(output.stored.as_ref().map(|s| s.size as i64))
            .bind(output.stored.as_ref().map(|s| s.sha256.as_str()))
            .bind(reason.as_deref())
            .bind(output.live)
            .bind(at.0)
            .execute(&mut *tx)
            .await
            .map_err(query_err("record job output"))?;
            tx.commit().await.map_err(query_err("commit job output"))?;
        });
        Ok(())
    }

    /// Everything recorded of a job's outputs, in path order.
    pub async fn job_outputs(&self, job: JobId) -> Result<Vec<JobOutput>> {
        with_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT path, object_key, size_bytes, sha256, skip_reason, live FROM job_outputs WHERE job_id = ? \
                 ORDER BY path",
            )
            .bind(job.0)
            .fetch_all(pool)
            .await
            .map_err(query_err("list job outputs"))?;
            rows.iter().map(output_from_row).collect()
        })
    }

    /// Replaces the experiment's notes from `source` with `notes`, atomically.
    pub async fn put_experiment_notes(
        &self,
        experiment: ExperimentId,
        source: &str,
        notes: &[ExperimentNote],
    ) -> Result<()> {
        check_short("experiment_notes", "source", source)?;
        for n in notes {
            check_large("experiment_notes", "file", &n.file)?;
        }
        let at = now();
        with_pool!(self, pool => {
            let mut tx = pool.begin_write().await.map_err(query_err("begin transaction"))?;
            sqlx::query("DELETE FROM experiment_notes WHERE experiment_id = ? AND source = ?")
                .bind(experiment.0)
                .bind(source)
                .execute(&mut *tx)
                .await
                .map_err(query_err("replace experiment notes"))?;
            for n in notes {
                sqlx::query(
                    "INSERT INTO experiment_notes (experiment_id, source, file, line, reason, created_ms) \
                     VALUES (?, ?, ?, ?, ?, ?)",
                )
                .bind(experiment.0)
                .bind(source)
                .bind(&n.file)
                .bind(n.line.map(|l| l as i64))
                .bind(cut(&n.reason))
                .bind(at.0)
                .execute(&mut *tx)
                .await
                .map_err(query_err("record experiment note"))?;
            }
            tx.commit().await.map_err(query_err("commit experiment notes"))?;
        });
        Ok(())
    }

    /// The experiment's notes, by source and then in the order they were recorded.
    pub async fn experiment_notes(&self, experiment: ExperimentId) -> Result<Vec<ExperimentNote>> {
        with_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT source, file, line, reason FROM experiment_notes WHERE experiment_id = ? ORDER BY source, id",
            )
            .bind(experiment.0)
            .fetch_all(pool)
            .await
            .map_err(query_err("list experiment notes"))?;
            rows.iter()
                .map(|r| {
                    Ok(ExperimentNote {
                        source: r.text("experiment_notes", "source")?,
                        file: r.text("experiment_notes", "file")?,
                        line: r.opt_int("experiment_notes", "line")?.map(|l| l as u64),
                        reason: r.text("experiment_notes", "reason")?,
                    })
                })
                .collect()
        })
    }
}

fn output_from_row(r: &impl RowExt) -> Result<JobOutput> {
    const T: &str = "job_outputs";
    let stored = match (r.opt_text(T, "object_key")?, r.opt_int(T, "size_bytes")?, r.opt_text(T, "sha256")?) {
        (Some(key), Some(size), Some(sha256)) => Some(StoredOutput { key, size: size as u64, sha256 }),
        _ => None,
    };
    Ok(JobOutput {
        path: r.text(T, "path")?,
        stored,
        skip_reason: r.opt_text(T, "skip_reason")?,
        live: r.int(T, "live")? != 0,
    })
}

/// `s`, cut to [`MAX_REASON_CHARS`] characters.
fn cut(s: &str) -> String {
    match s.char_indices().nth(MAX_REASON_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
