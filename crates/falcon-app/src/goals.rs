//! Goal and session use cases: goals (create, list, show, claim with a lease, close, compare, report),
//! sessions (submit a sweep, optionally waiting; show) and the pools experiments run on.

use crate::page::Page;
use crate::worker::WorkerEvent;
use crate::{App, AppError, Result};
use falcon_core::ids::{ExperimentId, GoalId, SessionId};
use falcon_core::status::{Direction, GoalStatus};
use std::time::Duration;

pub use crate::goal_report::GoalReport;
pub use falcon_exp::goals::{GoalComparison, GoalRow, SessionView};
pub use falcon_exp::{GoalRecord, NewGoal, PoolUsage};

/// Parses a goal id (`g-3` or `3`), a usage error otherwise.
pub fn parse_goal_id(text: &str) -> Result<GoalId> {
    text.parse().map_err(|e: falcon_core::ids::IdParseError| AppError::usage(e.to_string()))
}

/// Parses a session id (`s-3` or `3`), a usage error otherwise.
pub fn parse_session_id(text: &str) -> Result<SessionId> {
    text.parse().map_err(|e: falcon_core::ids::IdParseError| AppError::usage(e.to_string()))
}

/// A goal to create, as a front end receives it.
#[derive(Debug, Clone, Default)]
pub struct GoalRequest {
    pub title: String,
    pub metric: String,
    /// `maximize` | `minimize`; default: the metric's standard direction.
    pub direction: Option<String>,
    pub target: Option<f64>,
    /// The baseline experiment's id.
    pub baseline: Option<String>,
    pub priority: i64,
    pub workload: Option<String>,
    pub hardware: Option<String>,
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

impl App {
    /// Creates a goal. The title must say something and the target, when given, must be a finite number.
    pub async fn create_goal(&self, req: &GoalRequest) -> Result<GoalRecord> {
        if req.title.trim().is_empty() {
            return Err(AppError::usage("--title must not be empty: say what the goal is"));
        }
        if let Some(t) = req.target.filter(|t| !t.is_finite()) {
            return Err(AppError::usage(format!("--target must be a finite number, not {t}")));
        }
        let direction = match &req.direction {
            Some(d) => d.parse::<Direction>().map_err(|e| AppError::usage(format!("--direction: {e}")))?,
            None => falcon_core::stats::direction_for(&req.metric).map(Direction::from).ok_or_else(|| {
                AppError::usage(format!(
                    "`{}` has no standard direction; pass --direction maximize|minimize",
                    req.metric
                ))
            })?,
        };
        let baseline = req
            .baseline
            .as_deref()
            .map(str::parse::<ExperimentId>)
            .transpose()
            .map_err(|e| AppError::usage(format!("--baseline: {e}")))?;
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
        Ok(self.exp().await?.create_goal(&goal).await?)
    }

    /// A page of the goals, optionally of one status (`open`, `claimed`, `achieved`, `abandoned`).
    pub async fn list_goals(
        &self,
        status: Option<&str>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<GoalRecord>> {
        let status =
            status.map(str::parse::<GoalStatus>).transpose().map_err(|e| AppError::usage(format!("--status: {e}")))?;
        Page::of_all(self.exp().await?.goals(status).await?, cursor, limit)
    }

    /// Sets a goal's baseline (`e-N`, which must exist) or clears it (`None`).
    pub async fn set_goal_baseline(&self, id: GoalId, baseline: Option<&str>) -> Result<GoalRecord> {
        let baseline = baseline
            .map(str::parse::<ExperimentId>)
            .transpose()
            .map_err(|e| AppError::usage(format!("baseline: {e}")))?;
        Ok(self.exp().await?.set_goal_baseline(id, baseline).await?)
    }

    /// One goal.
    pub async fn goal(&self, id: GoalId) -> Result<GoalRecord> {
        Ok(self.exp().await?.goal(id).await?)
    }

    /// Claims a goal (or, with `None`, the open goal of highest priority) for `owner` with a lease.
    pub async fn claim_goal(&self, id: Option<GoalId>, owner: &str, lease: Duration) -> Result<GoalRecord> {
        Ok(self.exp().await?.claim_goal(id, owner, lease).await?)
    }

    /// Moves a goal to `to` (released = open, achieved, abandoned) with a reason.
    pub async fn close_goal(
        &self,
        id: GoalId,
        to: GoalStatus,
        reason: &str,
        owner: Option<&str>,
    ) -> Result<GoalRecord> {
        let reason = if reason.is_empty() { format!("marked {to}") } else { reason.to_string() };
        Ok(self.exp().await?.close_goal(id, to, &reason, owner).await?)
    }

    /// The goal's completed experiments ranked against its baseline.
    pub async fn compare_goal(&self, id: GoalId) -> Result<GoalComparison> {
        Ok(self.exp().await?.compare_goal(id).await?)
    }

    /// The goal report: progress, ranking, config diff and verdicts baseline → best, the profile comparison.
    pub async fn goal_report(&self, id: GoalId, top: usize) -> Result<GoalReport> {
        let exp = self.exp().await?;
        crate::goal_report::build(exp, id, top).await
    }

    /// Expands a sweep (`load_base` reads the base specs it names) and submits it as a session
    /// (`on_submitted` hears of it); with `wait`, runs the worker loop until every experiment ended, then the
    /// analyses they call for. Returns the session's view and the analysis events.
    pub async fn submit_session(
        &self,
        request: &SessionRequest<'_>,
        load_base: impl Fn(&str) -> std::result::Result<String, String>,
        on_submitted: impl FnOnce(&SessionView),
    ) -> Result<(SessionView, Vec<WorkerEvent>)> {
        let exp = self.exp().await?;
        let specs: Vec<_> = falcon_exp::sweep::expand_points_repeated(
            request.sweep_text,
            request.file_label,
            load_base,
            request.repeats,
        )?
        .into_iter()
        .map(|point| point.spec)
        .collect();
        for (i, spec) in specs.iter().enumerate() {
            crate::experiments::placeable(exp, spec, &format!("experiment {} of the session: ", i + 1))?;
        }
        let sweep_json = serde_json::json!({ "file": request.file_label, "experiments": specs.len() });
        let view = exp.submit_session(request.name, request.goal, sweep_json, &specs).await?;
        on_submitted(&view);
        if !request.wait {
            return Ok((view, Vec::new()));
        }
        let deadline = request.timeout.map(|t| std::time::Instant::now() + t);
        let leases = exp.keep_leases().await?;
        for e in &view.experiments {
            exp.wait_until(e.id, deadline, |_| {}).await?;
        }
        drop(leases);
        let mut events = Vec::new();
        let ids: Vec<ExperimentId> = view.experiments.iter().map(|e| e.id).collect();
        for chunk in ids.chunks(1000) {
            events.extend(self.analyze_completed_among(Some(chunk)).await);
        }
        Ok((exp.session(view.session.id).await?, events))
    }

    /// A session, its experiments, aggregate status and the keys that differ between them.
    pub async fn session(&self, id: SessionId) -> Result<SessionView> {
        Ok(self.exp().await?.session(id).await?)
    }

    /// A page of the configured pools and what is running on them.
    pub async fn pools(&self, cursor: Option<&str>, limit: usize) -> Result<Page<PoolUsage>> {
        Page::of_all(self.exp().await?.pools().await?, cursor, limit)
    }
}
