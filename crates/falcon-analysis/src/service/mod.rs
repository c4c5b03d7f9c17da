//! The analysis service the interface calls: resolves what to analyse (a local path, a `gs://`/`s3://`
//! URI, an experiment id), fetches remote profiles into a local cache, runs the profile tools, and keeps
//! the summary row of an experiment's analysis in the metadata store.
//!
//! Remote profiles are copied (streamed, hashed) into `<data_dir>/cache/profiles/…` before decoding, so
//! a profile is read from local disk (memory-mapped) and a second analysis of the same experiment does
//! not download it again: a cached file is reused when its size and SHA-256 match the artifact index.

mod memory;
mod peaks;
mod pending;
mod remote;
mod shards;

use std::path::{Path, PathBuf};

pub use memory::{memory_row, MAX_METRIC_SERIES};
pub use pending::PendingOutcome;

use falcon_core::artifact::ArtifactKind;
use falcon_core::config::Config;
use falcon_core::ids::ExperimentId;
use falcon_infra::meta::AnalysisSummary;
use falcon_infra::{ArtifactStore, MetaStore};
use serde::Serialize;

use crate::compare::{CompareInput, CompareOptions, ProfileComparison};
use crate::error::{AnalysisError, Result};
use crate::input::{find_profiles, find_trace, host_of, is_chrome_trace_name, HostFile, TraceFiles, XPLANE_SUFFIX};
use crate::profile::{analyze_files, AnalyzeOptions, ProfileReport};
use crate::timeline::Timeline;
use crate::trace::{analyze_trace, TraceOptions, TraceReport};

/// Summary-row tool names (the vocabulary EXP reads them with).
pub use falcon_core::summary::{
    ACCURACY_TOOL as ACCURACY_SUMMARY_TOOL, KERNEL_BENCH_TOOL as KERNEL_BENCH_SUMMARY_TOOL,
    MEMORY_TOOL as MEMORY_SUMMARY_TOOL, PROFILE_TOOL as PROFILE_SUMMARY_TOOL, TRACE_TOOL as TRACE_SUMMARY_TOOL,
};

/// Where the trace of an input is on local disk.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ResolvedTrace {
    /// The input as given.
    pub input: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experiment: Option<ExperimentId>,
    /// The files read.
    pub files: TraceFiles,
}

/// The result of `profile trace`: what was read, and the analysis.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TraceRun {
    #[serde(flatten)]
    pub resolved: ResolvedTrace,
    /// Events the reader kept, devices, host threads.
    pub events_read: u64,
    #[serde(flatten)]
    pub report: TraceReport,
}

/// The analysis service. The metadata and artifact stores are connected on first use, so analysing a
/// local file never opens (or creates) a database.
pub struct Analysis {
    stores: tokio::sync::OnceCell<(MetaStore, ArtifactStore)>,
    config: Config,
}

/// Where the profile files of an input are on local disk.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ResolvedProfile {
    /// The input as given.
    pub input: String,
    /// The experiment, when the input was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experiment: Option<ExperimentId>,
    /// Remote location the files came from, when remote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// Local files, one per host.
    pub files: Vec<HostFile>,
    /// Bytes downloaded for this call (0 when local or cached).
    pub downloaded_bytes: u64,
}

impl Analysis {
    /// The service for `config`; stores are connected when first needed.
    pub async fn connect(config: &Config) -> Result<Analysis> {
        crate::limits::set_max_profile_bytes(crate::limits::mib_to_bytes(config.analysis.max_profile_mib));
        Ok(Analysis { stores: tokio::sync::OnceCell::new(), config: config.clone() })
    }

    async fn stores(&self) -> Result<&(MetaStore, ArtifactStore)> {
        self.stores
            .get_or_try_init(|| async {
                let meta = MetaStore::connect(&self.config.db).await?;
                let artifacts = ArtifactStore::open(&self.config.artifacts, &self.config.gcs, &self.config.s3)?;
                Ok::<_, AnalysisError>((meta, artifacts))
            })
            .await
    }

    async fn meta(&self) -> Result<&MetaStore> {
        Ok(&self.stores().await?.0)
    }

    /// Closes the database pool, when one was opened.
    pub async fn close(&self) {
        if let Some((meta, _)) = self.stores.get() {
            meta.close().await;
        }
    }

    /// Finds the profile files of `input`: a local file or directory, a `gs://…`/`s3://…` URI (one
    /// file or a folder), or an experiment id (`e-12`). `host` keeps one host.
    pub async fn resolve(&self, input: &str, host: Option<&str>) -> Result<ResolvedProfile> {
        if input.starts_with("gs://") || input.starts_with("s3://") {
            return self.fetch_uri(input, host).await;
        }
        let path = Path::new(input);
        if path.exists() {
            return Ok(ResolvedProfile {
                input: input.to_string(),
                experiment: None,
                remote: None,
                files: find_profiles(path, host)?,
                downloaded_bytes: 0,
            });
        }
        match input.parse::<ExperimentId>() {
            Ok(id) if input.starts_with("e-") || input.chars().all(|c| c.is_ascii_digit()) => {
                let mut resolved = self.fetch_experiment(id).await?;
                if let Some(want) = host {
                    let hosts: Vec<String> = resolved.files.iter().map(|f| f.host.clone()).collect();
                    resolved.files.retain(|f| f.host == want);
                    if resolved.files.is_empty() {
                        return Err(AnalysisError::NotFound(format!(
                            "{id} has no profile of host `{want}` (hosts: {})",
                            hosts.join(", ")
                        )));
                    }
                }
                Ok(resolved)
            }
            _ => Err(AnalysisError::NotFound(format!("{input}: no such file, directory or experiment"))),
        }
    }

    /// Copies an experiment's newest profile run (every host) into the local cache.
    pub async fn fetch_experiment(&self, id: ExperimentId) -> Result<ResolvedProfile> {
        let (meta, artifacts) = self.stores().await?;
        meta.get_experiment(id).await?;
        let records = meta.list_artifacts(id, Some(ArtifactKind::Xprof)).await?;
        let profiles: Vec<_> = records.into_iter().filter(|r| r.key.ends_with(XPLANE_SUFFIX)).collect();
        let Some(run) = profiles.iter().map(|r| run_of(&r.key)).max() else {
            return Err(AnalysisError::NotFound(format!(
                "{id} has no XProf profile among its artifacts (a `*.xplane.pb` written under $FALCON_ARTIFACT_DIR)"
            )));
        };
        let cache = self.cache_dir().join(id.to_string());
        let mut files = Vec::new();
        let mut downloaded = 0u64;
        for rec in profiles.iter().filter(|r| run_of(&r.key) == run) {
            let relative = rec.key.strip_prefix(&format!("experiments/{id}/")).unwrap_or(&rec.key);
            // Neither downloaded nor cached past the cap.
            crate::error::check_profile_size(Path::new(&format!("{id}/{relative}")), rec.size)?;
            let local = cache.join(relative);
            if !cached_matches(&local, rec.size, &rec.sha256) {
                downloaded += download_from(artifacts, &rec.key, &local, Some((rec.size, &rec.sha256))).await?;
            }
            files.push(HostFile::cached(host_of(&local), local));
        }
        files.sort_by(|a, b| a.host.cmp(&b.host));
        Ok(ResolvedProfile {
            input: id.to_string(),
            experiment: Some(id),
            remote: Some(artifacts.uri(&run)),
            files,
            downloaded_bytes: downloaded,
        })
    }

    /// Copies an experiment's artifacts of `kind` into the local cache and returns their local paths
    /// (sorted by key). Not found when the experiment has none.
    pub async fn fetch_artifacts(&self, id: ExperimentId, kind: ArtifactKind) -> Result<Vec<PathBuf>> {
        let (meta, artifacts) = self.stores().await?;
        meta.get_experiment(id).await?;
        let mut records = meta.list_artifacts(id, Some(kind)).await?;
        if records.is_empty() {
            return Err(AnalysisError::NotFound(format!("{id} has no `{}` artifact", kind.as_str())));
        }
        records.sort_by(|a, b| a.key.cmp(&b.key));
        let cache = self.cache_dir().join(id.to_string());
        let mut paths = Vec::with_capacity(records.len());
        for rec in &records {
            let relative = rec.key.strip_prefix(&format!("experiments/{id}/")).unwrap_or(&rec.key);
            if matches!(kind, ArtifactKind::Xprof | ArtifactKind::Trace) {
                crate::error::check_profile_size(Path::new(&format!("{id}/{relative}")), rec.size)?;
            }
            let local = cache.join(relative);
            if !cached_matches(&local, rec.size, &rec.sha256) {
                download_from(artifacts, &rec.key, &local, Some((rec.size, &rec.sha256))).await?;
            }
            paths.push(local);
        }
        Ok(paths)
    }

    /// Finds the metrics input of `accuracy compare`: an existing path as is; for an experiment id, its
    /// `metrics` artifacts copied into the local cache, and the directory of its TensorBoard event files,
    /// else its first `metrics*.jsonl`.
    pub async fn accuracy_inputs(&self, input: &str) -> Result<PathBuf> {
        let path = Path::new(input);
        if path.exists() {
            return Ok(path.to_path_buf());
        }
        let id = match input.parse::<ExperimentId>() {
            Ok(id) if input.starts_with("e-") || input.chars().all(|c| c.is_ascii_digit()) => id,
            _ => return Err(AnalysisError::NotFound(format!("{input}: no such file, directory or experiment"))),
        };
        let files = self.fetch_artifacts(id, ArtifactKind::Metrics).await?;
        let name = |p: &PathBuf| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if let Some(dir) = files.iter().find(|p| name(p).contains("tfevents")).and_then(|p| p.parent()) {
            return Ok(dir.to_path_buf());
        }
        if let Some(file) = files.iter().find(|p| name(p).starts_with("metrics") && name(p).ends_with(".jsonl")) {
            return Ok(file.clone());
        }
        let names: Vec<String> = files.iter().map(name).collect();
        Err(AnalysisError::NotFound(format!(
            "{id} has no TensorBoard event file or `metrics*.jsonl` among its metrics artifacts (it has: {})",
            names.join(", ")
        )))
    }

    /// Resolves and analyses `input`. When the input is an experiment and the whole overview was
    /// computed, the experiment's summary row is stored (replacing an earlier one).
    pub async fn analyze(
        &self,
        input: &str,
        host: Option<&str>,
        options: &AnalyzeOptions,
    ) -> Result<(ResolvedProfile, ProfileReport)> {
        self.analyze_input(input, host, options).await.map_err(|e| e.relative_to(&self.cache_dir()))
    }

    async fn analyze_input(
        &self,
        input: &str,
        host: Option<&str>,
        options: &AnalyzeOptions,
    ) -> Result<(ResolvedProfile, ProfileReport)> {
        let local = Path::new(input);
        if !input.starts_with("gs://") && !input.starts_with("s3://") && local.is_file() && is_chrome_trace_name(local)
        {
            return self.analyze_chrome(input.to_string(), None, vec![local.to_path_buf()], options).await;
        }
        let resolved = if input.starts_with("gs://") || input.starts_with("s3://") {
            // A URI's hosts are streamed: each analysed as soon as it is downloaded.
            match self.analyze_uri(input, host, options).await {
                Ok(answer) => return Ok(answer),
                Err(e) => Err(e),
            }
        } else {
            self.resolve(input, host).await
        };
        let resolved = match resolved {
            Ok(r) => r,
            // No XProf profile: a Chrome trace (a PyTorch profiler trace, JAX's `*.trace.json.gz`) is analysed
            // from its timeline.
            Err(e @ (AnalysisError::NotFound(_) | AnalysisError::NotAProfile { .. })) => {
                return match self.resolve_trace(input, host).await {
                    Ok(ResolvedTrace { input: name, experiment, files: TraceFiles::ChromeJson(path) }) => {
                        self.analyze_chrome(name, experiment, vec![path], options).await
                    }
                    Ok(ResolvedTrace { input: name, experiment, files: TraceFiles::ChromeRanks(paths) }) => {
                        self.analyze_chrome(name, experiment, paths, options).await
                    }
                    _ => Err(e),
                };
            }
            Err(e) => return Err(e),
        };
        let files = resolved.files.clone();
        let mut opts = options.clone();
        // An experiment that logs `model_flops` per step: shown beside the capture's count (and MFU's FLOPs when
        // the capture has none) — the same for the worker's summary row and for `profile analyze`.
        if let (Some(id), None) = (resolved.experiment, opts.logged_model_flops) {
            let summaries = self.meta().await?.metric_summaries(id).await?;
            opts.logged_model_flops = summaries
                .iter()
                .find(|m| m.metric == "model_flops")
                .map(|m| m.median)
                .filter(|f| f.is_finite() && *f > 0.0);
        }
        if opts.cpu_peak.is_none() {
            opts.cpu_peak = self.cpu_peak(resolved.experiment).await;
        }
        let report = tokio::task::spawn_blocking(move || analyze_files(&files, &opts))
            .await
            .map_err(|e| AnalysisError::Io(format!("analysis task failed: {e}")))??;
        if let Some(id) = resolved.experiment {
            if report.overview.is_some() && host.is_none() {
                self.meta().await?.put_analysis_summary(id, &summary_of(&report, &resolved)).await?;
            }
        }
        Ok((resolved, report))
    }

    /// The profiler's overhead on an experiment's traced steps, from its logged `step_time_s` (see
    /// [`crate::trace::overhead`]); `None` when it logs none or nothing compares.
    async fn profiler_overhead(
        &self,
        id: ExperimentId,
        traced: &[i64],
    ) -> Option<crate::trace::overhead::ProfilerOverhead> {
        const METRIC: &str = "step_time_s";
        let files = self.fetch_artifacts(id, ArtifactKind::Metrics).await.ok()?;
        let name = |p: &PathBuf| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let file = files.iter().find(|p| name(p).starts_with("metrics") && name(p).ends_with(".jsonl"))?;
        if std::fs::metadata(file).ok()?.len() > 256 << 20 {
            return None;
        }
        let text = tokio::fs::read_to_string(file).await.ok()?;
        let series = crate::accuracy::generic::parse_jsonl(&text, &file.display().to_string(), None).ok()?;
        crate::trace::overhead::profiler_overhead(traced, METRIC, &series.get(METRIC)?.points)
    }

    /// [`Analysis::analyze`] of a Chrome trace: read into a timeline (inflating at most the configured cap) and
    /// reported by [`crate::profile::from_trace`]; an experiment's summary row is stored as for a capture.
    async fn analyze_chrome(
        &self,
        input: String,
        experiment: Option<ExperimentId>,
        paths: Vec<PathBuf>,
        options: &AnalyzeOptions,
    ) -> Result<(ResolvedProfile, ProfileReport)> {
        let path = paths.first().cloned().ok_or_else(|| AnalysisError::NotFound("no trace files to read".into()))?;
        let host = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let file = HostFile::user(host, path.clone());
        let cap = crate::limits::max_decompressed_bytes(&self.config);
        let opts = options.clone();
        let f = file.clone();
        let report = tokio::task::spawn_blocking(move || -> Result<ProfileReport> {
            let timeline = crate::timeline::chrome::read_chrome_trace_file_with(&path, cap)?;
            let mut report = crate::profile::from_trace::analyze_timeline(&f, &timeline, &opts);
            drop(timeline);
            if paths.len() > 1 {
                // The ranks of one run: the first file's own analysis, and the run's multi-host analysis over every
                // rank, read one at a time.
                report.notes.push(format!(
                    "{} rank traces: the sections but `multihost` are of {} alone",
                    paths.len(),
                    path.display()
                ));
                if opts.wants(crate::profile::Tool::Steps) {
                    report.multihost = crate::trace::members::merge(&rank_members(&paths, cap)?);
                }
            }
            Ok(report)
        })
        .await
        .map_err(|e| AnalysisError::Io(format!("analysis task failed: {e}")))??;
        let mut report = report;
        if let (Some(id), Some(steps)) = (experiment, report.steps.as_ref()) {
            let traced: Vec<i64> = steps.steps.iter().map(|s| s.step_num).collect();
            if let Some(o) = self.profiler_overhead(id, &traced).await.filter(|o| o.inflated) {
                if let Some(findings) = report.findings.as_mut() {
                    findings.push(crate::findings::Finding {
                        kind: crate::findings::FindingKind::ProfilerOverhead,
                        share: 1.0 - 1.0 / o.ratio,
                        ops: Vec::new(),
                        summary: o.summary.clone(),
                    });
                    findings.sort_by(|a, b| b.share.total_cmp(&a.share));
                }
            }
        }
        let resolved = ResolvedProfile { input, experiment, remote: None, files: vec![file], downloaded_bytes: 0 };
        if let Some(id) = experiment {
            if report.overview.is_some() {
                self.meta().await?.put_analysis_summary(id, &summary_of(&report, &resolved)).await?;
            }
        }
        Ok((resolved, report))
    }

    /// Compares two inputs, each anything [`Analysis::resolve`] takes: `a` is the baseline, `b` the
    /// candidate. `host` keeps one host on both sides.
    pub async fn compare(
        &self,
        a: &str,
        b: &str,
        host: Option<&str>,
        options: &CompareOptions,
    ) -> Result<ProfileComparison> {
        self.compare_inputs(a, b, host, options).await.map_err(|e| e.relative_to(&self.cache_dir()))
    }

    async fn compare_inputs(
        &self,
        a: &str,
        b: &str,
        host: Option<&str>,
        options: &CompareOptions,
    ) -> Result<ProfileComparison> {
        let ra = self.compare_input(a, host).await?;
        let rb = self.compare_input(b, host).await?;
        let opts = *options;
        let cap = crate::limits::max_decompressed_bytes(&self.config);
        let (pa, pb) = (self.cpu_peak(ra.experiment()).await, self.cpu_peak(rb.experiment()).await);
        tokio::task::spawn_blocking(move || {
            let peaks = [pa.as_ref(), pb.as_ref()];
            crate::compare::compare_inputs_with_peaks(ra.as_input(), rb.as_input(), &opts, cap, peaks)
        })
        .await
        .map_err(|e| AnalysisError::Io(format!("comparison task failed: {e}")))?
    }

    /// What one side of a comparison reads: an XProf capture, else a Chrome trace (a local `*.json[.gz]`, or an
    /// experiment's trace artifact when it has no capture).
    async fn compare_input(&self, input: &str, host: Option<&str>) -> Result<ComparedInput> {
        let local = Path::new(input);
        if !input.starts_with("gs://") && !input.starts_with("s3://") && local.is_file() && is_chrome_trace_name(local)
        {
            return Ok(ComparedInput::Trace(input.to_string(), local.to_path_buf()));
        }
        match self.resolve(input, host).await {
            Ok(r) => Ok(ComparedInput::Profile(r)),
            Err(e @ (AnalysisError::NotFound(_) | AnalysisError::NotAProfile { .. })) => {
                match self.resolve_trace(input, host).await {
                    Ok(ResolvedTrace { input, files: TraceFiles::ChromeJson(path), .. }) => {
                        Ok(ComparedInput::Trace(input, path))
                    }
                    _ => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Finds what a trace analysis of `input` reads: like [`Analysis::resolve`], plus Chrome trace JSON
    /// files (`*.json[.gz]`: XProf trace-viewer output, JAX's `*.trace.json.gz`, PyTorch profiler
    /// traces), locally or among an experiment's `trace` artifacts when it has no XSpace profile.
    pub async fn resolve_trace(&self, input: &str, host: Option<&str>) -> Result<ResolvedTrace> {
        let path = Path::new(input);
        if !input.starts_with("gs://") && !input.starts_with("s3://") && path.exists() {
            return Ok(ResolvedTrace { input: input.to_string(), experiment: None, files: find_trace(path, host)? });
        }
        if (input.starts_with("gs://") || input.starts_with("s3://")) && is_chrome_trace_name(path) {
            let local = self.fetch_object(input).await?;
            return Ok(ResolvedTrace {
                input: input.to_string(),
                experiment: None,
                files: TraceFiles::ChromeJson(local),
            });
        }
        match self.resolve(input, host).await {
            Ok(r) => Ok(ResolvedTrace { input: r.input, experiment: r.experiment, files: TraceFiles::Xplane(r.files) }),
            Err(AnalysisError::NotFound(why)) => {
                let Ok(id) = input.parse::<ExperimentId>() else { return Err(AnalysisError::NotFound(why)) };
                let (meta, artifacts) = self.stores().await?;
                let traces: Vec<_> = meta
                    .list_artifacts(id, Some(ArtifactKind::Trace))
                    .await?
                    .into_iter()
                    .filter(|r| is_chrome_trace_name(Path::new(&r.key)))
                    .collect();
                let Some(rec) = traces.last() else {
                    return Err(AnalysisError::NotFound(format!(
                        "{id} has neither an XProf profile nor a Chrome trace among its artifacts"
                    )));
                };
                let relative = rec.key.strip_prefix(&format!("experiments/{id}/")).unwrap_or(&rec.key);
                crate::error::check_profile_size(Path::new(&format!("{id}/{relative}")), rec.size)?;
                let local = self.cache_dir().join(id.to_string()).join(relative);
                if !cached_matches(&local, rec.size, &rec.sha256) {
                    download_from(artifacts, &rec.key, &local, Some((rec.size, &rec.sha256))).await?;
                }
                Ok(ResolvedTrace {
                    input: input.to_string(),
                    experiment: Some(id),
                    files: TraceFiles::ChromeJson(local),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Reads the trace of `input` into one timeline (several hosts appended) and runs the trace
    /// analyses; for an experiment, stores its `trace` summary row (exposed communication %, idle %,
    /// host-bound fraction) when every analysis ran over every host.
    pub async fn trace(&self, input: &str, host: Option<&str>, options: &TraceOptions) -> Result<TraceRun> {
        self.trace_input(input, host, options).await.map_err(|e| e.relative_to(&self.cache_dir()))
    }

    async fn trace_input(&self, input: &str, host: Option<&str>, options: &TraceOptions) -> Result<TraceRun> {
        let resolved = self.resolve_trace(input, host).await?;
        let files = resolved.files.clone();
        let opts = options.clone();
        let cap = options.max_decompressed_bytes.unwrap_or_else(|| crate::limits::max_decompressed_bytes(&self.config));
        let (events_read, report) = tokio::task::spawn_blocking(move || -> Result<(u64, TraceReport)> {
            let timeline = read_timeline(&files, cap)?;
            Ok((timeline.events_read, analyze_trace(&timeline, &opts)))
        })
        .await
        .map_err(|e| AnalysisError::Io(format!("trace analysis task failed: {e}")))??;
        let mut report = report;
        if let Some(id) = resolved.experiment {
            let traced: Vec<i64> = report.steps.iter().map(|r| r.step).collect();
            report.profiler_overhead = self.profiler_overhead(id, &traced).await;
        }
        if let Some(id) = resolved.experiment {
            if options.analyses.is_empty() && host.is_none() {
                let s = crate::trace::summary(&report);
                let mean_step_ms = (!report.steps.is_empty()).then(|| {
                    report.steps.iter().map(|r| r.breakdown.duration_us).sum::<f64>()
                        / report.steps.len() as f64
                        / 1000.0
                });
                let row = AnalysisSummary {
                    tool: TRACE_SUMMARY_TOOL.into(),
                    mfu: None,
                    step_time_ms: mean_step_ms,
                    duty_cycle: s.duty_cycle,
                    peak_memory_bytes: None,
                    bound_by: report.host_bound.as_ref().and_then(|h| h.bound_by).map(|b| b.as_str().to_string()),
                    details: serde_json::json!({
                        "exposed_collective_percent": s.exposed_collective_percent,
                        "wait_for_peers_percent": s.wait_for_peers_percent,
                        "transfer_percent": s.transfer_percent,
                        "straggler": report.straggler.as_ref().map(|g| serde_json::json!({
                            "host": g.host, "late_us_median": g.late_us_median, "steps_late": g.steps_late,
                            "steps": g.steps, "lost_percent": g.lost_percent, "cause": g.cause, "summary": g.summary,
                        })),
                        // Per host, at most 1000 (the late ones first): what the dashboard's lateness chart draws.
                        "hosts": crate::trace::multihost::stored_hosts(&report.hosts, 1000),
                        "idle_percent": s.idle_percent,
                        "host_bound_fraction": s.host_bound_fraction,
                        "steps": report.steps.len(),
                        "step_rule": report.step_detection.rule,
                        "host_wait_rule": report.host_wait_rule,
                        "profiler_overhead": report.profiler_overhead.as_ref().map(|o| serde_json::json!({
                            "ratio": o.ratio, "profiled_ms": o.profiled_ms, "unprofiled_ms": o.unprofiled_ms,
                            "inflated": o.inflated, "summary": o.summary,
                        })),
                    }),
                };
                self.meta().await?.put_analysis_summary(id, &row).await?;
            }
        }
        Ok(TraceRun { resolved, events_read, report })
    }

    async fn fetch_object(&self, uri: &str) -> Result<PathBuf> {
        let (scheme, rest) =
            uri.split_once("://").ok_or_else(|| AnalysisError::Invalid(format!("{uri}: not a URI")))?;
        let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
        let store = ArtifactStore::open(&format!("{scheme}://{bucket}"), &self.config.gcs, &self.config.s3)?;
        if !store.exists(key).await? {
            return Err(AnalysisError::NotFound(format!("{uri}: no such object")));
        }
        let local = self.cache_dir().join("uri").join(scheme).join(bucket).join(key);
        download_from(&store, key, &local, None).await?;
        Ok(local)
    }

    /// Completed experiments (of `scenario` when given, among `among` when given) with an artifact of `kind`
    /// (its name ending in one of `suffixes`, any when empty) and no `tool` summary row yet: the analyses the
    /// worker owes, at most `limit`.
    async fn awaiting(
        &self,
        scenario: Option<falcon_core::status::Scenario>,
        among: Option<&[ExperimentId]>,
        tool: &str,
        kind: ArtifactKind,
        suffixes: &[&str],
        limit: u32,
    ) -> Result<Vec<ExperimentId>> {
        Ok(self.meta().await?.experiments_awaiting_analysis_in(scenario, among, tool, kind, suffixes, limit).await?)
    }

    /// The experiment's stored analysis summary rows.
    pub async fn summaries(&self, id: ExperimentId) -> Result<Vec<AnalysisSummary>> {
        let meta = self.meta().await?;
        meta.get_experiment(id).await?;
        Ok(meta.analysis_summaries(id).await?)
    }

    fn cache_dir(&self) -> PathBuf {
        let dir = self.config.data_dir.join("cache").join("profiles");
        std::path::absolute(&dir).unwrap_or(dir)
    }
}

/// Reads trace files into one timeline: XSpace hosts appended in host order, or one Chrome trace (a gzipped
/// one inflating to at most `max_decompressed` bytes).
pub fn read_timeline(files: &TraceFiles, max_decompressed: u64) -> Result<Timeline> {
    match files {
        TraceFiles::ChromeJson(path) => crate::timeline::chrome::read_chrome_trace_file_with(path, max_decompressed),
        TraceFiles::ChromeRanks(paths) => read_ranks(paths, max_decompressed),
        TraceFiles::Xplane(hosts) => {
            let mut all: Option<Timeline> = None;
            for f in hosts {
                let space = crate::input::load_host(f)?;
                let tl = crate::profile::hlo::collectives::xspace_timeline(&space, &f.host);
                drop(space);
                match all.as_mut() {
                    None => all = Some(tl),
                    Some(t) => t.append(tl),
                }
            }
            all.ok_or_else(|| AnalysisError::NotFound("no profile files to read".into()))
        }
    }
}

/// The traces of a run's ranks as one timeline of hosts `rank-<N>` (N its `distributedInfo.rank`, else its order
/// among the files), appended in rank order: a rank's devices, threads and step markers are its host's.
fn read_ranks(paths: &[PathBuf], max_decompressed: u64) -> Result<Timeline> {
    let mut ranks: Vec<(i64, String, Timeline)> = Vec::with_capacity(paths.len());
    for (i, path) in paths.iter().enumerate() {
        let tl = crate::timeline::chrome::read_chrome_trace_file_with(path, max_decompressed)?;
        let rank = tl.rank.unwrap_or(i as i64);
        let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        ranks.push((rank, file, tl));
    }
    ranks.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    let mut seen = std::collections::HashSet::new();
    let mut all: Option<Timeline> = None;
    let mut notes = Vec::new();
    for (rank, file, mut tl) in ranks {
        let host = rank_host(&mut seen, rank, &file);
        if host.contains('(') {
            notes.push(format!("{file}: rank {rank} again: read as its own host `{host}`"));
        }
        crate::timeline::set_host(&mut tl, &host);
        match all.as_mut() {
            None => all = Some(tl),
            Some(t) => t.append(tl),
        }
    }
    let mut all = all.ok_or_else(|| AnalysisError::NotFound("no trace files to read".into()))?;
    all.rank = None;
    all.notes.extend(notes);
    Ok(all)
}

/// Each rank's part of the run's multi-host analysis, in rank order, each read and reduced in turn (hosts named as
/// [`read_ranks`] names them).
fn rank_members(paths: &[PathBuf], max_decompressed: u64) -> Result<Vec<crate::trace::members::HostMembers>> {
    let mut ranks = Vec::with_capacity(paths.len());
    for (i, path) in paths.iter().enumerate() {
        let tl = crate::timeline::chrome::read_chrome_trace_file_with(path, max_decompressed)?;
        let rank = tl.rank.unwrap_or(i as i64);
        let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        ranks.push((rank, file, crate::trace::members::host_members(&tl)));
    }
    ranks.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    let mut seen = std::collections::HashSet::new();
    Ok(ranks
        .into_iter()
        .map(|(rank, file, mut part)| {
            let host = rank_host(&mut seen, rank, &file);
            part.devices.iter_mut().for_each(|d| d.host = host.clone());
            part
        })
        .collect())
}

/// The host a rank's trace is: `rank-<N>`, and `rank-<N> (<file>)` for a second trace of the same rank.
fn rank_host(seen: &mut std::collections::HashSet<i64>, rank: i64, file: &str) -> String {
    if seen.insert(rank) {
        format!("rank-{rank}")
    } else {
        format!("rank-{rank} ({file})")
    }
}

/// One side of a comparison, resolved.
enum ComparedInput {
    Profile(ResolvedProfile),
    Trace(String, PathBuf),
}

impl ComparedInput {
    fn as_input(&self) -> CompareInput<'_> {
        match self {
            ComparedInput::Profile(r) => CompareInput::Profile(&r.input, &r.files),
            ComparedInput::Trace(name, path) => CompareInput::Trace(name, path),
        }
    }

    /// The experiment a capture side is, when it is one.
    fn experiment(&self) -> Option<ExperimentId> {
        match self {
            ComparedInput::Profile(r) => r.experiment,
            ComparedInput::Trace(..) => None,
        }
    }
}

/// The summary row of a full analysis.
pub fn summary_of(report: &ProfileReport, resolved: &ResolvedProfile) -> AnalysisSummary {
    let o = report.overview.as_ref();
    AnalysisSummary {
        tool: PROFILE_SUMMARY_TOOL.into(),
        mfu: o.and_then(|o| o.mfu),
        step_time_ms: o.filter(|o| o.step_time_ms.n > 0).map(|o| o.step_time_ms.mean),
        duty_cycle: o.and_then(|o| o.device_duty_cycle_percent).map(|d| d / 100.0),
        peak_memory_bytes: report.memory.as_ref().map(|m| m.peak_bytes).filter(|b| *b > 0),
        // The serde name of `falcon_core::bound::BoundBy` (the trace row writes the same words).
        bound_by: o.and_then(|o| o.bound_by).map(|b| b.as_str().to_string()),
        details: serde_json::json!({
            "device_type": report.device.device_type,
            "device_cores": report.device.device_cores,
            "hosts": report.files.len(),
            "flops_utilization": o.map(|o| o.flops_utilization),
            "hbm_bw_utilization": o.map(|o| o.hbm_bw_utilization),
            "operational_intensity": o.map(|o| o.operational_intensity),
            // Which step time `step_time_ms` is, and the device's own (GPU: first to last device op a step).
            "step_time_source": o.and_then(|o| o.step_time_source.clone()),
            "device_step_time_ms": o.and_then(|o| o.device_step_time_ms.as_ref()).map(|d| d.mean),
            "mfu_model_flops": o.and_then(|o| o.mfu_model_flops),
            "mfu_flops_source": o.and_then(|o| o.mfu_flops_source.clone()),
            "mfu_peak_teraflops_per_second": o.and_then(|o| o.mfu_peak_teraflops_per_second),
            "logged_model_flops": o.and_then(|o| o.logged_model_flops),
            "hfu": o.and_then(|o| o.hfu),
            // What to act on (GPU), without the op lists.
            "findings": report.findings.as_ref().map(|f| f.iter().map(|f| serde_json::json!({
                "kind": f.kind, "share": f.share, "summary": f.summary,
            })).collect::<Vec<_>>()),
            "profile": resolved.remote,
            // What the memory verdict tests (at most 1000 step ends).
            "memory": report.memory.as_ref().map(|m| serde_json::json!({
                "allocator": m.peak_allocator,
                "peak_bytes": m.peak_bytes,
                "capacity_bytes": m.memory_capacity_bytes,
                "step_end_in_use_bytes": &m.step_end_in_use_bytes[..m.step_end_in_use_bytes.len().min(1000)],
            })),
        }),
    }
}

/// The run folder of a profile key (`…/plugins/profile/<run>/<host>.xplane.pb` → `…/plugins/profile/<run>`).
fn run_of(key: &str) -> String {
    key.rsplit_once('/').map(|(dir, _)| dir.to_string()).unwrap_or_default()
}

fn cached_matches(local: &Path, size: u64, sha256: &str) -> bool {
    use sha2::Digest;
    match std::fs::metadata(local) {
        Ok(m) if m.len() == size => {}
        _ => return false,
    }
    let Ok(mut file) = std::fs::File::open(local) else { return false };
    let mut hasher = sha2::Sha256::new();
    if std::io::copy(&mut file, &mut hasher).is_err() {
        return false;
    }
    hex::encode(hasher.finalize()).eq_ignore_ascii_case(sha256)
}

async fn download_from(store: &ArtifactStore, key: &str, local: &Path, expect: Option<(u64, &str)>) -> Result<u64> {
    if let Some(parent) = local.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| AnalysisError::Io(format!("creating {}: {e}", parent.display())))?;
    }
    // A remote run's file (no index entry: a `gs://` / `s3://` profile) is sized before it is fetched, so nothing
    // past the cap on one profile reaches the cache; indexed artifacts are checked by their callers.
    if expect.is_none() {
        crate::error::check_profile_size(Path::new(&store.uri(key)), store.stat(key).await?.size)?;
    }
    let info = store.get_to_file(key, local).await?;
    if let Some((size, sha)) = expect {
        if info.size != size || !info.sha256.eq_ignore_ascii_case(sha) {
            let _ = std::fs::remove_file(local);
            return Err(AnalysisError::Io(format!(
                "{}: downloaded {} bytes (sha256 {}), the artifact index says {size} bytes (sha256 {sha})",
                info.uri, info.size, info.sha256
            )));
        }
    }
    Ok(info.size)
}

/// A summary row that has only details (no profile numbers).
pub(crate) fn detail_row(tool: &str, details: serde_json::Value) -> AnalysisSummary {
    AnalysisSummary {
        tool: tool.into(),
        mfu: None,
        step_time_ms: None,
        duty_cycle: None,
        peak_memory_bytes: None,
        bound_by: None,
        details,
    }
}
