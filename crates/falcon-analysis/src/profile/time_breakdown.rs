//! "Where does the time go?" for XLA:CPU captures: the op time of [`super::cpu_ops`] by category, by the
//! framework's name scope and by source line, each as a share of op time, with the captured steps' wall
//! time beside it.
//!
//! # Rules
//!
//! - Every op of the CPU op profile is attributed through [`super::hlo`] (the programs' `HloProto`s
//!   in the capture): its **category** (opcode; fusions by what they fuse: `dot fusion`, `convolution fusion`,
//!   `loop fusion`, …), its **name scope** (`OpMetadata.op_name` without its last element, the primitive:
//!   `jit(step)/transpose(jvp())/dot_general` → `jit(step)/transpose(jvp())`) and its **source line**. An op the
//!   programs do not describe counts under `(unknown)`, and `attributed` says how much of the time that left
//!   described.
//! - Shares are of op time, so each breakdown sums to exactly 100 % (integer picoseconds; the rows beyond
//!   [`ROWS`] are summed into one `(other)` row).
//! - XLA:CPU runs ops on several threads at once, so summed op time can exceed wall time: `op_time_us` and
//!   `wall_time_us` (the sum of the captured steps) are both given, with their ratio (`parallelism`) and a note.

use std::collections::HashMap;

use serde::Serialize;

use super::cpu_ops::CpuOpProfile;
use super::hlo::HloIndex;

/// Rows kept per breakdown (the rest are one `(other)` row).
pub const ROWS: usize = 25;

/// One row of a breakdown.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Share {
    /// Category, name scope or `file:line`; `(unknown)` when the capture does not say, `(other)` for the
    /// rows beyond [`ROWS`].
    pub name: String,
    /// Summed self time of its ops, microseconds.
    pub time_us: f64,
    /// Fraction of op time (the rows of a breakdown sum to 1).
    pub share: f64,
    /// Distinct ops in it.
    pub ops: usize,
}

/// Where the op time of a CPU capture goes.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TimeBreakdown {
    /// Summed self time of every op event, all threads, microseconds.
    pub op_time_us: f64,
    /// Wall time of the captured steps (their summed durations), microseconds; `null` without steps.
    pub wall_time_us: Option<f64>,
    /// Captured steps.
    pub steps: usize,
    /// `op_time_us / wall_time_us`: how many threads' worth of ops ran at once on average.
    pub parallelism: Option<f64>,
    /// Fraction of op time whose op the capture's programs describe (category, scope, source).
    pub attributed: f64,
    /// By category, largest first.
    pub by_category: Vec<Share>,
    /// By name scope, largest first.
    pub by_scope: Vec<Share>,
    /// By source line, largest first (empty when the capture records none).
    pub by_source: Vec<Share>,
    /// How to read op time against wall time, and what could not be attributed.
    pub notes: Vec<String>,
}

/// The breakdown of `ops` (see the module docs); `step_durations_ps` are the captured steps. `None` when the
/// profile has no op time.
pub fn time_breakdown(ops: &CpuOpProfile, index: &HloIndex, step_durations_ps: &[i64]) -> Option<TimeBreakdown> {
    let total_ps: i64 = ops.ops.iter().map(|o| o.total_time_ps.max(0)).fold(0, i64::saturating_add);
    if total_ps == 0 {
        return None;
    }
    let mut category: HashMap<String, (i64, usize)> = HashMap::new();
    let mut scope: HashMap<String, (i64, usize)> = HashMap::new();
    let mut source: HashMap<String, (i64, usize)> = HashMap::new();
    let mut attributed_ps = 0i64;
    let mut any_source = false;
    for op in &ops.ops {
        let t = op.total_time_ps.max(0);
        let info = index.get(&op.hlo_module, &op.name);
        if info.is_some() {
            attributed_ps = attributed_ps.saturating_add(t);
        }
        let unknown = || "(unknown)".to_string();
        let cat = op.category.clone().or_else(|| info.map(|i| i.category.clone())).unwrap_or_else(unknown);
        let sc = info.and_then(|i| i.op_name.as_deref()).map(scope_of).unwrap_or_else(unknown);
        let src = info.and_then(|i| i.source.clone());
        any_source |= src.is_some();
        for (map, key) in [(&mut category, cat), (&mut scope, sc), (&mut source, src.unwrap_or_else(unknown))] {
            let e = map.entry(key).or_default();
            e.0 = e.0.saturating_add(t);
            e.1 += 1;
        }
    }
    let wall_ps: i64 = step_durations_ps.iter().map(|d| (*d).max(0)).fold(0, i64::saturating_add);
    let us = |ps: i64| ps as f64 / 1e6;
    let wall_time_us = (wall_ps > 0).then(|| us(wall_ps));
    let parallelism = wall_time_us.map(|w| us(total_ps) / w);
    let mut notes = Vec::new();
    match (wall_time_us, parallelism) {
        (Some(w), Some(p)) if p > 1.0 => notes.push(format!(
            "summed op time ({:.1} ms) exceeds the wall time of the {} captured steps ({:.1} ms): XLA:CPU runs ops \
             on several threads at once ({p:.2} threads' worth on average); shares are of op time",
            us(total_ps) / 1e3,
            step_durations_ps.len(),
            w / 1e3
        )),
        (Some(w), Some(p)) => notes.push(format!(
            "ops ran {:.0} % of the wall time of the {} captured steps ({:.1} of {:.1} ms); the rest is time \
             outside XLA ops (dispatch, host work, idle)",
            p * 100.0,
            step_durations_ps.len(),
            us(total_ps) / 1e3,
            w / 1e3
        )),
        _ => notes.push("no steps in the capture: op time only, no wall time to set it against".into()),
    }
    let attributed = attributed_ps as f64 / total_ps as f64;
    if index.modules == 0 {
        notes.push(
            "the capture holds no HLO programs (profile with JAX's default options to record them): no name scopes \
             or source lines"
                .into(),
        );
    } else if attributed < 1.0 {
        notes.push(format!(
            "{:.1} % of op time is in ops the capture's {} program(s) do not describe: counted as (unknown)",
            (1.0 - attributed) * 100.0,
            index.modules
        ));
    }
    notes.extend(index.notes.iter().cloned());
    Some(TimeBreakdown {
        op_time_us: us(total_ps),
        wall_time_us,
        steps: step_durations_ps.len(),
        parallelism,
        attributed,
        by_category: rows(category, total_ps),
        by_scope: rows(scope, total_ps),
        by_source: if any_source { rows(source, total_ps) } else { Vec::new() },
        notes,
    })
}

/// `op_name` without its last element (the primitive); the name itself when it has one element. A `/` inside
/// parentheses (`transpose(jvp(a/b))`) does not split.
fn scope_of(op_name: &str) -> String {
    let mut depth = 0i32;
    let mut cut = None;
    for (i, c) in op_name.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '/' if depth <= 0 => cut = Some(i),
            _ => {}
        }
    }
    match cut {
        Some(i) if i > 0 => op_name[..i].to_string(),
        _ => op_name.to_string(),
    }
}

fn rows(map: HashMap<String, (i64, usize)>, total_ps: i64) -> Vec<Share> {
    let mut all: Vec<(String, i64, usize)> = map.into_iter().map(|(k, (t, n))| (k, t, n)).collect();
    all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let share = |t: i64| t as f64 / total_ps as f64;
    let mut out: Vec<Share> = all
        .iter()
        .take(ROWS)
        .map(|(k, t, n)| Share { name: k.clone(), time_us: *t as f64 / 1e6, share: share(*t), ops: *n })
        .collect();
    if all.len() > ROWS {
        let rest = &all[ROWS..];
        let t = rest.iter().map(|r| r.1).fold(0, i64::saturating_add);
        out.push(Share {
            name: "(other)".into(),
            time_us: t as f64 / 1e6,
            share: share(t),
            ops: rest.iter().map(|r| r.2).sum(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::cpu_ops::CpuOpStats;
    use super::super::hlo::InstructionInfo;
    use super::*;

    fn op(name: &str, ps: i64) -> CpuOpStats {
        CpuOpStats { hlo_module: "m".into(), name: name.into(), total_time_ps: ps, ..Default::default() }
    }

    #[test]
    fn shares_sum_to_one_and_wall_time_is_set_beside_op_time() {
        let ops = CpuOpProfile {
            ops: (0..40).map(|i| op(&format!("f.{i}"), 1_000_000 * (i + 1))).collect(),
            ..Default::default()
        };
        let mut index = HloIndex { modules: 1, ..Default::default() };
        for i in 0..30 {
            let info = InstructionInfo {
                opcode: "fusion".into(),
                category: if i % 2 == 0 { "dot fusion".into() } else { "loop fusion".into() },
                op_name: Some(format!("jit(step)/layer{}/dot_general", i % 3)),
                source: Some(format!("model.py:{i}")),
            };
            index.instructions.insert(("m".into(), format!("f.{i}")), info);
        }
        let total: i64 = (1..=40).map(|i| 1_000_000 * i).sum();
        let b = time_breakdown(&ops, &index, &[total / 2]).unwrap();
        for rows in [&b.by_category, &b.by_scope, &b.by_source] {
            let s: f64 = rows.iter().map(|r| r.share).sum();
            assert!((s - 1.0).abs() < 1e-12, "{rows:?}");
            let ops: usize = rows.iter().map(|r| r.ops).sum();
            assert_eq!(ops, 40);
        }
        assert_eq!(b.by_source.len(), ROWS + 1, "25 rows and (other)");
        assert!(b.by_scope.iter().any(|r| r.name == "jit(step)/layer1"));
        assert!(b.by_category.iter().any(|r| r.name == "(unknown)"), "ops 30..39 are not described");
        assert!((b.parallelism.unwrap() - 2.0).abs() < 1e-9);
        assert!(b.notes[0].contains("several threads"), "{:?}", b.notes);
        assert!(b.attributed < 1.0 && b.notes.iter().any(|n| n.contains("(unknown)")));
        assert!(time_breakdown(&CpuOpProfile::default(), &index, &[]).is_none());
        let no_steps = time_breakdown(&ops, &HloIndex::default(), &[]).unwrap();
        assert!(no_steps.wall_time_us.is_none() && no_steps.by_source.is_empty());
        assert_eq!(scope_of("a/b/c"), "a/b");
        assert_eq!(scope_of("add"), "add");
        assert_eq!(scope_of("jit(step)/transpose(jvp(a/b))/dot_general"), "jit(step)/transpose(jvp(a/b))");
        assert_eq!(scope_of("jit(f/g)"), "jit(f/g)");
    }
}
