//! A metric's history on the wire (`exp history`): built from EXP's `History`, which carries no serialization.

use falcon_core::ids::ExperimentId;
use falcon_core::stats::shift::{Detectable, Scale};
use falcon_core::time::Millis;
use schemars::JsonSchema;
use serde::Serialize;

/// A metric across experiments, and where it shifted.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct History {
    /// The metric.
    pub metric: String,
    /// One value per completed experiment with the metric, oldest first.
    pub points: Vec<HistoryPoint>,
    /// Shifts, oldest first.
    pub changes: Vec<HistoryChange>,
    /// Run-to-run noise in the stable segments (on the log scale ≈ the CV); `null` with too few runs.
    pub noise: Option<f64>,
    /// Scale the test ran on (`log` when every value is positive).
    pub scale: Scale,
    /// For 1, 2, … further runs: the smallest shift they would reveal (80 % power).
    pub detectable: Vec<Detectable>,
    /// What the history can and cannot see yet, in words (`detectable` read out).
    pub power_note: String,
}

/// One experiment's value in a history.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HistoryPoint {
    /// The experiment.
    pub experiment: ExperimentId,
    /// Its name.
    pub name: String,
    /// Its config hash.
    pub config_hash: String,
    /// When it was recorded (ms since the epoch).
    pub created: Millis,
    /// The same, RFC 3339 UTC.
    pub created_iso: String,
    /// Median of the metric after warm-up (the run's value).
    pub value: f64,
    /// Within-run spread (IQR/1.349) of the metric, when its summary has one.
    pub spread: Option<f64>,
    /// Steps behind `value`.
    pub n_steps: i64,
}

/// A shift in a history.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HistoryChange {
    /// The first experiment of the new level.
    pub experiment: ExperimentId,
    /// Its index in `points`.
    pub index: usize,
    /// Runs in the segment before it.
    pub runs_before: usize,
    /// Runs in the segment from it on.
    pub runs_after: usize,
    /// Level before (geometric mean of the run values on the log scale).
    pub before: f64,
    /// Level after.
    pub after: f64,
    /// Relative shift `after / before − 1`.
    pub delta_rel: f64,
    /// 95 % interval of `delta_rel`: low end.
    pub ci_low_rel: f64,
    /// High end.
    pub ci_high_rel: f64,
    /// Significance, Bonferroni-corrected over the splits tested.
    pub p_value: f64,
    /// Whether the shift is for the worse, for metrics with a known direction.
    pub regression: Option<bool>,
}

impl From<falcon_exp::history::History> for History {
    fn from(h: falcon_exp::history::History) -> Self {
        History {
            metric: h.metric,
            points: h
                .points
                .into_iter()
                .map(|p| HistoryPoint {
                    experiment: p.experiment,
                    name: p.name,
                    config_hash: p.config_hash,
                    created: p.created,
                    created_iso: p.created_iso.to_rfc3339(),
                    value: p.value,
                    spread: p.spread,
                    n_steps: p.n_steps,
                })
                .collect(),
            changes: h
                .changes
                .into_iter()
                .map(|c| HistoryChange {
                    experiment: c.experiment,
                    index: c.index,
                    runs_before: c.runs_before,
                    runs_after: c.runs_after,
                    before: c.before,
                    after: c.after,
                    delta_rel: c.delta_rel,
                    ci_low_rel: c.ci_low_rel,
                    ci_high_rel: c.ci_high_rel,
                    p_value: c.p_value,
                    regression: c.regression,
                })
                .collect(),
            noise: h.noise,
            scale: h.scale,
            detectable: h.detectable,
            power_note: h.power_note,
        }
    }
}
