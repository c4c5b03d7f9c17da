//! What each op's computation looks like, as `matching` scores a pair of ops across two captures:
//! the HLO instruction's opcode, fusion kind, result shape and, for a fusion, the mix of opcodes it fuses
//! (from the programs' serialized `HloProto`s on the capture's metadata plane, decoded by
//! [`crate::profile::hlo`]), with the framework op name (`OpMetadata.op_name`) and source line that
//! module reads from the same protos.
//!
//! Owns: the signature of an instruction and reading it from a capture. Must not: decide what matches
//! (that is `matching`). A module that fails to decode is skipped and named in the notes; nothing here
//! panics on any input.

use std::collections::{BTreeMap, HashMap, HashSet};

use falcon_xplane::XSpace;

use crate::profile::hlo::metadata::{decode_modules, index_of};
use crate::profile::hlo::proto::{HloComputationProto, HloInstructionProto, HloModuleProto, ShapeProto};

/// One HLO instruction's computation, as far as the capture describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Signature {
    /// HLO opcode (`fusion`, `dot`, `copy`, …).
    pub opcode: String,
    /// Fusion kind without its `k` (`Loop`, `Output`, `Custom`, …); "" for an instruction that is no fusion.
    pub fusion_kind: String,
    /// The framework op (`jit(step)/transpose(jvp())/dot_general`), when XLA recorded one.
    pub op_name: Option<String>,
    /// `file:line` of the source that produced it, when recorded.
    pub source: Option<String>,
    /// The result shape's arrays (a tuple has several): element type and dimensions; `None` when the proto
    /// has no shape.
    pub shape: Option<Vec<(i32, Vec<i64>)>>,
    /// For a fusion (or any instruction that calls computations): how many of each opcode the called
    /// computations hold, nested calls included, parameters and tuples left out; empty otherwise.
    pub fused_ops: BTreeMap<String, u32>,
}

/// The signatures of every program of a capture, by (HLO module name, instruction name).
#[derive(Debug, Default)]
pub(crate) struct Signatures {
    pub by_op: HashMap<(String, String), Signature>,
    /// Programs read.
    pub modules: HashSet<String>,
    pub notes: Vec<String>,
}

impl Signatures {
    pub fn get(&self, module: &str, name: &str) -> Option<&Signature> {
        self.by_op.get(&(module.to_string(), name.to_string()))
    }

    /// Adds what one host's capture describes; programs already read are kept as they are.
    pub fn add_space(&mut self, space: &XSpace) {
        let (modules, notes) = decode_modules(space);
        let index = index_of(&modules, notes);
        self.notes.extend(index.notes.iter().cloned());
        for module in &modules {
            if !self.modules.insert(module.name.clone()) {
                continue;
            }
            for (name, mut signature) in signatures_of(module) {
                let key = (module.name.clone(), name);
                if let Some(info) = index.instructions.get(&key) {
                    signature.op_name = info.op_name.clone();
                    signature.source = info.source.clone();
                }
                self.by_op.insert(key, signature);
            }
        }
    }
}

/// XLA's `PrimitiveType::TUPLE`.
const TUPLE: i32 = 13;

/// The arrays of a shape, depth first (a tuple contributes its elements; at most 64 levels, 4096 arrays).
fn arrays(shape: &ShapeProto, depth: usize, out: &mut Vec<(i32, Vec<i64>)>) {
    if out.len() >= 4096 || depth > 64 {
        return;
    }
    if shape.element_type == TUPLE || !shape.tuple_shapes.is_empty() {
        for s in &shape.tuple_shapes {
            arrays(s, depth + 1, out);
        }
    } else {
        out.push((shape.element_type, shape.dimensions.clone()));
    }
}

/// Signatures of every instruction of one module (without op name and source, which `hlo::metadata` reads).
fn signatures_of(module: &HloModuleProto) -> Vec<(String, Signature)> {
    let by_id: HashMap<i64, &HloComputationProto> = module.computations.iter().map(|c| (c.id, c)).collect();
    let mut out = Vec::new();
    for computation in &module.computations {
        for instr in &computation.instructions {
            let shape = instr.shape.as_ref().map(|s| {
                let mut v = Vec::new();
                arrays(s, 0, &mut v);
                v
            });
            out.push((
                instr.name.clone(),
                Signature {
                    opcode: instr.opcode.clone(),
                    fusion_kind: instr.fusion_kind.strip_prefix('k').unwrap_or(&instr.fusion_kind).to_string(),
                    op_name: None,
                    source: None,
                    shape,
                    fused_ops: called_ops(instr, &by_id),
                },
            ));
        }
    }
    out
}

/// Opcode counts of the computations an instruction calls, nested calls included (each computation once;
/// at most 1,000 computations).
fn called_ops(instr: &HloInstructionProto, computations: &HashMap<i64, &HloComputationProto>) -> BTreeMap<String, u32> {
    let mut counts = BTreeMap::new();
    let mut seen = HashSet::new();
    let mut stack: Vec<i64> = instr.called_computation_ids.clone();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) || seen.len() > 1_000 {
            continue;
        }
        let Some(c) = computations.get(&id) else { continue };
        for i in &c.instructions {
            if !matches!(i.opcode.as_str(), "parameter" | "tuple" | "get-tuple-element") {
                *counts.entry(i.opcode.clone()).or_insert(0u32) += 1;
            }
            stack.extend(&i.called_computation_ids);
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::hlo::proto::HloProto;
    use prost::Message;

    fn instr(name: &str, opcode: &str, dims: &[i64], calls: &[i64]) -> HloInstructionProto {
        HloInstructionProto {
            name: name.into(),
            opcode: opcode.into(),
            shape: Some(ShapeProto {
                element_type: 11,
                dimensions: dims.to_vec(),
                tuple_shapes: Vec::new(),
                layout: None,
            }),
            fusion_kind: if opcode == "fusion" { "kLoop".into() } else { String::new() },
            called_computation_ids: calls.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn shapes_and_fused_opcodes_of_a_module() {
        let inner = HloComputationProto {
            name: String::new(),
            id: 9,
            instructions: vec![instr("p", "parameter", &[4], &[]), instr("e", "exponential", &[4], &[])],
            ..Default::default()
        };
        let fused = HloComputationProto {
            name: String::new(),
            id: 7,
            instructions: vec![
                instr("p0", "parameter", &[4], &[]),
                instr("a", "add", &[4], &[]),
                instr("m", "multiply", &[4], &[]),
                instr("a2", "add", &[4], &[]),
                instr("c", "call", &[4], &[9]),
            ],
            ..Default::default()
        };
        let mut tuple = instr("t", "tuple", &[], &[]);
        tuple.shape = Some(ShapeProto {
            element_type: TUPLE,
            dimensions: Vec::new(),
            tuple_shapes: vec![
                ShapeProto { element_type: 11, dimensions: vec![2, 3], tuple_shapes: Vec::new(), layout: None },
                ShapeProto { element_type: 4, dimensions: Vec::new(), tuple_shapes: Vec::new(), layout: None },
            ],
            layout: None,
        });
        let entry = HloComputationProto {
            name: "main".into(),
            id: 1,
            instructions: vec![instr("fusion.3", "fusion", &[8, 4], &[7, 7]), tuple],
            ..Default::default()
        };
        let module =
            HloModuleProto { name: "jit_step".into(), computations: vec![inner, fused, entry], ..Default::default() };
        let sigs: HashMap<String, Signature> = signatures_of(&module).into_iter().collect();
        let f = &sigs["fusion.3"];
        assert_eq!((f.opcode.as_str(), f.fusion_kind.as_str()), ("fusion", "Loop"));
        assert_eq!(f.shape, Some(vec![(11, vec![8, 4])]));
        let want: BTreeMap<String, u32> =
            [("add", 2), ("multiply", 1), ("call", 1), ("exponential", 1)].map(|(k, v)| (k.to_string(), v)).into();
        assert_eq!(f.fused_ops, want);
        assert_eq!(sigs["t"].shape, Some(vec![(11, vec![2, 3]), (4, vec![])]));
        assert!(sigs["a"].fused_ops.is_empty() && sigs["a"].fusion_kind.is_empty());
        // Round trip, truncations and garbage never panic.
        let bytes = HloProto { hlo_module: Some(module) }.encode_to_vec();
        for cut in [1, bytes.len() / 3, bytes.len() - 1] {
            let _ = HloProto::decode(&bytes[..cut]);
        }
        assert!(HloProto::decode(&[0xff, 0xff, 0xff][..]).is_err());
    }

    /// The signatures read from a real capture are those of XLA's own dump of the same run: opcode, fusion
    /// kind, element type and dimensions of every ENTRY instruction of the train step.
    #[test]
    fn a_capture_describes_what_xla_dumped() {
        use std::io::Read;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/compare/layers3");
        let space = crate::input::load(&dir.join("plugins/profile/run1/vm.xplane.pb")).unwrap();
        let mut sigs = Signatures::default();
        sigs.add_space(&space);
        assert!(sigs.modules.contains("jit_step") && sigs.notes.is_empty(), "{:?}", sigs.notes);
        let mut text = String::new();
        let gz = std::fs::File::open(dir.join("hlo/jit_step.after_optimizations.txt.gz")).unwrap();
        flate2::read::GzDecoder::new(gz).read_to_string(&mut text).unwrap();
        let types = [("pred", 1), ("s32", 4), ("u32", 8), ("f32", 11)];
        let mut checked = 0;
        for line in text[text.find("ENTRY").unwrap()..].lines().skip(1) {
            let line = line.trim_start().trim_start_matches("ROOT ");
            let Some((lhs, rhs)) = line.split_once(" = ") else { continue };
            // `f32[8,64]{1,0} fusion(...), kind=kLoop, ...`; tuples (starting with `(`) are left out.
            let Some((shape, rest)) = rhs.split_once(' ') else { continue };
            let Some((ty, dims)) = shape.split_once('[') else { continue };
            let Some(&(_, ty)) = types.iter().find(|(t, _)| *t == ty) else { continue };
            let dims: Vec<i64> = dims
                .split(']')
                .next()
                .unwrap()
                .split(',')
                .filter(|d| !d.is_empty())
                .map(|d| d.parse().unwrap())
                .collect();
            let opcode = rest.split('(').next().unwrap();
            let kind = line.split("kind=k").nth(1).map_or("", |k| k.split([',', ' ']).next().unwrap());
            let sig = sigs.get("jit_step", lhs.trim_start_matches('%')).unwrap_or_else(|| panic!("{lhs}"));
            assert_eq!((sig.opcode.as_str(), sig.fusion_kind.as_str()), (opcode, kind), "{line}");
            assert_eq!(sig.shape, Some(vec![(ty, dims)]), "{line}");
            assert_eq!(sig.opcode == "fusion", !sig.fused_ops.is_empty(), "{line}");
            let op_name = line.split("op_name=\"").nth(1).map(|o| o.split('"').next().unwrap());
            if !line.contains('\\') {
                assert_eq!(sig.op_name.as_deref(), op_name, "{line}");
            }
            checked += 1;
        }
        assert!(checked > 400, "{checked}");
    }
}
