//! The history page (`/history?name=N&metric=M`): one metric across the completed runs of a name, oldest
//! first, with the change points marked (EXP's small-n shift detector, as `falcon exp history`).

use super::{error_page, principal, render, time, Shell};
use crate::error::{ApiError, ApiResult};
use crate::request::query_pairs;
use crate::state::State;
use axum::extract::{RawQuery, Request, State as Extract};
use axum::response::Response;
use falcon_app::render::markup::escape;
use falcon_app::render::numbers::num;
use falcon_app::render::svg::{line_chart, Line, LineChart, BLUE};
use std::fmt::Write;
use std::sync::Arc;

pub async fn page(Extract(state): Extract<Arc<State>>, RawQuery(raw): RawQuery, req: Request) -> Response {
    let viewer = principal(&req);
    match build(&state, raw.as_deref()).await {
        Ok((body, data)) => render(Shell { title: "History", data, viewer: viewer.as_ref(), body }),
        Err(e) => error_page(e, viewer.as_ref()),
    }
}

async fn build(state: &State, raw: Option<&str>) -> ApiResult<(String, Option<String>)> {
    let (mut name, mut metric) = (String::new(), falcon_app::requests::DEFAULT_METRIC.to_string());
    for (k, v) in query_pairs(raw)? {
        match k.as_str() {
            "name" => name = v.trim().to_string(),
            "metric" if !v.trim().is_empty() => metric = v.trim().to_string(),
            "metric" => {}
            other => return Err(ApiError::usage(format!("unknown query parameter `{other}`"))),
        }
    }
    let mut s = format!(
        "<form method=\"get\" action=\"/history\" class=\"filters\"><label>Name <input name=\"name\" value=\"{}\" placeholder=\"exact experiment name\" size=\"32\" required></label> \
         <label>Metric <input name=\"metric\" value=\"{}\" size=\"16\"></label> <button type=\"submit\">Show</button></form>",
        escape(&name),
        escape(&metric)
    );
    if name.is_empty() {
        s.push_str("<p class=\"empty\">Name a series: the experiments run under one name (the experiment page links here).</p>");
        return Ok((s, None));
    }
    let req = falcon_app::requests::ExperimentHistoryRequest {
        name: Some(name.clone()),
        config_hash: None,
        label: Vec::new(),
        branch: None,
        metric: metric.clone(),
    };
    let h = state.app.history(&req).await?;
    let _ = write!(s, "<section><h2>{} of “{}”</h2>", escape(&metric), escape(&name));
    if h.history.points.is_empty() {
        s.push_str("<p class=\"empty\">No completed run of this name has this metric.</p></section>");
        return Ok((s, Some(format!("/api/v1/experiments?name={}", escape(&name)))));
    }
    let points: Vec<(f64, f64)> = h.history.points.iter().enumerate().map(|(i, p)| ((i + 1) as f64, p.value)).collect();
    let marks: Vec<(f64, String)> = h
        .history
        .changes
        .iter()
        .map(|c| ((c.index + 1) as f64 - 0.5, format!("{:+.1} % from {}", c.delta_rel * 100.0, c.experiment)))
        .collect();
    let chart = LineChart {
        title: format!("{metric} across the runs of {name}"),
        x_label: "run (oldest first)".into(),
        y_label: metric.clone(),
        lines: vec![Line { label: metric.clone(), points, color: BLUE, dashed: false, dots: true }],
        marks,
        ..Default::default()
    };
    let _ = write!(
        s,
        "<figure>{}<figcaption>Each run's {} ({} runs); red dashed lines: the change points found.</figcaption></figure>",
        line_chart(&chart),
        escape(&metric),
        h.history.points.len()
    );
    if h.history.changes.is_empty() {
        let _ = write!(s, "<p>No change point: {}</p>", escape(&h.history.power_note));
    } else {
        s.push_str("<div class=\"table-wrap\"><table><thead><tr><th scope=\"col\">from</th><th scope=\"col\">before</th><th scope=\"col\">after</th><th scope=\"col\">change</th><th scope=\"col\">95 % CI</th><th scope=\"col\">p</th><th scope=\"col\">runs before / after</th></tr></thead><tbody>");
        for c in &h.history.changes {
            let _ = write!(
                s,
                "<tr><td><a href=\"/experiments/{e}\">{e}</a>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:+.2} %</td><td class=\"num\">[{:+.2} %, {:+.2} %]</td><td class=\"num\">{}</td><td class=\"num\">{} / {}</td></tr>",
                match c.regression {
                    Some(true) => " <strong class=\"bad\">✖ regression</strong>",
                    Some(false) => " <strong class=\"ok\">✔ improvement</strong>",
                    None => "",
                },
                num(c.before),
                num(c.after),
                c.delta_rel * 100.0,
                c.ci_low_rel * 100.0,
                c.ci_high_rel * 100.0,
                falcon_app::render::verdict::p_value(Some(c.p_value)),
                c.runs_before,
                c.runs_after,
                e = c.experiment,
            );
        }
        s.push_str("</tbody></table></div>");
    }
    if let Some(note) = &h.note {
        let _ = write!(s, "<p class=\"note\">{}</p>", escape(note));
    }
    s.push_str("<h3>Runs</h3><div class=\"table-wrap\"><table><thead><tr><th scope=\"col\">#</th><th scope=\"col\">experiment</th><th scope=\"col\">created</th><th scope=\"col\">config</th><th scope=\"col\">value</th></tr></thead><tbody>");
    for (i, p) in h.history.points.iter().enumerate() {
        let _ = write!(
            s,
            "<tr><td class=\"num\">{}</td><td><a href=\"/experiments/{e}\">{e}</a></td><td>{}</td><td><code>{}</code></td><td class=\"num\">{}</td></tr>",
            i + 1,
            time(p.created),
            escape(p.config_hash.get(..12).unwrap_or(&p.config_hash)),
            num(p.value),
            e = p.experiment,
        );
    }
    s.push_str("</tbody></table></div></section>");
    Ok((s, Some(format!("/api/v1/experiments?name={}", escape(&name)))))
}
