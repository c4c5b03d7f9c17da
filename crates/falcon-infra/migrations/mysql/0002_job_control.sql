-- Version 2: what the Job module needs to control jobs across workers (see ../sqlite/0002_job_control.sql).
ALTER TABLE jobs
    ADD COLUMN cancel_requested BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN excluded_pools MEDIUMTEXT NOT NULL DEFAULT '[]',
    ADD COLUMN started_ms BIGINT;
