//! XProf's op profile: the device OpMetricsDb arranged as a tree (by program, by category or by
//! provenance, each with and without the `IDLE` op), with per-node time, FLOPS and bandwidth
//! utilization.
//!
//! # Rules (XProf 2.24.2, `xprof/convert/op_stats_to_op_profile.cc`, `op_profile_builder.cc`)
//!
//! - Empty db: an empty tree (a root with an empty name, no children). Otherwise the root is named
//!   `by_program` / `by_category` / `by_provenance`.
//! - Ops whose name starts with `region` are skipped (they cannot be symbolized); in the
//!   exclude-idle trees the `IDLE` op (category `IDLE`) is skipped too.
//! - Vertical grouping (`UpdateNodeMetrics`): every op adds to the root, and (by program / by
//!   provenance, non-IDLE ops) to its program node `<hlo_module>(<program_id>)` (`main` when the
//!   module is unknown): time += self time, normalized time += normalized time, and, only for ops
//!   without children time (`time - self_time == 0`), flops, model flops, bytes and the memory
//!   breakdown. Occurrences are not added, so root and program nodes show 0 occurrences.
//! - Ops with children time (while/call/conditional...) stop there, unless one of their children
//!   ran on the SparseCore. Other ops are added (`CombineOpMetrics`: every counter summed) to:
//!   `IDLE` -> a leaf directly under the root; else [provenance path nodes, by provenance only:
//!   the `tf_op` path split on `/`, last part cut at `:`, each node updated like a program node]
//!   -> category node (`hlo_category`; under the program, the provenance leaf, or the root for
//!   by category) -> dedup group (keyed by `deduplicated_name`, or the op's own name) -> op leaf,
//!   whose fused/nested children (OpMetrics `children`, recursively) become child nodes with their
//!   own metrics.
//! - Metrics of every node (`PopulateOpMetricsNode`), with `total_time` = db total time (total op
//!   time for exclude-idle trees) and the root's time reset to `total_time`:
//!   `raw_time = time_ps`, `raw_flops = model_flops`, `bf16_flops = flops`,
//!   `avg_time_ps = time/occurrences`,
//!   `uncapped = (flops / time_ns x time/normalized_time) / peak_GFLOP/s` (the DVFS factor only
//!   when the node's normalized time is non-zero; it matters for the root, whose time is reset to
//!   the total while its normalized time stays the ops' sum; XProf's own op_profile output for
//!   the v6e capture has root `flops` = flops / normalized time / peak, not flops / total time),
//!   `flops_utilization = min(uncapped, 1) * time/total_time`,
//!   `uncapped_flops_utilization = uncapped * time/total_time`,
//!   `bandwidth_utils = [min(GiB/s(HBM rd + wr) / GiB(peak HBM), 1), SRAM rd, SRAM wr]` where HBM
//!   bytes are memory space 1 and on-chip bytes every other space, reads and writes by
//!   `operation_type` 1 / 2 (entries of unknown type count nowhere),
//!   `raw_bytes_accessed = [HBM, SRAM rd, SRAM wr]` bytes (rate x time, as XProf computes it).
//!   Divisions are XProf's `SafeDivide` (0 when the divisor is below 1e-10).
//! - Pruning (`SortAndPruneChildren`, applied twice as XProf does, so `num_children` is the count
//!   after the first pass): children sorted by raw time descending (children of a fusion op by raw
//!   flops), keeping all of them at the fixed grouping levels (root and program levels by program,
//!   root level by category, 100 levels by provenance) and the top `limit` (XProf: 100) below.
//!   Ties keep insertion order (XProf's `partial_sort` leaves them unspecified).
//! - Finalization (`FinalizeDeduplicatedNodes`): a node without XLA info whose children all have
//!   XLA info is a dedup group; with one child it is replaced by that child, with more it is named
//!   `<top child> and its duplicate(s)` and takes the top child's XLA info (without provenance for
//!   fusions). This also applies to the root: a db holding only `IDLE` yields the `IDLE` node as
//!   the whole tree, as XProf does.
//!
//! `agg_dvfs_time_scale_multiplier` is XProf's `normalized_total_op_time / total_op_time`
//! (SafeDivide), with the normalized op time taken as each op's self time scaled by its
//! `normalized_time_ps / time_ps`.

use std::collections::HashMap;

use serde::Serialize;

use crate::device::{DeviceInfo, Hardware};
use crate::op_metrics::{MemoryAccessed, OpMetrics, OpMetricsDb};

/// XProf's default number of children kept per pruned node (`op_profile_limit`).
pub const DEFAULT_OP_PROFILE_LIMIT: usize = 100;

/// XProf `MemorySpace::MEMORY_SPACE_HBM`; every other memory space counts as on-chip.
const MEMORY_SPACE_HBM: u64 = 1;
/// XProf `OpMetrics::MemoryAccessed::READ` / `WRITE`.
const OP_READ: u64 = 1;
const OP_WRITE: u64 = 2;

/// How the op profile tree is grouped (XProf `OpProfileGrouping`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    /// root -> program -> category -> dedup group -> op (XProf's default).
    #[default]
    Program,
    /// root -> category -> dedup group -> op.
    Category,
    /// root -> program -> provenance path parts -> category -> dedup group -> op.
    Provenance,
}

impl GroupBy {
    fn root_name(self) -> &'static str {
        match self {
            GroupBy::Program => "by_program",
            GroupBy::Category => "by_category",
            GroupBy::Provenance => "by_provenance",
        }
    }

    fn prune_level(self) -> usize {
        match self {
            GroupBy::Program => 2,
            GroupBy::Category => 1,
            GroupBy::Provenance => 100,
        }
    }

    fn groups_by_program(self) -> bool {
        matches!(self, GroupBy::Program | GroupBy::Provenance)
    }
}

/// What a node of the tree stands for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    #[default]
    Root,
    /// One HLO program (module), `<hlo_module>(<program_id>)`.
    Program,
    /// One part of a framework op path (by provenance only).
    Provenance,
    /// One `hlo_category`.
    Category,
    /// Ops sharing a `deduplicated_name` (`<top op> and its duplicate(s)`).
    DedupGroup,
    /// One HLO op (including `IDLE`).
    Op,
    /// An instruction fused into (or nested in) an op.
    FusedOp,
}

/// XLA details of an op node (XProf `Node.XLAInstruction`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct XlaInstruction {
    /// HLO text of the op (`long_name`).
    pub expression: String,
    /// Framework op path (`tf_op`), "" when absent (and for fusion dedup groups).
    pub provenance: String,
    pub category: String,
    pub program_id: u64,
    pub source_info: String,
}

/// Metrics of one node (XProf `op_profile.Metrics`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct NodeMetrics {
    /// Total time, ps (root: the tree's total time).
    pub raw_time_ps: u64,
    pub occurrences: u64,
    /// `raw_time_ps / occurrences` (0 without occurrences).
    pub avg_time_ps: f64,
    /// XProf `flops`: min(FLOPS utilization, 1) x fraction of total time.
    pub flops_utilization: f64,
    /// XProf `uncapped_flops`: FLOPS utilization x fraction of total time.
    pub uncapped_flops_utilization: f64,
    /// XProf `raw_flops`: model flops.
    pub raw_flops: u64,
    /// XProf `bf16_flops`: flops.
    pub bf16_flops: u64,
    /// Utilization of [HBM, SRAM read, SRAM write] bandwidth, each capped at 1.
    pub bandwidth_utils: [f64; 3],
    /// Bytes moved to/from [HBM, SRAM read, SRAM write].
    pub raw_bytes_accessed: [f64; 3],
    pub normalized_time_ps: u64,
}

/// One node of an op profile tree (XProf `op_profile.Node`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct OpProfileNode {
    pub name: String,
    pub kind: NodeKind,
    pub metrics: NodeMetrics,
    /// Number of children before the last pruning pass (XProf `num_children`).
    pub num_children: usize,
    /// Present on op, fused-op and multi-op dedup group nodes.
    pub xla: Option<XlaInstruction>,
    pub children: Vec<OpProfileNode>,
}

/// Both trees of one grouping, as XProf's `op_profile` tool returns them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct OpProfile {
    /// XProf `HardwareType` name: `TPU`, `GPU`, `CPU_ONLY`.
    pub device_type: String,
    pub agg_dvfs_time_scale_multiplier: f64,
    pub group_by: GroupBy,
    pub tree: OpProfileNode,
    pub tree_exclude_idle: OpProfileNode,
}

/// Both trees (with and without `IDLE`) of `group_by`, pruned to XProf's default limit.
pub fn op_profile_report(db: &OpMetricsDb, device: &DeviceInfo, group_by: GroupBy) -> OpProfile {
    OpProfile {
        device_type: hardware_type_name(device.hardware).to_string(),
        agg_dvfs_time_scale_multiplier: agg_dvfs_time_scale_multiplier(db),
        group_by,
        tree: op_profile(db, device, group_by, false),
        tree_exclude_idle: op_profile(db, device, group_by, true),
    }
}

/// One op profile tree, pruned to XProf's default limit (100 children per pruned node).
pub fn op_profile(db: &OpMetricsDb, device: &DeviceInfo, group_by: GroupBy, exclude_idle: bool) -> OpProfileNode {
    op_profile_with_limit(db, device, group_by, exclude_idle, DEFAULT_OP_PROFILE_LIMIT)
}

/// One op profile tree keeping at most `limit` children per node below the grouping levels.
pub fn op_profile_with_limit(
    db: &OpMetricsDb,
    device: &DeviceInfo,
    group_by: GroupBy,
    exclude_idle: bool,
    limit: usize,
) -> OpProfileNode {
    if db.ops.is_empty() {
        return OpProfileNode::default();
    }
    let mut builder = Builder::new(group_by);
    for op in &db.ops {
        if op.name.starts_with("region") || (exclude_idle && is_idle(op)) {
            continue;
        }
        builder.add_op(op);
    }
    let total_time_ps = if exclude_idle { db.total_op_time_ps } else { db.total_time_ps };
    let peaks = Peaks::new(device);
    let mut root = builder.finish(&peaks, total_time_ps);
    let level = group_by.prune_level();
    sort_and_prune(&mut root, limit, level);
    sort_and_prune(&mut root, limit, level);
    finalize_dedup(&mut root);
    root
}

/// XProf `HardwareType_Name`.
pub fn hardware_type_name(hardware: Hardware) -> &'static str {
    match hardware {
        Hardware::Tpu => "TPU",
        Hardware::Gpu => "GPU",
        Hardware::CpuOnly => "CPU_ONLY",
    }
}

/// `normalized_total_op_time / total_op_time` (0 when there is no op time).
pub fn agg_dvfs_time_scale_multiplier(db: &OpMetricsDb) -> f64 {
    let normalized: f64 = db
        .ops
        .iter()
        .filter(|op| !is_idle(op))
        .map(|op| {
            let scale = if op.normalized_time_ps == 0 {
                1.0
            } else {
                safe_divide(op.normalized_time_ps as f64, op.time_ps as f64)
            };
            op.self_time_ps as f64 * scale
        })
        .sum();
    safe_divide(normalized, db.total_op_time_ps as f64)
}

fn is_idle(op: &OpMetrics) -> bool {
    op.category == "IDLE"
}

fn is_fusion(category: &str) -> bool {
    category.ends_with(" fusion")
}

fn children_time_ps(op: &OpMetrics) -> u64 {
    op.time_ps.saturating_sub(op.self_time_ps)
}

/// tsl `SafeDivide`.
fn safe_divide(a: f64, b: f64) -> f64 {
    if b.abs() < 1e-10 {
        0.0
    } else {
        a / b
    }
}

fn giga_to_gibi(x: f64) -> f64 {
    x / 1.073_741_824
}

fn gibi_to_giga(x: f64) -> f64 {
    x * 1.073_741_824
}

fn pico_to_nano(ps: u64) -> f64 {
    ps as f64 / 1000.0
}

/// XProf `ParseProvenance`: `/`-separated parts (empty ones skipped), the last cut at `:`.
fn parse_provenance(provenance: &str) -> Vec<String> {
    let parts: Vec<&str> = provenance.split('/').filter(|p| !p.is_empty()).collect();
    let Some((last, init)) = parts.split_last() else {
        return Vec::new();
    };
    let mut out: Vec<String> = init.iter().map(|p| p.to_string()).collect();
    out.push(last.split(':').next().unwrap_or("").to_string());
    out
}

/// Per-node accumulator (the subset of XProf `OpMetrics` the tree uses).
#[derive(Debug, Clone, Default)]
struct Acc {
    occurrences: u64,
    time_ps: u64,
    self_time_ps: u64,
    normalized_time_ps: u64,
    flops: u64,
    model_flops: u64,
    bytes_accessed: u64,
    dma_stall_ps: u64,
    /// (memory_space, operation_type) -> bytes, in first-seen order.
    memory: Vec<MemoryAccessed>,
}

impl Acc {
    fn add_memory(&mut self, src: &[MemoryAccessed]) {
        for m in src {
            match self
                .memory
                .iter_mut()
                .find(|d| d.memory_space == m.memory_space && d.operation_type == m.operation_type)
            {
                Some(d) => d.bytes_accessed = d.bytes_accessed.saturating_add(m.bytes_accessed),
                None => self.memory.push(*m),
            }
        }
    }

    /// XProf `UpdateNodeMetrics` (op into a root / program / provenance node).
    fn update(&mut self, op: &OpMetrics) {
        self.time_ps = self.time_ps.saturating_add(op.self_time_ps);
        self.normalized_time_ps = self.normalized_time_ps.saturating_add(op.normalized_time_ps);
        self.self_time_ps = self.self_time_ps.saturating_add(op.self_time_ps);
        if children_time_ps(op) == 0 {
            self.flops = self.flops.saturating_add(op.flops);
            self.model_flops = self.model_flops.saturating_add(op.model_flops);
            self.bytes_accessed = self.bytes_accessed.saturating_add(op.bytes_accessed);
            self.dma_stall_ps = self.dma_stall_ps.saturating_add(op.dma_stall_ps);
            self.add_memory(&op.memory_accessed_breakdown);
        }
    }

    /// XProf `CombineOpMetrics` (op into a category / dedup / leaf node).
    fn combine(&mut self, op: &OpMetrics) {
        self.occurrences = self.occurrences.saturating_add(op.occurrences);
        self.time_ps = self.time_ps.saturating_add(op.time_ps);
        self.self_time_ps = self.self_time_ps.saturating_add(op.self_time_ps);
        self.normalized_time_ps = self.normalized_time_ps.saturating_add(op.normalized_time_ps);
        self.flops = self.flops.saturating_add(op.flops);
        self.model_flops = self.model_flops.saturating_add(op.model_flops);
        self.bytes_accessed = self.bytes_accessed.saturating_add(op.bytes_accessed);
        self.dma_stall_ps = self.dma_stall_ps.saturating_add(op.dma_stall_ps);
        self.add_memory(&op.memory_accessed_breakdown);
    }

    /// Bytes of the HBM (`on_chip == false`) or on-chip memory spaces with one operation type
    /// (XProf `BytesAccessedPerCore`: entries of another type, including UNKNOWN, are skipped).
    fn bytes(&self, on_chip: bool, operation_type: u64) -> f64 {
        self.memory
            .iter()
            .filter(|m| m.operation_type == operation_type && ((m.memory_space == MEMORY_SPACE_HBM) != on_chip))
            .map(|m| m.bytes_accessed)
            .fold(0u64, u64::saturating_add) as f64
    }
}

/// Peak rates per core: GFLOP/s and GiB/s [HBM, SRAM rd, SRAM wr].
struct Peaks {
    gflops: f64,
    gibps: [f64; 3],
}

impl Peaks {
    fn new(device: &DeviceInfo) -> Self {
        let bw = &device.peak_bws_giga_bytes_per_second;
        Peaks {
            gflops: device.peak_teraflops_per_second * 1000.0,
            gibps: [giga_to_gibi(bw[0]), giga_to_gibi(bw[1]), giga_to_gibi(bw[2])],
        }
    }
}

/// XProf `PopulateOpMetricsNode`.
fn node_metrics(acc: &Acc, peaks: &Peaks, total_time_ps: u64) -> NodeMetrics {
    let time_ns = pico_to_nano(acc.time_ps);
    // XProf 2.24.2 rates FLOPs against DVFS-normalized time when a node has any
    // (`GigaFlopsPerSecondPerCoreNormalizedOnDvfs`: rate x time / normalized time).
    let mut gflops_rate = safe_divide(acc.flops as f64, time_ns);
    if acc.normalized_time_ps != 0 {
        gflops_rate *= safe_divide(acc.time_ps as f64, acc.normalized_time_ps as f64);
    }
    let uncapped = safe_divide(gflops_rate, peaks.gflops);
    let time_fraction = safe_divide(acc.time_ps as f64, total_time_ps as f64);
    let rate = |bytes: f64| giga_to_gibi(safe_divide(bytes, time_ns));
    let hbm = rate(acc.bytes(false, OP_READ)) + rate(acc.bytes(false, OP_WRITE));
    let sram_rd = rate(acc.bytes(true, OP_READ));
    let sram_wr = rate(acc.bytes(true, OP_WRITE));
    let util = |gibps: f64, peak: f64| safe_divide(gibps, peak).min(1.0);
    NodeMetrics {
        raw_time_ps: acc.time_ps,
        occurrences: acc.occurrences,
        avg_time_ps: safe_divide(acc.time_ps as f64, acc.occurrences as f64),
        flops_utilization: uncapped.min(1.0) * time_fraction,
        uncapped_flops_utilization: uncapped * time_fraction,
        raw_flops: acc.model_flops,
        bf16_flops: acc.flops,
        bandwidth_utils: [util(hbm, peaks.gibps[0]), util(sram_rd, peaks.gibps[1]), util(sram_wr, peaks.gibps[2])],
        raw_bytes_accessed: [
            gibi_to_giga(hbm) * time_ns,
            gibi_to_giga(sram_rd) * time_ns,
            gibi_to_giga(sram_wr) * time_ns,
        ],
        normalized_time_ps: acc.normalized_time_ps,
    }
}

/// A node of the tree under construction (arena entry).
struct BNode {
    name: String,
    kind: NodeKind,
    xla: Option<XlaInstruction>,
    acc: Acc,
    children: Vec<usize>,
}

struct Builder {
    group_by: GroupBy,
    nodes: Vec<BNode>,
    /// program_id -> node.
    programs: HashMap<u64, usize>,
    /// (parent node, provenance part) -> node.
    provenance: HashMap<(usize, String), usize>,
    /// (parent node, category) -> node.
    categories: HashMap<(usize, String), usize>,
    /// (category node, dedup name) -> node.
    dedups: HashMap<(usize, String), usize>,
}

const ROOT: usize = 0;

impl Builder {
    fn new(group_by: GroupBy) -> Self {
        let root = BNode {
            name: group_by.root_name().to_string(),
            kind: NodeKind::Root,
            xla: None,
            acc: Acc::default(),
            children: Vec::new(),
        };
        Builder {
            group_by,
            nodes: vec![root],
            programs: HashMap::new(),
            provenance: HashMap::new(),
            categories: HashMap::new(),
            dedups: HashMap::new(),
        }
    }

    fn add_child(&mut self, parent: usize, name: String, kind: NodeKind) -> usize {
        let id = self.nodes.len();
        self.nodes.push(BNode { name, kind, xla: None, acc: Acc::default(), children: Vec::new() });
        if let Some(p) = self.nodes.get_mut(parent) {
            p.children.push(id);
        }
        id
    }

    fn acc(&mut self, id: usize) -> Option<&mut Acc> {
        self.nodes.get_mut(id).map(|n| &mut n.acc)
    }

    /// An op (or fused instruction) node with its XLA details, and its fused children below it.
    fn add_symbol_node(&mut self, parent: usize, op: &OpMetrics, kind: NodeKind) -> usize {
        let id = self.add_child(parent, op.name.clone(), kind);
        if let Some(n) = self.nodes.get_mut(id) {
            n.xla = Some(XlaInstruction {
                expression: op.long_name.clone(),
                provenance: op.provenance.clone(),
                category: op.category.clone(),
                program_id: op.program_id,
                source_info: op.source_info.clone(),
            });
        }
        for child in &op.children {
            let c = self.add_symbol_node(id, child, NodeKind::FusedOp);
            if let Some(acc) = self.acc(c) {
                acc.combine(child);
            }
        }
        id
    }

    fn program_node(&mut self, op: &OpMetrics) -> usize {
        if let Some(&id) = self.programs.get(&op.program_id) {
            return id;
        }
        let name =
            if op.hlo_module.is_empty() { "main".to_string() } else { format!("{}({})", op.hlo_module, op.program_id) };
        let id = self.add_child(ROOT, name, NodeKind::Program);
        self.programs.insert(op.program_id, id);
        id
    }

    fn add_op(&mut self, op: &OpMetrics) {
        if let Some(acc) = self.acc(ROOT) {
            acc.update(op);
        }
        let idle = is_idle(op);
        let mut program = None;
        if !idle && self.group_by.groups_by_program() {
            let p = self.program_node(op);
            if let Some(acc) = self.acc(p) {
                acc.update(op);
            }
            program = Some(p);
        }

        let has_children = children_time_ps(op) > 0;
        let has_sc_children = op.children.iter().any(|c| c.core_type == "SparseCore");
        if has_children && !has_sc_children {
            return;
        }

        let mut grouping = Vec::with_capacity(3);
        if idle {
            grouping.push(self.add_symbol_node(ROOT, op, NodeKind::Op));
        } else {
            let mut parent = program.unwrap_or(ROOT);
            if self.group_by == GroupBy::Provenance && !op.provenance.is_empty() {
                for part in parse_provenance(&op.provenance) {
                    let key = (parent, part);
                    let node = match self.provenance.get(&key) {
                        Some(&n) => n,
                        None => {
                            let n = self.add_child(parent, key.1.clone(), NodeKind::Provenance);
                            self.provenance.insert(key, n);
                            n
                        }
                    };
                    if let Some(acc) = self.acc(node) {
                        acc.update(op);
                    }
                    parent = node;
                }
            }
            let cat_key = (parent, op.category.clone());
            let category = match self.categories.get(&cat_key) {
                Some(&n) => n,
                None => {
                    let n = self.add_child(parent, op.category.clone(), NodeKind::Category);
                    self.categories.insert(cat_key, n);
                    n
                }
            };
            let dedup_name =
                if op.deduplicated_name.is_empty() { op.name.clone() } else { op.deduplicated_name.clone() };
            let dedup_key = (category, dedup_name);
            let dedup = match self.dedups.get(&dedup_key) {
                Some(&n) => n,
                None => {
                    let n = self.add_child(category, dedup_key.1.clone(), NodeKind::DedupGroup);
                    self.dedups.insert(dedup_key, n);
                    n
                }
            };
            let leaf = self.add_symbol_node(dedup, op, NodeKind::Op);
            grouping.extend([category, dedup, leaf]);
        }
        for id in grouping {
            if let Some(acc) = self.acc(id) {
                acc.combine(op);
            }
        }
    }

    /// Turn the arena into an owned tree with XProf metrics on every node.
    fn finish(mut self, peaks: &Peaks, total_time_ps: u64) -> OpProfileNode {
        if let Some(acc) = self.acc(ROOT) {
            acc.time_ps = total_time_ps;
        }
        let mut slots: Vec<Option<BNode>> = self.nodes.into_iter().map(Some).collect();
        build_owned(&mut slots, ROOT, peaks, total_time_ps)
    }
}

fn build_owned(slots: &mut [Option<BNode>], id: usize, peaks: &Peaks, total_time_ps: u64) -> OpProfileNode {
    let Some(node) = slots.get_mut(id).and_then(Option::take) else {
        return OpProfileNode::default();
    };
    let children = node.children.iter().map(|&c| build_owned(slots, c, peaks, total_time_ps)).collect::<Vec<_>>();
    OpProfileNode {
        metrics: node_metrics(&node.acc, peaks, total_time_ps),
        name: node.name,
        kind: node.kind,
        num_children: children.len(),
        xla: node.xla,
        children,
    }
}

/// XProf `SortAndPruneChildren`.
fn sort_and_prune(node: &mut OpProfileNode, limit: usize, level: usize) {
    node.num_children = node.children.len();
    for child in &mut node.children {
        sort_and_prune(child, limit, level.saturating_sub(1));
    }
    let keep = if level > 0 { node.children.len() } else { limit };
    if node.children.len() > 1 {
        let by_flops = node.xla.as_ref().is_some_and(|x| is_fusion(&x.category));
        if by_flops {
            node.children.sort_by_key(|c| std::cmp::Reverse(c.metrics.raw_flops));
        } else {
            node.children.sort_by_key(|c| std::cmp::Reverse(c.metrics.raw_time_ps));
        }
        node.children.truncate(keep);
    }
}

/// XProf `FinalizeDeduplicatedNodes`.
fn finalize_dedup(node: &mut OpProfileNode) {
    let is_dedup_group =
        !node.children.is_empty() && node.xla.is_none() && node.children.iter().all(|c| c.xla.is_some());
    if !is_dedup_group {
        for child in &mut node.children {
            finalize_dedup(child);
        }
        return;
    }
    if node.children.len() == 1 {
        if let Some(child) = node.children.pop() {
            *node = child;
        }
        return;
    }
    let Some(top) = node.children.first() else {
        return;
    };
    let name = format!("{} and its duplicate(s)", top.name);
    let mut xla = top.xla.clone().unwrap_or_default();
    if is_fusion(&xla.category) {
        xla.provenance.clear();
    }
    node.name = name;
    node.xla = Some(xla);
}
