//! The E-divisive divergence (Matteson & James, 2014) of every split of a series, in O(m log m).
//!
//! For a series z₀ … zₘ₋₁ split at τ into X = z[0, τ) (n = τ values) and Y = z[τ, m) (k = m − τ values), with
//! α = 1 (absolute differences), the empirical energy divergence scaled by the sample sizes is
//!
//! ```text
//! Q(τ) = n·k/m · ( 2/(n·k)·B − W_X / C(n,2) − W_Y / C(k,2) )
//!      = 2/m·B − 2k/(m(n−1))·W_X − 2n/(m(k−1))·W_Y
//! ```
//!
//! where W_X = Σ_{i<j<τ} |zᵢ − zⱼ| (within X), W_Y the same within Y, and B = Σ_{i<τ≤j} |zᵢ − zⱼ| (between).
//! It is near 0 when X and Y come from one distribution and grows with n·k/m when they differ; the split that
//! maximises it is the E-divisive change-point candidate.
//!
//! All three sums for every τ come from two passes. Left to right, W_X(τ + 1) = W_X(τ) + Σ_{i<τ} |z_τ − zᵢ|, and
//! that inner sum is z_τ·c₋ − s₋ + (S − s₋) − z_τ·(c − c₋) where c, S are the count and sum of the values seen
//! so far and c₋, s₋ the count and sum of those below z_τ: two Fenwick (binary indexed) trees over the
//! values' ranks answer c₋ and s₋ in O(log m). The right-to-left pass gives W_Y the same way, and
//! B = W_total − W_X − W_Y. Equal values contribute 0 to the inner sum whichever side they are counted on, so
//! ties need no care.

/// Reusable buffers for [`EnergyScan::scan`]: scanning many windows or permutations allocates nothing after
/// the first.
#[derive(Debug, Default, Clone)]
pub struct EnergyScan {
    fen_count: Vec<u32>,
    fen_sum: Vec<f64>,
    left: Vec<f64>,
    right: Vec<f64>,
    order: Vec<u32>,
    ranks: Vec<u32>,
}

impl EnergyScan {
    /// Empty buffers.
    pub fn new() -> Self {
        EnergyScan::default()
    }

    /// Ranks (0-based, ties broken by position) of `z`, as [`EnergyScan::scan_ranked`] wants them.
    pub fn ranks_of(&mut self, z: &[f64]) -> &[u32] {
        let m = z.len();
        self.order.clear();
        self.order.extend(0..m as u32);
        self.order.sort_unstable_by(|&a, &b| z[a as usize].total_cmp(&z[b as usize]).then(a.cmp(&b)));
        self.ranks.clear();
        self.ranks.resize(m, 0);
        for (r, &i) in self.order.iter().enumerate() {
            self.ranks[i as usize] = r as u32;
        }
        &self.ranks
    }

    /// Q(τ) for every τ in `lo ..= hi` (clamped to `2 ..= m − 2`, where both sides have two values), written
    /// to `out` as `(τ, Q)`; returns the τ with the largest Q (the first on ties) and that Q, or `None` when
    /// the range is empty. `z` should be centred (e.g. minus its mean) to keep the running sums small.
    pub fn scan(
        &mut self,
        z: &[f64],
        lo: usize,
        hi: usize,
        out: Option<&mut Vec<(usize, f64)>>,
    ) -> Option<(usize, f64)> {
        self.ranks_of(z);
        let ranks = std::mem::take(&mut self.ranks);
        let r = self.scan_ranked(z, &ranks, lo, hi, out);
        self.ranks = ranks;
        r
    }

    /// [`EnergyScan::scan`] with the ranks supplied (`ranks` must be a permutation of `0..m` ordering `z`;
    /// permuting `z` and `ranks` together keeps it valid, which is how permutation tests avoid re-sorting).
    pub fn scan_ranked(
        &mut self,
        z: &[f64],
        ranks: &[u32],
        lo: usize,
        hi: usize,
        mut out: Option<&mut Vec<(usize, f64)>>,
    ) -> Option<(usize, f64)> {
        let m = z.len();
        if m < 4 {
            return None;
        }
        let lo = lo.max(2);
        let hi = hi.min(m - 2);
        if lo > hi {
            return None;
        }
        // left[τ] = W_X for X = z[0, τ); right[τ] = W_Y for Y = z[τ, m).
        within_sums(
            z.iter().copied().zip(ranks.iter().copied()),
            m,
            &mut self.fen_count,
            &mut self.fen_sum,
            &mut self.left,
        );
        within_sums(
            z.iter().rev().copied().zip(ranks.iter().rev().copied()),
            m,
            &mut self.fen_count,
            &mut self.fen_sum,
            &mut self.right,
        );
        self.right.reverse();
        let total = self.left[m];
        let mf = m as f64;
        let mut best: Option<(usize, f64)> = None;
        if let Some(o) = out.as_deref_mut() {
            o.clear();
        }
        for tau in lo..=hi {
            let (n, k) = (tau as f64, (m - tau) as f64);
            let wx = self.left[tau];
            let wy = self.right[tau];
            let between = total - wx - wy;
            let q = 2.0 / mf * between - 2.0 * k / (mf * (n - 1.0)) * wx - 2.0 * n / (mf * (k - 1.0)) * wy;
            if let Some(o) = out.as_deref_mut() {
                o.push((tau, q));
            }
            if best.is_none_or(|(_, b)| q > b) {
                best = Some((tau, q));
            }
        }
        best
    }
}

/// Fills `acc[t]` (t = 0 ..= m) with the sum of |zᵢ − zⱼ| over pairs among the first t items of `items`
/// (value, rank), using Fenwick trees over ranks for the count and the sum of earlier values below each item.
fn within_sums(
    items: impl Iterator<Item = (f64, u32)>,
    m: usize,
    fen_count: &mut Vec<u32>,
    fen_sum: &mut Vec<f64>,
    acc: &mut Vec<f64>,
) {
    fen_count.clear();
    fen_count.resize(m + 1, 0);
    fen_sum.clear();
    fen_sum.resize(m + 1, 0.0);
    acc.clear();
    acc.push(0.0);
    let (mut seen, mut seen_sum, mut w) = (0u32, 0.0f64, 0.0f64);
    for (x, rank) in items {
        // Count and sum of earlier items with a smaller rank: prefix query over Fenwick positions 1..=rank.
        let (mut c_lo, mut s_lo) = (0u32, 0.0f64);
        let mut i = rank as usize;
        while i > 0 {
            c_lo += fen_count[i];
            s_lo += fen_sum[i];
            i &= i - 1;
        }
        let below = x * f64::from(c_lo) - s_lo;
        let above = (seen_sum - s_lo) - x * f64::from(seen - c_lo);
        w += below + above;
        acc.push(w);
        // Insert at Fenwick position rank + 1.
        let mut i = rank as usize + 1;
        while i <= m {
            fen_count[i] += 1;
            fen_sum[i] += x;
            i += i & i.wrapping_neg();
        }
        seen += 1;
        seen_sum += x;
    }
}

/// `values` minus their mean (the divergence does not change under a shift; the sums stay small).
pub fn centred(values: &[f64], out: &mut Vec<f64>) {
    let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
    out.clear();
    out.extend(values.iter().map(|v| v - mean));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::rng::Rng;

    /// Q(τ) straight from the definition, O(m²), for checking.
    fn q_naive(z: &[f64], tau: usize) -> f64 {
        let (x, y) = z.split_at(tau);
        let (n, k, m) = (x.len() as f64, y.len() as f64, z.len() as f64);
        let mut b = 0.0;
        for a in x {
            for c in y {
                b += (a - c).abs();
            }
        }
        let within = |s: &[f64]| {
            let mut w = 0.0;
            for i in 0..s.len() {
                for j in i + 1..s.len() {
                    w += (s[i] - s[j]).abs();
                }
            }
            w
        };
        let e = 2.0 / (n * k) * b - within(x) / (n * (n - 1.0) / 2.0) - within(y) / (k * (k - 1.0) / 2.0);
        n * k / m * e
    }

    #[test]
    fn matches_definition_with_ties() {
        let mut rng = Rng::new(11);
        // Rounded values give plenty of ties.
        let z: Vec<f64> =
            (0..37).map(|i| (rng.normal(if i < 20 { 0.0 } else { 1.5 }, 1.0) * 2.0).round() / 2.0).collect();
        let mut scan = EnergyScan::new();
        let mut out = Vec::new();
        let best = scan.scan(&z, 0, usize::MAX, Some(&mut out)).unwrap();
        assert_eq!(out.len(), 37 - 3);
        for &(tau, q) in &out {
            let want = q_naive(&z, tau);
            assert!((q - want).abs() < 1e-9 * want.abs().max(1.0), "tau {tau}: {q} vs {want}");
        }
        let argmax = out.iter().fold((0, f64::MIN), |b, &(t, q)| if q > b.1 { (t, q) } else { b });
        assert_eq!(best, argmax);
    }

    #[test]
    fn finds_a_clear_step_and_handles_tiny_inputs() {
        let z: Vec<f64> = (0..40).map(|i| if i < 25 { 0.0 } else { 5.0 } + (i % 3) as f64 * 0.1).collect();
        let mut scan = EnergyScan::new();
        assert_eq!(scan.scan(&z, 0, usize::MAX, None).unwrap().0, 25);
        assert!(scan.scan(&[1.0, 2.0, 3.0], 0, 10, None).is_none());
        assert!(scan.scan(&z, 30, 20, None).is_none());
        // A constant series has Q = 0 everywhere.
        let (_, q) = scan.scan(&[3.0; 10], 0, 10, None).unwrap();
        assert_eq!(q, 0.0);
    }
}
