//! What is kept of an experiment's metrics and analyses, on the wire: `exp show`'s `metrics` and `analysis`, a list
//! row's and a session row's `metrics`, built from the storage rows (which carry no serialization).

use schemars::JsonSchema;
use serde::Serialize;
use std::collections::BTreeMap;

/// Statistics of one numeric metric of one experiment (warm-up excluded by the caller).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct MetricSummary {
    /// Metric name (`step_time_s`).
    pub metric: String,
    /// Samples.
    pub count: i64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// Last value.
    pub last: f64,
    /// Robust within-run spread of the post-warm-up values: IQR / 1.349 (the standard deviation, were they
    /// normal). `None` for summaries written before schema version 4.
    pub spread: Option<f64>,
}

impl From<&falcon_exp::experiments::MetricSummary> for MetricSummary {
    fn from(s: &falcon_exp::experiments::MetricSummary) -> Self {
        MetricSummary {
            metric: s.metric.clone(),
            count: s.count,
            mean: s.mean,
            median: s.median,
            p90: s.p90,
            min: s.min,
            max: s.max,
            last: s.last,
            spread: s.spread,
        }
    }
}

/// Metric summaries by metric name.
pub type MetricSummaries = BTreeMap<String, MetricSummary>;

/// The wire view of EXP's summaries by name.
pub fn metric_summaries(summaries: &falcon_exp::experiments::MetricSummaries) -> MetricSummaries {
    summaries.iter().map(|(name, s)| (name.clone(), MetricSummary::from(s))).collect()
}

/// The summary row of one analysis tool's result for an experiment.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct AnalysisSummary {
    /// Tool (`overview`, `trace`, `accuracy`, …).
    pub tool: String,
    /// Model FLOPs utilization, 0..1.
    pub mfu: Option<f64>,
    /// Mean step time in milliseconds.
    pub step_time_ms: Option<f64>,
    /// Device duty cycle, 0..1.
    pub duty_cycle: Option<f64>,
    /// Peak device memory.
    pub peak_memory_bytes: Option<i64>,
    /// What bounds performance: the serde name of `falcon_core::bound::BoundBy` (`compute`, `memory`, `host`,
    /// `partly_host`); `None` when unknown.
    pub bound_by: Option<String>,
    /// Further small fields of the tool (at most 1 MiB as JSON).
    pub details: serde_json::Value,
}

impl From<&falcon_exp::AnalysisSummary> for AnalysisSummary {
    fn from(a: &falcon_exp::AnalysisSummary) -> Self {
        AnalysisSummary {
            tool: a.tool.clone(),
            mfu: a.mfu,
            step_time_ms: a.step_time_ms,
            duty_cycle: a.duty_cycle,
            peak_memory_bytes: a.peak_memory_bytes,
            bound_by: a.bound_by.clone(),
            details: a.details.clone(),
        }
    }
}
