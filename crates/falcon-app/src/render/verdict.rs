//! One line per verdict, shared by every front end that prints one: the decision, the change with its interval,
//! the margin the interval is judged against and the p-value, and what it rests on — the runs a side, the
//! between-run noise and its source, and the repeats an inconclusive verdict would need.

use super::numbers::{num_opt, percent, relative_percent as pct};
use falcon_core::stats::verdict::NoiseSource;
use falcon_core::stats::Verdict;

pub use super::numbers::p_value;

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
        out.push_str(&format!(", between-run CV {} ({source}, {:.0} dof)", percent(cv.cv * 100.0), cv.dof));
    }
    if let Some(n) = v.repeats_needed {
        out.push_str(&format!("; ~{n} runs a side would {}", would_decide(v)));
    }
    out
}

/// What `repeats_needed` runs a side would decide: whether the two are within the margin (the shift seen is
/// under half of it) or whether the shift seen is a change.
pub fn would_decide(v: &Verdict) -> String {
    let e = v.min_effect.unwrap_or(falcon_core::stats::CompareOptions::default().min_effect);
    match v.delta_rel {
        Some(d) if d.abs() < e / 2.0 => format!("show whether the two are within ±{}", margin(e)),
        _ => "decide whether this shift is a change".to_string(),
    }
}

/// A margin as a reader sees it: `2 %`.
fn margin(e: f64) -> String {
    percent(e * 100.0)
}

/// For an `inconclusive` run-level verdict, the commands that would decide it: repeat each side up to
/// `repeats_needed` runs, then compare the configs (all their runs). `None` for a decided verdict.
pub fn how_to_decide(cmp: &crate::experiments::RunComparison) -> Option<String> {
    let v = &cmp.verdict;
    if v.verdict != falcon_core::stats::VerdictKind::Inconclusive {
        return None;
    }
    let Some(n) = v.repeats_needed else {
        return Some(format!(
            "no number of runs within reach decides this at ±{} (the shift seen sits on the margin): a wider margin, \
             or a lower run-to-run noise, would",
            margin(v.min_effect.unwrap_or(falcon_core::stats::CompareOptions::default().min_effect))
        ));
    };
    let config = |rows: &[crate::contract::RunRow]| {
        let mut hashes: Vec<&str> = rows.iter().map(|r| r.config_hash.as_str()).collect();
        hashes.sort_unstable();
        hashes.dedup();
        (hashes.len() == 1).then(|| format!("config:{}", hashes[0].chars().take(12).collect::<String>()))
    };
    let (a, b) = (config(&cmp.sides.a), config(&cmp.sides.b));
    let have = v.runs.map(|r| r.a.min(r.b)).unwrap_or(0);
    let mut out = format!(
        "to decide: {n} runs a side in all, {} more of each (`falcon session submit SPEC --repeats {}` with each \
         side's spec)",
        n.saturating_sub(have),
        n.saturating_sub(have).max(1)
    );
    if let (Some(a), Some(b)) = (a, b) {
        out.push_str(&format!(", then `falcon exp compare {a} {b} --metric {}`", v.metric));
    }
    Some(out)
}

/// `metric: verdict (direction), median A → B (Δ), 95% CI [lo, hi] vs margin ±e, p = …; evidence`.
pub fn line(v: &Verdict) -> String {
    let mut ci = match (v.ci_low_rel, v.ci_high_rel) {
        (Some(lo), Some(hi)) => format!("95% CI [{}, {}]", pct(Some(lo)), pct(Some(hi))),
        _ => "95% CI —".to_string(),
    };
    if let Some(e) = v.min_effect {
        ci.push_str(&format!(" vs margin ±{}", margin(e)));
    }
    let mut out = format!(
        "{}: {} ({}), median {} → {} ({}), {ci}, p = {}",
        v.metric,
        v.verdict.as_str(),
        v.direction.as_str().replace('_', " "),
        num_opt(v.a.median),
        num_opt(v.b.median),
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
            text.starts_with("step_time_s: inconclusive (lower is better), median 0.1565 → 0.1721 (+9.97 %)"),
            "{text}"
        );
        assert!(text.contains("vs margin ±2 %"), "{text}");
        assert!(text.contains("1 vs 1 run, between-run CV 5 % (default floor, 4 dof)"), "{text}");
        assert!(text.contains("runs a side would decide whether this shift is a change"), "{text}");
        // The quickstart's pair of issue 32 (−1.9 %, 95 % CI ±19 %): not `same` — inconclusive, with the runs.
        let tps = |a: f64, b: f64| {
            let o = CompareOptions::default();
            line(&compare_runs("tokens_per_s", Direction::HigherIsBetter, &[run(a)], &[run(b)], None, &o))
        };
        let text = tps(8531.0, 8368.0);
        assert!(text.starts_with("tokens_per_s: inconclusive"), "{text}");
        assert!(text.contains("runs a side would decide whether this shift is a change"), "{text}");
        // Nearly nothing seen: the runs that would show the two within the margin.
        let text = tps(8531.0, 8500.0);
        assert!(text.starts_with("tokens_per_s: inconclusive"), "{text}");
        assert!(text.contains("runs a side would show whether the two are within ±2 %"), "{text}");
        assert_eq!(p_value(Some(0.0)), "0");
        assert_eq!(p_value(Some(1.6e-4)), "1.6e-4");
    }
}
