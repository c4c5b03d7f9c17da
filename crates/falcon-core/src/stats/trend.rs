//! A robust linear trend: the Theil–Sen slope with Sen's distribution-free confidence interval.
//!
//! The slope is the median of the slopes between every pair of points with distinct x (Theil 1950, Sen 1968);
//! the intercept is `median(y) − slope·median(x)`. Outliers (a garbage-collector spike, one sample taken while a
//! buffer was briefly doubled) move it little: up to 29 % of the points can be arbitrary before it breaks down.
//!
//! The interval is Sen's (his equation 2.6): with `N` pairwise slopes sorted, Kendall's `S` has variance
//! `(n(n−1)(2n+5) − Σ t(t−1)(2t+5)) / 18` (the sum over groups of `t` tied x values and over groups of tied y
//! values), `C = z·√Var(S)` for the normal quantile `z` of the confidence, and the bounds are the sorted slopes
//! at 0-based indices `round((N − C)/2) − 1` and `round((N + C)/2)`, clamped to the list — the same numbers
//! as SciPy's `theilslopes`. It assumes independent residuals; a series sampled faster than it changes
//! (a memory curve at 4 Hz) is not, so callers thin it first: [`theil_sen`] bins a long series into at most
//! [`MAX_TREND_POINTS`] points (the median x and y of consecutive runs of points), which also bounds the work at
//! `MAX_TREND_POINTS²/2` slopes.
//!
//! Pure: points in, a [`Trend`] out; `None` for fewer than [`MIN_TREND_POINTS`] finite points or a single x.

use super::special::normal_quantile_two_sided;
use serde::{Deserialize, Serialize};

/// The most points a trend is fitted on; longer series are binned (see the module docs).
pub const MAX_TREND_POINTS: usize = 200;

/// The fewest points a trend is fitted on.
pub const MIN_TREND_POINTS: usize = 4;

/// A fitted trend `y ≈ intercept + slope·x`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Trend {
    /// The Theil–Sen slope (units of y per unit of x).
    pub slope: f64,
    /// `median(y) − slope·median(x)`.
    pub intercept: f64,
    /// Sen's lower confidence bound of the slope.
    pub ci_low: f64,
    /// Sen's upper confidence bound of the slope.
    pub ci_high: f64,
    /// The confidence of the interval (0.95).
    pub confidence: f64,
    /// Points fitted (after binning).
    pub n: usize,
}

/// The Theil–Sen trend of `points` (`(x, y)`, any order) with a `confidence` interval (e.g. 0.95). Non-finite
/// points are left out; a series longer than [`MAX_TREND_POINTS`] is binned first.
pub fn theil_sen(points: &[(f64, f64)], confidence: f64) -> Option<Trend> {
    let mut pts: Vec<(f64, f64)> = points.iter().copied().filter(|(x, y)| x.is_finite() && y.is_finite()).collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let pts = bin(&pts, MAX_TREND_POINTS);
    let n = pts.len();
    if n < MIN_TREND_POINTS {
        return None;
    }
    let mut slopes = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            let dx = pts[j].0 - pts[i].0;
            let slope = (pts[j].1 - pts[i].1) / dx;
            if dx != 0.0 && slope.is_finite() {
                slopes.push(slope);
            }
        }
    }
    if slopes.is_empty() {
        return None;
    }
    slopes.sort_by(f64::total_cmp);
    let slope = median_sorted(&slopes);
    let mut xs: Vec<f64> = pts.iter().map(|p| p.0).collect();
    let mut ys: Vec<f64> = pts.iter().map(|p| p.1).collect();
    xs.sort_by(f64::total_cmp);
    ys.sort_by(f64::total_cmp);
    let intercept = median_sorted(&ys) - slope * median_sorted(&xs);

    let nf = n as f64;
    let var_s = ((nf * (nf - 1.0) * (2.0 * nf + 5.0) - tie_term(&xs) - tie_term(&ys)) / 18.0).max(0.0);
    let c = normal_quantile_two_sided(1.0 - confidence.clamp(0.0, 1.0)) * var_s.sqrt();
    let total = slopes.len() as f64;
    let last = slopes.len() - 1;
    let lower_idx = (((total - c) / 2.0).round() - 1.0).max(0.0) as usize;
    let upper_idx = ((total + c) / 2.0).round().max(0.0) as usize;
    let (lower_idx, upper_idx) = (lower_idx.min(last), upper_idx.min(last));
    Some(Trend { slope, intercept, ci_low: slopes[lower_idx], ci_high: slopes[upper_idx], confidence, n })
}

/// `Σ t(t−1)(2t+5)` over the groups of `t > 1` equal values of a sorted list.
fn tie_term(sorted: &[f64]) -> f64 {
    sorted
        .chunk_by(|a, b| a == b)
        .map(|g| g.len() as f64)
        .filter(|t| *t > 1.0)
        .map(|t| t * (t - 1.0) * (2.0 * t + 5.0))
        .sum()
}

/// `pts` (sorted by x) as at most `max` points: consecutive runs of equal length, each its median x and y.
fn bin(pts: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    if pts.len() <= max || max == 0 {
        return pts.to_vec();
    }
    let n = pts.len();
    (0..max)
        .map(|b| {
            let chunk = &pts[b * n / max..(b + 1) * n / max];
            let mut xs: Vec<f64> = chunk.iter().map(|p| p.0).collect();
            let mut ys: Vec<f64> = chunk.iter().map(|p| p.1).collect();
            xs.sort_by(f64::total_cmp);
            ys.sort_by(f64::total_cmp);
            (median_sorted(&xs), median_sorted(&ys))
        })
        .collect()
}

fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::rng::Rng;

    #[test]
    fn exact_line_has_its_slope_and_a_point_interval() {
        let pts: Vec<(f64, f64)> = (0..20).map(|i| (f64::from(i), 3.0 + 2.0 * f64::from(i))).collect();
        let t = theil_sen(&pts, 0.95).unwrap();
        assert_eq!((t.slope, t.intercept, t.ci_low, t.ci_high, t.n), (2.0, 3.0, 2.0, 2.0, 20));
    }

    #[test]
    fn matches_scipy_on_a_small_series() {
        // SciPy 1.16 `scipy.stats.theilslopes(y, x=arange(len(y)), alpha=0.95)`.
        let cases: [(&[f64], [f64; 4]); 2] = [
            (&[1.0, 3.0, 2.0, 5.0, 4.0, 7.0, 6.0, 9.0], [1.0, 1.0, 0.5, 5.0 / 3.0]),
            (&[1.0, 1.0, 2.0, 2.0, 2.0, 3.0, 5.0, 4.0, 4.0, 6.0], [0.5, 0.25, 1.0 / 3.0, 2.0 / 3.0]),
        ];
        for (ys, [slope, intercept, low, high]) in cases {
            let pts: Vec<(f64, f64)> = ys.iter().enumerate().map(|(i, y)| (i as f64, *y)).collect();
            let t = theil_sen(&pts, 0.95).unwrap();
            let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
            assert!(close(t.slope, slope) && close(t.intercept, intercept), "{t:?}");
            assert!(close(t.ci_low, low) && close(t.ci_high, high), "{t:?}");
        }
    }

    #[test]
    fn outliers_barely_move_it() {
        let mut pts: Vec<(f64, f64)> = (0..50).map(|i| (f64::from(i), 10.0 * f64::from(i))).collect();
        for i in [5, 17, 30, 44] {
            pts[i].1 += 1e6; // spikes
        }
        let t = theil_sen(&pts, 0.95).unwrap();
        assert!((t.slope - 10.0).abs() < 0.5, "{t:?}");
        assert!(t.ci_low > 0.0 && t.ci_low <= 10.0 && t.ci_high >= 10.0, "{t:?}");
    }

    #[test]
    fn noise_without_trend_has_an_interval_around_zero() {
        let mut rng = Rng::new(7);
        let mut covered = 0;
        for _ in 0..200 {
            let pts: Vec<(f64, f64)> = (0..40).map(|i| (f64::from(i), rng.next_f64())).collect();
            let t = theil_sen(&pts, 0.95).unwrap();
            if t.ci_low <= 0.0 && t.ci_high >= 0.0 {
                covered += 1;
            }
        }
        // 95 % nominal coverage of the true slope 0 (Sen's interval is conservative here).
        assert!(covered >= 180, "{covered} of 200");
    }

    #[test]
    fn long_series_are_binned_and_degenerate_ones_refused() {
        let pts: Vec<(f64, f64)> = (0..10_000).map(|i| (f64::from(i), 5.0 * f64::from(i))).collect();
        let t = theil_sen(&pts, 0.95).unwrap();
        assert_eq!(t.n, MAX_TREND_POINTS);
        assert!((t.slope - 5.0).abs() < 1e-9, "{t:?}");
        assert!(theil_sen(&[(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)], 0.95).is_none());
        assert!(theil_sen(&[(1.0, 1.0); 10], 0.95).is_none());
        assert!(theil_sen(&[(0.0, f64::NAN); 10], 0.95).is_none());
    }

    proptest::proptest! {
        #[test]
        fn any_points_give_an_ordered_interval_or_none(pts in proptest::collection::vec((-1e9f64..1e9, -1e12f64..1e12), 0..300)) {
            if let Some(t) = theil_sen(&pts, 0.95) {
                proptest::prop_assert!(t.ci_low <= t.slope && t.slope <= t.ci_high, "{:?}", t);
                proptest::prop_assert!(t.n >= MIN_TREND_POINTS && t.n <= MAX_TREND_POINTS);
            }
        }
    }
}
