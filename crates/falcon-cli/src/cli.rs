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
    /// Experiments: submit, list, show, cancel, logs, artifacts, diff, compare.
    #[command(subcommand)]
    Exp(ExpCommand),
    /// Run the orchestration loop (jobs and experiments) until interrupted.
    Worker(WorkerArgs),
}

#[derive(Debug, Subcommand)]
pub enum ExpCommand {
    /// Submit an experiment spec (YAML or JSON).
    Submit {
        /// The spec file.
        file: PathBuf,
        /// Wait until the experiment ends, running the worker loop here.
        #[arg(long)]
        wait: bool,
    },
    /// List experiments, newest first.
    List(ListArgs),
    /// Everything about one experiment: status, history, artifacts, metrics.
    Show {
        /// Experiment id (`e-12` or `12`).
        id: String,
    },
    /// Stop an experiment.
    Cancel {
        /// Experiment id.
        id: String,
    },
    /// Print an experiment's logs.
    Logs {
        /// Experiment id.
        id: String,
    },
    /// List an experiment's artifacts.
    Artifacts {
        /// Experiment id.
        id: String,
    },
    /// Path-level config differences between two experiments.
    Diff {
        /// Baseline experiment.
        a: String,
        /// Candidate experiment.
        b: String,
    },
    /// Compare a metric of two experiments (A = baseline) with a significance verdict.
    Compare(CompareArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only this status (PENDING, PROVISIONING, RUNNING, COMPLETED, FAILED, CANCELLED).
    #[arg(long)]
    pub status: Option<String>,
    /// Only this goal (`g-7`).
    #[arg(long)]
    pub goal: Option<String>,
    /// Only this session (`s-3`).
    #[arg(long)]
    pub session: Option<String>,
    /// Only this scenario.
    #[arg(long)]
    pub scenario: Option<String>,
    /// Only experiments with this label (`key=value`, repeatable).
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// Page size.
    #[arg(long, default_value_t = 50)]
    pub limit: u32,
    /// Page cursor: only ids below this one (the last id of the previous page).
    #[arg(long)]
    pub before: Option<String>,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Baseline experiment.
    pub a: String,
    /// Candidate experiment.
    pub b: String,
    /// Metric to compare.
    #[arg(long, default_value = "step_time_s")]
    pub metric: String,
    /// Larger values are better (for metrics without a standard direction).
    #[arg(long, conflicts_with = "lower_is_better")]
    pub higher_is_better: bool,
    /// Smaller values are better.
    #[arg(long)]
    pub lower_is_better: bool,
    /// Warm-up steps to drop (default: the larger of 2 and 10%).
    #[arg(long)]
    pub warmup: Option<usize>,
    /// Exit 5 when the verdict is `regressed`.
    #[arg(long)]
    pub fail_on_regression: bool,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Stop after this many passes (default: run until interrupted).
    #[arg(long)]
    pub passes: Option<u64>,
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
