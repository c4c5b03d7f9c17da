//! What the EXP tests share now that they are one binary: a folder a job can reach, and the embedded defaults with
//! their data dir in it.

use falcon_core::config::{Config, ConfigLayer, MachineFacts};
use std::os::unix::fs::PermissionsExt;

/// A temporary folder readable by everyone: as root, jobs run as users of their own, who must reach the job folders
/// beside the data dir.
pub fn job_dir() -> tempfile::TempDir {
    tempfile::Builder::new().permissions(std::fs::Permissions::from_mode(0o755)).tempdir().unwrap()
}

/// The embedded defaults with the data dir `.falcon` under `dir`, and `toml` (more settings) on top.
pub fn config_under(dir: &std::path::Path, toml: &str) -> Config {
    let layer = ConfigLayer::from_toml(&format!("data_dir = \".falcon\"\n{toml}"), "falcon.toml").unwrap().rebase(dir);
    Config::resolve([layer], MachineFacts { cores: 2 })
}
