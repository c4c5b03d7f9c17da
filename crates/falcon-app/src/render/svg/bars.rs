//! Horizontal signed bars from a zero line.

use super::{line, num, open, padded_domain, text, tick_label, truncate, Linear, DARK};
use crate::render::markup::escape;
use std::fmt::Write;

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
