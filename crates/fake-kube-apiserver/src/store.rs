//! The fake's object store: one map of JSON objects, a global resourceVersion
//! counter, and a watch-event history.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Map, Value};
use tokio::sync::broadcast;

use crate::util::{new_uid, now_rfc3339, random_suffix, ApiError};

/// The resource kinds the fake serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Res {
    Pod,
    Job,
    JobSet,
}

impl Res {
    pub fn api_version(self) -> &'static str {
        match self {
            Res::Pod => "v1",
            Res::Job => "batch/v1",
            Res::JobSet => "jobset.x-k8s.io/v1alpha2",
        }
    }
    pub fn kind(self) -> &'static str {
        match self {
            Res::Pod => "Pod",
            Res::Job => "Job",
            Res::JobSet => "JobSet",
        }
    }
    pub fn list_kind(self) -> &'static str {
        match self {
            Res::Pod => "PodList",
            Res::Job => "JobList",
            Res::JobSet => "JobSetList",
        }
    }
    pub fn plural(self) -> &'static str {
        match self {
            Res::Pod => "pods",
            Res::Job => "jobs",
            Res::JobSet => "jobsets",
        }
    }
    pub fn group(self) -> &'static str {
        match self {
            Res::Pod => "",
            Res::Job => "batch",
            Res::JobSet => "jobset.x-k8s.io",
        }
    }
    /// `pods`, `jobs.batch`, `jobsets.jobset.x-k8s.io` as used in API error messages.
    pub fn qualified(self) -> String {
        match self.group() {
            "" => self.plural().to_string(),
            g => format!("{}.{g}", self.plural()),
        }
    }
    /// `Pod`, `Job.batch`, `JobSet.jobset.x-k8s.io` as used in validation messages.
    pub fn qualified_kind(self) -> String {
        match self.group() {
            "" => self.kind().to_string(),
            g => format!("{}.{g}", self.kind()),
        }
    }
}

pub(crate) type Key = (Res, String, String);

pub(crate) fn key(res: Res, ns: &str, name: &str) -> Key {
    (res, ns.to_string(), name.to_string())
}

/// One change, as sent on a watch stream.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub rv: u64,
    pub res: Res,
    pub ns: String,
    pub etype: &'static str,
    pub object: Value,
}

/// What the fake kubelet knows about a pod beyond its JSON.
#[derive(Debug, Default, Clone)]
pub(crate) struct PodRuntime {
    pub scheduled_at: Option<Instant>,
    pub started_at: Option<String>,
    /// container name -> log text
    pub logs: BTreeMap<String, String>,
    /// What the fake metrics API reports for the pod's containers: (cpu, memory) quantities.
    pub usage: Option<(String, String)>,
}

/// What the fake Job controller tracks per Job (uid) — like the real
/// controller's finalizer-based accounting, counts survive pod deletion.
#[derive(Debug, Default, Clone)]
pub(crate) struct JobTrack {
    pub counted: HashSet<String>,
    pub active: BTreeSet<String>,
    pub succeeded: u64,
    pub failed: u64,
    pub succeeded_indexes: BTreeSet<u32>,
    pub first_failure: Option<(String, String)>,
}

const HISTORY_CAP: usize = 20_000;

pub(crate) struct Inner {
    pub rv: u64,
    pub objects: BTreeMap<Key, Value>,
    pub pods_rt: HashMap<String, PodRuntime>,
    pub jobs_rt: HashMap<String, JobTrack>,
    pub jobsets_materialized: HashSet<String>,
    pub schedulable: bool,
    pub auto_run: bool,
    pub request_log: Vec<String>,
    pub fail_next: usize,
    pub fail_status: u16,
    pub node_counter: usize,
    /// Whether `metrics.k8s.io/v1beta1` is served (a cluster with metrics-server).
    pub metrics_served: bool,
    pub history: VecDeque<Arc<Event>>,
    /// Lowest resourceVersion from which history is complete.
    pub history_floor: u64,
    pub events: broadcast::Sender<Arc<Event>>,
}

impl Inner {
    pub fn new() -> Inner {
        let (events, _) = broadcast::channel(4096);
        Inner {
            rv: 1,
            objects: BTreeMap::new(),
            pods_rt: HashMap::new(),
            jobs_rt: HashMap::new(),
            jobsets_materialized: HashSet::new(),
            schedulable: true,
            auto_run: true,
            request_log: Vec::new(),
            fail_next: 0,
            fail_status: 500,
            node_counter: 0,
            metrics_served: false,
            history: VecDeque::new(),
            history_floor: 1,
            events,
        }
    }

    fn bump(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    fn emit(&mut self, res: Res, ns: &str, etype: &'static str, object: Value, rv: u64) {
        let ev = Arc::new(Event { rv, res, ns: ns.to_string(), etype, object });
        self.history.push_back(ev.clone());
        while self.history.len() > HISTORY_CAP {
            if let Some(old) = self.history.pop_front() {
                self.history_floor = old.rv;
            }
        }
        // No receivers is fine.
        let _ = self.events.send(ev);
    }

    pub fn get(&self, res: Res, ns: &str, name: &str) -> Option<&Value> {
        self.objects.get(&key(res, ns, name))
    }

    /// Objects of one kind, in one namespace or all, ordered by (namespace, name).
    pub fn list(&self, res: Res, ns: Option<&str>) -> Vec<&Value> {
        self.objects
            .iter()
            .filter(|((r, n, _), _)| *r == res && ns.is_none_or(|want| want == n))
            .map(|(_, v)| v)
            .collect()
    }

    pub fn keys_of(&self, res: Res) -> Vec<Key> {
        self.objects.keys().filter(|(r, _, _)| *r == res).cloned().collect()
    }

    /// Store a new object: fill in server-set metadata, reject duplicates.
    /// `prepare` runs after metadata (uid, name) is set and before the object is stored.
    pub fn create(
        &mut self,
        res: Res,
        ns: &str,
        mut obj: Value,
        prepare: impl FnOnce(&mut Inner, &mut Value) -> Result<(), ApiError>,
    ) -> Result<Value, ApiError> {
        if !obj.is_object() {
            return Err(ApiError::bad_request(format!("the body of the request was not a {} object", res.kind())));
        }
        if !obj.get("metadata").is_some_and(Value::is_object) {
            obj["metadata"] = json!({});
        }
        let meta = obj["metadata"].as_object_mut().expect("metadata is an object");
        if let Some(body_ns) = meta.get("namespace").and_then(Value::as_str) {
            if !body_ns.is_empty() && body_ns != ns {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
        }
        let name = match meta.get("name").and_then(Value::as_str) {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => match meta.get("generateName").and_then(Value::as_str) {
                Some(g) if !g.is_empty() => format!("{g}{}", random_suffix(5)),
                _ => {
                    return Err(invalid(
                        res,
                        "",
                        vec![(
                            "metadata.name",
                            "FieldValueRequired",
                            "Required value: name or generateName is required".to_string(),
                        )],
                    ))
                }
            },
        };
        if self.objects.contains_key(&key(res, ns, &name)) {
            return Err(ApiError::new(409, format!("{} \"{name}\" already exists", res.qualified()))
                .with_details(json!({"name": name, "group": res.group(), "kind": res.plural()})));
        }
        meta.insert("name".into(), json!(name));
        meta.insert("namespace".into(), json!(ns));
        meta.insert("uid".into(), json!(new_uid()));
        meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
        meta.insert("generation".into(), json!(1));
        for server_only in ["deletionTimestamp", "deletionGracePeriodSeconds", "managedFields"] {
            meta.remove(server_only);
        }
        let obj_map = obj.as_object_mut().expect("object");
        obj_map.insert("apiVersion".into(), json!(res.api_version()));
        obj_map.insert("kind".into(), json!(res.kind()));
        prepare(self, &mut obj)?;
        let rv = self.bump();
        obj["metadata"]["resourceVersion"] = json!(rv.to_string());
        self.objects.insert(key(res, ns, &name), obj.clone());
        self.emit(res, ns, "ADDED", obj.clone(), rv);
        Ok(obj)
    }

    /// Apply `f` to a stored object; if it changed, bump its resourceVersion and
    /// emit MODIFIED. Returns whether anything changed.
    pub fn modify(&mut self, k: &Key, f: impl FnOnce(&mut Value)) -> bool {
        let Some(cur) = self.objects.get(k) else {
            return false;
        };
        let mut next = cur.clone();
        f(&mut next);
        if &next == cur {
            return false;
        }
        let rv = self.bump();
        next["metadata"]["resourceVersion"] = json!(rv.to_string());
        self.objects.insert(k.clone(), next.clone());
        self.emit(k.0, &k.1, "MODIFIED", next, rv);
        true
    }

    /// Remove one object (no cascading), emitting DELETED.
    pub fn remove(&mut self, k: &Key) -> Option<Value> {
        let mut obj = self.objects.remove(k)?;
        let rv = self.bump();
        obj["metadata"]["resourceVersion"] = json!(rv.to_string());
        self.emit(k.0, &k.1, "DELETED", obj.clone(), rv);
        if k.0 == Res::Pod {
            if let Some(uid) = uid_of(&obj) {
                self.pods_rt.remove(uid);
            }
        }
        Some(obj)
    }

    /// Keys of objects (any kind, same namespace) that list `owner_uid` in their ownerReferences.
    pub fn dependents_of(&self, ns: &str, owner_uid: &str) -> Vec<Key> {
        self.objects
            .iter()
            .filter(|((_, n, _), v)| n == ns && is_owned_by(v, owner_uid))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Delete an object and, unless `orphan`, everything it owns (recursively).
    /// Orphaned dependents lose their ownerReference to it.
    pub fn delete_cascade(&mut self, k: &Key, orphan: bool) -> Option<Value> {
        let obj = self.remove(k)?;
        let uid = uid_of(&obj).unwrap_or_default().to_string();
        for dep in self.dependents_of(&k.1, &uid) {
            if orphan {
                self.modify(&dep, |v| {
                    if let Some(refs) = v.pointer_mut("/metadata/ownerReferences").and_then(Value::as_array_mut) {
                        refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid.as_str()));
                    }
                });
            } else {
                self.delete_cascade(&dep, false);
            }
        }
        if k.0 == Res::Job {
            self.jobs_rt.remove(&uid);
        }
        if k.0 == Res::JobSet {
            self.jobsets_materialized.remove(&uid);
        }
        Some(obj)
    }
}

pub(crate) fn uid_of(v: &Value) -> Option<&str> {
    v.pointer("/metadata/uid").and_then(Value::as_str)
}

pub(crate) fn name_of(v: &Value) -> &str {
    v.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("")
}

pub(crate) fn is_owned_by(v: &Value, owner_uid: &str) -> bool {
    v.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| refs.iter().any(|r| r.get("uid").and_then(Value::as_str) == Some(owner_uid)))
}

/// Ensure `v[field]` is a JSON object and return it.
pub(crate) fn obj_mut<'a>(v: &'a mut Value, field: &str) -> &'a mut Map<String, Value> {
    if !v.get(field).is_some_and(Value::is_object) {
        v[field] = json!({});
    }
    v[field].as_object_mut().expect("just made an object")
}

/// A 422 Invalid error in the API server's format.
pub(crate) fn invalid(res: Res, name: &str, causes: Vec<(&str, &str, String)>) -> ApiError {
    let text = causes.iter().map(|(field, _, msg)| format!("{field}: {msg}")).collect::<Vec<_>>();
    let msg = if text.len() == 1 { text[0].clone() } else { format!("[{}]", text.join(", ")) };
    ApiError::new(422, format!("{} \"{name}\" is invalid: {msg}", res.qualified_kind())).with_details(json!({
        "name": name,
        "group": res.group(),
        "kind": res.kind(),
        "causes": causes.iter().map(|(field, reason, msg)| json!({
            "reason": reason, "message": msg, "field": field,
        })).collect::<Vec<_>>(),
    }))
}

pub(crate) fn not_found(res: Res, name: &str) -> ApiError {
    ApiError::new(404, format!("{} \"{name}\" not found", res.qualified()))
        .with_details(json!({"name": name, "group": res.group(), "kind": res.plural()}))
}
