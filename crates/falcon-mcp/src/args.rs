//! The arguments of the tools that are MCP's own — none, and `exp_submit`'s spec as a file on this machine or as
//! text — read with serde (unknown fields refused, so a misspelt argument is an error rather than silently
//! ignored). Every other tool's input is its use case's request type in `falcon_app::requests`, the one the CLI
//! and the Web API take. Names follow the CLI's flags (`--label` → `label`, `--timeout` → `timeout_s`).

use schemars::JsonSchema;
use serde::Deserialize;

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
