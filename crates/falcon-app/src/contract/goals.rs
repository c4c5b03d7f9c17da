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
    /// The goal's fields.
    #[serde(flatten)]
    pub goal: GoalRecordView,
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
            goal: g.into(),
        }
    }
}

impl std::ops::Deref for GoalView {
    type Target = GoalRecordView;
    fn deref(&self) -> &GoalRecordView {
        &self.goal
    }
}

/// A goal as stored (in a comparison and a report, as EXP holds it: timestamps in milliseconds).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "GoalRecord")]
pub struct GoalRecordView {
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
}

impl From<falcon_exp::GoalRecord> for GoalRecordView {
    fn from(g: falcon_exp::GoalRecord) -> Self {
        GoalRecordView {
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

/// One row of `goal compare`: an experiment's value of the goal's metric against the baseline.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GoalRow {
    /// Rank, 1 = best in the goal's direction.
    pub rank: usize,
    /// The experiment.
    pub experiment: ExperimentId,
    /// Its name.
    pub name: String,
    /// Its config hash.
    pub config_hash: String,
    /// The experiment's value of the goal metric: the statistic `statistic` names.
    pub value: f64,
    /// What `value` is: `median` (the median of the run's logged metric after warm-up) or `profile` (the
    /// profile analysis' summary value, for `mfu`, `duty_cycle`, `peak_hbm_bytes`, `profile_step_time_ms`).
    pub statistic: &'static str,
    /// Relative change against the baseline's median, when there is a baseline with the metric.
    pub delta_vs_baseline: Option<f64>,
    /// Whether it reaches the goal's target.
    pub meets_target: Option<bool>,
    /// This row is the goal's baseline.
    pub baseline: bool,
    /// A re-run of the baseline's config (same config hash): its difference is run-to-run noise, never a
    /// win; it is not counted as the goal's best.
    pub baseline_rerun: bool,
    /// The run-level verdict of this row's config against the baseline's (every completed run of the goal
    /// with each hash, the baseline included); `null` for the baseline's own config or without a baseline.
    pub verdict: Option<falcon_core::stats::Verdict>,
}

impl From<falcon_exp::goals::GoalRow> for GoalRow {
    fn from(r: falcon_exp::goals::GoalRow) -> Self {
        GoalRow {
            rank: r.rank,
            experiment: r.experiment,
            name: r.name,
            config_hash: r.config_hash,
            value: r.value,
            statistic: r.statistic,
            delta_vs_baseline: r.delta_vs_baseline,
            meets_target: r.meets_target,
            baseline: r.baseline,
            baseline_rerun: r.baseline_rerun,
            verdict: r.verdict,
        }
    }
}

/// A goal's target and progress (the best experiment against the baseline and the target).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GoalProgress {
    /// The goal's metric.
    pub metric: String,
    /// Which way it should move.
    pub direction: Direction,
    /// The baseline's value (median of its metric).
    pub baseline_value: Option<f64>,
    /// The best experiment's value.
    pub best_value: Option<f64>,
    /// The goal's target.
    pub target: Option<f64>,
    /// `(best − baseline) / baseline`.
    pub delta_vs_baseline: Option<f64>,
    /// `(best − baseline) / (target − baseline)`: the fraction of the baseline→target gap closed (1 = target
    /// reached, above 1 = beyond it, below 0 = worse than the baseline).
    pub gap_closed: Option<f64>,
    /// Whether the best reaches the target.
    pub meets_target: Option<bool>,
}

impl From<falcon_exp::goals::GoalProgress> for GoalProgress {
    fn from(p: falcon_exp::goals::GoalProgress) -> Self {
        GoalProgress {
            metric: p.metric,
            direction: p.direction,
            baseline_value: p.baseline_value,
            best_value: p.best_value,
            target: p.target,
            delta_vs_baseline: p.delta_vs_baseline,
            gap_closed: p.gap_closed,
            meets_target: p.meets_target,
        }
    }
}

/// The result of `goal compare`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GoalComparison {
    /// The goal.
    pub goal: GoalRecordView,
    /// Its baseline's value, when known.
    pub baseline_value: Option<f64>,
    /// Completed experiments with the metric, best first.
    pub rows: Vec<GoalRow>,
    /// The goal's best experiment: the top row that is not a re-run of the baseline's config (the baseline
    /// itself when nothing beats it).
    pub best: Option<GoalRow>,
    /// The target and how far the best experiment got towards it.
    pub progress: GoalProgress,
}

impl From<falcon_exp::goals::GoalComparison> for GoalComparison {
    fn from(c: falcon_exp::goals::GoalComparison) -> Self {
        GoalComparison {
            goal: c.goal.into(),
            baseline_value: c.baseline_value,
            rows: c.rows.into_iter().map(GoalRow::from).collect(),
            best: c.best.map(GoalRow::from),
            progress: c.progress.into(),
        }
    }
}
