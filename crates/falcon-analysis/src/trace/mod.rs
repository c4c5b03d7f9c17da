//! Deep trace analysis over a [`crate::timeline::Timeline`]: per-step temporal breakdown, collective /
//! compute overlap, idle gaps with host activity, host-bound check, step detection, stragglers —
//! HTA-like, but for XLA/TPU/GPU/CPU traces and without assuming PyTorch + CUDA.
//!
//! Entry point: [`analyze_trace`] → [`TraceReport`]; [`summary`] condenses it into the experiment's
//! summary row. Every definition is in the module doc of the part that computes it:
//!
//! * [`steps`] — step detection (device markers > host markers > most-executed module > whole trace);
//! * [`breakdown`] — the per-step partition `compute > collective > memcpy > host_wait > other >
//!   idle` (exact in integer picoseconds) with `hidden_collective`, and the per-kind overlap; the
//!   duty cycle;
//! * [`gaps`] — idle gaps and the host activity during them;
//! * [`host`] — when the host works (innermost host events; waits on the device never count), the
//!   host-bound fraction, verdict and evidence. The idle time of a step during which the host works is
//!   the step's `host_wait` (with the device's own `HostWait` events), so `host_bound.fraction` is
//!   exactly `total.host_wait_us / total.duration_us`: the breakdown and the verdict cannot disagree;
//! * [`stragglers`] — per-step spread of work across devices.
//!
//! # Several devices
//!
//! Each device is analysed on its own windows (its steps) and reported in `devices[]`. The
//! top-level rows are **means over devices**: `steps[]` has one row per step number, each field the
//! mean over the devices that have that step (`devices` says how many); `total` is the mean over
//! devices of each device's sum over its steps; `overlap[]` the mean over devices of each device's
//! per-kind times, taken over the **whole device trace** (communication outside the steps, such as
//! a separate `jit__psum` program run before the first step, counts; `devices[].outside_steps_busy_us`
//! says how much busy time lies outside the steps). `host_bound` divides the sums over devices.
//! `gaps[]` are the longest gaps over all devices. With one device, top-level rows are that device's.
//! Devices without any event are skipped (with a note). All times are µs relative to the timeline's
//! origin, computed from integer picoseconds.

pub mod breakdown;
pub mod gaps;
pub mod host;
pub mod kernels;
pub mod launch;
pub mod link;
pub mod members;
pub mod multihost;
pub mod overhead;
pub mod steps;
pub mod stragglers;
mod sweep;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::timeline::{Device, DeviceKind, Timeline, TimelineSource};
use breakdown::{breakdown_segments, BreakdownPs, KindOverlapPs, OverlapRow};
use gaps::Gap;
use host::HostBound;
use launch::{ClassifiedGaps, HostWaitRule, StreamIdle};
use steps::{detect_steps, StepRule};
use stragglers::{DeviceSteps, Stragglers};
use sweep::{intersect, intersection_len, merge, us};

pub use breakdown::breakdown_window;

/// One analysis of [`analyze_trace`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TraceAnalysis {
    /// Per-step temporal breakdown (`steps[]`, `total`, `devices[].steps`).
    Breakdown,
    /// Collective/compute overlap per kind (`overlap[]`).
    Overlap,
    /// Longest idle gaps with host activity (`gaps[]`).
    Gaps,
    /// Host-bound check (`host_bound`).
    Host,
    /// Cross-device step comparison (`stragglers`). Step detection itself always runs.
    Steps,
}

impl TraceAnalysis {
    /// All analyses, in report order.
    pub const ALL: [TraceAnalysis; 5] = [
        TraceAnalysis::Breakdown,
        TraceAnalysis::Overlap,
        TraceAnalysis::Gaps,
        TraceAnalysis::Host,
        TraceAnalysis::Steps,
    ];

    /// The lowercase name (`breakdown`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            TraceAnalysis::Breakdown => "breakdown",
            TraceAnalysis::Overlap => "overlap",
            TraceAnalysis::Gaps => "gaps",
            TraceAnalysis::Host => "host",
            TraceAnalysis::Steps => "steps",
        }
    }
}

impl std::str::FromStr for TraceAnalysis {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TraceAnalysis::ALL.into_iter().find(|a| a.as_str() == s.trim().to_ascii_lowercase()).ok_or_else(|| {
            format!("unknown trace analysis `{s}` (expected one of: breakdown, overlap, gaps, host, steps)")
        })
    }
}

/// What [`analyze_trace`] computes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct TraceOptions {
    /// Analyses to run; empty = all.
    pub analyses: Vec<TraceAnalysis>,
    /// How many idle gaps to report (longest first).
    pub top_gaps: usize,
    /// How many host events per gap and in the host-bound evidence.
    pub top_host_events: usize,
    /// Reading, not analysis: the cap on the bytes a gzipped trace may inflate to (`None`: the configured cap,
    /// see [`crate::limits`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_decompressed_bytes: Option<u64>,
}

impl Default for TraceOptions {
    fn default() -> Self {
        TraceOptions { analyses: Vec::new(), top_gaps: 10, top_host_events: 5, max_decompressed_bytes: None }
    }
}

impl TraceOptions {
    fn wants(&self, a: TraceAnalysis) -> bool {
        self.analyses.is_empty() || self.analyses.contains(&a)
    }
}

/// A temporal breakdown in µs. `compute + collective + memcpy + host_wait + other + idle == duration`
/// (exact in ps; up to float rounding here, and for means over devices).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct BreakdownUs {
    pub duration_us: f64,
    pub compute_us: f64,
    /// Exposed collective time (a collective runs, no compute) = `wait_for_peers_us + transfer_us`.
    pub collective_us: f64,
    /// The part of `collective_us` a member waited for a peer that had not arrived ([`multihost`]).
    pub wait_for_peers_us: f64,
    /// The rest of `collective_us`: the collective's own work once every member is there.
    pub transfer_us: f64,
    pub memcpy_us: f64,
    pub host_wait_us: f64,
    /// Only `Other`-class events run (zero when the reader classes every device event).
    pub other_us: f64,
    pub idle_us: f64,
    /// Collective time under compute (beside the partition, not in it).
    pub hidden_collective_us: f64,
    /// The part of `idle_us` in gaps ended by work launched before the gap began (a dependency or a
    /// synchronisation: [`launch`]); 0 without launch calls in the trace.
    pub kernel_wait_us: f64,
}

impl BreakdownUs {
    /// The duty cycle ([`BreakdownPs::duty_cycle`]'s definition), `None` without step time.
    pub fn duty_cycle(&self) -> Option<f64> {
        (self.duration_us > 0.0)
            .then(|| (self.compute_us + self.collective_us + self.memcpy_us + self.other_us) / self.duration_us)
    }
}

impl BreakdownUs {
    fn from_ps(b: &BreakdownPs, div: f64) -> BreakdownUs {
        let f = |ps: i64| us(ps) / div;
        BreakdownUs {
            duration_us: f(b.duration),
            compute_us: f(b.compute),
            collective_us: f(b.collective),
            wait_for_peers_us: f(b.peer_wait),
            transfer_us: f(b.collective.saturating_sub(b.peer_wait)),
            memcpy_us: f(b.memcpy),
            host_wait_us: f(b.host_wait),
            other_us: f(b.other),
            idle_us: f(b.idle),
            hidden_collective_us: f(b.hidden_collective),
            kernel_wait_us: f(b.idle_kernel_wait),
        }
    }
}

/// One step's breakdown (one device, or the mean over devices).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StepRow {
    pub step: i64,
    pub start_us: f64,
    /// Devices averaged into this row (1 in `devices[].steps`).
    pub devices: usize,
    #[serde(flatten)]
    pub breakdown: BreakdownUs,
}

/// How steps were found.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StepDetection {
    /// The rule (`mixed` at top level when devices differ).
    pub rule: StepRule,
    /// For `module_executions`: the module whose executions start steps (top level: when all
    /// devices agree).
    pub module: Option<String>,
    pub module_executions: Option<usize>,
    /// Number of steps (top level: of `steps[]`).
    pub steps: usize,
}

/// One device's results.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct DeviceReport {
    pub device: u32,
    pub name: String,
    pub kind: DeviceKind,
    pub host: String,
    pub step_detection: StepDetection,
    /// Per step (with `breakdown`).
    pub steps: Vec<StepRow>,
    /// Sum over the device's steps (with `breakdown`).
    pub total: Option<BreakdownUs>,
    /// Per collective kind over the whole device trace (with `overlap`).
    pub overlap: Vec<OverlapRow>,
    /// With `host`.
    pub host_bound: Option<HostBound>,
    /// Number of idle gaps in its step windows (with `gaps`).
    pub idle_gaps: usize,
    /// Busy time outside the step windows (e.g. programs run before the first step).
    pub outside_steps_busy_us: f64,
    /// How its host wait was decided ([`launch`]).
    pub host_wait_rule: HostWaitRule,
    /// Per stream, over the steps: busy and idle time, the idle split by launch (with `breakdown`; empty
    /// without launch calls).
    pub streams: Vec<StreamIdle>,
    /// The breakdown over the device's span, first to last device event (HTA's window), with `breakdown`.
    pub span: Option<SpanBreakdown>,
}

/// The breakdown over a device's span: from its first event's start to its last event's end — the window
/// HTA's temporal and idle breakdowns use — with the same rules as the steps'.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SpanBreakdown {
    pub start_us: f64,
    pub end_us: f64,
    /// Devices averaged into this row (1 in `devices[].span`).
    pub devices: usize,
    #[serde(flatten)]
    pub breakdown: BreakdownUs,
}

/// The result of [`analyze_trace`] (see the module doc for the multi-device rules).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TraceReport {
    pub source: TimelineSource,
    /// The analyses run.
    pub analyses: Vec<TraceAnalysis>,
    pub step_detection: StepDetection,
    /// Mean over devices per step number.
    pub steps: Vec<StepRow>,
    /// Mean over devices of the sum over steps.
    pub total: Option<BreakdownUs>,
    pub overlap: Vec<OverlapRow>,
    pub gaps: Vec<Gap>,
    pub host_bound: Option<HostBound>,
    pub stragglers: Option<Stragglers>,
    /// Per host (a PyTorch rank is a host): step time, compute, waiting for peers, transfer, host wait, lateness
    /// ([`multihost`]).
    pub hosts: Vec<multihost::HostRow>,
    /// Collectives matched across members, with what they waited, transferred and moved.
    pub collectives: Vec<multihost::CollectiveRow>,
    /// Per step, the host that arrived last at its collectives and by how much.
    pub late_steps: Vec<multihost::LateStep>,
    /// The host the others wait for, when it stands out of the run's noise; `null` otherwise.
    pub straggler: Option<multihost::Straggler>,
    /// The spread of the on-time members' arrivals a lateness is held against, µs.
    pub lateness_noise_us: f64,
    pub devices: Vec<DeviceReport>,
    /// How host wait was decided: `launch` when every device's trace records launch calls, `host_activity`
    /// when none does; `null` when devices differ (see `devices[].host_wait_rule`) or there are none.
    pub host_wait_rule: Option<HostWaitRule>,
    /// The breakdown over the devices' spans (mean over devices), with `breakdown`.
    pub span: Option<SpanBreakdown>,
    /// For an experiment that logs `step_time_s`: the traced steps against the unprofiled ones
    /// ([`overhead`]); `null` otherwise.
    pub profiler_overhead: Option<overhead::ProfilerOverhead>,
    pub notes: Vec<String>,
}

/// The experiment's summary row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TraceSummary {
    /// [`BreakdownUs::duty_cycle`] of `total` (a fraction).
    pub duty_cycle: Option<f64>,
    /// Exposed collective time / step time · 100 (over all steps, mean over devices) = waiting for peers +
    /// transfer.
    pub exposed_collective_percent: Option<f64>,
    /// Its part waiting for a peer that had not arrived / step time · 100.
    pub wait_for_peers_percent: Option<f64>,
    /// Its part transferring / step time · 100: the communication a faster interconnect or more overlap would cut.
    pub transfer_percent: Option<f64>,
    /// Idle time / step time · 100.
    pub idle_percent: Option<f64>,
    /// [`HostBound::fraction`].
    pub host_bound_fraction: Option<f64>,
}

/// Condenses a report into the summary row (fields `None` when their analysis did not run or there
/// is no step time).
pub fn summary(report: &TraceReport) -> TraceSummary {
    let pct = |f: fn(&BreakdownUs) -> f64| {
        report.total.filter(|t| t.duration_us > 0.0).map(|t| f(&t) / t.duration_us * 100.0)
    };
    TraceSummary {
        duty_cycle: report.total.and_then(|t| t.duty_cycle()),
        exposed_collective_percent: pct(|t| t.collective_us),
        wait_for_peers_percent: pct(|t| t.wait_for_peers_us),
        transfer_percent: pct(|t| t.transfer_us),
        idle_percent: pct(|t| t.idle_us),
        host_bound_fraction: report.host_bound.as_ref().map(|h| h.fraction),
    }
}

/// Runs the requested analyses on a timeline. Never fails: a trace without devices or steps gives
/// empty rows and a note.
pub fn analyze_trace(tl: &Timeline, options: &TraceOptions) -> TraceReport {
    analyze_with_members(tl, options).0
}

/// [`analyze_trace`], with each device's steps and exposed collective time as the multi-host analysis took them.
pub(crate) fn analyze_with_members(
    tl: &Timeline,
    options: &TraceOptions,
) -> (TraceReport, Vec<multihost::MemberSteps>) {
    let analyses: Vec<TraceAnalysis> = TraceAnalysis::ALL.into_iter().filter(|&a| options.wants(a)).collect();
    let want = |a| analyses.contains(&a);
    let mut notes: Vec<String> = Vec::new();
    if tl.devices.iter().all(|d| d.events.is_empty()) {
        notes.push("no device events in the trace: nothing to analyse".to_string());
    }

    let mut devices: Vec<DeviceReport> = Vec::with_capacity(tl.devices.len());
    let mut step_sums: BTreeMap<i64, (BreakdownPs, i128, usize)> = BTreeMap::new();
    let mut total_sum = BreakdownPs::default();
    let mut devices_with_steps = 0usize;
    let mut kind_sum = KindOverlapPs::default();
    let mut gap_candidates: Vec<(i64, i64, usize, Option<i64>)> = Vec::new(); // (dur, start, dev idx, step)
    let (mut host_step_ps, mut host_device_wait_ps, mut host_idle_busy_ps) = (0i64, 0i64, 0i64);
    let mut evidence: rustc_hash::FxHashMap<(usize, u32), (i64, usize)> = Default::default();
    let mut straggler_input: Vec<DeviceSteps<'_>> = Vec::new();
    let mut other_seen = false;
    let mut span_sum = BreakdownPs::default();
    let mut span_bounds: Vec<(i64, i64)> = Vec::new();
    let view = host::HostView::new(tl);
    let mut spans: Vec<host::StepSpans> = vec![host::StepSpans::default(); tl.devices.len()];
    let mut causes: Vec<Option<ClassifiedGaps>> = vec![None; tl.devices.len()];
    let empty: Vec<&str> = tl.devices.iter().filter(|d| d.events.is_empty()).map(|d| d.name.as_str()).collect();
    if !empty.is_empty() {
        notes.push(format!("devices without events skipped: {}", empty.join(", ")));
    }
    let analysed = tl.devices.iter().filter(|d| !d.events.is_empty()).count();
    let several_hosts = tl.devices.iter().any(|d| d.host != tl.devices[0].host);
    let detected: Vec<steps::DetectedSteps> = tl.devices.iter().map(|d| detect_steps(tl, d)).collect();
    let windows_of: Vec<Vec<steps::StepWindow>> = detected.iter().map(|d| d.windows.clone()).collect();
    let matched = multihost::match_instances(tl, &windows_of);
    drop(windows_of);
    let mut members: Vec<multihost::MemberSteps> = Vec::with_capacity(tl.devices.len());

    for (di, dev) in tl.devices.iter().enumerate() {
        if dev.events.is_empty() {
            members.push(multihost::MemberSteps { steps: Vec::new(), exposed: Vec::new() });
            continue;
        }
        let det = &detected[di];
        let waits = matched.waits.get(di).map_or(&[][..], Vec::as_slice);
        if det.rule == StepRule::WholeTrace {
            notes.push(format!(
                "{}: no step markers and no module executions: one step spanning the whole trace",
                device_label(dev, several_hosts)
            ));
        }
        let segs = sweep::segments(&dev.events);
        let windows = merge(det.windows.iter().map(|w| (w.start_ps, w.end_ps)).collect());
        let step_spans = host::StepSpans::new(&det.windows.iter().map(|w| (w.start_ps, w.end_ps)).collect::<Vec<_>>());
        // The host's working time: device idle time while it works is the steps' `host_wait`.
        let work =
            (want(TraceAnalysis::Breakdown) || want(TraceAnalysis::Host)).then(|| view.work(tl, dev, &step_spans));
        // Host wait by the launch where the trace records launch calls, else by host activity.
        let classified = launch::classify_gaps(dev, &segs);
        let rule = if classified.is_some() { HostWaitRule::Launch } else { HostWaitRule::HostActivity };
        let window_breakdown = |start: i64, end: i64| -> BreakdownPs {
            let mut b = breakdown_segments(&segs, start, end);
            b.peer_wait = breakdown::exposed_inside(&segs, waits, start, end);
            if let Some(work) = &work {
                let mut idle = Vec::new();
                sweep::idle_intervals(&segs, start, end, &mut idle);
                host_wait_of_idle(&mut b, &idle, work, classified.as_ref());
            }
            b
        };
        let per_step: Vec<(i64, i64, BreakdownPs)> =
            det.windows.iter().map(|w| (w.step, w.start_ps, window_breakdown(w.start_ps, w.end_ps))).collect();
        let mut exposed = Vec::new();
        for &(a, b) in &windows {
            breakdown::exposed_intervals(&segs, a, b, &mut exposed);
        }
        members.push(multihost::MemberSteps {
            exposed,
            steps: det.windows.iter().zip(&per_step).map(|(w, (_, _, b))| (*w, *b)).collect(),
        });
        let span_window = device_span(dev);
        let span = span_window.filter(|_| want(TraceAnalysis::Breakdown)).map(|(a, b)| (a, b, window_breakdown(a, b)));
        if let Some((_, _, b)) = &span {
            span_sum.add(b);
            span_bounds.push(span_window.unwrap_or_default());
        }
        let mut total = BreakdownPs::default();
        for (step, start, b) in &per_step {
            total.add(b);
            let e = step_sums.entry(*step).or_insert((BreakdownPs::default(), 0, 0));
            e.0.add(b);
            e.1 += i128::from(*start);
            e.2 += 1;
        }
        other_seen |= total.other > 0;
        if !per_step.is_empty() {
            total_sum.add(&total);
            devices_with_steps += 1;
        }

        let busy_all: i64 = segs.iter().map(|s| s.end - s.start).sum();
        let busy_in_steps: i64 = windows.iter().map(|&(a, b)| breakdown_segments(&segs, a, b).busy()).sum();
        let outside = busy_all - busy_in_steps;
        if outside > 0 && det.rule != StepRule::WholeTrace {
            notes.push(format!(
                "{}: {:.3} µs of device busy time lies outside the step windows (not in steps[]; in overlap[])",
                device_label(dev, several_hosts),
                us(outside)
            ));
        }

        let mut kinds = KindOverlapPs::default();
        if want(TraceAnalysis::Overlap) {
            // Over the whole device trace: communication outside the steps (e.g. a separate
            // `jit__psum` program) counts.
            kinds.add_window(&segs, i64::MIN, i64::MAX);
            for i in 0..kinds.total.len() {
                kind_sum.total[i] += kinds.total[i];
                kind_sum.exposed[i] += kinds.exposed[i];
            }
        }

        let mut idle: Vec<(i64, i64)> = Vec::new();
        if want(TraceAnalysis::Gaps) || want(TraceAnalysis::Host) {
            for &(a, b) in &windows {
                sweep::idle_intervals(&segs, a, b, &mut idle);
            }
        }
        if want(TraceAnalysis::Gaps) {
            let mut mine: Vec<(i64, i64)> = idle.iter().map(|&(a, b)| (b - a, a)).collect();
            mine.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
            mine.truncate(options.top_gaps);
            gap_candidates.extend(mine.into_iter().map(|(dur, start)| {
                let step = det.windows.iter().find(|w| w.start_ps <= start && start < w.end_ps).map(|w| w.step);
                (dur, start, di, step)
            }));
        }

        let mut dev_host = None;
        if let (true, Some(work)) = (want(TraceAnalysis::Host), &work) {
            // The same numbers as the breakdown: sums over the device's steps.
            let step_ps = total.duration;
            let idle_busy_ps = total.idle_host_busy;
            let device_wait_ps = total.host_wait - idle_busy_ps;
            let ev = view.evidence_ps(tl, work, &idle);
            let dev_evidence = host::top_evidence(tl, ev.clone(), 1, options.top_host_events);
            for (k, (ps, n)) in ev {
                let e = evidence.entry(k).or_insert((0, 0));
                e.0 += ps;
                e.1 += n;
            }
            host_step_ps += step_ps;
            host_device_wait_ps += device_wait_ps;
            host_idle_busy_ps += idle_busy_ps;
            dev_host = Some(HostBound::new(step_ps, device_wait_ps, idle_busy_ps, 1, dev_evidence));
        }

        if want(TraceAnalysis::Steps) {
            straggler_input.push(DeviceSteps {
                id: dev.id,
                name: &dev.name,
                host: &dev.host,
                steps: per_step.iter().map(|(s, _, b)| (*s, *b)).collect(),
            });
        }

        if let Some(slot) = spans.get_mut(di) {
            *slot = step_spans;
        }
        if let Some(slot) = causes.get_mut(di) {
            *slot = classified.clone();
        }
        let breakdown_on = want(TraceAnalysis::Breakdown);
        devices.push(DeviceReport {
            device: dev.id,
            name: dev.name.clone(),
            kind: dev.kind,
            host: dev.host.clone(),
            step_detection: StepDetection {
                rule: det.rule,
                module: det.module.clone(),
                module_executions: det.module_executions,
                steps: det.windows.len(),
            },
            steps: if breakdown_on {
                per_step
                    .iter()
                    .map(|(step, start, b)| StepRow {
                        step: *step,
                        start_us: us(*start),
                        devices: 1,
                        breakdown: BreakdownUs::from_ps(b, 1.0),
                    })
                    .collect()
            } else {
                Vec::new()
            },
            total: (breakdown_on && !per_step.is_empty()).then(|| BreakdownUs::from_ps(&total, 1.0)),
            overlap: kinds.rows(1.0),
            host_bound: dev_host,
            idle_gaps: if want(TraceAnalysis::Gaps) { idle.len() } else { 0 },
            outside_steps_busy_us: us(outside),
            host_wait_rule: rule,
            streams: if breakdown_on { launch::stream_idle(dev, &windows) } else { Vec::new() },
            span: span.map(|(a, b, bd)| SpanBreakdown {
                start_us: us(a),
                end_us: us(b),
                devices: 1,
                breakdown: BreakdownUs::from_ps(&bd, 1.0),
            }),
        });
    }

    if other_seen {
        notes.push("some device time runs only `other`-class events: reported as other_us".to_string());
    }
    let n_dev = analysed.max(1) as f64;

    let steps: Vec<StepRow> = if want(TraceAnalysis::Breakdown) {
        step_sums
            .iter()
            .map(|(&step, (b, start, n))| StepRow {
                step,
                start_us: us_i128(*start) / *n as f64,
                devices: *n,
                breakdown: BreakdownUs::from_ps(b, *n as f64),
            })
            .collect()
    } else {
        Vec::new()
    };
    let total = (want(TraceAnalysis::Breakdown) && devices_with_steps > 0)
        .then(|| BreakdownUs::from_ps(&total_sum, devices_with_steps as f64));

    let overlap: Vec<OverlapRow> = kind_sum.rows(n_dev);

    gap_candidates.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)).then(tl.devices[x.2].id.cmp(&tl.devices[y.2].id)));
    gap_candidates.truncate(options.top_gaps);
    let gaps: Vec<Gap> = gap_candidates
        .into_iter()
        .map(|(dur, start, di, step)| {
            let dev = &tl.devices[di];
            Gap {
                device: dev.id,
                device_name: dev.name.clone(),
                step,
                start_us: us(start),
                duration_us: us(dur),
                cause: causes.get(di).and_then(Option::as_ref).and_then(|c| c.cause_at(start)),
                host_activity: gaps::host_activity(
                    tl,
                    &view,
                    &spans[di],
                    dev,
                    start,
                    start + dur,
                    options.top_host_events,
                ),
            }
        })
        .collect();

    let host_bound = (want(TraceAnalysis::Host) && analysed > 0).then(|| {
        let ev = host::top_evidence(tl, evidence, analysed, options.top_host_events);
        HostBound::new(host_step_ps, host_device_wait_ps, host_idle_busy_ps, analysed, ev)
    });
    if want(TraceAnalysis::Host) && tl.host_threads.is_empty() {
        notes.push("no host threads in the trace: host-bound check sees only device HostWait events".to_string());
    }

    let stragglers = if want(TraceAnalysis::Steps) {
        let s = stragglers::stragglers(&straggler_input);
        if s.is_none() && analysed == 1 {
            notes.push("one device: no straggler analysis".to_string());
        }
        s
    } else {
        None
    };

    let step_detection = top_detection(&devices, steps.len().max(step_sums.len()));
    if step_detection.rule == StepRule::Mixed {
        notes.push("devices found their steps by different rules: steps are matched by number".to_string());
    }

    let host_wait_rule = match devices.first() {
        Some(first) if devices.iter().all(|d| d.host_wait_rule == first.host_wait_rule) => Some(first.host_wait_rule),
        _ => None,
    };
    let span = (!span_bounds.is_empty()).then(|| {
        let n = span_bounds.len();
        SpanBreakdown {
            start_us: span_bounds.iter().map(|&(a, _)| us(a)).sum::<f64>() / n as f64,
            end_us: span_bounds.iter().map(|&(_, b)| us(b)).sum::<f64>() / n as f64,
            devices: n,
            breakdown: BreakdownUs::from_ps(&span_sum, n as f64),
        }
    });
    let multi = multihost::analyze(tl, &matched, &members);
    notes.extend(multi.notes);
    let report = TraceReport {
        source: tl.source,
        analyses,
        step_detection,
        steps,
        total,
        overlap,
        gaps,
        host_bound,
        stragglers,
        hosts: multi.hosts,
        collectives: multi.collectives,
        late_steps: multi.late_steps,
        straggler: multi.straggler,
        lateness_noise_us: multi.noise_us,
        devices,
        host_wait_rule,
        span,
        profiler_overhead: None,
        notes,
    };
    (report, members)
}

/// The breakdown of `tl.devices[device]` over `[start_ps, end_ps)` with the rules of the steps' (host wait by
/// the launch where the trace records launches): to compare with another tool's window, such as HTA's.
/// `None` for a device index out of range.
pub fn window_breakdown(tl: &Timeline, device: usize, start_ps: i64, end_ps: i64) -> Option<BreakdownUs> {
    let dev = tl.devices.get(device)?;
    let det = detect_steps(tl, dev);
    let segs = sweep::segments(&dev.events);
    let spans = host::StepSpans::new(&det.windows.iter().map(|w| (w.start_ps, w.end_ps)).collect::<Vec<_>>());
    let work = host::HostView::new(tl).work(tl, dev, &spans);
    let classified = launch::classify_gaps(dev, &segs);
    let mut b = breakdown_segments(&segs, start_ps, end_ps);
    let mut idle = Vec::new();
    sweep::idle_intervals(&segs, start_ps, end_ps, &mut idle);
    host_wait_of_idle(&mut b, &idle, &work, classified.as_ref());
    Some(BreakdownUs::from_ps(&b, 1.0))
}

/// Moves the idle time of a window (`idle`, sorted) that the host caused into host wait, and counts the part
/// ended by queued work as kernel wait: by the launch where `classified` is known, else (and for gaps whose
/// launch is unknown) the idle time during which the host works.
fn host_wait_of_idle(
    b: &mut BreakdownPs,
    idle: &[(i64, i64)],
    work: &host::HostWork,
    classified: Option<&ClassifiedGaps>,
) {
    match classified {
        Some(g) => {
            let unknown = intersect(idle, &g.unknown);
            b.add_host_busy(intersection_len(idle, &g.host) + intersection_len(&unknown, &work.busy));
            b.add_kernel_wait(intersection_len(idle, &g.kernel));
        }
        None => b.add_host_busy(intersection_len(idle, &work.busy)),
    }
}

/// A device as notes name it: `host: name` on a run of several hosts, else its name.
fn device_label(dev: &Device, several_hosts: bool) -> String {
    if !several_hosts || dev.host.is_empty() {
        dev.name.clone()
    } else {
        format!("{}: {}", dev.host, dev.name)
    }
}

/// First start and last end of a device's events of positive duration.
fn device_span(dev: &Device) -> Option<(i64, i64)> {
    let mut it = dev.events.iter().filter(|e| e.dur_ps > 0);
    let first = it.next()?;
    let (mut a, mut b) = (first.start_ps, first.end_ps());
    for e in it {
        a = a.min(e.start_ps);
        b = b.max(e.end_ps());
    }
    Some((a, b))
}

fn us_i128(ps: i128) -> f64 {
    ps as f64 / 1e6
}

fn top_detection(devices: &[DeviceReport], steps: usize) -> StepDetection {
    let Some(first) = devices.first() else {
        return StepDetection { rule: StepRule::None, module: None, module_executions: None, steps: 0 };
    };
    let same_rule = devices.iter().all(|d| d.step_detection.rule == first.step_detection.rule);
    let same_module = devices.iter().all(|d| d.step_detection.module == first.step_detection.module);
    let same_count =
        devices.iter().all(|d| d.step_detection.module_executions == first.step_detection.module_executions);
    StepDetection {
        rule: if same_rule { first.step_detection.rule } else { StepRule::Mixed },
        module: if same_module { first.step_detection.module.clone() } else { None },
        module_executions: if same_module && same_count { first.step_detection.module_executions } else { None },
        steps,
    }
}
