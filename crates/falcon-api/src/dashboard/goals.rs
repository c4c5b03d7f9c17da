//! The goal pages: `/goals` (every goal, by status) and `/goals/{id}` — its progress over time (each
//! completed experiment's value against the target and the baseline), the ranking with each row's verdict,
//! the report one link away, and claim / release / achieve for a principal allowed to write.

use super::{can_write, error_page, principal, render, time, Shell};
use crate::error::{ApiError, ApiResult};
use crate::request::query_pairs;
use crate::request::Path;
use crate::state::State;
use axum::extract::{RawQuery, Request, State as Extract};
use axum::response::Response;
use falcon_app::goals::parse_goal_id;
use falcon_app::render::html::fmt_num;
use falcon_app::render::markup::escape;
use falcon_app::render::numbers::num;
use falcon_app::render::svg::{line_chart, Line, LineChart, Reference, BLUE, GREEN, GREY};
use falcon_app::tokens::Principal;
use falcon_core::status::GoalStatus;
use std::fmt::Write;
use std::sync::Arc;

pub async fn list(Extract(state): Extract<Arc<State>>, RawQuery(raw): RawQuery, req: Request) -> Response {
    let viewer = principal(&req);
    match build_list(&state, raw.as_deref()).await {
        Ok((body, data)) => render(Shell { title: "Goals", data: Some(data), viewer: viewer.as_ref(), body }),
        Err(e) => error_page(e, viewer.as_ref()),
    }
}

async fn build_list(state: &State, raw: Option<&str>) -> ApiResult<(String, String)> {
    let (mut status, mut cursor) = (None, None);
    for (k, v) in query_pairs(raw)? {
        match (k.as_str(), v.trim()) {
            (_, "") => {}
            ("status", v) => status = Some(v.to_string()),
            ("cursor", v) => cursor = Some(v.to_string()),
            (other, _) => return Err(ApiError::usage(format!("unknown query parameter `{other}`"))),
        }
    }
    let page = state.app.list_goals(status.as_deref(), cursor.as_deref(), 100).await?;
    let mut s = String::from("<form method=\"get\" action=\"/goals\" class=\"filters\"><label>Status <select name=\"status\"><option value=\"\">any</option>");
    for st in GoalStatus::ALL {
        let sel = if status.as_deref() == Some(st.as_str()) { " selected" } else { "" };
        let _ = write!(s, "<option{sel}>{st}</option>");
    }
    s.push_str("</select></label> <button type=\"submit\">Filter</button></form>");
    if page.items.is_empty() {
        s.push_str("<p class=\"empty\">No goal (create one with <code>falcon goal create</code>).</p>");
    } else {
        s.push_str("<div class=\"table-wrap\"><table><thead><tr>");
        for h in ["Id", "Title", "Status", "Metric", "Target", "Baseline", "Owner", "Priority", "Updated"] {
            let _ = write!(s, "<th scope=\"col\">{h}</th>");
        }
        s.push_str("</tr></thead><tbody>");
        for g in &page.items {
            let _ = write!(
                s,
                "<tr><td><a href=\"/goals/{id}\">{id}</a></td><td>{}</td><td>{}</td><td>{} ({})</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                escape(&g.title),
                g.status,
                escape(&g.metric),
                g.direction,
                g.target.map(fmt_num).unwrap_or_else(|| "–".into()),
                g.baseline.map(|b| format!("<a href=\"/experiments/{b}\">{b}</a>")).unwrap_or_else(|| "–".into()),
                g.owner.as_deref().map(escape).unwrap_or_else(|| "–".into()),
                g.priority,
                time(g.updated),
                id = g.id,
            );
        }
        s.push_str("</tbody></table></div>");
    }
    if let Some(next) = &page.next_cursor {
        let mut pairs = Vec::new();
        if let Some(st) = &status {
            pairs.push(("status", st.as_str()));
        }
        pairs.push(("cursor", next.as_str()));
        let _ = write!(
            s,
            "<nav class=\"pages\" aria-label=\"Pages\"><a rel=\"next\" href=\"/goals?{}\">More →</a></nav>",
            escape(&serde_urlencoded::to_string(pairs).unwrap_or_default())
        );
    }
    let data = match &status {
        Some(st) => format!("/api/v1/goals?status={}", escape(st)),
        None => "/api/v1/goals".to_string(),
    };
    Ok((s, data))
}

pub async fn page(Extract(state): Extract<Arc<State>>, Path(id): Path<String>, req: Request) -> Response {
    let viewer = principal(&req);
    match build(&state, &id, viewer.as_ref()).await {
        Ok((title, body)) => render(Shell {
            title: &title,
            data: Some(format!("/api/v1/goals/{id}/compare")),
            viewer: viewer.as_ref(),
            body,
        }),
        Err(e) => error_page(e, viewer.as_ref()),
    }
}

async fn build(state: &State, id: &str, viewer: Option<&Principal>) -> ApiResult<(String, String)> {
    let id = parse_goal_id(id)?;
    let c = state.app.compare_goal(id).await?;
    let g = &c.goal;
    let mut s = String::from("<section class=\"summary\"><dl>");
    let mut rows: Vec<(&str, String)> = vec![
        ("Status", format!("<strong>{}</strong>", g.status)),
        ("Metric", format!("{} ({})", escape(&g.metric), g.direction)),
        ("Target", g.target.map(fmt_num).unwrap_or_else(|| "none".into())),
        (
            "Baseline",
            match g.baseline {
                Some(b) => format!(
                    "<a href=\"/experiments/{b}\">{b}</a> ({})",
                    c.baseline_value.map(fmt_num).unwrap_or_else(|| "no value yet".into())
                ),
                None => "none".into(),
            },
        ),
        ("Owner", g.owner.as_deref().map(escape).unwrap_or_else(|| "nobody".into())),
    ];
    if let Some(l) = g.lease_expires {
        rows.push(("Lease until", time(l)));
    }
    if let Some(w) = &g.workload {
        rows.push(("Workload", escape(w)));
    }
    if let Some(h) = &g.hardware {
        rows.push(("Hardware", escape(h)));
    }
    let p = &c.progress;
    if let Some(best) = &c.best {
        let gap =
            p.gap_closed.map(|x| format!(", {:.0} % of the gap to the target closed", x * 100.0)).unwrap_or_default();
        rows.push((
            "Best",
            format!(
                "<a href=\"/experiments/{0}\">{0}</a> = {1}{2}{gap}",
                best.experiment,
                num(best.value),
                p.delta_vs_baseline.map(|d| format!(" ({:+.2} % vs the baseline)", d * 100.0)).unwrap_or_default()
            ),
        ));
    }
    for (k, v) in rows {
        let _ = write!(s, "<dt>{k}</dt><dd>{v}</dd>");
    }
    s.push_str("</dl>");
    if can_write(viewer) {
        s.push_str("<p class=\"actions\">");
        let goal_body = format!("{{\"id\": \"{id}\"}}");
        match g.status {
            GoalStatus::Open => {
                let _ = write!(
                    s,
                    "<button type=\"button\" data-post=\"/api/v1/goals/claim\" data-body=\"{}\">Claim</button> ",
                    escape(&goal_body)
                );
            }
            GoalStatus::Claimed
                if viewer.is_some_and(|v| {
                    v.scope.allows(falcon_core::auth::Scope::Admin) || g.owner.as_deref() == Some(v.name.as_str())
                }) =>
            {
                let _ = write!(s, "<button type=\"button\" data-post=\"/api/v1/goals/{id}/release\">Release</button> ");
                let _ = write!(s, "<button type=\"button\" data-post=\"/api/v1/goals/{id}/achieve\" data-confirm=\"Mark {id} achieved?\">Mark achieved</button> ");
            }
            _ => {}
        }
        s.push_str("</p>");
    }
    s.push_str("</section>");

    // Progress: the experiments in the order they were made, against the target and the baseline.
    s.push_str("<section><h2>Progress</h2>");
    let mut by_time: Vec<_> = c.rows.iter().collect();
    by_time.sort_by_key(|r| r.experiment);
    if by_time.is_empty() {
        s.push_str("<p class=\"empty\">No completed experiment with this metric yet.</p>");
    } else {
        let points: Vec<(f64, f64)> = by_time.iter().map(|r| (r.experiment.0 as f64, r.value)).collect();
        let mut references = Vec::new();
        if let Some(t) = g.target {
            references.push(Reference { y: t, label: format!("target {}", fmt_num(t)), color: GREEN });
        }
        if let Some(b) = c.baseline_value {
            references.push(Reference { y: b, label: format!("baseline {}", fmt_num(b)), color: GREY });
        }
        let chart = LineChart {
            title: format!("{} of each experiment of {id}", g.metric),
            x_label: "experiment (e-N)".into(),
            y_label: g.metric.clone(),
            lines: vec![Line { label: g.metric.clone(), points, color: BLUE, dashed: false, dots: true }],
            references,
            ..Default::default()
        };
        let _ = write!(
            s,
            "<figure>{}<figcaption>Each completed experiment's {} ({}), in the order they were made; dashed: the target and the baseline.</figcaption></figure>",
            line_chart(&chart),
            escape(&g.metric),
            by_time.first().map(|r| r.statistic).unwrap_or("median")
        );
    }
    s.push_str("</section>");

    s.push_str("<section><h2>Ranking</h2>");
    if !c.rows.is_empty() {
        s.push_str("<div class=\"table-wrap\"><table><thead><tr>");
        for h in ["Rank", "Experiment", "Name", "Value", "vs baseline", "Target met", "Verdict"] {
            let _ = write!(s, "<th scope=\"col\">{h}</th>");
        }
        s.push_str("</tr></thead><tbody>");
        for r in &c.rows {
            let mark = if r.baseline {
                " (baseline)"
            } else if r.baseline_rerun {
                " (baseline re-run)"
            } else {
                ""
            };
            let _ = write!(
                s,
                "<tr><td class=\"num\">{}</td><td><a href=\"/experiments/{e}\">{e}</a>{mark}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
                r.rank,
                escape(&r.name),
                num(r.value),
                r.delta_vs_baseline.map(|d| format!("{:+.2} %", d * 100.0)).unwrap_or_else(|| "–".into()),
                match r.meets_target {
                    Some(true) => "✔ yes",
                    Some(false) => "✖ no",
                    None => "–",
                },
                escape(&falcon_app::render::goal::row_verdict(r)),
                e = r.experiment,
            );
        }
        s.push_str("</tbody></table></div>");
    }
    let _ = write!(
        s,
        "<p>The goal report (progress, ranking, config diff and verdicts baseline → best, the profile comparison): \
         <a href=\"/api/v1/goals/{id}/report?format=html\">HTML</a> · <a href=\"/api/v1/goals/{id}/report?format=md\">Markdown</a> · \
         <a href=\"/api/v1/goals/{id}/report\">JSON</a> · its experiments: <a href=\"/?goal={id}\">list</a></p></section>"
    );
    Ok((format!("{id} · {}", g.title), s))
}
