-- Version 4: experiments compare at run level (one experiment = one run), and lists and goal comparisons never
-- re-read metrics artifacts, so the store keeps what a run-level comparison needs.
-- metric_summaries.spread: the robust within-run spread of the metric's post-warm-up values, IQR / 1.349 (the
--   standard deviation of a normal sample); NULL for rows written before version 4.
-- run_noise: the between-run noise of one config (config_hash, as experiments.config_hash) for one metric,
--   from the medians of its COMPLETED runs: runs (how many had a finite median > 0), mean_log (the mean of
--   ln(median)) and m2_log (the sum of squared deviations of ln(median) from that mean, Welford's M2), so the
--   between-run CV is sqrt(m2_log / (runs - 1)). Recomputed per config hash from metric_summaries.
ALTER TABLE metric_summaries ADD COLUMN spread REAL;

CREATE TABLE run_noise (
    config_hash TEXT    NOT NULL,
    metric      TEXT    NOT NULL,
    runs        INTEGER NOT NULL,
    mean_log    REAL    NOT NULL,
    m2_log      REAL    NOT NULL,
    updated_ms  INTEGER NOT NULL,
    PRIMARY KEY (config_hash, metric)
);
