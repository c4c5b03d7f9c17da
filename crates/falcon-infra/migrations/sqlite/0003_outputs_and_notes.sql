-- Version 3: nothing a job wrote, and nothing a reader skipped, is lost silently.
-- job_outputs: one row per file a job wrote into its output folder, written by the Job module as it collects:
--   the object it stored (object_key, size_bytes, sha256), or why it could not (skip_reason). EXP indexes an
--   experiment's artifacts from these rows (never re-reading the objects) and shows the skipped ones.
--   path is the file's name relative to the folder (lossy UTF-8 for display); path_sha256 keys it on both
--   backends (MySQL cannot index a long text). live: a snapshot replaced while the job runs (logs, metrics).
-- experiment_notes: what a reader skipped in an experiment's files (a malformed metrics line, NaN values),
--   replaced per source each time the files are read again.
CREATE TABLE job_outputs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id      INTEGER NOT NULL REFERENCES jobs (id),
    path        TEXT    NOT NULL,
    path_sha256 TEXT    NOT NULL,
    object_key  TEXT,
    size_bytes  INTEGER,
    sha256      TEXT,
    skip_reason TEXT,
    live        INTEGER NOT NULL DEFAULT 0,
    updated_ms  INTEGER NOT NULL,
    UNIQUE (job_id, path_sha256)
);

CREATE TABLE experiment_notes (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    experiment_id INTEGER NOT NULL REFERENCES experiments (id),
    source        TEXT    NOT NULL,
    file          TEXT    NOT NULL,
    line          INTEGER,
    reason        TEXT    NOT NULL,
    created_ms    INTEGER NOT NULL
);
CREATE INDEX experiment_notes_by_experiment ON experiment_notes (experiment_id, source, id);
