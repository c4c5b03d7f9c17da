//! The tools' arguments: one struct per tool, read with serde (unknown fields refused, so a misspelt argument is
//! an error rather than silently ignored) and described with the same `schemars` derive as the Web API's
//! OpenAPI document. Names follow the CLI's flags (`--label` → `label`, `--timeout` → `timeout_s`).

use schemars::JsonSchema;
use serde::Deserialize;

/// One value or a list of them (`"loss"` or `["loss", "grad_norm"]`), as a repeatable flag takes.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(v) => vec![v],
            OneOrMany::Many(v) => v,
        }
    }
}

/// Profile tool names, one or a list: the schema's values are the tool type's (and `all`).
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct ToolNames(pub OneOrMany);

impl JsonSchema for ToolNames {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ToolNames".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = falcon_app::profiles::Tool::ALL
            .map(falcon_app::profiles::Tool::as_str)
            .into_iter()
            .chain(["all"])
            .collect();
        schemars::json_schema!({
            "anyOf": [
                { "type": "string", "enum": names },
                { "type": "array", "items": { "type": "string", "enum": names } }
            ]
        })
    }
}

/// A list's values, empty when not given.
pub fn many(v: Option<OneOrMany>) -> Vec<String> {
    v.map(OneOrMany::into_vec).unwrap_or_default()
}

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// `exp_submit`: record an experiment and queue its job; with `wait`, run it here until it ends.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpSubmit {
    /// A spec file (YAML or JSON) on this machine. Give this or `spec_yaml`.
    pub spec_path: Option<String>,
    /// The spec itself, YAML or JSON text. Give this or `spec_path`.
    pub spec_yaml: Option<String>,
    /// Run the experiment here (an embedded worker, as `exp submit --wait`) until it ends, with its analyses;
    /// progress notifications report each status. Without it the job waits for a `falcon worker`.
    #[serde(default)]
    pub wait: bool,
    /// With `wait`: give up waiting after this many seconds (the experiment goes on; a tool error says so).
    #[schemars(range(min = 1))]
    pub timeout_s: Option<u64>,
}

/// `profile_analyze`: what a capture says (MFU, step time, duty cycle, ops, roofline, memory, kernels).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileAnalyze {
    /// A `.xplane.pb`, a profile run directory, an experiment (`e-12`), or a `gs://` / `s3://` URI.
    pub input: String,
    /// Only these tools (default: all).
    pub tool: Option<ToolNames>,
    /// Model FLOPs per step, for MFU (default: an experiment's logged `model_flops`).
    pub model_flops: Option<f64>,
    /// The accelerator's peak TFLOP/s (default: from the device, when known).
    pub peak_tflops: Option<f64>,
    /// Which host of a multi-host capture (default: the first).
    pub host: Option<String>,
}

/// `profile_trace`: where each step's time goes, from a capture's timeline or a Chrome / PyTorch trace.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileTrace {
    /// A capture, a Chrome / PyTorch trace (`.json`, `.json.gz`), or an experiment (`e-12`).
    pub input: String,
    /// Only these analyses: breakdown, overlap, gaps, host, steps (default: all).
    pub analysis: Option<OneOrMany>,
    /// Which host of a multi-host capture (default: the first).
    pub host: Option<String>,
}

/// `profile_compare`: two captures A/B (A the baseline), with the config diff when both are experiments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileCompare {
    /// The baseline capture or experiment.
    pub a: String,
    /// The candidate capture or experiment.
    pub b: String,
    /// Which host of multi-host captures (default: the first).
    pub host: Option<String>,
    /// Rows per ranked table.
    #[serde(default = "falcon_app::requests::default_top")]
    #[schemars(range(min = 1, max = falcon_app::requests::MAX_TOP))]
    pub top: u32,
}
