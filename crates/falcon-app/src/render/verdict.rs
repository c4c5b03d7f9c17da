//! One line per verdict (DESIGN.md §2), shared by every front end that prints one: the decision, the change
//! with its interval and p-value, and what it rests on — the runs a side, the between-run noise and its
//! source, and the repeats an inconclusive verdict would need.

use super::numbers::significant;
use falcon_core::stats::verdict::NoiseSource;
use falcon_core::stats::Verdict;

fn pct(x: Option<f64>) -> String {
    x.filter(|x| x.is_finite()).map_or_else(|| "—".to_string(), |x| format!("{:+.2}%", x * 100.0))
}

/// A p-value at a precision a reader can use: 2 significant digits, scientific below 0.001.
pub fn p_value(p: Option<f64>) -> String {
    match p.filter(|p| p.is_finite()) {
        None => "—".to_string(),
        Some(p) if p != 0.0 && p < 1e-3 => format!("{p:.1e}"),
        Some(p) => format!("{p:.3}"),
    }
}

/// What the verdict rests on: `1 vs 1 runs, between-run CV 5.0 % (default floor)`; empty for a step-level
/// verdict.
pub fn evidence(v: &Verdict) -> String {
    let Some(runs) = v.runs else { return String::new() };
    let mut out = format!("{} vs {} run{}", runs.a, runs.b, if runs.a == 1 && runs.b == 1 { "" } else { "s" });
    if let Some(cv) = &v.between_run_cv {
        let source = match cv.source {
            NoiseSource::Runs => "from the runs",
            NoiseSource::History => "from this config's history",
            NoiseSource::Default => "default floor",
        };
        out.push_str(&format!(", between-run CV {:.1}% ({source}, {:.0} dof)", cv.cv * 100.0, cv.dof));
    }
    if let Some(n) = v.repeats_needed {
        out.push_str(&format!("; ~{n} runs a side would resolve a change this size"));
    }
    out
}

/// `metric: verdict (direction), median A → B (Δ), 95% CI [lo, hi], p = …; evidence`.
pub fn line(v: &Verdict) -> String {
    let ci = match (v.ci_low_rel, v.ci_high_rel) {
        (Some(lo), Some(hi)) => format!("95% CI [{}, {}]", pct(Some(lo)), pct(Some(hi))),
        _ => "95% CI —".to_string(),
    };
    let mut out = format!(
        "{}: {} ({}), median {} → {} ({}), {ci}, p = {}",
        v.metric,
        v.verdict.as_str(),
        v.direction.as_str().replace('_', " "),
        significant(v.a.median, 4),
        significant(v.b.median, 4),
        pct(v.delta_rel),
        p_value(v.p_value),
    );
    let evidence = evidence(v);
    if !evidence.is_empty() {
        out.push_str("; ");
        out.push_str(&evidence);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use falcon_core::stats::{compare_runs, CompareOptions, Direction, RunSample};

    #[test]
    fn a_single_run_pair_says_what_it_rests_on() {
        let run = |m: f64| RunSample { median: m, spread: 0.002, n_steps: 40 };
        let v = compare_runs(
            "step_time_s",
            Direction::LowerIsBetter,
            &[run(0.1565)],
            &[run(0.1721)],
            None,
            &CompareOptions::default(),
        );
        let text = line(&v);
        assert!(
            text.starts_with("step_time_s: inconclusive (lower is better), median 0.1565 → 0.1721 (+9.97%)"),
            "{text}"
        );
        assert!(text.contains("1 vs 1 run, between-run CV 5.0% (default floor, 4 dof)"), "{text}");
        assert!(text.contains("runs a side would resolve"), "{text}");
        assert_eq!(p_value(Some(0.0)), "0.000");
        assert_eq!(p_value(Some(1.6e-4)), "1.6e-4");
    }
}
