-- Version 2: what the Job module needs to control jobs across workers.
-- cancel_requested: a cancel asked for by anyone, carried out by the worker that holds the job.
-- excluded_pools: pools a job was moved away from (JSON list), so failover never returns to them.
-- started_ms: when the current attempt started running (for timeouts).
ALTER TABLE jobs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN excluded_pools TEXT NOT NULL DEFAULT '[]';
ALTER TABLE jobs ADD COLUMN started_ms INTEGER;
