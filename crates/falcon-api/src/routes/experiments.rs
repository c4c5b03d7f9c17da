//! `/api/v1/experiments`: list, submit, show, cancel, logs (JSON, or followed as Server-Sent Events), artifacts
//! (listed, and each streamed with `Range`), diff, compare, goodput (one experiment's, and `/api/v1/goodput` across
//! runs). Bodies are the CLI's `--json` objects.

use super::experiment_id;
use crate::body;
use crate::error::{ApiError, ApiResult};
use crate::request::Path;
use crate::state::State;
use axum::body::Body;
use axum::extract::{RawQuery, State as Extract};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use falcon_app::requests::ExperimentListRequest;
use falcon_app::streams::Follow;
use falcon_app::App;
use falcon_core::ids::ExperimentId;
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;

pub fn router() -> Router<Arc<State>> {
    Router::new()
        .route("/api/v1/experiments", get(list).post(submit))
        .route("/api/v1/experiments/{id}", get(show))
        .route("/api/v1/experiments/{id}/cancel", post(cancel))
        .route("/api/v1/experiments/{id}/logs", get(logs))
        .route("/api/v1/experiments/{id}/artifacts", get(artifacts))
        .route("/api/v1/experiments/{id}/artifacts/{*path}", get(artifact))
        .route("/api/v1/experiments/{a}/diff/{b}", get(diff))
        .route("/api/v1/experiments/{a}/compare/{b}", get(compare))
        .route("/api/v1/experiments/{id}/goodput", get(goodput))
        .route("/api/v1/goodput", get(goodput_report))
}

/// `GET …/{id}/goodput`: `falcon exp show`'s `goodput` object, also before the experiment ended.
async fn goodput(Extract(state): Extract<Arc<State>>, Path(id): Path<String>) -> ApiResult<Response> {
    let id = experiment_id(&id)?;
    state.app.experiment_record(id).await?; // 404 for an unknown id
    Ok(Json(state.app.experiment_goodput(id).await?).into_response())
}

/// `GET /api/v1/goodput`: the parameters are [`falcon_app::requests::GoodputRequest`]'s fields.
async fn goodput_report(Extract(state): Extract<Arc<State>>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let r: falcon_app::requests::GoodputRequest = crate::typed_query::from_query(raw.as_deref())?;
    Ok(Json(state.app.goodput_report(&r.query()).await?).into_response())
}

/// `GET /api/v1/experiments`: the parameters are [`ExperimentListRequest`]'s fields.
async fn list(Extract(state): Extract<Arc<State>>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let request: ExperimentListRequest = crate::typed_query::from_query(raw.as_deref())?;
    let page = state.app.list_experiments(&request.query()?, request.cursor.as_deref()).await?;
    Ok(Json(page).into_response())
}

/// `POST /api/v1/experiments`: a spec, YAML or JSON; 201 with the experiment.
async fn submit(Extract(state): Extract<Arc<State>>, body: Body) -> ApiResult<Response> {
    let text = body::text(body).await?;
    let spec = falcon_core::spec::parse_spec(&text, "request body")?;
    let (mut detail, _) = state.app.submit_experiment(&spec, false, None, |_| {}).await?;
    served_uris(&mut detail.view.artifacts);
    let location = format!("/api/v1/experiments/{}", detail.view.record.id);
    let mut response = (StatusCode::CREATED, Json(detail)).into_response();
    if let Ok(v) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    Ok(response)
}

/// `GET …/{id}?warmup=N`: the experiment, its metric summaries without the first N samples (default: the
/// detected warm-up).
async fn show(
    Extract(state): Extract<Arc<State>>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let id = experiment_id(&id)?.to_string();
    let r: falcon_app::requests::ExperimentShowRequest =
        crate::typed_query::from_path_and_query(&[("id", id)], raw.as_deref())?;
    let (id, warmup) = r.show()?;
    let mut detail = state.app.show_experiment(id, warmup).await?;
    served_uris(&mut detail.view.artifacts);
    Ok(Json(detail).into_response())
}

async fn cancel(Extract(state): Extract<Arc<State>>, Path(id): Path<String>) -> ApiResult<Response> {
    let mut detail = state.app.cancel_experiment(experiment_id(&id)?).await?;
    served_uris(&mut detail.view.artifacts);
    Ok(Json(detail).into_response())
}

/// `GET …/{id}/logs?tail=N`: `{source: text}` (the last N lines of each with `tail`). With `Accept:
/// text/event-stream`: `log` events (`{experiment, source, text}`) as the logs grow, read from where the last
/// read ended, then `end` (`{experiment, status}`) once the experiment ended (or the server stops).
async fn logs(
    Extract(state): Extract<Arc<State>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let id = experiment_id(&id)?.to_string();
    let r: falcon_app::requests::ExperimentLogLinesRequest =
        crate::typed_query::from_path_and_query(&[("id", id)], raw.as_deref())?;
    let (id, tail) = r.logs()?;
    let wants_stream =
        headers.get(header::ACCEPT).and_then(|a| a.to_str().ok()).is_some_and(|a| a.contains("text/event-stream"));
    if wants_stream {
        state.app.show_experiment(id, None).await?; // 404 before the stream starts
        return Ok(follow(state, id).into_response());
    }
    let mut out = serde_json::Map::new();
    for (source, text) in state.app.experiment_logs(id, tail).await? {
        out.insert(source, text.into());
    }
    Ok(Json(out).into_response())
}

/// How often a follower looks for new log text.
const FOLLOW_EVERY: Duration = Duration::from_millis(500);

/// The experiment's log stream (`falcon_app::streams`) as server-sent events; a failed read is an `error` event.
fn follow(
    state: Arc<State>,
    id: ExperimentId,
) -> Sse<impl futures::Stream<Item = Result<Event, std::convert::Infallible>>> {
    let follow = Follow { every: FOLLOW_EVERY, stop: Some(state.stopping.clone()), ..Follow::default() };
    let events = App::follow_logs(state.app.clone(), id, follow);
    Sse::new(events.map(|e| Ok(crate::events::sse_event(e)))).keep_alive(KeepAlive::default())
}

async fn artifacts(
    Extract(state): Extract<Arc<State>>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let id = experiment_id(&id)?.to_string();
    let r: falcon_app::requests::ExperimentArtifactsRequest =
        crate::typed_query::from_path_and_query(&[("id", id)], raw.as_deref())?;
    let (id, limit) = r.page()?;
    let mut page = state.app.experiment_artifacts(id, r.cursor.as_deref(), limit).await?;
    served_uris(&mut page.items);
    Ok(Json(page).into_response())
}

/// An artifact's `uri` on the server's own disk (`file://…`) becomes the route that serves it: a reader on
/// another machine learns no local path of the server (where its store, and so its database, lives).
pub fn served_uris(artifacts: &mut [falcon_app::experiments::ArtifactView]) {
    for a in artifacts.iter_mut().filter(|a| a.uri.starts_with("file:")) {
        a.uri = match a.experiment {
            Some(id) => {
                let name = a.key.strip_prefix(&format!("experiments/{id}/")).unwrap_or(&a.key);
                format!("/api/v1/experiments/{id}/artifacts/{}", crate::request::url_path(name))
            }
            None => String::new(),
        };
    }
}

/// `Content-Disposition: attachment` with the object's file name, as RFC 6266 writes it: an ASCII fallback and
/// the UTF-8 name percent-encoded.
fn attachment(path: &str) -> String {
    let name = path.rsplit('/').next().filter(|n| !n.is_empty()).unwrap_or("artifact");
    let ascii: String =
        name.chars().map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' && c != '%' { c } else { '_' }).collect();
    let encoded: String = name
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

/// Bytes streamed a read at a time.
const CHUNK: u64 = 4 << 20;

/// `GET …/{id}/artifacts/{path}`: the object, streamed; `Range: bytes=a-b` (one range) gives 206. A workload
/// wrote it, so it is never a page of this origin: always a download (`Content-Disposition: attachment`), under
/// `Content-Security-Policy: sandbox; default-src 'none'` (opened anyway, it runs no script and loads nothing)
/// and `nosniff`.
async fn artifact(
    Extract(state): Extract<Arc<State>>,
    Path((id, path)): Path<(String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let id = experiment_id(&id)?;
    let record = state.app.experiment_artifact(id, &path).await?;
    let size = record.size;
    let range = match headers.get(header::RANGE).and_then(|r| r.to_str().ok()) {
        Some(r) => Some(parse_range(r, size).ok_or_else(|| {
            ApiError::new(
                StatusCode::RANGE_NOT_SATISFIABLE,
                "range_not_satisfiable",
                format!("Range `{r}` on {size} bytes"),
            )
        })?),
        None => None,
    };
    let (start, end) = range.unwrap_or((0, size));
    // Refused once a download found its stored bytes changed (recorded then, shown by `exp show`).
    if let Some(why) = state.app.artifact_integrity(&record).await? {
        return Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "failure", why)
            .hint("the stored object no longer matches the SHA-256 recorded when it was collected"));
    }
    let app = state.app.clone();
    let record_for_stream = record.clone();
    // A full download is hashed as it goes: bytes that are not the indexed ones end the answer with an error
    // before its last chunk (the client sees a cut transfer, never a whole wrong file) and are recorded.
    let whole = range.is_none();
    let hasher = std::sync::Arc::new(std::sync::Mutex::new(<sha2::Sha256 as sha2::Digest>::new()));
    let stream = futures::stream::unfold((start, None::<bytes::Bytes>), move |(at, held)| {
        let (app, record, hasher) = (app.clone(), record_for_stream.clone(), hasher.clone());
        async move {
            let failed = |e: String| Some((Err(std::io::Error::other(e)), (end, None)));
            if at >= end {
                // The chunk held back goes out only when the whole object hashed to the indexed SHA-256.
                let last = held?;
                if whole {
                    let found = hex::encode(sha2::Digest::finalize(hasher.lock().map(|h| h.clone()).ok()?));
                    if !found.eq_ignore_ascii_case(&record.sha256) {
                        let read = format!("{} bytes of sha256 {found}", record.size);
                        return failed(app.artifact_mismatch(&record, &read).await.unwrap_or_else(|e| e.to_string()));
                    }
                }
                return Some((Ok::<_, std::io::Error>(last), (end, None)));
            }
            let upto = (at + CHUNK).min(end);
            match app.artifact_bytes(&record, at..upto).await {
                Ok(bytes) if !bytes.is_empty() => {
                    let bytes = bytes::Bytes::from(bytes);
                    if let Ok(mut h) = hasher.lock() {
                        sha2::Digest::update(&mut *h, &bytes);
                    }
                    let next = at + bytes.len() as u64;
                    // One chunk is always held back (the first answer is an empty one).
                    Some((Ok(held.unwrap_or_default()), (next, Some(bytes))))
                }
                Ok(_) if whole => {
                    let read = format!("{at} bytes");
                    failed(app.artifact_mismatch(&record, &read).await.unwrap_or_else(|e| e.to_string()))
                }
                Ok(_) => held.map(|h| (Ok(h), (end, None))),
                Err(e) => failed(e.to_string()),
            }
        }
    });
    let mut response = Response::new(Body::from_stream(stream));
    let h = response.headers_mut();
    let put = |h: &mut HeaderMap, k: header::HeaderName, v: String| {
        if let Ok(v) = HeaderValue::from_str(&v) {
            h.insert(k, v);
        }
    };
    put(h, header::CONTENT_TYPE, record.content_type.clone());
    put(h, header::CONTENT_DISPOSITION, attachment(&path));
    put(h, header::CONTENT_SECURITY_POLICY, "sandbox; default-src 'none'".into());
    put(h, header::X_CONTENT_TYPE_OPTIONS, "nosniff".into());
    put(h, header::CONTENT_LENGTH, (end - start).to_string());
    put(h, header::ACCEPT_RANGES, "bytes".into());
    put(h, header::ETAG, format!("\"{}\"", record.sha256));
    if range.is_some() {
        *response.status_mut() = StatusCode::PARTIAL_CONTENT;
        let last = end.saturating_sub(1);
        put(response.headers_mut(), header::CONTENT_RANGE, format!("bytes {start}-{last}/{size}"));
    }
    Ok(response)
}

/// One `bytes=` range on an object of `size` bytes, as `[start, end)`; `None` when it cannot be served.
pub fn parse_range(value: &str, size: u64) -> Option<(u64, u64)> {
    let spec = value.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (a, b) = spec.split_once('-')?;
    let (a, b) = (a.trim(), b.trim());
    let (start, end) = if a.is_empty() {
        let n: u64 = b.parse().ok()?;
        (size.saturating_sub(n), size)
    } else {
        let start: u64 = a.parse().ok()?;
        let end = if b.is_empty() { size } else { b.parse::<u64>().ok()?.saturating_add(1).min(size) };
        (start, end)
    };
    (start < end && start < size).then_some((start, end))
}

async fn diff(Extract(state): Extract<Arc<State>>, Path((a, b)): Path<(String, String)>) -> ApiResult<Response> {
    let changes = state.app.diff_experiments(experiment_id(&a)?, experiment_id(&b)?).await?;
    Ok(Json(falcon_app::contract::DiffBody { changes: falcon_app::contract::changes(&changes) }).into_response())
}

/// `GET …/{a}/compare/{b}?metric=…&direction=…&warmup=…`: each side `e-1`, `e-1,e-2`, `s-3` or
/// `config:<hash>`; a regression is a 200 with `verdict: regressed`.
async fn compare(
    Extract(state): Extract<Arc<State>>,
    Path((a, b)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let r: falcon_app::requests::ExperimentCompareRequest =
        crate::typed_query::from_path_and_query(&[("a", a), ("b", b)], raw.as_deref())?;
    Ok(Json(state.app.compare_experiments(&r.compare()?).await?).into_response())
}

#[cfg(test)]
mod tests {
    use super::parse_range;

    #[test]
    fn ranges_parse_like_http_says() {
        assert_eq!(parse_range("bytes=0-9", 100), Some((0, 10)));
        assert_eq!(parse_range("bytes=90-", 100), Some((90, 100)));
        assert_eq!(parse_range("bytes=-10", 100), Some((90, 100)));
        assert_eq!(parse_range("bytes=95-200", 100), Some((95, 100)));
        for bad in ["bytes=100-", "bytes=5-2", "bytes=0-1,3-4", "items=0-1", "bytes=x-1", "bytes=-0"] {
            assert_eq!(parse_range(bad, 100), None, "{bad}");
        }
    }

    #[test]
    fn an_artifact_downloads_under_its_own_name() {
        assert_eq!(
            super::attachment("reports/report.html"),
            "attachment; filename=\"report.html\"; filename*=UTF-8''report.html"
        );
        assert_eq!(
            super::attachment("a b/\"x\";é.txt"),
            "attachment; filename=\"_x_;_.txt\"; filename*=UTF-8''%22x%22%3B%C3%A9.txt"
        );
    }
}
