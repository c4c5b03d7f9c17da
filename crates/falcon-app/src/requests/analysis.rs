//! Requests of the analyses that read files or experiments: a profile analysed, traced or compared, an accuracy
//! comparison, kernel-bench results analysed or compared.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{checked, default_top, one_or_many, MAX_TOP};
use crate::error::Result;
use crate::profiles::{
    parse_tools, parse_trace_analyses, AnalyzeOptions, CompareOptions, Tool, TraceAnalysis, TraceOptions,
};
use falcon_analysis::kernel_bench::KernelOptions;

/// `accuracy compare`, MCP `accuracy_compare`: two runs' metric series aligned by step and compared with
/// tolerances (A the reference).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AccuracyRequest {
    /// The reference: a metrics file (MaxText, Megatron-LM, tfevents, JSONL, CSV) or an experiment (`e-1`).
    #[schemars(length(min = 1))]
    pub a: String,
    /// The run checked against it, written the same way.
    #[schemars(length(min = 1))]
    pub b: String,
    /// Only these metrics (default: every metric both have); one or a list.
    #[serde(rename = "metric", default, deserialize_with = "one_or_many", skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<String>,
    /// Relative tolerance (default: the metric's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub rtol: Option<f64>,
    /// Absolute tolerance (default: the metric's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub atol: Option<f64>,
    /// `A_NAME=B_NAME` pairs for metrics named differently on the two sides; one or a list.
    #[serde(default, deserialize_with = "one_or_many", skip_serializing_if = "Vec::is_empty")]
    pub map: Vec<String>,
    /// The step column of JSONL / CSV inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_column: Option<String>,
}

/// [`KernelOptions`]' `p`, as serde's `default =` takes it.
pub fn default_kernel_p() -> f64 {
    KernelOptions::default().p
}

/// `kernel analyze`, MCP `kernel_analyze`: kernel-bench results analysed (latency spread, achieved TFLOP/s and
/// GB/s, roofline, `fast_p`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KernelAnalyzeRequest {
    /// A `kernel_bench*.jsonl` / `.csv` results file, a directory holding one, or an experiment (`e-12`).
    #[schemars(length(min = 1))]
    pub input: String,
    /// The `fast_p` threshold: the fraction of kernels correct and faster than their reference by more than
    /// this speed-up (KernelBench's p).
    #[serde(default = "default_kernel_p")]
    #[schemars(range(min = 0.0))]
    pub p: f64,
    /// Peak TFLOP/s for % of roofline when the hardware is not in the catalog (a CPU, say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub peak_tflops: Option<f64>,
    /// Peak memory bandwidth in GB/s for % of roofline when the hardware is not in the catalog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub peak_gbs: Option<f64>,
}

impl KernelAnalyzeRequest {
    /// The analysis' options, the request checked against the type's schema.
    pub fn options(&self) -> Result<KernelOptions> {
        checked(self)?;
        Ok(KernelOptions { p: self.p, peak_tflops: self.peak_tflops, peak_gbs: self.peak_gbs })
    }
}

/// `kernel compare`, MCP `kernel_compare`: two kernel-bench runs row by row (base the baseline).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KernelCompareRequest {
    /// The baseline results (file, directory or experiment).
    #[schemars(length(min = 1))]
    pub base: String,
    /// The new results, written the same way.
    #[schemars(length(min = 1))]
    pub new: String,
}

/// A profile tool's name as a request's schema lists it: one of [`Tool::ALL`]'s, or `all`.
pub struct ToolName;

impl JsonSchema for ToolName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ToolName".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = Tool::ALL.map(Tool::as_str).into_iter().chain(["all"]).collect();
        schemars::json_schema!({ "type": "string", "enum": names })
    }
}

/// A trace analysis' name as a request's schema lists it: one of [`TraceAnalysis::ALL`]'s, or `all`.
pub struct TraceAnalysisName;

impl JsonSchema for TraceAnalysisName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TraceAnalysisName".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = TraceAnalysis::ALL.map(TraceAnalysis::as_str).into_iter().chain(["all"]).collect();
        schemars::json_schema!({ "type": "string", "enum": names })
    }
}

/// `profile analyze`, MCP `profile_analyze`: what a capture says (MFU, step time, duty cycle, ops, roofline,
/// memory, kernels).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileAnalyzeRequest {
    /// A `.xplane.pb`, a profile run directory, an experiment (`e-12`), or a `gs://` / `s3://` URI.
    #[schemars(length(min = 1))]
    pub input: String,
    /// Only these tools (default: all); one or a list.
    #[serde(default, deserialize_with = "one_or_many", skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<ToolName>")]
    pub tool: Vec<String>,
    /// Which host of a multi-host capture (default: the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Model FLOPs per step, for MFU (default: an experiment's logged `model_flops`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub model_flops: Option<f64>,
    /// The accelerator's peak TFLOP/s (default: from the device, when known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub peak_tflops: Option<f64>,
}

impl ProfileAnalyzeRequest {
    /// The analysis' options (the tools, empty for all), the request checked against the type's schema.
    pub fn options(&self) -> Result<AnalyzeOptions> {
        checked(self)?;
        Ok(AnalyzeOptions {
            tools: parse_tools(self.tool.iter().map(String::as_str))?,
            model_flops_per_step: self.model_flops,
            peak_tflops: self.peak_tflops,
            ..AnalyzeOptions::default()
        })
    }
}

/// `profile trace`, MCP `profile_trace`: where each step's time goes, from a capture's timeline or a Chrome /
/// PyTorch trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileTraceRequest {
    /// A capture, a Chrome / PyTorch trace (`.json`, `.json.gz`), a folder of rank traces, or an experiment
    /// (`e-12`).
    #[schemars(length(min = 1))]
    pub input: String,
    /// Only these analyses (default: all); one or a list.
    #[serde(default, deserialize_with = "one_or_many", skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<TraceAnalysisName>")]
    pub analysis: Vec<String>,
    /// Which host of a multi-host capture (default: the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl ProfileTraceRequest {
    /// The trace's options (the analyses, empty for all), the request checked against the type's schema.
    pub fn options(&self) -> Result<TraceOptions> {
        checked(self)?;
        Ok(TraceOptions {
            analyses: parse_trace_analyses(self.analysis.iter().map(String::as_str))?,
            ..TraceOptions::default()
        })
    }
}

/// `profile compare`, MCP `profile_compare`: two captures A/B (A the baseline), with the config diff when both
/// are experiments. (`GET /api/v1/profiles/{a}/compare/{b}` compares two experiments' first hosts.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileCompareRequest {
    /// The baseline capture or experiment.
    #[schemars(length(min = 1))]
    pub a: String,
    /// The candidate capture or experiment.
    #[schemars(length(min = 1))]
    pub b: String,
    /// Which host of multi-host captures (default: the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Rows per ranked table.
    #[serde(default = "default_top")]
    #[schemars(range(min = 1, max = MAX_TOP))]
    pub top: u32,
}

impl ProfileCompareRequest {
    /// The comparison's options, the request checked against the type's schema.
    pub fn options(&self) -> Result<CompareOptions> {
        checked(self)?;
        Ok(CompareOptions { top: super::top(self.top)?, ..CompareOptions::default() })
    }
}
