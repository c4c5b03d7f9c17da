//! Reports kept as an experiment's artifacts (`reports/<name>`): the profile tools, the trace analysis, the
//! Perfetto export and the profile comparisons an experiment is asked for are computed once and kept, so the
//! next request — from the API, the dashboard, MCP or the CLI's `--json` — is a read of the store. A report is
//! served from the store when kept, else computed (under the application's limit on heavy analyses, when one is
//! set: a server's `--max-analyses`, beyond which the request is refused as `too_many_requests`) and kept; a
//! report that could not be kept is logged and computed again next time.

use crate::profiles::{AnalyzeOptions, CompareOptions, TraceOptions};
use crate::render::Format;
use crate::{ctx::Ctx, AppError, Result};
use falcon_analysis::profile::Tool;
use falcon_core::ids::ExperimentId;
use falcon_core::ErrorKind;

/// A report an experiment can keep.
#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    /// The profile tools asked for (every one when empty), as JSON (`profile analyze --json`).
    Profile { tools: Vec<Tool> },
    /// Where each step's time goes, as JSON (`profile trace --json`).
    Trace,
    /// The first host's capture as gzipped Chrome trace JSON (Perfetto opens it).
    TraceExport,
    /// The profile comparison of the experiment (A, the baseline) with `b`: its top `top` ops, as `format`.
    ProfileCompare { b: ExperimentId, top: usize, format: Format },
    /// The profile comparison with `b` as the compare page's HTML section (top 20 ops).
    ProfileCompareSection { b: ExperimentId },
}

impl Report {
    /// The kept report that answers a profile analysis, when one does: an experiment's capture (`e-N`, not a
    /// path), the default host, no FLOPs or peak given by the caller.
    pub fn answering_analysis(
        target: &str,
        host: Option<&str>,
        options: &AnalyzeOptions,
    ) -> Option<(ExperimentId, Report)> {
        let plain = options.model_flops_per_step.is_none()
            && options.peak_tflops.is_none()
            && options.logged_model_flops.is_none()
            && options.model_flops_source.is_none();
        let id = crate::profiles::experiment_id(target).filter(|_| host.is_none() && plain)?;
        Some((id, Report::Profile { tools: options.tools.clone() }))
    }

    /// The kept report that answers a trace analysis, when one does: an experiment's capture, the default host,
    /// the default options.
    pub fn answering_trace(target: &str, host: Option<&str>, options: &TraceOptions) -> Option<(ExperimentId, Report)> {
        let id =
            crate::profiles::experiment_id(target).filter(|_| host.is_none() && *options == TraceOptions::default())?;
        Some((id, Report::Trace))
    }

    /// The kept report that answers a profile comparison as JSON, when one does: two experiments' captures, the
    /// default host, the default options but `top`.
    pub fn answering_comparison(
        a: &str,
        b: &str,
        host: Option<&str>,
        options: &CompareOptions,
    ) -> Option<(ExperimentId, Report)> {
        let defaults = CompareOptions::default();
        let plain = host.is_none()
            && options.top == defaults.top
            && options.min_confidence == defaults.min_confidence
            && options.verdict == defaults.verdict;
        let (a, b) = (crate::profiles::experiment_id(a)?, crate::profiles::experiment_id(b)?);
        plain.then_some((a, Report::ProfileCompare { b, top: defaults.top, format: Format::Json }))
    }

    /// Its name among the experiment's reports (`reports/<name>`).
    pub fn name(&self) -> String {
        match self {
            Report::Profile { tools } => {
                let mut names: Vec<&str> = tools.iter().map(|t| t.as_str()).collect();
                names.sort_unstable();
                names.dedup();
                if names.is_empty() {
                    "profile-all.json".into()
                } else {
                    format!("profile-{}.json", names.join("+"))
                }
            }
            Report::Trace => "trace.json".into(),
            Report::TraceExport => "trace-export.json.gz".into(),
            Report::ProfileCompare { b, top, format } => format!("profile-compare-{b}-top{top}.{}", extension(*format)),
            Report::ProfileCompareSection { b } => format!("profile-compare-{b}-section.html"),
        }
    }

    /// Its media type.
    pub fn content_type(&self) -> &'static str {
        match self {
            Report::Profile { .. } | Report::Trace => "application/json",
            Report::TraceExport => "application/gzip",
            Report::ProfileCompare { format, .. } => match format {
                Format::Json => "application/json",
                Format::Md => "text/markdown; charset=utf-8",
                _ => "text/html; charset=utf-8",
            },
            Report::ProfileCompareSection { .. } => "text/html; charset=utf-8",
        }
    }
}

fn extension(format: Format) -> &'static str {
    match format {
        Format::Json => "json",
        Format::Md => "md",
        _ => "html",
    }
}

/// The report, kept or computed and kept (see the module docs).
pub(crate) async fn report(cx: &Ctx, id: ExperimentId, report: &Report) -> Result<Vec<u8>> {
    let name = kept_name(cx, report).await?;
    if let Some(bytes) = crate::experiments::kept_report(cx, id, &name).await? {
        return Ok(bytes);
    }
    let _permit = cx.heavy_permit()?;
    let bytes = compute(cx, id, report).await?;
    if let Err(e) = crate::experiments::keep_report(cx, id, &name, bytes.clone()).await {
        tracing::warn!("keeping the report {name} of {id} failed (it is computed again next time): {e}");
    }
    Ok(bytes)
}

/// The name a report is kept under: a profile report or comparison reads the measured CPU peaks (an XLA:CPU
/// capture's roofline, bound-by and MFU divide by them), so it is kept per calibration — after `falcon doctor
/// --calibrate` it has a new name, and what was kept before is computed again (`profile-all.cal<ms>.json`).
async fn kept_name(cx: &Ctx, report: &Report) -> Result<String> {
    let name = report.name();
    if matches!(report, Report::Trace | Report::TraceExport) {
        return Ok(name);
    }
    let latest = cx.exp().await?.calibrations().await?.iter().map(|c| c.measured_ms).max();
    Ok(match (latest, name.rsplit_once('.')) {
        (Some(ms), Some((stem, extension))) => format!("{stem}.cal{ms}.{extension}"),
        _ => name,
    })
}

async fn compute(cx: &Ctx, id: ExperimentId, report: &Report) -> Result<Vec<u8>> {
    let a = id.to_string();
    match report {
        Report::Profile { tools } => {
            let options = AnalyzeOptions { tools: tools.clone(), ..AnalyzeOptions::default() };
            json(&crate::profiles::analyze_profile(cx, &a, None, &options).await?.1)
        }
        Report::Trace => json(&crate::profiles::analyze_trace(cx, &a, None, &TraceOptions::default()).await?),
        Report::TraceExport => crate::profiles::export_trace_gz(cx, id).await,
        Report::ProfileCompare { b, top, format } => {
            let result =
                crate::profiles::compare_profiles(cx, &a, &b.to_string(), None, &CompareOptions::default()).await?;
            crate::render::profile_compare::render(&result, *format, *top)
                .map(String::into_bytes)
                .map_err(|e| AppError::new(ErrorKind::Failure, format!("rendering the profile comparison: {e}")))
        }
        Report::ProfileCompareSection { b } => {
            let result =
                crate::profiles::compare_profiles(cx, &a, &b.to_string(), None, &CompareOptions::default()).await?;
            Ok(crate::render::compare_html::render_section(&result.comparison, 20).into_bytes())
        }
    }
}

fn json<T: serde::Serialize>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| AppError::new(ErrorKind::Failure, format!("a report as JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stable_whatever_the_order_of_the_tools() {
        let p = |tools: Vec<Tool>| Report::Profile { tools }.name();
        assert_eq!(p(vec![]), "profile-all.json");
        assert_eq!(p(vec![Tool::Ops, Tool::Hlo, Tool::Ops]), "profile-hlo+ops.json");
        assert_eq!(p(vec![Tool::Hlo, Tool::Ops]), "profile-hlo+ops.json");
        let b: ExperimentId = "e-7".parse().unwrap();
        assert_eq!(Report::ProfileCompare { b, top: 20, format: Format::Md }.name(), "profile-compare-e-7-top20.md");
        assert_eq!(Report::ProfileCompareSection { b }.name(), "profile-compare-e-7-section.html");
        assert_eq!(Report::TraceExport.content_type(), "application/gzip");
    }

    #[test]
    fn the_heavy_limit_refuses_one_more_and_frees_its_place_when_done() {
        let app = crate::ctx::Ctx::deferred(|| Err(AppError::usage("no configuration in this test")));
        assert!(app.heavy_permit().unwrap().is_none(), "no limit set: nothing to hold");
        app.limit_heavy_analyses(1);
        let held = app.heavy_permit().unwrap();
        assert!(held.is_some());
        let refused = app.heavy_permit().unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::TooManyRequests);
        assert_eq!(refused.kind().http_status(), 429);
        drop(held);
        assert!(app.heavy_permit().unwrap().is_some(), "free again once the first is done");
    }

    #[test]
    fn only_plain_requests_for_an_experiment_are_answered_by_a_kept_report() {
        let plain = AnalyzeOptions::default();
        assert_eq!(
            Report::answering_analysis("e-3", None, &plain),
            Some(("e-3".parse().unwrap(), Report::Profile { tools: vec![] }))
        );
        assert_eq!(Report::answering_analysis("e-3", Some("host1"), &plain), None, "one host");
        let flops = AnalyzeOptions { peak_tflops: Some(100.0), ..AnalyzeOptions::default() };
        assert_eq!(Report::answering_analysis("e-3", None, &flops), None, "the caller's peak");
        assert_eq!(Report::answering_analysis("runs/run.xplane.pb", None, &plain), None, "a path");
        assert!(Report::answering_trace("e-3", None, &TraceOptions::default()).is_some());
        let gaps = TraceOptions { top_gaps: 3, ..TraceOptions::default() };
        assert_eq!(Report::answering_trace("e-3", None, &gaps), None);
        let top5 = CompareOptions { top: 5, ..CompareOptions::default() };
        assert!(Report::answering_comparison("e-1", "e-2", None, &CompareOptions::default()).is_some());
        assert_eq!(Report::answering_comparison("e-1", "e-2", None, &top5), None);
    }
}
