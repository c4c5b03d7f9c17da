//! Per-step metrics (`metrics*.jsonl`, one JSON object per step) and their summaries.
//!
//! The series themselves stay in the artifact store; the metadata store keeps one summary row per numeric
//! field (count, mean, median, p90, min, max, last, and the within-run spread IQR/1.349 that run-level
//! verdicts use) with the warm-up steps excluded (docs/DESIGN.md §2).

use falcon_core::metrics_jsonl::{self, StepColumn};
use falcon_core::stats::{drop_warmup, summarize, RunSample};
use falcon_infra::meta::MetricSummary;
use std::collections::BTreeMap;

/// Something the metrics reader skipped in one file: a line it could not read, a count of records or values
/// left out (`line` is `None`), or non-finite values kept out of the summaries. Shown by `exp show`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MetricsNote {
    /// File (artifact URI or path).
    pub file: String,
    /// 1-based line, when the note is about one line.
    pub line: Option<usize>,
    /// What was skipped and why.
    pub reason: String,
}

/// Numeric fields of metrics files by name, each as `(step, value)` in step order (a step written twice — a
/// restarted attempt — keeps its last value). Only finite values: NaN and infinities are counted in `notes`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricSeries {
    /// Field name → samples in step order.
    pub fields: BTreeMap<String, Vec<(i64, f64)>>,
    /// What the reader skipped, per file.
    pub notes: Vec<MetricsNote>,
}

impl MetricSeries {
    /// Reads JSONL text with the shared metrics reader ([`falcon_core::metrics_jsonl`], `step` as the step
    /// column): every line it can read counts; what it skips, and every non-finite value, becomes a note.
    pub fn parse(text: &str, file: &str) -> MetricSeries {
        let read = metrics_jsonl::read(text, StepColumn::Named("step"));
        let mut by_field: BTreeMap<String, BTreeMap<i64, f64>> = BTreeMap::new();
        let mut nonfinite: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        // Event lines (a checkpoint, an evaluation) are not steps: goodput reads them, summaries do not.
        for record in read.records.into_iter().filter(|r| r.event.is_none()) {
            for (name, x) in record.values {
                if x.is_finite() {
                    by_field.entry(name).or_default().insert(record.step, x);
                } else {
                    nonfinite.entry(name).or_insert((0, record.line)).0 += 1;
                }
            }
        }
        let note = |line, reason| MetricsNote { file: file.to_string(), line, reason };
        let mut notes: Vec<MetricsNote> = read.notes.into_iter().map(|n| note(n.line, n.reason)).collect();
        for (name, (n, first)) in nonfinite {
            notes.push(note(
                None,
                format!("{name:?}: {n} NaN or infinite values left out of the summaries (first on line {first})"),
            ));
        }
        if read.objects == 0 && notes.is_empty() && !text.trim().is_empty() {
            notes.push(note(None, "no JSON records".into()));
        }
        MetricSeries { fields: by_field.into_iter().map(|(k, v)| (k, v.into_iter().collect())).collect(), notes }
    }

    /// Adds another file's fields (several `metrics*.jsonl` of one experiment).
    pub fn merge(&mut self, other: MetricSeries) {
        self.notes.extend(other.notes);
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
                let spread = RunSample::from_steps(&values, Some(0)).map(|r| r.spread);
                Some(MetricSummary {
                    metric: name.clone(),
                    count: s.count as i64,
                    mean: s.mean,
                    median: s.median,
                    p90: s.p90,
                    min: s.min,
                    max: s.max,
                    last: s.last,
                    spread,
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
        let series = MetricSeries::parse(RUN, "metrics.jsonl");
        assert!(series.notes.iter().all(|n| n.reason.contains("\"note\"")), "{:?}", series.notes);
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
            MetricSeries::parse("{\"step\":1,\"loss\":3}\n{\"step\":2,\"loss\":2}\n{\"step\":2,\"loss\":1.5}\n", "a");
        assert_eq!(a.fields["loss"], [(1, 3.0), (2, 1.5)]);
        a.merge(MetricSeries::parse("{\"step\":3,\"tokens_per_s\":100}\n", "b"));
        assert_eq!(a.fields["tokens_per_s"], [(3, 100.0)]);
    }

    #[test]
    fn bad_lines_and_nonfinite_values_become_notes_and_the_rest_counts() {
        // One garbage line of 21 and a NaN used to leave the experiment with no metrics at all.
        let mut text: String = (0..20).map(|i| format!("{{\"step\": {i}, \"loss\": {}}}\n", 10 - i / 2)).collect();
        text.insert_str(0, "{\"step\": -1, \"loss\": NaN}\nnot json at all\n");
        let s = MetricSeries::parse(&text, "metrics.jsonl");
        assert_eq!(s.fields["loss"].len(), 20);
        let reasons: Vec<(Option<usize>, &str)> = s.notes.iter().map(|n| (n.line, n.reason.as_str())).collect();
        assert_eq!(reasons.len(), 2, "{reasons:?}");
        assert_eq!(reasons[0].0, Some(2));
        assert!(reasons[0].1.starts_with("not valid JSON"), "{reasons:?}");
        assert_eq!(
            reasons[1],
            (None, "\"loss\": 1 NaN or infinite values left out of the summaries (first on line 1)")
        );
        assert!(s.notes.iter().all(|n| n.file == "metrics.jsonl"));
        let loss = s.summaries(Some(0)).into_iter().find(|m| m.metric == "loss").unwrap();
        assert!(loss.mean.is_finite() && loss.count == 20);
    }
}
