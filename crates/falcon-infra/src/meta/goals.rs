//! Goals (with their transition log) and sessions.

use super::rows::RowExt;
use super::{check_large, check_short, now, query_err, with_pool, BeginWrite, LastId, MetaStore};
use crate::error::{InfraError, Result};
use falcon_core::ids::{ExperimentId, GoalId, SessionId};
use falcon_core::status::{Direction, GoalStatus};
use falcon_core::time::Millis;

const GOALS: &str = "goals";
const GOAL_COLUMNS: &str = "id, title, workload, hardware, metric, direction, target, baseline_experiment_id, \
                            priority, status, owner, lease_expires_ms, created_ms, updated_ms";

/// What a new goal is made of. It starts `OPEN`.
#[derive(Debug, Clone)]
pub struct NewGoal {
    /// One-line statement ("llama3-8b on v5e-256: MFU 38% → 45%").
    pub title: String,
    /// Workload or model.
    pub workload: Option<String>,
    /// Hardware.
    pub hardware: Option<String>,
    /// Metric name (`mfu`, `step_time_s`, …).
    pub metric: String,
    /// Which way is better.
    pub direction: Direction,
    /// Target value.
    pub target: Option<f64>,
    /// Baseline experiment.
    pub baseline: Option<ExperimentId>,
    /// Higher is picked first.
    pub priority: i64,
}

/// A goal as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct GoalRecord {
    /// Id.
    pub id: GoalId,
    /// Title.
    pub title: String,
    /// Workload.
    pub workload: Option<String>,
    /// Hardware.
    pub hardware: Option<String>,
    /// Metric.
    pub metric: String,
    /// Direction.
    pub direction: Direction,
    /// Target.
    pub target: Option<f64>,
    /// Baseline experiment.
    pub baseline: Option<ExperimentId>,
    /// Priority.
    pub priority: i64,
    /// Status.
    pub status: GoalStatus,
    /// Who holds the claim.
    pub owner: Option<String>,
    /// When the claim lapses.
    pub lease_expires: Option<Millis>,
    /// Created.
    pub created: Millis,
    /// Last changed.
    pub updated: Millis,
}

/// What a new session is made of.
#[derive(Debug, Clone)]
pub struct NewSession {
    /// The goal it serves.
    pub goal: Option<GoalId>,
    /// Name.
    pub name: String,
    /// The sweep spec as submitted (a bisection: its parameters).
    pub spec: serde_json::Value,
    /// `sweep` or `bisect`.
    pub kind: SessionKind,
}

/// What a session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SessionKind {
    /// Experiments submitted together from a sweep file (or one spec's repeats).
    #[default]
    Sweep,
    /// The experiments a `falcon bisect` ran, its parameters in the spec and its answer in the outcome.
    Bisect,
}

impl SessionKind {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionKind::Sweep => "sweep",
            SessionKind::Bisect => "bisect",
        }
    }
}

impl std::str::FromStr for SessionKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "sweep" => Ok(SessionKind::Sweep),
            "bisect" => Ok(SessionKind::Bisect),
            other => Err(format!("unknown session kind `{other}`")),
        }
    }
}

/// A session as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    /// Id.
    pub id: SessionId,
    /// Goal.
    pub goal: Option<GoalId>,
    /// Name.
    pub name: String,
    /// Spec.
    pub spec: serde_json::Value,
    /// Created.
    pub created: Millis,
    /// `sweep` or `bisect`.
    pub kind: SessionKind,
    /// A bisection's answer, once it has one.
    pub outcome: Option<serde_json::Value>,
    /// When the outcome was recorded.
    pub ended: Option<Millis>,
}

impl MetaStore {
    /// Records a new goal (`OPEN`) and its first history entry.
    pub async fn insert_goal(&self, new: &NewGoal) -> Result<GoalRecord> {
        check_short(GOALS, "title", &new.title)?;
        check_short(GOALS, "metric", &new.metric)?;
        for (col, v) in [("workload", &new.workload), ("hardware", &new.hardware)] {
            if let Some(v) = v {
                check_short(GOALS, col, v)?;
            }
        }
        let at = now();
        let id = with_pool!(self, pool => {
            let mut tx = pool.begin_write().await.map_err(query_err("begin transaction"))?;
            let id = sqlx::query(
                "INSERT INTO goals (title, workload, hardware, metric, direction, target, baseline_experiment_id, \
                 priority, status, owner, lease_expires_ms, created_ms, updated_ms) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?)",
            )
            .bind(&new.title)
            .bind(&new.workload)
            .bind(&new.hardware)
            .bind(&new.metric)
            .bind(new.direction.as_str())
            .bind(new.target)
            .bind(new.baseline.map(|b| b.0))
            .bind(new.priority)
            .bind(GoalStatus::Open.as_str())
            .bind(at.0)
            .bind(at.0)
            .execute(&mut *tx)
            .await
            .map_err(query_err("insert goal"))?
            .last_id();
            sqlx::query(
                "INSERT INTO goal_transitions (goal_id, from_status, to_status, at_ms, reason, actor) \
                 VALUES (?, NULL, ?, ?, 'created', NULL)",
            )
            .bind(id)
            .bind(GoalStatus::Open.as_str())
            .bind(at.0)
            .execute(&mut *tx)
            .await
            .map_err(query_err("record goal transition"))?;
            tx.commit().await.map_err(query_err("commit goal"))?;
            GoalId(id)
        });
        self.get_goal(id).await
    }

    /// Sets (or clears) a goal's baseline experiment.
    pub async fn set_goal_baseline(&self, id: GoalId, baseline: Option<ExperimentId>) -> Result<GoalRecord> {
        let at = now();
        let changed = with_pool!(self, pool => {
            sqlx::query("UPDATE goals SET baseline_experiment_id = ?, updated_ms = ? WHERE id = ?")
                .bind(baseline.map(|b| b.0))
                .bind(at.0)
                .bind(id.0)
                .execute(pool)
                .await
                .map_err(query_err("set goal baseline"))?
                .rows_affected()
        });
        if changed == 0 {
            return Err(InfraError::NotFound { what: "goal", id: id.to_string() });
        }
        self.get_goal(id).await
    }

    /// One goal.
    pub async fn get_goal(&self, id: GoalId) -> Result<GoalRecord> {
        let sql = format!("SELECT {GOAL_COLUMNS} FROM goals WHERE id = ?");
        let found = with_pool!(self, pool => {
            let row = sqlx::query(&sql).bind(id.0).fetch_optional(pool).await.map_err(query_err("get goal"))?;
            row.map(|r| goal_from_row(&r)).transpose()?
        });
        found.ok_or_else(|| InfraError::NotFound { what: "goal", id: id.to_string() })
    }

    /// Goals, optionally of one status, highest priority first, then oldest.
    pub async fn list_goals(&self, status: Option<GoalStatus>) -> Result<Vec<GoalRecord>> {
        let sql =
            format!("SELECT {GOAL_COLUMNS} FROM goals WHERE (? IS NULL OR status = ?) ORDER BY priority DESC, id ASC");
        let status = status.map(|s| s.as_str());
        with_pool!(self, pool => {
            let rows = sqlx::query(&sql).bind(status).bind(status).fetch_all(pool).await.map_err(query_err("list goals"))?;
            rows.iter().map(goal_from_row).collect()
        })
    }

    /// Claims the best claimable goal for `owner` for `ttl`: an OPEN goal, or a CLAIMED one whose lease has
    /// lapsed — highest priority first, then oldest. Atomic: of any number of concurrent claimers, each goal goes
    /// to one. `None` when nothing is claimable.
    pub async fn claim_next_goal(&self, owner: &str, ttl: std::time::Duration) -> Result<Option<GoalRecord>> {
        check_short(GOALS, "owner", owner)?;
        for _ in 0..32 {
            let at = now();
            let candidate: Option<i64> = with_pool!(self, pool => {
                sqlx::query(
                    "SELECT id FROM goals WHERE status = ? OR (status = ? AND lease_expires_ms < ?) \
                     ORDER BY priority DESC, id ASC LIMIT 1",
                )
                .bind(GoalStatus::Open.as_str())
                .bind(GoalStatus::Claimed.as_str())
                .bind(at.0)
                .fetch_optional(pool)
                .await
                .map_err(query_err("find a claimable goal"))?
                .map(|r| r.int(GOALS, "id"))
                .transpose()?
            });
            let Some(id) = candidate else { return Ok(None) };
            if self.claim_goal(GoalId(id), owner, ttl).await?.is_some() {
                return self.get_goal(GoalId(id)).await.map(Some);
            }
            // Another claimer won this one; look again.
        }
        Err(InfraError::Conflict("could not claim a goal: too much contention, try again".into()))
    }

    /// Claims one goal for `owner` when it is OPEN, CLAIMED with a lapsed lease, or already `owner`'s (a
    /// renewal). Returns the goal when `owner` holds it afterwards, `None` when someone else does or it is closed.
    pub async fn claim_goal(&self, id: GoalId, owner: &str, ttl: std::time::Duration) -> Result<Option<GoalRecord>> {
        check_short(GOALS, "owner", owner)?;
        let at = now();
        let expires = at.0 + ttl.as_millis() as i64;
        let won = with_pool!(self, pool => {
            let mut tx = pool.begin_write().await.map_err(query_err("begin transaction"))?;
            let before = sqlx::query("SELECT status, owner FROM goals WHERE id = ?")
                .bind(id.0)
                .fetch_optional(&mut *tx)
                .await
                .map_err(query_err("read goal"))?;
            let Some(before) = before else { return Err(InfraError::NotFound { what: "goal", id: id.to_string() }) };
            let from_status = before.text(GOALS, "status")?;
            let changed = sqlx::query(
                "UPDATE goals SET status = ?, owner = ?, lease_expires_ms = ?, updated_ms = ? WHERE id = ? \
                 AND (status = ? OR (status = ? AND (lease_expires_ms < ? OR owner = ?)))",
            )
            .bind(GoalStatus::Claimed.as_str())
            .bind(owner)
            .bind(expires)
            .bind(at.0)
            .bind(id.0)
            .bind(GoalStatus::Open.as_str())
            .bind(GoalStatus::Claimed.as_str())
            .bind(at.0)
            .bind(owner)
            .execute(&mut *tx)
            .await
            .map_err(query_err("claim goal"))?
            .rows_affected();
            if changed == 1 {
                sqlx::query(
                    "INSERT INTO goal_transitions (goal_id, from_status, to_status, at_ms, reason, actor) VALUES (?, ?, ?, ?, ?, ?)",
                )
                .bind(id.0)
                .bind(&from_status)
                .bind(GoalStatus::Claimed.as_str())
                .bind(at.0)
                .bind(if from_status == GoalStatus::Claimed.as_str() { "claim renewed or taken over after its lease lapsed" } else { "claimed" })
                .bind(owner)
                .execute(&mut *tx)
                .await
                .map_err(query_err("record goal transition"))?;
            }
            tx.commit().await.map_err(query_err("commit goal claim"))?;
            changed == 1
        });
        if won {
            self.get_goal(id).await.map(Some)
        } else {
            Ok(None)
        }
    }

    /// Moves a goal from `from` to `to` (release, achieve, abandon), recording who and why. A goal no longer in
    /// `from` is a conflict. Leaving CLAIMED clears the owner and lease.
    pub async fn transition_goal(
        &self,
        id: GoalId,
        from: GoalStatus,
        to: GoalStatus,
        reason: &str,
        actor: Option<&str>,
    ) -> Result<GoalRecord> {
        check_large("goal_transitions", "reason", reason)?;
        if let Some(actor) = actor {
            check_short("goal_transitions", "actor", actor)?;
        }
        let at = now();
        with_pool!(self, pool => {
            let mut tx = pool.begin_write().await.map_err(query_err("begin transaction"))?;
            let changed = sqlx::query(
                "UPDATE goals SET status = ?, owner = CASE WHEN ? = 1 THEN NULL ELSE owner END, \
                 lease_expires_ms = CASE WHEN ? = 1 THEN NULL ELSE lease_expires_ms END, updated_ms = ? \
                 WHERE id = ? AND status = ?",
            )
            .bind(to.as_str())
            .bind(i64::from(to != GoalStatus::Claimed))
            .bind(i64::from(to != GoalStatus::Claimed))
            .bind(at.0)
            .bind(id.0)
            .bind(from.as_str())
            .execute(&mut *tx)
            .await
            .map_err(query_err("update goal status"))?
            .rows_affected();
            if changed == 0 {
                let row = sqlx::query("SELECT status FROM goals WHERE id = ?")
                    .bind(id.0)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(query_err("read goal"))?;
                return Err(match row {
                    None => InfraError::NotFound { what: "goal", id: id.to_string() },
                    Some(r) => InfraError::Conflict(format!("goal {id} is {}, not {from}", r.text(GOALS, "status")?)),
                });
            }
            sqlx::query("INSERT INTO goal_transitions (goal_id, from_status, to_status, at_ms, reason, actor) VALUES (?, ?, ?, ?, ?, ?)")
                .bind(id.0)
                .bind(from.as_str())
                .bind(to.as_str())
                .bind(at.0)
                .bind(reason)
                .bind(actor)
                .execute(&mut *tx)
                .await
                .map_err(query_err("record goal transition"))?;
            tx.commit().await.map_err(query_err("commit goal transition"))?;
        });
        self.get_goal(id).await
    }

    /// Records a new session.
    pub async fn insert_session(&self, new: &NewSession) -> Result<SessionRecord> {
        check_short("sessions", "name", &new.name)?;
        let spec = new.spec.to_string();
        check_large("sessions", "spec", &spec)?;
        let at = now();
        let id = with_pool!(self, pool => {
            sqlx::query("INSERT INTO sessions (goal_id, name, spec, created_ms, kind) VALUES (?, ?, ?, ?, ?)")
                .bind(new.goal.map(|g| g.0))
                .bind(&new.name)
                .bind(&spec)
                .bind(at.0)
                .bind(new.kind.as_str())
                .execute(pool)
                .await
                .map_err(query_err("insert session"))?
                .last_id()
        });
        self.get_session(SessionId(id)).await
    }

    /// One session.
    pub async fn get_session(&self, id: SessionId) -> Result<SessionRecord> {
        let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?");
        let found = with_pool!(self, pool => {
            let row = sqlx::query(&sql)
                .bind(id.0)
                .fetch_optional(pool)
                .await
                .map_err(query_err("get session"))?;
            row.map(|r| session_from_row(&r)).transpose()?
        });
        found.ok_or_else(|| InfraError::NotFound { what: "session", id: id.to_string() })
    }

    /// Sessions of `kind` without an outcome yet (the bisections still searching), oldest first, at most `limit`.
    pub async fn open_sessions(&self, kind: SessionKind, limit: u32) -> Result<Vec<SessionRecord>> {
        let sql =
            format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE kind = ? AND ended_ms IS NULL ORDER BY id LIMIT ?");
        with_pool!(self, pool => {
            let rows = sqlx::query(&sql)
                .bind(kind.as_str())
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await
                .map_err(query_err("list open sessions"))?;
            rows.iter().map(session_from_row).collect()
        })
    }

    /// Records a session's outcome (and when), once: a session that has one already is a conflict, unchanged.
    pub async fn end_session(&self, id: SessionId, outcome: &serde_json::Value) -> Result<SessionRecord> {
        let text = outcome.to_string();
        check_large("sessions", "outcome", &text)?;
        let at = now();
        let changed = with_pool!(self, pool => {
            sqlx::query("UPDATE sessions SET outcome = ?, ended_ms = ? WHERE id = ? AND ended_ms IS NULL")
                .bind(&text)
                .bind(at.0)
                .bind(id.0)
                .execute(pool)
                .await
                .map_err(query_err("end session"))?
                .rows_affected()
        });
        if changed == 0 {
            self.get_session(id).await?;
            return Err(InfraError::Conflict(format!("session {id} has an outcome already")));
        }
        self.get_session(id).await
    }
}

const SESSION_COLUMNS: &str = "id, goal_id, name, spec, created_ms, kind, outcome, ended_ms";

fn session_from_row(r: &impl RowExt) -> Result<SessionRecord> {
    const T: &str = "sessions";
    Ok(SessionRecord {
        id: SessionId(r.int(T, "id")?),
        goal: r.opt_int(T, "goal_id")?.map(GoalId),
        name: r.text(T, "name")?,
        spec: r.json(T, "spec")?,
        created: Millis(r.int(T, "created_ms")?),
        kind: r.parsed(T, "kind")?,
        outcome: match r.opt_text(T, "outcome")? {
            Some(text) => Some(serde_json::from_str(&text).map_err(|e| InfraError::CorruptRow {
                table: T,
                message: format!("column outcome is not valid JSON: {e}"),
            })?),
            None => None,
        },
        ended: r.opt_int(T, "ended_ms")?.map(Millis),
    })
}

fn goal_from_row(r: &impl RowExt) -> Result<GoalRecord> {
    Ok(GoalRecord {
        id: GoalId(r.int(GOALS, "id")?),
        title: r.text(GOALS, "title")?,
        workload: r.opt_text(GOALS, "workload")?,
        hardware: r.opt_text(GOALS, "hardware")?,
        metric: r.text(GOALS, "metric")?,
        direction: r.parsed(GOALS, "direction")?,
        target: r.opt_real(GOALS, "target")?,
        baseline: r.opt_int(GOALS, "baseline_experiment_id")?.map(ExperimentId),
        priority: r.int(GOALS, "priority")?,
        status: r.parsed(GOALS, "status")?,
        owner: r.opt_text(GOALS, "owner")?,
        lease_expires: r.opt_int(GOALS, "lease_expires_ms")?.map(Millis),
        created: Millis(r.int(GOALS, "created_ms")?),
        updated: Millis(r.int(GOALS, "updated_ms")?),
    })
}
