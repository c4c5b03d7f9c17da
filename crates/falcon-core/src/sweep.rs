//! Sweeps (docs/DESIGN.md §2): an experiment spec plus a `sweep` block whose keys are dotted spec paths and whose
//! values are lists; the cartesian product of the lists gives the experiments.
//!
//! ```yaml
//! base: llama3-8b.yaml          # a spec file, loaded through the caller's callback…
//! sweep:
//!   config.batch_size: [128, 256]
//!   config.remat: [full, minimal]
//! name_template: "llama3-8b-bs${config.batch_size}-${config.remat}"
//! ```
//!
//! The base is one of:
//! - `base: PATH` — read through `load_base(PATH)` (EXP resolves it against the sweep file's folder and does
//!   the I/O; this module stays pure and testable);
//! - `base: e-N` — an experiment that ran ([`base_experiment`] names it): EXP hands its stored spec to
//!   `load_base`, and its points take it as their `baseline` (a goal's sweep around its baseline). A spec file
//!   whose name looks like an id is written `./e-1`;
//! - `base: {name: …, scenario: …, …}` — the spec inline;
//! - no `base`: the spec's fields written at the top level of the sweep file, beside `sweep`.
//!
//! Rules:
//! - A sweep key is a dotted path from the spec's root (`config.parallelism.fsdp`, `resources.accelerator`,
//!   `workload.env.XLA_FLAGS`); missing objects on the way are created; a list element is addressed by its
//!   index. Each value is a non-empty list.
//! - Order: sweep keys in the order they are written, the first varying slowest (like nested loops), each
//!   list in its own order.
//! - Names: `name_template` is filled from each combined spec (`${config.batch_size}`, or any spec path such
//!   as `${resources.accelerator}`). Without a template each name is the base name followed by
//!   `-<last path segment><value>` per swept key (`llama3-8b-batch_size128-rematfull`). Two combinations
//!   with the same name are an error: the template must tell them apart.
//! - Every combination is checked like a spec file. Errors point where the offending value is written (a
//!   swept value in the sweep file, the rest in the base) and the message names the sweep file and the
//!   combination.
//! - `repeats: N` (1 to [`MAX_REPEATS`], default 1) runs every combination N times, one after another,
//!   named `<name>-r1` … `<name>-rN`. The copies share the config hash (names are not part of it), so their
//!   runs are the repeats a run-level verdict pools and the history of that hash estimates noise from. With
//!   `repeats` the `sweep` block may be left out: the base spec alone, N times.
//! - At most [`MAX_COMBINATIONS`] experiments (combinations × repeats).
//! - Roles: a `labels.role` the points would inherit from the base (the `role: baseline` of the baseline spec a
//!   sweep starts from) becomes `role: sweep` ([`SWEEP_ROLE`]) on every point, repeats included, so no point
//!   passes for the baseline (`exp list --label role=baseline`, a report's bookkeeping). A sweep that sets the
//!   role itself (a `labels.role` or `labels` sweep key) keeps what it sets; a base without a role gives none.
//!   Labels are not part of the config hash: a point that runs the baseline's config still has its hash.

use crate::spec::{
    did_you_mean, parse_document, render_template, render_value, spec_from_document, Document, ExperimentSpec,
    FieldPath, SourceMap, SpecError, SPEC_FIELDS,
};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Most combinations one sweep may expand to.
pub const MAX_COMBINATIONS: usize = 1000;

/// Most repeats of one combination.
pub const MAX_REPEATS: usize = 100;

/// The fields of a sweep file besides the spec's own.
pub const SWEEP_FIELDS: [&str; 4] = ["base", "sweep", "name_template", "repeats"];

/// The experiment a sweep's `base` names (`base: e-12`, see the module docs), when it names one.
pub fn base_experiment(sweep_text: &str, file: &str) -> Result<Option<crate::ids::ExperimentId>, SpecError> {
    let doc = parse_document(sweep_text, file)?;
    let Some(Value::String(base)) = doc.value.get("base") else { return Ok(None) };
    let digits = base.strip_prefix("e-").filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
    Ok(digits.and_then(|_| base.parse().ok()))
}

/// The `labels.role` of a sweep's points whose base has a role (see the module docs).
pub const SWEEP_ROLE: &str = "sweep";

/// One combination of a sweep: the checked spec and the values the sweep put into it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SweepPoint {
    /// The spec of this combination, checked, with its name filled in.
    pub spec: ExperimentSpec,
    /// `(sweep key, value)` for each swept key, in sweep order.
    pub assignments: Vec<(String, Value)>,
    /// Which repeat of its combination this is (1-based), when the sweep has `repeats` above 1.
    pub repeat: Option<usize>,
}

/// One swept key and its values, in the order the sweep runs them.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct SweepAxis {
    /// The dotted spec path (`config.batch_size`).
    pub key: String,
    /// Its values, each once, in sweep order.
    pub values: Vec<Value>,
}

/// The axes of an expanded sweep: its keys in sweep order, each with its distinct values (what a session keeps
/// so that its grid can be drawn).
pub fn sweep_axes(points: &[SweepPoint]) -> Vec<SweepAxis> {
    let mut axes: Vec<SweepAxis> = Vec::new();
    for p in points {
        for (key, value) in &p.assignments {
            let i = match axes.iter().position(|a| &a.key == key) {
                Some(i) => i,
                None => {
                    axes.push(SweepAxis { key: key.clone(), values: Vec::new() });
                    axes.len() - 1
                }
            };
            if !axes[i].values.contains(value) {
                axes[i].values.push(value.clone());
            }
        }
    }
    axes
}

/// Expands a sweep file into its specs, in the order the module docs describe. `file` names the sweep in
/// errors; `load_base` returns the text of the base spec file a `base: PATH` names (or a message saying why
/// it cannot).
pub fn expand(
    sweep_text: &str,
    file: &str,
    load_base: impl Fn(&str) -> Result<String, String>,
) -> Result<Vec<ExperimentSpec>, SpecError> {
    Ok(expand_points(sweep_text, file, load_base)?.into_iter().map(|point| point.spec).collect())
}

/// [`expand`], keeping with each spec the values the sweep assigned.
pub fn expand_points(
    sweep_text: &str,
    file: &str,
    load_base: impl Fn(&str) -> Result<String, String>,
) -> Result<Vec<SweepPoint>, SpecError> {
    expand_points_repeated(sweep_text, file, load_base, None)
}

/// [`expand_points`] with `repeats` in place of the file's own `repeats` when given (`session submit
/// --repeats N`); it is checked like the file's.
pub fn expand_points_repeated(
    sweep_text: &str,
    file: &str,
    load_base: impl Fn(&str) -> Result<String, String>,
    repeats: Option<usize>,
) -> Result<Vec<SweepPoint>, SpecError> {
    let doc = parse_document(sweep_text, file)?;
    let Value::Object(root) = &doc.value else {
        return Err(doc
            .error(&[], "a sweep file is a mapping with `sweep` and a `base` spec")
            .with_hint("see docs/DESIGN.md §2: `base: spec.yaml`, `sweep: {config.batch_size: [128, 256]}`"));
    };
    check_top_level(&doc, root)?;
    let (base, base_source) = load(&doc, root, file, &load_base)?;
    let repeats = match repeats {
        Some(n) if (1..=MAX_REPEATS).contains(&n) => n,
        Some(n) => {
            return Err(SpecError::at(
                doc.source.value_spot(&[]),
                &[],
                format!("--repeats {n}: must be between 1 and {MAX_REPEATS}"),
            ))
        }
        None => file_repeats(&doc, root)?,
    };
    let axes = axes(&doc, root, repeats > 1)?;
    let template = match root.get("name_template") {
        None => None,
        Some(Value::String(t)) => Some(t.clone()),
        Some(_) => return Err(doc.error(&p(&["name_template"]), "must be a string such as `run-${config.batch_size}`")),
    };
    let total = axes.iter().try_fold(1usize, |n, axis| n.checked_mul(axis.values.len()));
    let Some(total) = total.filter(|t| t.saturating_mul(repeats) <= MAX_COMBINATIONS) else {
        let mut sizes: Vec<String> = axes.iter().map(|a| a.values.len().to_string()).collect();
        let what = if repeats > 1 { "experiments" } else { "combinations" };
        if repeats > 1 {
            sizes.push(format!("{repeats} repeats"));
        }
        return Err(doc
            .error(&p(&["sweep"]), format!("{} {what} is more than {MAX_COMBINATIONS}", sizes.join(" × ")))
            .with_hint("split the sweep into several files or shorten its lists"));
    };
    let swept_name = axes.iter().any(|a| a.path == ["name"]);
    // A role written on the base (`role: baseline`) is not the points' role, unless the sweep sets it.
    let swept_role = axes.iter().any(|a| a.path[0] == "labels" && a.path.get(1).is_none_or(|k| k == "role"));
    let inherits_role = !swept_role && base.get("labels").and_then(|l| l.get("role")).is_some();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut points = Vec::with_capacity(total * repeats);
    let mut index = vec![0usize; axes.len()];
    for n in 0..total {
        let assignments: Vec<(String, Value)> =
            axes.iter().zip(&index).map(|(axis, &i)| (axis.key.clone(), axis.values[i].clone())).collect();
        let context = |e: SpecError| {
            let shown: Vec<String> = assignments.iter().map(|(k, v)| format!("{k}={}", render_value(v))).collect();
            SpecError {
                message: format!("{} (sweep {file}, combination {}/{total}: {})", e.message, n + 1, shown.join(", ")),
                ..e
            }
        };
        let mut value = base.clone();
        let mut source = base_source.clone();
        for (axis, &i) in axes.iter().zip(&index) {
            let at = ["sweep".to_string(), axis.key.clone(), i.to_string()];
            set_path(&mut value, &axis.path, axis.values[i].clone())
                .map_err(|m| doc.error(&p(&["sweep", &axis.key]), m))
                .map_err(context)?;
            // The swept value is written in the sweep's list: errors about it, or about an object it
            // replaces, point at that element.
            source.graft(&axis.path, &doc.source, &at);
            source.set_key(axis.path.clone(), doc.source.value_spot(&at));
        }
        if inherits_role {
            if let Some(Value::Object(labels)) = value.get_mut("labels") {
                labels.insert("role".to_string(), Value::String(SWEEP_ROLE.to_string()));
            }
        }
        if let Some(template) = &template {
            let name = render_template(template, &value)
                .map_err(|e| doc.error(&p(&["name_template"]), format!("`{}`: {}", e.placeholder, e.reason)))
                .map_err(context)?;
            set_name(&mut value, name);
            source.set_value(p(&["name"]), doc.source.value_spot(&p(&["name_template"])));
        } else if !swept_name {
            if let Some(Value::String(name)) = value.get("name") {
                let mut name = name.clone();
                for (axis, &i) in axes.iter().zip(&index) {
                    let leaf = axis.path.last().map(String::as_str).unwrap_or("");
                    name.push_str(&format!("-{leaf}{}", render_value(&axis.values[i])));
                }
                set_name(&mut value, name);
            }
        }
        let name = match value.get("name") {
            Some(Value::String(name)) => Some(name.clone()),
            _ => None,
        };
        if let Some(name) = &name {
            if let Some(first) = seen.insert(name.clone(), n + 1) {
                let at = if template.is_some() { p(&["name_template"]) } else { p(&["sweep"]) };
                return Err(context(
                    doc.error(&at, format!("combinations {first} and {} both get the name `{name}`", n + 1)),
                )
                .with_hint("put every swept key in `name_template`, e.g. `run-${config.batch_size}-${config.remat}`"));
            }
        }
        for r in 1..=repeats {
            let mut value = value.clone();
            if let (Some(name), true) = (&name, repeats > 1) {
                set_name(&mut value, format!("{name}-r{r}"));
            }
            let spec = spec_from_document(&Document { value, source: source.clone() }).map_err(context)?;
            points.push(SweepPoint { spec, assignments: assignments.clone(), repeat: (repeats > 1).then_some(r) });
        }
        // Next combination: the last axis moves fastest.
        for j in (0..axes.len()).rev() {
            index[j] += 1;
            if index[j] < axes[j].values.len() {
                break;
            }
            index[j] = 0;
        }
    }
    Ok(points)
}

fn p(parts: &[&str]) -> FieldPath {
    parts.iter().map(|s| s.to_string()).collect()
}

/// Refuses unknown top-level keys (suggesting the closest) and spec fields beside a `base`.
fn check_top_level(doc: &Document, root: &Map<String, Value>) -> Result<(), SpecError> {
    let has_base = root.contains_key("base");
    let mut known: Vec<&str> = SWEEP_FIELDS.to_vec();
    if !has_base {
        known.extend(SPEC_FIELDS);
    }
    let mut unknown: Vec<(usize, usize, &String)> = root
        .keys()
        .filter(|k| !known.contains(&k.as_str()))
        .map(|k| {
            let spot = doc.source.key_spot(std::slice::from_ref(k));
            (spot.line, spot.column, k)
        })
        .collect();
    unknown.sort();
    let Some((_, _, key)) = unknown.first() else { return Ok(()) };
    let path = vec![(*key).clone()];
    let spot = doc.source.key_spot(&path);
    if has_base && SPEC_FIELDS.contains(&key.as_str()) {
        return Err(SpecError::at(
            spot,
            &path,
            format!("`{key}` beside `base`: a sweep with a base sets spec fields only under `sweep`"),
        )
        .with_hint(format!("move it into the base spec, or sweep it: `sweep: {{{key}: [...]}}`")));
    }
    let all: Vec<&str> = SWEEP_FIELDS.iter().chain(SPEC_FIELDS.iter()).copied().collect();
    let mut message = format!("unknown field `{key}`");
    if let Some(best) = did_you_mean(key, &all) {
        message.push_str(&format!(" (did you mean `{best}`?)"));
    }
    Err(SpecError::at(spot, &path, message).with_hint(format!("a sweep file has {}", SWEEP_FIELDS.join(", "))))
}

/// The base spec's value and where its parts were written.
fn load(
    doc: &Document,
    root: &Map<String, Value>,
    file: &str,
    load_base: &impl Fn(&str) -> Result<String, String>,
) -> Result<(Value, SourceMap), SpecError> {
    let (value, source) = match root.get("base") {
        Some(Value::String(path)) => {
            let text = load_base(path)
                .map_err(|e| doc.error(&p(&["base"]), format!("cannot read the base spec `{path}`: {e}")))?;
            let base = parse_document(&text, path)?;
            (base.value, base.source)
        }
        Some(Value::Object(_)) => {
            let mut source = SourceMap::new(file);
            source.graft(&[], &doc.source, &p(&["base"]));
            (root["base"].clone(), source)
        }
        Some(_) => {
            return Err(doc.error(&p(&["base"]), "must be the path of a spec file or the spec itself (a mapping)"));
        }
        None => {
            let mut spec = root.clone();
            for key in SWEEP_FIELDS {
                spec.remove(key);
            }
            (Value::Object(spec), doc.source.clone())
        }
    };
    if !value.is_object() {
        return Err(SpecError::at(source.value_spot(&[]), &[], "the base spec is not a mapping of fields"));
    }
    Ok((value, source))
}

/// One swept key.
struct Axis {
    /// As written (`config.batch_size`).
    key: String,
    /// Split into segments.
    path: FieldPath,
    values: Vec<Value>,
}

/// The file's `repeats` (1 when absent).
fn file_repeats(doc: &Document, root: &Map<String, Value>) -> Result<usize, SpecError> {
    match root.get("repeats") {
        None => Ok(1),
        Some(v) => {
            v.as_u64().and_then(|n| usize::try_from(n).ok()).filter(|n| (1..=MAX_REPEATS).contains(n)).ok_or_else(
                || {
                    doc.error(&p(&["repeats"]), format!("must be a whole number from 1 to {MAX_REPEATS}"))
                        .with_hint("e.g. `repeats: 3` runs each combination three times")
                },
            )
        }
    }
}

/// The `sweep` block's keys in the order they are written; none when it is absent and `repeated` (a sweep
/// of repeats only).
fn axes(doc: &Document, root: &Map<String, Value>, repeated: bool) -> Result<Vec<Axis>, SpecError> {
    let sweep = match root.get("sweep") {
        None if repeated => return Ok(Vec::new()),
        Some(Value::Object(map)) if map.is_empty() && repeated => return Ok(Vec::new()),
        Some(Value::Object(map)) if !map.is_empty() => map,
        Some(_) => {
            return Err(doc
                .error(&p(&["sweep"]), "must map spec paths to lists of values")
                .with_hint("e.g. `sweep: {config.batch_size: [128, 256]}`"));
        }
        None => {
            return Err(doc
                .error(&[], "missing field `sweep`")
                .with_hint("e.g. `sweep: {config.batch_size: [128, 256]}`, or `repeats: N` to run the base N times"));
        }
    };
    let mut axes = Vec::new();
    for (key, values) in sweep {
        let at = p(&["sweep", key]);
        let path: FieldPath = key.split('.').map(str::to_string).collect();
        if path.iter().any(|s| s.trim().is_empty()) {
            return Err(SpecError::at(doc.source.key_spot(&at), &at, format!("`{key}` is not a dotted spec path")));
        }
        if !SPEC_FIELDS.contains(&path[0].as_str()) {
            let mut message = format!("`{key}` does not start with a spec field");
            if let Some(best) = did_you_mean(&path[0], &SPEC_FIELDS) {
                message.push_str(&format!(" (did you mean `{best}{}`?)", &key[path[0].len()..]));
            }
            return Err(SpecError::at(doc.source.key_spot(&at), &at, message)
                .with_hint(format!("spec fields: {}", SPEC_FIELDS.join(", "))));
        }
        let values = match values {
            Value::Array(items) if !items.is_empty() => items.clone(),
            Value::Array(_) => return Err(doc.error(&at, "is an empty list: nothing to run")),
            other => {
                return Err(doc
                    .error(&at, "must be a list of values")
                    .with_hint(format!("write `[{}]` for a single value", render_value(other))));
            }
        };
        axes.push(Axis { key: key.clone(), path, values });
    }
    axes.sort_by_key(|axis| {
        let spot = doc.source.key_spot(&p(&["sweep", &axis.key]));
        (spot.line, spot.column)
    });
    for (i, inner) in axes.iter().enumerate() {
        if let Some(outer) = axes.iter().enumerate().find(|(j, o)| *j != i && inner.path.starts_with(&o.path)) {
            let at = p(&["sweep", &inner.key]);
            return Err(SpecError::at(
                doc.source.key_spot(&at),
                &at,
                format!("`{}` is inside `{}`, which is swept too", inner.key, outer.1.key),
            ));
        }
    }
    Ok(axes)
}

/// Sets `path` in `root` to `value`, creating missing (or null) objects on the way.
fn set_path(root: &mut Value, path: &[String], value: Value) -> Result<(), String> {
    let mut node = root;
    for (depth, seg) in path.iter().enumerate() {
        if node.is_null() {
            *node = Value::Object(Map::new());
        }
        let last = depth + 1 == path.len();
        node = match node {
            Value::Object(map) => {
                if last {
                    map.insert(seg.clone(), value);
                    return Ok(());
                }
                map.entry(seg.clone()).or_insert(Value::Null)
            }
            Value::Array(items) => {
                let len = items.len();
                let slot = seg.parse::<usize>().ok().and_then(|i| items.get_mut(i)).ok_or_else(|| {
                    format!("`{}` is a list of {len}; `{seg}` is not an index in it", path[..depth].join("."))
                })?;
                if last {
                    *slot = value;
                    return Ok(());
                }
                slot
            }
            other => {
                let kind = if other.is_string() { "a string" } else { "a single value" };
                return Err(format!("cannot set `{}`: `{}` is {kind}", path.join("."), path[..depth].join(".")));
            }
        };
    }
    *node = value;
    Ok(())
}

fn set_name(spec: &mut Value, name: String) {
    if let Value::Object(map) = spec {
        map.insert("name".to_string(), Value::String(name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BASE: &str = "name: b\nscenario: benchmark\nworkload: {framework: jax, command: [run]}\nconfig: {batch_size: 1}\nresources: {accelerator: cpu}\n";

    fn no_base(_: &str) -> Result<String, String> {
        Err("no files here".into())
    }

    #[test]
    fn an_experiment_id_base_is_recognised() {
        let id = |text: &str| base_experiment(text, "s.yaml").unwrap().map(|e| e.to_string());
        assert_eq!(id("base: e-12\nsweep: {config.a: [1]}\n").as_deref(), Some("e-12"));
        assert_eq!(id("base: ./e-12\nsweep: {config.a: [1]}\n"), None, "a file whose name looks like an id");
        assert_eq!(id("base: e-\nsweep: {config.a: [1]}\n"), None);
        assert_eq!(id("base: spec.yaml\nsweep: {config.a: [1]}\n"), None);
        assert_eq!(id("sweep: {config.a: [1]}\n"), None);
    }

    #[test]
    fn set_path_creates_and_refuses() {
        let mut v = json!({"a": {"l": [1, 2]}, "s": "x", "n": null});
        set_path(&mut v, &p(&["a", "b", "c"]), json!(1)).unwrap();
        set_path(&mut v, &p(&["a", "l", "1"]), json!(9)).unwrap();
        set_path(&mut v, &p(&["n", "k"]), json!(true)).unwrap();
        assert_eq!(v, json!({"a": {"b": {"c": 1}, "l": [1, 9]}, "s": "x", "n": {"k": true}}));
        assert!(set_path(&mut v, &p(&["s", "k"]), json!(1)).unwrap_err().contains("`s` is a string"));
        assert!(set_path(&mut v, &p(&["a", "l", "5"]), json!(1)).unwrap_err().contains("list of 2"));
    }

    #[test]
    fn inline_and_top_level_bases() {
        let inline = format!(
            "base:\n{}sweep:\n  config.batch_size: [1, 2]\n",
            BASE.lines().map(|l| format!("  {l}\n")).collect::<String>()
        );
        let specs = expand(&inline, "s.yaml", no_base).unwrap();
        assert_eq!(specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["b-batch_size1", "b-batch_size2"]);
        let top = format!("{BASE}sweep:\n  config.batch_size: [3]\n  resources.devices: [1, 2]\n");
        let points = expand_points(&top, "s.yaml", no_base).unwrap();
        assert_eq!(points.len(), 2);
        assert_eq!(points[1].spec.name, "b-batch_size3-devices2");
        assert_eq!(
            points[1].assignments,
            vec![("config.batch_size".to_string(), json!(3)), ("resources.devices".to_string(), json!(2))]
        );
    }

    #[test]
    fn sweep_file_mistakes() {
        let e = expand("base: x.yaml\nsweep:\n  config.batch_size: [1]\n", "s.yaml", no_base).unwrap_err();
        assert_eq!((e.path.as_str(), e.line, e.column), ("base", 1, 7));
        assert!(e.message.contains("no files here"), "{e}");
        let load = |_: &str| Ok(BASE.to_string());
        let e = expand("base: x.yaml\nswep:\n  config.batch_size: [1]\n", "s.yaml", load).unwrap_err();
        assert!(e.message.contains("did you mean `sweep`"), "{e}");
        let e = expand("base: x.yaml\nname: n\nsweep: {config.batch_size: [1]}\n", "s.yaml", load).unwrap_err();
        assert!(e.message.contains("beside `base`"), "{e}");
        let e = expand("base: x.yaml\nsweep: {config.batch_size: 1}\n", "s.yaml", load).unwrap_err();
        assert_eq!(e.hint.as_deref(), Some("write `[1]` for a single value"));
        let e = expand("base: x.yaml\nsweep: {confg.batch_size: [1]}\n", "s.yaml", load).unwrap_err();
        assert!(e.message.contains("did you mean `config.batch_size`"), "{e}");
        let e = expand("base: x.yaml\nsweep: {config.batch_size: []}\n", "s.yaml", load).unwrap_err();
        assert!(e.message.contains("empty list"), "{e}");
        let e = expand("base: x.yaml\n", "s.yaml", load).unwrap_err();
        assert!(e.message.contains("missing field `sweep`"), "{e}");
        let e = expand("base: x.yaml\nsweep: {name: [a]}\nname_template: 7\n", "s.yaml", load).unwrap_err();
        assert_eq!(e.path, "name_template");
        let e = expand("base: x.yaml\nsweep: {config: [{}], config.batch_size: [1]}\n", "s.yaml", load).unwrap_err();
        assert!(e.message.contains("is inside `config`"), "{e}");
        let e = expand("base: x.yaml\nsweep: {workload.command.0.x: [a]}\n", "s.yaml", load).unwrap_err();
        assert!(e.message.contains("is a string"), "{e}");
    }

    #[test]
    fn repeats_run_each_combination_n_times_with_one_config_hash() {
        let load = |_: &str| Ok(BASE.to_string());
        let points =
            expand_points("base: x.yaml\nrepeats: 3\nsweep: {config.batch_size: [1, 2]}\n", "s.yaml", load).unwrap();
        let names: Vec<&str> = points.iter().map(|p| p.spec.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "b-batch_size1-r1",
                "b-batch_size1-r2",
                "b-batch_size1-r3",
                "b-batch_size2-r1",
                "b-batch_size2-r2",
                "b-batch_size2-r3"
            ]
        );
        assert_eq!(points.iter().map(|p| p.repeat).collect::<Vec<_>>(), [1, 2, 3, 1, 2, 3].map(Some));
        assert_eq!(points[0].spec.config_hash(), points[2].spec.config_hash());
        assert_ne!(points[0].spec.config_hash(), points[3].spec.config_hash());
        // Repeats alone: the base N times; the caller's count replaces the file's.
        let only = expand_points("base: x.yaml\nrepeats: 6\n", "s.yaml", load).unwrap();
        assert_eq!(only.len(), 6);
        assert_eq!(only[5].spec.name, "b-r6");
        let two = expand_points_repeated("base: x.yaml\nrepeats: 6\n", "s.yaml", load, Some(2)).unwrap();
        assert_eq!(two.iter().map(|p| p.spec.name.as_str()).collect::<Vec<_>>(), ["b-r1", "b-r2"]);
        let one = expand_points("base: x.yaml\nsweep: {config.batch_size: [1]}\n", "s.yaml", load).unwrap();
        assert_eq!((one[0].spec.name.as_str(), one[0].repeat), ("b-batch_size1", None));
    }

    #[test]
    fn points_of_a_base_with_a_role_are_sweep_points() {
        let base = format!("{BASE}labels: {{role: baseline, team: perf}}\n");
        let load = |_: &str| Ok(base.clone());
        let role = |p: &SweepPoint| p.spec.labels.get("role").cloned();
        let points = expand_points("base: x.yaml\nsweep: {config.batch_size: [1, 2]}\n", "s.yaml", load).unwrap();
        assert_eq!(points.iter().map(role).collect::<Vec<_>>(), [Some("sweep".to_string()), Some("sweep".into())]);
        assert_eq!(points[0].spec.labels["team"], "perf", "the other labels are inherited");
        // Repeats of the base alone are not the baseline either; their config hash is the base's.
        let repeats = expand_points("base: x.yaml\nrepeats: 2\n", "s.yaml", load).unwrap();
        assert!(repeats.iter().all(|p| role(p).as_deref() == Some(SWEEP_ROLE)));
        let base_spec = crate::spec::parse_spec(&base, "x.yaml").unwrap();
        assert_eq!(repeats[0].spec.config_hash(), base_spec.config_hash(), "labels are not hashed");
        // A sweep that sets the role keeps it.
        let swept = expand_points("base: x.yaml\nsweep: {labels.role: [candidate, probe]}\n", "s.yaml", load).unwrap();
        assert_eq!(swept.iter().map(role).collect::<Vec<_>>(), [Some("candidate".into()), Some("probe".into())]);
        let relabelled = expand_points("base: x.yaml\nsweep: {labels: [{team: infra}]}\n", "s.yaml", load).unwrap();
        assert_eq!(role(&relabelled[0]), None, "the swept labels replace the base's");
        // A base without a role gives none.
        let plain =
            expand_points("base: x.yaml\nsweep: {config.batch_size: [1]}\n", "s.yaml", |_: &str| Ok(BASE.to_string()))
                .unwrap();
        assert!(plain[0].spec.labels.is_empty());
    }

    #[test]
    fn repeats_mistakes() {
        let load = |_: &str| Ok(BASE.to_string());
        for bad in ["0", "-1", "1.5", "x", "101"] {
            let e = expand(&format!("base: x.yaml\nrepeats: {bad}\n"), "s.yaml", load).unwrap_err();
            assert_eq!(e.path, "repeats", "{bad}: {e}");
            assert!(e.message.contains("from 1 to 100"), "{e}");
        }
        let e = expand_points_repeated("base: x.yaml\nrepeats: 2\n", "s.yaml", load, Some(0)).unwrap_err();
        assert!(e.message.contains("--repeats 0"), "{e}");
        let e = expand("base: x.yaml\nrepeats: 1\n", "s.yaml", load).unwrap_err();
        assert!(
            e.message.contains("missing field `sweep`") && e.hint.as_deref().unwrap_or("").contains("repeats"),
            "{e:?}"
        );
        let e = expand(
            "base: x.yaml\nrepeats: 100\nsweep: {config.batch_size: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]}\n",
            "s.yaml",
            load,
        )
        .unwrap_err();
        assert!(e.message.contains("11 × 100 repeats experiments is more than 1000"), "{e}");
    }
}
