//! Experiment specs (docs/DESIGN.md §2): the file an engineer or agent writes to describe one experiment, its
//! parsing from YAML or JSON with errors that point at a file, line, column and field, the checks that catch
//! mistakes before a job is spent, `${config.…}` substitution, and the canonical snapshot with its hash.
//!
//! ```yaml
//! name: llama3-8b-fsdp16-remat-full
//! scenario: benchmark            # algorithm | benchmark | accuracy | profiling | kernel_bench
//! goal: g-7                      # optional
//! baseline: e-41                 # optional
//! workload:
//!   framework: maxtext
//!   image: us-docker.pkg.dev/proj/repo/maxtext:2026-11
//!   command: [python3, -m, maxtext.train, "per_device_batch_size=${config.batch_size}"]
//!   env: {XLA_FLAGS: "--xla_tpu_enable_latency_hiding_scheduler=true"}
//! config:                        # free-form; the keys below are checked when present
//!   model: llama3-8b
//!   parallelism: {dp: 1, fsdp: 16, tp: 1, pp: 1, ep: 1, sp: 1}
//!   remat: full
//!   batch_size: 256
//!   seq_len: 8192
//!   precision: bf16
//! resources: {accelerator: v5litepod-16, slices: 1, zones: [us-west4-a], capacity: spot}
//! profile: {enabled: true, start_step: 10, num_steps: 5}
//! timeout: 2h
//! priority: 0                    # default 0
//! retries: 2                     # default 2
//! labels: {team: perf}
//! ```
//!
//! Everything here is pure: [`parse_spec`] takes the text the caller read and the file name for messages.
//!
//! Beyond the list of docs/DESIGN.md §2, `resources` also takes `reservation` (the reservation's name, required with
//! `capacity: reservation`) and `topology` (checked against the catalog), which the Job module needs.

mod canonical;
mod duration;
mod source;
mod template;

pub use canonical::{canonical_json, config_hash, hashed_part};
pub use duration::{format_duration, parse_duration};
pub use source::{parse_document, Document, SourceMap, Spot, MAX_BYTES};
pub use template::{render_template, render_value, substitute, SubstitutionError};

use crate::catalog::{self, AcceleratorType, UnknownAccelerator};
use crate::config::Platform;
use crate::ids::{ExperimentId, GoalId};
use crate::status::Scenario;
use crate::ErrorKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// A path into a document: object keys and array indexes (in decimal), outermost first.
pub type FieldPath = Vec<String>;

/// One experiment, as docs/DESIGN.md §2 describes it. Built by [`parse_spec`], which also checks it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentSpec {
    /// Readable name (not an id; several experiments may share it).
    pub name: String,
    /// What kind of experiment this is.
    #[serde(deserialize_with = "de::scenario")]
    pub scenario: Scenario,
    /// The goal it works towards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<GoalId>,
    /// What regressions are judged against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<ExperimentId>,
    /// What runs.
    pub workload: Workload,
    /// The snapshot: a free-form JSON object; known keys (`model`, `parallelism`, `remat`, `batch_size`,
    /// `micro_batch_size`, `seq_len`, `precision`) are checked.
    #[serde(default = "empty_object")]
    pub config: Value,
    /// What it runs on.
    pub resources: Resources,
    /// Profile capture.
    #[serde(default)]
    pub profile: Profile,
    /// Wall-clock limit of one attempt, in seconds. Written as a duration (`90s`, `30m`, `2h`, `1h30m`) or
    /// a whole number of seconds; serialized as a duration.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "de::timeout",
        serialize_with = "de::serialize_timeout"
    )]
    pub timeout: Option<u64>,
    /// Higher is scheduled first; default 0.
    #[serde(default)]
    pub priority: i64,
    /// Times a preempted or transiently failed attempt is retried; default 2 (so 3 attempts), at most 99.
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// Free labels, copied to jobs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", deserialize_with = "de::string_map")]
    pub labels: BTreeMap<String, String>,
}

/// What runs: a command in an image.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Free text (`maxtext`, `megatron`, `jax`).
    pub framework: String,
    /// Container image, used by cluster backends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Program and arguments; may hold `${config.…}` placeholders. Numbers and booleans written unquoted in
    /// YAML are taken as their text.
    #[serde(deserialize_with = "de::strings")]
    pub command: Vec<String>,
    /// Environment; values may hold `${config.…}` placeholders.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", deserialize_with = "de::string_map")]
    pub env: BTreeMap<String, String>,
}

/// What an experiment runs on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    /// Accelerator type from the catalog; stored under its canonical name (`v5e-16` becomes `v5litepod-16`).
    pub accelerator: String,
    /// Slices (TPU) or nodes (GPU); default 1; must be 1 for `cpu`.
    #[serde(default = "one")]
    pub slices: u32,
    /// Zones it may run in, most preferred first (empty: any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
    /// How capacity is obtained; default on-demand.
    #[serde(default)]
    pub capacity: Capacity,
    /// CPU cores, for `cpu` only (default 1 there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices: Option<u32>,
    /// The reservation's name, with `capacity: reservation` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<String>,
    /// The slice topology, if stated; it must be the accelerator type's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
}

/// How capacity is obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Capacity {
    /// Regular on-demand capacity.
    #[default]
    OnDemand,
    /// Spot (preemptible).
    Spot,
    /// A named reservation.
    Reservation,
    /// Flex-start (Dynamic Workload Scheduler).
    Flex,
}

/// Profile capture. Without a `profile` block, profiling is off; a block that does not say `enabled`
/// turns it on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Whether to capture a profile.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// First profiled step; default 10 (past warm-up).
    #[serde(default = "default_start_step")]
    pub start_step: u64,
    /// Steps profiled; default 5; at least 1 when enabled.
    #[serde(default = "default_num_steps")]
    pub num_steps: u64,
}

impl Default for Profile {
    fn default() -> Self {
        Profile { enabled: false, start_step: default_start_step(), num_steps: default_num_steps() }
    }
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}
fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}
fn default_retries() -> u32 {
    2
}
fn default_start_step() -> u64 {
    10
}
fn default_num_steps() -> u64 {
    5
}

/// Most retries a spec may ask for (the Job module allows 100 attempts).
pub const MAX_RETRIES: u32 = 99;

/// Environment variables Falcon sets for every workload (docs/DESIGN.md §2); a spec may not set them itself.
pub const RESERVED_ENV: [&str; 5] = [
    "FALCON_EXP_ID",
    "FALCON_EXP_CONFIG",
    "FALCON_ARTIFACT_DIR",
    "FALCON_PROFILE_START_STEP",
    "FALCON_PROFILE_NUM_STEPS",
];

/// The parallelism axes `config.parallelism` may name; their product must equal the job's devices.
pub const PARALLELISM_AXES: [&str; 6] = ["dp", "fsdp", "tp", "pp", "ep", "sp"];

/// Top-level spec fields.
pub const SPEC_FIELDS: [&str; 12] = [
    "name",
    "scenario",
    "goal",
    "baseline",
    "workload",
    "config",
    "resources",
    "profile",
    "timeout",
    "priority",
    "retries",
    "labels",
];
const WORKLOAD_FIELDS: [&str; 4] = ["framework", "image", "command", "env"];
const RESOURCES_FIELDS: [&str; 7] =
    ["accelerator", "slices", "zones", "capacity", "devices", "reservation", "topology"];
const PROFILE_FIELDS: [&str; 3] = ["enabled", "start_step", "num_steps"];
/// `config` keys that must be positive integers when present.
const POSITIVE_CONFIG_KEYS: [&str; 3] = ["batch_size", "micro_batch_size", "seq_len"];

impl ExperimentSpec {
    /// The catalog entry of `resources.accelerator`.
    pub fn accelerator_type(&self) -> Result<AcceleratorType, UnknownAccelerator> {
        catalog::lookup(&self.resources.accelerator)
    }

    /// Devices the job gets: chips × slices, or `resources.devices` (default 1) for `cpu`; `None` when the
    /// accelerator is unknown.
    pub fn devices(&self) -> Option<u32> {
        let accel = self.accelerator_type().ok()?;
        Some(match accel.platform {
            Platform::Cpu => self.resources.devices.unwrap_or(1),
            _ => accel.chips.saturating_mul(self.resources.slices),
        })
    }

    /// Hex SHA-256 of the canonical snapshot; see [`config_hash`].
    pub fn config_hash(&self) -> String {
        config_hash(self)
    }
}

/// The `FALCON_*` variables a workload gets (docs/DESIGN.md §2): `FALCON_EXP_ID`, `FALCON_EXP_CONFIG` (where the
/// snapshot JSON was written), `FALCON_ARTIFACT_DIR` and, when profiling is on, `FALCON_PROFILE_START_STEP` and
/// `FALCON_PROFILE_NUM_STEPS`. The caller adds them to the substituted `workload.env`.
pub fn falcon_env(
    spec: &ExperimentSpec,
    experiment: ExperimentId,
    config_path: &str,
    artifact_dir: &str,
) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    env.insert("FALCON_EXP_ID".to_string(), experiment.to_string());
    env.insert("FALCON_EXP_CONFIG".to_string(), config_path.to_string());
    env.insert("FALCON_ARTIFACT_DIR".to_string(), artifact_dir.to_string());
    if spec.profile.enabled {
        env.insert("FALCON_PROFILE_START_STEP".to_string(), spec.profile.start_step.to_string());
        env.insert("FALCON_PROFILE_NUM_STEPS".to_string(), spec.profile.num_steps.to_string());
    }
    env
}

/// A spec that cannot be used, and where: file, 1-based line and column, and the field's dotted path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SpecError {
    /// The file, as the caller named it.
    pub file: String,
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1, in characters.
    pub column: usize,
    /// Dotted path of the field (`resources.accelerator`, `config.parallelism.fsdp`); empty for the whole
    /// document or a syntax error.
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// What to do about it, when there is something useful to say.
    pub hint: Option<String>,
}

impl SpecError {
    /// An error about `path`, at `spot`.
    pub fn at(spot: Spot, path: &[String], message: impl Into<String>) -> SpecError {
        SpecError {
            file: spot.file,
            line: spot.line,
            column: spot.column,
            path: path.join("."),
            message: message.into(),
            hint: None,
        }
    }

    /// The same error with a hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> SpecError {
        self.hint = Some(hint.into());
        self
    }

    /// How the interface reports it: an invalid file is a failure (exit 1, docs/DESIGN.md §6: "a corrupt or invalid
    /// one is 1"); a missing one is the caller's not-found.
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::Invalid
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: ", self.file, self.line, self.column)?;
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for SpecError {}

/// Parses and checks a spec. `text` is YAML or JSON (by `file`'s extension; otherwise JSON when it starts
/// with `{`); `file` only names the source in errors.
pub fn parse_spec(text: &str, file: &str) -> Result<ExperimentSpec, SpecError> {
    spec_from_document(&parse_document(text, file)?)
}

/// Checks a parsed document and builds the spec: unknown keys (with the closest known one), types, then
/// the checks of [`parse_spec`]. Errors point at the document's [`SourceMap`].
pub fn spec_from_document(doc: &Document) -> Result<ExperimentSpec, SpecError> {
    let root = match &doc.value {
        Value::Object(map) => map,
        other => {
            return Err(doc
                .error(&[], format!("a spec is a mapping of fields, not {}", describe(other)))
                .with_hint(format!("fields: {}", SPEC_FIELDS.join(", "))));
        }
    };
    check_keys(doc, &[], root, &SPEC_FIELDS)?;
    for (field, known) in
        [("workload", &WORKLOAD_FIELDS[..]), ("resources", &RESOURCES_FIELDS), ("profile", &PROFILE_FIELDS)]
    {
        if let Some(Value::Object(map)) = root.get(field) {
            check_keys(doc, &[field.to_string()], map, known)?;
        }
    }
    if let Some(Value::Object(parallelism)) = root.get("config").and_then(|c| c.get("parallelism")) {
        check_keys(doc, &["config".to_string(), "parallelism".to_string()], parallelism, &PARALLELISM_AXES)?;
    }
    let mut spec: ExperimentSpec = serde_path_to_error::deserialize(&doc.value).map_err(|e| {
        let path: FieldPath = e
            .path()
            .iter()
            .filter_map(|seg| match seg {
                serde_path_to_error::Segment::Map { key } => Some(key.clone()),
                serde_path_to_error::Segment::Seq { index } => Some(index.to_string()),
                _ => None,
            })
            .collect();
        doc.error(&path, e.into_inner().to_string())
    })?;
    check(&mut spec, doc)?;
    Ok(spec)
}

/// `a string`, `a list`, … for messages.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(n) => format!("a number ({n})"),
        Value::String(s) => format!("a string ({s:?})"),
        Value::Array(_) => "a list".to_string(),
        Value::Object(_) => "a mapping".to_string(),
    }
}

fn p(parts: &[&str]) -> FieldPath {
    parts.iter().map(|s| s.to_string()).collect()
}

/// Refuses keys of `map` (at `at`) that are not in `known`, suggesting the closest one.
fn check_keys(
    doc: &Document,
    at: &[String],
    map: &serde_json::Map<String, Value>,
    known: &[&str],
) -> Result<(), SpecError> {
    // Report the first unknown key in file order, so the error a person sees is the first one in the file.
    let mut unknown: Vec<(Spot, &String)> = map
        .keys()
        .filter(|k| !known.contains(&k.as_str()))
        .map(|k| {
            let mut path = at.to_vec();
            path.push(k.clone());
            (doc.source.key_spot(&path), k)
        })
        .collect();
    unknown.sort_by_key(|(spot, _)| (spot.line, spot.column));
    let Some((spot, key)) = unknown.into_iter().next() else { return Ok(()) };
    let mut path = at.to_vec();
    path.push(key.clone());
    let mut message = format!("unknown field `{key}`");
    if let Some(best) = did_you_mean(key, known) {
        message.push_str(&format!(" (did you mean `{best}`?)"));
    }
    let whose = if at.is_empty() { "spec".to_string() } else { format!("`{}`", at.join(".")) };
    Err(SpecError::at(spot, &path, message).with_hint(format!("the {whose} fields are: {}", known.join(", "))))
}

/// The candidate closest to `input` by edit distance (case-insensitive), if close enough to be a typo.
pub fn did_you_mean<'a>(input: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let lower = input.to_lowercase();
    let (distance, best) =
        candidates.iter().map(|c| (levenshtein(&lower, &c.to_lowercase()), *c)).min_by_key(|(d, _)| *d)?;
    let limit = (input.chars().count() / 3).max(1);
    (distance <= limit).then_some(best)
}

/// Edit distance by characters, counting a swap of two neighbours as one edit (optimal string alignment).
fn levenshtein(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // rows[i][j]: distance between a[..i] and b[..j].
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1).min(rows[i][j - 1] + 1).min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

/// The checks made after the types are right, in the order a person would fix them.
fn check(spec: &mut ExperimentSpec, doc: &Document) -> Result<(), SpecError> {
    let err = |parts: &[&str], message: String| doc.error(&p(parts), message);

    let name = spec.name.trim();
    if name.is_empty() || name.chars().count() > 128 || spec.name.chars().any(char::is_control) {
        return Err(err(&["name"], "must be 1–128 characters without control characters".into()));
    }
    if spec.workload.framework.trim().is_empty() {
        return Err(err(&["workload", "framework"], "must not be empty (e.g. `maxtext`, `jax`)".into()));
    }
    match spec.workload.command.first() {
        None => return Err(err(&["workload", "command"], "is empty: name the program to run".into())),
        Some(program) if program.trim().is_empty() => {
            return Err(err(&["workload", "command", "0"], "the program to run is blank".into()));
        }
        Some(_) => {}
    }
    // No program argument or environment value can hold a NUL byte: refused here, not retried by a worker.
    for (i, item) in spec.workload.command.iter().enumerate() {
        if item.contains('\0') {
            let index = i.to_string();
            return Err(err(
                &["workload", "command", &index],
                "contains a NUL byte, which no program argument can hold".into(),
            ));
        }
    }
    for (key, value) in &spec.workload.env {
        if value.contains('\0') {
            return Err(err(
                &["workload", "env", key],
                "contains a NUL byte, which no environment value can hold".into(),
            ));
        }
    }
    for key in spec.workload.env.keys() {
        let path = ["workload", "env", key.as_str()];
        let valid = !key.is_empty()
            && !key.starts_with(|c: char| c.is_ascii_digit())
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(doc_key_error(doc, &path, format!("`{key}` is not a valid environment variable name"))
                .with_hint("use letters, digits and `_`, not starting with a digit"));
        }
        if RESERVED_ENV.contains(&key.as_str()) {
            return Err(doc_key_error(doc, &path, format!("`{key}` is set by Falcon for every workload"))
                .with_hint(format!("Falcon sets {}; read them instead of setting them", RESERVED_ENV.join(", "))));
        }
    }

    let accel = check_resources(spec, doc)?;
    let devices = match accel.platform {
        Platform::Cpu => spec.resources.devices.unwrap_or(1),
        _ => accel.chips.saturating_mul(spec.resources.slices),
    };
    check_config(spec, doc, &accel, devices)?;

    if spec.profile.enabled && spec.profile.num_steps == 0 {
        return Err(err(&["profile", "num_steps"], "must be at least 1 when profiling is enabled".into())
            .with_hint("set `enabled: false` to run without a profile"));
    }
    if spec.retries > MAX_RETRIES {
        return Err(err(&["retries"], format!("{} is too many; at most {MAX_RETRIES}", spec.retries)));
    }
    if spec.timeout == Some(0) {
        return Err(err(&["timeout"], "must be longer than zero".into()));
    }
    for key in spec.labels.keys() {
        if key.trim().is_empty() {
            return Err(err(&["labels"], "a label needs a name".into()));
        }
    }
    // Placeholders must resolve now, not when the job starts.
    if let Err(e) = substitute(spec) {
        let path: FieldPath = e.field.split('.').map(str::to_string).collect();
        return Err(doc
            .error(&path, format!("`{}`: {}", e.placeholder, e.reason))
            .with_hint("placeholders name a path in `config`, e.g. `${config.batch_size}`"));
    }
    spec.resources.accelerator = accel.name.clone();
    if accel.platform == Platform::Gpu {
        // The shape says it: `h200-141gb, devices: 1` and `h200-141gb-1` are one config.
        spec.resources.devices = None;
    }
    Ok(())
}

/// An error pointing at a key itself (a bad map key), not at its value.
fn doc_key_error(doc: &Document, parts: &[&str], message: String) -> SpecError {
    let path = p(parts);
    SpecError::at(doc.source.key_spot(&path), &path, message)
}

fn check_resources(spec: &ExperimentSpec, doc: &Document) -> Result<AcceleratorType, SpecError> {
    let err = |parts: &[&str], message: String| doc.error(&p(parts), message);
    let r = &spec.resources;
    // A GPU model with `devices: N` (`accelerator: h200-141gb, devices: 1`) is its N-GPU shape.
    let model_shape = r.devices.and_then(|n| catalog::gpu_shape(&r.accelerator, n));
    let named_model = model_shape.is_some();
    let accel = match model_shape {
        Some(shape) => shape,
        None => catalog::lookup(&r.accelerator).map_err(|e| {
            let error = err(&["resources", "accelerator"], e.to_string());
            match (&e.suggestion, r.devices) {
                (_, Some(n))
                    if catalog::gpu_models().iter().any(|(m, _)| m.eq_ignore_ascii_case(r.accelerator.trim())) =>
                {
                    let (model, sizes) = catalog::gpu_models()
                        .into_iter()
                        .find(|(m, _)| m.eq_ignore_ascii_case(r.accelerator.trim()))
                        .unwrap_or_default();
                    let sizes: Vec<String> = sizes.iter().map(u32::to_string).collect();
                    err(&["resources", "devices"], format!("{model} comes with {} GPUs, not {n}", sizes.join(", ")))
                }
                (Some(s), _) => error.with_hint(format!("did you mean `{s}`?")),
                (None, _) => error,
            }
        })?,
    };
    if r.slices == 0 {
        return Err(err(&["resources", "slices"], "must be at least 1".into()));
    }
    if accel.platform == Platform::Cpu {
        if r.slices != 1 {
            return Err(err(&["resources", "slices"], "a cpu job runs on one host".into())
                .with_hint("use `resources.devices` for the number of cores"));
        }
        if r.devices == Some(0) {
            return Err(err(&["resources", "devices"], "must be at least 1".into()));
        }
    } else if accel.platform == Platform::Gpu {
        // `devices` on a GPU type must agree with its shape (or named the shape with the model above).
        if let Some(n) = r.devices.filter(|n| *n != accel.chips && !named_model) {
            let model = accel.name.rsplit_once('-').map_or(accel.name.as_str(), |(m, _)| m);
            let hint = match catalog::gpu_shape(model, n) {
                Some(shape) => {
                    format!("name the shape `{}`, or `accelerator: {model}` with `devices: {n}`", shape.name)
                }
                None => "set `slices` for more hosts".to_string(),
            };
            return Err(err(&["resources", "devices"], format!("{} has {} GPUs, not {n}", accel.name, accel.chips))
                .with_hint(hint));
        }
    } else if r.devices.is_some() {
        return Err(err(
            &["resources", "devices"],
            format!(
                "only for cpu and GPU types; {} has {} chips per slice (set `slices` instead)",
                accel.name, accel.chips
            ),
        ));
    }
    if let Some(topology) = &r.topology {
        catalog::check_topology(&accel, topology).map_err(|m| err(&["resources", "topology"], m))?;
    }
    match (r.capacity, r.reservation.as_deref().map(str::trim)) {
        (Capacity::Reservation, None | Some("")) => {
            return Err(err(&["resources", "capacity"], "`reservation` needs the reservation's name".into())
                .with_hint("add `reservation: NAME` under resources"));
        }
        (Capacity::Reservation, Some(_)) | (_, None) => {}
        (_, Some(_)) => {
            return Err(err(&["resources", "reservation"], "is only used with `capacity: reservation`".into()));
        }
    }
    for (i, zone) in r.zones.iter().enumerate() {
        let index = i.to_string();
        if zone.trim().is_empty() {
            return Err(err(&["resources", "zones", &index], "a zone name is empty".into()));
        }
        if r.zones[..i].contains(zone) {
            return Err(err(&["resources", "zones", &index], format!("zone `{zone}` is listed twice")));
        }
    }
    Ok(accel)
}

fn check_config(spec: &ExperimentSpec, doc: &Document, accel: &AcceleratorType, devices: u32) -> Result<(), SpecError> {
    let err = |parts: &[&str], message: String| doc.error(&p(parts), message);
    let Value::Object(config) = &spec.config else {
        return Err(err(&["config"], format!("must be a mapping, not {}", describe(&spec.config))));
    };
    let positive = |v: &Value| v.as_u64().is_some_and(|n| n > 0);
    for key in POSITIVE_CONFIG_KEYS {
        if let Some(v) = config.get(key) {
            if !positive(v) {
                return Err(err(&["config", key], format!("must be a positive integer, not {}", describe(v))));
            }
        }
    }
    for key in ["model", "precision"] {
        match config.get(key) {
            Some(Value::String(s)) if s.trim().is_empty() => {
                return Err(err(&["config", key], "must not be empty".into()));
            }
            Some(Value::String(_)) | None => {}
            Some(Value::Object(_)) if key == "model" => {}
            Some(other) => return Err(err(&["config", key], format!("must be a string, not {}", describe(other)))),
        }
    }
    match config.get("remat") {
        Some(Value::String(s)) if s.trim().is_empty() => {
            return Err(err(&["config", "remat"], "must not be empty (e.g. `full`, `minimal`, `none`)".into()));
        }
        Some(Value::String(_) | Value::Bool(_)) | None => {}
        Some(other) => {
            return Err(err(
                &["config", "remat"],
                format!("must be a policy name or a boolean, not {}", describe(other)),
            ));
        }
    }
    let Some(parallelism) = config.get("parallelism") else { return Ok(()) };
    let Value::Object(axes) = parallelism else {
        return Err(err(
            &["config", "parallelism"],
            format!("must be a mapping of axes, not {}", describe(parallelism)),
        )
        .with_hint(format!("e.g. {{{}}}", PARALLELISM_AXES.map(|a| format!("{a}: 1")).join(", "))));
    };
    let mut product: u64 = 1;
    let mut sizes = Vec::new();
    for axis in PARALLELISM_AXES {
        let n = match axes.get(axis) {
            None => 1,
            Some(v) if positive(v) => v.as_u64().unwrap_or(1),
            Some(v) => {
                return Err(err(
                    &["config", "parallelism", axis],
                    format!("must be a positive integer, not {}", describe(v)),
                ));
            }
        };
        product = product.saturating_mul(n);
        sizes.push((axis, n));
    }
    if product != u64::from(devices) {
        let whence = match accel.platform {
            Platform::Cpu => format!("cpu × {devices} device{}", plural(devices)),
            _ => format!("{} × {} slice{}", accel.name, spec.resources.slices, plural(spec.resources.slices)),
        };
        let factors = sizes.iter().map(|(a, n)| format!("{a}={n}")).collect::<Vec<_>>().join(" ");
        let mut hint = format!("{factors}; the product must equal the devices");
        // Suggest resizing the largest axis when that alone can fix it.
        if let Some((axis, n)) = sizes.iter().copied().max_by_key(|(_, n)| *n) {
            let rest = product / n;
            if rest > 0 && u64::from(devices) % rest == 0 {
                hint = format!("{hint}, e.g. {axis}: {}", u64::from(devices) / rest);
            }
        }
        return Err(err(
            &["config", "parallelism"],
            format!("{} = {product} but the job has {devices} devices ({whence})", PARALLELISM_AXES.join("×")),
        )
        .with_hint(hint));
    }
    Ok(())
}

fn plural(n: u32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Custom field readers.
mod de {
    use super::{did_you_mean, format_duration, parse_duration};
    use crate::status::Scenario;
    use serde::de::{self, Deserializer, Visitor};
    use serde::{Deserialize, Serializer};
    use std::collections::BTreeMap;
    use std::fmt;

    pub fn scenario<'de, D: Deserializer<'de>>(d: D) -> Result<Scenario, D::Error> {
        let text = String::deserialize(d)?;
        text.parse::<Scenario>().map_err(|_| {
            let names: Vec<&str> = Scenario::ALL.iter().map(|s| s.as_str()).collect();
            let mean = did_you_mean(&text, &names).map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default();
            de::Error::custom(format!("unknown scenario `{text}`{mean}; valid scenarios: {}", names.join(", ")))
        })
    }

    pub fn timeout<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Option<u64>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as `90s`, `30m`, `2h`, `1h30m`, or whole seconds")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                if v == 0 {
                    return Err(E::custom("a timeout must be longer than zero"));
                }
                Ok(Some(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                u64::try_from(v)
                    .map_err(|_| E::custom(format!("a timeout cannot be negative ({v})")))
                    .and_then(|v| self.visit_u64(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                parse_duration(v).map(Some).map_err(E::custom)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
        }
        d.deserialize_any(V)
    }

    pub fn serialize_timeout<S: Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(secs) => s.serialize_str(&format_duration(*secs)),
            None => s.serialize_none(),
        }
    }

    /// A string, or a number or boolean taken as its text (YAML makes `--steps, 100` a number).
    struct Text(String);

    impl<'de> Deserialize<'de> for Text {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl Visitor<'_> for V {
                type Value = Text;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a string (numbers and booleans are taken as their text)")
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Text, E> {
                    Ok(Text(v.to_string()))
                }
                fn visit_u64<E: de::Error>(self, v: u64) -> Result<Text, E> {
                    Ok(Text(v.to_string()))
                }
                fn visit_i64<E: de::Error>(self, v: i64) -> Result<Text, E> {
                    Ok(Text(v.to_string()))
                }
                fn visit_f64<E: de::Error>(self, v: f64) -> Result<Text, E> {
                    Ok(Text(serde_json::Number::from_f64(v).map_or_else(|| v.to_string(), |n| n.to_string())))
                }
                fn visit_bool<E: de::Error>(self, v: bool) -> Result<Text, E> {
                    Ok(Text(v.to_string()))
                }
            }
            d.deserialize_any(V)
        }
    }

    pub fn strings<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        Ok(Vec::<Text>::deserialize(d)?.into_iter().map(|t| t.0).collect())
    }

    pub fn string_map<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
        Ok(BTreeMap::<String, Text>::deserialize(d)?.into_iter().map(|(k, v)| (k, v.0)).collect())
    }
}

#[cfg(test)]
mod tests;
