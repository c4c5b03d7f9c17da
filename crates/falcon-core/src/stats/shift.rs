//! Shifts in a short history of runs (one value per run, e.g. each nightly run's median step time), with a
//! power that is known at small n: a regression is seen after 2–3 runs instead of the ≥ 6 a side that the
//! rank-based E-divisive detector of [`super::change_point`] needs.
//!
//! # Method
//!
//! Values are taken on the log scale when they are all positive (a relative shift is then a shift of the mean
//! and a constant run-to-run CV a constant variance); otherwise on their own scale. Non-finite values are
//! skipped (reported indices are positions in the input).
//!
//! 1. **Binary segmentation with a t-test per split.** In a segment of m values, every split τ leaving at least
//!    `min_segment` values a side is scored by the pooled two-sample t statistic of the values before against
//!    the values after (df = m − 2). The split with the largest |t| (which is also the Gaussian
//!    maximum-likelihood split of one mean shift) is kept when its two-sided p-value times the number of splits
//!    of the whole series, n + 1 − 2·`min_segment` (Bonferroni), is at most `alpha` and the relative shift is at
//!    least `min_magnitude`; both halves are then searched again.
//! 2. **Re-judge** (as the merge step of `change_point`): each point is tested again on the whole segments
//!    between its neighbours, with the Bonferroni factor of that span; the weakest failing point is removed
//!    and its neighbours re-judged, until all pass.
//!
//! **Assumptions** (what the power and the false-alarm rate rest on): within a segment, the (log) run values are
//! independent draws from one normal distribution whose variance is the same before and after a shift (a shift
//! changes the level, not the run-to-run CV). Under no change at all, the first test of the series is a
//! Bonferroni-corrected test at level `alpha`, so at most `alpha` of stable series get a false point (the
//! correction is conservative: the splits are positively correlated; measured in the tests and in
//! docs/PERFORMANCE.md). After a real shift, each half is tested again with the same factor (that of the whole
//! series), so a spurious second point inside a real segment is rarer still. The power at small n comes from
//! the normal model (a rank or permutation test of 4 runs against 3 cannot reach p < 1/35); a run that is an
//! outlier inflates the pooled variance and so costs power, never a false point on its own (`min_segment` 2).
//!
//! **Each shift** reports its index (first run of the new level), the relative shift exp(Δ) − 1 of the
//! geometric means (Δ = difference of log means; on the linear scale Δ / |mean before|) and its `confidence`
//! interval from the t distribution with the pooled variance (on the linear scale the interval ignores the
//! uncertainty of the mean before).
//!
//! **What cannot be seen yet** ([`ShiftReport::detectable`]): for r = 1 … `max_runs_after` new runs after the
//! last segment, the smallest upward shift the test would find with probability `power`, from the noise
//! estimated on all segments (pooled within-segment variance) and the noncentral-t approximation
//! δ = t₁₋α/(2k), df + t_power, df (k splits, df = m − 2 for the segment grown by r runs):
//! shift = exp(δ·σ·√(1/n_last + 1/r)) − 1. [`ShiftReport::min_runs_for`] inverts it for a given effect, and
//! `note` says it in words.

use super::special::{t_quantile_two_sided, t_two_sided_p};
use serde::{Deserialize, Serialize};

/// Parameters of [`shifts`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct ShiftOptions {
    /// Family-wise level of each segment's test (Bonferroni over its splits; default 0.05).
    pub alpha: f64,
    /// Fewest runs a side of a shift (default 2: one slow run is an outlier, two are a level).
    pub min_segment: usize,
    /// Smallest relative shift reported (default 0.02).
    pub min_magnitude: f64,
    /// Level of the reported intervals (default 0.95).
    pub confidence: f64,
    /// Probability of detection used for [`ShiftReport::detectable`] (default 0.8).
    pub power: f64,
    /// Largest number of future runs [`ShiftReport::detectable`] looks at (default 10).
    pub max_runs_after: usize,
    /// Effects the note speaks about (default +5 %, +10 %, +30 %).
    pub note_effects: Vec<f64>,
}

impl Default for ShiftOptions {
    fn default() -> Self {
        ShiftOptions {
            alpha: 0.05,
            min_segment: 2,
            min_magnitude: 0.02,
            confidence: 0.95,
            power: 0.8,
            max_runs_after: 10,
            note_effects: vec![0.05, 0.10, 0.30],
        }
    }
}

/// Scale the test ran on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    /// Natural log of the values (all positive).
    Log,
    /// The values themselves.
    Linear,
}

/// One detected shift.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Shift {
    /// Index (in the input) of the first run of the new level.
    pub index: usize,
    /// Runs in the segment before (from the previous shift or the start).
    pub runs_before: usize,
    /// Runs in the segment after (up to the next shift or the end).
    pub runs_after: usize,
    /// Level before: geometric mean on the log scale, mean on the linear one.
    pub level_before: f64,
    /// Level after.
    pub level_after: f64,
    /// Relative shift level_after / level_before − 1 (linear scale: Δmean / |mean before|).
    pub shift_rel: f64,
    /// Lower end of the `confidence` interval of `shift_rel`.
    pub ci_low: f64,
    /// Upper end.
    pub ci_high: f64,
    /// Pooled two-sample t statistic.
    pub t: f64,
    /// Two-sided p-value times the number of splits of the span (Bonferroni), capped at 1; ≤ `alpha`.
    pub p_value: f64,
}

/// The smallest shift that `runs_after` new runs would reveal.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Detectable {
    /// Runs after the (hypothetical) shift.
    pub runs_after: usize,
    /// Smallest upward relative shift found with probability `power`; `None` when none can be (too few runs
    /// a side, or no noise estimate).
    pub shift_rel: Option<f64>,
}

/// What [`shifts`] found, and what it could not see yet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShiftReport {
    /// Finite values used.
    pub runs: usize,
    /// Scale of the test.
    pub scale: Scale,
    /// Run-to-run noise: pooled within-segment standard deviation (on the log scale ≈ the CV); `None` with too
    /// few runs.
    pub noise: Option<f64>,
    /// Shifts in index order.
    pub shifts: Vec<Shift>,
    /// For 1 … `max_runs_after` runs after the last segment: the smallest shift they would reveal.
    pub detectable: Vec<Detectable>,
    /// Human reading of `detectable` (and of why nothing can be tested, when so).
    pub note: String,
}

impl ShiftReport {
    /// Fewest runs after a shift of relative size `effect` (either sign) for it to be found with the
    /// configured power; `None` beyond `max_runs_after` or when nothing can be tested.
    pub fn min_runs_for(&self, effect: f64) -> Option<usize> {
        let e = effect.abs();
        self.detectable.iter().find(|d| d.shift_rel.is_some_and(|s| s <= e)).map(|d| d.runs_after)
    }
}

/// Shifts in `runs` (one value per run, oldest first). Never panics. See the module documentation.
pub fn shifts(runs: &[f64], opts: &ShiftOptions) -> ShiftReport {
    let (vals, positions): (Vec<f64>, Vec<usize>) =
        runs.iter().enumerate().filter(|(_, v)| v.is_finite()).map(|(i, &v)| (v, i)).unzip();
    let n = vals.len();
    let scale = if n > 0 && vals.iter().all(|&v| v > 0.0) { Scale::Log } else { Scale::Linear };
    let y: Vec<f64> = match scale {
        Scale::Log => vals.iter().map(|v| v.ln()).collect(),
        Scale::Linear => vals.clone(),
    };
    let ms = opts.min_segment.max(1);
    let seg = Segments::new(&y);
    // Bonferroni factor of every test: the number of splits of the whole series.
    let splits = (n + 1).saturating_sub(2 * ms).max(1) as f64;
    let alpha = if opts.alpha.is_nan() { 0.0 } else { opts.alpha };

    // 1. Binary segmentation.
    let mut cps = Vec::new();
    let mut stack = vec![(0usize, n)];
    while let Some((s, e)) = stack.pop() {
        let Some(best) = seg.best_split(s, e, ms) else { continue };
        let st = seg.judge(best, s, e, splits, scale);
        if st.p_adj <= alpha && st.shift_rel.abs() >= opts.min_magnitude {
            cps.push(best);
            stack.push((s, best));
            stack.push((best, e));
        }
    }
    cps.sort_unstable();

    // 2. Re-judge on whole segments between neighbours.
    let bounds = |cps: &[usize], i: usize| (if i == 0 { 0 } else { cps[i - 1] }, cps.get(i + 1).copied().unwrap_or(n));
    loop {
        let stats: Vec<Judged> = (0..cps.len())
            .map(|i| {
                let (p, q) = bounds(&cps, i);
                seg.judge(cps[i], p, q, splits, scale)
            })
            .collect();
        let weakest = stats
            .iter()
            .enumerate()
            .filter(|(_, s)| !(s.p_adj <= alpha && s.shift_rel.abs() >= opts.min_magnitude))
            .max_by(|a, b| a.1.p_adj.total_cmp(&b.1.p_adj))
            .map(|(i, _)| i);
        if let Some(i) = weakest {
            cps.remove(i);
            continue;
        }
        let level = |v: f64| if scale == Scale::Log { v.exp() } else { v };
        let conf = if opts.confidence > 0.0 && opts.confidence < 1.0 { opts.confidence } else { 0.95 };
        let found: Vec<Shift> = cps
            .iter()
            .zip(&stats)
            .map(|(&i, s)| {
                let h = t_quantile_two_sided(1.0 - conf, s.df) * s.se;
                let rel = |d: f64| match scale {
                    Scale::Log => d.exp_m1(),
                    Scale::Linear if s.mean_before != 0.0 => d / s.mean_before.abs(),
                    Scale::Linear => f64::NAN,
                };
                Shift {
                    index: positions[i],
                    runs_before: s.n_before,
                    runs_after: s.n_after,
                    level_before: level(s.mean_before),
                    level_after: level(s.mean_after),
                    shift_rel: s.shift_rel,
                    ci_low: rel(s.diff - h),
                    ci_high: rel(s.diff + h),
                    t: s.t,
                    p_value: s.p_adj,
                }
            })
            .collect();
        return finish(&seg, &cps, found, n, ms, scale, alpha, opts);
    }
}

fn finish(
    seg: &Segments,
    cps: &[usize],
    found: Vec<Shift>,
    n: usize,
    ms: usize,
    scale: Scale,
    alpha: f64,
    opts: &ShiftOptions,
) -> ShiftReport {
    // Pooled within-segment variance.
    let mut edges = vec![0];
    edges.extend_from_slice(cps);
    edges.push(n);
    let (mut w, mut df) = (0.0, 0usize);
    for pair in edges.windows(2) {
        let (s, e) = (pair[0], pair[1]);
        if e > s + 1 {
            w += seg.within(s, e);
            df += e - s - 1;
        }
    }
    let noise = (df > 0).then(|| (w / df as f64).sqrt()).filter(|v| v.is_finite());
    let last = n - edges[edges.len() - 2];
    let mean_last = if last > 0 { seg.mean(n - last, n) } else { 0.0 };
    let detectable: Vec<Detectable> = (1..=opts.max_runs_after)
        .map(|r| {
            let shift_rel = noise.and_then(|sigma| {
                if last < ms || r < ms || alpha.is_nan() || alpha <= 0.0 {
                    return None;
                }
                let m = last + r;
                let k = (m + 1 - 2 * ms) as f64;
                let dfm = (m - 2) as f64;
                if dfm < 1.0 {
                    return None;
                }
                let power = opts.power.clamp(0.01, 0.99);
                let delta = t_quantile_two_sided(alpha / k, dfm) + t_quantile_two_sided(2.0 * (1.0 - power), dfm);
                let d = delta * sigma * (1.0 / last as f64 + 1.0 / r as f64).sqrt();
                let rel = match scale {
                    Scale::Log => d.exp_m1(),
                    Scale::Linear if mean_last != 0.0 => d / mean_last.abs(),
                    Scale::Linear => return None,
                };
                Some(rel.max(opts.min_magnitude))
            });
            Detectable { runs_after: r, shift_rel }
        })
        .collect();
    let mut report = ShiftReport { runs: n, scale, noise, shifts: found, detectable, note: String::new() };
    report.note = if n < 2 * ms {
        format!("{n} runs: too few to test for a shift (a shift needs {ms} runs on each side, {} in all)", 2 * ms)
    } else if noise.is_none() || last < ms {
        format!("{n} runs: too few runs since the last shift to estimate the run-to-run noise")
    } else {
        let sigma = noise.unwrap_or(0.0);
        let cv = if scale == Scale::Log { sigma.exp_m1() } else { sigma / mean_last.abs() };
        let parts: Vec<String> = opts
            .note_effects
            .iter()
            .map(|&e| match report.min_runs_for(e) {
                Some(r) => format!("+{:.0} % after {r} run{}", e * 100.0, if r == 1 { "" } else { "s" }),
                None => format!("+{:.0} % not within {} runs", e * 100.0, opts.max_runs_after),
            })
            .collect();
        format!(
            "{last} runs since the last shift, run-to-run noise {:.1} %: a new shift would be seen ({:.0} % of the \
             time) at {}",
            cv * 100.0,
            opts.power.clamp(0.01, 0.99) * 100.0,
            parts.join(", ")
        )
    };
    report
}

/// A split judged on x[prev, cp) against x[cp, next).
#[derive(Debug, Clone, Copy)]
struct Judged {
    n_before: usize,
    n_after: usize,
    mean_before: f64,
    mean_after: f64,
    diff: f64,
    se: f64,
    df: f64,
    t: f64,
    p_adj: f64,
    shift_rel: f64,
}

/// Prefix sums of the centred values, for O(1) means and within-sums of squares of any span.
struct Segments {
    centre: f64,
    s1: Vec<f64>,
    s2: Vec<f64>,
}

impl Segments {
    fn new(y: &[f64]) -> Self {
        let centre = if y.is_empty() { 0.0 } else { y.iter().sum::<f64>() / y.len() as f64 };
        let centre = if centre.is_finite() { centre } else { 0.0 };
        let (mut s1, mut s2) = (vec![0.0], vec![0.0]);
        for &v in y {
            let d = v - centre;
            s1.push(s1.last().copied().unwrap_or(0.0) + d);
            s2.push(s2.last().copied().unwrap_or(0.0) + d * d);
        }
        Segments { centre, s1, s2 }
    }

    fn mean(&self, s: usize, e: usize) -> f64 {
        self.centre + (self.s1[e] - self.s1[s]) / (e - s) as f64
    }

    /// Within sum of squares of y[s, e).
    fn within(&self, s: usize, e: usize) -> f64 {
        let k = (e - s) as f64;
        let a = self.s1[e] - self.s1[s];
        (self.s2[e] - self.s2[s] - a * a / k).max(0.0)
    }

    /// t² of splitting [s, e) at τ, without the df factor: between / within.
    fn score(&self, s: usize, tau: usize, e: usize) -> f64 {
        let (n1, n2) = ((tau - s) as f64, (e - tau) as f64);
        let d = self.mean(tau, e) - self.mean(s, tau);
        let w = self.within(s, tau) + self.within(tau, e);
        let b = d * d * n1 * n2 / (n1 + n2);
        if w > 0.0 {
            b / w
        } else if b > 0.0 {
            f64::INFINITY
        } else {
            0.0
        }
    }

    fn best_split(&self, s: usize, e: usize, ms: usize) -> Option<usize> {
        if e < s + 2 * ms || e - s < 3 {
            return None;
        }
        (s + ms..=e - ms).max_by(|&a, &b| self.score(s, a, e).total_cmp(&self.score(s, b, e)).then(b.cmp(&a)))
    }

    fn judge(&self, cp: usize, prev: usize, next: usize, splits: f64, scale: Scale) -> Judged {
        let (n1, n2) = (cp - prev, next - cp);
        let (mb, ma) = (self.mean(prev, cp), self.mean(cp, next));
        let diff = ma - mb;
        let df = (n1 + n2) as f64 - 2.0;
        let w = self.within(prev, cp) + self.within(cp, next);
        let se = if df > 0.0 { (w / df * (1.0 / n1 as f64 + 1.0 / n2 as f64)).sqrt() } else { f64::INFINITY };
        let t = if se > 0.0 {
            diff / se
        } else if diff != 0.0 {
            f64::INFINITY * diff.signum()
        } else {
            0.0
        };
        let p = if df >= 1.0 { t_two_sided_p(t, df) } else { 1.0 };
        let shift_rel = match scale {
            Scale::Log => diff.exp_m1(),
            Scale::Linear if mb != 0.0 => diff / mb.abs(),
            Scale::Linear if diff != 0.0 => f64::INFINITY,
            Scale::Linear => 0.0,
        };
        Judged {
            n_before: n1,
            n_after: n2,
            mean_before: mb,
            mean_after: ma,
            diff,
            se,
            df,
            t,
            p_adj: (p * splits).min(1.0),
            shift_rel,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::rng::Rng;

    /// A nightly history: `before` runs at 100, then `after` runs at 100·(1 + shift), each run's value
    /// log-normal with σ = `cv` (run-level CV ≈ cv).
    fn nightly(rng: &mut Rng, before: usize, after: usize, shift: f64, cv: f64) -> Vec<f64> {
        (0..before + after)
            .map(|i| {
                let level = if i < before { 100.0 } else { 100.0 * (1.0 + shift) };
                level * (cv * rng.standard_normal()).exp()
            })
            .collect()
    }

    #[test]
    fn student_t_reference_values() {
        // Cauchy (df = 1): P(|T| ≥ 1) = 1/2. Tabulated 5 % two-sided critical values.
        assert!((t_two_sided_p(1.0, 1.0) - 0.5).abs() < 1e-12);
        for (df, t) in [(2.0, 4.302_652_7), (5.0, 2.570_581_8), (10.0, 2.228_138_9), (30.0, 2.042_272_5)] {
            assert!((t_two_sided_p(t, df) - 0.05).abs() < 1e-7, "df {df}");
            assert!((t_quantile_two_sided(0.05, df) - t).abs() < 1e-5, "df {df}");
        }
        // Large df: the normal tail.
        assert!((t_two_sided_p(1.959_964, 1e6) - 0.05).abs() < 1e-5);
        assert_eq!(t_two_sided_p(f64::INFINITY, 3.0), 0.0);
        assert_eq!(t_two_sided_p(0.0, 3.0), 1.0);
    }

    /// The must-show: 4 nightly runs, then 3 runs 30 % slower (run CV 6 %): a shift at the fifth run.
    #[test]
    fn thirty_percent_after_three_runs_is_found_at_index_4() {
        let x = nightly(&mut Rng::new(0), 4, 3, 0.30, 0.06);
        let r = shifts(&x, &ShiftOptions::default());
        assert_eq!(r.shifts.len(), 1, "{r:?}");
        let s = r.shifts[0];
        assert_eq!(s.index, 4, "{r:?}");
        assert!(s.ci_low > 0.1 && s.ci_high < 0.6 && s.ci_low < s.shift_rel && s.shift_rel < s.ci_high, "{s:?}");
        assert!(s.p_value <= 0.05);
        // Not a lucky draw: the power is about 88 % (measured over 1,000 draws; 200 here).
        let found = (0..200)
            .filter(|&seed| {
                let x = nightly(&mut Rng::new(1_000 + seed), 4, 3, 0.30, 0.06);
                shifts(&x, &ShiftOptions::default()).shifts.iter().any(|s| s.index == 4)
            })
            .count();
        assert!(found >= 160, "only {found}/200");
    }

    /// +60 % after 4 good runs is found with 2 runs after it (E-divisive needs 6 a side).
    #[test]
    fn sixty_percent_is_found_after_two_runs() {
        let x = nightly(&mut Rng::new(60), 4, 2, 0.60, 0.06);
        assert!(crate::stats::change_points(&x, &Default::default()).is_empty());
        let r = shifts(&x, &ShiftOptions::default());
        assert_eq!(r.shifts.iter().map(|s| s.index).collect::<Vec<_>>(), [4], "{r:?}");
        assert!((r.shifts[0].shift_rel - 0.6).abs() < 0.15);
        let found = (0..200)
            .filter(|&seed| {
                let x = nightly(&mut Rng::new(2_000 + seed), 4, 2, 0.60, 0.06);
                shifts(&x, &ShiftOptions::default()).shifts.iter().any(|s| s.index == 4)
            })
            .count();
        assert!(found >= 190, "only {found}/200");
    }

    /// Stable series (no shift): at most a few % get a false point, at every length (the Bonferroni bound is
    /// `alpha` = 5 %; 500 series a length leave ±2 % of sampling noise around the true rate).
    #[test]
    fn stable_series_rarely_get_a_false_shift() {
        let mut total = 0;
        for len in [5usize, 7, 10, 20, 60] {
            let false_any = (0..500)
                .filter(|&seed| {
                    let x = nightly(&mut Rng::stream(99, (len as u64) << 20 | seed), len, 0, 0.0, 0.06);
                    !shifts(&x, &ShiftOptions::default()).shifts.is_empty()
                })
                .count();
            assert!(false_any <= 40, "len {len}: {false_any}/500 stable series with a false shift");
            total += false_any;
        }
        assert!(total <= 125, "{total}/2500 stable series with a false shift");
    }

    #[test]
    fn detectable_and_min_runs_for() {
        let x = nightly(&mut Rng::new(5), 4, 0, 0.0, 0.06);
        let r = shifts(&x, &ShiftOptions::default());
        assert!(r.shifts.is_empty());
        let noise = r.noise.unwrap();
        assert!(noise > 0.0 && noise < 0.2);
        assert_eq!(r.detectable[0].shift_rel, None, "one run after is never enough");
        // Larger effects need fewer runs; the note speaks about them.
        let small = r.min_runs_for(0.05);
        let big = r.min_runs_for(0.6).unwrap();
        assert!(big <= 3, "{r:?}");
        assert!(small.is_none_or(|s| s >= big));
        let d: Vec<f64> = r.detectable.iter().filter_map(|d| d.shift_rel).collect();
        assert!(d.windows(2).all(|w| w[1] <= w[0] + 1e-12), "{d:?}");
        assert!(r.note.contains("run-to-run noise"), "{}", r.note);
        // Too few runs: said so.
        let r = shifts(&[100.0, 101.0, 99.0], &ShiftOptions::default());
        assert!(r.shifts.is_empty() && r.note.contains("too few"), "{}", r.note);
        assert!(r.min_runs_for(0.3).is_none() || r.noise.is_some());
    }

    #[test]
    fn longer_history_and_degenerate_input() {
        // 30 runs, a −20 % throughput drop at 20 and a +15 % recovery at 25.
        let mut rng = Rng::new(3);
        let x: Vec<f64> = (0..30)
            .map(|i| {
                let lvl = if i < 20 {
                    1000.0
                } else if i < 25 {
                    800.0
                } else {
                    920.0
                };
                lvl * (0.03 * rng.standard_normal()).exp()
            })
            .collect();
        let r = shifts(&x, &ShiftOptions::default());
        assert_eq!(r.shifts.iter().map(|s| s.index).collect::<Vec<_>>(), [20, 25], "{r:?}");
        assert!((r.shifts[0].shift_rel + 0.2).abs() < 0.05);
        // Degenerate inputs never panic.
        let o = ShiftOptions::default();
        for x in [vec![], vec![1.0], vec![f64::NAN; 10], vec![3.0; 10], vec![0.0, -1.0, 2.0, 5.0, 5.0, 5.0]] {
            let _ = shifts(&x, &o);
        }
        let step = [1.0, 1.0, 1.0, 2.0, 2.0, 2.0];
        assert_eq!(shifts(&step, &o).shifts.iter().map(|s| s.index).collect::<Vec<_>>(), [3]);
        let nan = f64::NAN;
        let odd = ShiftOptions { alpha: nan, min_segment: 0, confidence: nan, power: nan, ..o };
        let _ = shifts(&x, &odd);
        // Non-finite values are skipped, indices kept.
        let mut y = nightly(&mut Rng::new(0), 4, 3, 0.3, 0.06);
        y.insert(2, f64::NAN);
        assert_eq!(shifts(&y, &ShiftOptions::default()).shifts.first().map(|s| s.index), Some(5));
    }
}
