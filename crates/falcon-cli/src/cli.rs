//! The command line, as clap derive structs (syntax only; meaning lives in the commands).

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

mod bisect;
mod direction;
mod doctor;
mod profile;
pub use bisect::BisectArgs;
pub use direction::DirectionArgs;
pub use doctor::DoctorArgs;
pub use profile::*;

/// Falcon: run, track and understand ML performance experiments on TPU/GPU clusters.
#[derive(Debug, Parser)]
#[command(name = "falcon", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// The heading every command's help lists the options of [`GlobalArgs`] under, apart from its own.
pub const GLOBAL_OPTIONS: &str = "Global options";

/// Options every command takes (listed under their own heading, [`GLOBAL_OPTIONS`], in every help).
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Print machine-readable JSON on stdout (errors too).
    #[arg(long, global = true, help_heading = GLOBAL_OPTIONS)]
    pub json: bool,
    /// Configuration file (default: ./falcon.toml, searched upward, then the user config dir).
    #[arg(long, global = true, value_name = "FILE", env = "FALCON_CONFIG_FILE", help_heading = GLOBAL_OPTIONS)]
    pub config: Option<PathBuf>,
    /// Data directory for local state [env: FALCON_DATA_DIR] (default ./.falcon).
    #[arg(long, global = true, value_name = "DIR", help_heading = GLOBAL_OPTIONS)]
    pub data_dir: Option<PathBuf>,
    /// Metadata store URL: sqlite://PATH or mysql://USER@HOST:PORT/DB [env: FALCON_DB].
    #[arg(long, global = true, value_name = "URL", help_heading = GLOBAL_OPTIONS)]
    pub db: Option<String>,
    /// Artifact store: a directory, gs://BUCKET/PREFIX or s3://BUCKET/PREFIX [env: FALCON_ARTIFACTS].
    #[arg(long, global = true, value_name = "URL", help_heading = GLOBAL_OPTIONS)]
    pub artifacts: Option<String>,
    /// More logging on stderr (-v info, -vv debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count, help_heading = GLOBAL_OPTIONS)]
    pub verbose: u8,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a working ./falcon.toml (SQLite, local artifact dir, one local CPU pool) and create the stores.
    Init(InitArgs),
    /// Check every configured component (database, artifact store, pools) and say what is wrong; --calibrate
    /// measures this machine's CPU peaks for the XLA:CPU roofline and MFU.
    Doctor(DoctorArgs),
    /// Configuration: show.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Experiments: submit, list, show, cancel, logs, artifacts, diff, compare, history.
    #[command(subcommand)]
    Exp(ExpCommand),
    /// Run the orchestration loop (jobs and experiments) until interrupted.
    Worker(WorkerArgs),
    /// Goodput: of the chip-hours ended runs held, how many trained and where the rest went (start-up, compile,
    /// input stalls, checkpoints, restarts, tail), per run and summed; filter by --session, --goal, --pool, --since.
    Goodput(GoodputArgs),
    /// Free disk: remove job folders of ended jobs whose outputs were collected, and trim the profile cache.
    Gc(GcArgs),
    /// Optimization goals: create, list, show, set-baseline, claim, release, achieve, abandon, compare, report.
    #[command(subcommand)]
    Goal(GoalCommand),
    /// Sessions, a sweep submitted as a batch of experiments: submit, show.
    #[command(subcommand)]
    Session(SessionCommand),
    /// Which commit moved a metric: runs the spec at commits between a good and a bad end, repeating runs until
    /// run-level verdicts decide, and names the culprit (a session holds the search and its runs).
    Bisect(BisectArgs),
    /// Resource pools: list.
    #[command(subcommand)]
    Pool(PoolCommand),
    /// XProf profiles: analyze (overview/MFU, ops, HLO stats, roofline, memory, kernels, steps), trace, fetch,
    /// export-trace, compare, shard (one fan-out job's share of a run's hosts).
    #[command(subcommand)]
    Profile(ProfileCommand),
    /// Numerical alignment across frameworks: compare (metric series of MaxText, Megatron-LM, tfevents,
    /// JSONL/CSV), tensors (dumps: .npy, .npz, safetensors).
    #[command(subcommand)]
    Accuracy(AccuracyCommand),
    /// Kernel-bench results: analyze (achieved TFLOP/s and GB/s, % of roofline, speed-ups, fast_p), compare.
    #[command(subcommand)]
    Kernel(KernelCommand),
    /// What an agent needs before it acts: version, stores, pools with their load and peaks, open goals, active
    /// and recent experiments, the skills (Markdown, at most 8 KB; `--json` for the object).
    Context(ContextArgs),
    /// Agent skills (Agent Skills format, embedded in the binary): list, show, install.
    #[command(subcommand)]
    Skills(SkillsCommand),
    /// Web API tokens (`falcon serve`): create (shown once), list, revoke.
    #[command(subcommand)]
    Token(TokenCommand),
    /// The Web API (REST under /api/v1, OpenAPI at /api/v1/openapi.json) and the worker loop, in one process.
    Serve(ServeArgs),
    /// The MCP server (Model Context Protocol over stdio) for agents: every use case as a tool, the skills as
    /// prompts. Point an agent harness at `falcon mcp` (see docs/guide/mcp-and-skills.md).
    Mcp(McpArgs),
}

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Offer only the tools that change nothing (no submit, cancel, goal create, claim or close).
    #[arg(long)]
    pub read_only: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on. A non-loopback address (or --allowed-host) needs a live token first.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub bind: std::net::SocketAddr,
    /// Serve the API only; no worker loop in this process.
    #[arg(long)]
    pub no_worker: bool,
    /// Another Host name that addresses this server (its public name behind a reverse proxy); repeatable.
    #[arg(long = "allowed-host", value_name = "HOST[:PORT]")]
    pub allowed_hosts: Vec<String>,
    /// Heavy analyses (profiles, comparisons, traces) at once; beyond, requests get 429.
    #[arg(long, default_value_t = 2)]
    pub max_analyses: usize,
    /// Connections at once; one over it takes the place of the oldest idle one, or waits up to 1 s for one (then
    /// 503). A few (16, at most a quarter) are kept for /healthz and requests with a token or a sign-in.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Connections at once from one non-loopback address (IPv6: one /64); over it, only through the reserve.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections_per_client: u32,
    /// Connections at once from this machine, every loopback address together (more: a reverse proxy here speaks
    /// for many clients); over it, only through the reserve.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections_per_local_client: u32,
    /// Event streams and downloads at once per token (a sign-in counts for its token), or per address without one;
    /// beyond, 429.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_streams_per_client: u32,
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token; its secret is printed once and stored only as a hash.
    Create {
        /// Who or what holds it (1–64 of A-Z a-z 0-9 . _ -); the default owner of what it claims.
        #[arg(long)]
        name: String,
        /// `read` (every GET), `write` (submit, cancel, claim, close), `admin` (tokens, others' work).
        #[arg(long)]
        scope: String,
    },
    /// Every token (never a secret), revoked ones included.
    List(PageArgs),
    /// Revoke a token: requests carrying it (and browsers signed in with it) get 401 from now on. Revoking the
    /// last live one leaves `falcon serve` closed to everyone until a new one is created.
    Revoke {
        /// The token's name.
        name: String,
    },
}

#[derive(Debug, Args)]
pub struct ContextArgs {
    /// Markdown (the default without --json).
    #[arg(long)]
    pub markdown: bool,
}

#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// Every skill: name, description, files.
    List,
    /// One skill's SKILL.md (with --json: its fields and text).
    Show {
        /// The skill's name (`falcon skills list`).
        name: String,
    },
    /// Write every skill where an agent harness finds them, below the current folder.
    Install {
        /// `claude` (.claude/skills), `gemini` (.gemini/skills), `codex` or `agents` (.agents/skills), or a folder.
        #[arg(long)]
        target: String,
        /// Replace installed skills that differ.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AccuracyCommand {
    /// Align two runs' metric series by step and compare them (A is the reference).
    Compare(AccuracyCompareArgs),
    /// Compare two tensor dumps tensor by tensor (A is the reference).
    Tensors(AccuracyTensorsArgs),
}

#[derive(Debug, Args)]
pub struct AccuracyCompareArgs {
    /// Reference run: a metrics file (MaxText JSONL or console log, Megatron log or golden-values JSON,
    /// tfevents file or directory, JSONL, CSV) or an experiment id.
    pub a: String,
    /// Candidate run, same kinds as A.
    pub b: String,
    /// Metric to compare (repeatable; either side's name); default: the loss metrics of both sides.
    #[arg(long)]
    pub metric: Vec<String>,
    /// Relative tolerance for every compared metric (default per metric: loss 0.05, as Megatron's CI).
    #[arg(long)]
    pub rtol: Option<f64>,
    /// Absolute tolerance (default 0).
    #[arg(long)]
    pub atol: Option<f64>,
    /// Extra name mapping `A_NAME=B_NAME` (repeatable), on top of the built-in map.
    #[arg(long, value_name = "A=B")]
    pub map: Vec<String>,
    /// Step column of generic JSONL/CSV inputs (default: `step`, else `iteration`).
    #[arg(long)]
    pub step_column: Option<String>,
    /// Output format (default: table; --json means json).
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,
    /// Write the report to FILE instead of stdout (atomically; an existing file only with --force).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace the --output file if it exists.
    #[arg(long)]
    pub force: bool,
    /// Exit 5 when the overall verdict is `fail`.
    #[arg(long)]
    pub fail_on_mismatch: bool,
}

#[derive(Debug, Args)]
pub struct AccuracyTensorsArgs {
    /// Reference dump: a `.npy` file, a `.npz` archive, a `.safetensors` file, or a directory of `.npy` files.
    pub a: String,
    /// Candidate dump, same kinds as A.
    pub b: String,
    /// Name mapping file: one `A_NAME B_NAME` (or `A_NAME=B_NAME`) per line, `#` comments.
    #[arg(long, value_name = "FILE")]
    pub map: Option<PathBuf>,
    /// Relative tolerance of the allclose check (default: torch's per dtype).
    #[arg(long)]
    pub rtol: Option<f64>,
    /// Absolute tolerance of the allclose check (default: torch's per dtype).
    #[arg(long)]
    pub atol: Option<f64>,
    /// Tensor rows in text output (JSON has every tensor).
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Output format (default: table; --json means json).
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,
    /// Exit 5 when any tensor fails allclose.
    #[arg(long)]
    pub fail_on_mismatch: bool,
    /// Cap in MiB on what the deflated members of an `.npz` may inflate to (default: `[analysis]
    /// max_decompressed_mib` in falcon.toml, else 4096); past it the command fails naming the cap.
    #[arg(long, value_name = "MIB")]
    pub max_decompressed: Option<u64>,
}

#[derive(Debug, Subcommand)]
pub enum KernelCommand {
    /// Analyse a kernel-bench results file (JSONL or CSV) or an experiment's results.
    Analyze(KernelAnalyzeArgs),
    /// Compare a kernel-bench run with a baseline run, kernel by kernel (BASE is the baseline).
    Compare(KernelCompareArgs),
}

#[derive(Debug, Args)]
pub struct KernelAnalyzeArgs {
    /// Results: a `kernel_bench*.jsonl` / `.csv` file or an experiment id.
    pub results: String,
    /// Peak TFLOP/s for % of roofline when the hardware is not in the catalog (e.g. a CPU).
    #[arg(long)]
    pub peak_tflops: Option<f64>,
    /// Peak memory bandwidth in GB/s for % of roofline when the hardware is not in the catalog.
    #[arg(long)]
    pub peak_gbs: Option<f64>,
    /// `fast_p` threshold: the fraction of kernels that are correct and faster than their reference by more
    /// than this speed-up (KernelBench's p; default 1.0).
    #[arg(long, default_value_t = falcon_app::kernel::KernelOptions::default().p)]
    pub p: f64,
    /// Output format (default: table; --json means json).
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,
}

#[derive(Debug, Args)]
pub struct KernelCompareArgs {
    /// Baseline results (file or experiment id).
    pub base: String,
    /// New results (file or experiment id).
    pub new: String,
    /// Output format (default: table; --json means json).
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,
    /// Exit 5 when any kernel regressed.
    #[arg(long)]
    pub fail_on_regression: bool,
}

#[derive(Debug, Subcommand)]
pub enum PoolCommand {
    /// The configured pools and what they carry now.
    List(PageArgs),
}

/// Paging of a list command (`--json` prints `{"items": [...], "next_cursor": …}`).
#[derive(Debug, Clone, Args)]
pub struct PageArgs {
    /// Start at this page: the `next_cursor` a previous page printed.
    #[arg(long)]
    pub cursor: Option<String>,
    /// Page size (0: no rows; at most 1000).
    #[arg(long, default_value_t = falcon_app::requests::DEFAULT_PAGE)]
    pub limit: u32,
}

impl From<&PageArgs> for falcon_app::requests::PageRequest {
    fn from(a: &PageArgs) -> Self {
        falcon_app::requests::PageRequest { limit: a.limit, cursor: a.cursor.clone() }
    }
}

#[derive(Debug, Subcommand)]
pub enum GoalCommand {
    /// Record a goal.
    Create(GoalCreateArgs),
    /// List goals, highest priority first.
    List(GoalListArgs),
    /// One goal.
    Show {
        /// Goal id (`g-7`).
        id: String,
    },
    /// Set a goal's baseline experiment (it must exist: a baseline that names the goal in its spec runs after
    /// the goal is created, and is set here once it has).
    SetBaseline {
        /// Goal id (`g-7`).
        id: String,
        /// Experiment id (`e-41`).
        #[arg(required_unless_present = "clear")]
        experiment: Option<String>,
        /// Clear the baseline instead.
        #[arg(long, conflicts_with = "experiment")]
        clear: bool,
    },
    /// Claim a goal (or `--next`: the best open one) with a lease.
    Claim {
        /// Goal id.
        id: Option<String>,
        /// Claim the highest-priority, oldest open goal.
        #[arg(long, conflicts_with = "id")]
        next: bool,
        /// Who claims (default: $USER).
        #[arg(long)]
        owner: Option<String>,
        /// Lease length in seconds (at most 7 days); an expired lease releases the claim.
        #[arg(long, default_value_t = falcon_app::requests::DEFAULT_LEASE_S)]
        lease_s: u64,
    },
    /// Give a claimed goal back.
    Release(GoalClose),
    /// Mark a goal achieved.
    Achieve(GoalClose),
    /// Give a goal up.
    Abandon(GoalClose),
    /// Rank the goal's experiments on its metric against the baseline.
    Compare {
        /// Goal id.
        id: String,
    },
    /// Report on a goal: target and progress, best experiment, its config diff and metric verdicts against
    /// the baseline, and the profile comparison of the two.
    Report(GoalReportArgs),
}

#[derive(Debug, Args)]
pub struct GoalReportArgs {
    /// Goal id.
    pub id: String,
    /// Output format (default: table; --json means json).
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,
    /// Write the report to FILE instead of stdout (atomically; an existing file only with --force).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace the --output file if it exists.
    #[arg(long)]
    pub force: bool,
    /// Ops in the profile comparison's ranked lists (1 to 1000).
    #[arg(long, default_value_t = falcon_app::requests::DEFAULT_TOP)]
    pub top: u32,
}

#[derive(Debug, Args)]
pub struct GoalClose {
    /// Goal id.
    pub id: String,
    /// Why (recorded in the goal's history).
    #[arg(long, default_value = "")]
    pub reason: String,
    /// Who (default: $USER).
    #[arg(long)]
    pub owner: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Expand a sweep file into experiments and submit them as one session.
    Submit {
        /// The sweep file (a spec plus a `sweep` block).
        file: PathBuf,
        /// The goal the session serves.
        #[arg(long)]
        goal: Option<String>,
        /// Wait until every experiment ends.
        #[arg(long)]
        wait: bool,
        /// With --wait: give up after this long (`90s`, `30m`, `2h`; exit 1), leaving the experiments running.
        #[arg(long, value_name = "DURATION", requires = "wait")]
        timeout: Option<String>,
        /// Run every combination N times (`<name>-r1` … `-rN`, one config hash): the repeats a run-level
        /// verdict needs. Replaces the file's `repeats`.
        #[arg(long, value_name = "N")]
        repeats: Option<usize>,
    },
    /// A session: its experiments, aggregate status and the keys that differ.
    Show {
        /// Session id (`s-3`).
        id: String,
        /// The metric of the sweep grid (default: the goal's metric, else step_time_s, tokens_per_s or loss).
        #[arg(long)]
        metric: Option<String>,
    },
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
        /// With --wait: give up after this long (`90s`, `30m`, `2h`; exit 1), leaving the experiment running.
        #[arg(long, value_name = "DURATION", requires = "wait")]
        timeout: Option<String>,
    },
    /// List experiments, newest first.
    List(ListArgs),
    /// Everything about one experiment: status, history, artifacts, metrics.
    Show {
        /// Experiment id (`e-12` or `12`).
        id: String,
        /// Summarise metrics without the first N steps instead of the default warm-up (the larger of 2 and 10%).
        #[arg(long)]
        warmup: Option<u32>,
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
        /// Keep printing new output until the experiment ends (runs the worker loop here).
        #[arg(short, long)]
        follow: bool,
        /// Only the last N lines of each log.
        #[arg(long, value_name = "N", conflicts_with = "follow")]
        tail: Option<u32>,
    },
    /// List an experiment's artifacts.
    Artifacts {
        /// Experiment id.
        id: String,
        #[command(flatten)]
        page: PageArgs,
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
    /// A metric across a series of experiments and the change points in it.
    History(HistoryArgs),
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Metric.
    #[arg(long, default_value = falcon_app::requests::DEFAULT_METRIC)]
    pub metric: String,
    /// Experiments with this name.
    #[arg(long)]
    pub name: Option<String>,
    /// Experiments with this config hash (the full hash or a prefix, such as the 12 characters `exp list`
    /// prints).
    #[arg(long)]
    pub config_hash: Option<String>,
    /// Experiments with this label (`key=value`).
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// Experiments whose code was on this branch.
    #[arg(long)]
    pub branch: Option<String>,
    /// Exit 5 when a change point is a regression.
    #[arg(long)]
    pub fail_on_regression: bool,
}

/// `exp history`'s series and metric are [`falcon_app::requests::ExperimentHistoryRequest`]'s fields.
impl From<&HistoryArgs> for falcon_app::requests::ExperimentHistoryRequest {
    fn from(a: &HistoryArgs) -> Self {
        falcon_app::requests::ExperimentHistoryRequest {
            name: a.name.clone(),
            config_hash: a.config_hash.clone(),
            label: a.labels.clone(),
            branch: a.branch.clone(),
            metric: a.metric.clone(),
        }
    }
}

/// `goal create`'s flags: [`falcon_app::requests::GoalCreateRequest`]'s fields.
#[derive(Debug, Args)]
pub struct GoalCreateArgs {
    /// One line: what and by how much ("llama3-8b on v5e-256: MFU 38% → 45%").
    #[arg(long)]
    pub title: String,
    /// Metric (`mfu`, `step_time_s`, `tokens_per_s`, …).
    #[arg(long)]
    pub metric: String,
    /// Which way is better (default: the metric's standard direction).
    #[arg(long, ignore_case = true, value_parser = directions())]
    pub direction: Option<falcon_core::status::Direction>,
    /// Target value.
    #[arg(long)]
    pub target: Option<f64>,
    /// Baseline experiment (`e-1`).
    #[arg(long)]
    pub baseline: Option<String>,
    /// Higher is claimed first.
    #[arg(long, default_value_t = falcon_app::requests::DEFAULT_PRIORITY, allow_negative_numbers = true)]
    pub priority: i64,
    /// Workload or model.
    #[arg(long)]
    pub workload: Option<String>,
    /// Hardware.
    #[arg(long)]
    pub hardware: Option<String>,
}

impl From<&GoalCreateArgs> for falcon_app::requests::GoalCreateRequest {
    fn from(a: &GoalCreateArgs) -> Self {
        falcon_app::requests::GoalCreateRequest {
            title: a.title.clone(),
            metric: a.metric.clone(),
            direction: a.direction,
            target: a.target,
            baseline: a.baseline.clone(),
            priority: a.priority,
            workload: a.workload.clone(),
            hardware: a.hardware.clone(),
        }
    }
}

/// `goal list`'s flags: [`falcon_app::requests::GoalListRequest`]'s fields.
#[derive(Debug, Args)]
pub struct GoalListArgs {
    /// Only this status.
    #[arg(long, value_parser = core_enum::<falcon_core::status::GoalStatus>)]
    pub status: Option<falcon_core::status::GoalStatus>,
    /// Page size (0: no rows; at most 1000).
    #[arg(long, default_value_t = falcon_app::requests::DEFAULT_PAGE)]
    pub limit: u32,
    /// Start at this page: the `next_cursor` a previous page printed.
    #[arg(long)]
    pub cursor: Option<String>,
}

impl From<&GoalListArgs> for falcon_app::requests::GoalListRequest {
    fn from(a: &GoalListArgs) -> Self {
        falcon_app::requests::GoalListRequest { status: a.status, limit: a.limit, cursor: a.cursor.clone() }
    }
}

/// `exp compare`'s arguments: [`falcon_app::requests::ExperimentCompareRequest`]'s fields (the direction as two
/// flags).
impl From<&CompareArgs> for falcon_app::requests::ExperimentCompareRequest {
    fn from(a: &CompareArgs) -> Self {
        falcon_app::requests::ExperimentCompareRequest {
            a: a.a.clone(),
            b: a.b.clone(),
            metric: a.metric.clone(),
            direction: a.direction.direction(),
            warmup: a.warmup.map(|w| u32::try_from(w).unwrap_or(u32::MAX)),
        }
    }
}

/// A core enum's value from a flag, case-insensitively (its error lists the values).
/// Core's goal directions as a flag's possible values (any case, as core reads them).
fn directions() -> impl clap::builder::TypedValueParser<Value = falcon_core::status::Direction> {
    use clap::builder::TypedValueParser;
    use falcon_core::status::Direction;
    clap::builder::PossibleValuesParser::new(Direction::ALL.iter().map(|d| d.as_str()))
        .try_map(|s| s.parse::<Direction>())
}

fn core_enum<T: std::str::FromStr>(text: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    text.parse::<T>().map_err(|e| e.to_string())
}

/// `exp list`'s flags are [`falcon_app::requests::ExperimentListRequest`]'s fields.
impl From<&ListArgs> for falcon_app::requests::ExperimentListRequest {
    fn from(a: &ListArgs) -> Self {
        falcon_app::requests::ExperimentListRequest {
            status: a.status,
            goal: a.goal.clone(),
            session: a.session.clone(),
            scenario: a.scenario,
            name: a.name.clone(),
            commit: a.commit.clone(),
            branch: a.branch.clone(),
            label: a.labels.clone(),
            since: a.since.clone(),
            limit: a.limit,
            with_metrics: a.with_metrics,
            before: a.before.clone(),
            cursor: a.cursor.clone(),
        }
    }
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only this status.
    #[arg(long, value_parser = core_enum::<falcon_core::status::ExperimentStatus>)]
    pub status: Option<falcon_core::status::ExperimentStatus>,
    /// Only this goal (`g-7`).
    #[arg(long)]
    pub goal: Option<String>,
    /// Only this session (`s-3`).
    #[arg(long)]
    pub session: Option<String>,
    /// Only this scenario.
    #[arg(long, value_parser = core_enum::<falcon_core::status::Scenario>)]
    pub scenario: Option<falcon_core::status::Scenario>,
    /// Only experiments of this name.
    #[arg(long)]
    pub name: Option<String>,
    /// Only experiments that ran this commit (a SHA or its first 4+ hex digits).
    #[arg(long)]
    pub commit: Option<String>,
    /// Only experiments whose code was on this branch.
    #[arg(long)]
    pub branch: Option<String>,
    /// Only experiments with this label (`key=value`, repeatable).
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// Only experiments recorded within this long (`90m`, `2h`, `1d`, `1h30m`).
    #[arg(long, value_name = "DURATION")]
    pub since: Option<String>,
    /// Page size (0: no rows; at most 1000).
    #[arg(long, default_value_t = falcon_app::requests::DEFAULT_PAGE)]
    pub limit: u32,
    /// Give each row its stored metric summaries (`metrics`: count, mean, median, p90, min, max, last, spread
    /// per metric, as `exp show`), read for the whole page at once; the table gets each metric's median.
    #[arg(long)]
    pub with_metrics: bool,
    /// Only ids below this one.
    #[arg(long)]
    pub before: Option<String>,
    /// Start at this page: the `next_cursor` a previous page printed.
    #[arg(long)]
    pub cursor: Option<String>,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Baseline runs: an experiment (`e-1`), several (`e-1,e-2,e-3`), a session's completed runs (`s-3`) or
    /// every completed run of a config (`config:<hash or its first 12 characters>`).
    pub a: String,
    /// Candidate runs, written the same way.
    pub b: String,
    /// Metric to compare.
    #[arg(long, default_value = falcon_app::requests::DEFAULT_METRIC)]
    pub metric: String,
    #[command(flatten)]
    pub direction: DirectionArgs,
    /// Warm-up steps to drop (default: the larger of 2 and 10%).
    #[arg(long)]
    pub warmup: Option<usize>,
    /// Exit 5 when the verdict is `regressed`.
    #[arg(long)]
    pub fail_on_regression: bool,
}

#[derive(Debug, Args)]
pub struct GoodputArgs {
    /// Only this session's runs (`s-3`).
    #[arg(long)]
    pub session: Option<String>,
    /// Only this goal's runs (`g-7`).
    #[arg(long)]
    pub goal: Option<String>,
    /// Only runs whose job last ran on this pool.
    #[arg(long)]
    pub pool: Option<String>,
    /// Only runs recorded within this long (`90m`, `2h`, `7d`).
    #[arg(long, value_name = "DURATION")]
    pub since: Option<String>,
    /// Only runs of this name.
    #[arg(long)]
    pub name: Option<String>,
    /// Only runs with this label (`key=value`, repeatable).
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// List what would be removed; remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Remove the folder (under <data-dir>/jobs) of a job only when it ended longer ago than this; a running
    /// job's folder, or one whose outputs are not all in the artifact store, is never removed.
    #[arg(long, value_name = "DURATION", default_value = "7d")]
    pub older_than: String,
    /// Trim the profile cache (<data-dir>/cache/profiles, fetched again when needed) to at most this size,
    /// least recently used first.
    #[arg(long, value_name = "SIZE", default_value = "10G")]
    pub cache_cap: String,
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
    /// Keep an existing falcon.toml and only create the database and artifact directory it names (writes the
    /// file when there is none): safe to run on every setup.
    #[arg(long, conflicts_with = "force")]
    pub keep: bool,
    /// Folder to write falcon.toml in (default: the current folder).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the effective configuration and where it came from.
    Show,
}
