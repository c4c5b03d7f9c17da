//! Stragglers across devices (one or several hosts). Needs at least two devices.
//!
//! Steps are matched across devices by step number. Per step: the min / median / max over devices
//! of the step's `duration` and of its **work** = `compute + memcpy + other` (the device's own
//! work: not exposed communication, host wait or idle). In synchronous SPMD, every device's step
//! lasts about as long (they meet in collectives) and the others wait, in exposed collectives or
//! idle, for the one with the most work: so the step's **slowest device** is the one with the most
//! work (ties: longer duration, then the lower device id). `spread_percent = (max − min work) /
//! median work · 100`. Per device: mean step duration and work, and how often it was the slowest;
//! the overall `slowest_device` is the one slowest most often (ties: larger mean work).

use std::collections::BTreeMap;

use serde::Serialize;

use super::breakdown::BreakdownPs;
use super::sweep::us;

/// One step across devices.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StragglerStep {
    pub step: i64,
    /// Devices that have this step.
    pub devices: usize,
    pub min_duration_us: f64,
    pub median_duration_us: f64,
    pub max_duration_us: f64,
    pub min_work_us: f64,
    pub median_work_us: f64,
    pub max_work_us: f64,
    pub spread_percent: f64,
    pub slowest_device: u32,
}

/// One device over all its steps.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StragglerDevice {
    pub device: u32,
    pub name: String,
    pub host: String,
    pub steps: usize,
    pub mean_duration_us: f64,
    pub mean_work_us: f64,
    pub times_slowest: usize,
}

/// The straggler analysis.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Stragglers {
    /// How `work_us` is defined.
    pub metric: String,
    pub steps: Vec<StragglerStep>,
    pub devices: Vec<StragglerDevice>,
    pub slowest_device: Option<u32>,
    /// Mean of the per-step `spread_percent`.
    pub mean_spread_percent: f64,
}

/// Input: per device (id, name, host, its steps' (step number, breakdown)).
pub(crate) struct DeviceSteps<'a> {
    pub id: u32,
    pub name: &'a str,
    pub host: &'a str,
    pub steps: Vec<(i64, BreakdownPs)>,
}

fn median(sorted: &[i64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => us(sorted[n / 2]),
        n => (us(sorted[n / 2 - 1]) + us(sorted[n / 2])) / 2.0,
    }
}

pub(crate) fn stragglers(devs: &[DeviceSteps<'_>]) -> Option<Stragglers> {
    if devs.len() < 2 {
        return None;
    }
    // step -> (device index, duration, work)
    let mut by_step: BTreeMap<i64, Vec<(usize, i64, i64)>> = BTreeMap::new();
    for (i, d) in devs.iter().enumerate() {
        for (step, b) in &d.steps {
            by_step.entry(*step).or_default().push((i, b.duration, b.work()));
        }
    }
    let mut times_slowest = vec![0usize; devs.len()];
    let mut steps = Vec::with_capacity(by_step.len());
    for (step, rows) in by_step {
        let mut durs: Vec<i64> = rows.iter().map(|r| r.1).collect();
        let mut works: Vec<i64> = rows.iter().map(|r| r.2).collect();
        durs.sort_unstable();
        works.sort_unstable();
        let Some(&(slow, _, _)) =
            rows.iter().max_by(|a, b| a.2.cmp(&b.2).then(a.1.cmp(&b.1)).then(devs[b.0].id.cmp(&devs[a.0].id)))
        else {
            continue;
        };
        times_slowest[slow] += 1;
        let med_work = median(&works);
        let (min_w, max_w) = (works.first().copied().unwrap_or(0), works.last().copied().unwrap_or(0));
        steps.push(StragglerStep {
            step,
            devices: rows.len(),
            min_duration_us: us(durs.first().copied().unwrap_or(0)),
            median_duration_us: median(&durs),
            max_duration_us: us(durs.last().copied().unwrap_or(0)),
            min_work_us: us(min_w),
            median_work_us: med_work,
            max_work_us: us(max_w),
            spread_percent: if med_work > 0.0 { us(max_w - min_w) / med_work * 100.0 } else { 0.0 },
            slowest_device: devs[slow].id,
        });
    }
    let devices: Vec<StragglerDevice> = devs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let n = d.steps.len().max(1) as f64;
            StragglerDevice {
                device: d.id,
                name: d.name.to_string(),
                host: d.host.to_string(),
                steps: d.steps.len(),
                mean_duration_us: d.steps.iter().map(|s| us(s.1.duration)).sum::<f64>() / n,
                mean_work_us: d.steps.iter().map(|s| us(s.1.work())).sum::<f64>() / n,
                times_slowest: times_slowest[i],
            }
        })
        .collect();
    let slowest_device = devices
        .iter()
        .filter(|d| d.times_slowest > 0)
        .max_by(|a, b| a.times_slowest.cmp(&b.times_slowest).then(a.mean_work_us.total_cmp(&b.mean_work_us)))
        .map(|d| d.device);
    let mean_spread_percent =
        if steps.is_empty() { 0.0 } else { steps.iter().map(|s| s.spread_percent).sum::<f64>() / steps.len() as f64 };
    Some(Stragglers {
        metric: "work_us = compute_us + memcpy_us + other_us".to_string(),
        steps,
        devices,
        slowest_device,
        mean_spread_percent,
    })
}
