//! The routes, one module per noun: `experiments`, `goals` (with sessions and pools), `bisect`, `profiles` (and traces),
//! `health` (health, readiness, the OpenAPI document). Parsing ids and query strings is `crate::request`'s.

pub mod bisect;
pub mod experiments;
pub mod goals;
pub mod health;
pub(crate) mod profiles;

use crate::error::ApiError;
use crate::state::State;
use axum::http::{Method, StatusCode};
use axum::Router;
use std::sync::Arc;

pub use crate::request::{experiment_id, query_pairs, Path};

/// Every route, with `pages` (the dashboard's) beside them; a path no route has is a 404 and a method a path does
/// not take a 405, both with the error body.
pub fn router(pages: Router<Arc<State>>) -> Router<Arc<State>> {
    Router::new()
        .merge(experiments::router())
        .merge(goals::router())
        .merge(bisect::router())
        .merge(profiles::router())
        .merge(health::router())
        .merge(pages)
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
