//! Aligning two runs' metric series by step and comparing them with tolerances (A is the reference).
//!
//! Names are matched through a built-in map of equivalence classes (Megatron `lm loss` ↔ MaxText
//! `learning/lm_loss`, Megatron's pre-clip `grad norm`/`grad-norm` ↔ MaxText `learning/raw_grad_norm`, …),
//! with the user's `A_NAME=B_NAME` pairs taking precedence. Steps are matched after a step offset (MaxText
//! counts steps from 0, Megatron iterations from 1: the MaxText side is shifted by +1 automatically). A value
//! that is a mean over a window of iterations (Megatron's stdout `lm loss`) is compared with the other
//! side's values averaged over the same window. Each compared step passes when `|b − a| ≤ atol + rtol·|a|`
//! (numpy `isclose` with A as the reference, as Megatron's golden-values gate); NaN or infinity on either
//! side fails. Default tolerances follow Megatron's functional tests: rtol 0.05 (loss, step time, memory,
//! everything else), 0.20 for `num-zeros`, atol 0.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Serialize, Serializer};

use super::names::{class_of, is_loss_name, scale_of, CLASSES};
use crate::accuracy::{RunSeries, Series, SourceFormat};
use crate::error::{AnalysisError, Result};

pub use super::names::{DEFAULT_RTOL, NUM_ZEROS_RTOL};

/// How to align and compare two runs.
#[derive(Debug, Clone, Default)]
pub struct AlignOptions {
    /// Metrics to compare, by either side's name or a canonical name; empty: the loss metrics found on
    /// both sides (and the pairs of `map`).
    pub metrics: Vec<String>,
    /// Relative tolerance for every compared metric (default: per metric).
    pub rtol: Option<f64>,
    /// Absolute tolerance for every compared metric (default 0).
    pub atol: Option<f64>,
    /// Extra name pairs `(A_NAME, B_NAME)`, applied before the built-in map.
    pub map: Vec<(String, String)>,
    /// Added to B's steps before matching. `None`: automatic (+1 on the MaxText side when the other side
    /// is Megatron-LM, else 0); `Some(k)`: exactly `k`, nothing automatic.
    pub b_step_offset: Option<i64>,
}

/// A verdict: of one metric, or of the whole comparison (`pass` or `fail` only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
    /// No step in common: nothing was compared.
    NoOverlap,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::NoOverlap => "no_overlap",
        }
    }
}

/// One input of the comparison.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SideInfo {
    /// The input as read.
    pub path: String,
    pub format: SourceFormat,
    /// Number of series read.
    pub series: usize,
    /// Added to this side's steps before matching (the `step` of every point below is shifted).
    pub step_offset: i64,
}

/// One compared step.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct AlignedPoint {
    /// The step, in the shifted numbering.
    pub step: i64,
    /// A's value (after unit conversion, and averaging over B's window when B's value is a mean).
    #[schemars(with = "Option<f64>")]
    #[serde(serialize_with = "finite_or_null")]
    pub a: f64,
    #[schemars(with = "Option<f64>")]
    #[serde(serialize_with = "finite_or_null")]
    pub b: f64,
    /// `|b − a|`.
    #[schemars(with = "Option<f64>")]
    #[serde(serialize_with = "finite_or_null")]
    pub abs_err: f64,
    /// `|b − a| / |a|` (infinite when `a` is 0 and `b` is not).
    #[schemars(with = "Option<f64>")]
    #[serde(serialize_with = "finite_or_null")]
    pub rel_err: f64,
    /// `|b − a| ≤ atol + rtol·|a|`, both finite.
    pub pass: bool,
}

/// The comparison of one metric.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct MetricAlignment {
    /// Canonical name (`lm loss`, `grad norm`, …; a user-mapped pair is named by its A name).
    pub name: String,
    /// The series compared on A (`None` when A has none).
    pub a_name: Option<String>,
    pub b_name: Option<String>,
    /// Asked for explicitly (`--metric`).
    pub requested: bool,
    pub steps_compared: usize,
    /// Largest `|b − a|`; null (`None`) when nothing was compared or an error is not finite.
    #[schemars(with = "Option<f64>")]
    #[serde(serialize_with = "opt_finite_or_null")]
    pub max_abs_err: Option<f64>,
    pub max_abs_err_step: Option<i64>,
    #[schemars(with = "Option<f64>")]
    #[serde(serialize_with = "opt_finite_or_null")]
    pub max_rel_err: Option<f64>,
    pub max_rel_err_step: Option<i64>,
    #[schemars(with = "Option<f64>")]
    #[serde(serialize_with = "opt_finite_or_null")]
    pub mean_rel_err: Option<f64>,
    pub rtol: f64,
    pub atol: f64,
    /// The first failing step after which every compared step fails; `None` when the last step passes.
    pub first_divergence_step: Option<i64>,
    pub failing_steps: usize,
    /// When one side's values are means over a window of iterations and the other side's were averaged to
    /// match: the window length.
    pub averaged_over: Option<u32>,
    pub verdict: Verdict,
    pub points: Vec<AlignedPoint>,
}

/// The result of `accuracy compare`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct AccuracyReport {
    pub a: SideInfo,
    pub b: SideInfo,
    /// `pass` when every compared metric passes, no explicitly asked metric lacks common steps, and at least
    /// one step was compared; else `fail`.
    pub verdict: Verdict,
    pub metrics: Vec<MetricAlignment>,
    /// Canonical names of the other metrics present on both sides (compare them with `--metric`).
    pub not_compared: Vec<String>,
    /// What was assumed, converted or skipped, in words.
    pub notes: Vec<String>,
}

fn finite_or_null<S: Serializer>(x: &f64, s: S) -> std::result::Result<S::Ok, S::Error> {
    if x.is_finite() {
        s.serialize_f64(*x)
    } else {
        s.serialize_none()
    }
}

fn opt_finite_or_null<S: Serializer>(x: &Option<f64>, s: S) -> std::result::Result<S::Ok, S::Error> {
    match x {
        Some(v) if v.is_finite() => s.serialize_f64(*v),
        _ => s.serialize_none(),
    }
}

/// Default relative tolerance of a series name outside the classes.
fn rtol_of_name(name: &str) -> f64 {
    let n = name.to_ascii_lowercase().replace(['-', '_'], " ");
    if n.contains("num zeros") {
        NUM_ZEROS_RTOL
    } else {
        DEFAULT_RTOL
    }
}

/// A metric to compare: which series of each side, and its default tolerance.
#[derive(Debug, Clone)]
struct Pairing {
    name: String,
    a: Option<String>,
    b: Option<String>,
    rtol: f64,
    loss: bool,
    user: bool,
}

impl Pairing {
    fn both(&self) -> bool {
        self.a.is_some() && self.b.is_some()
    }

    fn answers(&self, name: &str) -> bool {
        self.name == name || self.a.as_deref() == Some(name) || self.b.as_deref() == Some(name)
    }
}

/// Pairs the series of A and B: user pairs first, then the built-in classes, then identical names.
fn pairings(a: &RunSeries, b: &RunSeries, map: &[(String, String)], notes: &mut Vec<String>) -> Vec<Pairing> {
    let mut used_a: BTreeSet<String> = BTreeSet::new();
    let mut used_b: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    for (x, y) in map {
        let class = class_of(x).or_else(|| class_of(y));
        out.push(Pairing {
            name: x.clone(),
            a: a.get(x).map(|s| s.name.clone()),
            b: b.get(y).map(|s| s.name.clone()),
            rtol: class.map_or_else(|| rtol_of_name(x), |c| c.rtol),
            loss: class.is_some_and(|c| c.loss) || is_loss_name(x),
            user: true,
        });
        used_a.insert(x.clone());
        used_b.insert(y.clone());
    }
    for class in CLASSES {
        let pick = |run: &RunSeries, used: &BTreeSet<String>| {
            class.members.iter().find(|m| !used.contains(m.name) && run.get(m.name).is_some())
        };
        let (ma, mb) = (pick(a, &used_a), pick(b, &used_b));
        if ma.is_none() && mb.is_none() {
            continue;
        }
        if let (Some(ma), Some(mb)) = (ma, mb) {
            if ma.name != mb.name {
                for (side, chosen, other) in [("A", ma, mb), ("B", mb, ma)] {
                    if chosen.fallback && !other.fallback {
                        notes.push(format!(
                            "{side} has no `lm loss`/`learning/lm_loss`; its `{}` stands in for `{}`: MaxText's `learning/loss` includes auxiliary losses (z-loss, MoE load balancing, MTP)",
                            chosen.name, other.name
                        ));
                    }
                }
            }
        }
        for (mem, used) in [(ma, &mut used_a), (mb, &mut used_b)] {
            if let Some(mem) = mem {
                used.insert(mem.name.to_string());
            }
        }
        out.push(Pairing {
            name: class.canonical.to_string(),
            a: ma.map(|m| m.name.to_string()),
            b: mb.map(|m| m.name.to_string()),
            rtol: class.rtol,
            loss: class.loss,
            user: false,
        });
    }
    for s in &a.series {
        if !used_a.contains(&s.name) && !used_b.contains(&s.name) && b.get(&s.name).is_some() {
            out.push(Pairing {
                name: s.name.clone(),
                a: Some(s.name.clone()),
                b: Some(s.name.clone()),
                rtol: rtol_of_name(&s.name),
                loss: is_loss_name(&s.name),
                user: false,
            });
        }
    }
    out
}

/// The names of a run's series, for messages (at most 40).
fn names_of(run: &RunSeries) -> String {
    const MAX: usize = 40;
    if run.series.is_empty() {
        return "no series".to_string();
    }
    let mut s = run.series.iter().take(MAX).map(|s| format!("`{}`", s.name)).collect::<Vec<_>>().join(", ");
    if run.series.len() > MAX {
        s.push_str(&format!(" and {} more", run.series.len() - MAX));
    }
    s
}

// ---------------------------------------------------------------------------------------------------------
// Steps

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    Maxtext,
    Megatron,
}

/// Megatron-LM TensorBoard tags that MaxText does not write.
const MEGATRON_TAGS: &[&str] = &[
    "lm loss",
    "iteration-time",
    "grad-norm",
    "learning-rate",
    "num-zeros",
    "loss-scale",
    "params-norm",
    "batch-size",
];

/// Whose step numbering a run uses: by format, else (tfevents, JSONL, CSV) by its series names.
fn dialect(run: &RunSeries) -> Option<Dialect> {
    match run.format {
        SourceFormat::MaxtextJsonl | SourceFormat::MaxtextConsole => Some(Dialect::Maxtext),
        SourceFormat::MegatronLog | SourceFormat::MegatronGolden => Some(Dialect::Megatron),
        SourceFormat::Tfevents | SourceFormat::Jsonl | SourceFormat::Csv => {
            let maxtext = run.series.iter().any(|s| s.name.starts_with("learning/") || s.name.starts_with("perf/"));
            let megatron = run.series.iter().any(|s| MEGATRON_TAGS.contains(&s.name.as_str()));
            match (maxtext, megatron) {
                (true, false) => Some(Dialect::Maxtext),
                (false, true) => Some(Dialect::Megatron),
                _ => None,
            }
        }
    }
}

/// A value with the window of iterations it covers: `(lo, step]`.
#[derive(Debug, Clone, Copy)]
struct Pt {
    step: i64,
    lo: i64,
    v: f64,
}

/// A series' points shifted by `shift`, scaled by `scale`, with their windows: one iteration for per-step
/// values; for means over `k` iterations, back to the previous point or `k` iterations, whichever is
/// nearer (Megatron averages over the iterations since its previous log line; its first line, at
/// iteration 1, covers that iteration only).
fn windows(s: &Series, shift: i64, scale: f64) -> Vec<Pt> {
    let mut pts: Vec<(i64, f64)> = s.points.clone();
    pts.sort_by_key(|p| p.0);
    pts.reverse();
    pts.dedup_by_key(|p| p.0); // keeps the later record of a step
    pts.reverse();
    let k = s.averaged_over.map_or(1, |k| i64::from(k.max(1)));
    let mut out: Vec<Pt> = Vec::with_capacity(pts.len());
    for (step, v) in pts {
        let step = step + shift;
        let lo = if k == 1 {
            step - 1
        } else {
            match out.last() {
                Some(prev) => (step - k).max(prev.step),
                None if step >= 1 => (step - k).max(0),
                None => step - 1,
            }
        };
        out.push(Pt { step, lo, v: v * scale });
    }
    out
}

/// The mean over `(lo, hi]` of points whose windows tile it exactly (each window weighted by its length);
/// `None` when some iteration of it is missing.
fn mean_over(pts: &[Pt], lo: i64, hi: i64) -> Option<f64> {
    let start = pts.partition_point(|p| p.step <= lo);
    let end = pts.partition_point(|p| p.step <= hi);
    let mut at = lo;
    let mut sum = 0.0;
    for p in &pts[start..end] {
        if p.lo != at {
            return None;
        }
        sum += p.v * (p.step - p.lo) as f64;
        at = p.step;
    }
    (at == hi && hi > lo).then(|| sum / (hi - lo) as f64)
}

/// `(|b − a|, |b − a| / |a|, pass)` with A as the reference.
pub fn compare_values(a: f64, b: f64, rtol: f64, atol: f64) -> (f64, f64, bool) {
    let abs = (b - a).abs();
    let rel = if a == 0.0 {
        if b == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        abs / a.abs()
    };
    let pass = a.is_finite() && b.is_finite() && abs <= atol + rtol * a.abs();
    (abs, rel, pass)
}

/// NaN counts as the largest error.
fn err_key(x: f64) -> f64 {
    if x.is_nan() {
        f64::INFINITY
    } else {
        x
    }
}

/// Step range of points, for messages.
fn range_of(pts: &[Pt]) -> String {
    match (pts.first(), pts.last()) {
        (Some(f), Some(l)) if f.step == l.step => format!("step {}", f.step),
        (Some(f), Some(l)) => format!("steps {}–{}", f.step, l.step),
        _ => "no points".to_string(),
    }
}

struct Sides<'a> {
    a: &'a RunSeries,
    b: &'a RunSeries,
    a_shift: i64,
    b_shift: i64,
}

/// Aligns and compares one metric.
fn compare_metric(
    p: &Pairing,
    sides: &Sides<'_>,
    requested: bool,
    opts: &AlignOptions,
    notes: &mut Vec<String>,
) -> MetricAlignment {
    let rtol = opts.rtol.unwrap_or(p.rtol);
    let atol = opts.atol.unwrap_or(0.0);
    let mut out = MetricAlignment {
        name: p.name.clone(),
        a_name: p.a.clone(),
        b_name: p.b.clone(),
        requested,
        steps_compared: 0,
        max_abs_err: None,
        max_abs_err_step: None,
        max_rel_err: None,
        max_rel_err_step: None,
        mean_rel_err: None,
        rtol,
        atol,
        first_divergence_step: None,
        failing_steps: 0,
        averaged_over: None,
        verdict: Verdict::NoOverlap,
        points: Vec::new(),
    };
    let (Some(sa), Some(sb)) =
        (p.a.as_deref().and_then(|n| sides.a.get(n)), p.b.as_deref().and_then(|n| sides.b.get(n)))
    else {
        let missing = if p.a.is_none() { "A" } else { "B" };
        notes.push(format!("`{}`: {missing} has no such series; nothing compared", p.name));
        return out;
    };
    let pa = windows(sa, sides.a_shift, scale_of(&sa.name));
    let pb = windows(sb, sides.b_shift, scale_of(&sb.name));
    let bidx: BTreeMap<i64, usize> = pb.iter().enumerate().map(|(i, p)| (p.step, i)).collect();
    let (mut common, mut reaveraged_a, mut reaveraged_b, mut skipped_a, mut skipped_b) =
        (0usize, 0usize, 0usize, 0usize, 0usize);
    let mut window = 0i64;
    for (ia, xa) in pa.iter().enumerate() {
        let Some(&ib) = bidx.get(&xa.step) else { continue };
        let xb = pb[ib];
        common += 1;
        let (va, vb) = if xa.lo == xb.lo {
            (xa.v, xb.v)
        } else if xa.lo < xb.lo {
            // A's window is wider: B averaged over it.
            window = window.max(xa.step - xa.lo);
            let Some(vb) = mean_over(&pb[..=ib], xa.lo, xa.step) else {
                skipped_b += 1;
                continue;
            };
            reaveraged_b += 1;
            (xa.v, vb)
        } else {
            window = window.max(xb.step - xb.lo);
            let Some(va) = mean_over(&pa[..=ia], xb.lo, xb.step) else {
                skipped_a += 1;
                continue;
            };
            reaveraged_a += 1;
            (va, xb.v)
        };
        let (abs_err, rel_err, pass) = compare_values(va, vb, rtol, atol);
        out.points.push(AlignedPoint { step: xa.step, a: va, b: vb, abs_err, rel_err, pass });
    }
    let averaged = |side: &str, s: &Series| {
        format!("{side}'s `{}` values are means over {} iterations", s.name, s.averaged_over.unwrap_or(1))
    };
    if reaveraged_a > 0 {
        notes.push(format!(
            "`{}`: {}; A's values were averaged over the same windows (step−{window}, step] before comparing ({reaveraged_a} steps)",
            p.name,
            averaged("B", sb)
        ));
    }
    if reaveraged_b > 0 {
        notes.push(format!(
            "`{}`: {}; B's values were averaged over the same windows (step−{window}, step] before comparing ({reaveraged_b} steps)",
            p.name,
            averaged("A", sa)
        ));
    }
    for (side, other, skipped) in [("A", "B", skipped_a), ("B", "A", skipped_b)] {
        if skipped > 0 {
            notes.push(format!(
                "`{}`: {skipped} of {common} common steps skipped: {side} lacks some iterations of {other}'s averaging window",
                p.name
            ));
        }
    }
    if reaveraged_a + reaveraged_b > 0 {
        out.averaged_over = u32::try_from(window).ok();
    }
    if common == 0 {
        notes.push(format!("`{}`: no step in common (A {}, B {})", p.name, range_of(&pa), range_of(&pb)));
    }
    summarize(&mut out);
    out
}

/// Fills the aggregates and the verdict from the points.
fn summarize(out: &mut MetricAlignment) {
    let n = out.points.len();
    out.steps_compared = n;
    if n == 0 {
        out.verdict = Verdict::NoOverlap;
        return;
    }
    let (mut max_abs, mut max_abs_step) = (f64::NEG_INFINITY, out.points[0].step);
    let (mut max_rel, mut max_rel_step) = (f64::NEG_INFINITY, out.points[0].step);
    let mut sum_rel = 0.0;
    for p in &out.points {
        let (abs, rel) = (err_key(p.abs_err), err_key(p.rel_err));
        if abs > max_abs {
            (max_abs, max_abs_step) = (abs, p.step);
        }
        if rel > max_rel {
            (max_rel, max_rel_step) = (rel, p.step);
        }
        sum_rel += rel;
    }
    out.max_abs_err = Some(max_abs);
    out.max_abs_err_step = Some(max_abs_step);
    out.max_rel_err = Some(max_rel);
    out.max_rel_err_step = Some(max_rel_step);
    out.mean_rel_err = Some(sum_rel / n as f64);
    out.failing_steps = out.points.iter().filter(|p| !p.pass).count();
    out.first_divergence_step = match out.points.iter().rposition(|p| p.pass) {
        Some(i) if i + 1 == n => None,
        Some(i) => Some(out.points[i + 1].step),
        None => Some(out.points[0].step),
    };
    out.verdict = if out.failing_steps == 0 { Verdict::Pass } else { Verdict::Fail };
}

/// Aligns `b` with `a` (the reference) by step and compares the chosen metrics.
///
/// Invalid when an asked-for metric is on neither side, when no metric was asked for and the two runs share
/// no loss series, or when a tolerance is negative or not finite.
pub fn align(a: &RunSeries, b: &RunSeries, opts: &AlignOptions) -> Result<AccuracyReport> {
    for (what, v) in [("rtol", opts.rtol), ("atol", opts.atol)] {
        if let Some(v) = v {
            if !(v.is_finite() && v >= 0.0) {
                return Err(AnalysisError::Invalid(format!("{what} must be a finite number ≥ 0, not {v}")));
            }
        }
    }
    let mut notes = Vec::new();
    let (a_shift, b_shift) = match opts.b_step_offset {
        Some(k) => (0, k),
        None => match (dialect(a), dialect(b)) {
            (Some(Dialect::Maxtext), Some(Dialect::Megatron)) => {
                notes.push("A is MaxText (0-based `step`) and B Megatron-LM (1-based `iteration`): A's steps were shifted by +1; steps are Megatron iterations".to_string());
                (1, 0)
            }
            (Some(Dialect::Megatron), Some(Dialect::Maxtext)) => {
                notes.push("B is MaxText (0-based `step`) and A Megatron-LM (1-based `iteration`): B's steps were shifted by +1; steps are Megatron iterations".to_string());
                (0, 1)
            }
            _ => (0, 0),
        },
    };
    if opts.b_step_offset.is_some_and(|k| k != 0) {
        notes.push(format!("B's steps were shifted by {b_shift:+}"));
    }
    let pairs = pairings(a, b, &opts.map, &mut notes);

    // Which metrics.
    let mut chosen: Vec<(Pairing, bool)> = Vec::new();
    if opts.metrics.is_empty() {
        chosen.extend(pairs.iter().filter(|p| p.both() && (p.loss || p.user)).cloned().map(|p| (p, false)));
        if chosen.is_empty() {
            return Err(AnalysisError::Invalid(format!(
                "no loss series on both sides; A ({}) has {}; B ({}) has {}; choose with --metric (either side's name) or pair names with --map A_NAME=B_NAME",
                a.path,
                names_of(a),
                b.path,
                names_of(b)
            )));
        }
    } else {
        for want in &opts.metrics {
            let found = pairs.iter().find(|p| p.answers(want)).cloned();
            // A name of a class whose pair uses other names (`learning-rate` for `learning rate`).
            let found = found.or_else(|| {
                class_of(want).and_then(|c| pairs.iter().find(|p| !p.user && p.name == c.canonical)).cloned()
            });
            let found = found.or_else(|| {
                // A series on one side only, under a name no pair took.
                let on_a = a.get(want).is_some() && !pairs.iter().any(|p| p.a.as_deref() == Some(want.as_str()));
                let on_b = b.get(want).is_some() && !pairs.iter().any(|p| p.b.as_deref() == Some(want.as_str()));
                (on_a || on_b).then(|| Pairing {
                    name: want.clone(),
                    a: on_a.then(|| want.clone()),
                    b: on_b.then(|| want.clone()),
                    rtol: class_of(want).map_or_else(|| rtol_of_name(want), |c| c.rtol),
                    loss: is_loss_name(want),
                    user: false,
                })
            });
            let Some(p) = found else {
                let class = class_of(want).map(|c| {
                    format!(
                        " (also looked for {})",
                        c.members.iter().map(|m| format!("`{}`", m.name)).collect::<Vec<_>>().join(", ")
                    )
                });
                return Err(AnalysisError::Invalid(format!(
                    "metric `{want}` is on neither side{}; A ({}) has {}; B ({}) has {}",
                    class.unwrap_or_default(),
                    a.path,
                    names_of(a),
                    b.path,
                    names_of(b)
                )));
            };
            if !chosen.iter().any(|(c, _)| c.name == p.name) {
                chosen.push((p, true));
            }
        }
    }
    let not_compared: Vec<String> = pairs
        .iter()
        .filter(|p| p.both() && !chosen.iter().any(|(c, _)| c.name == p.name))
        .map(|p| p.name.clone())
        .collect();

    let sides = Sides { a, b, a_shift, b_shift };
    let metrics: Vec<MetricAlignment> =
        chosen.iter().map(|(p, requested)| compare_metric(p, &sides, *requested, opts, &mut notes)).collect();

    let compared = metrics.iter().filter(|m| m.steps_compared > 0).count();
    let failed = metrics.iter().any(|m| m.verdict == Verdict::Fail || (m.requested && m.verdict == Verdict::NoOverlap));
    if compared == 0 {
        notes.push("no metric had a step in common: nothing was compared, so the verdict is fail".to_string());
    }
    let verdict = if failed || compared == 0 { Verdict::Fail } else { Verdict::Pass };
    for (side, run) in [("A", a), ("B", b)] {
        notes.extend(run.notes.iter().map(|n| format!("{side}: {n}")));
    }
    Ok(AccuracyReport {
        a: SideInfo { path: a.path.clone(), format: a.format, series: a.series.len(), step_offset: a_shift },
        b: SideInfo { path: b.path.clone(), format: b.format, series: b.series.len(), step_offset: b_shift },
        verdict,
        metrics,
        not_compared,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(name: &str, points: &[(i64, f64)], averaged_over: Option<u32>) -> Series {
        Series { name: name.to_string(), points: points.to_vec(), averaged_over }
    }

    fn run(format: SourceFormat, series: Vec<Series>) -> RunSeries {
        let mut series = series;
        series.sort_by(|a, b| a.name.cmp(&b.name));
        RunSeries { path: format!("{format:?}"), format, series, notes: Vec::new() }
    }

    fn per_step(name: &str, steps: impl Iterator<Item = i64>, f: impl Fn(i64) -> f64) -> Series {
        let pts: Vec<(i64, f64)> = steps.map(|s| (s, f(s))).collect();
        series(name, &pts, None)
    }

    fn metric<'a>(r: &'a AccuracyReport, name: &str) -> &'a MetricAlignment {
        r.metrics.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("no metric {name}: {r:#?}"))
    }

    fn golden(series: Vec<Series>) -> RunSeries {
        run(SourceFormat::MegatronGolden, series)
    }

    #[test]
    fn different_strides_compare_the_common_steps_only() {
        let a =
            golden(vec![per_step("lm loss", (1..=50).filter(|s| *s == 1 || s % 5 == 0), |s| 10.0 - s as f64 * 0.01)]);
        let b = golden(vec![per_step("lm loss", 1..=50, |s| (10.0 - s as f64 * 0.01) * 1.01)]);
        let r = align(&a, &b, &AlignOptions::default()).unwrap();
        let m = metric(&r, "lm loss");
        assert_eq!(m.steps_compared, 11);
        assert_eq!(m.points.iter().map(|p| p.step).collect::<Vec<_>>(), vec![1, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50]);
        assert!((m.max_rel_err.unwrap() - 0.01).abs() < 1e-12);
        assert_eq!(m.verdict, Verdict::Pass);
        assert_eq!(r.verdict, Verdict::Pass);
        assert_eq!(m.averaged_over, None);
        // Swapped: the same steps.
        let r = align(&b, &a, &AlignOptions::default()).unwrap();
        assert_eq!(metric(&r, "lm loss").steps_compared, 11);
    }

    #[test]
    fn an_averaged_side_is_compared_with_the_other_side_averaged_over_its_window() {
        // B: Megatron stdout, log_interval 10: lines at 1, 10, 20, 30; each the mean since the previous line.
        let f = |s: i64| s as f64;
        let a = run(SourceFormat::MaxtextJsonl, vec![per_step("learning/lm_loss", 0..30, f)]);
        // After A's +1 shift, A's value at iteration i is i - 1.
        let mean = |lo: i64, hi: i64| ((lo + 1)..=hi).map(|i| (i - 1) as f64).sum::<f64>() / (hi - lo) as f64;
        let b = run(
            SourceFormat::MegatronLog,
            vec![series(
                "lm loss",
                &[(1, mean(0, 1)), (10, mean(1, 10)), (20, mean(10, 20)), (30, mean(20, 30))],
                Some(10),
            )],
        );
        let r = align(&a, &b, &AlignOptions::default()).unwrap();
        assert_eq!(r.a.step_offset, 1);
        assert_eq!(r.b.step_offset, 0);
        let m = metric(&r, "lm loss");
        assert_eq!(m.a_name.as_deref(), Some("learning/lm_loss"));
        assert_eq!(m.b_name.as_deref(), Some("lm loss"));
        assert_eq!(m.steps_compared, 4);
        for p in &m.points {
            assert!(p.abs_err < 1e-12, "{p:?}");
        }
        assert_eq!(m.points[1].a, 5.0); // iterations 2..=10 → values 1..=9
        assert_eq!(m.averaged_over, Some(10));
        assert_eq!(m.verdict, Verdict::Pass);
        assert!(r.notes.iter().any(|n| n.contains("shifted by +1")), "{:?}", r.notes);
        assert!(r.notes.iter().any(|n| n.contains("averaged over the same windows")), "{:?}", r.notes);
        // Without the averaging, A's value at 10 (9) would differ from B's (5) by 80 %.
    }

    #[test]
    fn an_averaging_window_with_a_missing_iteration_is_skipped() {
        let a = run(SourceFormat::Jsonl, vec![per_step("loss", (1..=20).filter(|s| *s != 15), |_| 2.0)]);
        let b = run(SourceFormat::Jsonl, vec![series("loss", &[(10, 2.0), (20, 2.0)], Some(10))]);
        let r = align(&a, &b, &AlignOptions::default()).unwrap();
        let m = metric(&r, "lm loss");
        assert_eq!(m.steps_compared, 1);
        assert_eq!(m.points[0].step, 10);
        assert!(r.notes.iter().any(|n| n.contains("1 of 2 common steps skipped")), "{:?}", r.notes);
    }

    #[test]
    fn offsets_automatic_explicit_and_none_between_same_frameworks() {
        let a = run(SourceFormat::MegatronLog, vec![per_step("lm loss", 1..=10, |s| s as f64)]);
        let b = run(SourceFormat::MaxtextConsole, vec![per_step("lm_loss", 0..10, |s| (s + 1) as f64)]);
        let r = align(&a, &b, &AlignOptions::default()).unwrap();
        assert_eq!((r.a.step_offset, r.b.step_offset), (0, 1));
        let m = metric(&r, "lm loss");
        assert_eq!(m.steps_compared, 10);
        assert_eq!(m.max_abs_err, Some(0.0));
        // An explicit offset replaces the automatic one.
        let r = align(&a, &b, &AlignOptions { b_step_offset: Some(0), ..Default::default() }).unwrap();
        let m = metric(&r, "lm loss");
        assert_eq!(m.steps_compared, 9);
        assert_eq!(m.verdict, Verdict::Fail);
        let r = align(&a, &b, &AlignOptions { b_step_offset: Some(1), ..Default::default() }).unwrap();
        assert_eq!(metric(&r, "lm loss").max_abs_err, Some(0.0));
        // Two MaxText runs: nothing shifted.
        let c = run(SourceFormat::MaxtextJsonl, vec![per_step("learning/lm_loss", 0..10, |s| (s + 1) as f64)]);
        let r = align(&c, &b, &AlignOptions::default()).unwrap();
        assert_eq!((r.a.step_offset, r.b.step_offset), (0, 0));
        assert_eq!(metric(&r, "lm loss").max_abs_err, Some(0.0));
        // Tfevents written by MaxText is recognised by its tags.
        let t = run(SourceFormat::Tfevents, vec![per_step("learning/lm_loss", 0..10, |s| (s + 1) as f64)]);
        let r = align(&a, &t, &AlignOptions::default()).unwrap();
        assert_eq!(r.b.step_offset, 1);
    }

    #[test]
    fn first_divergence_is_the_start_of_the_failing_tail() {
        // rel errors: pass, fail, pass, fail, fail.
        let a = golden(vec![per_step("lm loss", 1..=5, |_| 10.0)]);
        let b = golden(vec![series("lm loss", &[(1, 10.0), (2, 11.0), (3, 10.1), (4, 11.0), (5, 12.0)], None)]);
        let r = align(&a, &b, &AlignOptions { rtol: Some(0.05), ..Default::default() }).unwrap();
        let m = metric(&r, "lm loss");
        assert_eq!(m.failing_steps, 3);
        assert_eq!(m.first_divergence_step, Some(4));
        assert_eq!(m.max_rel_err_step, Some(5));
        assert!((m.max_rel_err.unwrap() - 0.2).abs() < 1e-12);
        assert!((m.mean_rel_err.unwrap() - (0.0 + 0.1 + 0.01 + 0.1 + 0.2) / 5.0).abs() < 1e-12);
        assert_eq!(m.verdict, Verdict::Fail);
        assert_eq!(r.verdict, Verdict::Fail);
        // The last step passes: no divergence, though steps fail.
        let b = golden(vec![series("lm loss", &[(1, 10.0), (2, 11.0), (3, 10.1), (4, 11.0), (5, 10.0)], None)]);
        let m = align(&a, &b, &AlignOptions::default()).unwrap().metrics.remove(0);
        assert_eq!((m.failing_steps, m.first_divergence_step), (2, None));
        // Everything fails: divergence from the first step.
        let b = golden(vec![per_step("lm loss", 1..=5, |_| 20.0)]);
        let m = align(&a, &b, &AlignOptions::default()).unwrap().metrics.remove(0);
        assert_eq!(m.first_divergence_step, Some(1));
        // atol widens the band: |b − a| ≤ atol + rtol·|a|.
        let m = align(&a, &b, &AlignOptions { rtol: Some(0.0), atol: Some(10.0), ..Default::default() })
            .unwrap()
            .metrics
            .remove(0);
        assert_eq!(m.verdict, Verdict::Pass);
    }

    #[test]
    fn nan_and_infinity_fail_and_serialize_as_null() {
        let a = golden(vec![series("lm loss", &[(1, 1.0), (2, f64::NAN), (3, 0.0), (4, 0.0), (5, 1.0)], None)]);
        let b = golden(vec![series("lm loss", &[(1, 1.0), (2, 1.0), (3, 0.0), (4, 1.0), (5, f64::INFINITY)], None)]);
        let r = align(&a, &b, &AlignOptions::default()).unwrap();
        let m = metric(&r, "lm loss");
        let pass: Vec<bool> = m.points.iter().map(|p| p.pass).collect();
        assert_eq!(pass, vec![true, false, true, false, false]);
        assert_eq!(m.points[2].rel_err, 0.0, "0 vs 0");
        assert_eq!(m.points[3].rel_err, f64::INFINITY, "0 vs 1");
        assert_eq!(m.max_abs_err, Some(f64::INFINITY), "NaN counts as the largest error");
        assert_eq!(m.first_divergence_step, Some(4));
        let json = serde_json::to_value(&r).unwrap();
        let jm = &json["metrics"][0];
        assert!(jm["max_abs_err"].is_null() && jm["max_rel_err"].is_null() && jm["mean_rel_err"].is_null(), "{jm}");
        assert!(jm["points"][1]["a"].is_null());
        assert!(jm["points"][3]["rel_err"].is_null());
        assert_eq!(jm["points"][0]["rel_err"], 0.0);
        assert_eq!(json["verdict"], "fail");
    }

    #[test]
    fn no_overlap_fails_only_when_asked_for() {
        let a = golden(vec![per_step("lm loss", 1..=5, |_| 1.0), per_step("num-zeros", 1..=5, |_| 1.0)]);
        let b = golden(vec![per_step("lm loss", 1..=5, |_| 1.0), per_step("num-zeros", 6..=10, |_| 1.0)]);
        let r = align(&a, &b, &AlignOptions::default()).unwrap();
        assert_eq!(r.verdict, Verdict::Pass);
        assert_eq!(r.not_compared, vec!["num zeros".to_string()]);
        let r =
            align(&a, &b, &AlignOptions { metrics: vec!["lm loss".into(), "num-zeros".into()], ..Default::default() })
                .unwrap();
        let m = metric(&r, "num zeros");
        assert_eq!((m.steps_compared, m.verdict), (0, Verdict::NoOverlap));
        assert_eq!((m.max_abs_err, m.first_divergence_step), (None, None));
        assert!(
            r.notes.iter().any(|n| n.contains("`num zeros`: no step in common (A steps 1–5, B steps 6–10)")),
            "{:?}",
            r.notes
        );
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(serde_json::to_value(m).unwrap()["verdict"], "no_overlap");
        // Only the loss, with no overlap, and not asked for: nothing compared → fail.
        let c = golden(vec![per_step("lm loss", 100..=105, |_| 1.0)]);
        let r = align(&a, &c, &AlignOptions::default()).unwrap();
        assert_eq!(metric(&r, "lm loss").verdict, Verdict::NoOverlap);
        assert_eq!(r.verdict, Verdict::Fail);
    }

    #[test]
    fn names_map_across_frameworks() {
        let a = run(
            SourceFormat::MaxtextJsonl,
            vec![
                per_step("learning/lm_loss", 0..5, |_| 2.0),
                per_step("learning/loss", 0..5, |_| 2.5),
                per_step("learning/raw_grad_norm", 0..5, |_| 1.0),
                per_step("learning/grad_norm", 0..5, |_| 0.5),
                per_step("learning/current_learning_rate", 0..5, |_| 1e-4),
                per_step("perf/step_time_seconds", 0..5, |_| 0.5),
                per_step("eval/avg_loss", [4].into_iter(), |_| 2.2),
            ],
        );
        let b = run(
            SourceFormat::MegatronLog,
            vec![
                per_step("lm loss", 1..=5, |_| 2.0),
                per_step("grad norm", 1..=5, |_| 1.0),
                per_step("learning rate", 1..=5, |_| 1e-4),
                per_step("elapsed time per iteration (ms)", 1..=5, |_| 500.0),
                per_step("loss scale", 1..=5, |_| 1.0),
                per_step("lm loss validation", [5].into_iter(), |_| 2.2),
            ],
        );
        let r = align(&a, &b, &AlignOptions::default()).unwrap();
        assert_eq!(r.metrics.len(), 2, "only the losses by default: {:?}", r.metrics);
        let m = &r.metrics[0];
        assert_eq!(
            (m.name.as_str(), m.a_name.as_deref(), m.b_name.as_deref()),
            ("lm loss", Some("learning/lm_loss"), Some("lm loss"))
        );
        assert_eq!(m.verdict, Verdict::Pass);
        let v = metric(&r, "validation loss");
        assert_eq!(
            (v.a_name.as_deref(), v.b_name.as_deref(), v.steps_compared),
            (Some("eval/avg_loss"), Some("lm loss validation"), 1)
        );
        assert_eq!(r.not_compared, vec!["grad norm", "learning rate", "step time (s)"]);

        let opts = AlignOptions {
            metrics: vec!["grad norm".into(), "perf/step_time_seconds".into(), "learning-rate".into()],
            ..Default::default()
        };
        let r = align(&a, &b, &opts).unwrap();
        let g = metric(&r, "grad norm");
        assert_eq!(g.a_name.as_deref(), Some("learning/raw_grad_norm"), "pre-clip on both sides");
        assert_eq!(g.max_abs_err, Some(0.0));
        let t = metric(&r, "step time (s)");
        assert_eq!(t.b_name.as_deref(), Some("elapsed time per iteration (ms)"));
        assert_eq!(t.max_abs_err, Some(0.0), "ms converted to s");
        assert_eq!(t.points[0].b, 0.5);
        assert_eq!(metric(&r, "learning rate").verdict, Verdict::Pass);
        assert!(r.metrics.iter().all(|m| m.requested));

        // `learning/loss` stands in only when there is no lm_loss.
        let a2 = run(SourceFormat::MaxtextJsonl, vec![per_step("learning/loss", 0..5, |_| 2.0)]);
        let r = align(&a2, &b, &AlignOptions::default()).unwrap();
        assert_eq!(r.metrics[0].a_name.as_deref(), Some("learning/loss"));
        assert!(r.notes.iter().any(|n| n.contains("auxiliary losses")), "{:?}", r.notes);
    }

    #[test]
    fn same_names_compare_every_loss_but_not_the_loss_scale() {
        let mk = |v: f64| {
            run(
                SourceFormat::Jsonl,
                vec![
                    per_step("train_loss", 1..=3, |_| v),
                    per_step("eval_loss", 1..=3, |_| v),
                    per_step("loss scale", 1..=3, |_| 1.0),
                    per_step("throughput", 1..=3, |_| 1.0),
                    per_step("lm loss validation ppl", 1..=3, |_| 1.0),
                ],
            )
        };
        let r = align(&mk(1.0), &mk(1.01), &AlignOptions::default()).unwrap();
        let names: Vec<&str> = r.metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, vec!["eval_loss", "train_loss"]);
        assert_eq!(r.verdict, Verdict::Pass);
        assert_eq!(r.not_compared, vec!["throughput (TFLOP/s/device)", "loss scale", "lm loss validation ppl"]);
    }

    #[test]
    fn user_pairs_come_first_and_are_compared_by_default() {
        let a =
            run(SourceFormat::Csv, vec![per_step("train/xent", 1..=3, |_| 3.0), per_step("lm loss", 1..=3, |_| 9.0)]);
        let b = run(SourceFormat::MegatronLog, vec![per_step("lm loss", 1..=3, |_| 3.0)]);
        let opts = AlignOptions { map: vec![("train/xent".into(), "lm loss".into())], ..Default::default() };
        let r = align(&a, &b, &opts).unwrap();
        assert_eq!(r.metrics.len(), 1, "{:?}", r.metrics);
        let m = &r.metrics[0];
        assert_eq!(
            (m.name.as_str(), m.a_name.as_deref(), m.b_name.as_deref()),
            ("train/xent", Some("train/xent"), Some("lm loss"))
        );
        assert_eq!(m.verdict, Verdict::Pass);
    }

    #[test]
    fn default_tolerances_per_metric_and_overrides() {
        let a = golden(vec![
            per_step("lm loss", 1..=3, |_| 100.0),
            per_step("num-zeros", 1..=3, |_| 100.0),
            per_step("iteration-time", 1..=3, |_| 1.0),
        ]);
        let b = golden(vec![
            per_step("lm loss", 1..=3, |_| 104.0),
            per_step("num-zeros", 1..=3, |_| 119.0),
            per_step("iteration-time", 1..=3, |_| 1.06),
        ]);
        let opts = AlignOptions {
            metrics: vec!["lm loss".into(), "num-zeros".into(), "iteration-time".into()],
            ..Default::default()
        };
        let r = align(&a, &b, &opts).unwrap();
        assert_eq!((metric(&r, "lm loss").rtol, metric(&r, "lm loss").atol), (0.05, 0.0));
        assert_eq!(metric(&r, "lm loss").verdict, Verdict::Pass);
        assert_eq!(metric(&r, "num zeros").rtol, 0.20);
        assert_eq!(metric(&r, "num zeros").verdict, Verdict::Pass);
        assert_eq!(metric(&r, "step time (s)").verdict, Verdict::Fail);
        let r = align(&a, &b, &AlignOptions { rtol: Some(0.1), atol: Some(0.5), ..opts }).unwrap();
        assert!(r.metrics.iter().all(|m| m.rtol == 0.1 && m.atol == 0.5));
        assert_eq!(metric(&r, "num zeros").verdict, Verdict::Fail);
        assert_eq!(metric(&r, "step time (s)").verdict, Verdict::Pass);
        let bad = align(&a, &b, &AlignOptions { rtol: Some(-1.0), ..Default::default() }).unwrap_err();
        assert!(bad.to_string().contains("rtol"), "{bad}");
    }

    #[test]
    fn an_unknown_metric_names_the_available_series() {
        let a = golden(vec![per_step("lm loss", 1..=3, |_| 1.0)]);
        let b = golden(vec![per_step("lm loss", 1..=3, |_| 1.0), per_step("iteration-time", 1..=3, |_| 1.0)]);
        let err = align(&a, &b, &AlignOptions { metrics: vec!["nope".into()], ..Default::default() }).unwrap_err();
        assert!(matches!(err, AnalysisError::Invalid(_)));
        let msg = err.to_string();
        assert!(msg.contains("`nope`") && msg.contains("`lm loss`") && msg.contains("`iteration-time`"), "{msg}");
        // On one side only: compared as no_overlap, and the overall verdict fails.
        let r = align(&a, &b, &AlignOptions { metrics: vec!["iteration-time".into()], ..Default::default() }).unwrap();
        let m = metric(&r, "step time (s)");
        assert_eq!(
            (m.a_name.as_deref(), m.b_name.as_deref(), m.verdict),
            (None, Some("iteration-time"), Verdict::NoOverlap)
        );
        assert_eq!(r.verdict, Verdict::Fail);
        // No loss on both sides and nothing asked for.
        let c = golden(vec![per_step("iteration-time", 1..=3, |_| 1.0)]);
        let err = align(&a, &c, &AlignOptions::default()).unwrap_err();
        assert!(err.to_string().contains("no loss series on both sides"), "{err}");
    }
}
