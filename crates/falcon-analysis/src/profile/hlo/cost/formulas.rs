//! FLOP formulas from shapes: XLA's for `dot` and `convolution`, the GEMM dimensions of a cuBLAS call's
//! backend config, and Falcon's estimate for cuDNN fused attention.

use super::super::proto::{ConvolutionDimensionNumbers, DotDimensionNumbers, ShapeProto, Window};
use super::elements;

/// `HloCostAnalysis::GetDotFlops`: 2 × output elements × the contracted size of the left operand.
pub(crate) fn dot_flops(lhs: &ShapeProto, result: &ShapeProto, dn: Option<&DotDimensionNumbers>) -> f64 {
    let width: f64 = dn
        .map(|d| {
            d.lhs_contracting_dimensions
                .iter()
                .filter_map(|&i| usize::try_from(i).ok().and_then(|i| lhs.dimensions.get(i)))
                .map(|&n| n.max(0) as f64)
                .product()
        })
        .unwrap_or(1.0);
    2.0 * elements(result) * width
}

/// `HloCostAnalysis::GetConvolutionFlops` (valid window positions counted per spatial dimension).
pub(super) fn conv_flops(
    lhs: &ShapeProto,
    rhs: &ShapeProto,
    result: &ShapeProto,
    dn: &ConvolutionDimensionNumbers,
    window: Option<&Window>,
    feature_groups: i64,
    batch_groups: i64,
) -> f64 {
    let dim = |s: &ShapeProto, i: i64| usize::try_from(i).ok().and_then(|i| s.dimensions.get(i)).copied().unwrap_or(0);
    let input_feature = dim(lhs, dn.input_feature_dimension);
    let output_feature = dim(result, dn.output_feature_dimension);
    let batch = dim(lhs, dn.input_batch_dimension);
    let mut valid_positions = 1f64;
    let dims = window.map(|w| w.dimensions.as_slice()).unwrap_or(&[]);
    for (s, wd) in dims.iter().enumerate() {
        let k = dn.kernel_spatial_dimensions.get(s).map_or(1, |&d| dim(rhs, d));
        let o = dn.output_spatial_dimensions.get(s).map_or(1, |&d| dim(result, d));
        let i = dn.input_spatial_dimensions.get(s).map_or(1, |&d| dim(lhs, d));
        let (stride, base, wdil) = (wd.stride.max(1), wd.base_dilation.max(1), wd.window_dilation.max(1));
        if i == o
            && k == o
            && i == base
            && wdil == 1
            && (i - 1).max(1) == stride
            && wd.padding_low == 0
            && wd.padding_high == 0
        {
            valid_positions *= i as f64;
            continue;
        }
        if i == 1
            && k == o
            && wdil == 1
            && base == 1
            && stride == 1
            && wd.padding_high == o - 1
            && wd.padding_low == o - 1
        {
            valid_positions *= o as f64;
            continue;
        }
        let mut count: i64 = 0;
        // Bounded: a malformed window cannot make this loop run away.
        let k = k.clamp(0, 1 << 16);
        let o = o.clamp(0, 1 << 20);
        for kernel_idx in 0..k {
            if stride == 1 && base == 1 {
                let base_idx = wd.padding_low - kernel_idx * wdil;
                count += ((i + base_idx).min(o) - base_idx.max(0)).max(0);
                continue;
            }
            for out_idx in 0..o {
                let undilated = out_idx * stride - wd.padding_low + kernel_idx * wdil;
                let lhs_idx = if base > 1 { undilated / base } else { undilated };
                if undilated != lhs_idx * base || lhs_idx < 0 || lhs_idx >= i {
                    continue;
                }
                count += 1;
            }
        }
        valid_positions *= count as f64;
    }
    let fma = (input_feature / feature_groups.max(1)) as f64
        * output_feature as f64
        * (batch / batch_groups.max(1)) as f64
        * valid_positions;
    2.0 * fma
}

/// cuBLAS GEMM custom-call targets (XLA `IsCublasGemm`).
pub(super) fn is_cublas_gemm(target: &str) -> bool {
    matches!(target, "__cublas$gemm" | "__cublas$lt$matmul" | "__cublas$lt$matmul$f8" | "__cublas$lt$matmul$mx")
}

/// The `dot_dimension_numbers` of a GEMM's backend config (JSON: `gemm_backend_config` inside the GPU
/// backend config, or at the top level in older captures); dimensions are JSON strings or numbers.
pub(super) fn gemm_dot_dimensions(config: &[u8]) -> Option<DotDimensionNumbers> {
    let v: serde_json::Value = serde_json::from_slice(config).ok()?;
    let gemm = v.get("gemm_backend_config").unwrap_or(&v);
    let dn = gemm.get("dot_dimension_numbers")?;
    let list = |k: &str| -> Vec<i64> {
        dn.get(k)
            .and_then(|a| a.as_array())
            .map(|a| a.iter().filter_map(|x| x.as_i64().or_else(|| x.as_str().and_then(|s| s.parse().ok()))).collect())
            .unwrap_or_default()
    };
    Some(DotDimensionNumbers {
        lhs_contracting_dimensions: list("lhs_contracting_dimensions"),
        rhs_contracting_dimensions: list("rhs_contracting_dimensions"),
        lhs_batch_dimensions: list("lhs_batch_dimensions"),
        rhs_batch_dimensions: list("rhs_batch_dimensions"),
    })
}

/// cuDNN fused attention, from Q `[B, S_q, H, D]` (or `[B, H, S_q, D]`, whichever matches) and K
/// `[B, S_kv, H, D]`: 4·B·H·S_q·S_kv·D forward (Q·Kᵀ and P·V), 10·… backward (five GEMMs); 0 when the shapes
/// do not read as attention.
pub(super) fn fused_attention_flops(target: &str, operands: &[Option<&ShapeProto>], _result: &ShapeProto) -> f64 {
    let (Some(q), Some(k)) = (operands.first().and_then(|s| *s), operands.get(1).and_then(|s| *s)) else {
        return 0.0;
    };
    if q.dimensions.len() != 4 || k.dimensions.len() != 4 {
        return 0.0;
    }
    let d = q.dimensions[3].max(0) as f64;
    if d != k.dimensions[3].max(0) as f64 {
        return 0.0;
    }
    let (b, q_rest, k_rest) = (q.dimensions[0].max(0) as f64, &q.dimensions[1..3], &k.dimensions[1..3]);
    // The head dimension is the one Q and K share; the other is each side's sequence.
    let (h, sq, skv) =
        if q_rest[1] == k_rest[1] { (q_rest[1], q_rest[0], k_rest[0]) } else { (q_rest[0], q_rest[1], k_rest[1]) };
    let per_gemm = 2.0 * b * h.max(0) as f64 * sq.max(0) as f64 * skv.max(0) as f64 * d;
    let backward = target.to_ascii_lowercase().contains("backward");
    per_gemm * if backward { 5.0 } else { 2.0 }
}
