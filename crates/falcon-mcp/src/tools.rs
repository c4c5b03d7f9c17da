//! The tool table, which is also the dispatch: one tool per `falcon-app` use case, named after the CLI command
//! (`exp show` → `exp_show`), declared once (`tool!`): its input type — the use case's request in
//! `falcon_app::requests` (MCP's own two in [`super::args`]) — gives the listed input schema and is what the call
//! reads, its output schema is the Rust type the CLI prints with `--json` (the same `schemars` derive as the
//! OpenAPI document), and its result that same object.

use super::args;
use super::progress::Progress;
use falcon_app::contract::DiffBody;
use falcon_app::experiments::{
    parse_experiment_id as exp_id, ExperimentDetail, ExperimentItem, HistoryView, RunComparison, SubmitProgress,
};
use falcon_app::goals::{GoalComparison, GoalReport, GoalView, PoolUsage};
use falcon_app::page::Page;
use falcon_app::profiles::{ProfileComparison, ProfileReport, TraceRun};
use falcon_app::reports::Report;
use falcon_app::{App, AppError, Result};
use falcon_core::status::GoalStatus;
use falcon_core::ErrorKind;
use schemars::generate::{Contract, SchemaSettings};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

/// One tool as listed.
pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// Changes something (an experiment, a goal, the queue): left out under `--read-only`.
    pub writes: bool,
    pub input: fn() -> Map<String, Value>,
    /// `None` where the result is not one object type.
    pub output: fn() -> Option<Map<String, Value>>,
    /// Reads the arguments into the input type (checked against the schema listed) and runs the use case.
    pub call: for<'a> fn(&'a App, Map<String, Value>, &'a Progress) -> ToolFuture<'a>,
}

/// What a tool's call returns: its `--json` object, or the error.
pub type ToolFuture<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value>> + Send + 'a>>;

/// The JSON Schema of what a tool accepts (as serde reads it: defaulted fields optional), inline.
fn input<T: JsonSchema>() -> Map<String, Value> {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    settings.contract = Contract::Deserialize;
    object(settings.into_generator().into_root_schema_for::<T>().to_value())
}

/// The JSON Schema of what a tool returns (as serde writes it); every number may be `null`, since a non-finite
/// float is written as `null` (as in the OpenAPI document).
fn output<T: JsonSchema>() -> Option<Map<String, Value>> {
    let mut settings = SchemaSettings::draft2020_12();
    settings.meta_schema = None;
    settings.contract = Contract::Serialize;
    let mut value = settings.into_generator().into_root_schema_for::<T>().to_value();
    falcon_app::contract::nullable_numbers(&mut value);
    let map = object(value);
    (map.get("type") == Some(&Value::String("object".into()))).then_some(map)
}

fn object(value: Value) -> Map<String, Value> {
    let mut map = match value {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    // The type's own name and doc are noise to a model reading the tool list: the tool has its description.
    map.remove("title");
    map.remove("description");
    map
}

/// The last bytes of each log.
#[derive(Serialize, JsonSchema)]
pub struct LogTails {
    pub experiment: falcon_core::ids::ExperimentId,
    /// Each log's tail.
    pub logs: Vec<LogTail>,
}

/// One log's tail.
#[derive(Serialize, JsonSchema)]
pub struct LogTail {
    /// `<attempt>/<source>.log`.
    pub source: String,
    /// The log's size in bytes (where the text ends).
    pub bytes: u64,
    /// The last whole lines, at most `tail_bytes`.
    pub text: String,
}

/// One tool, declared once: its name, title, whether it writes, its input type (the listed `inputSchema` and what
/// the call reads, checked against that schema), its output type, its description, and what it does with the input.
macro_rules! tool {
    ($name:literal, $title:literal, $writes:literal, $args:ty, $out:ty, $description:literal,
     |$app:ident, $a:ident, $progress:pat_param| $body:expr) => {
        ToolSpec {
            name: $name,
            title: $title,
            description: $description,
            writes: $writes,
            input: input::<$args>,
            output: output::<$out>,
            call: {
                fn call<'a>($app: &'a App, arguments: Map<String, Value>, $progress: &'a Progress) -> ToolFuture<'a> {
                    Box::pin(async move {
                        #[allow(unused_variables)]
                        let $a: $args = request($name, arguments)?;
                        $body
                    })
                }
                call
            },
        }
    };
}

/// Every tool, in the order they are listed.
pub const TOOLS: &[ToolSpec] = &[
    tool!(
        "context",
        "Falcon context",
        false,
        args::NoArgs,
        falcon_app::context::Context,
        "The environment an agent acts in, small enough for a prompt: stores, pools and their free capacity, the \
         accelerators' peaks, open goals, running experiments, the skills. Call it first.",
        |app, _a, _| json(&app.context().await?)
    ),
    tool!(
        "exp_list",
        "List experiments",
        false,
        falcon_app::requests::ExperimentListRequest,
        Page<ExperimentItem>,
        "A page of experiments, newest first, filtered by status, goal, session, scenario, name, labels or age \
         (`falcon exp list --json`). Pass `next_cursor` back as `cursor` for the next page.",
        |app, a, _| json(&app.list_experiments(&a.query()?, a.cursor.as_deref()).await?)
    ),
    tool!(
        "exp_submit",
        "Submit an experiment",
        true,
        args::ExpSubmit,
        ExperimentDetail,
        "Record an experiment from a spec (a file or YAML/JSON text) and queue its job (`falcon exp submit`). \
         With `wait`, run it here until it ends and analyse it, reporting each status as progress; the result \
         is the experiment as `exp_show` gives it (check `status`).",
        |app, a, progress| submit(app, a, progress).await
    ),
    tool!(
        "exp_show",
        "Show an experiment",
        false,
        falcon_app::requests::ExperimentShowRequest,
        ExperimentDetail,
        "An experiment: record, status history, metric summaries, analyses (MFU, step time, duty cycle, bound-by), \
         the memory verdict, artifacts, and any file that could not be stored or parsed (`skipped`, `notes`).",
        |app, a, _| {
            let (id, warmup) = a.show()?;
            json(&app.show_experiment(id, warmup).await?)
        }
    ),
    tool!(
        "exp_cancel",
        "Cancel an experiment",
        true,
        falcon_app::requests::ExperimentRef,
        ExperimentDetail,
        "Ask for an experiment to be cancelled; a worker stops its job (`falcon exp cancel`).",
        |app, a, _| json(&app.cancel_experiment(a.experiment()?).await?)
    ),
    tool!(
        "exp_logs",
        "An experiment's logs",
        false,
        falcon_app::requests::ExperimentLogsRequest,
        LogTails,
        "The end of each of an experiment's logs (whole lines, 64 KiB each by default).",
        |app, a, _| {
            let id = exp_id(&a.id)?;
            let tails = app.experiment_log_tails(id, a.tail_bytes).await?;
            let logs = tails.into_iter().map(|c| LogTail { source: c.source, bytes: c.next, text: c.text }).collect();
            json(&LogTails { experiment: id, logs })
        }
    ),
    tool!(
        "exp_artifacts",
        "An experiment's artifacts",
        false,
        falcon_app::requests::ExperimentArtifactsRequest,
        Page<falcon_app::experiments::ArtifactView>,
        "A page of an experiment's stored files: kind, size, SHA-256, URI.",
        |app, a, _| {
            let (id, limit) = a.page()?;
            json(&app.experiment_artifacts(id, a.cursor.as_deref(), limit).await?)
        }
    ),
    tool!(
        "exp_compare",
        "Compare runs on a metric",
        false,
        falcon_app::requests::ExperimentCompareRequest,
        RunComparison,
        "A metric across two sets of runs (A the baseline): the verdict (improved, regressed, no change, \
         inconclusive) with its 95% interval and p-value, accounting for run-to-run noise (`falcon exp compare`).",
        |app, a, _| json(&app.compare_experiments(&a.compare()?).await?)
    ),
    tool!(
        "exp_diff",
        "Diff two experiments' configs",
        false,
        falcon_app::requests::ExperimentDiffRequest,
        DiffBody,
        "Every configuration path that differs from A to B, each marked configuration or bookkeeping.",
        |app, a, _| {
            let (a, b) = a.pair()?;
            json(&DiffBody { changes: falcon_app::contract::changes(&app.diff_experiments(a, b).await?) })
        }
    ),
    tool!(
        "exp_history",
        "A metric's history",
        false,
        falcon_app::requests::ExperimentHistoryRequest,
        HistoryView,
        "One metric across a series of runs (by name, config or labels) with its change points and whether each is a \
         regression (`falcon exp history`).",
        |app, a, _| json(&app.history(&a).await?)
    ),
    tool!(
        "goodput",
        "Goodput of runs",
        false,
        falcon_app::requests::GoodputRequest,
        falcon_app::goodput::GoodputReport,
        "Of the chip-seconds ended runs held, how many trained and where the rest went (start-up, compilation, input \
         stalls, checkpoints, restarts, tail, unexplained), per run and summed, with the best run (`falcon goodput \
         --json`); filter by session, goal, pool, since (one experiment's is `exp_show`'s `goodput`). Look at it before the step time: a run that spends 40 % starting up is not fixed by a faster step.",
        |app, a, _| json(&app.goodput_report(&a.query()).await?)
    ),
    tool!(
        "goal_list",
        "List goals",
        false,
        falcon_app::requests::GoalListRequest,
        Page<GoalView>,
        "A page of optimization goals, highest priority first.",
        |app, a, _| json(&app.list_goals(a.status.map(|s| s.as_str()), a.cursor.as_deref(), a.page_size()?).await?)
    ),
    tool!(
        "goal_show",
        "Show a goal",
        false,
        falcon_app::requests::GoalRef,
        GoalView,
        "One goal: metric, target, baseline, owner.",
        |app, a, _| goal(app.goal(a.goal()?).await?)
    ),
    tool!(
        "goal_create",
        "Create a goal",
        true,
        falcon_app::requests::GoalCreateRequest,
        GoalView,
        "A new optimization goal: the metric it is measured by, a target, a baseline experiment.",
        |app, a, _| goal(app.create_goal(&a).await?)
    ),
    tool!(
        "goal_claim",
        "Claim a goal",
        true,
        falcon_app::requests::GoalClaimRequest,
        GoalView,
        "Claim a goal (or, without `id`, the open goal of highest priority) for `owner` under a lease, so two agents \
         never work on one goal.",
        |app, a, _| {
            let (id, lease) = a.claim()?;
            let Some(owner) = a.owner.as_deref() else {
                return Err(AppError::usage("goal_claim: `owner` must name who claims the goal"));
            };
            goal(app.claim_goal(id, owner, lease).await?)
        }
    ),
    tool!(
        "goal_release",
        "Release a goal",
        true,
        falcon_app::requests::GoalCloseRequest,
        GoalView,
        "Give a claimed goal back (open again).",
        |app, a, _| goal(app.close_goal(a.goal()?, GoalStatus::Open, &a.reason, a.owner.as_deref()).await?)
    ),
    tool!(
        "goal_achieve",
        "Mark a goal achieved",
        true,
        falcon_app::requests::GoalCloseRequest,
        GoalView,
        "Close a goal as achieved.",
        |app, a, _| goal(app.close_goal(a.goal()?, GoalStatus::Achieved, &a.reason, a.owner.as_deref()).await?)
    ),
    tool!(
        "goal_abandon",
        "Abandon a goal",
        true,
        falcon_app::requests::GoalCloseRequest,
        GoalView,
        "Close a goal as abandoned.",
        |app, a, _| goal(app.close_goal(a.goal()?, GoalStatus::Abandoned, &a.reason, a.owner.as_deref()).await?)
    ),
    tool!(
        "goal_compare",
        "Rank a goal's experiments",
        false,
        falcon_app::requests::GoalRef,
        GoalComparison,
        "A goal's completed experiments ranked against its baseline, each with its verdict and whether it meets the \
         target.",
        |app, a, _| json::<GoalComparison>(&app.compare_goal(a.goal()?).await?)
    ),
    tool!(
        "goal_report",
        "A goal's report",
        false,
        falcon_app::requests::GoalReportRequest,
        GoalReport,
        "The goal's report (`falcon goal report --json`): ranking, the best experiment against the baseline, its \
         profile comparison and config diff.",
        |app, a, _| {
            let (id, top) = a.report()?;
            json(&app.goal_report(id, top).await?)
        }
    ),
    tool!(
        "session_show",
        "Show a session",
        false,
        falcon_app::requests::SessionShowRequest,
        falcon_app::goals::SessionDetail,
        "A sweep session: its axes and each run's status and metrics.",
        |app, a, _| json(&app.session_with_metric(a.session()?, a.metric.as_deref()).await?)
    ),
    tool!(
        "bisect",
        "Find the commit that moved a metric",
        true,
        falcon_app::requests::BisectStartRequest,
        falcon_app::contract::BisectView,
        "Runs the spec (YAML/JSON text naming `code.repo`) at the first-parent commits between `good` and `bad`, \
         repeating runs until run-level verdicts decide, and names the culprit: `culprit` {commit, subject} or null, \
         `verdict` (the ends'), `runs`, `tested[]` (`falcon bisect`). Without `wait` it returns once the ends' runs \
         are submitted; `bisect_show` follows it (a worker must run the jobs).",
        |app, a, progress| bisect(app, a, progress).await
    ),
    tool!(
        "bisect_show",
        "Show a bisection",
        false,
        falcon_app::requests::BisectShowRequest,
        falcon_app::contract::BisectView,
        "A bisection's state: searching or decided, its culprit, every commit tested with its runs and verdict.",
        |app, a, _| json(&app.bisect(a.session()?).await?)
    ),
    tool!(
        "pool_list",
        "List pools",
        false,
        falcon_app::requests::PageRequest,
        Page<PoolUsage>,
        "The configured pools and their free capacity.",
        |app, a, _| json(&app.pools(a.cursor.as_deref(), a.page_size()?).await?)
    ),
    tool!(
        "profile_analyze",
        "Analyse a profile",
        false,
        falcon_app::requests::ProfileAnalyzeRequest,
        ProfileReport,
        "What an XProf capture says (`falcon profile analyze --json`): step time, MFU, duty cycle, the op profile, \
         roofline, memory and kernels. Input: a .xplane.pb, a run directory, an experiment (e-12), gs:// or s3://.",
        |app, a, _| {
            let options = a.options()?;
            if let Some((id, report)) = Report::answering_analysis(&a.input, a.host.as_deref(), &options) {
                return kept(app.report(id, &report).await?);
            }
            let (_, report) = app.analyze_profile(&a.input, a.host.as_deref(), &options).await?;
            json::<ProfileReport>(&report)
        }
    ),
    tool!(
        "profile_trace",
        "Analyse a trace",
        false,
        falcon_app::requests::ProfileTraceRequest,
        TraceRun,
        "Where each step's time goes (compute, communication, overlap, idle gaps, host), from a capture's timeline \
         or a Chrome / PyTorch trace (`falcon profile trace --json`).",
        |app, a, _| {
            let options = a.options()?;
            if let Some((id, report)) = Report::answering_trace(&a.input, a.host.as_deref(), &options) {
                return kept(app.report(id, &report).await?);
            }
            json::<TraceRun>(&app.analyze_trace(&a.input, a.host.as_deref(), &options).await?)
        }
    ),
    tool!(
        "profile_compare",
        "Compare two profiles",
        false,
        falcon_app::requests::ProfileCompareRequest,
        ProfileComparison,
        "Two captures A/B (A the baseline): step time and MFU verdicts, roofline moves, op deltas; the config diff \
         when both are experiments (`falcon profile compare --json`).",
        |app, a, _| {
            let options = a.options()?;
            if let Some((id, report)) = Report::answering_comparison(&a.a, &a.b, a.host.as_deref(), &options) {
                return kept(app.report(id, &report).await?);
            }
            let result = app.compare_profiles(&a.a, &a.b, a.host.as_deref(), &options).await?;
            falcon_app::render::profile_compare::json(&result)
                .map_err(|e| AppError::new(ErrorKind::Failure, format!("encoding the result: {e}")))
        }
    ),
    tool!(
        "accuracy_compare",
        "Compare two runs' accuracy",
        false,
        falcon_app::requests::AccuracyRequest,
        falcon_app::accuracy::AccuracyReport,
        "Two runs' metric series (loss, grad norm, …) aligned by step and compared with tolerances, A the reference: \
         pass or fail per metric, where they first diverge (`falcon accuracy compare --json`).",
        |app, a, _| json(&app.compare_accuracy(&a).await?)
    ),
    tool!(
        "kernel_analyze",
        "Analyse kernel benchmarks",
        false,
        falcon_app::requests::KernelAnalyzeRequest,
        falcon_app::kernel::KernelReport,
        "Kernel-bench results: correctness, speed-up over the reference, fast_p, achieved TFLOP/s and GB/s against \
         the roofline (`falcon kernel analyze --json`).",
        |app, a, _| json(&app.analyze_kernels(&a.input, &a.options()?).await?.0)
    ),
    tool!(
        "kernel_compare",
        "Compare kernel benchmarks",
        false,
        falcon_app::requests::KernelCompareRequest,
        falcon_app::kernel::KernelComparison,
        "Two kernel-bench runs row by row (base the baseline), with regressions flagged (`falcon kernel compare \
         --json`).",
        |app, a, _| json(&app.compare_kernels(&a.base, &a.new).await?.0)
    ),
];

/// The tools offered: all, or under `--read-only` those that change nothing.
pub fn offered(read_only: bool) -> impl Iterator<Item = &'static ToolSpec> {
    TOOLS.iter().filter(move |t| !(read_only && t.writes))
}

/// A use case's request (`falcon_app::requests`), checked against the schema its `inputSchema` is.
fn request<T: schemars::JsonSchema + DeserializeOwned>(tool: &str, arguments: Map<String, Value>) -> Result<T> {
    falcon_app::requests::read(arguments).map_err(|e| {
        AppError::usage(format!("{tool}: bad arguments: {e}")).with_hint("the tool's inputSchema lists them")
    })
}

/// The tool's object: the value's `--json` text read back, as a client reads it (`serde_json::to_value` refuses an
/// integer beyond 64 bits — a PyTorch trace's step starts, picoseconds since the epoch — that the text holds and a
/// reader takes as a number).
fn json<T: Serialize>(value: &T) -> Result<Value> {
    let fail = |e: serde_json::Error| AppError::new(ErrorKind::Failure, format!("encoding the result: {e}"));
    serde_json::from_str(&serde_json::to_string(value).map_err(fail)?).map_err(fail)
}

/// A kept report (`falcon_app::reports`) as the tool's object.
fn kept(bytes: Vec<u8>) -> Result<Value> {
    serde_json::from_slice(&bytes).map_err(|e| AppError::new(ErrorKind::Failure, format!("a kept report: {e}")))
}

/// Runs a tool: its `--json` object, or the error.
pub async fn call(app: &App, name: &str, arguments: Map<String, Value>, progress: &Progress) -> Result<Value> {
    match TOOLS.iter().find(|t| t.name == name) {
        Some(tool) => (tool.call)(app, arguments, progress).await,
        None => Err(AppError::new(ErrorKind::NotFound, format!("no tool named `{name}`"))),
    }
}

fn goal(g: falcon_app::goals::GoalRecord) -> Result<Value> {
    json(&GoalView::from(g))
}

/// `exp_submit`: the spec read (a file through the same bounded reader as the CLI, or the text given), submitted,
/// and with `wait` run here, each status reported as progress.
async fn submit(app: &App, a: args::ExpSubmit, progress: &Progress) -> Result<Value> {
    let (text, label) = match (&a.spec_path, &a.spec_yaml) {
        (Some(path), None) => (falcon_app::files::read_spec_file(std::path::Path::new(path))?, path.clone()),
        (None, Some(text)) => (text.clone(), "spec_yaml".to_string()),
        _ => return Err(AppError::usage("exp_submit: give `spec_path` or `spec_yaml`, one of them")),
    };
    if a.timeout_s.is_some() && !a.wait {
        return Err(AppError::usage("exp_submit: `timeout_s` bounds `wait`; pass `wait: true` with it"));
    }
    let spec = falcon_core::spec::parse_spec(&text, &label)?;
    let timeout = a.timeout_s.map(std::time::Duration::from_secs);
    let mut step = 0u32;
    let (detail, _events) = app
        .submit_experiment(&spec, a.wait, timeout, |p| {
            step += 1;
            let message = match p {
                SubmitProgress::Submitted(rec) => format!("{}: submitted `{}`", rec.id, rec.name),
                SubmitProgress::Status(rec) => format!("{}: {}", rec.id, rec.status),
            };
            progress.report(f64::from(step), message);
        })
        .await?;
    json(&detail)
}

/// `bisect`: started, and with `wait` carried to its answer here, each step reported as progress.
async fn bisect(app: &App, a: falcon_app::requests::BisectStartRequest, progress: &Progress) -> Result<Value> {
    a.check()?;
    let view = app.start_bisect(&a).await?;
    if !a.wait || view.state == "decided" {
        return json(&view);
    }
    let mut step = 0u32;
    let view = app
        .wait_bisect(view.session, a.timeout(), |v| {
            step += 1;
            progress.report(f64::from(step), format!("{}: {}", v.session, v.message));
        })
        .await?;
    json(&view)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result with an integer beyond 64 bits (a PyTorch trace's step start in picoseconds since the epoch) is an
    /// object, as the CLI's `--json` text is — not "encoding the result: number out of range".
    #[test]
    fn a_result_with_a_128_bit_integer_is_encoded() {
        #[derive(Serialize)]
        struct Step {
            start_ps: i128,
        }
        let v = json(&Step { start_ps: 1_765_000_000_000_000_000_000 }).unwrap();
        assert_eq!(v["start_ps"].as_f64(), Some(1.765e21));
    }

    #[test]
    fn every_tool_is_named_like_its_command_and_has_object_schemas() {
        let mut names = std::collections::HashSet::new();
        for t in TOOLS {
            assert!(names.insert(t.name), "{} listed twice", t.name);
            assert!(t.name.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{}", t.name);
            assert_eq!((t.input)().get("type"), Some(&Value::String("object".into())), "{} input", t.name);
            let output = (t.output)().unwrap_or_else(|| panic!("{}: no object output schema", t.name));
            assert!(output.get("properties").is_some() || output.get("allOf").is_some(), "{} output", t.name);
            assert!(!t.description.is_empty() && !t.title.is_empty());
        }
        let read_only: Vec<&str> = offered(true).map(|t| t.name).collect();
        for writer in ["exp_submit", "exp_cancel", "goal_create", "goal_claim", "goal_release"] {
            assert!(!read_only.contains(&writer), "{writer} offered read-only");
        }
        assert!(read_only.contains(&"profile_analyze") && read_only.contains(&"exp_show"));
    }

    #[tokio::test]
    async fn every_listed_tool_is_dispatched_and_refuses_an_unknown_argument() {
        // Arguments are read before the application is touched: a store that cannot open is never reached.
        let app = App::deferred(|| Err(AppError::usage("no configuration in this test")));
        let progress = Progress::none();
        for t in TOOLS {
            let mut args = Map::new();
            args.insert("no_such_argument".into(), Value::Bool(true));
            let e = call(&app, t.name, args, &progress).await.expect_err(t.name);
            assert_eq!(e.kind(), ErrorKind::Usage, "{}: {e}", t.name);
            assert!(e.to_string().starts_with(&format!("{}: bad arguments", t.name)), "{}: {e}", t.name);
        }
        let e = call(&app, "nope", Map::new(), &progress).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
    }
}
