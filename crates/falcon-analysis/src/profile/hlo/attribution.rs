//! Kernels inside XLA command buffers charged to the HLO op each executes.
//!
//! With command buffers on (JAX's default on GPU), XLA records runs of thunks into CUDA graphs; every kernel
//! of a graph carries the thunk's annotation as its `hlo_op` (`command_buffer_1`), so XProf and a naive reader
//! see one opaque op holding most of the step. The program still says what ran: the module's schedule (its
//! instruction order), and each kernel's own name —
//!
//! * an XLA-emitted kernel is named after the instruction it was compiled for, with every character but
//!   `[A-Za-z0-9_]` turned into `_` (`fusion.583` → `fusion_583`). XLA reuses one compiled kernel for
//!   structurally identical fusions, so the name identifies a *kind* of instruction: the instructions whose
//!   structure (opcodes, shapes, operand wiring, dimensions, fusion kind, backend config) equals the named
//!   one's;
//! * a library kernel (cuBLAS `nvjet_*`, cuDNN, CUTLASS) names no instruction: it belongs to the next library
//!   call of the schedule (a custom call), and a `Memset`/`Memcpy` just before it to the same call.
//!
//! Each execution of a command buffer (its kernels, one graph launch, in start order) is aligned to the
//! schedule greedily: each kernel goes to the first instruction of its kind at or after the previous match.
//! The alignment is started at the schedule's beginning and at every position the first kernels could have
//! come from, and the start that explains the most kernel time wins. What stays unexplained remains under the
//! command buffer, and the note says how much. Executions with the same kernel sequence are aligned once.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use falcon_xplane::{StatValue, XPlane};

use super::ops::GpuHlo;
use super::program::{Instr, Program};

/// The HLO op each command-buffer kernel executed, by (line index, event index) on its plane.
#[derive(Debug, Default)]
pub(crate) struct Attribution {
    pub(crate) ops: HashMap<(usize, usize), String>,
    /// Kernel time inside command buffers, and the part charged to an op.
    pub(crate) buffer_ps: u64,
    pub(crate) attributed_ps: u64,
    /// Command buffers seen (their `hlo_op`).
    pub(crate) buffers: Vec<String>,
}

impl Attribution {
    /// A one-line account for the notes; `None` when the plane ran no command buffer.
    pub(crate) fn note(&self) -> Option<String> {
        if self.buffer_ps == 0 {
            return None;
        }
        let left = self.buffer_ps - self.attributed_ps.min(self.buffer_ps);
        let pct = |ps: u64| 100.0 * ps as f64 / self.buffer_ps as f64;
        Some(format!(
            "XLA command buffers ({}): {:.1}% of their kernel time charged to the HLO op each kernel executed \
             (from the kernels' names and the program's schedule){}",
            self.buffers.join(", "),
            pct(self.attributed_ps),
            if left > 0 {
                format!("; {:.1}% could not be attributed and stays under the command buffer", pct(left))
            } else {
                String::new()
            }
        ))
    }
}

/// XLA's kernel name of an instruction name (`llvm_ir::SanitizeFunctionName`).
fn sanitized(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

/// A hash of an instruction's structure: what makes XLA reuse one kernel for two instructions.
fn structure(program: &Program<'_>, instr: &Instr<'_>) -> u64 {
    let mut h = DefaultHasher::new();
    let shape = |i: &Instr<'_>| i.proto.shape.as_ref().map(|s| s.text()).unwrap_or_default();
    instr.opcode().hash(&mut h);
    instr.proto.fusion_kind.hash(&mut h);
    shape(instr).hash(&mut h);
    instr.proto.custom_call_target.hash(&mut h);
    instr.proto.backend_config.hash(&mut h);
    for o in program.operands(instr).into_iter().flatten() {
        shape(&o).hash(&mut h);
    }
    if let Some(fused) = program.called(instr, 0).filter(|_| instr.opcode() == "fusion") {
        let order = program.post_order(fused);
        let position: HashMap<i64, usize> = order.iter().enumerate().map(|(k, i)| (i.proto.id, k)).collect();
        for i in &order {
            i.opcode().hash(&mut h);
            shape(i).hash(&mut h);
            i.proto.dimensions.hash(&mut h);
            i.proto.parameter_number.hash(&mut h);
            i.proto.custom_call_target.hash(&mut h);
            for op in &i.proto.operand_ids {
                position.get(op).hash(&mut h);
            }
        }
    }
    h.finish()
}

fn is_copy_kernel(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    l.starts_with("memset") || l.starts_with("memcpy")
}

/// What a kernel could have come from.
enum Kind {
    /// An XLA kernel: positions of the instructions of its structure, sorted.
    Xla(usize),
    /// A library kernel: one of the library calls.
    Library,
    /// A memset or copy: goes with the next call.
    Copy,
}

/// One program's schedule, indexed for the alignment.
struct Schedule {
    /// Instruction names in run order.
    names: Vec<String>,
    /// Positions of each structure class, sorted.
    classes: Vec<Vec<usize>>,
    /// Kernel name → structure class.
    by_kernel: HashMap<String, usize>,
    /// Positions of the library calls (custom calls), sorted.
    library: Vec<usize>,
}

impl Schedule {
    fn of(program: &Program<'_>) -> Option<Schedule> {
        let entry =
            program.computation(program.module.entry_computation_id).or_else(|| program.module.computations.last())?;
        let by_id: HashMap<i64, &super::proto::HloInstructionProto> =
            entry.instructions.iter().map(|i| (i.id, i)).collect();
        let order: Vec<&super::proto::HloInstructionProto> = match program
            .module
            .schedule
            .as_ref()
            .and_then(|s| s.sequences.get(&entry.id))
            .map(|seq| seq.instruction_ids.iter().filter_map(|id| by_id.get(id).copied()).collect::<Vec<_>>())
        {
            Some(order) if !order.is_empty() => order,
            _ => entry.instructions.iter().collect(),
        };
        let mut class_of: HashMap<u64, usize> = HashMap::new();
        let mut classes: Vec<Vec<usize>> = Vec::new();
        let mut by_kernel = HashMap::new();
        let mut library = Vec::new();
        let mut names = Vec::with_capacity(order.len());
        for (pos, proto) in order.iter().enumerate() {
            let instr = Instr { proto, computation: entry };
            names.push(proto.name.clone());
            if matches!(proto.opcode.as_str(), "parameter" | "constant" | "bitcast" | "get-tuple-element" | "tuple") {
                continue;
            }
            if proto.opcode == "custom-call" {
                library.push(pos);
            }
            let sig = structure(program, &instr);
            let next = classes.len();
            let class = *class_of.entry(sig).or_insert(next);
            if class == classes.len() {
                classes.push(Vec::new());
            }
            classes[class].push(pos);
            by_kernel.insert(sanitized(&proto.name), class);
        }
        Some(Schedule { names, classes, by_kernel, library })
    }

    fn kind(&self, kernel: &str) -> Kind {
        if let Some(&c) = self.by_kernel.get(kernel) {
            return Kind::Xla(c);
        }
        if is_copy_kernel(kernel) {
            Kind::Copy
        } else {
            Kind::Library
        }
    }

    fn first_at_or_after(list: &[usize], cursor: usize) -> Option<usize> {
        let i = list.partition_point(|&p| p < cursor);
        list.get(i).copied()
    }

    /// Greedy alignment from `start`: the schedule position of each kernel, and the time explained.
    fn align(&self, kinds: &[Kind], durations: &[u64], start: usize) -> (Vec<Option<usize>>, u64) {
        let mut out = vec![None; kinds.len()];
        let mut cursor = start;
        let mut explained = 0u64;
        let mut pending: Vec<usize> = Vec::new();
        for (k, kind) in kinds.iter().enumerate() {
            let list = match kind {
                Kind::Copy => {
                    pending.push(k);
                    continue;
                }
                Kind::Xla(c) => &self.classes[*c],
                Kind::Library => &self.library,
            };
            let Some(pos) = Self::first_at_or_after(list, cursor) else {
                pending.clear();
                continue;
            };
            out[k] = Some(pos);
            explained += durations[k];
            for p in pending.drain(..) {
                out[p] = Some(pos);
                explained += durations[p];
            }
            cursor = pos + 1;
        }
        (out, explained)
    }

    /// The best alignment of one execution (see the module docs).
    fn best(&self, kinds: &[Kind], durations: &[u64]) -> Vec<Option<usize>> {
        let mut starts = vec![0usize];
        for kind in kinds.iter().filter(|k| !matches!(k, Kind::Copy)).take(3) {
            let list = match kind {
                Kind::Xla(c) => &self.classes[*c],
                _ => &self.library,
            };
            starts.extend(list.iter().take(64).copied());
        }
        starts.sort_unstable();
        starts.dedup();
        let mut best: (Vec<Option<usize>>, u64) = (vec![None; kinds.len()], 0);
        for s in starts {
            let (a, e) = self.align(kinds, durations, s);
            if e > best.1 {
                best = (a, e);
            }
        }
        best.0
    }
}

/// The command-buffer kernels of `plane` charged to their HLO ops (see the module docs).
pub(crate) fn attribute(plane: &XPlane, hlo: &GpuHlo) -> Attribution {
    let mut result = Attribution::default();
    let stat = |name: &str| plane.stat_metadata_by_name(name).map(|m| m.id);
    let (Some(hlo_op_id), Some(program_id)) = (stat("hlo_op"), stat("program_id")) else { return result };
    let correlation_id = stat("correlation_id");
    let text = |v: &StatValue| -> Option<String> {
        match v {
            StatValue::Str(s) => Some(s.clone()),
            StatValue::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
            StatValue::Ref(_) => None,
            _ => None,
        }
    };
    // (program, command buffer, correlation) → (line, event) of its kernels.
    let mut executions: HashMap<(u64, String, u64), Vec<(usize, usize)>> = HashMap::new();
    for (li, line) in plane.lines.iter().enumerate() {
        for (ei, event) in line.events.iter().enumerate() {
            let Some(op) = event.stats.iter().find(|s| s.metadata_id == hlo_op_id) else { continue };
            let op = text(&op.value).or_else(|| plane.stat_str(op).map(str::to_string)).unwrap_or_default();
            if !op.starts_with("command_buffer") {
                continue;
            }
            let Some(pid) = event
                .stats
                .iter()
                .find(|s| s.metadata_id == program_id)
                .and_then(|s| s.value.as_i64())
                .and_then(|v| u64::try_from(v).ok())
            else {
                continue;
            };
            let corr = correlation_id
                .and_then(|id| event.stats.iter().find(|s| s.metadata_id == id))
                .and_then(|s| s.value.as_i64())
                .and_then(|v| u64::try_from(v).ok())
                .unwrap_or(0);
            result.buffer_ps += event.duration_ps.max(0) as u64;
            executions.entry((pid, op, corr)).or_default().push((li, ei));
        }
    }
    if executions.is_empty() {
        return result;
    }
    let mut buffers: Vec<String> = executions.keys().map(|(_, b, _)| b.clone()).collect();
    buffers.sort();
    buffers.dedup();
    result.buffers = buffers;
    let mut schedules: HashMap<u64, Option<Schedule>> = HashMap::new();
    let mut memo: HashMap<u64, Vec<Option<usize>>> = HashMap::new();
    let mut keys: Vec<_> = executions.keys().cloned().collect();
    keys.sort();
    for key in keys {
        let mut events = executions.remove(&key).unwrap_or_default();
        events.sort_by_key(|&(li, ei)| {
            i128::from(plane.lines[li].timestamp_ns) * 1000 + i128::from(plane.lines[li].events[ei].offset_ps)
        });
        let schedule =
            schedules.entry(key.0).or_insert_with(|| hlo.module(key.0).and_then(|m| Schedule::of(&Program::new(m))));
        let Some(schedule) = schedule.as_ref() else { continue };
        let names: Vec<&str> = events.iter().map(|&(li, ei)| plane.event_name(&plane.lines[li].events[ei])).collect();
        let durations: Vec<u64> =
            events.iter().map(|&(li, ei)| plane.lines[li].events[ei].duration_ps.max(0) as u64).collect();
        let mut h = DefaultHasher::new();
        (key.0, &names).hash(&mut h);
        let aligned = memo
            .entry(h.finish())
            .or_insert_with(|| {
                let kinds: Vec<Kind> = names.iter().map(|n| schedule.kind(n)).collect();
                schedule.best(&kinds, &durations)
            })
            .clone();
        for ((li, ei), pos) in events.iter().zip(aligned) {
            if let Some(pos) = pos {
                result.ops.insert((*li, *ei), schedule.names[pos].clone());
                result.attributed_ps += plane.lines[*li].events[*ei].duration_ps.max(0) as u64;
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_are_sanitized_instruction_names() {
        assert_eq!(sanitized("fusion.583"), "fusion_583");
        assert_eq!(sanitized("input_transpose_fusion.25"), "input_transpose_fusion_25");
        assert_eq!(sanitized("custom-call.3"), "custom_call_3");
        assert!(is_copy_kernel("Memset 0") && is_copy_kernel("MemcpyD2D") && !is_copy_kernel("nvjet_sm90_tst"));
    }
}
