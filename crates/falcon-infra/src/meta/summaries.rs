//! Summaries kept so lists and comparisons never re-read artifacts: per-metric statistics (with the run's
//! within-run spread), the between-run noise of each config hash, and per-tool analysis results.

use super::rows::RowExt;
use super::{check_hex_prefix, check_large, check_short, now, query_err, with_pool, BeginWrite, MetaStore};
use crate::error::Result;
use falcon_core::ids::ExperimentId;

/// Statistics of one numeric metric of one experiment (warm-up excluded by the caller).
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSummary {
    /// Metric name (`step_time_s`).
    pub metric: String,
    /// Samples.
    pub count: i64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// Last value.
    pub last: f64,
    /// Robust within-run spread of the post-warm-up values: IQR / 1.349 (the standard deviation, were they
    /// normal). `None` for summaries written before schema version 4.
    pub spread: Option<f64>,
}

/// The between-run noise of one config (config hash) for one metric, from the medians of its completed runs
/// (each experiment is one run), kept so comparisons never re-read metrics artifacts.
#[derive(Debug, Clone, PartialEq)]
pub struct RunNoise {
    /// The config hash the runs share.
    pub config_hash: String,
    /// Metric name (`step_time_s`).
    pub metric: String,
    /// How many completed runs had a finite median > 0.
    pub runs: i64,
    /// Mean of ln(median) over those runs.
    pub mean_log: f64,
    /// Sum of squared deviations of ln(median) from `mean_log` (Welford's M2), so the between-run CV is
    /// `sqrt(m2_log / (runs - 1))` (for `runs >= 2`).
    pub m2_log: f64,
}

/// The summary row of one analysis tool's result for an experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalysisSummary {
    /// Tool (`overview`, `trace`, `accuracy`, …).
    pub tool: String,
    /// Model FLOPs utilization, 0..1.
    pub mfu: Option<f64>,
    /// Mean step time in milliseconds.
    pub step_time_ms: Option<f64>,
    /// Device duty cycle, 0..1.
    pub duty_cycle: Option<f64>,
    /// Peak device memory.
    pub peak_memory_bytes: Option<i64>,
    /// What bounds performance: the serde name of `falcon_core::bound::BoundBy` (`compute`, `memory`, `host`,
    /// `partly_host`); `None` when unknown.
    pub bound_by: Option<String>,
    /// Further small fields of the tool (at most 1 MiB as JSON).
    pub details: serde_json::Value,
}

impl MetaStore {
    /// Replaces the experiment's metric summaries with `summaries`, atomically.
    pub async fn put_metric_summaries(&self, experiment: ExperimentId, summaries: &[MetricSummary]) -> Result<()> {
        for s in summaries {
            check_short("metric_summaries", "metric", &s.metric)?;
        }
        let at = now();
        with_pool!(self, pool => {
            let mut tx = pool.begin_write().await.map_err(query_err("begin transaction"))?;
            sqlx::query("DELETE FROM metric_summaries WHERE experiment_id = ?")
                .bind(experiment.0)
                .execute(&mut *tx)
                .await
                .map_err(query_err("replace metric summaries"))?;
            for s in summaries {
                sqlx::query(
                    "INSERT INTO metric_summaries (experiment_id, metric, count, mean, median, p90, min_value, max_value, \
                     last_value, spread, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                )
                .bind(experiment.0)
                .bind(&s.metric)
                .bind(s.count)
                .bind(s.mean)
                .bind(s.median)
                .bind(s.p90)
                .bind(s.min)
                .bind(s.max)
                .bind(s.last)
                .bind(s.spread)
                .bind(at.0)
                .execute(&mut *tx)
                .await
                .map_err(query_err("insert metric summary"))?;
            }
            tx.commit().await.map_err(query_err("commit metric summaries"))?;
        });
        Ok(())
    }

    /// The experiment's metric summaries, by metric name.
    pub async fn metric_summaries(&self, experiment: ExperimentId) -> Result<Vec<MetricSummary>> {
        with_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT metric, count, mean, median, p90, min_value, max_value, last_value, spread FROM metric_summaries \
                 WHERE experiment_id = ? ORDER BY metric",
            )
            .bind(experiment.0)
            .fetch_all(pool)
            .await
            .map_err(query_err("read metric summaries"))?;
            rows.iter().map(summary_of).collect()
        })
    }

    /// The metric summaries of several experiments at once, for lists: one query per 500 ids (a page of a
    /// list is one query). Every id asked for is a key of the map, with
    /// its summaries by metric name (none for an experiment without summary rows, or one that does not exist);
    /// duplicate ids are read once.
    pub async fn metric_summaries_of(
        &self,
        experiments: &[ExperimentId],
    ) -> Result<std::collections::BTreeMap<ExperimentId, Vec<MetricSummary>>> {
        let mut ids: Vec<ExperimentId> = experiments.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let mut out: std::collections::BTreeMap<ExperimentId, Vec<MetricSummary>> =
            ids.iter().map(|id| (*id, Vec::new())).collect();
        for chunk in ids.chunks(SUMMARIES_PER_QUERY) {
            let sql = format!(
                "SELECT experiment_id, metric, count, mean, median, p90, min_value, max_value, last_value, spread \
                 FROM metric_summaries WHERE experiment_id IN ({}) ORDER BY experiment_id, metric",
                vec!["?"; chunk.len()].join(", ")
            );
            with_pool!(self, pool => {
                let mut query = sqlx::query(&sql);
                for id in chunk {
                    query = query.bind(id.0);
                }
                let rows = query.fetch_all(pool).await.map_err(query_err("read metric summaries of experiments"))?;
                for r in &rows {
                    let id = ExperimentId(r.int(SUMMARIES, "experiment_id")?);
                    out.entry(id).or_default().push(summary_of(r)?);
                }
            });
        }
        Ok(out)
    }

    /// Recomputes the run noise of `config_hash` from the metric summaries of its `COMPLETED` experiments: for
    /// each metric, the count, mean and M2 (Welford) of ln(median) over the runs whose median is finite and
    /// positive, and replaces the hash's `run_noise` rows with them in one write transaction (a metric without
    /// such a run gets no row). Returns the rows written, by metric. Idempotent.
    pub async fn refresh_run_noise(&self, config_hash: &str) -> Result<Vec<RunNoise>> {
        const T: &str = "metric_summaries";
        check_short("run_noise", "config_hash", config_hash)?;
        let at = now();
        with_pool!(self, pool => {
            let mut tx = pool.begin_write().await.map_err(query_err("begin transaction"))?;
            let rows = sqlx::query(
                "SELECT s.metric AS metric, s.median AS median FROM metric_summaries s \
                 JOIN experiments e ON e.id = s.experiment_id \
                 WHERE e.config_hash = ? AND e.status = ? ORDER BY s.metric, e.id",
            )
            .bind(config_hash)
            .bind(falcon_core::status::ExperimentStatus::Completed.as_str())
            .fetch_all(&mut *tx)
            .await
            .map_err(query_err("read run medians"))?;
            let mut medians = Vec::with_capacity(rows.len());
            for r in &rows {
                medians.push((r.text(T, "metric")?, r.real(T, "median")?));
            }
            let noise = run_noise_of(config_hash, &medians);
            sqlx::query("DELETE FROM run_noise WHERE config_hash = ?")
                .bind(config_hash)
                .execute(&mut *tx)
                .await
                .map_err(query_err("replace run noise"))?;
            for n in &noise {
                sqlx::query(
                    "INSERT INTO run_noise (config_hash, metric, runs, mean_log, m2_log, updated_ms) \
                     VALUES (?, ?, ?, ?, ?, ?)",
                )
                .bind(&n.config_hash)
                .bind(&n.metric)
                .bind(n.runs)
                .bind(n.mean_log)
                .bind(n.m2_log)
                .bind(at.0)
                .execute(&mut *tx)
                .await
                .map_err(query_err("insert run noise"))?;
            }
            tx.commit().await.map_err(query_err("commit run noise"))?;
            Ok(noise)
        })
    }

    /// The run noise of `config_hash` for `metric`, as [`MetaStore::refresh_run_noise`] last wrote it.
    pub async fn run_noise(&self, config_hash: &str, metric: &str) -> Result<Option<RunNoise>> {
        const T: &str = "run_noise";
        with_pool!(self, pool => {
            let row = sqlx::query(
                "SELECT config_hash, metric, runs, mean_log, m2_log FROM run_noise WHERE config_hash = ? AND metric = ?",
            )
            .bind(config_hash)
            .bind(metric)
            .fetch_optional(pool)
            .await
            .map_err(query_err("read run noise"))?;
            row.map(|r| {
                Ok(RunNoise {
                    config_hash: r.text(T, "config_hash")?,
                    metric: r.text(T, "metric")?,
                    runs: r.int(T, "runs")?,
                    mean_log: r.real(T, "mean_log")?,
                    m2_log: r.real(T, "m2_log")?,
                })
            })
            .transpose()
        })
    }

    /// The distinct config hashes of experiments that start with `prefix` (lowercase hex; an empty or non-hex
    /// prefix is [`crate::InfraError::InvalidValue`] naming `config_hash`), sorted, at most `limit`.
    pub async fn config_hashes_with_prefix(&self, prefix: &str, limit: u32) -> Result<Vec<String>> {
        const T: &str = "experiments";
        check_hex_prefix(T, "config_hash", prefix)?;
        // LIKE finds the prefix (hex only: no wildcard of its own); SUBSTR makes it exact on SQLite, whose LIKE
        // ignores ASCII case.
        let sql = format!(
            "SELECT DISTINCT config_hash FROM experiments \
             WHERE config_hash LIKE ? AND SUBSTR(config_hash, 1, {}) = ? ORDER BY config_hash LIMIT ?",
            prefix.len()
        );
        with_pool!(self, pool => {
            let rows = sqlx::query(&sql)
                .bind(format!("{prefix}%"))
                .bind(prefix)
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await
                .map_err(query_err("find config hashes by prefix"))?;
            rows.iter().map(|r| r.text(T, "config_hash")).collect()
        })
    }

    /// Stores (or replaces) the summary of one tool's analysis of the experiment.
    pub async fn put_analysis_summary(&self, experiment: ExperimentId, summary: &AnalysisSummary) -> Result<()> {
        const T: &str = "analysis_summaries";
        check_short(T, "tool", &summary.tool)?;
        if let Some(b) = &summary.bound_by {
            check_short(T, "bound_by", b)?;
        }
        let details = summary.details.to_string();
        check_large(T, "details", &details)?;
        let at = now();
        with_pool!(self, pool => {
            let mut tx = pool.begin_write().await.map_err(query_err("begin transaction"))?;
            sqlx::query("DELETE FROM analysis_summaries WHERE experiment_id = ? AND tool = ?")
                .bind(experiment.0)
                .bind(&summary.tool)
                .execute(&mut *tx)
                .await
                .map_err(query_err("replace analysis summary"))?;
            sqlx::query(
                "INSERT INTO analysis_summaries (experiment_id, tool, mfu, step_time_ms, duty_cycle, peak_memory_bytes, \
                 bound_by, details, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(experiment.0)
            .bind(&summary.tool)
            .bind(summary.mfu)
            .bind(summary.step_time_ms)
            .bind(summary.duty_cycle)
            .bind(summary.peak_memory_bytes)
            .bind(&summary.bound_by)
            .bind(&details)
            .bind(at.0)
            .execute(&mut *tx)
            .await
            .map_err(query_err("insert analysis summary"))?;
            tx.commit().await.map_err(query_err("commit analysis summary"))?;
        });
        Ok(())
    }

    /// The experiment's analysis summaries, by tool.
    pub async fn analysis_summaries(&self, experiment: ExperimentId) -> Result<Vec<AnalysisSummary>> {
        const T: &str = "analysis_summaries";
        with_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT tool, mfu, step_time_ms, duty_cycle, peak_memory_bytes, bound_by, details \
                 FROM analysis_summaries WHERE experiment_id = ? ORDER BY tool",
            )
            .bind(experiment.0)
            .fetch_all(pool)
            .await
            .map_err(query_err("read analysis summaries"))?;
            rows.iter()
                .map(|r| {
                    Ok(AnalysisSummary {
                        tool: r.text(T, "tool")?,
                        mfu: r.opt_real(T, "mfu")?,
                        step_time_ms: r.opt_real(T, "step_time_ms")?,
                        duty_cycle: r.opt_real(T, "duty_cycle")?,
                        peak_memory_bytes: r.opt_int(T, "peak_memory_bytes")?,
                        bound_by: r.opt_text(T, "bound_by")?,
                        details: r.json(T, "details")?,
                    })
                })
                .collect()
        })
    }

    /// Completed experiments that have at least one artifact of `artifact_kind` whose key ends with one of
    /// `key_suffixes` (any key when empty) and no summary row for `tool` yet, oldest first: the work list
    /// of the analysis step of the worker loop.
    pub async fn experiments_awaiting_analysis(
        &self,
        tool: &str,
        artifact_kind: falcon_core::artifact::ArtifactKind,
        key_suffixes: &[&str],
        limit: u32,
    ) -> Result<Vec<ExperimentId>> {
        self.experiments_awaiting_analysis_in(None, None, tool, artifact_kind, key_suffixes, limit).await
    }

    /// [`MetaStore::experiments_awaiting_analysis`], restricted to experiments of one scenario and to the
    /// experiments `among` (at most 1000 ids) when given.
    pub async fn experiments_awaiting_analysis_in(
        &self,
        scenario: Option<falcon_core::status::Scenario>,
        among: Option<&[ExperimentId]>,
        tool: &str,
        artifact_kind: falcon_core::artifact::ArtifactKind,
        key_suffixes: &[&str],
        limit: u32,
    ) -> Result<Vec<ExperimentId>> {
        const T: &str = "experiments";
        let scenario_filter = if scenario.is_some() { " AND e.scenario = ?" } else { "" };
        let among = among.map(|ids| &ids[..ids.len().min(1000)]);
        if among.is_some_and(<[ExperimentId]>::is_empty) {
            return Ok(Vec::new());
        }
        let among_filter = match among {
            Some(ids) => format!(" AND e.id IN ({})", vec!["?"; ids.len()].join(", ")),
            None => String::new(),
        };
        let suffix_filter = if key_suffixes.is_empty() {
            String::new()
        } else {
            format!(" AND ({})", vec!["a.object_key LIKE ?"; key_suffixes.len()].join(" OR "))
        };
        let sql = format!(
            "SELECT e.id AS id FROM experiments e \
             WHERE e.status = ?{scenario_filter}{among_filter} \
               AND EXISTS (SELECT 1 FROM artifacts a WHERE a.experiment_id = e.id AND a.kind = ?{suffix_filter}) \
               AND NOT EXISTS (SELECT 1 FROM analysis_summaries s WHERE s.experiment_id = e.id AND s.tool = ?) \
             ORDER BY e.id LIMIT ?"
        );
        with_pool!(self, pool => {
            let mut query = sqlx::query(&sql).bind(falcon_core::status::ExperimentStatus::Completed.as_str());
            if let Some(scenario) = scenario {
                query = query.bind(scenario.as_str());
            }
            for id in among.unwrap_or_default() {
                query = query.bind(id.0);
            }
            let mut query = query.bind(artifact_kind.as_str());
            for suffix in key_suffixes {
                // LIKE patterns: a suffix's own `%`/`_` would act as wildcards (the callers' suffixes have none).
                query = query.bind(format!("%{suffix}"));
            }
            let rows = query
                .bind(tool)
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await
                .map_err(query_err("find experiments awaiting analysis"))?;
            rows.iter().map(|r| Ok(ExperimentId(r.int(T, "id")?))).collect()
        })
    }
}

/// The table of metric summaries.
const SUMMARIES: &str = "metric_summaries";

/// Most experiment ids [`MetaStore::metric_summaries_of`] puts in one query (well under SQLite's and MySQL's
/// limits on bound parameters).
const SUMMARIES_PER_QUERY: usize = 500;

/// A `metric_summaries` row (its `metric` … `spread` columns) as a summary.
fn summary_of(r: &impl RowExt) -> Result<MetricSummary> {
    const T: &str = SUMMARIES;
    Ok(MetricSummary {
        metric: r.text(T, "metric")?,
        count: r.int(T, "count")?,
        mean: r.real(T, "mean")?,
        median: r.real(T, "median")?,
        p90: r.real(T, "p90")?,
        min: r.real(T, "min_value")?,
        max: r.real(T, "max_value")?,
        last: r.real(T, "last_value")?,
        spread: r.opt_real(T, "spread")?,
    })
}

/// Count, mean and M2 of ln(median) per metric by Welford's algorithm, over the medians that are finite and > 0;
/// `medians` come grouped by metric, and the rows come out in that order.
fn run_noise_of(config_hash: &str, medians: &[(String, f64)]) -> Vec<RunNoise> {
    let mut out: Vec<RunNoise> = Vec::new();
    for (metric, median) in medians {
        if !(median.is_finite() && *median > 0.0) {
            continue;
        }
        let x = median.ln();
        match out.last_mut() {
            Some(n) if n.metric == *metric => {
                n.runs += 1;
                let delta = x - n.mean_log;
                n.mean_log += delta / n.runs as f64;
                n.m2_log += delta * (x - n.mean_log);
            }
            _ => out.push(RunNoise {
                config_hash: config_hash.to_string(),
                metric: metric.clone(),
                runs: 1,
                mean_log: x,
                m2_log: 0.0,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::run_noise_of;

    #[test]
    fn welford_matches_two_passes_and_skips_unusable_medians() {
        let medians: Vec<(String, f64)> = [
            ("loss", -1.0),
            ("step_time_s", 1.0),
            ("step_time_s", f64::NAN),
            ("step_time_s", 1.1),
            ("step_time_s", 0.0),
            ("step_time_s", 0.9),
            ("step_time_s", f64::INFINITY),
            ("step_time_s", 1.05),
        ]
        .iter()
        .map(|(m, v)| (m.to_string(), *v))
        .collect();
        let rows = run_noise_of("ab", &medians);
        assert_eq!(rows.len(), 1, "{rows:?}");
        let logs: Vec<f64> = [1.0f64, 1.1, 0.9, 1.05].iter().map(|v| v.ln()).collect();
        let mean = logs.iter().sum::<f64>() / 4.0;
        let m2: f64 = logs.iter().map(|l| (l - mean).powi(2)).sum();
        assert_eq!((rows[0].metric.as_str(), rows[0].runs), ("step_time_s", 4));
        assert!((rows[0].mean_log - mean).abs() < 1e-12 && (rows[0].m2_log - m2).abs() < 1e-12, "{rows:?}");
    }
}
