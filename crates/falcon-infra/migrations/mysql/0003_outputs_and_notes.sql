-- Version 3: nothing a job wrote, and nothing a reader skipped, is lost silently (see the SQLite migration
-- of the same number for what the tables hold).
-- artifacts.uri was VARCHAR(768) (the longest an InnoDB utf8mb4 index takes), shorter than an object key may
-- be: long paths failed on MySQL only. The URI becomes TEXT, unique through its SHA-256.
ALTER TABLE artifacts DROP INDEX uri;
ALTER TABLE artifacts MODIFY uri TEXT NOT NULL;
ALTER TABLE artifacts ADD COLUMN uri_sha256 BINARY(32) AS (UNHEX(SHA2(uri, 256))) STORED;
CREATE UNIQUE INDEX artifacts_by_uri ON artifacts (uri_sha256);

CREATE TABLE job_outputs (
    id          BIGINT PRIMARY KEY AUTO_INCREMENT,
    job_id      BIGINT NOT NULL REFERENCES jobs (id),
    path        MEDIUMTEXT   NOT NULL,
    path_sha256 CHAR(64)     NOT NULL,
    object_key  VARCHAR(1024),
    size_bytes  BIGINT,
    sha256      VARCHAR(255),
    skip_reason MEDIUMTEXT,
    live        BOOLEAN      NOT NULL DEFAULT FALSE,
    updated_ms  BIGINT NOT NULL,
    UNIQUE KEY job_outputs_by_path (job_id, path_sha256)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE experiment_notes (
    id            BIGINT PRIMARY KEY AUTO_INCREMENT,
    experiment_id BIGINT NOT NULL REFERENCES experiments (id),
    source        VARCHAR(255) NOT NULL,
    file          MEDIUMTEXT   NOT NULL,
    line          BIGINT,
    reason        MEDIUMTEXT   NOT NULL,
    created_ms    BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX experiment_notes_by_experiment ON experiment_notes (experiment_id, source, id);
