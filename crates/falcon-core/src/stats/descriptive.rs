//! Descriptive statistics of one metric series: the summary the metadata store keeps (docs/DESIGN.md §3: count, mean,
//! median, p90, min, max, last) and the warm-up rule (docs/DESIGN.md §2).
//!
//! Non-finite values (NaN, ±∞: a diverged loss, a division by a zero step time) are not data: every function
//! here skips them, and `count` says how many values were used.

use serde::{Deserialize, Serialize};

/// Summary of a series of per-step values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Summary {
    /// Finite values summarised (non-finite ones are skipped).
    pub count: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// 50th percentile (linear interpolation, see [`percentile`]).
    pub median: f64,
    /// 90th percentile (linear interpolation).
    pub p90: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// The last finite value in series order (e.g. the final loss).
    pub last: f64,
}

/// Summarises the finite values of `values`; `None` when there are none.
pub fn summarize(values: &[f64]) -> Option<Summary> {
    let sorted = sorted_finite(values);
    let last = values.iter().rev().copied().find(|v| v.is_finite())?;
    Some(Summary {
        count: sorted.len(),
        mean: mean(&sorted)?,
        median: percentile_sorted(&sorted, 0.5)?,
        p90: percentile_sorted(&sorted, 0.9)?,
        min: sorted[0],
        max: sorted[sorted.len() - 1],
        last,
    })
}

/// The finite values of `values`, ascending.
pub fn sorted_finite(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_unstable_by(f64::total_cmp);
    v
}

/// Mean of the finite values; `None` when there are none.
///
/// Uses a running mean (x̄ₖ = x̄ₖ₋₁ + (xₖ − x̄ₖ₋₁)/k), which cannot overflow for large byte counts.
pub fn mean(values: &[f64]) -> Option<f64> {
    let mut m = 0.0;
    let mut k = 0usize;
    for &x in values.iter().filter(|x| x.is_finite()) {
        k += 1;
        m += (x - m) / k as f64;
    }
    (k > 0).then_some(m)
}

/// Median of the finite values (the mean of the two middle values when their number is even).
pub fn median(values: &[f64]) -> Option<f64> {
    percentile(values, 0.5)
}

/// The `q`-quantile (`q` in `[0, 1]`, clamped) of the finite values, by linear interpolation between the
/// closest ranks: with the values sorted as x₀ ≤ … ≤ xₙ₋₁, h = (n − 1)·q and the result is
/// x⌊h⌋ + (h − ⌊h⌋)·(x⌊h⌋₊₁ − x⌊h⌋). This is the "linear" method (Hyndman–Fan type 7) that NumPy, R and
/// spreadsheets use by default, so summaries match theirs.
pub fn percentile(values: &[f64], q: f64) -> Option<f64> {
    percentile_sorted(&sorted_finite(values), q)
}

/// [`percentile`] on values already sorted ascending and finite.
pub fn percentile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 || q.is_nan() {
        return None;
    }
    let h = (n - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    let frac = h - lo as f64;
    Some(sorted[lo] + frac * (sorted[hi] - sorted[lo]))
}

/// Warm-up steps to drop from a series of `n` steps (docs/DESIGN.md §2): the larger of the first 2 steps and the first
/// 10 % (rounded up), but always leaving at least one step: `min(max(2, ⌈n/10⌉), n − 1)`, and 0 for `n ≤ 1`.
pub fn warmup_len(n: usize) -> usize {
    n.div_ceil(10).max(2).min(n.saturating_sub(1))
}

/// `samples` without their warm-up: the first `warmup` items when set (capped at the length), else the first
/// [`warmup_len`] items.
pub fn drop_warmup<T>(samples: &[T], warmup: Option<usize>) -> &[T] {
    let k = warmup.unwrap_or_else(|| warmup_len(samples.len())).min(samples.len());
    &samples[k..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_series() {
        // numpy: mean 5.5, median 5.5, percentile(…, 90) = 9.1 for 1..=10.
        let xs: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        let s = summarize(&xs).unwrap();
        assert_eq!(s.count, 10);
        assert!((s.mean - 5.5).abs() < 1e-12);
        assert!((s.median - 5.5).abs() < 1e-12);
        assert!((s.p90 - 9.1).abs() < 1e-12);
        assert_eq!((s.min, s.max, s.last), (1.0, 10.0, 1.0));
    }

    #[test]
    fn summary_skips_non_finite_and_empty_is_none() {
        let s = summarize(&[1.0, f64::NAN, 3.0, f64::INFINITY, 2.0, f64::NAN]).unwrap();
        assert_eq!(s.count, 3);
        assert_eq!(s.last, 2.0);
        assert_eq!(s.median, 2.0);
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[f64::NAN, f64::NEG_INFINITY]).is_none());
    }

    #[test]
    fn single_value_and_percentile_edges() {
        let s = summarize(&[4.0]).unwrap();
        assert_eq!((s.median, s.p90, s.min, s.max), (4.0, 4.0, 4.0, 4.0));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 0.0), Some(1.0));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 1.0), Some(4.0));
        // numpy.percentile([1,2,3,4], 25) = 1.75
        assert_eq!(percentile(&[4.0, 3.0, 2.0, 1.0], 0.25), Some(1.75));
        assert_eq!(percentile(&[1.0], f64::NAN), None);
        assert_eq!(mean(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
    }

    #[test]
    fn mean_of_huge_values_does_not_overflow() {
        let m = mean(&[f64::MAX, f64::MAX]).unwrap();
        assert_eq!(m, f64::MAX);
    }

    #[test]
    fn warmup_rule() {
        assert_eq!(warmup_len(0), 0);
        assert_eq!(warmup_len(1), 0);
        assert_eq!(warmup_len(2), 1);
        assert_eq!(warmup_len(3), 2);
        assert_eq!(warmup_len(10), 2);
        assert_eq!(warmup_len(20), 2);
        assert_eq!(warmup_len(21), 3);
        assert_eq!(warmup_len(100), 10);
        assert_eq!(warmup_len(101), 11);
        let xs: Vec<u32> = (0..100).collect();
        assert_eq!(drop_warmup(&xs, None)[0], 10);
        assert_eq!(drop_warmup(&xs, Some(0)).len(), 100);
        assert_eq!(drop_warmup(&xs, Some(5))[0], 5);
        assert!(drop_warmup(&xs, Some(500)).is_empty());
        assert!(drop_warmup::<f64>(&[], None).is_empty());
    }
}
