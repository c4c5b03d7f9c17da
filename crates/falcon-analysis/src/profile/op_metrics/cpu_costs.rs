//! The op database of an XLA:CPU capture, costed from its own HLO as GPU ops are.
//!
//! XProf builds no op database for a CPU-only capture (its op profile, HLO stats and roofline are empty there).
//! Falcon builds one from the XLA:CPU op events ([`crate::cpu_ops`]: one event per executed HLO op, keyed by
//! `hlo_module` and `hlo_op`) and costs every op with the same decoder and cost model the GPU uses
//! ([`super::gpu_costs::fill`]: category, HLO text, scope, source line, FLOPs and bytes per execution ×
//! executions), so the roofline, HLO stats, bound-by and MFU work on a CPU as on a GPU.
//!
//! # Rules
//!
//! * **Program**: an op's `hlo_module` is matched to the one program of that module name on `/host:metadata`
//!   ([`GpuHlo::program_named`]); an op of a module with no (or no unique) program keeps no cost and is named
//!   in a note with its share of op time.
//! * **Window**: with steps, only the executions inside a step count (their number and summed durations), so
//!   FLOPs, bytes and times are those of the steps the step time is measured over; without steps, every
//!   execution.
//! * **Time**: an op's time is the sum of its events' durations on the executor threads (thread time), and
//!   the database's `total_time_ps` is the window's wall time × the CPU count of the capture
//!   ([`crate::device::DeviceInfo::device_cores`]): rates are then per-core averages, as XProf's are per core on
//!   a TPU, against a peak per core ([`crate::device::DeviceInfo::peak_teraflops_per_second`]). The gap is the
//!   synthetic `IDLE` op.
//! * **Bytes** are what the HLO reads and writes (operands and result), charged to main memory (XProf's memory
//!   space 1, the "HBM" slot): caches are not modelled, so a small working set that stays in cache reads as
//!   memory traffic.

use std::collections::BTreeMap;

use super::{OpMetrics, OpMetricsDb};
use crate::cpu_ops::CpuOpProfile;
use crate::profile::hlo::GpuHlo;

/// The op database of an XLA:CPU capture's op events, costed from `hlo`. `window_ps`: the steps' summed wall
/// time (0 without steps: the ops' own span is unknown here, so the ops' summed time is the total).
pub(crate) fn cpu_op_db(profile: &CpuOpProfile, hlo: &GpuHlo, window_ps: u64, cores: u32) -> OpMetricsDb {
    let in_steps = window_ps > 0;
    let mut db = OpMetricsDb::default();
    let mut programs: BTreeMap<&str, Option<u64>> = BTreeMap::new();
    let mut unmatched: BTreeMap<&str, u64> = BTreeMap::new();
    for op in &profile.ops {
        let (n, ps) = if in_steps {
            (op.in_step_occurrences, u64::try_from(op.in_step_time_ps).unwrap_or(0))
        } else {
            (op.occurrences, u64::try_from(op.total_time_ps).unwrap_or(0))
        };
        if n == 0 {
            continue;
        }
        let program = *programs.entry(op.hlo_module.as_str()).or_insert_with(|| hlo.program_named(&op.hlo_module));
        if program.is_none() {
            *unmatched.entry(op.hlo_module.as_str()).or_default() += ps;
        }
        db.total_op_time_ps += ps;
        db.ops.push(OpMetrics {
            program_id: program.unwrap_or(0),
            hlo_module: op.hlo_module.clone(),
            name: op.name.clone(),
            long_name: op.name.clone(),
            category: op.category.clone().unwrap_or_default(),
            deduplicated_name: op.name.clone(),
            occurrences: n,
            time_ps: ps,
            self_time_ps: ps,
            normalized_time_ps: ps,
            min_time_ps: (op.min_time_us * 1e6).round().max(0.0) as u64,
            ..OpMetrics::default()
        });
    }
    let wall = if in_steps { window_ps.saturating_mul(u64::from(cores.max(1))) } else { db.total_op_time_ps };
    db.total_time_ps = wall.max(db.total_op_time_ps);
    if db.total_time_ps > db.total_op_time_ps {
        db.ops.push(OpMetrics {
            name: "IDLE".into(),
            long_name: "IDLE".into(),
            category: "IDLE".into(),
            time_ps: db.total_time_ps - db.total_op_time_ps,
            self_time_ps: db.total_time_ps - db.total_op_time_ps,
            ..OpMetrics::default()
        });
    }
    db.notes.extend(hlo.notes.iter().cloned());
    db.has_hlo_costs = super::gpu_costs::fill(&mut db, hlo);
    if !db.has_hlo_costs {
        db.notes.push(
            "the capture holds no HLO program for its XLA:CPU ops (no `Hlo Proto` on `/host:metadata`): no FLOPs, \
             bytes or roofline placement per op"
                .to_string(),
        );
    }
    // What `fill` set aside as precision is a GPU notion (tensor-core inputs): not reported on a CPU.
    db.precision = Default::default();
    let share = |ps: u64| 100.0 * ps as f64 / db.total_op_time_ps.max(1) as f64;
    for (module, ps) in unmatched.into_iter().filter(|(_, ps)| *ps > 0) {
        db.notes.push(format!(
            "{:.1}% of XLA:CPU op time is in module `{module}`, which no (or more than one) program on \
             /host:metadata is named: its ops are not costed",
            share(ps)
        ));
    }
    db
}
