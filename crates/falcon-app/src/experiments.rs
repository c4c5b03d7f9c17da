//! Experiment use cases: submit (optionally waiting, with the worker loop and its analyses embedded), list
//! (optionally with each row's stored metric summaries, read for the whole page at once), show (with the
//! memory verdict composed in), cancel, logs (once or followed), artifacts, config diff, metric compare and
//! history.

use crate::page::Page;
use crate::worker::WorkerEvent;
use crate::{ctx::Ctx, AppError, Result};
use falcon_core::ids::{ExperimentId, GoalId, SessionId};
use falcon_core::spec::ExperimentSpec;
use falcon_core::stats::Direction;
use falcon_core::status::ExperimentStatus;
use falcon_core::ErrorKind;
use serde::Serialize;

pub use crate::contract::History;
pub use crate::contract::RunComparison;
pub use crate::contract::{ArtifactView, ExperimentRecordView, ExperimentView};
pub use falcon_analysis::leak::{MemoryVerdict, Per, SeriesSummary, SeriesVerdict};
pub use falcon_exp::diff::{show as show_value, split_bookkeeping, Change};
pub use falcon_exp::experiments::{MetricSummaries, MetricSummary};
pub use falcon_exp::runs::RunSet;
pub use falcon_exp::AnalysisSummary;
pub use falcon_exp::{ArtifactRecord, ExperimentFilter, ExperimentRecord};

/// A list query as a front end receives it: every filter as text (flags, query parameters, tool arguments),
/// parsed here once.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub status: Option<String>,
    pub goal: Option<String>,
    pub session: Option<String>,
    pub scenario: Option<String>,
    /// `KEY=VALUE` each.
    pub labels: Vec<String>,
    /// Only experiments of this name.
    pub name: Option<String>,
    /// Only experiments at this commit (a prefix of 4 or more hex digits, or the full SHA).
    pub commit: Option<String>,
    /// Only experiments on this branch.
    pub branch: Option<String>,
    /// Only experiments older than this id.
    pub before: Option<String>,
    /// Only experiments created within this duration (`90s`, `2h`, `7d`).
    pub since: Option<String>,
    pub limit: u32,
    /// Give each row its stored metric summaries ([`ExperimentItem::metrics`]).
    pub with_metrics: bool,
}

/// One row of an experiment list: the record (in JSON with `created_iso` and `updated_iso` beside the
/// milliseconds) and, when the query asked for them, its metric summaries.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ExperimentItem {
    /// The stored experiment.
    #[serde(flatten)]
    pub record: ExperimentRecordView,
    /// With [`ListQuery::with_metrics`]: the stored summaries by metric name (`{count, mean, median, p90, min,
    /// max, last, spread}`, as `exp show` gives them; `{}` for an experiment without any yet). Left out of the
    /// JSON otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<crate::contract::MetricSummaries>,
}

/// Parses `KEY=VALUE` labels.
pub fn parse_labels(labels: &[String]) -> Result<Vec<(String, String)>> {
    labels
        .iter()
        .map(|l| {
            l.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| AppError::usage(format!("label `{l}`: expected KEY=VALUE")))
        })
        .collect()
}

/// Parses an experiment id (`e-12` or `12`), a usage error otherwise.
pub fn parse_experiment_id(text: &str) -> Result<ExperimentId> {
    text.parse().map_err(|e: falcon_core::ids::IdParseError| AppError::usage(e.to_string()))
}

impl ListQuery {
    /// The EXP filter it names.
    pub fn filter(&self) -> Result<ExperimentFilter> {
        let usage = AppError::usage;
        let now_ms =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis() as i64;
        Ok(ExperimentFilter {
            status: self.status.as_deref().map(str::parse).transpose().map_err(|e| usage(format!("status: {e}")))?,
            goal: self
                .goal
                .as_deref()
                .map(str::parse::<GoalId>)
                .transpose()
                .map_err(|e| usage(format!("goal: {e}")))?,
            session: self
                .session
                .as_deref()
                .map(str::parse::<SessionId>)
                .transpose()
                .map_err(|e| usage(format!("session: {e}")))?,
            scenario: self
                .scenario
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(|e| usage(format!("scenario: {e}")))?,
            labels: parse_labels(&self.labels)?,
            name: self.name.clone().filter(|n| !n.is_empty()),
            commit: match self.commit.as_deref().map(|c| c.trim().to_ascii_lowercase()) {
                Some(c) if c.len() < 4 || c.len() > 64 || !c.bytes().all(|b| b.is_ascii_hexdigit()) => {
                    return Err(usage(format!("commit `{c}`: a commit is 4 to 64 hex digits (a SHA or its start)")))
                }
                other => other,
            },
            branch: self.branch.clone().filter(|b| !b.is_empty()),
            before: self
                .before
                .as_deref()
                .map(str::parse::<ExperimentId>)
                .transpose()
                .map_err(|e| usage(format!("before: {e}")))?,
            since: match &self.since {
                Some(text) => {
                    let seconds = falcon_core::spec::parse_duration(text).map_err(|e| usage(format!("since: {e}")))?;
                    // A duration longer than the epoch is "everything", not an overflow.
                    let back_ms = i64::try_from(seconds).ok().and_then(|s| s.checked_mul(1000)).unwrap_or(i64::MAX);
                    Some(falcon_core::time::Millis(now_ms.saturating_sub(back_ms)))
                }
                None => None,
            },
            limit: self.limit.max(1),
            ..Default::default()
        })
    }
}

/// `exp show`: EXP's view of an experiment (its fields at the top level of the JSON) and, composed here from
/// its `memory` analysis row, the memory verdict.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ExperimentDetail {
    /// Record, history, artifacts, metric summaries, analysis rows (the memory row moved to `memory`), skipped
    /// files and notes.
    #[serde(flatten)]
    pub view: ExperimentView,
    /// `{source, per, peak_bytes, growth_bytes_per_step | growth_bytes_per_s, ci, growth_over_run_bytes,
    /// floor_bytes, points, warmup, leak_suspected, reason, series[], notes[]}`; `null` until the experiment is
    /// analysed (or when its memory analysis failed: its row in `analysis` says why).
    pub memory: Option<MemoryVerdict>,
    /// Of the time it held its resources, the productive share and the badput by cause (`{goodput_percent, reason,
    /// held_s, held_chip_seconds, productive_s, …, badput[{cause, seconds, chip_seconds, percent}], notes[]}`);
    /// `null` until it has ended.
    pub goodput: Option<falcon_analysis::goodput::Goodput>,
}

impl ExperimentDetail {
    /// Moves a readable `memory` row out of the analysis rows into `memory`.
    pub fn compose(mut view: ExperimentView) -> ExperimentDetail {
        let tool = falcon_core::summary::MEMORY_TOOL;
        let row = view.analysis.iter().position(|a| a.tool == tool && a.details.get("error").is_none());
        let memory = row.and_then(|i| {
            let parsed = serde_json::from_value::<MemoryVerdict>(view.analysis[i].details.clone()).ok()?;
            view.analysis.remove(i);
            Some(parsed)
        });
        ExperimentDetail { view, memory, goodput: None }
    }
}

/// `exp show`'s detail of a view: composed, with its goodput once the experiment has ended.
pub(crate) async fn detail(cx: &Ctx, view: falcon_exp::experiments::ExperimentView) -> Result<ExperimentDetail> {
    let view = ExperimentView::from(view);
    let ended = view.record.status.is_terminal();
    let mut detail = ExperimentDetail::compose(view);
    if ended {
        detail.goodput = Some(crate::experiment_goodput::experiment_goodput(cx, detail.view.record.id).await?);
    }
    Ok(detail)
}

/// One metric of an experiment, ready to draw ([`App::metric_charts`]).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct MetricChart {
    /// The field's name.
    pub metric: String,
    /// `(step, value)`, thinned.
    pub points: Vec<(f64, f64)>,
    /// How many steps the series has before thinning.
    pub steps: usize,
    /// The last warm-up step (the summaries leave steps up to it out).
    pub warmup_until: Option<f64>,
}

/// What [`App::submit_experiment`] reports while it works.
#[derive(Debug, Clone, Copy)]
pub enum SubmitProgress<'a> {
    /// The experiment is recorded and its job queued.
    Submitted(&'a ExperimentRecord),
    /// While waiting: the experiment reached this status.
    Status(&'a ExperimentRecord),
}

/// A metric comparison request.
#[derive(Debug, Clone)]
pub struct CompareRequest {
    /// Baseline runs: `e-1`, `e-1,e-2,e-3`, `s-3` (a session's completed runs) or `config:<hash prefix>`.
    pub a: String,
    /// Candidate runs, written the same way.
    pub b: String,
    pub metric: String,
    /// Overrides the metric's standard direction.
    pub direction: Option<Direction>,
    /// Samples to drop from the start of each side (default: detected warm-up).
    pub warmup: Option<usize>,
}

/// Refuses, before anything is recorded, a spec none of the configured pools could ever run (it would sit in
/// PROVISIONING forever): exit 4, naming what the pools offer. `whose` prefixes the message (a session's
/// experiment).
pub(crate) fn placeable(exp: &falcon_exp::Exp, spec: &ExperimentSpec, whose: &str) -> Result<()> {
    exp.check_placeable(spec).map_err(|e| match e.kind() {
        ErrorKind::Conflict => AppError::new(ErrorKind::Conflict, format!("{whose}{e}")).with_hint(
            "add a [[pools]] entry offering it to falcon.toml (`falcon pool list` shows the pools), or change the \
             spec's resources (accelerator, slices, devices, zones)",
        ),
        _ => e.into(),
    })
}

/// How many completed experiments of a series EXP's history reads (the newest ones).
pub use falcon_exp::HISTORY_READS;

/// `exp history`: EXP's [`History`] (its fields at the top level of the JSON) and whether it covers the whole
/// series, so a series longer than [`HISTORY_READS`] is never cut short silently.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct HistoryView {
    /// The metric, its points and change points.
    #[serde(flatten)]
    pub history: History,
    /// Completed experiments in the series.
    pub completed: u64,
    /// Whether the series has more completed experiments than the history covers.
    pub truncated: bool,
    /// What was left out, when something was.
    pub note: Option<String>,
}

pub(crate) async fn submit_experiment(
    cx: &Ctx,
    spec: &ExperimentSpec,
    wait: bool,
    timeout: Option<std::time::Duration>,
    mut progress: impl FnMut(SubmitProgress<'_>),
) -> Result<(ExperimentDetail, Vec<WorkerEvent>)> {
    let exp = cx.exp().await?;
    placeable(exp, spec, "")?;
    let rec = exp.submit_from(spec, None, &cx.origin()).await?;
    progress(SubmitProgress::Submitted(&rec));
    if !wait {
        return Ok((detail(cx, exp.show(rec.id).await?).await?, Vec::new()));
    }
    let deadline = timeout.map(|t| std::time::Instant::now() + t);
    // The embedded worker keeps its leases on their own timer, like `falcon worker`.
    let background = exp.start_background().await?;
    let waited = exp.wait_until(rec.id, deadline, |r| progress(SubmitProgress::Status(r))).await;
    // Whatever the wait came to: the samples of jobs still running written, the leases handed back.
    let stopped = exp.stop_background(background).await;
    let rec = waited?;
    stopped?;
    let events = if rec.status == ExperimentStatus::Completed {
        crate::worker::analyze_completed_among(cx, Some(&[rec.id])).await
    } else {
        Vec::new()
    };
    Ok((detail(cx, exp.show(rec.id).await?).await?, events))
}

pub(crate) async fn list_experiments(
    cx: &Ctx,
    query: &ListQuery,
    cursor: Option<&str>,
) -> Result<Page<ExperimentItem>> {
    let mut query = query.clone();
    if let Some(c) = cursor {
        let at = c.parse::<ExperimentId>().map_err(|_| crate::page::bad_cursor(c))?;
        // Both bound the ids from above, like every other filter they combine: the lower one holds.
        // (a `before` that is no id is left for the filter to refuse).
        let keeps = match query.before.as_deref().map(str::parse::<ExperimentId>) {
            Some(Ok(before)) => before < at,
            Some(Err(_)) => true,
            None => false,
        };
        if !keeps {
            query.before = Some(at.to_string());
        }
    }
    let mut filter = query.filter()?;
    if query.limit == 0 {
        return Ok(Page { items: Vec::new(), next_cursor: None });
    }
    // One row more than the page: whether there is a next page is then known, not guessed.
    filter.limit = query.limit.saturating_add(1);
    let exp = cx.exp().await?;
    let mut records = exp.list(&filter).await?;
    let more = records.len() > query.limit as usize;
    records.truncate(query.limit as usize);
    let next_cursor = if more { records.last().map(|r| r.id.to_string()) } else { None };
    let mut metrics = if query.with_metrics {
        let ids: Vec<ExperimentId> = records.iter().map(|r| r.id).collect();
        Some(exp.metric_summaries_of(&ids).await?)
    } else {
        None
    };
    let items = records
        .into_iter()
        .map(|record| {
            let metrics =
                metrics.as_mut().map(|m| crate::contract::metric_summaries(&m.remove(&record.id).unwrap_or_default()));
            ExperimentItem { record: ExperimentRecordView::from(&record), metrics }
        })
        .collect();
    Ok(Page { items, next_cursor })
}

pub(crate) async fn metric_charts(
    cx: &Ctx,
    id: ExperimentId,
    max_points: usize,
    max_charts: usize,
) -> Result<(Vec<MetricChart>, Vec<String>)> {
    let series = cx.exp().await?.metric_series(id).await?;
    let first = ["step_time_s", "step_time_ms", "loss", "tokens_per_s", "samples_per_s", "mfu"];
    let mut names: Vec<&String> = series.fields.keys().collect();
    names.sort_by_key(|n| (first.iter().position(|f| f == n).unwrap_or(first.len()), n.as_str()));
    let mut notes: Vec<String> = series
        .notes
        .iter()
        .map(|n| match n.line {
            Some(line) => format!("{}:{line}: {}", n.file, n.reason),
            None => format!("{}: {}", n.file, n.reason),
        })
        .collect();
    if names.len() > max_charts {
        notes.push(format!("{} of {} metrics drawn (the first by name after the usual ones)", max_charts, names.len()));
    }
    let charts = names
        .into_iter()
        .take(max_charts)
        .map(|name| {
            let samples = &series.fields[name];
            let points: Vec<(f64, f64)> = samples.iter().map(|(s, v)| (*s as f64, *v)).collect();
            let k = falcon_core::stats::warmup_len(samples.len());
            MetricChart {
                metric: name.clone(),
                steps: samples.len(),
                warmup_until: (k > 0).then(|| samples[k - 1].0 as f64),
                points: crate::series::downsample(&points, max_points),
            }
        })
        .collect();
    Ok((charts, notes))
}

pub(crate) async fn experiment_artifacts(
    cx: &Ctx,
    id: ExperimentId,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Page<ArtifactView>> {
    let artifacts = cx.exp().await?.show(id).await?.artifacts;
    Page::of_all(artifacts.into_iter().map(ArtifactView::from).collect(), cursor, limit)
}

pub(crate) async fn show_experiment(cx: &Ctx, id: ExperimentId, warmup: Option<usize>) -> Result<ExperimentDetail> {
    let exp = cx.exp().await?;
    let mut view = exp.show(id).await?;
    if warmup.is_some() {
        view.metrics = exp.metric_summaries(view.record.id, warmup).await?;
    }
    detail(cx, view).await
}

pub(crate) async fn experiment_record(cx: &Ctx, id: ExperimentId) -> Result<ExperimentRecord> {
    Ok(cx.exp().await?.experiment(id).await?)
}

pub(crate) async fn experiment_status(cx: &Ctx, id: ExperimentId) -> Result<ExperimentStatus> {
    Ok(cx.exp().await?.experiment(id).await?.status)
}

pub(crate) async fn cancel_experiment(cx: &Ctx, id: ExperimentId) -> Result<ExperimentDetail> {
    let exp = cx.exp().await?;
    let rec = exp.cancel(id).await?;
    detail(cx, exp.show(rec.id).await?).await
}

pub(crate) async fn experiment_logs_from(
    cx: &Ctx,
    id: ExperimentId,
    from: &std::collections::BTreeMap<String, u64>,
) -> Result<Vec<falcon_exp::outputs::LogChunk>> {
    Ok(cx.exp().await?.logs_from(id, from).await?)
}

pub(crate) async fn experiment_log_tails(
    cx: &Ctx,
    id: ExperimentId,
    max_bytes: u64,
) -> Result<Vec<falcon_exp::outputs::LogChunk>> {
    Ok(cx.exp().await?.log_tails(id, max_bytes).await?)
}

pub(crate) async fn experiment_artifact(cx: &Ctx, id: ExperimentId, path: &str) -> Result<ArtifactRecord> {
    Ok(cx.exp().await?.artifact(id, path).await?)
}

pub(crate) async fn artifact_bytes(
    cx: &Ctx,
    artifact: &ArtifactRecord,
    range: std::ops::Range<u64>,
) -> Result<Vec<u8>> {
    Ok(cx.exp().await?.artifact_range(artifact, range).await?.to_vec())
}

pub(crate) async fn artifact_integrity(cx: &Ctx, artifact: &ArtifactRecord) -> Result<Option<String>> {
    Ok(cx.exp().await?.integrity_failure(artifact).await?)
}

pub(crate) async fn artifact_mismatch(cx: &Ctx, artifact: &ArtifactRecord, found: &str) -> Result<String> {
    let found = format!("read {found}; the index says {} bytes of sha256 {}", artifact.size, artifact.sha256);
    Ok(cx.exp().await?.record_integrity_failure(artifact, &found).await?)
}

pub(crate) async fn kept_report(cx: &Ctx, id: ExperimentId, name: &str) -> Result<Option<Vec<u8>>> {
    Ok(cx.exp().await?.kept_report(id, name).await?.map(|b| b.to_vec()))
}

pub(crate) async fn keep_report(cx: &Ctx, id: ExperimentId, name: &str, bytes: Vec<u8>) -> Result<ArtifactRecord> {
    Ok(cx.exp().await?.keep_report(id, name, bytes).await?)
}

pub(crate) async fn experiment_logs(cx: &Ctx, id: ExperimentId, tail: Option<usize>) -> Result<Vec<(String, String)>> {
    let mut logs = cx.exp().await?.logs(id).await?;
    if let Some(n) = tail {
        for (_, text) in &mut logs {
            *text = last_lines(text, n);
        }
    }
    Ok(logs)
}

/// The last `n` lines of `text` (joined by `\n`, without a final one; all of it when it has fewer).
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

pub(crate) async fn diff_experiments(cx: &Ctx, a: ExperimentId, b: ExperimentId) -> Result<Vec<Change>> {
    Ok(cx.exp().await?.diff(a, b).await?)
}

pub(crate) async fn compare_experiments(cx: &Ctx, req: &CompareRequest) -> Result<RunComparison> {
    let side = |text: &str, which: &str| text.parse::<RunSet>().map_err(|e| AppError::usage(format!("{which}: {e}")));
    let (a, b) = (side(&req.a, "A")?, side(&req.b, "B")?);
    Ok(cx.exp().await?.compare_runs(&a, &b, &req.metric, req.direction, req.warmup).await?.into())
}

/// A series' history: experiments by name, config hash or labels (any that are given), and the metric.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryQuery {
    pub name: Option<String>,
    pub config_hash: Option<String>,
    pub label: Vec<String>,
    pub branch: Option<String>,
    pub metric: String,
}

pub(crate) async fn history(cx: &Ctx, req: &HistoryQuery) -> Result<HistoryView> {
    let (name, config_hash, metric) = (req.name.clone(), req.config_hash.clone(), req.metric.as_str());
    let labels = parse_labels(&req.label)?;
    let branch = req.branch.clone().filter(|b| !b.is_empty());
    if name.is_none() && config_hash.is_none() && labels.is_empty() && branch.is_none() {
        return Err(AppError::new(ErrorKind::Usage, "name the series: by its name, config hash, labels or branch"));
    }
    // `--config-hash` takes the full hash or a prefix (the 12 characters `exp list` prints).
    let config_hash = config_hash.map(|h| h.trim().to_ascii_lowercase());
    if let Some(h) = &config_hash {
        if h.is_empty() || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(AppError::usage(format!("config-hash {h}: a config hash is hex digits (or their start)")));
        }
    }
    let filter = ExperimentFilter { name, config_hash, labels, branch, ..Default::default() };
    let exp = cx.exp().await?;
    let history = exp.history(&filter, metric).await?;
    let completed =
        exp.count(&ExperimentFilter { status: Some(ExperimentStatus::Completed), ..filter.clone() }).await?;
    let truncated = completed > HISTORY_READS;
    let note = truncated.then(|| {
        format!(
            "the series has {completed} completed experiments; the history covers the newest {HISTORY_READS} \
             (narrow it by name, config hash or labels)"
        )
    });
    Ok(HistoryView { history: history.into(), completed, truncated, note })
}
