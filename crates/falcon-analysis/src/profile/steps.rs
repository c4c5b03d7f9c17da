//! Step detection: which training/inference steps a capture contains and how long each took, with
//! the step-time mean and standard deviation that XProf's overview page (`get_overview`:
//! `steptime_ms_average`, `steptime_ms_standard_deviation`) reports.
//!
//! # Where steps come from
//!
//! Following XProf (`xprof/convert/xplane_to_step_events.cc`, `xprof/utils/event_span.cc`):
//!
//! 1. **Device `Steps` lines.** On every `/device:*` plane (TPU planes only when there are any, as
//!    XProf picks TPU planes over GPU planes), each event of the line named `Steps` is a device step
//!    marker. Its step id is its `group_id` stat (events without one are skipped, as in XProf), its
//!    span is the event's span.
//! 2. **Host step annotations.** On `/host:CPU` (lines XProf derives are skipped), an event is a
//!    host step marker when its name is an explicit host step marker — starts with `train`, `test`
//!    or `TraceContext` and contains no `/` (XProf `IsExplicitHostStepMarker`) — and it is tied to a
//!    step: it carries a `group_id` (an already grouped XSpace), or it is a step root (`_r` stat
//!    non-zero, which `jax.profiler.StepTraceAnnotation` and TF's step annotations set) or carries a
//!    `step_num` stat. XProf gives root events their group id in start-time order; here a marker
//!    without `group_id` is its own step.
//!
//! Markers are grouped by step id. As in XProf's `StepDetails::StepTime`, the step's span is the
//! longest device marker of the group, unless the longest host marker includes it, in which case the
//! host marker is taken; a group with no device marker takes its longest host marker. When any
//! device step exists, only steps with a device marker are kept (host-only groups are dropped, as
//! XProf keeps only device steps then). A profile with neither kind of marker (e.g. an inference
//! capture) has no steps, and XProf then reports step time 0.
//!
//! `step_num` is the host marker's `step_num` stat when present; else a device marker's
//! `step_name` when it parses as an integer; else the group id; else the step's ordinal.
//!
//! Step-time statistics are over all reported steps, in milliseconds: the mean and the *sample*
//! standard deviation (divisor n-1; 0 for fewer than two steps), which is what XProf's `Stat`
//! reports (`steptime_ms_standard_deviation`).
//!
//! XProf may additionally drop an incomplete first/last step on long captures; that is not done
//! here.

use std::collections::BTreeMap;

use falcon_xplane::{XEvent, XLine, XPlane, XSpace};
use serde::Serialize;

use super::planes::{DERIVED_LINE_SUFFIXES, HOST_CPU_PLANE};

/// Name of XProf's derived device step line.
pub const STEPS_LINE: &str = "Steps";

/// Which kind of marker the steps were taken from.
#[derive(serde::Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepSource {
    /// Events of the device planes' `Steps` lines.
    DeviceStepsLine,
    /// Host step annotations (`train…`/`test…`/`TraceContext…` events) on `/host:CPU`.
    HostStepAnnotations,
    /// A Chrome trace's step markers (PyTorch `ProfilerStep#N`, JAX step annotations), or the steps its trace
    /// analysis found.
    TraceMarkers,
    /// No step marker in the profile: no steps.
    #[default]
    None,
}

/// One step.
#[derive(serde::Deserialize, Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Step {
    pub step_num: i64,
    /// Start, picoseconds since the Unix epoch.
    pub start_ps: i128,
    pub duration_ps: i64,
}

/// Step-time statistics in milliseconds (XProf overview `steptime_ms_*`).
#[derive(serde::Deserialize, Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StepTimeStats {
    pub mean: f64,
    /// Sample standard deviation (n-1); 0 when `n < 2`.
    pub stddev: f64,
    pub n: usize,
}

/// The steps of one capture.
#[derive(serde::Deserialize, Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StepReport {
    pub source: StepSource,
    /// Sorted by start time.
    pub steps: Vec<Step>,
    pub step_time_ms: StepTimeStats,
}

#[derive(Clone, Copy)]
struct Span {
    start: i128,
    dur: i64,
}

impl Span {
    fn end(self) -> i128 {
        self.start + i128::from(self.dur)
    }
    fn includes(self, other: Span) -> bool {
        self.start <= other.start && other.end() <= self.end()
    }
}

#[derive(Default)]
struct Group {
    device: Option<Span>,
    host: Option<Span>,
    host_step_num: Option<i64>,
    device_step_num: Option<i64>,
    group_id: Option<i64>,
}

fn keep_longest(slot: &mut Option<Span>, span: Span) {
    if slot.is_none_or(|s| span.dur > s.dur) {
        *slot = Some(span);
    }
}

fn int_stat(plane: &XPlane, event: &XEvent, name: &str) -> Option<i64> {
    plane.event_stat(event, name)?.value.as_i64()
}

fn span_of(line: &XLine, event: &XEvent) -> Span {
    Span { start: line.event_start_ps(event), dur: event.duration_ps.max(0) }
}

/// XProf `IsExplicitHostStepMarker`.
fn is_host_step_marker_name(name: &str) -> bool {
    (name.starts_with("train") || name.starts_with("test") || name.starts_with("TraceContext")) && !name.contains('/')
}

/// Key of a group: a group id, or (for ungrouped host markers) a unique ordinal.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Group(i64),
    Lone(usize),
}

fn device_planes(space: &XSpace) -> Vec<&XPlane> {
    let tpu: Vec<&XPlane> = space.planes_with_prefix("/device:TPU:").collect();
    if !tpu.is_empty() {
        return tpu;
    }
    space.planes_with_prefix("/device:").filter(|p| !p.name.starts_with("/device:TPU:")).collect()
}

/// Finds the steps of `space` (see the module docs for the rules).
pub fn detect_steps(space: &XSpace) -> StepReport {
    let mut groups: BTreeMap<Key, Group> = BTreeMap::new();
    let mut any_device = false;

    for plane in device_planes(space) {
        for line in plane.lines.iter().filter(|l| l.name == STEPS_LINE) {
            for event in &line.events {
                let Some(gid) = int_stat(plane, event, "group_id") else {
                    continue;
                };
                any_device = true;
                let g = groups.entry(Key::Group(gid)).or_default();
                g.group_id = Some(gid);
                keep_longest(&mut g.device, span_of(line, event));
                if g.device_step_num.is_none() {
                    g.device_step_num = plane
                        .event_stat(event, "step_name")
                        .and_then(|s| plane.stat_str(s))
                        .and_then(|s| s.trim().parse().ok());
                }
            }
        }
    }

    let mut lone = 0usize;
    if let Some(plane) = space.plane_by_name(HOST_CPU_PLANE) {
        for line in &plane.lines {
            if DERIVED_LINE_SUFFIXES.iter().any(|s| line.name.ends_with(s)) {
                continue;
            }
            for event in &line.events {
                if !is_host_step_marker_name(plane.event_name(event)) {
                    continue;
                }
                let gid = int_stat(plane, event, "group_id");
                let root = int_stat(plane, event, "_r").is_some_and(|r| r != 0);
                let step_num = int_stat(plane, event, "step_num");
                if gid.is_none() && !root && step_num.is_none() {
                    continue;
                }
                let key = match gid {
                    Some(g) => Key::Group(g),
                    None => {
                        lone += 1;
                        Key::Lone(lone)
                    }
                };
                let span = span_of(line, event);
                let g = groups.entry(key).or_default();
                g.group_id = gid;
                if g.host.is_none_or(|h| span.dur > h.dur) {
                    g.host = Some(span);
                    if step_num.is_some() {
                        g.host_step_num = step_num;
                    }
                }
                if g.host_step_num.is_none() {
                    g.host_step_num = step_num;
                }
            }
        }
    }

    let source = if any_device {
        StepSource::DeviceStepsLine
    } else if !groups.is_empty() {
        StepSource::HostStepAnnotations
    } else {
        StepSource::None
    };

    let mut steps: Vec<(Span, Option<i64>)> = groups
        .into_values()
        .filter(|g| !any_device || g.device.is_some())
        .filter_map(|g| {
            let span = match (g.device, g.host) {
                (Some(d), Some(h)) if h.includes(d) => h,
                (Some(d), _) => d,
                (None, h) => h?,
            };
            Some((span, g.host_step_num.or(g.device_step_num).or(g.group_id)))
        })
        .collect();
    steps.sort_by_key(|(s, _)| (s.start, s.dur));
    let steps: Vec<Step> = steps
        .into_iter()
        .enumerate()
        .map(|(i, (span, num))| Step { step_num: num.unwrap_or(i as i64), start_ps: span.start, duration_ps: span.dur })
        .collect();

    StepReport { source, step_time_ms: step_time_stats(&steps), steps }
}

/// The device's time in each step, when the steps come from host markers: from the first device event that
/// starts in the step (its span, before the next step starts) to the last one's end, per step — the time the
/// accelerator took for the step's work, where the host step also counts launching it and waiting. `None`
/// when the steps are the device's own (`Steps` lines: the step time is already the device's) or no device
/// event falls in a step.
pub fn device_step_times(space: &XSpace, steps: &StepReport) -> Option<StepTimeStats> {
    if steps.source != StepSource::HostStepAnnotations || steps.steps.is_empty() {
        return None;
    }
    let mut first: Vec<Option<i128>> = vec![None; steps.steps.len()];
    let mut last: Vec<i128> = vec![i128::MIN; steps.steps.len()];
    let starts: Vec<i128> = steps.steps.iter().map(|s| s.start_ps).collect();
    for plane in device_planes(space) {
        for line in plane.lines.iter().filter(|l| !DERIVED_LINE_SUFFIXES.iter().any(|s| l.name.ends_with(s))) {
            if line.name == STEPS_LINE || line.name.starts_with("XLA ") {
                continue;
            }
            for event in &line.events {
                let span = span_of(line, event);
                let i = starts.partition_point(|&s| s <= span.start);
                let Some(k) = i.checked_sub(1) else { continue };
                let step = &steps.steps[k];
                if span.start >= step.start_ps + i128::from(step.duration_ps) {
                    continue;
                }
                first[k] = Some(first[k].map_or(span.start, |f| f.min(span.start)));
                last[k] = last[k].max(span.end());
            }
        }
    }
    let device: Vec<Step> = steps
        .steps
        .iter()
        .enumerate()
        .filter_map(|(k, s)| {
            let f = first[k]?;
            Some(Step { step_num: s.step_num, start_ps: f, duration_ps: i64::try_from(last[k] - f).ok()? })
        })
        .collect();
    (!device.is_empty()).then(|| step_time_stats(&device))
}

pub(crate) fn step_time_stats(steps: &[Step]) -> StepTimeStats {
    let n = steps.len();
    if n == 0 {
        return StepTimeStats::default();
    }
    let ms: Vec<f64> = steps.iter().map(|s| s.duration_ps as f64 / 1e9).collect();
    let mean = ms.iter().sum::<f64>() / n as f64;
    let stddev = if n < 2 { 0.0 } else { (ms.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt() };
    StepTimeStats { mean, stddev, n }
}
