//! `/api/v1/bisect`: start a bisection (`POST`, a [`BisectStartRequest`] body; the repository must be a URL —
//! a server path would be read with the server's rights) and look at one (`GET /api/v1/bisect/{id}`). The server's
//! embedded worker (or any `falcon worker`) carries a started search on.

use crate::body;
use crate::error::ApiResult;
use crate::request::session_id;
use crate::routes::Path;
use crate::state::State;
use axum::body::Body;
use axum::extract::State as Extract;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use falcon_app::requests::BisectStartRequest;
use std::sync::Arc;

pub fn router() -> Router<Arc<State>> {
    Router::new().route("/api/v1/bisect", post(start)).route("/api/v1/bisect/{id}", get(show))
}

async fn start(Extract(state): Extract<Arc<State>>, body: Body) -> ApiResult<Response> {
    let request: BisectStartRequest = body::request(body).await?;
    if request.wait {
        return Err(crate::error::ApiError::new(
            StatusCode::BAD_REQUEST,
            "usage",
            "`wait` is not taken here: the server's worker carries the search on; poll GET /api/v1/bisect/{id}",
        ));
    }
    let view = state.app.start_bisect(&request).await?;
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

async fn show(Extract(state): Extract<Arc<State>>, Path(id): Path<String>) -> ApiResult<Response> {
    Ok(Json(state.app.bisect(session_id(&id)?).await?).into_response())
}
