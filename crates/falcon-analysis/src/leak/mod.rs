//! The memory verdict: is an experiment's memory growing as a leak does?
//!
//! It reads every memory series an experiment has (`series.rs` builds them):
//! - `profile`: the XProf memory profile's memory in use at each step's end (device memory on TPU/GPU);
//! - `metrics:<name>`: memory the workload logged per step (`peak_hbm_bytes`, `bytes_in_use`, Megatron's
//!   `mem-allocated-bytes`, …: a metric whose name ends in `bytes` and speaks of memory);
//! - `sampled_rss`: the resident memory of the job's processes, which the Job module samples without the
//!   workload's help — by step when the metrics lines carry their wall clock (`time`), else by second.
//!
//! Each series gets the same test:
//! 1. **Warm-up** is left out: the first `max(2, ⌈n/10⌉)` points (the rule of every summary). On a series by
//!    step that starts at the first step, import, compilation and allocator start-up are already outside it.
//! 2. **Trend**: the Theil–Sen slope with Sen's 95 % interval ([`falcon_core::stats::trend`]) over the rest, at
//!    least [`falcon_core::stats::trend::MIN_TREND_POINTS`] points. Robust: a garbage-collector spike or a
//!    buffer briefly doubled barely moves it.
//! 3. **Leak suspected** when all of these hold: the interval's lower bound is above 0 (it grows, beyond noise);
//!    the growth over the run (slope × its span after warm-up) reaches the floor `max(64 MiB, 5 % of the
//!    series' peak)`, so allocator warm-up and small caches never trigger it; and, with at least 8 points, the
//!    second half still grows at least half as fast as the whole (a plateau — a cache that filled, memory that
//!    settled after start-up — is not a leak).
//!
//! The headline ([`MemoryVerdict`]) is the first series that suspects a leak, in the order device profile,
//! logged metrics, sampled RSS; when none does, the first with a trend in that order. Every series is kept in
//! `series[]` with its curve (at most [`CURVE_POINTS`] points, for a chart with its trend line).

mod series;

pub use series::{is_memory_metric, metric_series, profile_series, rss_series, StepClock};

use falcon_core::stats::trend::{theil_sen, MIN_TREND_POINTS};
use falcon_core::stats::warmup_len;
use serde::{Deserialize, Serialize};

/// The smallest growth over a run that can be a leak, in bytes (64 MiB).
pub const LEAK_FLOOR_BYTES: f64 = 64.0 * 1024.0 * 1024.0;
/// The floor's share of the series' peak, when larger (5 %).
pub const LEAK_FLOOR_PEAK_FRACTION: f64 = 0.05;
/// The confidence of the slope's interval.
pub const CONFIDENCE: f64 = 0.95;
/// The fewest points after warm-up for the "still growing" check of the second half.
pub const LATE_CHECK_POINTS: usize = 8;
/// How much of the whole slope the second half must keep.
pub const LATE_SLOPE_FRACTION: f64 = 0.5;
/// The most curve points kept per series.
pub const CURVE_POINTS: usize = 200;

/// What the x of a series counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Per {
    /// Training steps.
    Step,
    /// Seconds since the first sample.
    Second,
}

/// A memory series, ready for the test.
#[derive(Debug, Clone, PartialEq)]
pub struct MemorySeries {
    /// `profile`, `metrics:<name>` or `sampled_rss`.
    pub source: String,
    /// What x counts.
    pub per: Per,
    /// `(x, bytes)`, sorted by x.
    pub points: Vec<(f64, f64)>,
    /// The peak when the source knows it better than its points (the profile's in-window peak).
    pub peak_bytes: Option<f64>,
    /// What the builder left out or could not do.
    pub notes: Vec<String>,
}

/// The verdict on one series, without its curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SeriesSummary {
    /// `profile`, `metrics:<name>` or `sampled_rss`.
    pub source: Option<String>,
    /// What the growth is counted per.
    pub per: Option<Per>,
    /// The highest memory seen, in bytes.
    pub peak_bytes: Option<u64>,
    /// The trend's slope when per step, in bytes.
    pub growth_bytes_per_step: Option<f64>,
    /// The trend's slope when per second, in bytes.
    pub growth_bytes_per_s: Option<f64>,
    /// The slope's 95 % interval `[low, high]`, in the slope's unit.
    pub ci: Option<[f64; 2]>,
    /// Slope × the span after warm-up: what the run added, in bytes.
    pub growth_over_run_bytes: Option<f64>,
    /// The growth over the run a leak must reach: `max(64 MiB, 5 % of the peak)`.
    pub floor_bytes: Option<f64>,
    /// Points tested (after warm-up) and left out as warm-up.
    pub points: usize,
    pub warmup: usize,
    /// The verdict.
    pub leak_suspected: bool,
    /// Why, in one line.
    pub reason: String,
}

/// One series' verdict with its curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SeriesVerdict {
    #[serde(flatten)]
    pub summary: SeriesSummary,
    /// `[x, bytes]`, at most [`CURVE_POINTS`] (evenly thinned), warm-up included.
    pub curve: Vec<[f64; 2]>,
    /// The trend line `bytes ≈ intercept + slope·x` (slope: the growth above), when there is one.
    pub intercept: Option<f64>,
    /// The x where warm-up ends.
    pub warmup_until: Option<f64>,
    /// What the series' builder left out.
    pub notes: Vec<String>,
}

/// The memory verdict of an experiment: the headline series' summary, then every series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryVerdict {
    #[serde(flatten)]
    pub headline: SeriesSummary,
    /// Every series tested, in the order profile, metrics, sampled RSS.
    pub series: Vec<SeriesVerdict>,
    /// What could not be read (a missing profile row, an unreadable series).
    pub notes: Vec<String>,
}

/// The verdict on one series (see the module docs).
pub fn test_series(series: &MemorySeries) -> SeriesVerdict {
    let pts = &series.points;
    let peak = series.peak_bytes.or_else(|| pts.iter().map(|p| p.1).reduce(f64::max)).filter(|p| p.is_finite());
    let warmup = warmup_len(pts.len());
    let tested = &pts[warmup.min(pts.len())..];
    let floor = LEAK_FLOOR_BYTES.max(LEAK_FLOOR_PEAK_FRACTION * peak.unwrap_or(0.0));
    let unit = match series.per {
        Per::Step => "step",
        Per::Second => "s",
    };
    let mut summary = SeriesSummary {
        source: Some(series.source.clone()),
        per: Some(series.per),
        peak_bytes: peak.map(|p| p.max(0.0) as u64),
        growth_bytes_per_step: None,
        growth_bytes_per_s: None,
        ci: None,
        growth_over_run_bytes: None,
        floor_bytes: Some(floor),
        points: tested.len(),
        warmup,
        leak_suspected: false,
        reason: String::new(),
    };
    let mut verdict = SeriesVerdict {
        curve: thin(pts, CURVE_POINTS).into_iter().map(|(x, y)| [x, y]).collect(),
        intercept: None,
        warmup_until: tested.first().map(|p| p.0),
        notes: series.notes.clone(),
        summary: summary.clone(),
    };
    let trend = if tested.len() >= MIN_TREND_POINTS { theil_sen(tested, CONFIDENCE) } else { None };
    let Some(trend) = trend else {
        summary.reason = match series.notes.first() {
            Some(note) if pts.len() < 2 => note.clone(),
            _ => format!(
                "{} point{} after warm-up ({} in all): too few for a trend (at least {MIN_TREND_POINTS})",
                tested.len(),
                if tested.len() == 1 { "" } else { "s" },
                pts.len()
            ),
        };
        verdict.summary = summary;
        return verdict;
    };
    let span = tested.last().map_or(0.0, |l| l.0) - tested[0].0;
    let over_run = trend.slope * span;
    match series.per {
        Per::Step => summary.growth_bytes_per_step = Some(trend.slope),
        Per::Second => summary.growth_bytes_per_s = Some(trend.slope),
    }
    summary.ci = Some([trend.ci_low, trend.ci_high]);
    summary.growth_over_run_bytes = Some(over_run);
    verdict.intercept = Some(trend.intercept);

    let late = (tested.len() >= LATE_CHECK_POINTS)
        .then(|| theil_sen(&tested[tested.len() / 2..], CONFIDENCE))
        .flatten()
        .map(|t| t.slope);
    let rate = |x: f64| format!("{}/{unit}", signed_size(x));
    let interval = format!("95 % CI {} to {}", rate(trend.ci_low), rate(trend.ci_high));
    let plural = if series.per == Per::Step && span != 1.0 { "s" } else { "" };
    let during = format!("over {} {unit}{plural} after warm-up", fmt_span(span));
    summary.reason = if trend.ci_low <= 0.0 {
        format!("no growth beyond noise: {} ({interval}) {during}", rate(trend.slope))
    } else if over_run < floor {
        format!(
            "grows {} ({interval}), {} {during}: under the {} floor (the larger of 64 MiB and 5 % of the {} peak)",
            rate(trend.slope),
            signed_size(over_run),
            size(floor),
            size(peak.unwrap_or(0.0)),
        )
    } else if let Some(late) = late.filter(|l| *l < LATE_SLOPE_FRACTION * trend.slope) {
        format!(
            "grew {} ({interval}) but the second half only {}: it levels off (a cache filling, memory settling), \
             not a leak",
            rate(trend.slope),
            rate(late)
        )
    } else {
        summary.leak_suspected = true;
        format!(
            "leak suspected: grows {} ({interval}), {} {during}, above the {} floor",
            rate(trend.slope),
            signed_size(over_run),
            size(floor)
        )
    };
    verdict.summary = summary;
    verdict
}

/// The verdict over every series of an experiment (ordered profile, metrics, sampled RSS by the caller).
pub fn verdict(series: &[MemorySeries], notes: Vec<String>) -> MemoryVerdict {
    let tested: Vec<SeriesVerdict> = series.iter().map(test_series).collect();
    let headline = tested
        .iter()
        .find(|v| v.summary.leak_suspected)
        .or_else(|| tested.iter().find(|v| v.summary.ci.is_some()))
        .or_else(|| tested.first())
        .map(|v| v.summary.clone())
        .unwrap_or_else(|| SeriesSummary {
            source: None,
            per: None,
            peak_bytes: None,
            growth_bytes_per_step: None,
            growth_bytes_per_s: None,
            ci: None,
            growth_over_run_bytes: None,
            floor_bytes: None,
            points: 0,
            warmup: 0,
            leak_suspected: false,
            reason: "no memory series: no sampled resource use, no memory metric logged, no memory profile".into(),
        });
    MemoryVerdict { headline, series: tested, notes }
}

/// At most `max` points, evenly spaced by index, the first and the last kept.
fn thin(pts: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    if pts.len() <= max || max < 2 {
        return pts.to_vec();
    }
    (0..max).map(|i| pts[i * (pts.len() - 1) / (max - 1)]).collect()
}

fn fmt_span(span: f64) -> String {
    if span.fract() == 0.0 {
        format!("{span:.0}")
    } else {
        format!("{span:.1}")
    }
}

/// `512 KiB`, `8.0 MiB`, `1.25 GiB`.
pub fn size(bytes: f64) -> String {
    let b = bytes.abs();
    if b >= 1024f64.powi(3) {
        format!("{:.2} GiB", bytes / 1024f64.powi(3))
    } else if b >= 1024f64.powi(2) {
        format!("{:.1} MiB", bytes / 1024f64.powi(2))
    } else if b >= 1024.0 {
        format!("{:.0} KiB", bytes / 1024.0)
    } else {
        format!("{bytes:.0} B")
    }
}

fn signed_size(bytes: f64) -> String {
    if bytes >= 0.0 {
        format!("+{}", size(bytes))
    } else {
        size(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use falcon_core::stats::rng::Rng;

    const MIB: f64 = 1024.0 * 1024.0;

    fn by_step(source: &str, ys: impl IntoIterator<Item = f64>) -> MemorySeries {
        MemorySeries {
            source: source.into(),
            per: Per::Step,
            points: ys.into_iter().enumerate().map(|(i, y)| (i as f64, y)).collect(),
            peak_bytes: None,
            notes: vec![],
        }
    }

    #[test]
    fn a_steady_leak_is_called_with_its_rate() {
        let mut rng = Rng::new(1);
        let s = by_step("sampled_rss", (0..40).map(|i| 300.0 * MIB + 8.0 * MIB * f64::from(i) + rng.normal(0.0, MIB)));
        let v = test_series(&s);
        assert!(v.summary.leak_suspected, "{}", v.summary.reason);
        let g = v.summary.growth_bytes_per_step.unwrap();
        assert!((g / MIB - 8.0).abs() < 0.3, "{}", g / MIB);
        let [lo, hi] = v.summary.ci.unwrap();
        assert!(lo > 0.0 && lo <= g && g <= hi, "{lo} {g} {hi}");
        assert_eq!((v.summary.points, v.summary.warmup), (36, 4));
        assert!(v.summary.reason.starts_with("leak suspected: grows +8.0 MiB/step"), "{}", v.summary.reason);
    }

    #[test]
    fn flat_noise_spikes_warm_up_and_plateaus_are_not_leaks() {
        let mut rng = Rng::new(2);
        // Flat with noise and a few GC spikes.
        let flat = by_step(
            "sampled_rss",
            (0..200).map(|i| 500.0 * MIB + rng.normal(0.0, 4.0 * MIB) + if i % 37 == 0 { 200.0 * MIB } else { 0.0 }),
        );
        let v = test_series(&flat);
        assert!(!v.summary.leak_suspected, "{}", v.summary.reason);
        // Growth that is real but small: 0.2 MiB a step over 100 steps = 20 MiB < 64 MiB.
        let small = by_step("sampled_rss", (0..100).map(|i| 400.0 * MIB + 0.2 * MIB * f64::from(i)));
        let v = test_series(&small);
        assert!(
            !v.summary.leak_suspected && v.summary.reason.contains("under the 64.0 MiB floor"),
            "{}",
            v.summary.reason
        );
        // Grows fast, then levels off: a cache filling up.
        let plateau = by_step("sampled_rss", (0..60).map(|i| 1000.0 * MIB * (1.0 - (-f64::from(i) / 15.0).exp())));
        let v = test_series(&plateau);
        assert!(!v.summary.leak_suspected && v.summary.reason.contains("levels off"), "{}", v.summary.reason);
        // Allocator warm-up in the first steps only.
        let warm =
            by_step("sampled_rss", (0..50).map(|i| if i < 3 { 100.0 * MIB * f64::from(i) } else { 300.0 * MIB }));
        assert!(!test_series(&warm).summary.leak_suspected);
    }

    #[test]
    fn too_few_points_and_no_series_say_so() {
        let v = test_series(&by_step("profile", [1.0, 2.0, 3.0]));
        assert!(!v.summary.leak_suspected && v.summary.ci.is_none());
        assert!(v.summary.reason.contains("too few for a trend"), "{}", v.summary.reason);
        let none = verdict(&[], vec![]);
        assert_eq!(none.headline.source, None);
        assert!(none.headline.reason.starts_with("no memory series"));
    }

    #[test]
    fn the_headline_is_the_first_leaking_series() {
        let flat = by_step("profile", (0..30).map(|_| 1e9));
        let leak = by_step("sampled_rss", (0..30).map(|i| 1e8 + 1e7 * f64::from(i)));
        let v = verdict(&[flat.clone(), leak], vec![]);
        assert_eq!(v.headline.source.as_deref(), Some("sampled_rss"));
        assert!(v.headline.leak_suspected);
        let v = verdict(&[flat], vec![]);
        assert_eq!((v.headline.source.as_deref(), v.headline.leak_suspected), (Some("profile"), false));
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(json["source"], "profile");
        assert_eq!(json["growth_bytes_per_step"], 0.0);
        assert!(json["series"][0]["curve"].as_array().unwrap().len() == 30);
        let back: MemoryVerdict = serde_json::from_value(json).unwrap();
        assert_eq!(back, v);
    }
}
