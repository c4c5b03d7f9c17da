//! Strip/box plots: one row per sample on a shared linear axis.

use super::{line, num, open, padded_domain, text, tick_label, Linear, DARK, GREY};
use crate::render::markup::escape;
use std::fmt::Write;

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
        s.push_str(&text(
            left - 10.0,
            cy + 13.0,
            "end",
            &format!(r#"fill="{GREY}" font-size="11""#),
            &format!("n = {}", v.len()),
        ));
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
            let _ = write!(
                s,
                r#"<circle cx="{}" cy="{}" r="2.6" fill="{}" fill-opacity="0.55"/>"#,
                num(sc.map(*x)),
                num(cy + jitter * 2.0),
                se.color
            );
        }
        let mx = sc.map(med);
        s.push_str(&line(mx, cy - bh / 2.0 - 3.0, mx, cy + bh / 2.0 + 3.0, DARK, r#"class="median" stroke-width="3""#));
        let anchor = if mx > right - 80.0 {
            "end"
        } else if mx < left + 80.0 {
            "start"
        } else {
            "middle"
        };
        s.push_str(&text(
            mx,
            cy - bh / 2.0 - 6.0,
            anchor,
            r#"font-size="11" font-weight="600""#,
            &format!("median {}", tick_label(med)),
        ));
        s.push_str("</g>");
    }
    s.push_str("</svg>");
    s
}
