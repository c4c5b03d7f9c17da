//! Per-step metrics (`metrics*.jsonl`, one JSON object per step) and their summaries.
//!
//! The series themselves stay in the artifact store; the metadata store keeps one summary row per numeric
//! field (count, mean, median, p90, min, max, last) with the warm-up steps excluded (DESIGN.md §2).

use falcon_core::stats::{drop_warmup, summarize};
use falcon_infra::meta::MetricSummary;
use std::collections::BTreeMap;

/// A malformed metrics file, naming the file and line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct MetricsError {
    /// File (artifact key or path).
    pub file: String,
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Numeric fields of a metrics file by name, each as `(step, value)` in step order (a step written twice — a
/// restarted attempt — keeps its last value).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricSeries {
    /// Field name → samples in step order.
    pub fields: BTreeMap<String, Vec<(i64, f64)>>,
}

impl MetricSeries {
    /// Parses JSONL text. Blank lines are skipped; each other line must be a JSON object with an integer
    /// `step`; numeric fields are kept, other fields ignored.
    pub fn parse(text: &str, file: &str) -> Result<MetricSeries, MetricsError> {
        let mut by_field: BTreeMap<String, BTreeMap<i64, f64>> = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            let err = |message: String| MetricsError { file: file.to_string(), line: i + 1, message };
            if line.trim().is_empty() {
                continue;
            }
            let value: serde_json::Value = serde_json::from_str(line).map_err(|e| err(format!("not JSON: {e}")))?;
            let object = value.as_object().ok_or_else(|| err("expected one JSON object per line".into()))?;
            let step = object
                .get("step")
                .and_then(serde_json::Value::as_i64)
                .ok_or_else(|| err("missing an integer `step`".into()))?;
            for (name, v) in object {
                if name == "step" {
                    continue;
                }
                if let Some(x) = v.as_f64() {
                    by_field.entry(name.clone()).or_default().insert(step, x);
                }
            }
        }
        Ok(MetricSeries { fields: by_field.into_iter().map(|(k, v)| (k, v.into_iter().collect())).collect() })
    }

    /// Adds another file's fields (several `metrics*.jsonl` of one experiment).
    pub fn merge(&mut self, other: MetricSeries) {
        for (name, samples) in other.fields {
            let mut merged: BTreeMap<i64, f64> = self.fields.remove(&name).unwrap_or_default().into_iter().collect();
            merged.extend(samples);
            self.fields.insert(name, merged.into_iter().collect());
        }
    }

    /// The values of one field in step order, warm-up excluded (`warmup` steps when given, else the rule).
    pub fn values(&self, field: &str, warmup: Option<usize>) -> Option<Vec<f64>> {
        let samples = self.fields.get(field)?;
        Some(drop_warmup(samples, warmup).iter().map(|(_, v)| *v).collect())
    }

    /// One summary per numeric field, warm-up excluded.
    pub fn summaries(&self, warmup: Option<usize>) -> Vec<MetricSummary> {
        self.fields
            .keys()
            .filter_map(|name| {
                let values = self.values(name, warmup)?;
                let s = summarize(&values)?;
                Some(MetricSummary {
                    metric: name.clone(),
                    count: s.count as i64,
                    mean: s.mean,
                    median: s.median,
                    p90: s.p90,
                    min: s.min,
                    max: s.max,
                    last: s.last,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = r#"{"step": 0, "loss": 9.0, "step_time_s": 5.0, "note": "compile"}
{"step": 1, "loss": 8.0, "step_time_s": 0.9}

{"step": 2, "loss": 7.0, "step_time_s": 0.5}
{"step": 3, "loss": 6.0, "step_time_s": 0.4}
{"step": 4, "loss": 5.0, "step_time_s": 0.6}
"#;

    #[test]
    fn summaries_exclude_warmup_and_keep_numeric_fields() {
        let series = MetricSeries::parse(RUN, "metrics.jsonl").unwrap();
        assert_eq!(series.fields.keys().collect::<Vec<_>>(), ["loss", "step_time_s"]);
        let summaries = series.summaries(None);
        let step = summaries.iter().find(|s| s.metric == "step_time_s").unwrap();
        // 5 steps: warm-up = max(2, ceil(0.5)) = 2, so steps 2..4 remain: 0.5, 0.4, 0.6.
        assert_eq!(step.count, 3);
        assert!((step.mean - 0.5).abs() < 1e-12 && step.median == 0.5 && step.min == 0.4 && step.max == 0.6);
        assert_eq!(step.last, 0.6);
        let no_warmup = series.summaries(Some(0));
        assert_eq!(no_warmup.iter().find(|s| s.metric == "loss").unwrap().count, 5);
    }

    #[test]
    fn a_rewritten_step_keeps_its_last_value_and_files_merge() {
        let mut a =
            MetricSeries::parse("{\"step\":1,\"loss\":3}\n{\"step\":2,\"loss\":2}\n{\"step\":2,\"loss\":1.5}\n", "a")
                .unwrap();
        assert_eq!(a.fields["loss"], [(1, 3.0), (2, 1.5)]);
        a.merge(MetricSeries::parse("{\"step\":3,\"tokens_per_s\":100}\n", "b").unwrap());
        assert_eq!(a.fields["tokens_per_s"], [(3, 100.0)]);
    }

    #[test]
    fn malformed_lines_name_file_and_line() {
        let err = MetricSeries::parse("{\"step\":1}\n{\"loss\":2}\n", "metrics.jsonl").unwrap_err();
        assert_eq!((err.line, err.to_string().contains("metrics.jsonl:2")), (2, true));
        let err = MetricSeries::parse("{\"step\":1}\nnot json\n", "m").unwrap_err();
        assert!(err.message.starts_with("not JSON"), "{err}");
        let err = MetricSeries::parse("[1,2]\n", "m").unwrap_err();
        assert!(err.message.contains("object"), "{err}");
    }
}
