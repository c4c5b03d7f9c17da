//! What a GPU performance engineer acts on, read from the costed op database and the kernels: each finding a
//! kind, its share of device op time, the ops behind it, and one line saying what it is and what to try. Sorted
//! by share, largest first; only what matters (at least 5 % of op time, or 10 % of the step for time outside
//! any op).
//!
//! - `hbm_bound_attention`: ops that read or write attention score matrices (a shape of rank 3 or more whose last
//!   two dimensions are equal and at least 256: `bf16[8,8,1024,1024]`, `[64,1024,1024]`) and sit below the
//!   roofline's ridge — the softmax fusions and score GEMMs an unfused attention makes, which move S² elements per
//!   head through HBM. Fused (flash) attention keeps them on chip.
//! - `gemm_off_tensor_cores`: GEMM and convolution kernels not on tensor cores.
//! - `f32_compute`: most of the compute in 32 bits.
//! - `time_outside_ops`: device time in no op (the device waiting on the host, launches, syncs).

use serde::Serialize;

use crate::kernels::KernelStat;
use crate::op_metrics::OpMetricsDb;

/// The kind of a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    HbmBoundAttention,
    GemmOffTensorCores,
    F32Compute,
    TimeOutsideOps,
    /// The host cannot launch kernels as fast as the device runs them (traces that record launches).
    LaunchBound,
    /// The profiled steps ran much slower than the unprofiled ones: the trace's host time is inflated.
    ProfilerOverhead,
}

/// One thing to act on.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Finding {
    pub kind: FindingKind,
    /// Its share of device op time (of the step for `time_outside_ops`), 0..1.
    pub share: f64,
    /// The ops (or kernels) behind it, longest first, at most 8.
    pub ops: Vec<String>,
    /// What it is, with its numbers, and what to try — one line.
    pub summary: String,
}

/// Whether a shape text (`bf16[8,8,1024,1024]`) is an attention score matrix (see the module docs).
fn is_score_matrix(dims: &[u64]) -> bool {
    dims.len() >= 3 && dims[dims.len() - 1] == dims[dims.len() - 2] && dims[dims.len() - 1] >= 256
}

/// The array shapes an HLO text names (`bf16[8,1024]` → [8, 1024]).
fn shapes(text: &str) -> impl Iterator<Item = Vec<u64>> + '_ {
    text.split('[').skip(1).filter_map(|rest| {
        let (inner, _) = rest.split_once(']')?;
        if inner.is_empty() {
            return Some(Vec::new());
        }
        inner.split(',').map(|d| d.trim().parse::<u64>().ok()).collect::<Option<Vec<u64>>>()
    })
}

fn names(mut ops: Vec<(String, u64)>) -> Vec<String> {
    ops.sort_by_key(|o| std::cmp::Reverse(o.1));
    ops.into_iter().take(8).map(|(n, _)| n).collect()
}

fn is_gemm_kernel(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    ["gemm", "nvjet", "matmul", "xmma", "cutlass", "_mm_", "conv", "sdpa", "flash", "fmha"]
        .iter()
        .any(|p| l.contains(p))
}

/// The findings of a GPU capture (empty elsewhere).
/// `ridge` is the roofline's HBM ridge point (FLOP/byte).
pub fn gpu_findings(db: &OpMetricsDb, ridge: f64, kernels: &[KernelStat]) -> Vec<Finding> {
    let mut out = Vec::new();
    let op_time: u64 = db.device_ops().map(|o| o.self_time_ps).sum();
    if op_time == 0 {
        return out;
    }
    let share = |ps: u64| ps as f64 / op_time as f64;
    // Attention score matrices under the ridge.
    let mut attention: Vec<(String, u64)> = Vec::new();
    let mut intensity = (0.0, 0.0);
    if db.has_hlo_costs {
        for o in db.device_ops() {
            let oi = if o.bytes_accessed > 0 { o.flops as f64 / o.bytes_accessed as f64 } else { f64::INFINITY };
            if oi < ridge && shapes(&o.long_name).any(|d| is_score_matrix(&d)) {
                attention.push((o.name.clone(), o.self_time_ps));
                intensity.0 += o.flops as f64;
                intensity.1 += o.bytes_accessed as f64;
            }
        }
    }
    let attention_ps: u64 = attention.iter().map(|(_, t)| t).sum();
    if share(attention_ps) >= 0.05 {
        let n = attention.len();
        out.push(Finding {
            kind: FindingKind::HbmBoundAttention,
            share: share(attention_ps),
            ops: names(attention),
            summary: format!(
                "HBM-bound attention: {n} ops read or write the S×S score matrices, {:.0}% of device op time at {:.0} \
                 FLOP/B (ridge {:.0}): try fused (flash) attention — jax.nn.dot_product_attention(implementation=\
                 \"cudnn\"), a Pallas flash kernel, or torch's scaled_dot_product_attention — which keeps the scores \
                 on chip",
                100.0 * share(attention_ps),
                if intensity.1 > 0.0 { intensity.0 / intensity.1 } else { 0.0 },
                ridge
            ),
        });
    }
    // GEMM kernels off tensor cores.
    let gemm: Vec<&KernelStat> = kernels.iter().filter(|k| is_gemm_kernel(&k.name)).collect();
    let gemm_us: f64 = gemm.iter().map(|k| k.total_time_us).sum();
    let off: Vec<&&KernelStat> = gemm.iter().filter(|k| !k.is_kernel_using_tensor_core).collect();
    let off_us: f64 = off.iter().map(|k| k.total_time_us).sum();
    let kernel_us: f64 = kernels.iter().map(|k| k.total_time_us).sum();
    if kernel_us > 0.0 && off_us / kernel_us >= 0.05 {
        out.push(Finding {
            kind: FindingKind::GemmOffTensorCores,
            share: off_us / kernel_us,
            ops: names(off.iter().map(|k| (k.name.clone(), (k.total_time_us * 1e6) as u64)).collect()),
            summary: format!(
                "GEMMs off tensor cores: {:.0}% of kernel time ({:.0}% of GEMM time) in matrix kernels on CUDA cores: \
                 use bf16/fp16 (or TF32) inputs and shapes in multiples of 8 (16 for fp8)",
                100.0 * off_us / kernel_us,
                100.0 * off_us / gemm_us.max(f64::MIN_POSITIVE)
            ),
        });
    }
    // Most compute in f32.
    let p = db.precision;
    let compute = (p.compute_16bit_ps + p.compute_32bit_ps) as f64;
    if compute > 0.0 && p.compute_32bit_ps as f64 / compute > 0.5 {
        out.push(Finding {
            kind: FindingKind::F32Compute,
            share: p.compute_32bit_ps as f64 / compute,
            ops: Vec::new(),
            summary: format!(
                "{:.0}% of device compute in 32 bits: bf16 halves the bytes moved and runs GEMMs on tensor cores",
                100.0 * p.compute_32bit_ps as f64 / compute
            ),
        });
    }
    // Time outside any op.
    if db.total_time_ps > 0 {
        let outside = 1.0 - op_time as f64 / db.total_time_ps as f64;
        if outside >= 0.10 {
            out.push(Finding {
                kind: FindingKind::TimeOutsideOps,
                share: outside,
                ops: Vec::new(),
                summary: format!(
                    "{:.0}% of device time is in no op: the device waits on the host (launches, syncs, input); \
                     `falcon profile trace` names what the host did in each gap — try fewer host syncs per step, \
                     larger steps, or CUDA graphs (XLA command buffers) where they are off",
                    100.0 * outside
                ),
            });
        }
    }
    out.sort_by(|a, b| b.share.total_cmp(&a.share));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_matrices_are_recognised_in_hlo_text() {
        let text = "%fusion.611 = bf16[8,8,1024,1024] fusion(f32[8,8,1024] %a, bf16[64,1024,1024] %b), kind=kCustom";
        let found: Vec<Vec<u64>> = shapes(text).collect();
        assert_eq!(found, vec![vec![8, 8, 1024, 1024], vec![8, 8, 1024], vec![64, 1024, 1024]]);
        assert!(is_score_matrix(&found[0]) && is_score_matrix(&found[2]) && !is_score_matrix(&found[1]));
        assert!(!is_score_matrix(&[1024, 1024]), "a weight matrix");
        assert!(!is_score_matrix(&[8, 128, 128]), "too small to matter");
        assert_eq!(shapes("f32[] x").collect::<Vec<_>>(), vec![Vec::<u64>::new()]);
        assert_eq!(shapes("garbage [x,y] [").count(), 0);
    }
}
