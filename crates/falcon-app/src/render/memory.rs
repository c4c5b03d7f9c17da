//! The memory verdict as terminal lines: the headline (which series, the call and why), a sparkline of its
//! curve, then one line per other series.

use crate::experiments::{MemoryVerdict, Per, SeriesVerdict};

/// How a series' source reads in a sentence.
pub fn source_label(source: Option<&str>, per: Option<Per>) -> String {
    let by = match per {
        Some(Per::Step) => " by step",
        Some(Per::Second) => " by second",
        None => "",
    };
    match source {
        Some("sampled_rss") => format!("sampled RSS{by}"),
        Some("profile") => format!("device memory in the profile{by}"),
        Some(s) => format!("{}{by}", s.strip_prefix("metrics:").map_or(s.to_string(), |m| format!("logged {m}"))),
        None => "no series".to_string(),
    }
}

/// The lines `exp show` prints for a verdict.
pub fn lines(v: &MemoryVerdict) -> Vec<String> {
    let h = &v.headline;
    let call = if h.leak_suspected { "LEAK SUSPECTED" } else { "no leak" };
    let peak = h.peak_bytes.map_or(String::new(), |p| format!("; peak {}", crate::render::numbers::bytes(p as f64)));
    let mut out = vec![format!("memory ({}): {call}{peak}", source_label(h.source.as_deref(), h.per))];
    out.push(format!("  {}", h.reason));
    let headline = v.series.iter().find(|s| s.summary.source == h.source);
    if let Some(s) = headline.filter(|s| s.curve.len() >= 2) {
        let ys: Vec<f64> = s.curve.iter().map(|p| p[1]).collect();
        out.push(format!("  {} ({} points)", crate::render::sparkline(&ys), s.curve.len()));
    }
    for s in v.series.iter().filter(|s| s.summary.source != h.source) {
        out.push(other(s));
    }
    out.extend(v.notes.iter().map(|n| format!("  note: {n}")));
    out
}

fn other(s: &SeriesVerdict) -> String {
    let label = source_label(s.summary.source.as_deref(), s.summary.per);
    let call = if s.summary.leak_suspected { "LEAK SUSPECTED: " } else { "" };
    format!("  also {label}: {call}{}", s.summary.reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use falcon_analysis::leak::{verdict, MemorySeries};

    #[test]
    fn a_leak_reads_as_one() {
        let rss = MemorySeries {
            source: "sampled_rss".into(),
            per: Per::Step,
            points: (0..40).map(|i| (f64::from(i), 1e8 + 8.0 * 1048576.0 * f64::from(i))).collect(),
            peak_bytes: None,
            notes: vec![],
        };
        let flat = MemorySeries { source: "metrics:peak_hbm_bytes".into(), points: vec![(0.0, 1.0); 1], ..rss.clone() };
        let text = lines(&verdict(&[flat, rss], vec!["a note".into()])).join("\n");
        assert!(text.starts_with("memory (sampled RSS by step): LEAK SUSPECTED; peak 407.4 MiB"), "{text}");
        assert!(text.contains("grows +8.0 MiB/step"), "{text}");
        assert!(text.contains("▁") && text.contains("█"), "{text}");
        assert!(text.contains("also logged peak_hbm_bytes by step: 1 point after warm-up"), "{text}");
        assert!(text.ends_with("note: a note"), "{text}");
    }
}
