//! Idle gaps: maximal intervals, inside the union of a device's step windows (adjacent steps merged,
//! so a gap across a step boundary is one gap), during which no event of any class runs on the
//! device (`Module` events do not count). The longest gaps over all devices are reported (ties: the
//! earlier start, then the lower device id), each with the host activity at the same time: the
//! events of the device's host threads ([`super::host`]) that overlap the gap, wrappers (step
//! markers' events, events enclosing a whole step) excluded, the top few by overlap (ties: the shorter event, as the more specific one, since host
//! events nest). Each is tagged with what it does ([`HostActivityKind`]: `work`, `wait`, or on CPU-only
//! traces `device_runtime`), and waits are also flagged `waiting`: a host waiting on the device during a
//! device gap points away from the host as the cause. A gap's idle time with the host working is the
//! breakdown's `host_wait`, the rest its `idle` ([`super::host`]).

use serde::Serialize;

use super::host::{HostActivityKind, HostView, StepSpans};
use super::sweep::us;
use crate::timeline::{Device, Timeline};

/// A host event overlapping an idle gap.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct HostActivity {
    pub thread: String,
    pub name: String,
    pub start_us: f64,
    pub duration_us: f64,
    /// Overlap with the gap, µs.
    pub overlap_us: f64,
    /// `work`, `wait` or `device_runtime` (what the event does, by the rule of [`super::host`]).
    pub activity: HostActivityKind,
    /// The event is a wait (`activity == wait`): the host waits, typically on the device; not host work.
    pub waiting: bool,
}

/// One idle gap of a device.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Gap {
    pub device: u32,
    pub device_name: String,
    /// The step whose window contains the gap's start.
    pub step: Option<i64>,
    pub start_us: f64,
    pub duration_us: f64,
    /// What the device waited for, by the launch of the work that ended the gap ([`super::launch`]):
    /// `host_wait` (launched after the gap began), `kernel_wait` (queued before it); `null` when the trace
    /// records no launch for it.
    pub cause: Option<super::launch::GapCause>,
    pub host_activity: Vec<HostActivity>,
}

/// The host events overlapping `[start, end)`, top `n` by overlap.
pub(crate) fn host_activity(
    tl: &Timeline,
    view: &HostView,
    steps: &StepSpans,
    dev: &Device,
    start: i64,
    end: i64,
    n: usize,
) -> Vec<HostActivity> {
    let mut hits: Vec<(i64, i64, &str, &crate::timeline::Event)> = Vec::new();
    for (_, t) in super::host::threads_of(tl, dev) {
        // Events are sorted by start: only those starting before `end` can overlap.
        let upto = t.events.partition_point(|e| e.start_ps < end);
        for e in &t.events[..upto] {
            // The overlap test first: it rejects nearly every event, and is cheaper than the wrapper test.
            let o = e.end_ps().min(end) - e.start_ps.max(start);
            if o > 0 && !view.is_wrapper(e, steps) {
                hits.push((o, e.dur_ps, t.name.as_str(), e));
            }
        }
    }
    hits.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.3.start_ps.cmp(&b.3.start_ps)));
    hits.into_iter()
        .take(n)
        .map(|(o, dur, thread, e)| {
            let activity = view.kind(e, dev, steps);
            HostActivity {
                thread: thread.to_string(),
                name: tl.name(e.name).to_string(),
                start_us: us(e.start_ps),
                duration_us: us(dur),
                overlap_us: us(o),
                activity,
                waiting: activity == HostActivityKind::Wait,
            }
        })
        .collect()
}
