//! `falcon config show`.

use crate::cli::GlobalArgs;
use crate::output::{print_json, print_stdout};
use crate::settings;
use std::process::ExitCode;

pub fn show(global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let loaded = settings::load(global)?;
    if global.json {
        print_json(&settings::Loaded { file: loaded.file.clone(), config: loaded.config.redacted() })?;
    } else {
        let source =
            loaded.file.as_ref().map_or("(no file: built-in defaults)".to_string(), |f| f.display().to_string());
        print_stdout(&format!("# effective configuration; file: {source}"))?;
        print_stdout(&toml_of(&loaded.config.redacted()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Every section of `config` as TOML, the same sections `--json` prints (`config` comes in redacted).
fn toml_of(config: &falcon_core::config::Config) -> String {
    let layer = falcon_core::config::ConfigLayer {
        data_dir: Some(config.data_dir.clone()),
        db: Some(config.db.clone()),
        artifacts: Some(config.artifacts.clone()),
        gcs: Some(falcon_core::config::GcsLayer {
            endpoint: config.gcs.endpoint.clone(),
            anonymous: Some(config.gcs.anonymous),
            credential_path: config.gcs.credential_path.clone(),
        }),
        s3: Some(falcon_core::config::S3Layer {
            endpoint: config.s3.endpoint.clone(),
            region: config.s3.region.clone(),
            anonymous: Some(config.s3.anonymous),
            access_key_id: config.s3.access_key_id.clone(),
            secret_access_key: config.s3.secret_access_key.clone(),
        }),
        pools: Some(config.pools.clone()),
        jobs: Some(falcon_core::config::JobsLayer {
            poll_interval_ms: Some(config.jobs.poll_interval_ms),
            capacity_timeout_s: Some(config.jobs.capacity_timeout_s),
            lease_s: Some(config.jobs.lease_s),
            log_interval_s: Some(config.jobs.log_interval_s),
            sample_interval_ms: Some(config.jobs.sample_interval_ms),
            collect_patience_s: Some(config.jobs.collect_patience_s),
            work_dir: Some(config.jobs.work_dir.clone()),
            isolation: Some(config.jobs.isolation),
            job_uids: Some(config.jobs.job_uids.clone()),
            max_artifact_mib: Some(config.jobs.max_artifact_mib),
            max_experiment_artifacts_mib: Some(config.jobs.max_experiment_artifacts_mib),
        }),
        analysis: Some(falcon_core::config::AnalysisLayer {
            max_decompressed_mib: Some(config.analysis.max_decompressed_mib),
            max_profile_mib: Some(config.analysis.max_profile_mib),
            fan_out_hosts: config.analysis.fan_out_hosts,
        }),
    };
    layer.to_toml()
}
