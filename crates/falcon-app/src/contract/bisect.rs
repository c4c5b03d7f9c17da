//! A bisection on the wire (`falcon bisect`, `GET /api/v1/bisect/{session}`, MCP `bisect`): built from EXP's
//! `BisectOutcome`.

use falcon_core::ids::{ExperimentId, SessionId};
use falcon_core::stats::Verdict;
use falcon_exp::bisect as exp;
use schemars::JsonSchema;
use serde::Serialize;

/// A commit of the searched range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct BisectCommit {
    /// Full SHA.
    pub commit: String,
    /// Subject line.
    pub subject: String,
    /// Author (`Name <email>`).
    pub author: String,
    /// Committer date (ISO 8601).
    pub date: String,
}

impl From<&exp::Commit> for BisectCommit {
    fn from(c: &exp::Commit) -> Self {
        BisectCommit {
            commit: c.commit.clone(),
            subject: c.subject.clone(),
            author: c.author.clone(),
            date: c.date.clone(),
        }
    }
}

/// A commit the search ran, with what its runs say.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BisectTested {
    /// Full SHA.
    pub commit: String,
    /// Subject line.
    pub subject: String,
    /// Its place along first parents (0: the good end).
    pub index: usize,
    /// Runs at it: completed, live and failed (runs reused from earlier searches included).
    pub runs: usize,
    /// Runs that measured the metric.
    pub measured: usize,
    /// Runs that failed or did not write the metric.
    pub failed: usize,
    /// `good` (like the good end), `bad` (changed like the bad end), `skipped` (its runs fail), `inconclusive`
    /// (the cap of runs did not decide it), `pending` (runs still going) or `undecided` (the answer came without
    /// its verdict).
    pub verdict: String,
    /// The geometric mean of its runs' medians of the metric.
    pub median: Option<f64>,
    /// Relative change against the good end, once compared.
    pub delta_rel: Option<f64>,
    /// Its experiments, oldest first.
    pub experiments: Vec<ExperimentId>,
}

/// Which commit moved a metric, and the runs that say so.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BisectView {
    /// The session that holds the search and its runs.
    pub session: SessionId,
    /// `searching` (runs going) or `decided`.
    pub state: String,
    /// The first commit whose runs moved the metric like the bad end's; `null` when the ends do not differ,
    /// when only skipped or inconclusive commits separate good from bad (`candidates`), or while searching.
    pub culprit: Option<BisectCommit>,
    /// The run-level verdict of the culprit against its parent.
    pub culprit_verdict: Option<Verdict>,
    /// The run-level verdict of the bad end against the good end (`null` until both have their runs).
    pub verdict: Option<Verdict>,
    /// The good end.
    pub good: BisectCommit,
    /// The bad end.
    pub bad: BisectCommit,
    /// First-parent commits in the range, the good end included.
    pub commits: usize,
    /// Experiments the search used in all.
    pub runs: usize,
    /// Every commit with runs, in commit order.
    pub tested: Vec<BisectTested>,
    /// When no single culprit can be named: the commits the change may be in.
    pub candidates: Vec<BisectCommit>,
    /// What it came to, in a sentence.
    pub message: String,
    /// The metric.
    pub metric: String,
}

impl From<&exp::BisectOutcome> for BisectView {
    fn from(o: &exp::BisectOutcome) -> Self {
        BisectView {
            session: o.session,
            state: o.state.clone(),
            culprit: o.culprit.as_ref().map(BisectCommit::from),
            culprit_verdict: o.culprit_verdict.clone(),
            verdict: o.verdict.clone(),
            good: BisectCommit::from(&o.good),
            bad: BisectCommit::from(&o.bad),
            commits: o.commits,
            runs: o.runs,
            tested: o
                .tested
                .iter()
                .map(|t| BisectTested {
                    commit: t.commit.clone(),
                    subject: t.subject.clone(),
                    index: t.index,
                    runs: t.runs,
                    measured: t.measured,
                    failed: t.failed,
                    verdict: t.verdict.clone(),
                    median: t.median,
                    delta_rel: t.delta_rel,
                    experiments: t.experiments.clone(),
                })
                .collect(),
            candidates: o.candidates.iter().map(BisectCommit::from).collect(),
            message: o.message.clone(),
            metric: o.metric.clone(),
        }
    }
}
