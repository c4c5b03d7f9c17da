//! Goodput as terminal text: `exp show`'s block (a headline, then where the held time went) and `falcon goodput`'s
//! table of runs with their sums.

use crate::goodput::GoodputReport;
use crate::render::numbers::{num, percent};
use crate::render::text::{new_table, printable};
use falcon_analysis::goodput::{Badput, Goodput};

/// `exp show`'s goodput block.
pub fn lines(g: &Goodput) -> Vec<String> {
    let mut out = vec![format!("goodput: {}", g.headline())];
    if g.held_s > 0.0 {
        out.push(format!(
            "  held {} ({} chip-s) over {} attempt(s); productive {} in {} step(s){}; waiting for capacity {} \
             (not held)",
            secs(g.held_s),
            num(g.held_chip_seconds),
            g.attempts,
            secs(g.productive_s),
            g.steps,
            g.steady_step_s.map_or(String::new(), |s| format!(" at {} a step", secs(s))),
            secs(g.waiting_s),
        ));
        out.extend(causes(&g.badput).lines().map(|l| format!("  {l}")));
    }
    out.extend(g.notes.iter().map(|n| format!("  note: {}", printable(n))));
    out
}

/// The causes with time in them, largest first.
fn causes(badput: &[Badput]) -> String {
    let mut rows: Vec<&Badput> = badput.iter().filter(|b| b.seconds > 0.0 || b.chip_seconds > 0.0).collect();
    rows.sort_by(|a, b| b.percent.total_cmp(&a.percent));
    let mut table = new_table(false, ["badput", "seconds", "chip-s", "% held"]);
    for b in rows {
        table.add_row([b.cause.short().to_string(), num(b.seconds), num(b.chip_seconds), num(b.percent)]);
    }
    table.to_string()
}

/// `falcon goodput`: one row per run, then the sums by cause.
pub fn report(r: &GoodputReport) -> String {
    let mut runs = new_table(false, ["run", "name", "status", "pool", "goodput", "held chip-s", "top badput"]);
    for run in &r.runs {
        let g = &run.goodput;
        let top = g.badput.iter().filter(|b| b.percent >= 0.5).max_by(|a, b| a.percent.total_cmp(&b.percent));
        runs.add_row([
            run.id.to_string(),
            printable(&run.name),
            run.status.to_string(),
            run.pool.clone().unwrap_or_else(|| "—".into()),
            g.goodput_percent.map_or("—".into(), percent),
            num(g.held_chip_seconds),
            top.map_or("—".into(), |b| format!("{} {:.0} %", b.cause.short(), b.percent)),
        ]);
    }
    let mut out = vec![runs.to_string(), r.headline.clone()];
    if r.totals.held_chip_seconds > 0.0 {
        out.push(causes(&r.totals.badput));
    }
    if let Some(best) = r.best {
        out.push(format!("best: {best}"));
    }
    if r.totals.runs_without > 0 {
        out.push(format!(
            "{} run(s) logged no step clock: their held time counts as unexplained",
            r.totals.runs_without
        ));
    }
    if r.truncated > 0 {
        out.push(format!("{} older run(s) left out (at most {} are summed)", r.truncated, crate::goodput::MAX_RUNS));
    }
    out.join("\n")
}

/// Seconds as `0.12 s`, `12.3 s`, `4 m 05 s`, `2 h 03 m`: the shared formatter under two minutes, then minutes
/// and hours (a held time of hours reads better as `2 h 03 m` than as `7380 s`).
fn secs(s: f64) -> String {
    match s {
        s if s < 120.0 => crate::render::numbers::duration_s(s),
        s if s < 7200.0 => format!("{} m {:02} s", (s / 60.0) as u64, (s % 60.0) as u64),
        s => format!("{} h {:02} m", (s / 3600.0) as u64, ((s % 3600.0) / 60.0) as u64),
    }
}
