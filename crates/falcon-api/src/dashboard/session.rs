//! The session page (`/sessions/{id}`): a sweep as a grid — the chosen metric over the first two swept keys
//! (rows × columns; further keys give one grid each, a facet), every cell its value as text and a colour from
//! worse to better, the best cell marked, each cell a link to its experiment. Repeats of one point share a
//! cell (the median of their values, `n` shown). A session without stored axes (made before they were kept)
//! or with one key is drawn as one row. A bisection's session is drawn as its search (`super::bisect`).

use super::{error_page, principal, render, status_badge, Shell};
use crate::error::{ApiError, ApiResult};
use crate::request::query_pairs;
use crate::request::Path;
use crate::state::State;
use axum::extract::{RawQuery, Request, State as Extract};
use axum::response::Response;
use falcon_app::goals::parse_session_id;
use falcon_app::render::markup::escape;
use falcon_app::render::numbers::num;
use falcon_app::session_grid::{value_label as show, GridCell};
use falcon_core::stats::Direction;
use serde_json::Value;
use std::fmt::Write;
use std::sync::Arc;

pub async fn page(
    Extract(state): Extract<Arc<State>>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
    req: Request,
) -> Response {
    let viewer = principal(&req);
    match build(&state, &id, raw.as_deref()).await {
        Ok((title, body, data)) => render(Shell { title: &title, data: Some(data), viewer: viewer.as_ref(), body }),
        Err(e) => error_page(e, viewer.as_ref()),
    }
}

/// The page's title, body and JSON link.
async fn build(state: &State, id: &str, raw: Option<&str>) -> ApiResult<(String, String, String)> {
    let sid = parse_session_id(id)?;
    let mut metric = None;
    for (k, v) in query_pairs(raw)? {
        match k.as_str() {
            "metric" if !v.trim().is_empty() => metric = Some(v.trim().to_string()),
            "metric" => {}
            other => return Err(ApiError::usage(format!("unknown query parameter `{other}`"))),
        }
    }
    let detail = state.app.session_with_metric(sid, metric.as_deref()).await?;
    if detail.view.session.kind.as_str() == "bisect" {
        return super::bisect::build(state, &detail).await;
    }
    let view = &detail.view;
    let grid = &detail.grid;
    let metric = &grid.metric;
    let direction = grid.direction;

    let mut s = format!(
        "<section class=\"summary\"><dl><dt>Status</dt><dd>{}</dd><dt>Experiments</dt><dd>{} · <a href=\"/?session={sid}\">as a list</a></dd>",
        status_badge(view.status),
        view.experiments.len()
    );
    if let Some(g) = view.session.goal {
        let _ = write!(s, "<dt>Goal</dt><dd><a href=\"/goals/{g}\">{g}</a></dd>");
    }
    s.push_str("</dl></section>");
    // The metric picker (a GET form).
    s.push_str("<form method=\"get\" class=\"filters\"><label>Metric <select name=\"metric\">");
    for m in &grid.metrics {
        let sel = if m == metric { " selected" } else { "" };
        let _ = write!(s, "<option{sel}>{}</option>", escape(m));
    }
    s.push_str("</select></label> <button type=\"submit\">Show</button></form>");

    let (lo, hi) = grid.range.map_or((0.0, 0.0), |[lo, hi]| (lo, hi));
    let better_low = direction == Some(Direction::LowerIsBetter);

    let _ = write!(
        s,
        "<section><h2>{} over the sweep</h2><p class=\"hint\">Each cell: the median {} of its runs (n runs when repeated); {}. Click a cell for its experiment.</p>",
        escape(metric),
        escape(metric),
        match direction {
            Some(Direction::LowerIsBetter) => "lower is better: greener is better, ★ marks the best",
            Some(Direction::HigherIsBetter) => "higher is better: greener is better, ★ marks the best",
            None => "this metric has no standard direction, so no cell is called best",
        }
    );
    let rows: Vec<Option<&Value>> =
        if grid.row_values.is_empty() { vec![None] } else { grid.row_values.iter().map(Some).collect() };
    let cols: Vec<Option<&Value>> =
        if grid.column_values.is_empty() { vec![None] } else { grid.column_values.iter().map(Some).collect() };
    for facet in &grid.facets {
        if !facet.fixed.is_empty() {
            let title: Vec<String> = facet.fixed.iter().map(|f| format!("{} = {}", f.key, show(&f.value))).collect();
            let _ = write!(s, "<h3>{}</h3>", escape(&title.join(", ")));
        }
        let caption = match (&grid.rows_key, &grid.columns_key) {
            (Some(r), Some(c)) => format!("{metric} by {r} (rows) and {c} (columns)"),
            (None, Some(c)) => format!("{metric} by {c}"),
            _ => format!("{metric} of each run"),
        };
        let _ = write!(
            s,
            "<div class=\"table-wrap\"><table class=\"grid\"><caption>{}</caption><thead><tr>",
            escape(&caption)
        );
        let corner = match (&grid.rows_key, &grid.columns_key) {
            (Some(r), Some(c)) => format!("{r} ↓ · {c} →"),
            (None, Some(c)) => format!("{c} →"),
            _ => String::new(),
        };
        let _ = write!(s, "<th scope=\"col\">{}</th>", escape(&corner));
        for c in &cols {
            let _ = write!(s, "<th scope=\"col\">{}</th>", c.map(show).map(|t| escape(&t)).unwrap_or_default());
        }
        s.push_str("</tr></thead><tbody>");
        for (ri, r) in rows.iter().enumerate() {
            let _ = write!(
                s,
                "<tr><th scope=\"row\">{}</th>",
                r.map(show).map(|t| escape(&t)).unwrap_or_else(|| "runs".into())
            );
            for cell in facet.cells.get(ri).into_iter().flatten() {
                s.push_str(&cell_html(cell, lo, hi, better_low, direction.is_some()));
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table></div>");
    }
    if grid.no_axes {
        s.push_str("<p class=\"note\">This session has no stored sweep axes (it was made before they were kept, or it repeats one spec): its runs are shown as one row.</p>");
    }
    s.push_str("</section>");
    Ok((format!("{sid} · {}", view.session.name), s, format!("/api/v1/sessions/{id}")))
}

fn cell_html(cell: &GridCell, lo: f64, hi: f64, better_low: bool, directed: bool) -> String {
    let Some(first) = cell.experiments.first() else { return "<td class=\"cell empty\">–</td>".to_string() };
    let Some(v) = cell.value else {
        let st = cell.statuses.first().map(|s| s.to_string()).unwrap_or_default();
        return format!(
            "<td class=\"cell\"><a href=\"/experiments/{first}\">{first}</a><br><span class=\"hint\">{}</span></td>",
            escape(&st)
        );
    };
    // 0 = worst, 1 = best (a metric without a direction: plain, no colour scale).
    let t = if hi > lo { (v - lo) / (hi - lo) } else { 1.0 };
    let goodness = if better_low { 1.0 - t } else { t };
    let style = if directed {
        format!(" style=\"background: hsl({:.0}, 70%, {:.0}%)\"", 8.0 + goodness * 112.0, 88.0 - goodness * 8.0)
    } else {
        String::new()
    };
    let is_best = cell.best;
    let n = if cell.experiments.len() > 1 {
        format!(" <span class=\"hint\">n = {}</span>", cell.experiments.len())
    } else {
        String::new()
    };
    format!(
        "<td class=\"cell{}\"{style}><a href=\"/experiments/{first}\">{}{}</a>{n}</td>",
        if is_best { " best" } else { "" },
        if is_best { "★ " } else { "" },
        escape(&num(v)),
    )
}
