//! Inline SVG charts for the HTML reports, drawn by hand: a log-log roofline with A→B arrows, strip/box
//! plots of samples on a shared axis, and horizontal signed bars. No scripts, no external references (the
//! `xmlns` namespace URI is only a name); every coordinate goes through [`num`], so NaN or infinity in the
//! data never reaches an attribute.

use super::compare_html::escape;
use std::fmt::Write;

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
    format!(
        r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{stroke}" {extra}/>"#,
        num(x1),
        num(y1),
        num(x2),
        num(y2)
    )
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
        let l = if v.is_finite() && v > 0.0 { v.log10().clamp(f64::from(self.e0), f64::from(self.e1)) } else { f64::from(self.e0) };
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

/// A number with three significant digits and an SI prefix (`918 T`, `1.53 k`, `12.5`).
pub fn si(v: f64) -> String {
    if !v.is_finite() {
        return "–".to_string();
    }
    let a = v.abs();
    let (d, p) = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(d, _)| a >= *d)
        .unwrap_or((1.0, ""));
    let x = v / d;
    let digits = if x.abs() >= 100.0 { 0 } else if x.abs() >= 10.0 { 1 } else { 2 };
    let s = format!("{x:.digits$}");
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    if p.is_empty() {
        s
    } else {
        format!("{s} {p}")
    }
}

// ---------------------------------------------------------------------------------------------------------
// Roofline

/// One roof: a memory slope up to the ridge point, then flat at the compute peak.
#[derive(Debug, Clone)]
pub struct Roof {
    pub label: String,
    /// GFLOP/s.
    pub peak_gflops: f64,
    /// GB/s (10⁹ bytes), so that FLOP/byte × GB/s = GFLOP/s.
    pub bw_gbs: f64,
    pub color: &'static str,
    pub dashed: bool,
}

impl Roof {
    pub fn ridge(&self) -> f64 {
        self.peak_gflops / self.bw_gbs
    }

    fn usable(&self) -> bool {
        self.peak_gflops.is_finite() && self.peak_gflops > 0.0 && self.bw_gbs.is_finite() && self.bw_gbs > 0.0
    }
}

/// One op's move from its A point to its B point (operational intensity FLOP/byte, GFLOP/s).
#[derive(Debug, Clone)]
pub struct Move {
    /// Short key drawn next to the B point (e.g. `3`).
    pub key: String,
    /// Hover text.
    pub title: String,
    pub a: (f64, f64),
    pub b: (f64, f64),
    pub color: &'static str,
    /// Drawn over a wide band (e.g. the op crossed the ridge).
    pub highlight: bool,
}

impl Move {
    /// Both points are positive and finite (placeable on log axes).
    pub fn plottable(&self) -> bool {
        [self.a.0, self.a.1, self.b.0, self.b.1].iter().all(|v| v.is_finite() && *v > 0.0)
    }
}

/// A legend entry: a swatch kind and its text.
#[derive(Debug, Clone)]
pub enum Swatch {
    Line { color: &'static str, dashed: bool },
    Arrow { color: &'static str },
    Band { color: &'static str },
    Dot { color: &'static str, hollow: bool },
}

fn legend(x: f64, y: f64, items: &[(Swatch, String)]) -> String {
    let mut s = String::from(r#"<g class="legend">"#);
    for (i, (sw, label)) in items.iter().enumerate() {
        let yy = y + i as f64 * 20.0;
        let _ = match sw {
            Swatch::Line { color, dashed } => {
                write!(s, "{}", line(x, yy, x + 24.0, yy, color, if *dashed { r#"stroke-width="2" stroke-dasharray="6 4""# } else { r#"stroke-width="2""# }))
            }
            Swatch::Arrow { color } => write!(s, "{}{}", line(x, yy, x + 16.0, yy, color, r#"stroke-width="1.8""#), arrow_head(x + 16.0, yy, 1.0, 0.0, color)),
            Swatch::Band { color } => write!(s, "{}", line(x, yy, x + 24.0, yy, color, r#"stroke-width="8" stroke-opacity="0.3" stroke-linecap="round""#)),
            Swatch::Dot { color, hollow } => write!(
                s,
                r#"<circle cx="{}" cy="{}" r="4" fill="{}" stroke="{color}" stroke-width="1.5"/>"#,
                num(x + 12.0),
                num(yy),
                if *hollow { "white" } else { color }
            ),
        };
        s.push_str(&text(x + 30.0, yy + 4.0, "start", "", label));
    }
    s.push_str("</g>");
    s
}

/// A filled arrowhead at `(x, y)` pointing along the unit vector `(ux, uy)`.
fn arrow_head(x: f64, y: f64, ux: f64, uy: f64, color: &str) -> String {
    let (len, half) = (9.0, 4.0);
    let (bx, by) = (x - ux * len, y - uy * len);
    let (px, py) = (-uy * half, ux * half);
    format!(
        r#"<polygon points="{},{} {},{} {},{}" fill="{color}"/>"#,
        num(x),
        num(y),
        num(bx + px),
        num(by + py),
        num(bx - px),
        num(by - py)
    )
}

/// Distance from `(px, py)` to the segment `(ax, ay)`–`(bx, by)`.
fn seg_dist(px: f64, py: f64, ax: f64, ay: f64, bx: f64, by: f64) -> f64 {
    let (dx, dy) = (bx - ax, by - ay);
    let l2 = dx * dx + dy * dy;
    let t = if l2 > 0.0 { (((px - ax) * dx + (py - ay) * dy) / l2).clamp(0.0, 1.0) } else { 0.0 };
    ((px - ax - t * dx).powi(2) + (py - ay - t * dy).powi(2)).sqrt()
}

/// Places `w` × `h` label boxes next to anchor points without overlapping earlier ones (first free offset
/// of a few candidates; the last candidate when all collide).
struct Placer {
    boxes: Vec<(f64, f64, f64, f64)>,
}

impl Placer {
    fn place(&mut self, x: f64, y: f64, w: f64, h: f64, bounds: (f64, f64, f64, f64)) -> (f64, f64) {
        let cands = [(6.0, -6.0), (6.0, 12.0), (-6.0 - w, -6.0), (-6.0 - w, 12.0), (6.0, -20.0), (6.0, 26.0), (-w / 2.0, -12.0), (-w / 2.0, 24.0), (18.0, 3.0), (-18.0 - w, 3.0)];
        let mut best = (x + 6.0, y - 6.0);
        for (dx, dy) in cands {
            let (lx, ly) = (x + dx, y + dy); // text baseline-left
            let bx = (lx, ly - h + 2.0, lx + w, ly + 2.0);
            let inside = bx.0 >= bounds.0 && bx.2 <= bounds.2 && bx.1 >= bounds.1 && bx.3 <= bounds.3;
            let free = self.boxes.iter().all(|o| bx.2 < o.0 || bx.0 > o.2 || bx.3 < o.1 || bx.1 > o.3);
            if inside && free {
                self.boxes.push(bx);
                return (lx, ly);
            }
            if inside && best == (x + 6.0, y - 6.0) {
                best = (lx, ly);
            }
        }
        self.boxes.push((best.0, best.1 - h + 2.0, best.0 + w, best.1 + 2.0));
        best
    }
}

/// A log-log roofline chart: each roof (memory slope to its ridge point, then the flat compute peak) and
/// one `<g class="op-move">` per plottable move, an arrow from A to B (a pair of points when the op did not
/// move), keyed by its label. Moves that are not plottable are skipped (the caller says so).
pub fn roofline(roofs: &[Roof], moves: &[Move]) -> String {
    let (w, h) = (960.0, 520.0);
    let (left, right, top, bottom) = (70.0, 740.0, 20.0, 470.0);
    let roofs: Vec<&Roof> = roofs.iter().filter(|r| r.usable()).collect();
    let shown: Vec<&Move> = moves.iter().filter(|m| m.plottable()).collect();
    // a factor of 2 of room around the points, and room for the flat roof right of the ridge and for the
    // peak's label above it
    let xs = shown.iter().flat_map(|m| [m.a.0 / 2.0, m.b.0 * 2.0, m.a.0 * 2.0, m.b.0 / 2.0]).chain(roofs.iter().flat_map(|r| [r.ridge() / 2.0, r.ridge() * 5.0]));
    let ys = shown.iter().flat_map(|m| [m.a.1 / 2.0, m.b.1 * 2.0, m.a.1 * 2.0, m.b.1 / 2.0]).chain(roofs.iter().map(|r| r.peak_gflops * 3.0));
    let sx = Log::around(xs, 12, left, right);
    let sy = Log::around(ys, 12, bottom, top);
    let mut s = open(w, h, "Roofline: each op's move from A to B");
    // grid and axes
    s.push_str(r#"<g class="grid">"#);
    let step_x = ((sx.e1 - sx.e0) as f64 / 10.0).ceil().max(1.0) as i32;
    let step_y = ((sy.e1 - sy.e0) as f64 / 10.0).ceil().max(1.0) as i32;
    for e in sx.e0..=sx.e1 {
        let x = sx.map(10f64.powi(e));
        s.push_str(&line(x, top, x, bottom, "#e9ecef", ""));
    }
    for e in sy.e0..=sy.e1 {
        let y = sy.map(10f64.powi(e));
        s.push_str(&line(left, y, right, y, "#e9ecef", ""));
    }
    s.push_str("</g>");
    let _ = write!(s, r#"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="{GREY}"/>"#, num(left), num(top), num(right - left), num(bottom - top));
    s.push_str(r#"<g class="ticks">"#);
    for e in (sx.e0..=sx.e1).filter(|e| (e - sx.e0) % step_x == 0) {
        s.push_str(&text(sx.map(10f64.powi(e)), bottom + 16.0, "middle", "", &decade_label(e)));
    }
    for e in (sy.e0..=sy.e1).filter(|e| (e - sy.e0) % step_y == 0) {
        s.push_str(&text(left - 6.0, sy.map(10f64.powi(e)) + 4.0, "end", "", &decade_label(e)));
    }
    s.push_str("</g>");
    s.push_str(&text((left + right) / 2.0, bottom + 36.0, "middle", r#"font-weight="600""#, "operational intensity (FLOP/byte)"));
    let _ = write!(
        s,
        r#"<text x="16" y="{mid}" text-anchor="middle" font-weight="600" transform="rotate(-90 16 {mid})">GFLOP/s</text>"#,
        mid = num((top + bottom) / 2.0)
    );
    // roofs
    let points: Vec<(f64, f64)> = shown.iter().flat_map(|m| [m.a, m.b]).map(|(x, y)| (sx.map(x), sy.map(y))).collect();
    let mut used: Vec<f64> = Vec::new();
    let mut leg: Vec<(Swatch, String)> = Vec::new();
    for (i, r) in roofs.iter().enumerate() {
        let ridge = r.ridge();
        let x_start = sx.lo().max(sy.lo() / r.bw_gbs).min(ridge);
        let pts = [(x_start, x_start * r.bw_gbs), (ridge, r.peak_gflops), (sx.hi(), r.peak_gflops)];
        let pts_s: Vec<String> = pts.iter().map(|(x, y)| format!("{},{}", num(sx.map(*x)), num(sy.map(*y)))).collect();
        let dash = if r.dashed { r#" stroke-dasharray="7 5""# } else { "" };
        let _ = write!(s, r#"<polyline class="roof" points="{}" fill="none" stroke="{}" stroke-width="2"{dash}/>"#, pts_s.join(" "), r.color);
        let (rx, py) = (sx.map(ridge), sy.map(r.peak_gflops));
        s.push_str(&line(rx, py, rx, bottom, r.color, r#"stroke-dasharray="2 3" stroke-opacity="0.7""#));
        // with two roofs, the upper one's peak is labelled above its line and the lower one's below, so that
        // the labels do not meet between them
        let top_peak = roofs.iter().enumerate().all(|(j, o)| o.peak_gflops < r.peak_gflops || (o.peak_gflops == r.peak_gflops && j >= i));
        let dy = if top_peak { -6.0 } else { 15.0 };
        s.push_str(&text(right - 4.0, py + dy, "end", &format!(r#"fill="{}""#, r.color), &format!("{}: {}FLOP/s peak", r.label, si(r.peak_gflops * 1e9))));
        s.push_str(&text(rx + 4.0, bottom - 6.0 - 14.0 * i as f64, "start", &format!(r#"fill="{}""#, r.color), &format!("ridge {}", si(ridge))));
        // bandwidth label along the slope, where it is inside the plot
        let (x0, y0) = (sx.map(x_start), sy.map(x_start * r.bw_gbs));
        if rx - x0 > 120.0 {
            let label = format!("{}: {}B/s HBM", r.label, si(r.bw_gbs * 1e9));
            let rad = (py - y0).atan2(rx - x0);
            let len = 7.0 * label.chars().count() as f64;
            // above the line (ops sit below it), clear of the ops' points (40 px will do; then near a quarter
            // of the way up) and away from the other roof's label
            let at = |f: f64| (x0 + (rx - x0) * f, y0 + (py - y0) * f - 6.0);
            let clearance = |f: f64| {
                let (lx, ly) = at(f);
                let (ex, ey) = (lx + rad.cos() * len, ly + rad.sin() * len);
                if ex > rx - 10.0 {
                    return f64::NEG_INFINITY;
                }
                points.iter().map(|&(px, py)| seg_dist(px, py, lx, ly, ex, ey)).fold(f64::INFINITY, f64::min).min(40.0)
            };
            let f = (0..12)
                .map(|k| 0.1 + 0.05 * k as f64)
                .filter(|f| used.iter().all(|u: &f64| (u - f).abs() >= 0.2))
                .max_by(|a, b| clearance(*a).total_cmp(&clearance(*b)).then((b - 0.25).abs().total_cmp(&(a - 0.25).abs())))
                .unwrap_or(0.2);
            used.push(f);
            let angle = rad.to_degrees();
            let (lx, ly) = at(f);
            let _ = write!(
                s,
                r#"<text x="{}" y="{}" fill="{}" transform="rotate({} {} {})">{}</text>"#,
                num(lx),
                num(ly),
                r.color,
                num(angle),
                num(lx),
                num(ly),
                escape(&label)
            );
        }
        leg.push((Swatch::Line { color: r.color, dashed: r.dashed }, format!("{} roof", r.label)));
    }
    // moves: bands first, then arrows and points, then labels on top
    let mut placer = Placer { boxes: Vec::new() };
    let mut labels = String::new();
    let mut body = String::new();
    for m in &shown {
        let (ax, ay) = (sx.map(m.a.0), sy.map(m.a.1));
        let (bx, by) = (sx.map(m.b.0), sy.map(m.b.1));
        let _ = write!(body, r#"<g class="op-move"><title>{}</title>"#, escape(&m.title));
        let len = ((bx - ax).powi(2) + (by - ay).powi(2)).sqrt();
        if m.highlight {
            body.push_str(&line(ax, ay, bx, by, PURPLE, r#"stroke-width="10" stroke-opacity="0.25" stroke-linecap="round""#));
        }
        let _ = write!(body, r#"<circle cx="{}" cy="{}" r="3.5" fill="white" stroke="{}" stroke-width="1.5"/>"#, num(ax), num(ay), m.color);
        if len >= 4.0 {
            let (ux, uy) = ((bx - ax) / len, (by - ay) / len);
            let _ = write!(body, "{}", line(ax, ay, bx - ux * 8.0, by - uy * 8.0, m.color, r#"class="arrow" stroke-width="1.8""#));
            body.push_str(&arrow_head(bx, by, ux, uy, m.color));
        } else {
            let _ = write!(body, r#"<circle class="still" cx="{}" cy="{}" r="2" fill="{}"/>"#, num(bx), num(by), m.color);
        }
        body.push_str("</g>");
        let tw = 7.5 * m.key.chars().count() as f64 + 2.0;
        let (lx, ly) = placer.place(bx, by, tw, 12.0, (left, top, right, bottom));
        labels.push_str(&text(lx, ly, "start", r#"font-size="11" font-weight="600" class="key""#, &m.key));
    }
    s.push_str(&body);
    s.push_str(&labels);
    leg.push((Swatch::Dot { color: DARK, hollow: true }, "op in A".to_string()));
    leg.push((Swatch::Arrow { color: RED }, "to B: slower".to_string()));
    leg.push((Swatch::Arrow { color: GREEN }, "to B: faster".to_string()));
    leg.push((Swatch::Arrow { color: GREY }, "to B: same time".to_string()));
    leg.push((Swatch::Band { color: PURPLE }, "crossed the ridge".to_string()));
    s.push_str(&legend(right + 22.0, top + 12.0, &leg));
    s.push_str("</svg>");
    s
}

// ---------------------------------------------------------------------------------------------------------
// Distributions

/// One sample for [`strip_box`].
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub values: Vec<f64>,
    pub color: &'static str,
}

/// The `q` quantile (0..=1) of sorted values, linear interpolation.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
            let i = pos.floor() as usize;
            let f = pos - i as f64;
            if i + 1 < n {
                sorted[i] + (sorted[i + 1] - sorted[i]) * f
            } else {
                sorted[n - 1]
            }
        }
    }
}

/// One row per series on a shared linear axis: every value as a jittered dot, a box from the first to the
/// third quartile with min–max whiskers, and the median as a thick line labelled with its value.
pub fn strip_box(series: &[Series], unit: &str) -> String {
    let row_h = 64.0;
    let (left, right, top) = (110.0, 900.0, 12.0);
    let w = 960.0;
    let h = top + row_h * series.len().max(1) as f64 + 42.0;
    let bottom = h - 42.0;
    let dom = padded_domain(series.iter().flat_map(|s| s.values.iter().copied()), false).unwrap_or((0.0, 1.0));
    let sc = Linear { d0: dom.0, d1: dom.1, r0: left, r1: right };
    let mut s = open(w, h, &format!("Distributions ({unit})"));
    for t in sc.ticks(8) {
        let x = sc.map(t);
        s.push_str(&line(x, top, x, bottom, "#e9ecef", ""));
        s.push_str(&text(x, bottom + 16.0, "middle", "", &tick_label(t)));
    }
    s.push_str(&line(left, bottom, right, bottom, GREY, ""));
    s.push_str(&text((left + right) / 2.0, bottom + 34.0, "middle", r#"font-weight="600""#, unit));
    for (i, se) in series.iter().enumerate() {
        let cy = top + row_h * (i as f64 + 0.5);
        let mut v: Vec<f64> = se.values.iter().copied().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        let _ = write!(s, r#"<g class="dist"><title>{}</title>"#, escape(&format!("{}: {} values", se.label, v.len())));
        s.push_str(&text(left - 10.0, cy - 2.0, "end", r#"font-weight="600""#, &se.label));
        s.push_str(&text(left - 10.0, cy + 13.0, "end", &format!(r#"fill="{GREY}" font-size="11""#), &format!("n = {}", v.len())));
        if v.is_empty() {
            s.push_str(&text(left + 8.0, cy + 4.0, "start", &format!(r#"fill="{GREY}""#), "no values"));
            s.push_str("</g>");
            continue;
        }
        let (q1, med, q3) = (quantile(&v, 0.25), quantile(&v, 0.5), quantile(&v, 0.75));
        let (lo, hi) = (v[0], v[v.len() - 1]);
        let bh = 26.0;
        s.push_str(&line(sc.map(lo), cy, sc.map(q1), cy, se.color, r#"stroke-width="1.5""#));
        s.push_str(&line(sc.map(q3), cy, sc.map(hi), cy, se.color, r#"stroke-width="1.5""#));
        for x in [lo, hi] {
            s.push_str(&line(sc.map(x), cy - 7.0, sc.map(x), cy + 7.0, se.color, r#"stroke-width="1.5""#));
        }
        let _ = write!(
            s,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{c}" fill-opacity="0.15" stroke="{c}"/>"#,
            num(sc.map(q1)),
            num(cy - bh / 2.0),
            num((sc.map(q3) - sc.map(q1)).max(1.0)),
            num(bh),
            c = se.color
        );
        for (j, x) in se.values.iter().filter(|x| x.is_finite()).enumerate() {
            let jitter = ((j * 7) % 11) as f64 - 5.0;
            let _ = write!(s, r#"<circle cx="{}" cy="{}" r="2.6" fill="{}" fill-opacity="0.55"/>"#, num(sc.map(*x)), num(cy + jitter * 2.0), se.color);
        }
        let mx = sc.map(med);
        s.push_str(&line(mx, cy - bh / 2.0 - 3.0, mx, cy + bh / 2.0 + 3.0, DARK, r#"class="median" stroke-width="3""#));
        let anchor = if mx > right - 80.0 { "end" } else if mx < left + 80.0 { "start" } else { "middle" };
        s.push_str(&text(mx, cy - bh / 2.0 - 6.0, anchor, r#"font-size="11" font-weight="600""#, &format!("median {}", tick_label(med))));
        s.push_str("</g>");
    }
    s.push_str("</svg>");
    s
}

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

// ---------------------------------------------------------------------------------------------------------
// Bars

/// One horizontal bar of [`hbars`].
#[derive(Debug, Clone)]
pub struct Bar {
    pub label: String,
    /// Hover text.
    pub title: String,
    pub value: f64,
    /// Text after the bar (e.g. `+13.6 ms (+369 %)`).
    pub value_text: String,
    pub color: &'static str,
}

/// Horizontal bars from a zero line, labels on the left, values on the right; `None` entries are gaps
/// between groups.
pub fn hbars(bars: &[Option<Bar>], unit: &str) -> String {
    let row_h = 22.0;
    let (left, right, top) = (340.0, 770.0, 10.0);
    let w = 960.0;
    let h = top + row_h * bars.len().max(1) as f64 + 44.0;
    let bottom = h - 44.0;
    let dom = padded_domain(bars.iter().flatten().map(|b| b.value), true).unwrap_or((0.0, 1.0));
    let sc = Linear { d0: dom.0, d1: dom.1, r0: left, r1: right };
    let mut s = open(w, h, &format!("Op self-time changes ({unit})"));
    for t in sc.ticks(6) {
        let x = sc.map(t);
        s.push_str(&line(x, top, x, bottom, "#e9ecef", ""));
        s.push_str(&text(x, bottom + 16.0, "middle", "", &tick_label(t)));
    }
    s.push_str(&text((left + right) / 2.0, bottom + 34.0, "middle", r#"font-weight="600""#, unit));
    let x0 = sc.map(0.0);
    for (i, b) in bars.iter().enumerate() {
        let Some(b) = b else { continue };
        let y = top + row_h * i as f64;
        let xv = sc.map(b.value);
        let _ = write!(
            s,
            r#"<g class="bar"><title>{}</title><rect x="{}" y="{}" width="{}" height="{}" fill="{}"/>"#,
            escape(&b.title),
            num(x0.min(xv)),
            num(y + 4.0),
            num((xv - x0).abs().max(1.0)),
            num(row_h - 8.0),
            b.color
        );
        s.push_str(&text(left - 8.0, y + 15.0, "end", "", &truncate(&b.label, 46)));
        s.push_str(&text(right + 8.0, y + 15.0, "start", &format!(r#"fill="{}""#, b.color), &b.value_text));
        s.push_str("</g>");
    }
    s.push_str(&line(x0, top, x0, bottom, DARK, ""));
    s.push_str("</svg>");
    s
}
