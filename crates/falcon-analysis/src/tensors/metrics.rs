//! Per-element accumulation of the comparison metrics (in `f64`), over blocks of decoded elements, and the
//! merge of partial results in element order (so the totals do not depend on the number of threads).
//!
//! Definitions (A is the reference, d = b − a): the error metrics (max/mean abs error, max rel error, rel L2,
//! cosine, ULPs) are over the positions where both values are finite; NaN and ±Inf are counted per side. An
//! element is close when both are NaN, or a == b (this covers equal infinities), or both are finite and
//! |d| ≤ atol + rtol·|a|.

use super::dtype::{decode, DType, OrdBF16, OrdF16, OrdF32, OrdF64, OrdNone, Ordered, Stored};

/// Elements decoded and accumulated at a time (partial sums per block keep the rounding error small).
pub const BLOCK: usize = 2048;

/// What a pair is compared with.
#[derive(Clone, Copy, Debug)]
pub struct Kernel {
    pub a: Stored,
    pub b: Stored,
    /// The float dtype ULPs are counted in (`None`: not both floats).
    pub ulp: Option<DType>,
    pub rtol: f64,
    pub atol: f64,
}

/// Metrics of a contiguous range of elements; [`Partial::merge`] appends a later range.
#[derive(Clone, Debug)]
pub struct Partial {
    /// Positions where both values are finite.
    pub finite: u64,
    /// Largest |b − a| (−1 until a finite pair is seen), its flat index and the values there.
    pub max_abs: f64,
    pub max_abs_at: u64,
    pub a_at: f64,
    pub b_at: f64,
    pub sum_abs: f64,
    pub sum_d2: f64,
    pub sum_a2: f64,
    pub sum_b2: f64,
    pub sum_ab: f64,
    /// Largest |b − a|/|a| over a ≠ 0 (−1 when there is none).
    pub max_rel: f64,
    /// Finite pairs with a == 0 and b ≠ 0 (their relative error is undefined).
    pub zero_a: u64,
    pub close: u64,
    pub nan_a: u64,
    pub nan_b: u64,
    pub inf_a: u64,
    pub inf_b: u64,
    pub max_ulp: u64,
}

impl Default for Partial {
    fn default() -> Self {
        Partial {
            finite: 0,
            max_abs: -1.0,
            max_abs_at: u64::MAX,
            a_at: 0.0,
            b_at: 0.0,
            sum_abs: 0.0,
            sum_d2: 0.0,
            sum_a2: 0.0,
            sum_b2: 0.0,
            sum_ab: 0.0,
            max_rel: -1.0,
            zero_a: 0,
            close: 0,
            nan_a: 0,
            nan_b: 0,
            inf_a: 0,
            inf_b: 0,
            max_ulp: 0,
        }
    }
}

impl Partial {
    /// Appends the metrics of a range that comes after this one (ties keep the earlier index).
    pub fn merge(&mut self, o: &Partial) {
        self.finite += o.finite;
        if o.max_abs > self.max_abs {
            self.max_abs = o.max_abs;
            self.max_abs_at = o.max_abs_at;
            self.a_at = o.a_at;
            self.b_at = o.b_at;
        }
        self.sum_abs += o.sum_abs;
        self.sum_d2 += o.sum_d2;
        self.sum_a2 += o.sum_a2;
        self.sum_b2 += o.sum_b2;
        self.sum_ab += o.sum_ab;
        self.max_rel = self.max_rel.max(o.max_rel);
        self.zero_a += o.zero_a;
        self.close += o.close;
        self.nan_a += o.nan_a;
        self.nan_b += o.nan_b;
        self.inf_a += o.inf_a;
        self.inf_b += o.inf_b;
        self.max_ulp = self.max_ulp.max(o.max_ulp);
    }
}

/// Per-thread decode buffers.
#[derive(Default)]
pub struct Scratch {
    a: Vec<f64>,
    b: Vec<f64>,
}

/// Accumulates the elements in `a_bytes`/`b_bytes` (the same elements of each side, starting at flat index
/// `base`) into `p`.
pub fn accumulate_bytes(k: &Kernel, a_bytes: &[u8], b_bytes: &[u8], base: u64, p: &mut Partial, s: &mut Scratch) {
    let (sa, sb) = (k.a.dtype.size(), k.b.dtype.size());
    let n = (a_bytes.len() / sa).min(b_bytes.len() / sb);
    let mut i = 0;
    while i < n {
        let m = BLOCK.min(n - i);
        decode(k.a, &a_bytes[i * sa..(i + m) * sa], &mut s.a);
        decode(k.b, &b_bytes[i * sb..(i + m) * sb], &mut s.b);
        let at = base + i as u64;
        match k.ulp {
            Some(DType::F16) => accumulate::<OrdF16>(k, &s.a, &s.b, at, p),
            Some(DType::BF16) => accumulate::<OrdBF16>(k, &s.a, &s.b, at, p),
            Some(DType::F32) => accumulate::<OrdF32>(k, &s.a, &s.b, at, p),
            Some(DType::F64) => accumulate::<OrdF64>(k, &s.a, &s.b, at, p),
            _ => accumulate::<OrdNone>(k, &s.a, &s.b, at, p),
        }
        i += m;
    }
}

/// Accumulates one block of decoded values.
pub fn accumulate<O: Ordered>(k: &Kernel, a: &[f64], b: &[f64], base: u64, p: &mut Partial) {
    if !accumulate_finite::<O>(k, a, b, base, p) {
        accumulate_any::<O>(k, a, b, base, p);
    }
}

/// Independent accumulators per quantity in the all-finite path.
const LANES: usize = 4;

/// [`accumulate`] for a block whose values are all finite, in simple passes the compiler vectorizes (sums;
/// maxima and counts; ULPs). Returns false, leaving `p` as it was, when the block holds a NaN or an infinity
/// (or values so large that their squares overflow), for [`accumulate_any`] to do.
fn accumulate_finite<O: Ordered>(k: &Kernel, a: &[f64], b: &[f64], base: u64, p: &mut Partial) -> bool {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let split = n - n % LANES;
    let (a4, b4) = (&a[..split], &b[..split]);

    let mut sum_abs = [0.0f64; LANES];
    let mut sum_d2 = [0.0f64; LANES];
    let mut sum_a2 = [0.0f64; LANES];
    let mut sum_b2 = [0.0f64; LANES];
    let mut sum_ab = [0.0f64; LANES];
    for (xs, ys) in a4.chunks_exact(LANES).zip(b4.chunks_exact(LANES)) {
        for l in 0..LANES {
            let (x, y) = (xs[l], ys[l]);
            let d = y - x;
            sum_abs[l] += d.abs();
            sum_d2[l] += d * d;
            sum_a2[l] += x * x;
            sum_b2[l] += y * y;
            sum_ab[l] += x * y;
        }
    }
    for (&x, &y) in a[split..].iter().zip(&b[split..]) {
        let d = y - x;
        sum_abs[0] += d.abs();
        sum_d2[0] += d * d;
        sum_a2[0] += x * x;
        sum_b2[0] += y * y;
        sum_ab[0] += x * y;
    }
    let total = |v: [f64; LANES]| v.iter().sum::<f64>();
    let (s_abs, s_d2, s_a2, s_b2, s_ab) = (total(sum_abs), total(sum_d2), total(sum_a2), total(sum_b2), total(sum_ab));
    // A NaN or infinity anywhere makes these sums non-finite.
    if !(s_abs + s_d2 + s_a2 + s_b2).is_finite() {
        return false;
    }

    let (rtol, atol) = (k.rtol, k.atol);
    let mut max_abs = [-1.0f64; LANES];
    let mut max_rel = [-1.0f64; LANES];
    let mut zero_a = [0u64; LANES];
    let mut close = [0u64; LANES];
    let mut pass2 = |l: usize, x: f64, y: f64| {
        let ad = (y - x).abs();
        let ax = x.abs();
        max_abs[l] = if ad > max_abs[l] { ad } else { max_abs[l] };
        let r = if ax > 0.0 { ad / ax } else { -1.0 };
        max_rel[l] = if r > max_rel[l] { r } else { max_rel[l] };
        zero_a[l] += u64::from((ax == 0.0) & (y != 0.0));
        close[l] += u64::from(ad <= atol + rtol * ax);
    };
    for (xs, ys) in a4.chunks_exact(LANES).zip(b4.chunks_exact(LANES)) {
        for l in 0..LANES {
            pass2(l, xs[l], ys[l]);
        }
    }
    for (&x, &y) in a[split..].iter().zip(&b[split..]) {
        pass2(0, x, y);
    }

    let mut max_ulp = p.max_ulp;
    if k.ulp.is_some() {
        for (&x, &y) in a.iter().zip(b) {
            max_ulp = max_ulp.max(O::distance(x, y));
        }
    }

    p.finite += n as u64;
    p.sum_abs += s_abs;
    p.sum_d2 += s_d2;
    p.sum_a2 += s_a2;
    p.sum_b2 += s_b2;
    p.sum_ab += s_ab;
    p.max_rel = max_rel.iter().fold(p.max_rel, |m, &r| m.max(r));
    p.zero_a += zero_a.iter().sum::<u64>();
    p.close += close.iter().sum::<u64>();
    p.max_ulp = max_ulp;
    let block_max = max_abs.iter().fold(-1.0f64, |m, &v| m.max(v));
    if block_max > p.max_abs {
        // The first position holding the block's maximum (only needed when the running maximum grows).
        if let Some(i) = (0..n).find(|&i| (b[i] - a[i]).abs() == block_max) {
            p.max_abs = block_max;
            p.max_abs_at = base + i as u64;
            p.a_at = a[i];
            p.b_at = b[i];
        }
    }
    true
}

/// [`accumulate`] for any block (NaN and infinities included), one element at a time.
fn accumulate_any<O: Ordered>(k: &Kernel, a: &[f64], b: &[f64], base: u64, p: &mut Partial) {
    let (rtol, atol) = (k.rtol, k.atol);
    let (mut sum_abs, mut sum_d2, mut sum_a2, mut sum_b2, mut sum_ab) = (0.0, 0.0, 0.0, 0.0, 0.0);
    let (mut max_abs, mut max_at) = (p.max_abs, usize::MAX);
    let mut max_rel = p.max_rel;
    let mut max_ulp = p.max_ulp;
    let (mut finite, mut zero_a, mut close) = (0u64, 0u64, 0u64);
    for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
        if x.is_finite() && y.is_finite() {
            finite += 1;
            let d = y - x;
            let ad = d.abs();
            let ax = x.abs();
            sum_abs += ad;
            sum_d2 += d * d;
            sum_a2 += x * x;
            sum_b2 += y * y;
            sum_ab += x * y;
            if ad > max_abs {
                max_abs = ad;
                max_at = i;
            }
            if ax > 0.0 {
                // ad/ax > max_rel without a division per element (it is rare that one is needed).
                if ad > max_rel * ax {
                    max_rel = max_rel.max(ad / ax);
                }
            } else if y != 0.0 {
                zero_a += 1;
            }
            close += u64::from(ad <= atol + rtol * ax);
            max_ulp = max_ulp.max(O::distance(x, y));
        } else {
            p.nan_a += u64::from(x.is_nan());
            p.nan_b += u64::from(y.is_nan());
            p.inf_a += u64::from(x.is_infinite());
            p.inf_b += u64::from(y.is_infinite());
            if (x.is_nan() && y.is_nan()) || x == y {
                close += 1;
            }
        }
    }
    p.finite += finite;
    p.sum_abs += sum_abs;
    p.sum_d2 += sum_d2;
    p.sum_a2 += sum_a2;
    p.sum_b2 += sum_b2;
    p.sum_ab += sum_ab;
    if max_at != usize::MAX {
        p.max_abs = max_abs;
        p.max_abs_at = base + max_at as u64;
        p.a_at = a[max_at];
        p.b_at = b[max_at];
    }
    p.max_rel = max_rel;
    p.zero_a += zero_a;
    p.close += close;
    p.max_ulp = max_ulp;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel() -> Kernel {
        let s = Stored { dtype: DType::F32, big_endian: false };
        Kernel { a: s, b: s, ulp: Some(DType::F32), rtol: 1.3e-6, atol: 1e-5 }
    }

    #[test]
    fn metrics_of_a_small_block() {
        let a = [1.0, 2.0, 0.0, f64::NAN, f64::INFINITY, 4.0];
        let b = [1.0, 2.5, 0.5, f64::NAN, f64::INFINITY, f64::NAN];
        let mut p = Partial::default();
        accumulate::<OrdF32>(&kernel(), &a, &b, 10, &mut p);
        assert_eq!(p.finite, 3);
        assert_eq!((p.max_abs, p.max_abs_at, p.a_at, p.b_at), (0.5, 11, 2.0, 2.5));
        assert_eq!(p.max_rel, 0.25);
        assert_eq!(p.zero_a, 1);
        // close: index 0, both NaN, equal infinities.
        assert_eq!(p.close, 3);
        assert_eq!((p.nan_a, p.nan_b, p.inf_a, p.inf_b), (1, 2, 1, 1));
        assert_eq!(p.sum_d2, 0.5);
    }

    #[test]
    fn merge_is_order_stable() {
        let k = kernel();
        let a: Vec<f64> = (0..100).map(|i| i as f64).collect();
        let b: Vec<f64> = a.iter().map(|x| x + if (*x as u32).is_multiple_of(7) { 1.0 } else { 0.0 }).collect();
        let mut whole = Partial::default();
        accumulate::<OrdF32>(&k, &a, &b, 0, &mut whole);
        let mut parts = Partial::default();
        for c in 0..4 {
            let mut p = Partial::default();
            accumulate::<OrdF32>(&k, &a[c * 25..(c + 1) * 25], &b[c * 25..(c + 1) * 25], c as u64 * 25, &mut p);
            parts.merge(&p);
        }
        assert_eq!(whole.max_abs_at, 0);
        assert_eq!(parts.max_abs_at, 0);
        assert_eq!(whole.sum_d2, parts.sum_d2);
        assert_eq!(whole.close, parts.close);
    }

    #[test]
    fn the_vectorized_path_agrees_with_the_general_one() {
        let k = kernel();
        // Zeros in A (some with b != 0), exact matches, small errors; 1003 elements (a remainder of 3 lanes).
        let a: Vec<f64> = (0..1003).map(|i| f64::from(((i * 7919) % 1000) as f32 / 300.0 - 1.5)).collect();
        let b: Vec<f64> = a
            .iter()
            .enumerate()
            .map(|(i, x)| x + (i % 13) as f64 * 1e-6 - if i % 101 == 0 { 0.25 } else { 0.0 })
            .collect();
        let mut f = Partial::default();
        assert!(accumulate_finite::<OrdF32>(&k, &a, &b, 5, &mut f));
        let mut g = Partial::default();
        accumulate_any::<OrdF32>(&k, &a, &b, 5, &mut g);
        assert_eq!(
            (f.finite, f.max_abs, f.max_abs_at, f.a_at, f.b_at),
            (g.finite, g.max_abs, g.max_abs_at, g.a_at, g.b_at)
        );
        assert_eq!((f.zero_a, f.close, f.max_ulp), (g.zero_a, g.close, g.max_ulp));
        assert!(f.zero_a > 0 && f.close > 0 && f.close < 1003);
        assert!((f.max_rel - g.max_rel).abs() <= 1e-15 * g.max_rel);
        for (x, y) in [
            (f.sum_abs, g.sum_abs),
            (f.sum_d2, g.sum_d2),
            (f.sum_a2, g.sum_a2),
            (f.sum_b2, g.sum_b2),
            (f.sum_ab, g.sum_ab),
        ] {
            assert!((x - y).abs() <= 1e-12 * y.abs(), "{x} vs {y}");
        }
        // A NaN sends the block to the general path, with `p` untouched.
        let mut nan_b = b.clone();
        nan_b[500] = f64::NAN;
        let mut h = Partial::default();
        assert!(!accumulate_finite::<OrdF32>(&k, &a, &nan_b, 0, &mut h));
        assert_eq!((h.finite, h.close), (0, 0));
    }
}
