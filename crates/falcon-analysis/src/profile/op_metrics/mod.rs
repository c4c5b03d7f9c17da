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
//!   category, provenance and FLOPs from the HLO proto in `/host:metadata`; so does Falcon (`gpu_costs`,
//!   over `crate::profile::hlo`), and kernels inside XLA command buffers are charged to their HLO ops
//!   first. Without a proto the ops keep an empty category — see [`OpMetricsDb::has_hlo_costs`] and
//!   [`OpMetricsDb::notes`]; XProf drops such ops entirely.
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

mod cpu_costs;
mod gpu_costs;
mod planes;
mod proto;

use std::collections::{BTreeMap, HashMap};

pub(crate) use cpu_costs::cpu_op_db;

use falcon_xplane::XSpace;
use serde::Serialize;

use crate::device::{op_device_planes, DeviceInfo, Hardware};
use planes::{gpu_plane_db, tpu_plane_db, DutyCycle};
pub use proto::decode_memory_access_breakdown;

/// Bytes moved to or from one memory space by an op (XProf `MemoryAccessed`).
#[derive(serde::Deserialize, Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
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
#[derive(serde::Deserialize, Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
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
#[derive(serde::Deserialize, Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PrecisionStats {
    pub compute_16bit_ps: u64,
    pub compute_32bit_ps: u64,
}

/// The ops of one step (for the roofline's per-step rows).
#[derive(serde::Deserialize, Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StepOpMetrics {
    pub step_num: i64,
    pub db: OpMetricsDb,
}

/// All device ops of a capture (XProf `OpMetricsDb`).
#[derive(serde::Deserialize, Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
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
    /// or whose protos could not be decoded; GPU costs come from the HLO, see `profile/hlo/cost/`).
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
            db.has_hlo_costs = saw_hlo && gpu_costs::fill(&mut db, &hlo);
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
            // XProf's op database has no ops on a CPU; Falcon's analysis builds one from the XLA:CPU op events
            // (`cpu_op_db`).
            db.has_hlo_costs = false;
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
