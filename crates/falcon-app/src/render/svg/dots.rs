//! Dot columns over whole-number positions (the commits of a bisection's range): at a position, its values as
//! dots (spread sideways within the column so repeats stay apart) and its summary as a short bar across them, in
//! the column's colour; labelled vertical marks (the culprit), names under chosen positions (the ends) and a
//! legend of the colours. The axes are [`super::line_chart`]'s.

use super::lines::{axes, axis_label, ticks};
use super::{line, num, open, padded_domain, text, Linear, GREY, RED};
use crate::render::markup::escape;
use crate::render::numbers;
use std::fmt::Write;

/// One position of a [`DotChart`].
#[derive(Debug, Clone)]
pub struct DotColumn {
    /// Where (a whole number).
    pub x: f64,
    /// Its values, each a dot (non-finite ones left out).
    pub values: Vec<f64>,
    /// Their summary, drawn as a bar across the column.
    pub summary: Option<f64>,
    pub color: &'static str,
    /// Hover text of the column.
    pub label: String,
}

/// What [`dot_chart`] draws.
#[derive(Debug, Clone, Default)]
pub struct DotChart {
    /// The accessible name of the chart.
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// The x range shown (every position of it has room, drawn or not); `None`: the columns'.
    pub x_domain: Option<(f64, f64)>,
    pub columns: Vec<DotColumn>,
    /// Vertical marks at these x positions, labelled.
    pub marks: Vec<(f64, String)>,
    /// Names written under these x positions, below the tick labels.
    pub x_names: Vec<(f64, String)>,
    /// Colour keys under the plot.
    pub legend: Vec<(String, &'static str)>,
}

/// The chart as an inline `<svg>`; a chart with no finite value says so in place of the plot.
pub fn dot_chart(c: &DotChart) -> String {
    let (w, h) = (720.0, 290.0);
    // Room above the plot for the marks' labels.
    let (left, right, top, bottom) = (64.0, 700.0, 26.0, 216.0);
    let mut s = open(w, h, &c.title);
    let ys = c.columns.iter().flat_map(|col| col.values.iter().copied().chain(col.summary));
    let xs = c.columns.iter().map(|col| col.x).filter(|x| x.is_finite());
    let xd = c.x_domain.or_else(|| {
        let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)));
        lo.is_finite().then_some((lo - 0.5, hi + 0.5))
    });
    let (Some(xd), Some(yd)) = (xd, padded_domain(ys, false)) else {
        s.push_str(&text(w / 2.0, h / 2.0, "middle", &format!(r#"fill="{GREY}""#), "no values to draw"));
        s.push_str("</svg>");
        return s;
    };
    let x = Linear { d0: xd.0, d1: xd.1, r0: left, r1: right };
    let y = Linear { d0: yd.0, d1: yd.1, r0: bottom, r1: top };
    let (yt, ystep) = ticks(&y, 5, false);
    for t in yt {
        let py = y.map(t);
        s.push_str(&line(left, py, right, py, "#e9ecef", ""));
        s.push_str(&text(left - 6.0, py + 4.0, "end", "", &axis_label(t, ystep)));
    }
    let (xt, xstep) = ticks(&x, 8, true);
    for t in xt {
        s.push_str(&text(x.map(t), bottom + 16.0, "middle", "", &axis_label(t, xstep)));
    }
    for (nx, name) in &c.x_names {
        s.push_str(&text(x.map(*nx), bottom + 30.0, "middle", &format!(r#"fill="{GREY}" font-size="11""#), name));
    }
    axes(&mut s, (left, right, top, bottom), &c.x_label, 48.0, &c.y_label);
    for (mx, label) in &c.marks {
        let px = x.map(*mx);
        let (lx, anchor) = if px > (left + right) / 2.0 { (px - 3.0, "end") } else { (px + 3.0, "start") };
        let _ = write!(s, r#"<g class="mark"><title>{}</title>"#, escape(label));
        s.push_str(&line(px, top, px, bottom, RED, r#"stroke-width="1.5" stroke-dasharray="2 3""#));
        s.push_str(&text(lx, top - 6.0, anchor, &format!(r#"fill="{RED}" font-size="11""#), label));
        s.push_str("</g>");
    }
    // Half the room a column's dots spread over: a third of the column, at most 8 px.
    let half = ((x.map(xd.0 + 1.0) - x.map(xd.0)).abs() / 3.0).min(8.0);
    for col in &c.columns {
        let px = x.map(col.x);
        let values: Vec<f64> = col.values.iter().copied().filter(|v| v.is_finite()).collect();
        let _ = write!(s, r#"<g class="column"><title>{}</title>"#, escape(&col.label));
        let k = values.len();
        for (j, v) in values.iter().enumerate() {
            let dx = if k > 1 { -half + 2.0 * half * j as f64 / (k - 1) as f64 } else { 0.0 };
            let _ = write!(
                s,
                r#"<circle cx="{}" cy="{}" r="3" fill="{c}" fill-opacity="0.6"><title>{}</title></circle>"#,
                num(px + dx),
                num(y.map(*v)),
                escape(&numbers::num(*v)),
                c = col.color
            );
        }
        if let Some(m) = col.summary.filter(|m| m.is_finite()) {
            let py = y.map(m);
            s.push_str(&line(px - half - 5.0, py, px + half + 5.0, py, col.color, r#"stroke-width="3""#));
        }
        s.push_str("</g>");
    }
    let mut lx = left;
    for (label, color) in &c.legend {
        let _ = write!(s, r#"<circle cx="{}" cy="{}" r="4" fill="{color}"/>"#, num(lx + 4.0), num(h - 8.0));
        s.push_str(&text(lx + 12.0, h - 4.0, "start", r#"font-size="11""#, label));
        lx += 24.0 + 6.5 * label.chars().count().min(40) as f64;
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_marks_and_legend_are_drawn_escaped() {
        let c = DotChart {
            title: "t <b>".into(),
            x_label: "commit".into(),
            y_label: "s".into(),
            x_domain: Some((-0.5, 5.5)),
            columns: vec![
                DotColumn {
                    x: 0.0,
                    values: vec![1.0, 1.1, f64::NAN],
                    summary: Some(1.05),
                    color: super::super::GREEN,
                    label: "#0 <script>x</script>".into(),
                },
                DotColumn { x: 5.0, values: vec![2.0], summary: None, color: RED, label: "#5".into() },
            ],
            marks: vec![(3.0, "culprit <i>".into())],
            x_names: vec![(0.0, "good".into()), (5.0, "bad".into())],
            legend: vec![("good".into(), super::super::GREEN), ("bad".into(), RED)],
        };
        let svg = dot_chart(&c);
        assert_eq!(svg.matches("<g class=\"column\">").count(), 2, "{svg}");
        assert_eq!(svg.matches("<circle").count(), 3 + 2, "two dots, one dot, two legend keys: {svg}");
        assert!(svg.contains("class=\"mark\"") && svg.contains("culprit &lt;i&gt;"), "{svg}");
        assert!(svg.contains("#0 &lt;script&gt;x&lt;/script&gt;") && !svg.contains("<script"), "{svg}");
        assert!(svg.contains(">good</text>") && svg.contains(">bad</text>") && !svg.contains("NaN"), "{svg}");
        assert!(svg.contains("stroke-width=\"3\""), "the summary bar: {svg}");
        let empty = dot_chart(&DotChart { title: "t".into(), ..Default::default() });
        assert!(empty.contains("no values to draw") && empty.ends_with("</svg>"));
    }
}
