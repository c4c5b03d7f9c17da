//! The cost of an HLO instruction — FLOPs, bytes read and written — as XProf computes it for a GPU capture, and
//! past it where XProf gives up; for an XLA:CPU capture as XLA's base `HloCostAnalysis` does ([`Target::Cpu`]: the
//! count a JAX workload's `compiled.cost_analysis()` logs on a CPU, which XProf does not cost at all).
//!
//! # What XProf does (the anchor)
//!
//! XProf costs every HLO op of a GPU program with `XProfGpuCostAnalysis` (openxla/xprof
//! `xprof/utils/xprof_gpu_cost_analysis.cc`), a subclass of XLA's `GpuHloCostAnalysis`
//! (`xla/service/gpu/model/gpu_hlo_cost_analysis.cc`) over `HloCostAnalysis`
//! (`xla/service/hlo_cost_analysis.cc`), built without a device description. This module follows those
//! rules:
//!
//! * **Elementwise ops** (and converts, compares, selects, clamps): `elements × cycles(opcode, type)` FLOPs,
//!   from XLA's measured per-element clock-cycle table of the default profile (`sm_86`; a profile is chosen by
//!   device, and XProf passes none), 3 for a pair the table lacks — so a bf16 `exponential` is 3 FLOPs an
//!   element and an f32 one 86 ([`cycles`]). Transcendentals are FLOPs here, not a separate count.
//! * `dot`: 2 × output elements × contracted size; `convolution`: 2 × valid (input feature / groups × output
//!   feature × batch / batch groups × valid window positions), XLA's `GetConvolutionFlops`; `reduce`: the
//!   reducer's FLOPs × (input − output elements); `reduce-window`: × (window − 1) × output elements;
//!   `concatenate` 6 an element (400 when the concatenated dimension is not a multiple of 32); `sort`
//!   n·⌈log₂ n⌉; collectives: the reducer's op per element. Data movement (copy, transpose, reshape,
//!   broadcast, slice, pad, gather) has no FLOPs.
//! * **Fusions** (`GpuHloCostAnalysis::FusionCalculateUtilizations`): each fused instruction's FLOPs are
//!   weighted by its *utilization*, propagated from the root (1) to the parameters: an elementwise user passes
//!   its roots on, any other user makes the operand a root of its own with the user's utilization × the
//!   operand's utilization (a slice's output/input, a reduce's init operand the output size), rounded up to
//!   whole elements. An op an elementwise chain reaches from two roots is emitted, and counted, twice. Bytes:
//!   the output (a dynamic-update-slice root writes its update only) plus each parameter's size × its
//!   utilization capped at 1, plus large constants.
//! * **Library calls**: cuBLAS GEMMs (`__cublas$gemm`, `__cublas$lt$matmul…`) get dot FLOPs from the GEMM's
//!   `dot_dimension_numbers` in their backend config; cuDNN convolutions (`__cudnn$conv…`) convolution FLOPs;
//!   both write only their result, not the workspace of their tuple. Every other custom call is unknown
//!   to XProf (−1, shown as 0).
//! * Bytes default to the operands' plus the output's sizes (a tuple's size is its pointer table, 8 bytes an
//!   element), with XLA's exceptions (parameters, constants, get-tuple-element and bitcasts touch nothing;
//!   slices twice the output; a dynamic-update-slice twice the update).
//!
//! # Past XProf
//!
//! * cuDNN fused attention (`__cudnn$fmha…`, `__cudnn$fmhaSoftmax…Backward`): the two GEMMs of the forward
//!   pass (Q·Kᵀ and P·V, 4·B·H·S_q·S_kv·D FLOPs) and five of the backward pass (10·B·H·S_q·S_kv·D), with the
//!   operands' and results' bytes; marked [`CostSource::Estimated`].
//! * Other custom calls keep their bytes (operands and results) and are [`CostSource::Unknown`] FLOPs, named as
//!   such rather than shown as 0.
//!
//! The model (`CostModel`, fusions and utilizations) is here; the per-element cycle table and the elementwise
//! opcodes are `elementwise`, the shape formulas (dot, convolution, GEMM dimensions, fused attention) `formulas`.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::program::{Instr, Program};
use super::proto::{HloComputationProto, ShapeProto};

mod elementwise;
mod formulas;

pub use elementwise::cycles;
use elementwise::is_elementwise_opcode;
use formulas::{conv_flops, dot_flops, fused_attention_flops, gemm_dot_dimensions, is_cublas_gemm};

/// Where an op's FLOPs come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CostSource {
    /// XLA's GPU cost model, as XProf runs it.
    #[default]
    Xla,
    /// A cuBLAS or cuDNN call costed from its GEMM or convolution dimensions, as XProf does.
    Library,
    /// Falcon's estimate from the shapes, where XProf has none (cuDNN fused attention).
    Estimated,
    /// Not known: a custom call nobody models (its bytes are still counted).
    Unknown,
}

/// The cost of one execution of an instruction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct OpCost {
    /// Floating-point operations (model FLOPs).
    pub flops: f64,
    /// Bytes read from device memory.
    pub bytes_read: f64,
    /// Bytes written to device memory.
    pub bytes_written: f64,
    pub source: CostSource,
}

impl OpCost {
    /// Bytes read and written.
    pub fn bytes(&self) -> f64 {
        self.bytes_read + self.bytes_written
    }
}

/// Properties of one instruction, as `HloCostAnalysis` keeps them.
#[derive(Debug, Clone, Default)]
struct Props {
    flops: f64,
    bytes: f64,
    output_bytes: f64,
    /// Per operand: bytes read and utilization.
    operand_bytes: Vec<f64>,
    operand_util: Vec<f64>,
    unknown: bool,
    estimated: bool,
    library: bool,
}

/// The size `HloCostAnalysis` gives a shape: an array's bytes, a tuple's pointer table (8 bytes an element).
fn shape_size(s: &ShapeProto) -> f64 {
    if s.is_tuple() {
        8.0 * s.tuple_shapes.len() as f64
    } else {
        s.array_bytes() as f64
    }
}

fn elements(s: &ShapeProto) -> f64 {
    s.elements() as f64
}

/// The array a (possibly tuple-shaped) result means: its first element for a tuple.
fn first_array(s: &ShapeProto) -> &ShapeProto {
    if s.is_tuple() {
        s.tuple_shapes.first().map(first_array).unwrap_or(s)
    } else {
        s
    }
}

/// Which device's cost rules the model follows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Target {
    /// `XProfGpuCostAnalysis` (see the module docs): per-element cycles, fusion utilizations.
    #[default]
    Gpu,
    /// XLA's base `HloCostAnalysis`, what XLA:CPU's `compiled.cost_analysis()` reports (a JAX workload's logged
    /// `model_flops` on a CPU): 1 FLOP an element for an elementwise op, transcendentals (`exponential`, `tanh`,
    /// `log`, `sqrt`, …) not FLOPs, concatenations none, and a fusion the plain sum of its fused instructions.
    Cpu,
}

/// XLA's transcendental opcodes (`HloCostAnalysis::HandleElementwiseOp`): counted apart from FLOPs.
fn is_transcendental(opcode: &str) -> bool {
    matches!(
        opcode,
        "erf"
            | "exponential"
            | "exponential-minus-one"
            | "log"
            | "log-plus-one"
            | "logistic"
            | "power"
            | "sqrt"
            | "cbrt"
            | "rsqrt"
            | "tanh"
            | "sine"
            | "cosine"
            | "tan"
            | "atan2"
    )
}

/// Costs the instructions of one program; sub-computation results are cached.
pub(crate) struct CostModel<'p, 'm> {
    program: &'p Program<'m>,
    subcomputations: HashMap<i64, f64>,
    target: Target,
}

impl<'p, 'm> CostModel<'p, 'm> {
    #[cfg(test)]
    pub(crate) fn new(program: &'p Program<'m>) -> Self {
        Self::for_target(program, Target::Gpu)
    }

    pub(crate) fn for_target(program: &'p Program<'m>, target: Target) -> Self {
        CostModel { program, subcomputations: HashMap::new(), target }
    }

    /// FLOPs an element of an elementwise op (or a reducer's root) on the target.
    fn per_element(&self, opcode: &str, element_type: i32) -> f64 {
        match self.target {
            Target::Gpu => cycles(opcode, element_type),
            Target::Cpu if is_transcendental(opcode) => 0.0,
            Target::Cpu => 1.0,
        }
    }

    /// The cost of one execution of `instr` (a top-level instruction: a fusion, a custom call, a copy …).
    pub(crate) fn cost(&mut self, instr: &Instr<'m>) -> OpCost {
        let p = self.props(instr);
        let (read, written) = if p.unknown && p.bytes < 0.0 {
            (0.0, 0.0)
        } else {
            let read: f64 = p.operand_bytes.iter().sum();
            (read.max(0.0), (p.bytes - read).max(0.0))
        };
        let source = if p.estimated {
            CostSource::Estimated
        } else if p.unknown {
            CostSource::Unknown
        } else if p.library {
            CostSource::Library
        } else {
            CostSource::Xla
        };
        OpCost {
            flops: if p.unknown { 0.0 } else { p.flops.max(0.0) },
            bytes_read: read,
            bytes_written: written,
            source,
        }
    }

    fn operand_shapes(&self, instr: &Instr<'m>) -> Vec<Option<&'m ShapeProto>> {
        self.program.operands(instr).into_iter().map(|o| o.and_then(|o| o.proto.shape.as_ref())).collect()
    }

    /// `Preprocess` + the opcode's handler.
    fn props(&mut self, instr: &Instr<'m>) -> Props {
        let empty = ShapeProto::default();
        let shape = instr.proto.shape.as_ref().unwrap_or(&empty);
        let operands = self.operand_shapes(instr);
        let operand_bytes: Vec<f64> = operands.iter().map(|s| s.map_or(0.0, shape_size)).collect();
        let out = shape_size(shape);
        let mut p = Props {
            flops: 0.0,
            bytes: out + operand_bytes.iter().sum::<f64>(),
            output_bytes: out,
            operand_util: vec![1.0; operands.len()],
            operand_bytes,
            ..Props::default()
        };
        let nothing = |p: &mut Props| {
            p.bytes = 0.0;
            p.output_bytes = 0.0;
            p.operand_bytes.iter_mut().for_each(|b| *b = 0.0);
        };
        let opcode = instr.opcode();
        match opcode {
            "parameter" | "constant" | "bitcast" | "after-all" | "add-dependency" | "domain" => nothing(&mut p),
            "get-tuple-element" => nothing(&mut p),
            "tuple" => {
                p.bytes = out;
                p.operand_bytes.iter_mut().for_each(|b| *b = 0.0);
            }
            "copy"
            | "iota"
            | "reverse"
            | "reshape"
            | "dynamic-reshape"
            | "pad"
            | "broadcast"
            | "transpose"
            | "get-dimension-size"
            | "set-dimension-size"
            | "partition-id"
            | "replica-id"
            | "topk"
            | "batch-norm-training"
            | "batch-norm-inference"
            | "batch-norm-grad"
            | "opt-barrier" => {}
            "concatenate" => {
                let dim = instr.proto.dimensions.first().copied().unwrap_or(0);
                let first_dim = operands
                    .first()
                    .and_then(|s| *s)
                    .and_then(|s| s.dimensions.get(usize::try_from(dim).unwrap_or(usize::MAX)).copied());
                let per = if dim > 0 && first_dim.is_some_and(|d| d & 31 != 0) { 400.0 } else { 6.0 };
                if self.target == Target::Gpu {
                    p.flops = per * shape.elements_recursive() as f64;
                }
            }
            "slice" => {
                p.bytes = out * 2.0;
                p.output_bytes = out;
                p.operand_bytes = vec![out];
                p.operand_util = vec![ratio(elements(shape), operands.first().and_then(|s| *s).map_or(0.0, elements))];
            }
            "dynamic-slice" => {
                let index_bytes: f64 = p.operand_bytes.iter().skip(1).sum();
                p.bytes = out * 2.0 + index_bytes;
                if let Some(b) = p.operand_bytes.first_mut() {
                    *b = out;
                }
                if let Some(u) = p.operand_util.first_mut() {
                    *u = ratio(elements(shape), operands.first().and_then(|s| *s).map_or(0.0, elements));
                }
            }
            "dynamic-update-slice" => {
                let update = p.operand_bytes.get(1).copied().unwrap_or(0.0);
                let index_bytes: f64 = p.operand_bytes.iter().skip(2).sum();
                p.bytes = update * 2.0 + index_bytes;
                p.output_bytes = update;
                if let Some(b) = p.operand_bytes.first_mut() {
                    *b = 0.0;
                }
                let n_update = operands.get(1).and_then(|s| *s).map_or(0.0, elements);
                if let Some(u) = p.operand_util.first_mut() {
                    *u = ratio(elements(shape) - n_update, elements(shape));
                }
            }
            "gather" => self.gather(&mut p, shape, &operands),
            "scatter" => {
                // 3 × the updates (input, output, updates) and the indices; the combiner per update element.
                let n = operands.len().saturating_sub(1) / 2;
                let updates: f64 =
                    (0..n).map(|i| operands.get(n + 1 + i).and_then(|s| *s).map_or(0.0, shape_size)).sum();
                let indices = operands.get(n).and_then(|s| *s).map_or(0.0, shape_size);
                p.bytes = updates * 3.0 + indices;
                p.output_bytes = updates;
                let per = self.program.called(instr, 0).map_or(0.0, |c| self.subcomputation_flops(c));
                p.flops = per * operands.get(n + 1).and_then(|s| *s).map_or(0.0, elements);
            }
            "dot" => {
                let lhs = operands.first().and_then(|s| *s);
                p.flops = lhs.map_or(0.0, |l| dot_flops(l, shape, instr.proto.dot_dimension_numbers.as_ref()));
            }
            "convolution" => {
                p.flops = self.convolution_flops(instr, shape);
            }
            "reduce" => self.reduce(instr, &mut p, shape, &operands),
            "reduce-window" => {
                let per = self.program.called(instr, 0).map_or(0.0, |c| self.subcomputation_flops(c));
                let window: f64 = instr
                    .proto
                    .window
                    .as_ref()
                    .map_or(1.0, |w| w.dimensions.iter().map(|d| d.size.max(0) as f64).product());
                p.flops = per * (window - 1.0).max(0.0) * elements(first_array(shape));
            }
            "select-and-scatter" => {
                let select = self.program.called(instr, 0).map_or(0.0, |c| self.subcomputation_flops(c));
                let scatter = self.program.called(instr, 1).map_or(0.0, |c| self.subcomputation_flops(c));
                let window: f64 = instr
                    .proto
                    .window
                    .as_ref()
                    .map_or(1.0, |w| w.dimensions.iter().map(|d| d.size.max(0) as f64).product());
                let source = operands.get(1).and_then(|s| *s).map_or(0.0, elements);
                p.flops = select * source * (window - 1.0).max(0.0) + scatter * source;
            }
            "map" => {
                let per = self.program.called(instr, 0).map_or(0.0, |c| self.subcomputation_flops(c));
                p.flops = per * elements(shape);
            }
            "sort" => {
                let n = operands.first().and_then(|s| *s).map_or(0.0, elements);
                p.flops = if n > 1.0 { n * n.log2().ceil() } else { 0.0 };
            }
            "fusion" => self.fusion(instr, &mut p, shape),
            "call" => {
                p.flops = self.program.called(instr, 0).map_or(0.0, |c| self.subcomputation_flops(c));
            }
            "while" | "conditional" => {
                p.flops = instr
                    .proto
                    .called_computation_ids
                    .iter()
                    .filter_map(|id| self.program.computation(*id))
                    .map(|c| self.subcomputation_flops(c))
                    .fold(0.0, f64::max);
            }
            "all-reduce" | "all-reduce-start" | "reduce-scatter" => {
                let root_op = self.program.called(instr, 0).and_then(|c| self.program.root(c));
                p.flops = root_op.map_or(0.0, |r| self.per_element(r.opcode(), first_array(shape).element_type))
                    * shape.elements_recursive() as f64;
                if opcode != "reduce-scatter" {
                    p.bytes =
                        shape.leaf_bytes() as f64 + operands.iter().map(|s| s.map_or(0.0, shape_size)).sum::<f64>();
                }
            }
            "custom-call" => self.custom_call(instr, &mut p, shape, &operands),
            "rng" => {
                p.flops = self.per_element(opcode, shape.element_type) * shape.elements_recursive() as f64;
            }
            o if is_elementwise_opcode(o) => {
                p.flops = self.per_element(o, shape.element_type) * shape.elements_recursive() as f64;
            }
            _ => {}
        }
        p
    }

    fn gather(&self, p: &mut Props, shape: &ShapeProto, operands: &[Option<&ShapeProto>]) {
        let out = shape_size(shape);
        let indices = operands.get(1).and_then(|s| *s).map_or(0.0, shape_size);
        p.bytes = out * 2.0 + indices;
        p.output_bytes = out;
        p.operand_bytes = vec![out, indices];
        p.operand_util = vec![ratio(elements(shape), operands.first().and_then(|s| *s).map_or(0.0, elements)), 1.0];
    }

    fn reduce(&mut self, instr: &Instr<'m>, p: &mut Props, shape: &ShapeProto, operands: &[Option<&ShapeProto>]) {
        let per = self.program.called(instr, 0).map_or(0.0, |c| self.subcomputation_flops(c));
        let input = operands.first().and_then(|s| *s).map_or(0.0, elements);
        let output_elements = elements(first_array(shape));
        p.flops = per * (input - output_elements).max(0.0);
        // GpuHloCostAnalysis::HandleReduce: the outputs, the inputs, each init value once per output element.
        let inputs = operands.len() / 2;
        let out = shape.leaf_bytes() as f64;
        let mut bytes = out;
        for (i, operand) in operands.iter().enumerate() {
            if i < inputs.max(1) {
                bytes += p.operand_bytes.get(i).copied().unwrap_or(0.0);
            } else {
                let init = operand.map_or(0.0, shape_size) * output_elements;
                if let Some(b) = p.operand_bytes.get_mut(i) {
                    *b = init;
                }
                if let Some(u) = p.operand_util.get_mut(i) {
                    *u = output_elements;
                }
                bytes += init;
            }
        }
        p.bytes = bytes;
        p.output_bytes = out;
    }

    /// The FLOPs of a sub-computation (a reducer, a callee): the sum over its instructions.
    fn subcomputation_flops(&mut self, c: &'m HloComputationProto) -> f64 {
        if let Some(f) = self.subcomputations.get(&c.id) {
            return *f;
        }
        // Guard against a computation that (in a malformed proto) calls itself.
        self.subcomputations.insert(c.id, 0.0);
        let total: f64 = c
            .instructions
            .iter()
            .map(|i| {
                let instr = Instr { proto: i, computation: c };
                let p = self.props(&instr);
                if p.unknown {
                    0.0
                } else {
                    p.flops
                }
            })
            .sum();
        self.subcomputations.insert(c.id, total);
        total
    }

    fn convolution_flops(&self, instr: &Instr<'m>, result: &ShapeProto) -> f64 {
        let (Some(lhs), Some(rhs)) = (self.program.operand(instr, 0), self.program.operand(instr, 1)) else {
            return 0.0;
        };
        let (Some(lhs), Some(rhs)) = (lhs.proto.shape.as_ref(), rhs.proto.shape.as_ref()) else { return 0.0 };
        let Some(dn) = instr.proto.convolution_dimension_numbers.as_ref() else { return 0.0 };
        conv_flops(
            lhs,
            rhs,
            first_array(result),
            dn,
            instr.proto.window.as_ref(),
            instr.proto.feature_group_count.max(1),
            instr.proto.batch_group_count.max(1),
        )
    }

    fn custom_call(&mut self, instr: &Instr<'m>, p: &mut Props, shape: &ShapeProto, operands: &[Option<&ShapeProto>]) {
        let target = instr.proto.custom_call_target.as_str();
        let result = first_array(shape);
        // The real result only: a workspace in the tuple is not traffic the op is judged by.
        let write_result_only = |p: &mut Props| {
            if shape.is_tuple() {
                let size = shape_size(result);
                p.bytes = p.bytes - p.output_bytes + size;
                p.output_bytes = size;
            }
        };
        if is_cublas_gemm(target) {
            let dims = gemm_dot_dimensions(&instr.proto.backend_config);
            let lhs = operands.first().and_then(|s| *s);
            p.flops = match (lhs, dims.as_ref()) {
                (Some(l), Some(d)) => dot_flops(l, result, Some(d)),
                _ => 0.0,
            };
            p.library = true;
            p.unknown = dims.is_none() || lhs.is_none();
            write_result_only(p);
        } else if target.starts_with("__cudnn$conv") {
            p.flops = self.convolution_flops(instr, shape);
            p.library = true;
            write_result_only(p);
        } else if target.starts_with("__cudnn$fmha") || target.starts_with("__cudnn$fhma") {
            p.flops = fused_attention_flops(target, operands, result);
            p.estimated = p.flops > 0.0;
            p.unknown = p.flops <= 0.0;
            write_result_only(p);
        } else {
            // XProf: unknown (−1). The operands and results still move.
            p.unknown = true;
            p.bytes = p.bytes - p.output_bytes + shape.leaf_bytes() as f64;
            p.output_bytes = shape.leaf_bytes() as f64;
        }
    }

    /// `HandleFusion` with GPU utilizations (see the module docs).
    fn fusion(&mut self, instr: &Instr<'m>, p: &mut Props, shape: &ShapeProto) {
        let Some(fused) = self.program.called(instr, 0) else { return };
        let kind = instr.proto.fusion_kind.as_str();
        if kind == "kCustom" {
            for i in &fused.instructions {
                let fi = Instr { proto: i, computation: fused };
                if i.opcode == "gather" {
                    let operands = self.operand_shapes(&fi);
                    let s = i.shape.as_ref().cloned().unwrap_or_default();
                    self.gather(p, &s, &operands);
                    return;
                }
            }
        }
        let order = self.program.post_order(fused);
        let mut props: HashMap<i64, Props> = HashMap::with_capacity(order.len());
        for i in &order {
            let fp = self.props(i);
            props.insert(i.proto.id, fp);
        }
        // Utilizations, consumers before producers (XLA FusionCalculateUtilizations).
        let Some(root) = self.program.root(fused) else { return };
        let mut util: HashMap<i64, f64> = HashMap::new();
        let mut roots_of: HashMap<i64, HashSet<i64>> = HashMap::new();
        let mut root_util: HashMap<i64, f64> = HashMap::new();
        root_util.insert(root.proto.id, 1.0);
        roots_of.entry(root.proto.id).or_default().insert(root.proto.id);
        let mut flops = 0.0;
        for i in order.iter().rev() {
            let id = i.proto.id;
            let u: f64 =
                roots_of.get(&id).map_or(0.0, |rs| rs.iter().map(|r| root_util.get(r).copied().unwrap_or(0.0)).sum());
            util.insert(id, u);
            let ip = &props[&id];
            if !ip.unknown {
                // XLA's base analysis sums the fused instructions once each; the GPU's weighs them by utilization.
                flops += if self.target == Target::Cpu { ip.flops } else { u * ip.flops };
            }
            let elementwise = is_elementwise_opcode(i.opcode()) && !bitcast_convert_changes_width(self.program, i)
                || matches!(i.opcode(), "tuple" | "get-tuple-element" | "constant" | "rng");
            let my_roots: Vec<i64> = roots_of.get(&id).map(|r| r.iter().copied().collect()).unwrap_or_default();
            for (k, op) in self.program.operands(i).into_iter().enumerate() {
                let Some(op) = op else { continue };
                let oid = op.proto.id;
                if elementwise {
                    roots_of.entry(oid).or_default().extend(my_roots.iter().copied());
                } else {
                    roots_of.entry(oid).or_default().insert(oid);
                    let operand_util = ip.operand_util.get(k).copied().unwrap_or(1.0);
                    let n = op.proto.shape.as_ref().map_or(0.0, |s| s.elements_recursive() as f64);
                    let ou = if n == 0.0 { 0.0 } else { (u * operand_util * n).ceil() / n };
                    *root_util.entry(oid).or_insert(0.0) += ou;
                }
            }
        }
        p.flops = flops;
        // Bytes: outputs, large constants, parameters × utilization (at most 1).
        let mut out = 0.0;
        let leaves: Vec<(usize, &ShapeProto)> =
            if shape.is_tuple() { shape.tuple_shapes.iter().enumerate().collect() } else { vec![(0, shape)] };
        for (index, leaf) in leaves {
            let mut r = root;
            if shape.is_tuple() && root.opcode() == "tuple" {
                if let Some(o) = self.program.operand(&root, index) {
                    r = o;
                }
            }
            if r.opcode() == "dynamic-update-slice" {
                out += self.program.operand(&r, 1).and_then(|u| u.proto.shape.as_ref()).map_or(0.0, shape_size);
            } else {
                out += leaf.leaf_bytes() as f64;
            }
        }
        let mut bytes = out;
        for i in &fused.instructions {
            if i.opcode == "constant" && i.shape.as_ref().is_some_and(|s| s.elements() > 1) {
                let u = util.get(&i.id).copied().unwrap_or(0.0).min(1.0);
                bytes += i.shape.as_ref().map_or(0.0, shape_size) * u;
            }
        }
        let mut params: Vec<&'m super::proto::HloInstructionProto> =
            fused.instructions.iter().filter(|i| i.opcode == "parameter").collect();
        params.sort_by_key(|i| i.parameter_number);
        let mut operand_bytes = vec![0.0; p.operand_bytes.len().max(params.len())];
        for param in params {
            let size =
                param.shape.as_ref().map_or(0.0, |s| if s.is_tuple() { s.leaf_bytes() as f64 } else { shape_size(s) });
            let u = util.get(&param.id).copied().unwrap_or(0.0).min(1.0);
            let read = (size * u).round();
            if let Some(slot) = usize::try_from(param.parameter_number).ok().and_then(|n| operand_bytes.get_mut(n)) {
                *slot += read;
            }
            bytes += read;
        }
        p.operand_bytes = operand_bytes;
        p.bytes = bytes;
        p.output_bytes = out;
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// A `bitcast-convert` between types of different widths is not elementwise in XLA.
fn bitcast_convert_changes_width(program: &Program<'_>, i: &Instr<'_>) -> bool {
    if i.opcode() != "bitcast-convert" {
        return false;
    }
    let out = i.proto.shape.as_ref().map(|s| super::proto::element_bits(s.element_type));
    let input =
        program.operand(i, 0).and_then(|o| o.proto.shape.as_ref()).map(|s| super::proto::element_bits(s.element_type));
    out != input
}

#[cfg(test)]
mod tests;
