//! Summaries kept so lists and comparisons never re-read artifacts: per-metric statistics and per-tool
//! analysis results.

use super::rows::RowExt;
use super::{check_large, check_short, now, query_err, with_pool, BeginWrite, MetaStore};
use crate::error::Result;
use falcon_core::ids::ExperimentId;
use serde::{Deserialize, Serialize};

/// Statistics of one numeric metric of one experiment (warm-up excluded by the caller).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

/// The summary row of one analysis tool's result for an experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// What bounds performance (`compute`, `hbm`, …).
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
                     last_value, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        const T: &str = "metric_summaries";
        with_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT metric, count, mean, median, p90, min_value, max_value, last_value FROM metric_summaries \
                 WHERE experiment_id = ? ORDER BY metric",
            )
            .bind(experiment.0)
            .fetch_all(pool)
            .await
            .map_err(query_err("read metric summaries"))?;
            rows.iter()
                .map(|r| {
                    Ok(MetricSummary {
                        metric: r.text(T, "metric")?,
                        count: r.int(T, "count")?,
                        mean: r.real(T, "mean")?,
                        median: r.real(T, "median")?,
                        p90: r.real(T, "p90")?,
                        min: r.real(T, "min_value")?,
                        max: r.real(T, "max_value")?,
                        last: r.real(T, "last_value")?,
                    })
                })
                .collect()
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
