//! Special functions: the complementary error function and the normal tail built on it; ln Γ, the regularised
//! incomplete beta function and Student's t (p-values, quantiles) built on them, shared by `runs` and `shift`.

/// √π.
const SQRT_PI: f64 = 1.772_453_850_905_516;

/// Where [`erfc`] switches from the series to the continued fraction.
const SWITCH: f64 = 2.5;

/// The complementary error function, erfc(x) = 1 − erf(x), with relative error near 1e-13 or better.
///
/// Two expansions, each used where it converges quickly and without cancellation:
/// - `0 ≤ x < 2.5`: erf(x) = (2/√π)·e^(−x²)·Σₙ (2x²)ⁿ·x / (1·3·5···(2n+1)), a series of positive terms;
///   erfc = 1 − erf. At x = 2.5 erfc is 4e-4, so the subtraction costs at most four digits.
/// - `x ≥ 2.5`: the Laplace continued fraction erfc(x) = e^(−x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …)))),
///   evaluated bottom-up from a fixed depth.
/// - `x < 0`: erfc(x) = 2 − erfc(−x).
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < SWITCH {
        return 1.0 - erf_series(x);
    }
    if x > 27.3 {
        // e^(−x²) underflows below the smallest subnormal.
        return 0.0;
    }
    let mut t = x;
    for k in (1..=60).rev() {
        t = x + (f64::from(k) * 0.5) / t;
    }
    (-x * x).exp() / (SQRT_PI * t)
}

/// erf(x) for 0 ≤ x < ~3 by the positive-term series above.
fn erf_series(x: f64) -> f64 {
    let two_x2 = 2.0 * x * x;
    let mut term = x;
    let mut sum = x;
    let mut n = 0.0_f64;
    loop {
        n += 1.0;
        term *= two_x2 / (2.0 * n + 1.0);
        sum += term;
        if term <= sum * 1e-17 {
            break;
        }
    }
    2.0 / SQRT_PI * (-x * x).exp() * sum
}

/// Upper tail of the standard normal, P(Z > z) = erfc(z/√2)/2.
pub fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// Two-sided normal p-value, P(|Z| ≥ |z|), capped at 1.
pub fn normal_two_sided_p(z: f64) -> f64 {
    erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0)
}

// ---- Student's t (shared by `runs` and `shift`)

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms; relative error ~1e-15).
pub fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1 − x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).abs().ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    for (i, &c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Continued fraction of the incomplete beta function (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularised incomplete beta function I_x(a, b).
pub fn beta_inc(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_bt = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let bt = ln_bt.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        bt * beta_cf(a, b, x) / a
    } else {
        1.0 - bt * beta_cf(b, a, 1.0 - x) / b
    }
}

/// Two-sided p-value of Student's t with `df` degrees of freedom, P(|T| ≥ |t|).
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return 1.0;
    }
    if t.is_infinite() {
        return 0.0;
    }
    beta_inc(0.5 * df, 0.5, df / (df + t * t)).clamp(0.0, 1.0)
}

/// The t > 0 with `t_two_sided_p(t, df) == p` (bisection), for 0 < p < 1.
pub fn t_quantile_two_sided(p: f64, df: f64) -> f64 {
    if df.is_nan() || df <= 0.0 {
        return f64::INFINITY;
    }
    quantile_of_two_sided(p, |t| t_two_sided_p(t, df))
}

/// The x > 0 where a two-sided p-value that falls as x grows, `p_of(x)`, equals `p` (bisection; the upper end
/// doubled from 1 until it is past the answer), for 0 < p < 1: ∞ for p ≤ 0 or NaN, 0 for p ≥ 1.
fn quantile_of_two_sided(p: f64, p_of: impl Fn(f64) -> f64) -> f64 {
    if p.is_nan() || p <= 0.0 {
        return f64::INFINITY;
    }
    if p >= 1.0 {
        return 0.0;
    }
    let mut hi = 1.0;
    while p_of(hi) > p && hi < 1e12 {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if p_of(mid) > p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-12 * hi {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// The z > 0 with `normal_two_sided_p(z) == p` (bisection), for 0 < p < 1: 1.959964 for p = 0.05.
pub fn normal_quantile_two_sided(p: f64) -> f64 {
    quantile_of_two_sided(p, normal_two_sided_p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_quantiles_match_reference() {
        // scipy.stats.norm.isf(p / 2)
        for (p, z) in [(0.05, 1.959_963_984_540_054), (0.01, 2.575_829_303_548_900_4), (0.5, 0.674_489_750_196_081_7)] {
            assert!((normal_quantile_two_sided(p) - z).abs() < 1e-7, "{p}");
        }
    }

    /// Reference values from SciPy 1.16.3 `scipy.special.erfc` (Cephes), printed with `repr`.
    #[test]
    fn erfc_matches_reference() {
        let cases = [
            (0.0, 1.0),
            (0.1, 0.887_537_083_981_715_2),
            (0.5, 0.479_500_122_186_953_5),
            (1.0, 0.157_299_207_050_285_16),
            (1.5, 0.033_894_853_524_689_27),
            (2.0, 0.004_677_734_981_047_266),
            (2.4, 0.000_688_513_896_645_078_9),
            (2.6, 0.000_236_034_416_529_349),
            (3.0, 2.209_049_699_858_544_5e-5),
            (4.0, 1.541_725_790_028_002e-8),
            (5.0, 1.537_459_794_428_034_7e-12),
            (10.0, 2.088_487_583_762_544_6e-45),
            (20.0, 5.395_865_611_607_901e-176),
            (26.0, 5.663_192_408_856_145e-296),
            (-1.0, 1.842_700_792_949_714_8),
        ];
        for (x, want) in cases {
            let got = erfc(x);
            let rel = ((got - want) / want).abs();
            assert!(rel < 1e-12, "erfc({x}) = {got}, want {want} (rel err {rel:e})");
        }
        assert_eq!(erfc(40.0), 0.0);
        assert_eq!(erfc(-40.0), 2.0);
        assert!(erfc(f64::NAN).is_nan());
    }

    #[test]
    fn normal_tails() {
        // P(|Z| > 1.959963984540054) = 0.05 exactly (the 97.5 % quantile).
        assert!((normal_two_sided_p(1.959_963_984_540_054) - 0.05).abs() < 1e-14);
        assert!((normal_sf(0.0) - 0.5).abs() < 1e-16);
        assert_eq!(normal_two_sided_p(0.0), 1.0);
    }
}
