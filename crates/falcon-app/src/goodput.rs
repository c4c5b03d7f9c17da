//! Goodput use cases: one experiment's (`exp show`'s goodput block, `GET /experiments/{id}/goodput`), and chip-hours
//! by cause across many runs (`falcon goodput`, `GET /goodput`, the `goodput` MCP tool).
//!
//! EXP gives each experiment's attempts, devices and step clock ([`falcon_exp::goodput::GoodputRecord`]); analysis
//! computes ([`falcon_analysis::goodput`]); this module only joins them. Nothing is stored: a goodput is computed
//! from the metrics artifacts when asked.

use crate::ctx::Ctx;
use crate::error::{AppError, Result};
pub use crate::experiment_goodput::input_of;
use crate::experiment_goodput::of_record;
use crate::experiments::ListQuery;
use falcon_analysis::goodput::totals;
pub use falcon_analysis::goodput::{Badput, Cause, Goodput, GoodputTotals};
use falcon_core::ids::ExperimentId;
use serde::Serialize;

/// Runs a report sums at most (newest first); more are counted in `truncated`.
pub const MAX_RUNS: usize = 5_000;

/// Which runs `falcon goodput` sums: an experiment list's filters (`session`, `goal`, `since`, labels, …) and a pool.
#[derive(Debug, Clone, Default)]
pub struct GoodputQuery {
    pub list: ListQuery,
    /// Only runs whose job last ran on this pool.
    pub pool: Option<String>,
}

/// One run of a report.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RunGoodput {
    pub id: ExperimentId,
    pub name: String,
    pub status: falcon_core::status::ExperimentStatus,
    pub pool: Option<String>,
    pub goodput: Goodput,
}

/// Goodput across runs: each run's, and their chip-seconds summed by cause.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct GoodputReport {
    /// Ended runs that matched, newest first.
    pub runs: Vec<RunGoodput>,
    pub totals: GoodputTotals,
    /// The run with the highest goodput.
    pub best: Option<ExperimentId>,
    /// Matching runs left out beyond [`MAX_RUNS`].
    pub truncated: usize,
    /// One line: "4 runs, 12.3 chip-hours held: 62 % goodput; start-up 18 %, compile 9 %, input 7 %".
    pub headline: String,
}

/// Goodput of the ended runs a query names, and their sums.
pub(crate) async fn goodput_report(cx: &Ctx, query: &GoodputQuery) -> Result<GoodputReport> {
    let exp = cx.exp().await?;
    let mut filter = query.list.filter()?;
    filter.limit = 500;
    let mut runs = Vec::new();
    let mut truncated = 0;
    loop {
        let page = exp.list(&filter).await?;
        let Some(last) = page.last().map(|r| r.id) else { break };
        for record in page.into_iter().filter(|r| r.status.is_terminal()) {
            if runs.len() >= MAX_RUNS {
                truncated += 1;
                continue;
            }
            let read = exp.goodput_record(record.id).await.map_err(AppError::from);
            let pool = read.as_ref().ok().and_then(|r| r.pool.clone());
            if query.pool.as_ref().is_some_and(|p| pool.as_ref() != Some(p)) {
                continue;
            }
            let goodput = of_record(read);
            runs.push(RunGoodput { id: record.id, name: record.name, status: record.status, pool, goodput });
        }
        filter.before = Some(last);
    }
    let totals = totals(runs.iter().map(|r| &r.goodput));
    let best = runs
        .iter()
        .filter_map(|r| Some((r.id, r.goodput.goodput_percent?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(id, _)| id);
    let headline = headline(&totals, runs.len());
    Ok(GoodputReport { runs, totals, best, truncated, headline })
}

/// "4 runs, 12.3 chip-hours held: 62 % goodput; start-up 18 %, compile 9 %, input 7 %".
pub fn headline(t: &GoodputTotals, runs: usize) -> String {
    let held = format!("{runs} run(s), {:.2} chip-hours held", t.held_chip_seconds / 3600.0);
    let Some(g) = t.goodput_percent else { return format!("{held}: no goodput (nothing held)") };
    let mut top: Vec<_> = t.badput.iter().filter(|b| b.percent >= 0.5).collect();
    top.sort_by(|a, b| b.percent.total_cmp(&a.percent));
    let parts: Vec<String> = top.iter().take(3).map(|b| format!("{} {:.0} %", b.cause.short(), b.percent)).collect();
    match parts.is_empty() {
        true => format!("{held}: {g:.0} % goodput"),
        false => format!("{held}: {g:.0} % goodput; {}", parts.join(", ")),
    }
}
