//! Per-HLO-op time profile of an XLA:CPU run, from the `/host:CPU` plane of an XSpace.
//!
//! # What counts as an op event
//!
//! On a CPU-only capture there are no `/device:*` planes, so XProf's op profile and HLO stats are
//! empty. XLA:CPU still leaves one TraceMe per executed HLO op (thunk) on the host threads that ran
//! it (`tf_XLAEigen/*`, `tf_XLAPjRtCpuClient/*`, ... lines of `/host:CPU`); the thunk executor
//! attaches the stats `hlo_op` (the HLO instruction name) and `hlo_module` (the module name) to
//! those events. This module counts **exactly the `/host:CPU` events that carry an `hlo_op` stat**
//! (on the event itself or on its event metadata, as XProf's stat lookup does). That rule is the one
//! XProf itself uses to derive `XLA Ops` lines for CPU (`derived_timeline.cc:DeriveLinesForXlaCpuOps`
//! keys on `hlo_op`/`hlo_module`), it is independent of thread names (which vary with the runtime and
//! thread pool), and it excludes the enclosing runtime events (`ThunkExecutor::Execute`,
//! `PjitFunction(...)`, thread-pool bookkeeping) which carry `run_id` but no `hlo_op`.
//!
//! Lines XProf derives from these events (`...XLA Modules`, `...XLA Ops`, `...Framework Ops`,
//! `...Framework Name Scope`) are skipped so that a post-processed XSpace is not double counted.
//!
//! Events are grouped by (`hlo_module`, op name). The op name is the `hlo_op` stat (falling back
//! to the event name if the stat is not a string); the module is `""` when no `hlo_module` stat is
//! present. The category is the `hlo_category` stat when any event of the group has one (XLA:CPU
//! captures observed so far do not set it). Durations are summed in integer picoseconds and only
//! converted to microseconds (`f64`) at the end. Ops are sorted by total time descending, ties by
//! module then name ascending, so the output is deterministic.

use std::collections::BTreeMap;

use falcon_xplane::{XEvent, XPlane, XSpace};
use serde::Serialize;

use super::planes::DERIVED_LINE_SUFFIXES;
pub use super::planes::HOST_CPU_PLANE;

/// The per-op profile of one capture.
#[derive(serde::Deserialize, Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CpuOpProfile {
    /// Whether the space has a `/host:CPU` plane at all.
    pub host_plane_found: bool,
    /// Number of op events counted (sum of `occurrences`).
    pub op_events: u64,
    /// Sum of all op event durations, microseconds.
    pub total_time_us: f64,
    /// One entry per (`hlo_module`, op), by total time descending.
    pub ops: Vec<CpuOpStats>,
}

/// Aggregate of every execution of one HLO op of one module.
#[derive(serde::Deserialize, Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CpuOpStats {
    pub hlo_module: String,
    /// HLO instruction name (`hlo_op` stat), e.g. `multiply_add_fusion.2`.
    pub name: String,
    /// `hlo_category` stat, when present.
    pub category: Option<String>,
    pub occurrences: u64,
    /// Exact sum of durations in picoseconds.
    pub total_time_ps: i64,
    pub total_time_us: f64,
    pub avg_time_us: f64,
    pub min_time_us: f64,
    pub max_time_us: f64,
    /// Start of the op's first execution, picoseconds since the Unix epoch: orders ops by execution.
    #[serde(skip)]
    pub first_start_ps: i128,
    /// Mean start of the op's executions within their step, picoseconds from the step's start (only
    /// with steps given, and only over executions inside a step): orders ops within a step.
    #[serde(skip)]
    pub mean_step_offset_ps: Option<f64>,
    /// Executions inside a step (only with steps given): what the op costs a step.
    #[serde(skip)]
    pub in_step_occurrences: u64,
    /// Their summed durations, picoseconds.
    #[serde(skip)]
    pub in_step_time_ps: i64,
}

#[derive(Default)]
struct Acc {
    category: Option<String>,
    count: u64,
    total_ps: i64,
    min_ps: i64,
    max_ps: i64,
    first_start_ps: i128,
    in_step: u64,
    in_step_ps: i64,
    offset_sum_ps: f64,
}

fn ps_to_us(ps: i64) -> f64 {
    ps as f64 / 1e6
}

/// Stat-metadata ids of the stats that identify an op event, resolved once per plane (a name lookup
/// scans the plane's stat metadata, far too slow per event on a capture with a million events).
struct OpStatIds {
    hlo_op: Option<i64>,
    hlo_module: Option<i64>,
    hlo_category: Option<i64>,
}

impl OpStatIds {
    fn of(plane: &XPlane) -> OpStatIds {
        let id = |name: &str| plane.stat_metadata_by_name(name).map(|m| m.id);
        OpStatIds { hlo_op: id("hlo_op"), hlo_module: id("hlo_module"), hlo_category: id("hlo_category") }
    }
}

/// The op name, module and category of an XLA:CPU op event; `None` if it is not one.
fn op_identity<'p>(
    plane: &'p XPlane,
    ids: &OpStatIds,
    event: &'p XEvent,
) -> Option<(&'p str, &'p str, Option<&'p str>)> {
    let op = plane.event_stat_by_id(event, ids.hlo_op)?;
    let name = plane.stat_str(op).unwrap_or_else(|| plane.event_name(event));
    let str_stat = |id: Option<i64>| plane.event_stat_by_id(event, id).and_then(|s| plane.stat_str(s));
    let module = str_stat(ids.hlo_module).unwrap_or_default();
    Some((module, name, str_stat(ids.hlo_category)))
}

/// Aggregates the XLA:CPU op events of `space` (see the module docs for what counts).
pub fn cpu_op_profile(space: &XSpace) -> CpuOpProfile {
    cpu_op_profile_in_steps(space, &[])
}

/// [`cpu_op_profile`], also placing each op within the steps given (sorted by start): its mean start
/// offset from the start of the step it ran in.
pub fn cpu_op_profile_in_steps(space: &XSpace, steps: &[super::steps::Step]) -> CpuOpProfile {
    let step_of = |t: i128| -> Option<i128> {
        let i = steps.partition_point(|s| s.start_ps <= t).checked_sub(1)?;
        let s = &steps[i];
        (t < s.start_ps + i128::from(s.duration_ps)).then_some(t - s.start_ps)
    };
    let Some(plane) = space.plane_by_name(HOST_CPU_PLANE) else {
        return CpuOpProfile::default();
    };
    let ids = OpStatIds::of(plane);
    if ids.hlo_op.is_none() {
        return CpuOpProfile { host_plane_found: true, ..CpuOpProfile::default() };
    }
    let mut groups: BTreeMap<(&str, &str), Acc> = BTreeMap::new();
    for line in &plane.lines {
        if DERIVED_LINE_SUFFIXES.iter().any(|s| line.name.ends_with(s)) {
            continue;
        }
        for event in &line.events {
            let Some((module, name, category)) = op_identity(plane, &ids, event) else {
                continue;
            };
            let d = event.duration_ps.max(0);
            let start = i128::from(line.timestamp_ns) * 1000 + i128::from(event.offset_ps);
            let acc = groups.entry((module, name)).or_default();
            if acc.count == 0 {
                acc.min_ps = d;
                acc.max_ps = d;
                acc.first_start_ps = start;
            } else {
                acc.min_ps = acc.min_ps.min(d);
                acc.max_ps = acc.max_ps.max(d);
                acc.first_start_ps = acc.first_start_ps.min(start);
            }
            if let Some(offset) = step_of(start) {
                acc.in_step += 1;
                acc.in_step_ps = acc.in_step_ps.saturating_add(d);
                acc.offset_sum_ps += offset as f64;
            }
            acc.count += 1;
            acc.total_ps = acc.total_ps.saturating_add(d);
            if acc.category.is_none() {
                acc.category = category.map(str::to_owned);
            }
        }
    }
    let mut ops: Vec<CpuOpStats> = groups
        .into_iter()
        .map(|((hlo_module, name), a)| CpuOpStats {
            hlo_module: hlo_module.to_owned(),
            name: name.to_owned(),
            category: a.category,
            occurrences: a.count,
            total_time_ps: a.total_ps,
            total_time_us: ps_to_us(a.total_ps),
            avg_time_us: ps_to_us(a.total_ps) / a.count as f64,
            min_time_us: ps_to_us(a.min_ps),
            max_time_us: ps_to_us(a.max_ps),
            first_start_ps: a.first_start_ps,
            mean_step_offset_ps: (a.in_step > 0).then(|| a.offset_sum_ps / a.in_step as f64),
            in_step_occurrences: a.in_step,
            in_step_time_ps: a.in_step_ps,
        })
        .collect();
    // BTreeMap order already gives (module, name) ascending; a stable sort keeps it for ties.
    ops.sort_by_key(|o| std::cmp::Reverse(o.total_time_ps));
    let total_ps = ops.iter().fold(0i64, |s, o| s.saturating_add(o.total_time_ps));
    CpuOpProfile {
        host_plane_found: true,
        op_events: ops.iter().map(|o| o.occurrences).sum(),
        total_time_us: ps_to_us(total_ps),
        ops,
    }
}
