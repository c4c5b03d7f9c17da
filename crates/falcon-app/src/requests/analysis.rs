//! Requests of the analyses that read files or experiments: an accuracy comparison, kernel-bench results
//! analysed or compared.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{checked, one_or_many};
use crate::error::Result;
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
