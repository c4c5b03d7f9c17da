//! The two-sided Mann–Whitney U (Wilcoxon rank-sum) test.
//!
//! It asks whether one sample tends to be larger than the other without assuming a distribution, which suits
//! step times (skewed, with occasional slow steps) better than a t-test. Its null distribution is the
//! permutation distribution of the rank sum: exact for small samples, and its normal limit otherwise.

use super::special::normal_two_sided_p;

/// Largest size of each sample for which the exact null distribution is used (when there are no ties).
pub const EXACT_MAX_N: usize = 20;

/// Result of [`mann_whitney_u`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U for the first sample: the number of pairs (aᵢ, bⱼ) with aᵢ > bⱼ, ties counting ½. Equals
    /// R_a − n_a(n_a + 1)/2 where R_a is the sum of a's ranks in the pooled sample (mid-ranks for ties).
    /// U for the second sample is n_a·n_b − u.
    pub u: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// The standardised statistic (with continuity correction) when the normal approximation was used;
    /// positive when a tends to be larger.
    pub z: Option<f64>,
    /// Whether the p-value comes from the exact distribution.
    pub exact: bool,
    /// Sizes of the two samples after dropping non-finite values.
    pub n_a: usize,
    /// See `n_a`.
    pub n_b: usize,
}

/// Two-sided Mann–Whitney U test of `a` against `b`; non-finite values are ignored. `None` when either sample
/// has no finite value.
///
/// - **Exact** when both samples have at most [`EXACT_MAX_N`] values and there are no ties: U's null
///   distribution is counted (see [`exact_u_counts`]) and p = min(1, 2·min(P(U ≤ u), P(U ≥ u))).
/// - **Normal approximation** otherwise: mean μ = n_a·n_b/2, variance
///   σ² = n_a·n_b/12 · ((N + 1) − Σ(t³ − t)/(N(N − 1))) where the sum runs over groups of t tied values
///   (N = n_a + n_b), z = sign(u − μ)·max(0, |u − μ| − ½)/σ (continuity correction), p = P(|Z| ≥ |z|).
///   If every value is tied, σ = 0 and p = 1.
///
/// These are the conventions of SciPy's `mannwhitneyu(…, alternative="two-sided")` with `method="exact"`
/// and `method="asymptotic", use_continuity=True`.
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .filter(|x| x.is_finite())
        .map(|&x| (x, true))
        .chain(b.iter().filter(|x| x.is_finite()).map(|&x| (x, false)))
        .collect();
    let n_a = pooled.iter().filter(|p| p.1).count();
    let n_b = pooled.len() - n_a;
    if n_a == 0 || n_b == 0 {
        return None;
    }
    pooled.sort_unstable_by(|x, y| x.0.total_cmp(&y.0));

    // Mid-ranks: a run of t equal values at 0-based positions i..i+t all get rank i + (t + 1)/2.
    let n = pooled.len();
    let mut rank_sum_a = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && pooled[j].0 == pooled[i].0 {
            j += 1;
        }
        let t = (j - i) as f64;
        let mid_rank = i as f64 + (t + 1.0) / 2.0;
        let in_a = pooled[i..j].iter().filter(|p| p.1).count();
        rank_sum_a += mid_rank * in_a as f64;
        tie_term += t * t * t - t;
        i = j;
    }
    let (na, nb, nn) = (n_a as f64, n_b as f64, n as f64);
    let u = rank_sum_a - na * (na + 1.0) / 2.0;

    if n_a <= EXACT_MAX_N && n_b <= EXACT_MAX_N && tie_term == 0.0 {
        let counts = exact_u_counts(n_a, n_b);
        let total: f64 = counts.iter().sum();
        let k = u.round() as usize;
        let le: f64 = counts[..=k].iter().sum::<f64>() / total;
        let ge: f64 = counts[k..].iter().sum::<f64>() / total;
        return Some(MannWhitney { u, p_value: (2.0 * le.min(ge)).min(1.0), z: None, exact: true, n_a, n_b });
    }

    let mu = na * nb / 2.0;
    let var = na * nb / 12.0 * ((nn + 1.0) - tie_term / (nn * (nn - 1.0)));
    if var <= 0.0 || !var.is_finite() {
        return Some(MannWhitney { u, p_value: 1.0, z: Some(0.0), exact: false, n_a, n_b });
    }
    let dev = u - mu;
    let z = dev.signum() * (dev.abs() - 0.5).max(0.0) / var.sqrt();
    Some(MannWhitney { u, p_value: normal_two_sided_p(z), z: Some(z), exact: false, n_a, n_b })
}

/// The number of orderings of `m` a-values and `n` b-values (all distinct) that give each U = 0 ..= m·n, as
/// floats (exact: C(40, 20) ≈ 1.4e11 < 2^53).
///
/// Recurrence on the largest value of the pooled sample: if it is an a, it beats all n b's, so
/// c(m, n; u) = c(m − 1, n; u − n) + c(m, n − 1; u), with c(0, n; 0) = c(m, 0; 0) = 1. Filled row by row
/// over m, keeping two rows of vectors.
pub fn exact_u_counts(m: usize, n: usize) -> Vec<f64> {
    // prev[j] = counts for (i − 1, j); cur[j] = counts for (i, j).
    let mut prev: Vec<Vec<f64>> = (0..=n).map(|_| vec![1.0]).collect();
    for i in 1..=m {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(n + 1);
        cur.push(vec![1.0]);
        for j in 1..=n {
            let mut c = vec![0.0; i * j + 1];
            // The largest value is a b: U unchanged.
            for (u, &v) in cur[j - 1].iter().enumerate() {
                c[u] += v;
            }
            // The largest value is an a: it adds j to U.
            for (u, &v) in prev[j].iter().enumerate() {
                c[u + j] += v;
            }
            cur.push(c);
        }
        prev = cur;
    }
    prev.swap_remove(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64, tol: f64) -> bool {
        (got - want).abs() <= tol * want.abs().max(1e-300)
    }

    /// Complete separation, 5 vs 5: U_a = 0. Exactly 1 of the C(10, 5) = 252 equally likely rank sets gives
    /// U = 0 (and 1 gives U = 25), so p = 2/252 by hand. SciPy agrees (0.007936507936507936).
    #[test]
    fn exact_complete_separation() {
        let r = mann_whitney_u(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert!(r.exact);
        assert_eq!(r.u, 0.0);
        assert!(close(r.p_value, 2.0 / 252.0, 1e-12), "{}", r.p_value);
        let r = mann_whitney_u(&[6.0, 7.0, 8.0, 9.0, 10.0], &[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(r.u, 25.0);
        assert!(close(r.p_value, 2.0 / 252.0, 1e-12));
    }

    /// Small exact case worked by hand: a = [1.1, 3.3], b = [2.2, 4.4, 5.5].
    /// Pairs with a > b: (3.3 > 2.2) only, so U = 1. The 10 equally likely rank sets for a (of 5) give
    /// U = 0,1,2,2,3,3,4,4,5,6, so P(U ≤ 1) = 2/10 and p = 0.4. SciPy: U = 1.0, p = 0.4.
    #[test]
    fn exact_by_hand() {
        let r = mann_whitney_u(&[1.1, 3.3], &[2.2, 4.4, 5.5]).unwrap();
        assert_eq!(r.u, 1.0);
        assert!(close(r.p_value, 0.4, 1e-12), "{}", r.p_value);
        assert_eq!(exact_u_counts(2, 3), vec![1.0, 1.0, 2.0, 2.0, 2.0, 1.0, 1.0]);
    }

    /// The counts are a distribution: they sum to C(m + n, m) and are symmetric.
    #[test]
    fn exact_counts_sum_to_binomial() {
        let c = exact_u_counts(20, 20);
        assert_eq!(c.len(), 401);
        assert_eq!(c.iter().sum::<f64>(), 137_846_528_820.0);
        for u in 0..=400 {
            assert_eq!(c[u], c[400 - u]);
        }
    }

    /// Ties force the normal approximation (exact counting assumes distinct values). Worked by hand:
    /// a = [1, 2, 2, 3, 4, 5], b = [2, 6, 7, 8, 9, 10, 11]; pooled ranks 1→1, the three 2's→3 each, 3→5,
    /// 4→6, 5→7, 6..11→8..13, so R_a = 1+3+3+5+6+7 = 25, U = 25 − 6·7/2 = 4, μ = 21, tie term 3³ − 3 = 24,
    /// σ² = 42/12·(14 − 24/156) ≈ 48.4615, z = −(17 − 0.5)/σ ≈ −2.3702, p = 2Φ(z) ≈ 0.01778.
    /// SciPy 1.16.3 `mannwhitneyu(a, b, method="asymptotic")` gives U = 4.0, p = 0.017778372968701422.
    #[test]
    fn normal_approximation_with_ties() {
        let r = mann_whitney_u(&[1.0, 2.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]).unwrap();
        assert!(!r.exact);
        assert_eq!(r.u, 4.0);
        let sigma = (42.0_f64 / 12.0 * (14.0 - 24.0 / 156.0)).sqrt();
        let z = -(17.0 - 0.5) / sigma;
        assert!(close(r.z.unwrap(), z, 1e-12));
        assert!(close(r.p_value, SCIPY_TIES_P, 1e-9), "{}", r.p_value);
    }
    const SCIPY_TIES_P: f64 = 0.017_778_372_968_701_422;

    /// Larger samples (no ties, n > 20): normal approximation with continuity correction.
    /// a = 1.5·(0..30), b = 1.5·(0..25) + 10.25 (offset keeps all values distinct). Each a = 1.5i beats the
    /// b's below it, ⌈(1.5i − 10.25)/1.5⌉ of them when positive, which sums to U = 276; μ = 375,
    /// σ² = 750·56/12 = 3500, z = −(99 − 0.5)/√3500 ≈ −1.6650, p ≈ 0.0959.
    /// SciPy 1.16.3 (asymptotic): U = 276.0, p = 0.0959219570967795.
    #[test]
    fn normal_approximation_large() {
        let a: Vec<f64> = (0..30).map(|i| f64::from(i) * 1.5).collect();
        let b: Vec<f64> = (0..25).map(|i| f64::from(i) * 1.5 + 10.25).collect();
        let r = mann_whitney_u(&a, &b).unwrap();
        assert!(!r.exact);
        assert!(close(r.u, SCIPY_LARGE_U, 1e-12), "{}", r.u);
        assert!(close(r.p_value, SCIPY_LARGE_P, 1e-9), "{}", r.p_value);
    }
    const SCIPY_LARGE_U: f64 = 276.0;
    const SCIPY_LARGE_P: f64 = 0.095_921_957_096_779_5;

    #[test]
    fn degenerate_inputs() {
        assert!(mann_whitney_u(&[], &[1.0]).is_none());
        assert!(mann_whitney_u(&[f64::NAN], &[1.0]).is_none());
        let r = mann_whitney_u(&[2.0; 30], &[2.0; 30]).unwrap();
        assert_eq!(r.p_value, 1.0);
        let r = mann_whitney_u(&[1.0, f64::NAN, 2.0], &[3.0, f64::INFINITY, 4.0]).unwrap();
        assert_eq!((r.n_a, r.n_b), (2, 2));
        // Identical samples: U sits at its mean, p = 1.
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(mann_whitney_u(&x, &x).unwrap().p_value, 1.0);
    }
}
