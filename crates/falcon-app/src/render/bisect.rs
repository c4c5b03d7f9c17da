//! A bisection as text: the answer first, then every commit tested with its runs and verdict.

use super::compare_table::verdict_line;
use super::numbers::{num_opt, relative_percent};
use super::text::new_table;
use crate::contract::BisectView;

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

/// The view as a person reads it.
pub fn text(v: &BisectView) -> String {
    let mut out = Vec::new();
    out.push(format!(
        "bisect {} — {} over {} commits, {} (good) .. {} (bad): {}",
        v.session,
        v.metric,
        v.commits,
        short(&v.good.commit),
        short(&v.bad.commit),
        v.state
    ));
    if let Some(ends) = &v.verdict {
        out.push(format!("ends: {}", verdict_line(ends, false)));
    }
    match &v.culprit {
        Some(c) => {
            out.push(format!("culprit: {} \"{}\" — {}, {}", c.commit, c.subject, c.author, c.date));
            if let Some(cv) = &v.culprit_verdict {
                out.push(format!("  against its parent: {}", verdict_line(cv, false)));
            }
        }
        None if v.state == "decided" => out.push("culprit: none".into()),
        None => {}
    }
    out.push(v.message.clone());
    if !v.candidates.is_empty() {
        out.push("the change is in one of:".into());
        for c in &v.candidates {
            out.push(format!("  {} {}", short(&c.commit), c.subject));
        }
    }
    if !v.tested.is_empty() {
        let mut table = new_table(false, ["#", "commit", "subject", "runs", "median", "Δ vs good", "verdict"]);
        for t in &v.tested {
            let runs = if t.failed > 0 { format!("{} ({} failed)", t.runs, t.failed) } else { t.runs.to_string() };
            let subject: String = t.subject.chars().take(48).collect();
            table.add_row([
                t.index.to_string(),
                short(&t.commit).to_string(),
                subject,
                runs,
                num_opt(t.median),
                relative_percent(t.delta_rel),
                t.verdict.clone(),
            ]);
        }
        out.push(table.to_string());
    }
    out.push(format!("{} run(s) used; the runs: `falcon session show {}`", v.runs, v.session));
    out.join("\n")
}
