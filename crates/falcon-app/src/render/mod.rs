//! The renderers every front end shares: analysis reports (structs from `falcon-analysis`, composed with EXP's
//! where a use case needs both) as text tables, Markdown and self-contained HTML pages with inline SVG charts.
//! JSON is the structs themselves. The text tables and the Markdown of a report come from one section model
//! (`text`), so both show the same rows; the terminal front end picks the text form.

pub mod accuracy;
pub mod bisect;
pub mod compare_html;
pub mod compare_md;
pub mod compare_table;
pub mod config_diff;
pub mod experiment;
pub mod goal;
pub mod goodput;
pub mod html;
pub mod kernel;
pub mod markup;
pub mod memory;
pub mod multihost;
pub mod numbers;
pub mod profile;
pub mod profile_compare;
pub mod session;
pub mod svg;
pub mod tensors;
pub mod text;
pub mod verdict;

/// The document formats a report renders to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Text tables for a terminal.
    Table,
    /// Markdown.
    Md,
    /// A self-contained HTML page.
    Html,
    /// The report struct as JSON.
    Json,
}

/// A one-line chart of `values` in eight block heights, scaled from their minimum to their maximum (all equal:
/// mid height; non-finite: a space). More than 80 values are shown as 80 buckets of their means.
pub fn sparkline(values: &[f64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    const WIDTH: usize = 80;
    let shown: Vec<f64> = if values.len() <= WIDTH {
        values.to_vec()
    } else {
        (0..WIDTH)
            .map(|i| {
                let bucket = &values[i * values.len() / WIDTH..(i + 1) * values.len() / WIDTH];
                let finite: Vec<f64> = bucket.iter().copied().filter(|v| v.is_finite()).collect();
                if finite.is_empty() {
                    f64::NAN
                } else {
                    finite.iter().sum::<f64>() / finite.len() as f64
                }
            })
            .collect()
    };
    let finite = shown.iter().copied().filter(|v| v.is_finite());
    let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    shown
        .iter()
        .map(|&v| match v {
            v if !v.is_finite() => ' ',
            _ if hi <= lo => BARS[3],
            v => BARS[(((v - lo) / (hi - lo)) * 7.0).round().clamp(0.0, 7.0) as usize],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn sparkline_scales_and_buckets() {
        assert_eq!(super::sparkline(&[1.0, 2.0, 3.0, f64::NAN, 1.0]), "▁▅█ ▁");
        assert_eq!(super::sparkline(&[5.0, 5.0]), "▄▄");
        assert_eq!(super::sparkline(&[]), "");
        let long: Vec<f64> = (0..1000).map(f64::from).collect();
        let line = super::sparkline(&long);
        assert_eq!(line.chars().count(), 80);
        assert!(line.starts_with('▁') && line.ends_with('█'));
    }
}
