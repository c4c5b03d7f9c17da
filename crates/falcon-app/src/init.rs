//! The `init` use case: write a working `falcon.toml` (SQLite under the data dir, a local artifact directory,
//! one local CPU pool) and create the stores it names: the one use case that creates a database.
//!
//! Which file: `config_file` when given (`--config FILE`), else `DIR/falcon.toml` (DIR: `dir`, else the
//! current folder). An existing file is an error unless `force` (replace it) or `keep` (leave it and only
//! create its stores). Reading the written file back with the environment and flags on top is the front
//! end's (it owns where configuration comes from), so [`init`] takes that step as a function.

use crate::{AppError, Result};
use falcon_core::config::{Config, ConfigLayer, MachineFacts, PoolConfig, CONFIG_FILE_NAME, DEFAULT_DATA_DIR};
use falcon_core::ErrorKind;
use serde::Serialize;
use std::path::{Path, PathBuf};

pub use crate::setup::Connection;

/// What `init` is asked to do.
#[derive(Debug, Clone)]
pub struct InitRequest {
    /// The file to write (`--config FILE`); excludes `dir`.
    pub config_file: Option<PathBuf>,
    /// The folder to write `falcon.toml` in (default: the current folder).
    pub dir: Option<PathBuf>,
    /// Keep an existing file and only create the stores it names (write it when there is none).
    pub keep: bool,
    /// Replace an existing file.
    pub force: bool,
    /// Written into the file when given (`--db`); else the database follows the data dir.
    pub db: Option<String>,
    /// Written into the file when given (`--artifacts`); else the artifacts follow the data dir.
    pub artifacts: Option<String>,
    /// The data dir written into the file (default `.falcon`).
    pub data_dir: Option<PathBuf>,
    /// The machine the local pool is sized for.
    pub machine: MachineFacts,
}

/// What `init` did: the file (written or kept) and the stores it connected to, created where missing.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct InitReport {
    /// The configuration file.
    pub config_file: PathBuf,
    /// The database, artifact store and pools it names.
    pub connection: Connection,
    /// Whether an existing file was kept (`keep`) rather than written.
    #[serde(skip)]
    pub kept: bool,
}

/// Writes the configuration file (unless kept), resolves the configuration through it with `resolve` (the
/// file plus the environment and flags, as the front end reads them), then connects, creating the database
/// and the artifact directory and applying migrations.
pub async fn init(request: &InitRequest, resolve: impl FnOnce(&Path) -> Result<Config>) -> Result<InitReport> {
    let (dir, path) = config_path(request)?;
    let kept = request.keep && path.exists();
    if path.exists() && !request.force && !kept {
        return Err(AppError::new(ErrorKind::Conflict, format!("{} already exists", path.display())).with_hint(
            "use `falcon init --keep` to create the stores it names, `--force` to replace it, or `falcon doctor` to \
             check it",
        ));
    }
    if !kept {
        write_config(&dir, &path, &template(&initial_layer(request)))?;
    }

    let config = resolve(&path)?;
    let data_dir = config.data_dir.clone();
    set_aside_stale_jobs(&config);
    let cx = crate::ctx::Ctx::new(config);
    let connection = crate::setup::connection(&cx).await;
    cx.close().await;
    // Falcon's own folder is its alone: workloads (other users, as root) may not even list it.
    if !kept {
        private(&data_dir, 0o700);
    }
    Ok(InitReport { config_file: path, connection: connection?, kept })
}

/// The folder and the file `init` writes: `config_file` (in its folder, `.` for a bare name), else
/// `DIR/falcon.toml`; both given is a usage error.
pub fn config_path(request: &InitRequest) -> Result<(PathBuf, PathBuf)> {
    match (&request.config_file, &request.dir) {
        (Some(_), Some(_)) => Err(AppError::usage("give the folder or --config FILE, not both")),
        (Some(file), None) => {
            let dir =
                file.parent().filter(|p| !p.as_os_str().is_empty()).map_or_else(|| PathBuf::from("."), PathBuf::from);
            Ok((dir, file.clone()))
        }
        (None, Some(d)) => Ok((d.clone(), d.join(CONFIG_FILE_NAME))),
        (None, None) => {
            let d = std::env::current_dir().map_err(|e| AppError::new(ErrorKind::Failure, e.to_string()))?;
            Ok((d.clone(), d.join(CONFIG_FILE_NAME)))
        }
    }
}

/// The layer `init` writes: the data dir and one local pool, plus any `db` / `artifacts` asked for. The
/// database and artifact locations are otherwise left to follow the data dir, so `--data-dir` moves all
/// local state.
pub fn initial_layer(request: &InitRequest) -> ConfigLayer {
    ConfigLayer {
        db: request.db.clone(),
        artifacts: request.artifacts.clone(),
        data_dir: Some(request.data_dir.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR))),
        gcs: None,
        s3: None,
        pools: Some(vec![PoolConfig::local_cpu(request.machine.cores)]),
        jobs: None,
        analysis: None,
    }
}

/// The text of the file: a commented header (precedence, where the stores live by default) and `layer`.
pub fn template(layer: &ConfigLayer) -> String {
    format!(
        "# Falcon configuration, written by `falcon init`. Relative paths are relative to this file.\n\
         # Precedence: built-in defaults < this file < FALCON_* environment < command-line flags.\n\
         # Unless set here, the database is SQLite at <data_dir>/falcon.db and artifacts live in\n\
         # <data_dir>/artifacts; set `db = \"mysql://USER@HOST:PORT/DB\"` or `artifacts = \"gs://BUCKET/PREFIX\"`\n\
         # (with a [gcs] table: endpoint, anonymous, credential_path) to use servers instead.\n\n{}",
        layer.to_toml()
    )
}

/// Writes `text` at `path`, creating `dir`: under a temporary name beside it, then renamed over it (existence
/// was checked by the caller: a regular file is replaced, a symlink, directory or device never is).
fn write_config(dir: &Path, path: &Path, text: &str) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| AppError::new(ErrorKind::Failure, format!("creating {}: {e}", dir.display())))?;
    crate::files::check_output_target(path, true)?;
    crate::files::write_atomically(path, text)?;
    // It may hold a database password or a store's secret key.
    private(path, 0o600);
    Ok(())
}

/// Job folders outlive a data dir (they are beside it): when `init` makes a new SQLite store, folders left there
/// by an earlier store would be taken for this store's jobs of the same names, so they are moved aside.
fn set_aside_stale_jobs(config: &Config) {
    let Some(db) = falcon_core::config::sqlite_path(&config.db) else { return };
    let work = &config.jobs.work_dir;
    let stale = std::fs::read_dir(work).is_ok_and(|mut d| d.next().is_some());
    if Path::new(db).exists() || !stale {
        return;
    }
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let mut aside = work.clone().into_os_string();
    aside.push(format!(".stale-{secs}"));
    match std::fs::rename(work, &aside) {
        Ok(()) => tracing::warn!(
            "job folders of an earlier store were in {}: moved to {} (a new store starts with none)",
            work.display(),
            Path::new(&aside).display()
        ),
        Err(e) => {
            tracing::warn!("job folders of an earlier store are in {}; moving them aside failed: {e}", work.display())
        }
    }
}

/// Sets `path`'s mode when it exists (a failure leaves it as it was: the boundary does not rest on it).
fn private(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    if std::fs::symlink_metadata(path).is_ok_and(|m| !m.file_type().is_symlink()) {
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> InitRequest {
        InitRequest {
            config_file: None,
            dir: None,
            keep: false,
            force: false,
            db: None,
            artifacts: None,
            data_dir: None,
            machine: MachineFacts { cores: 4 },
        }
    }

    #[test]
    fn the_file_is_the_config_flag_or_dir_falcon_toml_never_both() {
        let file = InitRequest { config_file: Some("sub/my.toml".into()), ..request() };
        assert_eq!(config_path(&file).unwrap(), (PathBuf::from("sub"), PathBuf::from("sub/my.toml")));
        let bare = InitRequest { config_file: Some("my.toml".into()), ..request() };
        assert_eq!(config_path(&bare).unwrap(), (PathBuf::from("."), PathBuf::from("my.toml")));
        let dir = InitRequest { dir: Some("d".into()), ..request() };
        assert_eq!(config_path(&dir).unwrap(), (PathBuf::from("d"), Path::new("d").join(CONFIG_FILE_NAME)));
        let both = InitRequest { config_file: Some("a.toml".into()), dir: Some("d".into()), ..request() };
        assert_eq!(config_path(&both).unwrap_err().kind(), ErrorKind::Usage);
    }

    #[test]
    fn the_template_reads_back_as_the_layer_it_was_written_from() {
        let layer = initial_layer(&InitRequest { db: Some("sqlite://x.db".into()), ..request() });
        assert_eq!(layer.data_dir.as_deref(), Some(Path::new(DEFAULT_DATA_DIR)));
        let text = template(&layer);
        assert!(text.starts_with("# Falcon configuration, written by `falcon init`."), "{text}");
        assert_eq!(ConfigLayer::from_toml(&text, "falcon.toml").unwrap(), layer);
    }

    #[tokio::test]
    async fn an_existing_file_is_a_conflict_unless_kept_or_forced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CONFIG_FILE_NAME);
        std::fs::write(&path, "# mine\n").unwrap();
        let asked = InitRequest { dir: Some(dir.path().to_path_buf()), ..request() };
        let never = |_: &Path| -> Result<Config> { panic!("nothing is resolved before the conflict") };
        assert_eq!(init(&asked, never).await.unwrap_err().kind(), ErrorKind::Conflict);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "# mine\n", "left as it was");

        // Forced: replaced before the configuration is resolved (the resolver's failure ends it here).
        let forced = InitRequest { force: true, ..asked.clone() };
        let stop = |p: &Path| -> Result<Config> {
            assert!(std::fs::read_to_string(p).unwrap().contains("[[pools]]"));
            Err(AppError::new(ErrorKind::Failure, "stop"))
        };
        assert_eq!(init(&forced, stop).await.unwrap_err().to_string(), "stop");
        assert!(std::fs::read_dir(dir.path()).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp")));
    }
}
