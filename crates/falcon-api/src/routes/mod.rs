//! The routes, one module per noun: `experiments`, `goals` (with sessions and pools), `profiles` (and traces),
//! `health` (health, readiness, the OpenAPI document). Shared here: parsing ids and query strings.

pub mod experiments;
pub mod goals;
pub mod health;
pub mod profiles;

use crate::error::{ApiError, ApiResult};
use crate::state::State;
use axum::Router;
use falcon_core::ids::ExperimentId;
use std::sync::Arc;

/// Every route.
pub fn router() -> Router<Arc<State>> {
    Router::new().merge(experiments::router()).merge(goals::router()).merge(profiles::router()).merge(health::router())
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

/// The query string's pairs, in order (a key may repeat: `label=a=1&label=b=2`).
pub fn query_pairs(raw: Option<&str>) -> ApiResult<Vec<(String, String)>> {
    serde_urlencoded::from_str::<Vec<(String, String)>>(raw.unwrap_or(""))
        .map_err(|e| ApiError::usage(format!("the query string: {e}")))
}
