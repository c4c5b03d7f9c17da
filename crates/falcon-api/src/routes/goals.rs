//! `/api/v1/goals` (list, create, show, claim, release/achieve/abandon, compare, report), `/api/v1/sessions`
//! (submit a sweep, show) and `/api/v1/pools`. Goal actions are authorised by the caller's identity, never by a
//! body field: a `write` token claims for itself (its name is the owner) and releases, achieves or abandons only
//! the goals it holds; an `admin` token acts on any goal, and may claim for another owner by naming it.

use super::query_pairs;
use crate::bodies::SessionBody;
use crate::body;
use crate::error::{ApiError, ApiResult};
use crate::request::{goal_id, session_id};
use crate::routes::Path;
use crate::state::State;
use axum::body::Body;
use axum::extract::{RawQuery, State as Extract};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use falcon_app::goals::{GoalView, SessionRequest};
use falcon_app::requests::GoalCreateRequest;
use falcon_app::requests::{GoalClaimRequest, GoalCloseRequest};
use falcon_app::requests::{GoalListRequest, PageRequest};
use falcon_app::tokens::Principal;
use falcon_core::auth::Scope;
use falcon_core::status::GoalStatus;
use std::sync::Arc;

pub fn router() -> Router<Arc<State>> {
    Router::new()
        .route("/api/v1/goals", get(list).post(create))
        .route("/api/v1/goals/claim", post(claim))
        .route("/api/v1/goals/{id}", get(show))
        .route("/api/v1/goals/{id}/release", post(release))
        .route("/api/v1/goals/{id}/achieve", post(achieve))
        .route("/api/v1/goals/{id}/abandon", post(abandon))
        .route("/api/v1/goals/{id}/compare", get(compare))
        .route("/api/v1/goals/{id}/report", get(report))
        .route("/api/v1/sessions", post(submit_session))
        .route("/api/v1/sessions/{id}", get(session))
        .route("/api/v1/pools", get(pools))
}

/// `GET /api/v1/goals`: the parameters are [`GoalListRequest`]'s fields.
async fn list(Extract(state): Extract<Arc<State>>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let r: GoalListRequest = crate::typed_query::from_query(raw.as_deref())?;
    let page = state.app.list_goals(r.status.map(|s| s.as_str()), r.cursor.as_deref(), r.page_size()?).await?;
    Ok(Json(page).into_response())
}

async fn create(Extract(state): Extract<Arc<State>>, body: Body) -> ApiResult<Response> {
    let req: GoalCreateRequest = body::request(body).await?;
    let goal = state.app.create_goal(&req).await?;
    Ok((StatusCode::CREATED, Json(GoalView::from(goal))).into_response())
}

async fn show(Extract(state): Extract<Arc<State>>, Path(id): Path<String>) -> ApiResult<Response> {
    Ok(Json(GoalView::from(state.app.goal(goal_id(&id)?).await?)).into_response())
}

async fn claim(
    Extract(state): Extract<Arc<State>>,
    Extension(principal): Extension<Principal>,
    body: Body,
) -> ApiResult<Response> {
    let b: GoalClaimRequest = body::request(body).await?;
    let (id, lease) = b.claim()?;
    let owner = acting_as(&principal, b.owner)?;
    Ok(Json(GoalView::from(state.app.claim_goal(id, &owner, lease).await?)).into_response())
}

/// Who the caller acts as: itself, or — for an admin only — the owner the body names.
fn acting_as(principal: &Principal, named: Option<String>) -> ApiResult<String> {
    match named {
        Some(owner) if owner != principal.name && !principal.scope.allows(Scope::Admin) => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("token `{}` acts for itself; acting for `{owner}` needs an admin token", principal.name),
        )),
        Some(owner) => Ok(owner),
        None => Ok(principal.name.clone()),
    }
}

async fn close(state: &State, principal: Principal, id: &str, to: GoalStatus, body: Body) -> ApiResult<Response> {
    let id = goal_id(id)?;
    let b: GoalCloseRequest = body::request_at(&[("id", id.to_string())], body).await?;
    let actor = acting_as(&principal, b.owner)?;
    let goal = state.app.goal(id).await?;
    let admin = principal.scope.allows(Scope::Admin);
    if !admin && goal.owner.as_deref() != Some(principal.name.as_str()) {
        let held = match goal.owner.as_deref() {
            Some(owner) => format!("is held by {owner}"),
            None => "is not claimed".to_string(),
        };
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("goal {id} {held}; a write token acts only on the goals it claimed (others need an admin token)"),
        ));
    }
    // An admin acts for the holder.
    let actor = match goal.owner.as_deref() {
        Some(owner) if admin => owner.to_string(),
        _ => actor,
    };
    Ok(Json(GoalView::from(state.app.close_goal(id, to, &b.reason, Some(&actor)).await?)).into_response())
}

async fn release(
    Extract(state): Extract<Arc<State>>,
    Extension(p): Extension<Principal>,
    Path(id): Path<String>,
    body: Body,
) -> ApiResult<Response> {
    close(&state, p, &id, GoalStatus::Open, body).await
}

async fn achieve(
    Extract(state): Extract<Arc<State>>,
    Extension(p): Extension<Principal>,
    Path(id): Path<String>,
    body: Body,
) -> ApiResult<Response> {
    close(&state, p, &id, GoalStatus::Achieved, body).await
}

async fn abandon(
    Extract(state): Extract<Arc<State>>,
    Extension(p): Extension<Principal>,
    Path(id): Path<String>,
    body: Body,
) -> ApiResult<Response> {
    close(&state, p, &id, GoalStatus::Abandoned, body).await
}

async fn compare(Extract(state): Extract<Arc<State>>, Path(id): Path<String>) -> ApiResult<Response> {
    Ok(Json(state.app.compare_goal(goal_id(&id)?).await?).into_response())
}

/// `GET …/{id}/report?format=json|md|html&top=N`.
async fn report(
    Extract(state): Extract<Arc<State>>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    // `format` is how this surface writes the report; the rest is the use case's request.
    let mut pairs = query_pairs(raw.as_deref())?;
    let format = crate::request::take_format(&mut pairs)?;
    let id = goal_id(&id)?.to_string();
    let r: falcon_app::requests::GoalReportRequest = crate::typed_query::from_path_and_pairs(&[("id", id)], pairs)?;
    let (id, top) = r.report()?;
    let report = state.app.goal_report(id, top).await?;
    use falcon_app::render::goal::{render_html, render_md};
    use falcon_app::render::Format;
    match format {
        Format::Md => Ok(text(render_md(&report, top), "text/markdown; charset=utf-8")),
        Format::Html => Ok(text(render_html(&report, top), "text/html; charset=utf-8")),
        Format::Json | Format::Table => Ok(Json(report).into_response()),
    }
}

/// A text body with its content type.
pub fn text(body: String, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// `POST /api/v1/sessions`: a sweep as the body (YAML, or JSON `{sweep, name?, goal?, repeats?}`); its base is
/// inline or `base: e-N` — a server-side path is refused. 201 with the session.
async fn submit_session(
    Extract(state): Extract<Arc<State>>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    body: Body,
) -> ApiResult<Response> {
    let yaml = headers.get(header::CONTENT_TYPE).and_then(|c| c.to_str().ok()).is_some_and(|c| c.contains("yaml"));
    let (mut name, mut goal, mut repeats) = (None, None, None);
    for (key, value) in query_pairs(raw.as_deref())? {
        match key.as_str() {
            "name" => name = Some(value),
            "goal" => goal = Some(value),
            "repeats" => match value.parse::<u64>() {
                Ok(n @ 1..=100) => repeats = Some(n),
                _ => return Err(ApiError::usage(format!("repeats={value}: runs per point, 1 to 100"))),
            },
            other => return Err(ApiError::usage(format!("unknown query parameter `{other}`"))),
        }
    }
    let sweep_text = if yaml {
        body::text(body).await?
    } else {
        let b: SessionBody = body::json(body).await?;
        b.check()?;
        name = b.name.or(name);
        goal = b.goal.or(goal);
        repeats = b.repeats.or(repeats);
        match b.sweep {
            serde_json::Value::String(text) => text,
            other => other.to_string(),
        }
    };
    let goal = goal.as_deref().map(goal_id).transpose()?;
    let name = name.unwrap_or_else(|| "session".to_string());
    let request = SessionRequest {
        name: &name,
        sweep_text: &sweep_text,
        file_label: "request body",
        goal,
        wait: false,
        timeout: None,
        repeats: repeats.map(|n| n as usize),
    };
    let refuse = |base: &str| {
        Err(format!(
            "`{base}` is a file on the server: a sweep sent to the API writes its base inline or names a run (`base: e-N`)"
        ))
    };
    let (detail, _) = state.app.submit_session(&request, refuse, |_| {}, |_| {}).await?;
    Ok((StatusCode::CREATED, Json(detail)).into_response())
}

async fn session(
    Extract(state): Extract<Arc<State>>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let id = session_id(&id)?.to_string();
    let r: falcon_app::requests::SessionShowRequest =
        crate::typed_query::from_path_and_query(&[("id", id)], raw.as_deref())?;
    Ok(Json(state.app.session_with_metric(r.session()?, r.metric.as_deref()).await?).into_response())
}

/// `GET /api/v1/pools`: the parameters are [`PageRequest`]'s fields.
async fn pools(Extract(state): Extract<Arc<State>>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let r: PageRequest = crate::typed_query::from_query(raw.as_deref())?;
    Ok(Json(state.app.pools(r.cursor.as_deref(), r.page_size()?).await?).into_response())
}
