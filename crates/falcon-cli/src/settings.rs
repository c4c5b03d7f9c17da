//! Reading configuration: the file (`--config`, `FALCON_CONFIG_FILE`, `./falcon.toml` searched upward, the
//! user config dir), the `FALCON_*` environment and the flags, merged by `falcon_core::config`.

use crate::cli::GlobalArgs;
use crate::output::CliFailure;
use falcon_core::config::{Config, ConfigLayer, MachineFacts, CONFIG_FILE_NAME};
use falcon_core::ErrorKind;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The effective configuration and where it came from.
#[derive(Debug, Serialize)]
pub struct Loaded {
    /// The file read, if any.
    pub file: Option<PathBuf>,
    /// The merged configuration.
    pub config: Config,
}

/// The flags as a configuration layer (the highest precedence).
pub fn flag_layer(global: &GlobalArgs) -> ConfigLayer {
    ConfigLayer {
        data_dir: global.data_dir.clone(),
        db: global.db.clone(),
        artifacts: global.artifacts.clone(),
        ..Default::default()
    }
}

/// The machine facts the defaults depend on.
pub fn machine() -> MachineFacts {
    let cores = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1);
    MachineFacts { cores }
}

/// Loads and merges every layer.
pub fn load(global: &GlobalArgs) -> anyhow::Result<Loaded> {
    let file = match &global.config {
        Some(path) => {
            if !path.is_file() {
                return Err(CliFailure::new(ErrorKind::NotFound, format!("config file {} not found", path.display()))
                    .with_hint("check --config / FALCON_CONFIG_FILE, or run `falcon init` to write one")
                    .into());
            }
            Some(path.clone())
        }
        None => discover(&std::env::current_dir()?),
    };
    let mut layers = Vec::new();
    if let Some(path) = &file {
        layers.push(read_file_layer(path)?);
    }
    let env = ConfigLayer::from_env(std::env::vars()).map_err(|e| {
        CliFailure::new(ErrorKind::Failure, format!("environment variable {}", e))
            .with_hint("fix or unset the variable")
    })?;
    layers.push(env);
    layers.push(flag_layer(global));
    let mut config = Config::resolve(layers, machine());
    config.file = file.clone();
    Ok(Loaded { file, config })
}

/// Reads one file as a layer, with its relative paths made relative to the file's folder.
pub fn read_file_layer(path: &Path) -> anyhow::Result<ConfigLayer> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliFailure::new(ErrorKind::Failure, format!("reading config file {}: {e}", path.display())))?;
    let layer = ConfigLayer::from_toml(&text, &path.display().to_string()).map_err(|e| {
        CliFailure::new(ErrorKind::Failure, format!("invalid config file {e}"))
            .with_hint("see docs/guide/jobs.md (Configuration) for the keys falcon.toml accepts")
    })?;
    let base =
        path.parent().filter(|p| !p.as_os_str().is_empty()).map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    Ok(layer.rebase(&base))
}

/// `falcon.toml` in this folder or the nearest parent, else in the user config dir.
fn discover(start: &Path) -> Option<PathBuf> {
    for dir in start.ancestors() {
        let candidate = dir.join(CONFIG_FILE_NAME);
        if candidate.is_file() {
            return Some(candidate);
        }
    }
    let config_home = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    let user = config_home.join("falcon").join(CONFIG_FILE_NAME);
    user.is_file().then_some(user)
}

/// The application over the configuration these flags select, loaded when a use case first needs it (so
/// commands on local files work even where no configuration file is valid).
pub fn app(global: &GlobalArgs) -> falcon_app::App {
    let global = global.clone();
    falcon_app::App::deferred(move || {
        load(&global).map(|l| l.config).map_err(|e| match e.downcast::<CliFailure>() {
            Ok(f) => f,
            Err(other) => CliFailure::new(ErrorKind::Failure, format!("{other:#}")),
        })
    })
}
