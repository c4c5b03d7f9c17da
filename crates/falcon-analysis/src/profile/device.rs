//! The device side of a capture: which planes are the devices, what hardware they are, and the peak
//! rates (compute, memory bandwidths) every utilization figure divides by.
//!
//! # Rules (XProf 2.24.2)
//!
//! * **Device planes** (`xprof/convert/xplane_to_op_stats.cc:SetRunEnvironment`): GPU planes
//!   (`/device:GPU:N`) win when present; else TPU TensorCore planes (`/device:TPU:N`, regex
//!   `/device:TPU:([0-9]*)$`, SparseCore planes excluded); else the capture is CPU-only with device
//!   type `CPU` and 0 cores.
//! * **Device type**: TPU = plane stat `device_type_string` of the first TensorCore plane (e.g.
//!   `TPU v6 Lite`). GPU = XProf's `GpuModelName` (`xprof/utils/hardware_type_utils.cc`):
//!   `Nvidia GPU (<architecture>)` from the compute capability when the plane says
//!   `device_vendor = Nvidia`, `AMD GPU…` for AMD, and plain `GPU` when the vendor stat is absent
//!   (older TF captures). The CUDA device name (`gpu_device_name`) is kept in [`DeviceInfo::device_name`].
//! * **Cores**: number of TensorCore planes (TPU) / GPU planes (GPU).
//! * **CPU-only captures** (Falcon, not XProf: XProf reports 0 cores): the capture records no core
//!   count, but XLA:CPU leaves one line per thread on `/host:CPU` ([`CpuThreads`]). `device_cores` is
//!   the number of threads of XLA:CPU's intra-op pool (`tf_XLAEigen…` lines), which XLA sizes to the
//!   machine's schedulable cores by default; a pool thread that recorded no event has no line, so it
//!   is a lower bound. Without such lines it is the number of threads that ran XLA:CPU ops (events
//!   with an `hlo_op` stat, the rule of [`crate::cpu_ops`]); 0 only when no thread ran one.
//! * **Peaks** (`GetPerfEnvFromXPlane`, first device plane):
//!   - TPU: plane stats `peak_teraflops_per_second`, `peak_hbm_bw_gigabytes_per_second`,
//!     `peak_sram_{rd,wr}_bw_…`, `peak_cmem_{rd,wr}_bw_…`, `peak_vmem_{rd,wr}_bw_…`,
//!     `has_megacore`, `has_merged_vmem`; `has_cmem` = a cmem peak > 0.
//!   - GPU: `core_count × max(fp32, fp16 vector / matrix FLOPs per SM per cycle for the compute
//!     capability) × clock_GHz` (table of `hardware_type_utils.cc`, Nvidia only; the nearest lower
//!     known capability is used), HBM = `memory_bandwidth` bytes/s ÷ 1e9, SRAM (shared memory/L1)
//!     = `core_count × 32 banks × 8 B × clock_GHz` (Nvidia only). A plane stat
//!     `peak_teraflops_per_second` > 0 overrides the computed compute peak. Unknown vendor → 0,
//!     exactly as XProf.
//!   - Fallback (Falcon, not XProf): when the stats give no compute peak, the chip is looked up in
//!     [`falcon_core::catalog`] by device type (`TPU v6 Lite` → v6e, `TPU v5 Lite` → v5e,
//!     `TPU v5p`/`TPU v5` → v5p, `TPU v4` → v4, A100/H100/H200 by name) and its per-chip dense bf16
//!     peak and HBM bandwidth are used, with [`PeakSource::Catalog`]. XProf would show 0 there.
//!   - [`PeakSource`] describes the *compute* peak: `DeviceStats` when the plane stats gave it,
//!     `Catalog` for the fallback, `None` when still unknown (the V100 TF capture: no vendor stat,
//!     not in the catalog; XProf's roofline also shows `peak_flop_rate` 0 there).
//! * **Ridge point** = peak GFLOP/s ÷ peak HBM GB/s (`MakePerfEnv`), 0 when a peak is unknown.

use falcon_core::catalog::{self, Chip};
use falcon_xplane::{StatValue, XPlane, XSpace};
use serde::Serialize;

use super::planes::{DERIVED_LINE_SUFFIXES, HOST_CPU_PLANE};

/// The kind of hardware a capture ran on, as XProf classifies it.
#[derive(serde::Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Hardware {
    Tpu,
    Gpu,
    /// No device planes: an XLA:CPU (or host-only) capture.
    #[default]
    CpuOnly,
}

/// Where the peak rates came from.
#[derive(serde::Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PeakSource {
    /// Plane stats written by the profiler (TPU peaks, GPU clock/core count/bandwidth).
    DeviceStats,
    /// Falcon's accelerator catalog (`falcon_core::catalog`), matched on the device type.
    Catalog,
    /// Measured on the machine (`falcon doctor --calibrate`: an f32 matmul and a memory-bandwidth benchmark on the
    /// cores the pool offers), for XLA:CPU captures.
    Measured,
    /// Given by the caller (`--peak-tflops`).
    Given,
    /// Nothing known: the utilizations that need a peak are `null`.
    #[default]
    None,
}

/// XProf's `PerfEnv` plus identity of the devices of one host's capture.
#[derive(serde::Deserialize, Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct DeviceInfo {
    pub hardware: Hardware,
    /// E.g. `TPU v6 Lite`, `Nvidia GPU (Volta)`, `GPU`, `CPU` (XProf's run-environment device type).
    pub device_type: String,
    /// Number of device cores (TPU TensorCores / GPUs) in this capture.
    pub device_cores: u32,
    /// Peak compute, TFLOP/s per core.
    pub peak_teraflops_per_second: f64,
    /// Peak bandwidths, GB/s per core, indexed by XProf's MemBwType
    /// {0 HBM_RW, 1 SRAM_RD, 2 SRAM_WR, 3 CMEM_RD, 4 CMEM_WR, 5 VMEM_RD, 6 VMEM_WR}.
    pub peak_bws_giga_bytes_per_second: [f64; 7],
    pub has_cmem: bool,
    pub has_merged_vmem: bool,
    pub has_megacore: bool,
    pub peak_source: PeakSource,
    /// The device's own name when the capture has one (GPU `gpu_device_name`), else "".
    pub device_name: String,
    /// Catalog chip matched on the device type (e.g. `v6e`), when any.
    pub catalog_chip: Option<String>,
    /// CPU-only captures: the threads the capture shows (`null` on TPU/GPU captures).
    pub cpu_threads: Option<CpuThreads>,
}

/// The threads of an XLA:CPU capture's `/host:CPU` plane (lines XProf derives excluded).
#[derive(serde::Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct CpuThreads {
    /// Thread lines (every thread that recorded an event).
    pub threads: u32,
    /// Threads that ran XLA:CPU ops (an event with an `hlo_op` stat).
    pub op_threads: u32,
    /// Threads of XLA:CPU's intra-op pool (`tf_XLAEigen…` lines), sized to the machine's cores by default.
    pub intra_op_threads: u32,
}

impl CpuThreads {
    /// The threads of `space`'s `/host:CPU` plane (all zero without one).
    pub fn of(space: &XSpace) -> CpuThreads {
        let mut t = CpuThreads::default();
        let Some(plane) = space.plane_by_name(HOST_CPU_PLANE) else {
            return t;
        };
        let op_stat = plane.stat_metadata_by_name("hlo_op").map(|m| m.id);
        for line in &plane.lines {
            if line.events.is_empty() || DERIVED_LINE_SUFFIXES.iter().any(|s| line.name.ends_with(s)) {
                continue;
            }
            t.threads += 1;
            let runs_ops = op_stat.is_some_and(|id| {
                line.events.iter().any(|e| {
                    e.stats.iter().any(|s| s.metadata_id == id)
                        || plane.event_metadata_of(e).is_some_and(|m| m.stats.iter().any(|s| s.metadata_id == id))
                })
            });
            t.op_threads += u32::from(runs_ops);
            let name = if line.display_name.is_empty() { &line.name } else { &line.display_name };
            t.intra_op_threads += u32::from(name.starts_with("tf_XLAEigen"));
        }
        t
    }

    /// The CPU count `device_cores` reports (see the module doc).
    pub fn cores(&self) -> u32 {
        if self.intra_op_threads > 0 {
            self.intra_op_threads
        } else {
            self.op_threads
        }
    }
}

impl DeviceInfo {
    /// XProf's ridge point: peak GFLOP/s ÷ peak HBM GB/s (0 when unknown).
    pub fn hbm_ridge_point(&self) -> f64 {
        safe_divide(self.peak_teraflops_per_second * 1000.0, self.peak_bws_giga_bytes_per_second[0])
    }

    /// Peak compute in GFLOP/s per core.
    pub fn peak_gflops(&self) -> f64 {
        self.peak_teraflops_per_second * 1000.0
    }
}

/// XProf's `SafeDivide`: 0 when the divisor is (nearly) 0.
pub(crate) fn safe_divide(a: f64, b: f64) -> f64 {
    if b.abs() < 1e-10 {
        0.0
    } else {
        a / b
    }
}

/// XProf's `GigaToGibi`.
pub(crate) fn giga_to_gibi(x: f64) -> f64 {
    x / 1.073_741_824
}

/// Whether a plane name is a TPU TensorCore plane (`/device:TPU:<digits>`).
pub(crate) fn is_tpu_tensor_core_plane(name: &str) -> bool {
    name.strip_prefix("/device:TPU:").is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit()))
}

/// The device planes XProf builds op metrics from: TPU planes (except SparseCore) when any, else
/// GPU planes.
pub(crate) fn op_device_planes(space: &XSpace) -> (Hardware, Vec<&XPlane>) {
    let tpu: Vec<&XPlane> =
        space.planes_with_prefix("/device:TPU:").filter(|p| !p.name.contains("SparseCore")).collect();
    if !tpu.is_empty() {
        return (Hardware::Tpu, tpu);
    }
    let gpu: Vec<&XPlane> = space.planes_with_prefix("/device:GPU:").collect();
    if !gpu.is_empty() {
        return (Hardware::Gpu, gpu);
    }
    (Hardware::CpuOnly, Vec::new())
}

fn stat_f64(plane: &XPlane, name: &str) -> Option<f64> {
    plane.plane_stat(name)?.value.as_f64()
}

fn stat_bool(plane: &XPlane, name: &str) -> bool {
    stat_f64(plane, name).is_some_and(|v| v != 0.0)
}

fn stat_string(plane: &XPlane, name: &str) -> Option<String> {
    let stat = plane.plane_stat(name)?;
    match &stat.value {
        StatValue::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        _ => plane.stat_str(stat).map(str::to_string),
    }
}

/// Catalog chip for an XProf device type / device name (the catalog's own matching).
pub(crate) fn catalog_chip_for(device_type: &str) -> Option<&'static Chip> {
    catalog::chip_for_device(device_type)
}

/// The catalog's dense bf16 peak (TFLOP/s) of the chip the capture names, when it names one.
pub fn catalog_peak_tflops(device: &DeviceInfo) -> Option<f64> {
    catalog_chip_for(&device.device_type).or_else(|| catalog_chip_for(&device.device_name))?.peak_bf16_tflops
}

/// Per-SM per-cycle FLOPs (max of fp32/fp16 vector and matrix units) for an Nvidia compute
/// capability, from XProf's `hardware_type_utils.cc` table; the nearest lower known capability is
/// used (the oldest when below all).
fn nvidia_flops_per_sm_per_cycle(major: i64, minor: i64) -> f64 {
    // (normalized cap, max(vector fp32, vector fp16, matrix fp32, matrix fp16)).
    const TABLE: [(i64, f64); 12] = [
        (2000, 64.0),
        (3000, 384.0),
        (5000, 256.0),
        (6000, 256.0),
        (6010, 256.0),
        (7000, 1024.0),
        (7050, 1024.0),
        (8000, 2048.0),
        (8060, 1024.0),
        (8090, 1024.0),
        (9000, 4096.0),
        (10000, 8192.0),
    ];
    let cap = major * 1000 + minor * 10;
    TABLE.iter().rev().find(|(c, _)| *c <= cap).or(TABLE.first()).map_or(0.0, |(_, f)| *f)
}

fn gpu_model_name(vendor: &str, major: i64, minor: i64) -> String {
    match vendor {
        "Nvidia" => match major {
            2 => "Nvidia GPU (Fermi)",
            3 => "Nvidia GPU (Kepler)",
            5 => "Nvidia GPU (Maxwell)",
            6 => "Nvidia GPU (Pascal)",
            7 if minor < 5 => "Nvidia GPU (Volta)",
            7 => "Nvidia GPU (Turing)",
            8 if minor < 9 => "Nvidia GPU (Ampere)",
            8 => "Nvidia GPU (Ada Lovelace)",
            9 => "Nvidia GPU (Hopper)",
            10 => "Nvidia GPU (Blackwell)",
            _ => "Nvidia GPU",
        }
        .to_string(),
        "AMD" => "AMD GPU".to_string(),
        _ => String::new(),
    }
}

fn tpu_info(planes: &[&XPlane]) -> DeviceInfo {
    let mut info = DeviceInfo {
        hardware: Hardware::Tpu,
        device_cores: u32::try_from(planes.iter().filter(|p| is_tpu_tensor_core_plane(&p.name)).count())
            .unwrap_or(u32::MAX),
        ..DeviceInfo::default()
    };
    let Some(first) = planes.iter().find(|p| is_tpu_tensor_core_plane(&p.name)).or(planes.first()) else {
        return info;
    };
    info.device_type = stat_string(first, "device_type_string").unwrap_or_default();
    let get = |name: &str| stat_f64(first, name).unwrap_or(0.0);
    info.peak_teraflops_per_second = get("peak_teraflops_per_second");
    info.peak_bws_giga_bytes_per_second = [
        get("peak_hbm_bw_gigabytes_per_second"),
        get("peak_sram_rd_bw_gigabytes_per_second"),
        get("peak_sram_wr_bw_gigabytes_per_second"),
        get("peak_cmem_rd_bw_gigabytes_per_second"),
        get("peak_cmem_wr_bw_gigabytes_per_second"),
        get("peak_vmem_rd_bw_gigabytes_per_second"),
        get("peak_vmem_wr_bw_gigabytes_per_second"),
    ];
    info.has_cmem = info.peak_bws_giga_bytes_per_second[3] > 0.0 || info.peak_bws_giga_bytes_per_second[4] > 0.0;
    info.has_merged_vmem = stat_bool(first, "has_merged_vmem");
    info.has_megacore = stat_bool(first, "has_megacore");
    info
}

fn gpu_info(planes: &[&XPlane]) -> DeviceInfo {
    let mut info = DeviceInfo {
        hardware: Hardware::Gpu,
        device_cores: u32::try_from(planes.len()).unwrap_or(u32::MAX),
        device_type: "GPU".to_string(),
        ..DeviceInfo::default()
    };
    let Some(first) = planes.first() else {
        return info;
    };
    let int = |name: &str| first.plane_stat(name).and_then(|s| s.value.as_i64()).unwrap_or(0);
    let clock_ghz = int("clock_rate") as f64 / 1_000_000.0;
    let cores = int("core_count") as f64;
    let (major, minor) = (int("compute_cap_major"), int("compute_cap_minor"));
    let vendor = stat_string(first, "device_vendor").unwrap_or_default();
    let model = gpu_model_name(&vendor, major, minor);
    if !model.is_empty() {
        info.device_type = model;
    }
    info.device_name = stat_string(first, "gpu_device_name").unwrap_or_default();
    let per_sm_gflops = if vendor == "Nvidia" { nvidia_flops_per_sm_per_cycle(major, minor) * clock_ghz } else { 0.0 };
    info.peak_teraflops_per_second = cores * per_sm_gflops / 1000.0;
    if let Some(peak) = stat_f64(first, "peak_teraflops_per_second").filter(|p| *p > 0.0) {
        info.peak_teraflops_per_second = peak;
    }
    let hbm = first.plane_stat("memory_bandwidth").and_then(|s| s.value.as_f64()).unwrap_or(0.0) / 1e9;
    let shm = if vendor == "Nvidia" {
        let bytes_per_cycle = if major <= 2 { 32.0 * 4.0 / 2.0 } else { 32.0 * 8.0 };
        cores * bytes_per_cycle * clock_ghz
    } else {
        0.0
    };
    info.peak_bws_giga_bytes_per_second = [hbm, shm, shm, 0.0, 0.0, 0.0, 0.0];
    info
}

/// Device information of one host's XSpace (TPU planes when any, else GPU planes, else CPU-only).
///
/// Note XProf's run environment prefers GPU planes over TPU planes while its op metrics prefer TPU
/// planes; a capture has only one kind in practice, and here TPU wins for both.
pub fn device_info(space: &XSpace) -> DeviceInfo {
    let (hardware, planes) = op_device_planes(space);
    let mut info = match hardware {
        Hardware::Tpu => tpu_info(&planes),
        Hardware::Gpu => gpu_info(&planes),
        Hardware::CpuOnly => {
            let threads = CpuThreads::of(space);
            return DeviceInfo {
                hardware: Hardware::CpuOnly,
                device_type: "CPU".to_string(),
                device_cores: threads.cores(),
                cpu_threads: Some(threads),
                ..DeviceInfo::default()
            };
        }
    };
    let chip = catalog_chip_for(&info.device_type).or_else(|| catalog_chip_for(&info.device_name));
    info.catalog_chip = chip.map(|c| c.name.to_string());
    if info.peak_teraflops_per_second > 0.0 {
        info.peak_source = PeakSource::DeviceStats;
    } else if let Some(peak) = chip.and_then(|c| c.peak_bf16_tflops) {
        info.peak_teraflops_per_second = peak;
        info.peak_source = PeakSource::Catalog;
        if info.peak_bws_giga_bytes_per_second[0] <= 0.0 {
            info.peak_bws_giga_bytes_per_second[0] = chip.and_then(|c| c.hbm_gbps).unwrap_or(0.0);
        }
    }
    info
}

/// XLA:CPU: the peaks per core the roofline, bound-by and MFU divide by, from the caller's whole-machine peak
/// (`--peak-tflops`, [`PeakSource::Given`]) or the machine's measured one ([`PeakSource::Measured`]; its memory
/// bandwidth is kept beside a given compute peak). A note says which, or nothing when neither is known.
pub(crate) fn apply_cpu_peak(
    device: &mut DeviceInfo,
    given_tflops: Option<f64>,
    measured: Option<&crate::profile::CpuPeak>,
) -> Option<String> {
    let cores = f64::from(device.device_cores.max(1));
    let measured = measured.filter(|m| m.tflops.is_finite() && m.tflops > 0.0 && m.cores > 0);
    if let Some(m) = measured {
        let per_core = 1.0 / f64::from(m.cores);
        device.peak_teraflops_per_second = m.tflops * per_core;
        if m.memory_gb_per_s.is_finite() && m.memory_gb_per_s > 0.0 {
            device.peak_bws_giga_bytes_per_second[0] = m.memory_gb_per_s * per_core;
        }
        device.peak_source = PeakSource::Measured;
    }
    match given_tflops.filter(|p| p.is_finite() && *p > 0.0) {
        Some(given) => {
            device.peak_teraflops_per_second = given / cores;
            device.peak_source = PeakSource::Given;
            Some(format!(
                "XLA:CPU peak: {given} TFLOP/s for the machine as given (--peak-tflops), {:.4} TFLOP/s per core over \
                 {cores} core(s){}",
                given / cores,
                measured.map_or(String::new(), |m| format!(
                    "; memory bandwidth {:.1} GB/s measured ({})",
                    m.memory_gb_per_s, m.measured
                ))
            ))
        }
        None => measured.map(|m| {
            format!(
                "XLA:CPU peak measured, not catalogued: {:.4} TFLOP/s f32 matmul and {:.1} GB/s memory bandwidth on {} \
                 core(s) ({}; `falcon doctor --calibrate`), i.e. {:.4} TFLOP/s and {:.1} GB/s per core",
                m.tflops,
                m.memory_gb_per_s,
                m.cores,
                m.measured,
                device.peak_teraflops_per_second,
                device.peak_bws_giga_bytes_per_second[0]
            )
        }),
    }
}
