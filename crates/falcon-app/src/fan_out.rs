//! `profile analyze --fan-out N`: a run of many hosts analysed by cluster jobs. EXP submits one experiment per
//! shard of hosts (an analysis session) on whatever configured pool offers `cpu` cores; each job runs Falcon's
//! own `profile shard`, which writes the shard's partial result as the artifact [`SHARD_ARTIFACT`]; once every
//! job completed, the analysis merges the partials into the report the single-process analysis gives. The
//! analysis module only computes (inside the jobs and in the merge); the jobs are EXP's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use falcon_analysis::profile::partial::ShardPartial;
use falcon_core::ids::{ExperimentId, SessionId};
use falcon_core::status::ExperimentStatus;
use falcon_core::ErrorKind;
use falcon_exp::progress::RunProgress;

use crate::profiles::{AnalyzeOptions, ProfileReport, ResolvedProfile};
use crate::{ctx::Ctx, AppError, Result};

/// The artifact each shard's job writes (under its `$FALCON_ARTIFACT_DIR`).
pub const SHARD_ARTIFACT: &str = "profile-shard.cbor";

/// How a run is fanned out.
#[derive(Debug, Clone)]
pub struct FanOut {
    /// Jobs (at most one per host).
    pub shards: usize,
    /// The `falcon` binary the jobs run (the caller's own).
    pub exe: PathBuf,
    /// Environment the jobs get beyond their pool's (the object-store endpoints and analysis caps they read with).
    pub env: BTreeMap<String, String>,
    /// How long to wait for the jobs; they keep running past it (`falcon worker`).
    pub timeout: Option<Duration>,
}

/// What a fan-out tells its caller as it goes.
pub enum FanOutProgress<'a> {
    /// The jobs were submitted.
    Submitted { session: SessionId, jobs: &'a [ExperimentId], hosts: usize },
    /// The jobs' states after a worker pass.
    Tick(&'a [RunProgress]),
}

/// The number of shards `profile analyze` uses for `target`: `explicit` when given (0: in this process),
/// else `ceil(hosts / [analysis] fan_out_hosts)` when the run has more hosts than that, else none.
pub(crate) async fn shards_for(cx: &Ctx, target: &str, explicit: Option<usize>) -> Result<Option<usize>> {
    match explicit {
        Some(0) => return Ok(None),
        Some(n) => return Ok(Some(n)),
        None => {}
    }
    let Some(per_job) = cx.config()?.analysis.fan_out_hosts else { return Ok(None) };
    let input = Path::new(target);
    let runs_here = target.starts_with("gs://") || target.starts_with("s3://") || input.is_dir();
    if !runs_here {
        return Ok(None);
    }
    if per_job == 0 {
        return Err(AppError::usage(
            "[analysis] fan_out_hosts = 0: a job needs at least one host (leave it unset never to fan out)",
        )
        .with_hint("`falcon doctor` checks the configuration"));
    }
    let hosts = cx.analysis().await?.run_hosts(target).await?.len();
    let per_job = per_job as usize;
    Ok((hosts > per_job).then(|| hosts.div_ceil(per_job)))
}

/// The partials of one shard (what `profile shard` computes in a job).
pub(crate) async fn analyze_shard(
    cx: &Ctx,
    target: &str,
    shard: usize,
    shards: usize,
    options: &AnalyzeOptions,
) -> Result<ShardPartial> {
    crate::files::check_input(Path::new(target))?;
    Ok(cx.analysis().await?.analyze_shard(target, shard, shards, options).await?)
}

/// Runs the shards as jobs, waits for them, and merges their partials.
pub(crate) async fn analyze_fanned(
    cx: &Ctx,
    target: &str,
    fan: &FanOut,
    options: &AnalyzeOptions,
    mut progress: impl FnMut(FanOutProgress<'_>),
) -> Result<(ResolvedProfile, ProfileReport)> {
    crate::files::check_input(Path::new(target))?;
    let analysis = cx.analysis().await?;
    let hosts = analysis.run_hosts(target).await?.len();
    let shards = fan.shards.clamp(1, hosts.max(1));
    // A job may start in another folder: it is given the run's absolute path (the report names files as given).
    let job_target = if target.starts_with("gs://") || target.starts_with("s3://") {
        target.to_string()
    } else {
        std::path::absolute(target)
            .map_err(|e| AppError::new(ErrorKind::Failure, format!("{target}: its absolute path: {e}")))?
            .to_string_lossy()
            .into_owned()
    };
    let specs =
        (0..shards).map(|k| shard_spec(fan, &job_target, target, k, shards, options)).collect::<Result<Vec<_>>>()?;
    let exp = cx.exp().await?;
    for (i, spec) in specs.iter().enumerate() {
        crate::experiments::placeable(exp, spec, &format!("fan-out job {} of {shards}: ", i + 1))?;
    }
    let sweep = serde_json::json!({ "fan_out": target, "hosts": hosts, "experiments": shards });
    let view = exp.submit_session(&format!("profile analyze {target} (fan-out)"), None, sweep, &specs).await?;
    let ids: Vec<ExperimentId> = view.experiments.iter().map(|e| e.id).collect();
    progress(FanOutProgress::Submitted { session: view.session.id, jobs: &ids, hosts });
    let deadline = fan.timeout.map(|t| std::time::Instant::now() + t);
    let background = exp.start_background().await?;
    let waited = exp.wait_all(&ids, deadline, |now| progress(FanOutProgress::Tick(now))).await;
    let stopped = exp.stop_background(background).await;
    let done = waited?;
    stopped?;
    if let Some(bad) = done.iter().find(|p| p.status != ExperimentStatus::Completed) {
        let reason = bad.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
        return Err(AppError::new(
            ErrorKind::Failure,
            format!(
                "fan-out job {} ({}) ended {}{reason}; the run was not merged",
                bad.experiment, bad.name, bad.status
            ),
        )
        .with_hint(format!("`falcon exp logs {}` shows what the job printed", bad.experiment)));
    }
    // One shard's partial in memory at a time: each is read, folded in and dropped before the next.
    let mut merge = analysis.merge_begin(target, ids.len(), options).await?;
    for id in &ids {
        let record = exp.artifact(*id, SHARD_ARTIFACT).await.map_err(|e| {
            AppError::from(e).with_hint(format!("the job of {id} completed without writing {SHARD_ARTIFACT}"))
        })?;
        // A job's partial is untrusted input: read whole only within the cap on one profile file.
        let cap = cx.config()?.analysis.max_profile_mib.saturating_mul(1 << 20);
        if record.size > cap {
            return Err(AppError::new(
                ErrorKind::Invalid,
                format!(
                    "{id}'s {SHARD_ARTIFACT}: {} bytes, over the {} MiB cap on one profile ([analysis] max_profile_mib \
                     in falcon.toml, or FALCON_MAX_PROFILE_MIB); nothing of it was read",
                    record.size,
                    cap >> 20
                ),
            ));
        }
        let bytes = exp.artifact_bytes(&record).await?;
        merge.add(&bytes, &format!("{id}'s {SHARD_ARTIFACT}")).await?;
    }
    Ok(merge.finish().await?)
}

/// The experiment of shard `k`: `falcon profile shard` on one core, its partial as the artifact.
fn shard_spec(
    fan: &FanOut,
    job_target: &str,
    target: &str,
    k: usize,
    shards: usize,
    options: &AnalyzeOptions,
) -> Result<falcon_core::spec::ExperimentSpec> {
    let tools = if options.tools.is_empty() {
        "all".to_string()
    } else {
        options.tools.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(",")
    };
    let command = [
        fan.exe.to_string_lossy().into_owned(),
        "profile".into(),
        "shard".into(),
        job_target.into(),
        "--shard".into(),
        format!("{k}/{shards}"),
        "--tool".into(),
        tools,
    ];
    let spec = serde_json::json!({
        "name": format!("profile-shard-{}-of-{shards}", k + 1),
        "scenario": "profiling",
        "workload": { "framework": "falcon", "command": command, "env": fan.env },
        "config": { "fan_out": { "input": target, "shard": k, "shards": shards } },
        "resources": { "accelerator": "cpu", "devices": 1 },
        "retries": 1,
        "labels": { "falcon": "profile-fan-out" },
    });
    falcon_core::spec::parse_spec(&spec.to_string(), "the fan-out job")
        .map_err(|e| AppError::new(ErrorKind::Failure, format!("the fan-out job's spec: {e}")))
}
