//! Comparing two kernel-bench runs row by row with the shared verdict.

use super::format::{KernelResult, KernelResults};
use falcon_core::stats::{self, CompareOptions, Direction, Verdict, VerdictKind};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// What rows are matched by.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RowKey {
    pub kernel: String,
    pub variant: String,
    pub shape: Value,
    pub shape_key: String,
    pub dtype: String,
    pub hardware: String,
}

/// One matched row: base vs new timing samples.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct KernelDelta {
    pub kernel: String,
    pub variant: String,
    pub shape: Value,
    pub shape_key: String,
    pub dtype: String,
    pub hardware: String,
    /// `time_ms`, lower is better; a = base, b = new.
    pub verdict: Verdict,
    pub base_median_ms: Option<f64>,
    pub new_median_ms: Option<f64>,
    /// base median / new median (> 1: the new run is faster).
    pub speedup: Option<f64>,
    pub base_correct: Option<bool>,
    pub new_correct: Option<bool>,
    /// Why the verdict is what it is, when the verdict code says (too few samples, identical samples).
    pub notes: Vec<String>,
}

impl KernelDelta {
    /// Correct in the base run and not correct (false) in the new one.
    pub fn became_incorrect(&self) -> bool {
        self.base_correct == Some(true) && self.new_correct == Some(false)
    }
}

/// Two runs compared (base is the baseline).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct KernelComparison {
    /// The base file.
    pub base: String,
    /// The new file.
    pub new: String,
    /// Matched rows, in the base file's order.
    pub rows: Vec<KernelDelta>,
    /// Rows only the base run has.
    pub only_in_base: Vec<RowKey>,
    /// Rows only the new run has.
    pub only_in_new: Vec<RowKey>,
    /// Verdict counts over `rows`.
    pub regressed: usize,
    pub improved: usize,
    pub same: usize,
    pub inconclusive: usize,
    /// Rows correct in the base run and incorrect in the new one.
    pub became_incorrect: usize,
    pub notes: Vec<String>,
}

impl KernelComparison {
    /// A row got slower (verdict `regressed`) or stopped being correct: what `--fail-on-regression` gates on.
    pub fn has_regression(&self) -> bool {
        self.regressed > 0 || self.became_incorrect > 0
    }
}

type Key<'a> = (&'a str, &'a str, &'a str, &'a str, &'a str);

fn key(r: &KernelResult) -> Key<'_> {
    (&r.kernel, &r.variant, &r.shape_key, &r.dtype, &r.hardware)
}

fn row_key(r: &KernelResult) -> RowKey {
    RowKey {
        kernel: r.kernel.clone(),
        variant: r.variant.clone(),
        shape: r.shape.clone(),
        shape_key: r.shape_key.clone(),
        dtype: r.dtype.clone(),
        hardware: r.hardware.clone(),
    }
}

/// Matches rows by (kernel, variant, shape, dtype, hardware) and compares each pair's `times_ms` with
/// [`falcon_core::stats::compare`] (`time_ms`, lower is better, default options).
pub fn compare(base: &KernelResults, new: &KernelResults) -> KernelComparison {
    compare_with(base, new, &CompareOptions::default())
}

/// [`compare`] with other statistics options (fewer bootstrap resamples, another confidence level).
pub fn compare_with(base: &KernelResults, new: &KernelResults, opts: &CompareOptions) -> KernelComparison {
    let new_by_key: BTreeMap<Key<'_>, &KernelResult> = new.rows.iter().map(|r| (key(r), r)).collect();
    let base_keys: BTreeMap<Key<'_>, ()> = base.rows.iter().map(|r| (key(r), ())).collect();
    let mut rows = Vec::new();
    let mut only_in_base = Vec::new();
    for b in &base.rows {
        let Some(n) = new_by_key.get(&key(b)) else {
            only_in_base.push(row_key(b));
            continue;
        };
        let verdict = stats::compare("time_ms", Direction::LowerIsBetter, &b.times_ms, &n.times_ms, opts);
        let (base_median_ms, new_median_ms) = (verdict.a.median, verdict.b.median);
        let speedup = base_median_ms.zip(new_median_ms).and_then(|(a, b)| (b > 0.0 && a.is_finite()).then(|| a / b));
        rows.push(KernelDelta {
            kernel: b.kernel.clone(),
            variant: b.variant.clone(),
            shape: b.shape.clone(),
            shape_key: b.shape_key.clone(),
            dtype: b.dtype.clone(),
            hardware: b.hardware.clone(),
            notes: verdict.notes.clone(),
            verdict,
            base_median_ms,
            new_median_ms,
            speedup,
            base_correct: b.correct,
            new_correct: n.correct,
        });
    }
    let only_in_new: Vec<RowKey> = new.rows.iter().filter(|r| !base_keys.contains_key(&key(r))).map(row_key).collect();
    let count = |k: VerdictKind| rows.iter().filter(|r| r.verdict.verdict == k).count();
    let mut notes = Vec::new();
    if rows.is_empty() {
        notes.push(
            "no row of the new run matches one of the base run (rows match by kernel, variant, shape, dtype and hardware)".to_string(),
        );
    }
    let incorrect: Vec<String> = rows
        .iter()
        .filter(|r| r.became_incorrect())
        .map(|r| format!("{}/{} {} {}", r.kernel, r.variant, r.shape_key, r.dtype))
        .collect();
    if !incorrect.is_empty() {
        notes.push(format!("correct in the base run, incorrect in the new one: {}", incorrect.join(", ")));
    }
    let fixed = rows.iter().filter(|r| r.base_correct == Some(false) && r.new_correct == Some(true)).count();
    if fixed > 0 {
        notes.push(format!("{fixed} row(s) incorrect in the base run are correct in the new one"));
    }
    KernelComparison {
        base: base.path.display().to_string(),
        new: new.path.display().to_string(),
        regressed: count(VerdictKind::Regressed),
        improved: count(VerdictKind::Improved),
        same: count(VerdictKind::Same),
        inconclusive: count(VerdictKind::Inconclusive),
        became_incorrect: incorrect.len(),
        rows,
        only_in_base,
        only_in_new,
        notes,
    }
}
