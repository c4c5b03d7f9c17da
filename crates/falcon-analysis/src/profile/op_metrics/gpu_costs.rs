//! GPU op costs filled from the capture's own HLO programs: each op of the device op database gets XProf's
//! category, its HLO text, the framework scope and source line, and its FLOPs and bytes (per execution ×
//! occurrences; bytes as HBM reads and writes) from [`super::hlo::cost`]; the database's precision split
//! becomes the ops' self time in 16 bits or fewer against the rest (what their HLO element types say, where
//! XProf reads a `shape` stat GPU kernels no longer carry). Ops whose FLOPs no model knows are named in a note
//! with their share of device time.

use std::collections::{BTreeMap, HashMap};

use super::{MemoryAccessed, OpMetricsDb};
use crate::profile::hlo::cost::CostSource;
use crate::profile::hlo::GpuHlo;

/// Fills the costs of `db`'s ops from `hlo`; whether any op was found in a program.
pub(crate) fn fill(db: &mut OpMetricsDb, hlo: &GpuHlo) -> bool {
    if hlo.is_empty() {
        return false;
    }
    let mut names: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for op in db.ops.iter().filter(|o| !o.is_idle()) {
        names.entry(op.program_id).or_default().push(op.name.clone());
    }
    let mut infos = HashMap::new();
    for (program, ops) in &names {
        for (name, info) in hlo.describe(*program, ops.iter().map(String::as_str)) {
            infos.insert((*program, name), info);
        }
    }
    if infos.is_empty() {
        return false;
    }
    let (mut sixteen, mut other) = (0u64, 0u64);
    let (mut unknown_ps, mut estimated_ps, mut total_ps) = (0u64, 0u64, 0u64);
    let mut unknown_names = Vec::new();
    for op in db.ops.iter_mut().filter(|o| !o.is_idle()) {
        total_ps += op.self_time_ps;
        let Some(info) = infos.get(&(op.program_id, op.name.clone())) else { continue };
        let n = op.occurrences as f64;
        op.category.clone_from(&info.category);
        op.long_name.clone_from(&info.expression);
        if op.provenance.is_empty() {
            op.provenance = info.op_name.clone().unwrap_or_default();
        }
        if op.source_info.is_empty() {
            op.source_info = info.source.clone().unwrap_or_default();
        }
        let (read, written) = (info.cost.bytes_read * n, info.cost.bytes_written * n);
        op.flops = (info.cost.flops * n).round() as u64;
        op.model_flops = op.flops;
        op.bytes_accessed = (read + written).round() as u64;
        op.memory_accessed_breakdown = [(true, read), (false, written)]
            .into_iter()
            .filter(|(_, b)| *b > 0.0)
            .map(|(is_read, b)| MemoryAccessed {
                is_read,
                memory_space: 1,
                bytes_accessed: b.round() as u64,
                operation_type: if is_read { 1 } else { 2 },
            })
            .collect();
        match info.cost.source {
            CostSource::Unknown => {
                unknown_ps += op.self_time_ps;
                unknown_names.push(op.name.clone());
            }
            CostSource::Estimated => estimated_ps += op.self_time_ps,
            _ => {}
        }
        if info.sixteen_bit {
            sixteen += op.self_time_ps;
        } else {
            other += op.self_time_ps;
        }
    }
    if sixteen + other > 0 {
        db.precision.compute_16bit_ps = sixteen;
        db.precision.compute_32bit_ps = other;
    }
    let share = |ps: u64| if total_ps == 0 { 0.0 } else { 100.0 * ps as f64 / total_ps as f64 };
    if unknown_ps > 0 {
        unknown_names.sort();
        unknown_names.truncate(5);
        db.notes.push(format!(
            "{:.1}% of op time is in custom calls whose FLOPs no model knows ({}); their bytes are counted",
            share(unknown_ps),
            unknown_names.join(", ")
        ));
    }
    if estimated_ps > 0 {
        db.notes.push(format!(
            "{:.1}% of op time is in cuDNN fused attention, costed by Falcon from its shapes (XProf counts it as 0)",
            share(estimated_ps)
        ));
    }
    true
}
