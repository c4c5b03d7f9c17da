//! `falcon init`: writes a working `falcon.toml` and creates the stores it names. The use case is
//! [`falcon_app::init::init`]; this module turns the flags into its request, reads the written file back the
//! way every command reads configuration (file, then environment, then flags) and prints the report.

use crate::cli::{GlobalArgs, InitArgs};
use crate::output::{print_json, print_stdout, CliFailure};
use crate::settings;
use falcon_app::init::InitRequest;
use falcon_core::config::{Config, ConfigLayer};
use falcon_core::ErrorKind;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, args: &InitArgs) -> anyhow::Result<ExitCode> {
    let request = InitRequest {
        config_file: global.config.clone(),
        dir: args.dir.clone(),
        keep: args.keep,
        force: args.force,
        db: global.db.clone(),
        artifacts: global.artifacts.clone(),
        data_dir: global.data_dir.clone(),
        machine: settings::machine(),
    };
    let report = falcon_app::init::init(&request, |path| resolve(global, path)).await?;
    if global.json {
        print_json(&report)?;
    } else {
        let c = &report.connection;
        let verb = if report.kept { "kept" } else { "wrote" };
        print_stdout(&format!("{verb} {}", report.config_file.display()))?;
        print_stdout(&format!(
            "  database:  {} (schema version {})",
            c.database,
            c.schema_version.map_or("none".into(), |v| v.to_string())
        ))?;
        print_stdout(&format!("  artifacts: {}", c.artifacts))?;
        print_stdout(&format!("  pools:     {}", c.pools.join(", ")))?;
        print_stdout("next: `falcon doctor` checks that everything works")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The configuration through the file `init` wrote (or kept), plus the environment and the flags.
fn resolve(global: &GlobalArgs, path: &Path) -> falcon_app::Result<Config> {
    let file_layer = settings::read_file_layer(path).map_err(|e| match e.downcast::<CliFailure>() {
        Ok(f) => f,
        Err(other) => CliFailure::new(ErrorKind::Failure, format!("{other:#}")),
    })?;
    let env =
        ConfigLayer::from_env(std::env::vars()).map_err(|e| CliFailure::new(ErrorKind::Failure, e.to_string()))?;
    Ok(Config::resolve([file_layer, env, settings::flag_layer(global)], settings::machine()))
}
