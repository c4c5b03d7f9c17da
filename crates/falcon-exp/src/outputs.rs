//! An experiment's stored outputs read piecewise, for front ends that serve them (the Web API): logs from an
//! offset (a follower reads only what is new), an indexed artifact by its path with byte ranges, and generated
//! reports kept as `report` artifacts so a second request is served from the store.
//!
//! Paths are relative to the experiment (`metrics.jsonl`, `plugins/profile/r/h.xplane.pb`); one with an empty,
//! `.` or `..` segment, a leading `/`, a backslash or a control character is refused before any lookup, and only
//! artifacts the experiment's index lists are served.

use crate::error::{ExpError, Result};
use crate::experiments::experiment_prefix;
use crate::Exp;
use falcon_core::artifact::{content_type_for, ArtifactKind};
use falcon_core::ids::ExperimentId;
use falcon_infra::meta::{ArtifactRecord, NewArtifact};
use falcon_infra::{InfraError, PutMode};
use std::collections::BTreeMap;

/// The source of the notes that record an artifact whose stored bytes differ from its index (`exp show`'s
/// `notes[]`): its downloads are refused from then on.
pub const INTEGRITY_NOTES: &str = "integrity";

/// The experiment of an artifact and its path inside it (`None` for an artifact of no experiment).
fn experiment_path(artifact: &ArtifactRecord) -> Option<(ExperimentId, String)> {
    let id = artifact.experiment?;
    let path = artifact.key.strip_prefix(&format!("{}/", experiment_prefix(id))).unwrap_or(&artifact.key);
    Some((id, path.to_string()))
}

/// New text of one log since an offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogChunk {
    /// `<attempt>/<source>.log`, as [`Exp::logs`] names it.
    pub source: String,
    /// Where the next read starts (bytes): `from` plus the bytes of `text`.
    pub next: u64,
    /// The new text (only whole UTF-8 characters: a character cut by the read comes with the next chunk).
    pub text: String,
}

/// Checks an artifact path a request named (see the module docs).
pub fn check_path(path: &str) -> Result<()> {
    let bad = path.is_empty()
        || path.starts_with('/')
        || path.contains('\\')
        || path.chars().any(char::is_control)
        || path.split('/').any(|s| s.is_empty() || s == "." || s == "..");
    if bad {
        return Err(ExpError::Invalid(format!(
            "artifact path `{}`: a path inside the experiment, without `..`, `.`, empty segments, a leading `/` or \
             backslashes",
            path.escape_default()
        )));
    }
    Ok(())
}

impl Exp {
    /// What each log gained since `from` (source → offset; missing sources start at 0). Reads only the new
    /// bytes of each log object.
    pub async fn logs_from(&self, id: ExperimentId, from: &BTreeMap<String, u64>) -> Result<Vec<LogChunk>> {
        self.meta.get_experiment(id).await?;
        let prefix = format!("{}/logs", experiment_prefix(id));
        let mut out = Vec::new();
        for object in self.artifacts.list(&prefix).await? {
            let source = object.key.strip_prefix(&format!("{prefix}/")).unwrap_or(&object.key).to_string();
            let start = from.get(&source).copied().unwrap_or(0);
            if object.size <= start {
                continue;
            }
            let bytes = match self.artifacts.get_range(&object.key, start..object.size).await {
                Ok(b) => b,
                Err(InfraError::ObjectNotFound { .. }) => continue, // replaced meanwhile: next time
                Err(e) => return Err(e.into()),
            };
            let valid = match std::str::from_utf8(&bytes) {
                Ok(_) => bytes.len(),
                // A character cut at the end waits for its last bytes; invalid bytes inside are replaced.
                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                Err(_) => bytes.len(),
            };
            if valid == 0 {
                continue;
            }
            let text = String::from_utf8_lossy(&bytes[..valid]).into_owned();
            out.push(LogChunk { source, next: start + valid as u64, text });
        }
        Ok(out)
    }

    /// The last `max_bytes` of each of the experiment's logs (from the start of a line when cut), with where a
    /// follower would read next: what a page shows before it follows.
    pub async fn log_tails(&self, id: ExperimentId, max_bytes: u64) -> Result<Vec<LogChunk>> {
        self.meta.get_experiment(id).await?;
        let prefix = format!("{}/logs", experiment_prefix(id));
        let mut from = BTreeMap::new();
        for object in self.artifacts.list(&prefix).await? {
            let source = object.key.strip_prefix(&format!("{prefix}/")).unwrap_or(&object.key).to_string();
            from.insert(source, object.size.saturating_sub(max_bytes));
        }
        let mut chunks = self.logs_from(id, &from).await?;
        for c in &mut chunks {
            if from.get(&c.source).is_some_and(|start| *start > 0) {
                // Cut inside a line: start after its end.
                if let Some(nl) = c.text.find('\n') {
                    c.text.drain(..=nl);
                }
            }
        }
        Ok(chunks)
    }

    /// The indexed artifact at `path` inside the experiment (not found when the index has none there).
    pub async fn artifact(&self, id: ExperimentId, path: &str) -> Result<ArtifactRecord> {
        check_path(path)?;
        let key = format!("{}/{path}", experiment_prefix(id));
        self.meta.get_experiment(id).await?;
        self.meta
            .list_artifacts(id, None)
            .await?
            .into_iter()
            .find(|a| a.key == key)
            .ok_or_else(|| ExpError::NotFound(format!("{id} has no artifact `{path}`")))
    }

    /// Bytes `range` of an artifact's object (cut at its end).
    pub async fn artifact_range(&self, artifact: &ArtifactRecord, range: std::ops::Range<u64>) -> Result<bytes::Bytes> {
        Ok(self.artifacts.get_range(&artifact.key, range).await?)
    }

    /// An artifact's whole object, checked against the index's size and SHA-256 (a mismatch is recorded).
    pub async fn artifact_bytes(&self, artifact: &ArtifactRecord) -> Result<bytes::Bytes> {
        self.verified(artifact).await
    }

    /// The whole object, refused — and the refusal recorded — when it is not what the index says.
    async fn verified(&self, artifact: &ArtifactRecord) -> Result<bytes::Bytes> {
        if let Some(why) = self.integrity_failure(artifact).await? {
            return Err(ExpError::Io(why));
        }
        match self.artifacts.get_verified(&artifact.key, artifact.size, &artifact.sha256).await {
            Err(InfraError::Integrity { expected, found, .. }) => {
                let why =
                    self.record_integrity_failure(artifact, &format!("{found}, the index says {expected}")).await?;
                Err(ExpError::Io(why))
            }
            other => Ok(other?),
        }
    }

    /// Why the artifact is refused, when a download found its stored bytes changed ([`INTEGRITY_NOTES`]).
    pub async fn integrity_failure(&self, artifact: &ArtifactRecord) -> Result<Option<String>> {
        let Some((id, path)) = experiment_path(artifact) else { return Ok(None) };
        let notes = self.meta.experiment_notes(id).await?;
        Ok(notes.into_iter().find(|n| n.source == INTEGRITY_NOTES && n.file == path).map(|n| n.reason))
    }

    /// Records that the artifact's stored bytes are not the ones indexed (`found`: what was read), so every later
    /// download is refused and `exp show` says so; the reason recorded.
    pub async fn record_integrity_failure(&self, artifact: &ArtifactRecord, found: &str) -> Result<String> {
        let Some((id, path)) = experiment_path(artifact) else {
            return Ok(format!("{}: the stored bytes are not the ones indexed ({found})", artifact.key));
        };
        let reason = format!(
            "the stored bytes are not the ones indexed ({found}): changed in the store after collection, so it is \
             never served"
        );
        tracing::error!("artifact {path} of {id}: {reason}");
        let mut notes: Vec<_> =
            self.meta.experiment_notes(id).await?.into_iter().filter(|n| n.source == INTEGRITY_NOTES).collect();
        if !notes.iter().any(|n| n.file == path) {
            notes.push(falcon_infra::meta::ExperimentNote {
                source: INTEGRITY_NOTES.into(),
                file: path.to_string(),
                line: None,
                reason: reason.clone(),
            });
            self.meta.put_experiment_notes(id, INTEGRITY_NOTES, &notes).await?;
        }
        Ok(format!("{path}: {reason}"))
    }

    /// A report Falcon kept for the experiment under `reports/<name>`, if there is one. A file the workload
    /// itself wrote under that name (kind `other`, not `report`) is not one: it is never served as Falcon's.
    pub async fn kept_report(&self, id: ExperimentId, name: &str) -> Result<Option<bytes::Bytes>> {
        let path = format!("reports/{name}");
        check_path(&path)?;
        match self.artifact(id, &path).await {
            Ok(a) if a.kind == ArtifactKind::Report => Ok(Some(self.verified(&a).await?)),
            Ok(_) => Ok(None),
            Err(ExpError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Keeps a generated report as the experiment's `reports/<name>` artifact (kind `report`); a report kept
    /// already under that name stays (the first one wins, as for every write-once artifact).
    pub async fn keep_report(&self, id: ExperimentId, name: &str, bytes: Vec<u8>) -> Result<ArtifactRecord> {
        let path = format!("reports/{name}");
        check_path(&path)?;
        self.meta.get_experiment(id).await?;
        let key = format!("{}/{path}", experiment_prefix(id));
        match self.artifacts.put_bytes(&key, bytes, PutMode::Create).await {
            Ok(info) => {
                let new = NewArtifact {
                    experiment: Some(id),
                    job: None,
                    kind: ArtifactKind::Report,
                    key: key.clone(),
                    uri: info.uri,
                    size: info.size,
                    sha256: info.sha256,
                    content_type: content_type_for(&path).to_string(),
                };
                match self.meta.insert_artifact(&new).await {
                    Ok(_) | Err(InfraError::Conflict(_)) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Err(InfraError::AlreadyExists { .. }) => {} // kept by an earlier request
            Err(e) => return Err(e.into()),
        }
        self.artifact(id, &path).await
    }
}

#[cfg(test)]
mod tests {
    use super::check_path;

    #[test]
    fn traversal_and_odd_paths_are_refused() {
        for ok in ["metrics.jsonl", "plugins/profile/r/h.xplane.pb", "reports/x.json", "a b/c%d"] {
            assert!(check_path(ok).is_ok(), "{ok}");
        }
        for bad in ["", "/etc/passwd", "../e-2/metrics.jsonl", "a/../b", "a//b", "./a", "a\\b", "a\nb", "a/"] {
            assert!(check_path(bad).is_err(), "{bad:?}");
        }
    }
}
