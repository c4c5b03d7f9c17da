//! An experiment on the wire: its record with the RFC 3339 siblings of its timestamps, its audit log, and `exp
//! show`'s view — built from EXP's values, which carry no serialization of their own.

use falcon_core::ids::{ExperimentId, GoalId, JobId, SessionId};
use falcon_core::status::{ExperimentStatus, Scenario};
use falcon_core::time::Millis;
use schemars::JsonSchema;
use serde::Serialize;
use std::collections::BTreeMap;

/// An experiment record as JSON views write it (`exp show`, `exp list`, `session show`): its fields (`created`
/// and `updated` in milliseconds since the epoch), then `created_iso` and `updated_iso` (RFC 3339, UTC).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ExperimentRecordView {
    /// Id.
    pub id: ExperimentId,
    /// Display name.
    pub name: String,
    /// Scenario.
    pub scenario: Scenario,
    /// Current status.
    pub status: ExperimentStatus,
    /// Goal.
    pub goal: Option<GoalId>,
    /// Session.
    pub session: Option<SessionId>,
    /// Baseline experiment.
    pub baseline: Option<ExperimentId>,
    /// The job currently running it.
    pub job: Option<JobId>,
    /// Attempt number, from 1.
    pub attempt: i64,
    /// The spec.
    pub spec: serde_json::Value,
    /// Content hash of the config snapshot.
    pub config_hash: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// When it was recorded.
    pub created: Millis,
    /// When it last changed.
    pub updated: Millis,
    /// `created` as RFC 3339 (UTC).
    pub created_iso: String,
    /// `updated` as RFC 3339 (UTC).
    pub updated_iso: String,
    /// The code it ran: the commit its spec's `code` resolved to (checked out for the job), or the git work tree
    /// it was submitted from (recorded only); `null` when neither.
    pub code: Option<CodeView>,
}

/// The code an experiment ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CodeView {
    /// The full commit SHA.
    pub commit: String,
    /// The branch the spec named or the work tree had checked out.
    pub branch: Option<String>,
    /// `spec` (the spec's `code`, checked out for the job) or `work_tree` (recorded from where it was submitted).
    pub origin: String,
    /// The repository (absolute path or URL; a work tree's top folder).
    pub repo: Option<String>,
    /// The ref as the spec wrote it.
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    /// Whether the work tree had uncommitted changes (work trees only).
    pub dirty: Option<bool>,
    /// SHA-256 of those changes (`git diff HEAD --binary` and the untracked files' names), when dirty.
    pub diff_sha256: Option<String>,
    /// The commit's subject line.
    pub subject: Option<String>,
    /// Its author.
    pub author: Option<String>,
    /// Its committer date (ISO 8601).
    pub date: Option<String>,
    /// The tree snapshot the job was checked out from, stored once per tree (spec code only).
    pub snapshot: Option<CodeSnapshotView>,
}

/// A commit's tree in the artifact store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CodeSnapshotView {
    /// The git tree id.
    pub tree: String,
    /// Its key in the artifact store (`code/<tree>.tar.gz`).
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256.
    pub sha256: String,
}

impl From<&falcon_exp::CodeRecord> for CodeView {
    fn from(c: &falcon_exp::CodeRecord) -> Self {
        CodeView {
            commit: c.commit.clone(),
            branch: c.branch.clone(),
            origin: c.origin.clone(),
            repo: c.repo.clone(),
            reference: c.reference.clone(),
            dirty: c.dirty,
            diff_sha256: c.diff_sha256.clone(),
            subject: c.subject.clone(),
            author: c.author.clone(),
            date: c.date.clone(),
            snapshot: c.snapshot.as_ref().map(|s| CodeSnapshotView {
                tree: s.tree.clone(),
                key: s.key.clone(),
                size: s.size,
                sha256: s.sha256.clone(),
            }),
        }
    }
}

impl From<&falcon_exp::ExperimentRecord> for ExperimentRecordView {
    fn from(r: &falcon_exp::ExperimentRecord) -> Self {
        ExperimentRecordView {
            id: r.id,
            name: r.name.clone(),
            scenario: r.scenario,
            status: r.status,
            goal: r.goal,
            session: r.session,
            baseline: r.baseline,
            job: r.job,
            attempt: r.attempt,
            spec: r.spec.clone(),
            config_hash: r.config_hash.clone(),
            labels: r.labels.clone(),
            created: r.created,
            updated: r.updated,
            created_iso: r.created.to_rfc3339(),
            updated_iso: r.updated.to_rfc3339(),
            code: r.code.as_ref().map(CodeView::from),
        }
    }
}

/// An entry of an experiment's audit log as JSON views write it: its fields, then `at_iso`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "TransitionSchema")]
pub struct TransitionView {
    /// Status before (none for the first entry).
    pub from: Option<ExperimentStatus>,
    /// Status after.
    pub to: ExperimentStatus,
    /// When.
    pub at: Millis,
    /// Why.
    pub reason: String,
    /// Attempt it belongs to.
    pub attempt: i64,
    /// `at` as RFC 3339 (UTC).
    pub at_iso: String,
}

impl From<&falcon_exp::experiments::Transition> for TransitionView {
    fn from(t: &falcon_exp::experiments::Transition) -> Self {
        TransitionView {
            from: t.from,
            to: t.to,
            at: t.at,
            reason: t.reason.clone(),
            attempt: t.attempt,
            at_iso: t.at.to_rfc3339(),
        }
    }
}

/// A file the job wrote that is not among the artifacts as written, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SkippedOutput {
    /// Its path relative to the job's artifact folder.
    pub path: String,
    /// Why.
    pub reason: String,
}

/// Something a reader skipped in one of the experiment's files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Note {
    /// The file (artifact URI).
    pub file: String,
    /// 1-based line, when the note is about one line.
    pub line: Option<u64>,
    /// What was skipped and why.
    pub reason: String,
}

/// Everything `exp show` prints.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ExperimentView {
    /// The stored experiment (id, name, status, scenario, config_hash, spec, …), with `created_iso` and
    /// `updated_iso`.
    #[serde(flatten)]
    pub record: ExperimentRecordView,
    /// The audit log; each entry with `at_iso` beside `at`.
    pub history: Vec<TransitionView>,
    /// Indexed artifacts.
    pub artifacts: Vec<ArtifactView>,
    /// Metric summaries by name.
    pub metrics: super::MetricSummaries,
    /// Summary rows of the analyses run on its artifacts (profile: MFU, step time, duty cycle, peak memory,
    /// bound-by), by tool.
    pub analysis: Vec<super::AnalysisSummary>,
    /// Why the job waits or failed, when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_reason: Option<String>,
    /// Files the job wrote that are not stored (or whose later version was refused), with the reason.
    pub skipped: Vec<SkippedOutput>,
    /// What the readers of its files skipped: malformed metrics lines, NaN values kept out of summaries.
    pub notes: Vec<Note>,
}

impl From<falcon_exp::experiments::ExperimentView> for ExperimentView {
    fn from(v: falcon_exp::experiments::ExperimentView) -> Self {
        ExperimentView {
            record: ExperimentRecordView::from(&v.record),
            history: v.history.iter().map(TransitionView::from).collect(),
            artifacts: v.artifacts.into_iter().map(ArtifactView::from).collect(),
            metrics: super::metric_summaries(&v.metrics),
            analysis: v.analysis.iter().map(super::AnalysisSummary::from).collect(),
            job_reason: v.job_reason,
            skipped: v.skipped.into_iter().map(|s| SkippedOutput { path: s.path, reason: s.reason }).collect(),
            notes: v.notes.into_iter().map(|n| Note { file: n.file, line: n.line, reason: n.reason }).collect(),
        }
    }
}

/// An artifact as the index holds it, on the wire (`exp show`'s `artifacts`, `exp artifacts`): where it is
/// stored, its size and hash.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "ArtifactRecord")]
pub struct ArtifactView {
    /// Row id.
    pub id: i64,
    /// Experiment.
    pub experiment: Option<ExperimentId>,
    /// Job.
    pub job: Option<JobId>,
    /// Kind.
    pub kind: falcon_core::artifact::ArtifactKind,
    /// Key inside the artifact store.
    pub key: String,
    /// Full URI (a local object's, over the API, is the route that serves it).
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl From<falcon_exp::ArtifactRecord> for ArtifactView {
    fn from(a: falcon_exp::ArtifactRecord) -> Self {
        ArtifactView {
            id: a.id,
            experiment: a.experiment,
            job: a.job,
            kind: a.kind,
            key: a.key,
            uri: a.uri,
            size: a.size,
            sha256: a.sha256,
            content_type: a.content_type,
            created: a.created,
            name: a.name,
        }
    }
}
