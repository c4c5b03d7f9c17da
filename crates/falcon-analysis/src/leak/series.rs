//! Building the memory series of an experiment from what it has: the profile's memory at each step's end, the
//! memory metrics it logged, and the resident memory the Job module sampled (aligned to steps by the metrics'
//! wall clock when it can be). Pure: parsed inputs in, [`MemorySeries`] out.

use super::{MemorySeries, Per};
use falcon_core::metrics_jsonl::Record;
use falcon_core::resources::ResourceSample;
use std::collections::BTreeMap;

/// The longest a step's end may be after the last sample before it, for the sample to stand for that step:
/// this many sampling intervals (the median gap between samples), and at least [`MIN_ALIGN_GAP_S`].
const ALIGN_GAPS: f64 = 4.0;
/// See [`ALIGN_GAPS`], in seconds.
const MIN_ALIGN_GAP_S: f64 = 1.0;

/// When each step ended (wall clock, seconds since the epoch), from the `time` of the metrics lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepClock {
    /// `(step, time)`, sorted by step, one per step (the last line of a step wins).
    pub steps: Vec<(i64, f64)>,
}

impl StepClock {
    /// The clock of metrics records (those with a `time`).
    pub fn of(records: &[Record]) -> StepClock {
        let by_step: BTreeMap<i64, f64> = records.iter().filter_map(|r| Some((r.step, r.time?))).collect();
        StepClock { steps: by_step.into_iter().collect() }
    }
}

/// Whether a logged metric is memory in bytes: its name (the part after the last `/`) ends in `bytes` and
/// speaks of memory (`mem`, `hbm`, `rss`, `in_use`, `allocated`, `reserved`): `peak_hbm_bytes`,
/// `bytes_in_use`, `mem-allocated-bytes`, `train/rss_bytes`.
pub fn is_memory_metric(name: &str) -> bool {
    let leaf = name.rsplit('/').next().unwrap_or(name).to_ascii_lowercase();
    let about_memory =
        ["mem", "hbm", "rss", "in_use", "in-use", "allocated", "reserved"].iter().any(|w| leaf.contains(w));
    (leaf.ends_with("bytes") && about_memory) || leaf == "bytes_in_use"
}

/// The profile's series: memory in use at the end of each profiled step (`in_use[i]` for step `i` of the
/// capture), with the allocator's in-window peak.
pub fn profile_series(step_end_in_use_bytes: &[i64], peak_bytes: Option<i64>) -> MemorySeries {
    let points: Vec<(f64, f64)> =
        step_end_in_use_bytes.iter().enumerate().map(|(i, b)| (i as f64, *b as f64)).collect();
    let mut notes = Vec::new();
    if points.len() < 2 {
        notes.push(format!(
            "the profile covers {} step{} with memory in use: no growth across steps to measure",
            points.len(),
            if points.len() == 1 { "" } else { "s" }
        ));
    }
    MemorySeries {
        source: "profile".into(),
        per: Per::Step,
        points,
        peak_bytes: peak_bytes.filter(|p| *p > 0).map(|p| p as f64),
        notes,
    }
}

/// One series per memory metric the records carry ([`is_memory_metric`]), by step; non-finite values left
/// out. Sorted by name.
pub fn metric_series(records: &[Record]) -> Vec<MemorySeries> {
    let mut by_name: BTreeMap<&str, BTreeMap<i64, f64>> = BTreeMap::new();
    for r in records {
        for (name, value) in &r.values {
            if value.is_finite() && is_memory_metric(name) {
                by_name.entry(name.as_str()).or_default().insert(r.step, *value);
            }
        }
    }
    by_name
        .into_iter()
        .map(|(name, points)| MemorySeries {
            source: format!("metrics:{name}"),
            per: Per::Step,
            points: points.into_iter().map(|(s, v)| (s as f64, v)).collect(),
            peak_bytes: None,
            notes: Vec::new(),
        })
        .collect()
}

/// The sampled resident memory: by step when `clock` has steps the samples cover (the last sample before
/// each step's end, if recent enough), else by second since the first sample, with a note saying why.
pub fn rss_series(samples: &[ResourceSample], clock: &StepClock) -> MemorySeries {
    let mut notes = Vec::new();
    let mut series = MemorySeries {
        source: "sampled_rss".into(),
        per: Per::Second,
        points: Vec::new(),
        peak_bytes: None,
        notes: Vec::new(),
    };
    if samples.is_empty() {
        series.notes.push("no resource sample was taken".into());
        return series;
    }
    let mut gaps: Vec<f64> = samples.windows(2).map(|w| w[1].time - w[0].time).collect();
    gaps.sort_by(f64::total_cmp);
    let interval = gaps.get(gaps.len() / 2).copied().unwrap_or(0.0);
    let max_gap = (ALIGN_GAPS * interval).max(MIN_ALIGN_GAP_S);
    if !clock.steps.is_empty() {
        let aligned: Vec<(f64, f64)> = clock
            .steps
            .iter()
            .filter_map(|&(step, t)| {
                let n = samples.partition_point(|s| s.time <= t);
                let s = samples.get(n.checked_sub(1)?)?;
                (t - s.time <= max_gap).then_some((step as f64, s.rss_bytes as f64))
            })
            .collect();
        if aligned.len() * 2 >= clock.steps.len() && aligned.len() >= 2 {
            if aligned.len() < clock.steps.len() {
                notes.push(format!(
                    "{} of {} steps had no sample within {max_gap:.1} s before their end: left out",
                    clock.steps.len() - aligned.len(),
                    clock.steps.len()
                ));
            }
            series.per = Per::Step;
            series.points = aligned;
            series.peak_bytes = samples.iter().map(|s| s.rss_bytes as f64).reduce(f64::max);
            series.notes = notes;
            return series;
        }
        notes.push(format!(
            "the metrics' `time` of {} steps falls outside the samples (another clock?): memory by second",
            clock.steps.len()
        ));
    } else {
        notes.push("the metrics lines carry no `time`: memory by second, not by step".into());
    }
    let t0 = samples[0].time;
    series.points = samples.iter().map(|s| (s.time - t0, s.rss_bytes as f64)).collect();
    series.notes = notes;
    series
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(time: f64, mib: u64) -> ResourceSample {
        ResourceSample { time, rss_bytes: mib << 20, cpu_s: 0.0 }
    }

    #[test]
    fn memory_metrics_are_recognised_by_name() {
        for yes in ["peak_hbm_bytes", "bytes_in_use", "mem-allocated-bytes", "train/rss_bytes", "hbm_reserved_bytes"] {
            assert!(is_memory_metric(yes), "{yes}");
        }
        for no in ["loss", "tokens_per_s", "bytes_accessed", "model_flops", "memory_bandwidth_util"] {
            assert!(!is_memory_metric(no), "{no}");
        }
    }

    #[test]
    fn samples_align_to_step_ends_or_fall_back_to_seconds() {
        let samples: Vec<_> = (0..40u32).map(|i| sample(100.0 + 0.25 * f64::from(i), 100 + u64::from(i))).collect();
        // Steps end at 101.0, 101.5, ... (every other sample).
        let clock = StepClock { steps: (0..10).map(|s| (s, 101.0 + 0.5 * s as f64)).collect() };
        let s = rss_series(&samples, &clock);
        assert_eq!(s.per, Per::Step);
        assert_eq!(s.points[0], (0.0, (104u64 << 20) as f64));
        assert_eq!(s.points[1], (1.0, (106u64 << 20) as f64));
        assert!(s.notes.is_empty(), "{:?}", s.notes);
        assert_eq!(s.peak_bytes, Some((139u64 << 20) as f64));

        // A clock an hour off: by second, with a note.
        let off = StepClock { steps: (0..10).map(|s| (s, 3700.0 + s as f64)).collect() };
        let s = rss_series(&samples, &off);
        assert_eq!((s.per, s.points.len(), s.points[1].0), (Per::Second, 40, 0.25));
        assert!(s.notes[0].contains("outside the samples"), "{:?}", s.notes);
        let s = rss_series(&samples, &StepClock::default());
        assert!(s.notes[0].contains("no `time`"), "{:?}", s.notes);
        assert!(rss_series(&[], &clock).points.is_empty());
    }

    #[test]
    fn metrics_and_profile_give_series() {
        let rec = |step, v: f64| Record {
            line: 1,
            step,
            time: Some(step as f64),
            values: vec![("loss".into(), 1.0), ("peak_hbm_bytes".into(), v)],
            event: None,
        };
        let series = metric_series(&[rec(0, 1.0), rec(1, f64::NAN), rec(2, 3.0)]);
        assert_eq!(series.len(), 1);
        assert_eq!(series[0].source, "metrics:peak_hbm_bytes");
        assert_eq!(series[0].points, vec![(0.0, 1.0), (2.0, 3.0)]);
        let p = profile_series(&[10, 20, 30], Some(100));
        assert_eq!((p.points.len(), p.peak_bytes, p.notes.len()), (3, Some(100.0), 0));
        assert!(profile_series(&[], Some(5)).notes[0].contains("covers 0 steps"));
    }
}
