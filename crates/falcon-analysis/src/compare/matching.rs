//! Pairing the ops of two captures.
//!
//! XLA names ops `<base>.<n>` with a counter per base name, so one op added early in a program renumbers
//! every later op of that base: `fusion.44` in B may be A's `fusion.42`, and A's `fusion.44` may be a
//! different computation altogether. A name alone is therefore weak evidence; an op's identity is its
//! **fingerprint** (all from the profile, nothing else): program (HLO module name, not the program id,
//! which changes with every compilation), op name with every numeric suffix removed (`fusion.12.clone.3`
//! → `fusion.clone`), category, framework op (provenance) when the profile records it, and FLOPs and bytes
//! accessed when it has cost data — plus its **rank** within that group: by execution order where the
//! profile gives it (XLA:CPU op events), else by self time.
//!
//! Where the profile records when each op first ran (XLA:CPU captures), the ops of each program are laid
//! out in execution order on both sides and the two sequences of fingerprints are aligned with a
//! Myers diff (the algorithm of `diff`), so an op removed or added anywhere shifts nothing else. Then,
//! each tier seeing only the ops the tiers before it left unmatched:
//!
//! 1. **name**: same program and op name, when the alignment pairs them (or, without execution order,
//!    when they also have the same rank within their fingerprint group);
//! 2. **deduplicated name**: same program and XLA deduplicated name (ops XLA found to be the same
//!    computation share it), when both have one;
//! 3. **fingerprint**: pairs the alignment made between differently named ops (renumbered ones); then
//!    groups of program, base name, category, provenance, FLOPs and bytes, and then the same without FLOPs
//!    and bytes (a changed shape changes the costs, not the op), paired by rank;
//! 4. **name** again, for what is left: same program and op name.
//!
//! Within a grouping tier, ops with equal keys form a group on each side; each group is ordered by rank
//! and the i-th of A meets the i-th of B. Ops left after the last tier are removed (A only) or added
//! (B only).

use std::collections::BTreeMap;

use serde::Serialize;

/// One op of one capture, as the comparison sees it.
#[derive(Debug, Clone, Default)]
pub(crate) struct OpRow {
    /// HLO module (program) name; "" when unknown.
    pub module: String,
    pub name: String,
    /// XLA deduplicated name; "" when none.
    pub deduplicated_name: String,
    pub category: String,
    /// Framework op (e.g. JAX `jit(step)/jvp(...)/dot_general`); "" when the profile has none.
    pub provenance: String,
    /// Start of the first execution (comparable within one capture), when the profile records it.
    pub first_start_ps: Option<i128>,
    pub occurrences: u64,
    /// Self time, summed over occurrences (and hosts), picoseconds.
    pub self_time_ps: u64,
    /// FLOPs, summed over occurrences; `None` when the profile has no cost data.
    pub flops: Option<u64>,
    /// Bytes accessed, summed over occurrences; `None` when the profile has no cost data.
    pub bytes_accessed: Option<u64>,
    /// Roofline placement, when the profile has cost data.
    pub point: Option<OpPoint>,
}

/// An op's roofline placement.
#[derive(Debug, Clone, Default)]
pub(crate) struct OpPoint {
    /// FLOPs per byte accessed.
    pub operational_intensity: f64,
    /// GFLOP/s.
    pub flop_rate_gflops: f64,
    /// GiB/s.
    pub memory_bw_gibs: f64,
    pub bound_by: String,
}

/// Which tier matched a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchedBy {
    /// Program + op name.
    Name,
    /// Program + XLA deduplicated name.
    DeduplicatedName,
    /// Program, op name without numeric suffixes, category, provenance (FLOPs and bytes); by rank.
    Fingerprint,
}

/// The result of matching: pairs (index in A, index in B, tier), then the unmatched of each side.
#[derive(Debug, Default)]
pub(crate) struct Matching {
    pub pairs: Vec<(usize, usize, MatchedBy)>,
    pub removed: Vec<usize>,
    pub added: Vec<usize>,
}

/// `fusion.12.clone.3` → `fusion.clone`: the name with every dot-separated all-digit part removed.
pub(crate) fn strip_numeric_suffixes(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for part in name.split('.') {
        if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(part);
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tier {
    AlignedName,
    Aligned,
    RankedName,
    Deduplicated,
    FingerprintWithCosts,
    Fingerprint,
    Name,
}

impl Tier {
    fn matched_by(self) -> MatchedBy {
        match self {
            Tier::AlignedName | Tier::RankedName | Tier::Name => MatchedBy::Name,
            Tier::Aligned => MatchedBy::Fingerprint,
            Tier::Deduplicated => MatchedBy::DeduplicatedName,
            Tier::FingerprintWithCosts | Tier::Fingerprint => MatchedBy::Fingerprint,
        }
    }
}

type Key = (String, String, String, String, Option<u64>, Option<u64>, usize);

/// The group an op is ranked in: program, base name, category, provenance.
fn family(row: &OpRow) -> (String, String, String, String) {
    (row.module.clone(), strip_numeric_suffixes(&row.name), row.category.clone(), row.provenance.clone())
}

/// Execution order when every op of the group has a start, else self time (largest first); ties by name.
fn order_group(rows: &[OpRow], members: &mut [usize]) {
    if members.iter().all(|&i| rows[i].first_start_ps.is_some()) {
        members.sort_by(|&x, &y| {
            rows[x].first_start_ps.cmp(&rows[y].first_start_ps).then_with(|| rows[x].name.cmp(&rows[y].name))
        });
    } else {
        members.sort_by(|&x, &y| {
            rows[y].self_time_ps.cmp(&rows[x].self_time_ps).then_with(|| rows[x].name.cmp(&rows[y].name))
        });
    }
}

/// Each op's rank within its family (0 = first).
fn family_ranks(rows: &[OpRow]) -> Vec<usize> {
    let mut groups: BTreeMap<(String, String, String, String), Vec<usize>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        groups.entry(family(r)).or_default().push(i);
    }
    let mut rank = vec![0; rows.len()];
    for members in groups.values_mut() {
        order_group(rows, members);
        for (k, &i) in members.iter().enumerate() {
            rank[i] = k;
        }
    }
    rank
}

fn key_of(row: &OpRow, rank: usize, tier: Tier) -> Option<Key> {
    let s = String::new;
    match tier {
        Tier::AlignedName | Tier::Aligned => None,
        Tier::RankedName => Some((row.module.clone(), row.name.clone(), s(), s(), None, None, rank)),
        Tier::Name => Some((row.module.clone(), row.name.clone(), s(), s(), None, None, 0)),
        Tier::Deduplicated => (!row.deduplicated_name.is_empty())
            .then(|| (row.module.clone(), row.deduplicated_name.clone(), s(), s(), None, None, 0)),
        Tier::FingerprintWithCosts | Tier::Fingerprint => {
            let (module, base, category, provenance) = family(row);
            let costs = tier == Tier::FingerprintWithCosts;
            Some((
                module,
                base,
                category,
                provenance,
                row.flops.filter(|_| costs),
                row.bytes_accessed.filter(|_| costs),
                0,
            ))
        }
    }
}

/// Pairs the ops of `a` and `b` by aligning, per program, their fingerprints in execution order.
/// `None` when either side lacks execution order.
fn align(a: &[OpRow], b: &[OpRow]) -> Option<Vec<(usize, usize)>> {
    if a.iter().chain(b).any(|r| r.first_start_ps.is_none()) {
        return None;
    }
    fn by_module(rows: &[OpRow]) -> BTreeMap<&str, Vec<usize>> {
        let mut m: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, r) in rows.iter().enumerate() {
            m.entry(r.module.as_str()).or_default().push(i);
        }
        for members in m.values_mut() {
            members.sort_by(|&x, &y| {
                rows[x].first_start_ps.cmp(&rows[y].first_start_ps).then_with(|| rows[x].name.cmp(&rows[y].name))
            });
        }
        m
    }
    let (ma, mb) = (by_module(a), by_module(b));
    let mut pairs = Vec::new();
    for (module, ia) in &ma {
        let Some(ib) = mb.get(module) else { continue };
        let fa: Vec<_> = ia.iter().map(|&i| family(&a[i])).collect();
        let fb: Vec<_> = ib.iter().map(|&i| family(&b[i])).collect();
        for op in similar::capture_diff_slices(similar::Algorithm::Myers, &fa, &fb) {
            if let similar::DiffOp::Equal { old_index, new_index, len } = op {
                pairs.extend((0..len).map(|k| (ia[old_index + k], ib[new_index + k])));
            }
        }
    }
    Some(pairs)
}

/// Matches the ops of `a` with those of `b` (see the module docs).
pub(crate) fn match_ops(a: &[OpRow], b: &[OpRow]) -> Matching {
    let (rank_a, rank_b) = (family_ranks(a), family_ranks(b));
    let aligned = align(a, b);
    let mut a_free: Vec<bool> = vec![true; a.len()];
    let mut b_free: Vec<bool> = vec![true; b.len()];
    let mut pairs = Vec::new();
    let mut take = |ia: usize, ib: usize, by: MatchedBy, a_free: &mut Vec<bool>, b_free: &mut Vec<bool>| {
        a_free[ia] = false;
        b_free[ib] = false;
        pairs.push((ia, ib, by));
    };
    let tiers: &[Tier] = match &aligned {
        Some(_) => &[
            Tier::AlignedName,
            Tier::Deduplicated,
            Tier::Aligned,
            Tier::FingerprintWithCosts,
            Tier::Fingerprint,
            Tier::Name,
        ],
        None => &[Tier::RankedName, Tier::Deduplicated, Tier::FingerprintWithCosts, Tier::Fingerprint, Tier::Name],
    };
    for &tier in tiers {
        if let (Some(aligned), Tier::AlignedName | Tier::Aligned) = (&aligned, tier) {
            for &(ia, ib) in aligned {
                let same_name = a[ia].name == b[ib].name;
                if a_free[ia] && b_free[ib] && same_name == (tier == Tier::AlignedName) {
                    take(ia, ib, tier.matched_by(), &mut a_free, &mut b_free);
                }
            }
            continue;
        }
        let groups = |rows: &[OpRow], ranks: &[usize], free: &[bool]| {
            let mut g: BTreeMap<Key, Vec<usize>> = BTreeMap::new();
            for (i, row) in rows.iter().enumerate().filter(|(i, _)| free[*i]) {
                if let Some(k) = key_of(row, ranks[i], tier) {
                    g.entry(k).or_default().push(i);
                }
            }
            for members in g.values_mut() {
                order_group(rows, members);
            }
            g
        };
        let ga = groups(a, &rank_a, &a_free);
        let gb = groups(b, &rank_b, &b_free);
        for (k, members_a) in &ga {
            let Some(members_b) = gb.get(k) else { continue };
            for (&ia, &ib) in members_a.iter().zip(members_b) {
                take(ia, ib, tier.matched_by(), &mut a_free, &mut b_free);
            }
        }
    }
    Matching {
        pairs,
        removed: (0..a.len()).filter(|&i| a_free[i]).collect(),
        added: (0..b.len()).filter(|&i| b_free[i]).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(module: &str, name: &str, category: &str, ps: u64) -> OpRow {
        OpRow {
            module: module.into(),
            name: name.into(),
            category: category.into(),
            self_time_ps: ps,
            occurrences: 1,
            ..OpRow::default()
        }
    }

    #[test]
    fn numeric_suffixes_are_removed_wherever_they_are() {
        assert_eq!(strip_numeric_suffixes("fusion.12"), "fusion");
        assert_eq!(strip_numeric_suffixes("fusion.12.clone.3"), "fusion.clone");
        assert_eq!(strip_numeric_suffixes("broadcast_add_fusion"), "broadcast_add_fusion");
        assert_eq!(strip_numeric_suffixes("dot.v2"), "dot.v2");
        assert_eq!(strip_numeric_suffixes("copy.1.2"), "copy");
        assert_eq!(strip_numeric_suffixes("1.2"), "");
    }

    #[test]
    fn without_execution_order_renumbered_ops_pair_by_time_rank() {
        let a = vec![
            row("m", "dot.1", "dot", 100),
            row("m", "fusion.3", "loop fusion", 50),
            row("m", "fusion.4", "loop fusion", 10),
            row("m", "copy.1", "copy", 5),
        ];
        let b = vec![
            row("m", "dot.1", "dot", 120),
            row("m", "fusion.7", "loop fusion", 8),
            row("m", "fusion.6", "loop fusion", 60),
            row("m", "transpose.2", "transpose", 5),
        ];
        let m = match_ops(&a, &b);
        assert!(m.pairs.contains(&(0, 0, MatchedBy::Name)));
        // fusion.3 (50) is A's busiest renumbered fusion: it meets B's busiest, fusion.6 (60).
        assert!(m.pairs.contains(&(1, 2, MatchedBy::Fingerprint)));
        assert!(m.pairs.contains(&(2, 1, MatchedBy::Fingerprint)));
        assert_eq!(m.removed, vec![3]);
        assert_eq!(m.added, vec![3]);
    }

    #[test]
    fn other_programs_never_match_and_equal_costs_pair_first() {
        let mut a = vec![row("m1", "fusion.1", "f", 10), row("m1", "fusion.2", "f", 20)];
        let mut b = vec![row("m2", "fusion.1", "f", 10), row("m1", "fusion.8", "f", 5), row("m1", "fusion.9", "f", 50)];
        (a[0].flops, a[1].flops) = (Some(100), Some(200));
        (b[0].flops, b[1].flops, b[2].flops) = (Some(100), Some(200), Some(100));
        let m = match_ops(&a, &b);
        assert_eq!(m.pairs, vec![(0, 2, MatchedBy::Fingerprint), (1, 1, MatchedBy::Fingerprint)]);
        assert_eq!(m.added, vec![0]);
        assert!(m.removed.is_empty());
    }

    #[test]
    fn a_name_reused_by_another_computation_is_not_taken_at_its_word() {
        // XLA renumbering: B lost A's first fusion, so every later fusion of B carries the number of the
        // one before it in A. Execution order lines them up; names alone would pair each with a neighbour.
        let ordered = |names: &[(&str, &str)]| -> Vec<OpRow> {
            names
                .iter()
                .enumerate()
                .map(|(i, (n, c))| OpRow { first_start_ps: Some(i as i128 * 10), ..row("m", n, c, 7) })
                .collect()
        };
        let a = ordered(&[
            ("copy.1", "copy"),
            ("fusion.1", "f"),
            ("dot.1", "dot"),
            ("fusion.2", "f"),
            ("fusion.3", "f"),
            ("reduce.1", "r"),
        ]);
        let b =
            ordered(&[("copy.1", "copy"), ("dot.1", "dot"), ("fusion.1", "f"), ("fusion.2", "f"), ("reduce.1", "r")]);
        let m = match_ops(&a, &b);
        let mut pairs = m.pairs.clone();
        pairs.sort();
        assert_eq!(
            pairs,
            vec![
                (0, 0, MatchedBy::Name),
                (2, 1, MatchedBy::Name),
                (3, 2, MatchedBy::Fingerprint),
                (4, 3, MatchedBy::Fingerprint),
                (5, 4, MatchedBy::Name),
            ]
        );
        assert_eq!(m.removed, vec![1]);
        assert!(m.added.is_empty());
    }

    #[test]
    fn deduplicated_names_match_before_fingerprints() {
        let mut a = vec![row("m", "fusion.1", "f", 10)];
        let mut b = vec![row("m", "fusion.5", "f", 99), row("m", "fusion.8", "f", 3)];
        a[0].deduplicated_name = "fusion.0".into();
        b[1].deduplicated_name = "fusion.0".into();
        let m = match_ops(&a, &b);
        assert_eq!(m.pairs, vec![(0, 1, MatchedBy::DeduplicatedName)]);
        assert_eq!(m.added, vec![0]);
    }
}
