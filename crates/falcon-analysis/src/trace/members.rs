//! The multi-host analysis in parts: what one host's capture contributes ([`host_members`], carried in a host's
//! partial by `profile analyze` and its fan-out) and the run's analysis from every host's part ([`merge`]).
//!
//! A host's part holds, per device, its steps with their breakdown (waiting for peers not yet split out: that
//! needs the other hosts), its exposed collective intervals within the steps, and its collectives with what
//! identifies each on the other members, times relative to the host's own origin. [`merge`] puts the hosts on one
//! clock, matches the collectives, splits each step's exposed collective time by the wait intervals — the same
//! integer picoseconds `analyze_trace` computes from the whole timeline — and runs [`super::multihost`]'s analysis.
//! So `profile trace` of a run, `profile analyze` of it in one process and in shards all say the same.

use serde::{Deserialize, Serialize};

use super::breakdown::BreakdownPs;
use super::multihost::{self, MemberSteps, MultiHost};
use super::steps::StepWindow;
use super::sweep::{intersect, intersection_len};
use super::{analyze_with_members, TraceAnalysis, TraceOptions};
use crate::timeline::{CollectiveKind, CollectiveOp, Device, DeviceKind, NameId, Timeline, TimelineSource};

/// One host's part of the run's multi-host analysis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostMembers {
    /// The host's time 0, ps since the epoch.
    pub origin_ps: i128,
    pub devices: Vec<MemberPart>,
    /// The catalog chip of the host's devices, when its capture names one (`Timeline::chip`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chip: Option<String>,
}

/// One device of a host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberPart {
    pub name: String,
    pub host: String,
    /// The device's kind (a CPU executor when the part does not say: parts written before it was kept).
    #[serde(default = "cpu_executor", skip_serializing_if = "is_cpu_executor")]
    pub kind: DeviceKind,
    /// `(step, start_ps, end_ps, breakdown)`, times relative to the host's origin.
    pub steps: Vec<(i64, i64, i64, BreakdownPs)>,
    /// Exposed collective intervals within the steps, sorted, disjoint.
    pub exposed: Vec<(i64, i64)>,
    pub ops: Vec<OpPart>,
}

fn cpu_executor() -> DeviceKind {
    DeviceKind::CpuExecutor
}

fn is_cpu_executor(kind: &DeviceKind) -> bool {
    *kind == DeviceKind::CpuExecutor
}

/// One collective run on the device ([`CollectiveOp`] with its names spelled out).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpPart {
    pub start_ps: i64,
    pub dur_ps: i64,
    pub name: String,
    pub kind: CollectiveKind,
    /// `None`: matched by step and occurrence.
    pub scope: Option<String>,
    pub run: Option<i64>,
    pub bytes: Option<u64>,
    pub group_size: Option<u32>,
    #[serde(default)]
    pub bytes_from_hlo: bool,
}

/// The part of the host whose timeline `tl` is (one host's capture, or one rank's trace).
pub fn host_members(tl: &Timeline) -> HostMembers {
    let options = TraceOptions { analyses: vec![TraceAnalysis::Breakdown], top_gaps: 0, ..TraceOptions::default() };
    let (_, members) = analyze_with_members(tl, &options);
    let devices = tl
        .devices
        .iter()
        .zip(members)
        .map(|(dev, m)| MemberPart {
            name: dev.name.clone(),
            host: dev.host.clone(),
            kind: dev.kind,
            steps: m
                .steps
                .into_iter()
                .map(|(w, mut b)| {
                    // This host alone knows no peer: the run's merge splits the wait out.
                    b.peer_wait = 0;
                    (w.step, w.start_ps, w.end_ps, b)
                })
                .collect(),
            exposed: m.exposed,
            ops: multihost::ops_of(dev)
                .into_iter()
                .map(|op| OpPart {
                    start_ps: op.start_ps,
                    dur_ps: op.dur_ps,
                    name: tl.name(op.name).to_string(),
                    kind: op.kind,
                    scope: (op.scope != u32::MAX).then(|| tl.name(op.scope).to_string()),
                    run: op.run,
                    bytes: op.bytes,
                    group_size: op.group_size,
                    bytes_from_hlo: op.bytes_from_hlo,
                })
                .collect(),
        })
        .collect();
    HostMembers { origin_ps: tl.origin_ps, devices, chip: tl.chip.clone() }
}

/// The run's multi-host analysis from its hosts' parts (in the run's host order); `None` with fewer than two
/// devices in all.
pub fn merge(hosts: &[HostMembers]) -> Option<MultiHost> {
    if hosts.iter().map(|h| h.devices.len()).sum::<usize>() < 2 {
        return None;
    }
    let origin = hosts.iter().map(|h| h.origin_ps).min().unwrap_or(0);
    let mut names: Vec<String> = Vec::new();
    let mut index: std::collections::HashMap<String, NameId> = std::collections::HashMap::new();
    let mut intern = |s: &str| -> NameId {
        if let Some(&id) = index.get(s) {
            return id;
        }
        names.push(s.to_string());
        let id = (names.len() - 1) as NameId;
        index.insert(s.to_string(), id);
        id
    };
    let mut devices = Vec::new();
    let mut windows: Vec<Vec<StepWindow>> = Vec::new();
    let mut parts: Vec<(&MemberPart, i64)> = Vec::new();
    for h in hosts {
        let shift = i64::try_from(h.origin_ps.saturating_sub(origin)).unwrap_or(i64::MAX);
        for m in &h.devices {
            let collectives: Vec<CollectiveOp> = m
                .ops
                .iter()
                .map(|o| CollectiveOp {
                    start_ps: o.start_ps.saturating_add(shift),
                    dur_ps: o.dur_ps,
                    name: intern(&o.name),
                    kind: o.kind,
                    scope: o.scope.as_deref().map_or(u32::MAX, &mut intern),
                    run: o.run,
                    bytes: o.bytes,
                    group_size: o.group_size,
                    bytes_from_hlo: o.bytes_from_hlo,
                })
                .collect();
            devices.push(Device {
                id: u32::try_from(devices.len()).unwrap_or(u32::MAX),
                name: m.name.clone(),
                kind: m.kind,
                host: m.host.clone(),
                events: Vec::new(),
                modules: Vec::new(),
                launches: Vec::new(),
                collectives,
            });
            windows.push(
                m.steps
                    .iter()
                    .map(|&(step, a, b, _)| StepWindow {
                        step,
                        start_ps: a.saturating_add(shift),
                        end_ps: b.saturating_add(shift),
                    })
                    .collect(),
            );
            parts.push((m, shift));
        }
    }
    let tl = Timeline {
        source: TimelineSource::XSpace,
        origin_ps: origin,
        devices,
        host_threads: Vec::new(),
        steps: Vec::new(),
        names,
        events_read: 0,
        notes: Vec::new(),
        rank: None,
        chip: hosts.iter().find_map(|h| h.chip.clone()),
    };
    let matched = multihost::match_instances(&tl, &windows);
    let members: Vec<MemberSteps> = parts
        .iter()
        .enumerate()
        .map(|(d, (m, shift))| {
            let exposed: Vec<(i64, i64)> =
                m.exposed.iter().map(|&(a, b)| (a.saturating_add(*shift), b.saturating_add(*shift))).collect();
            let waits = matched.waits.get(d).map_or(&[][..], Vec::as_slice);
            let steps = m
                .steps
                .iter()
                .map(|&(step, a, b, mut bd)| {
                    let (a, b) = (a.saturating_add(*shift), b.saturating_add(*shift));
                    bd.peer_wait = intersection_len(&intersect(&exposed, &[(a, b)]), waits);
                    (StepWindow { step, start_ps: a, end_ps: b }, bd)
                })
                .collect();
            MemberSteps { steps, exposed }
        })
        .collect();
    Some(multihost::analyze(&tl, &matched, &members))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(host: &str, origin_ps: i128, arrival: i64, end: i64) -> HostMembers {
        // Wrapping: the hostile test gives times at the ends of their range.
        let len = end.wrapping_sub(arrival);
        let b = BreakdownPs { duration: 100, collective: len, idle: 100i64.wrapping_sub(len), ..Default::default() };
        HostMembers {
            origin_ps,
            devices: vec![MemberPart {
                name: "d".into(),
                host: host.into(),
                kind: DeviceKind::CpuExecutor,
                steps: vec![(0, 0, 100, b)],
                exposed: vec![(arrival, end)],
                ops: vec![OpPart {
                    start_ps: arrival,
                    dur_ps: len,
                    name: "all-reduce.1".into(),
                    kind: CollectiveKind::AllReduce,
                    scope: Some("jit_step".into()),
                    run: Some(7),
                    bytes: None,
                    group_size: None,
                    bytes_from_hlo: false,
                }],
            }],
            chip: None,
        }
    }

    #[test]
    fn hosts_are_put_on_one_clock_before_matching() {
        // Host b's clock starts 20 ps after host a's: its arrival at 10 is a's 30, the last.
        let m = merge(&[part("a", 1000, 10, 60), part("b", 1020, 10, 40)]).unwrap();
        let a = m.hosts.iter().find(|h| h.host == "a").unwrap();
        let b = m.hosts.iter().find(|h| h.host == "b").unwrap();
        assert_eq!((a.collective_wait_us * 1e6, a.collective_transfer_us * 1e6), (20.0, 30.0));
        assert_eq!((b.collective_wait_us * 1e6, b.collective_transfer_us * 1e6), (0.0, 30.0));
        assert_eq!(a.wait_for_peers_us * 1e6, 20.0, "the exposed wait is split out of the step");
        assert_eq!(b.times_last, 1);
    }

    #[test]
    fn hostile_parts_give_an_answer_not_a_panic() {
        // A partial is a job's artifact: times and origins at the ends of their ranges must not overflow.
        let mut a = part("a", i128::MAX, i64::MIN, i64::MAX);
        a.devices[0].steps.push((1, i64::MIN, i64::MAX, BreakdownPs { duration: i64::MAX, ..Default::default() }));
        a.devices[0].exposed.push((i64::MIN, i64::MAX));
        let b = part("b", i128::MIN, i64::MAX, i64::MIN);
        let m = merge(&[a, b.clone(), b]).unwrap();
        assert!(m.hosts.iter().all(|h| h.step_time_us.is_finite()), "{m:?}");
    }

    #[test]
    fn one_device_in_all_is_no_run_to_merge() {
        assert!(merge(&[part("a", 0, 1, 2)]).is_none());
        assert!(merge(&[]).is_none());
    }
}
