//! `falcon bisect`'s flags: [`falcon_app::requests::BisectStartRequest`]'s fields (the spec as a file), or a
//! bisection's session to show or carry on.

use clap::Args;
use std::path::PathBuf;

/// `falcon bisect SPEC --good REF --bad REF [--metric M]`, or `falcon bisect --session s-N`.
#[derive(Debug, Args)]
pub struct BisectArgs {
    /// The experiment spec run at each commit (its `code.repo` names the repository; `code.ref` is replaced).
    #[arg(required_unless_present = "session", conflicts_with = "session")]
    pub spec: Option<PathBuf>,
    /// The good end: a branch, tag or commit where the metric is as it should be.
    #[arg(long, required_unless_present = "session")]
    pub good: Option<String>,
    /// The bad end: a descendant of the good one where the metric moved.
    #[arg(long, required_unless_present = "session")]
    pub bad: Option<String>,
    /// The metric the runs write.
    #[arg(long, default_value = falcon_app::requests::DEFAULT_METRIC)]
    pub metric: String,
    #[command(flatten)]
    pub direction: super::DirectionArgs,
    /// The repository, when the spec names none.
    #[arg(long)]
    pub repo: Option<String>,
    /// Runs each commit gets before its first verdict.
    #[arg(long, default_value_t = falcon_app::requests::DEFAULT_MIN_RUNS)]
    pub min_runs: u32,
    /// The most runs a commit gets; ends still inconclusive there are the answer (no culprit).
    #[arg(long, default_value_t = falcon_app::requests::DEFAULT_MAX_RUNS)]
    pub max_runs: u32,
    /// Commits probed at once (default: two when the pools have room for both probes' runs, else one).
    #[arg(long)]
    pub probes: Option<u32>,
    /// The session's name (default `bisect <spec name> <good>..<bad>`).
    #[arg(long)]
    pub name: Option<String>,
    /// A bisection already started (`s-4`): show it, or with --wait carry it on (after a caller that died).
    #[arg(long)]
    pub session: Option<String>,
    /// Run the search here until it names the culprit (or says there is none): jobs are run by this process, as
    /// `exp submit --wait` runs them. Without it the worker carries the search on.
    #[arg(long)]
    pub wait: bool,
    /// With --wait: give up waiting after this many seconds; the search carries on with the worker.
    #[arg(long, requires = "wait", value_name = "SECONDS")]
    pub timeout_s: Option<u32>,
    /// Exit 5 when a culprit is named (a regression found), as `exp compare --fail-on-regression`.
    #[arg(long)]
    pub fail_on_culprit: bool,
}

impl BisectArgs {
    /// The request, with the spec file's text (`spec_text`) and a relative `code.repo` read from its folder.
    pub fn request(&self, spec_text: String, repo: Option<String>) -> falcon_app::requests::BisectStartRequest {
        falcon_app::requests::BisectStartRequest {
            spec: spec_text,
            repo: self.repo.clone().or(repo),
            good: self.good.clone().unwrap_or_default(),
            bad: self.bad.clone().unwrap_or_default(),
            metric: self.metric.clone(),
            direction: self.direction.direction(),
            min_runs: self.min_runs,
            max_runs: self.max_runs,
            probes: self.probes,
            name: self.name.clone(),
            wait: self.wait,
            timeout_s: self.timeout_s,
        }
    }
}
