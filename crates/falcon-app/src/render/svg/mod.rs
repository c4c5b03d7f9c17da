//! Inline SVG charts for the HTML reports, drawn by hand: a log-log roofline with A→B arrows
//! ([`roofline()`]), strip/box plots of samples on a shared axis ([`strip_box`]), horizontal signed bars
//! ([`hbars`]), line charts over steps or runs ([`line_chart`]) and dot columns over commits ([`dot_chart`]). No
//! scripts, no external references (the `xmlns` namespace URI is only a name); every coordinate goes through
//! [`num`], so NaN or infinity in the data never reaches an attribute. This module holds what the charts share:
//! colours, elements, scales and number labels.

use super::markup::escape;

mod bars;
mod distribution;
mod dots;
mod lines;
mod roofline;

pub use crate::series::downsample;
pub use bars::{hbars, Bar};
pub use distribution::{strip_box, Series};
pub use dots::{dot_chart, DotChart, DotColumn};
pub use lines::{line_chart, Line, LineChart, Reference};
pub use roofline::{roofline, Move, Roof};

/// The SVG namespace (an identifier, never fetched).
pub const SVG_NS: &str = "http://www.w3.org/2000/svg";

/// Colours shared with the page's stylesheet.
pub const RED: &str = "#d6336c";
pub const GREEN: &str = "#2b8a3e";
pub const GREY: &str = "#868e96";
pub const BLUE: &str = "#1c7ed6";
pub const DARK: &str = "#343a40";
pub const PURPLE: &str = "#ae3ec9";

/// A coordinate or length for an attribute: at most one decimal, `0` for NaN and infinities.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "0".to_string();
    }
    let r = (x * 10.0).round() / 10.0;
    if r == r.trunc() && r.abs() < 1e15 {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// The opening `<svg>` tag of a `w` × `h` chart (scales down with the page) with an accessible label.
pub fn open(w: f64, h: f64, label: &str) -> String {
    format!(
        r#"<svg xmlns="{SVG_NS}" class="chart" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{l}" font-family="system-ui, 'DejaVu Sans', Arial, sans-serif" font-size="12" fill="{DARK}">"#,
        w = num(w),
        h = num(h),
        l = escape(label)
    )
}

/// A `<text>` element (text escaped); `extra` is raw attributes.
pub fn text(x: f64, y: f64, anchor: &str, extra: &str, s: &str) -> String {
    format!(r#"<text x="{}" y="{}" text-anchor="{anchor}" {extra}>{}</text>"#, num(x), num(y), escape(s))
}

fn line(x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str, extra: &str) -> String {
    format!(r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{stroke}" {extra}/>"#, num(x1), num(y1), num(x2), num(y2))
}

/// `s` cut to `max` characters with an ellipsis.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// A linear scale from a data interval onto a pixel interval.
#[derive(Debug, Clone, Copy)]
pub struct Linear {
    pub d0: f64,
    pub d1: f64,
    pub r0: f64,
    pub r1: f64,
}

impl Linear {
    pub fn map(&self, v: f64) -> f64 {
        let span = self.d1 - self.d0;
        if !(span.is_finite() && span != 0.0 && v.is_finite()) {
            return self.r0;
        }
        self.r0 + (v - self.d0) / span * (self.r1 - self.r0)
    }

    /// About `n` round tick values inside the domain.
    pub fn ticks(&self, n: usize) -> Vec<f64> {
        let (lo, hi) = (self.d0.min(self.d1), self.d0.max(self.d1));
        let span = hi - lo;
        if !(span.is_finite() && span > 0.0) || n == 0 {
            return if lo.is_finite() { vec![lo] } else { Vec::new() };
        }
        let raw = span / n as f64;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
        let first = (lo / step).ceil() as i64;
        let last = (hi / step).floor() as i64;
        (first..=last).take(50).map(|i| i as f64 * step).collect()
    }
}

/// A "nice" domain around finite `values` (padded 5 %; a single value gets a ±5 % or ±1 window).
pub fn padded_domain(values: impl Iterator<Item = f64>, include_zero: bool) -> Option<(f64, f64)> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return None;
    }
    if include_zero {
        lo = lo.min(0.0);
        hi = hi.max(0.0);
    }
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        let pad = if hi.abs() > 0.0 { hi.abs() * 0.05 } else { 1.0 };
        return Some((lo - pad, hi + pad));
    }
    let pad = (hi - lo) * 0.05;
    let lo2 = if include_zero && lo == 0.0 { 0.0 } else { lo - pad };
    let hi2 = if include_zero && hi == 0.0 { 0.0 } else { hi + pad };
    Some((lo2, hi2))
}

/// A log10 scale over whole decades `10^e0 ..= 10^e1`.
#[derive(Debug, Clone, Copy)]
pub struct Log {
    pub e0: i32,
    pub e1: i32,
    pub r0: f64,
    pub r1: f64,
}

impl Log {
    /// The decades around the positive finite `values` (at least one, at most `max_decades`, trimming the
    /// low end).
    pub fn around(values: impl Iterator<Item = f64>, max_decades: i32, r0: f64, r1: f64) -> Log {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite() && *v > 0.0) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            return Log { e0: 0, e1: 1, r0, r1 };
        }
        let e1 = (hi.log10() - 1e-9).ceil().clamp(-300.0, 300.0) as i32;
        let mut e0 = (lo.log10() + 1e-9).floor().clamp(-300.0, 300.0) as i32;
        if e0 >= e1 {
            e0 = e1 - 1;
        }
        Log { e0: e0.max(e1 - max_decades.max(1)), e1, r0, r1 }
    }

    pub fn lo(&self) -> f64 {
        10f64.powi(self.e0)
    }

    pub fn hi(&self) -> f64 {
        10f64.powi(self.e1)
    }

    /// Pixel position of `v` (clamped into the domain; non-positive values sit at the low end).
    pub fn map(&self, v: f64) -> f64 {
        let l = if v.is_finite() && v > 0.0 {
            v.log10().clamp(f64::from(self.e0), f64::from(self.e1))
        } else {
            f64::from(self.e0)
        };
        self.r0 + (l - f64::from(self.e0)) / f64::from(self.e1 - self.e0) * (self.r1 - self.r0)
    }
}

/// A decade's tick label: `0.01`, `1`, `100`, `10k`, `1M`, `1e-5`.
pub fn decade_label(e: i32) -> String {
    match e {
        -3..=-1 => format!("{}", 10f64.powi(e)),
        0..=2 => format!("{}", 10i64.pow(e as u32)),
        3..=5 => format!("{}k", 10i64.pow((e - 3) as u32)),
        6..=8 => format!("{}M", 10i64.pow((e - 6) as u32)),
        9..=11 => format!("{}G", 10i64.pow((e - 9) as u32)),
        12..=14 => format!("{}T", 10i64.pow((e - 12) as u32)),
        _ => format!("1e{e}"),
    }
}

/// A number with three significant digits and an SI prefix from 1000 (`918 T`, `1.53 k`, `12.5`): the shared
/// formatter's [`si`](crate::render::numbers::si).
pub use crate::render::numbers::si;

/// A tick value without trailing zeros (`12.5`, `0.004`, `1200`).
pub fn tick_label(v: f64) -> String {
    if !v.is_finite() {
        return "–".to_string();
    }
    let a = v.abs();
    let s = if a >= 1000.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.2e}")
    };
    if s.contains('.') && !s.contains('e') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(si(918_000.0 * 1e9), "918 T");
        assert_eq!(decade_label(-2), "0.01");
        assert_eq!(decade_label(4), "10k");
        assert_eq!(num(f64::NAN), "0");
        assert_eq!(num(-0.04), "0");
    }
}
