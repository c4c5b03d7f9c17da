//! The `falcon profile` command line: its subcommands and their arguments (syntax only).

use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum ProfileCommand {
    /// Analyse a profile: an experiment id (`e-12`), a `.xplane.pb` file, a run directory, or a gs:// URI.
    Analyze(ProfileAnalyzeArgs),
    /// Deep trace analysis: per-step breakdown (compute / exposed collective / memcpy / host wait / idle),
    /// collective overlap, idle gaps, host-bound check, steps — from an XSpace or a Chrome trace JSON.
    Trace(ProfileTraceArgs),
    /// Copy an experiment's (or a URI's) profile files into the local cache and print where they are.
    Fetch {
        /// Experiment id or gs:// / s3:// URI.
        target: String,
        /// Only this host's file.
        #[arg(long)]
        host: Option<String>,
    },
    /// Write a profile as a Chrome trace (gzipped when OUTPUT ends in .gz) for Perfetto / chrome://tracing.
    ExportTrace {
        /// Experiment id, `.xplane.pb` file, run directory or gs:// URI.
        target: String,
        /// Output file (`trace.json.gz`).
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Host to export when the capture has several (default: the first).
        #[arg(long)]
        host: Option<String>,
        /// Replace OUTPUT if it exists.
        #[arg(long)]
        force: bool,
    },
    /// A/B compare two profiles (A = baseline, B = candidate): step-time and MFU verdicts, op-level diff,
    /// category deltas, roofline evolution, memory. Exit 5 with --fail-on-regression when B regressed.
    Compare(ProfileCompareArgs),
    /// One shard of a run's hosts analysed to a partial result (what each job of `analyze --fan-out` runs);
    /// `analyze --fan-out` merges the shards' partials.
    Shard(ProfileShardArgs),
}

#[derive(Debug, Args)]
pub struct ProfileShardArgs {
    /// Run directory (with plugins/profile/<run>/ or `*.xplane.pb` files) or gs:// / s3:// URI.
    pub target: String,
    /// Which shard of how many: `K/N`, K from 0 (the run's hosts in name order, split into N contiguous parts).
    #[arg(long, value_name = "K/N")]
    pub shard: String,
    /// Tools the merged report will have (repeat or comma-separate; `all`: every one).
    #[arg(long, value_delimiter = ',', default_value = "all", value_parser = tool_names())]
    pub tool: Vec<String>,
    /// Where to write the partial result (CBOR, atomically; default: $FALCON_ARTIFACT_DIR/profile-shard.cbor, the
    /// job's artifact, replaced when it exists).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace the --output file if it exists (a symlink, FIFO or device never is).
    #[arg(long)]
    pub force: bool,
}

/// Output formats of reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// Terminal tables.
    Table,
    /// Markdown.
    Md,
    /// A self-contained HTML page with charts.
    Html,
    /// JSON (same as --json).
    Json,
}

impl From<ReportFormat> for falcon_app::render::Format {
    fn from(f: ReportFormat) -> Self {
        match f {
            ReportFormat::Table => Self::Table,
            ReportFormat::Md => Self::Md,
            ReportFormat::Html => Self::Html,
            ReportFormat::Json => Self::Json,
        }
    }
}

#[derive(Debug, Args)]
pub struct ProfileCompareArgs {
    /// Baseline: experiment id, `.xplane.pb` file, run directory or gs:// URI.
    pub a: String,
    /// Candidate: experiment id, `.xplane.pb` file, run directory or gs:// URI.
    pub b: String,
    /// Output format (default: table; --json means json).
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,
    /// Write the report to FILE instead of stdout (atomically; an existing file only with --force).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace the --output file if it exists.
    #[arg(long)]
    pub force: bool,
    /// Exit 5 when B regressed (step-time or MFU verdict `regressed`).
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Only this host of multi-host captures (both sides).
    #[arg(long)]
    pub host: Option<String>,
    /// Ops in the ranked regression/improvement lists and text tables (JSON has every op).
    #[arg(long, default_value_t = falcon_app::requests::DEFAULT_TOP)]
    pub top: u32,
}

#[derive(Debug, Args)]
pub struct ProfileTraceArgs {
    /// Experiment id, `.xplane.pb`, run directory, Chrome trace (`.json`/`.json.gz`: XProf trace viewer, JAX,
    /// PyTorch profiler), or gs:// URI.
    pub target: String,
    /// Analyses to run (repeat or comma-separate): breakdown, overlap, gaps, host, steps, all.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub analysis: Vec<String>,
    /// Only this host of a multi-host capture.
    #[arg(long)]
    pub host: Option<String>,
    /// Idle gaps to list.
    #[arg(long, default_value_t = falcon_app::profiles::TraceOptions::default().top_gaps)]
    pub top_gaps: usize,
    /// Render Markdown instead of plain tables (ignored with --json).
    #[arg(long)]
    pub markdown: bool,
    /// Step rows in text/Markdown output (JSON always has every row).
    #[arg(long, default_value_t = 15)]
    pub top: usize,
    /// Cap in MiB on what a gzipped trace may inflate to (default: `[analysis] max_decompressed_mib` in
    /// falcon.toml, else 4096); past it the command fails naming the cap.
    #[arg(long, value_name = "MIB")]
    pub max_decompressed: Option<u64>,
}

#[derive(Debug, Args)]
pub struct ProfileAnalyzeArgs {
    /// Experiment id (`e-12`), `.xplane.pb` file, run directory (with plugins/profile/<run>/), or gs:// URI.
    pub target: String,
    /// Tools to run (repeat or comma-separate; `all`: every one).
    #[arg(long, value_delimiter = ',', default_value = "all", value_parser = tool_names())]
    pub tool: Vec<String>,
    /// Analyse only this host of a multi-host capture.
    #[arg(long)]
    pub host: Option<String>,
    /// The workload's model FLOPs per step (all chips), for MFU instead of the profile's cost stats (an
    /// experiment's logged `model_flops` metric is used by default).
    #[arg(long, value_name = "FLOPS")]
    pub model_flops: Option<f64>,
    /// Peak TFLOP/s of the device when neither the capture nor the catalog knows it (a CPU): makes MFU known.
    #[arg(long, value_name = "TFLOPS")]
    pub peak_tflops: Option<f64>,
    /// Render Markdown instead of plain tables (ignored with --json).
    #[arg(long)]
    pub markdown: bool,
    /// Rows per table in text/Markdown output (JSON always has every row).
    #[arg(long, default_value_t = 15)]
    pub top: usize,
    /// Analyse the run as N cluster jobs (shards of its hosts, submitted as one session on a pool offering
    /// `cpu`), merged into the same report; 0: in this process. Default: `[analysis] fan_out_hosts`.
    #[arg(long, value_name = "N", conflicts_with = "host")]
    pub fan_out: Option<usize>,
    /// With a fan-out: give up waiting after this long (`90s`, `30m`, `2h`; exit 1), leaving the jobs running.
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
}

/// The profile tools' names and `all`, from the tool type: clap lists them in the help and refuses others.
fn tool_names() -> clap::builder::PossibleValuesParser {
    let names = falcon_app::profiles::Tool::ALL.map(falcon_app::profiles::Tool::as_str);
    clap::builder::PossibleValuesParser::new(names.into_iter().chain(["all"]))
}
