//! Per-row analysis of kernel-bench results: timing summary, achieved throughput, % of roofline, speed-up over
//! the reference variant, and KernelBench's `fast_p`.

use super::format::{KernelResults, ResultsFormat};
use falcon_core::catalog;
use falcon_core::stats::descriptive::{mean, percentile_sorted, sorted_finite};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// KernelBench flags speed-ups above this as suspicious (result reuse, skipped work).
const EXCESSIVE_SPEEDUP: f64 = 10.0;

/// Options of [`analyze`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct KernelOptions {
    /// `fast_p` threshold: a row counts when it is correct and its speed-up is greater than `p` (default 1.0).
    pub p: f64,
    /// Peak TFLOP/s per chip, overriding the catalog (and giving a peak to hardware the catalog has none for).
    pub peak_tflops: Option<f64>,
    /// Peak memory bandwidth per chip in GB/s (10⁹ B/s), overriding the catalog.
    pub peak_gbs: Option<f64>,
}

impl Default for KernelOptions {
    fn default() -> Self {
        KernelOptions { p: 1.0, peak_tflops: None, peak_gbs: None }
    }
}

/// Where a row's peaks came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PeakSource {
    /// The hardware catalog (`falcon_core::catalog`, dense bf16 per chip).
    Catalog,
    /// The caller's `peak_tflops` / `peak_gbs`.
    Override,
    /// One from each.
    Mixed,
}

/// Which roof limits a row at its arithmetic intensity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RooflineBound {
    /// Peak FLOP/s is the lower roof.
    Compute,
    /// Intensity × peak bandwidth is the lower roof.
    Memory,
}

/// One analysed row.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct KernelRow {
    pub kernel: String,
    pub variant: String,
    pub reference: bool,
    /// The workload's correctness check; `null` when the row did not say.
    pub correct: Option<bool>,
    pub shape: Value,
    pub shape_key: String,
    pub dtype: String,
    pub hardware: String,
    /// Line of the row in its file.
    pub line: usize,
    /// Timing samples.
    pub n: usize,
    pub median_ms: f64,
    /// 25th percentile (linear interpolation).
    pub p25_ms: f64,
    /// 75th percentile.
    pub p75_ms: f64,
    /// p75 − p25.
    pub iqr_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
    /// FLOPs per call, as given.
    pub flops: Option<f64>,
    /// Bytes per call, as given.
    pub bytes: Option<f64>,
    /// flops / bytes.
    pub intensity: Option<f64>,
    /// flops / median_s / 1e12.
    pub achieved_tflops: Option<f64>,
    /// bytes / median_s / 1e9.
    pub achieved_gbs: Option<f64>,
    /// Peak TFLOP/s per chip used for the roofline.
    pub peak_tflops: Option<f64>,
    /// Peak GB/s per chip used for the roofline.
    pub peak_gbs: Option<f64>,
    pub peak_source: Option<PeakSource>,
    /// Attainable TFLOP/s at this row's intensity: min(peak, intensity × bandwidth).
    pub roofline_tflops: Option<f64>,
    /// Achieved / attainable (0..1; above 1 means the FLOP/byte counts or the peaks are off). With FLOPs
    /// unknown (or 0) and bytes known: achieved GB/s / peak GB/s.
    pub roofline_fraction: Option<f64>,
    pub bound: Option<RooflineBound>,
    /// Median of the reference variant of this row's (kernel, shape, dtype, hardware).
    pub reference_median_ms: Option<f64>,
    /// reference median / this median (> 1: faster than the reference).
    pub speedup: Option<f64>,
}

/// KernelBench's `fast_p`: the fraction of non-reference rows that are correct and faster than their
/// reference by more than `p`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct FastP {
    pub p: f64,
    /// count / n; `null` when there are no non-reference rows.
    pub value: Option<f64>,
    /// Rows that count.
    pub count: usize,
    /// Non-reference rows (the denominator: incorrect rows and rows without a reference included).
    pub n: usize,
}

/// The analysis of one results file.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct KernelReport {
    /// The file analysed.
    pub path: String,
    pub format: ResultsFormat,
    /// Rows in file order.
    pub rows: Vec<KernelRow>,
    /// `fast_p` at the requested p.
    pub fast_p: FastP,
    /// `fast_0`: correct and any speed-up, i.e. the correctness rate over rows that have a reference.
    pub fast_0: FastP,
    /// Correct non-reference rows / non-reference rows; `null` when there are none.
    pub correct_fraction: Option<f64>,
    /// Geometric mean of the speed-ups of correct non-reference rows (KernelBench's summary); `null` when none.
    pub geomean_speedup: Option<f64>,
    /// Things the reader should know (missing references, suspicious speed-ups, where peaks came from).
    pub notes: Vec<String>,
}

/// Analyses every row of `results`; see the module documentation of [`super`] for the formulas.
pub fn analyze(results: &KernelResults, opts: &KernelOptions) -> KernelReport {
    let mut notes = Vec::new();
    let mut rows: Vec<KernelRow> = results.rows.iter().map(|r| base_row(r, opts)).collect();

    // Speed-ups against the reference of each (kernel, shape, dtype, hardware) group.
    let mut refs: BTreeMap<(&str, &str, &str, &str), f64> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.reference) {
        refs.insert((&r.kernel, &r.shape_key, &r.dtype, &r.hardware), r.median_ms);
    }
    let mut speedups = Vec::with_capacity(rows.len());
    for r in &rows {
        let reference =
            refs.get(&(r.kernel.as_str(), r.shape_key.as_str(), r.dtype.as_str(), r.hardware.as_str())).copied();
        let speedup = reference.and_then(|m| ratio(m, r.median_ms));
        speedups.push((reference, speedup));
    }
    for (r, (reference, speedup)) in rows.iter_mut().zip(speedups) {
        r.reference_median_ms = reference;
        r.speedup = speedup;
    }

    let variants: Vec<&KernelRow> = rows.iter().filter(|r| !r.reference).collect();
    let fast = |p: f64| {
        let count = variants.iter().filter(|r| r.correct == Some(true) && r.speedup.is_some_and(|s| s > p)).count();
        FastP { p, value: fraction(count, variants.len()), count, n: variants.len() }
    };
    let fast_p = fast(opts.p);
    let fast_0 = fast(0.0);
    let correct_fraction = fraction(variants.iter().filter(|r| r.correct == Some(true)).count(), variants.len());
    let logs: Vec<f64> = variants
        .iter()
        .filter(|r| r.correct == Some(true))
        .filter_map(|r| r.speedup)
        .filter(|s| *s > 0.0 && s.is_finite())
        .map(f64::ln)
        .collect();
    let geomean_speedup = mean(&logs).map(f64::exp);

    explain(&rows, &variants, opts, &mut notes);
    KernelReport {
        path: results.path.display().to_string(),
        format: results.format,
        rows,
        fast_p,
        fast_0,
        correct_fraction,
        geomean_speedup,
        notes,
    }
}

/// A row's own figures (everything but the speed-up).
fn base_row(r: &super::format::KernelResult, opts: &KernelOptions) -> KernelRow {
    let sorted = sorted_finite(&r.times_ms);
    let q = |p: f64| percentile_sorted(&sorted, p).unwrap_or(f64::NAN);
    let (median_ms, p25_ms, p75_ms) = (q(0.5), q(0.25), q(0.75));
    let median_s = median_ms / 1e3;
    let per_s = |amount: Option<f64>, scale: f64| amount.and_then(|a| ratio(a, median_s)).map(|x| x / scale);
    let achieved_tflops = per_s(r.flops, 1e12);
    let achieved_gbs = per_s(r.bytes, 1e9);
    let intensity = match (r.flops, r.bytes) {
        (Some(f), Some(b)) if b > 0.0 => Some(f / b),
        _ => None,
    };

    let (peak_tflops, peak_gbs, peak_source) = peaks(&r.hardware, opts);
    let mut roofline_tflops = None;
    let mut roofline_fraction = None;
    let mut bound = None;
    let flops_known = r.flops.is_some_and(|f| f > 0.0);
    if flops_known {
        let compute = peak_tflops;
        let memory = intensity.zip(peak_gbs).map(|(i, g)| i * g / 1e3);
        let roof = match (compute, memory) {
            (Some(c), Some(m)) if m < c => Some((m, RooflineBound::Memory)),
            (Some(c), _) => Some((c, RooflineBound::Compute)),
            (None, Some(m)) => Some((m, RooflineBound::Memory)),
            (None, None) => None,
        };
        if let Some((roof, b)) = roof {
            roofline_tflops = Some(roof);
            roofline_fraction = achieved_tflops.and_then(|a| ratio(a, roof));
            bound = Some(b);
        }
    } else if let (Some(a), Some(g)) = (achieved_gbs, peak_gbs) {
        roofline_fraction = ratio(a, g);
        bound = Some(RooflineBound::Memory);
    }

    KernelRow {
        kernel: r.kernel.clone(),
        variant: r.variant.clone(),
        reference: r.reference,
        correct: r.correct,
        shape: r.shape.clone(),
        shape_key: r.shape_key.clone(),
        dtype: r.dtype.clone(),
        hardware: r.hardware.clone(),
        line: r.line,
        n: sorted.len(),
        median_ms,
        p25_ms,
        p75_ms,
        iqr_ms: p75_ms - p25_ms,
        min_ms: sorted.first().copied().unwrap_or(f64::NAN),
        max_ms: sorted.last().copied().unwrap_or(f64::NAN),
        mean_ms: mean(&sorted).unwrap_or(f64::NAN),
        flops: r.flops,
        bytes: r.bytes,
        intensity,
        achieved_tflops,
        achieved_gbs,
        peak_tflops,
        peak_gbs,
        peak_source,
        roofline_tflops,
        roofline_fraction,
        bound,
        reference_median_ms: None,
        speedup: None,
    }
}

/// Per-chip peaks for `hardware`: the caller's overrides, else the catalog's (dense bf16 FLOP/s, HBM GB/s).
fn peaks(hardware: &str, opts: &KernelOptions) -> (Option<f64>, Option<f64>, Option<PeakSource>) {
    let chip = catalog::lookup(hardware).ok().map(|t| t.chip);
    let from_catalog = (chip.and_then(|c| c.peak_bf16_tflops), chip.and_then(|c| c.hbm_gbps));
    let tflops = opts.peak_tflops.map(|v| (v, true)).or(from_catalog.0.map(|v| (v, false)));
    let gbs = opts.peak_gbs.map(|v| (v, true)).or(from_catalog.1.map(|v| (v, false)));
    let source = match (tflops.map(|t| t.1), gbs.map(|g| g.1)) {
        (None, None) => None,
        (Some(true) | None, Some(true) | None) => Some(PeakSource::Override),
        (Some(false) | None, Some(false) | None) => Some(PeakSource::Catalog),
        _ => Some(PeakSource::Mixed),
    };
    (tflops.map(|t| t.0), gbs.map(|g| g.0), source)
}

/// a / b when both are finite and b > 0.
fn ratio(a: f64, b: f64) -> Option<f64> {
    (a.is_finite() && b.is_finite() && b > 0.0).then(|| a / b)
}

fn fraction(count: usize, n: usize) -> Option<f64> {
    (n > 0).then(|| count as f64 / n as f64)
}

fn label(r: &KernelRow) -> String {
    let mut s = format!("{}/{}", r.kernel, r.variant);
    for part in [&r.shape_key, &r.dtype] {
        if !part.is_empty() {
            s.push(' ');
            s.push_str(part);
        }
    }
    s
}

/// The report's notes.
fn explain(rows: &[KernelRow], variants: &[&KernelRow], opts: &KernelOptions, notes: &mut Vec<String>) {
    let no_reference: Vec<String> =
        variants.iter().filter(|r| r.reference_median_ms.is_none()).map(|r| label(r)).collect();
    if !no_reference.is_empty() {
        notes.push(format!(
            "{} row(s) have no reference row in their kernel/shape/dtype/hardware group, so no speed-up, and count as not fast in fast_p: {}",
            no_reference.len(),
            list(&no_reference)
        ));
    }
    let unknown: Vec<String> = variants.iter().filter(|r| r.correct.is_none()).map(|r| label(r)).collect();
    if !unknown.is_empty() {
        notes.push(format!(
            "{} row(s) do not say whether they are correct (`correct` missing) and count as not correct: {}",
            unknown.len(),
            list(&unknown)
        ));
    }
    let bad_refs: Vec<String> = rows.iter().filter(|r| r.reference && r.correct == Some(false)).map(label).collect();
    if !bad_refs.is_empty() {
        notes.push(format!("reference row(s) marked incorrect: {}", list(&bad_refs)));
    }
    let incorrect: Vec<String> = variants.iter().filter(|r| r.correct == Some(false)).map(|r| label(r)).collect();
    if !incorrect.is_empty() {
        notes.push(format!(
            "{} variant(s) failed their correctness check; their speed-ups do not count: {}",
            incorrect.len(),
            list(&incorrect)
        ));
    }
    let suspicious: Vec<String> = variants
        .iter()
        .filter(|r| r.correct == Some(true) && r.speedup.is_some_and(|s| s > EXCESSIVE_SPEEDUP))
        .map(|r| format!("{} ({:.1}×)", label(r), r.speedup.unwrap_or(0.0)))
        .collect();
    if !suspicious.is_empty() {
        notes.push(format!(
            "speed-ups above {EXCESSIVE_SPEEDUP}× are suspicious (KernelBench flags them: result reuse, skipped work, a too-easy input): {}",
            list(&suspicious)
        ));
    }
    let above: Vec<String> = rows
        .iter()
        .filter(|r| r.roofline_fraction.is_some_and(|f| f > 1.0))
        .map(|r| format!("{} ({:.0} %)", label(r), r.roofline_fraction.unwrap_or(0.0) * 100.0))
        .collect();
    if !above.is_empty() {
        notes.push(format!(
            "above the roofline, so the FLOP/byte counts or the peaks are wrong (bytes may undercount what the kernel moves if it reads from cache): {}",
            list(&above)
        ));
    }
    let mut no_peaks: Vec<&str> =
        rows.iter().filter(|r| r.peak_tflops.is_none() && r.peak_gbs.is_none()).map(|r| r.hardware.as_str()).collect();
    no_peaks.sort_unstable();
    no_peaks.dedup();
    for hw in no_peaks {
        let what = if hw.is_empty() {
            "rows without `hardware` have no peaks".to_string()
        } else if catalog::lookup(hw).is_ok() {
            format!("hardware `{hw}` has no peak figures in the catalog")
        } else {
            format!("hardware `{hw}` is not in the catalog")
        };
        notes.push(format!("{what}: no % of roofline (give peak_tflops / peak_gbs, per chip)"));
    }
    if rows.iter().any(|r| {
        r.roofline_fraction.is_none()
            && (r.peak_tflops.is_some() || r.peak_gbs.is_some())
            && r.flops.is_none()
            && r.bytes.is_none()
    }) {
        notes.push("rows without `flops` or `bytes` have no achieved throughput and no % of roofline".to_string());
    }
    let catalog_non_bf16 = rows.iter().any(|r| {
        matches!(r.peak_source, Some(PeakSource::Catalog | PeakSource::Mixed))
            && opts.peak_tflops.is_none()
            && r.flops.is_some()
            && !r.dtype.eq_ignore_ascii_case("bf16")
            && !r.dtype.eq_ignore_ascii_case("bfloat16")
    });
    if catalog_non_bf16 {
        notes.push(
            "catalog peaks are dense bf16 per chip; rows in other dtypes are measured against the bf16 peak (give peak_tflops for another dtype's peak)"
                .to_string(),
        );
    }
}

/// Up to 8 items, then how many more.
fn list(items: &[String]) -> String {
    const SHOWN: usize = 8;
    if items.len() <= SHOWN {
        items.join(", ")
    } else {
        format!("{}, and {} more", items[..SHOWN].join(", "), items.len() - SHOWN)
    }
}
