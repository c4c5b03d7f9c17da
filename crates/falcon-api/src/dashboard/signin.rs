//! Signing in: the token a person pastes is checked like a bearer token and exchanged for a sign-in session — an
//! opaque random id, kept in an `HttpOnly; SameSite=Strict` cookie (scripts cannot read it; no other site's request
//! carries it; `Secure` behind `--allowed-host` or HTTPS), stored on the server only as its SHA-256. The browser
//! never holds the token. A session lasts [`LIFETIME`] at most and ends when its token is revoked or when the
//! person signs out (server-side: a copied cookie opens nothing afterwards). The form posts JSON
//! (`dashboard.js`), like every write: the guard refuses a form-encoded body, so no page elsewhere can sign a
//! visitor in or out. The route needs no token, so its body is held to [`SIGNIN_BODY`] bytes within
//! [`SIGNIN_WITHIN`]: nobody can hold a connection on it with a body that never comes.

use super::{render, secure_headers, Shell, COOKIE};
use crate::body;
use crate::error::{ApiError, ApiResult};
use crate::state::State;
use axum::body::Body;
use axum::extract::{RawQuery, State as Extract};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use falcon_app::render::markup::escape;
use std::sync::Arc;
use std::time::Duration;

/// How long a sign-in lasts.
pub const LIFETIME: Duration = Duration::from_secs(12 * 3600);

/// The largest sign-in body, in bytes: `{"token": "…"}` is under 200 (more is a 413, at once when declared).
pub const SIGNIN_BODY: usize = 8 << 10;

/// How long the sign-in waits for its body (408 after).
pub const SIGNIN_WITHIN: Duration = Duration::from_secs(5);

/// Where to go after signing in: a path on this server only. Browsers drop tabs and line breaks from a URL and
/// read `\` as `/`, so anything but printable ASCII, and a second `/` or `\` after the first, fall back to `/`.
fn next_path(raw: Option<&str>) -> String {
    let next =
        crate::request::query_pairs(raw).ok().and_then(|p| p.into_iter().find(|(k, _)| k == "next").map(|(_, v)| v));
    match next {
        Some(n)
            if n.starts_with('/')
                && n.bytes().all(|b| b.is_ascii_graphic())
                && !n.contains('\\')
                && !n[1..].starts_with('/') =>
        {
            n
        }
        _ => "/".to_string(),
    }
}

pub async fn form(RawQuery(raw): RawQuery) -> Response {
    let next = next_path(raw.as_deref());
    let body = format!(
        "<form class=\"signin\" data-signin data-next=\"{}\" method=\"post\" action=\"/signin\">\
         <p>This server needs a token. Ask its owner for one (<code>falcon token create --name NAME --scope read</code>) \
         and paste it here; this browser then holds a sign-in for 12 hours (not the token), which signing out ends.</p>\
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

/// Whether the browser reached the server over HTTPS (as a proxy in front of it says) or through a proxy at all
/// (`--allowed-host`): its cookie is then `Secure`.
fn secure(state: &State, headers: &HeaderMap) -> bool {
    let says_https = |name: &str| {
        headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).any(|v| {
            let v = v.to_ascii_lowercase();
            v.split([',', ';']).any(|part| matches!(part.trim(), "https" | "proto=https" | "proto=\"https\""))
        })
    };
    state.behind_proxy || says_https("x-forwarded-proto") || says_https("forwarded")
}

/// `POST /signin` `{"token": "…"}`: 200 `{"name", "scope"}` with the sign-in cookie set, or 401.
pub async fn submit(Extract(state): Extract<Arc<State>>, headers: HeaderMap, raw: Body) -> ApiResult<Response> {
    let hint = "the body is {\"token\": \"…\"}, a few hundred bytes at most";
    let text = body::small_text(raw, SIGNIN_BODY, SIGNIN_WITHIN, hint).await?;
    let SignIn { token } = serde_json::from_str(&text)
        .map_err(|e| ApiError::usage(format!("the request body: {e} (expected {{\"token\": \"…\"}})")))?;
    let (principal, id) = state
        .app
        .sign_in(token.trim(), LIFETIME)
        .await?
        .ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", "unknown or revoked token"))?;
    let secure = if secure(&state, &headers) { "; Secure" } else { "" };
    let cookie = format!("{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}", LIFETIME.as_secs());
    let mut response =
        Json(serde_json::json!({ "name": principal.name, "scope": principal.scope.to_string() })).into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    Ok(response)
}

/// `POST /signout`: the sign-in ended on the server and the cookie cleared.
pub async fn signout(Extract(state): Extract<Arc<State>>, headers: HeaderMap) -> ApiResult<Response> {
    let ended = match crate::request::cookie_in(&headers) {
        Some(id) => state.app.sign_out(&id).await?,
        None => false,
    };
    let mut response = (StatusCode::OK, serde_json::json!({ "signed_out": ended }).to_string()).into_response();
    secure_headers(&mut response, "application/json");
    let secure = if secure(&state, &headers) { "; Secure" } else { "" };
    if let Ok(v) = HeaderValue::from_str(&format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure}")) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::next_path;

    #[test]
    fn after_sign_in_only_a_path_on_this_server() {
        for (raw, want) in [
            ("next=%2Fexperiments%2Fe-1", "/experiments/e-1"),
            ("next=%2F%3Fstatus%3DCOMPLETED", "/?status=COMPLETED"),
            ("next=%2F%09%2Flocalhost%3A55965%2Fpwned", "/"),
            ("next=%2F%0D%2Fevil.example", "/"),
            ("next=%2F%0A%2Fevil.example", "/"),
            ("next=%2F%2Fevil.example", "/"),
            ("next=%2F%5Cevil.example", "/"),
            ("next=https%3A%2F%2Fevil.example", "/"),
            ("next=%2F%20%2Fevil.example", "/"),
            ("next=%2F%E2%80%8B%2Fevil", "/"),
            ("", "/"),
        ] {
            assert_eq!(next_path(Some(raw)), want, "{raw}");
        }
    }
}
