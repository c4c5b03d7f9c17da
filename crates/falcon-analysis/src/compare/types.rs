//! The comparison's report types (what `profile compare --json` prints).

use serde::Serialize;

use falcon_core::stats::Verdict;

use crate::compare::MatchedBy;
use crate::input::HostFile;

/// Where the op times came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OpSource {
    /// Device (TPU/GPU) op databases: self times, FLOPs, bytes, roofline.
    Device,
    /// XLA:CPU op profiles of CPU-only captures: times, with FLOPs and bytes from the capture's HLO when it has it.
    XlaCpu,
    /// GPU kernels by name (a Chrome trace on one side at least): times only, paired by exact name, categories
    /// are kernel families.
    Kernels,
}

/// One capture, as compared.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Side {
    /// The input as given (experiment id, file or directory).
    pub input: String,
    pub files: Vec<HostFile>,
    pub device_type: String,
    /// `tpu`, `gpu` or `cpu`.
    pub hardware: String,
    pub device_cores: u32,
    /// Step times of the profiled steps, milliseconds, in step order.
    pub step_times_ms: Vec<f64>,
    /// Ops with time (IDLE excluded).
    pub ops: usize,
    /// Sum of op self times, picoseconds.
    pub op_time_ps: u64,
    /// Device time (ops + idle), picoseconds; device profiles only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_time_ps: Option<u64>,
    /// Device idle time, picoseconds; device profiles only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_time_ps: Option<u64>,
    pub mfu: Option<f64>,
    /// A trace's launch statistics (kernels a step, host wait, the launch-bound call); absent for captures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch: Option<crate::trace::kernels::LaunchStats>,
    /// What the analysis of this side could not do or assumed.
    pub notes: Vec<String>,
}

/// A quantity in A and B.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TimeDelta {
    pub a_us: f64,
    pub b_us: f64,
    pub delta_us: f64,
    /// `b − a` in integer picoseconds (exact).
    pub delta_ps: i64,
    /// `(b − a) / a`; `null` when a is 0.
    pub delta_rel: Option<f64>,
}

impl TimeDelta {
    pub(crate) fn of(a_ps: u64, b_ps: u64) -> TimeDelta {
        TimeDelta {
            a_us: ps_to_us(a_ps),
            b_us: ps_to_us(b_ps),
            delta_us: delta_us(a_ps, b_ps),
            delta_ps: delta_ps(a_ps, b_ps),
            delta_rel: rel(a_ps as f64, b_ps as f64),
        }
    }
}

/// Total op time, idle time and device time in A and B.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Totals {
    pub op_time: TimeDelta,
    /// Device profiles only.
    pub idle_time: Option<TimeDelta>,
    /// Device profiles only.
    pub total_time: Option<TimeDelta>,
}

/// MFU in A and B.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct MfuDelta {
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// `b − a` (a fraction, not a ratio).
    pub delta: Option<f64>,
    /// Per-step MFU samples compared (metric `mfu`), when both sides know their model FLOPs.
    pub verdict: Option<Verdict>,
}

/// `matched`, `added` (B only) or `removed` (A only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OpStatus {
    Matched,
    Added,
    Removed,
}

/// One op in A and/or B.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OpChange {
    /// B's name (A's for a removed op).
    pub name: String,
    /// A's name when it differs from B's (a renumbered op).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a_name: Option<String>,
    /// HLO module (program) name.
    pub program: String,
    pub category: String,
    pub status: OpStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched_by: Option<MatchedBy>,
    /// How sure the pairing is, in [0, 1]: 1 for an exact name match, else the score of
    /// [`crate::compare::matching`] (at least `matching.min_confidence`); `null` for added and removed ops.
    pub confidence: Option<f64>,
    pub a_self_time_us: f64,
    pub b_self_time_us: f64,
    pub delta_us: f64,
    /// `(b − a) / a`; `null` for added ops.
    pub delta_rel: Option<f64>,
    /// Exact `b − a`, picoseconds.
    pub delta_ps: i64,
    pub a_occurrences: u64,
    pub b_occurrences: u64,
    pub a_flops: Option<u64>,
    pub b_flops: Option<u64>,
    /// `b_flops / a_flops`.
    pub flops_ratio: Option<f64>,
    pub a_bytes: Option<u64>,
    pub b_bytes: Option<u64>,
    /// GFLOP/s.
    pub a_flop_rate: Option<f64>,
    pub b_flop_rate: Option<f64>,
    /// GiB/s.
    pub a_bandwidth: Option<f64>,
    pub b_bandwidth: Option<f64>,
    pub a_bound_by: Option<String>,
    pub b_bound_by: Option<String>,
}

/// Self time (and costs) of one category in A and B.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CategoryChange {
    pub category: String,
    pub a_self_time_us: f64,
    pub b_self_time_us: f64,
    pub delta_us: f64,
    pub delta_rel: Option<f64>,
    pub delta_ps: i64,
    pub a_ops: usize,
    pub b_ops: usize,
    pub a_flops: Option<u64>,
    pub b_flops: Option<u64>,
    pub a_bytes: Option<u64>,
    pub b_bytes: Option<u64>,
    /// GFLOP/s over the category's self time.
    pub a_flop_rate: Option<f64>,
    pub b_flop_rate: Option<f64>,
}

/// A matched op's roofline point in A and in B.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RooflineChange {
    pub name: String,
    pub category: String,
    /// Operational intensity, FLOP/byte.
    pub a_oi: f64,
    /// GFLOP/s.
    pub a_flop_rate: f64,
    pub b_oi: f64,
    pub b_flop_rate: f64,
    pub a_bound_by: String,
    pub b_bound_by: String,
    /// The op is on the other side of the ridge point in B than in A.
    pub crossed_ridge: bool,
    pub b_self_time_us: f64,
    pub delta_us: f64,
}

/// The roofline frame of each side: peaks and ridge point.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RooflinePeaks {
    /// GFLOP/s.
    pub a_peak_flop_rate: f64,
    pub b_peak_flop_rate: f64,
    /// GiB/s.
    pub a_peak_hbm_bw: f64,
    pub b_peak_hbm_bw: f64,
    /// FLOP/byte.
    pub a_ridge_point: f64,
    pub b_ridge_point: f64,
}

/// Memory of the headline allocator in A and B.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct MemoryDelta {
    pub a_peak_bytes: i64,
    pub b_peak_bytes: i64,
    pub delta_peak_bytes: i64,
    /// Mean change of in-use memory from one step end to the next.
    pub a_step_growth_bytes: Option<f64>,
    pub b_step_growth_bytes: Option<f64>,
    pub delta_step_growth_bytes: Option<f64>,
    pub a_leak_suspected: bool,
    pub b_leak_suspected: bool,
}

/// How the ops were paired.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct MatchSummary {
    pub matched: usize,
    pub by_name: usize,
    pub by_deduplicated_name: usize,
    pub by_fingerprint: usize,
    pub added: usize,
    pub removed: usize,
    /// The confidence a pair other than an exact name match needs.
    pub min_confidence: f64,
    /// Ops of A left `removed` that had a candidate in B scoring below `min_confidence` (without the threshold
    /// they might have been paired).
    pub rejected: usize,
}

/// The result of `profile compare`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ProfileComparison {
    pub a: Side,
    pub b: Side,
    pub op_source: OpSource,
    /// Per-step times compared (metric `step_time_s`).
    pub step_time: Verdict,
    pub mfu: MfuDelta,
    pub totals: Totals,
    /// Every op of either side, largest absolute self-time delta first.
    pub ops: Vec<OpChange>,
    /// Largest absolute self-time delta first.
    pub categories: Vec<CategoryChange>,
    /// Matched ops with cost data on both sides, B's self time first.
    pub roofline: Vec<RooflineChange>,
    /// Absent when neither side has a roofline (CPU captures).
    pub roofline_peaks: Option<RooflinePeaks>,
    /// The matched ops that got slower, largest increase first (at most `top`).
    pub regressions: Vec<OpChange>,
    /// The matched ops that got faster, largest decrease first (at most `top`).
    pub improvements: Vec<OpChange>,
    /// The ops only in B, most self time first (at most `top`).
    pub added: Vec<OpChange>,
    /// The ops only in A, most self time first (at most `top`).
    pub removed: Vec<OpChange>,
    /// Absent when neither capture has allocator events.
    pub memory: Option<MemoryDelta>,
    /// Runs of several hosts: each host on both sides ([`super::hosts`]); empty otherwise.
    pub hosts: Vec<super::hosts::HostChange>,
    /// Runs of several hosts: each side's straggler and what changed; `null` when neither side has several hosts.
    pub straggler: Option<super::hosts::StragglerChange>,
    pub matching: MatchSummary,
    pub notes: Vec<String>,
}

impl ProfileComparison {
    /// Whether B is worse than A by a verdict (step time or MFU).
    pub fn regressed(&self) -> bool {
        use falcon_core::stats::VerdictKind::Regressed;
        self.step_time.verdict == Regressed || self.mfu.verdict.as_ref().is_some_and(|v| v.verdict == Regressed)
    }
}

pub(crate) fn ps_to_us(ps: u64) -> f64 {
    ps as f64 / 1e6
}

pub(crate) fn delta_ps(a: u64, b: u64) -> i64 {
    i64::try_from(i128::from(b) - i128::from(a)).unwrap_or(if b > a { i64::MAX } else { i64::MIN })
}

pub(crate) fn delta_us(a: u64, b: u64) -> f64 {
    delta_ps(a, b) as f64 / 1e6
}

pub(crate) fn rel(a: f64, b: f64) -> Option<f64> {
    (a != 0.0).then(|| (b - a) / a).filter(|r| r.is_finite())
}
