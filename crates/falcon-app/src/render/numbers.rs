//! Number formatting every renderer (and front end) shares: the text tables, Markdown, the MCP's and the CLI's
//! lines, the dashboard and the charts all write a measured number through this module, so one value reads the
//! same everywhere. JSON never goes through it: it keeps the exact values.
//!
//! The rules, for a person reading a table:
//! - **At most 4 significant figures** ([`num`]), rounded half away from zero, trailing zeros after the decimal
//!   point dropped (`59.773888` → `59.77`, `2.0` → `2`, `0.10` → `0.1`). Rounding happens on the decimal digits,
//!   so a carry moves the point: `999.95` → `1000`, `9999.6` → `10 k`.
//! - **SI prefixes from 10 000 up** (`k M G T P E`, a space before the prefix): `6803.96` → `6804`, `12345` →
//!   `12.35 k`, `12138306560` → `12.14 G`. From `1e21` up, scientific (`1.235e21`).
//! - **Small numbers** are plain decimals down to `1e-4` (`0.000123`, `0.01235`), scientific below it
//!   (`1.235e-5`): a prefix like `µ` would read as a unit.
//! - Zero is `0`; negative numbers keep an ASCII `-`; [`signed`] adds `+` to positive ones.
//! - NaN, infinities and absent values are `—` ([`NONE`]).
//! - Percents ([`percent`]) also keep at most 2 decimals (`59.77 %`, `+9.97 %`, `1235 %`), and 2 significant
//!   figures below 0.01 (`0.0012 %`).
//! - Durations ([`duration_s`], [`duration_us`]) pick `ns`, `µs`, `ms`, `s` by magnitude (`849.3 ms`), `h` from
//!   10 000 s; a table column picks one unit for all its cells ([`TimeUnit`]) and names it in its header.
//! - Bytes ([`bytes`]) use binary prefixes, 4 significant figures: `512 B`, `1.5 GiB`, `1023 MiB`.
//! - p-values ([`p_value`]): 3 significant figures, scientific with 2 below 0.001 (`0.0123`, `1.6e-4`).
//! - Config values in a diff ([`config_values`]): fractional numbers by [`num`] unless two different values
//!   would then read the same (then exact); integers, strings and structures exact.
//! - Charts and dashboard cards ([`si`]): 3 significant figures, SI prefixes from 1000 (`1.53 k`).
//!
//! Ids, counts (occurrences, steps, runs), ports and exit codes are not measurements: they are written whole
//! with `to_string()`, never through this module.

/// What an absent or non-finite number reads as.
pub const NONE: &str = "—";

/// The SI prefixes [`num`] uses, one per power of 1000 from 10³.
const PREFIXES: [&str; 6] = ["k", "M", "G", "T", "P", "E"];

/// `a` (finite, > 0) rounded to `n` significant digits: the digits as an integer of exactly `n` digits and the
/// decimal exponent of the first one (`a ≈ q × 10^(e − n + 1)`). A carry (`9999.6` at 4 digits) moves `e`.
fn decompose(a: f64, n: u32) -> (u64, i32) {
    let n = n.clamp(1, 15);
    let (lo, hi) = (10u64.pow(n - 1), 10u64.pow(n));
    let scaled = |e: i32| {
        let shift = n as i32 - 1 - e;
        // Multiply or divide by an exact power of ten (exact up to 10^22), so `0.1` scales to `1000` exactly.
        let q = match shift {
            // Subnormal inputs: two steps, so the power of ten never overflows.
            s if s > 300 => a * 1e300 * 10f64.powi(s - 300),
            s if s >= 0 => a * 10f64.powi(s),
            s => a / 10f64.powi(-s),
        };
        q.round()
    };
    let mut e = a.log10().floor() as i32;
    let mut q = scaled(e);
    if q < lo as f64 {
        e -= 1;
        q = scaled(e);
    }
    if q >= hi as f64 {
        e += 1;
        q = scaled(e);
    }
    (q.clamp(lo as f64, (hi - 1) as f64) as u64, e)
}

/// `a` (finite, ≥ 0) rounded to 4 significant digits, as a number.
fn rounded(a: f64) -> f64 {
    if a == 0.0 || !a.is_finite() {
        return a;
    }
    let (q, e) = decompose(a, 4);
    let shift = e - 3;
    if shift >= 0 {
        q as f64 * 10f64.powi(shift)
    } else {
        q as f64 / 10f64.powi(-shift)
    }
}

/// The digits `q` (of `n` digits, the first at exponent `e`) as a plain decimal, trailing zeros after the point
/// dropped.
fn place_point(q: u64, n: u32, e: i32) -> String {
    let digits = format!("{q:0width$}", width = n as usize);
    let n = n as i32;
    let text = if e >= n - 1 {
        format!("{digits}{}", "0".repeat((e - n + 1) as usize))
    } else if e >= 0 {
        let (int, frac) = digits.split_at(e as usize + 1);
        format!("{int}.{frac}")
    } else {
        format!("0.{}{digits}", "0".repeat((-e - 1) as usize))
    };
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// `x` with at most `digits` significant digits; an SI prefix once `|x|` (rounded) reaches `10^prefix_from`,
/// plain decimals down to `10^-4`, scientific outside those; `—` when not finite.
fn format_with(x: f64, digits: u32, prefix_from: i32) -> String {
    if !x.is_finite() {
        return NONE.to_string();
    }
    if x == 0.0 {
        return "0".to_string();
    }
    let sign = if x < 0.0 { "-" } else { "" };
    let (q, e) = decompose(x.abs(), digits);
    let body = if e >= prefix_from && e < 3 * (PREFIXES.len() as i32 + 1) {
        let k = e / 3;
        format!("{} {}", place_point(q, digits, e - 3 * k), PREFIXES[k as usize - 1])
    } else if (-4..prefix_from).contains(&e) {
        place_point(q, digits, e)
    } else {
        format!("{}e{e}", place_point(q, digits, 0))
    };
    format!("{sign}{body}")
}

/// A measured number for a person: at most 4 significant figures, SI prefixes from 10 000 (the module's rules).
pub fn num(x: f64) -> String {
    format_with(x, 4, 4)
}

/// [`num`] of an optional value (`—` when absent).
pub fn num_opt(x: Option<f64>) -> String {
    x.map_or_else(|| NONE.to_string(), num)
}

/// [`num`] with a `+` on a positive value (a change): `+1.5 k`, `-0.25`, `0`.
pub fn signed(x: f64) -> String {
    if x.is_finite() && x > 0.0 {
        format!("+{}", num(x))
    } else {
        num(x)
    }
}

/// A number with three significant digits and an SI prefix from 1000 (`918 T`, `1.53 k`, `12.5`): the charts'
/// labels and the dashboard's cards, where space is short. `–` (an en dash, as the charts write it) when not
/// finite.
pub fn si(x: f64) -> String {
    if x.is_finite() {
        format_with(x, 3, 3)
    } else {
        "–".to_string()
    }
}

/// A percent's number: at most 4 significant figures and at most 2 decimals (`59.77`, `9.97`, `1235`); below
/// 0.01, 2 significant figures (`0.0012`), so a small share never reads `0`.
fn percent_number(p: f64) -> String {
    if !p.is_finite() {
        return NONE.to_string();
    }
    if p == 0.0 {
        return "0".to_string();
    }
    let e = p.abs().log10().floor() as i32;
    let digits = if e < -2 { 2 } else { (e + 3).clamp(1, 4) as u32 };
    format_with(p, digits, 4)
}

/// A percent given in percent units: `59.77 %`, `9.97 %`, `0.0012 %` ([`percent_number`]); `—` when not finite.
pub fn percent(p: f64) -> String {
    if p.is_finite() {
        format!("{} %", percent_number(p))
    } else {
        NONE.to_string()
    }
}

/// A change in percent units with its sign: `+2.5 %`, `-12.34 %`, `0 %`.
pub fn signed_percent(p: f64) -> String {
    match p {
        p if p.is_finite() && p > 0.0 => format!("+{}", percent(p)),
        p => percent(p),
    }
}

/// A fraction (`0.5977`) as a percent (`59.77 %`); `—` when absent or not finite.
pub fn fraction_percent(f: Option<f64>) -> String {
    f.map_or_else(|| NONE.to_string(), |f| percent(f * 100.0))
}

/// A relative change (`0.025`) as a signed percent (`+2.5 %`); `—` when absent or not finite.
pub fn relative_percent(r: Option<f64>) -> String {
    r.map_or_else(|| NONE.to_string(), |r| signed_percent(r * 100.0))
}

/// A p-value at a precision a reader can use: 3 significant figures (`0.0123`, `0.5`, `1`), scientific with 2
/// below 0.001 (`1.6e-4`); `—` when absent or not finite.
pub fn p_value(p: Option<f64>) -> String {
    match p.filter(|p| p.is_finite()) {
        None => NONE.to_string(),
        Some(p) if p != 0.0 && p.abs() < 1e-3 => format!("{p:.1e}"),
        Some(p) => format_with(p, 3, 4),
    }
}

/// A time unit a column (or a single value) is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Ns,
    Us,
    Ms,
    S,
    H,
}

impl TimeUnit {
    /// The unit's symbol, as a header names it (`µs`).
    pub fn symbol(self) -> &'static str {
        match self {
            TimeUnit::Ns => "ns",
            TimeUnit::Us => "µs",
            TimeUnit::Ms => "ms",
            TimeUnit::S => "s",
            TimeUnit::H => "h",
        }
    }

    /// Microseconds in one of the unit.
    pub fn us(self) -> f64 {
        match self {
            TimeUnit::Ns => 1e-3,
            TimeUnit::Us => 1.0,
            TimeUnit::Ms => 1e3,
            TimeUnit::S => 1e6,
            TimeUnit::H => 3.6e9,
        }
    }

    /// The unit a time of `us` microseconds reads best in: the largest in which it is at least 1 (`h` from
    /// 10 000 s); `µs` for zero or a non-finite time.
    pub fn of_us(us: f64) -> TimeUnit {
        let a = us.abs();
        match a {
            a if !a.is_finite() || a == 0.0 => TimeUnit::Us,
            a if a >= 1e10 => TimeUnit::H,
            a if a >= 1e6 => TimeUnit::S,
            a if a >= 1e3 => TimeUnit::Ms,
            a if a >= 1.0 => TimeUnit::Us,
            _ => TimeUnit::Ns,
        }
    }

    /// The unit of a column of times in microseconds: the one its largest finite value reads best in, so no
    /// cell of the column needs a prefix.
    pub fn for_column_us(values: impl IntoIterator<Item = f64>) -> TimeUnit {
        let max = values.into_iter().filter(|v| v.is_finite()).map(f64::abs).fold(0.0, f64::max);
        TimeUnit::of_us(max)
    }

    /// `us` microseconds in this unit, as a bare number (the unit is in the column's header).
    pub fn fmt(self, us: f64) -> String {
        num(us / self.us())
    }

    /// A change of `us` microseconds in this unit, signed.
    pub fn fmt_signed(self, us: f64) -> String {
        signed(us / self.us())
    }
}

/// A time given in microseconds, with the unit its magnitude picks: `849.3 ms`, `12 µs`, `1.5 s`.
pub fn duration_us(us: f64) -> String {
    if !us.is_finite() {
        return NONE.to_string();
    }
    let unit = TimeUnit::of_us(us);
    // Rounding may carry into the next unit (999.96 µs → 1000 µs): write it in that one.
    let unit = match (unit, num(us / unit.us()).trim_start_matches('-')) {
        (TimeUnit::Ns, "1000") => TimeUnit::Us,
        (TimeUnit::Us, "1000") => TimeUnit::Ms,
        (TimeUnit::Ms, "1000") => TimeUnit::S,
        (TimeUnit::S, "10 k") => TimeUnit::H,
        (u, _) => u,
    };
    format!("{} {}", unit.fmt(us), unit.symbol())
}

/// A time given in seconds, as [`duration_us`] writes it.
pub fn duration_s(s: f64) -> String {
    duration_us(s * 1e6)
}

/// A time given in milliseconds, as [`duration_us`] writes it.
pub fn duration_ms(ms: f64) -> String {
    duration_us(ms * 1e3)
}

/// A byte count in binary units, at most 4 significant figures: `512 B`, `768 KiB`, `1.5 GiB`, `1023 MiB`; a
/// count that rounds to 1024 of a unit moves to the next one. `—` when not finite.
pub fn bytes(b: f64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if !b.is_finite() {
        return NONE.to_string();
    }
    let sign = if b < 0.0 { "-" } else { "" };
    let mut value = b.abs();
    let mut unit = 0;
    // Up a unit while the value would read 1024 or more of this one (`1023.6 KiB` rounds to 1024: `1 MiB`).
    while unit + 1 < UNITS.len() && rounded(value) >= 1024.0 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{sign}{} {}", num(value), UNITS[unit])
}

/// A change in bytes with its sign: `+1.5 MiB`, `-512 B`, `0 B`.
pub fn signed_bytes(b: f64) -> String {
    if b.is_finite() && b > 0.0 {
        format!("+{}", bytes(b))
    } else {
        bytes(b)
    }
}

/// A byte count in binary units ([`bytes`]): `512 B`, `1.5 GiB`.
pub fn human_bytes(count: u64) -> String {
    bytes(count as f64)
}

/// `x` with `digits` significant digits (no exponent, no prefix: `12138306560` stays whole); `—` when absent or
/// not finite. A table writes [`num`]; this is for a value that must keep its every integer digit.
pub fn significant(x: Option<f64>, digits: i32) -> String {
    match x.filter(|x| x.is_finite()) {
        None => NONE.to_string(),
        Some(0.0) => "0".to_string(),
        Some(x) => {
            let magnitude = x.abs().log10().floor() as i32;
            let decimals = (digits - 1 - magnitude).clamp(0, 9) as usize;
            format!("{x:.decimals$}")
        }
    }
}

/// Config values for a table of differences (`exp diff`, a report's config diff): a value that is a
/// fractional number goes through [`num`], unless that would make two different values read the same, when
/// every value is written exactly; integers (batch sizes, counts), strings and structures are compact JSON,
/// whole. Absent values are `(absent)`.
pub fn config_values(values: &[Option<&serde_json::Value>]) -> Vec<String> {
    let exact: Vec<String> =
        values.iter().map(|v| v.map_or_else(|| "(absent)".to_string(), falcon_core::spec::canonical_json)).collect();
    let fractional = |v: &Option<&serde_json::Value>| {
        v.and_then(|v| v.as_f64().filter(|_| v.is_f64())).filter(|x| x.is_finite() && x.fract() != 0.0)
    };
    let rounded: Vec<String> =
        values.iter().zip(&exact).map(|(v, e)| fractional(v).map_or_else(|| e.clone(), num)).collect();
    // Two values that differ exactly but read the same rounded: both exact.
    let collides = (0..values.len()).any(|i| (0..i).any(|j| rounded[i] == rounded[j] && exact[i] != exact[j]));
    if collides {
        exact
    } else {
        rounded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_significant_figures_and_si_prefixes_from_ten_thousand() {
        assert_eq!(num(6803.958855), "6804");
        assert_eq!(num(12138306560.0), "12.14 G");
        assert_eq!(num(59.773888), "59.77");
        assert_eq!(num(12345.0), "12.35 k");
        assert_eq!(num(123456.0), "123.5 k");
        assert_eq!(num(1_000_000.0), "1 M");
        assert_eq!(num(918e12), "918 T");
        assert_eq!(num(1.5e18), "1.5 E");
        assert_eq!(num(1.23456e21), "1.235e21");
        assert_eq!(num(2.0), "2");
        assert_eq!(num(0.1), "0.1");
        assert_eq!(num(1.0), "1");
        assert_eq!(num(10.0), "10");
        assert_eq!(num(1000.0), "1000");
        assert_eq!(num(9999.0), "9999");
    }

    #[test]
    fn small_numbers_are_decimals_down_to_1e_minus_4_then_scientific() {
        assert_eq!(num(0.000123), "0.000123");
        assert_eq!(num(0.0123456), "0.01235");
        assert_eq!(num(0.0001), "0.0001");
        assert_eq!(num(0.00001234567), "1.235e-5");
        assert_eq!(num(1.5e-7), "1.5e-7");
        assert_eq!(num(0.99996), "1");
        assert_eq!(num(1e-310), "1e-310");
        assert_eq!(num(f64::MAX), "1.798e308");
    }

    #[test]
    fn signs_zero_and_non_finite() {
        assert_eq!(num(-12138306560.0), "-12.14 G");
        assert_eq!(num(-0.5), "-0.5");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(-0.0), "0");
        assert_eq!(num(f64::NAN), NONE);
        assert_eq!(num(f64::INFINITY), NONE);
        assert_eq!(num(f64::NEG_INFINITY), NONE);
        assert_eq!(num_opt(None), NONE);
        assert_eq!(signed(1500.5), "+1501");
        assert_eq!(signed(-1500.5), "-1501");
        assert_eq!(signed(0.0), "0");
        assert_eq!(signed(f64::NAN), NONE);
    }

    #[test]
    fn a_carry_moves_the_point_or_the_prefix() {
        assert_eq!(num(999.95), "1000");
        assert_eq!(num(999.94), "999.9");
        assert_eq!(num(9999.4), "9999");
        assert_eq!(num(9999.6), "10 k");
        assert_eq!(num(99_995.0), "100 k");
        assert_eq!(num(999_950.0), "1 M");
        assert_eq!(num(9.9995), "10");
        assert_eq!(num(0.00099995), "0.001");
        assert_eq!(num(0.000099996), "0.0001");
        assert_eq!(num(-9999.6), "-10 k");
    }

    #[test]
    fn si_keeps_three_digits_from_a_thousand() {
        assert_eq!(si(918_000.0 * 1e9), "918 T");
        assert_eq!(si(1530.0), "1.53 k");
        assert_eq!(si(12.5), "12.5");
        assert_eq!(si(156.25), "156");
        assert_eq!(si(999.6), "1 k");
        assert_eq!(si(0.0), "0");
        assert_eq!(si(f64::NAN), "–");
    }

    #[test]
    fn percents() {
        assert_eq!(percent(59.773888), "59.77 %");
        assert_eq!(percent(100.0), "100 %");
        assert_eq!(percent(f64::NAN), NONE);
        assert_eq!(signed_percent(2.5), "+2.5 %");
        assert_eq!(signed_percent(-12.3456), "-12.35 %");
        assert_eq!(fraction_percent(Some(0.59773888)), "59.77 %");
        assert_eq!(fraction_percent(None), NONE);
        assert_eq!(relative_percent(Some(0.0997)), "+9.97 %");
        assert_eq!(relative_percent(Some(0.099684)), "+9.97 %");
        assert_eq!(percent(0.123456), "0.12 %");
        assert_eq!(percent(0.00123456), "0.0012 %");
        assert_eq!(percent(9.996), "10 %");
        assert_eq!(percent(99.996), "100 %");
        assert_eq!(signed_percent(-0.5), "-0.5 %");
        assert_eq!(relative_percent(Some(12.3456)), "+1235 %");
        assert_eq!(relative_percent(Some(0.0)), "0 %");
    }

    #[test]
    fn p_values() {
        assert_eq!(p_value(Some(0.0123456)), "0.0123");
        assert_eq!(p_value(Some(0.5)), "0.5");
        assert_eq!(p_value(Some(1.0)), "1");
        assert_eq!(p_value(Some(0.0)), "0");
        assert_eq!(p_value(Some(1.6e-4)), "1.6e-4");
        assert_eq!(p_value(Some(0.000999)), "1.0e-3");
        assert_eq!(p_value(None), NONE);
    }

    #[test]
    fn durations_pick_their_unit() {
        assert_eq!(duration_us(849300.444), "849.3 ms");
        assert_eq!(duration_us(12.0), "12 µs");
        assert_eq!(duration_us(0.25), "250 ns");
        assert_eq!(duration_us(1.5e6), "1.5 s");
        assert_eq!(duration_us(999.96), "1 ms");
        assert_eq!(duration_us(-2500.0), "-2.5 ms");
        assert_eq!(duration_us(0.0), "0 µs");
        assert_eq!(duration_s(36000.0), "10 h");
        assert_eq!(duration_s(9999.0), "9999 s");
        assert_eq!(duration_s(9999.6), "2.778 h");
        assert_eq!(duration_ms(21.4114), "21.41 ms");
        assert_eq!(duration_us(f64::NAN), NONE);
    }

    #[test]
    fn a_column_of_times_shares_the_unit_of_its_largest() {
        let unit = TimeUnit::for_column_us([849300.444, 12.5, f64::NAN]);
        assert_eq!(unit, TimeUnit::Ms);
        assert_eq!(unit.symbol(), "ms");
        assert_eq!(unit.fmt(849300.444), "849.3");
        assert_eq!(unit.fmt(12.5), "0.0125");
        assert_eq!(unit.fmt_signed(1234.5), "+1.235");
        assert_eq!(TimeUnit::for_column_us([]), TimeUnit::Us);
        assert_eq!(TimeUnit::for_column_us([0.5]), TimeUnit::Ns);
    }

    #[test]
    fn bytes_in_binary_units() {
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(1023.0), "1023 B");
        assert_eq!(bytes(1024.0), "1 KiB");
        assert_eq!(bytes(768.0 * 1024.0), "768 KiB");
        assert_eq!(bytes(1.5 * (1u64 << 30) as f64), "1.5 GiB");
        assert_eq!(bytes(1023.5 * (1u64 << 20) as f64), "0.9995 GiB");
        assert_eq!(bytes(1023.6 * 1024.0), "0.9996 MiB");
        assert_eq!(bytes(1023.4 * (1u64 << 20) as f64), "1023 MiB");
        assert_eq!(bytes(-2048.0), "-2 KiB");
        assert_eq!(bytes(0.0), "0 B");
        assert_eq!(bytes(f64::NAN), NONE);
        assert_eq!(human_bytes(427_000_000), "407.2 MiB");
        assert_eq!(signed_bytes(1536.0), "+1.5 KiB");
        assert_eq!(signed_bytes(-1536.0), "-1.5 KiB");
    }

    #[test]
    fn significant_keeps_integer_digits() {
        assert_eq!(significant(Some(2.28712), 4), "2.287");
        assert_eq!(significant(Some(1234.5), 4), "1234");
        assert_eq!(significant(Some(12138306560.0), 4), "12138306560");
        assert_eq!(significant(None, 4), NONE);
    }

    #[test]
    fn config_values_round_unless_two_would_read_the_same() {
        let (a, b) = (serde_json::json!(0.000312345), serde_json::json!(0.0006));
        assert_eq!(config_values(&[Some(&a), Some(&b)]), ["0.0003123", "0.0006"]);
        let (a, b) = (serde_json::json!(0.1000001), serde_json::json!(0.1));
        assert_eq!(config_values(&[Some(&a), Some(&b)]), ["0.1000001", "0.1"]);
        let (a, b) = (serde_json::json!(32768), serde_json::json!("x"));
        assert_eq!(config_values(&[Some(&a), Some(&b), None]), ["32768", "\"x\"", "(absent)"]);
    }
}
