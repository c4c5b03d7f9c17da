//! Reports kept as an experiment's artifacts (`reports/…`): one is served from the store when kept, else computed
//! under the server's limit on heavy analyses (at most `--max-analyses` at once; beyond it a 429 with
//! `Retry-After`) and kept for the next request. The API's profile and trace routes and the dashboard's pages
//! share it.

use crate::error::{ApiError, ApiResult};
use crate::state::State;
use axum::http::StatusCode;
use falcon_app::profiles::TraceOptions;
use falcon_core::ids::ExperimentId;

/// A heavy analysis' permit, or 429.
pub(crate) fn permit(state: &State) -> ApiResult<tokio::sync::OwnedSemaphorePermit> {
    state.heavy.clone().try_acquire_owned().map_err(|_| {
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_requests",
            "the server is running as many analyses as it allows; try again shortly",
        );
        e.retry_after = Some(5);
        e
    })
}

/// A report kept for the experiment, or computed (under a permit) and kept.
pub(crate) async fn kept_or<F, Fut>(state: &State, id: ExperimentId, name: &str, compute: F) -> ApiResult<Vec<u8>>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ApiResult<Vec<u8>>>,
{
    if let Some(bytes) = state.app.kept_report(id, name).await? {
        return Ok(bytes);
    }
    let _permit = permit(state)?;
    let bytes = compute().await?;
    if let Err(e) = state.app.keep_report(id, name, bytes.clone()).await {
        tracing::warn!("keeping the report {name} of {id} failed (it is computed again next time): {e}");
    }
    Ok(bytes)
}

/// The trace analysis of an experiment as JSON: kept, or computed under the limit and then kept.
pub(crate) async fn trace_json(state: &State, id: ExperimentId) -> ApiResult<Vec<u8>> {
    let app = state.app.clone();
    kept_or(state, id, "trace.json", || async move {
        let run = app.analyze_trace(&id.to_string(), None, &TraceOptions::default()).await?;
        serde_json::to_vec(&run).map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "failure", e.to_string()))
    })
    .await
}
