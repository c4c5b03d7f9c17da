//! Memory profile: the host-side allocator timeline of XProf's `memory_profile` tool (allocator
//! usage over time, the peak within the profiling window, the allocations live at that peak), plus
//! a per-step growth series used as a leak signal.
//!
//! # Rules (XProf `xprof/convert/xplane_to_memory_profile.cc`)
//!
//! 1. **Input.** Only the `/host:CPU` plane is read, and on it only events whose metadata name is
//!    `MemoryAllocation` or `MemoryDeallocation` (`HostEventType::kMemoryAllocation` /
//!    `kMemoryDeallocation`). A capture without such events gives an empty profile.
//! 2. **Stats.** Each event's stats are visited in order (metadata stats first, then the event's
//!    own, so the event wins); a later stat of the same kind overwrites an earlier one:
//!    `index_on_host` / `device_ordinal` (integer, printed) or `allocator_name` (string) -> the
//!    memory id (the allocator key; `""` when none); `bytes_reserved` -> stack reserved,
//!    `bytes_allocated` -> heap allocated, `bytes_available` -> free, `fragmentation`,
//!    `peak_bytes_in_use`; `requested_bytes`, `allocation_bytes`, `addr`, `tf_op`, `group_id` ->
//!    step id (-1 when absent), `region_type`, `data_type` (TensorFlow `DataType` enum, printed as
//!    XProf's `DataTypeString`: `INVALID`, `float`, ..., `<t>_ref` above 100), `shape`.
//!    Integers are read from int64 or uint64 stats, fragmentation from any numeric stat.
//! 3. **Summary, in processing order** (lines in file order, then events in line order — *not* time
//!    order; `UpdateProfileSummary`): `peak_bytes_usage_lifetime` is the `peak_bytes_in_use` of the
//!    last processed event; the in-window peak is replaced whenever `stack + heap >=` the current
//!    peak (so a later-processed tie wins), recording that event's stats, its time and
//!    `memory_capacity = stack + heap + free`.
//! 4. **Snapshots** (one per event) are sorted by time (`time_offset_ps`, the event's offset in its
//!    line as XProf uses it; ties keep processing order here, XProf's sort is unstable). Step ids
//!    of -1 are back-filled with the last valid step id + 1 (`UpdateStepId`). A deallocation takes
//!    `tf_op`, region type, data type and shape from the earliest not-yet-matched allocation at the
//!    same address (`UpdateDeallocation`).
//! 5. **Timeline** (`SampleMemoryProfileTimeline`): at most [`MAX_TIMELINE_POINTS`] points; with
//!    more snapshots, a max box filter over `stack + heap` (first maximum in a box wins): `count1`
//!    boxes of width `w = n / max` then `count2` of width `w + 1`, with
//!    `count1 = max * (w + 1) - n`, `count2 = max - count1`.
//! 6. **Active allocations at the peak** (`GetPeakMemoryStep`, `ProcessActiveAllocations`): the peak
//!    step is the step id of the last snapshot (time order) whose `stack + heap` equals the in-window
//!    peak (0 if none). Walking snapshots up to the peak time, only those of the peak step: an
//!    allocation becomes live at its address, a deallocation removes the live allocation at its
//!    address (or, if none, counts as an unmapped deallocation). Heap bytes at the peak not covered
//!    by live allocations (`heap - allocated + deallocated - unmapped deallocated`) become a special
//!    row `unused preallocated device memory` (region `persist/dynamic`), and the stack
//!    reservation at the peak a special row `stack` (region `stack`). Rows are sorted by
//!    (allocation bytes desc, requested bytes desc, tf_op, region type, data type, shape) and equal
//!    neighbours merged with an occurrence count (ties among equal rows: earliest snapshot first).
//!
//! # Falcon additions
//!
//! * **Empty profiles say why.** Without a `/host:CPU` plane or without allocator events on it (XLA:CPU
//!   captures record none), `notes` says so; `peak_bytes` is then 0 because nothing was measured, and the
//!   summary row leaves peak memory unknown.
//! * **Top level.** The profile's headline allocator is the device allocator (ids without `host`
//!   or `cpu` in them, unless there are only such ids) with the largest in-window peak
//!   (`stack + heap`); ties go to the first id in sorted order. XProf's `get_memory_profile` CLI
//!   picks its peak the same way (largest `peakBytesInUse`) over all allocators, and reports its
//!   capacity as the largest over all allocators.
//! * **Step growth.** With steps (from [`crate::steps::detect_steps`]), the memory in use
//!   (`stack + heap`) at the end of each step is the state after the last snapshot at or before the
//!   step's end (absolute time: line timestamp + offset; 0 before the allocator's first snapshot):
//!   `step_end_in_use_bytes`. `step_growth_bytes[i]` is the change from the end of step `i` to the end
//!   of step `i + 1` (empty with fewer than two steps). The memory verdict ([`crate::leak`]) tests the
//!   trend of `step_end_in_use_bytes`.
//! * **Leak rule.** `leak_suspected` is true when some run of at least [`LEAK_MIN_STEPS`]
//!   consecutive step growths is all strictly positive and adds up to more than
//!   [`LEAK_CAPACITY_FRACTION`] of the allocator's memory capacity (of its in-window peak when the
//!   capacity is unknown).
//!
//! Not reproduced: XProf 2.24's `hlo_modules` list (TPU programs from `XLA Modules` lines) and the
//! exact order of rows/snapshots that XProf's unstable sorts and hash maps leave unspecified.

use std::collections::{BTreeMap, HashMap};

use falcon_xplane::{StatValue, XPlane, XSpace, XStat};
use serde::Serialize;

use super::planes::HOST_CPU_PLANE;
use crate::steps::StepReport;

/// Event metadata name of an allocation (`HostEventType::kMemoryAllocation`).
pub const MEMORY_ALLOCATION: &str = "MemoryAllocation";
/// Event metadata name of a deallocation (`HostEventType::kMemoryDeallocation`).
pub const MEMORY_DEALLOCATION: &str = "MemoryDeallocation";
/// XProf's default `max_num_snapshots` for the sampled timeline.
pub const MAX_TIMELINE_POINTS: usize = 1000;
/// Minimum number of consecutive positive step growths for [`AllocatorMemory::leak_suspected`].
pub const LEAK_MIN_STEPS: usize = 3;
/// Minimum total growth of such a run, as a fraction of the allocator's capacity.
pub const LEAK_CAPACITY_FRACTION: f64 = 0.01;

/// XProf's `kInvalidStepId`.
const INVALID_STEP_ID: i64 = -1;

/// Allocation or deallocation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryActivity {
    #[default]
    Allocation,
    Deallocation,
}

/// Allocator state reported with one event (XProf `MemoryAggregationStats`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MemoryStats {
    /// `bytes_reserved`.
    pub stack_reserved_bytes: i64,
    /// `bytes_allocated`.
    pub heap_allocated_bytes: i64,
    /// `bytes_available`.
    pub free_bytes: i64,
    /// `fragmentation` (0..1).
    pub fragmentation: f64,
    /// `peak_bytes_in_use` as the allocator reported it (its lifetime peak so far).
    pub peak_bytes_in_use: i64,
}

impl MemoryStats {
    /// Memory in use: stack reserved + heap allocated.
    pub fn in_use_bytes(&self) -> i64 {
        self.stack_reserved_bytes.saturating_add(self.heap_allocated_bytes)
    }
}

/// What one event did (XProf `MemoryActivityMetadata`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ActivityMetadata {
    pub activity: MemoryActivity,
    pub requested_bytes: i64,
    pub allocation_bytes: i64,
    pub address: i64,
    pub tf_op: String,
    pub step_id: i64,
    pub region_type: String,
    pub data_type: String,
    pub shape: String,
}

/// One point of an allocator's timeline (XProf `MemoryProfileSnapshot`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TimelinePoint {
    /// XProf `time_offset_ps`: the event's offset from its line's start.
    pub time_offset_ps: i64,
    /// Absolute time, picoseconds since the Unix epoch.
    pub time_ps: i128,
    /// `stack_reserved_bytes + heap_allocated_bytes`.
    pub in_use_bytes: i64,
    pub stats: MemoryStats,
    pub activity: ActivityMetadata,
}

/// The in-window peak (XProf `MemoryProfileSummary.peak_stats` and `peak_stats_time_ps`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PeakStats {
    /// XProf `peak_stats_time_ps` (an event offset within its line, like `time_offset_ps`).
    pub timestamp_ps: i64,
    /// Absolute time of the peak event, picoseconds since the Unix epoch.
    pub time_ps: i128,
    pub stack_reserved_bytes: i64,
    pub heap_allocated_bytes: i64,
    pub free_bytes: i64,
    pub fragmentation: f64,
    /// `stack_reserved_bytes + heap_allocated_bytes` (XProf `peak_stats.peak_bytes_in_use`).
    pub peak_bytes: i64,
}

/// One row of the live allocations at the peak (XProf `ActiveAllocation` with its metadata).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Allocation {
    /// Allocated bytes (`allocation_bytes`).
    pub bytes: i64,
    pub requested_bytes: i64,
    pub tf_op: String,
    pub region_type: String,
    pub data_type: String,
    pub shape: String,
    pub step_id: i64,
    /// Number of identical allocations merged into this row.
    pub occurrences: i64,
    /// A synthetic row (`stack` or `unused preallocated device memory`), not an event.
    pub special: bool,
    /// Address of the row's representative allocation (0 for special rows).
    pub address: i64,
    /// `time_offset_ps` of the representative allocation (`None` for special rows).
    pub time_offset_ps: Option<i64>,
}

/// The memory profile of one allocator (XProf `PerAllocatorMemoryProfile`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct AllocatorMemory {
    /// XProf memory id (`index_on_host` / `device_ordinal` printed, or `allocator_name`).
    pub id: String,
    /// XProf `peak_bytes_usage_lifetime`: the allocator-reported `peak_bytes_in_use` of the last
    /// processed event.
    pub peak_bytes: i64,
    pub peak_in_window: PeakStats,
    /// `stack + heap + free` at the in-window peak.
    pub memory_capacity_bytes: i64,
    pub num_allocations: usize,
    pub num_deallocations: usize,
    /// Down-sampled timeline (at most [`MAX_TIMELINE_POINTS`] points), time-sorted.
    pub timeline: Vec<TimelinePoint>,
    /// Live allocations at the in-window peak, largest first.
    pub top_allocations: Vec<Allocation>,
    /// Memory in use at the end of each step (time order).
    pub step_end_in_use_bytes: Vec<i64>,
    /// Change of in-use memory between consecutive step ends.
    pub step_growth_bytes: Vec<i64>,
    pub leak_suspected: bool,
}

/// The memory profile of a capture.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MemoryProfile {
    /// One per memory id, sorted by id (XProf `memory_ids`).
    pub allocators: Vec<AllocatorMemory>,
    /// Id of the headline allocator (see the module docs); `None` without allocation events.
    pub peak_allocator: Option<String>,
    /// Its in-window peak, `stack + heap`.
    pub peak_bytes: i64,
    /// Its capacity.
    pub memory_capacity_bytes: i64,
    pub peak_in_window: PeakStats,
    pub timeline: Vec<TimelinePoint>,
    pub top_allocations: Vec<Allocation>,
    /// The headline allocator's memory in use at the end of each step.
    pub step_end_in_use_bytes: Vec<i64>,
    pub step_growth_bytes: Vec<i64>,
    pub leak_suspected: bool,
    /// Why the profile is empty, when it is (no `/host:CPU` plane, or no allocator events on it: XLA:CPU
    /// and most JAX captures record none). `peak_bytes` is then 0 because nothing was measured.
    pub notes: Vec<String>,
}

/// Stats the memory profile reads.
#[derive(Clone, Copy)]
enum Field {
    MemoryIdInt,
    MemoryIdStr,
    StackReserved,
    HeapAllocated,
    Free,
    Fragmentation,
    PeakInUse,
    Requested,
    AllocationBytes,
    Address,
    TfOp,
    StepId,
    RegionType,
    DataType,
    Shape,
}

fn field_of(name: &str) -> Option<Field> {
    Some(match name {
        "index_on_host" | "device_ordinal" => Field::MemoryIdInt,
        "allocator_name" => Field::MemoryIdStr,
        "bytes_reserved" => Field::StackReserved,
        "bytes_allocated" => Field::HeapAllocated,
        "bytes_available" => Field::Free,
        "fragmentation" => Field::Fragmentation,
        "peak_bytes_in_use" => Field::PeakInUse,
        "requested_bytes" => Field::Requested,
        "allocation_bytes" => Field::AllocationBytes,
        "addr" => Field::Address,
        "tf_op" => Field::TfOp,
        "group_id" => Field::StepId,
        "region_type" => Field::RegionType,
        "data_type" => Field::DataType,
        "shape" => Field::Shape,
        _ => return None,
    })
}

/// XProf `XStatVisitor::IntValue` (made lenient: uint64 values are reinterpreted, as C++ would).
fn int_value(stat: &XStat) -> i64 {
    match stat.value {
        StatValue::Int64(v) => v,
        StatValue::Uint64(v) => i64::from_ne_bytes(v.to_ne_bytes()),
        _ => 0,
    }
}

fn str_value(plane: &XPlane, stat: &XStat) -> String {
    plane.stat_str(stat).unwrap_or_default().to_owned()
}

/// XProf `DataTypeString` of a TensorFlow `DataType` enum value.
pub fn data_type_string(dtype: i64) -> String {
    if dtype > 100 {
        return format!("{}_ref", data_type_name(dtype - 100));
    }
    data_type_name(dtype)
}

fn data_type_name(dtype: i64) -> String {
    let name = match dtype {
        0 => "INVALID",
        1 => "float",
        2 => "double",
        3 => "int32",
        4 => "uint8",
        5 => "int16",
        6 => "int8",
        7 => "string",
        8 => "complex64",
        9 => "int64",
        10 => "bool",
        11 => "qint8",
        12 => "quint8",
        13 => "qint32",
        14 => "bfloat16",
        15 => "qint16",
        16 => "quint16",
        17 => "uint16",
        18 => "complex128",
        19 => "half",
        20 => "resource",
        21 => "variant",
        22 => "uint32",
        23 => "uint64",
        24 => "float8_e5m2",
        25 => "float8_e4m3fn",
        26 => "float8_e4m3fnuz",
        27 => "float8_e4m3b11fnuz",
        28 => "float8_e5m2fnuz",
        29 => "int4",
        30 => "uint4",
        other => return format!("unknown dtype enum ({other})"),
    };
    name.to_owned()
}

/// Per-allocator state while reading events.
#[derive(Default)]
struct Acc {
    snapshots: Vec<TimelinePoint>,
    lifetime_peak: i64,
    peak: PeakStats,
    capacity: i64,
}

impl Acc {
    /// XProf `UpdateProfileSummary`.
    fn update_summary(&mut self, p: &TimelinePoint) {
        self.lifetime_peak = p.stats.peak_bytes_in_use;
        let in_use = p.stats.in_use_bytes();
        if in_use >= self.peak.peak_bytes {
            self.peak = PeakStats {
                timestamp_ps: p.time_offset_ps,
                time_ps: p.time_ps,
                stack_reserved_bytes: p.stats.stack_reserved_bytes,
                heap_allocated_bytes: p.stats.heap_allocated_bytes,
                free_bytes: p.stats.free_bytes,
                fragmentation: p.stats.fragmentation,
                peak_bytes: in_use,
            };
            self.capacity = in_use.saturating_add(p.stats.free_bytes);
        }
    }
}

/// Reads the allocation events of the host plane, per memory id, in processing order.
fn read_events(plane: &XPlane) -> BTreeMap<String, Acc> {
    let fields: HashMap<i64, Field> =
        plane.stat_metadata.values().filter_map(|m| Some((m.id, field_of(&m.name)?))).collect();
    let mut out: BTreeMap<String, Acc> = BTreeMap::new();
    for line in &plane.lines {
        for event in &line.events {
            let Some(meta) = plane.event_metadata_of(event) else {
                continue;
            };
            let activity = match meta.name.as_str() {
                MEMORY_ALLOCATION => MemoryActivity::Allocation,
                MEMORY_DEALLOCATION => MemoryActivity::Deallocation,
                _ => continue,
            };
            let mut p = TimelinePoint {
                time_offset_ps: event.offset_ps,
                time_ps: line.event_start_ps(event),
                activity: ActivityMetadata { activity, step_id: INVALID_STEP_ID, ..ActivityMetadata::default() },
                ..TimelinePoint::default()
            };
            let mut memory_id = String::new();
            for stat in meta.stats.iter().chain(&event.stats) {
                let Some(field) = fields.get(&stat.metadata_id) else {
                    continue;
                };
                let (s, a) = (&mut p.stats, &mut p.activity);
                match field {
                    Field::MemoryIdInt => memory_id = int_value(stat).to_string(),
                    Field::MemoryIdStr => memory_id = str_value(plane, stat),
                    Field::StackReserved => s.stack_reserved_bytes = int_value(stat),
                    Field::HeapAllocated => s.heap_allocated_bytes = int_value(stat),
                    Field::Free => s.free_bytes = int_value(stat),
                    Field::Fragmentation => s.fragmentation = stat.value.as_f64().unwrap_or(0.0),
                    Field::PeakInUse => s.peak_bytes_in_use = int_value(stat),
                    Field::Requested => a.requested_bytes = int_value(stat),
                    Field::AllocationBytes => a.allocation_bytes = int_value(stat),
                    Field::Address => a.address = int_value(stat),
                    Field::TfOp => a.tf_op = str_value(plane, stat),
                    Field::StepId => a.step_id = int_value(stat),
                    Field::RegionType => a.region_type = str_value(plane, stat),
                    Field::DataType => a.data_type = data_type_string(int_value(stat)),
                    Field::Shape => a.shape = str_value(plane, stat),
                }
            }
            p.in_use_bytes = p.stats.in_use_bytes();
            let acc = out.entry(memory_id).or_default();
            acc.update_summary(&p);
            acc.snapshots.push(p);
        }
    }
    out
}

/// XProf `UpdateStepId`.
fn backfill_step_ids(snapshots: &mut [TimelinePoint]) {
    let mut last_valid = INVALID_STEP_ID;
    for s in snapshots {
        if s.activity.step_id == INVALID_STEP_ID {
            s.activity.step_id = last_valid.saturating_add(1);
        } else {
            last_valid = s.activity.step_id;
        }
    }
}

/// XProf `UpdateDeallocation`.
fn fill_deallocations(snapshots: &mut [TimelinePoint]) {
    let mut by_address: HashMap<i64, usize> = HashMap::new();
    for i in 0..snapshots.len() {
        let address = snapshots[i].activity.address;
        match snapshots[i].activity.activity {
            MemoryActivity::Deallocation => {
                if let Some(j) = by_address.remove(&address) {
                    let alloc = snapshots[j].activity.clone();
                    let m = &mut snapshots[i].activity;
                    m.tf_op = alloc.tf_op;
                    m.region_type = alloc.region_type;
                    m.data_type = alloc.data_type;
                    m.shape = alloc.shape;
                }
            }
            MemoryActivity::Allocation => {
                by_address.entry(address).or_insert(i);
            }
        }
    }
}

/// XProf `SampleMemoryProfileTimeline` (max box filter).
fn sample_timeline(snapshots: &[TimelinePoint], max_points: usize) -> Vec<TimelinePoint> {
    let n = snapshots.len();
    if n <= max_points || max_points == 0 {
        return snapshots.to_vec();
    }
    let width = n / max_points;
    let count1 = max_points * (width + 1) - n;
    let count2 = max_points - count1;
    let mut out = Vec::with_capacity(max_points);
    let mut max_box = |filter_width: usize, count: usize, start: usize| {
        for i in 0..count {
            let lo = start + filter_width * i;
            let hi = (lo + filter_width).min(n);
            let mut best: Option<&TimelinePoint> = None;
            for s in snapshots.get(lo..hi).unwrap_or_default() {
                if best.is_none_or(|b| s.in_use_bytes > b.in_use_bytes) {
                    best = Some(s);
                }
            }
            if let Some(b) = best {
                out.push(b.clone());
            }
        }
    };
    max_box(width, count1, 0);
    max_box(width + 1, count2, width * count1);
    out
}

/// XProf `GetPeakMemoryStep`.
fn peak_step(peak_bytes: i64, snapshots: &[TimelinePoint]) -> i64 {
    snapshots.iter().rev().find(|s| s.in_use_bytes == peak_bytes).map_or(0, |s| s.activity.step_id)
}

fn special_row(bytes: i64, tf_op: &str, region: &str, step_id: i64) -> ActivityMetadata {
    ActivityMetadata {
        activity: MemoryActivity::Allocation,
        requested_bytes: bytes,
        allocation_bytes: bytes,
        address: 0,
        tf_op: tf_op.to_owned(),
        step_id,
        region_type: region.to_owned(),
        data_type: data_type_string(0),
        shape: "unknown".to_owned(),
    }
}

fn row_key(m: &ActivityMetadata) -> (i64, i64, &str, &str, &str, &str) {
    (
        m.allocation_bytes.saturating_neg(),
        m.requested_bytes.saturating_neg(),
        &m.tf_op,
        &m.region_type,
        &m.data_type,
        &m.shape,
    )
}

/// XProf `ProcessActiveAllocations` (+ `InsertSpecialAllocations`): live allocations at the peak.
fn active_allocations(snapshots: &[TimelinePoint], peak: &PeakStats, step_id: i64) -> Vec<Allocation> {
    let mut unmapped_alloc = peak.heap_allocated_bytes;
    let mut unmapped_dealloc = 0i64;
    let mut live: BTreeMap<i64, usize> = BTreeMap::new();
    for (i, s) in snapshots.iter().enumerate() {
        if s.time_offset_ps > peak.timestamp_ps {
            break;
        }
        let m = &s.activity;
        if m.step_id != step_id {
            continue;
        }
        match m.activity {
            MemoryActivity::Allocation => {
                live.insert(m.address, i);
                unmapped_alloc = unmapped_alloc.saturating_sub(m.allocation_bytes);
            }
            MemoryActivity::Deallocation => {
                if live.remove(&m.address).is_none() {
                    unmapped_dealloc = unmapped_dealloc.saturating_add(m.allocation_bytes);
                }
                unmapped_alloc = unmapped_alloc.saturating_add(m.allocation_bytes);
            }
        }
    }
    unmapped_alloc = unmapped_alloc.saturating_sub(unmapped_dealloc);

    // (order key for ties, metadata, snapshot index or None for special rows)
    let mut rows: Vec<(i64, ActivityMetadata, Option<usize>)> = Vec::new();
    let mut special = 0i64;
    if unmapped_alloc > 0 {
        special -= 1;
        let m = special_row(unmapped_alloc, "unused preallocated device memory", "persist/dynamic", step_id);
        rows.push((special, m, None));
    }
    if peak.stack_reserved_bytes > 0 {
        special -= 1;
        let m = special_row(peak.stack_reserved_bytes, "stack", "stack", step_id);
        rows.push((special, m, None));
    }
    for &i in live.values() {
        if let Some(s) = snapshots.get(i) {
            rows.push((i64::try_from(i).unwrap_or(i64::MAX), s.activity.clone(), Some(i)));
        }
    }
    rows.sort_by(|a, b| row_key(&a.1).cmp(&row_key(&b.1)).then(a.0.cmp(&b.0)));

    let mut out: Vec<Allocation> = Vec::new();
    for (k, (_, m, index)) in rows.iter().enumerate() {
        let same_as_previous = k.checked_sub(1).and_then(|p| rows.get(p)).is_some_and(|p| row_key(&p.1) == row_key(m));
        if same_as_previous {
            if let Some(row) = out.last_mut() {
                row.occurrences += 1;
                continue;
            }
        }
        let snapshot = index.and_then(|i| snapshots.get(i));
        out.push(Allocation {
            bytes: m.allocation_bytes,
            requested_bytes: m.requested_bytes,
            tf_op: m.tf_op.clone(),
            region_type: m.region_type.clone(),
            data_type: m.data_type.clone(),
            shape: m.shape.clone(),
            step_id: m.step_id,
            occurrences: 1,
            special: index.is_none(),
            address: m.address,
            time_offset_ps: snapshot.map(|s| s.time_offset_ps),
        });
    }
    out
}

/// In-use bytes at the end of each step, and their consecutive differences.
fn step_end_in_use(snapshots: &[TimelinePoint], steps: &StepReport) -> Vec<i64> {
    let mut by_time: Vec<(i128, i64)> = snapshots.iter().map(|s| (s.time_ps, s.in_use_bytes)).collect();
    by_time.sort_by_key(|&(t, _)| t);
    let mut ends: Vec<i128> = steps.steps.iter().map(|s| s.start_ps + i128::from(s.duration_ps.max(0))).collect();
    ends.sort_unstable();
    ends.iter()
        .map(|&end| {
            let n = by_time.partition_point(|&(t, _)| t <= end);
            n.checked_sub(1).and_then(|i| by_time.get(i)).map_or(0, |&(_, b)| b)
        })
        .collect()
}

/// The leak rule (see the module docs).
pub fn leak_suspected(step_growth_bytes: &[i64], capacity_bytes: i64) -> bool {
    let threshold = capacity_bytes as f64 * LEAK_CAPACITY_FRACTION;
    let (mut run, mut total) = (0usize, 0i128);
    for &g in step_growth_bytes {
        if g > 0 {
            run += 1;
            total += i128::from(g);
            if run >= LEAK_MIN_STEPS && total as f64 > threshold {
                return true;
            }
        } else {
            (run, total) = (0, 0);
        }
    }
    false
}

fn is_host_allocator(id: &str) -> bool {
    let id = id.to_ascii_lowercase();
    id.contains("host") || id.contains("cpu")
}

/// Builds XProf's memory profile from the `/host:CPU` allocation events (see the module docs).
pub fn memory_profile(space: &XSpace, steps: &StepReport) -> MemoryProfile {
    let Some(plane) = space.plane_by_name(HOST_CPU_PLANE) else {
        return MemoryProfile {
            notes: vec![format!("no memory profile: the capture has no `{HOST_CPU_PLANE}` plane")],
            ..MemoryProfile::default()
        };
    };
    let mut allocators = Vec::new();
    for (id, acc) in read_events(plane) {
        let Acc { mut snapshots, lifetime_peak, peak, capacity } = acc;
        snapshots.sort_by_key(|s| s.time_offset_ps);
        backfill_step_ids(&mut snapshots);
        fill_deallocations(&mut snapshots);
        let timeline = sample_timeline(&snapshots, MAX_TIMELINE_POINTS);
        let step = peak_step(peak.peak_bytes, &snapshots);
        let top_allocations = active_allocations(&snapshots, &peak, step);
        let step_end_in_use_bytes = step_end_in_use(&snapshots, steps);
        let step_growth_bytes: Vec<i64> = step_end_in_use_bytes.windows(2).map(|w| w[1].saturating_sub(w[0])).collect();
        let leak_base = if capacity > 0 { capacity } else { peak.peak_bytes };
        let num_allocations = snapshots.iter().filter(|s| s.activity.activity == MemoryActivity::Allocation).count();
        allocators.push(AllocatorMemory {
            leak_suspected: leak_suspected(&step_growth_bytes, leak_base),
            id,
            peak_bytes: lifetime_peak,
            peak_in_window: peak,
            memory_capacity_bytes: capacity,
            num_allocations,
            num_deallocations: snapshots.len() - num_allocations,
            timeline,
            top_allocations,
            step_end_in_use_bytes,
            step_growth_bytes,
        });
    }

    let any_device = allocators.iter().any(|a| !is_host_allocator(&a.id));
    let mut headline: Option<&AllocatorMemory> = None;
    for a in &allocators {
        if any_device && is_host_allocator(&a.id) {
            continue;
        }
        if headline.is_none_or(|h| a.peak_in_window.peak_bytes > h.peak_in_window.peak_bytes) {
            headline = Some(a);
        }
    }
    let mut profile = MemoryProfile::default();
    if let Some(h) = headline {
        profile.peak_allocator = Some(h.id.clone());
        profile.peak_bytes = h.peak_in_window.peak_bytes;
        profile.memory_capacity_bytes = h.memory_capacity_bytes;
        profile.peak_in_window = h.peak_in_window.clone();
        profile.timeline = h.timeline.clone();
        profile.top_allocations = h.top_allocations.clone();
        profile.step_end_in_use_bytes = h.step_end_in_use_bytes.clone();
        profile.step_growth_bytes = h.step_growth_bytes.clone();
        profile.leak_suspected = h.leak_suspected;
    }
    if allocators.is_empty() {
        profile.notes.push(format!(
            "no memory profile: the capture has no allocator events (MemoryAllocation / MemoryDeallocation on \
             `{HOST_CPU_PLANE}`); XLA:CPU does not record them"
        ));
    }
    profile.allocators = allocators;
    profile
}
