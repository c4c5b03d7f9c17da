//! What the op tools show of a GPU or XLA:CPU op, read from its program: XProf's category (`HloInstruction::ToCategory`:
//! a fusion by its kind — `loop fusion`, `input fusion`, `output fusion`, `custom fusion`; `data formatting`
//! for transposes, copies and reshapes; `non-fusion elementwise`; else the opcode), its cost per execution
//! ([`super::cost`]), its HLO text without layouts, the framework scope and source line XLA recorded, and
//! whether it computes in 16 bits (its inputs for a dot, convolution or GEMM; its result otherwise).

use std::collections::HashMap;

use falcon_xplane::XSpace;

use super::cost::{CostModel, OpCost};
use super::metadata::{decode_programs, source_of};
use super::program::{Instr, Program};
use super::proto::{element, HloModuleProto, ShapeProto};

/// One HLO op of a GPU program, as the op tools show it.
#[derive(Debug, Clone, PartialEq)]
pub struct HloOpInfo {
    /// XProf's category (see the module docs).
    pub category: String,
    /// The cost of one execution.
    pub cost: OpCost,
    /// `%name = shape opcode(operand shapes and names), kind=…, calls=…, custom_call_target=…`.
    pub expression: String,
    /// The framework's name scope (`OpMetadata.op_name`).
    pub op_name: Option<String>,
    /// `file:line`, when recorded.
    pub source: Option<String>,
    /// Computes in 16 bits or fewer (bf16, f16, fp8): its tensor-core inputs for a dot, convolution or
    /// library GEMM, its result otherwise.
    pub sixteen_bit: bool,
}

/// The decoded programs of one capture.
#[derive(Debug, Default)]
pub struct GpuHlo {
    programs: Vec<(u64, HloModuleProto)>,
    /// Whose cost rules [`GpuHlo::describe`] follows (the GPU's unless [`GpuHlo::with_cpu_costs`]).
    target: super::cost::Target,
    /// What could not be read.
    pub notes: Vec<String>,
}

impl GpuHlo {
    /// Decodes every program's `HloProto` on the capture's metadata plane.
    pub fn decode(space: &XSpace) -> GpuHlo {
        let (programs, notes) = decode_programs(space);
        GpuHlo { programs, notes, target: Default::default() }
    }

    /// The same programs costed as XLA:CPU's `cost_analysis()` costs them ([`super::cost::Target::Cpu`]).
    pub fn with_cpu_costs(mut self) -> GpuHlo {
        self.target = super::cost::Target::Cpu;
        self
    }

    /// One program's serialized `HloProto` (as a capture stores it), as program `program_id`: what `decode`
    /// does for each program of a capture; a proto that does not decode leaves the set empty with a note.
    pub fn from_hlo_proto(program_id: u64, bytes: &[u8]) -> GpuHlo {
        use prost::Message;
        match super::proto::HloProto::decode(bytes) {
            Ok(super::proto::HloProto { hlo_module: Some(module) }) => {
                GpuHlo { programs: vec![(program_id, module)], notes: Vec::new(), target: Default::default() }
            }
            Ok(_) => GpuHlo { notes: vec!["the HloProto has no module".into()], ..GpuHlo::default() },
            Err(e) => GpuHlo { notes: vec![format!("HloProto not readable ({e})")], ..GpuHlo::default() },
        }
    }

    /// The names of every instruction of program `program_id`, in stored order.
    pub fn instruction_names(&self, program_id: u64) -> Vec<String> {
        self.module(program_id)
            .map(|m| m.computations.iter().flat_map(|c| c.instructions.iter().map(|i| i.name.clone())).collect())
            .unwrap_or_default()
    }

    /// Whether no program was read.
    pub fn is_empty(&self) -> bool {
        self.programs.is_empty()
    }

    /// The program whose module is named `name` (the `hlo_module` XLA:CPU op events carry), when exactly one is.
    pub fn program_named(&self, name: &str) -> Option<u64> {
        let mut found = self.programs.iter().filter(|(_, m)| m.name == name);
        let (id, _) = found.next()?;
        found.next().is_none().then_some(*id)
    }

    /// The module of program `id`.
    pub(crate) fn module(&self, id: u64) -> Option<&HloModuleProto> {
        self.programs.iter().find(|(p, _)| *p == id).map(|(_, m)| m)
    }

    /// The ops named `names` of program `program_id` (those the program has).
    pub fn describe<'a>(
        &self,
        program_id: u64,
        names: impl IntoIterator<Item = &'a str>,
    ) -> HashMap<String, HloOpInfo> {
        let mut out = HashMap::new();
        let Some(module) = self.module(program_id) else { return out };
        let program = Program::new(module);
        let mut model = CostModel::for_target(&program, self.target);
        for name in names {
            let Some(instr) = program.instruction(name) else { continue };
            let info = HloOpInfo {
                category: category(&program, &instr),
                cost: model.cost(&instr),
                expression: expression(&program, &instr),
                op_name: instr
                    .proto
                    .metadata
                    .as_ref()
                    .map(|m| m.op_name.trim())
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
                source: instr.proto.metadata.as_ref().and_then(|m| source_of(m, module.stack_frame_index.as_ref())),
                sixteen_bit: sixteen_bit(&program, &instr),
            };
            out.insert(name.to_string(), info);
        }
        out
    }
}

/// XLA `HloInstruction::ToCategory` (see the module docs).
pub(crate) fn category(program: &Program<'_>, instr: &Instr<'_>) -> String {
    let opcode = instr.opcode();
    match opcode {
        "fusion" => match instr.proto.fusion_kind.as_str() {
            "kLoop" => "loop fusion".into(),
            "kInput" => "input fusion".into(),
            "kOutput" => "output fusion".into(),
            "kCustom" => "custom fusion".into(),
            _ => "fusion".into(),
        },
        "transpose" | "copy" | "reshape" | "dynamic-reshape" => "data formatting".into(),
        "convolution" => {
            let mut c = String::from("convolution");
            let dims = instr.proto.window.as_ref().map(|w| w.dimensions.as_slice()).unwrap_or(&[]);
            if dims.iter().any(|d| d.base_dilation > 1) {
                c.push_str(" base-dilated");
            }
            if dims.iter().any(|d| d.window_dilation > 1) {
                c.push_str(" window-dilated");
            }
            c
        }
        "bitcast-convert" => {
            let out = instr.proto.shape.as_ref().map(|s| super::proto::element_bits(s.element_type));
            let input = program
                .operand(instr, 0)
                .and_then(|o| o.proto.shape.as_ref().map(|s| super::proto::element_bits(s.element_type)));
            if out == input {
                "non-fusion elementwise".into()
            } else {
                opcode.into()
            }
        }
        o if is_elementwise(o) => "non-fusion elementwise".into(),
        o => o.into(),
    }
}

fn is_elementwise(opcode: &str) -> bool {
    // XLA IsOpElementwise less what ToCategory already named (copy).
    const OPS: [&str; 48] = [
        "abs",
        "round-nearest-afz",
        "round-nearest-even",
        "ceil",
        "count-leading-zeros",
        "convert",
        "cosine",
        "erf",
        "exponential",
        "exponential-minus-one",
        "floor",
        "imag",
        "is-finite",
        "log",
        "log-plus-one",
        "not",
        "negate",
        "popcnt",
        "real",
        "reduce-precision",
        "rsqrt",
        "logistic",
        "sign",
        "sine",
        "sqrt",
        "cbrt",
        "tan",
        "tanh",
        "add",
        "atan2",
        "compare",
        "complex",
        "divide",
        "maximum",
        "minimum",
        "multiply",
        "power",
        "remainder",
        "subtract",
        "and",
        "or",
        "xor",
        "shift-left",
        "shift-right-arithmetic",
        "shift-right-logical",
        "stochastic-convert",
        "select",
        "clamp",
    ];
    OPS.contains(&opcode)
}

/// `%name = bf16[8,1024] fusion(f32[8] %a, bf16[8,1024] %b), kind=kLoop, calls=%fused_computation.3`.
pub(crate) fn expression(program: &Program<'_>, instr: &Instr<'_>) -> String {
    let shape = instr.proto.shape.as_ref().map(ShapeProto::text).unwrap_or_default();
    let operands: Vec<String> = program
        .operands(instr)
        .into_iter()
        .map(|o| match o {
            Some(o) => format!("{} %{}", o.proto.shape.as_ref().map(ShapeProto::text).unwrap_or_default(), o.name()),
            None => "?".to_string(),
        })
        .collect();
    let mut s = format!("%{} = {shape} {}({})", instr.name(), instr.opcode(), operands.join(", "));
    if !instr.proto.fusion_kind.is_empty() {
        s.push_str(&format!(", kind={}", instr.proto.fusion_kind));
    }
    let calls: Vec<String> = instr
        .proto
        .called_computation_ids
        .iter()
        .filter_map(|id| program.computation(*id))
        .map(|c| format!("%{}", c.name))
        .collect();
    if !calls.is_empty() {
        s.push_str(&format!(", calls={}", calls.join(", ")));
    }
    if !instr.proto.custom_call_target.is_empty() {
        s.push_str(&format!(", custom_call_target=\"{}\"", instr.proto.custom_call_target));
    }
    s
}

fn is_16bit_float(element_type: i32) -> bool {
    matches!(element_type, element::BF16 | element::F16)
        || matches!(element_type, 19 | 20 | 23 | 24 | 25 | 28 | 29 | 32 | 33)
}

/// Whether an op computes in 16 bits or fewer (see [`HloOpInfo::sixteen_bit`]).
fn sixteen_bit(program: &Program<'_>, instr: &Instr<'_>) -> bool {
    let first = |s: &ShapeProto| {
        if s.is_tuple() {
            s.tuple_shapes.first().map_or(0, |t| t.element_type)
        } else {
            s.element_type
        }
    };
    let is_matmul = |i: &Instr<'_>| {
        matches!(i.opcode(), "dot" | "convolution")
            || (i.opcode() == "custom-call"
                && (i.proto.custom_call_target.starts_with("__cublas")
                    || i.proto.custom_call_target.starts_with("__cudnn")))
    };
    let inputs_16 = |i: &Instr<'_>| {
        let types: Vec<i32> = program
            .operands(i)
            .into_iter()
            .take(2)
            .filter_map(|o| o.and_then(|o| o.proto.shape.as_ref()).map(first))
            .collect();
        !types.is_empty() && types.iter().all(|t| is_16bit_float(*t))
    };
    if is_matmul(instr) {
        return inputs_16(instr);
    }
    if instr.opcode() == "fusion" {
        // A fusion around a dot or convolution (a Triton GEMM) computes at its matmul's inputs.
        if let Some(fused) = program.called(instr, 0) {
            if let Some(m) = fused.instructions.iter().find(|i| matches!(i.opcode.as_str(), "dot" | "convolution")) {
                return inputs_16(&Instr { proto: m, computation: fused });
            }
        }
    }
    instr.proto.shape.as_ref().is_some_and(|s| is_16bit_float(first(s)))
}
