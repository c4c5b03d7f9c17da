//! Request bodies: at most [`MAX_BODY`] bytes (a spec is at most 1 MiB), within [`BODY_TIMEOUT`] (a client that
//! declares a body and sends it slowly, or not at all, gets a 408), UTF-8; a small body ([`small_text`], the
//! token-free sign-in's) within tighter bounds, one declaring more refused before any of it is read; JSON objects
//! parsed with the field named in the error.

use crate::error::{ApiError, ApiResult};
use axum::body::Body;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use std::time::Duration;

/// The largest body accepted, in bytes (1 MiB): more is 413.
pub const MAX_BODY: usize = 1 << 20;

/// How long a handler waits for the whole body: 1 MiB in 30 s is 35 KB/s, less than any working link.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// The whole body as text (413 past [`MAX_BODY`], 408 when it takes over [`BODY_TIMEOUT`], 400 when not UTF-8).
pub async fn text(body: Body) -> ApiResult<String> {
    read(body, MAX_BODY, BODY_TIMEOUT, "a spec is at most 1 MiB: keep large data in artifacts").await
}

/// A small body as text: at most `max` bytes — a declared length over it is a 413 at once — within `within` (408),
/// UTF-8; `hint` says what the body should be.
pub async fn small_text(body: Body, max: usize, within: Duration, hint: &str) -> ApiResult<String> {
    if http_body::Body::size_hint(&body).lower() > max as u64 {
        return Err(too_large(max, hint));
    }
    read(body, max, within, hint).await
}

async fn read(body: Body, max: usize, within: Duration, hint: &str) -> ApiResult<String> {
    let read = tokio::time::timeout(within, axum::body::to_bytes(body, max)).await.map_err(|_| {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            format!("the body did not arrive within {} s", within.as_secs()),
        )
    })?;
    let bytes = read.map_err(|_| too_large(max, hint))?;
    String::from_utf8(bytes.to_vec()).map_err(|e| ApiError::usage(format!("the body is not UTF-8: {e}")))
}

fn too_large(max: usize, hint: &str) -> ApiError {
    ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", format!("the body is over {max} bytes"))
        .hint(hint)
}

/// The body as a JSON object of type `T` (an empty body is `{}`; an array or a scalar is refused, though
/// serde would read an array as a struct's fields in order).
pub async fn json<T: DeserializeOwned>(body: Body) -> ApiResult<T> {
    let text = text(body).await?;
    let text = if text.trim().is_empty() { "{}" } else { &text };
    let invalid = |m: String| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", m);
    if !text.trim_start().starts_with('{') {
        return Err(invalid("the body must be a JSON object".into()));
    }
    serde_json::from_str(text).map_err(|e| invalid(format!("the body: {e}")))
}

/// A use case's request (`falcon_app::requests`) from a JSON object body, checked against the type's schema (its
/// patterns and bounds, as the OpenAPI document publishes it): what breaks it is 422 naming the field.
pub async fn request<T: schemars::JsonSchema + DeserializeOwned>(body: Body) -> ApiResult<T> {
    request_at(&[], body).await
}

/// A use case's request from the path's parameters (`path`: name and value, the ids the route names) and a JSON
/// object body with the rest of its fields; the body naming a path parameter is refused (422).
pub async fn request_at<T: schemars::JsonSchema + DeserializeOwned>(
    path: &[(&str, String)],
    body: Body,
) -> ApiResult<T> {
    let invalid = |m: String| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", m);
    let mut object: serde_json::Map<String, serde_json::Value> = json(body).await?;
    for (name, value) in path {
        if object.insert((*name).to_string(), serde_json::Value::String(value.clone())).is_some() {
            return Err(invalid(format!("the body: `{name}` is the path's, not the body's")));
        }
    }
    falcon_app::requests::read(object).map_err(|e| invalid(format!("the body: {e}")))
}

/// An answer's body that keeps `guard` alive until it is sent or dropped (a request counted in flight, a stream's
/// slot in its token's budget).
pub struct Held<G> {
    body: Body,
    _guard: G,
}

impl<G> Held<G> {
    /// `body`, holding `guard` while it is sent.
    pub fn new(body: Body, guard: G) -> Self {
        Held { body, _guard: guard }
    }
}

impl<G: Unpin> http_body::Body for Held<G> {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        http_body::Body::is_end_stream(&self.body)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::Body::size_hint(&self.body)
    }
}
