//! The resource-use series of a job: what the Job module samples while a job runs (without the workload's help)
//! and analysis reads for the memory verdict. Stored as JSON Lines at `resources/<attempt>/usage.jsonl` among
//! the job's artifacts (artifact kind `resources`), one sample
//! a line:
//!
//! ```json
//! {"time": 1764662400.25, "rss_bytes": 418381824, "cpu_s": 12.5}
//! ```
//!
//! - `time`: the wall clock when the sample was taken, seconds since the Unix epoch (the same clock as the
//!   `time` a workload may write on its metrics lines, so the two can be aligned by step).
//! - `rss_bytes`: resident memory of the job's processes together: on the local backend the process tree's
//!   RSS from `/proc`, on Slurm the running steps' total from `sstat`, on Kubernetes the pods' memory from the
//!   metrics API.
//! - `cpu_s`: CPU time the job's processes used so far (user + system, cumulative; on Kubernetes the metrics
//!   API's usage rate integrated over the sampling interval, an estimate).
//!
//! Pure: the line format and its reader. The reader shares the metrics reader's tolerance
//! ([`crate::metrics_jsonl::objects`]): a cut-off last line or a malformed one is skipped with a note; a sample
//! without a finite `time` and `rss_bytes` is skipped and counted.

use crate::metrics_jsonl::{json_number, objects, Note};
use serde::{Deserialize, Serialize};

/// The top-level folder of the series among a job's artifacts (with the trailing `/`).
pub const FOLDER: &str = "resources/";

/// The path of an attempt's series among the job's artifacts.
pub fn series_path(attempt: i64) -> String {
    format!("{FOLDER}{attempt}/usage.jsonl")
}

/// One sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ResourceSample {
    /// Seconds since the Unix epoch.
    pub time: f64,
    /// Resident memory of the job's processes, in bytes.
    pub rss_bytes: u64,
    /// Cumulative CPU time of the job's processes, in seconds.
    pub cpu_s: f64,
}

impl ResourceSample {
    /// The sample as one JSON line (with its newline).
    pub fn to_line(&self) -> String {
        format!("{{\"time\":{:.3},\"rss_bytes\":{},\"cpu_s\":{:.3}}}\n", self.time, self.rss_bytes, self.cpu_s)
    }
}

/// A series read back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResourceSeries {
    /// The samples, sorted by time.
    pub samples: Vec<ResourceSample>,
    /// What was skipped.
    pub notes: Vec<Note>,
}

/// Reads a series; see the module docs for what is skipped.
pub fn read(text: &str) -> ResourceSeries {
    let parsed = objects(text);
    let mut out = ResourceSeries { notes: parsed.notes, ..Default::default() };
    let (mut skipped, mut first) = (0usize, 0usize);
    for (line, obj) in &parsed.objects {
        let number = |k: &str| obj.get(k).and_then(json_number).filter(|x| x.is_finite());
        match (number("time"), number("rss_bytes")) {
            (Some(time), Some(rss)) if rss >= 0.0 => out.samples.push(ResourceSample {
                time,
                rss_bytes: rss as u64,
                cpu_s: number("cpu_s").unwrap_or(f64::NAN),
            }),
            _ => {
                if skipped == 0 {
                    first = *line;
                }
                skipped += 1;
            }
        }
    }
    if skipped > 0 {
        out.notes.push(Note {
            line: None,
            reason: format!(
                "{skipped} samples without a finite \"time\" and a non-negative \"rss_bytes\" skipped (first on \
                 line {first})"
            ),
        });
    }
    out.samples.sort_by(|a, b| a.time.total_cmp(&b.time));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_bad_ones_are_noted() {
        let a = ResourceSample { time: 1764662400.25, rss_bytes: 1 << 30, cpu_s: 1.5 };
        let b = ResourceSample { time: 1764662400.5, rss_bytes: (1 << 30) + 4096, cpu_s: 1.75 };
        let text = format!("{}{{\"time\": 1, \"rss_bytes\": -3}}\nnot json\n{}{{\"time\": 2", b.to_line(), a.to_line());
        let s = read(&text);
        assert_eq!(s.samples, vec![a, b]);
        let reasons: Vec<String> = s.notes.iter().map(|n| n.to_string()).collect();
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        assert!(reasons[0].starts_with("line 3: not valid JSON"), "{reasons:?}");
        assert!(reasons[1].contains("cut off"), "{reasons:?}");
        assert!(reasons[2].starts_with("1 samples without"), "{reasons:?}");
        assert_eq!(series_path(2), "resources/2/usage.jsonl");
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_keeps_samples_sorted(text in "\\PC*", lines in proptest::collection::vec((-1e12f64..1e12, 0u64..u64::MAX, -1e6f64..1e6), 0..20)) {
            let _ = read(&text);
            let series: String = lines
                .iter()
                .map(|(time, rss_bytes, cpu_s)| ResourceSample { time: *time, rss_bytes: *rss_bytes, cpu_s: *cpu_s }.to_line())
                .collect();
            let back = read(&series);
            proptest::prop_assert_eq!(back.samples.len(), lines.len());
            proptest::prop_assert!(back.samples.windows(2).all(|w| w[0].time <= w[1].time));
        }
    }
}
