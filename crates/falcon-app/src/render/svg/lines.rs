//! Line charts of series over a shared x axis (metrics by step, a memory curve, one metric across runs), with
//! a shaded x range (the warm-up), horizontal reference lines (a target, a baseline) and marked x positions
//! (change points). Long series are thinned before drawing by `downsample` (`crate::series`), which keeps every bucket's
//! lowest and highest point, so a spike never disappears from a chart of 100,000 steps.

use super::{line, num, open, padded_domain, si, text, tick_label, Linear, GREY};
use crate::render::markup::escape;
use std::fmt::Write;

/// One series of a [`LineChart`].
#[derive(Debug, Clone)]
pub struct Line {
    pub label: String,
    /// `(x, y)` in x order; non-finite points are left out.
    pub points: Vec<(f64, f64)>,
    pub color: &'static str,
    /// Dashed (a fitted trend, a reference).
    pub dashed: bool,
    /// A dot on every point (few points: runs of a history).
    pub dots: bool,
}

/// A horizontal reference line.
#[derive(Debug, Clone)]
pub struct Reference {
    pub y: f64,
    pub label: String,
    pub color: &'static str,
}

/// What [`line_chart`] draws.
#[derive(Debug, Clone, Default)]
pub struct LineChart {
    /// The accessible name of the chart.
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub lines: Vec<Line>,
    /// Shade x from the axis start up to here, labelled (e.g. the warm-up steps).
    pub shade_until: Option<(f64, String)>,
    pub references: Vec<Reference>,
    /// Vertical marks at these x positions, labelled (e.g. change points).
    pub marks: Vec<(f64, String)>,
}

/// A tick of an axis whose ticks are `step` apart: SI prefixes from 10,000 up (`12.1 G`), else as many
/// decimals as the step needs (`0.1001`, `0.1002`), so neighbouring ticks never read the same.
pub(super) fn axis_label(v: f64, step: f64) -> String {
    if v.abs() >= 1e4 {
        return si(v);
    }
    if !(step.is_finite() && step > 0.0) {
        return tick_label(v);
    }
    let decimals = (-(step.log10().floor()) as i32
        + i32::from((step / 10f64.powf(step.log10().floor())).fract() > 1e-9))
    .clamp(0, 12);
    format!("{v:.prec$}", prec = decimals as usize)
}

/// The ticks of a scale and their step (x ticks between whole numbers dropped when `whole`).
pub(super) fn ticks(scale: &Linear, n: usize, whole: bool) -> (Vec<f64>, f64) {
    let mut t = scale.ticks(n);
    let step = if t.len() >= 2 { t[1] - t[0] } else { 0.0 };
    if whole && step < 1.0 {
        t.retain(|v| v.fract() == 0.0);
        return (t, 1.0);
    }
    (t, step)
}

/// The chart as an inline `<svg>`; a chart with no finite point says so in place of the plot.
pub fn line_chart(c: &LineChart) -> String {
    let (w, h) = (720.0, 260.0);
    let (left, right, top, bottom) = (64.0, 700.0, 16.0, 216.0);
    let finite = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite();
    let xs = c.lines.iter().flat_map(|l| l.points.iter().filter(finite).map(|p| p.0));
    let ys = c.lines.iter().flat_map(|l| l.points.iter().filter(finite).map(|p| p.1));
    let mut s = open(w, h, &c.title);
    let (Some(xd), Some(yd)) = (
        padded_domain(xs.chain(c.marks.iter().map(|m| m.0)), false),
        padded_domain(ys.chain(c.references.iter().map(|r| r.y)), false),
    ) else {
        s.push_str(&text(w / 2.0, h / 2.0, "middle", &format!(r#"fill="{GREY}""#), "no values to draw"));
        s.push_str("</svg>");
        return s;
    };
    let x = Linear { d0: xd.0, d1: xd.1, r0: left, r1: right };
    let y = Linear { d0: yd.0, d1: yd.1, r0: bottom, r1: top };
    if let Some((until, label)) = &c.shade_until {
        let x1 = x.map(*until).clamp(left, right);
        let _ = write!(
            s,
            r##"<rect class="warmup" x="{}" y="{}" width="{}" height="{}" fill="#adb5bd" fill-opacity="0.18"><title>{}</title></rect>"##,
            num(left),
            num(top),
            num(x1 - left),
            num(bottom - top),
            escape(label)
        );
        s.push_str(&text(left + 4.0, top + 12.0, "start", &format!(r#"fill="{GREY}" font-size="11""#), label));
    }
    let (yt, ystep) = ticks(&y, 5, false);
    for t in yt {
        let py = y.map(t);
        s.push_str(&line(left, py, right, py, "#e9ecef", ""));
        s.push_str(&text(left - 6.0, py + 4.0, "end", "", &axis_label(t, ystep)));
    }
    let whole_x = c.lines.iter().flat_map(|l| l.points.iter()).all(|p| p.0.fract() == 0.0);
    let (xt, xstep) = ticks(&x, 8, whole_x);
    for t in xt {
        s.push_str(&text(x.map(t), bottom + 16.0, "middle", "", &axis_label(t, xstep)));
    }
    axes(&mut s, (left, right, top, bottom), &c.x_label, 36.0, &c.y_label);
    for r in &c.references {
        let py = y.map(r.y);
        s.push_str(&line(left, py, right, py, r.color, r#"stroke-dasharray="6 4" stroke-width="1.5""#));
        s.push_str(&text(right - 4.0, py - 4.0, "end", &format!(r#"fill="{}" font-size="11""#, r.color), &r.label));
    }
    for (mx, label) in &c.marks {
        let px = x.map(*mx);
        let _ = write!(s, r#"<g class="mark"><title>{}</title>"#, escape(label));
        s.push_str(&line(px, top, px, bottom, super::RED, r#"stroke-width="1.5" stroke-dasharray="2 3""#));
        s.push_str(&text(px + 3.0, top + 24.0, "start", &format!(r#"fill="{}" font-size="11""#, super::RED), label));
        s.push_str("</g>");
    }
    for l in &c.lines {
        let pts: Vec<&(f64, f64)> = l.points.iter().filter(finite).collect();
        if pts.is_empty() {
            continue;
        }
        let mut d = String::with_capacity(pts.len() * 12);
        for (i, p) in pts.iter().enumerate() {
            let _ = write!(d, "{}{},{}", if i == 0 { "M" } else { " L" }, num(x.map(p.0)), num(y.map(p.1)));
        }
        let dash = if l.dashed { r#" stroke-dasharray="5 4""# } else { "" };
        let _ = write!(
            s,
            r#"<g class="series"><title>{}</title><path d="{d}" fill="none" stroke="{c}" stroke-width="1.6"{dash}/>"#,
            escape(&l.label),
            c = l.color
        );
        if l.dots || pts.len() == 1 {
            for p in &pts {
                let _ = write!(
                    s,
                    r#"<circle cx="{}" cy="{}" r="3" fill="{c}"><title>{}</title></circle>"#,
                    num(x.map(p.0)),
                    num(y.map(p.1)),
                    escape(&format!("{}: x {} → {}", l.label, tick_label(p.0), tick_label(p.1))),
                    c = l.color
                );
            }
        }
        s.push_str("</g>");
    }
    // The legend: the label of each series, with its line style, under the plot.
    let mut lx = left;
    for l in c.lines.iter().filter(|l| !l.label.is_empty()) {
        let dash = if l.dashed { r#"stroke-dasharray="5 4""# } else { "" };
        s.push_str(&line(lx, h - 8.0, lx + 18.0, h - 8.0, l.color, &format!(r#"stroke-width="2" {dash}"#)));
        s.push_str(&text(lx + 22.0, h - 4.0, "start", r#"font-size="11""#, &l.label));
        lx += 30.0 + 6.5 * l.label.chars().count().min(40) as f64;
    }
    s.push_str("</svg>");
    s
}

/// The plot's two axes and their labels: `x_label` centred `x_label_dy` below the bottom, `y_label` turned along the
/// left edge.
pub(super) fn axes(
    s: &mut String,
    (left, right, top, bottom): (f64, f64, f64, f64),
    x_label: &str,
    x_label_dy: f64,
    y_label: &str,
) {
    s.push_str(&line(left, bottom, right, bottom, GREY, ""));
    s.push_str(&line(left, top, left, bottom, GREY, ""));
    s.push_str(&text((left + right) / 2.0, bottom + x_label_dy, "middle", r#"font-weight="600""#, x_label));
    let _ = write!(
        s,
        r#"<text x="14" y="{}" text-anchor="middle" font-weight="600" transform="rotate(-90 14 {})">{}</text>"#,
        num((top + bottom) / 2.0),
        num((top + bottom) / 2.0),
        escape(y_label)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::downsample;

    #[test]
    fn downsampling_keeps_extremes_and_ends() {
        let mut pts: Vec<(f64, f64)> = (0..100_000).map(|i| (i as f64, 1.0)).collect();
        pts[54_321].1 = 50.0;
        pts[77_777].1 = -3.0;
        let d = downsample(&pts, 400);
        assert!(d.len() <= 403, "{}", d.len());
        assert!(d.contains(&(54_321.0, 50.0)) && d.contains(&(77_777.0, -3.0)));
        assert_eq!((d[0], *d.last().unwrap()), ((0.0, 1.0), (99_999.0, 1.0)));
        assert!(d.windows(2).all(|w| w[0].0 < w[1].0), "x order kept");
        assert_eq!(downsample(&pts[..10], 400).len(), 10);
    }

    #[test]
    fn tick_labels_tell_neighbours_apart() {
        assert_eq!(axis_label(0.1001, 0.0002), "0.1001");
        assert_eq!(axis_label(0.1, 0.025), "0.100");
        assert_eq!(axis_label(15.0, 1.0), "15");
        assert_eq!(axis_label(0.09, 0.005), "0.090");
        assert_eq!(axis_label(12.1e9, 1e9), "12.1 G");
        let (t, step) = ticks(&Linear { d0: 14.8, d1: 18.2, r0: 0.0, r1: 1.0 }, 8, true);
        assert_eq!((t, step), (vec![15.0, 16.0, 17.0, 18.0], 1.0));
    }

    #[test]
    fn chart_draws_every_part_and_survives_no_data() {
        let c = LineChart {
            title: "step_time_s by step".into(),
            x_label: "step".into(),
            y_label: "s".into(),
            lines: vec![Line {
                label: "step_time_s <a>".into(),
                points: vec![(0.0, 1.0), (1.0, f64::NAN), (2.0, 0.5)],
                color: super::super::BLUE,
                dashed: false,
                dots: false,
            }],
            shade_until: Some((1.0, "warm-up".into())),
            references: vec![Reference { y: 0.8, label: "target".into(), color: super::super::GREEN }],
            marks: vec![(2.0, "shift".into())],
        };
        let svg = line_chart(&c);
        assert!(svg.contains("class=\"warmup\"") && svg.contains("target") && svg.contains("class=\"mark\""));
        assert!(svg.contains("step_time_s &lt;a&gt;") && !svg.contains("NaN"), "{svg}");
        assert_eq!(svg.matches("<path").count(), 1);
        let empty = line_chart(&LineChart { title: "t".into(), ..Default::default() });
        assert!(empty.contains("no values to draw") && empty.ends_with("</svg>"));
    }
}
