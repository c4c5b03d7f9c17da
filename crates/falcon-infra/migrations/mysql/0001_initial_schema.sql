-- Falcon metadata schema, version 1 (MySQL / MariaDB). Times are milliseconds since the Unix epoch.
-- Keep in step with ../sqlite/0001_initial_schema.sql: the same tables, columns and indexes.

CREATE TABLE goals (
    id                     BIGINT PRIMARY KEY AUTO_INCREMENT,
    title                  VARCHAR(1024)    NOT NULL,
    workload               VARCHAR(255),
    hardware               VARCHAR(255),
    metric                 VARCHAR(255)    NOT NULL,
    direction              VARCHAR(255)    NOT NULL,
    target                 DOUBLE,
    baseline_experiment_id BIGINT,
    priority               BIGINT NOT NULL DEFAULT 0,
    status                 VARCHAR(255)    NOT NULL,
    owner                  VARCHAR(255),
    lease_expires_ms       BIGINT,
    created_ms             BIGINT NOT NULL,
    updated_ms             BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX goals_by_status_priority ON goals (status, priority, id);

CREATE TABLE goal_transitions (
    id          BIGINT PRIMARY KEY AUTO_INCREMENT,
    goal_id     BIGINT NOT NULL REFERENCES goals (id),
    from_status VARCHAR(255),
    to_status   VARCHAR(255)    NOT NULL,
    at_ms       BIGINT NOT NULL,
    reason      MEDIUMTEXT    NOT NULL,
    actor       VARCHAR(255)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX goal_transitions_by_goal ON goal_transitions (goal_id, id);

CREATE TABLE sessions (
    id         BIGINT PRIMARY KEY AUTO_INCREMENT,
    goal_id    BIGINT REFERENCES goals (id),
    name       VARCHAR(255)    NOT NULL,
    spec       MEDIUMTEXT    NOT NULL,
    created_ms BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX sessions_by_goal ON sessions (goal_id, id);

CREATE TABLE jobs (
    id               BIGINT PRIMARY KEY AUTO_INCREMENT,
    name             VARCHAR(255)    NOT NULL UNIQUE,
    spec             MEDIUMTEXT    NOT NULL,
    status           VARCHAR(255)    NOT NULL,
    status_reason    MEDIUMTEXT,
    exit_code        BIGINT,
    attempt          BIGINT NOT NULL DEFAULT 1,
    priority         BIGINT NOT NULL DEFAULT 0,
    pool             VARCHAR(255),
    backend_ref      VARCHAR(255),
    labels           MEDIUMTEXT    NOT NULL,
    lease_owner      VARCHAR(255),
    lease_expires_ms BIGINT,
    created_ms       BIGINT NOT NULL,
    updated_ms       BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX jobs_by_status_priority ON jobs (status, priority, id);
CREATE INDEX jobs_by_lease ON jobs (lease_expires_ms);

CREATE TABLE job_transitions (
    id          BIGINT PRIMARY KEY AUTO_INCREMENT,
    job_id      BIGINT NOT NULL REFERENCES jobs (id),
    from_status VARCHAR(255),
    to_status   VARCHAR(255)    NOT NULL,
    at_ms       BIGINT NOT NULL,
    reason      MEDIUMTEXT    NOT NULL,
    exit_code   BIGINT,
    attempt     BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX job_transitions_by_job ON job_transitions (job_id, id);

CREATE TABLE experiments (
    id          BIGINT PRIMARY KEY AUTO_INCREMENT,
    name        VARCHAR(255)    NOT NULL,
    scenario    VARCHAR(255)    NOT NULL,
    status      VARCHAR(255)    NOT NULL,
    goal_id     BIGINT REFERENCES goals (id),
    session_id  BIGINT REFERENCES sessions (id),
    baseline_id BIGINT REFERENCES experiments (id),
    job_id      BIGINT REFERENCES jobs (id),
    attempt     BIGINT NOT NULL DEFAULT 1,
    spec        MEDIUMTEXT    NOT NULL,
    config_hash VARCHAR(255)    NOT NULL,
    labels      MEDIUMTEXT    NOT NULL,
    created_ms  BIGINT NOT NULL,
    updated_ms  BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX experiments_by_status ON experiments (status, id);
CREATE INDEX experiments_by_goal_status ON experiments (goal_id, status, id);
CREATE INDEX experiments_by_session ON experiments (session_id, id);
CREATE INDEX experiments_by_config_hash ON experiments (config_hash, id);
CREATE INDEX experiments_by_name ON experiments (name, id);
CREATE INDEX experiments_by_created ON experiments (created_ms, id);

CREATE TABLE experiment_labels (
    experiment_id BIGINT NOT NULL REFERENCES experiments (id),
    label_key     VARCHAR(255)    NOT NULL,
    label_value   VARCHAR(255)    NOT NULL,
    PRIMARY KEY (experiment_id, label_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX experiment_labels_by_pair ON experiment_labels (label_key, label_value, experiment_id);

CREATE TABLE experiment_transitions (
    id            BIGINT PRIMARY KEY AUTO_INCREMENT,
    experiment_id BIGINT NOT NULL REFERENCES experiments (id),
    from_status   VARCHAR(255),
    to_status     VARCHAR(255)    NOT NULL,
    at_ms         BIGINT NOT NULL,
    reason        MEDIUMTEXT    NOT NULL,
    attempt       BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX experiment_transitions_by_experiment ON experiment_transitions (experiment_id, id);

CREATE TABLE artifacts (
    id            BIGINT PRIMARY KEY AUTO_INCREMENT,
    experiment_id BIGINT REFERENCES experiments (id),
    job_id        BIGINT REFERENCES jobs (id),
    kind          VARCHAR(255)    NOT NULL,
    object_key    VARCHAR(1024)    NOT NULL,
    uri           VARCHAR(768)     NOT NULL UNIQUE,
    size_bytes    BIGINT NOT NULL,
    sha256        VARCHAR(255)    NOT NULL,
    content_type  VARCHAR(255)    NOT NULL,
    created_ms    BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX artifacts_by_experiment ON artifacts (experiment_id, kind, id);
CREATE INDEX artifacts_by_job ON artifacts (job_id, id);

CREATE TABLE metric_summaries (
    experiment_id BIGINT NOT NULL REFERENCES experiments (id),
    metric        VARCHAR(255)    NOT NULL,
    count         BIGINT NOT NULL,
    mean          DOUBLE    NOT NULL,
    median        DOUBLE    NOT NULL,
    p90           DOUBLE    NOT NULL,
    min_value     DOUBLE    NOT NULL,
    max_value     DOUBLE    NOT NULL,
    last_value    DOUBLE    NOT NULL,
    updated_ms    BIGINT NOT NULL,
    PRIMARY KEY (experiment_id, metric)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE analysis_summaries (
    experiment_id     BIGINT NOT NULL REFERENCES experiments (id),
    tool              VARCHAR(255)    NOT NULL,
    mfu               DOUBLE,
    step_time_ms      DOUBLE,
    duty_cycle        DOUBLE,
    peak_memory_bytes BIGINT,
    bound_by          VARCHAR(255),
    details           MEDIUMTEXT    NOT NULL,
    updated_ms        BIGINT NOT NULL,
    PRIMARY KEY (experiment_id, tool)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
