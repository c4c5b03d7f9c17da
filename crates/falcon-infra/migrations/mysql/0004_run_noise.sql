-- Version 4: experiments compare at run level, and lists and goal comparisons never re-read metrics artifacts
-- (see the SQLite migration of the same number for what the column and the table hold).
-- metric_summaries.spread: robust within-run spread of the post-warm-up values, IQR / 1.349; NULL for rows
--   written before version 4.
-- run_noise: between-run noise of one config hash for one metric (count, mean and Welford's M2 of
--   ln(median) over its COMPLETED runs).
ALTER TABLE metric_summaries ADD COLUMN spread DOUBLE NULL;

CREATE TABLE run_noise (
    config_hash VARCHAR(255) NOT NULL,
    metric      VARCHAR(255) NOT NULL,
    runs        BIGINT NOT NULL,
    mean_log    DOUBLE NOT NULL,
    m2_log      DOUBLE NOT NULL,
    updated_ms  BIGINT NOT NULL,
    PRIMARY KEY (config_hash, metric)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
