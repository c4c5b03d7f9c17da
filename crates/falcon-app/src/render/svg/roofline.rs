//! The roofline chart: each roof (memory slope to its ridge point, then the flat compute peak) on log-log
//! axes, and every op's move from its A point to its B point as an arrow, with a legend.

use super::{decade_label, line, num, open, si, text, Log, DARK, GREEN, GREY, PURPLE, RED};
use crate::render::markup::escape;
use std::fmt::Write;

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
                write!(
                    s,
                    "{}",
                    line(
                        x,
                        yy,
                        x + 24.0,
                        yy,
                        color,
                        if *dashed { r#"stroke-width="2" stroke-dasharray="6 4""# } else { r#"stroke-width="2""# }
                    )
                )
            }
            Swatch::Arrow { color } => write!(
                s,
                "{}{}",
                line(x, yy, x + 16.0, yy, color, r#"stroke-width="1.8""#),
                arrow_head(x + 16.0, yy, 1.0, 0.0, color)
            ),
            Swatch::Band { color } => write!(
                s,
                "{}",
                line(x, yy, x + 24.0, yy, color, r#"stroke-width="8" stroke-opacity="0.3" stroke-linecap="round""#)
            ),
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
        let cands = [
            (6.0, -6.0),
            (6.0, 12.0),
            (-6.0 - w, -6.0),
            (-6.0 - w, 12.0),
            (6.0, -20.0),
            (6.0, 26.0),
            (-w / 2.0, -12.0),
            (-w / 2.0, 24.0),
            (18.0, 3.0),
            (-18.0 - w, 3.0),
        ];
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
    let xs = shown
        .iter()
        .flat_map(|m| [m.a.0 / 2.0, m.b.0 * 2.0, m.a.0 * 2.0, m.b.0 / 2.0])
        .chain(roofs.iter().flat_map(|r| [r.ridge() / 2.0, r.ridge() * 5.0]));
    let ys = shown
        .iter()
        .flat_map(|m| [m.a.1 / 2.0, m.b.1 * 2.0, m.a.1 * 2.0, m.b.1 / 2.0])
        .chain(roofs.iter().map(|r| r.peak_gflops * 3.0));
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
    let _ = write!(
        s,
        r#"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="{GREY}"/>"#,
        num(left),
        num(top),
        num(right - left),
        num(bottom - top)
    );
    s.push_str(r#"<g class="ticks">"#);
    for e in (sx.e0..=sx.e1).filter(|e| (e - sx.e0) % step_x == 0) {
        s.push_str(&text(sx.map(10f64.powi(e)), bottom + 16.0, "middle", "", &decade_label(e)));
    }
    for e in (sy.e0..=sy.e1).filter(|e| (e - sy.e0) % step_y == 0) {
        s.push_str(&text(left - 6.0, sy.map(10f64.powi(e)) + 4.0, "end", "", &decade_label(e)));
    }
    s.push_str("</g>");
    s.push_str(&text(
        (left + right) / 2.0,
        bottom + 36.0,
        "middle",
        r#"font-weight="600""#,
        "operational intensity (FLOP/byte)",
    ));
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
        let _ = write!(
            s,
            r#"<polyline class="roof" points="{}" fill="none" stroke="{}" stroke-width="2"{dash}/>"#,
            pts_s.join(" "),
            r.color
        );
        let (rx, py) = (sx.map(ridge), sy.map(r.peak_gflops));
        s.push_str(&line(rx, py, rx, bottom, r.color, r#"stroke-dasharray="2 3" stroke-opacity="0.7""#));
        // with two roofs, the upper one's peak is labelled above its line and the lower one's below, so that
        // the labels do not meet between them
        let top_peak = roofs
            .iter()
            .enumerate()
            .all(|(j, o)| o.peak_gflops < r.peak_gflops || (o.peak_gflops == r.peak_gflops && j >= i));
        let dy = if top_peak { -6.0 } else { 15.0 };
        s.push_str(&text(
            right - 4.0,
            py + dy,
            "end",
            &format!(r#"fill="{}""#, r.color),
            &format!("{}: {}FLOP/s peak", r.label, si(r.peak_gflops * 1e9)),
        ));
        s.push_str(&text(
            rx + 4.0,
            bottom - 6.0 - 14.0 * i as f64,
            "start",
            &format!(r#"fill="{}""#, r.color),
            &format!("ridge {}", si(ridge)),
        ));
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
                .max_by(|a, b| {
                    clearance(*a).total_cmp(&clearance(*b)).then((b - 0.25).abs().total_cmp(&(a - 0.25).abs()))
                })
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
            body.push_str(&line(
                ax,
                ay,
                bx,
                by,
                PURPLE,
                r#"stroke-width="10" stroke-opacity="0.25" stroke-linecap="round""#,
            ));
        }
        let _ = write!(
            body,
            r#"<circle cx="{}" cy="{}" r="3.5" fill="white" stroke="{}" stroke-width="1.5"/>"#,
            num(ax),
            num(ay),
            m.color
        );
        if len >= 4.0 {
            let (ux, uy) = ((bx - ax) / len, (by - ay) / len);
            let _ = write!(
                body,
                "{}",
                line(ax, ay, bx - ux * 8.0, by - uy * 8.0, m.color, r#"class="arrow" stroke-width="1.8""#)
            );
            body.push_str(&arrow_head(bx, by, ux, uy, m.color));
        } else {
            let _ =
                write!(body, r#"<circle class="still" cx="{}" cy="{}" r="2" fill="{}"/>"#, num(bx), num(by), m.color);
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
