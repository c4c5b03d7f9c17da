//! Run-level comparisons: the run is the unit of evidence (docs/DESIGN.md §2).
//!
//! An experiment is one run of its config. A comparison names a set of runs per side ([`RunSet`]: a list of
//! experiments, a session's completed experiments, or every completed run of a config hash), summarises each
//! run by the median of its metric after warm-up, its within-run spread and its step count (from the stored
//! summary row, so nothing is re-read unless another warm-up is asked for), and hands the runs to
//! [`falcon_core::stats::compare_runs`].
//!
//! Between-run noise, when a side has a single run, comes from the history of its config hash: the
//! `run_noise` summary row (count, mean and M2 of the log run medians of every completed run with that hash,
//! refreshed whenever one of them is indexed). The runs being compared are taken out of it first (Welford's
//! update in reverse), so no run counts twice; the rows of the hashes on both sides are pooled by their
//! degrees of freedom. With no history the documented default floor applies
//! ([`falcon_core::stats::DEFAULT_BETWEEN_RUN_CV`]). The verdict says which it used (`between_run_cv.source`).

use crate::error::{ExpError, Result};
use crate::Exp;
use falcon_core::ids::{ExperimentId, SessionId};
use falcon_core::stats::{compare_runs, direction_for, CompareOptions, Direction, NoiseEstimate, RunSample, Verdict};
use falcon_core::status::ExperimentStatus;
use falcon_infra::meta::{ExperimentFilter, ExperimentRecord};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// The runs one side of a comparison is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunSet {
    /// These experiments (`e-1,e-2,e-3`; a single `e-1`), whatever their status.
    Experiments(Vec<ExperimentId>),
    /// The completed experiments of a session (`s-3`).
    Session(SessionId),
    /// Every completed experiment whose config hash starts with this hex prefix (`config:4f1c2a9b3d0e`).
    Config(String),
}

impl FromStr for RunSet {
    type Err = ExpError;

    /// `e-1`, `e-1,e-2,e-3` (bare numbers are experiment ids too), `s-3`, or `config:<hash or prefix>`.
    fn from_str(text: &str) -> Result<RunSet> {
        let text = text.trim();
        if let Some(prefix) = text.strip_prefix("config:") {
            let prefix = prefix.trim().to_ascii_lowercase();
            if prefix.len() < 6 || prefix.len() > 64 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(ExpError::Invalid(format!(
                    "`{text}`: a config hash is 6 to 64 hex digits (`exp list` prints the first 12)"
                )));
            }
            return Ok(RunSet::Config(prefix));
        }
        if text.starts_with("s-") {
            return text
                .parse()
                .map(RunSet::Session)
                .map_err(|e: falcon_core::ids::IdParseError| ExpError::Invalid(e.to_string()));
        }
        let mut ids = Vec::new();
        for part in text.split(',') {
            let id: ExperimentId = part.trim().parse().map_err(|e: falcon_core::ids::IdParseError| {
                ExpError::Invalid(format!("{e} (a side is `e-1`, `e-1,e-2,e-3`, `s-3` or `config:<hash>`)"))
            })?;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        Ok(RunSet::Experiments(ids))
    }
}

impl fmt::Display for RunSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunSet::Experiments(ids) => {
                let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
                f.write_str(&ids.join(","))
            }
            RunSet::Session(id) => write!(f, "{id}"),
            RunSet::Config(prefix) => write!(f, "config:{prefix}"),
        }
    }
}

/// One run of a side, as the verdict saw it.
#[derive(Debug, Clone)]
pub struct RunRow {
    /// The experiment.
    pub experiment: ExperimentId,
    /// Its name.
    pub name: String,
    /// Its config hash.
    pub config_hash: String,
    /// Its status.
    pub status: ExperimentStatus,
    /// Median of the metric after warm-up.
    pub median: f64,
    /// Within-run spread (IQR/1.349); `null` when its summary predates spreads and was not re-read.
    pub spread: Option<f64>,
    /// Steps behind the median (0 when only a summary value is known).
    pub n_steps: usize,
}

/// The history of one config hash that went into the between-run noise (the compared runs taken out).
#[derive(Debug, Clone)]
pub struct ConfigNoise {
    /// Config hash.
    pub config_hash: String,
    /// Completed runs of it with the metric, besides the compared ones.
    pub runs: usize,
    /// Their between-run CV (standard deviation of log medians); `null` below 2 runs.
    pub cv: Option<f64>,
}

/// The runs of both sides.
#[derive(Debug, Clone)]
pub struct Sides {
    /// Baseline runs.
    pub a: Vec<RunRow>,
    /// Candidate runs.
    pub b: Vec<RunRow>,
}

/// `exp compare`: the verdict object (its fields at the top level), the runs behind it and the histories
/// its noise estimate used.
#[derive(Debug, Clone)]
pub struct RunComparison {
    /// The verdict (docs/DESIGN.md §2).
    pub verdict: Verdict,
    /// The runs of each side.
    pub sides: Sides,
    /// Per config hash: the history behind `between_run_cv` when its source is `history`.
    pub noise_history: Vec<ConfigNoise>,
}

/// How a run's sample is obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// From the stored summary; an old summary without a spread is completed from the metrics files.
    SummaryOrReread,
    /// From the stored summary only (lists and goal comparisons never re-read metrics): no spread is 0.
    SummaryOnly,
    /// From the metrics files with this warm-up.
    Reread(usize),
}

/// A run's sample and the stored median the noise history holds for it.
pub(crate) struct Sampled {
    pub row: RunRow,
    pub sample: RunSample,
    /// The stored summary's median (what `run_noise` was computed from), when there is one.
    pub stored_median: Option<f64>,
}

impl Exp {
    /// The experiments a [`RunSet`] names: listed ones must exist (not found otherwise); a session or a config
    /// hash must have completed experiments; a hash prefix must name one hash.
    pub async fn resolve_runs(&self, set: &RunSet) -> Result<Vec<ExperimentRecord>> {
        let completed = ExperimentFilter { status: Some(ExperimentStatus::Completed), ..Default::default() };
        let mut runs = match set {
            RunSet::Experiments(ids) => {
                let mut out = Vec::with_capacity(ids.len());
                for id in ids {
                    out.push(self.meta.get_experiment(*id).await?);
                }
                return Ok(out);
            }
            RunSet::Session(id) => {
                self.meta.get_session(*id).await?;
                self.all_experiments(ExperimentFilter { session: Some(*id), ..completed }).await?
            }
            RunSet::Config(prefix) => {
                let hashes = self.meta.config_hashes_with_prefix(prefix, 3).await?;
                let hash = match hashes.as_slice() {
                    [] => return Err(ExpError::NotFound(format!("no experiment has a config hash starting {prefix}"))),
                    [one] => one.clone(),
                    [a, b, ..] => {
                        return Err(ExpError::Invalid(format!(
                            "config:{prefix} is ambiguous: it starts {} and {}{}; give more of the hash",
                            &a[..16.min(a.len())],
                            &b[..16.min(b.len())],
                            if hashes.len() > 2 { " and more" } else { "" }
                        )))
                    }
                };
                self.all_experiments(ExperimentFilter { config_hash: Some(hash), ..completed }).await?
            }
        };
        if runs.is_empty() {
            return Err(ExpError::NotFound(format!("{set} has no completed experiments")));
        }
        runs.reverse(); // oldest first
        Ok(runs)
    }

    /// One run's sample of `metric`.
    pub(crate) async fn sample_run(&self, e: &ExperimentRecord, metric: &str, source: Source) -> Result<Sampled> {
        let missing = || ExpError::NotFound(format!("experiment {} has no `{metric}` samples", e.id));
        let stored = self.meta.metric_summaries(e.id).await?.into_iter().find(|m| m.metric == metric);
        let stored_median = stored.as_ref().map(|m| m.median);
        let from_summary = match (&stored, source) {
            (Some(m), Source::SummaryOnly) => Some((m.median, m.spread, m.count)),
            (Some(m), Source::SummaryOrReread) if m.spread.is_some() => Some((m.median, m.spread, m.count)),
            _ => None,
        };
        let (median, spread, n_steps) = match from_summary {
            Some((median, spread, count)) => (median, spread, usize::try_from(count).unwrap_or(0)),
            None => {
                if source == Source::SummaryOnly {
                    return Err(missing());
                }
                let warmup = match source {
                    Source::Reread(w) => Some(w),
                    _ => None,
                };
                let values = self.metric_series(e.id).await?.values(metric, warmup).ok_or_else(missing)?;
                let s = RunSample::from_steps(&values, Some(0)).ok_or_else(missing)?;
                (s.median, Some(s.spread), s.n_steps)
            }
        };
        let sample = RunSample { median, spread: spread.unwrap_or(0.0), n_steps };
        let row = RunRow {
            experiment: e.id,
            name: e.name.clone(),
            config_hash: e.config_hash.clone(),
            status: e.status,
            median,
            spread,
            n_steps,
        };
        Ok(Sampled { row, sample, stored_median })
    }

    /// The between-run noise of the compared runs' config hashes from their histories, the compared runs
    /// taken out, pooled by degrees of freedom; `None` when no hash has 2 other runs. Each compared run is
    /// `(config hash, completed, stored median)`: only completed runs with a stored median are in a history.
    pub(crate) async fn history_noise<'a>(
        &self,
        metric: &str,
        compared: impl IntoIterator<Item = (&'a str, bool, Option<f64>)>,
    ) -> Result<(Option<NoiseEstimate>, Vec<ConfigNoise>)> {
        let mut by_hash: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for (hash, completed, stored_median) in compared {
            let own = by_hash.entry(hash).or_default();
            if let Some(m) = stored_median.filter(|m| completed && m.is_finite() && *m > 0.0) {
                own.push(m.ln());
            }
        }
        let (mut dof, mut ss) = (0usize, 0.0f64);
        let mut rows = Vec::new();
        for (hash, own) in by_hash {
            let Some(row) = self.meta.run_noise(hash, metric).await? else {
                rows.push(ConfigNoise { config_hash: hash.to_string(), runs: 0, cv: None });
                continue;
            };
            let (mut n, mut mean, mut m2) = (usize::try_from(row.runs).unwrap_or(0), row.mean_log, row.m2_log);
            for y in own {
                if n <= 1 {
                    (n, m2) = (0, 0.0);
                    break;
                }
                let new_mean = (n as f64 * mean - y) / (n - 1) as f64;
                m2 = (m2 - (y - mean) * (y - new_mean)).max(0.0);
                (n, mean) = (n - 1, new_mean);
            }
            let cv = (n >= 2).then(|| (m2 / (n - 1) as f64).sqrt()).filter(|c| c.is_finite());
            if cv.is_some() {
                dof += n - 1;
                ss += m2;
            }
            rows.push(ConfigNoise { config_hash: hash.to_string(), runs: n, cv });
        }
        let noise = (dof > 0).then(|| NoiseEstimate { cv: (ss / dof as f64).sqrt(), runs: dof + 1 });
        Ok((noise, rows))
    }

    /// Compares the runs of `b` (candidate) with the runs of `a` (baseline) on `metric`, the run being the
    /// unit of evidence (see the module docs). `direction` overrides the metric's standard direction;
    /// `warmup` re-reads the metrics files with that many steps dropped.
    pub async fn compare_runs(
        &self,
        a: &RunSet,
        b: &RunSet,
        metric: &str,
        direction: Option<Direction>,
        warmup: Option<usize>,
    ) -> Result<RunComparison> {
        let direction = direction.or_else(|| direction_for(metric)).ok_or_else(|| {
            ExpError::Invalid(format!("`{metric}` has no standard direction; say whether higher or lower is better"))
        })?;
        // Both sides must exist before any sample is looked at: an unknown id is "not found" by name.
        let (ra, rb) = (self.resolve_runs(a).await?, self.resolve_runs(b).await?);
        let source = warmup.map_or(Source::SummaryOrReread, Source::Reread);
        let mut sa = Vec::with_capacity(ra.len());
        for e in &ra {
            sa.push(self.sample_run(e, metric, source).await?);
        }
        let mut sb = Vec::with_capacity(rb.len());
        for e in &rb {
            sb.push(self.sample_run(e, metric, source).await?);
        }
        let mut compared: Vec<&Sampled> = Vec::new();
        for s in sa.iter().chain(&sb) {
            if !compared.iter().any(|c| c.row.experiment == s.row.experiment) {
                compared.push(s);
            }
        }
        let compared = compared
            .iter()
            .map(|s| (s.row.config_hash.as_str(), s.row.status == ExperimentStatus::Completed, s.stored_median));
        let (noise, noise_history) = self.history_noise(metric, compared).await?;
        let runs = |side: &[Sampled]| side.iter().map(|s| s.sample).collect::<Vec<_>>();
        let verdict = compare_runs(metric, direction, &runs(&sa), &runs(&sb), noise, &CompareOptions::default());
        let rows = |side: Vec<Sampled>| side.into_iter().map(|s| s.row).collect();
        Ok(RunComparison { verdict, sides: Sides { a: rows(sa), b: rows(sb) }, noise_history })
    }

    /// The history-noise summary rows of a config hash, recomputed from the stored metric summaries of its
    /// completed runs (called whenever one of them is indexed).
    pub(crate) async fn refresh_noise(&self, config_hash: &str) -> Result<()> {
        self.meta.refresh_run_noise(config_hash).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_sets_parse() {
        let p = |s: &str| s.parse::<RunSet>();
        assert_eq!(p("e-1").unwrap(), RunSet::Experiments(vec![ExperimentId(1)]));
        assert_eq!(
            p("e-1, e-2,3,e-1").unwrap(),
            RunSet::Experiments(vec![ExperimentId(1), ExperimentId(2), ExperimentId(3)])
        );
        assert_eq!(p("s-3").unwrap(), RunSet::Session(SessionId(3)));
        assert_eq!(p("config:4F1C2A9B3D0E").unwrap(), RunSet::Config("4f1c2a9b3d0e".into()));
        for bad in ["config:xyz123", "config:abc", "e-1,", "g-2", "s-x", ""] {
            assert!(matches!(p(bad), Err(ExpError::Invalid(_))), "{bad}");
        }
        assert_eq!(p("e-1,e-2").unwrap().to_string(), "e-1,e-2");
        assert_eq!(p("config:abcdef").unwrap().to_string(), "config:abcdef");
    }
}
