//! Signing in: the token a person pastes is checked like a bearer token and kept in an `HttpOnly;
//! SameSite=Strict` cookie (scripts cannot read it; no other site's request carries it). The form posts JSON
//! (`dashboard.js`), like every write: the guard refuses a form-encoded body, so no page elsewhere can sign a
//! visitor in or out.

use super::{render, secure_headers, Shell, COOKIE};
use crate::body;
use crate::error::{ApiError, ApiResult};
use crate::state::State;
use axum::body::Body;
use axum::extract::{RawQuery, State as Extract};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use falcon_app::render::markup::escape;
use std::sync::Arc;

/// Where to go after signing in: a path on this server only.
fn next_path(raw: Option<&str>) -> String {
    let next =
        crate::routes::query_pairs(raw).ok().and_then(|p| p.into_iter().find(|(k, _)| k == "next").map(|(_, v)| v));
    match next {
        Some(n) if n.starts_with('/') && !n.starts_with("//") && !n.contains('\\') => n,
        _ => "/".to_string(),
    }
}

pub async fn form(RawQuery(raw): RawQuery) -> Response {
    let next = next_path(raw.as_deref());
    let body = format!(
        "<form class=\"signin\" data-signin data-next=\"{}\" method=\"post\" action=\"/signin\">\
         <p>This server needs a token. Ask its owner for one (<code>falcon token create --name NAME --scope read</code>) \
         and paste it here; it is kept in a cookie only this site receives.</p>\
         <label for=\"token\">Token</label> <input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"current-password\" required size=\"48\"> \
         <button type=\"submit\">Sign in</button>\
         <p class=\"error\" role=\"alert\" data-signin-error></p></form>",
        escape(&next)
    );
    render(Shell { title: "Sign in", data: None, viewer: None, body })
}

#[derive(serde::Deserialize)]
struct SignIn {
    token: String,
}

/// `POST /signin` `{"token": "…"}`: 200 `{"name", "scope"}` with the cookie set, or 401.
pub async fn submit(Extract(state): Extract<Arc<State>>, raw: Body) -> ApiResult<Response> {
    let text = body::text(raw).await?;
    let SignIn { token } = serde_json::from_str(&text)
        .map_err(|e| ApiError::usage(format!("the request body: {e} (expected {{\"token\": \"…\"}})")))?;
    let token = token.trim();
    let principal = state
        .app
        .authenticate(token)
        .await?
        .ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", "unknown or revoked token"))?;
    // The token's own characters only (it is URL-safe); anything else would not survive in a header.
    if !token.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.~".contains(&b)) {
        return Err(ApiError::usage("the token has characters a cookie cannot carry"));
    }
    let cookie = format!("{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age=2592000");
    let mut response =
        Json(serde_json::json!({ "name": principal.name, "scope": principal.scope.to_string() })).into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    Ok(response)
}

/// `POST /signout`: the cookie cleared.
pub async fn signout() -> Response {
    let mut response = (StatusCode::OK, "{\"signed_out\": true}").into_response();
    secure_headers(&mut response, "application/json");
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("falcon_token=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    response
}
