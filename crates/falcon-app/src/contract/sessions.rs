//! A session on the wire: `session show`'s (and `session submit`'s) JSON, built from the use case's
//! `SessionDetail`.

use falcon_core::ids::{GoalId, SessionId};
use falcon_core::status::ExperimentStatus;
use falcon_core::time::Millis;
use schemars::JsonSchema;
use serde::Serialize;

use super::ExperimentRecordView;
use crate::session_grid::SessionGrid;

/// What `session show` adds to one experiment of the session.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SessionRow {
    /// Its stored metric summaries by name (`{}` before it finished, or when it logged none).
    pub metrics: super::MetricSummaries,
    /// It is not its baseline but has the baseline's config hash: a sweep point that runs the baseline's
    /// configuration again, so its difference from the baseline is run-to-run noise. Its baseline is the
    /// session's goal's baseline, else the `baseline` its spec names; without either, `false`.
    pub baseline_rerun: bool,
}

/// A session as `session show` writes it: the session's fields (`id`, `goal`, `name`, `spec`, `created`) with
/// `created_iso`, then `status`, `experiments[]` (each experiment record with `created_iso`/`updated_iso`, its
/// `metrics` and `baseline_rerun`), `differences[]` and the sweep `grid`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "SessionDetail")]
pub struct SessionDetailView {
    /// Id.
    pub id: SessionId,
    /// Goal.
    pub goal: Option<GoalId>,
    /// Name.
    pub name: String,
    /// Spec.
    pub spec: serde_json::Value,
    /// Created.
    pub created: Millis,
    /// `created` as RFC 3339 (UTC).
    pub created_iso: String,
    /// Aggregate: COMPLETED when all completed, RUNNING while any is live, else FAILED or CANCELLED.
    pub status: ExperimentStatus,
    /// Its experiments, in submission order.
    pub experiments: Vec<SessionExperimentView>,
    /// Spec keys whose values differ between the experiments.
    pub differences: Vec<super::NwayRow>,
    /// The sweep as a grid of one metric.
    pub grid: SessionGrid,
}

/// One experiment of a session: its record and what the session adds.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "SessionExperimentSchema")]
pub struct SessionExperimentView {
    #[serde(flatten)]
    pub record: ExperimentRecordView,
    #[serde(flatten)]
    pub row: SessionRow,
}
