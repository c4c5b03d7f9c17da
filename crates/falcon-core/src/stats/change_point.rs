//! Change points in a metric history: E-divisive means on sliding windows, then split/merge on whole
//! segments with effect-size floors.
//!
//! # Algorithm
//!
//! The series is x₀ … xₙ₋₁ (non-finite values are skipped; reported indices are positions in the input).
//! A change point at index i means the segment before ends at i − 1 and the next one starts at i.
//!
//! 1. **Candidates (windows).** Windows of `window_len` (w) values start every w/2 values (the last one is
//!    aligned with the end), so every index lies in the middle half of some window. In each window,
//!    E-divisive (Matteson & James 2014, α = 1) finds the split τ maximising the energy divergence Q(τ)
//!    (see [`super::energy`]: all τ at once in O(w log w)), and a permutation test decides whether it is
//!    real: shuffle the window `permutations` times, recompute max Q each time, and
//!    p = (#{shuffles with max Q ≥ observed} + 1)/(permutations + 1). A split with p ≤ `window_pvalue` is a
//!    candidate, and both halves are searched again (binary segmentation inside the window). The test stops
//!    as soon as p can no longer reach the level, so a window without a change costs a handful of shuffles.
//!    This is the permissive first pass (Otava's "weak change points", at 10 × the final level).
//! 2. **Cluster.** Candidates closer than `min_segment` to each other (one change seen from two
//!    overlapping windows) become one: the one with the largest Q.
//! 3. **Merge** (Hunter/Otava's merge step, with the effect-size filters of production dashboards). Each
//!    change point is judged on the whole segments between its neighbours: the Mann–Whitney U p-value of
//!    the segment before against the segment after, times the number of windows searched (a Bonferroni
//!    correction: the windows are that many chances for noise to look like a change, so `max_pvalue`
//!    bounds the false alarms of a whole series, whatever its length), and the relative magnitude
//!    |mean_after − mean_before| / |mean_before|. Repeatedly remove the weakest point — first one with a
//!    segment shorter than `min_segment`, else the one with the largest p above `max_pvalue`, else the one
//!    with the smallest magnitude below `min_magnitude` — and re-judge its two neighbours, whose segments
//!    just grew. The rank test is itself a permutation test (of the rank sum) whose distribution has a
//!    closed form, so p-values far below 1/(permutations + 1) are available without thousands of shuffles.
//! 4. **Refine.** Each point moves to the split maximising Q on the whole span between its neighbours (a
//!    window locates a change to within a few points; the whole span locates it as well as the data allow).
//! 5. **Complete.** Each segment between change points gets one more E-divisive split (its Q maximum),
//!    kept if it passes the tests of step 3: this catches a change no window saw clearly.
//!
//! Steps 3–5 repeat until nothing moves or is added (at most 16 rounds).
//!
//! Cost: the windows take O(n/w · P·w log w), where P is the number of shuffles actually run (a few for a
//! quiet window, `permutations` for one with a change); each round of steps 3–5 takes O(n log n) plus
//! O(n log n) per removed candidate. 10,000 points take about 10 ms (see docs/PERFORMANCE.md).

use serde::{Deserialize, Serialize};

use super::energy::{centred, EnergyScan};
use super::mann_whitney::mann_whitney_u;
use super::rng::Rng;

/// Parameters of [`change_points`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct ChangePointOptions {
    /// Window length of the candidate search (default 50, Otava's default).
    pub window_len: usize,
    /// Significance a change point must reach on its whole segments: its Mann–Whitney U p-value times the
    /// number of windows searched must not exceed this (default 0.001, Otava's default level).
    pub max_pvalue: f64,
    /// Level of the windowed permutation test that admits candidates (default 0.01, 10 × `max_pvalue` like
    /// Otava's first pass). With `permutations` P the smallest attainable p is 1/(P + 1), so a level below
    /// that admits nothing from the windows (step 5 still runs).
    pub window_pvalue: f64,
    /// Shuffles per windowed permutation test (default 199, as R's `ecp` and Chromium's dashboard).
    pub permutations: usize,
    /// Smallest relative change of the mean that counts, |Δmean| / |mean_before| (default 0.02).
    pub min_magnitude: f64,
    /// Smallest number of points in a segment (default 6, as Chromium's dashboard).
    pub min_segment: usize,
    /// Seed of the permutations.
    pub seed: u64,
}

impl Default for ChangePointOptions {
    fn default() -> Self {
        ChangePointOptions {
            window_len: 50,
            max_pvalue: 0.001,
            window_pvalue: 0.01,
            permutations: 199,
            min_magnitude: 0.02,
            min_segment: 6,
            seed: 0x00C4_A9E5,
        }
    }
}

/// One detected change.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChangePoint {
    /// Index (in the input series) of the first point of the new segment.
    pub index: usize,
    /// Mean of the segment that ends here (from the previous change point or the start).
    pub mean_before: f64,
    /// Mean of the segment that starts here (up to the next change point or the end).
    pub mean_after: f64,
    /// (mean_after − mean_before) / mean_before; `null` when mean_before is 0.
    pub delta_rel: Option<f64>,
    /// Two-sided Mann–Whitney U p-value of the segment before against the segment after, multiplied by the
    /// number of windows searched (Bonferroni) and capped at 1; at most `max_pvalue` for every reported
    /// point.
    pub p_value: f64,
}

/// Change points of `series`, in index order. Never panics; series shorter than two segments have none.
/// See the module documentation for the algorithm.
pub fn change_points(series: &[f64], opts: &ChangePointOptions) -> Vec<ChangePoint> {
    let (x, positions): (Vec<f64>, Vec<usize>) =
        series.iter().enumerate().filter(|(_, v)| v.is_finite()).map(|(i, &v)| (v, i)).unzip();
    let n = x.len();
    let min_seg = opts.min_segment.max(2);
    if n < min_seg.saturating_mul(2) {
        return Vec::new();
    }
    let w = opts.window_len.max(2 * min_seg).min(n);
    let starts = window_starts(n, w);
    let mut ctx = Ctx { opts, min_seg, w, tests: starts.len() as f64, scan: EnergyScan::new(), z: Vec::new() };

    let mut cps = cluster(ctx.window_candidates(&x, &starts), min_seg);
    let mut stats = ctx.merge(&x, &mut cps);
    for _round in 0..16 {
        let changed = ctx.refine(&x, &mut cps) || ctx.complete(&x, &mut cps);
        if !changed {
            break;
        }
        stats = ctx.merge(&x, &mut cps);
    }
    cps.iter()
        .zip(&stats)
        .map(|(&i, s)| ChangePoint {
            index: positions[i],
            mean_before: s.mean_before,
            mean_after: s.mean_after,
            delta_rel: (s.mean_before != 0.0).then(|| (s.mean_after - s.mean_before) / s.mean_before),
            p_value: s.p_value,
        })
        .collect()
}

/// Window starts: every w/2, the last window aligned with the end of the series.
fn window_starts(n: usize, w: usize) -> Vec<usize> {
    let step = (w / 2).max(1);
    let mut starts: Vec<usize> = (0..).map(|k| k * step).take_while(|&s| s + w <= n).collect();
    if starts.last().is_none_or(|&s| s + w < n) {
        starts.push(n - w);
    }
    starts
}

/// How a change point looks on the segments around it.
#[derive(Debug, Clone, Copy)]
struct Stat {
    n_before: usize,
    n_after: usize,
    mean_before: f64,
    mean_after: f64,
    /// Bonferroni-adjusted p-value.
    p_value: f64,
    magnitude: f64,
}

struct Ctx<'a> {
    opts: &'a ChangePointOptions,
    min_seg: usize,
    w: usize,
    /// Number of windows searched: the Bonferroni factor of the final p-values.
    tests: f64,
    scan: EnergyScan,
    z: Vec<f64>,
}

impl Ctx<'_> {
    /// The change point `cp` judged on x[prev, cp) against x[cp, next).
    fn stat(&self, x: &[f64], prev: usize, cp: usize, next: usize) -> Stat {
        let (before, after) = (&x[prev..cp], &x[cp..next]);
        let avg = |s: &[f64]| {
            if s.is_empty() {
                0.0
            } else {
                s.iter().sum::<f64>() / s.len() as f64
            }
        };
        let (mb, ma) = (avg(before), avg(after));
        let magnitude = if mb != 0.0 {
            ((ma - mb) / mb).abs()
        } else if ma != 0.0 {
            f64::INFINITY
        } else {
            0.0
        };
        let p = mann_whitney_u(before, after).map_or(1.0, |r| r.p_value);
        Stat {
            n_before: before.len(),
            n_after: after.len(),
            mean_before: mb,
            mean_after: ma,
            p_value: (p * self.tests).min(1.0),
            magnitude,
        }
    }

    /// Whether a change point with these stats stands on its own.
    fn passes(&self, s: &Stat) -> bool {
        s.n_before >= self.min_seg
            && s.n_after >= self.min_seg
            && s.p_value <= self.opts.max_pvalue
            && s.magnitude >= self.opts.min_magnitude
    }

    /// Step 1: E-divisive with a permutation test inside each sliding window. Returns (index, Q) pairs.
    fn window_candidates(&mut self, x: &[f64], starts: &[usize]) -> Vec<(usize, f64)> {
        // Inside a window a split needs this many points a side (at most a quarter of the window).
        let min_size = self.min_seg.min(self.w / 4).max(2);
        let mut out = Vec::new();
        let mut stack = Vec::new();
        let mut perm = PermBuffers::default();
        for &start in starts {
            stack.push((start, start + self.w));
            while let Some((s, e)) = stack.pop() {
                if e - s < 2 * min_size {
                    continue;
                }
                centred(&x[s..e], &mut self.z);
                let ranks = self.scan.ranks_of(&self.z).to_vec();
                let Some((tau, q)) = self.scan.scan_ranked(&self.z, &ranks, min_size, e - s - min_size, None) else {
                    continue;
                };
                let mut rng = Rng::stream(self.opts.seed, ((s as u64) << 32) ^ e as u64);
                if self.permutation_significant(&ranks, q, min_size, &mut rng, &mut perm) {
                    out.push((s + tau, q));
                    stack.push((s, s + tau));
                    stack.push((s + tau, e));
                }
            }
        }
        out
    }

    /// Whether max Q of `self.z` (observed `q`) is significant at `window_pvalue` against shuffles of it.
    /// Stops as soon as too many shuffles have reached `q` for p to get down to the level.
    fn permutation_significant(
        &mut self,
        ranks: &[u32],
        q: f64,
        min_size: usize,
        rng: &mut Rng,
        b: &mut PermBuffers,
    ) -> bool {
        let perms = self.opts.permutations;
        // p = (k + 1)/(perms + 1) ≤ level  ⇔  k ≤ level·(perms + 1) − 1.
        let allowed = (self.opts.window_pvalue * (perms as f64 + 1.0) + 1e-9).floor() as i64 - 1;
        if allowed < 0 || !q.is_finite() || q <= 0.0 {
            return false;
        }
        let m = self.z.len();
        b.idx.clear();
        b.idx.extend(0..m as u32);
        let threshold = q - 1e-12 * q.abs();
        let mut reached = 0i64;
        for _ in 0..perms {
            rng.shuffle(&mut b.idx);
            b.z.clear();
            b.z.extend(b.idx.iter().map(|&i| self.z[i as usize]));
            b.ranks.clear();
            b.ranks.extend(b.idx.iter().map(|&i| ranks[i as usize]));
            let Some((_, qp)) = self.scan.scan_ranked(&b.z, &b.ranks, min_size, m - min_size, None) else {
                return false;
            };
            if qp >= threshold {
                reached += 1;
                if reached > allowed {
                    return false;
                }
            }
        }
        true
    }

    /// Step 3: judge every change point on its neighbouring segments and remove the weakest until all pass.
    /// Returns the stats of the survivors (parallel to `cps`).
    fn merge(&self, x: &[f64], cps: &mut Vec<usize>) -> Vec<Stat> {
        let n = x.len();
        let bounds = |cps: &[usize], i: usize| {
            (if i == 0 { 0 } else { cps[i - 1] }, if i + 1 == cps.len() { n } else { cps[i + 1] })
        };
        let mut stats: Vec<Stat> = (0..cps.len())
            .map(|i| {
                let (p, q) = bounds(cps, i);
                self.stat(x, p, cps[i], q)
            })
            .collect();
        let o = self.opts;
        loop {
            let largest_p = |pred: &dyn Fn(&Stat) -> bool| {
                stats
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| pred(s))
                    .max_by(|a, b| a.1.p_value.total_cmp(&b.1.p_value))
                    .map(|(i, _)| i)
            };
            let victim = largest_p(&|s| s.n_before < self.min_seg || s.n_after < self.min_seg)
                .or_else(|| largest_p(&|s| s.p_value > o.max_pvalue))
                .or_else(|| {
                    stats
                        .iter()
                        .enumerate()
                        .filter(|(_, s)| s.magnitude < o.min_magnitude)
                        .min_by(|a, b| a.1.magnitude.total_cmp(&b.1.magnitude))
                        .map(|(i, _)| i)
                });
            let Some(i) = victim else { break };
            cps.remove(i);
            stats.remove(i);
            for j in [i.wrapping_sub(1), i] {
                if j < cps.len() {
                    let (p, q) = bounds(cps, j);
                    stats[j] = self.stat(x, p, cps[j], q);
                }
            }
        }
        stats
    }

    /// Step 4: move each change point to the energy maximum on the span between its neighbours. Returns
    /// whether any moved.
    fn refine(&mut self, x: &[f64], cps: &mut [usize]) -> bool {
        let n = x.len();
        let mut moved = false;
        for i in 0..cps.len() {
            let prev = if i == 0 { 0 } else { cps[i - 1] };
            let next = if i + 1 == cps.len() { n } else { cps[i + 1] };
            if next - prev < 2 * self.min_seg {
                continue;
            }
            if let Some((tau, _)) = self.scan_span(x, prev, next, self.min_seg, next - prev - self.min_seg) {
                if prev + tau != cps[i] {
                    cps[i] = prev + tau;
                    moved = true;
                }
            }
        }
        moved
    }

    /// Step 5: E-divisive on each whole segment between change points: its best split is added when it
    /// passes the same tests as the others (catches a change that no window saw clearly). Returns whether
    /// any was added.
    fn complete(&mut self, x: &[f64], cps: &mut Vec<usize>) -> bool {
        let n = x.len();
        let mut added = Vec::new();
        for i in 0..=cps.len() {
            let prev = if i == 0 { 0 } else { cps[i - 1] };
            let next = if i == cps.len() { n } else { cps[i] };
            if next - prev < 2 * self.min_seg {
                continue;
            }
            if let Some((tau, _)) = self.scan_span(x, prev, next, self.min_seg, next - prev - self.min_seg) {
                if self.passes(&self.stat(x, prev, prev + tau, next)) {
                    added.push(prev + tau);
                }
            }
        }
        if added.is_empty() {
            return false;
        }
        cps.extend(added);
        cps.sort_unstable();
        true
    }

    /// Best energy split of x[prev, next) with τ (relative to prev) in lo ..= hi.
    fn scan_span(&mut self, x: &[f64], prev: usize, next: usize, lo: usize, hi: usize) -> Option<(usize, f64)> {
        centred(&x[prev..next], &mut self.z);
        let z = std::mem::take(&mut self.z);
        let best = self.scan.scan(&z, lo, hi, None);
        self.z = z;
        best
    }
}

#[derive(Default)]
struct PermBuffers {
    idx: Vec<u32>,
    z: Vec<f64>,
    ranks: Vec<u32>,
}

/// Step 2: candidates closer than `min_seg` are one; keep the one with the largest Q. Sorted, distinct.
fn cluster(mut candidates: Vec<(usize, f64)>, min_seg: usize) -> Vec<usize> {
    candidates.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    let mut out: Vec<(usize, f64)> = Vec::new();
    let mut last_index = None;
    for (i, q) in candidates {
        match (out.last_mut(), last_index) {
            (Some(best), Some(prev)) if i - prev < min_seg => {
                if q > best.1 {
                    *best = (i, q);
                }
            }
            _ => out.push((i, q)),
        }
        last_index = Some(i);
    }
    out.into_iter().map(|c| c.0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The benchmark's generator (bench/otava/gen_series.py): four equal segments with means 100, 108, 104, 96 and Gaussian noise σ = 3
    /// (Box–Muller on the seeded generator).
    fn four_segments(n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Rng::new(seed);
        let seg = n / 4;
        (0..n).map(|i| rng.normal([100.0, 108.0, 104.0, 96.0][(i / seg).min(3)], 3.0)).collect()
    }

    fn indices(cps: &[ChangePoint]) -> Vec<usize> {
        cps.iter().map(|c| c.index).collect()
    }

    fn assert_exactly(found: &[ChangePoint], truth: &[usize], tol: usize, what: &str) {
        let idx = indices(found);
        assert_eq!(idx.len(), truth.len(), "{what}: found {idx:?}, want {truth:?} ±{tol}");
        for (f, t) in idx.iter().zip(truth) {
            assert!(f.abs_diff(*t) <= tol, "{what}: found {idx:?}, want {truth:?} ±{tol}");
        }
    }

    #[test]
    fn four_segments_n1000() {
        let opts = ChangePointOptions::default();
        let x = four_segments(1_000, 0);
        let cps = change_points(&x, &opts);
        assert_exactly(&cps, &[250, 500, 750], 5, "n=1000 seed 0");
        // Means and relative deltas are those of the segments; every reported point passed the level.
        assert!((cps[0].mean_before - 100.0).abs() < 1.0 && (cps[0].mean_after - 108.0).abs() < 1.0);
        assert!((cps[0].delta_rel.unwrap() - 0.08).abs() < 0.01);
        assert!((cps[1].delta_rel.unwrap() + 0.037).abs() < 0.01);
        assert!(cps.iter().all(|c| c.p_value <= opts.max_pvalue));
    }

    /// Not tuned to one series: over 40 draws of the generator, every one has exactly 3 change points within
    /// ±15 of the truth and at least 34 within ±5. (The 108 → 104 step is 1.33σ; for such a step even the
    /// Gaussian maximum-likelihood location misses by more than 5 points in about 5 % of series, so ±5 on
    /// every draw is beyond what the data allow. Measured over 1,000 draws: exactly 3 found in 995, all
    /// within ±5 in 923, within ±15 in 991; see docs/PERFORMANCE.md.)
    #[test]
    fn four_segments_n1000_many_draws() {
        let opts = ChangePointOptions::default();
        let mut within5 = 0;
        for seed in 100..140 {
            let cps = change_points(&four_segments(1_000, seed), &opts);
            assert_exactly(&cps, &[250, 500, 750], 15, &format!("n=1000 seed {seed}"));
            within5 += usize::from(indices(&cps).iter().zip([250usize, 500, 750]).all(|(f, t)| f.abs_diff(t) <= 5));
        }
        assert!(within5 >= 34, "only {within5}/40 draws within ±5");
    }

    #[test]
    fn four_segments_n10000() {
        // Speed is measured by benches/change_points.rs (bench/otava/run.sh), not here.
        let opts = ChangePointOptions::default();
        for seed in [0, 1] {
            let x = four_segments(10_000, seed);
            let cps = change_points(&x, &opts);
            assert_exactly(&cps, &[2_500, 5_000, 7_500], 5, &format!("n=10000 seed {seed}"));
        }
    }

    #[test]
    fn pure_noise_has_no_change_points() {
        let opts = ChangePointOptions::default();
        for seed in 0..20 {
            let mut rng = Rng::new(1_000 + seed);
            let x: Vec<f64> = (0..1_000).map(|_| rng.normal(100.0, 3.0)).collect();
            let cps = change_points(&x, &opts);
            assert!(cps.is_empty(), "seed {seed}: {cps:?}");
        }
        // Skewed noise (lognormal step times with occasional slow steps) is no different.
        let mut rng = Rng::new(77);
        let x: Vec<f64> = (0..2_000)
            .map(|_| {
                let t = 0.42 * (0.03 * rng.standard_normal()).exp();
                if rng.below(50) == 0 {
                    t * 1.4
                } else {
                    t
                }
            })
            .collect();
        assert!(change_points(&x, &opts).is_empty());
    }

    #[test]
    fn one_percent_shift_is_filtered_by_min_magnitude() {
        // 100 → 101 with σ = 0.3: unmistakable statistically (3.3σ), but below the 2 % floor.
        let mut rng = Rng::new(7);
        let x: Vec<f64> = (0..600).map(|i| rng.normal(if i < 300 { 100.0 } else { 101.0 }, 0.3)).collect();
        assert!(change_points(&x, &ChangePointOptions::default()).is_empty());
        // With a 0.5 % floor the same shift is reported, at the right place.
        let cps = change_points(&x, &ChangePointOptions { min_magnitude: 0.005, ..Default::default() });
        assert_exactly(&cps, &[300], 2, "1% shift with 0.5% floor");
        assert!((cps[0].delta_rel.unwrap() - 0.01).abs() < 0.001);
    }

    #[test]
    fn short_segments_are_not_reported() {
        // A 4-point spike is shorter than min_segment = 6: no change points.
        let mut rng = Rng::new(8);
        let mut x: Vec<f64> = (0..300).map(|_| rng.normal(100.0, 1.0)).collect();
        for v in &mut x[150..154] {
            *v += 30.0;
        }
        assert!(change_points(&x, &ChangePointOptions::default()).is_empty());
    }

    #[test]
    fn deterministic_and_handles_degenerate_input() {
        let opts = ChangePointOptions::default();
        let x = four_segments(1_000, 42);
        assert_eq!(change_points(&x, &opts), change_points(&x, &opts));
        assert!(change_points(&[], &opts).is_empty());
        assert!(change_points(&[1.0; 5], &opts).is_empty());
        assert!(change_points(&[3.0; 500], &opts).is_empty());
        assert!(change_points(&[f64::NAN; 100], &opts).is_empty());
        // Zeros then ones: mean_before 0, delta undefined but reported.
        let step: Vec<f64> = (0..100).map(|i| if i < 50 { 0.0 } else { 1.0 }).collect();
        let cps = change_points(&step, &opts);
        assert_eq!(indices(&cps), [50]);
        assert_eq!(cps[0].delta_rel, None);
        // Tiny windows and odd options do not panic.
        let odd = ChangePointOptions { window_len: 0, min_segment: 0, permutations: 0, ..opts };
        let _ = change_points(&x, &odd);
        let _ = change_points(&x[..30], &ChangePointOptions { window_len: 1_000_000, ..opts });
        let _ = change_points(&x, &ChangePointOptions { min_segment: usize::MAX, ..opts });
        let nan = f64::NAN;
        let weird = ChangePointOptions { max_pvalue: nan, window_pvalue: nan, min_magnitude: nan, ..opts };
        assert!(change_points(&x, &weird).is_empty());
        let mut huge: Vec<f64> = (0..40).map(|i| if i % 2 == 0 { 1e300 } else { -1e300 }).collect();
        huge.extend([5.0; 20]);
        let _ = change_points(&huge, &opts);
    }

    #[test]
    fn non_finite_values_are_skipped_and_indices_kept() {
        let mut x = four_segments(1_000, 3);
        for i in [10, 260, 261, 600, 999] {
            x[i] = f64::NAN;
        }
        x[400] = f64::INFINITY;
        let cps = change_points(&x, &ChangePointOptions::default());
        assert_exactly(&cps, &[250, 500, 750], 5, "with NaN");
    }

    #[test]
    fn clustering_keeps_the_strongest() {
        assert_eq!(cluster(vec![(100, 1.0), (103, 5.0), (104, 2.0), (200, 1.0)], 6), vec![103, 200]);
        assert_eq!(cluster(vec![], 6), Vec::<usize>::new());
    }
}
