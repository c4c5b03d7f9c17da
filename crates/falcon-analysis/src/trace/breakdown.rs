//! Temporal breakdown and collective/compute overlap of one device over a time window.
//!
//! # Temporal breakdown
//!
//! Every instant of the window goes to exactly one category, by precedence:
//!
//! 1. `compute` — a `Compute` event runs (whatever else runs beside it);
//! 2. `collective` — a `Collective` runs and no compute: *exposed* communication;
//! 3. `memcpy` — a `MemCopy` or `InfeedOutfeed` event runs, and neither of the above;
//! 4. `host_wait` — the device waits on the host: one of its own `HostWait` events runs, or (added by
//!    [`super::analyze_trace`], which sees the launches and the host threads) the device is idle in a gap
//!    the host caused: on a trace that records launch calls, a gap ended by work launched after the gap
//!    began ([`super::launch`], HTA's rule); else a gap during which a host thread of its host *works* —
//!    input, dispatch; never a host wait on the device, see the `host` module. This is the time the
//!    host-bound check counts ([`falcon_core::bound`]): the same numbers;
//! 5. `other` — only events the reader classed `Other` run (busy with something unclassified);
//! 6. `idle` — no device event runs and the gap is not the host's (`Module` events never count as busy). Its
//!    part ended by work that was already queued (a dependency, a synchronisation) is `idle_kernel_wait`.
//!
//! So `compute + collective + memcpy + host_wait + other + idle == duration`, exactly, in integer
//! picoseconds ([`BreakdownPs`]); `other` is zero whenever the reader classes every device event.
//! [`breakdown_window`] sees device events only: its `host_wait` is the device's own `HostWait` time.
//!
//! **Duty cycle** ([`BreakdownPs::duty_cycle`]) = `(compute + collective + memcpy + other) / duration`:
//! the share of the steps the device runs work (waiting on the host and idle are not duty). The trace
//! summary row and, on XLA:CPU captures, the profile overview both use it.
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
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
    /// The part of `host_wait` where no device event runs (a gap the host caused; already in `host_wait`).
    pub idle_host_busy: i64,
    /// The part of `idle` in gaps ended by work launched before the gap began (already in `idle`).
    pub idle_kernel_wait: i64,
    /// The part of `collective` spent waiting for a peer that had not arrived (the multi-host analysis; already in
    /// `collective`, whose rest is the transfer).
    pub peer_wait: i64,
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

    /// The device's duty cycle over the window (see the module doc), `None` for an empty window.
    pub fn duty_cycle(&self) -> Option<f64> {
        (self.duration > 0)
            .then(|| (self.compute + self.collective + self.memcpy + self.other) as f64 / self.duration as f64)
    }

    /// Moves `ps` of idle time during which the host works into `host_wait` (at most the idle time).
    pub(crate) fn add_host_busy(&mut self, ps: i64) {
        let ps = ps.clamp(0, self.idle.max(0));
        self.idle -= ps;
        self.host_wait += ps;
        self.idle_host_busy += ps;
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
        self.idle_host_busy += o.idle_host_busy;
        self.idle_kernel_wait += o.idle_kernel_wait;
        self.peer_wait += o.peer_wait;
    }

    /// Counts `ps` of idle time as ended by already-queued work (at most the idle time left).
    pub(crate) fn add_kernel_wait(&mut self, ps: i64) {
        self.idle_kernel_wait += ps.clamp(0, (self.idle - self.idle_kernel_wait).max(0));
    }
}

/// The partition of `[start_ps, end_ps)` of a device whose events are `events` (any order,
/// overlapping allowed), from the device events alone (no host threads: `host_wait` is the device's own
/// `HostWait` time). An empty or inverted window gives all zeros.
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

/// The exposed collective intervals of `[start, end)` (a collective runs, no compute), appended to `out` in order.
pub(crate) fn exposed_intervals(segs: &[Segment], start: i64, end: i64, out: &mut Vec<(i64, i64)>) {
    for s in clipped(segs, start, end).filter(|s| s.flags & F_COLLECTIVE_ANY != 0 && s.flags & F_COMPUTE == 0) {
        match out.last_mut() {
            Some(last) if last.1 == s.start => last.1 = s.end,
            _ => out.push((s.start, s.end)),
        }
    }
}

/// The exposed collective time of `[start, end)` (a collective runs, no compute) inside `waits` (sorted, disjoint):
/// the window's `peer_wait`.
pub(crate) fn exposed_inside(segs: &[Segment], waits: &[(i64, i64)], start: i64, end: i64) -> i64 {
    if waits.is_empty() {
        return 0;
    }
    clipped(segs, start, end)
        .filter(|s| s.flags & F_COLLECTIVE_ANY != 0 && s.flags & F_COMPUTE == 0)
        .map(|s| super::sweep::overlap_with(waits, s.start, s.end))
        .sum()
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
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
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
