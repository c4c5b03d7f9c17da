//! Run-level comparison: verdicts that hold across runs (docs/DESIGN.md §2).
//!
//! The steps of one run are not independent samples of a config: everything that is fixed for the length of
//! a run (the hosts it landed on, their placement and interconnect, the compiler's choices, the input
//! pipeline's warm caches, thermal state) moves all its steps together. Two runs of the same config differ by
//! a few percent while their steps are tight, so a step-level test ([`super::compare`]) calls two runs of one
//! config "improved, p = 0". Here the **unit of evidence is the run**.
//!
//! # Model
//!
//! Each run `i` of side `s` is summarised by a [`RunSample`]: the median of its post-warm-up steps, a robust
//! within-run spread and its number of steps. With `yᵢ = ln(medianᵢ)`,
//!
//! `yᵢ = μ_s + uᵢ + eᵢ`, `uᵢ ~ N(0, τ²)` (the run factor), `eᵢ ~ N(0, wᵢ)` (the sampling error of a median of
//! `nᵢ` steps, `wᵢ ≈ (π/2)·(spreadᵢ/medianᵢ)²/nᵢ`).
//!
//! On the log scale a multiplicative run factor is additive and its standard deviation is the between-run
//! CV (for CVs of a few percent the two agree to a fraction of a percent), and `exp(μ_b − μ_a) − 1` is the
//! relative change of the (geometric) centre.
//!
//! # Method ([`compare_runs`])
//!
//! 1. Runs with a non-finite median are dropped (and noted); a non-finite or negative spread counts as 0. A
//!    side with no run left, or a run median ≤ 0 (the log is undefined), makes the verdict `inconclusive`.
//! 2. Between-run variance σ² of a run's log median (τ² plus its share of `wᵢ`): the pooled within-side
//!    sample variance of the log medians, `SS = Σ_s Σ_i (yᵢ − ȳ_s)²` with `Σ_s (k_s − 1)` degrees of freedom,
//!    **pooled with a prior** as a scaled-inverse-χ² prior is (the conjugate update of a normal variance):
//!    `σ² = (SS + ν₀·c₀²) / (Σ(k_s − 1) + ν₀)` with `ν = Σ(k_s − 1) + ν₀` degrees of freedom. The prior
//!    `(c₀, ν₀)` is the caller's [`NoiseEstimate`] (the CV of run medians over the history of runs with the
//!    same config hash, `ν₀ = runs − 1`) when given, else the default floor
//!    (`c₀ = `[`DEFAULT_BETWEEN_RUN_CV`], `ν₀ = `[`DEFAULT_PRIOR_DOF`]). The estimate is reported as
//!    `between_run_cv` with its source: `runs` when a side had ≥ 2 runs, else `history`, else `default`.
//!    So a verdict never rests on one run's steps alone: with one run a side all the between-run noise comes
//!    from the prior.
//! 3. Each side's centre `ȳ_s` has variance `max(σ², w̄_s)/k_s` (`w̄_s` the mean within-run variance of its
//!    medians, so that a run of very few or very noisy steps is not trusted beyond what its steps allow).
//!    `t = (ȳ_b − ȳ_a)/se` is compared with Student's t with ν degrees of freedom (a pooled two-sample t-test
//!    whose variance is shared across the sides and with the prior: it assumes the candidate config's
//!    between-run noise is the baseline's). `p_value` is two-sided; the interval is
//!    `exp(ȳ_b − ȳ_a ± t_{(1+c)/2, ν}·se) − 1`; `delta_rel = exp(ȳ_b − ȳ_a) − 1`, so each side's `median` is the
//!    geometric mean of its run medians (with one run, that run's median), its `mean` the arithmetic mean of
//!    the run medians and its `n` the steps behind them.
//! 4. The decision is [`super::compare`]'s (same α, `min_effect`, interval conditions; see
//!    [`super::verdict`]): a change needs significance, |d| ≥ `min_effect` and an interval clear of 0; `same`
//!    needs the interval inside ±`min_effect` (the equivalence test); anything else is `inconclusive`. Sides
//!    made of the same runs are `same`.
//! 5. When `inconclusive`: `repeats_needed`, the runs per side that would decide it with 80 % power if the
//!    observed shift is the true one, `σ_eff` being the variance estimate above (at least the within-run part)
//!    and `ν(n) = 2(n − 1) + ν₀`:
//!    - a shift under half the margin (|ȳ_b − ȳ_a| < ln(1 + e)/2) is headed for `same`: the smallest `n` with
//!      `(t_{(1+c)/2, ν(n)} + t_{0.9, ν(n)})·σ_eff·√(2/n) ≤ ln(1 + e) − |ȳ_b − ȳ_a|`, the power calculation
//!      of the two one-sided tests (the interval at confidence c inside the margin);
//!    - a larger one is headed for a change: the smallest `n` with
//!      `(t_{1−α/2, ν(n)} + t_{0.8, ν(n)})·σ_eff·√(2/n) ≤ δ`, the textbook power calculation of a two-sample
//!      t-test, for δ the observed shift on the log scale (at least `ln(1 + e)`).
//!
//!    It is at least one more than the larger side has now, and `null` past [`MAX_REPEATS`].
//!
//! # False positives
//!
//! With a correct prior the test is a t-test at level α (default 1 %), so A/A pairs are called a change at most
//! α of the time; the `min_effect` and interval conditions only lower that. When the true between-run CV
//! exceeds the prior's the rate rises, and the few degrees of freedom given to the default prior are what
//! protects single-run comparisons: with ν₀ = 4 the critical t at α = 1 % is 4.60, so even a true CV of 6 %
//! against the 5 % floor gives an A/A false-positive rate near 0.02 % with one run a side (the tests check
//! ≤ 1/20 and ≤ 2 % of 200 pairs by simulation). Two or more runs a side soon outweigh the prior.
//!
//! # The default floor
//!
//! [`DEFAULT_BETWEEN_RUN_CV`] = 5 % with ν₀ = 4: reruns of one training config on accelerators typically
//! differ by 1–5 % in median step time (different hosts and slices, placement, input pipelines; cloud
//! performance-variability studies report run-to-run CVs of a few percent for the same instance type), while
//! the steps within a run are often tighter than 1 %. 5 % is at the upper end, so that a comparison without
//! repeats or history errs towards `inconclusive`, and ν₀ = 4 says it is a guess worth about five runs: a
//! handful of real repeats or a history replaces it. With one run a side only shifts beyond about
//! ±33 % (4.60·√2·5 %) are called, which is what one run of each can honestly support; and nothing is ever
//! called `same` with one run a side (the 95 % interval is at least ±19.6 % = 2.78·√2·5 % wide, far past the
//! 2 % margin): with one run a side the honest answer to "did nothing change?" is `inconclusive` and the runs
//! that would tell.

use super::descriptive::{drop_warmup, mean, percentile_sorted, sorted_finite};
use super::special::{t_quantile_two_sided, t_two_sided_p};
use super::verdict::{
    decide_shift, BetweenRunCv, CompareOptions, Direction, NoiseSource, RunCounts, SampleStats, Verdict, VerdictKind,
};
use serde::{Deserialize, Serialize};

/// The default between-run CV (standard deviation of log run medians) when neither the runs nor a history
/// give one: 5 % (see the module documentation for the justification).
pub const DEFAULT_BETWEEN_RUN_CV: f64 = 0.05;

/// The degrees of freedom the default floor counts as (about five runs' worth of evidence).
pub const DEFAULT_PRIOR_DOF: f64 = 4.0;

/// `repeats_needed` is `null` beyond this many runs per side.
pub const MAX_REPEATS: usize = 1_000;

/// The power `repeats_needed` is computed for.
pub const TARGET_POWER: f64 = 0.8;

/// One run of a config, summarised.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunSample {
    /// Median of the run's post-warm-up steps.
    pub median: f64,
    /// Robust within-run spread of its steps: IQR/1.349 (equal to the standard deviation for normal steps).
    /// 0 when unknown.
    pub spread: f64,
    /// Steps behind `median` (0 when only the median is known).
    pub n_steps: usize,
}

impl RunSample {
    /// A run from its per-step values: warm-up dropped (`warmup` steps, else the rule of
    /// [`super::warmup_len`]), non-finite values skipped. `None` when no finite value is left.
    pub fn from_steps(steps: &[f64], warmup: Option<usize>) -> Option<RunSample> {
        let s = sorted_finite(drop_warmup(steps, warmup));
        let median = percentile_sorted(&s, 0.5)?;
        let iqr = percentile_sorted(&s, 0.75)? - percentile_sorted(&s, 0.25)?;
        Some(RunSample { median, spread: iqr / 1.349, n_steps: s.len() })
    }
}

/// A between-run noise estimate from history: runs of the same config hash.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NoiseEstimate {
    /// Standard deviation of the log run medians (≈ the CV of run medians).
    pub cv: f64,
    /// How many runs it comes from (its degrees of freedom are `runs − 1`); fewer than 2 is ignored.
    pub runs: usize,
}

impl NoiseEstimate {
    /// The estimate from the medians of past runs of one config (non-finite and non-positive ones skipped);
    /// `None` with fewer than 2 usable runs.
    pub fn from_run_medians(medians: &[f64]) -> Option<NoiseEstimate> {
        let logs: Vec<f64> = medians.iter().filter(|m| m.is_finite() && **m > 0.0).map(|m| m.ln()).collect();
        if logs.len() < 2 {
            return None;
        }
        let m = mean(&logs)?;
        let ss: f64 = logs.iter().map(|y| (y - m).powi(2)).sum();
        let cv = (ss / (logs.len() - 1) as f64).sqrt();
        cv.is_finite().then_some(NoiseEstimate { cv, runs: logs.len() })
    }

    fn usable(&self) -> bool {
        self.runs >= 2 && self.cv.is_finite() && self.cv >= 0.0
    }
}

/// Compares the runs `b` (candidate) with the runs `a` (baseline) of `metric`, the run being the unit of
/// evidence. `noise` is the between-run noise of this config from history, if the caller has one. Uses
/// `alpha`, `min_effect` and `confidence` of `opts` (not `min_samples`, `bootstrap`, `seed`). Never panics;
/// see the module documentation for the method.
pub fn compare_runs(
    metric: &str,
    direction: Direction,
    a: &[RunSample],
    b: &[RunSample],
    noise: Option<NoiseEstimate>,
    opts: &CompareOptions,
) -> Verdict {
    let mut notes = Vec::new();
    let ra = usable_runs("a", a, &mut notes);
    let rb = usable_runs("b", b, &mut notes);
    let runs = RunCounts { a: ra.len(), b: rb.len() };

    let (prior_var, prior_dof, prior_source) = match noise {
        Some(n) if n.usable() => (n.cv * n.cv, (n.runs - 1) as f64, NoiseSource::History),
        Some(_) => {
            notes.push(
                "the history noise estimate was unusable (fewer than 2 runs or not finite); the default floor is used"
                    .to_string(),
            );
            (DEFAULT_BETWEEN_RUN_CV.powi(2), DEFAULT_PRIOR_DOF, NoiseSource::Default)
        }
        None => (DEFAULT_BETWEEN_RUN_CV.powi(2), DEFAULT_PRIOR_DOF, NoiseSource::Default),
    };

    let positive = ra.iter().chain(&rb).all(|r| r.median > 0.0);
    let side = |r: &[RunSample]| {
        let medians: Vec<f64> = r.iter().map(|x| x.median).collect();
        let centre = if positive && !r.is_empty() {
            mean(&medians.iter().map(|m| m.ln()).collect::<Vec<_>>()).map(f64::exp)
        } else {
            percentile_sorted(&sorted_finite(&medians), 0.5)
        };
        SampleStats { n: r.iter().map(|x| x.n_steps).sum(), median: centre, mean: mean(&medians) }
    };
    let (stats_a, stats_b) = (side(&ra), side(&rb));

    let mut verdict = Verdict {
        metric: metric.to_string(),
        direction,
        verdict: VerdictKind::Inconclusive,
        a: stats_a,
        b: stats_b,
        delta_rel: None,
        ci_low_rel: None,
        ci_high_rel: None,
        p_value: None,
        runs: Some(runs),
        between_run_cv: Some(BetweenRunCv { cv: prior_var.sqrt(), source: prior_source, dof: prior_dof }),
        repeats_needed: None,
        min_effect: Some(opts.min_effect),
        notes: Vec::new(),
    };
    if ra.is_empty() || rb.is_empty() {
        notes.push(format!("no usable run: a has {}, b has {}", ra.len(), rb.len()));
        verdict.notes = notes;
        return verdict;
    }
    if !positive {
        notes.push("a run median is ≤ 0, so log run medians (the run-level test's scale) are undefined".to_string());
        verdict.delta_rel = match (stats_a.median, stats_b.median) {
            (Some(x), Some(y)) if x != 0.0 => Some((y - x) / x).filter(|d| d.is_finite()),
            _ => None,
        };
        verdict.notes = notes;
        return verdict;
    }

    // Step 2: the between-run variance, the runs pooled with the prior.
    let ya: Vec<f64> = ra.iter().map(|r| r.median.ln()).collect();
    let yb: Vec<f64> = rb.iter().map(|r| r.median.ln()).collect();
    let (ma, mb) = (mean(&ya).unwrap_or(0.0), mean(&yb).unwrap_or(0.0));
    let ss: f64 = ya.iter().map(|y| (y - ma).powi(2)).sum::<f64>() + yb.iter().map(|y| (y - mb).powi(2)).sum::<f64>();
    let dof_runs = (ya.len() - 1 + yb.len() - 1) as f64;
    let dof = dof_runs + prior_dof;
    let var = if dof > 0.0 { (ss + prior_dof * prior_var) / dof } else { prior_var };
    let source = if dof_runs > 0.0 { NoiseSource::Runs } else { prior_source };
    verdict.between_run_cv = Some(BetweenRunCv { cv: var.sqrt(), source, dof });

    // Step 3: the t-test on the log centres.
    let within = |r: &[RunSample]| mean(&r.iter().map(within_var).collect::<Vec<_>>()).unwrap_or(0.0);
    let (wa, wb) = (within(&ra), within(&rb));
    let se = (var.max(wa) / ya.len() as f64 + var.max(wb) / yb.len() as f64).sqrt();
    let diff = mb - ma;
    let delta = diff.exp_m1();
    let conf = if opts.confidence.is_finite() { opts.confidence.clamp(0.0, 0.999_999) } else { 0.95 };
    let (p, ci) = if !(se.is_finite() && dof > 0.0) {
        (None, None)
    } else if se == 0.0 {
        (Some(if diff == 0.0 { 1.0 } else { 0.0 }), Some((delta, delta)))
    } else {
        let tq = t_quantile(0.5 + conf / 2.0, dof);
        (Some(t_two_sided_p(diff / se, dof)), Some(((diff - tq * se).exp_m1(), (diff + tq * se).exp_m1())))
    };
    verdict.delta_rel = delta.is_finite().then_some(delta);
    verdict.p_value = p;
    verdict.ci_low_rel = ci.map(|c| c.0);
    verdict.ci_high_rel = ci.map(|c| c.1);

    // Step 4: the decision.
    let same_runs = {
        let key = |r: &[RunSample]| {
            let mut v: Vec<(f64, f64, usize)> = r.iter().map(|x| (x.median, x.spread, x.n_steps)).collect();
            v.sort_unstable_by(|x, y| x.0.total_cmp(&y.0).then(x.1.total_cmp(&y.1)).then(x.2.cmp(&y.2)));
            v
        };
        key(&ra) == key(&rb)
    };
    verdict.verdict = if same_runs {
        notes.push("the two sides are the same runs".to_string());
        VerdictKind::Same
    } else if let Some(d) = verdict.delta_rel {
        decide_shift(d, ci, p, stats_a.median.unwrap_or(1.0), direction, opts, "runs", &mut notes)
    } else {
        notes.push("the relative change is not finite".to_string());
        VerdictKind::Inconclusive
    };

    // Step 5: how many runs would settle it.
    if verdict.verdict == VerdictKind::Inconclusive {
        let var_eff = var.max(wa).max(wb);
        let margin = if opts.min_effect.is_finite() && opts.min_effect > 0.0 { opts.min_effect.ln_1p() } else { 0.0 };
        let now = ra.len().max(rb.len());
        let towards_same = diff.abs() < margin / 2.0;
        let n = if towards_same {
            repeats_for_equivalence(margin - diff.abs(), var_eff, prior_dof, conf)
        } else {
            repeats_needed(diff.abs().max(margin), var_eff, prior_dof, opts.alpha)
        };
        verdict.repeats_needed = n.map(|n| n.max(now + 1));
        let what = if towards_same {
            format!("show the two within ±{:.1}%", opts.min_effect * 100.0)
        } else {
            "resolve a shift of this size".to_string()
        };
        match verdict.repeats_needed {
            Some(n) => notes.push(format!("about {n} runs per side would {what} (80 % power)")),
            None => notes.push(format!("more than {MAX_REPEATS} runs per side would be needed to {what}")),
        }
    }
    verdict.notes = notes;
    verdict
}

/// The runs with a finite median, spreads sanitised (non-finite or negative → 0).
fn usable_runs(name: &str, runs: &[RunSample], notes: &mut Vec<String>) -> Vec<RunSample> {
    let kept: Vec<RunSample> = runs
        .iter()
        .filter(|r| r.median.is_finite())
        .map(|r| RunSample { spread: if r.spread.is_finite() && r.spread > 0.0 { r.spread } else { 0.0 }, ..*r })
        .collect();
    if kept.len() < runs.len() {
        notes.push(format!("{name}: {} run(s) with a non-finite median ignored", runs.len() - kept.len()));
    }
    kept
}

/// The sampling variance of a run's log median from its steps: (π/2)·(spread/median)²/n; 0 when unknown.
fn within_var(r: &RunSample) -> f64 {
    if r.n_steps == 0 || r.median <= 0.0 {
        return 0.0;
    }
    let v = std::f64::consts::FRAC_PI_2 * (r.spread / r.median).powi(2) / r.n_steps as f64;
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// Smallest runs per side `n` at which a two-sided pooled t-test at level `alpha` detects a log shift `shift`
/// with [`TARGET_POWER`], the variance of one run's log median being `var`; `None` beyond [`MAX_REPEATS`].
pub fn repeats_needed(shift: f64, var: f64, prior_dof: f64, alpha: f64) -> Option<usize> {
    if !(shift.is_finite() && var.is_finite()) || var < 0.0 {
        return None;
    }
    if shift <= 0.0 {
        return None;
    }
    let alpha = if alpha.is_finite() { alpha.clamp(1e-12, 0.999) } else { 0.01 };
    let sd = var.sqrt();
    (1..=MAX_REPEATS).find(|&n| {
        let dof = 2.0 * (n as f64 - 1.0) + prior_dof.max(0.0);
        if dof <= 0.0 {
            return false;
        }
        let need = (t_quantile(1.0 - alpha / 2.0, dof) + t_quantile(TARGET_POWER, dof)) * sd * (2.0 / n as f64).sqrt();
        need <= shift
    })
}

/// Smallest runs per side `n` at which the interval at `confidence` of a log shift whose true size leaves
/// `room` to the margin fits inside the margin with [`TARGET_POWER`] (two one-sided tests), the variance of
/// one run's log median being `var`; `None` beyond [`MAX_REPEATS`] or when there is no room.
pub fn repeats_for_equivalence(room: f64, var: f64, prior_dof: f64, confidence: f64) -> Option<usize> {
    if !(room.is_finite() && var.is_finite()) || var < 0.0 || room <= 0.0 {
        return None;
    }
    let conf = if confidence.is_finite() { confidence.clamp(0.5, 0.999_999) } else { 0.95 };
    let sd = var.sqrt();
    (1..=MAX_REPEATS).find(|&n| {
        let dof = 2.0 * (n as f64 - 1.0) + prior_dof.max(0.0);
        if dof <= 0.0 {
            return false;
        }
        // Power 80 % split over the two one-sided tests when the true shift is near 0: the 0.9 quantile.
        let need = (t_quantile(0.5 + conf / 2.0, dof) + t_quantile(0.5 + TARGET_POWER / 2.0, dof))
            * sd
            * (2.0 / n as f64).sqrt();
        need <= room
    })
}

/// The `q`-quantile of Student's t with `dof` degrees of freedom.
fn t_quantile(q: f64, dof: f64) -> f64 {
    if q.is_nan() || dof.is_nan() || dof <= 0.0 {
        return f64::NAN;
    }
    if q < 0.5 {
        return -t_quantile(1.0 - q, dof);
    }
    if q == 0.5 {
        return 0.0;
    }
    t_quantile_two_sided(2.0 * (1.0 - q.min(1.0 - 1e-15)), dof)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::rng::Rng;
    use crate::stats::verdict::compare;
    use proptest::prelude::*;

    const STEPS: usize = 30;

    /// One run of a config whose median step time is `base`: a run-level factor exp(N(0, `run_cv`)) that every
    /// step shares, per-step lognormal noise `step_cv`, 30 steps (3 of warm-up, dropped).
    fn run_steps(rng: &mut Rng, base: f64, run_cv: f64, step_cv: f64) -> Vec<f64> {
        let factor = (run_cv * rng.standard_normal()).exp();
        (0..STEPS).map(|_| base * factor * (step_cv * rng.standard_normal()).exp()).collect()
    }

    fn run(rng: &mut Rng, base: f64, run_cv: f64, step_cv: f64) -> RunSample {
        RunSample::from_steps(&run_steps(rng, base, run_cv, step_cv), None).unwrap()
    }

    fn runs(rng: &mut Rng, k: usize, base: f64) -> Vec<RunSample> {
        (0..k).map(|_| run(rng, base, 0.06, 0.02)).collect()
    }

    fn cmp(a: &[RunSample], b: &[RunSample]) -> Verdict {
        compare_runs("step_time_s", Direction::LowerIsBetter, a, b, None, &CompareOptions::default())
    }

    #[test]
    fn t_distribution_matches_reference_values() {
        // Quantiles as scipy.stats.t.ppf gives them; the p-value at a quantile is its two-sided tail.
        for (q, dof, want) in [
            (0.975, 4.0, 2.776_445_105_197_793),
            (0.995, 4.0, 4.604_094_871_415_897),
            (0.995, 8.0, 3.355_387_331_333_37),
            (0.8, 10.0, 0.879_057_828_033_035_5),
            (0.975, 1.0, 12.706_204_736_174_698),
            (0.975, 1000.0, 1.962_339_08), // Cornish–Fisher to 1e-9
        ] {
            let got = t_quantile(q, dof);
            assert!((got - want).abs() < 1e-7 * want, "t_quantile({q}, {dof}) = {got}, want {want}");
            let p = t_two_sided_p(want, dof);
            assert!((p - 2.0 * (1.0 - q)).abs() < 1e-8, "t_two_sided_p({want}, {dof}) = {p}");
        }
        assert_eq!(t_two_sided_p(0.0, 5.0), 1.0);
        assert!((super::super::special::ln_gamma(5.0) - 24f64.ln()).abs() < 1e-13);
        assert!((super::super::special::ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-13);
    }

    #[test]
    fn run_sample_from_steps() {
        let steps: Vec<f64> = (0..20).map(f64::from).collect();
        let r = RunSample::from_steps(&steps, Some(0)).unwrap();
        assert_eq!((r.median, r.n_steps), (9.5, 20));
        assert!((r.spread - 9.5 / 1.349).abs() < 1e-12);
        assert_eq!(RunSample::from_steps(&[5.0, f64::NAN], Some(0)).unwrap().n_steps, 1);
        assert!(RunSample::from_steps(&[f64::NAN, f64::NAN, f64::NAN], None).is_none());
        assert!(RunSample::from_steps(&[], None).is_none());
        let n = NoiseEstimate::from_run_medians(&[1.0, 1.0_f64.exp()]).unwrap();
        assert_eq!(n.runs, 2);
        assert!((n.cv - 0.5_f64.sqrt()).abs() < 1e-12);
        assert!(NoiseEstimate::from_run_medians(&[1.0, -1.0, f64::NAN]).is_none());
    }

    #[test]
    fn json_shape_has_the_run_fields() {
        let mut rng = Rng::new(1);
        let v = cmp(&runs(&mut rng, 1, 0.5), &runs(&mut rng, 1, 0.55));
        let json = serde_json::to_value(&v).unwrap();
        let mut keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        let mut want = vec![
            "metric",
            "direction",
            "verdict",
            "a",
            "b",
            "delta_rel",
            "ci_low_rel",
            "ci_high_rel",
            "p_value",
            "runs",
            "between_run_cv",
            "repeats_needed",
            "min_effect",
        ];
        want.sort_unstable();
        assert_eq!(keys, want);
        assert_eq!(json["runs"], serde_json::json!({"a": 1, "b": 1}));
        assert_eq!(json["between_run_cv"]["source"], "default");
        assert_eq!(json["between_run_cv"]["cv"], 0.05);
        assert_eq!(json["between_run_cv"]["dof"], 4.0);
        let back: Verdict = serde_json::from_value(json).unwrap();
        assert_eq!(Verdict { notes: vec![], ..v }, back);
    }

    #[test]
    fn noise_sources() {
        let mut rng = Rng::new(2);
        let (a3, b3) = (runs(&mut rng, 3, 0.5), runs(&mut rng, 3, 0.5));
        let v = cmp(&a3, &b3);
        let cv = v.between_run_cv.unwrap();
        assert_eq!((cv.source, cv.dof), (NoiseSource::Runs, 8.0));
        let hist = NoiseEstimate { cv: 0.01, runs: 21 };
        let o = CompareOptions::default();
        let v = compare_runs("step_time_s", Direction::LowerIsBetter, &a3[..1], &b3[..1], Some(hist), &o);
        let cv = v.between_run_cv.unwrap();
        assert_eq!((cv.source, cv.dof, cv.cv), (NoiseSource::History, 20.0, 0.01));
        let bad = NoiseEstimate { cv: f64::NAN, runs: 21 };
        let v = compare_runs("step_time_s", Direction::LowerIsBetter, &a3[..1], &b3[..1], Some(bad), &o);
        assert_eq!(v.between_run_cv.unwrap().source, NoiseSource::Default);
        // The same runs on both sides are the same.
        let v = cmp(&a3, &a3);
        assert_eq!(v.verdict, VerdictKind::Same, "{v:?}");
        assert_eq!(v.delta_rel, Some(0.0));
    }

    /// The problem this module exists for: two runs of one config, 30 steps each, run factor sd 6 %, step noise
    /// 2 %. The step-level test calls most such A/A pairs a change; the run-level one at most 1 of 20 and at
    /// most 2 % of 200.
    #[test]
    fn aa_single_run_pairs_rarely_called_a_change() {
        let mut rng = Rng::new(0x16);
        let (mut old, mut new) = (0, 0);
        let mut new_first_20 = 0;
        for trial in 0..200 {
            let (sa, sb) = (run_steps(&mut rng, 0.5, 0.06, 0.02), run_steps(&mut rng, 0.5, 0.06, 0.02));
            let o = CompareOptions { seed: trial, ..CompareOptions::default() };
            let wa = drop_warmup(&sa, None);
            let wb = drop_warmup(&sb, None);
            if compare("step_time_s", Direction::LowerIsBetter, wa, wb, &o).is_change() {
                old += 1;
            }
            let ra = RunSample::from_steps(&sa, None).unwrap();
            let rb = RunSample::from_steps(&sb, None).unwrap();
            let v = compare_runs("step_time_s", Direction::LowerIsBetter, &[ra], &[rb], None, &o);
            if v.is_change() {
                new += 1;
                if trial < 20 {
                    new_first_20 += 1;
                }
            }
        }
        eprintln!("A/A single-run pairs (run sd 6 %, step sd 2 %): step-level {old}/200 changes, run-level {new}/200 ({new_first_20}/20 of the first 20)");
        assert!(new_first_20 <= 1, "{new_first_20}/20");
        assert!(new <= 4, "{new}/200 exceeds 2 %");
        assert!(old >= 100, "the step-level test was expected to call most A/A run pairs a change: {old}/200");
    }

    /// The same with 3 runs a side: the variance now comes from the runs.
    #[test]
    fn aa_three_runs_a_side() {
        let mut rng = Rng::new(0x17);
        let mut changes = 0;
        for _ in 0..200 {
            let v = cmp(&runs(&mut rng, 3, 0.5), &runs(&mut rng, 3, 0.5));
            assert_eq!(v.between_run_cv.unwrap().source, NoiseSource::Runs);
            changes += usize::from(v.is_change());
        }
        eprintln!("A/A 3 runs a side: {changes}/200 changes");
        assert!(changes <= 6, "{changes}/200");
    }

    /// A/A with one run a side on the example (the recorded JAX CPU run, split into pseudo-runs): 100 seeded
    /// pairs, each `inconclusive` — never `same` (one run a side cannot show two configs within ±2 %) and
    /// never a change — and each names the runs a side that would decide it.
    #[test]
    fn aa_one_run_a_side_is_inconclusive_with_the_runs_that_would_decide() {
        let recorded: Vec<f64> = include_str!("testdata/jax_cpu_step_times.txt")
            .lines()
            .map(|l| l.trim().parse().expect("one number per line"))
            .collect();
        let steps = drop_warmup(&recorded, None);
        let samples: Vec<RunSample> =
            steps.chunks_exact(32).map(|b| RunSample::from_steps(b, Some(0)).unwrap()).collect();
        let mut rng = Rng::new(0x0A0A);
        let mut idx: Vec<usize> = (0..samples.len()).collect();
        let mut inconclusive = 0;
        for trial in 0..100u64 {
            rng.shuffle(&mut idx);
            let o = CompareOptions { seed: trial, ..CompareOptions::default() };
            let v =
                compare_runs("step_time_s", Direction::LowerIsBetter, &[samples[idx[0]]], &[samples[idx[1]]], None, &o);
            assert_ne!(v.verdict, VerdictKind::Same, "one run a side, called the same: {v:?}");
            if v.verdict == VerdictKind::Inconclusive {
                inconclusive += 1;
                assert!(v.repeats_needed.is_some_and(|n| n >= 2), "{v:?}");
            }
        }
        eprintln!("A/A, 1 run a side, 100 seeded pairs of the example's recorded run: {inconclusive} inconclusive");
        assert!(inconclusive >= 95, "{inconclusive}/100");
    }

    /// A/A with 10 runs a side and 2 % run-to-run noise. At the default 2 % margin the 95 % interval of such a
    /// comparison is about ±2.6 % wide (the pooled CV, with the default floor's 4 dof, is ~2.8 %, the t
    /// quantile 2.07, √(2/10)), so no honest rule can call it `same` at ±2 % — it stays `inconclusive` and
    /// names the runs that would show it (~40 a side). Run that many and it is `same` ≥ 90 of 100 times; asked
    /// with a 5 % margin, 10 runs a side already are. Never a change.
    #[test]
    fn aa_ten_runs_a_side_and_the_runs_it_names() {
        let mut rng = Rng::new(0x1010);
        let run_of = |rng: &mut Rng| run(rng, 0.5, 0.02, 0.01);
        let trial = |rng: &mut Rng, n: usize, o: &CompareOptions| {
            let a: Vec<RunSample> = (0..n).map(|_| run_of(rng)).collect();
            let b: Vec<RunSample> = (0..n).map(|_| run_of(rng)).collect();
            compare_runs("step_time_s", Direction::LowerIsBetter, &a, &b, None, o)
        };
        let default = CompareOptions::default();
        let (mut same, mut changes, mut named) = (0, 0, Vec::new());
        for _ in 0..100 {
            let v = trial(&mut rng, 10, &default);
            same += usize::from(v.verdict == VerdictKind::Same);
            changes += usize::from(v.is_change());
            if let Some(n) = v.repeats_needed {
                named.push(n);
            }
        }
        named.sort_unstable();
        let n = named[named.len() / 2];
        eprintln!(
            "A/A, 10 runs a side, 2 % noise, ±2 % margin: {same} same, {changes} changes; median repeats_needed {n}"
        );
        assert!(changes <= 1, "{changes}/100 changes");
        assert!(named.len() >= 90, "an inconclusive verdict names its runs: {}/100", named.len());
        assert!((20..=80).contains(&n), "repeats_needed {n}");
        let same_at_n = (0..100).filter(|_| trial(&mut rng, n, &default).verdict == VerdictKind::Same).count();
        let wide = CompareOptions { min_effect: 0.05, ..default };
        let same_wide = (0..100).filter(|_| trial(&mut rng, 10, &wide).verdict == VerdictKind::Same).count();
        eprintln!(
            "  with {n} runs a side: {same_at_n}/100 same; 10 runs a side at a ±5 % margin: {same_wide}/100 same"
        );
        assert!(same_at_n >= 90, "{same_at_n}/100 same with the {n} runs a side it named");
        assert!(same_wide >= 90, "{same_wide}/100 same at ±5 %");
    }

    #[test]
    fn forty_percent_slower_with_three_runs_a_side_regresses() {
        let mut rng = Rng::new(0x40);
        for _ in 0..20 {
            let (a, b) = (runs(&mut rng, 3, 0.5), runs(&mut rng, 3, 0.7));
            let v = cmp(&a, &b);
            assert_eq!(v.verdict, VerdictKind::Regressed, "{v:?}");
            assert_eq!(v.runs, Some(RunCounts { a: 3, b: 3 }));
            assert!(v.repeats_needed.is_none());
            let back = cmp(&b, &a);
            assert_eq!(back.verdict, VerdictKind::Improved, "{back:?}");
        }
    }

    /// +10 % with one run a side cannot be told from run-to-run noise; `repeats_needed` says how many runs
    /// would, and with that many a side the shift is detected most of the time.
    #[test]
    fn ten_percent_with_one_run_a_side_is_inconclusive_with_repeats_needed() {
        let mut rng = Rng::new(0x10);
        // Run factors fixed at 1 and 1.1, so the observed shift is the true one.
        let a = RunSample::from_steps(&run_steps(&mut rng, 0.5, 0.0, 0.02), None).unwrap();
        let b = RunSample::from_steps(&run_steps(&mut rng, 0.55, 0.0, 0.02), None).unwrap();
        let v = cmp(&[a], &[b]);
        assert_eq!(v.verdict, VerdictKind::Inconclusive, "{v:?}");
        let n = v.repeats_needed.expect("repeats_needed");
        assert!((3..=30).contains(&n), "{n}");
        let mut detected = 0;
        for _ in 0..200 {
            let v = cmp(&runs(&mut rng, n, 0.5), &runs(&mut rng, n, 0.55));
            detected += usize::from(v.verdict == VerdictKind::Regressed);
        }
        eprintln!("+10 %, 1 run a side: repeats_needed = {n}; with {n} runs a side detected {detected}/200");
        assert!(detected >= 110, "{detected}/200 with {n} runs a side");
    }

    /// The real recorded step times (`testdata/`, one run of 320 steps), split after warm-up into 9
    /// contiguous pseudo-runs of 32 steps; A/A pairs of distinct pseudo-runs, 1 a side and 3 a side.
    /// Replaces the old test that resampled 50 steps at random from the whole run (whose rate is still
    /// measured and printed, with the step-level rate on the same pseudo-run pairs, for comparison).
    #[test]
    fn aa_false_positive_rate_on_real_recorded_runs() {
        let recorded: Vec<f64> = include_str!("testdata/jax_cpu_step_times.txt")
            .lines()
            .map(|l| l.trim().parse().expect("one number per line"))
            .collect();
        assert_eq!(recorded.len(), 320);
        let steps = drop_warmup(&recorded, None);
        let blocks: Vec<&[f64]> = steps.chunks_exact(32).collect();
        assert_eq!(blocks.len(), 9);
        let samples: Vec<RunSample> = blocks.iter().map(|b| RunSample::from_steps(b, Some(0)).unwrap()).collect();
        let mut rng = Rng::new(0x5EED);
        let mut idx: Vec<usize> = (0..blocks.len()).collect();
        let mut step_idx: Vec<usize> = (0..steps.len()).collect();
        let (mut old_steps, mut old_1, mut new_1, mut new_3) = (0, 0, 0, 0);
        for trial in 0..1_000u64 {
            rng.shuffle(&mut idx);
            let o = CompareOptions { seed: trial, ..CompareOptions::default() };
            // The old test: two groups of 50 steps drawn at random from the whole run (step-level compare).
            for i in 0..100 {
                let j = i + rng.below(step_idx.len() - i);
                step_idx.swap(i, j);
            }
            let a: Vec<f64> = step_idx[..50].iter().map(|&k| steps[k]).collect();
            let b: Vec<f64> = step_idx[50..100].iter().map(|&k| steps[k]).collect();
            old_steps += usize::from(compare("step_time_s", Direction::LowerIsBetter, &a, &b, &o).is_change());
            // Step-level compare of two contiguous pseudo-runs.
            let (i, j) = (idx[0], idx[1]);
            if compare("step_time_s", Direction::LowerIsBetter, blocks[i], blocks[j], &o).is_change() {
                old_1 += 1;
            }
            new_1 += usize::from(cmp(&[samples[i]], &[samples[j]]).is_change());
            let a: Vec<RunSample> = idx[..3].iter().map(|&k| samples[k]).collect();
            let b: Vec<RunSample> = idx[3..6].iter().map(|&k| samples[k]).collect();
            new_3 += usize::from(cmp(&a, &b).is_change());
        }
        eprintln!(
            "A/A on real recorded step times over 1000 trials: step-level on random steps {old_steps}, step-level on \
             pseudo-runs {old_1}, run-level {new_1} (1 a side), {new_3} (3 a side) changes"
        );
        assert!(new_1 <= 10, "run-level, 1 a side: {new_1}/1000 exceeds 1 %");
        assert!(new_3 <= 10, "run-level, 3 a side: {new_3}/1000 exceeds 1 %");
    }

    #[test]
    fn degenerate_inputs() {
        let o = CompareOptions::default();
        let r = RunSample { median: 1.0, spread: 0.0, n_steps: 10 };
        let v = compare_runs("x", Direction::LowerIsBetter, &[], &[r], None, &o);
        assert_eq!(v.verdict, VerdictKind::Inconclusive);
        assert_eq!(v.runs, Some(RunCounts { a: 0, b: 1 }));
        let nan = RunSample { median: f64::NAN, ..r };
        let v = compare_runs("x", Direction::LowerIsBetter, &[nan], &[r], None, &o);
        assert_eq!(v.verdict, VerdictKind::Inconclusive);
        assert!(v.notes.iter().any(|n| n.contains("non-finite")));
        let neg = RunSample { median: -1.0, ..r };
        let v = compare_runs("x", Direction::HigherIsBetter, &[neg], &[r], None, &o);
        assert_eq!(v.verdict, VerdictKind::Inconclusive);
        // Zero spread, zero noise history: a difference is certain, none is same.
        let z = NoiseEstimate { cv: 0.0, runs: 5 };
        let r2 = RunSample { median: 2.0, ..r };
        let v = compare_runs("x", Direction::LowerIsBetter, &[r], &[r2], Some(z), &o);
        assert_eq!(v.verdict, VerdictKind::Regressed, "{v:?}");
        let v = compare_runs("x", Direction::LowerIsBetter, &[r, r], &[r], Some(z), &o);
        assert_eq!(v.verdict, VerdictKind::Same, "{v:?}");
    }

    proptest! {
        /// One run a side and no history: whatever the two runs, never `same` unless they are the same run
        /// (the interval is at least ±19.6 % wide on the log scale), and an `inconclusive` always names its runs
        /// (or says more than the cap).
        #[test]
        fn one_run_a_side_is_never_called_the_same(
            ma in 1e-3..1e3f64, shift in -0.5..0.5f64, sa in 0.0..0.2f64, sb in 0.0..0.2f64, n in 1usize..500,
        ) {
            let a = RunSample { median: ma, spread: sa * ma, n_steps: n };
            let b = RunSample { median: ma * (1.0 + shift), spread: sb * ma, n_steps: n };
            prop_assume!(a != b);
            let v = compare_runs("m", Direction::LowerIsBetter, &[a], &[b], None, &CompareOptions::default());
            prop_assert_ne!(v.verdict, VerdictKind::Same, "{:?}", v);
            // ±2.78·√2·5 % on the log scale.
            prop_assert!(v.ci_high_rel.unwrap().ln_1p() - v.ci_low_rel.unwrap().ln_1p() > 0.35, "{:?}", v);
            if v.verdict == VerdictKind::Inconclusive {
                prop_assert!(v.repeats_needed.is_some() || v.notes.iter().any(|n| n.contains("more than")), "{:?}", v);
            }
        }
    }

    fn any_f64() -> impl Strategy<Value = f64> {
        prop_oneof![
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(0.0),
            Just(f64::MAX),
            Just(f64::MIN_POSITIVE),
            -1e3..1e3f64,
            any::<f64>(),
        ]
    }

    fn any_run() -> impl Strategy<Value = RunSample> {
        (any_f64(), any_f64(), 0usize..1_000).prop_map(|(median, spread, n_steps)| RunSample {
            median,
            spread,
            n_steps,
        })
    }

    proptest! {
        #[test]
        fn never_panics(
            a in proptest::collection::vec(any_run(), 0..5),
            b in proptest::collection::vec(any_run(), 0..5),
            noise in proptest::option::of((any_f64(), 0usize..50)),
            steps in proptest::collection::vec(any_f64(), 0..40),
            alpha in prop_oneof![Just(0.01), any_f64()],
            min_effect in prop_oneof![Just(0.02), any_f64()],
            confidence in prop_oneof![Just(0.95), any_f64()],
        ) {
            let noise = noise.map(|(cv, runs)| NoiseEstimate { cv, runs });
            let o = CompareOptions { alpha, min_effect, confidence, ..CompareOptions::default() };
            let v = compare_runs("m", Direction::LowerIsBetter, &a, &b, noise, &o);
            prop_assert!(serde_json::to_string(&v).is_ok());
            if let Some(p) = v.p_value { prop_assert!((0.0..=1.0).contains(&p), "{p}"); }
            prop_assert_eq!(v.repeats_needed.is_some(), v.repeats_needed.is_some() && v.verdict == VerdictKind::Inconclusive);
            // `same` only with the interval inside the margin (or the same runs on both sides).
            if v.verdict == VerdictKind::Same && v.notes.iter().all(|n| !n.contains("same runs")) {
                let (lo, hi) = (v.ci_low_rel.unwrap(), v.ci_high_rel.unwrap());
                prop_assert!(lo >= -o.min_effect && hi <= o.min_effect, "{v:?}");
            }
            let _ = RunSample::from_steps(&steps, None);
            let _ = NoiseEstimate::from_run_medians(&steps);
        }
    }
}
