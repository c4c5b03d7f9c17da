//! Host activity beside the device: which host threads belong to a device, when the host works, and
//! the host-bound check. The rule itself (what counts, the thresholds, the verdict words) is
//! [`falcon_core::bound`]'s; this module applies it to a [`Timeline`].
//!
//! # Definitions
//!
//! * A host thread belongs to a device when their `host` strings are equal or either is empty
//!   (single-host traces leave them empty).
//! * **Innermost event.** Host events nest (a Python frame, the `PjitFunction` it calls, the wait inside
//!   that). At each instant a thread is doing what its *innermost* running event says: of the events
//!   running then, the one that started last (ties: the one that ends first). Events of zero duration
//!   are ignored.
//! * The host **works** at an instant when, on one of the device's threads, the innermost event is a
//!   *working* event. Not working:
//!   - **waits** ([`is_wait_name`]): the name contains `wait` (`ThunkExecutor::Execute (wait for
//!     completion)`, `cudaStreamWaitEvent`, `SlinkyThreadPool::Await`), `block_until_ready`,
//!     `BlockHostUntilReady` or `synchroniz`/`synchronis` (`cudaStreamSynchronize`,
//!     `torch.cuda.synchronize`), case-insensitive: the host waits on the device. Because the
//!     innermost event decides, a wait also masks the frames around it: a Python frame blocked in
//!     `block_until_ready` is not host work;
//!   - **wrappers**: a host event whose span is exactly a host step marker's (JAX's `train`
//!     `StepTraceAnnotation`, `ProfilerStep#N`), or that encloses a whole step window of the device
//!     (a profiler session span such as PyTorch's `PyTorch Profiler (0)`, an outer training loop):
//!     they run through every device gap and would make each one "host busy";
//!   - **the device's own runtime** ([`is_cpu_runtime_name`], CPU-only traces, where the device is
//!     the XLA:CPU executor threads): `ThunkExecutor::…`, `ThreadpoolListener::…`,
//!     `SlinkyThreadPool::…` events and `end: …` markers are XLA:CPU scheduling its own thunks on
//!     its threads, not host work the device waits for.
//! * **Device waits on the host** = the device's own `HostWait` events (see [`super::breakdown`])
//!   plus its idle time during which the host works. That is the breakdown's `host_wait`:
//!   [`super::analyze_trace`] moves idle time with the host working from `idle` to `host_wait`, so
//!   both the breakdown and this check read the same numbers. Idle time with the host not working
//!   (idle, or waiting on the device) stays `idle`.
//! * `fraction` = device-waits-on-host / step time = `host_wait / duration` summed over the device's
//!   steps; over several devices, the sums over devices are divided (the µs fields are means over
//!   devices), i.e. `total.host_wait_us / total.duration_us` of the report.
//! * Verdict: [`HostVerdict::of`] (`host` at ≥ 20 %, `partly_host` at ≥ 5 %, else `not_host`), and
//!   `bound_by` the [`BoundBy`] it names (`null` when not host-bound).
//! * Evidence: the working host events ranked by their *innermost* time during the device's idle time
//!   in the step windows (aggregated by thread and event name; an instant of a thread counts for its
//!   innermost event only; over several devices, the mean over devices).

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use falcon_core::bound::BoundBy;
pub use falcon_core::bound::{HostVerdict, HOST_BOUND_THRESHOLD, PARTLY_HOST_BOUND_THRESHOLD};
use serde::Serialize;

use super::sweep::{merge, overlap_with, us};
use crate::timeline::{Device, DeviceKind, Event, HostThread, Timeline};

/// The name says the host waits (see the module doc).
pub fn is_wait_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["wait", "block_until_ready", "blockhostuntilready", "synchroniz", "synchronis"].iter().any(|w| n.contains(w))
}

/// The name is XLA:CPU's own runtime scheduling its thunks (see the module doc).
pub fn is_cpu_runtime_name(name: &str) -> bool {
    ["ThunkExecutor::", "ThreadpoolListener::", "SlinkyThreadPool::", "end: "].iter().any(|p| name.starts_with(p))
}

/// A host event (aggregated by thread and name) seen while the device was idle.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct HostEvidence {
    pub thread: String,
    pub name: String,
    /// Its innermost time during device idle time, µs.
    pub overlap_us: f64,
    /// Events of that name on that thread that were innermost during device idle time.
    pub count: usize,
}

/// The host-bound check (one device, or all devices together).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct HostBound {
    /// `host_wait_us / step_time_us`.
    pub fraction: f64,
    /// `host`, `partly_host` or `not_host`.
    pub verdict: HostVerdict,
    /// The bound the verdict names (`host`, `partly_host`), `null` when not host-bound.
    pub bound_by: Option<BoundBy>,
    pub step_time_us: f64,
    /// Time the device waits on the host: the breakdown's `host_wait_us` over the same steps
    /// (`device_wait_us + idle_host_busy_us`).
    pub host_wait_us: f64,
    /// The part of it in the device's own `HostWait` events.
    pub device_wait_us: f64,
    /// The part of it where the device is idle while a host thread of its host works.
    pub idle_host_busy_us: f64,
    /// Top host events during device idle time.
    pub evidence: Vec<HostEvidence>,
}

impl HostBound {
    /// From sums over `devices` devices: the fraction divides the sums, the µs fields are means.
    pub(crate) fn new(
        step_time_ps: i64,
        device_wait_ps: i64,
        idle_host_busy_ps: i64,
        devices: usize,
        evidence: Vec<HostEvidence>,
    ) -> Self {
        let wait_ps = device_wait_ps + idle_host_busy_ps;
        let fraction = if step_time_ps > 0 { wait_ps as f64 / step_time_ps as f64 } else { 0.0 };
        let div = devices.max(1) as f64;
        let verdict = HostVerdict::of(fraction);
        HostBound {
            fraction,
            verdict,
            bound_by: verdict.bound_by(),
            step_time_us: us(step_time_ps) / div,
            host_wait_us: us(wait_ps) / div,
            device_wait_us: us(device_wait_ps) / div,
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

/// What an innermost host event is doing (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HostActivityKind {
    /// Host work the device may wait for (input, dispatch).
    Work,
    /// The host waits, typically on the device.
    Wait,
    /// Wraps whole steps (a step marker's event, a profiler session, an outer loop).
    Wrapper,
    /// The device's own runtime on a CPU-only trace (XLA:CPU scheduling its thunks).
    DeviceRuntime,
}

/// The innermost working time of a device's host threads: segments `(start, end, thread index, event
/// index in that thread)`, each where that working event is its thread's innermost, sorted by start.
pub(crate) struct HostWork {
    pub segments: Vec<(i64, i64, usize, usize)>,
    /// The union of the segments (sorted, disjoint).
    pub busy: Vec<(i64, i64)>,
}

/// Which host events count as host work.
pub(crate) struct HostView {
    markers: HashSet<(i64, i64)>,
    wait_names: Vec<bool>,
    runtime_names: Vec<bool>,
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
            wait_names: tl.names.iter().map(|n| is_wait_name(n)).collect(),
            runtime_names: tl.names.iter().map(|n| is_cpu_runtime_name(n)).collect(),
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

    /// What the event does, beside device `dev`.
    pub(crate) fn kind(&self, e: &Event, dev: &Device, steps: &StepSpans) -> HostActivityKind {
        if self.is_wait(e) {
            HostActivityKind::Wait
        } else if self.is_wrapper(e, steps) {
            HostActivityKind::Wrapper
        } else if dev.kind == DeviceKind::CpuExecutor
            && self.runtime_names.get(e.name as usize).copied().unwrap_or(false)
        {
            HostActivityKind::DeviceRuntime
        } else {
            HostActivityKind::Work
        }
    }

    /// The innermost working time of `dev`'s host threads.
    pub(crate) fn work(&self, tl: &Timeline, dev: &Device, steps: &StepSpans) -> HostWork {
        let mut segments: Vec<(i64, i64, usize, usize)> = Vec::new();
        for (ti, t) in threads_of(tl, dev) {
            for (a, b, ei) in innermost_segments(&t.events) {
                if self.kind(&t.events[ei], dev, steps) == HostActivityKind::Work {
                    segments.push((a, b, ti, ei));
                }
            }
        }
        segments.sort_unstable();
        let busy = merge(segments.iter().map(|&(a, b, _, _)| (a, b)).collect());
        HostWork { segments, busy }
    }

    /// Per (thread index, name id): the innermost working time (ps) within `idle`, and the number of
    /// events it comes from.
    pub(crate) fn evidence_ps(
        &self,
        tl: &Timeline,
        work: &HostWork,
        idle: &[(i64, i64)],
    ) -> HashMap<(usize, u32), (i64, usize)> {
        let mut out: HashMap<(usize, u32), (i64, usize)> = HashMap::default();
        if idle.is_empty() {
            return out;
        }
        let mut seen: HashSet<(usize, usize)> = HashSet::default();
        for &(a, b, ti, ei) in &work.segments {
            let o = overlap_with(idle, a, b);
            if o > 0 {
                let name = tl.host_threads[ti].events[ei].name;
                let entry = out.entry((ti, name)).or_insert((0, 0));
                entry.0 += o;
                if seen.insert((ti, ei)) {
                    entry.1 += 1;
                }
            }
        }
        out
    }
}

/// The innermost event of a thread over time: `(start, end, event index)` segments, disjoint, in time
/// order. The innermost event at an instant is the running event that started last (ties: the one that
/// ends first, then the later index); zero-length events are ignored. Works on any overlap, nested or
/// not.
pub(crate) fn innermost_segments(events: &[Event]) -> Vec<(i64, i64, usize)> {
    let mut order: Vec<usize> = (0..events.len()).filter(|&i| events[i].dur_ps > 0).collect();
    order.sort_unstable_by_key(|&i| (events[i].start_ps, std::cmp::Reverse(events[i].end_ps()), i));
    let mut out: Vec<(i64, i64, usize)> = Vec::new();
    let mut stack: Vec<usize> = Vec::new();
    let mut t = i64::MIN;
    for i in order {
        advance_innermost(events, events[i].start_ps, &mut stack, &mut t, &mut out);
        stack.push(i);
    }
    advance_innermost(events, i64::MAX, &mut stack, &mut t, &mut out);
    out
}

/// [`innermost_segments`]' sweep: emits the innermost segments from `t` up to `to` (the top of `stack` is
/// the innermost running event; events that ended are popped when they surface).
fn advance_innermost(events: &[Event], to: i64, stack: &mut Vec<usize>, t: &mut i64, out: &mut Vec<(i64, i64, usize)>) {
    loop {
        while stack.last().is_some_and(|&top| events[top].end_ps() <= *t) {
            stack.pop();
        }
        let Some(&top) = stack.last() else {
            *t = (*t).max(to);
            return;
        };
        let seg_end = events[top].end_ps().min(to);
        if seg_end > *t {
            match out.last_mut() {
                Some(last) if last.2 == top && last.1 == *t => last.1 = seg_end,
                _ => out.push((*t, seg_end, top)),
            }
        }
        *t = (*t).max(seg_end);
        if seg_end >= to {
            return;
        }
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

#[cfg(test)]
mod tests {
    use super::innermost_segments;
    use crate::timeline::{Event, EventClass};

    fn ev(start: i64, dur: i64) -> Event {
        Event { start_ps: start, dur_ps: dur, name: 0, class: EventClass::Other }
    }

    #[test]
    fn innermost_event_follows_nesting_and_overlap() {
        // 0: 0..100 frame; 1: 10..40 inside it; 2: 20..30 inside 1; 3: 35..60 overlaps 1's end; 4: empty.
        let events = [ev(0, 100), ev(10, 30), ev(20, 10), ev(35, 25), ev(50, 0)];
        let segs = innermost_segments(&events);
        assert_eq!(segs, vec![(0, 10, 0), (10, 20, 1), (20, 30, 2), (30, 35, 1), (35, 60, 3), (60, 100, 0)]);
        // Ties on start: the shorter event is the inner one.
        assert_eq!(innermost_segments(&[ev(0, 10), ev(0, 4)]), vec![(0, 4, 1), (4, 10, 0)]);
        assert!(innermost_segments(&[]).is_empty());
        // Disjoint events with a hole between them.
        assert_eq!(innermost_segments(&[ev(0, 5), ev(10, 5)]), vec![(0, 5, 0), (10, 15, 1)]);
    }
}
