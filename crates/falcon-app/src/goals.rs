//! Goal and session use cases: goals (create, list, show, claim with a lease, close, compare, report),
//! sessions (submit a sweep, optionally waiting; show, with each experiment's stored metric summaries and
//! whether it re-runs its baseline's config) and the pools experiments run on.

use crate::experiments::MetricSummaries;
use crate::page::Page;
use crate::requests::GoalCreateRequest;
use crate::worker::WorkerEvent;
use crate::{ctx::Ctx, AppError, Result};
use falcon_core::ids::{ExperimentId, GoalId, SessionId};
use falcon_core::status::{Direction, GoalStatus};
pub use falcon_exp::progress::RunProgress;
use falcon_exp::ExperimentRecord;
use serde::Serialize;
use std::collections::HashMap;
use std::time::Duration;

pub use crate::contract::{GoalComparison, GoalRow};
pub use crate::goal_report::GoalReport;
use crate::session_grid::session_grid;
pub use crate::session_grid::SessionGrid;
pub use falcon_exp::goals::SessionView;
pub use falcon_exp::{GoalRecord, NewGoal, PoolUsage};

pub use crate::requests::{parse_goal_id, parse_session_id};

pub use crate::contract::{GoalView, SessionRow};

/// `session show` (and `session submit`): EXP's view of the session, and for each of its experiments the
/// stored metric summaries and whether it re-runs its baseline's config.
///
/// JSON: the session's fields (`id`, `goal`, `name`, `spec`, `created`) with `created_iso`, then `status`,
/// `experiments[]` (each experiment record with `created_iso`/`updated_iso`, `metrics {name: {count, mean,
/// median, p90, min, max, last, spread}}` and `baseline_rerun`) and `differences[]`.
#[derive(Debug, Clone)]
pub struct SessionDetail {
    /// The session, its aggregate status, its experiments in submission order and the keys that differ.
    pub view: SessionView,
    /// One row per experiment of `view.experiments`, in that order.
    pub rows: Vec<SessionRow>,
    /// The sweep as a grid of one metric (the dashboard's session page draws it).
    pub grid: SessionGrid,
}

impl SessionDetail {
    /// Each experiment with its row.
    pub fn experiments(&self) -> impl Iterator<Item = (&ExperimentRecord, &SessionRow)> {
        self.view.experiments.iter().zip(&self.rows)
    }
}

impl SessionDetail {
    /// Its JSON view.
    pub fn to_view(&self) -> crate::contract::SessionDetailView {
        use crate::contract::{ExperimentRecordView, SessionExperimentView};
        let s = &self.view.session;
        crate::contract::SessionDetailView {
            id: s.id,
            goal: s.goal,
            name: s.name.clone(),
            spec: s.spec.clone(),
            created: s.created,
            created_iso: s.created.to_rfc3339(),
            status: self.view.status,
            experiments: self
                .experiments()
                .map(|(record, row)| SessionExperimentView {
                    record: ExperimentRecordView::from(record),
                    row: row.clone(),
                })
                .collect(),
            differences: self.view.differences.iter().map(crate::contract::NwayRow::from).collect(),
            grid: self.grid.clone(),
        }
    }
}

impl schemars::JsonSchema for SessionDetail {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SessionDetail".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        crate::contract::SessionDetailView::json_schema(generator)
    }
}

impl Serialize for SessionDetail {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.to_view().serialize(serializer)
    }
}

/// A sweep to submit as a session.
#[derive(Debug, Clone)]
pub struct SessionRequest<'a> {
    /// The session's name.
    pub name: &'a str,
    /// The sweep document.
    pub sweep_text: &'a str,
    /// Where it came from, for error positions.
    pub file_label: &'a str,
    /// The goal its experiments serve.
    pub goal: Option<GoalId>,
    /// Wait until every experiment ended.
    pub wait: bool,
    /// Give up waiting after this long (the experiments keep running).
    pub timeout: Option<std::time::Duration>,
    /// Runs per combination, in place of the file's `repeats`.
    pub repeats: Option<usize>,
}

pub(crate) async fn create_goal(cx: &Ctx, req: &GoalCreateRequest) -> Result<GoalRecord> {
    if req.title.trim().is_empty() {
        return Err(AppError::usage("title must not be empty: say what the goal is"));
    }
    if let Some(t) = req.target.filter(|t| !t.is_finite()) {
        return Err(AppError::usage(format!("target must be a finite number, not {t}")));
    }
    // The rest of its schema's rules (the metric's characters, the baseline's form, the priority's bound).
    crate::requests::checked(req)?;
    let direction = match req.direction {
        Some(d) => d,
        None => falcon_core::stats::direction_for(&req.metric).map(Direction::from).ok_or_else(|| {
            AppError::usage(format!(
                "`{}` has no standard direction; give the direction: maximize or minimize",
                req.metric
            ))
        })?,
    };
    let baseline = req
        .baseline
        .as_deref()
        .map(str::parse::<ExperimentId>)
        .transpose()
        .map_err(|e| AppError::usage(format!("baseline: {e}")))?;
    let goal = NewGoal {
        title: req.title.clone(),
        workload: req.workload.clone(),
        hardware: req.hardware.clone(),
        metric: req.metric.clone(),
        direction,
        target: req.target,
        baseline,
        priority: req.priority,
    };
    Ok(cx.exp().await?.create_goal(&goal).await?)
}

pub(crate) async fn list_goals(
    cx: &Ctx,
    status: Option<&str>,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Page<GoalView>> {
    let status =
        status.map(str::parse::<GoalStatus>).transpose().map_err(|e| AppError::usage(format!("status: {e}")))?;
    let goals = cx.exp().await?.goals(status).await?;
    Page::of_all(goals.into_iter().map(GoalView::from).collect(), cursor, limit)
}

pub(crate) async fn set_goal_baseline(cx: &Ctx, id: GoalId, baseline: Option<&str>) -> Result<GoalRecord> {
    let baseline =
        baseline.map(str::parse::<ExperimentId>).transpose().map_err(|e| AppError::usage(format!("baseline: {e}")))?;
    Ok(cx.exp().await?.set_goal_baseline(id, baseline).await?)
}

pub(crate) async fn goal(cx: &Ctx, id: GoalId) -> Result<GoalRecord> {
    Ok(cx.exp().await?.goal(id).await?)
}

pub(crate) async fn claim_goal(cx: &Ctx, id: Option<GoalId>, owner: &str, lease: Duration) -> Result<GoalRecord> {
    Ok(cx.exp().await?.claim_goal(id, owner, lease).await?)
}

pub(crate) async fn close_goal(
    cx: &Ctx,
    id: GoalId,
    to: GoalStatus,
    reason: &str,
    owner: Option<&str>,
) -> Result<GoalRecord> {
    let reason = if reason.is_empty() { format!("marked {to}") } else { reason.to_string() };
    Ok(cx.exp().await?.close_goal(id, to, &reason, owner).await?)
}

pub(crate) async fn compare_goal(cx: &Ctx, id: GoalId) -> Result<GoalComparison> {
    Ok(cx.exp().await?.compare_goal(id).await?.into())
}

pub(crate) async fn goal_report(cx: &Ctx, id: GoalId, top: usize) -> Result<GoalReport> {
    let exp = cx.exp().await?;
    crate::goal_report::build(exp, id, top).await
}

pub(crate) async fn submit_session(
    cx: &Ctx,
    request: &SessionRequest<'_>,
    load_base: impl Fn(&str) -> std::result::Result<String, String>,
    on_submitted: impl FnOnce(&SessionView),
    on_progress: impl FnMut(&[RunProgress]),
) -> Result<(SessionDetail, Vec<WorkerEvent>)> {
    let exp = cx.exp().await?;
    let points = exp.expand_sweep(request.sweep_text, request.file_label, load_base, request.repeats).await?;
    let axes = falcon_exp::sweep::sweep_axes(&points);
    let specs: Vec<falcon_core::spec::ExperimentSpec> = points.into_iter().map(|p| p.spec).collect();
    for (i, spec) in specs.iter().enumerate() {
        crate::experiments::placeable(exp, spec, &format!("experiment {} of the session: ", i + 1))?;
    }
    // The axes are kept so that the session's grid can be drawn (the dashboard's session page).
    let sweep_json = serde_json::json!({ "file": request.file_label, "experiments": specs.len(), "axes": axes });
    let view = exp.submit_session_from(request.name, request.goal, sweep_json, &specs, &cx.origin()).await?;
    on_submitted(&view);
    if !request.wait {
        return Ok((session_detail(cx, view, None).await?, Vec::new()));
    }
    let deadline = request.timeout.map(|t| std::time::Instant::now() + t);
    let background = exp.start_background().await?;
    let ids: Vec<ExperimentId> = view.experiments.iter().map(|e| e.id).collect();
    let waited = exp.wait_all(&ids, deadline, on_progress).await;
    let stopped = exp.stop_background(background).await;
    waited?;
    stopped?;
    let mut events = Vec::new();
    for chunk in ids.chunks(1000) {
        events.extend(crate::worker::analyze_completed_among(cx, Some(chunk)).await);
    }
    let view = exp.session(view.session.id).await?;
    Ok((session_detail(cx, view, None).await?, events))
}

pub(crate) async fn session(cx: &Ctx, id: SessionId) -> Result<SessionDetail> {
    session_with_metric(cx, id, None).await
}

pub(crate) async fn session_with_metric(cx: &Ctx, id: SessionId, metric: Option<&str>) -> Result<SessionDetail> {
    let view = cx.exp().await?.session(id).await?;
    session_detail(cx, view, metric).await
}

/// EXP's session view with each experiment's row: its metric summaries, read for the whole session at
/// once from the summary rows, and whether its config hash is its baseline's (the goal's baseline, else
/// its spec's).
async fn session_detail(cx: &Ctx, view: SessionView, metric: Option<&str>) -> Result<SessionDetail> {
    let exp = cx.exp().await?;
    let goal = match view.session.goal {
        Some(goal) => Some(exp.goal(goal).await?),
        None => None,
    };
    let goal_baseline = goal.as_ref().and_then(|g| g.baseline);
    let mut baseline_hashes: HashMap<ExperimentId, String> = HashMap::new();
    for id in view.experiments.iter().filter_map(|e| goal_baseline.or(e.baseline)) {
        if let std::collections::hash_map::Entry::Vacant(slot) = baseline_hashes.entry(id) {
            let hash = match view.experiments.iter().find(|e| e.id == id) {
                Some(e) => e.config_hash.clone(),
                None => exp.experiment(id).await?.config_hash,
            };
            slot.insert(hash);
        }
    }
    let ids: Vec<ExperimentId> = view.experiments.iter().map(|e| e.id).collect();
    let mut metrics = exp.metric_summaries_of(&ids).await?;
    let per_run: Vec<MetricSummaries> =
        view.experiments.iter().map(|e| metrics.remove(&e.id).unwrap_or_default()).collect();
    let rows: Vec<SessionRow> = view
        .experiments
        .iter()
        .zip(&per_run)
        .map(|(e, m)| {
            let baseline = goal_baseline.or(e.baseline);
            SessionRow {
                metrics: crate::contract::metric_summaries(m),
                baseline_rerun: baseline.is_some_and(|b| b != e.id && baseline_hashes[&b] == e.config_hash),
            }
        })
        .collect();
    let runs: Vec<(&ExperimentRecord, &MetricSummaries)> = view.experiments.iter().zip(&per_run).collect();
    let grid = session_grid(&view.session.spec, &runs, metric, goal.as_ref().map(|g| g.metric.as_str()));
    Ok(SessionDetail { view, rows, grid })
}

pub(crate) async fn pools(cx: &Ctx, cursor: Option<&str>, limit: usize) -> Result<Page<PoolUsage>> {
    Page::of_all(cx.exp().await?.pools().await?, cursor, limit)
}
