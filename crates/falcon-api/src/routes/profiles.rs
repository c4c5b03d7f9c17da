//! `/api/v1/profiles/{exp}` (the stored analysis; `?tool=` computes more), `/api/v1/profiles/{a}/compare/{b}`,
//! `/api/v1/traces/{exp}` and its Chrome-trace export `/api/v1/traces/{exp}/export`. Inputs are experiment ids only: the server never reads a path a request names.
//!
//! Each answer is one of the experiment's kept reports (`falcon_app::reports`): computed once — at most
//! `--max-analyses` at once, beyond which a request gets 429 with `Retry-After` — and then served from the store
//! without decoding anything.

use super::goals::text;
use super::{experiment_id, query_pairs};
use crate::error::{ApiError, ApiResult};
use crate::routes::Path;
use crate::state::State;
use axum::extract::{RawQuery, State as Extract};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use falcon_app::contract::StoredAnalysis;
use falcon_app::profiles::Tool;
use falcon_app::reports::Report;
use std::sync::Arc;

pub fn router() -> Router<Arc<State>> {
    Router::new()
        .route("/api/v1/profiles/{exp}", get(profile))
        .route("/api/v1/profiles/{a}/compare/{b}", get(compare))
        .route("/api/v1/traces/{exp}", get(trace))
        .route("/api/v1/traces/{exp}/export", get(export))
}

/// `GET /api/v1/traces/{exp}/export`: the first host's capture as gzipped Chrome trace JSON, a download that
/// Perfetto (ui.perfetto.dev) and chrome://tracing open; kept as a report once made.
async fn export(Extract(state): Extract<Arc<State>>, Path(exp): Path<String>) -> ApiResult<Response> {
    let id = experiment_id(&exp)?;
    let bytes = state.app.report(id, &Report::TraceExport).await?;
    let mut response = bytes.into_response();
    let headers = response.headers_mut();
    headers.insert(axum::http::header::CONTENT_TYPE, axum::http::HeaderValue::from_static("application/gzip"));
    if let Ok(v) = axum::http::HeaderValue::from_str(&format!("attachment; filename=\"{id}.trace.json.gz\"")) {
        headers.insert(axum::http::header::CONTENT_DISPOSITION, v);
    }
    Ok(response)
}

fn json_bytes(body: Vec<u8>) -> Response {
    text(String::from_utf8_lossy(&body).into_owned(), "application/json")
}

/// `GET /api/v1/profiles/{exp}?tool=overview,ops,…`: without `tool`, the stored analysis summary rows
/// (`{experiment, analysis[]}`); with it, those tools computed (`all` for every one).
async fn profile(
    Extract(state): Extract<Arc<State>>,
    Path(exp): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let id = experiment_id(&exp)?;
    let mut tools = None;
    for (key, value) in query_pairs(raw.as_deref())? {
        match key.as_str() {
            "tool" => tools = Some(parse_tools(&value)?),
            other => return Err(ApiError::usage(format!("unknown query parameter `{other}`"))),
        }
    }
    let Some(tools) = tools else {
        let detail = state.app.show_experiment(id, None).await?;
        let body = StoredAnalysis { experiment: id, analysis: detail.view.analysis, memory: detail.memory };
        return Ok(Json(body).into_response());
    };
    Ok(json_bytes(state.app.report(id, &Report::Profile { tools }).await?))
}

/// The tools of `?tool=` (none for `all`).
fn parse_tools(text: &str) -> ApiResult<Vec<Tool>> {
    let names: Vec<&str> = text.split(',').map(str::trim).filter(|t| !t.is_empty()).collect();
    if names.is_empty() || names.contains(&"all") {
        return Ok(Vec::new());
    }
    falcon_app::profiles::parse_tools(names.iter().copied()).map_err(|e| ApiError::usage(format!("tool={e}")))
}

/// `GET /api/v1/profiles/{a}/compare/{b}?format=json|md|html&top=N`: A is the baseline.
async fn compare(
    Extract(state): Extract<Arc<State>>,
    Path((a, b)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    // `format` is how this surface writes the comparison; the rest is the use case's request.
    let (a, b) = (experiment_id(&a)?.to_string(), experiment_id(&b)?.to_string());
    let mut pairs = query_pairs(raw.as_deref())?;
    let format = crate::request::take_format(&mut pairs)?;
    let r: falcon_app::requests::ExperimentProfileCompareRequest =
        crate::typed_query::from_path_and_pairs(&[("a", a), ("b", b)], pairs)?;
    let (a, b, top) = r.report()?;
    let report = Report::ProfileCompare { b, top, format };
    let bytes = state.app.report(a, &report).await?;
    Ok(text(String::from_utf8_lossy(&bytes).into_owned(), report.content_type()))
}

/// `GET /api/v1/traces/{exp}`: where each step's time goes (as `falcon profile trace --json`).
async fn trace(Extract(state): Extract<Arc<State>>, Path(exp): Path<String>) -> ApiResult<Response> {
    Ok(json_bytes(state.app.report(experiment_id(&exp)?, &Report::Trace).await?))
}
