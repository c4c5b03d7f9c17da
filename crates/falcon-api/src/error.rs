//! The API's one error body, the same as the CLI's `--json` errors: `{"error": {"code", "message", "hint"}}`.
//! The HTTP status comes from the error kind (usage 400, not found 404, conflict 409, invalid input 422,
//! failure 500); the API's own refusals add theirs (401, 403, 413, 415, 429, 503) with codes of their own.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use falcon_app::AppError;

/// A request's failure.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub hint: Option<String>,
    /// Seconds to wait (429, 503).
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, code, message: message.into(), hint: None, retry_after: None }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// A bad request (400, `usage`).
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "usage", message)
    }
}

impl From<AppError> for ApiError {
    fn from(e: AppError) -> Self {
        let kind = e.kind();
        let status = StatusCode::from_u16(kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let retry_after = (kind == falcon_core::ErrorKind::TooManyRequests).then_some(5);
        ApiError { status, code: kind.code(), message: e.to_string(), hint: e.hint(), retry_after }
    }
}

impl From<falcon_core::spec::SpecError> for ApiError {
    fn from(e: falcon_core::spec::SpecError) -> Self {
        AppError::from(e).into()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = falcon_app::contract::ErrorBody::new(self.code, self.message, self.hint).to_value();
        let mut response = (self.status, axum::Json(body)).into_response();
        if let Some(s) = self.retry_after {
            if let Ok(v) = HeaderValue::from_str(&s.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        response
    }
}

/// A handler's result.
pub type ApiResult<T> = Result<T, ApiError>;
