//! The vocabulary of GPU kernels that the XProf `kernel_stats` tool (`profile::kernels`) and the trace views
//! (`trace::kernels`) share: the kernel row (`KernelStat`, XProf's shape) and which kernels use tensor cores and
//! which ops may, by name (XProf's patterns, and the Ampere and Hopper names it misses).

use serde::Serialize;

/// XProf `kTensorCoreKernelNamePatterns`.
const TENSOR_CORE_KERNEL_PATTERNS: [&str; 19] = [
    "16816",
    "c1688",
    "conv1x1",
    "conv2d_c1_k1",
    "dgrad_1x1_stride_2x2",
    "direct_group",
    "first_layer_wgrad_kernel",
    "h1688",
    "h884",
    "hmma",
    "i16832",
    "i8816",
    "s884",
    "s1688",
    "xmma_gemm",
    "xmma_implicit_gemm",
    "xmma_sparse_conv",
    "xmma_sparse_gemm",
    "xmma_warp_specialized_implicit_gemm",
];

/// Tensor-core kernels of Ampere and Hopper that XProf's patterns miss (name substrings, lower case): cuBLAS's
/// JIT GEMMs (`nvjet_sm90_tst_*`, `nvjet_hsh_*`), XMMA and CUTLASS tensor-op kernels, warpgroup MMA (`wgmma`,
/// Hopper), cuDNN's and PyTorch's flash attention, CUTLASS FMHA, XLA's Triton GEMM fusions and PyTorch
/// Inductor's Triton matmul templates.
pub const HOPPER_TENSOR_CORE_PATTERNS: [&str; 12] = [
    "nvjet_",
    "xmma",
    "tensorop",
    "wgmma",
    "_mma_",
    "flash_fwd",
    "flash_bwd",
    "flash_fprop",
    "flash_bprop",
    "fmha",
    "gemm_fusion_dot",
    "triton_tem_fused_mm",
];

/// One XProf kernel_stats row: a kernel with one launch configuration under one op.
#[derive(serde::Deserialize, Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct KernelStat {
    pub name: String,
    pub op_name: String,
    pub occurrences: u64,
    pub total_time_us: f64,
    pub avg_time_us: f64,
    pub min_time_us: f64,
    pub max_time_us: f64,
    pub registers_per_thread: u32,
    pub static_shmem_bytes: u32,
    pub dynamic_shmem_bytes: u32,
    pub block_dim: [u32; 3],
    pub grid_dim: [u32; 3],
    pub occupancy_percent: f64,
    pub is_op_tensor_core_eligible: bool,
    pub is_kernel_using_tensor_core: bool,
}

/// XProf `IsKernelUsingTensorCore` (NVIDIA name patterns), and the Ampere and Hopper names it misses
/// ([`HOPPER_TENSOR_CORE_PATTERNS`]).
pub fn is_kernel_using_tensor_core(kernel_name: &str) -> bool {
    if TENSOR_CORE_KERNEL_PATTERNS.iter().any(|p| kernel_name.contains(p)) {
        return true;
    }
    let lower = kernel_name.to_ascii_lowercase();
    HOPPER_TENSOR_CORE_PATTERNS.iter().any(|p| lower.contains(p))
}

/// XProf `IsOpTensorCoreEligible` (not exhaustive, as XProf says).
pub fn is_op_tensor_core_eligible(op_name: &str) -> bool {
    const ENDS: [&str; 12] = [
        "Conv2D",
        "Conv2DBackpropFilter",
        "Conv2DBackpropInput",
        "Conv3D",
        "DepthwiseConv2dNative",
        "DepthwiseConv2dNativeBackpropFilter",
        "DepthwiseConv2dNativeBackpropInput",
        "/MatMul",
        "FusedMatMul",
        "/CudnnRNN",
        "XlaDot",
        "XlaDotV2",
    ];
    const CONTAINS: [&str; 4] = ["BatchMatMul", "CudnnRNNV", "CudnnRNNForward", "CudnnRNNBackprop"];
    ENDS.iter().any(|s| op_name.ends_with(s)) || CONTAINS.iter().any(|s| op_name.contains(s))
}

/// XProf `IsEinsumTensorCoreEligible`: a two-operand einsum equation.
pub fn is_einsum_tensor_core_eligible(equation: &str) -> bool {
    if equation.is_empty() {
        return false;
    }
    let parts: Vec<&str> = equation.split("->").collect();
    parts.len() == 2 && parts[0].split(',').count() == 2
}
