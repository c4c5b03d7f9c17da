//! Histories: a metric across a series of runs (same name, config hash or labels), one value per completed
//! experiment — the median of its metric after warm-up, from the stored summary — and the shifts in it.
//!
//! Shifts are found by [`falcon_core::stats::shifts`]: per-split pooled t-tests on the log run values with
//! the run-to-run noise estimated from the stable segments, Bonferroni-corrected over the splits, so its power
//! at small n is known. A +30 % step after four steady runs is found once three runs follow it (at a
//! run-to-run CV of 6 %); the report says, as `detectable` and `power_note`, which shift the next runs could reveal
//! when there are too few to see one yet.

use crate::error::{ExpError, Result};
use crate::Exp;
use falcon_core::ids::ExperimentId;
use falcon_core::stats::shift::{Detectable, Scale};
use falcon_core::stats::{direction_for, shifts, Direction, ShiftOptions};
use falcon_core::status::ExperimentStatus;
use falcon_infra::meta::ExperimentFilter;
use std::collections::BTreeSet;

/// How many completed experiments of a series [`Exp::history`] reads (the newest ones).
pub const HISTORY_READS: u64 = 100_000;

/// A metric across experiments, and where it shifted.
#[derive(Debug, Clone)]
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
#[derive(Debug, Clone)]
pub struct HistoryPoint {
    /// The experiment.
    pub experiment: ExperimentId,
    /// Its name.
    pub name: String,
    /// Its config hash.
    pub config_hash: String,
    /// When it was recorded (ms since the epoch).
    pub created: falcon_core::time::Millis,
    /// The same (RFC 3339 UTC on the wire).
    pub created_iso: falcon_core::time::Millis,
    /// Median of the metric after warm-up (the run's value).
    pub value: f64,
    /// Within-run spread (IQR/1.349) of the metric, when its summary has one.
    pub spread: Option<f64>,
    /// Steps behind `value`.
    pub n_steps: i64,
}

/// A shift in a history.
#[derive(Debug, Clone)]
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

impl Exp {
    /// `metric` across the completed experiments matching `filter` (oldest first), with its shifts. A filter
    /// by name, config hash or label that matches no experiment at all, or a metric none of the completed
    /// ones logged, is "not found" (the message lists the metrics they have).
    pub async fn history(&self, filter: &ExperimentFilter, metric: &str) -> Result<History> {
        if self.meta.count_experiments(&ExperimentFilter { limit: 0, before: None, ..filter.clone() }).await? == 0 {
            return Err(ExpError::NotFound(match (&filter.name, &filter.config_hash) {
                (Some(name), _) => format!("no experiment is named `{name}` (see `falcon exp list`)"),
                (None, Some(hash)) => format!("no experiment has a config hash starting {hash}"),
                _ => "no experiment has these labels".to_string(),
            }));
        }
        let mut filter = ExperimentFilter { status: Some(ExperimentStatus::Completed), limit: 500, ..filter.clone() };
        let mut experiments = Vec::new();
        loop {
            let page = self.meta.list_experiments(&filter).await?;
            let Some(last) = page.last() else { break };
            filter.before = Some(last.id);
            experiments.extend(page);
            if experiments.len() as u64 >= HISTORY_READS {
                break;
            }
        }
        experiments.reverse();
        let mut points = Vec::new();
        let mut logged = BTreeSet::new();
        for e in &experiments {
            let summaries = self.meta.metric_summaries(e.id).await?;
            if let Some(m) = summaries.iter().find(|m| m.metric == metric) {
                points.push(HistoryPoint {
                    experiment: e.id,
                    name: e.name.clone(),
                    config_hash: e.config_hash.clone(),
                    created: e.created,
                    created_iso: e.created,
                    value: m.median,
                    spread: m.spread,
                    n_steps: m.count,
                });
            } else if points.is_empty() {
                logged.extend(summaries.into_iter().map(|m| m.metric));
            }
        }
        if points.is_empty() && !experiments.is_empty() {
            let have: Vec<String> = logged.into_iter().take(20).collect();
            return Err(ExpError::NotFound(format!(
                "none of the series' {} completed experiments logged `{metric}`{}",
                experiments.len(),
                if have.is_empty() { String::new() } else { format!(" (they log: {})", have.join(", ")) }
            )));
        }
        let values: Vec<f64> = points.iter().map(|p| p.value).collect();
        let report = shifts(&values, &ShiftOptions::default());
        let direction = direction_for(metric);
        let changes = report
            .shifts
            .iter()
            .filter_map(|s| {
                let point = points.get(s.index)?;
                Some(HistoryChange {
                    experiment: point.experiment,
                    index: s.index,
                    runs_before: s.runs_before,
                    runs_after: s.runs_after,
                    before: s.level_before,
                    after: s.level_after,
                    delta_rel: s.shift_rel,
                    ci_low_rel: s.ci_low,
                    ci_high_rel: s.ci_high,
                    p_value: s.p_value,
                    regression: direction.map(|d| match d {
                        Direction::HigherIsBetter => s.level_after < s.level_before,
                        Direction::LowerIsBetter => s.level_after > s.level_before,
                    }),
                })
            })
            .collect();
        Ok(History {
            metric: metric.to_string(),
            points,
            changes,
            noise: report.noise,
            scale: report.scale,
            detectable: report.detectable,
            power_note: report.note,
        })
    }
}
