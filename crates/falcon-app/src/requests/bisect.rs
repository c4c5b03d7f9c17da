//! `falcon bisect`: start a search for the commit that moved a metric, or look at one.

use falcon_core::stats::Direction;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{checked, default_metric, parse_session_id, METRIC_PATTERN, SESSION_REF_PATTERN};
use crate::error::Result;

/// Runs a commit gets before its first verdict, when the request does not say.
pub const DEFAULT_MIN_RUNS: u32 = falcon_exp::bisect::DEFAULT_MIN_RUNS as u32;
/// The most runs a commit gets, when the request does not say.
pub const DEFAULT_MAX_RUNS: u32 = falcon_exp::bisect::DEFAULT_MAX_RUNS as u32;

fn default_min_runs() -> u32 {
    DEFAULT_MIN_RUNS
}
fn default_max_runs() -> u32 {
    DEFAULT_MAX_RUNS
}

/// A ref as a bisection's end takes it: a branch, tag or commit (`main`, `v1.2`, `4f1c2a9`, `main~3`).
pub const REF_PATTERN: &str = r"^[A-Za-z0-9_.+@~^][A-Za-z0-9/_.+@~^-]{0,254}$";

/// `falcon bisect SPEC --good REF --bad REF`, `POST /api/v1/bisect`, MCP `bisect`: finds the first-parent commit
/// between two ends that moved a metric, with run-level verdicts (runs repeated at each probe until they decide),
/// as a session that holds its runs. Returns at once with the ends' runs submitted (`state: searching`); the
/// worker (or `--wait`) carries the search on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BisectStartRequest {
    /// The experiment spec run at each commit, as YAML or JSON text; its `code.repo` names the repository
    /// (its `code.ref` is replaced by each commit).
    #[schemars(length(min = 1, max = 1048576))]
    pub spec: String,
    /// The repository, when the spec names none (a URL over the HTTP API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096))]
    pub repo: Option<String>,
    /// The good end: a branch, tag or commit where the metric is as it should be.
    #[schemars(regex(pattern = REF_PATTERN))]
    pub good: String,
    /// The bad end: a descendant of the good one where the metric moved.
    #[schemars(regex(pattern = REF_PATTERN))]
    pub bad: String,
    /// The metric the runs write.
    #[serde(default = "default_metric")]
    #[schemars(regex(pattern = METRIC_PATTERN))]
    pub metric: String,
    /// Which way is better, for a metric without a standard direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// Runs each commit gets before its first verdict.
    #[serde(default = "default_min_runs")]
    #[schemars(range(min = 2, max = 100))]
    pub min_runs: u32,
    /// The most runs a commit gets; an end still `inconclusive` there is the answer (no culprit).
    #[serde(default = "default_max_runs")]
    #[schemars(range(min = 2, max = 100))]
    pub max_runs: u32,
    /// Commits probed at once (default: two when the pools have room for both probes' runs, else one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 8))]
    pub probes: Option<u32>,
    /// The session's name (default `bisect <spec name> <good>..<bad>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub name: Option<String>,
    /// Run the search here until it names the culprit or says there is none (the CLI and MCP; the HTTP API leaves
    /// it to the server's worker and refuses `wait`).
    #[serde(default)]
    pub wait: bool,
    /// With `wait`: give up waiting after this many seconds (the search carries on with the worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 604800))]
    pub timeout_s: Option<u32>,
}

impl BisectStartRequest {
    /// The request checked against its schema; `timeout_s` only bounds `wait`.
    pub fn check(&self) -> Result<()> {
        checked(self)?;
        if self.timeout_s.is_some() && !self.wait {
            return Err(crate::error::AppError::usage("`timeout_s` bounds `wait`; pass `wait: true` with it"));
        }
        Ok(())
    }

    /// How long `wait` may take.
    pub fn timeout(&self) -> Option<std::time::Duration> {
        self.timeout_s.map(|s| std::time::Duration::from_secs(u64::from(s)))
    }
}

/// `falcon bisect --session s-N`, `GET /api/v1/bisect/{id}`, MCP `bisect_show`: a bisection's state — its
/// culprit once decided, every commit tested with its runs and verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BisectShowRequest {
    /// The bisection's session (`s-4` or `4`).
    #[schemars(regex(pattern = SESSION_REF_PATTERN))]
    pub id: String,
}

impl BisectShowRequest {
    /// The session it names, the request checked against its schema.
    pub fn session(&self) -> Result<falcon_core::ids::SessionId> {
        checked(self)?;
        parse_session_id(&self.id)
    }
}
