//! XSpace → [`Timeline`].
//!
//! # Devices
//!
//! - **TPU** (`/device:TPU:N` planes, SparseCore planes `/device:TPU:N SparseCore …` included as
//!   their own devices): the op events are those of the `XLA Ops` line (`Sparse Core Ops` on a
//!   SparseCore plane); `Async XLA Ops` is skipped, as XProf's trace viewer skips it (its events are
//!   the async ops' spans, which overlap the `*-start`/`*-done` pairs already on `XLA Ops`). The
//!   `XLA Modules` line gives the device's module executions, the `Steps` line its step markers.
//!   Event names are the event metadata's display name (`fusion.1`, not the long
//!   `%fusion.1 = f32[…] fusion(…)`), as XProf's trace viewer names them.
//! - **GPU** (`/device:GPU:N`): every raw line (the CUDA streams, `Stream #N(…)`) is merged into the
//!   device; lines XProf derives (`XLA Ops`, `XLA Modules`, `Steps`, `Framework Ops`, name
//!   scopes, `Launch Stats`, `Source code`, …) are not op lines; `XLA Modules` and `Steps` still give
//!   modules and markers.
//! - **CPU-only capture** (no `/device:TPU|GPU` plane): one [`DeviceKind::CpuExecutor`] device made of
//!   the `/host:CPU` events that carry an `hlo_op` stat (the rule of the XLA:CPU op profile), named by
//!   that stat. Its modules are the `/host:CPU` events carrying `hlo_module` but no `hlo_op` (XLA:CPU
//!   captures seen so far have none).
//!
//! # Op classes (see [`classify_xla_op`], [`classify_gpu_kernel`])
//!
//! XLA op events are classified from the HLO op name (its base: `%`, the instruction text and a
//! trailing `.N` removed) and the `hlo_category` stat:
//! 1. `infeed`/`outfeed` in the base or category → [`EventClass::InfeedOutfeed`];
//! 2. a host transfer — `send`/`recv`(`-done`) whose category mentions `host`, or a base mentioning
//!    `host` together with `send`/`recv`/`transfer` — is [`EventClass::InfeedOutfeed`] when it starts
//!    the transfer and [`EventClass::HostWait`] for its `*-done` (the device blocks on the host);
//! 3. `copy`, `copy-start`, `copy-done`, `dma…`, `…memcpy…`, `…memset…`, `…offload…` bases (or a
//!    category mentioning `dma`) → [`EventClass::MemCopy`];
//! 4. a collective by [`collective_kind`] of the category, else of the base →
//!    [`EventClass::Collective`];
//! 5. everything else → [`EventClass::Compute`].
//!
//! GPU stream events: `memcpy`/`memset` in the name → MemCopy; NCCL/RCCL kernels (and names
//! [`collective_kind`] recognises) → Collective; else Compute.
//!
//! # Host
//!
//! Every other line of `/host:CPU` (lines XProf derives excluded) is a [`HostThread`] holding its
//! events that did not go to the CPU executor device, named by display name. Host step markers follow
//! the profile's step detection: an event whose name starts with `train`, `test` or `TraceContext` without a `/`,
//! tied to a step by a `group_id`, a non-zero `_r` or a `step_num` stat; its step is `step_num`, else
//! `group_id`, else its ordinal among such markers. Device `Steps`-line markers take their step from
//! `step_name` (when an integer), else `group_id`, else their ordinal on the line.
//!
//! Times are picoseconds relative to the earliest event taken (ops, modules, host events, markers);
//! `origin_ps` is that event's absolute time.

use std::collections::HashMap;

use falcon_xplane::{StatValue, XEvent, XLine, XPlane, XSpace, XStat};

use super::{
    collective_kind, CollectiveOp, Device, DeviceKind, Event, EventClass, HostThread, Launch, NameId, StepMarker,
    StepSource, Timeline, TimelineSource,
};
use crate::planes::{DERIVED_LINE_SUFFIXES, HOST_CPU_PLANE};

/// Lines XProf derives on device planes (never raw op lines on a GPU).
pub(crate) const DERIVED_DEVICE_LINES: [&str; 16] = [
    "Steps",
    "XLA Modules",
    "XLA Ops",
    "Async XLA Ops",
    "Framework Ops",
    "Framework Name Scope",
    "TensorFlow Ops",
    "TensorFlow Name Scope",
    "Source code",
    "Launch Stats",
    "_counters_",
    "XLA TraceMe",
    "Sparse Core Steps",
    "Sparse Core Modules",
    "Sparse Core Ops",
    "Overlay",
];

/// Name of the CPU executor device.
pub const CPU_EXECUTOR_NAME: &str = "XLA:CPU executor threads";

/// Whether a GPU line is raw (a stream), not one XProf derives.
pub(crate) fn is_gpu_stream_line(name: &str) -> bool {
    !DERIVED_DEVICE_LINES.contains(&name) && !name.starts_with("Host Offload Ops") && !name.is_empty()
}

/// Whether a host line is one XProf derives (skipped).
pub(crate) fn is_derived_host_line(name: &str) -> bool {
    DERIVED_LINE_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// XProf `IsExplicitHostStepMarker`.
pub(crate) fn is_host_step_marker_name(name: &str) -> bool {
    (name.starts_with("train") || name.starts_with("test") || name.starts_with("TraceContext")) && !name.contains('/')
}

/// The HLO base of an op name: leading `%` and anything after the first space removed, then one
/// trailing `.N` suffix (`%fusion.12 = …` → `fusion`, `all-reduce-start.3` → `all-reduce-start`).
pub(crate) fn hlo_base(name: &str) -> &str {
    let n = name.trim_start_matches('%');
    let n = n.split(' ').next().unwrap_or(n);
    match n.rsplit_once('.') {
        Some((head, tail)) if !head.is_empty() && !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => n,
    }
}

/// Class of an XLA op (TPU `XLA Ops` line, XLA JSON) from its name and `hlo_category` (module docs).
pub fn classify_xla_op(name: &str, category: Option<&str>) -> EventClass {
    let base = hlo_base(name).to_ascii_lowercase();
    let cat = category.unwrap_or("").to_ascii_lowercase();
    let b = base.as_str();
    if b.contains("infeed") || b.contains("outfeed") || cat.contains("infeed") || cat.contains("outfeed") {
        return EventClass::InfeedOutfeed;
    }
    let send_recv = matches!(b, "send" | "recv" | "send-done" | "recv-done");
    let host_transfer = (send_recv && cat.contains("host"))
        || (b.contains("host") && (b.contains("send") || b.contains("recv") || b.contains("transfer")));
    if host_transfer {
        return if b.ends_with("-done") || b.ends_with("done") {
            EventClass::HostWait
        } else {
            EventClass::InfeedOutfeed
        };
    }
    if matches!(b, "copy" | "copy-start" | "copy-done")
        || b.starts_with("dma")
        || b.contains("memcpy")
        || b.contains("memset")
        || b.contains("offload")
        || cat.contains("dma")
    {
        return EventClass::MemCopy;
    }
    if let Some(kind) = category.and_then(collective_kind).or_else(|| collective_kind(b)) {
        return EventClass::Collective(kind);
    }
    EventClass::Compute
}

/// Class of a GPU stream event / kernel (module docs).
pub fn classify_gpu_kernel(name: &str) -> EventClass {
    let lower = name.to_ascii_lowercase();
    if lower.contains("memcpy") || lower.contains("memset") {
        return EventClass::MemCopy;
    }
    match collective_kind(name) {
        Some(kind) => EventClass::Collective(kind),
        None => EventClass::Compute,
    }
}

/// Class of an op on the CPU executor: a collective by name, else compute.
pub fn classify_cpu_op(name: &str) -> EventClass {
    collective_kind(name).map_or(EventClass::Compute, EventClass::Collective)
}

/// Sort key of devices: kind, then the trailing ordinal of the name, then the name.
pub(crate) fn device_order(d: &Device) -> (u8, u64, String) {
    let kind = match d.kind {
        DeviceKind::Tpu => 0,
        DeviceKind::Gpu => 1,
        DeviceKind::CpuExecutor => 2,
    };
    let digits: String = d.name.chars().rev().take_while(char::is_ascii_digit).collect();
    let ordinal = digits.chars().rev().collect::<String>().parse().unwrap_or(u64::MAX);
    (kind, ordinal, d.name.clone())
}

/// Sorts events by start, longer first at equal starts, then name.
pub(crate) fn sort_events(events: &mut [Event]) {
    events.sort_unstable_by_key(|e| (e.start_ps, std::cmp::Reverse(e.dur_ps), e.name));
}

/// A small fast hasher (FxHash) for the readers' maps: their keys are short names and ids, and the
/// maps are never exposed to untrusted-key flooding concerns beyond one file's own content.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl FxHasher {
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// `HashMap` with [`FxHasher`].
pub(crate) type FxMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<FxHasher>>;

/// A string interner for [`Timeline::names`].
#[derive(Default)]
pub(crate) struct Interner {
    ids: FxMap<String, NameId>,
    names: Vec<String>,
}

impl Interner {
    pub(crate) fn intern(&mut self, s: &str) -> NameId {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = NameId::try_from(self.names.len()).unwrap_or(NameId::MAX);
        self.ids.insert(s.to_owned(), id);
        self.names.push(s.to_owned());
        id
    }
    pub(crate) fn get(&self, s: &str) -> Option<NameId> {
        self.ids.get(s).copied()
    }
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }
    pub(crate) fn into_names(self) -> Vec<String> {
        self.names
    }
}

/// Stat ids resolved once per plane.
struct Ids {
    hlo_op: Option<i64>,
    hlo_module: Option<i64>,
    hlo_category: Option<i64>,
    group_id: Option<i64>,
    step_name: Option<i64>,
    step_num: Option<i64>,
    root: Option<i64>,
    correlation: Option<i64>,
    run_id: Option<i64>,
}

impl Ids {
    fn of(plane: &XPlane) -> Ids {
        let id = |name: &str| plane.stat_metadata_by_name(name).map(|m| m.id);
        Ids {
            hlo_op: id("hlo_op"),
            hlo_module: id("hlo_module"),
            hlo_category: id("hlo_category"),
            group_id: id("group_id"),
            step_name: id("step_name"),
            step_num: id("step_num"),
            root: id("_r"),
            correlation: id("correlation_id"),
            run_id: id("run_id"),
        }
    }
}

fn stat<'p>(plane: &'p XPlane, event: &'p XEvent, id: Option<i64>) -> Option<&'p XStat> {
    plane.event_stat_by_id(event, id)
}

fn int_stat(plane: &XPlane, event: &XEvent, id: Option<i64>) -> Option<i64> {
    let s = stat(plane, event, id)?;
    s.value.as_i64().or_else(|| plane.stat_str(s)?.trim().parse().ok())
}

fn str_stat<'p>(plane: &'p XPlane, event: &'p XEvent, id: Option<i64>) -> Option<&'p str> {
    plane.stat_str(stat(plane, event, id)?)
}

/// What the host-plane pass knows of one event metadata id.
#[derive(Clone, Copy)]
struct MetadataFacts {
    /// Whether its name is a host step marker's.
    step_marker: bool,
    /// Its display name, interned (when first needed).
    display: Option<NameId>,
}

/// An event with its absolute start, before the origin is known.
struct AbsEvent {
    start: i128,
    dur: i64,
    name: NameId,
    class: EventClass,
}

struct AbsMarker {
    step: i64,
    start: i128,
    dur: i64,
    device: Option<u32>,
    source: StepSource,
}

struct PendingDevice {
    id: u32,
    name: String,
    kind: DeviceKind,
    events: Vec<AbsEvent>,
    modules: Vec<AbsEvent>,
    /// GPU: (stream line id, correlation id) of each event, parallel to `events`.
    launches: Vec<(i64, Option<i64>)>,
    /// Its collectives with their program, run, and the bytes and group size their instruction text says
    /// ([`CollectiveOp`]).
    collectives: Vec<PendingCollective>,
}

/// A collective before the origin is known: the event, its program, its run, and (bytes, group size).
type PendingCollective = (AbsEvent, NameId, Option<i64>, (Option<u64>, Option<u32>));

/// The collective of an op event, when it is one: its program (`hlo_module`, else "") and run (`run_id`).
fn collective_of(
    plane: &XPlane,
    ids: &Ids,
    e: &XEvent,
    ev: &AbsEvent,
    names: &mut Interner,
) -> Option<PendingCollective> {
    let EventClass::Collective(_) = ev.class else { return None };
    let scope = names.intern(str_stat(plane, e, ids.hlo_module).unwrap_or(""));
    let copy = AbsEvent { start: ev.start, dur: ev.dur, name: ev.name, class: ev.class };
    // A TPU/GPU op event is named by its HLO instruction (`%all-reduce = f32[…] all-reduce(…), replica_groups=…`).
    let size = super::hlo_text::collective_size(plane.event_name(e));
    Some((copy, scope, int_stat(plane, e, ids.run_id), size))
}

struct PendingThread {
    id: u64,
    name: String,
    events: Vec<AbsEvent>,
    /// The launch calls on this thread: correlation id → (absolute start, duration).
    calls: Vec<(i64, i128, i64)>,
}

fn abs(line: &XLine, event: &XEvent, name: NameId, class: EventClass) -> AbsEvent {
    AbsEvent { start: line.event_start_ps(event), dur: event.duration_ps.max(0), name, class }
}

fn is_tpu_plane(name: &str) -> bool {
    name.strip_prefix("/device:TPU:").and_then(|rest| rest.chars().next()).is_some_and(|c| c.is_ascii_digit())
}

fn plane_id(plane: &XPlane) -> u32 {
    u32::try_from(plane.id).unwrap_or(u32::MAX)
}

/// Device `Steps` line markers of one plane.
fn device_markers(plane: &XPlane, ids: &Ids, line: &XLine, device: u32, out: &mut Vec<AbsMarker>) {
    for (ordinal, event) in line.events.iter().enumerate() {
        let step = str_stat(plane, event, ids.step_name)
            .and_then(|s| s.trim().parse().ok())
            .or_else(|| int_stat(plane, event, ids.group_id))
            .unwrap_or(ordinal as i64);
        out.push(AbsMarker {
            step,
            start: line.event_start_ps(event),
            dur: event.duration_ps.max(0),
            device: Some(device),
            source: StepSource::DeviceStepsLine,
        });
    }
}

fn device_plane(plane: &XPlane, kind: DeviceKind, names: &mut Interner, markers: &mut Vec<AbsMarker>) -> PendingDevice {
    let ids = Ids::of(plane);
    let id = plane_id(plane);
    let mut dev = PendingDevice {
        id,
        name: plane.name.clone(),
        kind,
        events: Vec::new(),
        modules: Vec::new(),
        launches: Vec::new(),
        collectives: Vec::new(),
    };
    for line in &plane.lines {
        let lname = line.name.as_str();
        match lname {
            "XLA Modules" | "Sparse Core Modules" => {
                for e in &line.events {
                    let name = names.intern(plane.event_display_name(e));
                    dev.modules.push(abs(line, e, name, EventClass::Module));
                }
            }
            "Steps" => device_markers(plane, &ids, line, id, markers),
            "XLA Ops" | "Sparse Core Ops" if kind == DeviceKind::Tpu => {
                for e in &line.events {
                    let display = plane.event_display_name(e);
                    let class = classify_xla_op(display, str_stat(plane, e, ids.hlo_category));
                    let name = names.intern(display);
                    let ev = abs(line, e, name, class);
                    dev.collectives.extend(collective_of(plane, &ids, e, &ev, names));
                    dev.events.push(ev);
                }
            }
            _ if kind == DeviceKind::Gpu && is_gpu_stream_line(lname) => {
                for e in &line.events {
                    let display = plane.event_display_name(e);
                    let class = classify_gpu_kernel(display);
                    let name = names.intern(display);
                    let ev = abs(line, e, name, class);
                    // A collective kernel is matched across hosts by the HLO op it runs (`all-reduce-start.2`),
                    // the same on every host, not by its kernel's name.
                    if let Some(mut c) = collective_of(plane, &ids, e, &ev, names) {
                        if let Some(op) = str_stat(plane, e, ids.hlo_op).filter(|s| !s.is_empty()) {
                            c.0.name = names.intern(op);
                        }
                        dev.collectives.push(c);
                    }
                    dev.events.push(ev);
                    dev.launches.push((line.id, int_stat(plane, e, ids.correlation)));
                }
            }
            _ => {}
        }
    }
    dev
}

/// What to add to the capture's times to make them wall-clock times: the profiler normalises a capture's
/// timestamps to its start (the `Task Environment` plane's `profile_start_time`, ns since the epoch) — without
/// it, the hosts of a run would be aligned by when each started profiling, not by the clock. 0 when the plane
/// does not say, or when the times already are the clock's (the earliest at or after the start's half).
fn profile_start_ps(space: &XSpace, earliest_ps: i128) -> i128 {
    let Some(plane) = space.plane_by_name(TASK_ENVIRONMENT_PLANE) else { return 0 };
    let Some(start_ns) = plane.plane_stat("profile_start_time").and_then(|s| s.value.as_i64()).filter(|s| *s > 0)
    else {
        return 0;
    };
    let start_ps = i128::from(start_ns) * 1000;
    if earliest_ps >= start_ps / 2 {
        0
    } else {
        start_ps
    }
}

/// The plane the profiler writes the capture's session facts on.
const TASK_ENVIRONMENT_PLANE: &str = "Task Environment";

/// Builds the timeline of one host's XSpace (see the module docs). `host` names the host ("" when
/// single-host / unknown).
pub fn from_xspace(space: &XSpace, host: &str) -> Timeline {
    let mut names = Interner::default();
    let mut markers: Vec<AbsMarker> = Vec::new();
    let mut devices: Vec<PendingDevice> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let events_read: u64 = space.planes.iter().map(|p| p.event_count() as u64).sum();

    for plane in &space.planes {
        if is_tpu_plane(&plane.name) {
            devices.push(device_plane(plane, DeviceKind::Tpu, &mut names, &mut markers));
        } else if plane.name.starts_with("/device:GPU:") {
            devices.push(device_plane(plane, DeviceKind::Gpu, &mut names, &mut markers));
        } else if plane.name.starts_with("/device:") {
            notes.push(format!("plane `{}` skipped (not a TPU or GPU device)", plane.name));
        }
    }

    let mut threads: Vec<PendingThread> = Vec::new();
    if let Some(plane) = space.plane_by_name(HOST_CPU_PLANE) {
        let ids = Ids::of(plane);
        let cpu_only = devices.is_empty();
        let mut cpu = PendingDevice {
            id: 0,
            name: CPU_EXECUTOR_NAME.to_owned(),
            kind: DeviceKind::CpuExecutor,
            events: Vec::new(),
            modules: Vec::new(),
            launches: Vec::new(),
            collectives: Vec::new(),
        };
        let mut lone_markers = 0i64;
        // What depends only on an event's metadata (or its op's name reference), worked out once per id rather
        // than once per event: the name lookups, interning and classification were half the timeline's time.
        let mut by_metadata: FxMap<i64, MetadataFacts> = FxMap::default();
        let mut op_by_ref: FxMap<u64, (NameId, EventClass)> = FxMap::default();
        let display_name = |cache: &mut FxMap<i64, MetadataFacts>, names: &mut Interner, e: &XEvent| -> NameId {
            let facts = cache.get_mut(&e.metadata_id).expect("facts are recorded before any name is asked for");
            *facts.display.get_or_insert_with(|| names.intern(plane.event_display_name(e)))
        };
        for line in &plane.lines {
            if is_derived_host_line(&line.name) {
                continue;
            }
            let tname = if line.display_name.is_empty() { line.name.clone() } else { line.display_name.clone() };
            let mut thread = PendingThread {
                id: u64::try_from(line.id).unwrap_or(0),
                name: tname,
                events: Vec::new(),
                calls: Vec::new(),
            };
            for e in &line.events {
                let meta = *by_metadata.entry(e.metadata_id).or_insert_with(|| MetadataFacts {
                    step_marker: is_host_step_marker_name(plane.event_name(e)),
                    display: None,
                });
                if meta.step_marker {
                    let gid = int_stat(plane, e, ids.group_id);
                    let root = int_stat(plane, e, ids.root).is_some_and(|r| r != 0);
                    let step_num = int_stat(plane, e, ids.step_num);
                    if gid.is_some() || root || step_num.is_some() {
                        let step = step_num.or(gid).unwrap_or_else(|| {
                            lone_markers += 1;
                            lone_markers - 1
                        });
                        markers.push(AbsMarker {
                            step,
                            start: line.event_start_ps(e),
                            dur: e.duration_ps.max(0),
                            device: None,
                            source: StepSource::HostAnnotation,
                        });
                    }
                }
                if cpu_only {
                    if let Some(op) = stat(plane, e, ids.hlo_op) {
                        let mut op_of = |op_name: &str| (names.intern(op_name), classify_cpu_op(op_name));
                        let (name, class) = match op.value {
                            // XLA:CPU names its ops by reference: resolve and classify each name once.
                            StatValue::Ref(r) => *op_by_ref.entry(r).or_insert_with(|| {
                                op_of(plane.stat_str(op).unwrap_or_else(|| plane.event_display_name(e)))
                            }),
                            _ => op_of(plane.stat_str(op).unwrap_or_else(|| plane.event_display_name(e))),
                        };
                        let ev = abs(line, e, name, class);
                        cpu.collectives.extend(collective_of(plane, &ids, e, &ev, &mut names));
                        cpu.events.push(ev);
                        continue;
                    }
                    if stat(plane, e, ids.hlo_module).is_some() {
                        let name = display_name(&mut by_metadata, &mut names, e);
                        cpu.modules.push(abs(line, e, name, EventClass::Module));
                        continue;
                    }
                }
                let name = display_name(&mut by_metadata, &mut names, e);
                thread.events.push(abs(line, e, name, EventClass::Other));
                if !cpu_only {
                    if let Some(c) = int_stat(plane, e, ids.correlation) {
                        thread.calls.push((c, line.event_start_ps(e), e.duration_ps.max(0)));
                    }
                }
            }
            if !thread.events.is_empty() {
                threads.push(thread);
            }
        }
        if !cpu.events.is_empty() {
            devices.push(cpu);
        }
    }

    // Markers are kept in a deterministic order: by start, then device.
    let origin = devices
        .iter()
        .flat_map(|d| d.events.iter().chain(&d.modules).map(|e| e.start))
        .chain(threads.iter().flat_map(|t| t.events.iter().map(|e| e.start)))
        .chain(markers.iter().map(|m| m.start))
        .min()
        .unwrap_or(0);
    let rel = |start: i128| i64::try_from(start - origin).unwrap_or(i64::MAX);
    let conv = |v: Vec<AbsEvent>| -> Vec<Event> {
        let mut out: Vec<Event> = v
            .into_iter()
            .map(|e| Event { start_ps: rel(e.start), dur_ps: e.dur, name: e.name, class: e.class })
            .collect();
        sort_events(&mut out);
        out
    };

    // The launch calls, by correlation id: (relative start, duration, pending thread index).
    let mut calls: HashMap<i64, (i64, i64, usize)> = HashMap::new();
    for (ti, t) in threads.iter_mut().enumerate() {
        for (c, start, dur) in t.calls.drain(..) {
            calls.entry(c).or_insert((rel(start), dur, ti));
        }
    }
    let mut order: Vec<usize> = (0..threads.len()).collect();
    order.sort_by(|&a, &b| threads[a].name.cmp(&threads[b].name).then(threads[a].id.cmp(&threads[b].id)));
    let mut final_index = vec![0u32; threads.len()];
    for (i, &pending) in order.iter().enumerate() {
        final_index[pending] = u32::try_from(i).unwrap_or(u32::MAX);
    }
    let mut out_devices: Vec<Device> = devices
        .into_iter()
        .map(|d| {
            let mut events: Vec<Event> = d
                .events
                .into_iter()
                .map(|e| Event { start_ps: rel(e.start), dur_ps: e.dur, name: e.name, class: e.class })
                .collect();
            let mut launches: Vec<Launch> = d
                .launches
                .iter()
                .map(|&(stream, correlation)| {
                    let call = correlation.and_then(|c| calls.get(&c));
                    Launch {
                        stream: Some(stream),
                        correlation,
                        launch_ps: call.map(|c| c.0),
                        launch_dur_ps: call.map_or(0, |c| c.1),
                        launch_thread: call.and_then(|c| final_index.get(c.2).copied()),
                        ..Launch::default()
                    }
                })
                .collect();
            if launches.iter().all(|l| l.launch_ps.is_none()) {
                launches.clear();
            }
            super::sort_with_launches(&mut events, &mut launches);
            let mut collectives: Vec<CollectiveOp> = d
                .collectives
                .into_iter()
                .filter_map(|(e, scope, run, (bytes, group_size))| match e.class {
                    EventClass::Collective(kind) => Some(CollectiveOp {
                        start_ps: rel(e.start),
                        dur_ps: e.dur,
                        name: e.name,
                        kind,
                        scope,
                        run,
                        bytes,
                        group_size,
                        bytes_from_hlo: bytes.is_some(),
                    }),
                    _ => None,
                })
                .collect();
            collectives.sort_by_key(|c| (c.start_ps, c.name));
            Device {
                id: d.id,
                name: d.name,
                kind: d.kind,
                host: host.to_owned(),
                events,
                modules: conv(d.modules),
                launches,
                collectives,
            }
        })
        .collect();
    out_devices.sort_by_cached_key(device_order);
    let mut pending: Vec<Option<PendingThread>> = threads.into_iter().map(Some).collect();
    let host_threads: Vec<HostThread> = order
        .iter()
        .filter_map(|&i| pending.get_mut(i).and_then(Option::take))
        .map(|t| HostThread { id: t.id, name: t.name, host: host.to_owned(), events: conv(t.events) })
        .collect();
    let host_name = names.intern(host);
    let mut steps: Vec<StepMarker> = markers
        .into_iter()
        .map(|m| StepMarker {
            step: m.step,
            start_ps: rel(m.start),
            dur_ps: m.dur,
            device: m.device,
            host: m.device.is_none().then_some(host_name),
            source: m.source,
        })
        .collect();
    steps.sort_by_key(|m| (m.start_ps, m.device, m.step));

    Timeline {
        source: TimelineSource::XSpace,
        origin_ps: origin + profile_start_ps(space, origin),
        devices: out_devices,
        host_threads,
        steps,
        names: names.into_names(),
        events_read,
        notes,
        rank: None,
        chip: xspace_chip(space),
    }
}

/// The catalog chip of the capture's first TPU or GPU plane (its `device_type_string` or `gpu_device_name`).
fn xspace_chip(space: &XSpace) -> Option<String> {
    let plane = space.planes.iter().find(|p| is_tpu_plane(&p.name) || p.name.starts_with("/device:GPU:"))?;
    ["device_type_string", "gpu_device_name"].iter().find_map(|stat| {
        let s = plane.plane_stat(stat)?;
        let text = match &s.value {
            StatValue::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
            _ => plane.stat_str(s)?.to_string(),
        };
        falcon_core::catalog::chip_for_device(&text).map(|c| c.name.to_string())
    })
}
