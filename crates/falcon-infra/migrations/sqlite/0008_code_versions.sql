-- Version 8: the code an experiment ran, and bisections as sessions.
-- experiments.code_commit: the full commit its code resolved to (a spec's `code`) or the work tree it was submitted
--   from was at; NULL when neither. code_branch: the branch named or checked out, when one was. code: the rest as
--   JSON (repository, ref as written, dirty state and diff hash, subject, author, date, the snapshot's key, size and
--   SHA-256).
-- sessions.kind: `sweep` (a session's experiments from a sweep file) or `bisect` (the experiments `falcon bisect`
--   ran); sessions.outcome: a bisection's answer once it has one (JSON); sessions.ended_ms: when it got it. A
--   bisect session without `ended_ms` is still searching: the worker advances it.
ALTER TABLE experiments ADD COLUMN code_commit TEXT;
ALTER TABLE experiments ADD COLUMN code_branch TEXT;
ALTER TABLE experiments ADD COLUMN code TEXT;
CREATE INDEX experiments_by_commit ON experiments (code_commit, id);
CREATE INDEX experiments_by_branch ON experiments (code_branch, id);
ALTER TABLE sessions ADD COLUMN kind TEXT NOT NULL DEFAULT 'sweep';
ALTER TABLE sessions ADD COLUMN outcome TEXT;
ALTER TABLE sessions ADD COLUMN ended_ms INTEGER;
CREATE INDEX sessions_by_kind ON sessions (kind, ended_ms, id);
