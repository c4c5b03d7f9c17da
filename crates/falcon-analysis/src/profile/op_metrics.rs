//! XProf's OpMetricsDb for the device planes of a capture: one aggregate per HLO op (per program),
//! the input of HLO stats, op profile, roofline and the overview.
//!
//! Type shapes fixed by the lead so other tools can be written against them; fields may be added,
//! not removed or renamed.
//!
//! # TPU (`xprof/convert/xplane_to_op_metrics_db.cc:ConvertTensorCoreDeviceTraceXPlaneToOpMetricsDb`,
//! `xprof/utils/op_metrics_db_utils.cc`)
//!
//! Per TPU plane (SparseCore planes are skipped; XProf folds them into their TensorCore offload
//! ops, which these captures do not have):
//! * Events of the op lines (`XLA Ops`, `Framework Ops`/`TensorFlow Ops`, `Sparse Core Ops`; *not*
//!   `Async XLA Ops`) are walked line by line through an ancestor stack: an event is the child of
//!   the innermost open event whose *device* timespan (`device_offset_ps`/`device_duration_ps`
//!   stats, else the event's own span) includes it. The parent's children time is the sum of its
//!   direct children's durations.
//! * Each finished event becomes one occurrence keyed by (`program_id`, `symbol_id`) from its
//!   XEventMetadata stats; events without both, or with `symbol_id` 0, are dropped. `time` = device
//!   duration, `self_time` = time − children time, `normalized_time` = time × `Time Scale Multiplier`
//!   (1 without DVFS), `min_time` = `min_duration_ps` stat or the event duration, `dma_stall` =
//!   `dma_stall_duration_ps`. Name = metadata `display_name` (the HLO text becomes `long_name`), or
//!   metadata `name` when there is no display name. Category (`hlo_category`), provenance (`tf_op`),
//!   `deduplicated_name`, `source`/`source_stack`, and per-occurrence costs `flops`, `model_flops`,
//!   `bytes_accessed`, `memory_access_breakdown` come from the metadata stats (first occurrence wins).
//! * Finalize: `flops`, `bytes_accessed` and every breakdown entry × occurrences; `model_flops` ×
//!   occurrences when > 0, else `model_flops := flops`. `total_op_time` = Σ self time,
//!   `total_time` = last end − first begin over op events and `Steps` events (device timespans).
//!   An `IDLE` op (occurrences 0) carries `total_time − total_op_time`.
//! * `memory_access_breakdown` is a serialized `MemoryAccessBreakdown { repeated MemoryAccessed
//!   memory_accessed = 1 }`, `MemoryAccessed { operation_type = 1 (1 READ, 2 WRITE), memory_space
//!   = 2 (1 HBM, 2 CMEM, 3 VMEM), bytes_accessed = 3 }`, decoded by hand here.
//!
//! # GPU (`ConvertDeviceTraceXPlaneToOpMetricsDb`)
//! * Lines whose id is a derived-line id (0xdeadbeef…, also as the sign-extended 32-bit value old TF
//!   writes) are skipped. `total_time` = max event end offset − min event offset over the remaining
//!   lines (line-relative offsets, as XProf).
//! * Kernel events carrying `hlo_op` + `program_id` stats are HLO ops; consecutive kernels with the
//!   same (last `hlo_op` name, `group_id`) are merged into one occurrence. XProf takes the op's
//!   category, provenance and FLOPs from the HLO proto in `/host:metadata`; Falcon does not parse HLO
//!   protos, so these ops get an empty category and only the kernels' own `flops`/`bytes_accessed`
//!   stats (usually absent) — see [`OpMetricsDb::has_hlo_costs`] and [`OpMetricsDb::notes`]. XProf
//!   drops such ops entirely when no HLO proto exists.
//! * Events with a `tf_op` stat (and no HLO op) become framework ops named `<tf op name>/<event
//!   name>`, category = op type, program id 0, no FLOPs (as XProf).
//! * The V100 TF capture has neither, so its db holds only `IDLE` (XProf's hlo_stats is empty too).
//!
//! # Hosts / cores
//! Per-plane dbs are combined as XProf's `OpMetricsDbCombiner`: ops matched by (program id, name),
//! occurrences/times/costs summed, breakdown entries summed per (memory space, operation), min time
//! = min, metadata from the first; `total_time`/`total_op_time` summed over planes (so rates are
//! per-core averages). [`OpMetricsDb::merge`] does the same across hosts.
//!
//! # Extras (Falcon)
//! * `busy_time_ps`/`idle_time_ps`: XProf's TPU duty cycle (`DutyCycleTracker`): per plane, the
//!   union of `XLA Ops` event spans (own offsets, not device offsets) whose category is on duty (not
//!   infeed/outfeed/host send/recv(-done)/megacore fusion, not a custom-call with 0 model flops) is
//!   busy; `Sparse Core Ops` events are busy; `XLA Modules` events only widen the span. Idle = span −
//!   busy. Planes of one chip (`core_details.local_chip_id`) are unioned first. GPU: 0/0.
//! * `steps`: per-step dbs (occurrences whose device start lies in a step of
//!   [`crate::steps::detect_steps`]); a step db's `total_time_ps` is the step duration summed over
//!   the planes with ops in that step. Used for the roofline's `Average`/per-step rows.
//! * `precision`: GPU compute time in steps split 16/32-bit as XProf's `ClassifyGpuCompute` (shape
//!   stat contains `half`, or without shapes the kernel name contains `half`/`fp16`).

use std::collections::{BTreeMap, HashMap};

use falcon_xplane::{StatValue, XEvent, XLine, XPlane, XSpace, XStat};
use serde::Serialize;

use crate::device::{op_device_planes, DeviceInfo, Hardware};

/// Bytes moved to or from one memory space by an op (XProf `MemoryAccessed`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MemoryAccessed {
    /// True for reads, false for writes.
    pub is_read: bool,
    /// XProf memory space: 0 unknown/HBM, 1 HBM, 2 CMEM, 3 VMEM (see roofline docs).
    pub memory_space: u64,
    /// Total bytes over all occurrences.
    pub bytes_accessed: u64,
    /// Raw XProf operation type (0 unknown, 1 read, 2 write).
    pub operation_type: u64,
}

/// Aggregate of every execution of one HLO op (XProf `OpMetrics`). Times are summed over all cores.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct OpMetrics {
    pub program_id: u64,
    /// `hlo_module` name of the program, when known.
    pub hlo_module: String,
    /// The op's name (`display_name`, e.g. `fusion.1`).
    pub name: String,
    /// The HLO text (`%fusion.1 = f32[...] fusion(...)`), or the name when absent.
    pub long_name: String,
    /// `hlo_category` (e.g. `convolution fusion`, `copy-done`, `IDLE`).
    pub category: String,
    /// Framework op path (`tf_op` stat), "" when absent.
    pub provenance: String,
    pub deduplicated_name: String,
    /// `TensorCore`, `SparseCore`, or "" when not applicable.
    pub core_type: String,
    pub occurrences: u64,
    pub time_ps: u64,
    pub self_time_ps: u64,
    /// `time_ps` scaled by the DVFS `Time Scale Multiplier` (equals `time_ps` without DVFS).
    pub normalized_time_ps: u64,
    pub min_time_ps: u64,
    /// Totals over all occurrences.
    pub flops: u64,
    pub model_flops: u64,
    pub bytes_accessed: u64,
    pub memory_accessed_breakdown: Vec<MemoryAccessed>,
    pub dma_stall_ps: u64,
    /// Fused / nested children (from XEventMetadata child ids).
    pub children: Vec<OpMetrics>,
    pub source_info: String,
    /// Full source stack (`source_stack` stat), "" when absent.
    pub source_stack: String,
}

impl OpMetrics {
    /// Whether this is the synthetic `IDLE` op.
    pub fn is_idle(&self) -> bool {
        self.name == "IDLE" && self.category == "IDLE" && self.occurrences == 0
    }
}

/// GPU compute time split by precision (XProf `PrecisionStats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PrecisionStats {
    pub compute_16bit_ps: u64,
    pub compute_32bit_ps: u64,
}

/// The ops of one step (for the roofline's per-step rows).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StepOpMetrics {
    pub step_num: i64,
    pub db: OpMetricsDb,
}

/// All device ops of a capture (XProf `OpMetricsDb`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct OpMetricsDb {
    /// Ops, including the synthetic `IDLE` op (name and category `IDLE`, occurrences 0) when
    /// `total_time_ps > total_op_time_ps`.
    pub ops: Vec<OpMetrics>,
    /// Span of the device timelines (last op end - first op start), summed over cores.
    pub total_time_ps: u64,
    /// Sum of op self times.
    pub total_op_time_ps: u64,
    /// Duty-cycle busy time, summed over chips (TPU; 0 elsewhere).
    pub busy_time_ps: u64,
    /// Duty-cycle idle time, summed over chips (TPU; 0 elsewhere).
    pub idle_time_ps: u64,
    /// False when the ops' FLOPs/bytes could not be known (a GPU capture without its programs' HLO protos,
    /// or whose protos could not be decoded; GPU costs come from the HLO, see `profile/hlo/cost.rs`).
    pub has_hlo_costs: bool,
    /// Per-step dbs (empty without steps); nested dbs have no `steps` of their own.
    pub steps: Vec<StepOpMetrics>,
    pub precision: PrecisionStats,
    /// Human-readable caveats (e.g. missing costs).
    pub notes: Vec<String>,
}

impl OpMetricsDb {
    /// The non-IDLE ops.
    pub fn device_ops(&self) -> impl Iterator<Item = &OpMetrics> {
        self.ops.iter().filter(|o| !o.is_idle())
    }

    /// Combines another db (another host, core or step) into this one, as XProf's
    /// `OpMetricsDbCombiner`: ops summed by (program id, name), totals summed.
    pub fn merge(&mut self, other: &OpMetricsDb) {
        let empty = self.ops.is_empty() && self.total_time_ps == 0;
        self.total_time_ps += other.total_time_ps;
        self.total_op_time_ps += other.total_op_time_ps;
        self.busy_time_ps += other.busy_time_ps;
        self.idle_time_ps += other.idle_time_ps;
        self.precision.compute_16bit_ps += other.precision.compute_16bit_ps;
        self.precision.compute_32bit_ps += other.precision.compute_32bit_ps;
        self.has_hlo_costs = if empty { other.has_hlo_costs } else { self.has_hlo_costs && other.has_hlo_costs };
        let mut index: HashMap<(u64, String), usize> =
            self.ops.iter().enumerate().map(|(i, o)| ((o.program_id, o.name.clone()), i)).collect();
        for op in &other.ops {
            match index.get(&(op.program_id, op.name.clone())) {
                Some(&i) => combine_op(&mut self.ops[i], op),
                None => {
                    index.insert((op.program_id, op.name.clone()), self.ops.len());
                    let mut fresh =
                        OpMetrics { program_id: op.program_id, name: op.name.clone(), ..OpMetrics::default() };
                    combine_op(&mut fresh, op);
                    self.ops.push(fresh);
                }
            }
        }
        // Keep IDLE last.
        self.ops.sort_by_key(OpMetrics::is_idle);
        for step in &other.steps {
            match self.steps.iter_mut().find(|s| s.step_num == step.step_num) {
                Some(s) => s.db.merge(&step.db),
                None => self.steps.push(step.clone()),
            }
        }
        self.steps.sort_by_key(|s| s.step_num);
        for note in &other.notes {
            if !self.notes.contains(note) {
                self.notes.push(note.clone());
            }
        }
    }
}

/// XProf `CopyOpMetricsMetadata` + `CombineOpMetrics`.
fn combine_op(dst: &mut OpMetrics, src: &OpMetrics) {
    if dst.long_name.is_empty() {
        dst.long_name.clone_from(&src.long_name);
    }
    if dst.category.is_empty() {
        dst.category.clone_from(&src.category);
    }
    if dst.provenance.is_empty() {
        dst.provenance.clone_from(&src.provenance);
    }
    if dst.deduplicated_name.is_empty() {
        dst.deduplicated_name.clone_from(&src.deduplicated_name);
    }
    if dst.hlo_module.is_empty() {
        dst.hlo_module.clone_from(&src.hlo_module);
    }
    if dst.core_type.is_empty() {
        dst.core_type.clone_from(&src.core_type);
    }
    if dst.children.is_empty() {
        dst.children.clone_from(&src.children);
    }
    if dst.source_info.is_empty() {
        dst.source_info.clone_from(&src.source_info);
    }
    if dst.source_stack.is_empty() {
        dst.source_stack.clone_from(&src.source_stack);
    }
    dst.min_time_ps = if dst.occurrences == 0 { src.min_time_ps } else { dst.min_time_ps.min(src.min_time_ps) };
    dst.occurrences += src.occurrences;
    dst.time_ps += src.time_ps;
    dst.self_time_ps += src.self_time_ps;
    dst.normalized_time_ps += src.normalized_time_ps;
    dst.flops += src.flops;
    dst.model_flops += src.model_flops;
    dst.bytes_accessed += src.bytes_accessed;
    dst.dma_stall_ps += src.dma_stall_ps;
    combine_breakdown(&mut dst.memory_accessed_breakdown, &src.memory_accessed_breakdown);
}

/// XProf `CombineMemoryAccessedBreakdown`: sum per (memory space, operation type).
pub(crate) fn combine_breakdown(dst: &mut Vec<MemoryAccessed>, src: &[MemoryAccessed]) {
    for s in src {
        match dst.iter_mut().find(|d| d.memory_space == s.memory_space && d.operation_type == s.operation_type) {
            Some(d) => d.bytes_accessed += s.bytes_accessed,
            None => dst.push(*s),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Small protobuf helpers.

fn read_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    let mut shift = 0u32;
    loop {
        let byte = *buf.get(*pos)?;
        *pos += 1;
        if shift < 64 {
            value |= u64::from(byte & 0x7f) << shift;
        }
        if byte & 0x80 == 0 {
            return Some(value);
        }
        shift += 7;
        if shift > 70 {
            return None;
        }
    }
}

/// The fields of one protobuf message: (field number, varint value or embedded bytes).
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn proto_fields(buf: &[u8]) -> Vec<(u64, Field<'_>)> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < buf.len() {
        let Some(key) = read_varint(buf, &mut pos) else {
            break;
        };
        let (field, wire) = (key >> 3, key & 7);
        match wire {
            0 => match read_varint(buf, &mut pos) {
                Some(v) => out.push((field, Field::Varint(v))),
                None => break,
            },
            1 => pos += 8,
            5 => pos += 4,
            2 => {
                let Some(len) = read_varint(buf, &mut pos) else {
                    break;
                };
                let Ok(len) = usize::try_from(len) else { break };
                let Some(end) = pos.checked_add(len).filter(|e| *e <= buf.len()) else {
                    break;
                };
                out.push((field, Field::Bytes(&buf[pos..end])));
                pos = end;
            }
            _ => break,
        }
    }
    out
}

/// Decodes a serialized `MemoryAccessBreakdown` (per occurrence).
pub fn decode_memory_access_breakdown(bytes: &[u8]) -> Vec<MemoryAccessed> {
    proto_fields(bytes)
        .into_iter()
        .filter_map(|(field, value)| match (field, value) {
            (1, Field::Bytes(msg)) => {
                let mut m = MemoryAccessed::default();
                for (f, v) in proto_fields(msg) {
                    if let Field::Varint(v) = v {
                        match f {
                            1 => m.operation_type = v,
                            2 => m.memory_space = v,
                            3 => m.bytes_accessed = v,
                            _ => {}
                        }
                    }
                }
                m.is_read = m.operation_type == 1;
                Some(m)
            }
            _ => None,
        })
        .collect()
}

/// `local_chip_id` (field 4) of a serialized `CoreDetails`, when present.
fn core_details_chip_id(bytes: &[u8]) -> Option<u64> {
    proto_fields(bytes).into_iter().find_map(|(f, v)| match (f, v) {
        (4, Field::Varint(v)) => Some(v),
        _ => None,
    })
}

// ---------------------------------------------------------------------------------------------
// Stat helpers.

fn stat_u64(value: &StatValue) -> Option<u64> {
    match *value {
        StatValue::Uint64(v) => Some(v),
        StatValue::Int64(v) => Some(v as u64),
        _ => None,
    }
}

fn stat_text(plane: &XPlane, stat: &XStat) -> String {
    match &stat.value {
        StatValue::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        // Inflated within falcon-xplane's cap (`MAX_INFLATED_LEN`); one that does not inflate reads as "".
        StatValue::CompressedStr(_) => stat.value.decompressed_str().and_then(|r| r.ok()).unwrap_or_default(),
        _ => plane.stat_str(stat).map(str::to_string).unwrap_or_default(),
    }
}

/// Stat ids of the names this module reads, resolved once per plane.
struct StatIds {
    ids: HashMap<&'static str, i64>,
}

const STAT_NAMES: [&str; 22] = [
    "program_id",
    "symbol_id",
    "hlo_category",
    "tf_op",
    "flops",
    "model_flops",
    "bytes_accessed",
    "memory_access_breakdown",
    "deduplicated_name",
    "source",
    "source_stack",
    "min_duration_ps",
    "self_duration_ps",
    "dma_stall_duration_ps",
    "Time Scale Multiplier",
    "device_offset_ps",
    "device_duration_ps",
    "hlo_op",
    "group_id",
    "shape",
    "hlo_module",
    "core_details",
];

impl StatIds {
    fn new(plane: &XPlane) -> StatIds {
        let mut ids = HashMap::new();
        for m in plane.stat_metadata.values() {
            if let Some(name) = STAT_NAMES.iter().find(|n| **n == m.name) {
                ids.insert(*name, m.id);
            }
        }
        StatIds { ids }
    }

    fn find<'s>(&self, stats: &'s [XStat], name: &str) -> Option<&'s XStat> {
        let id = *self.ids.get(name)?;
        stats.iter().find(|s| s.metadata_id == id)
    }

    /// Event stat first, then its metadata's.
    fn event<'s>(&self, plane: &'s XPlane, event: &'s XEvent, name: &str) -> Option<&'s XStat> {
        self.find(&event.stats, name).or_else(|| self.find(&plane.event_metadata_of(event)?.stats, name))
    }
}

// ---------------------------------------------------------------------------------------------
// Builders.

/// Ops keyed by some key, in first-seen order.
struct Builder<K> {
    index: HashMap<K, usize>,
    ops: Vec<OpMetrics>,
}

impl<K: std::hash::Hash + Eq> Builder<K> {
    fn new() -> Self {
        Builder { index: HashMap::new(), ops: Vec::new() }
    }

    /// XProf `MergeOpMetrics`: the first occurrence provides the metadata.
    fn add(&mut self, key: K, src: OpMetrics) {
        match self.index.get(&key) {
            Some(&i) => {
                let dst = &mut self.ops[i];
                dst.occurrences += src.occurrences;
                dst.time_ps += src.time_ps;
                dst.normalized_time_ps += src.normalized_time_ps;
                dst.min_time_ps = dst.min_time_ps.min(src.min_time_ps);
                dst.self_time_ps += src.self_time_ps;
                dst.dma_stall_ps += src.dma_stall_ps;
            }
            None => {
                self.index.insert(key, self.ops.len());
                self.ops.push(src);
            }
        }
    }

    /// XProf `Finalize`: per-occurrence costs × occurrences, IDLE op.
    fn finalize(self, total_time_ps: u64, scale_costs: bool) -> OpMetricsDb {
        let mut ops = self.ops;
        let mut total_op_time_ps = 0u64;
        for op in &mut ops {
            if scale_costs {
                op.flops = op.flops.saturating_mul(op.occurrences);
                op.model_flops =
                    if op.model_flops > 0 { op.model_flops.saturating_mul(op.occurrences) } else { op.flops };
                op.bytes_accessed = op.bytes_accessed.saturating_mul(op.occurrences);
                for m in &mut op.memory_accessed_breakdown {
                    m.bytes_accessed = m.bytes_accessed.saturating_mul(op.occurrences);
                }
            }
            total_op_time_ps += op.self_time_ps;
        }
        ops.push(idle_op(total_time_ps.saturating_sub(total_op_time_ps)));
        OpMetricsDb { ops, total_time_ps, total_op_time_ps, has_hlo_costs: true, ..OpMetricsDb::default() }
    }
}

fn idle_op(idle_ps: u64) -> OpMetrics {
    OpMetrics {
        name: "IDLE".to_string(),
        long_name: String::new(),
        category: "IDLE".to_string(),
        occurrences: 0,
        time_ps: idle_ps,
        self_time_ps: idle_ps,
        // XProf's `SetIdleOp` leaves the normalized time at 0: DVFS scaling applies to op time only.
        normalized_time_ps: 0,
        ..OpMetrics::default()
    }
}

/// Op metadata from an XEventMetadata (XProf `SetOpMetadataFromHloEventMetadata`).
fn op_from_metadata(plane: &XPlane, ids: &StatIds, metadata_id: i64, depth: usize) -> OpMetrics {
    let mut op = OpMetrics::default();
    let Some(md) = plane.event_metadata.get(&metadata_id) else {
        return op;
    };
    if md.display_name.is_empty() {
        op.name.clone_from(&md.name);
    } else {
        op.name.clone_from(&md.display_name);
        op.long_name.clone_from(&md.name);
    }
    let num = |name: &str| ids.find(&md.stats, name).and_then(|s| stat_u64(&s.value)).unwrap_or(0);
    let text = |name: &str| ids.find(&md.stats, name).map(|s| stat_text(plane, s)).unwrap_or_default();
    op.program_id = num("program_id");
    op.category = text("hlo_category");
    op.provenance = text("tf_op");
    op.flops = num("flops");
    op.model_flops = num("model_flops");
    op.bytes_accessed = num("bytes_accessed");
    if let Some(StatValue::Bytes(b)) = ids.find(&md.stats, "memory_access_breakdown").map(|s| &s.value) {
        op.memory_accessed_breakdown = decode_memory_access_breakdown(b);
    }
    op.deduplicated_name = text("deduplicated_name");
    op.source_info = text("source");
    op.source_stack = text("source_stack");
    if depth < 8 {
        op.children = md
            .child_id
            .iter()
            .map(|&c| {
                let mut child = op_from_metadata(plane, ids, c, depth + 1);
                child.occurrences = 1;
                child
            })
            .collect();
    }
    op
}

/// Device timespan (begin, duration) of an event, absolute ps.
fn device_span(ids: &StatIds, line: &XLine, event: &XEvent) -> (i128, u64) {
    let offset = ids
        .find(&event.stats, "device_offset_ps")
        .and_then(|s| stat_u64(&s.value))
        .map_or_else(|| i128::from(event.offset_ps), i128::from);
    let duration = ids
        .find(&event.stats, "device_duration_ps")
        .and_then(|s| stat_u64(&s.value))
        .unwrap_or(event.duration_ps.max(0) as u64);
    (i128::from(line.timestamp_ns) * 1000 + offset, duration)
}

const OP_LINES: [&str; 4] = ["XLA Ops", "Framework Ops", "TensorFlow Ops", "Sparse Core Ops"];

/// XProf `IsOffDutyOp`.
fn is_off_duty(category: &str) -> bool {
    matches!(
        category,
        "infeed" | "outfeed" | "host send" | "host send-done" | "host recv" | "host recv-done" | "megacore fusion"
    )
}

/// Duty-cycle tracker of one plane / chip.
#[derive(Default, Clone)]
struct DutyCycle {
    span: Option<(i128, i128)>,
    active: Vec<(i128, i128)>,
}

impl DutyCycle {
    fn add(&mut self, begin: i128, end: i128, active: bool) {
        self.span = Some(match self.span {
            Some((b, e)) => (b.min(begin), e.max(end)),
            None => (begin, end),
        });
        if active && end > begin {
            self.active.push((begin, end));
        }
    }

    fn union(&mut self, other: &DutyCycle) {
        if let Some((b, e)) = other.span {
            self.add(b, e, false);
        }
        self.active.extend_from_slice(&other.active);
    }

    fn active_ps(&self) -> u64 {
        let mut spans = self.active.clone();
        spans.sort_unstable();
        let mut total: i128 = 0;
        let mut cur: Option<(i128, i128)> = None;
        for (b, e) in spans {
            match cur {
                Some((cb, ce)) if b <= ce => cur = Some((cb, ce.max(e))),
                Some((cb, ce)) => {
                    total += ce - cb;
                    cur = Some((b, e));
                }
                None => cur = Some((b, e)),
            }
        }
        if let Some((cb, ce)) = cur {
            total += ce - cb;
        }
        u64::try_from(total).unwrap_or(0)
    }

    fn idle_ps(&self) -> u64 {
        let span = self.span.map_or(0, |(b, e)| u64::try_from(e - b).unwrap_or(0));
        span.saturating_sub(self.active_ps())
    }
}

fn plane_duty_cycle(plane: &XPlane, ids: &StatIds) -> DutyCycle {
    let mut dc = DutyCycle::default();
    for line in &plane.lines {
        let base = i128::from(line.timestamp_ns) * 1000;
        let kind = match line.name.as_str() {
            "XLA Ops" => 0,
            "Sparse Core Ops" => 1,
            "XLA Modules" | "Sparse Core Modules" => 2,
            _ => continue,
        };
        for event in &line.events {
            let begin = base + i128::from(event.offset_ps);
            let end = begin + i128::from(event.duration_ps.max(0));
            let active = match kind {
                0 => {
                    let category = ids.event(plane, event, "hlo_category").map(|s| stat_text(plane, s));
                    let off = category.as_deref().is_some_and(|c| {
                        is_off_duty(c)
                            || (c == "custom-call"
                                && ids
                                    .event(plane, event, "model_flops")
                                    .and_then(|s| stat_u64(&s.value))
                                    .is_some_and(|f| f == 0))
                    });
                    !off
                }
                1 => true,
                _ => false,
            };
            dc.add(begin, end, active);
        }
    }
    dc
}

struct Frame {
    metadata_id: i64,
    event_index: usize,
    begin: i128,
    duration: u64,
    children_ps: u64,
}

/// Per-step accumulation for one plane.
struct StepBuilders<'a> {
    steps: &'a [crate::steps::Step],
    builders: BTreeMap<usize, Builder<(u64, u64)>>,
}

impl StepBuilders<'_> {
    fn step_of(&self, begin: i128) -> Option<usize> {
        self.steps.iter().position(|s| s.start_ps <= begin && begin < s.start_ps + i128::from(s.duration_ps))
    }
}

fn tpu_plane_db(plane: &XPlane, steps: &[crate::steps::Step]) -> (OpMetricsDb, DutyCycle, Option<u64>) {
    let ids = StatIds::new(plane);
    let mut builder: Builder<(u64, u64)> = Builder::new();
    let mut per_step = StepBuilders { steps, builders: BTreeMap::new() };
    let mut first: Option<i128> = None;
    let mut last: Option<i128> = None;
    let mut track = |begin: i128, end: i128| {
        first = Some(first.map_or(begin, |f: i128| f.min(begin)));
        last = Some(last.map_or(end, |l: i128| l.max(end)));
    };

    let emit = |frame: &Frame, line: &XLine, builder: &mut Builder<(u64, u64)>, per_step: &mut StepBuilders| {
        let Some(event) = line.events.get(frame.event_index) else {
            return;
        };
        let Some(md) = plane.event_metadata.get(&frame.metadata_id) else {
            return;
        };
        let program = ids.find(&md.stats, "program_id").and_then(|s| stat_u64(&s.value));
        let symbol = ids.find(&md.stats, "symbol_id").and_then(|s| stat_u64(&s.value));
        let (Some(program), Some(symbol)) = (program, symbol) else {
            return;
        };
        if symbol == 0 {
            return;
        }
        let mut op = op_from_metadata(plane, &ids, frame.metadata_id, 0);
        op.core_type = "TensorCore".to_string();
        op.occurrences = u64::try_from(event.num_occurrences).unwrap_or(0).max(1);
        op.time_ps = frame.duration;
        op.self_time_ps = frame.duration.saturating_sub(frame.children_ps);
        let factor = ids.event(plane, event, "Time Scale Multiplier").and_then(|s| s.value.as_f64()).unwrap_or(1.0);
        op.normalized_time_ps = (frame.duration as f64 * factor) as u64;
        op.min_time_ps = ids
            .find(&event.stats, "min_duration_ps")
            .and_then(|s| stat_u64(&s.value))
            .unwrap_or(event.duration_ps.max(0) as u64);
        op.dma_stall_ps = ids.find(&event.stats, "dma_stall_duration_ps").and_then(|s| stat_u64(&s.value)).unwrap_or(0);
        if let Some(step) = per_step.step_of(frame.begin) {
            per_step.builders.entry(step).or_insert_with(Builder::new).add((program, symbol), op.clone());
        }
        builder.add((program, symbol), op);
    };

    for line in &plane.lines {
        if line.name == "Steps" || line.name == "Sparse Core Steps" {
            for event in &line.events {
                let (b, d) = device_span(&ids, line, event);
                track(b, b + i128::from(d));
            }
        }
        if !OP_LINES.contains(&line.name.as_str()) {
            continue;
        }
        let mut stack: Vec<Frame> = Vec::new();
        for (i, event) in line.events.iter().enumerate() {
            let (begin, duration) = device_span(&ids, line, event);
            let end = begin + i128::from(duration);
            track(begin, end);
            while let Some(top) = stack.last() {
                let top_end = top.begin + i128::from(top.duration);
                if top.begin <= begin && end <= top_end {
                    break;
                }
                if let Some(done) = stack.pop() {
                    emit(&done, line, &mut builder, &mut per_step);
                }
            }
            if let Some(top) = stack.last_mut() {
                top.children_ps += duration;
            }
            stack.push(Frame { metadata_id: event.metadata_id, event_index: i, begin, duration, children_ps: 0 });
        }
        while let Some(done) = stack.pop() {
            emit(&done, line, &mut builder, &mut per_step);
        }
    }
    let total = match (first, last) {
        (Some(f), Some(l)) => u64::try_from(l - f).unwrap_or(0),
        _ => 0,
    };
    let mut db = builder.finalize(total, true);
    for (idx, b) in per_step.builders {
        let Some(step) = steps.get(idx) else { continue };
        let step_total = u64::try_from(step.duration_ps).unwrap_or(0);
        db.steps.push(StepOpMetrics { step_num: step.step_num, db: b.finalize(step_total, true) });
    }
    let chip = ids.find(&plane.stats, "core_details").and_then(|s| match &s.value {
        StatValue::Bytes(b) => core_details_chip_id(b).or(Some(0)),
        _ => None,
    });
    (db, plane_duty_cycle(plane, &ids), chip)
}

/// XProf `IsDerivedThreadId`, also accepting the sign-extended 32-bit spelling.
fn is_derived_line_id(id: i64) -> bool {
    const MIN: i64 = 0xdead_beef;
    const MAX: i64 = MIN + 300;
    (MIN..=MAX).contains(&id) || (MIN - (1 << 32)..=MAX - (1 << 32)).contains(&id)
}

/// Parses a framework op full name `name:type` (XProf `ParseTfOpFullname`, simplified).
fn parse_tf_op(full: &str) -> (String, String) {
    match full.rsplit_once(':') {
        Some((name, ty)) if !ty.is_empty() => (name.to_string(), ty.to_string()),
        Some((name, _)) => (name.to_string(), "Unknown".to_string()),
        None => (full.to_string(), "Unknown".to_string()),
    }
}

fn gpu_plane_db(plane: &XPlane, attribution: &HashMap<(usize, usize), String>) -> (OpMetricsDb, bool) {
    let ids = StatIds::new(plane);
    let mut builder: Builder<(u64, String)> = Builder::new();
    let mut first: Option<i64> = None;
    let mut last: i64 = 0;
    let mut precision = PrecisionStats::default();
    let mut saw_hlo = false;
    let tf_op_id = plane.stat_metadata_by_name("tf_op").map(|m| m.id);

    struct Current {
        name: String,
        group: Option<u64>,
        program: u64,
        duration: u64,
        flops: u64,
        bytes: u64,
    }
    let flush = |cur: &mut Option<Current>, builder: &mut Builder<(u64, String)>| {
        if let Some(c) = cur.take() {
            let op = OpMetrics {
                program_id: c.program,
                name: c.name.clone(),
                occurrences: 1,
                time_ps: c.duration,
                self_time_ps: c.duration,
                normalized_time_ps: c.duration,
                min_time_ps: c.duration,
                flops: c.flops,
                model_flops: c.flops,
                bytes_accessed: c.bytes,
                ..OpMetrics::default()
            };
            add_summed(builder, (c.program, c.name), op);
        }
    };

    for (li, line) in plane.lines.iter().enumerate() {
        if is_derived_line_id(line.id) {
            continue;
        }
        let mut cur: Option<Current> = None;
        for (ei, event) in line.events.iter().enumerate() {
            first = Some(first.map_or(event.offset_ps, |f| f.min(event.offset_ps)));
            last = last.max(event.offset_ps + event.duration_ps);
            let dur = event.duration_ps.max(0) as u64;
            let name = plane.event_name(event);
            let group = ids.find(&event.stats, "group_id").and_then(|s| stat_u64(&s.value));
            // Precision (XProf ClassifyGpuCompute) of compute events inside steps.
            if group.is_some() && !line.name.contains("Memcpy") {
                let lower = name.to_ascii_lowercase();
                let is_memcpy = lower.starts_with("memcpy") || lower.starts_with("memset");
                if !is_memcpy && !lower.contains("nccl") {
                    let shapes = ids.find(&event.stats, "shape").map(|s| stat_text(plane, s)).unwrap_or_default();
                    let half = if shapes.is_empty() {
                        name.contains("half") || name.contains("fp16")
                    } else {
                        shapes.contains("half")
                    };
                    if half {
                        precision.compute_16bit_ps += dur;
                    } else {
                        precision.compute_32bit_ps += dur;
                    }
                }
            }
            // A kernel inside a command buffer: the op it executed, when the attribution found it.
            let hlo_op = match attribution.get(&(li, ei)) {
                Some(op) => Some(op.clone()),
                None => ids.find(&event.stats, "hlo_op").map(|s| stat_text(plane, s)),
            };
            let program = ids.find(&event.stats, "program_id").and_then(|s| stat_u64(&s.value));
            if let (Some(hlo_op), Some(program)) = (hlo_op, program) {
                let Some(op_name) = hlo_op.split(',').map(str::trim).rfind(|s| !s.is_empty()) else {
                    continue;
                };
                saw_hlo = true;
                if cur.as_ref().is_some_and(|c| c.name != op_name || c.group != group) {
                    flush(&mut cur, &mut builder);
                }
                let c = cur.get_or_insert_with(|| Current {
                    name: op_name.to_string(),
                    group,
                    program,
                    duration: 0,
                    flops: 0,
                    bytes: 0,
                });
                c.duration += dur;
                c.flops += ids.find(&event.stats, "flops").and_then(|s| stat_u64(&s.value)).unwrap_or(0);
                c.bytes += ids.find(&event.stats, "bytes_accessed").and_then(|s| stat_u64(&s.value)).unwrap_or(0);
                continue;
            }
            let tf_op = tf_op_id
                .and_then(|id| event.stats.iter().find(|s| s.metadata_id == id))
                .map(|s| stat_text(plane, s))
                .filter(|s| !s.is_empty());
            if let Some(full) = tf_op {
                flush(&mut cur, &mut builder);
                let (tf_name, tf_type) = parse_tf_op(&full);
                let op = OpMetrics {
                    name: format!("{tf_name}/{name}"),
                    category: tf_type,
                    provenance: full.clone(),
                    occurrences: 1,
                    time_ps: dur,
                    self_time_ps: dur,
                    normalized_time_ps: dur,
                    min_time_ps: dur,
                    ..OpMetrics::default()
                };
                add_summed(&mut builder, (0, op.name.clone()), op);
            }
        }
        flush(&mut cur, &mut builder);
    }
    let total = match first {
        Some(f) if last != 0 => u64::try_from(last - f).unwrap_or(0),
        _ => 0,
    };
    let mut db = builder.finalize(total, false);
    db.precision = precision;
    (db, saw_hlo)
}

/// XProf `DeviceOpMetricsDbBuilder::EnterOp`: occurrences and costs are summed per event.
fn add_summed(builder: &mut Builder<(u64, String)>, key: (u64, String), op: OpMetrics) {
    match builder.index.get(&key) {
        Some(&i) => {
            let dst = &mut builder.ops[i];
            dst.occurrences += op.occurrences;
            dst.time_ps += op.time_ps;
            dst.self_time_ps += op.self_time_ps;
            dst.normalized_time_ps += op.normalized_time_ps;
            dst.min_time_ps = dst.min_time_ps.min(op.min_time_ps);
            dst.flops += op.flops;
            dst.model_flops += op.model_flops;
            dst.bytes_accessed += op.bytes_accessed;
        }
        None => {
            builder.index.insert(key, builder.ops.len());
            builder.ops.push(op);
        }
    }
}

/// Build the device OpMetricsDb of one host's XSpace.
pub fn op_metrics_db(space: &XSpace, device: &DeviceInfo) -> OpMetricsDb {
    let (hardware, planes) = op_device_planes(space);
    let mut db = OpMetricsDb { has_hlo_costs: true, ..OpMetricsDb::default() };
    match hardware {
        Hardware::Tpu => {
            let steps = crate::steps::detect_steps(space).steps;
            let mut chips: BTreeMap<u64, DutyCycle> = BTreeMap::new();
            let mut lone: Vec<DutyCycle> = Vec::new();
            for plane in planes {
                let (plane_db, dc, chip) = tpu_plane_db(plane, &steps);
                db.merge(&plane_db);
                match chip {
                    Some(c) => chips.entry(c).or_default().union(&dc),
                    None => lone.push(dc),
                }
            }
            for dc in chips.values().chain(lone.iter()) {
                db.busy_time_ps += dc.active_ps();
                db.idle_time_ps += dc.idle_ps();
            }
        }
        Hardware::Gpu => {
            let hlo = super::hlo::GpuHlo::decode(space);
            let mut saw_hlo = false;
            for plane in planes {
                let attribution = super::hlo::attribution::attribute(plane, &hlo);
                let (plane_db, found) = gpu_plane_db(plane, &attribution.ops);
                saw_hlo |= found;
                db.merge(&plane_db);
                db.notes.extend(attribution.note());
            }
            db.notes.extend(hlo.notes.iter().cloned());
            db.has_hlo_costs = saw_hlo && super::gpu_costs::fill(&mut db, &hlo);
            if !saw_hlo {
                db.notes.push(
                    "no HLO ops on the GPU timelines (no `hlo_op` kernel stats): no FLOPs, bytes or roofline \
                     placement per op"
                        .to_string(),
                );
            } else if !db.has_hlo_costs {
                db.notes.push(
                    "the capture holds no HLO program for its GPU ops (no `Hlo Proto` on `/host:metadata`): no \
                     FLOPs, bytes, categories or roofline placement per op"
                        .to_string(),
                );
            }
        }
        Hardware::CpuOnly => {
            db.notes.push("CPU-only capture: no device ops".to_string());
        }
    }
    // The device info is not needed yet: XProf's op metrics depend on the planes only.
    let _ = device;
    name_programs(space, &mut db);
    db
}

/// Fills `hlo_module` of ops whose events did not name it, from the program names the capture
/// records: event metadata of `/host:metadata` (id = program id, name `<module>(<program id>)`) and
/// the events of the device planes' `XLA Modules` lines (same names).
fn name_programs(space: &XSpace, db: &mut OpMetricsDb) {
    fn module_of(name: &str, program_id: u64) -> Option<&str> {
        let module = name.strip_suffix(&format!("({program_id})"))?;
        (!module.is_empty()).then_some(module)
    }
    let missing: std::collections::BTreeSet<u64> =
        db.ops.iter().filter(|o| o.hlo_module.is_empty() && !o.is_idle()).map(|o| o.program_id).collect();
    if missing.is_empty() {
        return;
    }
    let mut names: HashMap<u64, String> = HashMap::new();
    if let Some(meta) = space.plane_by_name("/host:metadata") {
        for (id, md) in &meta.event_metadata {
            let Ok(pid) = u64::try_from(*id) else { continue };
            if missing.contains(&pid) {
                if let Some(m) = module_of(&md.name, pid) {
                    names.insert(pid, m.to_string());
                }
            }
        }
    }
    for plane in space.planes.iter().filter(|p| p.name.starts_with("/device:")) {
        for line in plane.lines.iter().filter(|l| l.name == "XLA Modules") {
            for md in line.events.iter().filter_map(|e| plane.event_metadata_of(e)) {
                for pid in &missing {
                    if !names.contains_key(pid) {
                        if let Some(m) = module_of(&md.name, *pid) {
                            names.insert(*pid, m.to_string());
                        }
                    }
                }
            }
            if names.len() == missing.len() {
                return fill(db, &names);
            }
        }
    }
    fill(db, &names);

    fn fill(db: &mut OpMetricsDb, names: &HashMap<u64, String>) {
        for op in db.ops.iter_mut().filter(|o| o.hlo_module.is_empty()) {
            if let Some(n) = names.get(&op.program_id) {
                op.hlo_module.clone_from(n);
            }
        }
    }
}
