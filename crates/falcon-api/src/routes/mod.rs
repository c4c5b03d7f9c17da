//! The routes, one module per noun: `experiments`, `goals` (with sessions and pools), `profiles` (and traces),
//! `health` (health, readiness, the OpenAPI document). Shared here: parsing ids and query strings.

pub mod bodies;
pub mod experiments;
pub mod goals;
pub mod health;
pub(crate) mod profiles;

use crate::error::{ApiError, ApiResult};
use crate::state::State;
use axum::http::{Method, StatusCode};
use axum::Router;
use falcon_core::ids::ExperimentId;
use std::sync::Arc;

/// Every route; a path no route has is a 404 and a method a path does not take a 405, both with the error body.
pub fn router() -> Router<Arc<State>> {
    Router::new()
        .merge(experiments::router())
        .merge(goals::router())
        .merge(profiles::router())
        .merge(health::router())
        .merge(crate::dashboard::router())
        .fallback(|uri: axum::http::Uri| async move {
            ApiError::new(StatusCode::NOT_FOUND, "not_found", format!("no route `{}`", uri.path()))
                .hint("the routes are listed in /api/v1/openapi.json")
        })
        .method_not_allowed_fallback(|method: Method, uri: axum::http::Uri| async move {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                format!("`{}` does not take {method}", uri.path()),
            )
            .hint("the methods of each route are listed in /api/v1/openapi.json")
        })
}

/// The path's parameters, as axum's `Path` reads them but refused with the JSON error (a bad percent-encoding
/// is a 400 `usage`, not axum's plain-text answer).
pub struct Path<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned + Send> axum::extract::FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, ApiError> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(Path(value)),
            Err(e) => Err(ApiError::usage(format!("the path: {}", e.body_text()))),
        }
    }
}

/// An experiment id as the API takes it: `e-N` only (a path is never read on the server's disk).
pub fn experiment_id(text: &str) -> ApiResult<ExperimentId> {
    let digits = text.strip_prefix("e-").filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
    digits
        .and_then(|_| text.parse().ok())
        .ok_or_else(|| ApiError::usage(format!("`{text}` is not an experiment id (e-N)")))
}

/// A page size: 0 to 1000.
pub fn page_limit(text: &str) -> ApiResult<usize> {
    match text.parse::<usize>() {
        Ok(n) if n <= 1000 => Ok(n),
        _ => Err(ApiError::usage(format!("limit={text}: a page size from 0 to 1000"))),
    }
}

/// A count parameter `name=value` from `lo` to `hi`.
pub fn count(name: &str, value: &str, lo: usize, hi: usize) -> ApiResult<usize> {
    match value.parse::<usize>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(ApiError::usage(format!("{name}={value}: a count from {lo} to {hi}"))),
    }
}

/// A boolean parameter: `true`/`1` or `false`/`0`.
pub fn flag(name: &str, value: &str) -> ApiResult<bool> {
    match value {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(ApiError::usage(format!("{name}={value}: true or false"))),
    }
}

/// The query string's pairs, in order (a key may repeat: `label=a=1&label=b=2`).
pub fn query_pairs(raw: Option<&str>) -> ApiResult<Vec<(String, String)>> {
    serde_urlencoded::from_str::<Vec<(String, String)>>(raw.unwrap_or(""))
        .map_err(|e| ApiError::usage(format!("the query string: {e}")))
}
