-- Version 6: the final collection of a job's outputs counts its failures in the store, not in a worker's memory
-- (see the SQLite migration of the same number for what the columns hold).
ALTER TABLE jobs
    ADD COLUMN collect_failures BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN collect_failing_since_ms BIGINT NULL;
