//! Host activity beside the device: which host threads belong to a device, when the host is busy,
//! and the host-bound check.
//!
//! # Definitions
//!
//! * A host thread belongs to a device when their `host` strings are equal or either is empty
//!   (single-host traces leave them empty).
//! * The host is **busy** at an instant when a *working* event of one of those threads runs (nested
//!   events count once). Not working:
//!   - **wrappers**: a host event whose span is exactly a host step marker's (JAX's `train`
//!     `StepTraceAnnotation`, `ProfilerStep#N`), or that encloses a whole step window of the device
//!     (a profiler session span such as PyTorch's `PyTorch Profiler (0)`, an outer training loop):
//!     they run through every device gap and would make each one "host busy";
//!   - **waits**: the event name contains `wait`, case-insensitive (`ThunkExecutor::Execute (wait
//!     for completion)`, `cudaStreamWaitEvent`): the host is waiting, typically on the device.
//! * **Device waits on the host** = the device's `host_wait` time (its own `HostWait` events, see
//!   [`super::breakdown`]) + its `idle` time during which the host is busy. Idle time with the host
//!   also idle is neither (nobody runs: e.g. the gap between two profiled calls).
//! * `fraction` = device-waits-on-host / step time, over the union of the device's step windows;
//!   over several devices, the sums over devices are divided (the µs fields are means over devices).
//! * Verdict: `host_bound` when `fraction >= 0.20` ([`HOST_BOUND_THRESHOLD`]), `partly_host_bound`
//!   when `fraction >= 0.05` ([`PARTLY_HOST_BOUND_THRESHOLD`]), else `not_host_bound`.
//! * Evidence: working host events ranked by their overlap with the device's idle time in the step windows
//!   (aggregated by thread and event name; nested events each count; over several devices, the mean
//!   over devices).

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::sweep::{merge, overlap_with, us};
use crate::timeline::{Device, Event, HostThread, Timeline};

/// `fraction` at or above which the device is host bound.
pub const HOST_BOUND_THRESHOLD: f64 = 0.20;
/// `fraction` at or above which the device is partly host bound.
pub const PARTLY_HOST_BOUND_THRESHOLD: f64 = 0.05;

/// The host-bound verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HostVerdict {
    HostBound,
    PartlyHostBound,
    NotHostBound,
}

impl HostVerdict {
    /// The verdict for a fraction (see the module doc).
    pub fn of(fraction: f64) -> HostVerdict {
        if fraction >= HOST_BOUND_THRESHOLD {
            HostVerdict::HostBound
        } else if fraction >= PARTLY_HOST_BOUND_THRESHOLD {
            HostVerdict::PartlyHostBound
        } else {
            HostVerdict::NotHostBound
        }
    }
}

/// A host event (aggregated by thread and name) seen while the device was idle.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostEvidence {
    pub thread: String,
    pub name: String,
    /// Overlap with device idle time, µs.
    pub overlap_us: f64,
    /// Events of that name on that thread that overlap device idle time.
    pub count: usize,
}

/// The host-bound check (one device, or all devices together).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostBound {
    /// (host_wait_us + idle_host_busy_us) / step_time_us.
    pub fraction: f64,
    pub verdict: HostVerdict,
    pub step_time_us: f64,
    /// The device's own `HostWait` time.
    pub host_wait_us: f64,
    /// Device idle time while a host thread of the device's host is busy.
    pub idle_host_busy_us: f64,
    /// Top host events during device idle time.
    pub evidence: Vec<HostEvidence>,
}

impl HostBound {
    /// From sums over `devices` devices: the fraction divides the sums, the µs fields are means.
    pub(crate) fn new(
        step_time_ps: i64,
        host_wait_ps: i64,
        idle_host_busy_ps: i64,
        devices: usize,
        evidence: Vec<HostEvidence>,
    ) -> Self {
        let fraction =
            if step_time_ps > 0 { (host_wait_ps + idle_host_busy_ps) as f64 / step_time_ps as f64 } else { 0.0 };
        let div = devices.max(1) as f64;
        HostBound {
            fraction,
            verdict: HostVerdict::of(fraction),
            step_time_us: us(step_time_ps) / div,
            host_wait_us: us(host_wait_ps) / div,
            idle_host_busy_us: us(idle_host_busy_ps) / div,
            evidence,
        }
    }
}

/// The host threads that belong to `dev`, with their index in [`Timeline::host_threads`].
pub(crate) fn threads_of<'a>(tl: &'a Timeline, dev: &'a Device) -> impl Iterator<Item = (usize, &'a HostThread)> + 'a {
    tl.host_threads
        .iter()
        .enumerate()
        .filter(move |(_, t)| t.host.is_empty() || dev.host.is_empty() || t.host == dev.host)
}

/// A device's step windows, for "does this span enclose a whole step" in O(log n).
#[derive(Debug, Clone, Default)]
pub(crate) struct StepSpans {
    /// Window starts, sorted.
    starts: Vec<i64>,
    /// `suffix_min_end[i]` = the smallest end among windows `i..`.
    suffix_min_end: Vec<i64>,
}

impl StepSpans {
    pub(crate) fn new(windows: &[(i64, i64)]) -> StepSpans {
        let mut w: Vec<(i64, i64)> = windows.iter().copied().filter(|&(a, b)| b > a).collect();
        w.sort_unstable();
        let mut suffix_min_end = vec![i64::MAX; w.len()];
        let mut min = i64::MAX;
        for (i, &(_, b)) in w.iter().enumerate().rev() {
            min = min.min(b);
            suffix_min_end[i] = min;
        }
        StepSpans { starts: w.iter().map(|&(a, _)| a).collect(), suffix_min_end }
    }

    /// Some window lies within `[start, end)`.
    pub(crate) fn encloses_step(&self, start: i64, end: i64) -> bool {
        let i = self.starts.partition_point(|&a| a < start);
        self.suffix_min_end.get(i).is_some_and(|&min_end| min_end <= end)
    }
}

/// Which host events count as host work (see the module doc).
pub(crate) struct HostView {
    markers: HashSet<(i64, i64)>,
    wait_names: Vec<bool>,
}

impl HostView {
    pub(crate) fn new(tl: &Timeline) -> HostView {
        HostView {
            markers: tl
                .steps
                .iter()
                .filter(|m| m.device.is_none())
                .map(|m| (m.start_ps, m.start_ps.saturating_add(m.dur_ps)))
                .collect(),
            wait_names: tl.names.iter().map(|n| n.to_ascii_lowercase().contains("wait")).collect(),
        }
    }

    /// The event is a host step marker's event.
    pub(crate) fn is_marker(&self, e: &Event) -> bool {
        self.markers.contains(&(e.start_ps, e.end_ps()))
    }

    /// The event's name says it waits.
    pub(crate) fn is_wait(&self, e: &Event) -> bool {
        self.wait_names.get(e.name as usize).copied().unwrap_or(false)
    }

    /// The event wraps steps: a host step marker's event, or one enclosing a whole step window.
    pub(crate) fn is_wrapper(&self, e: &Event, steps: &StepSpans) -> bool {
        self.is_marker(e) || steps.encloses_step(e.start_ps, e.end_ps())
    }

    /// The event counts as host work.
    pub(crate) fn works(&self, e: &Event, steps: &StepSpans) -> bool {
        e.dur_ps > 0 && !self.is_wait(e) && !self.is_wrapper(e, steps)
    }

    /// The union of the working time of `dev`'s host threads.
    pub(crate) fn busy(&self, tl: &Timeline, dev: &Device, steps: &StepSpans) -> Vec<(i64, i64)> {
        merge(
            threads_of(tl, dev)
                .flat_map(|(_, t)| t.events.iter().filter(|e| self.works(e, steps)).map(|e| (e.start_ps, e.end_ps())))
                .collect(),
        )
    }

    /// Per (thread index, name id): overlap (ps) of working host events with `idle`, and their count.
    pub(crate) fn evidence_ps(
        &self,
        tl: &Timeline,
        dev: &Device,
        idle: &[(i64, i64)],
        steps: &StepSpans,
    ) -> HashMap<(usize, u32), (i64, usize)> {
        let mut out: HashMap<(usize, u32), (i64, usize)> = HashMap::new();
        if idle.is_empty() {
            return out;
        }
        for (ti, t) in threads_of(tl, dev) {
            for e in &t.events {
                // The overlap test first: cheaper than `works` (a name test) and rejects most events.
                let o = overlap_with(idle, e.start_ps, e.end_ps());
                if o > 0 && self.works(e, steps) {
                    let entry = out.entry((ti, e.name)).or_insert((0, 0));
                    entry.0 += o;
                    entry.1 += 1;
                }
            }
        }
        out
    }
}

/// Top `n` evidence rows from aggregated overlaps, each divided by `devices` (mean over devices).
pub(crate) fn top_evidence(
    tl: &Timeline,
    agg: HashMap<(usize, u32), (i64, usize)>,
    devices: usize,
    n: usize,
) -> Vec<HostEvidence> {
    let div = devices.max(1) as f64;
    let mut rows: Vec<((usize, u32), (i64, usize))> = agg.into_iter().collect();
    rows.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then_with(|| a.0.cmp(&b.0)));
    rows.into_iter()
        .take(n)
        .map(|((thread, name), (ps, count))| HostEvidence {
            thread: tl.host_threads.get(thread).map_or(String::new(), |t| t.name.clone()),
            name: tl.name(name).to_string(),
            overlap_us: us(ps) / div,
            count,
        })
        .collect()
}
