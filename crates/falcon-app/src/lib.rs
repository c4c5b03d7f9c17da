//! `falcon-app`: the application layer every front end sits on (docs/DESIGN.md §1).
//!
//! The CLI, the Web API and the MCP server are thin shells: they parse a request, call one function here and
//! render the struct it returns. This crate composes EXP (`falcon-exp`) and analysis (`falcon-analysis`) into
//! the use cases those front ends offer, and holds the renderers they share (Markdown, HTML, SVG charts).
//!
//! - **Owns:** use cases that need both EXP and analysis (the goal report, …); the agent skills embedded in the
//!   binary ([`skills`]) and the agent's context ([`context`]); the shared renderers ([`render`]); the one error type of the layer ([`AppError`], with the kind that fixes exit codes).
//! - **Must not:** hold business rules (a goal's progress, verdicts, lifecycle are EXP's; numbers are
//!   analysis'); touch storage or cluster clients (`falcon-infra`, `falcon-job`, `sqlx`, `opendal`, `kube`);
//!   print or read the terminal.
//! - **Invariants:** a use case is implemented once, here, and every front end returns its struct as the same
//!   JSON; missing pieces of a composed answer are notes, not failures.
//!
//! # In detail
//!
//! The application's surface is the `impl App` block at the end of this file: one method per use case, each a
//! short hand-off to the module that does it (read it top to bottom to see everything a front end can ask).
//!
//! - **Owns:** every use case a front end offers, on an `App` handle that connects EXP and analysis lazily:
//!   experiments (submit, wait, list as pages, show with the memory verdict composed from its row
//!   (`ExperimentDetail`), metric charts, cancel, logs (tails, from offsets), the followed streams of `streams` (logs as they grow, statuses as they change: one typed event sequence for `exp logs -f`, the API's and the dashboard's server-sent events), artifacts, diff, compare,
//!   history), the worker pass with its analyses (`WorkerEvent`s), goals (create, list, claim, close, compare, the
//!   goal report), sessions, pools, profiles (analyze, trace, fetch, export, compare with config diff), accuracy and
//!   tensors, kernel bench, doctor, `gc` (job folders of ended, collected jobs; the profile cache trimmed LRU to a
//!   cap); the agent skills of `skills/`, embedded at build time (`build.rs`) and listed, shown and installed by
//!   `skills`; the agent's `context` (stores, pools with their load and the catalog's peaks, goals, experiments,
//!   skills; Markdown ≤ 8 KB); `Page` (items + opaque cursor); `AppError` (kind → exit code / HTTP status, hint); the
//!   shared renderers in `render/` (Markdown, HTML, inline SVG — roofline, distributions, bars, line charts with
//!   min/max thinning — text tables from the same section model; `memory` for the verdict's terminal lines)
//! - **Must not:** hold business rules (progress, verdicts, lifecycle are EXP's; numbers are analysis'); name
//!   `falcon-infra`, `falcon-job`, `sqlx`, `opendal`, `kube`; print
//! - **Invariants:** a use case exists once; missing parts of a composed answer are notes, not failures

pub mod accuracy;
pub mod bisect;
pub mod context;
pub mod contract;
mod ctx;
pub mod error;
mod experiment_goodput;
pub mod experiments;
pub mod fan_out;
pub mod files;
pub mod gc;
pub mod goal_report;
pub mod goals;
pub mod goodput;
pub mod init;
pub mod kernel;
pub mod page;
pub mod profiles;
pub mod render;
pub mod reports;
pub mod requests;
pub mod series;
pub mod session_grid;
pub mod setup;
pub mod skills;
pub mod streams;
pub mod tokens;
pub mod worker;

pub use error::{AppError, Result};
pub use falcon_core::config::Config;

use crate::accuracy::{AccuracyReport, AccuracyRequest, TensorOptions, TensorReport};
use crate::context::Context;
use crate::experiments::{
    ArtifactRecord, CompareRequest, ExperimentDetail, ExperimentItem, HistoryView, ListQuery, MetricChart,
    RunComparison, SubmitProgress,
};
use crate::gc::{GcReport, GcRequest};
use crate::goal_report::GoalReport;
use crate::goals::{
    GoalComparison, GoalRecord, GoalView, PoolUsage, RunProgress, SessionDetail, SessionRequest, SessionView,
};
use crate::init::Connection;
use crate::kernel::{KernelComparison, KernelOptions, KernelReport};
use crate::page::Page;
use crate::profiles::{
    AnalyzeOptions, CompareOptions, ProfileCompareResult, ProfileReport, ResolvedProfile, TraceExport, TraceOptions,
    TraceRun,
};
use crate::reports::Report;
use crate::setup::DoctorReport;
use crate::streams::{Follow, StreamEvent};
use crate::tokens::{CreatedToken, Principal, TokenView};
use crate::worker::{Worker, WorkerEvent};
use falcon_core::auth::Scope;
use falcon_core::ids::{ExperimentId, GoalId, SessionId};
use falcon_core::spec::ExperimentSpec;
use falcon_core::status::{ExperimentStatus, GoalStatus};
use falcon_exp::diff::Change;
use falcon_exp::ExperimentRecord;
use std::path::Path;
use std::time::Duration;

/// The application: the handle every front end holds. Its configuration (or how to load it) and the lazily
/// connected EXP and analysis are a [`ctx::Ctx`], which each use case's module is handed; no module names `App`
/// (the structure test `falcon-app/tests/it/structure.rs` holds it), so the surface below depends on the modules
/// and never the other way round.
pub struct App {
    cx: std::sync::Arc<ctx::Ctx>,
}

impl App {
    /// An application over `config`; nothing is connected yet.
    pub fn new(config: Config) -> App {
        App { cx: std::sync::Arc::new(ctx::Ctx::new(config)) }
    }

    /// An application whose configuration is loaded (once) by `load` when a use case first needs it.
    pub fn deferred(load: impl Fn() -> Result<Config> + Send + Sync + 'static) -> App {
        App { cx: std::sync::Arc::new(ctx::Ctx::deferred(load)) }
    }

    /// The configuration it runs with (loaded now if it was deferred).
    pub fn config(&self) -> Result<&Config> {
        self.cx.config()
    }

    /// Allows at most `n` (≥ 1) heavy analyses at once from now on (a server sets it once; later calls change
    /// nothing): one more is refused as `too_many_requests` rather than queued.
    pub fn limit_heavy_analyses(&self, n: usize) {
        self.cx.limit_heavy_analyses(n)
    }

    // ---- Bisections ([`bisect`]): which commit moved a metric

    /// Starts a bisection ([`falcon_exp::bisect`]): the ends resolved, the first-parent commits between them listed,
    /// a session recorded and the ends' runs submitted. The worker (or [`App::wait_bisect`]) carries it on.
    pub async fn start_bisect(&self, request: &requests::BisectStartRequest) -> Result<contract::BisectView> {
        bisect::start(&self.cx, request).await
    }

    /// A bisection's state now (its stored answer once decided), without taking a step.
    pub async fn bisect(&self, id: SessionId) -> Result<contract::BisectView> {
        bisect::show(&self.cx, id).await
    }

    /// Takes one step of a bisection: what its runs say now, and the runs it needs next submitted.
    pub async fn advance_bisect(&self, id: SessionId) -> Result<contract::BisectView> {
        bisect::advance(&self.cx, id).await
    }

    /// Carries a bisection to its answer here (the embedded worker of `falcon bisect --wait`); `progress` hears of
    /// each step whose runs changed. At `timeout` it is left searching, for the worker.
    pub async fn wait_bisect(
        &self,
        id: SessionId,
        timeout: Option<Duration>,
        progress: impl FnMut(&contract::BisectView),
    ) -> Result<contract::BisectView> {
        bisect::wait(&self.cx, id, timeout, progress).await
    }

    /// Submissions come from a user on this machine standing in `dir` (the CLI): a spec's `code.repo` may name a
    /// local repository, and a spec without `code` records the git work tree around `dir`. Without it (a server),
    /// `code.repo` must be a URL and nothing is recorded from a work tree. Set once.
    pub fn submit_from(&self, dir: std::path::PathBuf) {
        self.cx.submit_from(dir)
    }

    /// Closes what was connected (pools drain; SQLite checkpoints its log).
    pub async fn close(&self) {
        self.cx.close().await
    }
}

/// The application's surface: every use case a front end offers, each a short hand-off to the module that does
/// it (construction and the lazy connections are above and in `ctx`; the entries that need no `App` — `init`,
/// `skills`, `files`, `profiles::parse_tools`, the renderers — are the modules' own functions).
impl App {
    // ---- Experiments: submit, list, show, charts, logs, artifacts, kept reports, cancel, diff, compare, history ([`experiments`])

    /// Records an experiment from a checked spec and queues its job; with `wait`, runs the worker loop here
    /// until it ends (the embedded worker of `exp submit --wait`) and, when it completed, the analyses it
    /// calls for. `progress` hears of the submission, then of each status reached while waiting. Returns the
    /// experiment's detail and the analysis events.
    pub async fn submit_experiment(
        &self,
        spec: &ExperimentSpec,
        wait: bool,
        timeout: Option<std::time::Duration>,
        progress: impl FnMut(SubmitProgress<'_>),
    ) -> Result<(ExperimentDetail, Vec<WorkerEvent>)> {
        experiments::submit_experiment(&self.cx, spec, wait, timeout, progress).await
    }

    /// A page of the experiments matching the query, newest first. The cursor of the next page is the last
    /// row's id (a bound like `before`; given both, the lower holds); `limit` 0 gives an empty page. With
    /// `with_metrics`, the page's metric summaries come from the summary rows in one read (no metrics file is
    /// opened).
    pub async fn list_experiments(&self, query: &ListQuery, cursor: Option<&str>) -> Result<Page<ExperimentItem>> {
        experiments::list_experiments(&self.cx, query, cursor).await
    }

    /// The experiment's per-step metrics as charts: each numeric field's `(step, value)` points thinned to at
    /// most `max_points` (every bucket's lowest and highest point kept), with the step where the warm-up rule
    /// ends; the usual fields first (step time, loss, throughput), then the rest by name, at most `max_charts`.
    /// What the metrics reader skipped comes back as notes.
    pub async fn metric_charts(
        &self,
        id: ExperimentId,
        max_points: usize,
        max_charts: usize,
    ) -> Result<(Vec<MetricChart>, Vec<String>)> {
        experiments::metric_charts(&self.cx, id, max_points, max_charts).await
    }

    /// A page of an experiment's indexed artifacts.
    pub async fn experiment_artifacts(
        &self,
        id: ExperimentId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<experiments::ArtifactView>> {
        experiments::experiment_artifacts(&self.cx, id, cursor, limit).await
    }

    /// One experiment: record, history, artifacts, metric summaries (over `warmup` dropped samples when
    /// given), analysis summaries, the memory verdict.
    pub async fn show_experiment(&self, id: ExperimentId, warmup: Option<usize>) -> Result<ExperimentDetail> {
        experiments::show_experiment(&self.cx, id, warmup).await
    }

    /// Of the time an experiment held its resources, how much trained and where the rest went (its attempts and step
    /// clock; `goodput_percent: null` with the reason when it logged no step clock).
    pub async fn experiment_goodput(&self, id: ExperimentId) -> Result<falcon_analysis::goodput::Goodput> {
        experiment_goodput::experiment_goodput(&self.cx, id).await
    }

    /// Goodput of the ended runs a query names (session, goal, pool, since, …) and their chip-seconds by cause.
    pub async fn goodput_report(&self, query: &goodput::GoodputQuery) -> Result<goodput::GoodputReport> {
        goodput::goodput_report(&self.cx, query).await
    }

    /// An experiment's stored record (one small read: what the dashboard's live rows poll).
    pub async fn experiment_record(&self, id: ExperimentId) -> Result<ExperimentRecord> {
        experiments::experiment_record(&self.cx, id).await
    }

    /// An experiment's status (one small read: what a follower polls).
    pub async fn experiment_status(&self, id: ExperimentId) -> Result<ExperimentStatus> {
        experiments::experiment_status(&self.cx, id).await
    }

    /// Asks for an experiment to be cancelled; a worker stops its job. Returns its detail after the request.
    pub async fn cancel_experiment(&self, id: ExperimentId) -> Result<ExperimentDetail> {
        experiments::cancel_experiment(&self.cx, id).await
    }

    /// What each of an experiment's logs gained since `from` (source → byte offset), read from those offsets:
    /// what a follower asks for at each poll.
    pub async fn experiment_logs_from(
        &self,
        id: ExperimentId,
        from: &std::collections::BTreeMap<String, u64>,
    ) -> Result<Vec<falcon_exp::outputs::LogChunk>> {
        experiments::experiment_logs_from(&self.cx, id, from).await
    }

    /// The last `max_bytes` of each of an experiment's logs (whole lines), with the offsets a follower goes on from.
    pub async fn experiment_log_tails(
        &self,
        id: ExperimentId,
        max_bytes: u64,
    ) -> Result<Vec<falcon_exp::outputs::LogChunk>> {
        experiments::experiment_log_tails(&self.cx, id, max_bytes).await
    }

    /// The indexed artifact at `path` inside an experiment (a path with `..` and the like is refused).
    pub async fn experiment_artifact(&self, id: ExperimentId, path: &str) -> Result<ArtifactRecord> {
        experiments::experiment_artifact(&self.cx, id, path).await
    }

    /// Bytes `range` of an artifact (cut at its end).
    pub async fn artifact_bytes(&self, artifact: &ArtifactRecord, range: std::ops::Range<u64>) -> Result<Vec<u8>> {
        experiments::artifact_bytes(&self.cx, artifact, range).await
    }

    /// Why an artifact is refused, when a download found its stored bytes changed (recorded among its notes).
    pub async fn artifact_integrity(&self, artifact: &ArtifactRecord) -> Result<Option<String>> {
        experiments::artifact_integrity(&self.cx, artifact).await
    }

    /// Records that a full download of `artifact` read `found` (`N bytes of sha256 …`), not the indexed bytes;
    /// the reason, as every later download is refused with.
    pub async fn artifact_mismatch(&self, artifact: &ArtifactRecord, found: &str) -> Result<String> {
        experiments::artifact_mismatch(&self.cx, artifact, found).await
    }

    /// A report kept for the experiment (`reports/<name>`), if one is.
    pub async fn kept_report(&self, id: ExperimentId, name: &str) -> Result<Option<Vec<u8>>> {
        experiments::kept_report(&self.cx, id, name).await
    }

    /// Keeps a generated report as the experiment's `reports/<name>` artifact, for the next request.
    pub async fn keep_report(&self, id: ExperimentId, name: &str, bytes: Vec<u8>) -> Result<ArtifactRecord> {
        experiments::keep_report(&self.cx, id, name, bytes).await
    }

    /// One of the experiment's reports (the profile tools, the trace analysis, its Perfetto export, a profile
    /// comparison): kept, or computed under the heavy-analysis limit and kept for the next request.
    pub async fn report(&self, id: ExperimentId, report: &Report) -> Result<Vec<u8>> {
        reports::report(&self.cx, id, report).await
    }

    /// Every log of an experiment collected so far: (source, text); with `tail`, the last lines of each.
    pub async fn experiment_logs(&self, id: ExperimentId, tail: Option<usize>) -> Result<Vec<(String, String)>> {
        experiments::experiment_logs(&self.cx, id, tail).await
    }

    /// Follows an experiment's logs as they grow, from the start, until it ends: `log` events, then `end` with the
    /// status it ended in (see [`streams`] for the stop signal, the time limit and driving the worker).
    pub fn follow_logs<'a, A>(
        app: A,
        id: ExperimentId,
        follow: Follow,
    ) -> impl futures::Stream<Item = Result<StreamEvent>> + Send + 'a
    where
        A: std::ops::Deref<Target = App> + Send + Sync + 'a,
    {
        streams::follow_logs(std::sync::Arc::clone(&app.cx), id, follow)
    }

    /// Follows experiments' statuses: each at once, then on every change, until every one has ended (1 to
    /// [`streams::MAX_FOLLOWED`] ids).
    pub fn follow_statuses<'a, A>(
        app: A,
        ids: &[ExperimentId],
        follow: Follow,
    ) -> Result<impl futures::Stream<Item = Result<StreamEvent>> + Send + 'a>
    where
        A: std::ops::Deref<Target = App> + Send + Sync + 'a,
    {
        streams::follow_statuses(std::sync::Arc::clone(&app.cx), ids, follow)
    }

    /// The config diff of two experiments (A → B).
    pub async fn diff_experiments(&self, a: ExperimentId, b: ExperimentId) -> Result<Vec<Change>> {
        experiments::diff_experiments(&self.cx, a, b).await
    }

    /// The verdict on a metric, A (baseline) against B.
    pub async fn compare_experiments(&self, req: &CompareRequest) -> Result<RunComparison> {
        experiments::compare_experiments(&self.cx, req).await
    }

    /// A metric across a series of experiments (same name, config hash or its prefix, or labels), with its shifts.
    pub async fn history(&self, req: &requests::ExperimentHistoryRequest) -> Result<HistoryView> {
        experiments::history(&self.cx, &req.query()?).await
    }

    // ---- Goals, sessions (with their sweep grid) and pools ([`goals`])

    /// Creates a goal. The title must say something and the target, when given, must be a finite number.
    pub async fn create_goal(&self, req: &requests::GoalCreateRequest) -> Result<GoalRecord> {
        goals::create_goal(&self.cx, req).await
    }

    /// A page of the goals, optionally of one status (`open`, `claimed`, `achieved`, `abandoned`).
    pub async fn list_goals(&self, status: Option<&str>, cursor: Option<&str>, limit: usize) -> Result<Page<GoalView>> {
        goals::list_goals(&self.cx, status, cursor, limit).await
    }

    /// Sets a goal's baseline (`e-N`, which must exist) or clears it (`None`).
    pub async fn set_goal_baseline(&self, id: GoalId, baseline: Option<&str>) -> Result<GoalRecord> {
        goals::set_goal_baseline(&self.cx, id, baseline).await
    }

    /// One goal.
    pub async fn goal(&self, id: GoalId) -> Result<GoalRecord> {
        goals::goal(&self.cx, id).await
    }

    /// Claims a goal (or, with `None`, the open goal of highest priority) for `owner` with a lease.
    pub async fn claim_goal(&self, id: Option<GoalId>, owner: &str, lease: Duration) -> Result<GoalRecord> {
        goals::claim_goal(&self.cx, id, owner, lease).await
    }

    /// Moves a goal to `to` (released = open, achieved, abandoned) with a reason.
    pub async fn close_goal(
        &self,
        id: GoalId,
        to: GoalStatus,
        reason: &str,
        owner: Option<&str>,
    ) -> Result<GoalRecord> {
        goals::close_goal(&self.cx, id, to, reason, owner).await
    }

    /// The goal's completed experiments ranked against its baseline.
    pub async fn compare_goal(&self, id: GoalId) -> Result<GoalComparison> {
        goals::compare_goal(&self.cx, id).await
    }

    /// The goal report: progress, ranking, config diff and verdicts baseline → best, the profile comparison.
    pub async fn goal_report(&self, id: GoalId, top: usize) -> Result<GoalReport> {
        goals::goal_report(&self.cx, id, top).await
    }

    /// Expands a sweep (`load_base` reads the base spec files it names; `base: e-N` starts from that experiment,
    /// its points' baseline) and submits it as a session
    /// (`on_submitted` hears of it); with `wait`, runs the worker loop until every experiment ended
    /// (`on_progress` hears where each stands after every pass), then the analyses they call for. Returns the
    /// session's view and the analysis events.
    pub async fn submit_session(
        &self,
        request: &SessionRequest<'_>,
        load_base: impl Fn(&str) -> std::result::Result<String, String>,
        on_submitted: impl FnOnce(&SessionView),
        on_progress: impl FnMut(&[RunProgress]),
    ) -> Result<(SessionDetail, Vec<WorkerEvent>)> {
        goals::submit_session(&self.cx, request, load_base, on_submitted, on_progress).await
    }

    /// A session, its experiments (with their stored metric summaries and whether each re-runs its
    /// baseline's config), aggregate status and the keys that differ between them.
    pub async fn session(&self, id: SessionId) -> Result<SessionDetail> {
        goals::session(&self.cx, id).await
    }

    /// [`App::session`] with its grid over `metric` (`None`: the default of [`crate::session_grid`]).
    pub async fn session_with_metric(&self, id: SessionId, metric: Option<&str>) -> Result<SessionDetail> {
        goals::session_with_metric(&self.cx, id, metric).await
    }

    /// A page of the configured pools and what is running on them.
    pub async fn pools(&self, cursor: Option<&str>, limit: usize) -> Result<Page<PoolUsage>> {
        goals::pools(&self.cx, cursor, limit).await
    }

    // ---- Profiles: analyze, trace, fetch, export, compare ([`profiles`])

    /// How many cluster jobs `profile analyze` of `target` fans out to: `explicit` (0: none), else by
    /// `[analysis] fan_out_hosts`; `None` analyses in this process.
    pub async fn fan_out_shards(&self, target: &str, explicit: Option<usize>) -> Result<Option<usize>> {
        fan_out::shards_for(&self.cx, target, explicit).await
    }

    /// Analyses a run as cluster jobs of shards of its hosts, submitted by EXP as one session, and merges their
    /// partial results into the report [`App::analyze_profile`] gives.
    pub async fn analyze_profile_fanned(
        &self,
        target: &str,
        fan: &fan_out::FanOut,
        options: &AnalyzeOptions,
        progress: impl FnMut(fan_out::FanOutProgress<'_>),
    ) -> Result<(ResolvedProfile, ProfileReport)> {
        fan_out::analyze_fanned(&self.cx, target, fan, options, progress).await
    }

    /// One shard's partial result of a run (what a fan-out job computes).
    pub async fn profile_shard(
        &self,
        target: &str,
        shard: usize,
        shards: usize,
        options: &AnalyzeOptions,
    ) -> Result<falcon_analysis::profile::partial::ShardPartial> {
        fan_out::analyze_shard(&self.cx, target, shard, shards, options).await
    }

    /// Analyses a capture with the tools asked for (all when empty); stores the experiment's summary row
    /// when the input is an experiment.
    pub async fn analyze_profile(
        &self,
        target: &str,
        host: Option<&str>,
        options: &AnalyzeOptions,
    ) -> Result<(ResolvedProfile, ProfileReport)> {
        profiles::analyze_profile(&self.cx, target, host, options).await
    }

    /// Where each step's time goes, from the capture's (or a Chrome trace's) timeline.
    pub async fn analyze_trace(&self, target: &str, host: Option<&str>, options: &TraceOptions) -> Result<TraceRun> {
        profiles::analyze_trace(&self.cx, target, host, options).await
    }

    /// Copies the profile into the cache (checked against the artifact index) and says where it is.
    pub async fn fetch_profile(&self, target: &str, host: Option<&str>) -> Result<ResolvedProfile> {
        profiles::fetch_profile(&self.cx, target, host).await
    }

    /// Writes one host's trace as Chrome trace JSON (gzipped for `.gz`) under a temporary name, renamed into
    /// place; an existing `output` is replaced only with `force`.
    pub async fn export_trace(
        &self,
        target: &str,
        output: &Path,
        host: Option<&str>,
        force: bool,
    ) -> Result<TraceExport> {
        profiles::export_trace(&self.cx, target, output, host, force).await
    }

    /// An experiment's (first host's) trace as gzipped Chrome trace JSON, in memory: what the dashboard offers
    /// for Perfetto (`ui.perfetto.dev` opens it). Written through a temporary folder that is then removed.
    pub async fn export_trace_gz(&self, id: ExperimentId) -> Result<Vec<u8>> {
        profiles::export_trace_gz(&self.cx, id).await
    }

    /// Compares two captures, A the baseline; adds the config diff when both inputs are experiments.
    pub async fn compare_profiles(
        &self,
        a: &str,
        b: &str,
        host: Option<&str>,
        options: &CompareOptions,
    ) -> Result<ProfileCompareResult> {
        profiles::compare_profiles(&self.cx, a, b, host, options).await
    }

    // ---- Accuracy and tensors ([`accuracy`])

    /// Reads both runs, aligns them by step and compares every metric.
    pub async fn compare_accuracy(&self, req: &AccuracyRequest) -> Result<AccuracyReport> {
        accuracy::compare_accuracy(&self.cx, req).await
    }

    /// Compares two tensor dumps (`.npy`, `.npz`, `.safetensors`, directories of `.npy`), A the reference.
    pub async fn compare_tensors(&self, a: &Path, b: &Path, options: &TensorOptions) -> Result<TensorReport> {
        accuracy::compare_tensors(&self.cx, a, b, options).await
    }

    // ---- Kernel benchmarks ([`kernel`])

    /// Analyses one input's results.
    pub async fn analyze_kernels(&self, input: &str, options: &KernelOptions) -> Result<(KernelReport, Vec<String>)> {
        kernel::analyze_kernels(&self.cx, input, options).await
    }

    /// Compares a baseline's results with a new run's, row by row.
    pub async fn compare_kernels(&self, base: &str, new: &str) -> Result<(KernelComparison, Vec<String>)> {
        kernel::compare_kernels(&self.cx, base, new).await
    }

    // ---- API tokens and sign-in sessions ([`tokens`])

    /// Creates a token; its secret is in the answer and nowhere else.
    pub async fn create_token(&self, name: &str, scope: Scope) -> Result<CreatedToken> {
        tokens::create_token(&self.cx, name, scope).await
    }

    /// Every token, revoked ones included, by name.
    pub async fn tokens(&self, cursor: Option<&str>, limit: usize) -> Result<Page<TokenView>> {
        tokens::tokens(&self.cx, cursor, limit).await
    }

    /// Revokes a live token by name (exit 3 when there is none).
    pub async fn revoke_token(&self, name: &str) -> Result<TokenView> {
        tokens::revoke_token(&self.cx, name).await
    }

    /// The principal a bearer secret stands for; `None` for an unknown or revoked one.
    pub async fn authenticate(&self, secret: &str) -> Result<Option<Principal>> {
        tokens::authenticate(&self.cx, secret).await
    }

    /// Whether any live token exists.
    pub async fn tokens_exist(&self) -> Result<bool> {
        tokens::tokens_exist(&self.cx).await
    }

    /// Whether the store has ever held a token, revoked ones included: a server over such a store is never open.
    pub async fn tokens_ever(&self) -> Result<bool> {
        tokens::tokens_ever(&self.cx).await
    }

    /// Signs a browser in with a bearer secret: the principal and a new session id lasting `lifetime` (the
    /// browser keeps the id, never the token); `None` for an unknown or revoked secret.
    pub async fn sign_in(&self, secret: &str, lifetime: std::time::Duration) -> Result<Option<(Principal, String)>> {
        tokens::sign_in(&self.cx, secret, lifetime).await
    }

    /// The principal a session id stands for; `None` when it is unknown, signed out, expired or its token revoked.
    pub async fn signin_principal(&self, id: &str) -> Result<Option<Principal>> {
        tokens::signin_principal(&self.cx, id).await
    }

    /// Signs a session out (server-side: the id opens nothing afterwards); whether it was live.
    pub async fn sign_out(&self, id: &str) -> Result<bool> {
        tokens::sign_out(&self.cx, id).await
    }

    // ---- The worker: passes and the analyses that follow a completed experiment ([`worker`])

    /// Starts a worker loop: lease renewal runs from now until the returned [`Worker`] is dropped.
    pub async fn start_worker(&self) -> Result<Worker<'_>> {
        worker::start_worker(&self.cx).await
    }

    /// One pass of the loop; every event it produced, in order. A loop of passes should run inside
    /// [`App::start_worker`], which keeps the leases between and during passes.
    pub async fn worker_pass(&self) -> Result<Vec<WorkerEvent>> {
        worker::worker_pass(&self.cx).await
    }

    /// The analysis step: completed experiments with something to analyse and no summary yet. A failure is
    /// an event, never an error of the pass.
    pub async fn analyze_completed(&self) -> Vec<WorkerEvent> {
        worker::analyze_completed(&self.cx).await
    }

    /// [`App::analyze_completed`] for the experiments `among` only (when given): what `--wait` submitted.
    pub async fn analyze_completed_among(&self, among: Option<&[ExperimentId]>) -> Vec<WorkerEvent> {
        worker::analyze_completed_among(&self.cx, among).await
    }

    // ---- The agent's context ([`context`])

    /// The context (see the module docs). Fails only without a configuration.
    pub async fn context(&self) -> Result<Context> {
        context::context(&self.cx).await
    }

    // ---- Garbage collection ([`gc`])

    /// Removes collected job folders and trims the profile cache (see the module docs).
    pub async fn gc(&self, request: &GcRequest) -> Result<GcReport> {
        gc::gc(&self.cx, request).await
    }

    // ---- Doctor and readiness ([`setup`])

    /// Checks the database, the artifact store and the pools; each check says what is wrong (only a
    /// configuration that cannot be loaded fails).
    pub async fn doctor(&self) -> Result<DoctorReport> {
        setup::doctor(&self.cx).await
    }

    /// Measures this machine's f32 matmul peak and memory bandwidth and keeps them for `pools` (none: every local
    /// pool), for the XLA:CPU roofline, bound-by and MFU (`falcon doctor --calibrate`; [`setup`]).
    pub async fn calibrate(&self, pools: &[String]) -> Result<setup::CalibrationReport> {
        setup::calibrate(&self.cx, pools).await
    }

    /// Whether the stores answer: `doctor`'s database and artifact-store checks only (what `/readyz` asks).
    pub async fn readiness(&self) -> Result<DoctorReport> {
        setup::readiness(&self.cx).await
    }

    /// Connects (creating the database and artifact directory, applying migrations) and says what to.
    pub async fn connection(&self) -> Result<Connection> {
        setup::connection(&self.cx).await
    }
}
