//! Temporal breakdown and collective/compute overlap of one device over a time window.
//!
//! # Temporal breakdown
//!
//! Every instant of the window goes to exactly one category, by precedence:
//!
//! 1. `compute` — a `Compute` event runs (whatever else runs beside it);
//! 2. `collective` — a `Collective` runs and no compute: *exposed* communication;
//! 3. `memcpy` — a `MemCopy` or `InfeedOutfeed` event runs, and neither of the above;
//! 4. `host_wait` — a `HostWait` event runs (only the device's own `HostWait` events count: device
//!    idle time while a host thread is busy is *not* host wait here, it is `idle`; the host-bound
//!    check in [`super::host`] accounts for it separately);
//! 5. `other` — only events the reader classed `Other` run (busy with something unclassified);
//! 6. `idle` — no event runs (`Module` events never count as busy).
//!
//! So `compute + collective + memcpy + host_wait + other + idle == duration`, exactly, in integer
//! picoseconds ([`BreakdownPs`]); `other` is zero whenever the reader classes every device event.
//! Beside the partition, `hidden_collective` is the time a collective runs *under* compute (the
//! part HTA counts as overlapped); `collective + hidden_collective` is the union of all collectives.
//!
//! HTA (`breakdown_analysis.py`) differs: it partitions a rank's kernel span into compute /
//! non-compute / idle, without separating exposed collectives from copies or host waits.
//!
//! # Overlap per collective kind
//!
//! For each kind (over a device's whole trace, see [`super`]): `total` = the union of that kind's
//! intervals, `exposed` = the part
//! of it with no compute running, `hidden_fraction = 1 - exposed / total` (0 when total is 0).
//! Exposed times of different kinds running at once each count, so their sum can exceed the
//! breakdown's `collective` (which counts each instant once).

use serde::Serialize;

use super::sweep::{clipped, Segment, F_COLLECTIVE_ANY, F_COMPUTE, F_HOST_WAIT, F_MEMCPY, F_OTHER, KINDS};
use crate::timeline::{CollectiveKind, Event};

/// The partition of a window, in picoseconds (exact).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct BreakdownPs {
    pub duration: i64,
    pub compute: i64,
    pub collective: i64,
    pub memcpy: i64,
    pub host_wait: i64,
    pub other: i64,
    pub idle: i64,
    /// Collective time under compute (not part of the partition).
    pub hidden_collective: i64,
}

impl BreakdownPs {
    /// Busy time (everything but idle).
    pub fn busy(&self) -> i64 {
        self.duration - self.idle
    }

    /// The device's own work: compute + memcpy + other (not exposed communication, host wait, idle).
    pub fn work(&self) -> i64 {
        self.compute + self.memcpy + self.other
    }

    /// Adds another window's partition.
    pub fn add(&mut self, o: &BreakdownPs) {
        self.duration += o.duration;
        self.compute += o.compute;
        self.collective += o.collective;
        self.memcpy += o.memcpy;
        self.host_wait += o.host_wait;
        self.other += o.other;
        self.idle += o.idle;
        self.hidden_collective += o.hidden_collective;
    }
}

/// The partition of `[start_ps, end_ps)` of a device whose events are `events` (any order,
/// overlapping allowed). An empty or inverted window gives all zeros.
pub fn breakdown_window(events: &[Event], start_ps: i64, end_ps: i64) -> BreakdownPs {
    breakdown_segments(&super::sweep::segments(events), start_ps, end_ps)
}

pub(crate) fn breakdown_segments(segs: &[Segment], start: i64, end: i64) -> BreakdownPs {
    let mut b = BreakdownPs { duration: (end - start).max(0), ..BreakdownPs::default() };
    for s in clipped(segs, start, end) {
        let len = s.end - s.start;
        if s.flags & F_COMPUTE != 0 {
            b.compute += len;
            if s.flags & F_COLLECTIVE_ANY != 0 {
                b.hidden_collective += len;
            }
        } else if s.flags & F_COLLECTIVE_ANY != 0 {
            b.collective += len;
        } else if s.flags & F_MEMCPY != 0 {
            b.memcpy += len;
        } else if s.flags & F_HOST_WAIT != 0 {
            b.host_wait += len;
        } else if s.flags & F_OTHER != 0 {
            b.other += len;
        }
    }
    b.idle = b.duration - b.compute - b.collective - b.memcpy - b.host_wait - b.other;
    b
}

/// Per-kind union and exposed time, in picoseconds, indexed like [`super::sweep::KINDS`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct KindOverlapPs {
    pub total: [i64; 7],
    pub exposed: [i64; 7],
}

impl KindOverlapPs {
    pub(crate) fn add_window(&mut self, segs: &[Segment], start: i64, end: i64) {
        for s in clipped(segs, start, end) {
            if s.flags & F_COLLECTIVE_ANY == 0 {
                continue;
            }
            let len = s.end - s.start;
            for (i, &kind) in KINDS.iter().enumerate() {
                if s.flags & super::sweep::collective_bit(kind) != 0 {
                    self.total[i] += len;
                    if s.flags & F_COMPUTE == 0 {
                        self.exposed[i] += len;
                    }
                }
            }
        }
    }

    /// The kinds that occur, as report rows, times divided by `div` (a mean over devices).
    pub(crate) fn rows(&self, div: f64) -> Vec<OverlapRow> {
        KINDS
            .iter()
            .enumerate()
            .filter(|&(i, _)| self.total[i] > 0)
            .map(|(i, &kind)| {
                OverlapRow::new(kind, self.total[i] as f64 / 1e6 / div, self.exposed[i] as f64 / 1e6 / div)
            })
            .collect()
    }
}

/// Overlap of one collective kind with compute.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OverlapRow {
    /// `all-reduce`, `all-gather`, … ([`CollectiveKind::as_str`]).
    pub kind: String,
    /// Union of this kind's intervals, µs.
    pub total_us: f64,
    /// Part of `total_us` with no compute running, µs.
    pub exposed_us: f64,
    /// `1 - exposed_us / total_us`.
    pub hidden_fraction: f64,
}

impl OverlapRow {
    pub(crate) fn new(kind: CollectiveKind, total_us: f64, exposed_us: f64) -> OverlapRow {
        let hidden_fraction = if total_us > 0.0 { (1.0 - exposed_us / total_us).clamp(0.0, 1.0) } else { 0.0 };
        OverlapRow { kind: kind.as_str().to_string(), total_us, exposed_us, hidden_fraction }
    }
}
