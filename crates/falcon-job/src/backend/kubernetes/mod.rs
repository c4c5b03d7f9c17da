//! The Kubernetes backend: a job becomes a `batch/v1` Job (one host) or a `jobset.x-k8s.io/v1alpha2` JobSet
//! (more hosts) named after the job attempt and pool ([`object_name`](crate::backend::object_name)), so a
//! worker that restarts finds it by name and never submits twice.
//!
//! - [`manifest`] renders the object (pure; the module docs of `manifest.rs` list node selectors, resources,
//!   tolerations, capacity types and labels);
//! - handles are `job/<name>` or `jobset/<name>` (a bare `<name>` is also understood: Job first, then JobSet);
//! - [`Backend::submit`] creates the object; `409 AlreadyExists` means an earlier submission got through, and
//!   the object is adopted when its `falcon.dev/job-id` label is this job's (otherwise an error: never two
//!   objects, never someone else's);
//! - [`Backend::status`] reads the object's conditions and its pods (`job-name=<name>` for a Job,
//!   `jobset.sigs.k8s.io/jobset-name=<name>` for a JobSet) by the rules in `state.rs`: unschedulable pods with
//!   none running are a capacity stockout (`Pending { unschedulable: true }`), `DisruptionTarget` is a
//!   preemption, the first failed pod's exit code is the job's;
//! - [`Backend::cancel`] deletes with background propagation (the pods go too); a missing object is fine;
//! - [`Backend::logs`] reads the `workload` container's log of every pod (source = pod name); pods that have
//!   not started (the API answers 400) or are gone (404) are skipped;
//! - [`Backend::failure_output`] reads the end of the first failed pod's `workload` log (the pod `status`
//!   names): its last [`FAILURE_TAIL_LINES`] lines, at most [`TAIL_BYTES`] of them (the API cuts from the
//!   start, so a cut answer is asked again for the last line alone);
//! - [`Backend::sample`] reads the pods' `PodMetrics` from the metrics API (`metrics.k8s.io/v1beta1`, served by
//!   metrics-server) and sums their containers' `memory` (the working set) and `cpu` (a rate, which the
//!   sampler integrates into CPU time), at most every [`METRICS_REFRESH`] per job; a cluster that serves no
//!   metrics API (404) cannot be sampled, and pods without metrics yet (metrics-server reports every 15–60 s)
//!   give no sample.
//!
//! Every API failure (a 5xx, a refused connection) is a [`JobError::Backend`] naming the pool and operation.
//! Nothing is retried here (kube's own retry layer is turned off; connects time out after 10 s, silent
//! responses after 60 s): the job manager tries again on its next tick, and deterministic names make that
//! safe.
//!
//! Pool settings (`[[pools]] settings`): `api_url` (a plain API server URL, no credentials — e.g. a test
//! fake or `kubectl proxy`), else `context` and/or `kubeconfig` (a kubeconfig context, from the file at
//! `kubeconfig` or the default kubeconfig), else the inferred default (kubeconfig or in-cluster);
//! `namespace` (default: the context's namespace, else `default`); `kueue_queue` and `service_account` (see `manifest.rs`). Other keys
//! are refused, so a misspelt `context` cannot silently send jobs to the default cluster.

mod manifest;
mod state;

pub use manifest::{
    label_key, label_value, manifest, max_name_len, ObjectKind, CONTAINER, JOBSET_API_VERSION, LABEL_ATTEMPT,
    LABEL_JOB_ID, LABEL_NAME, REPLICATED_JOB, TTL_SECONDS_AFTER_FINISHED,
};

use crate::backend::{Backend, BackendRef, BackendState, CpuUse, LogSnapshot, Sample, Submission};
use crate::error::{JobError, Result};
use crate::failure::TAIL_BYTES;
use crate::pool::Pool;
use async_trait::async_trait;
use falcon_core::config::PoolBackend;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, LogParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use state::{Condition, Observed};
use std::collections::BTreeMap;

/// Settings a Kubernetes pool understands.
pub const SETTINGS: &[&str] = &["api_url", "context", "kubeconfig", "namespace", "kueue_queue", "service_account"];

/// How many lines of the failed pod's log are asked for to find the reason of a failure.
pub const FAILURE_TAIL_LINES: i64 = 50;
/// How many pod logs are read at once.
const LOG_CONCURRENCY: usize = 16;
/// Longest wait for a connection to the API server.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// Longest silence from the API server within one response.
const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Runs jobs as Jobs and JobSets in one namespace of one cluster.
#[derive(Clone)]
pub struct KubernetesBackend {
    client: Client,
    namespace: String,
    pool: String,
    jobset: ApiResource,
    pod_metrics: ApiResource,
    /// The least time between two metrics reads of one job (see [`KubernetesBackend::with_metrics_refresh`]).
    metrics_refresh: std::time::Duration,
    /// When each job's metrics were last read (handle → time).
    last_metrics: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>>,
}

/// How often metrics-server refreshes a pod's usage at best; a job's metrics are read no more often.
pub const METRICS_REFRESH: std::time::Duration = std::time::Duration::from_secs(10);

impl std::fmt::Debug for KubernetesBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubernetesBackend").field("pool", &self.pool).field("namespace", &self.namespace).finish()
    }
}

impl KubernetesBackend {
    /// A backend over an existing client.
    pub fn new(client: Client, namespace: impl Into<String>, pool: impl Into<String>) -> Self {
        let gvk = GroupVersionKind::gvk("jobset.x-k8s.io", "v1alpha2", "JobSet");
        KubernetesBackend {
            client,
            namespace: namespace.into(),
            pool: pool.into(),
            jobset: ApiResource::from_gvk_with_plural(&gvk, "jobsets"),
            pod_metrics: ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("metrics.k8s.io", "v1beta1", "PodMetrics"),
                "pods",
            ),
            metrics_refresh: METRICS_REFRESH,
            last_metrics: Default::default(),
        }
    }

    /// How long [`Backend::sample`] waits between two reads of a job's metrics (default [`METRICS_REFRESH`]:
    /// metrics-server has nothing newer sooner, and every read is a request to the API server).
    pub fn with_metrics_refresh(mut self, every: std::time::Duration) -> Self {
        self.metrics_refresh = every;
        self
    }

    /// A backend for a Kubernetes pool, from its settings (see the module docs). Errors name the pool and the
    /// setting: [`JobError::InvalidPool`] for a setting that cannot work, [`JobError::Backend`] when the
    /// kubeconfig or client cannot be loaded.
    pub async fn from_pool(pool: &Pool) -> Result<KubernetesBackend> {
        let invalid = |message: String| JobError::InvalidPool { pool: pool.name.clone(), message };
        let failed = |operation: &'static str, message: String| JobError::Backend {
            backend: "kubernetes",
            pool: pool.name.clone(),
            operation,
            message,
        };
        if pool.backend != PoolBackend::Kubernetes {
            return Err(invalid(format!("not a Kubernetes pool (backend {:?})", pool.backend)));
        }
        if let Some(key) = pool.settings.keys().find(|k| !SETTINGS.contains(&k.as_str())) {
            return Err(invalid(format!(
                "settings.{key}: not a Kubernetes pool setting (known: {})",
                SETTINGS.join(", ")
            )));
        }
        let text = |key: &str| -> Result<Option<String>> {
            match pool.settings.get(key) {
                None => Ok(None),
                Some(serde_json::Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_string())),
                Some(other) => Err(invalid(format!("settings.{key}: expected a non-empty string, got {other}"))),
            }
        };
        let namespace = text("namespace")?;
        if let Some(namespace) = &namespace {
            let dns_label = namespace.len() <= 63
                && namespace.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !namespace.starts_with('-')
                && !namespace.ends_with('-');
            if !dns_label {
                return Err(invalid(format!("settings.namespace: `{namespace}` is not a valid namespace name")));
            }
        }
        text("kueue_queue")?;
        text("service_account")?;
        let (api_url, context, kubeconfig) = (text("api_url")?, text("context")?, text("kubeconfig")?);
        let mut config = match (api_url, context, kubeconfig) {
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                return Err(invalid("settings.api_url: give either api_url or context/kubeconfig, not both".into()));
            }
            (Some(url), None, None) => {
                let uri = url.parse().map_err(|e| invalid(format!("settings.api_url: `{url}` is not a URL: {e}")))?;
                Config::new(uri)
            }
            (None, context, Some(path)) => {
                let options = KubeConfigOptions { context: context.clone(), ..Default::default() };
                let file = Kubeconfig::read_from(&path)
                    .map_err(|e| failed("load kubeconfig", format!("settings.kubeconfig `{path}`: {}", chain(&e))))?;
                Config::from_custom_kubeconfig(file, &options).await.map_err(|e| {
                    let which = context.map(|c| format!("settings.context `{c}` in ")).unwrap_or_default();
                    failed("load kubeconfig", format!("{which}settings.kubeconfig `{path}`: {}", chain(&e)))
                })?
            }
            (None, Some(context), None) => {
                let options = KubeConfigOptions { context: Some(context.clone()), ..Default::default() };
                Config::from_kubeconfig(&options)
                    .await
                    .map_err(|e| failed("load kubeconfig", format!("settings.context `{context}`: {}", chain(&e))))?
            }
            (None, None, None) => Config::infer().await.map_err(|e| {
                failed(
                    "load kubeconfig",
                    format!("no api_url or context in settings and no default config: {}", chain(&e)),
                )
            })?,
        };
        // The setting wins, then the kubeconfig context's (or in-cluster) namespace, then `default`.
        let namespace = namespace.unwrap_or_else(|| config.default_namespace.clone());
        // One tick of the job manager waits for these calls: bound them, and leave retries to the next tick
        // (kube's default retry of 429/503/504 backs off for minutes).
        config.default_retry = false;
        config.connect_timeout = Some(CONNECT_TIMEOUT);
        config.read_timeout = Some(READ_TIMEOUT);
        // kube builds a rustls client configuration even for `http://` URLs. When the process links rustls with
        // both the ring and aws-lc-rs providers (reqwest brings aws-lc-rs) and installed neither as the
        // default, rustls panics here: report that as an error rather than take the worker down.
        let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Client::try_from(config)));
        let client = match built {
            Ok(client) => client.map_err(|e| failed("connect", chain(&e)))?,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("a panic")
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                return Err(failed(
                    "connect",
                    format!(
                        "building the Kubernetes client panicked: {what} (fix: enable kube's `aws-lc-rs` feature next to \
                         `ring`, or install a rustls CryptoProvider at process start)"
                    ),
                ));
            }
        };
        Ok(KubernetesBackend::new(client, namespace, pool.name.clone()))
    }

    /// The namespace jobs go to.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    fn jobs(&self) -> Api<Job> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    fn jobsets(&self) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), &self.namespace, &self.jobset)
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    fn error(&self, operation: &'static str, message: impl Into<String>) -> JobError {
        JobError::Backend { backend: "kubernetes", pool: self.pool.clone(), operation, message: message.into() }
    }

    fn api_error(&self, operation: &'static str, e: &kube::Error) -> JobError {
        self.error(operation, describe(e))
    }

    /// The labels of the object of this kind and name, `None` when there is none.
    async fn labels_of(
        &self,
        kind: ObjectKind,
        name: &str,
    ) -> std::result::Result<Option<BTreeMap<String, String>>, kube::Error> {
        Ok(match kind {
            ObjectKind::Job => self.jobs().get_opt(name).await?.map(|j| j.metadata.labels.unwrap_or_default()),
            ObjectKind::JobSet => self.jobsets().get_opt(name).await?.map(|j| j.metadata.labels.unwrap_or_default()),
        })
    }

    /// The kind of a handle, looking it up when the handle is a bare name; `None` when no object exists.
    async fn kind_of(&self, handle: &BackendRef, operation: &'static str) -> Result<Option<(ObjectKind, String)>> {
        match parse_ref(&handle.0) {
            (Some(kind), name) => Ok(Some((kind, name.to_string()))),
            (None, name) => {
                Ok(self.find(name).await.map_err(|e| retag(e, operation))?.and_then(|found| {
                    match parse_ref(&found.0) {
                        (Some(kind), name) => Some((kind, name.to_string())),
                        (None, _) => None,
                    }
                }))
            }
        }
    }

    async fn list_pods(&self, kind: ObjectKind, name: &str) -> std::result::Result<Vec<Pod>, kube::Error> {
        let mut pods = self.pods().list(&ListParams::default().labels(&pod_selector(kind, name))).await?.items;
        pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Ok(pods)
    }

    async fn observe(&self, kind: ObjectKind, name: &str) -> std::result::Result<Option<Observed>, kube::Error> {
        let observed = match kind {
            ObjectKind::Job => {
                let Some(job) = self.jobs().get_opt(name).await? else { return Ok(None) };
                let conditions = job
                    .status
                    .and_then(|s| s.conditions)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|c| Condition { type_: c.type_, status: c.status, reason: c.reason, message: c.message })
                    .collect();
                Observed {
                    success_type: "Complete",
                    conditions,
                    suspended: job.spec.and_then(|s| s.suspend).unwrap_or(false),
                    deleting: job.metadata.deletion_timestamp.is_some(),
                    pods: Vec::new(),
                }
            }
            ObjectKind::JobSet => {
                let Some(js) = self.jobsets().get_opt(name).await? else { return Ok(None) };
                let text = |v: &serde_json::Value, key: &str| v.get(key).and_then(|x| x.as_str()).map(str::to_string);
                let conditions = js
                    .data
                    .pointer("/status/conditions")
                    .and_then(|c| c.as_array())
                    .into_iter()
                    .flatten()
                    .map(|c| Condition {
                        type_: text(c, "type").unwrap_or_default(),
                        status: text(c, "status").unwrap_or_default(),
                        reason: text(c, "reason"),
                        message: text(c, "message"),
                    })
                    .collect();
                Observed {
                    success_type: "Completed",
                    conditions,
                    suspended: js.data.pointer("/spec/suspend").and_then(|s| s.as_bool()).unwrap_or(false),
                    deleting: js.metadata.deletion_timestamp.is_some(),
                    pods: Vec::new(),
                }
            }
        };
        let pods = self.list_pods(kind, name).await?;
        Ok(Some(Observed { pods, ..observed }))
    }

    async fn delete(&self, kind: ObjectKind, name: &str) -> std::result::Result<(), kube::Error> {
        let params = DeleteParams::background();
        let deleted = match kind {
            ObjectKind::Job => self.jobs().delete(name, &params).await.map(|_| ()),
            ObjectKind::JobSet => self.jobsets().delete(name, &params).await.map(|_| ()),
        };
        match deleted {
            Err(e) if status_code(&e) == Some(404) => Ok(()),
            other => other,
        }
    }

    /// The end of a pod's `workload` log: `tail_lines` lines, at most [`TAIL_BYTES`]; `None` when the pod has
    /// no log (not started, or gone).
    async fn log_tail(&self, pod: &Pod, tail_lines: i64) -> Result<Option<Vec<u8>>> {
        let Some(name) = pod.metadata.name.as_deref() else { return Ok(None) };
        let has_workload = pod.spec.as_ref().is_some_and(|s| s.containers.iter().any(|c| c.name == CONTAINER));
        let params = LogParams {
            container: has_workload.then(|| CONTAINER.to_string()),
            tail_lines: Some(tail_lines),
            limit_bytes: Some(TAIL_BYTES as i64),
            ..Default::default()
        };
        match self.pods().logs(name, &params).await {
            Ok(text) => Ok(Some(text.into_bytes())),
            // Not valid UTF-8: keep the bytes as they are.
            Err(kube::Error::FromUtf8(e)) => Ok(Some(e.into_bytes())),
            // 400: never started; 404: gone meanwhile.
            Err(e) if matches!(status_code(&e), Some(400 | 404)) => Ok(None),
            Err(e) => Err(self.error("failure output", format!("pod {name}: {}", describe(&e)))),
        }
    }
}

#[async_trait]
impl Backend for KubernetesBackend {
    fn kind(&self) -> &'static str {
        "kubernetes"
    }

    async fn submit(&self, sub: &Submission<'_>) -> Result<BackendRef> {
        if sub.spec.image.as_deref().is_none_or(|i| i.trim().is_empty()) {
            return Err(self.error(
                "submit",
                format!("job `{}` names no container image; Kubernetes pools need one", sub.spec.name),
            ));
        }
        let kind = ObjectKind::of(sub);
        let max = max_name_len(sub);
        if sub.name.len() > max {
            return Err(self.error(
                "submit",
                format!(
                    "object name `{}` has {} characters; a {} of {} × {} hosts allows at most {max} (pod host names stop at 63)",
                    sub.name,
                    sub.name.len(),
                    kind.prefix(),
                    sub.spec.resources.slices,
                    sub.resolved.accelerator.hosts
                ),
            ));
        }
        let body = manifest(sub, &self.namespace);
        let params = PostParams::default();
        let created = match kind {
            ObjectKind::Job => {
                let job: Job = serde_json::from_value(body)
                    .map_err(|e| self.error("submit", format!("the Job manifest does not parse: {e}")))?;
                self.jobs().create(&params, &job).await.map(|_| ())
            }
            ObjectKind::JobSet => {
                let js: DynamicObject = serde_json::from_value(body)
                    .map_err(|e| self.error("submit", format!("the JobSet manifest does not parse: {e}")))?;
                self.jobsets().create(&params, &js).await.map(|_| ())
            }
        };
        let handle = BackendRef(format!("{}/{}", kind.prefix(), sub.name));
        match created {
            Ok(()) => Ok(handle),
            Err(e) if status_code(&e) == Some(409) => {
                // Submitted before (a retry after a lost answer, or a restarted worker): adopt it if it is ours.
                let labels = self.labels_of(kind, &sub.name).await.map_err(|e| self.api_error("submit", &e))?;
                let want = label_value(&sub.job.to_string());
                match labels {
                    Some(labels) if labels.get(LABEL_JOB_ID) == Some(&want) => {
                        tracing::info!("pool {}: {} already exists, adopting it", self.pool, handle.0);
                        Ok(handle)
                    }
                    Some(labels) => Err(self.error(
                        "submit",
                        format!(
                            "a {} named `{}` already exists in namespace {} and belongs to {}, not to job {}",
                            kind.prefix(),
                            sub.name,
                            self.namespace,
                            labels
                                .get(LABEL_JOB_ID)
                                .map(|j| format!("Falcon job {j}"))
                                .unwrap_or_else(|| "something other than Falcon".into()),
                            sub.job
                        ),
                    )),
                    None => {
                        Err(self
                            .error("submit", format!("`{}` was reported as existing but is gone; try again", sub.name)))
                    }
                }
            }
            Err(e) if kind == ObjectKind::JobSet && status_code(&e) == Some(404) => {
                Err(self
                    .error("submit", format!("{} (is the JobSet controller installed in the cluster?)", describe(&e))))
            }
            Err(e) => Err(self.api_error("submit", &e)),
        }
    }

    async fn find(&self, name: &str) -> Result<Option<BackendRef>> {
        let (kind, name) = parse_ref(name);
        for candidate in [ObjectKind::Job, ObjectKind::JobSet] {
            if kind.is_some_and(|k| k != candidate) {
                continue;
            }
            let labels = self.labels_of(candidate, name).await.map_err(|e| self.api_error("find", &e))?;
            // A Job of that name that Falcon did not label as this object is not ours (e.g. a JobSet's child).
            if labels.is_some_and(|l| l.get(LABEL_NAME).map(String::as_str) == Some(label_value(name).as_str())) {
                return Ok(Some(BackendRef(format!("{}/{name}", candidate.prefix()))));
            }
        }
        Ok(None)
    }

    async fn status(&self, job: &BackendRef) -> Result<BackendState> {
        let Some((kind, name)) = self.kind_of(job, "status").await? else { return Ok(BackendState::Missing) };
        match self.observe(kind, &name).await.map_err(|e| self.api_error("status", &e))? {
            Some(observed) => Ok(state::evaluate(&observed)),
            None => Ok(BackendState::Missing),
        }
    }

    async fn cancel(&self, job: &BackendRef) -> Result<()> {
        match parse_ref(&job.0) {
            (Some(kind), name) => self.delete(kind, name).await.map_err(|e| self.api_error("cancel", &e)),
            (None, name) => {
                for kind in [ObjectKind::Job, ObjectKind::JobSet] {
                    self.delete(kind, name).await.map_err(|e| self.api_error("cancel", &e))?;
                }
                Ok(())
            }
        }
    }

    async fn logs(&self, job: &BackendRef) -> Result<Vec<LogSnapshot>> {
        let Some((kind, name)) = self.kind_of(job, "logs").await? else { return Ok(Vec::new()) };
        let pods = self.list_pods(kind, &name).await.map_err(|e| self.api_error("logs", &e))?;
        let mut out = Vec::with_capacity(pods.len());
        for batch in pods.chunks(LOG_CONCURRENCY) {
            let mut tasks = tokio::task::JoinSet::new();
            for (i, pod) in batch.iter().enumerate() {
                let Some(pod_name) = pod.metadata.name.clone() else { continue };
                let has_workload = pod.spec.as_ref().is_some_and(|s| s.containers.iter().any(|c| c.name == CONTAINER));
                let params = LogParams { container: has_workload.then(|| CONTAINER.to_string()), ..Default::default() };
                let api = self.pods();
                tasks.spawn(async move {
                    let text = match api.logs(&pod_name, &params).await {
                        Ok(text) => Ok(Some(text.into_bytes())),
                        // Not valid UTF-8: keep the bytes as they are.
                        Err(kube::Error::FromUtf8(e)) => Ok(Some(e.into_bytes())),
                        // 400: not started yet (ContainerCreating, unschedulable); 404: gone meanwhile.
                        Err(e) if matches!(status_code(&e), Some(400 | 404)) => Ok(None),
                        Err(e) => Err(format!("pod {pod_name}: {}", describe(&e))),
                    };
                    (i, pod_name, text)
                });
            }
            let mut got = Vec::new();
            while let Some(joined) = tasks.join_next().await {
                let (i, source, text) = joined.map_err(|e| self.error("logs", format!("a log reader stopped: {e}")))?;
                if let Some(text) = text.map_err(|message| self.error("logs", message))? {
                    got.push((i, LogSnapshot { source, text }));
                }
            }
            got.sort_by_key(|(i, _)| *i);
            out.extend(got.into_iter().map(|(_, log)| log));
        }
        Ok(out)
    }

    async fn failure_output(&self, job: &BackendRef) -> Result<Option<Vec<u8>>> {
        let Some((kind, name)) = self.kind_of(job, "failure output").await? else { return Ok(None) };
        let pods = self.list_pods(kind, &name).await.map_err(|e| self.api_error("failure output", &e))?;
        let Some((failed, _)) = state::first_failed(&pods) else { return Ok(None) };
        let Some(pod) = pods.iter().find(|p| p.metadata.name.as_deref() == Some(failed)) else { return Ok(None) };
        let tail = self.log_tail(pod, FAILURE_TAIL_LINES).await?;
        // Cut at the limit: the lines asked for are longer than that, and the last of them is what counts.
        if tail.as_ref().is_some_and(|t| t.len() + 4 > TAIL_BYTES) {
            return self.log_tail(pod, 1).await;
        }
        Ok(tail)
    }

    async fn sample(&self, job: &BackendRef) -> Result<Sample> {
        {
            let mut last = self.last_metrics.lock().expect("metrics times lock");
            let now = std::time::Instant::now();
            if last.get(&job.0).is_some_and(|at| now.duration_since(*at) < self.metrics_refresh) {
                return Ok(Sample::NoReading); // metrics-server has nothing newer yet
            }
            last.insert(job.0.clone(), now);
        }
        let Some((kind, name)) = self.kind_of(job, "sample").await? else { return Ok(Sample::NoReading) };
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), &self.namespace, &self.pod_metrics);
        let list = match api.list(&ListParams::default().labels(&pod_selector(kind, &name))).await {
            Ok(list) => list,
            Err(e) if status_code(&e) == Some(404) => {
                return Ok(Sample::Unsupported(format!(
                    "the cluster serves no metrics API (metrics.k8s.io/v1beta1 PodMetrics in namespace {}: 404); \
                     install metrics-server to sample pods",
                    self.namespace
                )));
            }
            Err(e) => return Err(self.api_error("sample", &e)),
        };
        if list.items.is_empty() {
            return Ok(Sample::NoReading);
        }
        let (mut memory, mut cores) = (0f64, 0f64);
        for pod in &list.items {
            let containers = pod.data.get("containers").and_then(|c| c.as_array()).into_iter().flatten();
            for c in containers {
                let usage = |what: &str| c.pointer(&format!("/usage/{what}")).and_then(|q| q.as_str());
                let pod_name = pod.metadata.name.as_deref().unwrap_or("?");
                let bad = |what: &str| self.error("sample", format!("PodMetrics {pod_name}: no valid usage.{what}"));
                memory += usage("memory").and_then(parse_quantity).ok_or_else(|| bad("memory"))?;
                cores += usage("cpu").and_then(parse_quantity).ok_or_else(|| bad("cpu"))?;
            }
        }
        Ok(Sample::Usage { rss_bytes: memory.round() as u64, cpu: CpuUse::Rate(cores) })
    }
}

/// The label selector of an object's pods.
fn pod_selector(kind: ObjectKind, name: &str) -> String {
    match kind {
        ObjectKind::Job => format!("job-name={name}"),
        ObjectKind::JobSet => format!("jobset.sigs.k8s.io/jobset-name={name}"),
    }
}

/// A Kubernetes quantity as a number: `250m` → 0.25, `128974848`, `129e6`, `123Mi` → 128974848, `5n`.
pub fn parse_quantity(text: &str) -> Option<f64> {
    let text = text.trim();
    let suffixes: [(&str, f64); 15] = [
        ("Ki", 1024.0),
        ("Mi", 1024f64.powi(2)),
        ("Gi", 1024f64.powi(3)),
        ("Ti", 1024f64.powi(4)),
        ("Pi", 1024f64.powi(5)),
        ("Ei", 1024f64.powi(6)),
        ("n", 1e-9),
        ("u", 1e-6),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
    ];
    let (number, scale) = suffixes
        .iter()
        .find_map(|(suffix, scale)| text.strip_suffix(suffix).map(|n| (n, *scale)))
        .unwrap_or((text, 1.0));
    // `1E3` has no suffix (it ends in a digit): the number 1000; `1E` is 10^18.
    let value: f64 = number.parse().ok()?;
    Some(value * scale).filter(|v| v.is_finite() && *v >= 0.0)
}

/// `job/<name>` → (Job, name); `jobset/<name>` → (JobSet, name); anything else → (unknown, as given).
fn parse_ref(handle: &str) -> (Option<ObjectKind>, &str) {
    if let Some(name) = handle.strip_prefix("job/") {
        (Some(ObjectKind::Job), name)
    } else if let Some(name) = handle.strip_prefix("jobset/") {
        (Some(ObjectKind::JobSet), name)
    } else {
        (None, handle)
    }
}

/// The HTTP status of an API error.
fn status_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// An API error as one line: `HTTP 500 InternalError: message`, or the error and its causes.
fn describe(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => {
            let mut text = format!("HTTP {}", status.code);
            if !status.reason.is_empty() {
                text.push(' ');
                text.push_str(&status.reason);
            }
            if !status.message.is_empty() {
                text.push_str(": ");
                text.push_str(&status.message);
            }
            text
        }
        other => chain(other),
    }
}

/// An error and its sources, `: `-joined, without repeats.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let next = s.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = s.source();
    }
    text
}

/// Reports a lookup failure under the operation that needed it.
fn retag(e: JobError, operation: &'static str) -> JobError {
    match e {
        JobError::Backend { backend, pool, message, .. } => JobError::Backend { backend, pool, operation, message },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse() {
        for (text, value) in [
            ("250m", 0.25),
            ("2", 2.0),
            ("123Mi", 123.0 * 1024.0 * 1024.0),
            ("129e6", 129e6),
            ("1E3", 1000.0),
            ("5n", 5e-9),
            ("1k", 1000.0),
            ("3Gi", 3.0 * 1024f64.powi(3)),
        ] {
            let got = parse_quantity(text).unwrap_or_else(|| panic!("{text}"));
            assert!((got - value).abs() <= value * 1e-12, "{text}: {got}");
        }
        for bad in ["", "Mi", "abc", "-1", "1Xi"] {
            assert_eq!(parse_quantity(bad), None, "{bad}");
        }
    }

    #[test]
    fn handles_parse() {
        assert_eq!(parse_ref("job/a-b"), (Some(ObjectKind::Job), "a-b"));
        assert_eq!(parse_ref("jobset/x"), (Some(ObjectKind::JobSet), "x"));
        assert_eq!(parse_ref("bare"), (None, "bare"));
    }

    #[test]
    fn api_errors_read_as_one_line() {
        let status = kube::core::Status::failure("boom", "InternalError").with_code(500);
        assert_eq!(describe(&kube::Error::Api(status.boxed())), "HTTP 500 InternalError: boom");
    }
}
