//! Reading requests and writing URLs, for the API routes and the dashboard pages alike: the path extractor that
//! answers with the JSON error, ids, page sizes, counts, flags and query strings as the API takes them, the
//! dashboard's sign-in cookie, and a stored path as a URL path.

use crate::error::{ApiError, ApiResult};
use axum::http::header;
use falcon_core::ids::{ExperimentId, GoalId, SessionId};

/// The cookie a signed-in browser carries (`HttpOnly; SameSite=Strict`): an opaque sign-in id, never the token.
pub const COOKIE: &str = "falcon_session";

/// The dashboard's sign-in cookie among `headers`.
pub fn cookie_in(headers: &axum::http::HeaderMap) -> Option<String> {
    headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|pair| {
        let (name, value) = pair.trim().split_once('=')?;
        (name == COOKIE && !value.is_empty()).then(|| value.to_string())
    })
}

/// The path's parameters, as axum's `Path` reads them but refused with the JSON error (a bad percent-encoding
/// is a 400 `usage`, not axum's plain-text answer).
pub struct Path<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned + Send> axum::extract::FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, ApiError> {
        // An id has one spelling: `%65-1` is e-1 percent-encoded, refused as `e-01` is (ids are never encoded).
        for raw in parts.uri.path().split('/').filter(|s| s.contains('%')) {
            let decoded = percent_decoded(raw);
            if ["e-", "g-", "s-"].iter().any(|p| decoded.starts_with(p) && crate::bodies::is_id(&decoded, p)) {
                return Err(ApiError::usage(format!("`{raw}` is {decoded} percent-encoded: write ids as they are")));
            }
        }
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(Path(value)),
            Err(e) => Err(ApiError::usage(format!("the path: {}", e.body_text()))),
        }
    }
}

/// A path segment with its `%XX` escapes decoded (lossily; a bad escape stays as written).
fn percent_decoded(raw: &str) -> String {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An experiment id as the API takes it: `e-N` only (a path is never read on the server's disk).
pub fn experiment_id(text: &str) -> ApiResult<ExperimentId> {
    canonical_id(text, "e-", "an experiment id")
}

/// A goal id as the API takes it: `g-N` only (the CLI's bare `N` is not part of the API's contract).
pub fn goal_id(text: &str) -> ApiResult<GoalId> {
    canonical_id(text, "g-", "a goal id")
}

/// A session id as the API takes it: `s-N` only.
pub fn session_id(text: &str) -> ApiResult<SessionId> {
    canonical_id(text, "s-", "a session id")
}

/// `prefix` then 1 to 18 digits, as the OpenAPI document's id patterns say; a usage error (400) otherwise.
fn canonical_id<T: std::str::FromStr>(text: &str, prefix: &str, what: &str) -> ApiResult<T> {
    Some(text)
        .filter(|t| crate::bodies::is_id(t, prefix))
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| ApiError::usage(format!("`{text}` is not {what} ({prefix}N)")))
}

/// A page size: 0 to 1000.
pub fn page_limit(text: &str) -> ApiResult<usize> {
    match text.parse::<usize>() {
        Ok(n) if n <= 1000 => Ok(n),
        _ => Err(ApiError::usage(format!("limit={text}: a page size from 0 to 1000"))),
    }
}

/// A report's `format` — `json` (the default), `md` or `html` — taken out of the query's pairs: how this surface
/// writes a report, not part of the use case's request.
pub fn take_format(pairs: &mut Vec<(String, String)>) -> ApiResult<falcon_app::render::Format> {
    use falcon_app::render::Format;
    let mut given = pairs.iter().filter(|(k, _)| k == "format").map(|(_, v)| v.as_str());
    let format = match (given.next(), given.next()) {
        (_, Some(_)) => return Err(ApiError::usage("query parameter `format` given twice")),
        (None, None) | (Some("json"), None) => Format::Json,
        (Some("md"), None) => Format::Md,
        (Some("html"), None) => Format::Html,
        (Some(other), None) => return Err(ApiError::usage(format!("format={other}: json, md or html"))),
    };
    pairs.retain(|(k, _)| k != "format");
    Ok(format)
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

/// A path for a URL: every byte but letters, digits, `-._~` and `/` percent-encoded.
pub fn url_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
