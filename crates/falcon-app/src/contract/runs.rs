//! A run-level comparison on the wire (`exp compare`): built from EXP's `RunComparison`, which carries no
//! serialization.

use falcon_core::ids::ExperimentId;
use falcon_core::stats::Verdict;
use falcon_core::status::ExperimentStatus;
use schemars::JsonSchema;
use serde::Serialize;

/// One run of a side, as the verdict saw it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
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
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ConfigNoise {
    /// Config hash.
    pub config_hash: String,
    /// Completed runs of it with the metric, besides the compared ones.
    pub runs: usize,
    /// Their between-run CV (standard deviation of log medians); `null` below 2 runs.
    pub cv: Option<f64>,
}

/// The runs of both sides.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Sides {
    /// Baseline runs.
    pub a: Vec<RunRow>,
    /// Candidate runs.
    pub b: Vec<RunRow>,
}

/// `exp compare`: the verdict object (its fields at the top level), the runs behind it and the histories
/// its noise estimate used.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunComparison {
    /// The verdict (docs/DESIGN.md §2).
    #[serde(flatten)]
    pub verdict: Verdict,
    /// The runs of each side.
    pub sides: Sides,
    /// Per config hash: the history behind `between_run_cv` when its source is `history`.
    pub noise_history: Vec<ConfigNoise>,
}

impl From<falcon_exp::runs::RunRow> for RunRow {
    fn from(r: falcon_exp::runs::RunRow) -> Self {
        RunRow {
            experiment: r.experiment,
            name: r.name,
            config_hash: r.config_hash,
            status: r.status,
            median: r.median,
            spread: r.spread,
            n_steps: r.n_steps,
        }
    }
}

impl From<falcon_exp::runs::RunComparison> for RunComparison {
    fn from(c: falcon_exp::runs::RunComparison) -> Self {
        let rows = |v: Vec<falcon_exp::runs::RunRow>| v.into_iter().map(RunRow::from).collect();
        RunComparison {
            verdict: c.verdict,
            sides: Sides { a: rows(c.sides.a), b: rows(c.sides.b) },
            noise_history: c
                .noise_history
                .into_iter()
                .map(|n| ConfigNoise { config_hash: n.config_hash, runs: n.runs, cv: n.cv })
                .collect(),
        }
    }
}
