//! Step detection, per device. The first rule that yields a step wins:
//!
//! 1. **Device markers** (`device_markers`): the timeline's step markers whose `device` is this
//!    device (a device `Steps` line). Each marker is one step `[start, start + dur)`.
//! 2. **Host markers** (`host_markers`): markers with `device: None` apply to every device of their host (of
//!    every host when the marker names none). When
//!    both `ProfilerStep#N` markers and other host annotations exist, only the `ProfilerStep` ones
//!    are used (annotations may nest inside them).
//! 3. **Module executions** (`module_executions`): the module name executed most often among the
//!    device's `modules` (ties: the larger total duration, then the earlier first execution). Each
//!    execution starts a step that lasts until the next execution of that module starts; the last
//!    one lasts until its own end. Steps are numbered 0, 1, … in execution order.
//! 4. **Whole trace** (`whole_trace`): one step 0 spanning the whole timeline (earliest start to
//!    latest end over all device, module and host events), with a note.
//!
//! Markers with a negative duration are dropped; markers are sorted by start, exact duplicates
//! (same step and span) dropped.

use serde::Serialize;

use crate::timeline::{Device, StepMarker, StepSource, Timeline};

/// Which rule gave a device its steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepRule {
    DeviceMarkers,
    HostMarkers,
    ModuleExecutions,
    WholeTrace,
    /// Top-level summary only: devices used different rules.
    Mixed,
    /// No events at all: no steps.
    None,
}

/// One step window of one device, in picoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepWindow {
    pub step: i64,
    pub start_ps: i64,
    pub end_ps: i64,
}

/// What step detection found for one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetectedSteps {
    pub rule: StepRule,
    /// For `ModuleExecutions`: the module and how often it ran.
    pub module: Option<String>,
    pub module_executions: Option<usize>,
    pub windows: Vec<StepWindow>,
}

/// Detects the steps of `dev` (see the module doc for the rules).
pub fn detect_steps(tl: &Timeline, dev: &Device) -> DetectedSteps {
    let own: Vec<&StepMarker> = tl.steps.iter().filter(|m| m.device == Some(dev.id)).collect();
    if let Some(windows) = from_markers(&own) {
        return DetectedSteps { rule: StepRule::DeviceMarkers, module: None, module_executions: None, windows };
    }
    // A host's markers are its devices' (on a run of several hosts, another host's steps are not this device's).
    let host: Vec<&StepMarker> =
        tl.steps.iter().filter(|m| m.device.is_none() && m.host.is_none_or(|h| tl.name(h) == dev.host)).collect();
    let profiler: Vec<&StepMarker> = host.iter().copied().filter(|m| m.source == StepSource::ProfilerStep).collect();
    let host = if profiler.is_empty() { host } else { profiler };
    if let Some(windows) = from_markers(&host) {
        return DetectedSteps { rule: StepRule::HostMarkers, module: None, module_executions: None, windows };
    }
    if let Some((name, count, windows)) = from_modules(tl, dev) {
        return DetectedSteps {
            rule: StepRule::ModuleExecutions,
            module: Some(name),
            module_executions: Some(count),
            windows,
        };
    }
    match trace_span(tl) {
        Some((start_ps, end_ps)) => DetectedSteps {
            rule: StepRule::WholeTrace,
            module: None,
            module_executions: None,
            windows: vec![StepWindow { step: 0, start_ps, end_ps }],
        },
        None => DetectedSteps { rule: StepRule::None, module: None, module_executions: None, windows: Vec::new() },
    }
}

fn from_markers(markers: &[&StepMarker]) -> Option<Vec<StepWindow>> {
    let mut w: Vec<StepWindow> = markers
        .iter()
        .filter(|m| m.dur_ps >= 0)
        .map(|m| StepWindow { step: m.step, start_ps: m.start_ps, end_ps: m.start_ps.saturating_add(m.dur_ps) })
        .collect();
    w.sort_by_key(|s| (s.start_ps, s.end_ps, s.step));
    w.dedup();
    (!w.is_empty()).then_some(w)
}

fn from_modules(tl: &Timeline, dev: &Device) -> Option<(String, usize, Vec<StepWindow>)> {
    // name id -> (count, total duration, first start)
    let mut stats: std::collections::HashMap<u32, (usize, i64, i64)> = std::collections::HashMap::new();
    for m in &dev.modules {
        let e = stats.entry(m.name).or_insert((0, 0, m.start_ps));
        e.0 += 1;
        e.1 = e.1.saturating_add(m.dur_ps.max(0));
        e.2 = e.2.min(m.start_ps);
    }
    let (&best, _) = stats.iter().max_by(|a, b| {
        let (ca, da, fa) = a.1;
        let (cb, db, fb) = b.1;
        ca.cmp(cb).then(da.cmp(db)).then(fb.cmp(fa)).then(b.0.cmp(a.0))
    })?;
    let mut execs: Vec<(i64, i64)> =
        dev.modules.iter().filter(|m| m.name == best).map(|m| (m.start_ps, m.end_ps().max(m.start_ps))).collect();
    execs.sort_unstable();
    let windows = execs
        .iter()
        .enumerate()
        .map(|(i, &(start, end))| {
            let end = execs.get(i + 1).map_or(end, |next| next.0);
            StepWindow { step: i as i64, start_ps: start, end_ps: end }
        })
        .collect();
    Some((tl.name(best).to_string(), execs.len(), windows))
}

/// Earliest start and latest end over every event of the timeline.
pub(crate) fn trace_span(tl: &Timeline) -> Option<(i64, i64)> {
    let dev = tl.devices.iter().flat_map(|d| d.events.iter().chain(d.modules.iter()));
    let host = tl.host_threads.iter().flat_map(|t| t.events.iter());
    let mut span: Option<(i64, i64)> = None;
    for e in dev.chain(host) {
        let (a, b) = (e.start_ps, e.end_ps().max(e.start_ps));
        span = Some(match span {
            None => (a, b),
            Some((lo, hi)) => (lo.min(a), hi.max(b)),
        });
    }
    span
}
