//! What an experiment's goodput is computed from, as EXP and the Job module recorded it: each attempt of its job
//! (queued, running, ended, and how: from the job's status log), the devices it held (its accelerator shape's, from
//! its job's or its own spec), and the workload's step clock (every metrics line with a `time`, event lines
//! included, every attempt's lines kept — a step a restart repeated appears twice), and the host wait its trace
//! analysis found, when it has one. The computation is analysis's (`falcon_analysis::goodput`); the application
//! layer joins the two. Nothing here parses a profile.

use crate::error::Result;
use crate::Exp;
use falcon_core::artifact::ArtifactKind;
use falcon_core::catalog;
use falcon_core::config::Platform;
use falcon_core::ids::ExperimentId;
use falcon_core::metrics_jsonl::{self, StepColumn};
use falcon_core::spec::Resources;
use falcon_core::status::JobStatus;
use falcon_infra::meta::JobTransition;
use std::collections::BTreeMap;

/// One attempt of a job: when it was queued, started running and ended (milliseconds since the epoch).
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptTimes {
    /// From 1.
    pub attempt: u32,
    pub queued_ms: Option<i64>,
    pub running_ms: Option<i64>,
    pub ended_ms: Option<i64>,
    /// How it ended.
    pub ended: Option<JobStatus>,
    /// The exit code its ending recorded, if any.
    pub exit_code: Option<i64>,
}

/// One line of the workload's step clock.
#[derive(Debug, Clone, PartialEq)]
pub struct ClockLine {
    pub step: i64,
    /// Seconds since the epoch.
    pub time_s: f64,
    pub step_time_s: Option<f64>,
    pub event: Option<String>,
    pub event_s: Option<f64>,
}

/// Everything goodput needs of one experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct GoodputRecord {
    pub id: ExperimentId,
    pub attempts: Vec<AttemptTimes>,
    /// Devices each attempt held: its accelerator shape's (chips × slices; cores for `cpu`), as the job placed on the
    /// pool asked for them, else as the experiment's spec did; at least 1 (also when the accelerator is unknown).
    pub chips: f64,
    pub clock: Vec<ClockLine>,
    /// The pool the job last ran on.
    pub pool: Option<String>,
    /// Of the profiled steps' time, the share the device waited on the host (its trace analysis row's
    /// `host_bound_fraction`), when a trace was analysed.
    pub host_wait_fraction: Option<f64>,
}

impl Exp {
    /// The attempts, devices and step clock of an experiment.
    pub async fn goodput_record(&self, id: ExperimentId) -> Result<GoodputRecord> {
        let record = self.meta.get_experiment(id).await?;
        let (attempts, pool, job_spec) = match record.job {
            Some(job) => {
                let history = self.meta.job_history(job).await?;
                let job = self.meta.get_job(job).await?;
                (attempts_of(&history), job.pool, Some(job.spec))
            }
            None => (Vec::new(), None, None),
        };
        let chips = job_spec.as_ref().and_then(devices_of).or_else(|| devices_of(&record.spec)).unwrap_or(1);
        let chips = f64::from(chips.max(1));
        let mut clock = Vec::new();
        for a in self.meta.list_artifacts(id, Some(ArtifactKind::Metrics)).await? {
            if !a.key.ends_with(".jsonl") {
                continue;
            }
            let data = self.artifacts.get_verified(&a.key, a.size, &a.sha256).await?;
            clock.extend(clock_lines(&String::from_utf8_lossy(&data)));
        }
        let host_wait_fraction = self
            .meta
            .analysis_summaries(id)
            .await?
            .into_iter()
            .find(|a| a.tool == falcon_core::summary::TRACE_TOOL && a.details.get("error").is_none())
            .and_then(|a| a.details.get("host_bound_fraction").and_then(|f| f.as_f64()))
            .filter(|f| f.is_finite());
        Ok(GoodputRecord { id, attempts, chips, clock, pool, host_wait_fraction })
    }
}

/// Devices a spec's `resources` ask for (an experiment's spec or its job's: one vocabulary), from the accelerator
/// shape: chips × slices (`h100-80gb-8` is 8, `h100-80gb-1` or `h100-80gb` with `devices: 1` is 1), cores for
/// `cpu` (`devices`, default 1); at least 1. `None` when it names no known accelerator.
pub fn devices_of(spec: &serde_json::Value) -> Option<u32> {
    let resources: Resources = serde_json::from_value(spec.get("resources")?.clone()).ok()?;
    let shape = resources
        .devices
        .and_then(|n| catalog::gpu_shape(&resources.accelerator, n))
        .or_else(|| catalog::lookup(&resources.accelerator).ok())?;
    let devices = match shape.platform {
        Platform::Cpu => resources.devices.unwrap_or(1),
        _ => shape.chips.saturating_mul(resources.slices.max(1)),
    };
    Some(devices.max(1))
}

/// The metric an ended experiment's goodput is kept as, beside its logged metrics (higher is better).
pub const GOODPUT_METRIC: &str = "goodput_percent";

impl Exp {
    /// Keeps a value computed from the experiment rather than logged by it (its [`GOODPUT_METRIC`]) as a metric summary
    /// of one sample, so that goals, history and comparisons read it like any other; the config's run noise is
    /// refreshed. A later re-summary of the metrics files (`--warmup`) leaves it out.
    pub async fn put_derived_metric(&self, id: ExperimentId, metric: &str, value: f64) -> Result<()> {
        let record = self.meta.get_experiment(id).await?;
        let mut all = self.meta.metric_summaries(id).await?;
        all.retain(|m| m.metric != metric);
        all.push(falcon_infra::meta::MetricSummary {
            metric: metric.to_string(),
            count: 1,
            mean: value,
            median: value,
            p90: value,
            min: value,
            max: value,
            last: value,
            spread: Some(0.0),
        });
        self.meta.put_metric_summaries(id, &all).await?;
        self.refresh_noise(&record.config_hash).await
    }
}

/// The attempt a stored metrics file belongs to: `n` for a key with an `attempts/<n>/` part (a retried attempt's
/// files), else 1.
pub fn attempt_of_key(key: &str) -> u32 {
    key.split('/')
        .collect::<Vec<_>>()
        .windows(2)
        .find_map(|w| (w[0] == "attempts").then(|| w[1].parse().ok()).flatten())
        .unwrap_or(1)
}

/// The attempts in a job's status log: each attempt's first `QUEUED`, its placement and its first ending (its
/// status and exit code). The placement is when the job was handed to a backend (`SUBMITTED`) when it went on to run
/// without waiting there, else when it started `RUNNING`: a backend that queues it (`PENDING`, Slurm waiting for
/// nodes) has not given it resources yet, and one that starts it at once (the local runner) is only seen running at
/// its next check.
pub fn attempts_of(history: &[JobTransition]) -> Vec<AttemptTimes> {
    #[derive(Default)]
    struct Seen {
        submitted: Option<i64>,
        pending: bool,
        running: Option<i64>,
    }
    let mut by: BTreeMap<i64, (AttemptTimes, Seen)> = BTreeMap::new();
    for t in history {
        let (a, seen) = by.entry(t.attempt).or_insert_with(|| {
            let attempt = u32::try_from(t.attempt.max(0)).unwrap_or(u32::MAX);
            let a = AttemptTimes {
                attempt,
                queued_ms: None,
                running_ms: None,
                ended_ms: None,
                ended: None,
                exit_code: None,
            };
            (a, Seen::default())
        });
        match t.to {
            JobStatus::Queued => {
                a.queued_ms.get_or_insert(t.at.0);
            }
            JobStatus::Submitted => {
                seen.submitted.get_or_insert(t.at.0);
            }
            JobStatus::Pending => seen.pending = true,
            JobStatus::Running => {
                seen.running.get_or_insert(t.at.0);
            }
            s if s.is_terminal() && a.ended.is_none() => {
                a.ended_ms = Some(t.at.0);
                a.ended = Some(s);
                a.exit_code = t.exit_code;
            }
            _ => {}
        }
    }
    by.into_values()
        .map(|(mut a, seen)| {
            a.running_ms = match (seen.running, seen.pending) {
                (Some(running), true) => Some(running),
                (Some(running), false) => Some(seen.submitted.map_or(running, |s| s.min(running))),
                // A short job can end between two checks, never seen running: it ran from its submission.
                (None, false) if a.ended.is_some() => seen.submitted,
                (None, _) => None,
            };
            a
        })
        .collect()
}

/// The step clock of a metrics file: its lines with a step and a `time`, in file order.
pub fn clock_lines(text: &str) -> Vec<ClockLine> {
    let read = metrics_jsonl::read(text, StepColumn::Named("step"));
    read.records
        .into_iter()
        .filter_map(|r| {
            let value = |name: &str| r.values.iter().find(|(n, _)| n == name).map(|&(_, v)| v);
            Some(ClockLine {
                step: r.step,
                time_s: r.time?,
                step_time_s: value("step_time_s"),
                event_s: value("event_s"),
                event: r.event,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use falcon_core::time::Millis;

    fn t(to: JobStatus, at: i64, attempt: i64) -> JobTransition {
        JobTransition { from: None, to, at: Millis(at), reason: String::new(), exit_code: None, attempt }
    }

    #[test]
    fn a_retried_job_has_two_attempts() {
        use JobStatus::*;
        let history = [
            t(Queued, 0, 1),
            t(Submitted, 10, 1),
            t(Running, 20, 1),
            t(Failed, 500, 1),
            t(Queued, 500, 2),
            t(Submitted, 510, 2),
            t(Pending, 515, 2),
            t(Running, 600, 2),
            t(Succeeded, 900, 2),
        ];
        let a = attempts_of(&history);
        assert_eq!(a.len(), 2);
        // Attempt 1 ran as soon as it was submitted; attempt 2 waited on the backend (PENDING) until 600.
        assert_eq!(
            (a[0].queued_ms, a[0].running_ms, a[0].ended_ms, a[0].ended),
            (Some(0), Some(10), Some(500), Some(Failed))
        );
        assert_eq!(
            (a[1].queued_ms, a[1].running_ms, a[1].ended_ms, a[1].ended),
            (Some(500), Some(600), Some(900), Some(Succeeded))
        );
    }

    #[test]
    fn an_ending_keeps_its_exit_code() {
        use JobStatus::*;
        let mut failed = t(Failed, 500, 1);
        failed.exit_code = Some(3);
        let mut done = t(Succeeded, 900, 2);
        done.exit_code = Some(0);
        let a = attempts_of(&[t(Queued, 0, 1), t(Running, 20, 1), failed, t(Queued, 500, 2), t(Running, 600, 2), done]);
        assert_eq!((a[0].ended, a[0].exit_code), (Some(Failed), Some(3)));
        assert_eq!((a[1].ended, a[1].exit_code), (Some(Succeeded), Some(0)));
    }

    #[test]
    fn devices_come_from_the_accelerator_shape() {
        let of = |resources: serde_json::Value| devices_of(&serde_json::json!({ "resources": resources }));
        assert_eq!(of(serde_json::json!({"accelerator": "h100-80gb-8"})), Some(8));
        assert_eq!(of(serde_json::json!({"accelerator": "h100-80gb-1"})), Some(1), "a one-GPU pool");
        assert_eq!(of(serde_json::json!({"accelerator": "h100-80gb", "devices": 1})), Some(1), "the model and devices");
        assert_eq!(of(serde_json::json!({"accelerator": "h100-80gb-8", "slices": 2})), Some(16), "two nodes");
        assert_eq!(of(serde_json::json!({"accelerator": "v5e-16"})), Some(16));
        assert_eq!(of(serde_json::json!({"accelerator": "cpu"})), Some(1), "a CPU job: one device");
        assert_eq!(of(serde_json::json!({"accelerator": "cpu", "devices": 4})), Some(4));
        assert_eq!(of(serde_json::json!({"accelerator": "no-such-chip"})), None);
        assert_eq!(devices_of(&serde_json::json!({"name": "no resources"})), None);
    }

    #[test]
    fn a_key_names_its_attempt() {
        assert_eq!(attempt_of_key("experiments/e-1/metrics.jsonl"), 1);
        assert_eq!(attempt_of_key("experiments/e-1/attempts/3/sub/metrics.jsonl"), 3);
        assert_eq!(attempt_of_key("experiments/e-1/attempts/x/metrics.jsonl"), 1);
    }

    #[test]
    fn the_clock_keeps_timed_lines_and_events() {
        let text = "{\"step\": 1, \"time\": 10.5, \"step_time_s\": 3, \"loss\": 2}\n{\"step\": 2, \"loss\": 1}\n\
                    {\"step\": 2, \"time\": 12, \"event\": \"checkpoint\", \"event_s\": 1}\n";
        let c = clock_lines(text);
        assert_eq!(c.len(), 2, "a line without `time` is not on the clock");
        assert_eq!((c[0].step, c[0].time_s, c[0].step_time_s, c[0].event.as_deref()), (1, 10.5, Some(3.0), None));
        assert_eq!((c[1].event.as_deref(), c[1].event_s), (Some("checkpoint"), Some(1.0)));
    }
}
