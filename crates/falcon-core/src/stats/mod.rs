//! Pure statistics shared by EXP (regression verdicts, change points in metric histories) and data analysis
//! (step-time and kernel comparisons), so that there is exactly one implementation of each.
//!
//! - [`descriptive`]: the per-series summary (count, mean, median, p90, min, max, last) and the warm-up rule.
//! - [`verdict`]: metric directions and the two-sample [`Verdict`] (Mann–Whitney U + bootstrap interval).
//! - [`runs`]: the run-level [`compare_runs`], where the unit of evidence is the run (a t-test on log run
//!   medians with the between-run variance pooled with a history or a default prior).
//! - [`change_point`]: change points in a series (windowed E-divisive, permutation test, split/merge with
//!   effect-size floors).
//! - [`shift`]: shifts in a short history of runs (t-tests on log run values, Bonferroni; known power at
//!   small n, and what is not yet detectable).
//! - [`trend`]: the Theil–Sen slope with Sen's interval (a memory curve's growth).
//! - [`mann_whitney`], [`energy`], [`special`], [`rng`]: the building blocks, public for reuse and testing.
//!
//! Nothing here reads the clock, the environment or the operating system's randomness: every random step
//! takes a seed, so results are reproducible bit for bit.

pub mod change_point;
pub mod descriptive;
pub mod energy;
pub mod mann_whitney;
pub mod rng;
pub mod runs;
pub mod shift;
pub mod special;
pub mod trend;
pub mod verdict;

pub use change_point::{change_points, ChangePoint, ChangePointOptions};
pub use descriptive::{drop_warmup, mean, median, percentile, summarize, warmup_len, Summary};
pub use mann_whitney::{mann_whitney_u, MannWhitney};
pub use runs::{compare_runs, NoiseEstimate, RunSample, DEFAULT_BETWEEN_RUN_CV};
pub use shift::{shifts, Shift, ShiftOptions, ShiftReport};
pub use trend::{theil_sen, Trend};
pub use verdict::{
    compare, direction_for, BetweenRunCv, CompareOptions, Direction, NoiseSource, RunCounts, SampleStats, Verdict,
    VerdictKind, STANDARD_METRICS,
};
