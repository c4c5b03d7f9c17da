//! `/healthz` (the process answers), `/readyz` (the database and the artifact store answer: 503 when not,
//! with the failing checks) — neither needs a token — and the OpenAPI document, `/api/v1/openapi.json`.

use crate::state::State;
use axum::extract::State as Extract;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use std::sync::Arc;

pub fn router() -> Router<Arc<State>> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/api/v1/openapi.json", get(openapi))
}

async fn healthz() -> Response {
    Json(serde_json::json!({ "status": "ok" })).into_response()
}

async fn readyz(Extract(state): Extract<Arc<State>>) -> Response {
    match state.app.readiness().await {
        Ok(report) if report.ok => Json(report).into_response(),
        Ok(report) => (StatusCode::SERVICE_UNAVAILABLE, Json(report)).into_response(),
        Err(e) => crate::error::ApiError::from(e).into_response(),
    }
}

async fn openapi() -> Response {
    Json(crate::openapi::document()).into_response()
}
