//! The sweep every analysis shares: a device's (possibly overlapping) events turned into a sorted list
//! of disjoint, piecewise-constant *segments*, each carrying which classes are running in it; plus
//! small helpers on sorted disjoint interval lists.
//!
//! Building the segments sorts the 2·n event boundaries once (O(n log n)); afterwards any window is
//! integrated in O(log s + segments in the window). Time the device runs nothing is not a segment.

use crate::timeline::{CollectiveKind, Event, EventClass};

/// A compute event runs.
pub(crate) const F_COMPUTE: u16 = 1;
/// A `MemCopy` or `InfeedOutfeed` event runs.
pub(crate) const F_MEMCPY: u16 = 1 << 1;
/// A `HostWait` event runs.
pub(crate) const F_HOST_WAIT: u16 = 1 << 2;
/// An `Other` event runs.
pub(crate) const F_OTHER: u16 = 1 << 3;
const COLLECTIVE_SHIFT: u16 = 4;
/// Any collective runs (one bit per [`CollectiveKind`], see [`collective_bit`]).
pub(crate) const F_COLLECTIVE_ANY: u16 = 0x7f << COLLECTIVE_SHIFT;
const FLAG_BITS: usize = 11;

/// The collective kinds in their reporting order.
pub(crate) const KINDS: [CollectiveKind; 7] = [
    CollectiveKind::AllReduce,
    CollectiveKind::AllGather,
    CollectiveKind::ReduceScatter,
    CollectiveKind::AllToAll,
    CollectiveKind::SendRecv,
    CollectiveKind::CollectivePermute,
    CollectiveKind::Other,
];

/// Index of a kind in [`KINDS`].
pub(crate) fn kind_index(kind: CollectiveKind) -> usize {
    match kind {
        CollectiveKind::AllReduce => 0,
        CollectiveKind::AllGather => 1,
        CollectiveKind::ReduceScatter => 2,
        CollectiveKind::AllToAll => 3,
        CollectiveKind::SendRecv => 4,
        CollectiveKind::CollectivePermute => 5,
        CollectiveKind::Other => 6,
    }
}

/// The flag bit of a collective kind.
pub(crate) fn collective_bit(kind: CollectiveKind) -> u16 {
    1 << (COLLECTIVE_SHIFT as usize + kind_index(kind))
}

/// The bit index (0..11) an event class sets, `None` for `Module` (never busy time).
fn class_bit(class: EventClass) -> Option<usize> {
    match class {
        EventClass::Compute => Some(0),
        EventClass::MemCopy | EventClass::InfeedOutfeed => Some(1),
        EventClass::HostWait => Some(2),
        EventClass::Other => Some(3),
        EventClass::Collective(kind) => Some(COLLECTIVE_SHIFT as usize + kind_index(kind)),
        EventClass::Module => None,
    }
}

/// `[start, end)` during which exactly the classes in `flags` run (`flags != 0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Segment {
    pub start: i64,
    pub end: i64,
    pub flags: u16,
}

/// Sweeps a device's events into disjoint busy segments, sorted, adjacent ones with equal flags
/// merged. Events of zero or negative duration and `Module` events are ignored.
pub(crate) fn segments(events: &[Event]) -> Vec<Segment> {
    // (time, delta, bit); ends (-1) sort before starts (+1) at the same instant, which does not
    // matter for the result since no segment of zero length is emitted.
    let mut bounds: Vec<(i64, i8, u8)> = Vec::with_capacity(events.len() * 2);
    for e in events {
        if e.dur_ps <= 0 {
            continue;
        }
        if let Some(bit) = class_bit(e.class) {
            let bit = bit as u8;
            bounds.push((e.start_ps, 1, bit));
            bounds.push((e.end_ps(), -1, bit));
        }
    }
    bounds.sort_unstable();
    let mut counts = [0u32; FLAG_BITS];
    let mut out: Vec<Segment> = Vec::new();
    let mut i = 0;
    let mut prev_t = i64::MIN;
    while i < bounds.len() {
        let t = bounds[i].0;
        let flags = flags_of(&counts);
        if flags != 0 && t > prev_t {
            match out.last_mut() {
                Some(last) if last.end == prev_t && last.flags == flags => last.end = t,
                _ => out.push(Segment { start: prev_t, end: t, flags }),
            }
        }
        while i < bounds.len() && bounds[i].0 == t {
            let (_, delta, bit) = bounds[i];
            let c = &mut counts[bit as usize];
            *c = if delta > 0 { c.saturating_add(1) } else { c.saturating_sub(1) };
            i += 1;
        }
        prev_t = t;
    }
    out
}

fn flags_of(counts: &[u32; FLAG_BITS]) -> u16 {
    counts.iter().enumerate().fold(0u16, |acc, (bit, &c)| if c > 0 { acc | (1 << bit) } else { acc })
}

/// The segments overlapping `[start, end)`, clipped to it (in order).
pub(crate) fn clipped(segs: &[Segment], start: i64, end: i64) -> impl Iterator<Item = Segment> + '_ {
    let first = segs.partition_point(|s| s.end <= start);
    segs[first..].iter().take_while(move |s| s.start < end).filter_map(move |s| {
        let a = s.start.max(start);
        let b = s.end.min(end);
        (b > a).then_some(Segment { start: a, end: b, flags: s.flags })
    })
}

/// The maximal intervals of `[start, end)` covered by no segment (device idle).
pub(crate) fn idle_intervals(segs: &[Segment], start: i64, end: i64, out: &mut Vec<(i64, i64)>) {
    let mut cursor = start;
    for s in clipped(segs, start, end) {
        if s.start > cursor {
            out.push((cursor, s.start));
        }
        cursor = cursor.max(s.end);
    }
    if end > cursor {
        out.push((cursor, end));
    }
}

/// Sorts and merges intervals (overlapping or touching) into a disjoint sorted list; empty ones dropped.
pub(crate) fn merge(mut iv: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    iv.retain(|&(a, b)| b > a);
    iv.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(iv.len());
    for (a, b) in iv {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Total length of the intersection of two sorted disjoint interval lists.
pub(crate) fn intersection_len(a: &[(i64, i64)], b: &[(i64, i64)]) -> i64 {
    let (mut i, mut j, mut total) = (0, 0, 0i64);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if hi > lo {
            total = total.saturating_add(hi - lo);
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

/// The intersection of two sorted disjoint interval lists (sorted, disjoint).
pub(crate) fn intersect(a: &[(i64, i64)], b: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if hi > lo {
            out.push((lo, hi));
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// Length of the overlap of `[start, end)` with a sorted disjoint interval list.
pub(crate) fn overlap_with(list: &[(i64, i64)], start: i64, end: i64) -> i64 {
    let first = list.partition_point(|&(_, b)| b <= start);
    list[first..]
        .iter()
        .take_while(|&&(a, _)| a < end)
        .map(|&(a, b)| b.min(end) - a.max(start))
        .filter(|&d| d > 0)
        .sum()
}

/// Picoseconds to microseconds.
pub(crate) fn us(ps: i64) -> f64 {
    ps as f64 / 1e6
}
