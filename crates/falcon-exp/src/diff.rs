//! Structural diff of configuration snapshots (or whole specs as JSON), path by path.
//!
//! Rules:
//! - Objects are compared key by key and the diff descends to the leaves, so each change carries the full
//!   dotted path (`config.parallelism.fsdp`) and its group. A key present on one side only is `added` or
//!   `removed`; when its value is an object, every leaf under it is reported (an empty object is one leaf).
//! - Arrays of the same length are compared element by element (`workload.command.4`). Arrays whose lengths
//!   differ, or an array on one side only, are one change for the whole array: an inserted argument shifts
//!   every later index, and a per-index diff would report them all.
//! - A value whose type differs (a number against a string, an object against a list) is one `changed`.
//! - Numbers compare as JSON values: `256` and `256.0` differ (the workload reads an integer and a float).
//! - Output is sorted by path, segment by segment, numbers numerically (`l.2` before `l.10`), other keys by
//!   bytes: see [`compare_paths`].
//!
//! Groups, decided by the path (a leading `config.` is skipped, so bare configs and whole specs group alike):
//! - `resources`: anything under `resources`.
//! - `env`: anything under `workload.env` (or a top-level `env`).
//! - Under `config` (or at the top of a bare config), by the first key below it:
//!   - `parallelism`: `parallelism`, or a key containing `parallel`, `mesh` or `sharding`;
//!   - `remat`: a key containing `remat` or `checkpoint`;
//!   - `batch_sequence`: a key containing `batch`, `seq` or `length` (`batch_size`, `micro_batch_size`,
//!     `seq_len`, `max_target_length`), or `gradient_accumulation_steps`;
//!   - `precision`: a key containing `precision`, `dtype` or `quantiz`;
//!   - `model`: a key starting with `model`;
//!   - `other`: anything else.
//! - `bookkeeping`: what records who or what an experiment is for, not what it runs — `name`, `goal`,
//!   `session`, `baseline`, `description`, and the labels Falcon itself sets (`labels.role`, which a sweep
//!   writes on its points, and `labels.falcon.dev/…`). A diff keeps them, each with this group, and renderers
//!   show them apart from (after) the configuration changes: a goal's baseline and its best differ in name and
//!   goal whatever they run.
//! - The other spec fields (`scenario`, `workload.command`, `profile`, `timeout`, the user's labels…): `other`.

use serde_json::Value;
use std::cmp::Ordering;
use std::fmt;

/// How a path changed between `a` and `b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    /// Only in `b`.
    Added,
    /// Only in `a`.
    Removed,
    /// In both, with different values.
    Changed,
}

/// What part of an experiment a path belongs to (see the module docs for the mapping).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    /// The model and its architecture.
    Model,
    /// Parallelism and sharding.
    Parallelism,
    /// Rematerialisation (activation checkpointing).
    Remat,
    /// Batch sizes, micro-batches and sequence length.
    BatchSequence,
    /// Numeric precision and dtypes.
    Precision,
    /// Accelerator, slices, zones, capacity.
    Resources,
    /// The workload's environment variables.
    Env,
    /// The code it ran: commit, branch, repository, uncommitted changes.
    Code,
    /// Everything else.
    Other,
    /// What an experiment is called and what it is for (name, goal, session, baseline, Falcon's labels), not
    /// what it runs.
    Bookkeeping,
}

impl Group {
    /// Every group, in declaration order.
    pub const ALL: [Group; 10] = [
        Group::Model,
        Group::Parallelism,
        Group::Remat,
        Group::BatchSequence,
        Group::Precision,
        Group::Resources,
        Group::Env,
        Group::Code,
        Group::Other,
        Group::Bookkeeping,
    ];

    /// The serialized name (`batch_sequence`).
    pub fn as_str(self) -> &'static str {
        match self {
            Group::Model => "model",
            Group::Parallelism => "parallelism",
            Group::Remat => "remat",
            Group::BatchSequence => "batch_sequence",
            Group::Precision => "precision",
            Group::Resources => "resources",
            Group::Env => "env",
            Group::Code => "code",
            Group::Other => "other",
            Group::Bookkeeping => "bookkeeping",
        }
    }

    /// Whether the group is [`Group::Bookkeeping`]: a change that does not change what runs.
    pub fn is_bookkeeping(self) -> bool {
        self == Group::Bookkeeping
    }
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One difference between two values.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Dotted path (`config.parallelism.fsdp`, `workload.command.3`).
    pub path: String,
    /// Added, removed or changed.
    pub kind: ChangeKind,
    /// The value in `a` (absent when added).
    pub a: Option<Value>,
    /// The value in `b` (absent when removed).
    pub b: Option<Value>,
    /// What the path belongs to.
    pub group: Group,
}

impl fmt::Display for Change {
    /// `config.parallelism.fsdp: 8 → 16`; an absent side is written `(absent)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} → {}", self.path, show(self.a.as_ref()), show(self.b.as_ref()))
    }
}

impl Change {
    /// Whether it is bookkeeping (see [`Group::Bookkeeping`]) rather than a change of what runs.
    pub fn is_bookkeeping(&self) -> bool {
        self.group.is_bookkeeping()
    }
}

/// `changes` split into the configuration changes and the bookkeeping ones, each in its order.
pub fn split_bookkeeping(changes: &[Change]) -> (Vec<&Change>, Vec<&Change>) {
    changes.iter().partition(|c| !c.is_bookkeeping())
}

/// A value for display: compact JSON, `(absent)` for none.
pub fn show(value: Option<&Value>) -> String {
    match value {
        Some(v) => falcon_core::spec::canonical_json(v),
        None => "(absent)".to_string(),
    }
}

/// One row of an N-way comparison: a path whose values are not all equal.
#[derive(Debug, Clone, PartialEq)]
pub struct NwayRow {
    /// Dotted path.
    pub path: String,
    /// What the path belongs to.
    pub group: Group,
    /// The value in each input, in input order (`None` where the path is absent).
    pub values: Vec<Option<Value>>,
}

/// The differences between `a` and `b`, sorted by path. Equal values give nothing.
pub fn diff(a: &Value, b: &Value) -> Vec<Change> {
    diff_many(&[("a", a), ("b", b)])
        .into_iter()
        .map(|row| {
            let mut values = row.values.into_iter();
            let (a, b) = (values.next().flatten(), values.next().flatten());
            let kind = match (&a, &b) {
                (None, Some(_)) => ChangeKind::Added,
                (Some(_), None) => ChangeKind::Removed,
                _ => ChangeKind::Changed,
            };
            Change { path: row.path, kind, a, b, group: row.group }
        })
        .collect()
}

/// Compares any number of named values: one row per path whose values are not all equal, sorted by path.
/// The names only label the inputs for the caller; rows hold values in input order. The rules are those of
/// [`diff`].
pub fn diff_many(inputs: &[(&str, &Value)]) -> Vec<NwayRow> {
    let mut rows = Vec::new();
    let values: Vec<Option<&Value>> = inputs.iter().map(|(_, v)| Some(*v)).collect();
    walk(&mut Vec::new(), &values, &mut rows);
    rows
}

fn walk(path: &mut Vec<String>, values: &[Option<&Value>], rows: &mut Vec<NwayRow>) {
    let present: Vec<&Value> = values.iter().flatten().copied().collect();
    if present.len() == values.len() && present.windows(2).all(|w| w[0] == w[1]) {
        return;
    }
    let all_objects = present.iter().all(|v| v.is_object());
    let any_keys = present.iter().any(|v| v.as_object().is_some_and(|m| !m.is_empty()));
    if all_objects && any_keys {
        let mut keys: Vec<&String> = present.iter().filter_map(|v| v.as_object()).flat_map(|m| m.keys()).collect();
        keys.sort_unstable_by(|x, y| compare_segments(x, y));
        keys.dedup();
        for key in keys {
            let below: Vec<Option<&Value>> = values.iter().map(|v| v.and_then(|v| v.get(key.as_str()))).collect();
            path.push(key.clone());
            walk(path, &below, rows);
            path.pop();
        }
        return;
    }
    let same_arrays = present.len() == values.len()
        && present.iter().all(|v| v.is_array())
        && present.windows(2).all(|w| w[0].as_array().map(Vec::len) == w[1].as_array().map(Vec::len));
    if same_arrays {
        let len = present.first().and_then(|v| v.as_array()).map_or(0, Vec::len);
        for i in 0..len {
            let below: Vec<Option<&Value>> = values.iter().map(|v| v.and_then(|v| v.get(i))).collect();
            path.push(i.to_string());
            walk(path, &below, rows);
            path.pop();
        }
        return;
    }
    if path.is_empty() && present.is_empty() {
        return;
    }
    rows.push(NwayRow {
        path: path.join("."),
        group: group_of(path),
        values: values.iter().map(|v| v.cloned()).collect(),
    });
}

/// The prefix of the labels Falcon sets itself (`falcon.dev/experiment` on jobs).
pub const FALCON_LABEL_PREFIX: &str = "falcon.dev/";

/// [`diff`] of two experiments' specs with the code they ran beside it: the spec's `code.ref` (a branch may stand
/// for two commits) gives way to the recorded `code.commit`, `code.branch`, `code.repo`, `code.dirty` and
/// `code.diff_sha256`, so a change of code shows even when both specs say `ref: main`, and an experiment recorded
/// from a work tree shows its commit too.
pub fn diff_with_code(
    a: &falcon_infra::meta::ExperimentRecord,
    b: &falcon_infra::meta::ExperimentRecord,
) -> Vec<Change> {
    let mut changes: Vec<Change> =
        diff(&a.spec, &b.spec).into_iter().filter(|c| !c.path.starts_with("code.")).collect();
    let fields = |r: &falcon_infra::meta::ExperimentRecord| -> Vec<(&'static str, Option<Value>)> {
        let c = r.code.as_ref();
        vec![
            ("code.commit", c.map(|c| Value::String(c.commit.clone()))),
            ("code.branch", c.and_then(|c| c.branch.clone()).map(Value::String)),
            ("code.repo", c.and_then(|c| c.repo.clone()).map(Value::String)),
            ("code.dirty", c.and_then(|c| c.dirty).map(Value::Bool)),
            ("code.diff_sha256", c.and_then(|c| c.diff_sha256.clone()).map(Value::String)),
        ]
    };
    for ((path, va), (_, vb)) in fields(a).into_iter().zip(fields(b)) {
        let kind = match (&va, &vb) {
            (None, None) => continue,
            (Some(x), Some(y)) if x == y => continue,
            (None, Some(_)) => ChangeKind::Added,
            (Some(_), None) => ChangeKind::Removed,
            (Some(_), Some(_)) => ChangeKind::Changed,
        };
        changes.push(Change { path: path.to_string(), kind, a: va, b: vb, group: Group::Code });
    }
    changes
}

/// The group of a path (segments), as the module docs describe.
pub fn group_of(path: &[String]) -> Group {
    let first = path.first().map(String::as_str).unwrap_or("");
    match first {
        "resources" => return Group::Resources,
        "env" => return Group::Env,
        "code" => return Group::Code,
        "workload" => {
            return if path.get(1).map(String::as_str) == Some("env") { Group::Env } else { Group::Other };
        }
        "name" | "goal" | "session" | "baseline" | "description" => return Group::Bookkeeping,
        "labels" => {
            let key = path.get(1).map(String::as_str).unwrap_or("");
            return if key == "role" || key.starts_with(FALCON_LABEL_PREFIX) {
                Group::Bookkeeping
            } else {
                Group::Other
            };
        }
        "scenario" | "profile" | "timeout" | "priority" | "retries" => return Group::Other,
        _ => {}
    }
    let key = if first == "config" { path.get(1).map(String::as_str).unwrap_or("") } else { first };
    let key = key.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| key.contains(w));
    if key == "parallelism" || has(&["parallel", "mesh", "sharding"]) {
        Group::Parallelism
    } else if has(&["remat", "checkpoint"]) {
        Group::Remat
    } else if has(&["batch", "seq", "length"]) || key == "gradient_accumulation_steps" {
        Group::BatchSequence
    } else if has(&["precision", "dtype", "quantiz"]) {
        Group::Precision
    } else if key.starts_with("model") {
        Group::Model
    } else {
        Group::Other
    }
}

/// Orders dotted paths segment by segment, numbers numerically: the order [`diff`] produces.
pub fn compare_paths(a: &str, b: &str) -> Ordering {
    let mut left = a.split('.');
    let mut right = b.split('.');
    loop {
        match (left.next(), right.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => {
                let order = compare_segments(x, y);
                if order != Ordering::Equal {
                    return order;
                }
            }
        }
    }
}

/// One path segment against another: numerically when both are numbers, else by bytes.
fn compare_segments(x: &str, y: &str) -> Ordering {
    match (x.parse::<u64>(), y.parse::<u64>()) {
        (Ok(i), Ok(j)) => i.cmp(&j).then_with(|| x.cmp(y)),
        _ => x.cmp(y),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn paths(changes: &[Change]) -> Vec<&str> {
        changes.iter().map(|c| c.path.as_str()).collect()
    }

    #[test]
    fn leaves_with_kinds_and_groups() {
        let a = json!({"config": {"parallelism": {"dp": 1, "fsdp": 8}, "remat": "full", "model": "m", "lr": 1},
                       "resources": {"accelerator": "v6e-8"}, "workload": {"env": {"A": "1"}}});
        let b = json!({"config": {"parallelism": {"dp": 1, "fsdp": 16}, "remat": "minimal", "model": "m", "seq_len": 8},
                       "resources": {"accelerator": "v6e-16"}, "workload": {"env": {"A": "2"}}});
        let changes = diff(&a, &b);
        assert_eq!(
            paths(&changes),
            [
                "config.lr",
                "config.parallelism.fsdp",
                "config.remat",
                "config.seq_len",
                "resources.accelerator",
                "workload.env.A"
            ]
        );
        let groups: Vec<Group> = changes.iter().map(|c| c.group).collect();
        use Group::*;
        assert_eq!(groups, [Other, Parallelism, Remat, BatchSequence, Resources, Env]);
        assert_eq!(changes[0].kind, ChangeKind::Removed);
        assert_eq!(changes[3].kind, ChangeKind::Added);
        assert_eq!(changes[1].to_string(), "config.parallelism.fsdp: 8 → 16");
        assert_eq!(changes[0].to_string(), "config.lr: 1 → (absent)");
        assert_eq!(
            changes[3],
            Change {
                path: "config.seq_len".into(),
                kind: ChangeKind::Added,
                a: None,
                b: Some(json!(8)),
                group: Group::BatchSequence
            }
        );
        assert!(diff(&a, &a).is_empty());
    }

    #[test]
    fn arrays_and_type_changes() {
        let a = json!({"cmd": ["python3", "train.py", "--bs=1"], "x": {"k": 1}, "n": 256, "e": {}});
        let b = json!({"cmd": ["python3", "train.py", "--bs=2"], "x": [1], "n": 256.0, "e": {"new": {"deep": true}}});
        let changes = diff(&a, &b);
        assert_eq!(paths(&changes), ["cmd.2", "e.new.deep", "n", "x"]);
        assert_eq!(changes[1].kind, ChangeKind::Added);
        assert_eq!(changes[3].kind, ChangeKind::Changed);
        let longer = json!({"cmd": ["python3", "-u", "train.py", "--bs=1"]});
        let changes = diff(&json!({"cmd": a["cmd"]}), &longer);
        assert_eq!(paths(&changes), ["cmd"], "different lengths: one change for the whole list");
        // Paths sort numerically by index.
        let a = json!({"l": (0..12).collect::<Vec<_>>()});
        let mut b = a.clone();
        b["l"][2] = json!(-1);
        b["l"][10] = json!(-1);
        assert_eq!(paths(&diff(&a, &b)), ["l.2", "l.10"]);
        // Scalars at the root.
        assert_eq!(paths(&diff(&json!(1), &json!(2))), [""]);
        // Object keys that are numbers sort like indexes.
        assert_eq!(paths(&diff(&json!({"10": 1, "2": 1}), &json!({"10": 2, "2": 2}))), ["2", "10"]);
        // An empty object on one side only is one leaf.
        assert_eq!(paths(&diff(&json!({"e": {}}), &json!({}))), ["e"]);
    }

    #[test]
    fn groups_for_bare_configs_and_specs() {
        let g = |p: &str| group_of(&p.split('.').map(str::to_string).collect::<Vec<_>>());
        assert_eq!(g("config.parallelism.tp"), Group::Parallelism);
        assert_eq!(g("parallelism.tp"), Group::Parallelism);
        assert_eq!(g("ici_fsdp_parallelism"), Group::Parallelism);
        assert_eq!(g("config.remat_policy"), Group::Remat);
        assert_eq!(g("config.micro_batch_size"), Group::BatchSequence);
        assert_eq!(g("per_device_batch_size"), Group::BatchSequence);
        assert_eq!(g("config.weight_dtype"), Group::Precision);
        assert_eq!(g("config.model.layers"), Group::Model);
        assert_eq!(g("model_name"), Group::Model);
        assert_eq!(g("workload.env.XLA_FLAGS"), Group::Env);
        assert_eq!(g("workload.command.2"), Group::Other);
        assert_eq!(g("resources.zones.0"), Group::Resources);
        assert_eq!(g("labels.team"), Group::Other);
        for bookkeeping in ["name", "goal", "session", "baseline", "description", "labels.role"] {
            assert_eq!(g(bookkeeping), Group::Bookkeeping, "{bookkeeping}");
        }
        let falcon_label = vec!["labels".to_string(), "falcon.dev/experiment".to_string()];
        assert_eq!(group_of(&falcon_label), Group::Bookkeeping);
        assert_eq!(g("scenario"), Group::Other);
        assert_eq!(g("config.name"), Group::Other, "a config key is configuration whatever its name");
        assert_eq!(g("config.learning_rate"), Group::Other);
        assert_eq!(g("max_target_length"), Group::BatchSequence);
    }

    #[test]
    fn bookkeeping_is_kept_apart_from_configuration() {
        // A goal's baseline (no goal in its spec) against a sweep point of the goal's session.
        let a = json!({"name": "base", "config": {"batch_size": 8}, "labels": {"role": "baseline", "team": "perf"}});
        let b = json!({"name": "base-bs16", "goal": "g-1", "config": {"batch_size": 16},
                       "labels": {"role": "sweep", "team": "perf"}});
        let changes = diff(&a, &b);
        assert_eq!(paths(&changes), ["config.batch_size", "goal", "labels.role", "name"], "one list, path order");
        let (config, bookkeeping) = split_bookkeeping(&changes);
        assert_eq!(config.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(), ["config.batch_size"]);
        assert_eq!(bookkeeping.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(), ["goal", "labels.role", "name"]);
        assert!(bookkeeping.iter().all(|c| c.is_bookkeeping()) && !config[0].is_bookkeeping());
        assert_eq!(
            *bookkeeping[0],
            Change {
                path: "goal".into(),
                kind: ChangeKind::Added,
                a: None,
                b: Some(json!("g-1")),
                group: Group::Bookkeeping
            }
        );
        // Only bookkeeping differs: no configuration change.
        let renamed =
            json!({"name": "again", "config": {"batch_size": 8}, "labels": {"role": "baseline", "team": "perf"}});
        let changes = diff(&a, &renamed);
        assert!(split_bookkeeping(&changes).0.is_empty() && changes.len() == 1);
    }

    #[test]
    fn n_way_shows_only_differing_paths() {
        let a = json!({"bs": 1, "remat": "full", "p": {"dp": 1, "fsdp": 8}});
        let b = json!({"bs": 1, "remat": "full", "p": {"dp": 1, "fsdp": 16}});
        let c = json!({"bs": 1, "remat": "none", "p": {"dp": 2, "fsdp": 8}, "extra": true});
        let rows = diff_many(&[("a", &a), ("b", &b), ("c", &c)]);
        let got: Vec<(&str, Vec<Option<Value>>)> = rows.iter().map(|r| (r.path.as_str(), r.values.clone())).collect();
        assert_eq!(
            got,
            vec![
                ("extra", vec![None, None, Some(json!(true))]),
                ("p.dp", vec![Some(json!(1)), Some(json!(1)), Some(json!(2))]),
                ("p.fsdp", vec![Some(json!(8)), Some(json!(16)), Some(json!(8))]),
                ("remat", vec![Some(json!("full")), Some(json!("full")), Some(json!("none"))]),
            ]
        );
        assert!(diff_many(&[("a", &a), ("b", &a), ("c", &a)]).is_empty());
        assert!(diff_many(&[("a", &a)]).is_empty());
        assert!(diff_many(&[]).is_empty());
    }

    #[test]
    fn path_order() {
        let mut p = vec!["b", "a.10", "a.2", "a", "a.b"];
        p.sort_by(|x, y| compare_paths(x, y));
        assert_eq!(p, ["a", "a.2", "a.10", "a.b", "b"]);
    }
}
