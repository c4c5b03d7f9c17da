//! The command line, as clap derive structs (syntax only; meaning lives in the commands).

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Falcon: run, track and understand ML performance experiments on TPU/GPU clusters.
#[derive(Debug, Parser)]
#[command(name = "falcon", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Print machine-readable JSON on stdout (errors too).
    #[arg(long, global = true)]
    pub json: bool,
    /// Configuration file (default: ./falcon.toml, searched upward, then the user config dir).
    #[arg(long, global = true, value_name = "FILE", env = "FALCON_CONFIG_FILE")]
    pub config: Option<PathBuf>,
    /// Data directory for local state [env: FALCON_DATA_DIR] (default ./.falcon).
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Metadata store URL: sqlite://PATH or mysql://USER@HOST:PORT/DB [env: FALCON_DB].
    #[arg(long, global = true, value_name = "URL")]
    pub db: Option<String>,
    /// Artifact store: a directory, gs://BUCKET/PREFIX or s3://BUCKET/PREFIX [env: FALCON_ARTIFACTS].
    #[arg(long, global = true, value_name = "URL")]
    pub artifacts: Option<String>,
    /// More logging on stderr (-v info, -vv debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a working ./falcon.toml (SQLite, local artifact dir, one local CPU pool) and create the stores.
    Init(InitArgs),
    /// Check every configured component (database, artifact store, pools) and say what is wrong.
    Doctor,
    /// Show configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Replace an existing falcon.toml.
    #[arg(long)]
    pub force: bool,
    /// Folder to write falcon.toml in (default: the current folder).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the effective configuration and where it came from.
    Show,
}
