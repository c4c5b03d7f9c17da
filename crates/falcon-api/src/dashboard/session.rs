//! The session page (`/sessions/{id}`): a sweep as a grid — the chosen metric over the first two swept keys
//! (rows × columns; further keys give one grid each, a facet), every cell its value as text and a colour from
//! worse to better, the best cell marked, each cell a link to its experiment. Repeats of one point share a
//! cell (the median of their values, `n` shown). A session without stored axes (made before they were kept)
//! or with one key is drawn as one row.

use super::{error_page, principal, render, status_badge, Shell};
use crate::error::{ApiError, ApiResult};
use crate::routes::query_pairs;
use crate::routes::Path;
use crate::state::State;
use axum::extract::{RawQuery, Request, State as Extract};
use axum::response::Response;
use falcon_app::goals::parse_session_id;
use falcon_app::render::markup::escape;
use falcon_app::render::numbers::significant;
use falcon_core::stats::verdict::direction_for;
use falcon_core::stats::Direction;
use serde_json::Value;
use std::collections::BTreeSet;
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
        Ok((title, body)) => {
            render(Shell { title: &title, data: Some(format!("/api/v1/sessions/{id}")), viewer: viewer.as_ref(), body })
        }
        Err(e) => error_page(e, viewer.as_ref()),
    }
}

/// One swept key and its values, from the session's stored sweep.
struct Axis {
    key: String,
    values: Vec<Value>,
}

fn axes(spec: &Value) -> Vec<Axis> {
    let Some(list) = spec.get("axes").and_then(Value::as_array) else { return Vec::new() };
    list.iter()
        .filter_map(|a| {
            let key = a.get("key")?.as_str()?.to_string();
            let values = a.get("values")?.as_array()?.clone();
            Some(Axis { key, values })
        })
        .collect()
}

/// The value at a dotted spec path (`config.batch_size`; a number segment indexes a list).
fn at<'a>(spec: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(spec, |v, seg| match v {
        Value::Object(m) => m.get(seg),
        Value::Array(a) => a.get(seg.parse::<usize>().ok()?),
        _ => None,
    })
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn median(mut xs: Vec<f64>) -> Option<f64> {
    xs.retain(|x| x.is_finite());
    xs.sort_by(f64::total_cmp);
    match xs.len() {
        0 => None,
        n if n % 2 == 1 => Some(xs[n / 2]),
        n => Some((xs[n / 2 - 1] + xs[n / 2]) / 2.0),
    }
}

/// One cell: its experiments and the median of their metric values.
#[derive(Default)]
struct Cell {
    ids: Vec<String>,
    value: Option<f64>,
    statuses: Vec<falcon_core::status::ExperimentStatus>,
}

async fn build(state: &State, id: &str, raw: Option<&str>) -> ApiResult<(String, String)> {
    let sid = parse_session_id(id)?;
    let detail = state.app.session(sid).await?;
    let view = &detail.view;
    let mut metrics: BTreeSet<String> = BTreeSet::new();
    for (_, row) in detail.experiments() {
        metrics.extend(row.metrics.keys().cloned());
    }
    let mut metric = None;
    for (k, v) in query_pairs(raw)? {
        match k.as_str() {
            "metric" if !v.trim().is_empty() => metric = Some(v.trim().to_string()),
            "metric" => {}
            other => return Err(ApiError::usage(format!("unknown query parameter `{other}`"))),
        }
    }
    let goal_metric = match view.session.goal {
        Some(g) => Some(state.app.goal(g).await?.metric),
        None => None,
    };
    let metric = metric
        .or(goal_metric.filter(|m| metrics.contains(m)))
        .or_else(|| {
            ["step_time_s", "tokens_per_s", "loss"].iter().find(|m| metrics.contains(**m)).map(|m| m.to_string())
        })
        .or_else(|| metrics.iter().next().cloned())
        .unwrap_or_else(|| "step_time_s".to_string());
    let direction = direction_for(&metric);

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
    for m in &metrics {
        let sel = if *m == metric { " selected" } else { "" };
        let _ = write!(s, "<option{sel}>{}</option>", escape(m));
    }
    s.push_str("</select></label> <button type=\"submit\">Show</button></form>");

    let axes = axes(&view.session.spec);
    let (rows_axis, cols_axis, facet_axes) = match axes.len() {
        0 => (None, None, &axes[..0]),
        1 => (None, Some(&axes[0]), &axes[..0]),
        _ => (Some(&axes[0]), Some(&axes[1]), &axes[2..]),
    };
    // Facets: every combination of the further axes' values.
    let mut facets: Vec<Vec<(&str, &Value)>> = vec![Vec::new()];
    for a in facet_axes {
        facets = facets
            .into_iter()
            .flat_map(|f| a.values.iter().map(move |v| [f.clone(), vec![(a.key.as_str(), v)]].concat()))
            .collect();
    }
    // Every cell of every facet, then the best over all.
    let mut grids = Vec::new();
    for facet in &facets {
        let row_values: Vec<Option<&Value>> = match rows_axis {
            Some(a) => a.values.iter().map(Some).collect(),
            None => vec![None],
        };
        let col_values: Vec<Option<&Value>> = match cols_axis {
            Some(a) => a.values.iter().map(Some).collect(),
            None => vec![None],
        };
        let mut cells: Vec<Vec<Cell>> =
            row_values.iter().map(|_| col_values.iter().map(|_| Cell::default()).collect()).collect();
        let mut per_cell: Vec<Vec<Vec<f64>>> =
            row_values.iter().map(|_| col_values.iter().map(|_| Vec::new()).collect()).collect();
        for (record, row) in detail.experiments() {
            if facet.iter().any(|(k, v)| at(&record.spec, k) != Some(*v)) {
                continue;
            }
            let ri = match rows_axis {
                Some(a) => row_values.iter().position(|v| at(&record.spec, &a.key) == *v),
                None => Some(0),
            };
            let ci = match cols_axis {
                Some(a) => col_values.iter().position(|v| at(&record.spec, &a.key) == *v),
                None => Some(0),
            };
            let (Some(ri), Some(ci)) = (ri, ci) else { continue };
            cells[ri][ci].ids.push(record.id.to_string());
            cells[ri][ci].statuses.push(record.status);
            if let Some(v) = row.metrics.get(&metric).map(|m| m.median) {
                per_cell[ri][ci].push(v);
            }
        }
        for (ri, row) in per_cell.into_iter().enumerate() {
            for (ci, values) in row.into_iter().enumerate() {
                cells[ri][ci].value = median(values);
            }
        }
        grids.push((facet.clone(), row_values, col_values, cells));
    }
    let all: Vec<f64> = grids.iter().flat_map(|g| g.3.iter().flatten().filter_map(|c| c.value)).collect();
    let (lo, hi) = all.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(*v), h.max(*v)));
    let better_low = direction == Some(Direction::LowerIsBetter);
    let best = match direction {
        Some(Direction::LowerIsBetter) => Some(lo),
        Some(Direction::HigherIsBetter) => Some(hi),
        None => None,
    }
    .filter(|b| b.is_finite());

    let _ = write!(
        s,
        "<section><h2>{} over the sweep</h2><p class=\"hint\">Each cell: the median {} of its runs (n runs when repeated); {}. Click a cell for its experiment.</p>",
        escape(&metric),
        escape(&metric),
        match direction {
            Some(Direction::LowerIsBetter) => "lower is better: greener is better, ★ marks the best",
            Some(Direction::HigherIsBetter) => "higher is better: greener is better, ★ marks the best",
            None => "this metric has no standard direction, so no cell is called best",
        }
    );
    for (facet, row_values, col_values, cells) in &grids {
        if !facet.is_empty() {
            let title: Vec<String> = facet.iter().map(|(k, v)| format!("{} = {}", k, show(v))).collect();
            let _ = write!(s, "<h3>{}</h3>", escape(&title.join(", ")));
        }
        let caption = match (rows_axis, cols_axis) {
            (Some(r), Some(c)) => format!("{} by {} (rows) and {} (columns)", metric, r.key, c.key),
            (None, Some(c)) => format!("{} by {}", metric, c.key),
            _ => format!("{metric} of each run"),
        };
        let _ = write!(
            s,
            "<div class=\"table-wrap\"><table class=\"grid\"><caption>{}</caption><thead><tr>",
            escape(&caption)
        );
        let corner = match (rows_axis, cols_axis) {
            (Some(r), Some(c)) => format!("{} ↓ · {} →", r.key, c.key),
            (None, Some(c)) => format!("{} →", c.key),
            _ => String::new(),
        };
        let _ = write!(s, "<th scope=\"col\">{}</th>", escape(&corner));
        for c in col_values {
            let _ = write!(s, "<th scope=\"col\">{}</th>", c.map(show).map(|t| escape(&t)).unwrap_or_default());
        }
        s.push_str("</tr></thead><tbody>");
        for (ri, r) in row_values.iter().enumerate() {
            let _ = write!(
                s,
                "<tr><th scope=\"row\">{}</th>",
                r.map(show).map(|t| escape(&t)).unwrap_or_else(|| "runs".into())
            );
            for cell in &cells[ri] {
                s.push_str(&cell_html(cell, lo, hi, better_low, direction.is_some(), best));
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table></div>");
    }
    if axes.is_empty() {
        s.push_str("<p class=\"note\">This session has no stored sweep axes (it was made before they were kept, or it repeats one spec): its runs are shown as one row.</p>");
    }
    s.push_str("</section>");
    Ok((format!("{sid} · {}", view.session.name), s))
}

fn cell_html(cell: &Cell, lo: f64, hi: f64, better_low: bool, directed: bool, best: Option<f64>) -> String {
    let Some(first) = cell.ids.first() else { return "<td class=\"cell empty\">–</td>".to_string() };
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
    let is_best = best.is_some_and(|b| b == v);
    let n =
        if cell.ids.len() > 1 { format!(" <span class=\"hint\">n = {}</span>", cell.ids.len()) } else { String::new() };
    format!(
        "<td class=\"cell{}\"{style}><a href=\"/experiments/{first}\">{}{}</a>{n}</td>",
        if is_best { " best" } else { "" },
        if is_best { "★ " } else { "" },
        escape(&significant(Some(v), 4)),
    )
}
