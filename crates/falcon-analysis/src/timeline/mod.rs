//! One in-memory timeline model for deep trace analysis, fed by two readers: an XSpace (`xspace.rs`)
//! and Chrome trace JSON (`chrome.rs`: XLA/XProf's trace viewer output, JAX's `*.trace.json.gz`,
//! PyTorch profiler traces). The trace analyses read only this model.
//!
//! The model is deliberately small: times are integer picoseconds relative to the earliest event of the
//! trace (`origin_ps`, absolute, for display), names are interned, and each event is one fixed-size
//! row, so a trace costs well under its JSON size in memory.
//!
//! LEAD-FIXED TYPE SHAPES: readers (helper F) and analyses (helper G) code against these; fields may be
//! added by telling the lead, never removed or renamed.

use serde::Serialize;

pub mod chrome;
pub mod hlo_text;
pub mod xspace;

/// Index into [`Timeline::names`].
pub type NameId = u32;

/// What an event on a device track does, decided by the reader from names/categories/lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventClass {
    /// A compute op / kernel (XLA op, CUDA compute kernel, PyTorch CPU op on an executor thread).
    Compute,
    /// A collective (see [`CollectiveKind`]).
    Collective(CollectiveKind),
    /// Memory copy / memset / DMA / host-offload transfer on the device.
    MemCopy,
    /// Infeed / outfeed / host send-recv on the device.
    InfeedOutfeed,
    /// The device waits on the host (e.g. a host transfer it blocks on, a `*-done` wait on a host op).
    HostWait,
    /// A top-level program/module execution (`XLA Modules` line, PyTorch `ProfilerStep`-free fallback):
    /// used for step detection, never counted as busy time by itself.
    Module,
    /// Anything else on a device track (counted as compute only if a reader says so).
    Other,
}

/// Kinds of collective communication.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum CollectiveKind {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    SendRecv,
    CollectivePermute,
    Other,
}

impl CollectiveKind {
    /// Stable lowercase name (`all-reduce`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            CollectiveKind::AllReduce => "all-reduce",
            CollectiveKind::AllGather => "all-gather",
            CollectiveKind::ReduceScatter => "reduce-scatter",
            CollectiveKind::AllToAll => "all-to-all",
            CollectiveKind::SendRecv => "send-recv",
            CollectiveKind::CollectivePermute => "collective-permute",
            CollectiveKind::Other => "other",
        }
    }
}

/// One event (slice): `[start_ps, start_ps + dur_ps)` relative to [`Timeline::origin_ps`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Event {
    pub start_ps: i64,
    pub dur_ps: i64,
    pub name: NameId,
    pub class: EventClass,
}

impl Event {
    pub fn end_ps(&self) -> i64 {
        self.start_ps.saturating_add(self.dur_ps)
    }
}

/// What kind of executor a device track is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeviceKind {
    Tpu,
    Gpu,
    /// In a CPU-only trace: the thread pool that runs compiled ops (XLA:CPU executor threads,
    /// PyTorch's CPU op threads) merged into one device.
    CpuExecutor,
}

/// How one device event was launched, and with what, for GPU traces that record it (PyTorch's `kernel`,
/// `gpu_memcpy`, `gpu_memset` events and their `cuda_runtime` / `cuda_driver` calls; XSpace GPU stream events and
/// the host events carrying the same `correlation_id`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Launch {
    /// The stream the event ran on (PyTorch `stream`, XSpace the stream line's id); `None` when unknown.
    pub stream: Option<i64>,
    /// The CUPTI correlation id tying the event to its launch call; `None` when the trace has none.
    pub correlation: Option<i64>,
    /// Start of the host call that launched it (`cudaLaunchKernel`, `cuLaunchKernelEx`, `cudaMemcpyAsync`,
    /// `cudaGraphLaunch`, …), ps relative to the timeline's origin; `None` when the call is not in the trace.
    pub launch_ps: Option<i64>,
    /// The call's duration, ps (0 when unknown).
    pub launch_dur_ps: i64,
    /// Index into [`Timeline::host_threads`] of the thread that made the call.
    pub launch_thread: Option<u32>,
    /// Kernel launch shape and resources (zeros when unknown).
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub registers_per_thread: u32,
    /// Shared memory a block, bytes (static + dynamic).
    pub shared_memory_bytes: u32,
    /// The profiler's estimated achieved occupancy, percent.
    pub occupancy_percent: Option<f32>,
}

/// Sorts a device's events by start (as every reader does) and keeps `launches` parallel to them; `launches`
/// is left empty when it is, else it must have one entry per event.
pub(crate) fn sort_with_launches(events: &mut Vec<Event>, launches: &mut Vec<Launch>) {
    if launches.len() != events.len() {
        launches.clear();
    }
    if launches.is_empty() {
        events.sort_unstable_by_key(|e| (e.start_ps, std::cmp::Reverse(e.dur_ps), e.name));
        return;
    }
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_unstable_by_key(|&i| (events[i].start_ps, std::cmp::Reverse(events[i].dur_ps), events[i].name, i));
    *events = order.iter().map(|&i| events[i]).collect();
    *launches = order.iter().map(|&i| launches[i]).collect();
}

/// One device: all its op events (several lines/streams merged), sorted by start.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Device {
    /// Stable id within the trace (plane id / pid).
    pub id: u32,
    /// E.g. `/device:TPU:0`, `GPU 0`, `XLA:CPU executor threads`.
    pub name: String,
    pub kind: DeviceKind,
    /// Host the device belongs to ("" when unknown / single host).
    pub host: String,
    /// Op events (compute, collectives, copies, host waits), sorted by `start_ps`; may overlap
    /// (streams / threads run concurrently).
    pub events: Vec<Event>,
    /// Top-level module executions (`EventClass::Module`), sorted by `start_ps`.
    pub modules: Vec<Event>,
    /// How each event was launched: empty when the trace does not say, else one per event of `events`
    /// (`launches[i]` is `events[i]`'s).
    #[serde(skip)]
    pub launches: Vec<Launch>,
    /// The device's collectives with what identifies each on its other members (the reader's account, sorted by
    /// start); empty when the reader knows no more than `events` (the analysis then matches collectives by step and
    /// occurrence).
    #[serde(skip)]
    pub collectives: Vec<CollectiveOp>,
}

/// One collective as it ran on one member (device or rank), with what identifies the same collective on the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollectiveOp {
    pub start_ps: i64,
    pub dur_ps: i64,
    /// The op (`all-reduce.3`, `gloo:all_reduce`).
    pub name: NameId,
    pub kind: CollectiveKind,
    /// What it belongs to on every member: XSpace the program (`hlo_module`); PyTorch the process group.
    pub scope: NameId,
    /// The execution it ran in, the same number on every member: XSpace `run_id`; PyTorch the collective's sequence
    /// number in its group. `None` when the trace records none (members are then matched by step and occurrence).
    pub run: Option<i64>,
    /// The message the collective moves, bytes, by NCCL-tests' convention (the larger of its input and output).
    pub bytes: Option<u64>,
    /// The members of its group, when the trace says.
    pub group_size: Option<u32>,
    /// Whether `bytes` came from the HLO instruction's shapes (an XSpace op) rather than a message record.
    pub bytes_from_hlo: bool,
}

impl CollectiveOp {
    pub fn end_ps(&self) -> i64 {
        self.start_ps.saturating_add(self.dur_ps)
    }
}

impl Device {
    /// The launch of event `i`, when the trace records launches.
    pub fn launch(&self, i: usize) -> Option<&Launch> {
        self.launches.get(i)
    }
}

/// One host thread (or host-side line): its events sorted by start (may nest).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct HostThread {
    pub id: u64,
    pub name: String,
    pub host: String,
    pub events: Vec<Event>,
}

/// Where a step marker came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepSource {
    /// A device `Steps` line.
    DeviceStepsLine,
    /// `ProfilerStep#N` (PyTorch).
    ProfilerStep,
    /// Host `train…`/`test…`/`TraceContext` annotations (JAX `StepTraceAnnotation`).
    HostAnnotation,
}

/// A step marker as found in the trace (steps may also be derived from module executions by the
/// analysis when there are none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct StepMarker {
    pub step: i64,
    pub start_ps: i64,
    pub dur_ps: i64,
    /// The device whose `Steps` line it is on; `None` for host markers (they span all devices of their host).
    pub device: Option<u32>,
    /// The host whose marker it is, interned in [`Timeline::names`] (`None` when the trace is of one host: it spans
    /// every device).
    pub host: Option<NameId>,
    pub source: StepSource,
}

/// Which reader produced the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimelineSource {
    #[serde(rename = "xspace")]
    XSpace,
    ChromeJson,
    #[serde(rename = "pytorch_json")]
    PyTorchJson,
}

/// The whole trace.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Timeline {
    pub source: TimelineSource,
    /// Absolute time of `start_ps == 0`, picoseconds since the Unix epoch when known (else 0).
    pub origin_ps: i128,
    pub devices: Vec<Device>,
    pub host_threads: Vec<HostThread>,
    pub steps: Vec<StepMarker>,
    /// Interned event names.
    pub names: Vec<String>,
    /// Events read, by the reader's count (all phases kept).
    pub events_read: u64,
    /// Reader remarks (skipped events, unknown phases, clock assumptions).
    pub notes: Vec<String>,
    /// The rank of a PyTorch trace of one rank of a distributed run (its `distributedInfo`); `None` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<i64>,
    /// The catalog chip the trace's devices are (`v6e`, `h100-80gb`), when the trace names one: what its
    /// collectives' bus bandwidth is held against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chip: Option<String>,
}

impl Timeline {
    /// The name of an interned id ("" if out of range).
    pub fn name(&self, id: NameId) -> &str {
        self.names.get(id as usize).map_or("", String::as_str)
    }

    /// Adds another host's timeline (a multi-host capture read file by file): its devices, host threads
    /// and step markers join this one, with times moved to this timeline's origin (the earlier of the
    /// two becomes the origin), names re-interned, and device ids renumbered after this one's.
    pub fn append(&mut self, mut other: Timeline) {
        let origin = if self.devices.is_empty() && self.host_threads.is_empty() {
            other.origin_ps
        } else {
            self.origin_ps.min(other.origin_ps)
        };
        let shift_self = i64::try_from(self.origin_ps - origin).unwrap_or(0);
        let shift_other = i64::try_from(other.origin_ps - origin).unwrap_or(0);
        if shift_self != 0 {
            shift_all(self, shift_self);
        }
        self.origin_ps = origin;
        if self.chip.is_none() {
            self.chip = other.chip.take();
        }
        let mut index: std::collections::HashMap<String, NameId> =
            self.names.iter().enumerate().map(|(i, n)| (n.clone(), i as NameId)).collect();
        let mut remap: Vec<NameId> = Vec::with_capacity(other.names.len());
        for n in other.names.drain(..) {
            let next = self.names.len() as NameId;
            let id = *index.entry(n.clone()).or_insert_with(|| {
                self.names.push(n);
                next
            });
            remap.push(id);
        }
        let fix = |e: &mut Event| {
            e.start_ps = e.start_ps.saturating_add(shift_other);
            e.name = remap.get(e.name as usize).copied().unwrap_or(e.name);
        };
        let thread_offset = u32::try_from(self.host_threads.len()).unwrap_or(u32::MAX);
        let first_id = self.devices.iter().map(|d| d.id + 1).max().unwrap_or(0);
        let mut id_map = std::collections::HashMap::new();
        for (i, mut d) in other.devices.into_iter().enumerate() {
            let new_id = first_id + i as u32;
            id_map.insert(d.id, new_id);
            d.id = new_id;
            d.events.iter_mut().for_each(fix);
            d.modules.iter_mut().for_each(fix);
            for c in &mut d.collectives {
                c.start_ps = c.start_ps.saturating_add(shift_other);
                c.name = remap.get(c.name as usize).copied().unwrap_or(c.name);
                c.scope = remap.get(c.scope as usize).copied().unwrap_or(c.scope);
            }
            for l in &mut d.launches {
                l.launch_ps = l.launch_ps.map(|t| t.saturating_add(shift_other));
                l.launch_thread = l.launch_thread.map(|t| t.saturating_add(thread_offset));
            }
            self.devices.push(d);
        }
        for mut t in other.host_threads {
            t.events.iter_mut().for_each(fix);
            self.host_threads.push(t);
        }
        for mut m in other.steps {
            m.start_ps = m.start_ps.saturating_add(shift_other);
            m.device = m.device.and_then(|d| id_map.get(&d).copied());
            m.host = m.host.map(|h| remap.get(h as usize).copied().unwrap_or(h));
            self.steps.push(m);
        }
        self.steps.sort_by_key(|m| (m.start_ps, m.step, m.host));
        self.events_read += other.events_read;
        self.notes.extend(other.notes);
    }
}

/// Names `host` the host of every device, host thread and host step marker of a one-host timeline (a rank's).
pub fn set_host(tl: &mut Timeline, host: &str) {
    let id = match tl.names.iter().position(|n| n == host) {
        Some(i) => i as NameId,
        None => {
            tl.names.push(host.to_string());
            (tl.names.len() - 1) as NameId
        }
    };
    for d in &mut tl.devices {
        d.host = host.to_string();
    }
    for t in &mut tl.host_threads {
        t.host = host.to_string();
    }
    for m in tl.steps.iter_mut().filter(|m| m.device.is_none()) {
        m.host = Some(id);
    }
}

fn shift_all(tl: &mut Timeline, by: i64) {
    let shift = |e: &mut Event| e.start_ps = e.start_ps.saturating_add(by);
    for d in &mut tl.devices {
        d.events.iter_mut().for_each(shift);
        d.modules.iter_mut().for_each(shift);
        for c in &mut d.collectives {
            c.start_ps = c.start_ps.saturating_add(by);
        }
        for l in &mut d.launches {
            l.launch_ps = l.launch_ps.map(|t| t.saturating_add(by));
        }
    }
    for t in &mut tl.host_threads {
        t.events.iter_mut().for_each(shift);
    }
    for m in &mut tl.steps {
        m.start_ps = m.start_ps.saturating_add(by);
    }
}

/// Classifies an op name into a collective kind, if it is one (XLA HLO names like `all-reduce.3`,
/// `all-gather-start`, `reduce-scatter`, `all-to-all`, `collective-permute`, `send`/`recv`; NCCL
/// kernels like `ncclDevKernel_AllReduce_Sum_f32_RING_LL`, `ncclKernel_AllGather…`; PyTorch
/// `c10d::allreduce_`, `nccl:all_reduce`).
pub fn collective_kind(name: &str) -> Option<CollectiveKind> {
    let lower = name.to_ascii_lowercase();
    let n = lower.as_str();
    let has = |s: &str| n.contains(s);
    let is_nccl = has("nccl") || n.starts_with("c10d::") || n.starts_with("rccl") || n.starts_with("hccl");
    if has("all-reduce") || has("allreduce") || has("all_reduce") {
        Some(CollectiveKind::AllReduce)
    } else if has("all-gather") || has("allgather") || has("all_gather") {
        Some(CollectiveKind::AllGather)
    } else if has("reduce-scatter") || has("reducescatter") || has("reduce_scatter") {
        Some(CollectiveKind::ReduceScatter)
    } else if has("all-to-all") || has("alltoall") || has("all_to_all") {
        Some(CollectiveKind::AllToAll)
    } else if has("collective-permute") || has("collectivepermute") {
        Some(CollectiveKind::CollectivePermute)
    } else if n.starts_with("send") || n.starts_with("recv") || (is_nccl && (has("send") || has("recv"))) {
        Some(CollectiveKind::SendRecv)
    } else if is_nccl {
        Some(CollectiveKind::Other)
    } else {
        None
    }
}

/// Bytes of one element of a PyTorch / NCCL dtype name (`float`, `Float`, `c10::BFloat16`, `long int`, `ncclFloat16`,
/// …), `None` for a name not known.
pub fn dtype_bytes(name: &str) -> Option<u8> {
    let n = name.trim().trim_start_matches("c10::").trim_start_matches("nccl").to_ascii_lowercase();
    Some(match n.as_str() {
        "double" | "float64" | "long" | "long int" | "int64" | "int64_t" | "uint64" | "complexfloat" | "complex64" => 8,
        "float" | "float32" | "int" | "int32" | "int32_t" | "uint32" => 4,
        "half" | "float16" | "bfloat16" | "short" | "int16" | "short int" => 2,
        "byte" | "char" | "signed char" | "unsigned char" | "bool" | "int8" | "uint8" => 1,
        "complexdouble" | "complex128" => 16,
        _ if n.starts_with("float8") => 1,
        _ => return None,
    })
}
