//! Use-case requests, each declared once: its fields with their docs, types and defaults, as every front end takes
//! them. The MCP tool's input schema and the Web API's query parameters (and their OpenAPI description) are
//! generated from the type (`schemars`); the CLI's flags convert to it with one `From` and take its defaults from
//! here. A default or an enum's values written anywhere else is a drift (the structure test in
//! `falcon-cli/tests/it/contract.rs` holds the front ends to these).
//!
//! Enumerated fields use core's enums (the values a store holds), read case-insensitively as the CLI always has.

use std::str::FromStr;

use falcon_core::status::{ExperimentStatus, Scenario};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use crate::experiments::ListQuery;

mod analysis;
mod bisect;
mod check;
mod experiment;
mod goals;
pub use analysis::{
    default_kernel_p, AccuracyRequest, KernelAnalyzeRequest, KernelCompareRequest, ProfileAnalyzeRequest,
    ProfileCompareRequest, ProfileTraceRequest, ToolName, TraceAnalysisName,
};
pub use bisect::{BisectShowRequest, BisectStartRequest, DEFAULT_MAX_RUNS, DEFAULT_MIN_RUNS, REF_PATTERN};
pub use check::{checked, read};
pub use experiment::{
    ExperimentArtifactsRequest, ExperimentDiffRequest, ExperimentProfileCompareRequest, ExperimentRef,
};
pub use goals::{
    parse_goal_id, parse_session_id, GoalClaimRequest, GoalCloseRequest, GoalRef, GoalReportRequest,
    SessionShowRequest, GOAL_ID_PATTERN, GOAL_REF_PATTERN, SESSION_REF_PATTERN,
};

/// Rows of a page when the request does not say.
pub const DEFAULT_PAGE: u32 = 50;
/// The most rows a page may ask for.
pub const MAX_PAGE: u32 = 1000;

/// A duration as a request's schema states it: units `d`, `h`, `m`, `s`, each at most once, largest first, each
/// a number without leading zeros (so never zero) — what `falcon_core::spec::parse_duration` reads, less the
/// spellings it forgives (upper-case units, `0h30m`, spaces). With a `minLength` of 2 (the pattern alone matches
/// the empty string: JSON Schema's regexes are not all engines' lookaheads).
pub const DURATION_PATTERN: &str = "^([1-9][0-9]{0,8}d)?([1-9][0-9]{0,8}h)?([1-9][0-9]{0,8}m)?([1-9][0-9]{0,8}s)?$";

/// A commit SHA or its prefix: 4 to 64 lowercase hex digits.
pub const COMMIT_PATTERN: &str = "^[0-9a-f]{4,64}$";

/// [`DEFAULT_PAGE`], as serde's `default =` takes it (an argument struct with other fields uses it too).
pub fn default_page() -> u32 {
    DEFAULT_PAGE
}

/// `exp list`, `GET /api/v1/experiments`, MCP `exp_list`: a page of experiments, newest first; the filters combine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentListRequest {
    /// Only this status.
    #[serde(default, deserialize_with = "case_insensitive", skip_serializing_if = "Option::is_none")]
    pub status: Option<ExperimentStatus>,
    /// Only this goal's experiments (`g-3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^g-[1-9][0-9]{0,17}$"))]
    pub goal: Option<String>,
    /// Only this session's experiments (`s-2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^s-[1-9][0-9]{0,17}$"))]
    pub session: Option<String>,
    /// Only this scenario.
    #[serde(default, deserialize_with = "case_insensitive", skip_serializing_if = "Option::is_none")]
    pub scenario: Option<Scenario>,
    /// Only experiments of this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Only experiments that ran this commit (its full SHA or a prefix of at least 4 hex digits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = COMMIT_PATTERN))]
    pub commit: Option<String>,
    /// Only experiments whose code was on this branch (named by the spec, or checked out in the work tree).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub branch: Option<String>,
    /// `KEY=VALUE` label conditions, all of which must hold (at most 32); one or a list.
    #[serde(default, deserialize_with = "one_or_many", skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32), inner(regex(pattern = r"^[^=]+=.*$")))]
    pub label: Vec<String>,
    /// Only experiments created within this duration (`90s`, `2h`, `7d`, `1h30m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2), regex(pattern = DURATION_PATTERN))]
    pub since: Option<String>,
    /// Rows per page (0: no rows).
    #[serde(default = "default_page")]
    #[schemars(range(max = MAX_PAGE))]
    pub limit: u32,
    /// Give each row its stored metric summaries (count, mean, median, p90, min, max, last, spread per metric).
    #[serde(default)]
    pub with_metrics: bool,
    /// Only ids below this one (`e-40`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^e-[1-9][0-9]{0,17}$"))]
    pub before: Option<String>,
    /// Start at this page: the `next_cursor` of the previous one (with `before`, the lower of the two holds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^e-[1-9][0-9]{0,17}$"))]
    pub cursor: Option<String>,
}

impl Default for ExperimentListRequest {
    fn default() -> Self {
        ExperimentListRequest {
            status: None,
            goal: None,
            session: None,
            scenario: None,
            name: None,
            commit: None,
            branch: None,
            label: Vec::new(),
            since: None,
            limit: DEFAULT_PAGE,
            with_metrics: false,
            before: None,
            cursor: None,
        }
    }
}

impl ExperimentListRequest {
    /// The query it asks (its cursor is passed beside it); a page over [`MAX_PAGE`] is a usage error.
    pub fn query(&self) -> crate::error::Result<ListQuery> {
        page_size(self.limit)?;
        Ok(ListQuery {
            status: self.status.map(|s| s.as_str().to_string()),
            goal: self.goal.clone(),
            session: self.session.clone(),
            scenario: self.scenario.map(|s| s.as_str().to_string()),
            labels: self.label.clone(),
            name: self.name.clone(),
            commit: self.commit.clone(),
            branch: self.branch.clone(),
            before: self.before.clone(),
            since: self.since.clone(),
            limit: self.limit,
            with_metrics: self.with_metrics,
        })
    }
}

/// An optional core enum read case-insensitively (`completed` is `COMPLETED`), as its `FromStr` does.
fn case_insensitive<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: std::fmt::Display,
{
    let text: Option<String> = Option::deserialize(d)?;
    text.map(|t| t.parse::<T>().map_err(serde::de::Error::custom)).transpose()
}

/// One string or a list of them (a repeatable flag's values).
pub(crate) fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(v) => vec![v],
        OneOrMany::Many(v) => v,
    })
}

/// `goal list`, `GET /api/v1/goals`, MCP `goal_list`: a page of goals, highest priority first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalListRequest {
    /// Only this status.
    #[serde(default, deserialize_with = "case_insensitive", skip_serializing_if = "Option::is_none")]
    pub status: Option<falcon_core::status::GoalStatus>,
    /// Rows per page (0: no rows).
    #[serde(default = "default_page")]
    #[schemars(range(max = MAX_PAGE))]
    pub limit: u32,
    /// Start at this page: the `next_cursor` of the previous one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^o[0-9]{1,18}$"))]
    pub cursor: Option<String>,
}

impl Default for GoalListRequest {
    fn default() -> Self {
        GoalListRequest { status: None, limit: DEFAULT_PAGE, cursor: None }
    }
}

impl GoalListRequest {
    /// Its page size, checked (a page over [`MAX_PAGE`] is a usage error).
    pub fn page_size(&self) -> crate::error::Result<usize> {
        page_size(self.limit)
    }
}

pub(crate) fn page_size(limit: u32) -> crate::error::Result<usize> {
    if limit > MAX_PAGE {
        return Err(crate::error::AppError::usage(format!("limit {limit}: a page size from 0 to {MAX_PAGE}")));
    }
    Ok(limit as usize)
}

/// A page of a list that has no filters (`pool list`, `token list`; MCP `pool_list`, `GET /api/v1/pools`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PageRequest {
    /// Rows per page (0: no rows).
    #[serde(default = "default_page")]
    #[schemars(range(max = MAX_PAGE))]
    pub limit: u32,
    /// Start at this page: the `next_cursor` of the previous one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^o[0-9]{1,18}$"))]
    pub cursor: Option<String>,
}

impl Default for PageRequest {
    fn default() -> Self {
        PageRequest { limit: DEFAULT_PAGE, cursor: None }
    }
}

impl PageRequest {
    /// Its page size, checked (a page over [`MAX_PAGE`] is a usage error).
    pub fn page_size(&self) -> crate::error::Result<usize> {
        page_size(self.limit)
    }
}

/// A goal claim's lease when the request does not say, seconds.
pub const DEFAULT_LEASE_S: u64 = 3600;
/// The longest lease a claim may take, seconds (7 days).
pub const MAX_LEASE_S: u64 = 7 * 86_400;

/// [`DEFAULT_LEASE_S`], as serde's `default =` takes it.
pub fn default_lease_s() -> u64 {
    DEFAULT_LEASE_S
}

/// A claim's lease, checked: 1 s to [`MAX_LEASE_S`].
pub fn lease(seconds: u64) -> crate::error::Result<std::time::Duration> {
    if !(1..=MAX_LEASE_S).contains(&seconds) {
        return Err(crate::error::AppError::usage(format!(
            "lease_s {seconds}: a lease from 1 s to {MAX_LEASE_S} s (7 days)"
        )));
    }
    Ok(std::time::Duration::from_secs(seconds))
}

/// Rows of a ranked table (a goal report's rankings, a profile comparison's regressions and improvements) when
/// the request does not say.
pub const DEFAULT_TOP: u32 = 10;
/// The most rows a ranked table may ask for.
pub const MAX_TOP: u32 = 1000;

/// [`DEFAULT_TOP`], as serde's `default =` takes it.
pub fn default_top() -> u32 {
    DEFAULT_TOP
}

/// A ranked table's rows, checked: 1 to [`MAX_TOP`].
pub fn top(rows: u32) -> crate::error::Result<usize> {
    if !(1..=MAX_TOP).contains(&rows) {
        return Err(crate::error::AppError::usage(format!("top {rows}: rows per ranked table, 1 to {MAX_TOP}")));
    }
    Ok(rows as usize)
}

/// The metric a comparison or a history reads when the request names none.
pub const DEFAULT_METRIC: &str = "step_time_s";

/// [`DEFAULT_METRIC`], as serde's `default =` takes it.
pub fn default_metric() -> String {
    DEFAULT_METRIC.to_string()
}

/// Bytes from the end of each log when the request does not say.
pub const DEFAULT_LOG_TAIL: u64 = 64 * 1024;
/// The most bytes from the end of each log a request may ask for.
pub const MAX_LOG_TAIL: u64 = 4 * 1024 * 1024;

/// [`DEFAULT_LOG_TAIL`], as serde's `default =` takes it.
pub fn default_log_tail() -> u64 {
    DEFAULT_LOG_TAIL
}

/// An experiment id as the CLI and MCP take it: `e-N` or `N` (the API's paths take `e-N` only).
pub const EXPERIMENT_REF_PATTERN: &str = r"^(e-)?[1-9][0-9]{0,17}$";

/// `exp show`, `GET /api/v1/experiments/{id}`, MCP `exp_show`: one experiment — record, history, artifacts,
/// metric summaries, analyses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentShowRequest {
    /// The experiment (`e-12` or `12`; the API's path takes `e-12`).
    #[schemars(regex(pattern = EXPERIMENT_REF_PATTERN))]
    pub id: String,
    /// Samples to drop from the start of each metric's summary (default: the detected warm-up, the larger of 2
    /// and 10 % of the samples).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = u32::MAX))]
    pub warmup: Option<u32>,
}

impl ExperimentShowRequest {
    /// The experiment and the warm-up it asks, checked against the type's schema.
    pub fn show(&self) -> crate::error::Result<(falcon_core::ids::ExperimentId, Option<usize>)> {
        checked(self)?;
        let id = self
            .id
            .parse()
            .map_err(|e: falcon_core::ids::IdParseError| crate::error::AppError::usage(e.to_string()))?;
        Ok((id, self.warmup.map(|w| w as usize)))
    }
}

/// The most lines from the end of each log a request may ask for.
pub const MAX_LOG_LINES: u32 = 1_000_000_000;

/// `exp logs`, `GET /api/v1/experiments/{id}/logs`: an experiment's logs, whole, or the last lines of each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentLogLinesRequest {
    /// The experiment (`e-12` or `12`; the API's path takes `e-12`).
    #[schemars(regex(pattern = EXPERIMENT_REF_PATTERN))]
    pub id: String,
    /// Only the last N lines of each log (default: all of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = MAX_LOG_LINES))]
    pub tail: Option<u32>,
}

impl ExperimentLogLinesRequest {
    /// The experiment and the lines it asks of each log, checked against the type's schema.
    pub fn logs(&self) -> crate::error::Result<(falcon_core::ids::ExperimentId, Option<usize>)> {
        checked(self)?;
        let id = self
            .id
            .parse()
            .map_err(|e: falcon_core::ids::IdParseError| crate::error::AppError::usage(e.to_string()))?;
        Ok((id, self.tail.map(|n| n as usize)))
    }
}

/// MCP `exp_logs`: the end of each of an experiment's logs, whole lines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentLogsRequest {
    /// The experiment (`e-12` or `12`).
    #[schemars(regex(pattern = EXPERIMENT_REF_PATTERN))]
    pub id: String,
    /// At most this many bytes from the end of each log, whole lines.
    #[serde(default = "default_log_tail")]
    #[schemars(range(min = 1, max = MAX_LOG_TAIL))]
    pub tail_bytes: u64,
}

/// A metric's name as a request's schema states it: 1 to 128 letters, digits or `_.:/-`.
pub const METRIC_PATTERN: &str = r"^[A-Za-z0-9_.:/-]{1,128}$";

/// A goal's priority when the request does not say.
pub const DEFAULT_PRIORITY: i64 = 0;
/// The bound of a goal's priority, either way.
pub const MAX_PRIORITY: i64 = 1_000_000;

/// `goal create`, `POST /api/v1/goals`, MCP `goal_create`: a new optimization goal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalCreateRequest {
    /// What the goal is, in a line ("llama3-8b on v5e-256: MFU 38% → 45%"); not blank.
    #[schemars(regex(pattern = r"\S"))]
    pub title: String,
    /// The metric it is measured by (`mfu`, `step_time_s`, `tokens_per_s`, …); one with no standard direction needs
    /// `direction`.
    #[schemars(regex(pattern = METRIC_PATTERN))]
    pub metric: String,
    /// Which way is better (default: the metric's standard direction).
    #[serde(default, deserialize_with = "case_insensitive", skip_serializing_if = "Option::is_none")]
    pub direction: Option<falcon_core::status::Direction>,
    /// The value that achieves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<f64>,
    /// The baseline experiment (`e-1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^e-[1-9][0-9]{0,17}$"))]
    pub baseline: Option<String>,
    /// Higher is claimed first (a whole number; `2.0` is 2).
    #[serde(default = "default_priority", deserialize_with = "whole_i64")]
    #[schemars(range(min = -MAX_PRIORITY, max = MAX_PRIORITY))]
    pub priority: i64,
    /// The workload or model it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// The hardware it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<String>,
}

/// [`DEFAULT_PRIORITY`], as serde's `default =` takes it.
pub fn default_priority() -> i64 {
    DEFAULT_PRIORITY
}

/// A whole number written as a JSON integer or as a float with no fraction (`3` and `3.0` are the same count).
fn whole_i64<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let n = serde_json::Number::deserialize(d)?;
    if let Some(i) = n.as_i64() {
        return Ok(i);
    }
    match n.as_f64() {
        Some(x) if x.fract() == 0.0 && x.abs() <= 9.0e15 => Ok(x as i64),
        Some(x) if x.fract() == 0.0 => Err(serde::de::Error::custom(format!("{x} is out of range"))),
        _ => Err(serde::de::Error::custom(format!("{n} is not a whole number"))),
    }
}

/// `exp history`, MCP `exp_history`: one metric across a series of runs — the experiments of a name, a config or
/// labels (at least one) — with its change points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentHistoryRequest {
    /// The series: experiments of this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The series: experiments of this config (the full hash or a prefix, such as the 12 characters `exp list`
    /// prints).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_hash: Option<String>,
    /// The series: `KEY=VALUE` labels every run has (at most 32); one or a list.
    #[serde(default, deserialize_with = "one_or_many", skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32), inner(regex(pattern = r"^[^=]+=.*$")))]
    pub label: Vec<String>,
    /// The series: experiments whose code was on this branch (named by the spec, or checked out in the work
    /// tree it was submitted from).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub branch: Option<String>,
    /// The metric.
    #[serde(default = "default_metric")]
    #[schemars(regex(pattern = METRIC_PATTERN))]
    pub metric: String,
}

impl ExperimentHistoryRequest {
    /// The series it asks; a field its schema refuses (a label without `=`, a metric of other characters) is a
    /// usage error.
    pub fn query(&self) -> crate::error::Result<crate::experiments::HistoryQuery> {
        checked(self)?;
        Ok(crate::experiments::HistoryQuery {
            name: self.name.clone(),
            config_hash: self.config_hash.clone(),
            label: self.label.clone(),
            branch: self.branch.clone(),
            metric: self.metric.clone(),
        })
    }
}

/// `goodput`, `GET /api/v1/goodput`, MCP `goodput`: ended runs' goodput and their chip-seconds by cause; the
/// filters combine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoodputRequest {
    /// Only this session's runs (`s-3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^s-[1-9][0-9]{0,17}$"))]
    pub session: Option<String>,
    /// Only this goal's runs (`g-7`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^g-[1-9][0-9]{0,17}$"))]
    pub goal: Option<String>,
    /// Only runs whose job last ran on this pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// Only runs recorded within this long (`90m`, `2h`, `7d`, `1h30m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2), regex(pattern = DURATION_PATTERN))]
    pub since: Option<String>,
    /// Only runs of this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `KEY=VALUE` labels every run has (at most 32); one or a list.
    #[serde(default, deserialize_with = "one_or_many", skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32), inner(regex(pattern = r"^[^=]+=.*$")))]
    pub label: Vec<String>,
}

impl GoodputRequest {
    /// The query it asks.
    pub fn query(&self) -> crate::goodput::GoodputQuery {
        crate::goodput::GoodputQuery {
            list: ListQuery {
                session: self.session.clone(),
                goal: self.goal.clone(),
                since: self.since.clone(),
                name: self.name.clone(),
                labels: self.label.clone(),
                ..ListQuery::default()
            },
            pool: self.pool.clone(),
        }
    }
}

/// `exp compare`, `GET /api/v1/experiments/{a}/compare/{b}`, MCP `exp_compare`: a metric across two sets of runs,
/// with the run-level verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentCompareRequest {
    /// The baseline runs: `e-1`, `e-1,e-2,e-3`, `s-3` (a session's completed runs) or `config:<hash prefix>`.
    #[schemars(regex(
        pattern = r"^(e-[1-9][0-9]{0,17}(,e-[1-9][0-9]{0,17})*|s-[1-9][0-9]{0,17}|config:[0-9a-f]{6,64})$"
    ))]
    pub a: String,
    /// The candidate runs, written the same way.
    #[schemars(regex(
        pattern = r"^(e-[1-9][0-9]{0,17}(,e-[1-9][0-9]{0,17})*|s-[1-9][0-9]{0,17}|config:[0-9a-f]{6,64})$"
    ))]
    pub b: String,
    /// The metric.
    #[serde(default = "default_metric")]
    #[schemars(regex(pattern = METRIC_PATTERN))]
    pub metric: String,
    /// Which way is better, for a metric without a standard direction (also `higher`/`lower`,
    /// `maximize`/`minimize`).
    #[serde(default, deserialize_with = "case_insensitive", skip_serializing_if = "Option::is_none")]
    pub direction: Option<falcon_core::stats::Direction>,
    /// Samples to drop from the start of each side (default: the detected warm-up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = u32::MAX))]
    pub warmup: Option<u32>,
}

impl ExperimentCompareRequest {
    /// The comparison it asks; a field its schema refuses (a metric of other characters) is a usage error.
    pub fn compare(&self) -> crate::error::Result<crate::experiments::CompareRequest> {
        checked(self)?;
        Ok(crate::experiments::CompareRequest {
            a: self.a.clone(),
            b: self.b.clone(),
            metric: self.metric.clone(),
            direction: self.direction,
            warmup: self.warmup.map(|w| w as usize),
        })
    }
}
