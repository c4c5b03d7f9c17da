//! The memory verdict of stored experiments ([`crate::leak`]): its inputs read from the stores — the sampled
//! resource use (`resources` artifacts), the metrics files (memory metrics and the steps' wall clock), the
//! profile summary row's memory — and its result kept as the experiment's `memory` summary row.

use super::{detail_row, Analysis, PendingOutcome, PROFILE_SUMMARY_TOOL};
use crate::error::{AnalysisError, Result};
use crate::leak::{self, MemorySeries, MemoryVerdict, StepClock};
use falcon_core::artifact::ArtifactKind;
use falcon_core::ids::ExperimentId;
use falcon_core::metrics_jsonl::{self, StepColumn};
use falcon_core::summary::MEMORY_TOOL;
use falcon_infra::meta::AnalysisSummary;

/// The most logged memory metrics tested per experiment (the rest are named in a note).
pub const MAX_METRIC_SERIES: usize = 16;

impl Analysis {
    /// The memory verdict of an experiment from what it stored (see the module docs). Unreadable inputs are
    /// notes of the verdict, not errors; an unknown experiment is not found.
    pub async fn memory_verdict(&self, id: ExperimentId) -> Result<MemoryVerdict> {
        let (meta, artifacts) = self.stores().await?;
        meta.get_experiment(id).await?;
        let mut notes = Vec::new();
        let mut series: Vec<MemorySeries> = Vec::new();

        // The profile row's memory (written by the profile analysis).
        let profile_row = meta.analysis_summaries(id).await?.into_iter().find(|s| s.tool == PROFILE_SUMMARY_TOOL);
        match profile_row.as_ref().map(|r| &r.details) {
            Some(details) => match details.get("memory").filter(|m| !m.is_null()) {
                Some(m) if m.get("peak_bytes").and_then(|p| p.as_i64()).is_some_and(|p| p > 0) => {
                    let in_use: Vec<i64> = m
                        .get("step_end_in_use_bytes")
                        .and_then(|v| v.as_array())
                        .into_iter()
                        .flatten()
                        .filter_map(|v| v.as_i64())
                        .collect();
                    series.push(leak::profile_series(&in_use, m.get("peak_bytes").and_then(|p| p.as_i64())));
                }
                Some(_) => notes
                    .push("the profile has no allocator events (XLA:CPU records none): no device memory series".into()),
                None if details.get("error").is_some() => {
                    notes.push("the profile could not be analysed: no device memory series".into())
                }
                None => notes.push(
                    "the profile summary predates memory series (run `falcon profile analyze` on it again)".into(),
                ),
            },
            None if !meta.list_artifacts(id, Some(ArtifactKind::Xprof)).await?.is_empty() => {
                notes.push("the profile is not analysed yet: no device memory series".into())
            }
            None => {}
        }

        // Metrics: memory metrics, and the steps' wall clock.
        let mut records = Vec::new();
        for a in meta.list_artifacts(id, Some(ArtifactKind::Metrics)).await? {
            if !a.key.ends_with(".jsonl") {
                continue;
            }
            match artifacts.get_verified(&a.key, a.size, &a.sha256).await {
                Ok(data) => records
                    .extend(metrics_jsonl::read(&String::from_utf8_lossy(&data), StepColumn::Named("step")).records),
                Err(e) => notes.push(format!("{}: not read ({e})", a.uri)),
            }
        }
        let mut from_metrics = leak::metric_series(&records);
        if from_metrics.len() > MAX_METRIC_SERIES {
            let rest: Vec<String> = from_metrics.drain(MAX_METRIC_SERIES..).map(|s| s.source).collect();
            notes.push(format!("{} more memory metrics not tested: {}", rest.len(), rest.join(", ")));
        }
        series.extend(from_metrics);

        // The sampled resident memory of the last attempt.
        let mut sampled = meta.list_artifacts(id, Some(ArtifactKind::Resources)).await?;
        sampled.sort_by_key(|a| attempt_of(&a.key));
        if let Some(a) = sampled.last() {
            match artifacts.get_verified(&a.key, a.size, &a.sha256).await {
                Ok(data) => {
                    let read = falcon_core::resources::read(&String::from_utf8_lossy(&data));
                    let mut s = leak::rss_series(&read.samples, &StepClock::of(&records));
                    s.notes.extend(read.notes.iter().map(|n| format!("{}: {n}", a.uri)));
                    series.push(s);
                }
                Err(e) => notes.push(format!("{}: not read ({e})", a.uri)),
            }
        }
        Ok(leak::verdict(&series, notes))
    }

    /// Completed experiments with a memory series to test (sampled resource use, metrics or a profile) and no
    /// `memory` row: their verdict is stored (an error row when it fails, reported once). An experiment whose
    /// profile is not analysed yet waits for it (its profile analysis runs first in the same pass).
    pub(crate) async fn analyze_pending_memory(
        &self,
        limit: u32,
        among: Option<&[ExperimentId]>,
    ) -> Result<Vec<PendingOutcome>> {
        let meta = self.meta().await?;
        let mut ids = Vec::new();
        for kind in [ArtifactKind::Resources, ArtifactKind::Metrics, ArtifactKind::Xprof] {
            ids.extend(self.awaiting(None, among, MEMORY_TOOL, kind, &[], limit).await?);
        }
        ids.sort();
        ids.dedup();
        ids.truncate(limit as usize);
        let mut out = Vec::new();
        for id in ids {
            let has_profile = !meta.list_artifacts(id, Some(ArtifactKind::Xprof)).await?.is_empty();
            let profiled = meta.analysis_summaries(id).await?.iter().any(|s| s.tool == PROFILE_SUMMARY_TOOL);
            if has_profile && !profiled {
                continue;
            }
            let (row, error) = match self.memory_verdict(id).await {
                Ok(v) => (memory_row(&v)?, None),
                Err(e) => (detail_row(MEMORY_TOOL, serde_json::json!({ "error": e.to_string() })), Some(e.to_string())),
            };
            meta.put_analysis_summary(id, &row).await?;
            out.push(PendingOutcome {
                tool: MEMORY_TOOL,
                experiment: id,
                error: error.map(|e| format!("memory analysis: {e}")),
                mfu: None,
            });
        }
        Ok(out)
    }
}

/// The `memory` summary row of a verdict: the headline's peak in its column, the whole verdict in details.
pub fn memory_row(v: &MemoryVerdict) -> Result<AnalysisSummary> {
    let details = serde_json::to_value(v).map_err(|e| AnalysisError::Invalid(format!("memory verdict: {e}")))?;
    Ok(AnalysisSummary {
        peak_memory_bytes: v.headline.peak_bytes.and_then(|p| i64::try_from(p).ok()),
        ..detail_row(MEMORY_TOOL, details)
    })
}

/// The attempt of a `resources/<attempt>/…` key (0 when it has none).
fn attempt_of(key: &str) -> u64 {
    key.split("/resources/").nth(1).and_then(|rest| rest.split('/').next()).and_then(|a| a.parse().ok()).unwrap_or(0)
}
