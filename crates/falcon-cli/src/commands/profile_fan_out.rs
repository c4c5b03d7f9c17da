//! `falcon profile analyze --fan-out N` (the run analysed by cluster jobs, merged) and `falcon profile shard`
//! (what each job runs). The use cases are [`falcon_app::fan_out`]; this module parses arguments and prints.

use crate::cli::{GlobalArgs, ProfileAnalyzeArgs, ProfileShardArgs};
use crate::output::{print_json, print_stdout, CliFailure};
use falcon_app::fan_out::{FanOut, FanOutProgress, SHARD_ARTIFACT};
use falcon_app::profiles::{AnalyzeOptions, ProfileReport, ResolvedProfile};
use falcon_app::App;
use falcon_core::ErrorKind;
use std::collections::BTreeMap;
use std::process::ExitCode;

/// The fanned-out analysis of `args.target` in `shards` jobs.
pub async fn analyze(
    global: &GlobalArgs,
    app: &App,
    args: &ProfileAnalyzeArgs,
    shards: usize,
    options: &AnalyzeOptions,
) -> anyhow::Result<(ResolvedProfile, ProfileReport)> {
    let exe = std::env::current_exe()
        .map_err(|e| CliFailure::new(ErrorKind::Failure, format!("the falcon binary the jobs run: {e}")))?;
    // A job sees neither the configuration file nor the worker's environment (docs/guide/jobs.md, "Workload
    // isolation"): it is given, by name, the object-store endpoints and the analysis caps it reads a run with — never
    // the database, nor a secret (a private bucket's credentials are the pool's own).
    let config = crate::settings::load(global)?.config;
    let mut env = BTreeMap::new();
    let mut put = |key: &str, value: Option<String>| {
        if let Some(v) = value {
            env.insert(key.to_string(), v);
        }
    };
    put("FALCON_GCS_ENDPOINT", config.gcs.endpoint.clone());
    put("FALCON_GCS_ANONYMOUS", config.gcs.anonymous.then(|| "true".into()));
    put("FALCON_S3_ENDPOINT", config.s3.endpoint.clone());
    put("FALCON_S3_REGION", config.s3.region.clone());
    put("FALCON_S3_ANONYMOUS", config.s3.anonymous.then(|| "true".into()));
    put("FALCON_MAX_DECOMPRESSED_MIB", Some(config.analysis.max_decompressed_mib.to_string()));
    put("FALCON_MAX_PROFILE_MIB", Some(config.analysis.max_profile_mib.to_string()));
    let timeout = super::exp::parse_timeout(args.timeout.as_deref())?;
    let fan = FanOut { shards, exe, env, timeout };
    let quiet = global.json;
    let mut last = String::new();
    let answer = app
        .analyze_profile_fanned(&args.target, &fan, options, |p| match p {
            FanOutProgress::Submitted { session, jobs, hosts } => eprintln!(
                "falcon profile: {hosts} hosts in {} jobs, session {session} ({} … {})",
                jobs.len(),
                jobs.first().map(ToString::to_string).unwrap_or_default(),
                jobs.last().map(ToString::to_string).unwrap_or_default()
            ),
            FanOutProgress::Tick(now) => {
                let done = now.iter().filter(|r| r.status.is_terminal()).count();
                let line = format!("falcon profile: {done}/{} jobs ended", now.len());
                if line != last && !quiet {
                    eprintln!("{line}");
                }
                last = line;
            }
        })
        .await?;
    Ok(answer)
}

/// `falcon profile shard`: one shard's partial result, written to the job's artifact folder.
pub async fn shard(global: &GlobalArgs, app: &App, args: &ProfileShardArgs) -> anyhow::Result<ExitCode> {
    let (k, n) = parse_shard(&args.shard)?;
    let tools = falcon_app::profiles::parse_tools(args.tool.iter().map(String::as_str))
        .map_err(|e| CliFailure::usage(format!("--tool {e}")))?;
    let output = match &args.output {
        Some(path) => path.clone(),
        None => match std::env::var_os("FALCON_ARTIFACT_DIR") {
            Some(dir) => std::path::PathBuf::from(dir).join(SHARD_ARTIFACT),
            None => {
                return Err(CliFailure::usage(
                    "--output FILE is needed outside a job (no $FALCON_ARTIFACT_DIR to write the partial into)",
                )
                .into())
            }
        },
    };
    // The `-o FILE` rule of every command; the job's own artifact is its to replace (a retried attempt).
    falcon_app::files::check_output_target(&output, args.force || args.output.is_none())?;
    let options = AnalyzeOptions { tools, ..AnalyzeOptions::default() };
    // In a job (a fan-out's), the data dir is not the job's to write (it does not even see it): the hosts it
    // downloads are cached in a folder of its own under the temporary folder, removed when it is done.
    let in_job = std::env::var_os("FALCON_ARTIFACT_DIR").is_some() && std::env::var_os("FALCON_DATA_DIR").is_none();
    let scratch = (in_job && global.data_dir.is_none())
        .then(|| std::env::temp_dir().join(format!("falcon-shard-{}", std::process::id())));
    let own_app;
    let app = match &scratch {
        Some(dir) => {
            let mut g = global.clone();
            g.data_dir = Some(dir.clone());
            own_app = crate::settings::app(&g);
            &own_app
        }
        None => app,
    };
    let partial = app.profile_shard(&args.target, k, n, &options).await;
    if let Some(dir) = &scratch {
        let _ = std::fs::remove_dir_all(dir);
    }
    let partial = partial?;
    let bytes = falcon_app::profiles::encode_shard(&partial)?;
    falcon_app::files::write_atomically(&output, &bytes)?;
    let read = partial.hosts.iter().filter(|h| matches!(h, falcon_app::profiles::ShardHost::Read(_))).count();
    let failed = partial.hosts.len() - read;
    if global.json {
        print_json(&serde_json::json!({
            "written": output.display().to_string(),
            "bytes": bytes.len(),
            "shard": k,
            "shards": n,
            "run_hosts": partial.run_hosts.len(),
            "hosts_read": read,
            "hosts_failed": failed,
        }))?;
    } else {
        print_stdout(&format!(
            "wrote {} ({} bytes): shard {k}/{n}, {read} of the run's {} hosts read, {failed} failed",
            output.display(),
            bytes.len(),
            partial.run_hosts.len()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn parse_shard(text: &str) -> anyhow::Result<(usize, usize)> {
    let bad = || CliFailure::usage(format!("--shard `{text}`: K/N with 0 ≤ K < N, such as 0/8"));
    let (k, n) = text.split_once('/').ok_or_else(bad)?;
    let (k, n): (usize, usize) = (k.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
    if n == 0 || k >= n {
        return Err(bad().into());
    }
    Ok((k, n))
}
