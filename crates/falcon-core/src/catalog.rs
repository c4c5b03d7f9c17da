//! The accelerator catalog: the chips Falcon knows and the accelerator types (slice shapes) built from them.
//!
//! One table serves the job scheduler (chips and hosts per slice), the Kubernetes manifests (GKE node
//! labels, machine types, device resource names) and MFU computation (peak FLOP/s).
//!
//! Type names follow xpk's device types: `v4-8`, `v5p-128`, `v5litepod-16` (alias `v5e-16`), `v6e-8`,
//! `h100-80gb-8`, `cpu`. The number in a TPU name counts TensorCores for v4 and v5p (two per chip) and
//! chips for v5e and v6e. A TPU slice of one chip is one VM; larger slices have four chips per VM.
//!
//! Peaks are the *dense* bf16 figures per chip; vendor pages often headline the 2:4-sparse number, which
//! is twice as large and wrong for MFU.

use crate::config::Platform;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// One accelerator chip and its peak figures.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Chip {
    /// Short name (`v5e`, `h100-80gb`, `cpu`).
    pub name: &'static str,
    /// Peak dense bf16 TFLOP/s per chip (never the 2:4-sparse figure); `None` when unknown (CPU).
    pub peak_bf16_tflops: Option<f64>,
    /// HBM capacity per chip in bytes.
    pub hbm_bytes: Option<u64>,
    /// HBM bandwidth per chip in GB/s (10^9 bytes per second).
    pub hbm_gbps: Option<f64>,
    /// TPU TensorCores per chip; 0 for chips that are not TPUs.
    pub tensorcores: u32,
    /// The link a collective among chips of one node (GPU) or slice (TPU) runs over; `None` when not catalogued.
    pub link: Option<Link>,
}

/// A chip-to-chip link and its vendor peak: what a collective's bus bandwidth is held against.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Link {
    /// `ICI`, `NVLink 4`, `PCIe Gen4 x16`.
    pub name: &'static str,
    /// Peak per chip, both directions together, GB/s (10^9 bytes per second) — the vendor's figure.
    pub bidirectional_gbps: f64,
    /// The most chips one link domain joins (an HGX node's 8 GPUs); `None` for a TPU slice (ICI spans it).
    pub domain_chips: Option<u32>,
}

impl Link {
    /// The peak one way, GB/s: what nccl-tests' bus bandwidth is compared with (half the bidirectional figure).
    pub fn per_direction_gbps(&self) -> f64 {
        self.bidirectional_gbps / 2.0
    }
}

/// TPU ICI (Google Cloud's TPU pages: bidirectional ICI bandwidth per chip).
const fn ici(bidirectional_gbps: f64) -> Option<Link> {
    Some(Link { name: "ICI", bidirectional_gbps, domain_chips: None })
}

/// NVLink of an 8-GPU HGX board (NVIDIA's data sheets: bidirectional per GPU).
const fn nvlink(name: &'static str, bidirectional_gbps: f64) -> Option<Link> {
    Some(Link { name, bidirectional_gbps, domain_chips: Some(8) })
}

const GB: u64 = 1_000_000_000;
const GIB: u64 = 1 << 30;

/// TPU v4: 275 TFLOP/s bf16, 32 GiB HBM2 at 1200 GB/s, two TensorCores (ICI not catalogued).
pub static TPU_V4: Chip = Chip {
    name: "v4",
    peak_bf16_tflops: Some(275.0),
    hbm_bytes: Some(32 * GIB),
    hbm_gbps: Some(1200.0),
    tensorcores: 2,
    link: None,
};

/// TPU v5e: 197 TFLOP/s bf16, 16 GB HBM2 at 819 GB/s, one TensorCore, ICI 400 GB/s.
pub static TPU_V5E: Chip = Chip {
    name: "v5e",
    peak_bf16_tflops: Some(197.0),
    hbm_bytes: Some(16 * GB),
    hbm_gbps: Some(819.0),
    tensorcores: 1,
    link: ici(400.0),
};

/// TPU v5p: 459 TFLOP/s bf16, 95 GB HBM2e at 2765 GB/s, two TensorCores, ICI 1200 GB/s.
pub static TPU_V5P: Chip = Chip {
    name: "v5p",
    peak_bf16_tflops: Some(459.0),
    hbm_bytes: Some(95 * GB),
    hbm_gbps: Some(2765.0),
    tensorcores: 2,
    link: ici(1200.0),
};

/// TPU v6e (Trillium): 918 TFLOP/s bf16, 32 GB HBM at 1638 GB/s, one TensorCore, ICI 800 GB/s.
pub static TPU_V6E: Chip = Chip {
    name: "v6e",
    peak_bf16_tflops: Some(918.0),
    hbm_bytes: Some(32 * GB),
    hbm_gbps: Some(1638.0),
    tensorcores: 1,
    link: ici(800.0),
};

/// NVIDIA A100 40GB SXM: 312 TFLOP/s dense bf16 (624 is the sparse figure), 1555 GB/s.
pub static A100_40GB: Chip = Chip {
    name: "a100-40gb",
    peak_bf16_tflops: Some(312.0),
    hbm_bytes: Some(40 * GB),
    hbm_gbps: Some(1555.0),
    tensorcores: 0,
    link: nvlink("NVLink 3", 600.0),
};

/// NVIDIA A100 80GB SXM: 312 TFLOP/s dense bf16, 2039 GB/s.
pub static A100_80GB: Chip = Chip {
    name: "a100-80gb",
    peak_bf16_tflops: Some(312.0),
    hbm_bytes: Some(80 * GB),
    hbm_gbps: Some(2039.0),
    tensorcores: 0,
    link: nvlink("NVLink 3", 600.0),
};

/// NVIDIA H100 80GB SXM: 989 TFLOP/s dense bf16 (1979 is the sparse figure), 3350 GB/s.
pub static H100_80GB: Chip = Chip {
    name: "h100-80gb",
    peak_bf16_tflops: Some(989.0),
    hbm_bytes: Some(80 * GB),
    hbm_gbps: Some(3350.0),
    tensorcores: 0,
    link: nvlink("NVLink 4", 900.0),
};

/// NVIDIA H200 141GB: 989 TFLOP/s dense bf16, 4800 GB/s.
pub static H200_141GB: Chip = Chip {
    name: "h200-141gb",
    peak_bf16_tflops: Some(989.0),
    hbm_bytes: Some(141 * GB),
    hbm_gbps: Some(4800.0),
    tensorcores: 0,
    link: nvlink("NVLink 4", 900.0),
};

/// NVIDIA L4: 121 TFLOP/s dense bf16 (242 is the sparse figure), 24 GB GDDR6 at 300 GB/s.
pub static L4_24GB: Chip = Chip {
    name: "l4-24gb",
    peak_bf16_tflops: Some(121.0),
    hbm_bytes: Some(24 * GB),
    hbm_gbps: Some(300.0),
    tensorcores: 0,
    link: Some(Link { name: "PCIe Gen4 x16", bidirectional_gbps: 64.0, domain_chips: Some(8) }),
};

/// NVIDIA B200: 2250 TFLOP/s dense bf16 (4500 is the sparse figure), 180 GB HBM3e at 8000 GB/s.
pub static B200_180GB: Chip = Chip {
    name: "b200-180gb",
    peak_bf16_tflops: Some(2250.0),
    hbm_bytes: Some(180 * GB),
    hbm_gbps: Some(8000.0),
    tensorcores: 0,
    link: nvlink("NVLink 5", 1800.0),
};

/// NVIDIA V100 SXM2 (16 or 32 GB HBM2 at 900 GB/s, NVLink 2 at 300 GB/s): no bf16, so no dense bf16 peak;
/// catalogued for its link (public multi-rank traces are V100s), not offered as an accelerator type.
pub static V100_SXM2: Chip = Chip {
    name: "v100-sxm2",
    peak_bf16_tflops: None,
    hbm_bytes: None,
    hbm_gbps: Some(900.0),
    tensorcores: 0,
    link: nvlink("NVLink 2", 300.0),
};

/// The catalog chip a capture's device name or type names (`TPU v6 lite`, `NVIDIA H100 80GB HBM3`,
/// `Tesla V100-SXM2-32GB`), when it names one.
pub fn chip_for_device(device: &str) -> Option<&'static Chip> {
    let t = device.to_ascii_lowercase();
    if t.contains("tpu") {
        if t.contains("v6") {
            return Some(&TPU_V6E);
        }
        if t.contains("v5 lite") || t.contains("v5e") || t.contains("v5lite") {
            return Some(&TPU_V5E);
        }
        if t.contains("v5") {
            return Some(&TPU_V5P);
        }
        if t.contains("v4") {
            return Some(&TPU_V4);
        }
        return None;
    }
    if t.contains("h200") {
        return Some(&H200_141GB);
    }
    if t.contains("h100") {
        return Some(&H100_80GB);
    }
    if t.contains("a100") {
        return Some(if t.contains("80") { &A100_80GB } else { &A100_40GB });
    }
    if t.contains("b200") {
        return Some(&B200_180GB);
    }
    if t.contains(" l4") || t.ends_with("l4") {
        return Some(&L4_24GB);
    }
    if t.contains("v100") && t.contains("sxm2") {
        return Some(&V100_SXM2);
    }
    None
}

/// The catalog chip of a name (`v6e`, `h100-80gb`).
pub fn chip_named(name: &str) -> Option<&'static Chip> {
    [
        &TPU_V4,
        &TPU_V5E,
        &TPU_V5P,
        &TPU_V6E,
        &A100_40GB,
        &A100_80GB,
        &H100_80GB,
        &H200_141GB,
        &L4_24GB,
        &B200_180GB,
        &V100_SXM2,
        &CPU,
    ]
    .into_iter()
    .find(|c| c.name == name)
}

/// A CPU "chip": no known peaks.
pub static CPU: Chip =
    Chip { name: "cpu", peak_bf16_tflops: None, hbm_bytes: None, hbm_gbps: None, tensorcores: 0, link: None };

/// One accelerator type: a slice shape a job can ask for.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct AcceleratorType {
    /// Canonical name (`v5litepod-16`, `h100-80gb-8`, `cpu`).
    pub name: String,
    /// The platform it belongs to.
    pub platform: Platform,
    /// The chip it is made of.
    pub chip: &'static Chip,
    /// Chips per slice.
    pub chips: u32,
    /// Hosts (VMs) per slice.
    pub hosts: u32,
    /// Chips per host.
    pub chips_per_host: u32,
    /// The slice topology (`4x4`, `2x2x2`); TPUs only.
    pub topology: Option<String>,
    /// GKE node label value for `cloud.google.com/gke-tpu-accelerator` or `cloud.google.com/gke-accelerator`.
    pub gke_accelerator: Option<&'static str>,
    /// GCE machine type of one host.
    pub machine_type: Option<&'static str>,
}

impl AcceleratorType {
    /// Kubernetes resource name for the device limit: `google.com/tpu`, `nvidia.com/gpu`, none for cpu.
    pub fn k8s_resource(&self) -> Option<&'static str> {
        match self.platform {
            Platform::Tpu => Some("google.com/tpu"),
            Platform::Gpu => Some("nvidia.com/gpu"),
            Platform::Cpu => None,
        }
    }

    /// Peak dense bf16 FLOP/s (not TFLOP/s) of the whole slice: chips × per-chip peak, if known.
    pub fn peak_flops_per_slice(&self) -> Option<f64> {
        self.chip.peak_bf16_tflops.map(|tflops| tflops * 1e12 * f64::from(self.chips))
    }
}

impl fmt::Display for AcceleratorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl FromStr for AcceleratorType {
    type Err = UnknownAccelerator;
    /// Same as [`lookup`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        lookup(s)
    }
}

/// A name that is no known accelerator type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown accelerator type `{input}`{hint}; known types: {known}", hint = did_you_mean(.suggestion), known = known_types_summary())]
pub struct UnknownAccelerator {
    /// The rejected text, as given.
    pub input: String,
    /// The closest known name by edit distance, when one is close enough.
    pub suggestion: Option<String>,
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(name) => format!(" (did you mean `{name}`?)"),
        None => String::new(),
    }
}

/// 3-D TPU topologies (v4, v5p) by chip count.
const TOPOLOGY_3D: &[(u32, &str)] = &[
    (4, "2x2x1"),
    (8, "2x2x2"),
    (16, "2x2x4"),
    (32, "2x4x4"),
    (64, "4x4x4"),
    (128, "4x4x8"),
    (256, "4x8x8"),
    (512, "8x8x8"),
    (1024, "8x8x16"),
    (2048, "8x16x16"),
];

/// 2-D TPU topologies (v5e, v6e) by chip count.
const TOPOLOGY_2D: &[(u32, &str)] =
    &[(1, "1x1"), (4, "2x2"), (8, "2x4"), (16, "4x4"), (32, "4x8"), (64, "8x8"), (128, "8x16"), (256, "16x16")];

/// A TPU generation and the slice sizes it comes in.
struct TpuFamily {
    /// Name prefix (`v4`, `v5litepod`).
    prefix: &'static str,
    /// Accepted alternative prefix (`v5e`).
    alias: Option<&'static str>,
    chip: &'static Chip,
    /// Whether the number in the name counts TensorCores (v4, v5p) rather than chips (v5e, v6e).
    name_counts_cores: bool,
    /// The numbers that follow the prefix.
    sizes: &'static [u32],
    topologies: &'static [(u32, &'static str)],
    gke_accelerator: &'static str,
    /// Machine type of a one-chip slice.
    machine_single: &'static str,
    /// Machine type of a host in a larger slice (four chips per host).
    machine_multi: &'static str,
}

static TPU_FAMILIES: &[TpuFamily] = &[
    TpuFamily {
        prefix: "v4",
        alias: None,
        chip: &TPU_V4,
        name_counts_cores: true,
        sizes: &[8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096],
        topologies: TOPOLOGY_3D,
        gke_accelerator: "tpu-v4-podslice",
        machine_single: "ct4p-hightpu-4t",
        machine_multi: "ct4p-hightpu-4t",
    },
    TpuFamily {
        prefix: "v5p",
        alias: None,
        chip: &TPU_V5P,
        name_counts_cores: true,
        sizes: &[8, 16, 32, 64, 128, 256, 512, 1024, 2048],
        topologies: TOPOLOGY_3D,
        gke_accelerator: "tpu-v5p-slice",
        machine_single: "ct5p-hightpu-4t",
        machine_multi: "ct5p-hightpu-4t",
    },
    TpuFamily {
        prefix: "v5litepod",
        alias: Some("v5e"),
        chip: &TPU_V5E,
        name_counts_cores: false,
        sizes: &[1, 4, 8, 16, 32, 64, 128, 256],
        topologies: TOPOLOGY_2D,
        gke_accelerator: "tpu-v5-lite-podslice",
        machine_single: "ct5lp-hightpu-1t",
        machine_multi: "ct5lp-hightpu-4t",
    },
    TpuFamily {
        prefix: "v6e",
        alias: None,
        chip: &TPU_V6E,
        name_counts_cores: false,
        sizes: &[1, 4, 8, 16, 32, 64, 128, 256],
        topologies: TOPOLOGY_2D,
        gke_accelerator: "tpu-v6e-slice",
        machine_single: "ct6e-standard-1t",
        machine_multi: "ct6e-standard-4t",
    },
];

impl TpuFamily {
    fn build(&self, size: u32) -> AcceleratorType {
        let chips = if self.name_counts_cores { size / self.chip.tensorcores } else { size };
        let chips_per_host = if chips == 1 { 1 } else { 4 };
        let topology = self.topologies.iter().find(|(n, _)| *n == chips).map(|(_, t)| (*t).to_string());
        AcceleratorType {
            name: format!("{}-{size}", self.prefix),
            platform: Platform::Tpu,
            chip: self.chip,
            chips,
            hosts: chips / chips_per_host,
            chips_per_host,
            topology,
            gke_accelerator: Some(self.gke_accelerator),
            machine_type: Some(if chips == 1 { self.machine_single } else { self.machine_multi }),
        }
    }
}

/// A GPU model and the one-host shapes it comes in: 1, 2, 4 or 8 GPUs (`h200-141gb-1` … `h200-141gb-8`), each
/// with its Google Cloud machine type where one exists (a workstation or another cloud has the shapes
/// Google Cloud does not sell).
struct GpuFamily {
    /// The name's prefix: the chip's name, or the machine family's (`h100-mega-80gb`).
    prefix: &'static str,
    chip: &'static Chip,
    gke_accelerator: &'static str,
    /// (GPUs, machine type).
    shapes: &'static [(u32, Option<&'static str>)],
}

static GPU_FAMILIES: &[GpuFamily] = &[
    GpuFamily {
        prefix: "a100-40gb",
        chip: &A100_40GB,
        gke_accelerator: "nvidia-tesla-a100",
        shapes: &[
            (1, Some("a2-highgpu-1g")),
            (2, Some("a2-highgpu-2g")),
            (4, Some("a2-highgpu-4g")),
            (8, Some("a2-highgpu-8g")),
        ],
    },
    GpuFamily {
        prefix: "a100-80gb",
        chip: &A100_80GB,
        gke_accelerator: "nvidia-a100-80gb",
        shapes: &[
            (1, Some("a2-ultragpu-1g")),
            (2, Some("a2-ultragpu-2g")),
            (4, Some("a2-ultragpu-4g")),
            (8, Some("a2-ultragpu-8g")),
        ],
    },
    GpuFamily {
        prefix: "h100-80gb",
        chip: &H100_80GB,
        gke_accelerator: "nvidia-h100-80gb",
        shapes: &[
            (1, Some("a3-highgpu-1g")),
            (2, Some("a3-highgpu-2g")),
            (4, Some("a3-highgpu-4g")),
            (8, Some("a3-highgpu-8g")),
        ],
    },
    GpuFamily {
        prefix: "h100-mega-80gb",
        chip: &H100_80GB,
        gke_accelerator: "nvidia-h100-mega-80gb",
        shapes: &[(8, Some("a3-megagpu-8g"))],
    },
    GpuFamily {
        prefix: "h200-141gb",
        chip: &H200_141GB,
        gke_accelerator: "nvidia-h200-141gb",
        shapes: &[(1, None), (2, None), (4, None), (8, Some("a3-ultragpu-8g"))],
    },
    GpuFamily {
        prefix: "l4-24gb",
        chip: &L4_24GB,
        gke_accelerator: "nvidia-l4",
        shapes: &[
            (1, Some("g2-standard-8")),
            (2, Some("g2-standard-24")),
            (4, Some("g2-standard-48")),
            (8, Some("g2-standard-96")),
        ],
    },
    GpuFamily {
        prefix: "b200-180gb",
        chip: &B200_180GB,
        gke_accelerator: "nvidia-b200",
        shapes: &[(1, None), (2, None), (4, None), (8, Some("a4-highgpu-8g"))],
    },
];

impl GpuFamily {
    fn build(&self, gpus: u32, machine_type: Option<&'static str>) -> AcceleratorType {
        AcceleratorType {
            name: format!("{}-{gpus}", self.prefix),
            platform: Platform::Gpu,
            chip: self.chip,
            chips: gpus,
            hosts: 1,
            chips_per_host: gpus,
            topology: None,
            gke_accelerator: Some(self.gke_accelerator),
            machine_type,
        }
    }
}

/// The GPU type of `gpus` GPUs of the model named `chip` (`h200-141gb`), when the catalog has that shape.
pub fn gpu_shape(chip: &str, gpus: u32) -> Option<AcceleratorType> {
    let family = GPU_FAMILIES.iter().find(|f| f.prefix.eq_ignore_ascii_case(chip.trim()))?;
    family.shapes.iter().find(|(n, _)| *n == gpus).map(|(n, m)| family.build(*n, *m))
}

/// The GPU models and the shapes each comes in (`h200-141gb` → 1, 2, 4, 8).
pub fn gpu_models() -> Vec<(&'static str, Vec<u32>)> {
    GPU_FAMILIES.iter().map(|f| (f.prefix, f.shapes.iter().map(|(n, _)| *n).collect())).collect()
}

/// The CPU type: one device per "slice"; a CPU job asks for its number of devices (cores) separately.
fn cpu_type() -> AcceleratorType {
    AcceleratorType {
        name: "cpu".to_string(),
        platform: Platform::Cpu,
        chip: &CPU,
        chips: 1,
        hosts: 1,
        chips_per_host: 1,
        topology: None,
        gke_accelerator: None,
        machine_type: None,
    }
}

/// Every known accelerator type, in a stable order: TPU v4, v5p, v5e, v6e by size, then the GPUs, then `cpu`.
pub fn all() -> Vec<AcceleratorType> {
    let tpus = TPU_FAMILIES.iter().flat_map(|family| family.sizes.iter().map(|&size| family.build(size)));
    let gpus = GPU_FAMILIES.iter().flat_map(|family| family.shapes.iter().map(|(n, m)| family.build(*n, *m)));
    tpus.chain(gpus).chain(std::iter::once(cpu_type())).collect()
}

/// Every accepted spelling (lowercase): canonical names and aliases, in [`all`]'s order.
fn spellings() -> Vec<String> {
    let mut out = Vec::new();
    for accel in all() {
        if let Some(alias) = alias_of(&accel.name) {
            out.push(accel.name);
            out.push(alias);
        } else {
            out.push(accel.name);
        }
    }
    out
}

/// The alias spelling of a canonical name (`v5litepod-16` → `v5e-16`).
fn alias_of(name: &str) -> Option<String> {
    let (prefix, size) = name.rsplit_once('-')?;
    let family = TPU_FAMILIES.iter().find(|f| f.prefix == prefix)?;
    family.alias.map(|alias| format!("{alias}-{size}"))
}

/// The canonical spelling of an alias (`v5e-16` → `v5litepod-16`); other names come back unchanged.
fn canonical(name: &str) -> String {
    if let Some((prefix, size)) = name.rsplit_once('-') {
        if let Some(family) = TPU_FAMILIES.iter().find(|f| f.alias == Some(prefix)) {
            return format!("{}-{size}", family.prefix);
        }
    }
    name.to_string()
}

/// Finds an accelerator type by name, case-insensitively; accepts aliases (`v5e-16` is `v5litepod-16`).
pub fn lookup(name: &str) -> Result<AcceleratorType, UnknownAccelerator> {
    let wanted = canonical(&name.trim().to_ascii_lowercase());
    all()
        .into_iter()
        .find(|accel| accel.name == wanted)
        .ok_or_else(|| UnknownAccelerator { input: name.to_string(), suggestion: suggest(name) })
}

/// Checks a user-given topology against the type's: TPUs must match exactly (case aside); GPU and CPU types
/// have no topology, so any given one is refused. The error says what is expected.
pub fn check_topology(accel: &AcceleratorType, topology: &str) -> Result<(), String> {
    let given = topology.trim().to_ascii_lowercase();
    match &accel.topology {
        Some(expected) if *expected == given => Ok(()),
        Some(expected) => {
            Err(format!("topology `{topology}` does not fit accelerator `{}`: expected `{expected}`", accel.name))
        }
        None => Err(format!(
            "accelerator `{}` has no topology (only TPU slices have one); drop the topology `{topology}`",
            accel.name
        )),
    }
}

/// The families for error messages: `v4-{8,16,…,4096}, …, cpu`.
fn known_types_summary() -> String {
    let mut parts: Vec<String> = TPU_FAMILIES
        .iter()
        .map(|family| {
            let sizes = match family.sizes {
                [a, b, .., z] => format!("{a},{b},…,{z}"),
                other => other.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
            };
            match family.alias {
                Some(alias) => format!("{}-{{{sizes}}} (alias {alias}-N)", family.prefix),
                None => format!("{}-{{{sizes}}}", family.prefix),
            }
        })
        .collect();
    parts.extend(GPU_FAMILIES.iter().map(|family| {
        let sizes: Vec<String> = family.shapes.iter().map(|(n, _)| n.to_string()).collect();
        if sizes.len() == 1 {
            format!("{}-{}", family.prefix, sizes[0])
        } else {
            format!("{}-{{{}}}", family.prefix, sizes.join(","))
        }
    }));
    parts.push("cpu".to_string());
    parts.join(", ")
}

/// The known spelling closest to `input` by edit distance, if any is close enough. When the input's first
/// `-`-separated word names a family (`v6e`, `h100`), only that family is considered and a suggestion is
/// always made; ties go to the nearest size (`v6e-7` → `v6e-8`), then to catalog order.
fn suggest(input: &str) -> Option<String> {
    let input = input.trim().to_ascii_lowercase();
    let first_word = |s: &str| s.split('-').next().unwrap_or_default().to_string();
    let word = first_word(&input);
    let candidates = spellings();
    let family: Vec<&String> = candidates.iter().filter(|c| !word.is_empty() && first_word(c) == word).collect();
    let within_family = !family.is_empty();
    let pool: Vec<&String> = if within_family { family } else { candidates.iter().collect() };
    let (distance, best) = pool
        .into_iter()
        .map(|c| (levenshtein(&input, c), size_gap(&input, c), c))
        .min_by_key(|(distance, gap, _)| (*distance, *gap))
        .map(|(distance, _, c)| (distance, c))?;
    let close_enough = distance <= (input.chars().count() / 3).max(1);
    (within_family || close_enough).then(|| best.clone())
}

/// How far apart the trailing sizes of two names are; `u64::MAX` when either has none.
fn size_gap(a: &str, b: &str) -> u64 {
    let size = |s: &str| s.rsplit_once('-').and_then(|(_, n)| n.parse::<u64>().ok());
    match (size(a), size(b)) {
        (Some(x), Some(y)) => x.abs_diff(y),
        _ => u64::MAX,
    }
}

/// Edit distance (insertions, deletions, substitutions) between two strings, by characters.
fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins the shape of one type.
    fn assert_shape(
        name: &str,
        canonical: &str,
        chips: u32,
        hosts: u32,
        chips_per_host: u32,
        topology: Option<&str>,
        gke: Option<&str>,
        machine: Option<&str>,
    ) -> AcceleratorType {
        let accel = lookup(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(accel.name, canonical, "{name}");
        assert_eq!(accel.chips, chips, "{name} chips");
        assert_eq!(accel.hosts, hosts, "{name} hosts");
        assert_eq!(accel.chips_per_host, chips_per_host, "{name} chips per host");
        assert_eq!(accel.topology.as_deref(), topology, "{name} topology");
        assert_eq!(accel.gke_accelerator, gke, "{name} GKE label");
        assert_eq!(accel.machine_type, machine, "{name} machine type");
        accel
    }

    #[test]
    fn tpu_v4_slices() {
        let lbl = Some("tpu-v4-podslice");
        let m = Some("ct4p-hightpu-4t");
        let v4_8 = assert_shape("v4-8", "v4-8", 4, 1, 4, Some("2x2x1"), lbl, m);
        assert_shape("v4-16", "v4-16", 8, 2, 4, Some("2x2x2"), lbl, m);
        assert_shape("v4-32", "v4-32", 16, 4, 4, Some("2x2x4"), lbl, m);
        assert_shape("v4-128", "v4-128", 64, 16, 4, Some("4x4x4"), lbl, m);
        assert_shape("v4-4096", "v4-4096", 2048, 512, 4, Some("8x16x16"), lbl, m);
        assert_eq!(v4_8.platform, Platform::Tpu);
        assert_eq!(v4_8.chip, &TPU_V4);
        assert_eq!(v4_8.chip.tensorcores, 2);
        assert_eq!(v4_8.chip.peak_bf16_tflops, Some(275.0));
        assert_eq!(v4_8.chip.hbm_bytes, Some(32 * 1024 * 1024 * 1024));
        assert_eq!(v4_8.chip.hbm_gbps, Some(1200.0));
        assert_eq!(v4_8.peak_flops_per_slice(), Some(4.0 * 275e12));
        assert_eq!(v4_8.k8s_resource(), Some("google.com/tpu"));
        assert!(lookup("v4-4").is_err());
        assert!(lookup("v4-8192").is_err());
    }

    #[test]
    fn tpu_v5p_slices() {
        let lbl = Some("tpu-v5p-slice");
        let m = Some("ct5p-hightpu-4t");
        let v5p_8 = assert_shape("v5p-8", "v5p-8", 4, 1, 4, Some("2x2x1"), lbl, m);
        assert_shape("v5p-16", "v5p-16", 8, 2, 4, Some("2x2x2"), lbl, m);
        assert_shape("v5p-256", "v5p-256", 128, 32, 4, Some("4x4x8"), lbl, m);
        assert_shape("v5p-2048", "v5p-2048", 1024, 256, 4, Some("8x8x16"), lbl, m);
        assert_eq!(v5p_8.chip.tensorcores, 2);
        assert_eq!(v5p_8.chip.peak_bf16_tflops, Some(459.0));
        assert_eq!(v5p_8.chip.hbm_bytes, Some(95_000_000_000));
        assert_eq!(v5p_8.chip.hbm_gbps, Some(2765.0));
        assert_eq!(v5p_8.peak_flops_per_slice(), Some(4.0 * 459e12));
        assert!(lookup("v5p-4096").is_err());
    }

    #[test]
    fn tpu_v5e_slices_and_alias() {
        let lbl = Some("tpu-v5-lite-podslice");
        let m4 = Some("ct5lp-hightpu-4t");
        let one = assert_shape("v5litepod-1", "v5litepod-1", 1, 1, 1, Some("1x1"), lbl, Some("ct5lp-hightpu-1t"));
        assert_shape("v5litepod-4", "v5litepod-4", 4, 1, 4, Some("2x2"), lbl, m4);
        assert_shape("v5litepod-8", "v5litepod-8", 8, 2, 4, Some("2x4"), lbl, m4);
        let v16 = assert_shape("v5litepod-16", "v5litepod-16", 16, 4, 4, Some("4x4"), lbl, m4);
        assert_shape("v5litepod-256", "v5litepod-256", 256, 64, 4, Some("16x16"), lbl, m4);
        // The alias, in any case, resolves to the canonical type.
        assert_eq!(assert_shape("v5e-16", "v5litepod-16", 16, 4, 4, Some("4x4"), lbl, m4), v16);
        assert_eq!(lookup("V5E-16").unwrap(), v16);
        assert_eq!(lookup("V5LitePod-16").unwrap(), v16);
        assert_eq!(one.chip.tensorcores, 1);
        assert_eq!(one.chip.peak_bf16_tflops, Some(197.0));
        assert_eq!(one.chip.hbm_bytes, Some(16_000_000_000));
        assert_eq!(one.chip.hbm_gbps, Some(819.0));
        assert_eq!(v16.peak_flops_per_slice(), Some(16.0 * 197e12));
        assert!(lookup("v5e-2").is_err());
        assert!(lookup("v5litepod-512").is_err());
    }

    #[test]
    fn tpu_v6e_slices() {
        let lbl = Some("tpu-v6e-slice");
        let m4 = Some("ct6e-standard-4t");
        let one = assert_shape("v6e-1", "v6e-1", 1, 1, 1, Some("1x1"), lbl, Some("ct6e-standard-1t"));
        assert_shape("v6e-4", "v6e-4", 4, 1, 4, Some("2x2"), lbl, m4);
        let v8 = assert_shape("v6e-8", "v6e-8", 8, 2, 4, Some("2x4"), lbl, m4);
        assert_shape("V6E-8", "v6e-8", 8, 2, 4, Some("2x4"), lbl, m4);
        assert_shape("v6e-64", "v6e-64", 64, 16, 4, Some("8x8"), lbl, m4);
        assert_shape("v6e-256", "v6e-256", 256, 64, 4, Some("16x16"), lbl, m4);
        assert_eq!(one.chip.tensorcores, 1);
        assert_eq!(one.chip.peak_bf16_tflops, Some(918.0));
        assert_eq!(one.chip.hbm_bytes, Some(32_000_000_000));
        assert_eq!(one.chip.hbm_gbps, Some(1638.0));
        assert_eq!(v8.peak_flops_per_slice(), Some(8.0 * 918e12));
        assert_eq!("v6e-8".parse::<AcceleratorType>().unwrap(), v8);
        assert_eq!(v8.to_string(), "v6e-8");
    }

    #[test]
    fn gpu_types() {
        let cases = [
            ("a100-40gb-8", "nvidia-tesla-a100", "a2-highgpu-8g", 312.0, 40, 1555.0),
            ("a100-80gb-8", "nvidia-a100-80gb", "a2-ultragpu-8g", 312.0, 80, 2039.0),
            ("h100-80gb-8", "nvidia-h100-80gb", "a3-highgpu-8g", 989.0, 80, 3350.0),
            ("h100-mega-80gb-8", "nvidia-h100-mega-80gb", "a3-megagpu-8g", 989.0, 80, 3350.0),
            ("h200-141gb-8", "nvidia-h200-141gb", "a3-ultragpu-8g", 989.0, 141, 4800.0),
        ];
        for (name, gke, machine, tflops, hbm_gb, gbps) in cases {
            let gpu = assert_shape(name, name, 8, 1, 8, None, Some(gke), Some(machine));
            assert_eq!(gpu.platform, Platform::Gpu);
            assert_eq!(gpu.k8s_resource(), Some("nvidia.com/gpu"));
            assert_eq!(gpu.chip.peak_bf16_tflops, Some(tflops), "{name}");
            assert_eq!(gpu.chip.hbm_bytes, Some(hbm_gb * 1_000_000_000), "{name}");
            assert_eq!(gpu.chip.hbm_gbps, Some(gbps), "{name}");
            assert_eq!(gpu.peak_flops_per_slice(), Some(8.0 * tflops * 1e12), "{name}");
        }
        assert_eq!(lookup("H100-80GB-8").unwrap().name, "h100-80gb-8");
        assert!(lookup("h100-8").is_err(), "h100-8 is not an alias");
        // One-host shapes of 1, 2 and 4 GPUs, with Google Cloud's machine type where it sells one.
        let one = assert_shape("h200-141gb-1", "h200-141gb-1", 1, 1, 1, None, Some("nvidia-h200-141gb"), None);
        assert_eq!(one.peak_flops_per_slice(), Some(989e12), "one chip's peak");
        assert_shape("h100-80gb-1", "h100-80gb-1", 1, 1, 1, None, Some("nvidia-h100-80gb"), Some("a3-highgpu-1g"));
        assert_shape("h100-80gb-4", "h100-80gb-4", 4, 1, 4, None, Some("nvidia-h100-80gb"), Some("a3-highgpu-4g"));
        assert_shape("a100-40gb-2", "a100-40gb-2", 2, 1, 2, None, Some("nvidia-tesla-a100"), Some("a2-highgpu-2g"));
        let l4 = assert_shape("l4-24gb-1", "l4-24gb-1", 1, 1, 1, None, Some("nvidia-l4"), Some("g2-standard-8"));
        assert_eq!((l4.chip.peak_bf16_tflops, l4.chip.hbm_gbps), (Some(121.0), Some(300.0)));
        assert_shape("l4-24gb-8", "l4-24gb-8", 8, 1, 8, None, Some("nvidia-l4"), Some("g2-standard-96"));
        let b200 =
            assert_shape("b200-180gb-8", "b200-180gb-8", 8, 1, 8, None, Some("nvidia-b200"), Some("a4-highgpu-8g"));
        assert_eq!(b200.chip.peak_bf16_tflops, Some(2250.0));
        assert!(lookup("h100-mega-80gb-1").is_err(), "A3 Mega comes with 8 GPUs only");
        assert_eq!(gpu_shape("H200-141GB", 2).map(|t| t.name), Some("h200-141gb-2".to_string()));
        assert_eq!(gpu_shape("h200-141gb", 3), None);
        assert!(gpu_models().contains(&("l4-24gb", vec![1, 2, 4, 8])));
    }

    #[test]
    fn cpu_type_has_no_peaks_or_labels() {
        let cpu = assert_shape("cpu", "cpu", 1, 1, 1, None, None, None);
        assert_eq!(cpu.platform, Platform::Cpu);
        assert_eq!(cpu.k8s_resource(), None);
        assert_eq!(cpu.peak_flops_per_slice(), None);
        assert_eq!(cpu.chip, &CPU);
        assert_eq!(lookup("CPU").unwrap(), cpu);
    }

    fn topology_product(topology: &str) -> u32 {
        topology.split('x').map(|d| d.parse::<u32>().expect("numeric dimension")).product()
    }

    #[test]
    fn every_type_is_consistent() {
        let types = all();
        assert_eq!(types.len(), 10 + 9 + 8 + 8 + (4 * 6 + 1) + 1);
        assert_eq!(types.first().unwrap().name, "v4-8");
        assert_eq!(types.last().unwrap().name, "cpu");
        assert_eq!(all(), types, "stable order");
        let mut names: Vec<&str> = types.iter().map(|t| t.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), types.len(), "names are unique");
        for accel in &types {
            let name = &accel.name;
            assert_eq!(lookup(name).as_ref(), Ok(accel), "{name} round-trips");
            assert!(accel.chips >= 1 && accel.hosts >= 1, "{name}");
            assert_eq!(accel.hosts * accel.chips_per_host, accel.chips, "{name}");
            match accel.platform {
                Platform::Tpu => {
                    let topology = accel.topology.as_deref().unwrap_or_else(|| panic!("{name} lacks a topology"));
                    assert_eq!(topology_product(topology), accel.chips, "{name} topology {topology}");
                    assert_eq!(check_topology(accel, topology), Ok(()), "{name}");
                    assert_eq!(accel.chips_per_host, if accel.chips == 1 { 1 } else { 4 }, "{name}");
                    assert!(accel.chip.tensorcores >= 1, "{name}");
                    assert!(accel.gke_accelerator.is_some() && accel.machine_type.is_some(), "{name}");
                }
                Platform::Gpu => {
                    assert_eq!(accel.topology, None, "{name}");
                    assert!(accel.gke_accelerator.is_some(), "{name}");
                    assert!(
                        accel.machine_type.is_some() || accel.chips < 8,
                        "{name}: an 8-GPU shape is a machine type"
                    );
                }
                Platform::Cpu => assert_eq!(accel.chip.peak_bf16_tflops, None, "{name}"),
            }
            if let Some(peak) = accel.peak_flops_per_slice() {
                assert!(peak > 0.0, "{name}");
            }
        }
    }

    #[test]
    fn peaks_are_dense_not_sparse() {
        assert_eq!(A100_40GB.peak_bf16_tflops, Some(312.0));
        assert_eq!(A100_80GB.peak_bf16_tflops, Some(312.0));
        assert_eq!(H100_80GB.peak_bf16_tflops, Some(989.0));
        assert_eq!(H200_141GB.peak_bf16_tflops, Some(989.0));
        assert_eq!(L4_24GB.peak_bf16_tflops, Some(121.0));
        assert_eq!(B200_180GB.peak_bf16_tflops, Some(2250.0));
        for accel in all() {
            let tflops = accel.chip.peak_bf16_tflops.unwrap_or(0.0);
            assert!(
                tflops != 624.0 && tflops != 1979.0 && tflops != 242.0 && tflops != 4500.0,
                "{} carries a sparse peak",
                accel.name
            );
        }
    }

    #[test]
    fn unknown_names_get_a_suggestion() {
        let err = lookup("v6e-7").unwrap_err();
        assert_eq!(err.input, "v6e-7");
        assert_eq!(err.suggestion.as_deref(), Some("v6e-8"));
        let message = err.to_string();
        assert!(
            message.starts_with("unknown accelerator type `v6e-7` (did you mean `v6e-8`?); known types: "),
            "{message}"
        );
        for family in
            ["v4-{8,16,…,4096}", "v5p-{", "v5litepod-{1,4,…,256} (alias v5e-N)", "v6e-{", "h200-141gb-{1,2,4,8}", "cpu"]
        {
            assert!(message.contains(family), "{message} lacks {family}");
        }
        assert!(!message.contains("v4-64"), "sizes are summarised: {message}");

        assert_eq!(lookup("V6E-7").unwrap_err().suggestion.as_deref(), Some("v6e-8"));
        assert_eq!(lookup("v5e-7").unwrap_err().suggestion.as_deref(), Some("v5e-8"));
        assert_eq!(lookup("v5litepod-2").unwrap_err().suggestion.as_deref(), Some("v5litepod-1"));
        assert_eq!(lookup("v4-9").unwrap_err().suggestion.as_deref(), Some("v4-8"));
        assert_eq!(lookup("h100-8").unwrap_err().suggestion.as_deref(), Some("h100-80gb-8"));
        assert_eq!(lookup("v6e8").unwrap_err().suggestion.as_deref(), Some("v6e-8"));
        assert_eq!(lookup("cpus").unwrap_err().suggestion.as_deref(), Some("cpu"));

        let far = lookup("quantum-annealer").unwrap_err();
        assert_eq!(far.suggestion, None);
        assert!(far.to_string().starts_with("unknown accelerator type `quantum-annealer`; known types: "));
        assert_eq!(lookup("").unwrap_err().suggestion, None);
    }

    #[test]
    fn topology_checks() {
        let v5e = lookup("v5litepod-16").unwrap();
        assert_eq!(check_topology(&v5e, "4x4"), Ok(()));
        assert_eq!(check_topology(&v5e, "4X4"), Ok(()));
        let err = check_topology(&v5e, "2x8").unwrap_err();
        assert!(err.contains("`2x8`") && err.contains("expected `4x4`"), "{err}");
        let v4 = lookup("v4-16").unwrap();
        assert_eq!(check_topology(&v4, "2x2x2"), Ok(()));
        assert!(check_topology(&v4, "2x4").unwrap_err().contains("expected `2x2x2`"));
        let gpu = lookup("h100-80gb-8").unwrap();
        let err = check_topology(&gpu, "2x4").unwrap_err();
        assert!(err.contains("no topology"), "{err}");
        assert!(check_topology(&lookup("cpu").unwrap(), "1x1").is_err());
    }

    #[test]
    fn levenshtein_distances() {
        assert_eq!(levenshtein("", ""), 0);
        assert_eq!(levenshtein("abc", ""), 3);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("v6e-7", "v6e-8"), 1);
        assert_eq!(levenshtein("flaw", "lawn"), 2);
    }

    #[test]
    fn serializes_with_the_chip_inline() {
        let json = serde_json::to_value(lookup("v6e-8").unwrap()).unwrap();
        assert_eq!(json["name"], "v6e-8");
        assert_eq!(json["platform"], "tpu");
        assert_eq!(json["chip"]["name"], "v6e");
        assert_eq!(json["chip"]["peak_bf16_tflops"], 918.0);
        assert_eq!(json["topology"], "2x4");
        assert_eq!(json["hosts"], 2);
    }
}
