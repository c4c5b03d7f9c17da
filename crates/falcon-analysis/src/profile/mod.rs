//! One call that runs the profile tools over a capture (one file, or every host of a run) and returns
//! one report: what `falcon profile analyze` prints and what the summary row is made from.
//!
//! # Hosts
//!
//! Each host file is decoded, analysed and dropped before the next one is read, so peak memory is
//! that of the largest host, not of the capture. Hosts are combined the way XProf combines them for
//! its op-stats tools: the device op databases are merged (ops matched by program and name, times and
//! costs summed), and the device cores and host counts add up; HLO stats, op profile and roofline are
//! computed from the merged database. Step times come from the first host that has steps (in a
//! synchronous multi-host program every host runs the same steps). The memory profile is per host in
//! XProf; here it is the first host's (or the `--host` chosen), and a note says so when there are
//! several. Kernel stats are per host and concatenated.
//!
//! # Sections
//!
//! The report has the sections of the tools asked for ([`ProfileReport::tools`]) and no other, except
//! `cpu_ops`: on an XLA:CPU capture XProf's device tools have nothing, and Falcon's come from the XLA:CPU op events
//! costed from the capture's HLO (`ops[]` holds the executions inside the steps; the roofline needs a measured or
//! given CPU peak); the per-op profile of every execution, `cpu_ops`, comes with the `ops` and the `overview` tools (profile compare reads it with the overview); the renderers
//! show it for `ops` only. Each empty section's reason is in the renderers' one line and the notes.

/// The cost of a PyTorch ATen op from its recorded shapes (`record_shapes=True`), beside `hlo::cost`.
pub mod aten;
pub mod cpu_ops;
pub mod device;
pub mod findings;
mod finish;
pub mod from_trace;

pub mod hlo;
pub mod hlo_stats;
pub mod kernels;
pub mod memory;
pub mod op_metrics;
pub mod op_profile;
pub mod overview;
pub mod partial;
pub use crate::planes;
pub mod roofline;
pub mod steps;
pub mod time_breakdown;
pub mod trace_export;

use serde::Serialize;

use crate::cpu_ops::CpuOpProfile;
use crate::device::DeviceInfo;
use crate::error::Result;
use crate::hlo_stats::HloStatsRow;
use crate::input::HostFile;
use crate::kernels::{KernelStat, StepKernelBreakdown};
use crate::memory::MemoryProfile;
use crate::op_metrics::OpMetricsDb;
use crate::op_profile::OpProfileNode;
use crate::overview::Overview;
use crate::roofline::Roofline;
use crate::steps::StepReport;

/// One profile tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Tool {
    /// Device type, step time, duty cycle, utilizations, bound-by, MFU.
    Overview,
    /// Op profile trees (by program, category, provenance); the XLA:CPU op profile on CPU captures.
    Ops,
    /// HLO stats: one row per device op.
    Hlo,
    /// Roofline: peaks, ridge point, per-op and program points.
    Roofline,
    /// Allocator timeline, peak, top allocations, growth across steps.
    Memory,
    /// GPU kernel stats and per-step kernel time.
    Kernels,
    /// Step markers and step times.
    Steps,
}

impl Tool {
    /// Every tool, in report order.
    pub const ALL: [Tool; 7] =
        [Tool::Overview, Tool::Ops, Tool::Hlo, Tool::Roofline, Tool::Memory, Tool::Kernels, Tool::Steps];

    /// The name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Tool::Overview => "overview",
            Tool::Ops => "ops",
            Tool::Hlo => "hlo",
            Tool::Roofline => "roofline",
            Tool::Memory => "memory",
            Tool::Kernels => "kernels",
            Tool::Steps => "steps",
        }
    }

    /// Every tool's name, in report order, comma-separated: what help and errors list (written nowhere else).
    pub fn names() -> String {
        Tool::ALL.map(Tool::as_str).join(", ")
    }
}

impl std::str::FromStr for Tool {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Tool::ALL
            .into_iter()
            .find(|t| t.as_str() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| format!("unknown profile tool `{s}` (expected one of: {})", Tool::names()))
    }
}

/// What to compute.
#[derive(Debug, Clone, Default)]
pub struct AnalyzeOptions {
    /// Tools to run; empty means all.
    pub tools: Vec<Tool>,
    /// The workload's own model FLOPs per step (per chip-step summed over chips, i.e. the whole model step),
    /// used for MFU instead of the profile's cost stats.
    pub model_flops_per_step: Option<f64>,
    /// Where `model_flops_per_step` comes from, for `mfu_flops_source` (default `caller model flops`; the
    /// application layer says `logged model_flops` when it read the run's metric).
    pub model_flops_source: Option<String>,
    /// The device's peak TFLOP/s when the capture and the catalog have none (XLA:CPU captures: the whole
    /// machine's); beats [`AnalyzeOptions::cpu_peak`]'s compute peak.
    pub peak_tflops: Option<f64>,
    /// The CPU peaks measured on the machine (`falcon doctor --calibrate`), for XLA:CPU captures.
    pub cpu_peak: Option<CpuPeak>,
    /// The model FLOPs per step the workload logged (`model_flops`, median), shown beside the capture's own
    /// count and used for MFU only when the capture has none.
    pub logged_model_flops: Option<f64>,
    /// Told `(hosts done, hosts in all)` as a remote run's hosts are downloaded (a front end's progress bar).
    pub progress: HostProgress,
}

/// A CPU's measured peaks (`falcon doctor --calibrate`): what the XLA:CPU roofline, bound-by and MFU divide by.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct CpuPeak {
    /// f32 matmul peak of all `cores`, TFLOP/s.
    pub tflops: f64,
    /// Memory bandwidth of all `cores`, GB/s (10⁹ bytes a second).
    pub memory_gb_per_s: f64,
    /// The cores the benchmark ran on.
    pub cores: u32,
    /// Where and when it was measured (`pool local, 2026-12-07`), for the notes.
    pub measured: String,
}

/// A callback for progress over a run's hosts; none by default.
#[derive(Clone, Default)]
pub struct HostProgress(pub Option<std::sync::Arc<dyn Fn(usize, usize) + Send + Sync>>);

impl HostProgress {
    /// Reports `done` of `total` hosts.
    pub fn report(&self, done: usize, total: usize) {
        if let Some(f) = &self.0 {
            f(done, total);
        }
    }
}

impl std::fmt::Debug for HostProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "HostProgress(Some(..))" } else { "HostProgress(None)" })
    }
}

impl AnalyzeOptions {
    pub(crate) fn wants(&self, tool: Tool) -> bool {
        self.tools.is_empty() || self.tools.contains(&tool)
    }
}

/// Op profile trees.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OpProfileTrees {
    pub by_program: OpProfileNode,
    pub by_program_exclude_idle: OpProfileNode,
    pub by_category: OpProfileNode,
    pub by_provenance: OpProfileNode,
}

/// The result of `profile analyze`. Sections of tools not asked for are absent.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ProfileReport {
    /// The tools run, in report order (every tool when none was asked for).
    pub tools: Vec<Tool>,
    /// The host files analysed.
    pub files: Vec<HostFile>,
    /// Device identity and peaks (of the first host).
    pub device: DeviceInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overview: Option<Overview>,
    /// HLO stats rows (XProf `hlo_stats`, IDLE excluded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ops: Option<Vec<HloStatsRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op_profile: Option<OpProfileTrees>,
    /// XLA:CPU per-op profile (CPU captures, where XProf shows nothing; tools `ops` and `overview`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_ops: Option<CpuOpProfile>,
    /// Where the op time of an XLA:CPU capture goes: by category, name scope and source line, as shares of op
    /// time, beside the steps' wall time (tool `ops`; see [`time_breakdown`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_breakdown: Option<time_breakdown::TimeBreakdown>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roofline: Option<Roofline>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryProfile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernels: Option<Vec<KernelStat>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_steps: Option<Vec<StepKernelBreakdown>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<StepReport>,
    /// What a GPU engineer acts on, largest share first (tool `overview`, GPU captures; empty elsewhere).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub findings: Option<Vec<findings::Finding>>,
    /// Chrome traces that record launches: device time by launching framework op (tool `ops`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub framework_ops: Option<Vec<crate::trace::kernels::FrameworkOpRow>>,
    /// The same by outermost host range (`record_function`, optimizer step, autograd function; tool `ops`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub framework_scopes: Option<Vec<crate::trace::kernels::FrameworkOpRow>>,
    /// Chrome traces: device time by kind — compute, communication, memcpy, memset (tool `kernels`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_types: Option<Vec<crate::trace::kernels::KernelTypeRow>>,
    /// Chrome traces: launch statistics and the launch-bound call (tools `kernels`, `overview`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch: Option<crate::trace::kernels::LaunchStats>,
    /// Hosts of a multi-host run that could not be read (empty, truncated, not a profile, unreadable): each
    /// named with why; the other hosts are analysed and `files` lists only those. Absent when every host was read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_hosts: Vec<FailedHost>,
    /// A run of several hosts (tool `steps`): the collectives matched across hosts — who arrives late, what each
    /// host waits for and transfers, the straggler — the numbers `profile trace` gives ([`crate::trace::members`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multihost: Option<crate::trace::multihost::MultiHost>,
    /// What the analysis could not do or assumed, in words.
    pub notes: Vec<String>,
}

/// A host whose profile could not be read.
#[derive(serde::Deserialize, Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FailedHost {
    /// Host name.
    pub host: String,
    /// Its file (for a remote object that was not copied, the object's key).
    pub path: std::path::PathBuf,
    /// Why it could not be read.
    pub error: String,
}

/// Analyses the given host files (one capture) with the tools asked for.
pub fn analyze_files(files: &[HostFile], options: &AnalyzeOptions) -> Result<ProfileReport> {
    Ok(analyze_files_with_db(files, options)?.0)
}

/// [`analyze_files`], also returning the merged device op database the report was computed from (empty
/// on CPU-only captures and when no tool that needs it was asked for).
pub(crate) fn analyze_files_with_db(
    files: &[HostFile],
    options: &AnalyzeOptions,
) -> Result<(ProfileReport, OpMetricsDb)> {
    analyze_hosts_with_db(files.iter().cloned().map(Ok), files.len(), options)
}

/// One host of a run as it arrives: its local file, or why it could not be had (a failed download).
pub type HostInput = std::result::Result<HostFile, FailedHost>;

/// [`analyze_files`] over hosts that arrive one by one (downloaded while the previous one is analysed): each is
/// decoded, analysed and dropped before the next is taken. `total` is the run's host count: with more than one,
/// a host that cannot be had or read is named in [`ProfileReport::failed_hosts`] and the others are analysed.
pub fn analyze_hosts(
    hosts: impl IntoIterator<Item = HostInput>,
    total: usize,
    options: &AnalyzeOptions,
) -> Result<ProfileReport> {
    Ok(analyze_hosts_with_db(hosts, total, options)?.0)
}

fn analyze_hosts_with_db(
    hosts: impl IntoIterator<Item = HostInput>,
    total: usize,
    options: &AnalyzeOptions,
) -> Result<(ProfileReport, OpMetricsDb)> {
    partial::fold_hosts(hosts, total, options)
}
