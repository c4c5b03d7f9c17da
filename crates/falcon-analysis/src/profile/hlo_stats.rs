//! XProf's HLO stats (`hlo_stats` tool): one row per device HLO op with its times, rates and
//! roofline placement.
//!
//! # Rules (XProf 2.24.2 `xprof/convert/op_stats_to_hlo_stats.cc`)
//!
//! * One row per op of the device OpMetricsDb with occurrences > 0 (so `IDLE` is excluded), sorted
//!   by self time desc, tie name asc (`SortedOpMetricsDb`). SparseCore child ops are not produced
//!   (Falcon skips SparseCore planes; none of the reference captures has them).
//! * `self_time_fraction` = self time ÷ the db's total time (which includes IDLE), and
//!   `cumulative_self_time_fraction` the running sum. XProf's JSON prints these two ×100 (percent)
//!   while `dma_stall_fraction` stays a fraction; here all three are fractions.
//! * `expression` = the op's `long_name` (HLO text), or its name when empty; `name` = the op name
//!   (XProf re-derives it from the expression's `%name = …` head, which is the same).
//! * Rates, bandwidths, operational intensity and bound-by are the roofline's
//!   ([`crate::roofline`], `SetRooflineMetrics`): `flop_rate_gflops` = flops ÷ time_ns (XProf's
//!   "Normalized GFLOP/s"), `model_flop_rate_gflops` = model flops ÷ time_ns, memory BW =
//!   GiB(bytes ÷ time_ns), HBM BW from the memory breakdown (all bytes without one).
//! * `rematerialization`: `.remat` in the HLO text before its `=`, or `/rematted_computation/` in
//!   the framework op name. `dma_stall_fraction` = DMA stall time ÷ time.
//! * `program_id` serializes as a string, as XProf prints it (u64 program ids exceed JSON's safe
//!   integer range).

use serde::{Serialize, Serializer};

use crate::device::{safe_divide, DeviceInfo};
use crate::op_metrics::OpMetricsDb;
use crate::roofline::{roofline_point_for_op, sorted_ops};

/// One HLO stats row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct HloStatsRow {
    pub rank: u64,
    /// Serialized as a decimal string (as XProf).
    #[schemars(with = "String")]
    #[serde(serialize_with = "as_string")]
    pub program_id: u64,
    pub name: String,
    pub expression: String,
    pub category: String,
    /// Framework op (`tf_op`), "" when absent.
    pub provenance: String,
    pub occurrences: u64,
    pub total_time_us: f64,
    pub avg_time_us: f64,
    pub self_time_us: f64,
    pub avg_self_time_us: f64,
    /// Of the db's total time (IDLE included); 0..1.
    pub self_time_fraction: f64,
    pub cumulative_self_time_fraction: f64,
    pub flops: u64,
    pub model_flops: u64,
    pub bytes_accessed: u64,
    /// XProf "Normalized GFLOP/s".
    pub flop_rate_gflops: f64,
    pub model_flop_rate_gflops: f64,
    pub memory_bw_gibs: f64,
    pub hbm_bw_gibs: f64,
    pub cmem_read_bw_gibs: f64,
    pub cmem_write_bw_gibs: f64,
    pub operational_intensity: f64,
    pub bound_by: String,
    pub rematerialization: bool,
    pub dma_stall_fraction: f64,
    pub source_info: String,
    pub core_type: String,
}

fn as_string<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&v.to_string())
}

/// XProf `IsRematerialization`.
fn is_rematerialization(hlo_expression: &str, framework_op: &str) -> bool {
    let head = hlo_expression.split('=').next().unwrap_or("");
    head.contains(".remat") || framework_op.contains("/rematted_computation/")
}

/// The HLO stats rows of a device OpMetricsDb.
pub fn hlo_stats(db: &OpMetricsDb, device: &DeviceInfo) -> Vec<HloStatsRow> {
    let total_us = db.total_time_ps as f64 / 1e6;
    let mut rows = Vec::new();
    let mut cumulative = 0.0;
    for m in sorted_ops(db) {
        if m.occurrences == 0 {
            continue;
        }
        let p = roofline_point_for_op(m, db.total_time_ps, device);
        let fraction = safe_divide(p.self_time_us, total_us);
        cumulative += fraction;
        rows.push(HloStatsRow {
            rank: rows.len() as u64 + 1,
            program_id: m.program_id,
            name: m.name.clone(),
            expression: if m.long_name.is_empty() { m.name.clone() } else { m.long_name.clone() },
            category: m.category.clone(),
            provenance: m.provenance.clone(),
            occurrences: m.occurrences,
            total_time_us: p.total_time_us,
            avg_time_us: p.avg_time_us,
            self_time_us: p.self_time_us,
            avg_self_time_us: p.avg_self_time_us,
            self_time_fraction: fraction,
            cumulative_self_time_fraction: cumulative,
            flops: m.flops,
            model_flops: m.model_flops,
            bytes_accessed: m.bytes_accessed,
            flop_rate_gflops: p.measured_flop_rate_gflops,
            model_flop_rate_gflops: p.model_flop_rate_gflops,
            memory_bw_gibs: p.measured_memory_bw_gibs,
            hbm_bw_gibs: p.hbm_bw_gibs,
            cmem_read_bw_gibs: p.cmem_read_bw_gibs,
            cmem_write_bw_gibs: p.cmem_write_bw_gibs,
            operational_intensity: p.operational_intensity,
            bound_by: p.bound_by,
            rematerialization: is_rematerialization(&m.long_name, &m.provenance),
            dma_stall_fraction: p.dma_stall_fraction,
            source_info: m.source_info.clone(),
            core_type: m.core_type.clone(),
        });
    }
    rows
}
