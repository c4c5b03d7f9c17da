-- Version 8: the code an experiment ran, and bisections as sessions (see the SQLite migration of the same number
-- for what the columns hold).
ALTER TABLE experiments ADD COLUMN code_commit VARCHAR(64) NULL;
ALTER TABLE experiments ADD COLUMN code_branch VARCHAR(255) NULL;
ALTER TABLE experiments ADD COLUMN code MEDIUMTEXT NULL;
CREATE INDEX experiments_by_commit ON experiments (code_commit, id);
CREATE INDEX experiments_by_branch ON experiments (code_branch, id);
ALTER TABLE sessions ADD COLUMN kind VARCHAR(32) NOT NULL DEFAULT 'sweep';
ALTER TABLE sessions ADD COLUMN outcome MEDIUMTEXT NULL;
ALTER TABLE sessions ADD COLUMN ended_ms BIGINT NULL;
CREATE INDEX sessions_by_kind ON sessions (kind, ended_ms, id);
