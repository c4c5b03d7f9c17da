//! The compare page (`/compare/{a}/{b}`, A the baseline): the config diff, a verdict for every metric both
//! experiments logged (with its 95 % interval, p-value and what it rests on), and, when both hold a profile,
//! the profile comparison's cards, roofline moves, step-time distributions and op deltas (computed once under
//! the heavy-analysis limit, then kept as a report artifact like the API's).

use super::{error_page, principal, render, status_badge, Shell};
use crate::error::{ApiError, ApiResult};
use crate::request::Path;
use crate::request::{experiment_id, query_pairs};
use crate::state::State;
use axum::extract::{RawQuery, Request, State as Extract};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use falcon_app::experiments::CompareRequest;
use falcon_app::render::markup::escape;
use falcon_app::render::verdict;
use falcon_core::ids::ExperimentId;
use std::fmt::Write;
use std::sync::Arc;

/// `/compare?ids=e-1&ids=e-2` (the experiments page's form): on to `/compare/e-1/e-2`, the older as A.
pub async fn pick(RawQuery(raw): RawQuery, req: Request) -> Response {
    let viewer = principal(&req);
    let ids: ApiResult<Vec<ExperimentId>> = query_pairs(raw.as_deref())
        .and_then(|pairs| pairs.iter().filter(|(k, _)| k == "ids").map(|(_, v)| experiment_id(v)).collect());
    match ids {
        Ok(mut ids) if ids.len() == 2 => {
            ids.sort();
            let to = format!("/compare/{}/{}", ids[0], ids[1]);
            (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response()
        }
        Ok(ids) => error_page(
            ApiError::usage(format!("pick exactly two experiments to compare ({} picked)", ids.len())),
            viewer.as_ref(),
        ),
        Err(e) => error_page(e, viewer.as_ref()),
    }
}

pub async fn page(Extract(state): Extract<Arc<State>>, Path((a, b)): Path<(String, String)>, req: Request) -> Response {
    let viewer = principal(&req);
    match build(&state, &a, &b).await {
        Ok(body) => {
            let title = format!("Compare {a} → {b}");
            render(Shell {
                title: &title,
                data: Some(format!("/api/v1/experiments/{a}/diff/{b}")),
                viewer: viewer.as_ref(),
                body,
            })
        }
        Err(e) => error_page(e, viewer.as_ref()),
    }
}

async fn build(state: &State, a: &str, b: &str) -> ApiResult<String> {
    let (a, b) = (experiment_id(a)?, experiment_id(b)?);
    let (da, db) = (state.app.show_experiment(a, None).await?, state.app.show_experiment(b, None).await?);
    let mut s = String::from("<section class=\"sides\"><table><thead><tr><th scope=\"col\"></th><th scope=\"col\">Experiment</th><th scope=\"col\">Name</th><th scope=\"col\">Status</th></tr></thead><tbody>");
    for (side, d) in [("A (baseline)", &da), ("B", &db)] {
        let r = &d.view.record;
        let _ = write!(
            s,
            "<tr><th scope=\"row\">{side}</th><td><a href=\"/experiments/{0}\">{0}</a></td><td>{1}</td><td>{2}</td></tr>",
            r.id,
            escape(&r.name),
            status_badge(r.status)
        );
    }
    let _ = write!(s, "</tbody></table><p><a href=\"/compare/{b}/{a}\">Swap A and B</a></p></section>");

    let changes = state.app.diff_experiments(a, b).await?;
    // Its own section, heading included ("no differences" when the configs are the same).
    s.push_str(&falcon_app::render::config_diff::html_section(&changes));

    s.push_str("<section><h2>Metrics</h2>");
    let shared: Vec<&String> = da.view.metrics.keys().filter(|m| db.view.metrics.contains_key(*m)).collect();
    if shared.is_empty() {
        s.push_str("<p class=\"empty\">No metric logged by both (yet).</p>");
    } else {
        s.push_str("<div class=\"table-wrap\"><table><thead><tr><th scope=\"col\">metric</th><th scope=\"col\">verdict</th><th scope=\"col\">median A</th><th scope=\"col\">median B</th><th scope=\"col\">change</th><th scope=\"col\">95 % CI</th><th scope=\"col\">margin</th><th scope=\"col\">p</th><th scope=\"col\">rests on</th></tr></thead><tbody>");
        for metric in shared {
            let req = CompareRequest {
                a: a.to_string(),
                b: b.to_string(),
                metric: metric.clone(),
                direction: None,
                warmup: None,
            };
            match state.app.compare_experiments(&req).await {
                Ok(c) => {
                    let v = &c.verdict;
                    let pct = |x: Option<f64>| {
                        x.filter(|x| x.is_finite()).map_or("–".to_string(), |x| format!("{:+.2} %", x * 100.0))
                    };
                    let kind = v.verdict.to_string();
                    let class = match kind.as_str() {
                        "improved" => "ok",
                        "regressed" => "bad",
                        _ => "wait",
                    };
                    let num = |x: Option<f64>| x.map_or("–".to_string(), falcon_app::render::html::fmt_num);
                    let _ = write!(
                        s,
                        "<tr><td>{}</td><td><span class=\"verdict {class}\">{}</span></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">[{}, {}]</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                        escape(metric),
                        escape(&kind),
                        num(v.a.median),
                        num(v.b.median),
                        pct(v.delta_rel),
                        pct(v.ci_low_rel),
                        pct(v.ci_high_rel),
                        v.min_effect.map_or("–".to_string(), |e| format!("±{:.1} %", e * 100.0)),
                        verdict::p_value(v.p_value),
                        escape(&verdict::evidence(v)),
                    );
                }
                Err(e) => {
                    let _ = write!(
                        s,
                        "<tr><td>{}</td><td colspan=\"8\">{}</td></tr>",
                        escape(metric),
                        escape(&e.to_string())
                    );
                }
            }
        }
        s.push_str("</tbody></table></div>");
    }
    s.push_str("</section>");

    s.push_str("<section><h2>Profiles</h2>");
    let has_profile = |d: &falcon_app::experiments::ExperimentDetail| {
        d.view.artifacts.iter().any(|x| x.kind == falcon_core::artifact::ArtifactKind::Xprof)
    };
    if has_profile(&da) && has_profile(&db) {
        match profile_section(state, a, b).await {
            Ok(html) => s.push_str(&html),
            Err(e) => {
                let _ = write!(s, "<p class=\"error\" role=\"alert\">{}</p>", escape(&e.message));
            }
        }
        let _ = write!(
            s,
            "<p class=\"hint\">As a report: <a href=\"/api/v1/profiles/{a}/compare/{b}?format=html\">HTML</a> · <a href=\"/api/v1/profiles/{a}/compare/{b}?format=md\">Markdown</a> · <a href=\"/api/v1/profiles/{a}/compare/{b}\">JSON</a></p>"
        );
    } else {
        s.push_str("<p class=\"empty\">A profile comparison needs a profile in both experiments.</p>");
    }
    s.push_str("</section>");
    Ok(s)
}

/// The profile comparison's HTML section, kept among A's reports once computed.
async fn profile_section(state: &State, a: ExperimentId, b: ExperimentId) -> ApiResult<String> {
    let bytes = state.app.report(a, &falcon_app::reports::Report::ProfileCompareSection { b }).await?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
