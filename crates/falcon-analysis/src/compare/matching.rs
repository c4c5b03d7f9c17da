//! Pairs the ops of two captures (A and B) and says how sure each pair is.
//!
//! XLA renumbers fusions and other ops from one compilation to the next, so the same name in A and B may
//! belong to different computations and the same computation may carry another name; and when the two
//! programs differ in structure (more layers, other shapes) some ops exist on one side only. A pair is made
//! only when the evidence says it is the same computation; everything else is `removed` (A only) or `added`
//! (B only), so a regression list never compares an op with an unrelated one.
//!
//! # What is known of an op
//!
//! Its program (HLO module), name, category, self time and occurrences; FLOPs and bytes (device profiles);
//! when it first ran (XLA:CPU, as its mean offset within a step), XLA's deduplicated name (device profiles)
//! and, when the capture holds its programs' `HloProto`s (JAX captures do), its signature: HLO opcode,
//! fusion kind, result shape, the opcodes a fusion fuses, framework op name and source line. Its **framework
//! op** is the signature's op name (`jit(step)/transpose(jvp())/dot_general`), else the profile's provenance.
//! Its **family** is (program, name without numeric suffixes, category, framework op); its **fine key** adds
//! the signature's opcode and fusion kind.
//!
//! # Alignment
//!
//! Where the profile records when each op first ran (XLA:CPU captures), the ops of each program are laid
//! out in execution order on both sides and the two sequences are aligned with a Myers diff (the algorithm
//! of `diff`), so an op removed or added anywhere shifts nothing else. The name tier aligns by fine key;
//! the fingerprint tier aligns again, by **exact key** (fine key, result shape and fused-op mix: the same
//! computation exactly) and by fine key, with every op already paired standing for its pair (it equals its
//! partner only), so the pairs made so far anchor the rest.
//!
//! # Tiers
//!
//! Each tier sees only the ops the tiers before it left unmatched:
//!
//! 1. **name**: same program and op name, when the alignment pairs them (without execution order: when they
//!    also have the same rank within their family, by self time);
//! 2. **deduplicated name**: same program and XLA deduplicated name (ops XLA found to be the same
//!    computation share it), when both have one;
//! 3. **fingerprint**: same family (renumbered ops, and ops whose shapes or costs changed);
//! 4. **name** again, for what is left: same program and op name.
//!
//! A name match (tiers 1 and 4) also needs the same opcode, fusion kind and framework op wherever both sides
//! know them: a name XLA gave to another computation is no name match. In tiers 2 and 3, every op of A
//! meets every op of B with the same key (a group of more than [`GROUP_PAIRS`] candidates: only its aligned
//! pairs and the ops of equal rank) and the candidates are taken by decreasing confidence, each op once;
//! ties go to a pair of the exact alignment, then of the fine alignment, then to the closer rank (execution
//! order, else self time).
//!
//! # Confidence
//!
//! Every pair carries a confidence in [0, 1]. A name match has **1**. Any other pair (deduplicated name or
//! fingerprint) has
//!
//! `confidence = S × (0.7 + 0.3 × N)` when both sides have execution order, else `confidence = S`,
//!
//! rounded to 6 decimals, and is made only when `confidence ≥ min_confidence` ([`MIN_CONFIDENCE`] = 0.8
//! unless the caller says otherwise); a candidate below it is left for the next tier, and an op no tier
//! pairs is added/removed. So with the threshold at 0.8, the same computation in new surroundings (S = 1,
//! N = 0: 0.7) is not enough, nor is an op whose shape changed (S = 0.9) unless most of its neighbours are
//! the same (N ≥ 0.63); and two ops of different framework ops lose at least 2.4 of the 10 weights (11 with
//! costs): S ≤ 0.782, below it whatever else agrees.
//!
//! **S, the similarity of the two computations**, is 0 when both signatures are known and the opcodes or
//! fusion kinds differ. Otherwise it is the weighted mean, over the parts both sides know, of
//!
//! | part | weight | similarity |
//! |---|---|---|
//! | family name (name without numeric suffixes, category) | 1 | 1 when equal, else 0 |
//! | framework op | 4 | 1 when equal, else 0.4 × the Dice coefficient of their `/`-separated parts |
//! | fused-op mix (opcode counts of a fusion's computations) | 2 | Σ min / Σ max over opcodes |
//! | result shape | 2 | 1 when equal; 0.5 with the same element types and ranks (sizes changed); else 0 |
//! | FLOPs and bytes per occurrence | 1 | the mean, over those both sides know, of min / max (1 when both are 0) |
//! | source line | 1 | 1 when equal, else 0 |
//!
//! **N, the agreement of the alignment neighbourhood**: an op's context is the fine keys of the up to
//! [`CONTEXT`] ops before it and [`CONTEXT`] after it in its program's execution order; N is the size of the
//! (multiset) intersection of the two contexts over the size of the larger one (1 when both are empty).
//! An op among the same neighbours in A and B scores 1; one whose surroundings are new scores near 0. When
//! each of the two ops is the only one of its family on its side, there is nothing else either could be, and
//! N is 1 whatever the neighbours (XLA:CPU runs ops on several threads, so the order of a step's ops, and
//! with it the neighbours of an op, can change between runs).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::compare::signature::Signature;

/// The confidence below which two ops are not paired (see the module docs).
pub const MIN_CONFIDENCE: f64 = 0.8;

/// Ops on each side of an op that make its neighbourhood.
pub const CONTEXT: usize = 3;

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
    /// What the capture's programs say about the op's computation.
    pub signature: Option<Signature>,
}

impl OpRow {
    /// The framework op: the signature's op name, else the profile's provenance; "" when neither.
    fn framework_op(&self) -> &str {
        self.signature.as_ref().and_then(|s| s.op_name.as_deref()).unwrap_or(&self.provenance)
    }
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MatchedBy {
    /// Program + op name (+ the same opcode, fusion kind and framework op where known).
    Name,
    /// Program + XLA deduplicated name.
    DeduplicatedName,
    /// The same family (program, base name, category, framework op); scored (see the module docs).
    Fingerprint,
}

/// One pair: index in A, index in B, the tier, the confidence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Pair {
    pub a: usize,
    pub b: usize,
    pub by: MatchedBy,
    pub confidence: f64,
}

/// The result of matching: pairs, then the unmatched of each side.
#[derive(Debug, Default)]
pub(crate) struct Matching {
    pub pairs: Vec<Pair>,
    pub removed: Vec<usize>,
    pub added: Vec<usize>,
    /// Ops of A left unmatched that some tier offered a candidate in B scoring below the threshold.
    pub rejected: usize,
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
    RankedName,
    Deduplicated,
    Fingerprint,
    Name,
}

impl Tier {
    fn matched_by(self) -> MatchedBy {
        match self {
            Tier::AlignedName | Tier::RankedName | Tier::Name => MatchedBy::Name,
            Tier::Deduplicated => MatchedBy::DeduplicatedName,
            Tier::Fingerprint => MatchedBy::Fingerprint,
        }
    }

    fn is_name(self) -> bool {
        self.matched_by() == MatchedBy::Name
    }
}

/// A grouping tier's key: program, then name, deduplicated name or the rest of the family, then a rank.
type Key = (String, String, String, String, usize);

/// The group an op is ranked in: program, base name, category, framework op.
fn family(row: &OpRow) -> (String, String, String, String) {
    (row.module.clone(), strip_numeric_suffixes(&row.name), row.category.clone(), row.framework_op().to_string())
}

/// The family without the program, with the signature's opcode and fusion kind: what alignment and
/// neighbourhoods compare.
type FineKey = (String, String, String, String, String);

/// The fine key with the signature's result shape and fused-op mix: what is the same computation exactly.
type ExactKey = (FineKey, Option<Vec<(i32, Vec<i64>)>>, Vec<(String, u32)>);

fn exact_key(row: &OpRow) -> ExactKey {
    let sig = row.signature.as_ref();
    (
        fine_key(row),
        sig.and_then(|s| s.shape.clone()),
        sig.map_or_else(Vec::new, |s| s.fused_ops.iter().map(|(k, v)| (k.clone(), *v)).collect()),
    )
}

fn fine_key(row: &OpRow) -> FineKey {
    let (_, base, category, op) = family(row);
    let (opcode, kind) =
        row.signature.as_ref().map_or((String::new(), String::new()), |s| (s.opcode.clone(), s.fusion_kind.clone()));
    (base, category, op, opcode, kind)
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
        Tier::AlignedName => None,
        Tier::RankedName => Some((row.module.clone(), row.name.clone(), s(), s(), rank)),
        Tier::Name => Some((row.module.clone(), row.name.clone(), s(), s(), 0)),
        Tier::Deduplicated => (!row.deduplicated_name.is_empty())
            .then(|| (row.module.clone(), row.deduplicated_name.clone(), s(), s(), 0)),
        Tier::Fingerprint => {
            let (module, base, category, op) = family(row);
            Some((module, base, category, op, 0))
        }
    }
}

/// Whether two ops with the same name are the same kind of computation: the same opcode and fusion kind
/// (when both signatures are known) and framework op (when both know one).
fn name_compatible(a: &OpRow, b: &OpRow) -> bool {
    if let (Some(x), Some(y)) = (&a.signature, &b.signature) {
        if x.opcode != y.opcode || x.fusion_kind != y.fusion_kind {
            return false;
        }
    }
    let (x, y) = (a.framework_op(), b.framework_op());
    x.is_empty() || y.is_empty() || x == y
}

/// Dice coefficient of two multisets given as sorted slices (1 when both are empty).
fn dice<T: Ord>(x: &[T], y: &[T]) -> f64 {
    if x.is_empty() && y.is_empty() {
        return 1.0;
    }
    2.0 * common(x, y) as f64 / (x.len() + y.len()) as f64
}

/// Size of the intersection of two multisets given as sorted slices.
fn common<T: Ord>(x: &[T], y: &[T]) -> usize {
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    common
}

fn ratio(x: f64, y: f64) -> f64 {
    if x == y {
        1.0
    } else if x <= 0.0 || y <= 0.0 {
        0.0
    } else {
        x.min(y) / x.max(y)
    }
}

/// S of the module docs: how alike the two ops' computations are, in [0, 1].
pub(crate) fn computation_similarity(a: &OpRow, b: &OpRow) -> f64 {
    let (mut sum, mut weight) = (0.0, 0.0);
    let mut part = |w: f64, sim: f64| {
        sum += w * sim;
        weight += w;
    };
    let same_family = strip_numeric_suffixes(&a.name) == strip_numeric_suffixes(&b.name) && a.category == b.category;
    part(1.0, if same_family { 1.0 } else { 0.0 });
    let (oa, ob) = (a.framework_op(), b.framework_op());
    if !oa.is_empty() && !ob.is_empty() {
        let sim = if oa == ob {
            1.0
        } else {
            let mut pa: Vec<&str> = oa.split('/').collect();
            let mut pb: Vec<&str> = ob.split('/').collect();
            pa.sort_unstable();
            pb.sort_unstable();
            0.4 * dice(&pa, &pb)
        };
        part(4.0, sim);
    }
    if let (Some(x), Some(y)) = (&a.signature, &b.signature) {
        if x.opcode != y.opcode || x.fusion_kind != y.fusion_kind {
            return 0.0;
        }
        if !x.fused_ops.is_empty() || !y.fused_ops.is_empty() {
            let (mut min, mut max) = (0u64, 0u64);
            let mut keys: Vec<&String> = x.fused_ops.keys().chain(y.fused_ops.keys()).collect();
            keys.sort_unstable();
            keys.dedup();
            for k in keys {
                let (p, q) = (x.fused_ops.get(k).copied().unwrap_or(0), y.fused_ops.get(k).copied().unwrap_or(0));
                min += u64::from(p.min(q));
                max += u64::from(p.max(q));
            }
            part(2.0, if max == 0 { 1.0 } else { min as f64 / max as f64 });
        }
        if let (Some(sx), Some(sy)) = (&x.shape, &y.shape) {
            let sim = if sx == sy {
                1.0
            } else if sx.len() == sy.len() && sx.iter().zip(sy).all(|(p, q)| p.0 == q.0 && p.1.len() == q.1.len()) {
                0.5
            } else {
                0.0
            };
            part(2.0, sim);
        }
        if let (Some(sx), Some(sy)) = (&x.source, &y.source) {
            part(1.0, if sx == sy { 1.0 } else { 0.0 });
        }
    }
    let per = |v: u64, n: u64| v as f64 / n.max(1) as f64;
    let costs: Vec<f64> = [(a.flops, b.flops), (a.bytes_accessed, b.bytes_accessed)]
        .into_iter()
        .filter_map(|(x, y)| Some(ratio(per(x?, a.occurrences), per(y?, b.occurrences))))
        .collect();
    if !costs.is_empty() {
        part(1.0, costs.iter().sum::<f64>() / costs.len() as f64);
    }
    if weight > 0.0 {
        sum / weight
    } else {
        0.0
    }
}

/// Each program's ops in execution order. `None` when some op lacks a start.
fn by_module(rows: &[OpRow]) -> Option<BTreeMap<&str, Vec<usize>>> {
    if rows.iter().any(|r| r.first_start_ps.is_none()) {
        return None;
    }
    let mut m: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        m.entry(r.module.as_str()).or_default().push(i);
    }
    for members in m.values_mut() {
        members.sort_by(|&x, &y| {
            rows[x].first_start_ps.cmp(&rows[y].first_start_ps).then_with(|| rows[x].name.cmp(&rows[y].name))
        });
    }
    Some(m)
}

/// What scoring needs of both sides: fine-key ids, each op's neighbourhood (sorted fine-key ids) and
/// each program's execution order.
struct Scorer<'r> {
    a: &'r [OpRow],
    b: &'r [OpRow],
    /// Per side: fine-key id of each op.
    keys: [Vec<u32>; 2],
    /// Per side: exact-key id of each op.
    exact: [Vec<u32>; 2],
    /// Per side: each op's context (sorted fine-key ids); empty without execution order.
    context: [Vec<Vec<u32>>; 2],
    /// Per side: whether the op is the only one of its family.
    unique: [Vec<bool>; 2],
    order: [Option<BTreeMap<&'r str, Vec<usize>>>; 2],
}

impl<'r> Scorer<'r> {
    fn new(a: &'r [OpRow], b: &'r [OpRow]) -> Scorer<'r> {
        let mut ids: HashMap<FineKey, u32> = HashMap::new();
        let mut intern = |rows: &[OpRow]| -> Vec<u32> {
            rows.iter()
                .map(|r| {
                    let next = ids.len() as u32;
                    *ids.entry(fine_key(r)).or_insert(next)
                })
                .collect()
        };
        let keys = [intern(a), intern(b)];
        let mut exact_ids: HashMap<ExactKey, u32> = HashMap::new();
        let mut intern_exact = |rows: &[OpRow]| -> Vec<u32> {
            rows.iter()
                .map(|r| {
                    let next = exact_ids.len() as u32;
                    *exact_ids.entry(exact_key(r)).or_insert(next)
                })
                .collect()
        };
        let exact = [intern_exact(a), intern_exact(b)];
        let order = [by_module(a), by_module(b)];
        let ordered = order[0].is_some() && order[1].is_some();
        let mut context: [Vec<Vec<u32>>; 2] = [Vec::new(), Vec::new()];
        if ordered {
            for side in 0..2 {
                let n = if side == 0 { a.len() } else { b.len() };
                context[side] = vec![Vec::new(); n];
                for seq in order[side].as_ref().into_iter().flat_map(|m| m.values()) {
                    for (p, &i) in seq.iter().enumerate() {
                        let lo = p.saturating_sub(CONTEXT);
                        let hi = (p + CONTEXT + 1).min(seq.len());
                        let mut ctx: Vec<u32> = (lo..hi).filter(|&q| q != p).map(|q| keys[side][seq[q]]).collect();
                        ctx.sort_unstable();
                        context[side][i] = ctx;
                    }
                }
            }
        }
        let unique = [a, b].map(|rows| {
            let mut count: HashMap<(String, String, String, String), usize> = HashMap::new();
            for r in rows {
                *count.entry(family(r)).or_default() += 1;
            }
            rows.iter().map(|r| count[&family(r)] == 1).collect()
        });
        Scorer { a, b, keys, exact, context, unique, order }
    }

    fn ordered(&self) -> bool {
        self.order[0].is_some() && self.order[1].is_some()
    }

    /// N of the module docs.
    fn neighbourhood(&self, ia: usize, ib: usize) -> f64 {
        let (x, y) = (&self.context[0][ia], &self.context[1][ib]);
        if x.is_empty() && y.is_empty() || self.unique[0][ia] && self.unique[1][ib] {
            return 1.0;
        }
        common(x, y) as f64 / x.len().max(y.len()) as f64
    }

    fn confidence(&self, ia: usize, ib: usize) -> f64 {
        let s = computation_similarity(&self.a[ia], &self.b[ib]);
        let c = if self.ordered() { s * (0.7 + 0.3 * self.neighbourhood(ia, ib)) } else { s };
        // Rounded, so that exact fractions compare with the threshold as written (1 × (0.7 + 0.3 × 1/3) is 0.8).
        (c * 1e6).round() / 1e6
    }

    /// Pairs of free ops in the alignment of each program's ops in execution order, by fine keys or by exact
    /// keys; an op already paired is an anchor that only its partner equals. `None` without order.
    fn align(&self, paired: &[Vec<Option<u32>>; 2], exact: bool) -> Option<Vec<(usize, usize)>> {
        let (Some(ma), Some(mb)) = (&self.order[0], &self.order[1]) else { return None };
        let keys = if exact { &self.exact } else { &self.keys };
        // Key ids count up from 0, anchors down from u32::MAX: they never meet.
        let token = |side: usize, i: usize| paired[side][i].map_or(keys[side][i], |k| u32::MAX - k);
        let mut pairs = Vec::new();
        for (module, ia) in ma {
            let Some(ib) = mb.get(module) else { continue };
            let fa: Vec<u32> = ia.iter().map(|&i| token(0, i)).collect();
            let fb: Vec<u32> = ib.iter().map(|&i| token(1, i)).collect();
            for op in similar::capture_diff_slices(similar::Algorithm::Myers, &fa, &fb) {
                if let similar::DiffOp::Equal { old_index, new_index, len } = op {
                    let free =
                        |k: &usize| paired[0][ia[old_index + k]].is_none() && paired[1][ib[new_index + k]].is_none();
                    pairs.extend((0..len).filter(free).map(|k| (ia[old_index + k], ib[new_index + k])));
                }
            }
        }
        Some(pairs)
    }
}

/// Most candidate pairs one group scores; a larger group offers only its aligned pairs and its ops paired
/// by rank.
pub const GROUP_PAIRS: usize = 250_000;

/// A candidate pair of a grouping tier, in the order they are offered: best confidence first, then a pair
/// of the exact alignment, then of the fine alignment, then the closer rank, then A's and B's rank.
struct Candidate {
    confidence: f64,
    /// 0: the alignment by exact key made it; 1: the alignment by fine key did; 2: neither.
    aligned: u8,
    rank_gap: usize,
    ra: usize,
    rb: usize,
}

/// Matches the ops of `a` with those of `b`, pairing only what scores at least `min_confidence` (see the
/// module docs).
pub(crate) fn match_ops(a: &[OpRow], b: &[OpRow], min_confidence: f64) -> Matching {
    let scorer = Scorer::new(a, b);
    let (rank_a, rank_b) = (family_ranks(a), family_ranks(b));
    // The pair each op is in (its index in `pairs`), `None` while it is free.
    let mut paired: [Vec<Option<u32>>; 2] = [vec![None; a.len()], vec![None; b.len()]];
    let mut a_rejected: Vec<bool> = vec![false; a.len()];
    let mut pairs: Vec<Pair> = Vec::new();
    // Offers a pair: made when both ops are free and it scores enough; a name match scores 1.
    let mut offer = |ia: usize, ib: usize, tier: Tier, scored: Option<f64>, paired: &mut [Vec<Option<u32>>; 2]| {
        if paired[0][ia].is_some() || paired[1][ib].is_some() {
            return;
        }
        let confidence = if tier.is_name() { 1.0 } else { scored.unwrap_or_else(|| scorer.confidence(ia, ib)) };
        if tier.is_name() || confidence >= min_confidence {
            let k = Some(pairs.len() as u32);
            (paired[0][ia], paired[1][ib]) = (k, k);
            pairs.push(Pair { a: ia, b: ib, by: tier.matched_by(), confidence });
        } else {
            a_rejected[ia] = true;
        }
    };
    let tiers: &[Tier] = if scorer.ordered() {
        &[Tier::AlignedName, Tier::Deduplicated, Tier::Fingerprint, Tier::Name]
    } else {
        &[Tier::RankedName, Tier::Deduplicated, Tier::Fingerprint, Tier::Name]
    };
    for &tier in tiers {
        // An infinite threshold asks for names only (kernels: `compare::kernel_rows`).
        if tier == Tier::Fingerprint && min_confidence.is_infinite() {
            continue;
        }
        if tier == Tier::AlignedName {
            for (ia, ib) in scorer.align(&paired, false).unwrap_or_default() {
                if a[ia].name == b[ib].name {
                    offer(ia, ib, tier, None, &mut paired);
                }
            }
            continue;
        }
        // The alignments the fingerprint tier prefers on ties, anchored on the pairs made so far.
        let mut aligned: HashMap<(usize, usize), u8> = HashMap::new();
        if tier == Tier::Fingerprint {
            for (exact, rank) in [(true, 0u8), (false, 1u8)] {
                for pair in scorer.align(&paired, exact).unwrap_or_default() {
                    aligned.entry(pair).or_insert(rank);
                }
            }
        }
        let groups = |rows: &[OpRow], ranks: &[usize], paired: &[Option<u32>]| {
            let mut g: BTreeMap<Key, Vec<usize>> = BTreeMap::new();
            for (i, row) in rows.iter().enumerate().filter(|(i, _)| paired[*i].is_none()) {
                if let Some(k) = key_of(row, ranks[i], tier) {
                    g.entry(k).or_default().push(i);
                }
            }
            for members in g.values_mut() {
                order_group(rows, members);
            }
            g
        };
        let ga = groups(a, &rank_a, &paired[0]);
        let gb = groups(b, &rank_b, &paired[1]);
        for (k, members_a) in &ga {
            let Some(members_b) = gb.get(k) else { continue };
            if tier.is_name() {
                for (&ia, &ib) in members_a.iter().zip(members_b) {
                    if name_compatible(&a[ia], &b[ib]) {
                        offer(ia, ib, tier, None, &mut paired);
                    }
                }
                continue;
            }
            let mut pairs_of_group: Vec<(usize, usize)> = Vec::new();
            if members_a.len().saturating_mul(members_b.len()) <= GROUP_PAIRS {
                for ra in 0..members_a.len() {
                    pairs_of_group.extend((0..members_b.len()).map(|rb| (ra, rb)));
                }
            } else {
                let rank_in = |members: &[usize]| -> HashMap<usize, usize> {
                    members.iter().enumerate().map(|(r, &i)| (i, r)).collect()
                };
                let (in_a, in_b) = (rank_in(members_a), rank_in(members_b));
                pairs_of_group.extend((0..members_a.len().min(members_b.len())).map(|r| (r, r)));
                pairs_of_group.extend(aligned.keys().filter_map(|(ia, ib)| Some((*in_a.get(ia)?, *in_b.get(ib)?))));
            }
            let mut candidates: Vec<Candidate> = pairs_of_group
                .into_iter()
                .map(|(ra, rb)| {
                    let (ia, ib) = (members_a[ra], members_b[rb]);
                    let aligned = aligned.get(&(ia, ib)).copied().unwrap_or(2);
                    Candidate { confidence: scorer.confidence(ia, ib), aligned, rank_gap: ra.abs_diff(rb), ra, rb }
                })
                .collect();
            candidates.sort_by(|x, y| {
                y.confidence
                    .total_cmp(&x.confidence)
                    .then(x.aligned.cmp(&y.aligned))
                    .then(x.rank_gap.cmp(&y.rank_gap))
                    .then(x.ra.cmp(&y.ra))
                    .then(x.rb.cmp(&y.rb))
            });
            for c in candidates {
                offer(members_a[c.ra], members_b[c.rb], tier, Some(c.confidence), &mut paired);
            }
        }
    }
    let removed: Vec<usize> = (0..a.len()).filter(|&i| paired[0][i].is_none()).collect();
    Matching {
        rejected: removed.iter().filter(|&&i| a_rejected[i]).count(),
        pairs,
        removed,
        added: (0..b.len()).filter(|&i| paired[1][i].is_none()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pairs as (A, B, tier), sorted.
    fn pairs(m: &Matching) -> Vec<(usize, usize, MatchedBy)> {
        let mut p: Vec<_> = m.pairs.iter().map(|p| (p.a, p.b, p.by)).collect();
        p.sort();
        p
    }

    fn run(a: &[OpRow], b: &[OpRow]) -> Matching {
        match_ops(a, b, MIN_CONFIDENCE)
    }

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
        let m = run(&a, &b);
        // fusion.3 (50) is A's busiest renumbered fusion: it meets B's busiest, fusion.6 (60).
        assert_eq!(
            pairs(&m),
            vec![(0, 0, MatchedBy::Name), (1, 2, MatchedBy::Fingerprint), (2, 1, MatchedBy::Fingerprint)]
        );
        assert!(m.pairs.iter().all(|p| p.confidence == 1.0), "nothing tells the fusions apart but their family");
        assert_eq!(m.removed, vec![3]);
        assert_eq!(m.added, vec![3]);
    }

    #[test]
    fn other_programs_never_match_and_equal_costs_pair_first() {
        let mut a = vec![row("m1", "fusion.1", "f", 10), row("m1", "fusion.2", "f", 20)];
        let mut b = vec![row("m2", "fusion.1", "f", 10), row("m1", "fusion.8", "f", 5), row("m1", "fusion.9", "f", 50)];
        (a[0].flops, a[1].flops) = (Some(100), Some(200));
        (b[0].flops, b[1].flops, b[2].flops) = (Some(100), Some(200), Some(100));
        let m = run(&a, &b);
        assert_eq!(pairs(&m), vec![(0, 2, MatchedBy::Fingerprint), (1, 1, MatchedBy::Fingerprint)]);
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
        let m = run(&a, &b);
        assert_eq!(
            pairs(&m),
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
        let m = run(&a, &b);
        assert_eq!(pairs(&m), vec![(0, 1, MatchedBy::DeduplicatedName)]);
        assert_eq!(m.added, vec![0]);
    }

    fn sig(opcode: &str, op_name: &str, dims: &[i64], fused: &[(&str, u32)]) -> Signature {
        Signature {
            opcode: opcode.into(),
            fusion_kind: if opcode == "fusion" { "Loop".into() } else { String::new() },
            op_name: (!op_name.is_empty()).then(|| op_name.to_string()),
            source: Some("train.py:7".into()),
            shape: Some(vec![(11, dims.to_vec())]),
            fused_ops: fused.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    fn with(mut r: OpRow, s: Signature) -> OpRow {
        r.signature = Some(s);
        r
    }

    #[test]
    fn computation_similarity_is_the_documented_weighted_mean() {
        let base = sig("fusion", "jit(step)/jvp()/add", &[8, 64], &[("add", 2), ("multiply", 1)]);
        let x = with(row("m", "fusion.1", "fusion", 1), base.clone());
        let same = |s: Signature| computation_similarity(&x, &with(row("m", "fusion.9", "fusion", 1), s));
        assert_eq!(same(base.clone()), 1.0);
        // Weights: family 1, framework op 4, fused ops 2, shape 2, source 1 (no costs on either side).
        let sizes = Signature { shape: Some(vec![(11, vec![16, 64])]), ..base.clone() };
        assert!((same(sizes) - 9.0 / 10.0).abs() < 1e-12, "a changed size halves the shape part");
        let rank = Signature { shape: Some(vec![(11, vec![512])]), ..base.clone() };
        assert!((same(rank) - 8.0 / 10.0).abs() < 1e-12);
        let fused = Signature { fused_ops: [("add".to_string(), 2)].into(), ..base.clone() };
        assert!((same(fused) - (8.0 + 2.0 * 2.0 / 3.0) / 10.0).abs() < 1e-12, "Σmin/Σmax = 2/3");
        // jit(step)/jvp()/add vs jit(step)/transpose(jvp())/mul: Dice of parts 1/3, times 0.4.
        let other_op = Signature { op_name: Some("jit(step)/transpose(jvp())/mul".into()), ..base.clone() };
        assert!((same(other_op) - (6.0 + 4.0 * 0.4 / 3.0) / 10.0).abs() < 1e-12);
        // The same parts in another order: the most a different framework op scores, below the threshold.
        let reordered = Signature { op_name: Some("jvp()/jit(step)/add".into()), ..base.clone() };
        assert!((same(reordered) - 0.76).abs() < 1e-12);
        let other_opcode = Signature { opcode: "dot".into(), fusion_kind: String::new(), ..base.clone() };
        assert_eq!(same(other_opcode), 0.0);
        let other_kind = Signature { fusion_kind: "Custom".into(), ..base.clone() };
        assert_eq!(same(other_kind), 0.0);
        // Without signatures: family and provenance; costs per occurrence.
        let mut p = row("m", "fusion.1", "f", 1);
        let mut q = row("m", "fusion.2", "f", 1);
        (p.provenance, q.provenance) = ("jit(f)/add".into(), "jit(f)/add".into());
        (p.flops, p.bytes_accessed, p.occurrences) = (Some(100), Some(40), 1);
        (q.flops, q.bytes_accessed, q.occurrences) = (Some(400), Some(80), 2);
        // FLOPs per occurrence 100 vs 200 (0.5), bytes 40 vs 40 (1).
        assert!((computation_similarity(&p, &q) - (1.0 + 4.0 + 0.75) / 6.0).abs() < 1e-12);
        q.category = "g".into();
        assert!((computation_similarity(&p, &q) - (4.0 + 0.75) / 6.0).abs() < 1e-12);
    }

    fn ordered(rows: Vec<OpRow>) -> Vec<OpRow> {
        rows.into_iter().enumerate().map(|(i, r)| OpRow { first_start_ps: Some(i as i128 * 10), ..r }).collect()
    }

    #[test]
    fn an_op_of_another_computation_is_not_paired_whatever_its_name() {
        // The issue's case: B's ynn_fusion.70 is a dot, A's ynn_fusion.38 a reduction; fusion.3 names a multiply
        // in A and an add in B. None of them is a pair: A's are removed, B's added.
        let f = |n: &str, op: &str, fused: &[(&str, u32)]| {
            with(row("m", n, "fusion", 5), sig("fusion", &format!("jit(step)/{op}"), &[8, 64], fused))
        };
        let a = ordered(vec![
            f("copy_fusion", "copy", &[("copy", 1)]),
            f("ynn_fusion.38", "reduce_sum", &[("reduce", 1)]),
            f("fusion.3", "mul", &[("multiply", 1)]),
            f("exp_fusion", "exp", &[("exponential", 1)]),
        ]);
        let b = ordered(vec![
            f("copy_fusion", "copy", &[("copy", 1)]),
            f("ynn_fusion.70", "dot_general", &[("dot", 1)]),
            f("fusion.3", "add", &[("add", 1)]),
            f("exp_fusion", "exp", &[("exponential", 1)]),
        ]);
        let m = run(&a, &b);
        assert_eq!(pairs(&m), vec![(0, 0, MatchedBy::Name), (3, 3, MatchedBy::Name)]);
        assert_eq!((m.removed, m.added), (vec![1, 2], vec![1, 2]));
    }

    #[test]
    fn a_family_look_alike_in_new_surroundings_is_below_the_threshold() {
        // No signatures (a capture without HLO): two fusions on each side, renumbered. B's first fusion sits
        // among ops A never ran (N = 0): 1 × (0.7 + 0.3 × 0) < 0.8. B's second shares A's first's neighbours.
        let r = |n: &str, c: &str| row("m", n, c, 3);
        let a = ordered(vec![r("copy.1", "copy"), r("fusion.1", "fusion"), r("dot.1", "dot"), r("fusion.2", "fusion")]);
        let b = ordered(vec![
            r("sort.1", "sort"),
            r("fusion.7", "fusion"),
            r("scatter.1", "scatter"),
            r("iota.1", "iota"),
            r("gather.1", "gather"),
            r("rng.1", "rng"),
            r("copy.1", "copy"),
            r("fusion.8", "fusion"),
            r("dot.1", "dot"),
        ]);
        let m = run(&a, &b);
        assert_eq!(pairs(&m), vec![(0, 6, MatchedBy::Name), (1, 7, MatchedBy::Fingerprint), (2, 8, MatchedBy::Name)]);
        assert_eq!((m.removed.as_slice(), m.added.as_slice()), ([3].as_slice(), [0, 1, 2, 3, 4, 5].as_slice()));
        assert_eq!(m.rejected, 1, "A's fusion.2 had B's fusion.7 as a candidate, below the threshold");
        // With no threshold, the look-alikes pair; with a threshold of 1, only the sure pairs do.
        assert!(pairs(&match_ops(&a, &b, 0.0)).contains(&(3, 1, MatchedBy::Fingerprint)));
        let sure = match_ops(&a, &b, 1.0);
        assert!(sure.pairs.iter().all(|p| p.confidence == 1.0));
    }

    #[test]
    fn within_a_group_the_exact_shape_wins() {
        // No execution order: Adam's update of a [64, 256] weight meets both of B's updates; the one of the same
        // shape is the pair, the other is new in B.
        let upd = |n: &str, dims: &[i64]| {
            with(row("m", n, "fusion", 4), sig("fusion", "jit(step)/add", dims, &[("add", 1), ("multiply", 3)]))
        };
        let a = vec![upd("multiply_add_fusion.1", &[64, 256])];
        let b = vec![upd("multiply_add_fusion.9", &[64, 192]), upd("multiply_add_fusion.8", &[64, 256])];
        let m = run(&a, &b);
        assert_eq!(pairs(&m), vec![(0, 1, MatchedBy::Fingerprint)]);
        assert_eq!(m.pairs[0].confidence, 1.0);
        assert_eq!(m.added, vec![0]);
    }

    #[test]
    fn a_group_too_large_to_score_every_pair_pairs_by_rank() {
        // 501 × 502 candidates > GROUP_PAIRS: each op of A meets only B's op of the same rank (by self time).
        let rows = |n: u64, prefix: u64| -> Vec<OpRow> {
            (0..n).map(|i| row("m", &format!("copy.{}", prefix + i), "copy", 10_000 - i)).collect()
        };
        let (a, b) = (rows(501, 0), rows(502, 1000));
        assert!(a.len() * b.len() > GROUP_PAIRS);
        let m = run(&a, &b);
        assert_eq!(m.pairs.len(), 501);
        assert!(m.pairs.iter().all(|p| p.a == p.b && p.by == MatchedBy::Fingerprint && p.confidence == 1.0));
        assert_eq!(m.added, vec![501]);
    }
}
