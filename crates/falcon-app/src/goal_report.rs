//! The goal report (`falcon goal report G`, and the same object over the API and MCP).
//!
//! The business answers are EXP's: the ranking and progress (`gap_closed`, target) come from
//! `Exp::compare_goal`, the config diff and the metric verdicts (the goal's metric and the standard ones) from
//! `Exp::diff` and `Exp::goal_verdicts`. This layer only adds the profile comparison from analysis and the
//! notes on what is missing. The report is built once as a [`GoalReport`] and rendered as JSON or, by the
//! goal renderer (`render::goal`), as text tables, Markdown or a self-contained HTML page.
//!
//! # JSON shape (`--json` or `--format json`; stable)
//!
//! ```text
//! {
//!   "goal":     { …the goal record, as `goal show --json`… },
//!   "progress": {
//!     "metric": "step_time_s", "direction": "minimize",
//!     "baseline_value": 0.0359 | null,   // median of the baseline experiment's metric
//!     "best_value": 0.0129 | null,       // median of the best experiment's metric
//!     "target": 0.01 | null,
//!     "delta_vs_baseline": -0.64 | null, // (best − baseline) / baseline
//!     "gap_closed": 0.89 | null,         // (best − baseline) / (target − baseline): 1 = target reached,
//!                                        // above 1 = beyond it, below 0 = worse than the baseline
//!     "meets_target": false | null
//!   },
//!   "best":     { "rank", "experiment", "name", "value", "delta_vs_baseline", "meets_target" } | null,
//!   "baseline": "e-1" | null,
//!   "ranking":  [ …every completed experiment of the goal with the metric, best first (same rows as `best`)… ],
//!   "config_diff": [ { "path", "kind", "a", "b", "group" } … ],   // EXP's diff, baseline (a) → best (b)
//!   "verdicts": [ { "metric", "direction", "verdict", "a", "b", "delta_rel", "ci_low_rel", "ci_high_rel",
//!                   "p_value" } … ],   // EXP verdicts baseline (a) → best (b): the goal's metric first, then
//!                                      // each of step_time_s, tokens_per_s, tflops_per_device, mfu, loss,
//!                                      // peak_hbm_bytes that both experiments logged
//!   "profile":  { …`profile compare baseline best --json`… } | null,
//!   "goodput":  [ { "experiment", "goodput": { …`exp show`'s goodput… } } … ],   // each ranked run, best first
//!   "notes":    [ "why something above is empty or null" … ]
//! }
//! ```
//!
//! Missing pieces are never failures: a goal without a baseline, without a completed experiment with the
//! metric, whose best experiment is the baseline, or whose experiments have no profile still gets a report,
//! with `notes` saying what is missing. Only an unknown goal fails (exit 3).

use crate::contract::{GoalProgress, GoalRecordView, GoalRow};
use falcon_analysis::compare::{CompareOptions, ProfileComparison};
use falcon_analysis::error::AnalysisError;
use falcon_analysis::service::Analysis;
use falcon_core::ids::{ExperimentId, GoalId};
use falcon_core::stats::Verdict;
use falcon_exp::diff::Change;
use falcon_exp::Exp;
use serde::Serialize;

/// Everything `goal report` says about a goal (see the module documentation for the JSON shape).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct GoalReport {
    /// The goal.
    pub goal: GoalRecordView,
    /// Target and how far the best experiment got towards it.
    pub progress: GoalProgress,
    /// The best completed experiment of the goal on its metric.
    pub best: Option<GoalRow>,
    /// The goal's baseline experiment.
    pub baseline: Option<ExperimentId>,
    /// Every completed experiment of the goal with the metric, best first.
    pub ranking: Vec<GoalRow>,
    /// The spec changes from the baseline to the best experiment.
    #[serde(serialize_with = "crate::contract::serialize_changes")]
    #[schemars(with = "Vec<crate::contract::Change>")]
    pub config_diff: Vec<Change>,
    /// Metric verdicts, baseline (A) against best (B): the goal's metric first, then the standard ones.
    pub verdicts: Vec<Verdict>,
    /// The profile comparison, baseline (A) against best (B).
    pub profile: Option<ProfileComparison>,
    /// Why something is missing.
    pub notes: Vec<String>,
    /// Each ranked run's goodput, in ranking order (the best run's first): of the time it held its resources, the
    /// productive share and the badput by cause.
    pub goodput: Vec<RunGoodput>,
}

/// One run's goodput in a report.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RunGoodput {
    pub experiment: ExperimentId,
    pub goodput: falcon_analysis::goodput::Goodput,
}

/// Gathers the report: EXP for the goal, its ranking, diff and verdicts; analysis for the profiles.
pub async fn build(exp: &Exp, id: GoalId, top: usize) -> crate::Result<GoalReport> {
    let compared = exp.compare_goal(id).await?;
    let record = compared.goal.clone();
    let cmp = crate::contract::GoalComparison::from(compared);
    let goal = cmp.goal;
    let metric = goal.metric.clone();
    let best = cmp.best.clone();
    let baseline = goal.baseline;
    let mut notes = Vec::new();
    if baseline.is_none() {
        notes.push("the goal has no baseline experiment (`goal create --baseline`): no config diff, verdicts or profile comparison".into());
    }
    if best.is_none() {
        notes.push(format!("no completed experiment of this goal has a `{metric}` value yet"));
    }
    if let (Some(b), None) = (baseline, cmp.baseline_value) {
        notes.push(format!("the baseline {b} has no `{metric}` value"));
    }
    let progress = cmp.progress;

    let (mut config_diff, mut verdicts, mut profile) = (Vec::new(), Vec::new(), None);
    match (baseline, &best) {
        (Some(b), Some(row)) if b == row.experiment => {
            notes.push(format!("the best experiment is the baseline {b}: nothing to diff or compare"));
        }
        (Some(b), Some(row)) => {
            match exp.diff(b, row.experiment).await {
                Ok(changes) => config_diff = changes,
                Err(e) => notes.push(format!("config diff {b} → {}: {e}", row.experiment)),
            }
            let v = exp.goal_verdicts(&record, b, row.experiment).await;
            verdicts = v.verdicts;
            notes.extend(v.notes);
            profile = profile_comparison(exp, b, row.experiment, top, &mut notes).await;
        }
        _ => {}
    }
    let mut goodput = Vec::with_capacity(cmp.rows.len());
    for row in &cmp.rows {
        let read = exp.goodput_record(row.experiment).await.map_err(crate::AppError::from);
        goodput.push(RunGoodput { experiment: row.experiment, goodput: crate::experiment_goodput::of_record(read) });
    }
    Ok(GoalReport { goal, progress, best, baseline, ranking: cmp.rows, config_diff, verdicts, profile, notes, goodput })
}

/// The profile comparison baseline → best; a missing profile or a failed comparison is a note.
async fn profile_comparison(
    exp: &Exp,
    a: ExperimentId,
    b: ExperimentId,
    top: usize,
    notes: &mut Vec<String>,
) -> Option<ProfileComparison> {
    let analysis = match Analysis::connect(exp.config()).await {
        Ok(analysis) => analysis,
        Err(e) => {
            notes.push(format!("profile comparison: {e}"));
            return None;
        }
    };
    let options = CompareOptions { top, ..Default::default() };
    let result = analysis.compare(&a.to_string(), &b.to_string(), None, &options).await;
    analysis.close().await;
    match result {
        Ok(c) => Some(c),
        Err(AnalysisError::NotFound(why)) => {
            notes.push(format!("no profile comparison: {why}"));
            None
        }
        Err(e) => {
            notes.push(format!("profile comparison failed: {e}"));
            None
        }
    }
}
