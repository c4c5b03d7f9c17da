//! The cost of a PyTorch ATen op from the shapes `torch.profiler` recorded (`record_shapes=True`: each `cpu_op`
//! event's `Input Dims`, `Input type` and `Concrete Inputs`), beside the HLO cost model (`hlo::cost`) XSpace
//! captures use. Pure functions of one op's record: which ops a trace counts (an op is costed once, by the outermost
//! costed op of a call tree) is the caller's.
//!
//! # Rules (FLOPs are model FLOPs: what the op computes, not what a kernel recomputes)
//!
//! * **GEMMs**: `mm` `[m,k]·[k,n]` and `addmm` (bias, `[m,k]`, `[k,n]`) 2·m·k·n; `bmm` and `baddbmm` 2·b·m·k·n. The
//!   bias add is not counted. Bytes: both operands read, the result written (in the operands' element type).
//! * **Convolutions** (`convolution`, `_convolution`, `cudnn_convolution`): 2 · N · out channels · output positions ·
//!   in channels / groups · kernel positions, the output positions from the stride, padding and dilation recorded;
//!   `convolution_backward` counts the forward's FLOPs for each gradient its output mask asks (input, weight).
//! * **Attention**, the fused kernels of `scaled_dot_product_attention` (`_scaled_dot_product_flash_attention`,
//!   `_efficient_attention`, `_cudnn_attention`; query `[B,H,Sq,D]`, key `[B,H,Skv,D]`, value `[B,H,Skv,Dv]`): the
//!   two GEMMs, 2·B·H·Sq·Skv·(D + Dv); the backward twice that (the model's count: a kernel that recomputes the scores
//!   does more). A causal mask is not halved, and is named in [`AtenCost::detail`] (`causal`, or `masked` for an
//!   explicit bias).
//! * **Embedding**: no FLOPs; the gathered rows read and written. Its dense backward: one add per gathered element.
//! * **Norms and softmax**, per element of the input: `native_layer_norm` 8 (mean, variance, normalize, scale and
//!   shift), its backward 16; `_softmax`/`_log_softmax` 5, their backward 3. **Losses**: `nll_loss_forward` one per
//!   target, its backward writes the whole gradient.
//! * **Elementwise** ops, per element of the largest input (broadcasting): 1 FLOP (`addcmul`, `addcdiv`, `lerp` 2);
//!   `fill_`/`zero_` and copies move bytes only. **Reductions** (`sum`, `mean`, `amax`, …): one per input element.
//! * **Composites** (`linear`, `matmul`, `scaled_dot_product_attention`, `cross_entropy_loss`, `to`, `clone`, …) do
//!   their work through the ops they call: [`Costing::Composite`]. Views and allocations (`view`, `transpose`,
//!   `empty`, …) cost nothing: [`Costing::Free`].
//! * What no rule covers, or whose shapes were not recorded (a `TensorList`: the `_foreach_*` optimizer steps record
//!   no shapes), is [`Costing::Unknown`] with the reason — never 0 FLOPs.

use serde::Serialize;

pub mod count;
pub use count::{count, CostedOp, OpEvent, TraceCosts, UncostedOp};

/// What one op's record holds (`args` of its `cpu_op` event).
#[derive(Debug, Clone, Copy, Default)]
pub struct AtenRecord<'a> {
    /// `Input Dims`: one shape per input (`[]` for a scalar or a list).
    pub dims: &'a [Vec<i64>],
    /// `Input type`: `float`, `c10::BFloat16`, `long int`, `Scalar`, `TensorList`, …
    pub types: &'a [String],
    /// `Concrete Inputs`: the scalar arguments as text (`"True"`, `"[1, 1]"`), `""` for tensors.
    pub concrete: &'a [String],
}

/// The kind of work an op does, for grouping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AtenFamily {
    Gemm,
    Convolution,
    Attention,
    Embedding,
    Norm,
    Softmax,
    Loss,
    Elementwise,
    Reduction,
    Copy,
}

/// The cost of one execution.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct AtenCost {
    pub family: AtenFamily,
    pub flops: f64,
    pub bytes_read: f64,
    pub bytes_written: f64,
    /// A backward op (its name says so).
    pub backward: bool,
    /// What the count assumed: `causal` / `masked` attention, a convolution's gradients.
    pub detail: Option<String>,
}

/// How an op is costed.
#[derive(Debug, Clone, PartialEq)]
pub enum Costing {
    Costed(AtenCost),
    /// Its work is done by the ops it calls, costed there.
    Composite,
    /// No FLOPs and no traffic of its own (a view, an allocation, metadata).
    Free,
    /// Not costed, and why.
    Unknown(String),
}

/// Bytes an element of a recorded type.
pub fn element_bytes(ty: &str) -> Option<f64> {
    Some(match ty {
        "double" | "long int" | "c10::complex<float>" => 8.0,
        "float" | "int" | "unsigned int" => 4.0,
        "c10::BFloat16" | "c10::Half" | "short int" => 2.0,
        "bool" | "signed char" | "unsigned char" => 1.0,
        t if t.starts_with("c10::Float8") => 1.0,
        "c10::complex<double>" => 16.0,
        _ => return None,
    })
}

fn numel(d: &[i64]) -> f64 {
    d.iter().map(|&x| x.max(0) as f64).product()
}

/// Composite ops: their callees do (and are costed for) the work.
const COMPOSITE: &[&str] = &[
    "linear",
    "matmul",
    "einsum",
    "scaled_dot_product_attention",
    "_scaled_dot_product_attention_math",
    "cross_entropy_loss",
    "nll_loss",
    "nll_loss_nd",
    "log_softmax",
    "softmax",
    "layer_norm",
    "dropout",
    "to",
    "_to_copy",
    "clone",
    "contiguous",
    "conv1d",
    "conv2d",
    "conv3d",
    "embedding_backward",
    "reshape",
    "flatten",
    "type_as",
];

/// Ops that move nothing and compute nothing of their own.
const FREE: &[&str] = &[
    "view",
    "_unsafe_view",
    "_reshape_alias",
    "as_strided",
    "transpose",
    "t",
    "permute",
    "expand",
    "select",
    "slice",
    "squeeze",
    "unsqueeze",
    "split",
    "chunk",
    "unbind",
    "narrow",
    "detach",
    "alias",
    "empty",
    "empty_like",
    "empty_strided",
    "resize_",
    "item",
    "_local_scalar_dense",
    "lift_fresh",
    "set_",
    "record_stream",
];

const ELEMENTWISE: &[&str] = &[
    "add",
    "add_",
    "sub",
    "sub_",
    "mul",
    "mul_",
    "div",
    "div_",
    "neg",
    "neg_",
    "abs",
    "relu",
    "relu_",
    "gelu",
    "gelu_backward",
    "silu",
    "silu_",
    "silu_backward",
    "sigmoid",
    "sigmoid_backward",
    "tanh",
    "tanh_backward",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "pow",
    "pow_",
    "where",
    "clamp",
    "clamp_",
    "clamp_min",
    "clamp_min_",
    "threshold_backward",
    "native_dropout",
    "native_dropout_backward",
    "masked_fill",
    "masked_fill_",
    "reciprocal",
    "maximum",
    "minimum",
    "eq",
    "ne",
    "lt",
    "gt",
    "le",
    "ge",
    "bitwise_and",
    "logical_not",
];

const REDUCTION: &[&str] = &["sum", "mean", "amax", "amin", "max", "min", "norm", "linalg_vector_norm", "var", "std"];

/// The cost of one execution of the ATen op `name` (with or without its `aten::` prefix) from its record.
pub fn cost(name: &str, r: &AtenRecord<'_>) -> Costing {
    let op = name.strip_prefix("aten::").unwrap_or(name);
    if COMPOSITE.contains(&op) {
        return Costing::Composite;
    }
    if FREE.contains(&op) {
        return Costing::Free;
    }
    let costed = match op {
        "mm" => gemm(r, 0, false),
        "addmm" => gemm(r, 1, false),
        "bmm" => gemm(r, 0, true),
        "baddbmm" => gemm(r, 1, true),
        "convolution" | "_convolution" | "cudnn_convolution" => convolution(r),
        "convolution_backward" => convolution_backward(r),
        "_scaled_dot_product_flash_attention" => attention(r, 0, false, Some(4), None),
        "_scaled_dot_product_efficient_attention" => attention(r, 0, false, Some(6), Some(3)),
        "_scaled_dot_product_cudnn_attention" => attention(r, 0, false, Some(6), Some(3)),
        "_scaled_dot_product_flash_attention_backward" => attention(r, 1, true, Some(11), None),
        "_scaled_dot_product_efficient_attention_backward" => attention(r, 1, true, Some(11), Some(4)),
        "_scaled_dot_product_cudnn_attention_backward" => attention(r, 1, true, Some(14), Some(8)),
        "embedding" => embedding(r),
        "embedding_dense_backward" => embedding_backward(r),
        "native_layer_norm" => per_element(r, AtenFamily::Norm, 8.0, false),
        "native_layer_norm_backward" => per_element(r, AtenFamily::Norm, 16.0, true),
        "_softmax" | "_log_softmax" => per_element(r, AtenFamily::Softmax, 5.0, false),
        "_softmax_backward_data" | "_log_softmax_backward_data" => per_element(r, AtenFamily::Softmax, 3.0, true),
        "nll_loss_forward" => nll_loss(r, false),
        "nll_loss_backward" => nll_loss(r, true),
        "copy_" => copy(r),
        "fill_" | "zero_" | "zeros" | "ones" | "full" => fill(r),
        "addcmul" | "addcmul_" | "addcdiv" | "addcdiv_" | "lerp" | "lerp_" => elementwise(r, 2.0),
        o if o.starts_with("_foreach_") || o.starts_with("_fused_") => {
            Err(format!("`{name}` works on tensor lists, whose shapes torch.profiler does not record"))
        }
        o if ELEMENTWISE.contains(&o) => elementwise(r, 1.0),
        o if REDUCTION.contains(&o) => reduction(r),
        _ => Err(format!("no cost rule for `{name}`")),
    };
    match costed {
        Ok(mut c) => {
            c.backward |= op.contains("backward");
            Costing::Costed(c)
        }
        Err(why) => Costing::Unknown(why),
    }
}

type Costed = Result<AtenCost, String>;

fn dims<'a>(r: &'a AtenRecord<'_>, i: usize) -> Result<&'a [i64], String> {
    r.dims.get(i).map(Vec::as_slice).filter(|d| !d.is_empty()).ok_or_else(|| format!("input {i} has no recorded shape"))
}

fn es(r: &AtenRecord<'_>, i: usize) -> f64 {
    r.types.get(i).and_then(|t| element_bytes(t)).unwrap_or(4.0)
}

fn flag(r: &AtenRecord<'_>, i: Option<usize>) -> bool {
    i.and_then(|i| r.concrete.get(i)).is_some_and(|v| v.trim() == "True")
}

fn base(family: AtenFamily, flops: f64, read: f64, written: f64) -> AtenCost {
    AtenCost { family, flops, bytes_read: read, bytes_written: written, backward: false, detail: None }
}

/// `mm`/`bmm` (operands at `first`, `first + 1`), `addmm`/`baddbmm` (a bias first).
fn gemm(r: &AtenRecord<'_>, first: usize, batched: bool) -> Costed {
    let (a, b) = (dims(r, first)?, dims(r, first + 1)?);
    let rank = if batched { 3 } else { 2 };
    if a.len() != rank || b.len() != rank || a[rank - 1] != b[rank - 2] {
        return Err(format!("GEMM operands {a:?} × {b:?} do not multiply"));
    }
    let batch = if batched { a[0].max(0) as f64 } else { 1.0 };
    let (m, k, n) = (a[rank - 2].max(0) as f64, a[rank - 1].max(0) as f64, b[rank - 1].max(0) as f64);
    let e = es(r, first);
    Ok(base(AtenFamily::Gemm, 2.0 * batch * m * k * n, batch * (m * k + k * n) * e, batch * m * n * e))
}

/// A list argument recorded as text (`[1, 1]`), repeated to `n` when it holds one value.
fn int_list(r: &AtenRecord<'_>, i: usize, n: usize, default: i64) -> Vec<i64> {
    let text = r.concrete.get(i).map(String::as_str).unwrap_or("");
    let v: Vec<i64> =
        text.trim_matches(|c| c == '[' || c == ']').split(',').filter_map(|s| s.trim().parse().ok()).collect();
    match v.len() {
        0 => vec![default; n],
        1 => vec![v[0]; n],
        _ => v,
    }
}

/// The forward FLOPs of a convolution of `input` by `weight` (`stride`, `padding`, `dilation` at `at..at+3` of the
/// concrete inputs; the weight's second dimension is already the input channels over the groups), and its output's
/// element count.
fn conv_flops(r: &AtenRecord<'_>, input: &[i64], weight: &[i64], at: usize) -> Result<(f64, f64), String> {
    let spatial = input.len().saturating_sub(2);
    if spatial == 0 || weight.len() != input.len() {
        return Err(format!("convolution shapes {input:?} and {weight:?} do not match"));
    }
    let (stride, padding, dilation) =
        (int_list(r, at, spatial, 1), int_list(r, at + 1, spatial, 0), int_list(r, at + 2, spatial, 1));
    let mut positions = 1.0;
    for d in 0..spatial {
        let (i, k) = (input[2 + d], weight[2 + d]);
        let (s, p, dl) = (
            stride.get(d).copied().unwrap_or(1).max(1),
            padding.get(d).copied().unwrap_or(0),
            dilation.get(d).copied().unwrap_or(1),
        );
        let out = (i + 2 * p - dl * (k - 1) - 1) / s + 1;
        positions *= out.max(0) as f64;
    }
    let (n, out_channels) = (input[0].max(0) as f64, weight[0].max(0) as f64);
    let per_output = weight[1..].iter().map(|&x| x.max(0) as f64).product::<f64>();
    Ok((2.0 * n * out_channels * positions * per_output, n * out_channels * positions))
}

fn convolution(r: &AtenRecord<'_>) -> Costed {
    let (input, weight) = (dims(r, 0)?, dims(r, 1)?);
    // convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    if flag(r, Some(6)) {
        return Err("transposed convolutions have no cost rule".into());
    }
    let (flops, out) = conv_flops(r, input, weight, 3)?;
    let e = es(r, 0);
    Ok(base(AtenFamily::Convolution, flops, (numel(input) + numel(weight)) * e, out * e))
}

fn convolution_backward(r: &AtenRecord<'_>) -> Costed {
    // convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
    // output_padding, groups, output_mask)
    let (input, weight) = (dims(r, 1)?, dims(r, 2)?);
    let (flops, out) = conv_flops(r, input, weight, 4)?;
    let mask = r.concrete.get(10).map(String::as_str).unwrap_or("[True, True, True]");
    let asked: Vec<bool> = mask.trim_matches(|c| c == '[' || c == ']').split(',').map(|s| s.trim() == "True").collect();
    let grads = asked.iter().take(2).filter(|&&b| b).count() as f64;
    let e = es(r, 1);
    let mut c = base(
        AtenFamily::Convolution,
        flops * grads,
        (out + numel(input) + numel(weight)) * e,
        (numel(input) + numel(weight)) * e,
    );
    c.detail = Some(format!("{grads} gradient(s): {mask}"));
    Ok(c)
}

/// The fused attention kernels: query, key, value at `first..first + 3`; `causal`/`bias` the concrete-input indices
/// of `is_causal` and of an attention bias.
fn attention(r: &AtenRecord<'_>, first: usize, backward: bool, causal: Option<usize>, bias: Option<usize>) -> Costed {
    let (q, k, v) = (dims(r, first)?, dims(r, first + 1)?, dims(r, first + 2)?);
    if q.len() != 4 || k.len() != 4 || v.len() != 4 {
        return Err(format!("attention shapes {q:?}, {k:?}, {v:?} are not [B, H, S, D]"));
    }
    let f = |x: i64| x.max(0) as f64;
    let (b, h, sq, d, skv, dv) = (f(q[0]), f(q[1]), f(q[2]), f(q[3]), f(k[2]), f(v[3]));
    let forward = 2.0 * b * h * sq * skv * (d + dv);
    let e = es(r, first);
    let (qkv, out) = ((numel(q) + numel(k) + numel(v)) * e, b * h * sq * dv * e);
    let mut c = if backward {
        base(AtenFamily::Attention, 2.0 * forward, qkv + 2.0 * out, qkv)
    } else {
        base(AtenFamily::Attention, forward, qkv, out)
    };
    let masked = bias.and_then(|i| r.dims.get(i)).is_some_and(|d| !d.is_empty());
    c.detail = if flag(r, causal) {
        Some("causal (counted in full)".into())
    } else if masked {
        Some("masked".into())
    } else {
        None
    };
    Ok(c)
}

fn embedding(r: &AtenRecord<'_>) -> Costed {
    let (weight, indices) = (dims(r, 0)?, dims(r, 1)?);
    let rows = numel(indices) * weight.last().copied().unwrap_or(0).max(0) as f64;
    let e = es(r, 0);
    Ok(base(AtenFamily::Embedding, 0.0, rows * e + numel(indices) * es(r, 1), rows * e))
}

fn embedding_backward(r: &AtenRecord<'_>) -> Costed {
    let (grad, indices) = (dims(r, 0)?, dims(r, 1)?);
    let elements = numel(grad);
    let e = es(r, 0);
    Ok(base(AtenFamily::Embedding, elements, elements * e + numel(indices) * es(r, 1), elements * e))
}

fn per_element(r: &AtenRecord<'_>, family: AtenFamily, per: f64, backward: bool) -> Costed {
    let x = dims(r, 0)?;
    let n = numel(x);
    let e = es(r, 0);
    // A backward reads the gradient and what it differentiates; both write one tensor of the input's size.
    let read = if backward { 2.0 * n * e } else { n * e };
    Ok(base(family, per * n, read, n * e))
}

fn nll_loss(r: &AtenRecord<'_>, backward: bool) -> Costed {
    if backward {
        // nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight)
        let input = dims(r, 1)?;
        let target = dims(r, 2)?;
        let e = es(r, 1);
        return Ok(base(AtenFamily::Loss, numel(target), numel(target) * es(r, 2), numel(input) * e));
    }
    let target = dims(r, 1)?;
    Ok(base(AtenFamily::Loss, numel(target), numel(target) * (es(r, 0) + es(r, 1)), es(r, 0)))
}

fn copy(r: &AtenRecord<'_>) -> Costed {
    let (dst, src) = (dims(r, 0)?, dims(r, 1)?);
    Ok(base(AtenFamily::Copy, 0.0, numel(src) * es(r, 1), numel(dst) * es(r, 0)))
}

fn fill(r: &AtenRecord<'_>) -> Costed {
    let x = dims(r, 0)?;
    Ok(base(AtenFamily::Copy, 0.0, 0.0, numel(x) * es(r, 0)))
}

/// Tensor inputs (a recorded shape) and their sizes.
fn tensors<'a>(r: &'a AtenRecord<'_>) -> impl Iterator<Item = (usize, &'a [i64])> + 'a {
    r.dims.iter().enumerate().filter(|(_, d)| !d.is_empty()).map(|(i, d)| (i, d.as_slice()))
}

fn elementwise(r: &AtenRecord<'_>, per: f64) -> Costed {
    let largest = tensors(r).map(|(_, d)| numel(d)).fold(0.0, f64::max);
    if largest == 0.0 {
        return Err("no tensor input has a recorded shape".into());
    }
    let read: f64 = tensors(r).map(|(i, d)| numel(d) * es(r, i)).sum();
    Ok(base(AtenFamily::Elementwise, per * largest, read, largest * es(r, 0)))
}

fn reduction(r: &AtenRecord<'_>) -> Costed {
    let x = dims(r, 0)?;
    Ok(base(AtenFamily::Reduction, numel(x), numel(x) * es(r, 0), 0.0))
}

#[cfg(test)]
mod tests;
