//! The analyses the worker owes: completed experiments whose artifacts call for a profile, trace, kernel-bench or
//! accuracy analysis (the memory verdict is `memory`'s) and that have no summary row for it yet. Each is analysed
//! once; a failure is stored in the row, so it is reported once and not retried forever.

use falcon_core::artifact::ArtifactKind;
use falcon_core::ids::ExperimentId;
use serde::Serialize;

use super::{
    detail_row, Analysis, ACCURACY_SUMMARY_TOOL, KERNEL_BENCH_SUMMARY_TOOL, PROFILE_SUMMARY_TOOL, TRACE_SUMMARY_TOOL,
};
use crate::error::{AnalysisError, Result};
use crate::input::XPLANE_SUFFIX;
use crate::profile::AnalyzeOptions;
use crate::trace::TraceOptions;

/// One experiment handled by [`Analysis::analyze_pending`].
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PendingOutcome {
    pub experiment: ExperimentId,
    /// Which analysis: `profile`, `trace`, `kernel_bench`, `accuracy` or `memory`.
    pub tool: &'static str,
    /// Why the analysis failed, when it did.
    pub error: Option<String>,
    pub mfu: Option<f64>,
}

impl Analysis {
    /// Analyses completed experiments that have a profile and no summary row yet (at most `limit`),
    /// storing a summary row for each — an error row when the profile cannot be analysed, so a corrupt
    /// profile is reported once, not retried forever. Returns what was done.
    pub async fn analyze_pending(&self, limit: u32) -> Result<Vec<PendingOutcome>> {
        self.analyze_pending_among(limit, None).await
    }

    /// [`Analysis::analyze_pending`] restricted to the experiments `among` when given (what `exp submit
    /// --wait` submitted: other people's experiments are the worker's to analyse).
    pub async fn analyze_pending_among(
        &self,
        limit: u32,
        among: Option<&[ExperimentId]>,
    ) -> Result<Vec<PendingOutcome>> {
        let ids =
            self.awaiting(None, among, PROFILE_SUMMARY_TOOL, ArtifactKind::Xprof, &[XPLANE_SUFFIX], limit).await?;
        let mut out = Vec::new();
        for id in ids {
            let options = AnalyzeOptions::default();
            match self.analyze(&id.to_string(), None, &options).await {
                Ok((_, report)) => {
                    // The deep trace analysis of the same capture joins the summary (its own `trace` row);
                    // a failure there does not undo the profile analysis.
                    let trace_error =
                        self.trace(&id.to_string(), None, &TraceOptions::default()).await.err().map(|e| e.to_string());
                    out.push(PendingOutcome {
                        tool: PROFILE_SUMMARY_TOOL,
                        experiment: id,
                        error: trace_error.map(|e| format!("trace analysis: {e}")),
                        mfu: report.overview.as_ref().and_then(|o| o.mfu),
                    })
                }
                Err(e) => {
                    let row = detail_row(PROFILE_SUMMARY_TOOL, serde_json::json!({ "error": e.to_string() }));
                    self.meta().await?.put_analysis_summary(id, &row).await?;
                    out.push(PendingOutcome {
                        tool: PROFILE_SUMMARY_TOOL,
                        experiment: id,
                        error: Some(e.to_string()),
                        mfu: None,
                    });
                }
            }
        }
        // Experiments whose only trace is a Chrome trace JSON (a PyTorch profiler trace, say) get the
        // trace analysis alone; a failure is recorded in the row so it is reported once.
        let traced =
            self.awaiting(None, among, TRACE_SUMMARY_TOOL, ArtifactKind::Trace, &[".json", ".json.gz"], limit).await?;
        for id in traced {
            if let Err(e) = self.trace(&id.to_string(), None, &TraceOptions::default()).await {
                let row = detail_row(TRACE_SUMMARY_TOOL, serde_json::json!({ "error": e.to_string() }));
                self.meta().await?.put_analysis_summary(id, &row).await?;
                out.push(PendingOutcome {
                    tool: "trace",
                    experiment: id,
                    error: Some(format!("trace analysis: {e}")),
                    mfu: None,
                });
            } else {
                out.push(PendingOutcome { tool: "trace", experiment: id, error: None, mfu: None });
            }
        }
        out.extend(self.analyze_pending_kernel_bench(limit, among).await?);
        out.extend(self.analyze_pending_accuracy(limit, among).await?);
        // Last: it reads the profile row written above.
        out.extend(self.analyze_pending_memory(limit, among).await?);
        Ok(out)
    }

    /// Completed experiments with kernel-bench results and no `kernel_bench` summary: analyse their newest
    /// results file and store fast_p, correctness and the geometric-mean speed-up (or the error).
    async fn analyze_pending_kernel_bench(
        &self,
        limit: u32,
        among: Option<&[ExperimentId]>,
    ) -> Result<Vec<PendingOutcome>> {
        let ids = self.awaiting(None, among, KERNEL_BENCH_SUMMARY_TOOL, ArtifactKind::KernelBench, &[], limit).await?;
        let mut out = Vec::new();
        for id in ids {
            let outcome = async {
                let files = self.fetch_artifacts(id, ArtifactKind::KernelBench).await?;
                let newest = files
                    .last()
                    .cloned()
                    .ok_or_else(|| AnalysisError::NotFound(format!("{id} has no kernel-bench results")))?;
                let results = crate::kernel_bench::read_results(&newest)?;
                Ok::<_, AnalysisError>(crate::kernel_bench::analyze(
                    &results,
                    &crate::kernel_bench::KernelOptions::default(),
                ))
            }
            .await;
            let (details, error) = match outcome {
                Ok(r) => (
                    serde_json::json!({
                        "rows": r.rows.len(), "fast_p": r.fast_p, "fast_0": r.fast_0,
                        "correct_fraction": r.correct_fraction, "geomean_speedup": r.geomean_speedup,
                    }),
                    None,
                ),
                Err(e) => (serde_json::json!({ "error": e.to_string() }), Some(format!("kernel-bench analysis: {e}"))),
            };
            self.meta().await?.put_analysis_summary(id, &detail_row(KERNEL_BENCH_SUMMARY_TOOL, details)).await?;
            out.push(PendingOutcome { tool: KERNEL_BENCH_SUMMARY_TOOL, experiment: id, error, mfu: None });
        }
        Ok(out)
    }

    /// Completed experiments of the `accuracy` scenario with metrics and no `accuracy` summary: when the
    /// spec's `config.accuracy.reference` names a reference (an experiment id or a metrics file), align the
    /// run with it (the reference is A) and store the verdict and per-metric errors; otherwise store what
    /// the run logged (series, steps) with a note that there is nothing to compare with.
    async fn analyze_pending_accuracy(
        &self,
        limit: u32,
        among: Option<&[ExperimentId]>,
    ) -> Result<Vec<PendingOutcome>> {
        let meta = self.meta().await?;
        let ids = self
            .awaiting(
                Some(falcon_core::status::Scenario::Accuracy),
                among,
                ACCURACY_SUMMARY_TOOL,
                ArtifactKind::Metrics,
                &[],
                limit,
            )
            .await?;
        let mut out = Vec::new();
        for id in ids {
            let outcome = async {
                let record = meta.get_experiment(id).await?;
                let run = crate::accuracy::read::read_path(&self.accuracy_inputs(&id.to_string()).await?, &Default::default())?;
                let reference = record.spec.pointer("/config/accuracy/reference").and_then(|v| v.as_str()).map(str::to_string);
                let details = match reference {
                    Some(r) => {
                        let a = crate::accuracy::read::read_path(&self.accuracy_inputs(&r).await?, &Default::default())?;
                        let report = crate::accuracy::align::align(&a, &run, &Default::default())?;
                        let metrics: Vec<_> = report
                            .metrics
                            .iter()
                            .map(|m| serde_json::json!({
                                "name": m.name, "verdict": m.verdict, "steps_compared": m.steps_compared,
                                "max_rel_err": m.max_rel_err, "first_divergence_step": m.first_divergence_step,
                            }))
                            .collect();
                        serde_json::json!({ "reference": r, "verdict": report.verdict, "metrics": metrics })
                    }
                    None => serde_json::json!({
                        "reference": null,
                        "series": run.series.iter().map(|s| serde_json::json!({ "name": s.name, "steps": s.points.len() })).collect::<Vec<_>>(),
                        "note": "no config.accuracy.reference in the spec: nothing to align with",
                    }),
                };
                Ok::<_, AnalysisError>(details)
            }
            .await;
            let (details, error) = match outcome {
                Ok(d) => (d, None),
                Err(e) => (serde_json::json!({ "error": e.to_string() }), Some(format!("accuracy analysis: {e}"))),
            };
            meta.put_analysis_summary(id, &detail_row(ACCURACY_SUMMARY_TOOL, details)).await?;
            out.push(PendingOutcome { tool: ACCURACY_SUMMARY_TOOL, experiment: id, error, mfu: None });
        }
        Ok(out)
    }
}
