//! Jobs of the Job module: rows, the status log, and leases (which worker owns a job).

use super::rows::RowExt;
use super::{check_large, check_short, now, query_err, with_pool, BeginWrite, LastId, MetaStore};
use crate::error::{InfraError, Result};
use falcon_core::ids::JobId;
use falcon_core::status::JobStatus;
use falcon_core::time::Millis;
use std::collections::BTreeMap;
use std::time::Duration;

const TABLE: &str = "jobs";
const COLUMNS: &str = "id, name, spec, status, status_reason, exit_code, attempt, priority, pool, backend_ref, \
                       labels, lease_owner, lease_expires_ms, created_ms, updated_ms, cancel_requested, \
                       excluded_pools, started_ms, collect_failures, collect_failing_since_ms";

/// What a new job row is made of. It starts `QUEUED`, attempt 1.
#[derive(Debug, Clone)]
pub struct NewJob {
    /// Unique, deterministic name (so a restarted worker can find its job on the backend).
    pub name: String,
    /// The standardized job spec.
    pub spec: serde_json::Value,
    /// Higher runs first.
    pub priority: i64,
    /// Opaque labels.
    pub labels: BTreeMap<String, String>,
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRecord {
    /// Id.
    pub id: JobId,
    /// Unique name.
    pub name: String,
    /// Spec.
    pub spec: serde_json::Value,
    /// Status.
    pub status: JobStatus,
    /// Why it is in this status (pending reason, failure reason).
    pub status_reason: Option<String>,
    /// Exit code of a finished attempt.
    pub exit_code: Option<i64>,
    /// Attempt number, from 1.
    pub attempt: i64,
    /// Priority.
    pub priority: i64,
    /// Pool it was placed on.
    pub pool: Option<String>,
    /// The backend's handle (Slurm job id, Kubernetes object name, pid).
    pub backend_ref: Option<String>,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Worker holding the lease.
    pub lease_owner: Option<String>,
    /// When the lease lapses.
    pub lease_expires: Option<Millis>,
    /// Created.
    pub created: Millis,
    /// Last changed.
    pub updated: Millis,
    /// Someone asked for the job to be cancelled; the worker holding it carries it out.
    pub cancel_requested: bool,
    /// Pools the job was moved away from (capacity failover); it is not placed there again.
    pub excluded_pools: Vec<String>,
    /// When the current attempt started running.
    pub started: Option<Millis>,
    /// Failed tries of the final collection of the current run's outputs (0 when none failed), counted in the
    /// store so that a worker restarted or replaced meanwhile continues the count.
    pub collect_failures: i64,
    /// When the first of those tries failed.
    pub collect_failing_since: Option<Millis>,
}

/// What a status change also sets on the job row.
#[derive(Debug, Clone, Default)]
pub struct JobChanges {
    /// Exit code of a finished attempt.
    pub exit_code: Option<i64>,
    /// A new attempt number (a retry).
    pub attempt: Option<i64>,
    /// A new placement: `Some(None)` clears pool and backend handle (back to the queue).
    pub placement: Option<Option<(String, String)>>,
    /// Record the start of the attempt (entering RUNNING).
    pub started: Option<Millis>,
    /// Pools to exclude from now on (replaces the list).
    pub excluded_pools: Option<Vec<String>>,
    /// When the change happened, when that was before now (a backend's own start time for `RUNNING`); the
    /// caller keeps it no earlier than the job's last change. Default: now.
    pub at: Option<Millis>,
}

/// One entry of a job's status log.
#[derive(Debug, Clone, PartialEq)]
pub struct JobTransition {
    /// Before (none for the first entry).
    pub from: Option<JobStatus>,
    /// After.
    pub to: JobStatus,
    /// When.
    pub at: Millis,
    /// Why.
    pub reason: String,
    /// Exit code, for a finished attempt.
    pub exit_code: Option<i64>,
    /// Attempt.
    pub attempt: i64,
}

impl MetaStore {
    /// Records a new job (`QUEUED`) and its first status entry. A name already taken is a conflict.
    pub async fn insert_job(&self, new: &NewJob) -> Result<JobRecord> {
        check_short(TABLE, "name", &new.name)?;
        let spec = new.spec.to_string();
        check_large(TABLE, "spec", &spec)?;
        let labels = serde_json::to_string(&new.labels).expect("string map serializes");
        check_large(TABLE, "labels", &labels)?;
        let at = now();
        let id = with_pool!(self, pool => {
            let mut tx = pool.begin_write().await.map_err(query_err("begin transaction"))?;
            let inserted = sqlx::query(
                "INSERT INTO jobs (name, spec, status, status_reason, exit_code, attempt, priority, pool, backend_ref, \
                 labels, lease_owner, lease_expires_ms, created_ms, updated_ms) \
                 VALUES (?, ?, ?, NULL, NULL, 1, ?, NULL, NULL, ?, NULL, NULL, ?, ?)",
            )
            .bind(&new.name)
            .bind(&spec)
            .bind(JobStatus::Queued.as_str())
            .bind(new.priority)
            .bind(&labels)
            .bind(at.0)
            .bind(at.0)
            .execute(&mut *tx)
            .await;
            let id = match inserted {
                Ok(done) => done.last_id(),
                Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                    return Err(InfraError::Conflict(format!("a job named `{}` already exists", new.name)));
                }
                Err(e) => return Err(query_err("insert job")(e)),
            };
            sqlx::query(
                "INSERT INTO job_transitions (job_id, from_status, to_status, at_ms, reason, exit_code, attempt) \
                 VALUES (?, NULL, ?, ?, 'queued', NULL, 1)",
            )
            .bind(id)
            .bind(JobStatus::Queued.as_str())
            .bind(at.0)
            .execute(&mut *tx)
            .await
            .map_err(query_err("record job transition"))?;
            tx.commit().await.map_err(query_err("commit job"))?;
            JobId(id)
        });
        self.get_job(id).await
    }

    /// One job.
    pub async fn get_job(&self, id: JobId) -> Result<JobRecord> {
        let sql = format!("SELECT {COLUMNS} FROM jobs WHERE id = ?");
        let found = with_pool!(self, pool => {
            let row = sqlx::query(&sql).bind(id.0).fetch_optional(pool).await.map_err(query_err("get job"))?;
            row.map(|r| job_from_row(&r)).transpose()?
        });
        found.ok_or_else(|| InfraError::NotFound { what: "job", id: id.to_string() })
    }

    /// The job with this (unique) name, if there is one.
    pub async fn find_job_by_name(&self, name: &str) -> Result<Option<JobRecord>> {
        let sql = format!("SELECT {COLUMNS} FROM jobs WHERE name = ?");
        with_pool!(self, pool => {
            let row = sqlx::query(&sql).bind(name).fetch_optional(pool).await.map_err(query_err("find job"))?;
            row.map(|r| job_from_row(&r)).transpose()
        })
    }

    /// Moves a job from `from` to `to` with a reason (and an exit code for a finished attempt), appending the
    /// status log, atomically. A job no longer in `from` is a conflict and nothing changes.
    pub async fn transition_job(
        &self,
        id: JobId,
        from: JobStatus,
        to: JobStatus,
        reason: &str,
        changes: JobChanges,
    ) -> Result<JobTransition> {
        check_large("job_transitions", "reason", reason)?;
        let exit_code = changes.exit_code;
        let (set_placement, pool_name, backend_ref) = match &changes.placement {
            None => (0i64, None, None),
            Some(None) => (1, None, None),
            Some(Some((p, r))) => {
                check_short(TABLE, "pool", p)?;
                check_short(TABLE, "backend_ref", r)?;
                (1, Some(p.clone()), Some(r.clone()))
            }
        };
        let excluded = changes.excluded_pools.as_ref().map(|e| serde_json::to_string(e).expect("list serializes"));
        if let Some(e) = &excluded {
            check_large(TABLE, "excluded_pools", e)?;
        }
        // A new placement or attempt is a new run: its final collection starts counting failures afresh.
        let new_run = i64::from(set_placement == 1 || changes.attempt.is_some());
        let at = changes.at.map_or_else(now, |at| at.min(now()));
        with_pool!(self, pool => {
            let mut tx = pool.begin_write().await.map_err(query_err("begin transaction"))?;
            let changed = sqlx::query(
                "UPDATE jobs SET status = ?, status_reason = ?, exit_code = COALESCE(?, exit_code), \
                 attempt = COALESCE(?, attempt), \
                 pool = CASE WHEN ? = 1 THEN ? ELSE pool END, \
                 backend_ref = CASE WHEN ? = 1 THEN ? ELSE backend_ref END, \
                 started_ms = COALESCE(?, started_ms), excluded_pools = COALESCE(?, excluded_pools), updated_ms = ?, \
                 collect_failures = CASE WHEN ? = 1 THEN 0 ELSE collect_failures END, \
                 collect_failing_since_ms = CASE WHEN ? = 1 THEN NULL ELSE collect_failing_since_ms END \
                 WHERE id = ? AND status = ?",
            )
            .bind(to.as_str())
            .bind(reason)
            .bind(exit_code)
            .bind(changes.attempt)
            .bind(set_placement)
            .bind(&pool_name)
            .bind(set_placement)
            .bind(&backend_ref)
            .bind(changes.started.map(|m| m.0))
            .bind(&excluded)
            .bind(at.0)
            .bind(new_run)
            .bind(new_run)
            .bind(id.0)
            .bind(from.as_str())
            .execute(&mut *tx)
            .await
            .map_err(query_err("update job status"))?
            .rows_affected();
            let row = sqlx::query("SELECT status, attempt FROM jobs WHERE id = ?")
                .bind(id.0)
                .fetch_optional(&mut *tx)
                .await
                .map_err(query_err("read job status"))?;
            let Some(row) = row else { return Err(InfraError::NotFound { what: "job", id: id.to_string() }) };
            if changed == 0 {
                let current = row.text(TABLE, "status")?;
                return Err(InfraError::Conflict(format!("job {id} is {current}, not {from}; it was not moved to {to}")));
            }
            let attempt = row.int(TABLE, "attempt")?;
            sqlx::query(
                "INSERT INTO job_transitions (job_id, from_status, to_status, at_ms, reason, exit_code, attempt) \
                 VALUES (?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(id.0)
            .bind(from.as_str())
            .bind(to.as_str())
            .bind(at.0)
            .bind(reason)
            .bind(exit_code)
            .bind(attempt)
            .execute(&mut *tx)
            .await
            .map_err(query_err("record job transition"))?;
            tx.commit().await.map_err(query_err("commit job transition"))?;
            Ok(JobTransition { from: Some(from), to, at, reason: reason.to_string(), exit_code, attempt })
        })
    }

    /// The job's status log, oldest first.
    pub async fn job_history(&self, id: JobId) -> Result<Vec<JobTransition>> {
        const T: &str = "job_transitions";
        with_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT from_status, to_status, at_ms, reason, exit_code, attempt FROM job_transitions \
                 WHERE job_id = ? ORDER BY id",
            )
            .bind(id.0)
            .fetch_all(pool)
            .await
            .map_err(query_err("read job history"))?;
            rows.iter()
                .map(|r| {
                    Ok(JobTransition {
                        from: r.opt_parsed(T, "from_status")?,
                        to: r.parsed(T, "to_status")?,
                        at: Millis(r.int(T, "at_ms")?),
                        reason: r.text(T, "reason")?,
                        exit_code: r.opt_int(T, "exit_code")?,
                        attempt: r.int(T, "attempt")?,
                    })
                })
                .collect()
        })
    }

    /// Claims the job for `owner` for `ttl`, in one statement: succeeds when nobody holds a live lease (or
    /// `owner` already does, which renews it). Returns whether `owner` now holds it.
    pub async fn claim_job(&self, id: JobId, owner: &str, ttl: Duration) -> Result<bool> {
        check_short(TABLE, "lease_owner", owner)?;
        let at = now();
        let expires = at.0 + ttl.as_millis() as i64;
        let changed = with_pool!(self, pool => {
            sqlx::query(
                "UPDATE jobs SET lease_owner = ?, lease_expires_ms = ? WHERE id = ? \
                 AND (lease_owner IS NULL OR lease_owner = ? OR lease_expires_ms < ?)",
            )
            .bind(owner)
            .bind(expires)
            .bind(id.0)
            .bind(owner)
            .bind(at.0)
            .execute(pool)
            .await
            .map_err(query_err("claim job"))?
            .rows_affected()
        });
        Ok(changed == 1)
    }

    /// Jobs in any of the given statuses (all when empty), highest priority first, then oldest.
    pub async fn list_jobs(&self, statuses: &[JobStatus]) -> Result<Vec<JobRecord>> {
        let mut sql = format!("SELECT {COLUMNS} FROM jobs");
        if !statuses.is_empty() {
            let marks = vec!["?"; statuses.len()].join(", ");
            sql.push_str(&format!(" WHERE status IN ({marks})"));
        }
        sql.push_str(" ORDER BY priority DESC, id ASC");
        with_pool!(self, pool => {
            let mut q = sqlx::query(&sql);
            for s in statuses {
                q = q.bind(s.as_str());
            }
            let rows = q.fetch_all(pool).await.map_err(query_err("list jobs"))?;
            rows.iter().map(job_from_row).collect()
        })
    }

    /// Records the placement of a queued job (pool and backend handle) without changing its status, before
    /// it is handed to the backend: a worker that dies right after submitting finds the job again by it.
    pub async fn set_job_placement(&self, id: JobId, pool_name: &str, backend_ref: &str) -> Result<()> {
        check_short(TABLE, "pool", pool_name)?;
        check_short(TABLE, "backend_ref", backend_ref)?;
        let changed = with_pool!(self, pool => {
            sqlx::query("UPDATE jobs SET pool = ?, backend_ref = ?, updated_ms = ? WHERE id = ?")
                .bind(pool_name)
                .bind(backend_ref)
                .bind(now().0)
                .bind(id.0)
                .execute(pool)
                .await
                .map_err(query_err("set job placement"))?
                .rows_affected()
        });
        if changed == 0 {
            return Err(InfraError::NotFound { what: "job", id: id.to_string() });
        }
        Ok(())
    }

    /// Updates the reason shown beside the job's status (why a queued job waits) without a transition.
    pub async fn set_job_status_reason(&self, id: JobId, reason: &str) -> Result<()> {
        check_large(TABLE, "status_reason", reason)?;
        with_pool!(self, pool => {
            sqlx::query("UPDATE jobs SET status_reason = ? WHERE id = ?")
                .bind(reason)
                .bind(id.0)
                .execute(pool)
                .await
                .map_err(query_err("set job status reason"))?;
        });
        Ok(())
    }

    /// Counts one more failed try of the final collection of the job's current run, and when the first failed
    /// (set once, on the first). Returns the count and that time, as stored: a worker that restarts or takes the
    /// job over continues from them.
    pub async fn record_collect_failure(&self, id: JobId) -> Result<(i64, Millis)> {
        let at = now();
        let (tries, since) = with_pool!(self, pool => {
            let mut tx = pool.begin_write().await.map_err(query_err("begin transaction"))?;
            sqlx::query(
                "UPDATE jobs SET collect_failures = collect_failures + 1, \
                 collect_failing_since_ms = COALESCE(collect_failing_since_ms, ?) WHERE id = ?",
            )
            .bind(at.0)
            .bind(id.0)
            .execute(&mut *tx)
            .await
            .map_err(query_err("record a collection failure"))?;
            let row = sqlx::query("SELECT collect_failures, collect_failing_since_ms FROM jobs WHERE id = ?")
                .bind(id.0)
                .fetch_optional(&mut *tx)
                .await
                .map_err(query_err("read collection failures"))?;
            let Some(row) = row else { return Err(InfraError::NotFound { what: "job", id: id.to_string() }) };
            let counted = (row.int(TABLE, "collect_failures")?, row.opt_int(TABLE, "collect_failing_since_ms")?);
            tx.commit().await.map_err(query_err("commit collection failure"))?;
            counted
        });
        Ok((tries, Millis(since.unwrap_or(at.0))))
    }

    /// Asks for the job to be cancelled (idempotent). The worker holding it carries it out.
    pub async fn request_job_cancel(&self, id: JobId) -> Result<()> {
        let changed = with_pool!(self, pool => {
            sqlx::query("UPDATE jobs SET cancel_requested = 1, updated_ms = ? WHERE id = ?")
                .bind(now().0)
                .bind(id.0)
                .execute(pool)
                .await
                .map_err(query_err("request job cancel"))?
                .rows_affected()
        });
        if changed == 0 {
            return Err(InfraError::NotFound { what: "job", id: id.to_string() });
        }
        Ok(())
    }

    /// Claims many jobs at once for `owner` (one statement per 500 ids): the jobs nobody else holds a live
    /// lease on. Returns the ids `owner` holds afterwards.
    pub async fn claim_jobs(&self, ids: &[JobId], owner: &str, ttl: Duration) -> Result<Vec<JobId>> {
        check_short(TABLE, "lease_owner", owner)?;
        let mut held = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            let at = now();
            let expires = at.0 + ttl.as_millis() as i64;
            let marks = vec!["?"; chunk.len()].join(", ");
            let update = format!(
                "UPDATE jobs SET lease_owner = ?, lease_expires_ms = ? WHERE id IN ({marks}) \
                 AND (lease_owner IS NULL OR lease_owner = ? OR lease_expires_ms < ?)"
            );
            let select = format!("SELECT id FROM jobs WHERE id IN ({marks}) AND lease_owner = ? ORDER BY id");
            let mine: Vec<i64> = with_pool!(self, pool => {
                let mut tx = pool.begin_write().await.map_err(query_err("begin transaction"))?;
                let mut q = sqlx::query(&update).bind(owner).bind(expires);
                for id in chunk {
                    q = q.bind(id.0);
                }
                q.bind(owner).bind(at.0).execute(&mut *tx).await.map_err(query_err("claim jobs"))?;
                let mut q = sqlx::query(&select);
                for id in chunk {
                    q = q.bind(id.0);
                }
                let rows = q.bind(owner).fetch_all(&mut *tx).await.map_err(query_err("read claimed jobs"))?;
                tx.commit().await.map_err(query_err("commit claims"))?;
                rows.iter().map(|r| r.int(TABLE, "id")).collect::<Result<Vec<_>>>()?
            });
            held.extend(mine.into_iter().map(JobId));
        }
        Ok(held)
    }

    /// Extends, to `ttl` from now, every lease `owner` still holds on a job that has not ended, in one
    /// statement. A lease that already lapsed is not touched, whether or not another worker took it since:
    /// renewal keeps what is held and never re-takes what was lost (claiming is [`MetaStore::claim_jobs`]'s
    /// work). Returns how many leases were extended.
    pub async fn renew_leases(&self, owner: &str, ttl: Duration) -> Result<u64> {
        check_short(TABLE, "lease_owner", owner)?;
        let at = now();
        let expires = at.0.saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX));
        let ended: Vec<JobStatus> = JobStatus::ALL.iter().copied().filter(|s| s.is_terminal()).collect();
        let marks = vec!["?"; ended.len()].join(", ");
        let sql = format!(
            "UPDATE jobs SET lease_expires_ms = ? WHERE lease_owner = ? AND lease_expires_ms >= ? \
             AND status NOT IN ({marks})"
        );
        let renewed = with_pool!(self, pool => {
            let mut q = sqlx::query(&sql).bind(expires).bind(owner).bind(at.0);
            for s in &ended {
                q = q.bind(s.as_str());
            }
            q.execute(pool).await.map_err(query_err("renew leases"))?.rows_affected()
        });
        Ok(renewed)
    }

    /// Gives up every lease `owner` holds (a worker that stops cleanly), so another worker takes its jobs over
    /// at once instead of after the lease. How many were released.
    pub async fn release_leases(&self, owner: &str) -> Result<u64> {
        check_short(TABLE, "lease_owner", owner)?;
        let released = with_pool!(self, pool => {
            sqlx::query("UPDATE jobs SET lease_owner = NULL, lease_expires_ms = NULL WHERE lease_owner = ?")
                .bind(owner)
                .execute(pool)
                .await
                .map_err(query_err("release leases"))?
                .rows_affected()
        });
        Ok(released)
    }

    /// Gives up `owner`'s lease on the job (no-op if it holds none).
    pub async fn release_job(&self, id: JobId, owner: &str) -> Result<()> {
        with_pool!(self, pool => {
            sqlx::query("UPDATE jobs SET lease_owner = NULL, lease_expires_ms = NULL WHERE id = ? AND lease_owner = ?")
                .bind(id.0)
                .bind(owner)
                .execute(pool)
                .await
                .map_err(query_err("release job"))?;
        });
        Ok(())
    }
}

fn job_from_row(r: &impl RowExt) -> Result<JobRecord> {
    Ok(JobRecord {
        id: JobId(r.int(TABLE, "id")?),
        name: r.text(TABLE, "name")?,
        spec: r.json(TABLE, "spec")?,
        status: r.parsed(TABLE, "status")?,
        status_reason: r.opt_text(TABLE, "status_reason")?,
        exit_code: r.opt_int(TABLE, "exit_code")?,
        attempt: r.int(TABLE, "attempt")?,
        priority: r.int(TABLE, "priority")?,
        pool: r.opt_text(TABLE, "pool")?,
        backend_ref: r.opt_text(TABLE, "backend_ref")?,
        labels: r.json(TABLE, "labels")?,
        lease_owner: r.opt_text(TABLE, "lease_owner")?,
        lease_expires: r.opt_int(TABLE, "lease_expires_ms")?.map(Millis),
        created: Millis(r.int(TABLE, "created_ms")?),
        updated: Millis(r.int(TABLE, "updated_ms")?),
        cancel_requested: r.int(TABLE, "cancel_requested")? != 0,
        excluded_pools: r.json(TABLE, "excluded_pools")?,
        started: r.opt_int(TABLE, "started_ms")?.map(Millis),
        collect_failures: r.int(TABLE, "collect_failures")?,
        collect_failing_since: r.opt_int(TABLE, "collect_failing_since_ms")?.map(Millis),
    })
}
