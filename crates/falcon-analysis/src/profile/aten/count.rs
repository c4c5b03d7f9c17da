//! A trace's ATen ops counted once: each thread's `cpu_op` events form call trees (an event inside another's
//! span on the same thread is its callee), and an op's cost ([`super::cost`]) counts only when no caller of it was
//! costed — `aten::linear` → `aten::addmm` counts the `addmm` once; `_scaled_dot_product_cudnn_attention` counts
//! itself and not the kernels' wrappers it calls. Names outside `aten::` (autograd nodes, `ProfilerStep#N`, user
//! annotations) only contain ops. An op no rule costs is listed with its calls and host time, unless a caller or a
//! callee was costed (its work is counted there).

use std::collections::BTreeMap;

use serde::Serialize;

use super::{cost, AtenCost, AtenFamily, AtenRecord, Costing};

/// One `cpu_op` event and its record.
#[derive(Debug, Clone, Copy)]
pub struct OpEvent<'a> {
    pub name: &'a str,
    /// The thread it ran on (nesting is per thread).
    pub thread: u64,
    pub start_ps: i64,
    pub dur_ps: i64,
    pub record: AtenRecord<'a>,
}

/// The costed executions of one op (name and what the count assumed).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CostedOp {
    pub name: String,
    pub family: AtenFamily,
    pub backward: bool,
    pub detail: Option<String>,
    pub calls: u64,
    pub flops: f64,
    pub bytes_read: f64,
    pub bytes_written: f64,
    /// Host time of its calls (inclusive), µs.
    pub host_time_us: f64,
}

/// An op no rule costs, and why.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct UncostedOp {
    pub name: String,
    pub why: String,
    pub calls: u64,
    /// Host time of its calls (inclusive), µs.
    pub host_time_us: f64,
}

/// What a trace's ops cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TraceCosts {
    /// By FLOPs, descending.
    pub ops: Vec<CostedOp>,
    /// By host time, descending.
    pub uncosted: Vec<UncostedOp>,
    /// All counted FLOPs.
    pub flops: f64,
    /// Whether any event carried shapes (`record_shapes=True`); without them nothing can be costed.
    pub shapes_recorded: bool,
}

struct Open {
    end_ps: i64,
    costed: bool,
    /// A callee was costed: an unknown op's work is counted there.
    costed_below: bool,
    /// When the op is unknown: its name, why and time.
    unknown: Option<(String, String, i64)>,
}

/// Counts `events` (any order) once each, as the module docs say.
pub fn count(events: &[OpEvent<'_>]) -> TraceCosts {
    let mut order: Vec<usize> = (0..events.len()).collect();
    // Per thread by start; at one start the longer (the caller) first.
    order.sort_by_key(|&i| (events[i].thread, events[i].start_ps, std::cmp::Reverse(events[i].dur_ps)));
    let mut costed: BTreeMap<(String, bool, Option<String>), CostedOp> = BTreeMap::new();
    let mut uncosted: BTreeMap<(String, String), UncostedOp> = BTreeMap::new();
    let mut shapes_recorded = false;
    let mut stack: Vec<Open> = Vec::new();
    let mut thread = None;
    for &i in &order {
        let e = &events[i];
        if thread != Some(e.thread) {
            while let Some(o) = stack.pop() {
                close(o, &mut uncosted);
            }
            thread = Some(e.thread);
        }
        while stack.last().is_some_and(|o| o.end_ps <= e.start_ps) {
            let o = stack.pop().expect("a last element");
            let below = o.costed || o.costed_below;
            close(o, &mut uncosted);
            if below {
                if let Some(parent) = stack.last_mut() {
                    parent.costed_below = true;
                }
            }
        }
        shapes_recorded |= e.record.dims.iter().any(|d| !d.is_empty());
        let under_costed = stack.iter().any(|o| o.costed);
        let costing = if e.name.starts_with("aten::") { cost(e.name, &e.record) } else { Costing::Composite };
        let mut open = Open {
            end_ps: e.start_ps.saturating_add(e.dur_ps.max(0)),
            costed: false,
            costed_below: false,
            unknown: None,
        };
        match costing {
            Costing::Costed(c) if !under_costed => {
                open.costed = true;
                add(&mut costed, e, c);
            }
            Costing::Unknown(why) if !under_costed => open.unknown = Some((e.name.to_string(), why, e.dur_ps)),
            _ => {}
        }
        stack.push(open);
    }
    while let Some(o) = stack.pop() {
        let below = o.costed || o.costed_below;
        close(o, &mut uncosted);
        if below {
            if let Some(parent) = stack.last_mut() {
                parent.costed_below = true;
            }
        }
    }
    let mut ops: Vec<CostedOp> = costed.into_values().collect();
    ops.sort_by(|a, b| b.flops.total_cmp(&a.flops).then_with(|| a.name.cmp(&b.name)));
    let mut uncosted: Vec<UncostedOp> = uncosted.into_values().collect();
    uncosted.sort_by(|a, b| b.host_time_us.total_cmp(&a.host_time_us).then_with(|| a.name.cmp(&b.name)));
    let flops = ops.iter().map(|o| o.flops).sum();
    TraceCosts { ops, uncosted, flops, shapes_recorded }
}

/// Closes an op: an unknown one with no costed callee is listed.
fn close(o: Open, uncosted: &mut BTreeMap<(String, String), UncostedOp>) {
    if let (Some((name, why, dur)), false) = (o.unknown, o.costed_below) {
        let u = uncosted.entry((name.clone(), why.clone())).or_insert(UncostedOp {
            name,
            why,
            calls: 0,
            host_time_us: 0.0,
        });
        u.calls += 1;
        u.host_time_us += dur.max(0) as f64 / 1e6;
    }
}

fn add(costed: &mut BTreeMap<(String, bool, Option<String>), CostedOp>, e: &OpEvent<'_>, c: AtenCost) {
    let row = costed.entry((e.name.to_string(), c.backward, c.detail.clone())).or_insert(CostedOp {
        name: e.name.to_string(),
        family: c.family,
        backward: c.backward,
        detail: c.detail.clone(),
        calls: 0,
        flops: 0.0,
        bytes_read: 0.0,
        bytes_written: 0.0,
        host_time_us: 0.0,
    });
    row.calls += 1;
    row.flops += c.flops;
    row.bytes_read += c.bytes_read;
    row.bytes_written += c.bytes_written;
    row.host_time_us += e.dur_ps.max(0) as f64 / 1e6;
}
