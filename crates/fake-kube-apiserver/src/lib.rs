//! # fake-kube-apiserver — a FAKE Kubernetes API server for tests
//!
//! **This is not Kubernetes.** It is a small, stateful, in-process *fake* of the
//! Kubernetes API server, listening on `127.0.0.1`, that speaks just enough of
//! the REST API for Falcon's Kubernetes job backend (kube-rs `Api<Job>`,
//! `Api<Pod>`, `Api<DynamicObject>` for JobSets) to be tested on machines
//! where no real cluster can run. Behind the API sit toy stand-ins for the Job
//! controller, the JobSet controller, the scheduler and the kubelet: no
//! containers ever run, and pods change state only on a timer (Pending ->
//! Running after ~200 ms) or when the test says so ([`FakeCluster::finish_pods`],
//! [`FakeCluster::preempt_pods`]).
//!
//! What is served (JSON in and out, errors as a Kubernetes `Status`):
//! - `GET /version`, `/api`, `/apis`, `/api/v1`, `/apis/batch/v1`,
//!   `/apis/jobset.x-k8s.io/v1alpha2` (minimal discovery)
//! - batch/v1 `jobs`, v1 `pods`, jobset.x-k8s.io/v1alpha2 `jobsets`:
//!   list (with `labelSelector`, `fieldSelector`, and `watch=true`), create,
//!   get, delete (with `propagationPolicy`), `GET …/status`;
//!   cluster-wide lists (`/apis/batch/v1/jobs`, `/api/v1/pods`, …)
//! - `GET /api/v1/namespaces/{ns}/pods/{name}/log` (`container`, `tailLines`,
//!   `limitBytes`; `follow` returns the current content and closes)
//! - `GET /apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods[/{name}]` (PodMetrics, with
//!   `labelSelector`), only after [`FakeCluster::serve_metrics`]: the usage a test set with
//!   [`FakeCluster::set_pod_usage`], for running pods (no container runs, so nothing is measured)
//!
//! See the crate's README.md for what is *not* simulated.
//!
//! ```no_run
//! # async fn demo() {
//! let cluster = fake_kube_apiserver::FakeCluster::start("test").await;
//! let url = cluster.url(); // point kube::Config::new(url.parse().unwrap()) at it
//! cluster.finish_pods("job-name=train", 0);
//! # }
//! ```

#![forbid(unsafe_code)]

mod controllers;
mod http;
mod selector;
mod store;
mod util;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::watch;

pub use controllers::{START_DELAY, UNSCHEDULABLE_MESSAGE};
pub use selector::LabelSelector;

use store::{Inner, Res};

/// How often the fake kubelet/scheduler looks at pending pods.
const KUBELET_TICK: std::time::Duration = std::time::Duration::from_millis(20);

pub(crate) struct Shared {
    pub name: String,
    pub addr: SocketAddr,
    inner: Mutex<Inner>,
    pub shutdown_rx: watch::Receiver<bool>,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Stops the server and the fake kubelet when the last handle goes away.
struct Guard {
    tx: watch::Sender<bool>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.tx.send_replace(true);
    }
}

/// A handle onto one running fake cluster. Cheap to clone; the server stops
/// when the last clone is dropped or [`FakeCluster::shutdown`] is called.
#[derive(Clone)]
pub struct FakeCluster {
    shared: Arc<Shared>,
    guard: Arc<Guard>,
}

impl std::fmt::Debug for FakeCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeCluster").field("name", &self.shared.name).field("url", &self.url()).finish()
    }
}

fn parse_selector(selector: &str) -> LabelSelector {
    LabelSelector::parse(selector)
        .unwrap_or_else(|e| panic!("fake-kube-apiserver: bad label selector {selector:?}: {e}"))
}

impl FakeCluster {
    /// Bind `127.0.0.1:0` and serve the fake API in a tokio task (plus a task for
    /// the fake kubelet) until every handle is dropped or `shutdown()` is called.
    ///
    /// Panics if the port cannot be bound. Must be called inside a tokio runtime.
    pub async fn start(name: &str) -> FakeCluster {
        let listener =
            tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("fake-kube-apiserver: bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("fake-kube-apiserver: local_addr");
        let (tx, rx) = watch::channel(false);
        let shared =
            Arc::new(Shared { name: name.to_string(), addr, inner: Mutex::new(Inner::new()), shutdown_rx: rx.clone() });
        let app = http::router(shared.clone());
        let mut server_rx = rx.clone();
        tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = server_rx.wait_for(|stop| *stop).await;
                })
                .await;
            if let Err(e) = served {
                tracing::warn!("fake-kube-apiserver: server stopped: {e}");
            }
        });
        let kubelet_shared = shared.clone();
        let mut kubelet_rx = rx;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(KUBELET_TICK);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => kubelet_shared.lock().kubelet_tick(),
                    _ = kubelet_rx.wait_for(|stop| *stop) => break,
                }
            }
        });
        tracing::info!("fake-kube-apiserver {name:?} listening on http://{addr}");
        FakeCluster { shared, guard: Arc::new(Guard { tx }) }
    }

    /// The cluster's name as given to [`FakeCluster::start`].
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.shared.addr)
    }

    /// Stop serving now (also happens when the last handle is dropped).
    pub fn shutdown(&self) {
        self.guard.tx.send_replace(true);
    }

    /// `false` simulates a stockout: pods created from now on stay `Pending` with
    /// condition `PodScheduled=False`, reason `Unschedulable`, message
    /// [`UNSCHEDULABLE_MESSAGE`]. `true` (the default) lets the fake scheduler
    /// place them (existing unschedulable pods get scheduled on the next tick).
    pub fn set_schedulable(&self, yes: bool) {
        self.shared.lock().schedulable = yes;
    }

    /// `true` (default): a scheduled pod goes Pending -> Running after
    /// [`START_DELAY`] (~200 ms). `false`: pods stay Pending (ContainerCreating)
    /// until [`FakeCluster::start_pods`], `finish_pods` or `preempt_pods`.
    pub fn set_auto_run(&self, yes: bool) {
        self.shared.lock().auto_run = yes;
    }

    /// Force pods matching a label selector from Pending to Running now.
    /// Returns how many pods changed.
    pub fn start_pods(&self, selector: &str) -> usize {
        let sel = parse_selector(selector);
        self.shared.lock().start_pods(&sel)
    }

    /// Terminate non-terminal pods matching a label selector (e.g. `job-name=x`):
    /// exit code 0 -> `Succeeded`, anything else -> `Failed`;
    /// `containerStatuses[0].state.terminated.exitCode` is `exit_code` (other
    /// containers exit 0). Owning Jobs and JobSets are updated. Returns how many
    /// pods changed. Panics on an unparsable selector.
    pub fn finish_pods(&self, selector: &str, exit_code: i32) -> usize {
        let sel = parse_selector(selector);
        self.shared.lock().terminate_pods(&sel, exit_code, false)
    }

    /// Preempt non-terminal pods matching a label selector: phase `Failed`,
    /// `status.reason` `Preempted`, condition `DisruptionTarget=True` (reason
    /// `PreemptionByScheduler`), containers terminated with exit code 137.
    /// The owning Job fails with reason `PodFailurePolicy` (unless its
    /// `podFailurePolicy` has a matching `Ignore` rule, in which case the pod is
    /// replaced). Returns how many pods changed.
    pub fn preempt_pods(&self, selector: &str) -> usize {
        let sel = parse_selector(selector);
        self.shared.lock().terminate_pods(&sel, 137, true)
    }

    /// Append `text` (verbatim) to the log of the first container of the pod
    /// named `pod` (any namespace). Panics if there is no such pod.
    pub fn append_log(&self, pod: &str, text: &str) {
        let mut inner = self.shared.lock();
        match inner.append_log(pod) {
            Some(log) => log.push_str(text),
            None => panic!("fake-kube-apiserver: append_log: no pod named {pod:?}"),
        }
    }

    /// `true` serves the metrics API (`metrics.k8s.io/v1beta1` PodMetrics), as a cluster with metrics-server
    /// does; `false` (the default, a bare cluster) answers 404 there.
    pub fn serve_metrics(&self, yes: bool) {
        self.shared.lock().metrics_served = yes;
    }

    /// Sets what the metrics API reports for the pods matching a label selector, as Kubernetes quantities
    /// (`cpu` e.g. `"250m"`, `memory` e.g. `"512Mi"`; the first container carries it all). Returns how many pods
    /// changed. Panics on an unparsable selector.
    pub fn set_pod_usage(&self, selector: &str, cpu: &str, memory: &str) -> usize {
        let sel = parse_selector(selector);
        let mut inner = self.shared.lock();
        let uids: Vec<String> = inner
            .list(Res::Pod, None)
            .into_iter()
            .filter(|p| sel.matches_object(p))
            .filter_map(|p| p.pointer("/metadata/uid").and_then(Value::as_str).map(str::to_string))
            .collect();
        for uid in &uids {
            inner.pods_rt.entry(uid.clone()).or_default().usage = Some((cpu.to_string(), memory.to_string()));
        }
        uids.len()
    }

    /// Snapshot of all pods (all namespaces, ordered by namespace then name).
    pub fn pods(&self) -> Vec<Value> {
        self.snapshot(Res::Pod)
    }

    /// Snapshot of all Jobs.
    pub fn jobs(&self) -> Vec<Value> {
        self.snapshot(Res::Job)
    }

    /// Snapshot of all JobSets.
    pub fn jobsets(&self) -> Vec<Value> {
        self.snapshot(Res::JobSet)
    }

    fn snapshot(&self, res: Res) -> Vec<Value> {
        self.shared.lock().list(res, None).into_iter().cloned().collect()
    }

    /// Every request received so far as `"METHOD /path"` (no query string),
    /// e.g. `"POST /apis/batch/v1/namespaces/default/jobs"`.
    pub fn request_log(&self) -> Vec<String> {
        self.shared.lock().request_log.clone()
    }

    /// The next `n` requests (of any kind) are answered with a Kubernetes
    /// `Status` error of HTTP code `status` (e.g. 500 -> reason `InternalError`)
    /// without touching state. They still appear in [`FakeCluster::request_log`].
    pub fn fail_next_requests(&self, n: usize, status: u16) {
        let mut inner = self.shared.lock();
        inner.fail_next = n;
        inner.fail_status = status;
    }
}
