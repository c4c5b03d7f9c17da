//! The dashboard: server-rendered pages at `/` over the same `falcon-app` calls as the API (docs/DESIGN.md §8).
//!
//! - **Owns:** page routes, the page shell (navigation, the data link to each page's JSON), sign-in (a session
//!   id in a cookie) and sign-out, the live status stream of the experiments page, the static assets (inside the
//!   binary).
//! - **Must not:** hold a use case (a page calls `falcon-app` and draws its structs with `falcon-app`'s
//!   renderers), load anything from outside its origin, need an npm build.
//! - **Invariants:** every page passes `security::guard` like an API route (a page that needs a token and has
//!   none is sent to `/signin`); text from the store is always escaped; scripts come only from
//!   `/assets/dashboard.js` (the Content-Security-Policy forbids inline ones), and each page works without it
//!   (filters, paging and compare are plain links and GET forms); write actions are same-origin POSTs to the
//!   API and appear only for a principal allowed to write.

mod bisect;
mod compare;
mod experiment;
mod experiments;
mod goals;
mod history;
mod session;
mod signin;

use crate::state::State;
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use falcon_app::render::markup::escape;
use falcon_app::tokens::Principal;
use falcon_core::auth::Scope;
use falcon_core::status::ExperimentStatus;
use std::sync::Arc;

pub use crate::request::COOKIE;

pub fn router() -> Router<Arc<State>> {
    Router::new()
        .route("/", get(experiments::page))
        .route("/experiments/{id}", get(experiment::page))
        .route("/compare", get(compare::pick))
        .route("/compare/{a}/{b}", get(compare::page))
        .route("/goals", get(goals::list))
        .route("/goals/{id}", get(goals::page))
        .route("/sessions/{id}", get(session::page))
        .route("/history", get(history::page))
        .route("/ui/live", get(experiments::live))
        .route("/signin", get(signin::form).post(signin::submit))
        .route("/signout", post(signin::signout))
        .route("/assets/dashboard.css", get(css))
        .route("/assets/dashboard.js", get(js))
}

/// Paths that answer without a token (they still pass the Host, Origin and content-type checks): the sign-in
/// form and its POST, sign-out, the static assets.
pub fn token_free(path: &str) -> bool {
    matches!(path, "/signin" | "/signout") || path.starts_with("/assets/")
}

/// Whether a path is a page (a browser sent there without a token is redirected to sign in).
pub fn is_page(path: &str) -> bool {
    !path.starts_with("/api/") && !path.starts_with("/assets/") && path != "/ui/live"
}

const CSS: &str = include_str!("../../assets/dashboard.css");
const JS: &str = include_str!("../../assets/dashboard.js");

async fn css() -> Response {
    let body = format!("{}\n{CSS}", falcon_app::render::html::STYLE);
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8"), (header::CACHE_CONTROL, "max-age=300")], body).into_response()
}

async fn js() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8"), (header::CACHE_CONTROL, "max-age=300")], JS)
        .into_response()
}

/// Who is looking: the principal the guard attached (none on a token-free path).
pub fn principal(req: &Request) -> Option<Principal> {
    req.extensions().get::<Principal>().cloned()
}

/// Whether the viewer may use write actions.
pub fn can_write(p: Option<&Principal>) -> bool {
    p.is_some_and(|p| p.scope.allows(Scope::Write))
}

/// A page: its title, its JSON one link away, its body.
pub struct Shell<'a> {
    pub title: &'a str,
    /// The API URL of this page's data.
    pub data: Option<String>,
    pub viewer: Option<&'a Principal>,
    pub body: String,
}

/// The whole HTML document, with the headers every page carries.
pub fn render(s: Shell<'_>) -> Response {
    let mut html = String::with_capacity(s.body.len() + 2048);
    html.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    html.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    html.push_str("<link rel=\"icon\" href=\"data:,\">\n");
    html.push_str(&format!("<title>{} · Falcon</title>\n", escape(s.title)));
    html.push_str("<link rel=\"stylesheet\" href=\"/assets/dashboard.css\">\n");
    html.push_str("<script src=\"/assets/dashboard.js\" defer></script>\n</head>\n<body>\n");
    html.push_str("<a class=\"skip\" href=\"#main\">Skip to the content</a>\n");
    html.push_str("<header class=\"bar\"><nav aria-label=\"Main\"><a class=\"brand\" href=\"/\">Falcon</a>");
    html.push_str("<a href=\"/\">Experiments</a><a href=\"/goals\">Goals</a><a href=\"/history\">History</a></nav>");
    match s.viewer {
        Some(p) if p.name != "local" => html.push_str(&format!(
            "<form class=\"who\" method=\"post\" action=\"/signout\" data-json-form><span>{} ({})</span> \
             <button type=\"submit\">Sign out</button></form>",
            escape(&p.name),
            p.scope
        )),
        _ => {}
    }
    html.push_str("</header>\n<main id=\"main\">\n");
    html.push_str(&format!("<h1>{}</h1>\n", escape(s.title)));
    if let Some(data) = &s.data {
        html.push_str(&format!(
            "<p class=\"data\">This page as JSON: <a href=\"{0}\"><code>{0}</code></a></p>\n",
            escape(data)
        ));
    }
    html.push_str(&s.body);
    html.push_str("\n</main>\n</body>\n</html>\n");
    let mut response = (StatusCode::OK, html).into_response();
    secure_headers(&mut response, "text/html; charset=utf-8");
    response
}

/// The headers of every page: what it may load (only from here; no inline script), no framing, no sniffing.
pub fn secure_headers(response: &mut Response, content_type: &'static str) {
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
             connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
        ),
    );
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// An error as a page (same status as the API's), for a browser.
pub fn error_page(e: crate::error::ApiError, viewer: Option<&Principal>) -> Response {
    let status = e.status;
    let body = format!(
        "<p class=\"error\" role=\"alert\">{}</p>{}<p><a href=\"/\">All experiments</a></p>",
        escape(&e.message),
        e.hint.as_deref().map(|h| format!("<p class=\"hint\">{}</p>", escape(h))).unwrap_or_default()
    );
    let title = format!("{} {}", status.as_u16(), status.canonical_reason().unwrap_or(""));
    let mut r = render(Shell { title: &title, data: None, viewer, body });
    *r.status_mut() = status;
    r
}

/// A status as text and a shape (readable without colour), for a table cell or a heading.
pub fn status_badge(s: ExperimentStatus) -> String {
    let (shape, class) = match s {
        ExperimentStatus::Completed => ("✔", "ok"),
        ExperimentStatus::Failed => ("✖", "bad"),
        ExperimentStatus::Cancelled => ("⊘", "off"),
        ExperimentStatus::Running => ("▶", "live"),
        ExperimentStatus::Provisioning => ("◔", "wait"),
        ExperimentStatus::Pending => ("○", "wait"),
    };
    format!("<span class=\"status {class}\" data-status=\"{s}\"><span aria-hidden=\"true\">{shape}</span> {s}</span>")
}

/// Milliseconds since the epoch as `2026-12-02 16:09:12 UTC` in a `<time>` element.
pub fn time(ms: falcon_core::time::Millis) -> String {
    let iso = ms.to_rfc3339();
    let shown = iso.get(..19).map(|t| t.replace('T', " ")).unwrap_or_else(|| iso.clone());
    format!("<time datetime=\"{}\">{} UTC</time>", escape(&iso), escape(&shown))
}
