//! Sampling each active job's resource use — resident memory and CPU time — on a timer of its own, every
//! `[jobs] sample_interval_ms` (250 ms by default), independent of the poll tick: the series behind every
//! experiment's memory curve, taken without the workload's help.
//!
//! Each tick of the timer asks the backend of every tracked job for a [`Sample`], at most one request per job in
//! flight (a slow `sstat` never piles up). The series of an attempt is kept in memory and written, like a log,
//! as a live snapshot to `<prefix>/resources/<attempt>/usage.jsonl` whenever the job's outputs are copied
//! ([`falcon_core::resources`] has the line format). Invariants:
//! - A series holds at most [`MAX_SAMPLES`] samples: when full, every other one is dropped (the first and the
//!   newest kept), so its memory and its upload stay bounded however long the job runs.
//! - A worker that stops writes the series of its running jobs first (`JobManager::flush_samples`), and a worker
//!   that restarts merges the samples an earlier worker stored with its own, so nothing stored is overwritten by
//!   a shorter series; a worker killed loses at most the samples since its last copy (`log_interval`).
//! - A backend that cannot sample says why ([`Sample::Unsupported`]); the reason is recorded once with the
//!   job's outputs (shown as skipped), and the job is not asked again. Failed requests are retried at the next
//!   tick; a job with failures and no sample at its end records the last failure the same way.

use crate::backend::{Backend, BackendRef, CpuUse, Sample};
use falcon_core::ids::JobId;
use falcon_core::resources::{series_path, ResourceSample};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The most samples one attempt's series keeps (see the module docs).
pub const MAX_SAMPLES: usize = 10_000;

/// How long one sample request may take before it counts as failed.
const SAMPLE_TIMEOUT: Duration = Duration::from_secs(10);

struct Sampled {
    backend: Arc<dyn Backend>,
    handle: BackendRef,
    attempt: i64,
    /// The key prefix of the job's outputs.
    prefix: String,
    series: Vec<ResourceSample>,
    /// A request is in flight.
    busy: bool,
    /// Changed since the last upload.
    dirty: bool,
    /// Samples an earlier worker stored were merged (or there were none).
    merged: bool,
    /// Why the backend cannot sample this job.
    unsupported: Option<String>,
    failures: u32,
    last_failure: Option<String>,
}

/// What to write for a job's series at a copy of its outputs.
pub(crate) enum Upload {
    /// The series as JSON Lines, at `rel` among the job's outputs; `merge` says whether samples an earlier
    /// worker stored there must be merged first.
    Series { rel: String, attempt: i64, text: Vec<u8>, merge: bool },
    /// No series: record `rel` as skipped with this reason.
    Skip { rel: String, reason: String },
}

/// The jobs being sampled and their series.
#[derive(Default)]
pub(crate) struct Sampling {
    jobs: Mutex<HashMap<JobId, Sampled>>,
}

impl Sampling {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<JobId, Sampled>> {
        self.jobs.lock().expect("sampling map lock")
    }

    /// Starts sampling a job's attempt (a no-op when it is sampled already).
    pub(crate) fn track(
        &self,
        job: JobId,
        attempt: i64,
        backend: Arc<dyn Backend>,
        handle: BackendRef,
        prefix: String,
    ) {
        let mut jobs = self.lock();
        if jobs.get(&job).is_some_and(|s| s.attempt == attempt && s.handle == handle) {
            return;
        }
        jobs.insert(
            job,
            Sampled {
                backend,
                handle,
                attempt,
                prefix,
                series: Vec::new(),
                busy: false,
                dirty: false,
                merged: false,
                unsupported: None,
                failures: 0,
                last_failure: None,
            },
        );
    }

    /// Every job sampled now, with its key prefix.
    pub(crate) fn tracked(&self) -> Vec<(JobId, String)> {
        self.lock().iter().map(|(id, s)| (*id, s.prefix.clone())).collect()
    }

    /// Stops sampling a job (it ended).
    pub(crate) fn forget(&self, job: JobId) {
        self.lock().remove(&job);
    }

    /// One tick of the timer: a sample request for every tracked job without one in flight.
    pub(crate) fn tick(self: &Arc<Self>) {
        let due: Vec<(JobId, i64, Arc<dyn Backend>, BackendRef)> = {
            let mut jobs = self.lock();
            jobs.iter_mut()
                .filter(|(_, s)| !s.busy && s.unsupported.is_none())
                .map(|(id, s)| {
                    s.busy = true;
                    (*id, s.attempt, s.backend.clone(), s.handle.clone())
                })
                .collect()
        };
        for (job, attempt, backend, handle) in due {
            let me = Arc::clone(self);
            tokio::spawn(async move {
                let outcome = tokio::time::timeout(SAMPLE_TIMEOUT, backend.sample(&handle)).await;
                let time = now_s();
                let mut jobs = me.lock();
                let Some(s) = jobs.get_mut(&job).filter(|s| s.attempt == attempt) else { return };
                s.busy = false;
                match outcome {
                    Ok(Ok(sample)) => s.add(time, sample),
                    Ok(Err(e)) => s.failed(e.to_string()),
                    Err(_) => s.failed(format!("no answer within {} s", SAMPLE_TIMEOUT.as_secs())),
                }
            });
        }
    }

    /// What to write for `job` now: its series when it changed (always at the `last` copy), or the reason it
    /// has none once.
    pub(crate) fn upload(&self, job: JobId, last: bool) -> Option<Upload> {
        let mut jobs = self.lock();
        let s = jobs.get_mut(&job)?;
        let rel = series_path(s.attempt);
        if let Some(reason) = &s.unsupported {
            return Some(Upload::Skip { rel, reason: format!("resource use not sampled: {reason}") });
        }
        if s.series.is_empty() {
            return match (&s.last_failure, last) {
                (Some(e), true) => Some(Upload::Skip {
                    rel,
                    reason: format!("resource use not sampled: {} requests failed, the last: {e}", s.failures),
                }),
                _ => None,
            };
        }
        if !s.dirty && !last {
            return None;
        }
        s.dirty = false;
        let text = s.series.iter().map(ResourceSample::to_line).collect::<String>().into_bytes();
        Some(Upload::Series { rel, attempt: s.attempt, text, merge: !s.merged })
    }

    /// Merges the samples an earlier worker stored for `job`'s attempt (older than this worker's first).
    pub(crate) fn merge_stored(&self, job: JobId, attempt: i64, stored: &[ResourceSample]) {
        let mut jobs = self.lock();
        let Some(s) = jobs.get_mut(&job).filter(|s| s.attempt == attempt) else { return };
        s.merged = true;
        let first = s.series.first().map_or(f64::INFINITY, |x| x.time);
        let mut earlier: Vec<ResourceSample> = stored.iter().filter(|x| x.time < first).copied().collect();
        if !earlier.is_empty() {
            earlier.append(&mut s.series);
            s.series = earlier;
            thin(&mut s.series);
            s.dirty = true;
        }
    }
}

impl Sampled {
    fn add(&mut self, time: f64, sample: Sample) {
        match sample {
            Sample::Usage { rss_bytes, cpu } => {
                let cpu_s = match cpu {
                    CpuUse::Total(s) => s,
                    // Integrated from the previous sample (trapezoid-free: the rate now, over the gap).
                    CpuUse::Rate(cores) => match self.series.last() {
                        Some(prev) => prev.cpu_s + cores.max(0.0) * (time - prev.time).max(0.0),
                        None => 0.0,
                    },
                };
                self.series.push(ResourceSample { time, rss_bytes, cpu_s });
                thin(&mut self.series);
                self.dirty = true;
            }
            Sample::NoReading => {}
            Sample::Unsupported(why) => self.unsupported = Some(why),
        }
    }

    fn failed(&mut self, why: String) {
        if self.failures == 0 {
            tracing::warn!("sampling the resource use of {} failed (retried each tick): {why}", self.handle.0);
        }
        self.failures += 1;
        self.last_failure = Some(why);
    }
}

/// Halves a series over [`MAX_SAMPLES`]: every other sample is dropped, the first and the newest kept.
fn thin(series: &mut Vec<ResourceSample>) {
    if series.len() <= MAX_SAMPLES {
        return;
    }
    let last = *series.last().expect("a full series");
    let mut i = 0;
    series.retain(|_| {
        i += 1;
        i % 2 == 1
    });
    if series.last() != Some(&last) {
        series.push(last);
    }
}

fn now_s() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_series_is_halved_keeping_its_ends() {
        let mut s: Vec<ResourceSample> =
            (0..=MAX_SAMPLES).map(|i| ResourceSample { time: i as f64, rss_bytes: i as u64, cpu_s: 0.0 }).collect();
        thin(&mut s);
        assert_eq!(s.len(), MAX_SAMPLES / 2 + 1);
        assert_eq!((s[0].time, s[1].time, s.last().unwrap().time), (0.0, 2.0, MAX_SAMPLES as f64));
    }
}
