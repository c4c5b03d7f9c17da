-- Falcon metadata schema, version 1 (SQLite). Times are milliseconds since the Unix epoch.
-- Keep in step with ../mysql/0001_initial_schema.sql: the same tables, columns and indexes.

CREATE TABLE goals (
    id                     INTEGER PRIMARY KEY AUTOINCREMENT,
    title                  TEXT    NOT NULL,
    workload               TEXT,
    hardware               TEXT,
    metric                 TEXT    NOT NULL,
    direction              TEXT    NOT NULL,
    target                 REAL,
    baseline_experiment_id INTEGER,
    priority               INTEGER NOT NULL DEFAULT 0,
    status                 TEXT    NOT NULL,
    owner                  TEXT,
    lease_expires_ms       INTEGER,
    created_ms             INTEGER NOT NULL,
    updated_ms             INTEGER NOT NULL
);
CREATE INDEX goals_by_status_priority ON goals (status, priority, id);

CREATE TABLE goal_transitions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    goal_id     INTEGER NOT NULL REFERENCES goals (id),
    from_status TEXT,
    to_status   TEXT    NOT NULL,
    at_ms       INTEGER NOT NULL,
    reason      TEXT    NOT NULL,
    actor       TEXT
);
CREATE INDEX goal_transitions_by_goal ON goal_transitions (goal_id, id);

CREATE TABLE sessions (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    goal_id    INTEGER REFERENCES goals (id),
    name       TEXT    NOT NULL,
    spec       TEXT    NOT NULL,
    created_ms INTEGER NOT NULL
);
CREATE INDEX sessions_by_goal ON sessions (goal_id, id);

CREATE TABLE jobs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    name             TEXT    NOT NULL UNIQUE,
    spec             TEXT    NOT NULL,
    status           TEXT    NOT NULL,
    status_reason    TEXT,
    exit_code        INTEGER,
    attempt          INTEGER NOT NULL DEFAULT 1,
    priority         INTEGER NOT NULL DEFAULT 0,
    pool             TEXT,
    backend_ref      TEXT,
    labels           TEXT    NOT NULL,
    lease_owner      TEXT,
    lease_expires_ms INTEGER,
    created_ms       INTEGER NOT NULL,
    updated_ms       INTEGER NOT NULL
);
CREATE INDEX jobs_by_status_priority ON jobs (status, priority, id);
CREATE INDEX jobs_by_lease ON jobs (lease_expires_ms);

CREATE TABLE job_transitions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id      INTEGER NOT NULL REFERENCES jobs (id),
    from_status TEXT,
    to_status   TEXT    NOT NULL,
    at_ms       INTEGER NOT NULL,
    reason      TEXT    NOT NULL,
    exit_code   INTEGER,
    attempt     INTEGER NOT NULL
);
CREATE INDEX job_transitions_by_job ON job_transitions (job_id, id);

CREATE TABLE experiments (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT    NOT NULL,
    scenario    TEXT    NOT NULL,
    status      TEXT    NOT NULL,
    goal_id     INTEGER REFERENCES goals (id),
    session_id  INTEGER REFERENCES sessions (id),
    baseline_id INTEGER REFERENCES experiments (id),
    job_id      INTEGER REFERENCES jobs (id),
    attempt     INTEGER NOT NULL DEFAULT 1,
    spec        TEXT    NOT NULL,
    config_hash TEXT    NOT NULL,
    labels      TEXT    NOT NULL,
    created_ms  INTEGER NOT NULL,
    updated_ms  INTEGER NOT NULL
);
CREATE INDEX experiments_by_status ON experiments (status, id);
CREATE INDEX experiments_by_goal_status ON experiments (goal_id, status, id);
CREATE INDEX experiments_by_session ON experiments (session_id, id);
CREATE INDEX experiments_by_config_hash ON experiments (config_hash, id);
CREATE INDEX experiments_by_name ON experiments (name, id);
CREATE INDEX experiments_by_created ON experiments (created_ms, id);

CREATE TABLE experiment_labels (
    experiment_id INTEGER NOT NULL REFERENCES experiments (id),
    label_key     TEXT    NOT NULL,
    label_value   TEXT    NOT NULL,
    PRIMARY KEY (experiment_id, label_key)
);
CREATE INDEX experiment_labels_by_pair ON experiment_labels (label_key, label_value, experiment_id);

CREATE TABLE experiment_transitions (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    experiment_id INTEGER NOT NULL REFERENCES experiments (id),
    from_status   TEXT,
    to_status     TEXT    NOT NULL,
    at_ms         INTEGER NOT NULL,
    reason        TEXT    NOT NULL,
    attempt       INTEGER NOT NULL
);
CREATE INDEX experiment_transitions_by_experiment ON experiment_transitions (experiment_id, id);

CREATE TABLE artifacts (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    experiment_id INTEGER REFERENCES experiments (id),
    job_id        INTEGER REFERENCES jobs (id),
    kind          TEXT    NOT NULL,
    object_key    TEXT    NOT NULL,
    uri           TEXT    NOT NULL UNIQUE,
    size_bytes    INTEGER NOT NULL,
    sha256        TEXT    NOT NULL,
    content_type  TEXT    NOT NULL,
    created_ms    INTEGER NOT NULL
);
CREATE INDEX artifacts_by_experiment ON artifacts (experiment_id, kind, id);
CREATE INDEX artifacts_by_job ON artifacts (job_id, id);

CREATE TABLE metric_summaries (
    experiment_id INTEGER NOT NULL REFERENCES experiments (id),
    metric        TEXT    NOT NULL,
    count         INTEGER NOT NULL,
    mean          REAL    NOT NULL,
    median        REAL    NOT NULL,
    p90           REAL    NOT NULL,
    min_value     REAL    NOT NULL,
    max_value     REAL    NOT NULL,
    last_value    REAL    NOT NULL,
    updated_ms    INTEGER NOT NULL,
    PRIMARY KEY (experiment_id, metric)
);

CREATE TABLE analysis_summaries (
    experiment_id     INTEGER NOT NULL REFERENCES experiments (id),
    tool              TEXT    NOT NULL,
    mfu               REAL,
    step_time_ms      REAL,
    duty_cycle        REAL,
    peak_memory_bytes INTEGER,
    bound_by          TEXT,
    details           TEXT    NOT NULL,
    updated_ms        INTEGER NOT NULL,
    PRIMARY KEY (experiment_id, tool)
);
