//! The fake's HTTP surface (axum).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::sync::broadcast;

use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{key, not_found, Event, Res};
use crate::util::ApiError;
use crate::Shared;

type Q = Query<HashMap<String, String>>;
type S = State<Arc<Shared>>;

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    let mut r = Router::new()
        .route("/version", get(version))
        .route("/version/", get(version))
        .route("/healthz", get(|| async { "ok" }))
        .route("/livez", get(|| async { "ok" }))
        .route("/readyz", get(|| async { "ok" }))
        .route("/api", get(api_versions))
        .route("/apis", get(api_groups))
        .route("/api/v1", get(|| async { Json(resource_list("v1", &[Res::Pod])) }))
        .route("/apis/batch/v1", get(|| async { Json(resource_list("batch/v1", &[Res::Job])) }))
        .route(
            "/apis/jobset.x-k8s.io/v1alpha2",
            get(|| async { Json(resource_list("jobset.x-k8s.io/v1alpha2", &[Res::JobSet])) }),
        )
        .route(
            "/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods",
            get(|State(s): S, Path(ns): Path<String>, Query(q): Q| async move { pod_metrics(&s, &ns, None, &q) }),
        )
        .route(
            "/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods/{name}",
            get(|State(s): S, Path((ns, name)): Path<(String, String)>, Query(q): Q| async move {
                pod_metrics(&s, &ns, Some(&name), &q)
            }),
        )
        .route(
            "/api/v1/namespaces/{ns}/pods/{name}/log",
            get(|State(s): S, Path((ns, name)): Path<(String, String)>, Query(q): Q| async move {
                pod_log(&s, &ns, &name, &q)
            }),
        );
    for res in [Res::Pod, Res::Job, Res::JobSet] {
        let base = match res {
            Res::Pod => "/api/v1".to_string(),
            _ => format!("/apis/{}", res.api_version()),
        };
        let plural = res.plural();
        r = r
            .route(
                &format!("{base}/{plural}"),
                get(move |State(s): S, Query(q): Q| async move { list_or_watch(s, res, None, q) }),
            )
            .route(
                &format!("{base}/namespaces/{{ns}}/{plural}"),
                get(move |State(s): S, Path(ns): Path<String>, Query(q): Q| async move {
                    list_or_watch(s, res, Some(ns), q)
                })
                .post(move |State(s): S, Path(ns): Path<String>, body: Bytes| async move {
                    create(&s, res, &ns, &body)
                }),
            )
            .route(
                &format!("{base}/namespaces/{{ns}}/{plural}/{{name}}"),
                get(move |State(s): S, Path((ns, name)): Path<(String, String)>| async move {
                    get_one(&s, res, &ns, &name)
                })
                .delete(
                    move |State(s): S, Path((ns, name)): Path<(String, String)>, Query(q): Q, body: Bytes| async move {
                        delete(&s, res, &ns, &name, &q, &body)
                    },
                ),
            )
            .route(
                &format!("{base}/namespaces/{{ns}}/{plural}/{{name}}/status"),
                get(move |State(s): S, Path((ns, name)): Path<(String, String)>| async move {
                    get_one(&s, res, &ns, &name)
                }),
            );
    }
    r.fallback(|| async { ApiError::new(404, "the server could not find the requested resource") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(405, "the fake-kube-apiserver does not support this method on this resource")
        })
        .layer(middleware::from_fn_with_state(shared.clone(), gate))
        .with_state(shared)
}

/// Records every request and injects failures armed by `fail_next_requests`.
async fn gate(State(s): S, req: Request, next: Next) -> Response {
    let line = format!("{} {}", req.method(), req.uri().path());
    tracing::debug!(cluster = %s.name, "{line}");
    let injected = {
        let mut inner = s.lock();
        inner.request_log.push(line);
        if inner.fail_next > 0 {
            inner.fail_next -= 1;
            Some(inner.fail_status)
        } else {
            None
        }
    };
    match injected {
        Some(code) => {
            ApiError::new(code, format!("fake-kube-apiserver: injected failure (fail_next_requests, code {code})"))
                .into_response()
        }
        None => next.run(req).await,
    }
}

async fn version() -> Json<Value> {
    Json(json!({
        "major": "1",
        "minor": "33",
        "gitVersion": "v1.33.0-fake",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }))
}

async fn api_versions(State(s): S) -> Json<Value> {
    Json(json!({
        "kind": "APIVersions",
        "apiVersion": "v1",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": s.addr.to_string()}],
    }))
}

async fn api_groups() -> Json<Value> {
    let group = |name: &str, version: &str| {
        let gv = format!("{name}/{version}");
        json!({
            "name": name,
            "versions": [{"groupVersion": gv, "version": version}],
            "preferredVersion": {"groupVersion": gv, "version": version},
        })
    };
    Json(json!({
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [group("batch", "v1"), group("jobset.x-k8s.io", "v1alpha2")],
    }))
}

fn resource_list(group_version: &str, resources: &[Res]) -> Value {
    let mut items = Vec::new();
    for r in resources {
        items.push(json!({
            "name": r.plural(), "singularName": r.kind().to_lowercase(), "namespaced": true,
            "kind": r.kind(), "verbs": ["create", "delete", "get", "list", "watch"],
        }));
        items.push(json!({
            "name": format!("{}/status", r.plural()), "singularName": "", "namespaced": true,
            "kind": r.kind(), "verbs": ["get"],
        }));
        if *r == Res::Pod {
            items.push(json!({
                "name": "pods/log", "singularName": "", "namespaced": true,
                "kind": "Pod", "verbs": ["get"],
            }));
        }
    }
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": items})
}

fn selectors(q: &HashMap<String, String>) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let label = LabelSelector::parse(q.get("labelSelector").map(String::as_str).unwrap_or(""))
        .map_err(ApiError::bad_request)?;
    let field = FieldSelector::parse(q.get("fieldSelector").map(String::as_str).unwrap_or(""))
        .map_err(ApiError::bad_request)?;
    Ok((label, field))
}

fn is_true(q: &HashMap<String, String>, k: &str) -> bool {
    matches!(q.get(k).map(String::as_str), Some("true") | Some("1"))
}

fn list_or_watch(s: Arc<Shared>, res: Res, ns: Option<String>, q: HashMap<String, String>) -> Response {
    let (label, field) = match selectors(&q) {
        Ok(x) => x,
        Err(e) => return e.into_response(),
    };
    if is_true(&q, "watch") {
        return watch(s, res, ns, label, field, &q);
    }
    let inner = s.lock();
    let items: Vec<Value> = inner
        .list(res, ns.as_deref())
        .into_iter()
        .filter(|o| label.matches_object(o) && field.matches_object(o))
        .cloned()
        .collect();
    Json(json!({
        "apiVersion": res.api_version(),
        "kind": res.list_kind(),
        "metadata": {"resourceVersion": inner.rv.to_string()},
        "items": items,
    }))
    .into_response()
}

/// `metrics.k8s.io/v1beta1` PodMetrics of running pods whose usage a test set ([`crate::FakeCluster::set_pod_usage`]),
/// like metrics-server (a pod without metrics yet is left out of a list, 404 alone); 404 for everything when the
/// cluster serves no metrics API ([`crate::FakeCluster::serve_metrics`]).
fn pod_metrics(s: &Shared, ns: &str, name: Option<&str>, q: &HashMap<String, String>) -> Response {
    let (label, _) = match selectors(q) {
        Ok(x) => x,
        Err(e) => return e.into_response(),
    };
    let inner = s.lock();
    if !inner.metrics_served {
        return ApiError::new(404, "the server could not find the requested resource").into_response();
    }
    let now = crate::util::now_rfc3339();
    let items: Vec<Value> = inner
        .list(Res::Pod, Some(ns))
        .into_iter()
        .filter(|p| name.is_none_or(|n| p.pointer("/metadata/name").and_then(Value::as_str) == Some(n)))
        .filter(|p| label.matches_object(p))
        .filter(|p| p.pointer("/status/phase").and_then(Value::as_str) == Some("Running"))
        .filter_map(|p| {
            let uid = p.pointer("/metadata/uid").and_then(Value::as_str)?;
            let (cpu, memory) = inner.pods_rt.get(uid)?.usage.clone()?;
            let containers: Vec<Value> = p
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(i, c)| {
                    // The whole usage on the first container, none on the others.
                    let (cpu, memory) = if i == 0 { (cpu.as_str(), memory.as_str()) } else { ("0", "0") };
                    json!({"name": c.get("name").cloned().unwrap_or(Value::Null), "usage": {"cpu": cpu, "memory": memory}})
                })
                .collect();
            Some(json!({
                "kind": "PodMetrics",
                "apiVersion": "metrics.k8s.io/v1beta1",
                "metadata": {
                    "name": p.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
                    "namespace": ns,
                    "labels": p.pointer("/metadata/labels").cloned().unwrap_or(json!({})),
                    "creationTimestamp": now,
                },
                "timestamp": now,
                "window": "10s",
                "containers": containers,
            }))
        })
        .collect();
    match name {
        Some(n) => match items.into_iter().next() {
            Some(item) => Json(item).into_response(),
            None => ApiError::new(404, format!("podmetrics.metrics.k8s.io \"{n}\" not found")).into_response(),
        },
        None => Json(json!({
            "kind": "PodMetricsList",
            "apiVersion": "metrics.k8s.io/v1beta1",
            "metadata": {},
            "items": items,
        }))
        .into_response(),
    }
}

fn get_one(s: &Shared, res: Res, ns: &str, name: &str) -> Response {
    match s.lock().get(res, ns, name) {
        Some(v) => Json(v.clone()).into_response(),
        None => not_found(res, name).into_response(),
    }
}

fn create(s: &Shared, res: Res, ns: &str, body: &[u8]) -> Response {
    let obj: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return ApiError::bad_request(format!("the request body is not valid JSON: {e}")).into_response(),
    };
    let mut inner = s.lock();
    let created = match res {
        Res::Job => inner.create_job(ns, obj),
        Res::JobSet => inner.create_jobset(ns, obj),
        Res::Pod => inner.create_bare_pod(ns, obj),
    };
    match created {
        Ok(v) => {
            inner.reconcile();
            (StatusCode::CREATED, Json(v)).into_response()
        }
        Err(e) => e.into_response(),
    }
}

fn delete(s: &Shared, res: Res, ns: &str, name: &str, q: &HashMap<String, String>, body: &[u8]) -> Response {
    let opts: Value = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => {
                return ApiError::bad_request(format!("the DeleteOptions body is not valid JSON: {e}")).into_response()
            }
        }
    };
    let policy = opts
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| q.get("propagationPolicy").cloned())
        .or_else(|| match opts.get("orphanDependents").and_then(Value::as_bool) {
            Some(true) => Some("Orphan".into()),
            Some(false) => Some("Background".into()),
            None => None,
        });
    let orphan = match policy.as_deref() {
        Some("Orphan") => true,
        Some("Background") | Some("Foreground") => false,
        Some(other) => {
            return ApiError::bad_request(format!(
                "invalid propagationPolicy {other:?}: must be Orphan, Background or Foreground"
            ))
            .into_response()
        }
        // Unset: the real API server orphans a batch/v1 Job's pods (legacy default);
        // JobSets (a CRD) default to Background.
        None => res == Res::Job,
    };
    let mut inner = s.lock();
    match inner.delete_cascade(&key(res, ns, name), orphan) {
        Some(mut obj) => {
            inner.reconcile();
            if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                m.insert("deletionTimestamp".into(), json!(crate::util::now_rfc3339()));
                m.insert("deletionGracePeriodSeconds".into(), json!(0));
            }
            Json(obj).into_response()
        }
        None => not_found(res, name).into_response(),
    }
}

fn pod_log(s: &Shared, ns: &str, name: &str, q: &HashMap<String, String>) -> Response {
    let text = match s.lock().pod_log(ns, name, q.get("container").map(String::as_str)) {
        Ok(t) => t,
        Err(e) => return e.into_response(),
    };
    let mut text = match q.get("tailLines").and_then(|t| t.parse::<usize>().ok()) {
        Some(n) => {
            let lines: Vec<&str> = text.split_inclusive('\n').collect();
            lines[lines.len().saturating_sub(n)..].concat()
        }
        None => text,
    };
    if let Some(limit) = q.get("limitBytes").and_then(|t| t.parse::<usize>().ok()) {
        if text.len() > limit {
            let mut cut = limit;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        }
    }
    ([(header::CONTENT_TYPE, "text/plain")], text).into_response()
}

// ---------------------------------------------------------------- watch

fn event_line(etype: &str, object: &Value) -> Bytes {
    let mut v = serde_json::to_vec(&json!({"type": etype, "object": object})).unwrap_or_default();
    v.push(b'\n');
    Bytes::from(v)
}

fn gone_line(msg: &str) -> Bytes {
    event_line("ERROR", &ApiError::new(410, msg).status_json())
}

struct WatchState {
    queued: VecDeque<Bytes>,
    rx: Option<broadcast::Receiver<Arc<Event>>>,
    deadline: tokio::time::Instant,
    shutdown: tokio::sync::watch::Receiver<bool>,
    filter: Box<dyn Fn(&Event) -> bool + Send>,
}

fn watch(
    s: Arc<Shared>,
    res: Res,
    ns: Option<String>,
    label: LabelSelector,
    field: FieldSelector,
    q: &HashMap<String, String>,
) -> Response {
    let timeout = q.get("timeoutSeconds").and_then(|t| t.parse::<u64>().ok()).unwrap_or(1800).min(3600);
    let filter = move |ev: &Event| {
        ev.res == res
            && ns.as_deref().is_none_or(|n| n == ev.ns)
            && label.matches_object(&ev.object)
            && field.matches_object(&ev.object)
    };
    let (queued, rx) = {
        let inner = s.lock();
        let rx = inner.events.subscribe();
        let mut queued = VecDeque::new();
        match q.get("resourceVersion").and_then(|v| v.parse::<u64>().ok()).filter(|v| *v > 0) {
            None => {
                // "Any" / "0": synthetic ADDED events for the current state.
                for ((r, n, _), obj) in &inner.objects {
                    let ev = Event { rv: 0, res: *r, ns: n.clone(), etype: "ADDED", object: obj.clone() };
                    if filter(&ev) {
                        queued.push_back(event_line("ADDED", obj));
                    }
                }
            }
            Some(since) if since < inner.history_floor => {
                queued.push_back(gone_line(&format!("too old resource version: {since} ({})", inner.history_floor)));
                return streamed(WatchState {
                    queued,
                    rx: None,
                    deadline: tokio::time::Instant::now(),
                    shutdown: s.shutdown_rx.clone(),
                    filter: Box::new(filter),
                });
            }
            Some(since) => {
                for ev in inner.history.iter().filter(|e| e.rv > since) {
                    if filter(ev) {
                        queued.push_back(event_line(ev.etype, &ev.object));
                    }
                }
            }
        }
        (queued, rx)
    };
    streamed(WatchState {
        queued,
        rx: Some(rx),
        deadline: tokio::time::Instant::now() + Duration::from_secs(timeout),
        shutdown: s.shutdown_rx.clone(),
        filter: Box::new(filter),
    })
}

fn streamed(state: WatchState) -> Response {
    let stream = futures::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(b) = st.queued.pop_front() {
                return Some((Ok::<Bytes, std::io::Error>(b), st));
            }
            let rx = st.rx.as_mut()?;
            tokio::select! {
                ev = rx.recv() => match ev {
                    Ok(ev) => {
                        if (st.filter)(&ev) {
                            st.queued.push_back(event_line(ev.etype, &ev.object));
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        st.rx = None;
                        st.queued.push_back(gone_line("watch fell behind; please re-list"));
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
                _ = tokio::time::sleep_until(st.deadline) => return None,
                _ = st.shutdown.wait_for(|v| *v) => return None,
            }
        }
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
