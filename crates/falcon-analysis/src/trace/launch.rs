//! Host wait by the launch: what each idle gap of a device waited for, from the launch call of the work that
//! ended it (HTA's rule, `get_idle_time_breakdown`, applied per device and per stream).
//!
//! # The rule
//!
//! A device is *idle* where none of its events runs. Each idle gap `[g0, g1)` ends when the next event starts,
//! at `g1`. When the trace records how that event was launched ([`crate::timeline::Launch`]: PyTorch's
//! `cudaLaunchKernel` / `cuLaunchKernel` / `cudaMemcpyAsync` / `cudaGraphLaunch` calls and XSpace's host events,
//! matched by correlation id), the gap is:
//!
//! - **host wait** when that call started after the gap began (`launch_ps > g0`): the device had nothing queued,
//!   and waited for the host to launch the next work — whatever the host was doing, traced or not (an untraced
//!   `time.sleep` in an input pipeline is host wait);
//! - **kernel wait** when it was launched before the gap began: the work was queued but did not start — a
//!   dependency, an event wait, a synchronisation; it stays idle (`idle_kernel_wait_us` says how much).
//!
//! When several events start at `g1` (several streams), the gap is host wait if any of them was launched after
//! `g0`. A gap whose ending event has no known launch (none recorded, or the gap runs to the end of the trace)
//! falls back to the host-activity rule of [`super::host`]: its time while the host works is host wait.
//! A gap before the device's first event ends in work launched after it began, by definition: host wait.
//!
//! Per stream, the same rule over each stream's own events: a stream is idle where none of *its* events runs,
//! and the gap before each event is host wait when the event's launch call started after the previous event on
//! that stream ended, else kernel wait. HTA splits its third category off this (`other`: gaps longer than its
//! `consecutive_kernel_delay`, 30 of the trace's µs although documented as ns); Falcon calls a gap by its launch
//! alone.

use serde::Serialize;

use super::sweep::{us, Segment};
use crate::timeline::Device;

/// Which rule decided a device's host wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HostWaitRule {
    /// Gaps are host wait when the work that ended them was launched after they began (launch calls known).
    Launch,
    /// Idle time is host wait while a host thread works (no launch calls in the trace: TPU, CPU, traces
    /// without CUDA runtime events).
    HostActivity,
}

/// What an idle gap waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GapCause {
    /// The work that ended it was launched after it began.
    HostWait,
    /// The work that ended it was launched before it began.
    KernelWait,
}

impl ClassifiedGaps {
    /// The cause of the gap that contains `t`, when its launch is known.
    pub(crate) fn cause_at(&self, t: i64) -> Option<GapCause> {
        let within = |list: &[(i64, i64)]| {
            let i = list.partition_point(|&(a, _)| a <= t);
            i > 0 && t < list[i - 1].1
        };
        if within(&self.host) {
            Some(GapCause::HostWait)
        } else if within(&self.kernel) {
            Some(GapCause::KernelWait)
        } else {
            None
        }
    }
}

/// A device's idle gaps, classified (sorted, disjoint lists; their union is every idle gap of the device over
/// the whole trace).
#[derive(Debug, Clone, Default)]
pub(crate) struct ClassifiedGaps {
    /// Ended by work launched after the gap began.
    pub host: Vec<(i64, i64)>,
    /// Ended by work launched before the gap began.
    pub kernel: Vec<(i64, i64)>,
    /// The ending work's launch is unknown (or no work ends the gap): the host-activity rule decides.
    pub unknown: Vec<(i64, i64)>,
}

/// Classifies every idle gap of `dev` (whose busy segments are `segs`) by its launch; `None` when the device
/// records no launch calls.
pub(crate) fn classify_gaps(dev: &Device, segs: &[Segment]) -> Option<ClassifiedGaps> {
    if dev.launches.len() != dev.events.len() || dev.launches.iter().all(|l| l.launch_ps.is_none()) {
        return None;
    }
    let mut out = ClassifiedGaps::default();
    // Busy segments are sorted and disjoint; gaps lie between them (and before the first one).
    let mut gaps: Vec<(i64, i64)> = Vec::with_capacity(segs.len() + 1);
    let mut prev_end = i64::MIN;
    for s in segs {
        if s.start > prev_end {
            gaps.push((prev_end, s.start));
        }
        prev_end = prev_end.max(s.end);
    }
    let tail = (prev_end, i64::MAX);
    // Events are sorted by start: the ones starting at a gap's end are found by binary search.
    for (g0, g1) in gaps {
        let first = dev.events.partition_point(|e| e.start_ps < g1);
        let mut known = false;
        let mut late = false;
        for (i, e) in dev.events.iter().enumerate().skip(first) {
            if e.start_ps != g1 {
                break;
            }
            if e.dur_ps <= 0 {
                continue;
            }
            if let Some(t) = dev.launches.get(i).and_then(|l| l.launch_ps) {
                known = true;
                late |= g0 == i64::MIN || t > g0;
            }
        }
        let list = match (known, late) {
            (true, true) => &mut out.host,
            (true, false) => &mut out.kernel,
            (false, _) => &mut out.unknown,
        };
        list.push((g0, g1));
    }
    if tail.0 != i64::MIN {
        out.unknown.push(tail);
    }
    Some(out)
}

/// One stream's idle time over the steps, by its launches.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StreamIdle {
    /// The stream id (PyTorch `stream`; XSpace the stream line's id).
    pub stream: i64,
    /// Events on the stream within the steps.
    pub events: usize,
    /// Time an event of this stream runs, µs (summed over the device's steps).
    pub busy_us: f64,
    /// Time it runs none, µs.
    pub idle_us: f64,
    /// Idle time before an event launched after the stream's previous event ended, µs.
    pub host_wait_us: f64,
    /// Idle time before an event launched while the previous one still ran, µs.
    pub kernel_wait_us: f64,
    /// Idle time with no following event on the stream in the window, or whose launch is unknown, µs.
    pub other_us: f64,
}

/// Per stream, over `windows` (sorted, disjoint): each stream's busy and idle time and the idle split by the
/// launch of the event that ends each gap (see the module doc). Empty when launches are not recorded.
pub(crate) fn stream_idle(dev: &Device, windows: &[(i64, i64)]) -> Vec<StreamIdle> {
    if dev.launches.len() != dev.events.len() || dev.launches.is_empty() {
        return Vec::new();
    }
    let mut streams: std::collections::BTreeMap<i64, Vec<usize>> = std::collections::BTreeMap::new();
    for (i, l) in dev.launches.iter().enumerate() {
        if let Some(s) = l.stream {
            if dev.events[i].dur_ps > 0 {
                streams.entry(s).or_default().push(i);
            }
        }
    }
    let mut out = Vec::new();
    for (stream, idx) in streams {
        let mut row = StreamIdle {
            stream,
            events: 0,
            busy_us: 0.0,
            idle_us: 0.0,
            host_wait_us: 0.0,
            kernel_wait_us: 0.0,
            other_us: 0.0,
        };
        let (mut busy, mut host, mut kernel, mut other, mut duration) = (0i64, 0i64, 0i64, 0i64, 0i64);
        for &(w0, w1) in windows {
            duration += w1 - w0;
            // The stream's events are sorted by start; `cursor` is the end of the work run so far.
            let mut cursor = i64::MIN;
            let mut prev_end = i64::MIN;
            for &i in &idx {
                let e = &dev.events[i];
                let (a, b) = (e.start_ps, e.end_ps());
                if b <= w0 {
                    prev_end = prev_end.max(b);
                    continue;
                }
                if a >= w1 {
                    break;
                }
                row.events += 1;
                let gap_start = prev_end.max(w0).max(cursor);
                if a > gap_start {
                    let len = a - gap_start;
                    match dev.launches[i].launch_ps {
                        Some(t) if prev_end == i64::MIN || t > prev_end => host += len,
                        Some(_) => kernel += len,
                        None => other += len,
                    }
                }
                let run_start = a.max(w0).max(cursor);
                let run_end = b.min(w1);
                if run_end > run_start {
                    busy += run_end - run_start;
                }
                cursor = cursor.max(run_end);
                prev_end = prev_end.max(b);
            }
            let tail_start = cursor.max(w0);
            if w1 > tail_start {
                other += w1 - tail_start;
            }
        }
        row.busy_us = us(busy);
        row.idle_us = us(duration - busy);
        row.host_wait_us = us(host);
        row.kernel_wait_us = us(kernel);
        row.other_us = us(other);
        out.push(row);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{DeviceKind, Event, EventClass, Launch};

    fn device(events: &[(i64, i64, Option<i64>, i64)]) -> Device {
        Device {
            id: 0,
            name: "GPU 0".into(),
            kind: DeviceKind::Gpu,
            host: String::new(),
            events: events
                .iter()
                .map(|&(s, d, _, _)| Event { start_ps: s, dur_ps: d, name: 0, class: EventClass::Compute })
                .collect(),
            modules: Vec::new(),
            launches: events
                .iter()
                .map(|&(_, _, launch, stream)| Launch { launch_ps: launch, stream: Some(stream), ..Launch::default() })
                .collect(),
            collectives: Vec::new(),
        }
    }

    #[test]
    fn a_gap_is_host_wait_when_the_next_work_was_launched_after_it_began() {
        // 0..10 runs; 10..40 idle, the next kernel launched at 30 (after the gap began): host wait.
        // 50..60 idle, the next kernel launched at 5 (queued long before): kernel wait.
        let dev = device(&[(0, 10, Some(0), 7), (40, 10, Some(30), 7), (60, 10, Some(5), 7)]);
        let segs = super::super::sweep::segments(&dev.events);
        let g = classify_gaps(&dev, &segs).unwrap();
        assert_eq!(g.host, vec![(i64::MIN, 0), (10, 40)]);
        assert_eq!(g.kernel, vec![(50, 60)]);
        assert_eq!(g.unknown, vec![(70, i64::MAX)], "nothing ends the last gap");
        let rows = stream_idle(&dev, &[(0, 100)]);
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!((r.events, r.busy_us, r.idle_us), (3, 30.0 / 1e6, 70.0 / 1e6));
        assert_eq!((r.host_wait_us, r.kernel_wait_us, r.other_us), (30.0 / 1e6, 10.0 / 1e6, 30.0 / 1e6));
    }

    #[test]
    fn without_launches_there_is_no_classification() {
        let mut dev = device(&[(0, 10, None, 7)]);
        let segs = super::super::sweep::segments(&dev.events);
        assert!(classify_gaps(&dev, &segs).is_none());
        dev.launches.clear();
        assert!(classify_gaps(&dev, &segs).is_none());
        assert!(stream_idle(&dev, &[(0, 10)]).is_empty());
    }

    #[test]
    fn any_late_launch_among_simultaneous_starts_makes_host_wait() {
        let dev = device(&[(0, 10, Some(0), 7), (20, 5, Some(1), 7), (20, 5, Some(15), 8)]);
        let segs = super::super::sweep::segments(&dev.events);
        let g = classify_gaps(&dev, &segs).unwrap();
        assert!(g.host.contains(&(10, 20)), "{g:?}");
    }
}
