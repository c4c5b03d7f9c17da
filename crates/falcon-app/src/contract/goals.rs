//! A goal on the wire: its record with the RFC 3339 siblings of its timestamps — built from EXP's record, which
//! carries no view of its own.

use falcon_core::ids::{ExperimentId, GoalId};
use falcon_core::status::{Direction, GoalStatus};
use falcon_core::time::Millis;
use schemars::JsonSchema;
use serde::Serialize;

/// A goal as JSON views write it: the record's fields (timestamps in milliseconds), then `created_iso`,
/// `updated_iso` and `lease_expires_iso` (RFC 3339, UTC; `null` without a lease). `goal list`, `goal show` and
/// every goal use case give these (`GoalView::from(record)`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct GoalView {
    /// Id.
    pub id: GoalId,
    /// Title.
    pub title: String,
    /// Workload.
    pub workload: Option<String>,
    /// Hardware.
    pub hardware: Option<String>,
    /// Metric.
    pub metric: String,
    /// Direction.
    pub direction: Direction,
    /// Target.
    pub target: Option<f64>,
    /// Baseline experiment.
    pub baseline: Option<ExperimentId>,
    /// Priority.
    pub priority: i64,
    /// Status.
    pub status: GoalStatus,
    /// Who holds the claim.
    pub owner: Option<String>,
    /// When the claim lapses.
    pub lease_expires: Option<Millis>,
    /// Created.
    pub created: Millis,
    /// Last changed.
    pub updated: Millis,
    /// `created` as RFC 3339 (UTC).
    pub created_iso: String,
    /// `updated` as RFC 3339 (UTC).
    pub updated_iso: String,
    /// `lease_expires` as RFC 3339 (UTC); `null` without a lease.
    pub lease_expires_iso: Option<String>,
}

impl From<falcon_exp::GoalRecord> for GoalView {
    fn from(g: falcon_exp::GoalRecord) -> Self {
        GoalView {
            created_iso: g.created.to_rfc3339(),
            updated_iso: g.updated.to_rfc3339(),
            lease_expires_iso: g.lease_expires.map(Millis::to_rfc3339),
            id: g.id,
            title: g.title,
            workload: g.workload,
            hardware: g.hardware,
            metric: g.metric,
            direction: g.direction,
            target: g.target,
            baseline: g.baseline,
            priority: g.priority,
            status: g.status,
            owner: g.owner,
            lease_expires: g.lease_expires,
            created: g.created,
            updated: g.updated,
        }
    }
}
