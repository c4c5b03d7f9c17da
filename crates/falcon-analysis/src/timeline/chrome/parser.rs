//! Parse state: the events of a trace into a `Timeline` — interned names, processes and threads, flows and
//! launches — fed a pre-parsed batch at a time (`apply`).

use super::event::{
    ArgFields, CommArgs, Fields, IdKey, Interned, LaunchArgs, PreBatch, PreId, Raw, F_HLO_MODULE, F_HLO_OP, F_INSTANT,
};
use super::scanner::Envelope;
use super::values::split_us;
#[allow(unused_imports)]
use super::*;

#[derive(Default)]
pub(super) struct Parser {
    pub(super) names: Interner,
    pub(super) id_strs: Interner,
    pub(super) cats: Interner,
    pub(super) tracks: FxMap<(IdKey, IdKey), u32>,
    pub(super) track_keys: Vec<(IdKey, IdKey)>,
    pub(super) last_track: Option<((IdKey, IdKey), u32)>,
    pub(super) proc_names: FxMap<IdKey, String>,
    pub(super) thread_names: FxMap<(IdKey, IdKey), String>,
    pub(super) raws: Vec<Raw>,
    pub(super) launch_args: Vec<LaunchArgs>,
    pub(super) open: FxMap<u32, Vec<Fields>>,
    /// Events that may be on a `Steps` line: (raw index, step).
    pub(super) step_cands: Vec<(u32, Option<i64>)>,
    pub(super) host_marks: Vec<(u32, Option<i64>)>,
    pub(super) profiler_steps: Vec<(u32, i64)>,
    pub(super) base_us: Option<i64>,
    pub(super) base_time_ns: Option<i64>,
    pub(super) pytorch_envelope: bool,
    pub(super) saw_trace_events: bool,
    pub(super) top_is_array: bool,
    pub(super) top_keys: Vec<String>,
    pub(super) rank: Option<i64>,
    /// The catalog chip of `deviceProperties`' first device.
    pub(super) chip: Option<String>,
    pub(super) events_read: u64,
    pub(super) with_ph: u64,
    pub(super) empty_objects: u64,
    pub(super) no_ph_objects: u64,
    pub(super) skipped_phases: BTreeMap<char, u64>,
    pub(super) dropped_no_ts: u64,
    pub(super) dropped_no_dur: u64,
    pub(super) dropped_range: u64,
    pub(super) unmatched_end: u64,
    pub(super) instants_dropped: u64,
    pub(super) scratch: String,
}

impl Parser {
    pub(super) fn track(&mut self, pid: IdKey, tid: IdKey) -> u32 {
        if let Some((k, t)) = self.last_track {
            if k == (pid, tid) {
                return t;
            }
        }
        let next = u32::try_from(self.track_keys.len()).unwrap_or(u32::MAX);
        let t = *self.tracks.entry((pid, tid)).or_insert(next);
        if t == next {
            self.track_keys.push((pid, tid));
        }
        self.last_track = Some(((pid, tid), t));
        t
    }

    /// µs → ps relative to the first timestamp's whole µs.
    pub(super) fn rel_ps(&mut self, ts_us: f64) -> Option<i64> {
        let (whole, frac_ps) = split_us(ts_us)?;
        let base = *self.base_us.get_or_insert(whole);
        whole.checked_sub(base)?.checked_mul(1_000_000)?.checked_add(frac_ps)
    }

    pub(super) fn pre_id(&mut self, pb: &PreBatch, id: PreId) -> IdKey {
        match id {
            PreId::None => IdKey::None,
            PreId::Num(n) => IdKey::Num(n),
            PreId::Str(span) => IdKey::Str(self.id_strs.intern(pb.str(span))),
        }
    }

    pub(super) fn set_envelope(&mut self, env: Envelope) {
        self.base_time_ns = env.base_time_ns;
        self.pytorch_envelope = env.pytorch_envelope;
        self.saw_trace_events = env.saw_trace_events;
        self.top_is_array = env.top_is_array;
        self.top_keys = env.top_keys;
        self.rank = env.rank;
        self.chip = env.device.as_deref().and_then(falcon_core::catalog::chip_for_device).map(|c| c.name.to_string());
    }

    pub(super) fn name_str(&self, id: Option<NameId>) -> &str {
        id.and_then(|i| self.names_ref().get(i as usize)).map_or("", String::as_str)
    }

    pub(super) fn names_ref(&self) -> &[String] {
        self.names.names()
    }

    pub(super) fn is_xla_device_op_track(&self, pid: IdKey, tid: IdKey) -> bool {
        let device = self.proc_names.get(&pid).is_some_and(|p| p.starts_with("/device:"));
        device && self.thread_names.get(&(pid, tid)).is_some_and(|t| t == "XLA Ops" || t == "Sparse Core Ops")
    }

    /// Handles one parsed event object.
    pub(super) fn event(&mut self, f: Fields) {
        if !f.any {
            self.empty_objects += 1;
            return;
        }
        self.events_read += 1;
        let Some(ph) = f.ph else {
            self.no_ph_objects += 1;
            return;
        };
        self.with_ph += 1;
        match ph {
            b'X' => {
                if f.dur.is_none() {
                    self.dropped_no_dur += 1;
                    return;
                }
                self.complete(f, 0);
            }
            b'B' => {
                let t = self.track(f.pid, f.tid);
                self.open.entry(t).or_default().push(f);
            }
            b'E' => {
                let t = self.track(f.pid, f.tid);
                let begin = self.open.get_mut(&t).and_then(Vec::pop);
                match (begin, begin.and_then(|b| b.ts), f.ts) {
                    (Some(mut b), Some(start), Some(end)) => {
                        b.dur = Some(end - start);
                        self.complete(b, 0);
                    }
                    _ => self.unmatched_end += 1,
                }
            }
            b'i' | b'I' | b'R' => {
                if self.is_xla_device_op_track(f.pid, f.tid) {
                    self.complete(Fields { dur: Some(0.0), ..f }, F_INSTANT);
                } else {
                    self.instants_dropped += 1;
                }
            }
            b'M' => {
                let what = self.name_str(f.name);
                if what == "process_name" {
                    self.proc_names.insert(f.pid, std::mem::take(&mut self.scratch));
                } else if what == "thread_name" {
                    self.thread_names.insert((f.pid, f.tid), std::mem::take(&mut self.scratch));
                }
            }
            other => *self.skipped_phases.entry(char::from(other)).or_default() += 1,
        }
    }

    pub(super) fn complete(&mut self, f: Fields, flags: u8) {
        let Some(start_ps) = f.ts.and_then(|ts| self.rel_ps(ts)) else {
            self.dropped_no_ts += 1;
            return;
        };
        let dur_ps =
            split_us(f.dur.unwrap_or(0.0)).and_then(|(whole, frac)| whole.checked_mul(1_000_000)?.checked_add(frac));
        let Some(dur_ps) = dur_ps else {
            self.dropped_range += 1;
            return;
        };
        let dur_ps = dur_ps.max(0);
        let track = self.track(f.pid, f.tid);
        let idx = u32::try_from(self.raws.len()).unwrap_or(u32::MAX);
        let orig_name = f.name.unwrap_or_else(|| self.names.intern(""));
        let mut flags = flags;
        if f.args.hlo_op.is_some() {
            flags |= F_HLO_OP;
        }
        if f.args.hlo_module {
            flags |= F_HLO_MODULE;
        }
        let cat = f.args.hlo_category.or(f.cat).unwrap_or(u32::MAX);
        let mut launch_args = f.args.launch;
        if launch_args.comm.any()
            && !is_comm_record(self.names.names().get(orig_name as usize).map_or("", String::as_str))
        {
            // Only a collective's record keeps its message (every op of a `record_shapes` trace has `Input Dims`).
            launch_args.comm = CommArgs::default();
        }
        let launch = if launch_args.any() {
            self.launch_args.push(launch_args);
            u32::try_from(self.launch_args.len() - 1).unwrap_or(u32::MAX)
        } else {
            u32::MAX
        };
        self.raws.push(Raw { start_ps, dur_ps, name: f.args.hlo_op.unwrap_or(orig_name), track, cat, flags, launch });

        let a = f.args;
        let name = self.names.names().get(orig_name as usize).map_or("", String::as_str);
        if let Some(n) = name.strip_prefix("ProfilerStep#") {
            if let Ok(step) = n.trim().parse::<i64>() {
                self.profiler_steps.push((idx, step));
            }
        }
        if is_host_step_marker_name(name)
            && (a.group_id.is_some() || a.root.is_some_and(|r| r != 0) || a.step_num.is_some())
        {
            let step = a.step_num.or(a.group_id);
            self.host_marks.push((idx, step));
        }
        let maybe_steps_line = self.thread_names.get(&(f.pid, f.tid)).is_none_or(|t| t == "Steps");
        if maybe_steps_line {
            let step = name.trim().parse::<i64>().ok().or(a.group_id).or(a.step_num);
            self.step_cands.push((idx, step));
        }
    }

    pub(super) fn finish(mut self) -> Result<Timeline, ChromeTraceError> {
        if !self.top_is_array && !self.saw_trace_events {
            let keys = if self.top_keys.is_empty() { "none".to_owned() } else { self.top_keys.join(", ") };
            return Err(ChromeTraceError::NotATrace {
                reason: format!("a JSON object without a `traceEvents` array (keys: {keys})"),
                position: None,
            });
        }
        if self.with_ph == 0 && self.no_ph_objects > 0 {
            return Err(ChromeTraceError::NotATrace {
                reason: format!(
                    "none of its {} event objects has a `ph` field (an XProf tool output or other JSON table?)",
                    self.no_ph_objects
                ),
                position: None,
            });
        }
        Ok(self.build())
    }

    pub(super) fn build(&mut self) -> Timeline {
        let mut notes: Vec<String> = Vec::new();
        let pytorch = self.pytorch_envelope
            || ["cpu_op", "kernel", "user_annotation", "gpu_memcpy", "gpu_memset", "cuda_runtime", "python_function"]
                .iter()
                .any(|c| self.cats.get(c).is_some());
        let xla = self.proc_names.values().any(|p| p.starts_with("/device:") || p.starts_with("/host:"));
        let source = if pytorch { TimelineSource::PyTorchJson } else { TimelineSource::ChromeJson };

        // Per-track role.
        #[derive(Clone, Copy, PartialEq)]
        enum Role {
            Host,
            DeviceOps(u32, DeviceKind),
            DeviceModules(u32, DeviceKind),
            DeviceSteps(u32, DeviceKind),
            Skip,
        }
        let mut skipped_lines: BTreeMap<String, u64> = BTreeMap::new();
        let roles: Vec<Role> = self
            .track_keys
            .iter()
            .map(|&(pid, tid)| {
                let pname = self.proc_names.get(&pid).map_or("", String::as_str);
                let tname = self.thread_names.get(&(pid, tid)).map_or("", String::as_str);
                if !pytorch && pname.starts_with("/device:") {
                    let id = match pid {
                        IdKey::Num(n) => u32::try_from(n).unwrap_or(u32::MAX),
                        _ => u32::MAX,
                    };
                    let kind = if pname.starts_with("/device:TPU:") {
                        DeviceKind::Tpu
                    } else if pname.starts_with("/device:GPU:") {
                        DeviceKind::Gpu
                    } else {
                        *skipped_lines.entry(format!("{pname} (not a TPU/GPU device)")).or_default() += 1;
                        return Role::Skip;
                    };
                    match tname {
                        "XLA Ops" | "Sparse Core Ops" if kind == DeviceKind::Tpu => Role::DeviceOps(id, kind),
                        "XLA Modules" | "Sparse Core Modules" => Role::DeviceModules(id, kind),
                        "Steps" => Role::DeviceSteps(id, kind),
                        t if kind == DeviceKind::Gpu && is_gpu_stream_line(t) => Role::DeviceOps(id, kind),
                        t => {
                            let key = if t.starts_with("Host Offload Ops") { "Host Offload Ops" } else { t };
                            *skipped_lines.entry(key.to_owned()).or_default() += 1;
                            Role::Skip
                        }
                    }
                } else if xla && is_derived_host_line(tname) {
                    Role::Skip
                } else {
                    Role::Host
                }
            })
            .collect();
        let any_xla_device = roles.iter().any(|r| !matches!(r, Role::Host | Role::Skip));
        if !skipped_lines.is_empty() {
            let list: Vec<String> = skipped_lines.keys().cloned().collect();
            notes.push(format!("device lines skipped (as XProf's trace viewer or as derived): {}", list.join(", ")));
        }

        let cat_of = |cats: &Interner, c: u32| -> String {
            if c == u32::MAX {
                String::new()
            } else {
                cats.names().get(c as usize).map_or(String::new(), |s| s.to_ascii_lowercase())
            }
        };
        // Category classes for PyTorch.
        let ncats = self.cats.names().len();
        let cat_lower: Vec<String> = (0..ncats).map(|c| cat_of(&self.cats, c as u32)).collect();
        let is_gpu_cat = |c: u32| {
            cat_lower
                .get(c as usize)
                .is_some_and(|s| matches!(s.as_str(), "kernel" | "gpu_memcpy" | "gpu_memset" | "memcpy" | "memset"))
        };
        let is_cat = |c: u32, want: &str| cat_lower.get(c as usize).is_some_and(|s| s == want);
        let pytorch_gpu = pytorch && self.raws.iter().any(|r| is_gpu_cat(r.cat));

        // Step markers' raw indices are collected before events are moved.
        let mut markers: Vec<(i64, i64, i64, Option<u32>, StepSource)> = Vec::new(); // (start, dur, step, device, src)
        for (ordinal, &(idx, step)) in self.step_cands.iter().enumerate() {
            let Some(r) = self.raws.get(idx as usize) else { continue };
            if let Some(Role::DeviceSteps(id, _)) = roles.get(r.track as usize) {
                markers.push((
                    r.start_ps,
                    r.dur_ps,
                    step.unwrap_or(ordinal as i64),
                    Some(*id),
                    StepSource::DeviceStepsLine,
                ));
            }
        }
        let mut lone = 0i64;
        for &(idx, step) in &self.host_marks {
            let Some(r) = self.raws.get(idx as usize) else { continue };
            if roles.get(r.track as usize) == Some(&Role::Host) {
                let step = step.unwrap_or_else(|| {
                    lone += 1;
                    lone - 1
                });
                markers.push((r.start_ps, r.dur_ps, step, None, StepSource::HostAnnotation));
            }
        }
        for &(idx, step) in &self.profiler_steps {
            let Some(r) = self.raws.get(idx as usize) else { continue };
            if pytorch && !is_cat(r.cat, "gpu_user_annotation") {
                markers.push((r.start_ps, r.dur_ps, step, None, StepSource::ProfilerStep));
            }
        }

        // Distribute events.
        let mut devices: BTreeMap<(u8, u32), Device> = BTreeMap::new();
        let mut threads: BTreeMap<u32, Vec<Event>> = BTreeMap::new();
        let mut cpu_candidates: BTreeMap<u32, Vec<Event>> = BTreeMap::new();
        let new_device = |id: u32, kind: DeviceKind, name: String| Device {
            id,
            name,
            kind,
            host: String::new(),
            events: Vec::new(),
            modules: Vec::new(),
            launches: Vec::new(),
            collectives: Vec::new(),
        };
        let no_scope = self.names.intern("");
        let mut cpu_comm: Vec<CollectiveOp> = Vec::new();
        // GPU: the collective kernels whose own args say no message size — (device, index in its collectives,
        // correlation) — and the host's collective records (`record_param_comms`, `nccl:*`) that do, per thread:
        // (start, end, bytes, sequence number).
        let mut unsized_kernels: Vec<((u8, u32), usize, Option<i64>)> = Vec::new();
        let mut records: FxMap<u32, Vec<CommRecord>> = FxMap::default();
        let raws = std::mem::take(&mut self.raws);
        let launch_args = std::mem::take(&mut self.launch_args);
        let args_of = |r: &Raw| launch_args.get(r.launch as usize).copied().unwrap_or_default();
        // PyTorch: the CUDA calls that launched device work, by correlation id: (start, duration, track).
        let mut calls: FxMap<i64, (i64, i64, u32)> = FxMap::default();
        let mut gpu_annotations = 0u64;
        for r in &raws {
            let role = roles.get(r.track as usize).copied().unwrap_or(Role::Skip);
            let name_s = self.names.names().get(r.name as usize).map_or("", String::as_str);
            let ev = |class: EventClass| Event { start_ps: r.start_ps, dur_ps: r.dur_ps, name: r.name, class };
            let (pid, _) = self.track_keys.get(r.track as usize).copied().unwrap_or_default();
            let pname = || self.proc_names.get(&pid).cloned().unwrap_or_default();
            match role {
                Role::Skip => {}
                Role::DeviceOps(id, kind) => {
                    let class = if kind == DeviceKind::Tpu {
                        let c = (r.cat != u32::MAX).then(|| self.cats.names().get(r.cat as usize)).flatten();
                        classify_xla_op(name_s, c.map(String::as_str))
                    } else {
                        classify_gpu_kernel(name_s)
                    };
                    devices.entry((0, id)).or_insert_with(|| new_device(id, kind, pname())).events.push(ev(class));
                }
                Role::DeviceModules(id, kind) => {
                    devices
                        .entry((0, id))
                        .or_insert_with(|| new_device(id, kind, pname()))
                        .modules
                        .push(ev(EventClass::Module));
                }
                Role::DeviceSteps(..) => {}
                Role::Host if pytorch => {
                    if is_gpu_cat(r.cat) {
                        let id = match pid {
                            IdKey::Num(n) => u32::try_from(n).unwrap_or(u32::MAX),
                            _ => u32::MAX,
                        };
                        let mut class = classify_gpu_kernel(name_s);
                        if matches!(
                            cat_lower.get(r.cat as usize).map(String::as_str),
                            Some("gpu_memcpy" | "gpu_memset" | "memcpy" | "memset")
                        ) {
                            class = EventClass::MemCopy;
                        }
                        let a = args_of(r);
                        let d = devices
                            .entry((1, id))
                            .or_insert_with(|| new_device(id, DeviceKind::Gpu, format!("GPU {id}")));
                        if let Some(op) = collective_op(r, class, &a.comm, no_scope) {
                            if op.bytes.is_none() {
                                unsized_kernels.push(((1, id), d.collectives.len(), a.correlation));
                            }
                            d.collectives.push(op);
                        }
                        d.events.push(ev(class));
                        d.launches.push(Launch {
                            stream: a.stream,
                            correlation: a.correlation,
                            // The call's start, resolved below (raw time until then).
                            launch_ps: None,
                            launch_dur_ps: 0,
                            launch_thread: None,
                            grid: a.grid.unwrap_or_default(),
                            block: a.block.unwrap_or_default(),
                            registers_per_thread: a.registers.and_then(|n| u32::try_from(n).ok()).unwrap_or(0),
                            shared_memory_bytes: a.shared_memory.and_then(|n| u32::try_from(n).ok()).unwrap_or(0),
                            occupancy_percent: a.occupancy.map(|o| o as f32),
                        });
                    } else if is_cat(r.cat, "gpu_user_annotation") {
                        gpu_annotations += 1;
                    } else if !pytorch_gpu && is_cat(r.cat, "user_annotation") && is_comm_range(name_s) {
                        // A CPU run's collective (gloo): the range that runs it is the rank's collective.
                        let class = classify_cpu_op(name_s);
                        cpu_comm.extend(collective_op(r, class, &args_of(r).comm, no_scope));
                        cpu_candidates.entry(r.track).or_default().push(ev(class));
                    } else if !pytorch_gpu && is_cat(r.cat, "cpu_op") {
                        cpu_candidates.entry(r.track).or_default().push(ev(classify_cpu_op(name_s)));
                    } else {
                        if let Some(c) = args_of(r).correlation {
                            calls.entry(c).or_insert((r.start_ps, r.dur_ps, r.track));
                        }
                        let comm = args_of(r).comm;
                        if let (true, Some(bytes)) = (is_comm_record(name_s), comm.bytes()) {
                            let kind = crate::timeline::collective_kind(name_s).filter(|_| is_comm_range(name_s));
                            let record = (r.start_ps, r.start_ps + r.dur_ps, bytes, (comm.seq, comm.group), kind);
                            records.entry(r.track).or_default().push(record);
                        }
                        threads.entry(r.track).or_default().push(ev(EventClass::Other));
                    }
                }
                Role::Host => {
                    if xla && !any_xla_device && r.flags & F_HLO_OP != 0 {
                        cpu_candidates.entry(u32::MAX).or_default().push(ev(classify_cpu_op(name_s)));
                    } else if xla && !any_xla_device && r.flags & F_HLO_MODULE != 0 {
                        cpu_candidates.entry(u32::MAX - 1).or_default().push(ev(EventClass::Module));
                    } else {
                        threads.entry(r.track).or_default().push(ev(EventClass::Other));
                    }
                }
            }
        }
        drop(raws);
        size_from_records(&mut devices, &unsized_kernels, &calls, records);
        if gpu_annotations > 0 {
            notes.push(format!("{gpu_annotations} gpu_user_annotation events skipped"));
        }

        // The CPU executor device.
        if !cpu_candidates.is_empty() {
            let mut cpu = new_device(0, DeviceKind::CpuExecutor, String::new());
            if pytorch {
                cpu.name = "CPU op threads".to_owned();
                for (track, mut evs) in cpu_candidates {
                    sort_events(&mut evs);
                    let mut end = i64::MIN;
                    for e in evs {
                        // Partly overlapping (not nested) events are kept so the union stays exact.
                        if e.start_ps >= end || e.end_ps() > end {
                            end = end.max(e.end_ps());
                            cpu.events.push(e);
                        } else {
                            threads.entry(track).or_default().push(Event { class: EventClass::Other, ..e });
                        }
                    }
                }
            } else {
                cpu.name = CPU_EXECUTOR_NAME.to_owned();
                cpu.events = cpu_candidates.remove(&u32::MAX).unwrap_or_default();
                cpu.modules = cpu_candidates.remove(&(u32::MAX - 1)).unwrap_or_default();
            }
            cpu.collectives = std::mem::take(&mut cpu_comm);
            if !cpu.events.is_empty() {
                devices.insert((2, 0), cpu);
            }
        }

        // Origin: the earliest kept event or marker.
        let min_rel = devices
            .values()
            .flat_map(|d| d.events.iter().chain(&d.modules).map(|e| e.start_ps))
            .chain(threads.values().flat_map(|t| t.iter().map(|e| e.start_ps)))
            .chain(markers.iter().map(|m| m.0))
            .min()
            .unwrap_or(0);
        let base_ps = i128::from(self.base_us.unwrap_or(0)) * 1_000_000;
        let first_abs = base_ps + i128::from(min_rel);
        let origin_ps = if let Some(ns) = self.base_time_ns {
            i128::from(ns) * 1000 + first_abs
        } else if first_abs >= 1_000_000_000_000_000_000_000 {
            first_abs
        } else {
            notes.push("timestamps are relative to an unknown epoch: origin_ps is 0".into());
            0
        };

        // Name compaction: keep only the names used, in first-use order.
        let old_names = std::mem::take(&mut self.names).into_names();
        let mut remap: Vec<NameId> = vec![NameId::MAX; old_names.len()];
        let mut new_names: Vec<String> = Vec::new();
        let mut old_names: Vec<Option<String>> = old_names.into_iter().map(Some).collect();
        let mut fix = |e: &mut Event| {
            let i = e.name as usize;
            if let Some(slot) = remap.get_mut(i) {
                if *slot == NameId::MAX {
                    *slot = NameId::try_from(new_names.len()).unwrap_or(NameId::MAX);
                    new_names.push(old_names.get_mut(i).and_then(Option::take).unwrap_or_default());
                }
                e.name = *slot;
            }
            e.start_ps -= min_rel;
        };

        let mut out_devices: Vec<Device> = devices.into_values().collect();
        for d in &mut out_devices {
            d.events.iter_mut().chain(d.modules.iter_mut()).for_each(&mut fix);
            for c in &mut d.collectives {
                let mut e = Event { start_ps: c.start_ps, dur_ps: c.dur_ps, name: c.name, class: EventClass::Other };
                fix(&mut e);
                let mut s = Event { start_ps: 0, dur_ps: 0, name: c.scope, class: EventClass::Other };
                fix(&mut s);
                (c.start_ps, c.name, c.scope) = (e.start_ps, e.name, s.name);
            }
            d.collectives.sort_by_key(|c| (c.start_ps, c.name));
            crate::timeline::sort_with_launches(&mut d.events, &mut d.launches);
            sort_events(&mut d.modules);
            if d.name.is_empty() {
                d.name = format!("device {}", d.id);
            }
        }
        out_devices.sort_by_cached_key(device_order);

        let mut host_threads: Vec<(u32, HostThread)> = Vec::with_capacity(threads.len());
        for (track, mut events) in threads {
            events.iter_mut().for_each(&mut fix);
            sort_events(&mut events);
            let (pid, tid) = self.track_keys.get(track as usize).copied().unwrap_or_default();
            let id = match tid {
                IdKey::Num(n) => n as u64,
                IdKey::Str(s) => u64::from(s),
                IdKey::None => 0,
            };
            let name = self.thread_names.get(&(pid, tid)).cloned().unwrap_or_else(|| {
                let show = |k: IdKey| match k {
                    IdKey::Num(n) => n.to_string(),
                    IdKey::Str(s) => self.id_strs.names().get(s as usize).cloned().unwrap_or_default(),
                    IdKey::None => String::new(),
                };
                format!("{}/{}", show(pid), show(tid))
            });
            host_threads.push((track, HostThread { id, name, host: String::new(), events }));
        }
        host_threads.sort_by(|(_, a), (_, b)| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
        // Each launch's call: its start (relative, like the events), duration and thread index.
        if !calls.is_empty() {
            let index: FxMap<u32, u32> = host_threads
                .iter()
                .enumerate()
                .map(|(i, (track, _))| (*track, u32::try_from(i).unwrap_or(u32::MAX)))
                .collect();
            for l in out_devices.iter_mut().flat_map(|d| d.launches.iter_mut()) {
                if let Some(&(start, dur, track)) = l.correlation.and_then(|c| calls.get(&c)) {
                    l.launch_ps = Some(start - min_rel);
                    l.launch_dur_ps = dur;
                    l.launch_thread = index.get(&track).copied();
                }
            }
        }
        let host_threads: Vec<HostThread> = host_threads.into_iter().map(|(_, t)| t).collect();

        let mut steps: Vec<StepMarker> = markers
            .into_iter()
            .map(|(start, dur, step, device, source)| StepMarker {
                step,
                start_ps: start - min_rel,
                dur_ps: dur,
                device,
                host: None,
                source,
            })
            .collect();
        steps.sort_by_key(|m| (m.start_ps, m.device, m.step));

        // Notes on what was skipped.
        for (ph, n) in &self.skipped_phases {
            notes.push(format!("{n} events of phase `{ph}` skipped (counters, flows, async, …)"));
        }
        let counted = [
            (self.instants_dropped, "instant events dropped"),
            (self.dropped_no_dur, "`X` events without `dur` dropped"),
            (self.dropped_no_ts, "events without a usable `ts` dropped"),
            (self.dropped_range, "events with an out-of-range `dur` dropped"),
            (self.unmatched_end, "unmatched `E` events dropped"),
            (self.open.values().map(|v| v.len() as u64).sum(), "unmatched `B` events dropped"),
            (self.no_ph_objects, "objects without `ph` skipped"),
        ];
        for (n, what) in counted {
            if n > 0 {
                notes.push(format!("{n} {what}"));
            }
        }

        Timeline {
            source,
            origin_ps,
            devices: out_devices,
            host_threads,
            steps,
            names: new_names,
            events_read: self.events_read,
            notes,
            rank: self.rank,
            chip: self.chip.take(),
        }
    }
}

/// A host's collective record: start, end, bytes, (sequence number, process group), and the collective its name says
/// (`nccl:*`).
type CommRecord = (i64, i64, u64, (Option<i64>, Option<NameId>), Option<crate::timeline::CollectiveKind>);

/// Gives each collective kernel whose own args say no message size the one of the host record that launched it: the
/// innermost `record_param_comms` / `nccl:*` range on the launching thread around its launch call (found by the
/// kernel's correlation id), and that record's sequence number when the kernel has none.
fn size_from_records(
    devices: &mut BTreeMap<(u8, u32), Device>,
    kernels: &[((u8, u32), usize, Option<i64>)],
    calls: &FxMap<i64, (i64, i64, u32)>,
    mut records: FxMap<u32, Vec<CommRecord>>,
) {
    if kernels.is_empty() || records.is_empty() {
        return;
    }
    records.values_mut().for_each(|r| r.sort_unstable_by_key(|&(start, end, ..)| (start, std::cmp::Reverse(end))));
    for &(device, i, correlation) in kernels {
        let Some(&(call, _, track)) = correlation.and_then(|c| calls.get(&c)) else { continue };
        let Some(list) = records.get(&track) else { continue };
        // The innermost: the last-starting record that still holds the call.
        let upto = list.partition_point(|&(start, ..)| start <= call);
        let Some(&(_, _, bytes, (seq, group), kind)) = list[..upto].iter().rev().find(|&&(_, end, ..)| call < end)
        else {
            continue;
        };
        if let Some(op) = devices.get_mut(&device).and_then(|d| d.collectives.get_mut(i)) {
            op.bytes = Some(bytes);
            if op.run.is_none() {
                op.run = seq;
                op.scope = group.unwrap_or(op.scope);
            }
            // The record names the collective (`nccl:all_to_all`) where the kernel's name says only how
            // (`ncclKernel_SendRecv_…`).
            op.kind = kind.unwrap_or(op.kind);
        }
    }
}

/// Whether a host range runs a collective (`gloo:all_reduce`, `nccl:all_reduce`, `mpi:…`, `ucc:…`).
fn is_comm_range(name: &str) -> bool {
    ["gloo:", "nccl:", "mpi:", "ucc:"].iter().any(|p| name.starts_with(p))
}

/// The collective of an event classed `class`, when it is one, with what its record says of its message.
fn collective_op(r: &Raw, class: EventClass, comm: &CommArgs, scope: NameId) -> Option<CollectiveOp> {
    let EventClass::Collective(kind) = class else { return None };
    Some(CollectiveOp {
        start_ps: r.start_ps,
        dur_ps: r.dur_ps,
        name: r.name,
        kind,
        // The process group, when the record names it: the same sequence number in two groups is two collectives.
        scope: comm.group.unwrap_or(scope),
        run: comm.seq,
        bytes: comm.bytes(),
        group_size: comm.group_size.and_then(|g| u32::try_from(g).ok()),
        bytes_from_hlo: false,
    })
}

/// Whether an event is a collective's own record: a communication range (`gloo:all_reduce`, `nccl:all_reduce`,
/// `mpi:…`, `ucc:…`), `record_param_comms`, or an NCCL/RCCL kernel.
pub(super) fn is_comm_record(name: &str) -> bool {
    const RANGES: [&str; 4] = ["gloo:", "nccl:", "mpi:", "ucc:"];
    RANGES.iter().any(|p| name.starts_with(p))
        || name == "record_param_comms"
        || name.starts_with("nccl")
        || name.starts_with("rccl")
}

/// Feeds a parsed batch's events to the parser, then returns its error if any.
pub(super) fn apply(p: &mut Parser, pb: PreBatch) -> Result<(), ChromeTraceError> {
    let mut op = 0;
    for ev in &pb.events {
        p.scratch.clear();
        let mut f = Fields {
            any: ev.any,
            ph: ev.ph,
            ts: ev.ts,
            dur: ev.dur,
            args: ArgFields {
                hlo_module: ev.hlo_module,
                group_id: ev.group_id,
                step_num: ev.step_num,
                root: ev.root,
                launch: ev.launch,
                ..ArgFields::default()
            },
            ..Fields::default()
        };
        for o in pb.ops.get(op..ev.ops_end).unwrap_or_default() {
            match *o {
                Interned::Name(s) => f.name = s.map(|s| p.names.intern(pb.str(s))),
                Interned::Cat(s) => f.cat = s.map(|s| p.cats.intern(pb.str(s))),
                Interned::Pid(id) => f.pid = p.pre_id(&pb, id),
                Interned::Tid(id) => f.tid = p.pre_id(&pb, id),
                Interned::ArgName(s) => {
                    p.scratch.clear();
                    p.scratch.push_str(pb.str(s));
                }
                Interned::HloOp(s) => f.args.hlo_op = s.map(|s| p.names.intern(pb.str(s))),
                Interned::HloCategory(s) => f.args.hlo_category = s.map(|s| p.cats.intern(pb.str(s))),
                Interned::ProcessGroup(s) => f.args.launch.comm.group = s.map(|s| p.names.intern(pb.str(s))),
            }
        }
        op = ev.ops_end;
        p.event(f);
    }
    match pb.err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
