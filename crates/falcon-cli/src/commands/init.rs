//! `falcon init`: writes a working `falcon.toml` and creates the stores it names.

use crate::cli::{GlobalArgs, InitArgs};
use crate::output::{print_json, print_stdout, CliFailure};
use crate::settings;
use falcon_core::config::{Config, ConfigLayer, PoolConfig, CONFIG_FILE_NAME, DEFAULT_DATA_DIR};
use falcon_core::ErrorKind;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Serialize)]
struct InitReport {
    config_file: PathBuf,
    connection: falcon_app::setup::Connection,
}

pub async fn run(global: &GlobalArgs, args: &InitArgs) -> anyhow::Result<ExitCode> {
    // `--config FILE` names the file to write; else DIR/falcon.toml (DIR: the positional argument or here).
    let (dir, path) = match (&global.config, &args.dir) {
        (Some(_), Some(_)) => {
            return Err(CliFailure::new(ErrorKind::Usage, "give the folder or --config FILE, not both").into())
        }
        (Some(file), None) => {
            let dir =
                file.parent().filter(|p| !p.as_os_str().is_empty()).map_or_else(|| PathBuf::from("."), PathBuf::from);
            (dir, file.clone())
        }
        (None, Some(d)) => (d.clone(), d.join(CONFIG_FILE_NAME)),
        (None, None) => {
            let d = std::env::current_dir()?;
            (d.clone(), d.join(CONFIG_FILE_NAME))
        }
    };
    let keep = args.keep && path.exists();
    if path.exists() && !args.force && !keep {
        return Err(CliFailure::new(ErrorKind::Conflict, format!("{} already exists", path.display()))
            .with_hint(
                "use `falcon init --keep` to create the stores it names, `--force` to replace it, or `falcon doctor` \
                 to check it",
            )
            .into());
    }
    if !keep {
        write_config(global, &dir, &path)?;
    }

    // Connect through the file (plus environment and flags), creating the database and the artifact directory
    // and applying migrations: the one command that creates a database.
    let file_layer = settings::read_file_layer(&path)?;
    let env =
        ConfigLayer::from_env(std::env::vars()).map_err(|e| CliFailure::new(ErrorKind::Failure, e.to_string()))?;
    let config = Config::resolve([file_layer, env, settings::flag_layer(global)], settings::machine());
    let app = falcon_app::App::new(config);
    let connection = app.connection().await;
    app.close().await;
    let connection = connection?;

    let report = InitReport { config_file: path.clone(), connection };
    if global.json {
        print_json(&report)?;
    } else {
        let c = &report.connection;
        let verb = if keep { "kept" } else { "wrote" };
        print_stdout(&format!("{verb} {}", path.display()))?;
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

/// Writes a working `falcon.toml` at `path` (creating `dir`).
fn write_config(global: &GlobalArgs, dir: &std::path::Path, path: &std::path::Path) -> anyhow::Result<()> {
    let layer = initial_layer(global, settings::machine().cores);
    let text = format!(
        "# Falcon configuration, written by `falcon init`. Relative paths are relative to this file.\n\
         # Precedence: built-in defaults < this file < FALCON_* environment < command-line flags.\n\
         # Unless set here, the database is SQLite at <data_dir>/falcon.db and artifacts live in\n\
         # <data_dir>/artifacts; set `db = \"mysql://USER@HOST:PORT/DB\"` or `artifacts = \"gs://BUCKET/PREFIX\"`\n\
         # (with a [gcs] table: endpoint, anonymous, credential_path) to use servers instead.\n\n{}",
        layer.to_toml()
    );
    std::fs::create_dir_all(dir)
        .map_err(|e| CliFailure::new(ErrorKind::Failure, format!("creating {}: {e}", dir.display())))?;
    // Existence was checked above (`--force` replaces): write over a regular file only.
    crate::output::write_atomically(path, &text, true)?;
    Ok(())
}

/// The layer `init` writes: the data dir and one local pool, plus any `--db` / `--artifacts` given to `init`.
/// The database and artifact locations are otherwise left to follow the data dir, so `--data-dir` moves all
/// local state.
fn initial_layer(global: &GlobalArgs, cores: u32) -> ConfigLayer {
    ConfigLayer {
        db: global.db.clone(),
        artifacts: global.artifacts.clone(),
        data_dir: Some(global.data_dir.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR))),
        gcs: None,
        s3: None,
        pools: Some(vec![PoolConfig::local_cpu(cores)]),
        jobs: None,
        analysis: None,
    }
}
