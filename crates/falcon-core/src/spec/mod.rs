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
//! retry_on_exit_codes: [134]     # exit codes that are transient (an NCCL timeout, a host error): retried too
//! labels: {team: perf}
//! code: {repo: https://github.com/org/maxtext, ref: main}   # optional: run in a checkout of this commit
//! ```
//!
//! Everything here is pure: [`parse_spec`] takes the text the caller read and the file name for messages.
//!
//! Beyond the list of docs/DESIGN.md §2, `resources` also takes `reservation` (the reservation's name, required with
//! `capacity: reservation`) and `topology` (checked against the catalog), which the Job module needs.

mod canonical;
mod check;
mod duration;
mod source;
mod template;

pub use canonical::{canonical_json, config_hash, config_hash_at, hashed_part};
pub use check::{did_you_mean, spec_from_document};
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
    /// Exit codes that mark a failed attempt as transient, retried like a preemption while `retries` last (SkyPilot's
    /// `recover_on_exit_codes`); 1..=255, at most [`MAX_RETRY_EXIT_CODES`]. Default none: only preemption retries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retry_on_exit_codes: Vec<i32>,
    /// Free labels, copied to jobs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", deserialize_with = "de::string_map")]
    pub labels: BTreeMap<String, String>,
    /// The code the workload runs: a git repository and a ref, resolved to a full commit at submit; the job runs
    /// its command in a checkout of that commit. Without it, a spec submitted from inside a git work tree records
    /// that tree's commit, branch and dirty state (nothing is checked out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<Code>,
}

/// The code an experiment runs (`code:` in a spec).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Code {
    /// The repository: a local path (relative to the spec file's folder when the CLI reads it) or a URL git can
    /// fetch (`https://…`, `ssh://…`, `git@host:path`). The HTTP API takes URLs only: a path would be read with
    /// the server's rights (the CLI and MCP over stdio run as the user and take both).
    pub repo: String,
    /// A branch, tag or commit (full or abbreviated SHA; `main~3` and `v1.2^` too); default `HEAD`.
    #[serde(rename = "ref", default = "head")]
    pub reference: String,
}

fn head() -> String {
    "HEAD".to_string()
}

/// Longest `code.ref`.
pub const MAX_CODE_REF: usize = 255;

/// Longest `code.repo`.
pub const MAX_CODE_REPO: usize = 4096;

impl Code {
    /// Why `code.ref` cannot be handed to git (it would read as an option, or names a reflog or a range),
    /// if it cannot. Allowed: letters, digits and `/ . _ - + @ ~ ^`, not starting with `-`, without `..`, `@{` or
    /// `//`, at most [`MAX_CODE_REF`] characters.
    pub fn ref_problem(reference: &str) -> Option<String> {
        let allowed = |c: char| c.is_ascii_alphanumeric() || "/._-+@~^".contains(c);
        if reference.is_empty() {
            return Some("is empty: name a branch, tag or commit".into());
        }
        if reference.chars().count() > MAX_CODE_REF {
            return Some(format!("is longer than {MAX_CODE_REF} characters"));
        }
        if reference.starts_with('-') {
            return Some(format!("`{reference}` starts with `-`, which git would read as an option"));
        }
        if let Some(c) = reference.chars().find(|c| !allowed(*c)) {
            return Some(format!(
                "`{}` holds {c:?}: a ref is letters, digits and `/ . _ - + @ ~ ^`",
                reference.escape_debug()
            ));
        }
        for bad in ["..", "@{", "//"] {
            if reference.contains(bad) {
                return Some(format!("`{reference}` holds `{bad}`: name one commit, not a range or a reflog entry"));
            }
        }
        None
    }

    /// Why `code.repo` cannot be used, if it cannot: empty, too long, or holding a control character; a
    /// repository whose name starts with `-` would read as an option.
    pub fn repo_problem(repo: &str) -> Option<String> {
        if repo.trim().is_empty() {
            return Some("is empty: name a repository (a path or a URL)".into());
        }
        if repo.chars().count() > MAX_CODE_REPO {
            return Some(format!("is longer than {MAX_CODE_REPO} characters"));
        }
        if repo.chars().any(char::is_control) {
            return Some("holds a control character".into());
        }
        if repo.starts_with('-') {
            return Some(format!("`{repo}` starts with `-`, which git would read as an option"));
        }
        None
    }

    /// Whether `repo` names a remote git can fetch (`scheme://…` or scp-like `user@host:path`) rather than a
    /// local path. `file://` counts as a URL here; the API refuses it like a path.
    pub fn is_url(repo: &str) -> bool {
        if repo.contains("://") {
            return true;
        }
        // scp-like: `[user@]host:path`, the colon before any slash.
        match repo.split_once(':') {
            Some((host, _)) => !host.is_empty() && !host.contains('/') && host.len() > 1,
            None => false,
        }
    }
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

impl Resources {
    /// `count` of `accelerator` (slices, or nodes for a GPU type) with every other field at its default: any
    /// zone, on-demand capacity.
    pub fn of(accelerator: impl Into<String>, count: u32) -> Resources {
        Resources {
            accelerator: accelerator.into(),
            slices: count,
            zones: Vec::new(),
            capacity: Capacity::default(),
            devices: None,
            reservation: None,
            topology: None,
        }
    }
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

/// Most exit codes `retry_on_exit_codes` may list.
pub const MAX_RETRY_EXIT_CODES: usize = 16;

/// Environment variables Falcon sets for every workload (docs/DESIGN.md §2); a spec may not set them itself.
pub const RESERVED_ENV: [&str; 7] = [
    "FALCON_EXP_ID",
    "FALCON_EXP_CONFIG",
    "FALCON_ARTIFACT_DIR",
    "FALCON_PROFILE_START_STEP",
    "FALCON_PROFILE_NUM_STEPS",
    "FALCON_CODE_COMMIT",
    "FALCON_CODE_DIR",
];

/// The parallelism axes `config.parallelism` may name; their product must equal the job's devices.
pub const PARALLELISM_AXES: [&str; 6] = ["dp", "fsdp", "tp", "pp", "ep", "sp"];

/// Top-level spec fields.
pub const SPEC_FIELDS: [&str; 14] = [
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
    "retry_on_exit_codes",
    "labels",
    "code",
];
const CODE_FIELDS: [&str; 2] = ["repo", "ref"];
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

    /// Reads a relative local `code.repo` from `folder` (the spec file's): the spec then names the repository
    /// wherever it is submitted from. URLs and absolute paths are left as they are.
    pub fn anchor_code(&mut self, folder: &std::path::Path) {
        if let Some(code) = &mut self.code {
            let relative = !Code::is_url(&code.repo) && std::path::Path::new(&code.repo).is_relative();
            if relative {
                code.repo = folder.join(&code.repo).display().to_string();
            }
        }
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
