//! Comparing two samples of one metric: the verdict object of docs/DESIGN.md §2.
//!
//! Every comparison in Falcon (EXP's `exp compare`, analysis's step-time and kernel comparisons) returns a
//! [`Verdict`], serialised as
//!
//! ```json
//! {"metric": "step_time_s", "direction": "lower_is_better", "verdict": "regressed",
//!  "a": {"n": 50, "median": 0.5, "mean": 0.51}, "b": {"n": 50, "median": 0.55, "mean": 0.56},
//!  "delta_rel": 0.1, "ci_low_rel": 0.08, "ci_high_rel": 0.12, "p_value": 1e-12,
//!  "runs": null, "between_run_cv": null, "repeats_needed": null}
//! ```
//!
//! with `delta_rel = (b.median − a.median) / a.median`. Values that cannot be computed are `null`.
//! `runs`, `between_run_cv` and `repeats_needed` are set by the run-level comparison
//! (`compare_runs`, where the unit of evidence is the run) and `null` here; a verdict
//! serialised without them still deserialises.
//!
//! Method ([`compare`]):
//! 1. Non-finite values are dropped from both samples (and [`Verdict::notes`] says how many).
//! 2. Significance: two-sided Mann–Whitney U test ([`mann_whitney_u`]): exact for ≤ 20 values a side without
//!    ties, else normal approximation with tie and continuity corrections.
//! 3. Effect and its uncertainty: `delta_rel` from the medians, and a percentile bootstrap confidence
//!    interval of it: `bootstrap` times, resample each side with replacement (same size), take
//!    (median b* − median a*) / median a*; the interval is the (1 − c)/2 and (1 + c)/2 quantiles of those
//!    ratios (linear interpolation). The resampling is seeded, so the same inputs give the same interval.
//! 4. Decision, with e = `min_effect` (the margin), d = `delta_rel`, [lo, hi] the interval, p the p-value:
//!    - **same** if the two samples are identical (as multisets), whatever their size: there is no shift;
//!    - **inconclusive** if a side has fewer than `min_samples` values, or d is undefined (a's median is 0
//!      and b's is not);
//!    - **improved / regressed** if p ≤ α, |d| ≥ e and the interval excludes 0: a significant shift, large
//!      enough to matter, whose sign the interval agrees on. Which of the two follows from the direction;
//!    - **same** only if the interval lies within [−e, e]: an **equivalence test**. The interval shown (at
//!      `confidence`, 95 %) inside the margin is the same decision as two one-sided tests (TOST), each at
//!      level (1 − `confidence`)/2 = 2.5 %, of "the shift is ≤ −e" and "the shift is ≥ e": whatever shift
//!      there is, it is confidently smaller than e. What a reader sees decides, and nothing else does;
//!    - **inconclusive** otherwise — in particular when nothing significant was found but the interval reaches
//!      past ±e: absence of evidence is not evidence of absence. The data cannot tell a change of e from none
//!      (e.g. a 2 % estimate with interval [−19 %, +19 %] from one run a side, or a significant 1.5 % shift with
//!      interval [0.5 %, 2.6 %]). More samples (or runs: `repeats_needed`) settle it.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

use super::descriptive::{mean, percentile_sorted, sorted_finite};
use super::mann_whitney::mann_whitney_u;
use super::rng::Rng;
use crate::status::UnknownValue;

/// Which way a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Larger is better (throughput, MFU).
    HigherIsBetter,
    /// Smaller is better (step time, loss, memory).
    LowerIsBetter,
}

impl Direction {
    /// Every value.
    pub const ALL: &'static [Direction] = &[Direction::HigherIsBetter, Direction::LowerIsBetter];

    /// The serialised spelling: `higher_is_better` or `lower_is_better`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::HigherIsBetter => "higher_is_better",
            Direction::LowerIsBetter => "lower_is_better",
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Direction {
    type Err = UnknownValue;
    /// Accepts the serialised spellings and the goal words `maximize` / `minimize` (also `higher` / `lower`,
    /// `max` / `min`), case-insensitively.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "higher_is_better" | "higher" | "maximize" | "maximise" | "max" => Ok(Direction::HigherIsBetter),
            "lower_is_better" | "lower" | "minimize" | "minimise" | "min" => Ok(Direction::LowerIsBetter),
            _ => Err(UnknownValue {
                input: s.to_string(),
                what: "direction",
                expected: "higher_is_better, lower_is_better, maximize, minimize".to_string(),
            }),
        }
    }
}

impl From<crate::status::Direction> for Direction {
    /// A goal's `maximize` / `minimize`.
    fn from(d: crate::status::Direction) -> Self {
        match d {
            crate::status::Direction::Maximize => Direction::HigherIsBetter,
            crate::status::Direction::Minimize => Direction::LowerIsBetter,
        }
    }
}

impl From<Direction> for crate::status::Direction {
    /// The goal direction that wants a metric of this direction: higher is better → `maximize`.
    fn from(d: Direction) -> Self {
        match d {
            Direction::HigherIsBetter => crate::status::Direction::Maximize,
            Direction::LowerIsBetter => crate::status::Direction::Minimize,
        }
    }
}

/// The standard metrics reports compare between two experiments besides a goal's own (docs/DESIGN.md §2), in the
/// order they are shown.
pub const STANDARD_METRICS: &[&str] =
    &["step_time_s", "tokens_per_s", "tflops_per_device", "mfu", "loss", "peak_hbm_bytes"];

/// The good direction of a standard metric name (docs/DESIGN.md §2); `None` for other names, which need a direction
/// from the user.
pub fn direction_for(metric: &str) -> Option<Direction> {
    match metric {
        "step_time_s" | "loss" | "peak_hbm_bytes" | "profile_step_time_ms" => Some(Direction::LowerIsBetter),
        "tokens_per_s" | "tflops_per_device" | "mfu" | "duty_cycle" | "goodput_percent" => {
            Some(Direction::HigherIsBetter)
        }
        _ => None,
    }
}

/// The outcome word of a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// B is better than A by at least `min_effect`, significantly.
    Improved,
    /// B is worse than A by at least `min_effect`, significantly.
    Regressed,
    /// No difference that matters.
    Same,
    /// The data cannot tell (too few samples, undefined relative change, or an effect near `min_effect`).
    Inconclusive,
}

impl VerdictKind {
    /// The serialised spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictKind::Improved => "improved",
            VerdictKind::Regressed => "regressed",
            VerdictKind::Same => "same",
            VerdictKind::Inconclusive => "inconclusive",
        }
    }
}

impl fmt::Display for VerdictKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Size and centre of one side of a comparison (after non-finite values are dropped).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SampleStats {
    /// Number of finite values.
    pub n: usize,
    /// Median; `null` when `n` is 0.
    pub median: Option<f64>,
    /// Mean; `null` when `n` is 0.
    pub mean: Option<f64>,
}

/// Runs per side of a run-level verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunCounts {
    /// Runs of the baseline side that entered the comparison.
    pub a: usize,
    /// Runs of the candidate side.
    pub b: usize,
}

/// Where a run-level verdict's between-run noise estimate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NoiseSource {
    /// The compared runs themselves (a side has ≥ 2 runs), pooled with the prior.
    Runs,
    /// The caller's history of runs with the same config hash.
    History,
    /// The documented default floor (5 %).
    Default,
}

/// The between-run coefficient of variation a run-level verdict used.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BetweenRunCv {
    /// The estimate: the standard deviation of log run medians (≈ the CV of run medians).
    pub cv: f64,
    /// Where it came from.
    pub source: NoiseSource,
    /// Its degrees of freedom (those of the runs plus those of the prior), the t-test's.
    pub dof: f64,
}

/// The one shape every two-sample comparison returns (docs/DESIGN.md §2). See the module documentation for the
/// method and the decision rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Verdict {
    /// Metric name as given.
    pub metric: String,
    /// Which way is better.
    pub direction: Direction,
    /// The outcome.
    pub verdict: VerdictKind,
    /// The baseline sample.
    pub a: SampleStats,
    /// The candidate sample.
    pub b: SampleStats,
    /// (b.median − a.median) / a.median; `null` when undefined.
    pub delta_rel: Option<f64>,
    /// Lower end of the bootstrap confidence interval of `delta_rel`.
    pub ci_low_rel: Option<f64>,
    /// Upper end of the bootstrap confidence interval of `delta_rel`.
    pub ci_high_rel: Option<f64>,
    /// Two-sided p-value: Mann–Whitney U for [`compare`], the run-level t-test for
    /// the run-level comparison; `null` when a side is empty.
    pub p_value: Option<f64>,
    /// Number of runs per side when the unit of evidence is the run; `null`
    /// for a comparison of two plain samples ([`compare`]).
    #[serde(default)]
    pub runs: Option<RunCounts>,
    /// The between-run coefficient of variation the run-level test used and where it came from; `null` for
    /// [`compare`].
    #[serde(default)]
    pub between_run_cv: Option<BetweenRunCv>,
    /// When the run-level verdict is `inconclusive`: runs per side that would decide it with 80 % power if the
    /// observed shift is the true one — as a change, or as `same` (inside ±`min_effect`) when the shift is
    /// under half the margin; `null` otherwise and for [`compare`].
    #[serde(default)]
    pub repeats_needed: Option<usize>,
    /// The margin the verdict used: the smallest relative change that counts, and the half-width the interval
    /// must fit inside for `same`. `null` only in verdicts serialised before it was recorded.
    #[serde(default)]
    pub min_effect: Option<f64>,
    /// Human-readable remarks for renderers (non-finite values dropped, why a verdict is inconclusive). Not
    /// part of the JSON shape.
    #[serde(skip)]
    pub notes: Vec<String>,
}

impl Verdict {
    /// True for `improved` and `regressed`.
    pub fn is_change(&self) -> bool {
        matches!(self.verdict, VerdictKind::Improved | VerdictKind::Regressed)
    }
}

/// Parameters of [`compare`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct CompareOptions {
    /// Significance level of the Mann–Whitney test. Default 0.01: the false-positive rate of a change
    /// verdict on A/A data is then at most 1 % by construction, whatever the noise (the effect-size and
    /// interval conditions only lower it further). Pinpoint and Fuchsia's perfcompare use the same level.
    pub alpha: f64,
    /// Smallest relative change of the median that counts (default 0.02, Perfherder's 2 % floor), and the
    /// equivalence margin: `same` needs the interval inside ±`min_effect`.
    pub min_effect: f64,
    /// Bootstrap resamples for the interval (default 2,000; 0 disables the interval).
    pub bootstrap: usize,
    /// Confidence level of the interval (default 0.95).
    pub confidence: f64,
    /// Fewer values than this on either side makes the verdict inconclusive (default 5).
    pub min_samples: usize,
    /// Seed of the bootstrap resampling.
    pub seed: u64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            alpha: 0.01,
            min_effect: 0.02,
            bootstrap: 2_000,
            confidence: 0.95,
            min_samples: 5,
            seed: 0x00FA_1C0D,
        }
    }
}

/// Compares sample `b` (candidate) with sample `a` (baseline) of `metric`. Never panics; see the module
/// documentation for the method and the decision rule.
pub fn compare(metric: &str, direction: Direction, a: &[f64], b: &[f64], opts: &CompareOptions) -> Verdict {
    let mut notes = Vec::new();
    let sa = sorted_finite(a);
    let sb = sorted_finite(b);
    for (name, raw, kept) in [("a", a.len(), sa.len()), ("b", b.len(), sb.len())] {
        if raw > kept {
            notes.push(format!("{name}: {} non-finite value(s) (NaN or infinite) ignored", raw - kept));
        }
    }
    let side = |s: &[f64]| SampleStats { n: s.len(), median: percentile_sorted(s, 0.5), mean: mean(s) };
    let (stats_a, stats_b) = (side(&sa), side(&sb));

    let delta_rel = match (stats_a.median, stats_b.median) {
        (Some(ma), Some(mb)) => relative_change(ma, mb),
        _ => None,
    };
    let p_value = mann_whitney_u(&sa, &sb).map(|r| r.p_value);
    let ci = if sa.len().min(sb.len()) >= opts.min_samples.max(1) && delta_rel.is_some() {
        bootstrap_ci(&sa, &sb, opts)
    } else {
        None
    };

    // Identical samples (a capture compared with itself) show no shift whatever their size.
    let verdict = if !sa.is_empty() && sa == sb {
        notes.push("the two samples are identical".to_string());
        VerdictKind::Same
    } else {
        decide(&stats_a, &stats_b, delta_rel, ci, p_value, direction, opts, &mut notes)
    };
    Verdict {
        metric: metric.to_string(),
        direction,
        verdict,
        a: stats_a,
        b: stats_b,
        delta_rel,
        ci_low_rel: ci.map(|c| c.0),
        ci_high_rel: ci.map(|c| c.1),
        p_value,
        runs: None,
        between_run_cv: None,
        repeats_needed: None,
        min_effect: Some(opts.min_effect),
        notes,
    }
}

/// (b − a)/a, with 0/0 = 0 and x/0 undefined.
fn relative_change(a: f64, b: f64) -> Option<f64> {
    if a == 0.0 {
        return (b == 0.0).then_some(0.0);
    }
    let d = (b - a) / a;
    d.is_finite().then_some(d)
}

fn decide(
    a: &SampleStats,
    b: &SampleStats,
    delta: Option<f64>,
    ci: Option<(f64, f64)>,
    p: Option<f64>,
    direction: Direction,
    opts: &CompareOptions,
    notes: &mut Vec<String>,
) -> VerdictKind {
    if a.n < opts.min_samples || b.n < opts.min_samples {
        notes.push(format!(
            "too few samples: a has {}, b has {}; at least {} per side are needed",
            a.n, b.n, opts.min_samples
        ));
        return VerdictKind::Inconclusive;
    }
    let Some(d) = delta else {
        notes.push("a's median is 0, so the relative change is undefined".to_string());
        return VerdictKind::Inconclusive;
    };
    decide_shift(d, ci, p, a.median.unwrap_or(1.0), direction, opts, "samples", notes)
}

/// Step 4 of the decision rule (module documentation) once the relative change `d` is defined: shared by
/// [`compare`] and the run-level comparison (`compare_runs`). `unit` names what more of would settle an
/// inconclusive verdict ("samples", "runs").
pub(super) fn decide_shift(
    d: f64,
    ci: Option<(f64, f64)>,
    p: Option<f64>,
    a_median: f64,
    direction: Direction,
    opts: &CompareOptions,
    unit: &str,
    notes: &mut Vec<String>,
) -> VerdictKind {
    let p = p.unwrap_or(1.0);
    let e = opts.min_effect;
    let significant = p <= opts.alpha;
    let large = d.abs() >= e;
    let excludes_zero = ci.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0);
    if significant && large && excludes_zero {
        // With a negative baseline (rare for these metrics) a positive ratio means b is smaller.
        let b_larger = (d > 0.0) == (a_median > 0.0);
        return match (direction, b_larger) {
            (Direction::HigherIsBetter, true) | (Direction::LowerIsBetter, false) => VerdictKind::Improved,
            _ => VerdictKind::Regressed,
        };
    }
    if ci.is_some_and(|(lo, hi)| lo >= -e && hi <= e) {
        return VerdictKind::Same;
    }
    let conf = opts.confidence * 100.0;
    notes.push(match ci {
        Some((lo, hi)) if significant && large => format!(
            "a shift is indicated (p = {p:.3e}, delta {:+.2}%) but the {conf:.0}% interval [{:+.2}%, {:+.2}%] reaches \
             across 0 or ±{:.1}%; more {unit} would settle it",
            d * 100.0,
            lo * 100.0,
            hi * 100.0,
            e * 100.0
        ),
        Some((lo, hi)) => format!(
            "the {conf:.0}% interval [{:+.2}%, {:+.2}%] reaches past the ±{:.1}% margin: the data cannot tell a \
             change of {:.1}% from none (p = {p:.3}); more {unit} would settle it",
            lo * 100.0,
            hi * 100.0,
            e * 100.0,
            e * 100.0
        ),
        None => format!("no confidence interval could be computed (delta {:+.2}%, p = {p:.3e})", d * 100.0),
    });
    VerdictKind::Inconclusive
}

/// Percentile bootstrap interval of (median b* − median a*)/median a*; `None` when disabled or when most
/// resamples have a zero baseline median.
fn bootstrap_ci(sa: &[f64], sb: &[f64], opts: &CompareOptions) -> Option<(f64, f64)> {
    if opts.bootstrap == 0 || sa.is_empty() || sb.is_empty() {
        return None;
    }
    let mut rng = Rng::new(opts.seed);
    let mut counts = vec![0u32; sa.len().max(sb.len())];
    let mut ratios = Vec::with_capacity(opts.bootstrap.min(1 << 20));
    for _ in 0..opts.bootstrap {
        let ma = resampled_median(sa, &mut rng, &mut counts);
        let mb = resampled_median(sb, &mut rng, &mut counts);
        if let Some(r) = relative_change(ma, mb) {
            ratios.push(r);
        }
    }
    if ratios.len() * 2 < opts.bootstrap {
        return None;
    }
    ratios.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - opts.confidence.clamp(0.0, 1.0)) / 2.0;
    Some((percentile_sorted(&ratios, tail)?, percentile_sorted(&ratios, 1.0 - tail)?))
}

/// Median of a bootstrap resample of `sorted` (same size, with replacement), without sorting: draw how many
/// times each order statistic is picked, then walk the cumulative counts to the middle one(s). O(n).
fn resampled_median(sorted: &[f64], rng: &mut Rng, counts: &mut [u32]) -> f64 {
    let n = sorted.len();
    let counts = &mut counts[..n];
    counts.fill(0);
    for _ in 0..n {
        counts[rng.below(n)] += 1;
    }
    // 0-based positions of the middle values in the resample: equal for odd n.
    let (lo_k, hi_k) = ((n - 1) / 2, n / 2);
    let mut cum = 0usize;
    let mut lo_v = None;
    for (i, &c) in counts.iter().enumerate() {
        cum += c as usize;
        if lo_v.is_none() && cum > lo_k {
            lo_v = Some(sorted[i]);
        }
        if cum > hi_k {
            let lo = lo_v.unwrap_or(sorted[i]);
            return lo + (sorted[i] - lo) / 2.0;
        }
    }
    sorted[n - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Step times around `base` seconds: lognormal noise with coefficient of variation ≈ `cv`, plus a slow
    /// step (+20–60 %) about once in 50 (a host hiccup, a checkpoint write).
    fn step_times(rng: &mut Rng, n: usize, base: f64, cv: f64) -> Vec<f64> {
        (0..n)
            .map(|_| {
                let mut t = base * (cv * rng.standard_normal()).exp();
                if rng.below(50) == 0 {
                    t *= 1.2 + 0.4 * rng.next_f64();
                }
                t
            })
            .collect()
    }

    #[test]
    fn json_shape_is_exactly_the_design() {
        let v = compare(
            "step_time_s",
            Direction::LowerIsBetter,
            &[1.0, 1.1, 0.9, 1.0, 1.05],
            &[1.0, 1.2, 1.1, 1.3, 1.1],
            &CompareOptions::default(),
        );
        let json = serde_json::to_value(&v).unwrap();
        let keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
        let mut want =
            vec!["metric", "direction", "verdict", "a", "b", "delta_rel", "ci_low_rel", "ci_high_rel", "p_value"];
        // The run-level fields are part of the one shape, `null` for a plain two-sample comparison; the margin
        // is always there.
        want.extend(["runs", "between_run_cv", "repeats_needed", "min_effect"]);
        let mut got = keys.clone();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want);
        let mut side: Vec<&str> = json["a"].as_object().unwrap().keys().map(String::as_str).collect();
        side.sort_unstable();
        assert_eq!(side, ["mean", "median", "n"]);
        assert_eq!(json["direction"], "lower_is_better");
        assert!(["improved", "regressed", "same", "inconclusive"].contains(&json["verdict"].as_str().unwrap()));
        assert_eq!(json["metric"], "step_time_s");
        assert!(json["runs"].is_null() && json["between_run_cv"].is_null() && json["repeats_needed"].is_null());
        assert_eq!(json["min_effect"], 0.02);
        // A verdict serialised before the run-level fields and the margin existed still reads.
        let mut old = json.clone();
        for k in ["runs", "between_run_cv", "repeats_needed", "min_effect"] {
            old.as_object_mut().unwrap().remove(k);
        }
        assert_eq!(
            serde_json::from_value::<Verdict>(old).unwrap(),
            Verdict { notes: vec![], min_effect: None, ..v.clone() }
        );
        // Round trip (notes are not serialised).
        let back: Verdict = serde_json::from_value(json).unwrap();
        assert_eq!(Verdict { notes: vec![], ..v.clone() }, back);
        // Every verdict word and both directions spell as documented.
        for (k, s) in [
            (VerdictKind::Improved, "\"improved\""),
            (VerdictKind::Regressed, "\"regressed\""),
            (VerdictKind::Same, "\"same\""),
            (VerdictKind::Inconclusive, "\"inconclusive\""),
        ] {
            assert_eq!(serde_json::to_string(&k).unwrap(), s);
            assert_eq!(format!("\"{k}\""), s);
        }
        assert_eq!(serde_json::to_string(&Direction::HigherIsBetter).unwrap(), "\"higher_is_better\"");
        assert_eq!("minimize".parse::<Direction>().unwrap(), Direction::LowerIsBetter);
        assert_eq!("HIGHER_IS_BETTER".parse::<Direction>().unwrap(), Direction::HigherIsBetter);
        assert!("sideways".parse::<Direction>().is_err());
    }

    #[test]
    fn empty_side_serialises_nulls() {
        let v = compare("loss", Direction::LowerIsBetter, &[], &[1.0, 2.0], &CompareOptions::default());
        assert_eq!(v.verdict, VerdictKind::Inconclusive);
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(json["a"], serde_json::json!({"n": 0, "median": null, "mean": null}));
        assert!(json["delta_rel"].is_null() && json["p_value"].is_null() && json["ci_low_rel"].is_null());
    }

    #[test]
    fn standard_directions() {
        use Direction::*;
        for (m, d) in [
            ("step_time_s", LowerIsBetter),
            ("loss", LowerIsBetter),
            ("tokens_per_s", HigherIsBetter),
            ("tflops_per_device", HigherIsBetter),
            ("mfu", HigherIsBetter),
            ("peak_hbm_bytes", LowerIsBetter),
        ] {
            assert_eq!(direction_for(m), Some(d), "{m}");
        }
        assert_eq!(direction_for("my_metric"), None);
        assert_eq!(Direction::from(crate::status::Direction::Maximize), HigherIsBetter);
        assert_eq!(Direction::from(crate::status::Direction::Minimize), LowerIsBetter);
    }

    #[test]
    fn identical_samples_are_same() {
        let mut rng = Rng::new(1);
        let a = step_times(&mut rng, 50, 0.5, 0.03);
        let v = compare("step_time_s", Direction::LowerIsBetter, &a, &a, &CompareOptions::default());
        assert_eq!(v.verdict, VerdictKind::Same, "{v:?}");
        assert_eq!(v.delta_rel, Some(0.0));
        assert_eq!(v.p_value, Some(1.0));
        let c = [2.0; 10];
        let v = compare("step_time_s", Direction::LowerIsBetter, &c, &c, &CompareOptions::default());
        assert_eq!(v.verdict, VerdictKind::Same, "{v:?}");
        assert_eq!((v.ci_low_rel, v.ci_high_rel), (Some(0.0), Some(0.0)));
        // Identical samples too small for the test are still the same (a profile compared with itself),
        // while two small different samples stay inconclusive.
        let v = compare("step_time_s", Direction::LowerIsBetter, &[0.3, 0.1], &[0.1, 0.3], &CompareOptions::default());
        assert_eq!(v.verdict, VerdictKind::Same, "{v:?}");
        assert!(v.notes.iter().any(|n| n.contains("identical")), "{v:?}");
        let v = compare("step_time_s", Direction::LowerIsBetter, &[0.3, 0.1], &[0.1, 0.31], &CompareOptions::default());
        assert_eq!(v.verdict, VerdictKind::Inconclusive, "{v:?}");
        let v = compare("step_time_s", Direction::LowerIsBetter, &[], &[], &CompareOptions::default());
        assert_eq!(v.verdict, VerdictKind::Inconclusive, "{v:?}");
    }

    #[test]
    fn ten_percent_slower_steps_regress_and_faster_improve() {
        let mut rng = Rng::new(2);
        let a = step_times(&mut rng, 50, 0.5, 0.03);
        let b = step_times(&mut rng, 50, 0.55, 0.03);
        let opts = CompareOptions::default();
        let v = compare("step_time_s", Direction::LowerIsBetter, &a, &b, &opts);
        assert_eq!(v.verdict, VerdictKind::Regressed, "{v:?}");
        let d = v.delta_rel.unwrap();
        assert!((0.07..0.13).contains(&d), "{d}");
        assert!(v.ci_low_rel.unwrap() > 0.0 && v.ci_low_rel.unwrap() < d && d < v.ci_high_rel.unwrap());
        assert!(v.p_value.unwrap() < 1e-6);
        // The reverse comparison is an improvement.
        let v = compare("step_time_s", Direction::LowerIsBetter, &b, &a, &opts);
        assert_eq!(v.verdict, VerdictKind::Improved, "{v:?}");
        assert!(v.delta_rel.unwrap() < -0.07);
        // Throughput going up is an improvement; down a regression.
        let tps_a: Vec<f64> = a.iter().map(|t| 4096.0 / t).collect();
        let tps_b: Vec<f64> = b.iter().map(|t| 4096.0 / t).collect();
        assert_eq!(direction_for("tokens_per_s"), Some(Direction::HigherIsBetter));
        let v = compare("tokens_per_s", Direction::HigherIsBetter, &tps_b, &tps_a, &opts);
        assert_eq!(v.verdict, VerdictKind::Improved, "{v:?}");
        let v = compare("tokens_per_s", Direction::HigherIsBetter, &tps_a, &tps_b, &opts);
        assert_eq!(v.verdict, VerdictKind::Regressed, "{v:?}");
    }

    #[test]
    fn deterministic_for_a_seed() {
        let mut rng = Rng::new(3);
        let a = step_times(&mut rng, 40, 0.5, 0.05);
        let b = step_times(&mut rng, 40, 0.52, 0.05);
        let o = CompareOptions::default();
        assert_eq!(
            compare("x", Direction::LowerIsBetter, &a, &b, &o),
            compare("x", Direction::LowerIsBetter, &a, &b, &o)
        );
        let o2 = CompareOptions { seed: 99, ..o };
        let (v1, v2) =
            (compare("x", Direction::LowerIsBetter, &a, &b, &o), compare("x", Direction::LowerIsBetter, &a, &b, &o2));
        assert_ne!(v1.ci_low_rel, v2.ci_low_rel);
    }

    #[test]
    fn fewer_than_five_samples_is_inconclusive() {
        let o = CompareOptions::default();
        let v = compare(
            "step_time_s",
            Direction::LowerIsBetter,
            &[1.0, 1.0, 1.0, 1.0],
            &[2.0, 2.0, 2.0, 2.0, 2.0, 2.0],
            &o,
        );
        assert_eq!(v.verdict, VerdictKind::Inconclusive);
        assert_eq!((v.a.n, v.b.n), (4, 6));
        assert_eq!(v.delta_rel, Some(1.0));
        assert!(v.ci_low_rel.is_none());
        assert!(v.notes.iter().any(|n| n.contains("too few samples")), "{:?}", v.notes);
        let v = compare("step_time_s", Direction::LowerIsBetter, &[], &[], &o);
        assert_eq!(v.verdict, VerdictKind::Inconclusive);
        assert_eq!(v.p_value, None);
    }

    #[test]
    fn non_finite_values_are_dropped_and_noted() {
        let o = CompareOptions::default();
        let a = [1.0, 1.01, f64::NAN, 0.99, 1.0, 1.02, 0.98, f64::INFINITY];
        let b = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, f64::NEG_INFINITY];
        let v = compare("step_time_s", Direction::LowerIsBetter, &a, &b, &o);
        assert_eq!((v.a.n, v.b.n), (6, 6));
        assert_eq!(v.verdict, VerdictKind::Same, "{v:?}");
        assert!(v.notes.iter().any(|n| n.starts_with("a: 2 non-finite")), "{:?}", v.notes);
        assert!(v.notes.iter().any(|n| n.starts_with("b: 1 non-finite")), "{:?}", v.notes);
        let v = compare("step_time_s", Direction::LowerIsBetter, &[f64::NAN; 8], &b, &o);
        assert_eq!(v.verdict, VerdictKind::Inconclusive);
        assert_eq!(v.a.n, 0);
        assert!(serde_json::to_string(&v).is_ok());
    }

    #[test]
    fn zero_baseline_median() {
        let o = CompareOptions::default();
        let zeros = [0.0; 8];
        let v = compare("loss", Direction::LowerIsBetter, &zeros, &[1.0; 8], &o);
        assert_eq!(v.verdict, VerdictKind::Inconclusive);
        assert_eq!(v.delta_rel, None);
        assert!(v.notes.iter().any(|n| n.contains("median is 0")));
        let v = compare("loss", Direction::LowerIsBetter, &zeros, &zeros, &o);
        assert_eq!(v.verdict, VerdictKind::Same);
        assert_eq!(v.delta_rel, Some(0.0));
        // Mostly zeros with a few non-zero values: the medians are 0 and 0.
        let v = compare(
            "loss",
            Direction::LowerIsBetter,
            &[0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
            &[0.0, 0.0, 0.0, 0.0, 0.0, 2.0],
            &o,
        );
        assert!(matches!(v.verdict, VerdictKind::Same | VerdictKind::Inconclusive));
    }

    #[test]
    fn negative_baseline_keeps_the_direction_right() {
        // A metric whose values are negative (e.g. a log-likelihood, higher is better): b is larger.
        let a = [-10.0, -10.1, -9.9, -10.05, -9.95, -10.0, -10.02, -9.98];
        let b: Vec<f64> = a.iter().map(|x| x + 1.0).collect();
        let v = compare("loglik", Direction::HigherIsBetter, &a, &b, &CompareOptions::default());
        assert_eq!(v.verdict, VerdictKind::Improved, "{v:?}");
        assert!(v.delta_rel.unwrap() < 0.0);
    }

    #[test]
    fn small_but_significant_shift_is_same_or_inconclusive_never_a_change() {
        // 1 % slower with very little noise: significant, but below the 2 % floor.
        let mut rng = Rng::new(4);
        let a = step_times(&mut rng, 60, 0.5, 0.002);
        let b = step_times(&mut rng, 60, 0.505, 0.002);
        let v = compare("step_time_s", Direction::LowerIsBetter, &a, &b, &CompareOptions::default());
        assert_eq!(v.verdict, VerdictKind::Same, "{v:?}");
        assert!(v.p_value.unwrap() < 0.01);
        // 3 % slower on very noisy data: not decidable with 8 samples a side.
        let a = step_times(&mut rng, 8, 0.5, 0.2);
        let b = step_times(&mut rng, 8, 0.515, 0.2);
        let v = compare("step_time_s", Direction::LowerIsBetter, &a, &b, &CompareOptions::default());
        assert!(!v.is_change(), "{v:?}");
    }

    /// A/A: two samples of `n` drawn (without replacement) from one long series of realistic step times (3 %
    /// noise and a slow step in 50), 1,000 times. A change verdict is a false positive; at most 1 % may be.
    /// `same` is an equivalence claim: it is made only when the interval lies inside ±2 % (asserted on every
    /// trial), and with enough samples it is the usual answer.
    fn aa_trials(n: usize, seed: u64) -> (usize, usize, usize) {
        let mut rng = Rng::new(seed);
        let pool = step_times(&mut rng, 4_000, 0.42, 0.03);
        let opts = CompareOptions::default();
        let mut idx: Vec<usize> = (0..pool.len()).collect();
        let (mut changes, mut same, mut inconclusive) = (0, 0, 0);
        for trial in 0..1_000u64 {
            // Partial Fisher–Yates: the first 2n indices are a random subset.
            for i in 0..2 * n {
                let j = i + rng.below(idx.len() - i);
                idx.swap(i, j);
            }
            let a: Vec<f64> = idx[..n].iter().map(|&i| pool[i]).collect();
            let b: Vec<f64> = idx[n..2 * n].iter().map(|&i| pool[i]).collect();
            let v = compare("step_time_s", Direction::LowerIsBetter, &a, &b, &CompareOptions { seed: trial, ..opts });
            match v.verdict {
                VerdictKind::Improved | VerdictKind::Regressed => changes += 1,
                VerdictKind::Same => {
                    let (lo, hi) = (v.ci_low_rel.unwrap(), v.ci_high_rel.unwrap());
                    assert!(lo >= -0.02 && hi <= 0.02, "`same` with an interval past the margin: {v:?}");
                    same += 1
                }
                VerdictKind::Inconclusive => inconclusive += 1,
            }
        }
        eprintln!(
            "A/A, {n} steps a side, over 1000 trials: {changes} changes, {same} same, {inconclusive} inconclusive"
        );
        (changes, same, inconclusive)
    }

    #[test]
    fn aa_false_positive_rate_at_most_one_percent_and_same_only_when_shown() {
        // 50 steps a side: the interval is about ±1.5 %, so some pairs are shown the same, none a change.
        let (changes, _, _) = aa_trials(50, 0xAA);
        assert!(changes <= 10, "false-positive rate {changes}/1000 exceeds 1 %");
        // 500 steps a side: the interval is well inside ±2 %: the same, nearly always.
        let (changes, same, _) = aa_trials(500, 0xAB);
        assert!(changes <= 10 && same >= 900, "500 steps a side: {changes} changes, {same}/1000 same");
    }

    #[test]
    fn nothing_found_with_a_wide_interval_is_inconclusive_not_same() {
        // 8 noisy steps a side, no real shift: not significant, estimate under the margin, but an interval of
        // ± tens of percent. The old rule (p > α and |d| < e) called this `same`.
        let mut rng = Rng::new(7);
        let a = step_times(&mut rng, 8, 0.5, 0.2);
        let b = step_times(&mut rng, 8, 0.5, 0.2);
        let v = compare("step_time_s", Direction::LowerIsBetter, &a, &b, &CompareOptions::default());
        let (lo, hi) = (v.ci_low_rel.unwrap(), v.ci_high_rel.unwrap());
        assert!(lo < -0.02 || hi > 0.02, "{v:?}");
        assert_eq!(v.verdict, VerdictKind::Inconclusive, "{v:?}");
        assert!(v.notes.iter().any(|n| n.contains("reaches past the ±2.0% margin")), "{:?}", v.notes);
    }

    // The A/A test on the real recorded step times now resamples runs: `runs.rs`,
    // `aa_false_positive_rate_on_real_recorded_runs`.

    #[test]
    fn bootstrap_median_matches_sorting() {
        // The counting median equals the median of the explicitly built resample.
        let sorted = [1.0, 2.0, 3.0, 5.0, 8.0, 13.0];
        let mut counts = vec![0u32; 6];
        for seed in 0..200 {
            let mut r1 = Rng::new(seed);
            let mut r2 = Rng::new(seed);
            let got = resampled_median(&sorted, &mut r1, &mut counts);
            let mut sample: Vec<f64> = (0..6).map(|_| sorted[r2.below(6)]).collect();
            sample.sort_unstable_by(f64::total_cmp);
            assert_eq!(got, (sample[2] + sample[3]) / 2.0);
        }
        let odd = [1.0, 4.0, 9.0];
        for seed in 0..50 {
            let mut r1 = Rng::new(seed);
            let mut r2 = Rng::new(seed);
            let got = resampled_median(&odd, &mut r1, &mut counts);
            let mut sample: Vec<f64> = (0..3).map(|_| odd[r2.below(3)]).collect();
            sample.sort_unstable_by(f64::total_cmp);
            assert_eq!(got, sample[1]);
        }
    }
}
