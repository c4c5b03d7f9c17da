//! What a capture's collectives move, from its HLO: an XLA:CPU or GPU op event names its instruction
//! (`all-reduce.3`) but not its shapes, so the message size and group size of each collective on a host's
//! timeline are read from that instruction in the program on `/host:metadata` — the same instruction on every
//! host of a run. TPU op events carry their instruction text, which the timeline reads itself; a size it already
//! has is kept.
//!
//! The message is NCCL-tests' convention: the larger of the result and the operands (an all-gather's output,
//! a reduce-scatter's input, an all-reduce's buffer), a tuple's arrays summed (XLA combines a step's gradients
//! into one tuple all-reduce). An async `-start` whose result is the tuple (operands…, results…) counts its
//! results. The group is the first replica group's size (listed, or `num_devices_per_group` of an iota list);
//! none when the instruction lists none (every member takes part: the run's members are the group).
//!
//! Programs are decoded only when a timeline has a collective without a size; nothing here panics on any input.

use std::collections::HashMap;

use falcon_xplane::XSpace;

use super::metadata::decode_modules;
use super::proto::{element_bits, HloInstructionProto, HloModuleProto, ShapeProto};
use crate::timeline::Timeline;

/// The timeline of one host's capture (see `timeline::xspace::from_xspace`) with its collectives sized from
/// the capture's HLO (module docs).
pub fn xspace_timeline(space: &XSpace, host: &str) -> Timeline {
    let mut timeline = crate::timeline::xspace::from_xspace(space, host);
    size_collectives(space, &mut timeline);
    timeline
}

/// Fills in the bytes and group size of the timeline's collectives that have none, from the instructions they
/// name in the capture's programs. Returns how many were sized.
pub fn size_collectives(space: &XSpace, timeline: &mut Timeline) -> usize {
    let unsized_ = timeline.devices.iter().any(|d| d.collectives.iter().any(|c| c.bytes.is_none()));
    if !unsized_ {
        return 0;
    }
    let (modules, _) = decode_modules(space);
    if modules.is_empty() {
        return 0;
    }
    let sizes = collective_sizes(&modules);
    let Timeline { devices, names, .. } = timeline;
    let name = |id: u32| names.get(id as usize).map_or("", String::as_str);
    let mut sized = 0;
    for c in devices.iter_mut().flat_map(|d| d.collectives.iter_mut()).filter(|c| c.bytes.is_none()) {
        let Some(&Some((bytes, group))) = lookup(&sizes, name(c.scope), name(c.name)) else { continue };
        c.bytes = Some(bytes);
        c.group_size = c.group_size.or(group);
        c.bytes_from_hlo = true;
        sized += 1;
    }
    sized
}

/// The (instruction, bytes, group size) of every collective of one serialized `HloProto` (a program as
/// `/host:metadata` stores it), in name order; empty when it does not decode.
pub fn proto_collective_sizes(hlo_proto: &[u8]) -> Vec<(String, Option<Size>)> {
    use prost::Message;
    let Ok(super::proto::HloProto { hlo_module: Some(module) }) = super::proto::HloProto::decode(hlo_proto) else {
        return Vec::new();
    };
    let mut out: Vec<_> =
        collective_sizes(std::slice::from_ref(&module)).into_iter().map(|((_, i), s)| (i, s)).collect();
    out.sort();
    out
}

/// A collective's message bytes and group size (when its instruction lists groups).
pub type Size = (u64, Option<u32>);

/// (module, instruction) → its size; `None` when two programs of one name disagree.
type Sizes = HashMap<(String, String), Option<Size>>;

/// The size of `instruction` of `module` (a `(N)` program suffix on the module ignored; an empty module matches
/// when only one program has the instruction).
fn lookup<'s>(sizes: &'s Sizes, module: &str, instruction: &str) -> Option<&'s Option<Size>> {
    let instruction = instruction.trim_start_matches('%');
    let module = module.strip_suffix(')').and_then(|m| m.rsplit_once('(')).map_or(module, |(m, _)| m);
    if let Some(found) = sizes.get(&(module.to_string(), instruction.to_string())) {
        return Some(found);
    }
    if module.is_empty() {
        let mut found = sizes.iter().filter(|((_, n), _)| n == instruction);
        let first = found.next()?;
        return found.next().is_none().then_some(first.1);
    }
    None
}

/// The size of every collective instruction of the programs.
fn collective_sizes(modules: &[HloModuleProto]) -> Sizes {
    let mut out: Sizes = HashMap::new();
    for module in modules {
        for computation in &module.computations {
            let by_id: HashMap<i64, &HloInstructionProto> =
                computation.instructions.iter().map(|i| (i.id, i)).collect();
            for instr in computation.instructions.iter().filter(|i| is_collective(&i.opcode)) {
                let size = instruction_size(instr, &by_id);
                let key = (module.name.clone(), instr.name.clone());
                match out.get(&key) {
                    Some(existing) if *existing != size => {
                        out.insert(key, None);
                    }
                    Some(_) => {}
                    None => {
                        out.insert(key, size);
                    }
                }
            }
        }
    }
    out
}

fn is_collective(opcode: &str) -> bool {
    let base = opcode.strip_suffix("-start").or_else(|| opcode.strip_suffix("-done")).unwrap_or(opcode);
    matches!(
        base,
        "all-reduce"
            | "all-gather"
            | "reduce-scatter"
            | "all-to-all"
            | "ragged-all-to-all"
            | "collective-permute"
            | "collective-broadcast"
            | "send"
            | "recv"
    )
}

/// (message bytes, group size) of one collective instruction; `None` when its shapes say nothing.
fn instruction_size(
    instr: &HloInstructionProto,
    by_id: &HashMap<i64, &HloInstructionProto>,
) -> Option<(u64, Option<u32>)> {
    let operands: Vec<&ShapeProto> =
        instr.operand_ids.iter().filter_map(|id| by_id.get(id)).filter_map(|i| i.shape.as_ref()).collect();
    let operand_bytes = operands.iter().fold(0u64, |n, s| n.saturating_add(message_bytes(s)));
    let result_bytes = instr.shape.as_ref().map_or(0, |s| {
        // An async start's result is (operands…, results…): its results are the second half.
        if instr.opcode.ends_with("-start") && !s.tuple_shapes.is_empty() && s.tuple_shapes.len() == 2 * operands.len()
        {
            s.tuple_shapes[operands.len()..].iter().fold(0u64, |n, t| n.saturating_add(message_bytes(t)))
        } else {
            message_bytes(s)
        }
    });
    let bytes = result_bytes.max(operand_bytes);
    (bytes > 0).then(|| (bytes, group_size(instr)))
}

/// Bytes of every array of a shape at its element width (the layout's packed width when it sets one), a
/// tuple's arrays summed; a token or opaque value is 0.
fn message_bytes(s: &ShapeProto) -> u64 {
    if !s.tuple_shapes.is_empty() || s.element_type == super::proto::element::TUPLE {
        return s.tuple_shapes.iter().fold(0u64, |n, t| n.saturating_add(message_bytes(t)));
    }
    let bits = match s.layout.as_ref().map(|l| l.element_size_in_bits).filter(|b| *b > 0) {
        Some(b) => u64::try_from(b).unwrap_or(0),
        None => u64::from(element_bits(s.element_type)),
    };
    s.elements().saturating_mul(bits).div_ceil(8)
}

/// The size of the instruction's first replica group, when it lists groups.
fn group_size(instr: &HloInstructionProto) -> Option<u32> {
    let list = instr.collective_device_list.as_ref();
    let listed = list.and_then(|l| l.replica_groups.first()).or_else(|| instr.replica_groups.first());
    let n = match listed {
        Some(g) => i64::try_from(g.replica_ids.len()).unwrap_or(0),
        None => list.and_then(|l| l.iota_replica_group_list.as_ref()).map_or(0, |i| i.num_devices_per_group),
    };
    u32::try_from(n).ok().filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::super::proto::{
        element, CollectiveDeviceListProto, HloComputationProto, IotaReplicaGroupListProto, ReplicaGroup,
    };
    use super::*;

    fn shape(dims: &[i64]) -> ShapeProto {
        ShapeProto { element_type: element::F32, dimensions: dims.to_vec(), ..Default::default() }
    }

    fn instr(id: i64, name: &str, opcode: &str, s: ShapeProto, operands: &[i64]) -> HloInstructionProto {
        HloInstructionProto { shape: Some(s), ..super::super::program::tests::instr(id, name, opcode, operands) }
    }

    fn tuple(parts: Vec<ShapeProto>) -> ShapeProto {
        ShapeProto { element_type: element::TUPLE, tuple_shapes: parts, ..Default::default() }
    }

    #[test]
    fn a_tuple_all_reduce_an_all_gather_and_an_async_start_are_sized_by_nccl_tests_convention() {
        let grads = vec![shape(&[256, 256]), shape(&[256, 256]), shape(&[256, 256])];
        let mut ar = instr(4, "all-reduce.3", "all-reduce", tuple(grads.clone()), &[1, 2, 3]);
        ar.replica_groups = vec![ReplicaGroup { replica_ids: vec![0, 1, 2, 3] }];
        let mut ag = instr(5, "all-gather.1", "all-gather", shape(&[1024, 256]), &[1]);
        ag.collective_device_list = Some(CollectiveDeviceListProto {
            replica_groups: Vec::new(),
            iota_replica_group_list: Some(IotaReplicaGroupListProto {
                num_replica_groups: 2,
                num_devices_per_group: 4,
            }),
        });
        let start = instr(
            6,
            "all-gather-start",
            "all-gather-start",
            tuple(vec![shape(&[256, 256]), shape(&[1024, 256])]),
            &[1],
        );
        let params = (1..=3).map(|i| instr(i, &format!("p{i}"), "parameter", shape(&[256, 256]), &[]));
        let module = HloModuleProto {
            name: "jit_step".into(),
            computations: vec![HloComputationProto {
                name: "main".into(),
                id: 1,
                instructions: params.chain([ar, ag, start]).collect(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let sizes = collective_sizes(&[module]);
        assert_eq!(lookup(&sizes, "jit_step", "all-reduce.3"), Some(&Some((3 * 256 * 256 * 4, Some(4)))));
        assert_eq!(lookup(&sizes, "jit_step(2)", "all-gather.1"), Some(&Some((1024 * 256 * 4, Some(4)))));
        assert_eq!(lookup(&sizes, "", "all-gather-start"), Some(&Some((1024 * 256 * 4, None))));
        assert_eq!(lookup(&sizes, "other", "all-reduce.3"), None);
        assert_eq!(sizes.len(), 3, "parameters are not collectives");
    }

    #[test]
    fn two_programs_of_one_name_that_disagree_give_no_size() {
        let m = |dims: &[i64]| HloModuleProto {
            name: "jit_step".into(),
            computations: vec![HloComputationProto {
                instructions: vec![instr(1, "all-reduce.1", "all-reduce", shape(dims), &[])],
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(lookup(&collective_sizes(&[m(&[8]), m(&[8])]), "jit_step", "all-reduce.1"), Some(&Some((32, None))));
        assert_eq!(lookup(&collective_sizes(&[m(&[8]), m(&[16])]), "jit_step", "all-reduce.1"), Some(&None));
        let huge = m(&[i64::MAX, i64::MAX, 7]);
        assert_eq!(
            lookup(&collective_sizes(&[huge]), "jit_step", "all-reduce.1"),
            Some(&Some((u64::MAX.div_ceil(8), None)))
        );
    }
}
