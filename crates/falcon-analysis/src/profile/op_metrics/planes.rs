//! The per-plane builders of the op metrics database: TPU planes through the ancestor stack of their op lines
//! and their duty cycle, GPU planes from their kernels' `hlo_op` stats (see the parent module's doc).

use std::collections::{BTreeMap, HashMap};

use falcon_xplane::{StatValue, XEvent, XLine, XPlane};

use super::proto::{core_details_chip_id, decode_memory_access_breakdown, stat_text, stat_u64, StatIds};
use super::{OpMetrics, OpMetricsDb, PrecisionStats, StepOpMetrics};

/// Ops keyed by some key, in first-seen order.
pub(super) struct Builder<K> {
    index: HashMap<K, usize>,
    ops: Vec<OpMetrics>,
}

impl<K: std::hash::Hash + Eq> Builder<K> {
    pub(super) fn new() -> Self {
        Builder { index: HashMap::new(), ops: Vec::new() }
    }

    /// XProf `MergeOpMetrics`: the first occurrence provides the metadata.
    pub(super) fn add(&mut self, key: K, src: OpMetrics) {
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
    pub(super) fn finalize(self, total_time_ps: u64, scale_costs: bool) -> OpMetricsDb {
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

pub(super) fn idle_op(idle_ps: u64) -> OpMetrics {
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
pub(super) fn op_from_metadata(plane: &XPlane, ids: &StatIds, metadata_id: i64, depth: usize) -> OpMetrics {
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
pub(super) fn device_span(ids: &StatIds, line: &XLine, event: &XEvent) -> (i128, u64) {
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

pub(super) const OP_LINES: [&str; 4] = ["XLA Ops", "Framework Ops", "TensorFlow Ops", "Sparse Core Ops"];

/// XProf `IsOffDutyOp`.
pub(super) fn is_off_duty(category: &str) -> bool {
    matches!(
        category,
        "infeed" | "outfeed" | "host send" | "host send-done" | "host recv" | "host recv-done" | "megacore fusion"
    )
}

/// Duty-cycle tracker of one plane / chip.
#[derive(Default, Clone)]
pub(super) struct DutyCycle {
    span: Option<(i128, i128)>,
    active: Vec<(i128, i128)>,
}

impl DutyCycle {
    pub(super) fn add(&mut self, begin: i128, end: i128, active: bool) {
        self.span = Some(match self.span {
            Some((b, e)) => (b.min(begin), e.max(end)),
            None => (begin, end),
        });
        if active && end > begin {
            self.active.push((begin, end));
        }
    }

    pub(super) fn union(&mut self, other: &DutyCycle) {
        if let Some((b, e)) = other.span {
            self.add(b, e, false);
        }
        self.active.extend_from_slice(&other.active);
    }

    pub(super) fn active_ps(&self) -> u64 {
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

    pub(super) fn idle_ps(&self) -> u64 {
        let span = self.span.map_or(0, |(b, e)| u64::try_from(e - b).unwrap_or(0));
        span.saturating_sub(self.active_ps())
    }
}

pub(super) fn plane_duty_cycle(plane: &XPlane, ids: &StatIds) -> DutyCycle {
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

pub(super) struct Frame {
    metadata_id: i64,
    event_index: usize,
    begin: i128,
    duration: u64,
    children_ps: u64,
}

/// Per-step accumulation for one plane.
pub(super) struct StepBuilders<'a> {
    steps: &'a [crate::steps::Step],
    builders: BTreeMap<usize, Builder<(u64, u64)>>,
}

impl StepBuilders<'_> {
    pub(super) fn step_of(&self, begin: i128) -> Option<usize> {
        self.steps.iter().position(|s| s.start_ps <= begin && begin < s.start_ps + i128::from(s.duration_ps))
    }
}

pub(super) fn tpu_plane_db(plane: &XPlane, steps: &[crate::steps::Step]) -> (OpMetricsDb, DutyCycle, Option<u64>) {
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
pub(super) fn is_derived_line_id(id: i64) -> bool {
    const MIN: i64 = 0xdead_beef;
    const MAX: i64 = MIN + 300;
    (MIN..=MAX).contains(&id) || (MIN - (1 << 32)..=MAX - (1 << 32)).contains(&id)
}

/// Parses a framework op full name `name:type` (XProf `ParseTfOpFullname`, simplified).
pub(super) fn parse_tf_op(full: &str) -> (String, String) {
    match full.rsplit_once(':') {
        Some((name, ty)) if !ty.is_empty() => (name.to_string(), ty.to_string()),
        Some((name, _)) => (name.to_string(), "Unknown".to_string()),
        None => (full.to_string(), "Unknown".to_string()),
    }
}

pub(super) fn gpu_plane_db(plane: &XPlane, attribution: &HashMap<(usize, usize), String>) -> (OpMetricsDb, bool) {
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
pub(super) fn add_summed(builder: &mut Builder<(u64, String)>, key: (u64, String), op: OpMetrics) {
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
