//! The artifact index: one row per object in the artifact store.

use super::rows::RowExt;
use super::{check_short, now, query_err, with_pool, LastId, MetaStore};
use crate::error::{InfraError, Result};
use falcon_core::artifact::ArtifactKind;
use falcon_core::ids::{ExperimentId, JobId};
use falcon_core::time::Millis;

const TABLE: &str = "artifacts";

/// What an index row is made of.
#[derive(Debug, Clone)]
pub struct NewArtifact {
    /// Experiment it belongs to.
    pub experiment: Option<ExperimentId>,
    /// Job that produced it.
    pub job: Option<JobId>,
    /// Kind.
    pub kind: ArtifactKind,
    /// Key inside the artifact store.
    pub key: String,
    /// Full URI.
    pub uri: String,
    /// Size in bytes.
    pub size: u64,
    /// Hex SHA-256 of the content.
    pub sha256: String,
    /// MIME type.
    pub content_type: String,
}

/// An index row as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ArtifactRecord {
    /// Row id.
    pub id: i64,
    /// Experiment.
    pub experiment: Option<ExperimentId>,
    /// Job.
    pub job: Option<JobId>,
    /// Kind.
    pub kind: ArtifactKind,
    /// Key inside the artifact store.
    pub key: String,
    /// Full URI.
    pub uri: String,
    /// Size in bytes.
    pub size: u64,
    /// Hex SHA-256.
    pub sha256: String,
    /// MIME type.
    pub content_type: String,
    /// When it was indexed.
    pub created: Millis,
    /// The file's name as the job wrote it (relative to its artifact folder), when its key had to shorten or
    /// encode it (a segment over 200 bytes ends `~<hash>`; `%`, `\`, control characters are escaped): read from
    /// the job's outputs record, not from the index.
    pub name: Option<String>,
}

impl MetaStore {
    /// Indexes an artifact. The same URI twice is a conflict.
    pub async fn insert_artifact(&self, new: &NewArtifact) -> Result<ArtifactRecord> {
        check_short(TABLE, "object_key", &new.key)?;
        check_short(TABLE, "uri", &new.uri)?;
        check_short(TABLE, "content_type", &new.content_type)?;
        check_short(TABLE, "sha256", &new.sha256)?;
        let at = now();
        let id = with_pool!(self, pool => {
            let done = sqlx::query(
                "INSERT INTO artifacts (experiment_id, job_id, kind, object_key, uri, size_bytes, sha256, content_type, \
                 created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(new.experiment.map(|e| e.0))
            .bind(new.job.map(|j| j.0))
            .bind(new.kind.as_str())
            .bind(&new.key)
            .bind(&new.uri)
            .bind(new.size as i64)
            .bind(&new.sha256)
            .bind(&new.content_type)
            .bind(at.0)
            .execute(pool)
            .await;
            match done {
                Ok(done) => done.last_id(),
                Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                    return Err(InfraError::Conflict(format!("artifact {} is already indexed", new.uri)));
                }
                Err(e) => return Err(query_err("insert artifact")(e)),
            }
        });
        Ok(ArtifactRecord {
            name: None,
            id,
            experiment: new.experiment,
            job: new.job,
            kind: new.kind,
            key: new.key.clone(),
            uri: new.uri.clone(),
            size: new.size,
            sha256: new.sha256.clone(),
            content_type: new.content_type.clone(),
            created: at,
        })
    }

    /// The experiment's artifacts, optionally of one kind, in the order they were indexed.
    pub async fn list_artifacts(
        &self,
        experiment: ExperimentId,
        kind: Option<ArtifactKind>,
    ) -> Result<Vec<ArtifactRecord>> {
        let kind = kind.map(|k| k.as_str());
        with_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT id, experiment_id, job_id, kind, object_key, uri, size_bytes, sha256, content_type, created_ms \
                 FROM artifacts WHERE experiment_id = ? AND (? IS NULL OR kind = ?) ORDER BY id",
            )
            .bind(experiment.0)
            .bind(kind)
            .bind(kind)
            .fetch_all(pool)
            .await
            .map_err(query_err("list artifacts"))?;
            rows.iter().map(artifact_from_row).collect()
        })
    }
}

fn artifact_from_row(r: &impl RowExt) -> Result<ArtifactRecord> {
    let kind = r.text(TABLE, "kind")?;
    Ok(ArtifactRecord {
        name: None,
        id: r.int(TABLE, "id")?,
        experiment: r.opt_int(TABLE, "experiment_id")?.map(ExperimentId),
        job: r.opt_int(TABLE, "job_id")?.map(JobId),
        kind: ArtifactKind::parse(&kind).ok_or_else(|| InfraError::CorruptRow {
            table: TABLE,
            message: format!("unknown artifact kind `{kind}`"),
        })?,
        key: r.text(TABLE, "object_key")?,
        uri: r.text(TABLE, "uri")?,
        size: r.int(TABLE, "size_bytes")? as u64,
        sha256: r.text(TABLE, "sha256")?,
        content_type: r.text(TABLE, "content_type")?,
        created: Millis(r.int(TABLE, "created_ms")?),
    })
}
