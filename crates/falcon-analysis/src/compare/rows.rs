//! The op rows a comparison works on, from a device op database or from an XLA:CPU op profile, each with
//! its computation's signature when the capture's programs describe it.

use crate::compare::matching::{strip_numeric_suffixes, OpPoint, OpRow};
use crate::compare::signature::Signatures;
use crate::cpu_ops::CpuOpProfile;
use crate::device::DeviceInfo;
use crate::op_metrics::OpMetricsDb;
use crate::roofline::roofline_point_for_op;

/// One row per device op (IDLE and never-executed ops excluded), with its roofline placement when the
/// profile has cost data.
pub(crate) fn device_rows(db: &OpMetricsDb, device: &DeviceInfo, signatures: &Signatures) -> Vec<OpRow> {
    db.ops
        .iter()
        .filter(|m| !m.is_idle() && m.occurrences > 0)
        .map(|m| {
            let costed = db.has_hlo_costs || m.flops > 0 || m.bytes_accessed > 0;
            let point = costed.then(|| op_point(m, db, device));
            OpRow {
                module: m.hlo_module.clone(),
                name: m.name.clone(),
                deduplicated_name: m.deduplicated_name.clone(),
                category: m.category.clone(),
                provenance: m.provenance.clone(),
                first_start_ps: None,
                occurrences: m.occurrences,
                self_time_ps: m.self_time_ps,
                flops: costed.then_some(m.flops),
                bytes_accessed: costed.then_some(m.bytes_accessed),
                point,
                signature: signatures.get(&m.hlo_module, &m.name).cloned(),
            }
        })
        .collect()
}

/// Where an op of `db` sits on the roofline.
fn op_point(m: &crate::op_metrics::OpMetrics, db: &OpMetricsDb, device: &DeviceInfo) -> OpPoint {
    let p = roofline_point_for_op(m, db.total_time_ps, device);
    OpPoint {
        operational_intensity: p.operational_intensity,
        flop_rate_gflops: p.measured_flop_rate_gflops,
        memory_bw_gibs: p.measured_memory_bw_gibs,
        bound_by: p.bound_by,
    }
}

/// The category of an XLA:CPU op without an `hlo_category` stat: the HLO opcode read off its name
/// (`dot.3` → `dot`, `copy_transpose.1` → `copy_transpose`), `fusion` for any fusion.
pub(crate) fn cpu_category(name: &str) -> String {
    let base = strip_numeric_suffixes(name);
    if base.ends_with("fusion") {
        return "fusion".to_string();
    }
    let head = base.split('.').next().unwrap_or("");
    if head.is_empty() {
        "other".to_string()
    } else {
        head.to_string()
    }
}

/// One row per XLA:CPU op (self time is the op's time: XLA:CPU records no nesting). Ops of a program are ordered
/// by their mean position within a step when every op of that program ran inside steps, else by their first start.
/// FLOPs and bytes come from the capture's costed op database (`db`: the executions inside steps, costed from the
/// HLO), scaled to the op's executions; its roofline placement is the database's.
pub(crate) fn cpu_rows(
    profile: &CpuOpProfile,
    db: &OpMetricsDb,
    device: &DeviceInfo,
    signatures: &Signatures,
) -> Vec<OpRow> {
    let mut outside_steps = std::collections::HashSet::new();
    for o in profile.ops.iter().filter(|o| o.mean_step_offset_ps.is_none()) {
        outside_steps.insert(o.hlo_module.as_str());
    }
    let costed: std::collections::HashMap<(&str, &str), &crate::op_metrics::OpMetrics> = db
        .device_ops()
        .filter(|m| db.has_hlo_costs && m.occurrences > 0 && !m.category.is_empty())
        .map(|m| ((m.hlo_module.as_str(), m.name.as_str()), m))
        .collect();
    profile
        .ops
        .iter()
        .map(|o| {
            let cost = costed.get(&(o.hlo_module.as_str(), o.name.as_str())).copied();
            let scale = |total: u64, m: &crate::op_metrics::OpMetrics| {
                (total as f64 / m.occurrences as f64 * o.occurrences as f64).round() as u64
            };
            OpRow {
                module: o.hlo_module.clone(),
                name: o.name.clone(),
                deduplicated_name: String::new(),
                category: cost
                    .map(|m| m.category.clone())
                    .or_else(|| o.category.clone())
                    .unwrap_or_else(|| cpu_category(&o.name)),
                provenance: cost.map(|m| m.provenance.clone()).unwrap_or_default(),
                first_start_ps: Some(match o.mean_step_offset_ps {
                    Some(offset) if !outside_steps.contains(o.hlo_module.as_str()) => offset as i128,
                    _ => o.first_start_ps,
                }),
                occurrences: o.occurrences,
                self_time_ps: u64::try_from(o.total_time_ps).unwrap_or(0),
                flops: cost.map(|m| scale(m.flops, m)),
                bytes_accessed: cost.map(|m| scale(m.bytes_accessed, m)),
                point: cost.map(|m| op_point(m, db, device)),
                signature: signatures.get(&o.hlo_module, &o.name).cloned(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::cpu_category;

    #[test]
    fn cpu_categories_come_from_the_opcode() {
        assert_eq!(cpu_category("broadcast_add_fusion.3"), "fusion");
        assert_eq!(cpu_category("fusion"), "fusion");
        assert_eq!(cpu_category("dot.3"), "dot");
        assert_eq!(cpu_category("custom-call.1"), "custom-call");
        assert_eq!(cpu_category("12"), "other");
    }
}
