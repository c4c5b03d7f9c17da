//! A session as terminal text (`falcon session show`): its experiments with the median of each metric, the keys
//! that differ between them, and the sweep grid the dashboard draws.

use crate::goals::{SessionDetail, SessionGrid};
use crate::render::numbers::{config_values, num, percent};
use crate::render::text::new_table;
use crate::session_grid::value_label;

/// The session as lines of text, tables included.
pub fn text(detail: &SessionDetail) -> String {
    let mut out: Vec<String> = Vec::new();
    let view = &detail.view;
    out.push(format!(
        "{} {} — {} ({} experiments)",
        view.session.id,
        view.session.name,
        view.status,
        view.experiments.len()
    ));
    let mut t = new_table(false, ["id", "name", "status", "attempt", "config", "median of each metric", ""]);
    for (e, row) in detail.experiments() {
        let medians: Vec<String> = row.metrics.iter().map(|(name, m)| format!("{name} {}", num(m.median))).collect();
        t.add_row([
            e.id.to_string(),
            e.name.clone(),
            e.status.to_string(),
            e.attempt.to_string(),
            e.config_hash.chars().take(12).collect(),
            if medians.is_empty() { "—".into() } else { medians.join("\n") },
            if row.baseline_rerun { "re-run of baseline".into() } else { String::new() },
        ]);
    }
    out.push(t.to_string());
    let goodput = falcon_exp::goodput::GOODPUT_METRIC;
    let best = detail
        .experiments()
        .filter_map(|(e, row)| Some((e.id, row.metrics.get(goodput)?.median)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((id, percent_held)) = best {
        out.push(format!(
            "best goodput: {id} at {} of its held time (`falcon goodput --session {}`: each run's causes)",
            percent(percent_held),
            view.session.id
        ));
    }
    if !view.differences.is_empty() {
        let mut d = new_table(false, ["key", "group", "values"]);
        let (config, bookkeeping): (Vec<_>, Vec<_>) = view.differences.iter().partition(|r| !r.group.is_bookkeeping());
        for row in config.into_iter().chain(bookkeeping) {
            let values = config_values(&row.values.iter().map(Option::as_ref).collect::<Vec<_>>());
            d.add_row([row.path.clone(), row.group.to_string(), values.join(" | ")]);
        }
        out.push(d.to_string());
    }
    out.push(grid(&detail.grid));
    out.join("\n")
}

/// The sweep as the dashboard draws it: one table per facet, rows × columns of the grid's metric, `★` on the
/// best cell, `(n)` where repeats share a cell.
pub fn grid(g: &SessionGrid) -> String {
    let mut out: Vec<String> = Vec::new();
    let label = |v: Option<&serde_json::Value>| v.map(value_label).unwrap_or_else(|| "runs".into());
    let rows: Vec<Option<&serde_json::Value>> =
        if g.row_values.is_empty() { vec![None] } else { g.row_values.iter().map(Some).collect() };
    let cols: Vec<Option<&serde_json::Value>> =
        if g.column_values.is_empty() { vec![None] } else { g.column_values.iter().map(Some).collect() };
    let direction = match g.direction {
        Some(falcon_core::stats::Direction::LowerIsBetter) => "lower is better, ★ the best",
        Some(falcon_core::stats::Direction::HigherIsBetter) => "higher is better, ★ the best",
        None => "no standard direction: no cell is best",
    };
    out.push(format!("\n{} over the sweep (median of each point's runs; {direction})", g.metric));
    for facet in &g.facets {
        if !facet.fixed.is_empty() {
            let fixed: Vec<String> =
                facet.fixed.iter().map(|f| format!("{} = {}", f.key, value_label(&f.value))).collect();
            out.push(fixed.join(", "));
        }
        let corner = match (&g.rows_key, &g.columns_key) {
            (Some(r), Some(c)) => format!("{r} ↓ · {c} →"),
            (None, Some(c)) => format!("{c} →"),
            _ => String::new(),
        };
        let header: Vec<String> =
            std::iter::once(corner).chain(cols.iter().map(|c| c.map(value_label).unwrap_or_default())).collect();
        let mut t = new_table(false, header.iter().map(String::as_str));
        for (ri, r) in rows.iter().enumerate() {
            let mut line = vec![label(*r)];
            for cell in facet.cells.get(ri).into_iter().flatten() {
                line.push(match (cell.experiments.first(), cell.value) {
                    (None, _) => "–".to_string(),
                    (Some(id), None) => {
                        format!("{id} {}", cell.statuses.first().map(|s| s.to_string()).unwrap_or_default())
                    }
                    (Some(id), Some(v)) => format!(
                        "{}{}{} {id}",
                        if cell.best { "★ " } else { "" },
                        num(v),
                        if cell.experiments.len() > 1 {
                            format!(" (n = {})", cell.experiments.len())
                        } else {
                            String::new()
                        },
                    ),
                });
            }
            t.add_row(line);
        }
        out.push(t.to_string());
    }
    if g.no_axes {
        out.push("(no stored sweep axes: the runs are one row)".to_string());
    }
    out.join("\n")
}
