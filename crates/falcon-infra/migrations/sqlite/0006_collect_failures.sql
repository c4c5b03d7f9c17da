-- Version 6: the final collection of a job's outputs counts its failures in the store, not in a worker's memory,
-- so a worker killed (and restarted, or replaced) while the artifact store keeps failing continues the count and
-- the job still ends FAILED after the tries and the patience ([jobs] collect_patience_s).
-- collect_failures: failed tries of the current run's final collection (0 when none failed).
-- collect_failing_since_ms: when the first of them failed; NULL when none has. Both are cleared when the job is
--   placed again or starts a new attempt.
ALTER TABLE jobs ADD COLUMN collect_failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN collect_failing_since_ms INTEGER;
