//! Cross-framework accuracy alignment: metric series read from MaxText, Megatron-LM, TensorBoard event files
//! and generic JSONL/CSV, aligned by step and compared with tolerances.
//!
//! Readers return a [`RunSeries`] (one [`Series`] per metric name, as the source spells it); [`align`]
//! maps names across frameworks, aligns steps and gives per-metric and overall verdicts.

use serde::Serialize;

pub mod align;
pub mod generic;
pub mod maxtext;
pub mod megatron;
mod names;
pub mod read;
pub mod tfevents;

/// The format a series was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceFormat {
    /// MaxText `metrics_file` JSONL (one object per step, `step` plus `learning/*`, `perf/*` keys).
    MaxtextJsonl,
    /// MaxText stdout (`completed step: N, seconds: …, loss: …`).
    MaxtextConsole,
    /// Megatron-LM stdout (`iteration N/ M | … | lm loss: … |`).
    MegatronLog,
    /// Megatron-LM functional-test golden values JSON (`{metric: {start_step, end_step, step_interval, values}}`).
    MegatronGolden,
    /// TensorBoard event file (`events.out.tfevents.*`).
    Tfevents,
    /// Generic JSONL: one object per line with a step column.
    Jsonl,
    /// Generic CSV with a header row and a step column.
    Csv,
}

/// One metric over steps.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Series {
    /// The metric's name as the source spells it (`learning/lm_loss`, `lm loss`, …).
    pub name: String,
    /// `(step, value)`, sorted by step, one value per step (a later record of the same step wins).
    pub points: Vec<(i64, f64)>,
    /// Each value is the mean of this many iterations ending at its step (Megatron's stdout `lm loss` is
    /// averaged over the `log_interval` iterations since the previous line); `None` for per-step values.
    pub averaged_over: Option<u32>,
}

/// Everything read from one input (a file, or a directory of event files).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RunSeries {
    /// The input as given.
    pub path: String,
    pub format: SourceFormat,
    /// One per metric, sorted by name.
    pub series: Vec<Series>,
    /// What the reader skipped or assumed, in words.
    pub notes: Vec<String>,
}

impl RunSeries {
    /// The series of metric `name`, if present.
    pub fn get(&self, name: &str) -> Option<&Series> {
        self.series.iter().find(|s| s.name == name)
    }
}
