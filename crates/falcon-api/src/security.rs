//! What every request to a route passes before its handler runs, in this order (a path with no route is a 404
//! and a method the route lacks a 405, before any of it):
//!
//! 1. **Access log**: one line on stderr per request — method, path (never the query or a header, so never a
//!    token), status, duration.
//! 2. **Host**: exactly one `Host` header (two are a 400, RFC 9112 §3.2), naming this server (its bound address,
//!    `localhost`/`127.0.0.1`/`[::1]` with its port on a loopback bind, or a name given with `--allowed-host`),
//!    else 403: a web page the user visits cannot reach a local server through DNS rebinding. Health checks are
//!    exempt.
//! 3. **Origin**: when a request carries one (browsers always do on cross-site writes; curl and SDKs do not), it
//!    must be this server's own (`http(s)://` + an allowed host), else 403. No CORS headers are ever sent.
//! 4. **Content type**: a request with a body or a content type (POST) must say JSON or YAML
//!    (`application/json`, `application/yaml`, `application/x-yaml`, `text/yaml`), else 415 — a form or
//!    `text/plain` post, which a page may send cross-site without asking, never reaches a handler. An empty
//!    POST with no content type (a cancel) passes: a form always sends one.
//! 5. **Credentials**: the server is open — a request without credentials acts as the local admin — only on a
//!    loopback bind with no `--allowed-host`, over a store that has never held a token, and never for a request a
//!    proxy forwarded (`Forwarded`, `X-Forwarded-For`, `X-Real-IP`). Once any token was made it stays closed,
//!    even when every token is revoked (then only `falcon token create` on the machine lets anyone in again).
//!    Otherwise every route but `/healthz` and `/readyz` needs `Authorization: Bearer <token>` (the scheme in any
//!    case, RFC 9110 §11.1) or the dashboard's sign-in cookie: 401 without one or with an unknown or revoked one,
//!    403 when its scope is too small (GET needs `read`, POST `write`; goal handlers ask the token that claimed
//!    a goal, or `admin`). The request then carries its [`Principal`]. The cookie (`HttpOnly; SameSite=Strict`)
//!    holds an opaque sign-in id, never the token: it speaks for its token while the token is live, for 12 hours
//!    at most, until signed out. The sign-in form, sign-out and the static assets need no credentials; a page
//!    asked for without them is redirected to `/signin`.

use crate::error::ApiError;
use crate::state::State;
use axum::extract::{Request, State as Extract};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use falcon_app::tokens::Principal;
use falcon_core::auth::Scope;
use std::sync::Arc;
use std::time::Instant;

/// The principal of an open server (no token defined, loopback bind).
pub fn local_principal() -> Principal {
    Principal { name: "local".into(), scope: Scope::Admin }
}

pub(crate) fn exempt(path: &str) -> bool {
    path == "/healthz" || path == "/readyz"
}

/// Step 1: the access log line.
pub async fn access_log(req: Request, next: Next) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let started = Instant::now();
    let response = next.run(req).await;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    let path: String = path.chars().map(|c| if c.is_control() { '?' } else { c }).collect();
    eprintln!("falcon serve: {method} {path} {} {ms:.1} ms", response.status().as_u16());
    response
}

/// Headers on every answer that does not set its own (the pages set a policy of their own): `nosniff`, no
/// framing, and a Content-Security-Policy that sandboxes the document — an answer that is not a page (JSON, a
/// report, an artifact, an error) opened in a browser runs no script and loads nothing from anywhere.
pub async fn response_headers(req: Request, next: Next) -> Response {
    let mut response = next.run(req).await;
    let h = response.headers_mut();
    h.entry(header::X_CONTENT_TYPE_OPTIONS).or_insert(HeaderValue::from_static("nosniff"));
    h.entry(header::X_FRAME_OPTIONS).or_insert(HeaderValue::from_static("DENY"));
    h.entry(header::CONTENT_SECURITY_POLICY).or_insert(HeaderValue::from_static(
        "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'",
    ));
    response
}

/// Steps 2–5 (see the module docs).
pub async fn guard(Extract(state): Extract<Arc<State>>, mut req: Request, next: Next) -> Response {
    let seen = Seen::of(&req);
    let page = crate::dashboard::is_page(&seen.path) && req.method() == Method::GET;
    match check(&state, seen).await {
        Ok(principal) => {
            if let Some(p) = principal {
                req.extensions_mut().insert(p);
            }
            next.run(req).await
        }
        // A browser on a page without a (valid) token is sent to sign in, then back.
        Err(e) if page && e.status == StatusCode::UNAUTHORIZED => {
            let back = req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/");
            let to = format!("/signin?{}", serde_urlencoded::to_string([("next", back)]).unwrap_or_default());
            (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response()
        }
        Err(e) => e.into_response(),
    }
}

/// What a request presents as its credentials.
enum Credential {
    /// `Authorization: Bearer <secret>`.
    Bearer(String),
    /// An `Authorization` header of another scheme, or none readable.
    Malformed,
    /// The dashboard's sign-in cookie.
    SignIn(String),
}

/// The secret of an `Authorization` header of the Bearer scheme (any case); `None` for another scheme.
fn bearer(value: &str) -> Option<&str> {
    let (scheme, rest) = value.trim().split_once([' ', '\t'])?;
    let secret = rest.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !secret.is_empty()).then_some(secret)
}

/// What the checks read of a request (owned, so the checks can wait on the database).
struct Seen {
    path: String,
    writes: bool,
    /// POST, PUT or PATCH with a body (or a content type): the body must be JSON or YAML.
    sends_body: bool,
    host: Option<String>,
    origin: Option<String>,
    content_type: String,
    /// More than one `Host` header.
    hosts: usize,
    credential: Option<Credential>,
    /// A proxy forwarded it (`Forwarded`, `X-Forwarded-For`, `X-Real-IP`): it may come from anywhere.
    forwarded: bool,
}

impl Seen {
    fn of(req: &Request) -> Seen {
        let h = |name: header::HeaderName| req.headers().get(name).map(|v| v.to_str().unwrap_or("").to_string());
        Seen {
            path: req.uri().path().to_string(),
            writes: req.method() != Method::GET && req.method() != Method::HEAD,
            // A request with a body must say it is JSON or YAML (an HTML form cannot); an empty one, such as a
            // cancel, need not say anything — a form always sends a content type.
            sends_body: [Method::POST, Method::PUT, Method::PATCH].contains(req.method())
                && (req.headers().contains_key(header::CONTENT_TYPE)
                    || req.headers().contains_key(header::TRANSFER_ENCODING)
                    || req.headers().get(header::CONTENT_LENGTH).is_some_and(|v| v.as_bytes() != b"0")),
            host: h(header::HOST).map(|v| v.to_ascii_lowercase()),
            origin: h(header::ORIGIN).map(|v| v.to_ascii_lowercase()),
            content_type: h(header::CONTENT_TYPE).unwrap_or_default(),
            hosts: req.headers().get_all(header::HOST).iter().count(),
            // A signed-in browser carries its sign-in id in the dashboard's cookie instead.
            credential: match h(header::AUTHORIZATION) {
                Some(value) => {
                    Some(bearer(&value).map_or(Credential::Malformed, |s| Credential::Bearer(s.to_string())))
                }
                None => signin_cookie(req).map(Credential::SignIn),
            },
            forwarded: ["forwarded", "x-forwarded-for", "x-real-ip"].iter().any(|n| req.headers().contains_key(*n)),
        }
    }
}

/// The dashboard's sign-in cookie, when the request carries one.
pub fn signin_cookie(req: &Request) -> Option<String> {
    crate::request::cookie_in(req.headers())
}

async fn check(state: &State, seen: Seen) -> Result<Option<Principal>, ApiError> {
    if exempt(&seen.path) {
        return Ok(None);
    }
    let forbidden = |m: String| ApiError::new(StatusCode::FORBIDDEN, "forbidden", m);
    if seen.hosts > 1 {
        return Err(ApiError::usage("the request has more than one Host header"));
    }
    let host = seen.host.ok_or_else(|| forbidden("the request has no Host header".into()))?;
    if !state.hosts.contains(&host) {
        return Err(forbidden(format!("Host `{host}` does not name this server")).hint(format!(
            "this server answers to {}; its operator can add a name to that list when it starts",
            state.hosts.join(", ")
        )));
    }
    if let Some(origin) = seen.origin {
        let ours = ["http://", "https://"]
            .iter()
            .any(|s| origin.strip_prefix(s).is_some_and(|h| state.hosts.iter().any(|a| a == h)));
        if !ours {
            return Err(forbidden(format!("a request from the page at `{origin}` may not use this server")));
        }
    }
    let writes = seen.writes;
    if seen.sends_body {
        let kind = seen.content_type.as_str();
        let essence = kind.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        let allowed = ["application/json", "application/yaml", "application/x-yaml", "text/yaml"];
        if !allowed.contains(&essence.as_str()) {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                format!("a request body must be JSON or YAML, not `{kind}`"),
            )
            .hint("send Content-Type: application/json (or application/yaml for a spec)"));
        }
    }
    if crate::dashboard::token_free(&seen.path) {
        return Ok(None);
    }
    let needed = if writes { Scope::Write } else { Scope::Read };
    let unauthorized = |m: &str| {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", m)
            .hint("send Authorization: Bearer <token>; the server's owner makes tokens with `falcon token create`")
    };
    let principal = match seen.credential {
        Some(Credential::Bearer(secret)) => {
            state.app.authenticate(&secret).await?.ok_or_else(|| unauthorized("unknown or revoked token"))?
        }
        Some(Credential::Malformed) => return Err(unauthorized("the Authorization header is not `Bearer <token>`")),
        Some(Credential::SignIn(id)) => state.app.signin_principal(&id).await?.ok_or_else(|| {
            unauthorized("the sign-in has ended (signed out, expired, or its token revoked)")
                .hint("sign in again at /signin")
        })?,
        None if !seen.forwarded && state.open().await? => local_principal(),
        None if seen.forwarded && !state.tokens_ever().await? => {
            return Err(unauthorized("a request through a proxy needs a token, and this server has none yet")
                .hint("the server's owner makes one on its machine with `falcon token create`"));
        }
        None => return Err(unauthorized("this server needs a token")),
    };
    if !principal.scope.allows(needed) {
        return Err(forbidden(format!(
            "token `{}` has scope {}; this request needs {needed}",
            principal.name, principal.scope
        )));
    }
    Ok(Some(principal))
}
