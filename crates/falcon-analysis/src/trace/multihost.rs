//! Collectives across members (the devices of one or several hosts, the ranks of a PyTorch run): who arrived
//! late, what each member waited for, and what the collective itself cost.
//!
//! # Instances
//!
//! A collective *instance* is one collective run by every member of its group. Its runs on the members are
//! matched by the reader's identity of it ([`crate::timeline::CollectiveOp`]: XSpace the program and `run_id`,
//! PyTorch the process group and sequence number) with the op's name and its occurrence within that run; where
//! the trace records no run, by the member's step, the op's name and its occurrence within the step. A run with
//! no peer (on one member only) is not an instance (counted in a note).
//!
//! For each instance, with `a_i` member `i`'s arrival (the op's start), `e_i` its end and `L = max a_i` the
//! last arrival (the *last* member: ties to the first in device order):
//! - **wait for peers** of member `i` = `L − a_i` (its op runs, but only because a peer has not come);
//! - **transfer** of member `i` = `max(0, e_i − L)` (the collective's own work once everyone is there);
//! - the last member's **lateness** = `L −` the median of the other members' arrivals;
//! - the instance's transfer time = the mean over members of their transfer; its bytes the reader's (PyTorch: the
//!   message size and dtype; XSpace: the instruction's shapes, from its text on TPU or the capture's HLO program
//!   on XLA:CPU and GPU). Algorithm bandwidth =
//!   bytes / transfer time; bus bandwidth = algorithm bandwidth × NCCL's factor for the kind over `n` members:
//!   all-reduce `2(n−1)/n`, all-gather, reduce-scatter and all-to-all `(n−1)/n`, others 1.
//!
//! # In the breakdown
//!
//! A member's wait intervals (`[a_i, min(L, e_i))` of its instances) split the breakdown's exposed collective time:
//! `wait_for_peers` = the exposed collective time inside them, `transfer` = the rest. A late peer is never
//! "communication".
//!
//! # The straggler
//!
//! An instance belongs to the step of its last member (the step window that holds the last arrival). Per step,
//! the step's late host is the host whose devices were last with the largest summed lateness; its lateness that
//! sum. Over the run the candidate is the host late at the most steps (ties: the larger median lateness). In a
//! trace of fewer than two steps with collectives (one profiled step), each collective instance is a unit instead
//! of each step (`unit`: `collective`). It is
//! named the **straggler** when (a) it was the late host at half the steps or more (at least 2), more often than
//! chance would make a host of `n` last (the binomial tail P(X ≥ k) for `p = 1/n` under 1 %), and (b) its median
//! lateness is more than 3σ of the run's **noise**: σ = 1.4826 × the median over instances of the median absolute
//! deviation of the arrivals of the members other than the last (0 with fewer than 3 members). `lost_percent` = the time the other members waited
//! for it (the mean over them of their wait, summed over the instances it was last at) over the mean member's step
//! time, × 100. What it did instead is its devices' own breakdown in the steps it was late: host wait (its host
//! worked while its device idled: input, host code), compute (more work than the others: imbalance) or idle.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::breakdown::BreakdownPs;
use super::steps::StepWindow;
use super::sweep::{merge, us};
use crate::timeline::{CollectiveKind, CollectiveOp, Device, DeviceKind, EventClass, Timeline};

/// One host's row (devices of a host together; a PyTorch rank is a host).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct HostRow {
    pub host: String,
    /// Its devices analysed.
    pub devices: usize,
    /// Steps (summed over its devices).
    pub steps: usize,
    /// Mean step time, µs.
    pub step_time_us: f64,
    /// Totals over its steps, µs (mean over its devices): compute, the exposed collective time split into waiting
    /// for peers and transfer, host wait.
    pub compute_us: f64,
    pub wait_for_peers_us: f64,
    pub transfer_us: f64,
    pub host_wait_us: f64,
    /// Over every matched instance of its devices (the whole trace, exposed or not), µs, mean over its devices:
    /// the time its collectives waited for a peer and the time they transferred.
    pub collective_wait_us: f64,
    pub collective_transfer_us: f64,
    /// At how many instances one of its devices arrived last.
    pub times_last: usize,
    /// Steps at which it was the late host, and its median lateness over them, µs (`null`: never).
    pub steps_late: usize,
    pub late_us_median: Option<f64>,
    /// What was taken off its times to put it on the run's clock, µs: 0 unless the hosts' clocks disagreed (see the
    /// notes).
    pub clock_offset_us: f64,
}

/// One collective op of one message size over the run (all its instances of that size).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CollectiveRow {
    pub name: String,
    pub kind: String,
    /// What it belongs to (program / process group).
    pub scope: String,
    pub instances: usize,
    /// Members of each instance matched (the median count).
    pub members: usize,
    /// The size of its replica / process group when the trace says (the bus factor's `n`; else `members`).
    pub group_size: Option<u32>,
    /// Bytes one instance moves (NCCL-tests' size), `null` when the trace does not say.
    pub bytes: Option<u64>,
    /// Where `bytes` came from (`message size × dtype`, …), `null` without bytes.
    pub bytes_source: Option<String>,
    /// Totals over its instances of the mean over members, µs.
    pub wait_for_peers_us: f64,
    pub transfer_us: f64,
    /// Mean transfer time of one instance, µs.
    pub transfer_us_mean: f64,
    /// bytes / mean transfer time, GB/s (`null` without bytes or transfer time).
    pub algbw_gbps: Option<f64>,
    /// `algbw ×` NCCL's factor for the kind and members.
    pub busbw_gbps: Option<f64>,
    /// The factor used.
    pub busbw_factor: f64,
    /// The link its members share and the share of its peak the busbw used; `null` (a note says why) when the
    /// catalog does not know it.
    pub link: Option<super::link::LinkUse>,
}

/// The late host of one step.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct LateStep {
    pub step: i64,
    pub host: String,
    pub late_us: f64,
    /// Instances of the step.
    pub instances: usize,
}

/// The straggler of the run.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Straggler {
    pub host: String,
    pub late_us_median: f64,
    /// Steps it was the late host at, of `steps` with collectives.
    pub steps_late: usize,
    pub steps: usize,
    /// What `steps_late` and `steps` count: `step`, or `collective` in a trace of a single step (each collective
    /// instance is then one draw).
    pub unit: String,
    /// The share of the run's time the others lost waiting for it, percent.
    pub lost_percent: f64,
    /// The run's noise (σ of the on-time members' arrivals) the lateness was held against, µs.
    pub noise_us: f64,
    /// What it did while the others waited: `host_wait`, `compute` or `idle`.
    pub cause: String,
    /// Its own breakdown, mean over the steps it was late, µs: compute, host wait, idle.
    pub compute_us: f64,
    pub host_wait_us: f64,
    pub idle_us: f64,
    /// The others' compute a step, µs (mean).
    pub others_compute_us: f64,
    /// The finding in words, with what to try.
    pub summary: String,
}

/// What the multi-member analysis found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MultiHost {
    pub hosts: Vec<HostRow>,
    pub collectives: Vec<CollectiveRow>,
    pub late_steps: Vec<LateStep>,
    pub straggler: Option<Straggler>,
    /// The noise (σ) lateness is held against, µs.
    pub noise_us: f64,
    pub notes: Vec<String>,
}

/// How unlikely by chance a host's count of late steps must be to name it.
const CHANCE: f64 = 0.01;

/// P(X ≥ k) for X ~ Binomial(n, p).
fn binomial_tail(n: usize, k: usize, p: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n || p <= 0.0 {
        return 0.0;
    }
    let (lp, lq) = (p.ln(), (1.0 - p).ln());
    // ln C(n, k), then each next term from the previous.
    let mut ln_c: f64 = (0..k).map(|i| ((n - i) as f64).ln() - ((i + 1) as f64).ln()).sum();
    let mut total = 0.0;
    for j in k..=n {
        total += (ln_c + j as f64 * lp + (n - j) as f64 * lq).exp();
        ln_c += ((n - j) as f64).ln() - ((j + 1) as f64).ln();
    }
    total.min(1.0)
}

/// A median absolute deviation times this estimates a normal spread's standard deviation.
const MAD_SIGMA: f64 = 1.4826;

/// One collective run on one member, in the member's terms.
#[derive(Debug, Clone, Copy)]
struct Run {
    member: usize,
    start: i64,
    end: i64,
    name: u32,
    kind: CollectiveKind,
    scope: u32,
    bytes: Option<u64>,
    /// The replica group's size, when the trace says; whether `bytes` came from the HLO's shapes.
    group: Option<u32>,
    from_hlo: bool,
}

/// The matched instances of a timeline, and what each member's runs waited.
pub(crate) struct Matched {
    /// Per instance: its runs (one per member).
    instances: Vec<Vec<Run>>,
    /// Per member (index into the timeline's devices): its wait intervals, sorted and disjoint, on its own clock.
    pub waits: Vec<Vec<(i64, i64)>>,
    unmatched: usize,
    /// Per member: what was taken off its times to put it on the run's clock (0 unless `aligned`), ps.
    offsets: Vec<i64>,
    /// Whether the hosts' clocks were aligned on the collectives' ends.
    aligned: bool,
}

pub(crate) fn ops_of(dev: &Device) -> Vec<CollectiveOp> {
    if !dev.collectives.is_empty() {
        return dev.collectives.clone();
    }
    dev.events
        .iter()
        .filter_map(|e| match e.class {
            EventClass::Collective(kind) if e.dur_ps > 0 => Some(CollectiveOp {
                start_ps: e.start_ps,
                dur_ps: e.dur_ps,
                name: e.name,
                kind,
                scope: u32::MAX,
                run: None,
                bytes: None,
                group_size: None,
                bytes_from_hlo: false,
            }),
            _ => None,
        })
        .collect()
}

fn step_at(windows: &[StepWindow], t: i64) -> Option<i64> {
    let i = windows.partition_point(|w| w.start_ps <= t);
    windows[..i].iter().rev().find(|w| t < w.end_ps).map(|w| w.step)
}

/// What one collective instance is on every member: (scope, run, step when there is no run, op name, occurrence).
type InstanceKey<'a> = (&'a str, Option<i64>, Option<i64>, &'a str, u32);

/// Matches the collectives of every device across devices (see the module doc). `windows[d]` are device `d`'s
/// steps, sorted by start.
pub(crate) fn match_instances(tl: &Timeline, windows: &[Vec<StepWindow>]) -> Matched {
    // key: (scope name, run or step, op name, occurrence) → runs
    let mut by_key: HashMap<InstanceKey<'_>, Vec<Run>> = HashMap::new();
    for (d, dev) in tl.devices.iter().enumerate() {
        let mut seen: HashMap<(u32, Option<i64>, Option<i64>, u32), u32> = HashMap::new();
        let wins = windows.get(d).map_or(&[][..], Vec::as_slice);
        for op in ops_of(dev) {
            let step = if op.run.is_none() { step_at(wins, op.start_ps) } else { None };
            let n = seen.entry((op.scope, op.run, step, op.name)).or_insert(0);
            let occurrence = *n;
            *n += 1;
            let scope = if op.scope == u32::MAX { "" } else { tl.name(op.scope) };
            by_key.entry((scope, op.run, step, tl.name(op.name), occurrence)).or_default().push(Run {
                member: d,
                start: op.start_ps,
                end: op.end_ps(),
                name: op.name,
                kind: op.kind,
                scope: op.scope,
                bytes: op.bytes,
                group: op.group_size,
                from_hlo: op.bytes_from_hlo,
            });
        }
    }
    let mut instances: Vec<Vec<Run>> = Vec::new();
    let mut unmatched = 0usize;
    for (_, mut runs) in by_key {
        runs.sort_by_key(|r| r.member);
        runs.dedup_by_key(|r| r.member);
        if runs.len() < 2 {
            unmatched += runs.len();
            continue;
        }
        instances.push(runs);
    }
    let (offsets, aligned) = clock_offsets(tl, &instances);
    if aligned {
        for r in instances.iter_mut().flatten() {
            r.start = r.start.saturating_sub(offsets[r.member]);
            r.end = r.end.saturating_sub(offsets[r.member]);
        }
    }
    // A stable order: by the last arrival, then the first member's start.
    instances.sort_by_key(|runs| (last_arrival(runs), runs[0].start, runs[0].member));
    let mut waits: Vec<Vec<(i64, i64)>> = vec![Vec::new(); tl.devices.len()];
    for runs in &instances {
        let l = last_arrival(runs);
        for r in runs {
            let end = l.min(r.end);
            if end > r.start {
                // Back on the member's own clock, where its breakdown is.
                let off = if aligned { offsets[r.member] } else { 0 };
                waits[r.member].push((r.start.saturating_add(off), end.saturating_add(off)));
            }
        }
    }
    let waits = waits.into_iter().map(merge).collect();
    let offsets = if aligned { offsets } else { vec![0; tl.devices.len()] };
    Matched { instances, waits, unmatched, offsets, aligned }
}

/// The hosts' clock offsets from the matched collectives' ends (an instance ends at nearly the same moment on every
/// member): per host, the median over its runs of its end minus the instance's median end; per device, its host's.
/// The clocks are aligned (the offsets taken off) only when a host's offset stands out: above 50 µs, above a
/// quarter of the run's typical collective (median over instances of median end − median arrival), and above 3×
/// the spread (median absolute deviation) of that host's own end differences. One machine's clock, whose ends
/// differ by scheduling noise, is left as it is.
fn clock_offsets(tl: &Timeline, instances: &[Vec<Run>]) -> (Vec<i64>, bool) {
    let host_of = |d: usize| tl.devices.get(d).map_or("", |dev| dev.host.as_str());
    let mut diffs: HashMap<&str, Vec<i64>> = HashMap::new();
    let mut typical: Vec<i64> = Vec::with_capacity(instances.len());
    for runs in instances {
        let med_end = median_i(runs.iter().map(|r| r.end).collect()) as i64;
        let med_arrival = median_i(runs.iter().map(|r| r.start).collect()) as i64;
        typical.push(med_end.saturating_sub(med_arrival));
        for r in runs {
            diffs.entry(host_of(r.member)).or_default().push(r.end.saturating_sub(med_end));
        }
    }
    let typical = median_i(typical);
    let mut by_host: HashMap<&str, i64> = HashMap::new();
    let mut stands_out = false;
    for (host, d) in diffs {
        let off = median_i(d.clone());
        let mad = median_f(d.iter().map(|&x| (x as f64 - off).abs()).collect()).unwrap_or(0.0);
        if off.abs() > 50e6_f64.max(0.25 * typical).max(3.0 * mad) {
            stands_out = true;
        }
        by_host.insert(host, off as i64);
    }
    let offsets = (0..tl.devices.len()).map(|d| by_host.get(host_of(d)).copied().unwrap_or(0)).collect();
    (offsets, stands_out)
}

fn last_arrival(runs: &[Run]) -> i64 {
    runs.iter().map(|r| r.start).max().unwrap_or(0)
}

fn median_f(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

fn median_i(mut v: Vec<i64>) -> f64 {
    v.sort_unstable();
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2] as f64,
        n => (v[n / 2 - 1] as f64 + v[n / 2] as f64) / 2.0,
    }
}

/// NCCL-tests' bus bandwidth factor of a kind over `n` members.
pub fn busbw_factor(kind: CollectiveKind, n: usize) -> f64 {
    let n = n.max(1) as f64;
    match kind {
        CollectiveKind::AllReduce => 2.0 * (n - 1.0) / n,
        CollectiveKind::AllGather | CollectiveKind::ReduceScatter | CollectiveKind::AllToAll => (n - 1.0) / n,
        _ => 1.0,
    }
}

/// One device's steps as the analysis found them: (step, window, breakdown).
pub(crate) struct MemberSteps {
    pub steps: Vec<(StepWindow, BreakdownPs)>,
    /// Its exposed collective time (a collective runs, no compute) within its steps, sorted and disjoint: what a
    /// host's partial carries to split it when the run's matching is known (the `members` module).
    pub exposed: Vec<(i64, i64)>,
}

/// The last member of an instance (ties: the first in device order) and its lateness, ps.
fn last_and_late(runs: &[Run]) -> (usize, f64) {
    let (li, last) = runs
        .iter()
        .enumerate()
        .fold((0usize, i64::MIN), |acc, (i, r)| if r.start > acc.1 { (i, r.start) } else { acc });
    let others: Vec<i64> = runs.iter().enumerate().filter(|&(i, _)| i != li).map(|(_, r)| r.start).collect();
    (li, last as f64 - median_i(others))
}

/// The analysis over the matched instances and each device's steps (`members[d]` for `tl.devices[d]`).
pub(crate) fn analyze(tl: &Timeline, matched: &Matched, members: &[MemberSteps]) -> MultiHost {
    let host_of = |d: usize| tl.devices.get(d).map_or("", |dev| dev.host.as_str());
    let mut host_names: Vec<&str> = Vec::new();
    for (d, m) in members.iter().enumerate() {
        if (!m.steps.is_empty() || matched.waits.get(d).is_some_and(|w| !w.is_empty()))
            && !host_names.contains(&host_of(d))
        {
            host_names.push(host_of(d));
        }
    }
    let host_index: HashMap<&str, usize> = host_names.iter().enumerate().map(|(i, h)| (*h, i)).collect();
    let nh = host_names.len();

    // Per instance: last member, lateness, step; per member totals.
    let mut wait_dev = vec![0i64; tl.devices.len()];
    let mut transfer_dev = vec![0i64; tl.devices.len()];
    let mut times_last = vec![0usize; nh];
    let mut step_late: BTreeMap<i64, (Vec<f64>, usize)> = BTreeMap::new(); // step -> per-host lateness, instances
    let mut lost_by_host = vec![0f64; nh];
    // Per instance with a last host: (host, lateness, its step).
    let mut by_instance: Vec<(usize, f64, Option<i64>)> = Vec::new();
    let mut spreads: Vec<f64> = Vec::new();
    // (name, kind, scope) -> (instances, members counts, bytes, wait sum, transfer sum)
    // (instances, members of each, bytes, wait, transfer) per (name, kind, scope, bytes): a row per op and size.
    type Acc = (usize, Vec<usize>, Option<u64>, f64, f64, (Option<u32>, bool));
    type OpKey = (String, String, String, Option<u64>);
    let mut by_op: BTreeMap<OpKey, (CollectiveKind, Acc)> = BTreeMap::new();
    for runs in &matched.instances {
        let l = last_arrival(runs);
        let (li, late) = last_and_late(runs);
        let last_member = runs[li].member;
        let h = host_index.get(host_of(last_member)).copied();
        let others: Vec<i64> = runs.iter().enumerate().filter(|&(i, _)| i != li).map(|(_, r)| r.start).collect();
        if others.len() >= 2 {
            let mid = median_i(others.clone());
            spreads.push(median_f(others.iter().map(|&a| (a as f64 - mid).abs()).collect()).unwrap_or(0.0) * MAD_SIGMA);
        }
        let (mut wsum, mut tsum) = (0i64, 0i64);
        for r in runs {
            let w = l.saturating_sub(r.start);
            let t = r.end.saturating_sub(l).max(0);
            wait_dev[r.member] = wait_dev[r.member].saturating_add(w);
            transfer_dev[r.member] = transfer_dev[r.member].saturating_add(t);
            wsum = wsum.saturating_add(w);
            tsum = tsum.saturating_add(t);
        }
        let n = runs.len() as f64;
        if let Some(h) = h {
            times_last[h] += 1;
            lost_by_host[h] += wsum as f64 / (n - 1.0).max(1.0);
            // The step windows are on the member's own clock.
            let own = l.saturating_add(matched.offsets.get(last_member).copied().unwrap_or(0));
            let step = members
                .get(last_member)
                .and_then(|m| m.steps.iter().find(|(w, _)| w.start_ps <= own && own < w.end_ps).map(|(w, _)| w.step));
            if let Some(step) = step {
                let e = step_late.entry(step).or_insert_with(|| (vec![0.0; nh], 0));
                e.0[h] += late;
                e.1 += 1;
            }
            by_instance.push((h, late, step));
        }
        let r0 = runs[0];
        let scope = if r0.scope == u32::MAX { String::new() } else { tl.name(r0.scope).to_string() };
        let bytes = runs.iter().find_map(|r| r.bytes);
        let key = (tl.name(r0.name).to_string(), r0.kind.as_str().to_string(), scope, bytes);
        let group = runs.iter().find_map(|r| r.group);
        let from_hlo = runs.iter().any(|r| r.from_hlo && r.bytes.is_some());
        let e = by_op.entry(key).or_insert((r0.kind, (0, Vec::new(), bytes, 0.0, 0.0, (group, from_hlo))));
        let acc = &mut e.1;
        acc.0 += 1;
        acc.1.push(runs.len());
        acc.3 += wsum as f64 / n;
        acc.4 += tsum as f64 / n;
    }

    // Per-step late host.
    let mut late_steps = Vec::with_capacity(step_late.len());
    let mut late_by_host: Vec<Vec<f64>> = vec![Vec::new(); nh];
    let mut late_step_set: Vec<Vec<i64>> = vec![Vec::new(); nh];
    for (step, (lates, n)) in &step_late {
        let Some((h, &late)) = lates.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0))) else {
            continue;
        };
        late_by_host[h].push(late);
        late_step_set[h].push(*step);
        late_steps.push(LateStep { step: *step, host: host_names[h].to_string(), late_us: late / 1e6, instances: *n });
    }
    // A trace of fewer than two steps with collectives (one profiled step): each collective is a unit instead.
    let unit = if step_late.len() >= 2 || by_instance.len() < 2 {
        "step"
    } else {
        late_by_host.iter_mut().for_each(Vec::clear);
        late_step_set.iter_mut().for_each(Vec::clear);
        for &(h, late, step) in &by_instance {
            late_by_host[h].push(late);
            late_step_set[h].extend(step);
        }
        "collective"
    };

    // Host rows.
    let mut rows: Vec<HostRow> = host_names
        .iter()
        .map(|h| HostRow {
            host: h.to_string(),
            devices: 0,
            steps: 0,
            step_time_us: 0.0,
            compute_us: 0.0,
            wait_for_peers_us: 0.0,
            transfer_us: 0.0,
            host_wait_us: 0.0,
            collective_wait_us: 0.0,
            collective_transfer_us: 0.0,
            times_last: 0,
            steps_late: 0,
            late_us_median: None,
            clock_offset_us: 0.0,
        })
        .collect();
    let mut step_sum = vec![0i64; nh];
    for (d, m) in members.iter().enumerate() {
        let Some(&h) = host_index.get(host_of(d)) else { continue };
        let r = &mut rows[h];
        r.clock_offset_us = us(matched.offsets.get(d).copied().unwrap_or(0));
        r.devices += 1;
        r.steps += m.steps.len();
        for (_, b) in &m.steps {
            step_sum[h] = step_sum[h].saturating_add(b.duration);
            r.compute_us += us(b.compute);
            r.wait_for_peers_us += us(b.peer_wait);
            r.transfer_us += us(b.collective.saturating_sub(b.peer_wait));
            r.host_wait_us += us(b.host_wait);
        }
        r.collective_wait_us += us(wait_dev[d]);
        r.collective_transfer_us += us(transfer_dev[d]);
    }
    for (h, r) in rows.iter_mut().enumerate() {
        let dv = r.devices.max(1) as f64;
        r.step_time_us = if r.steps > 0 { us(step_sum[h]) / r.steps as f64 } else { 0.0 };
        for f in [
            &mut r.compute_us,
            &mut r.wait_for_peers_us,
            &mut r.transfer_us,
            &mut r.host_wait_us,
            &mut r.collective_wait_us,
            &mut r.collective_transfer_us,
        ] {
            *f /= dv;
        }
        r.times_last = times_last[h];
        r.steps_late = late_by_host[h].len();
        r.late_us_median = median_f(late_by_host[h].clone()).map(|ps| ps / 1e6);
    }

    // The members' kind (the devices that run collectives) and the chip the trace names: the link's peak.
    let members_kind =
        tl.devices.iter().find(|d| !d.collectives.is_empty()).map_or(DeviceKind::CpuExecutor, |d| d.kind);
    let mut no_link: Option<String> = None;
    let collectives: Vec<CollectiveRow> = by_op
        .into_iter()
        .map(|((name, kind_s, scope, _), (kind, (count, members_n, bytes, wait, transfer, (group, from_hlo))))| {
            let mut m = members_n.clone();
            m.sort_unstable();
            let members = m.get(m.len() / 2).copied().unwrap_or(0);
            let transfer_us_mean = if count > 0 { transfer / 1e6 / count as f64 } else { 0.0 };
            // The bus factor is over the collective's own group (a replica group of 2 among 4 matched devices).
            let factor = busbw_factor(kind, group.map_or(members, |g| g as usize));
            let algbw = bytes.filter(|_| transfer_us_mean > 0.0).map(|b| b as f64 / (transfer_us_mean * 1e-6) / 1e9);
            let n = group.map_or(members, |g| g as usize);
            let link = super::link::link_use(tl.chip.as_deref(), members_kind, n, algbw.map(|a| a * factor))
                .map_err(|why| no_link.get_or_insert(why).clone())
                .ok();
            CollectiveRow {
                name,
                kind: kind_s,
                scope,
                instances: count,
                members,
                group_size: group,
                bytes,
                bytes_source: bytes.map(|_| {
                    if from_hlo {
                        "the HLO instruction's shapes (the larger of its result and operands)"
                    } else {
                        "the trace's message record (elements × dtype)"
                    }
                    .to_string()
                }),
                wait_for_peers_us: wait / 1e6,
                transfer_us: transfer / 1e6,
                transfer_us_mean,
                algbw_gbps: algbw,
                busbw_gbps: algbw.map(|a| a * factor),
                busbw_factor: factor,
                link,
            }
        })
        .collect();

    let noise_ps = median_f(spreads).unwrap_or(0.0);
    let steps_with = if unit == "step" { late_steps.len() } else { by_instance.len() };
    let mut notes = Vec::new();
    if matched.aligned {
        let shown: Vec<String> = host_names
            .iter()
            .filter_map(|h| {
                let d = (0..tl.devices.len()).find(|&d| host_of(d) == *h)?;
                Some(format!("{h} {:+.3} ms", matched.offsets[d] as f64 / 1e9))
            })
            .take(8)
            .collect();
        notes.push(format!(
            "the hosts' clocks disagree: aligned on the collectives' ends (each host's median offset: {}{})",
            shown.join(", "),
            if host_names.len() > 8 { ", …" } else { "" }
        ));
    }
    for c in collectives.iter().filter(|c| c.group_size.is_some_and(|g| (g as usize) < c.members)) {
        notes.push(format!(
            "{}: replica groups of {} among the {} devices matched: the trace does not say which devices form a \
             group, so its waits are measured across the groups",
            c.name,
            c.group_size.unwrap_or(0),
            c.members
        ));
    }
    if let Some(why) = no_link.filter(|_| collectives.iter().any(|c| c.busbw_gbps.is_some())) {
        notes.push(format!("busbw is not held against a link's peak: {why}"));
    }
    if matched.unmatched > 0 {
        notes.push(format!(
            "{} collective runs had no peer in the trace (one member only): not matched, not in collectives[]",
            matched.unmatched
        ));
    }
    let candidate = (0..nh).filter(|&h| !late_by_host[h].is_empty()).max_by(|&a, &b| {
        late_by_host[a]
            .len()
            .cmp(&late_by_host[b].len())
            .then(
                median_f(late_by_host[a].clone())
                    .unwrap_or(0.0)
                    .total_cmp(&median_f(late_by_host[b].clone()).unwrap_or(0.0)),
            )
            .then(b.cmp(&a))
    });
    let mean_step_sum = if nh > 0 {
        step_sum.iter().map(|&s| s as f64).sum::<f64>() / rows.iter().map(|r| r.devices).sum::<usize>().max(1) as f64
    } else {
        0.0
    };
    let straggler = candidate.and_then(|h| {
        let steps_late = late_by_host[h].len();
        let late = median_f(late_by_host[h].clone()).unwrap_or(0.0);
        let chance = binomial_tail(steps_with, steps_late, 1.0 / nh.max(2) as f64);
        let enough = steps_late >= 2 && 2 * steps_late >= steps_with && chance < CHANCE;
        let above_noise = late > 3.0 * noise_ps && late > 0.0;
        if !(enough && above_noise) {
            notes.push(format!(
                "no straggler: {} was last at {steps_late} of {steps_with} {unit}s (by chance: p = {chance:.3}) by a median \
                 {:.3} ms (the others' arrivals spread σ = {:.3} ms): not told apart from run-to-run noise (a \
                 straggler is last at half the {unit}s or more, more often than chance, p < {CHANCE}, by more than 3σ)",
                host_names[h],
                late / 1e9,
                noise_ps / 1e9
            ));
            return None;
        }
        let counts = (unit, steps_late, steps_with);
        Some(straggler_finding(tl, members, host_names[h], &late_step_set[h], counts, late, noise_ps, lost_by_host[h], mean_step_sum))
    });
    MultiHost { hosts: rows, collectives, late_steps, straggler, noise_us: noise_ps / 1e6, notes }
}

#[allow(clippy::too_many_arguments)]
fn straggler_finding(
    tl: &Timeline,
    members: &[MemberSteps],
    host: &str,
    late_steps: &[i64],
    (unit, steps_late, steps): (&str, usize, usize),
    late_ps: f64,
    noise_ps: f64,
    lost_ps: f64,
    mean_step_sum_ps: f64,
) -> Straggler {
    let (mut own, mut own_n, mut others_compute, mut others_n) = (BreakdownPs::default(), 0usize, 0i64, 0usize);
    for (d, m) in members.iter().enumerate() {
        let mine = tl.devices.get(d).is_some_and(|dev| dev.host == host);
        for (w, b) in &m.steps {
            if !late_steps.contains(&w.step) {
                continue;
            }
            if mine {
                own.add(b);
                own_n += 1;
            } else {
                others_compute = others_compute.saturating_add(b.compute);
                others_n += 1;
            }
        }
    }
    let per = |ps: i64| if own_n > 0 { us(ps) / own_n as f64 } else { 0.0 };
    let (compute, host_wait, idle) = (per(own.compute), per(own.host_wait), per(own.idle));
    let others = if others_n > 0 { us(others_compute) / others_n as f64 } else { 0.0 };
    let extra_compute = compute - others;
    let cause = if host_wait >= idle && host_wait >= extra_compute {
        "host_wait"
    } else if extra_compute >= idle {
        "compute"
    } else {
        "idle"
    };
    let lost_percent = if mean_step_sum_ps > 0.0 { lost_ps / mean_step_sum_ps * 100.0 } else { 0.0 };
    let late_ms = late_ps / 1e9;
    let doing = match cause {
        "host_wait" => format!(
            "its device waited {:.2} ms a step on its own host (input pipeline, data loading, host code): look at \
             {host}'s host threads in those steps and move the work off the step's path (prefetch, more loader \
             workers)",
            host_wait / 1e3
        ),
        "compute" => format!(
            "it computed {:.2} ms a step more than the others (load imbalance: uneven shards, sequence lengths or a \
             slower device): balance the work or check the device",
            extra_compute / 1e3
        ),
        _ => format!(
            "its device sat idle {:.2} ms a step with nothing recorded on its host (a pause outside the trace: GC, \
             another process, throttling): trace {host}'s host with more detail",
            idle / 1e3
        ),
    };
    let summary = format!(
        "{host} arrived last at {steps_late} of {steps} {unit}s, a median {late_ms:.2} ms after the others; they lost \
         {lost_percent:.1} % of the run waiting for it. This is a late peer, not the interconnect: {doing}."
    );
    Straggler {
        host: host.to_string(),
        late_us_median: late_ps / 1e6,
        steps_late,
        steps,
        unit: unit.to_string(),
        lost_percent,
        noise_us: noise_ps / 1e6,
        cause: cause.to_string(),
        compute_us: compute,
        host_wait_us: host_wait,
        idle_us: idle,
        others_compute_us: others,
        summary,
    }
}

/// The host rows an experiment's summary row keeps: at most `max`, the late ones first (then by name), each with
/// its lateness and per-step wait and transfer.
pub fn stored_hosts(hosts: &[HostRow], max: usize) -> serde_json::Value {
    let mut rows: Vec<&HostRow> = hosts.iter().collect();
    rows.sort_by(|a, b| b.steps_late.cmp(&a.steps_late).then_with(|| a.host.cmp(&b.host)));
    rows.truncate(max);
    serde_json::Value::Array(
        rows.into_iter()
            .map(|h| {
                let per_step = |x: f64| if h.steps > 0 { x * h.devices.max(1) as f64 / h.steps as f64 } else { 0.0 };
                serde_json::json!({
                    "host": h.host,
                    "step_time_us": h.step_time_us,
                    "wait_for_peers_us_per_step": per_step(h.wait_for_peers_us),
                    "transfer_us_per_step": per_step(h.transfer_us),
                    "steps_late": h.steps_late,
                    "late_us_median": h.late_us_median,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busbw_factors_are_nccl_tests() {
        assert_eq!(busbw_factor(CollectiveKind::AllReduce, 4), 1.5);
        assert_eq!(busbw_factor(CollectiveKind::AllReduce, 2), 1.0);
        assert_eq!(busbw_factor(CollectiveKind::AllGather, 8), 7.0 / 8.0);
        assert_eq!(busbw_factor(CollectiveKind::ReduceScatter, 4), 0.75);
        assert_eq!(busbw_factor(CollectiveKind::AllToAll, 4), 0.75);
        assert_eq!(busbw_factor(CollectiveKind::SendRecv, 4), 1.0);
        assert_eq!(busbw_factor(CollectiveKind::AllReduce, 0), 0.0, "no members: no bandwidth, no NaN");
    }

    #[test]
    fn binomial_tails_match_the_closed_forms() {
        // P(X ≥ 10) of 10 fair-of-4 draws = (1/4)^10; P(X ≥ 0) = 1; P(X ≥ 11) = 0.
        assert!((binomial_tail(10, 10, 0.25) - 0.25f64.powi(10)).abs() < 1e-15);
        assert_eq!(binomial_tail(10, 0, 0.25), 1.0);
        assert_eq!(binomial_tail(10, 11, 0.25), 0.0);
        // P(X ≥ 6), n = 10, p = 1/4: 0.019727… (the control run's host-0 before its steps changed).
        assert!((binomial_tail(10, 6, 0.25) - 0.019_727_3).abs() < 1e-6);
        // Large n stays finite and in [0, 1].
        let p = binomial_tail(100_000, 30_000, 0.25);
        assert!(p.is_finite() && (0.0..1e-12).contains(&p), "{p}");
    }

    #[test]
    fn medians_of_odd_even_and_empty() {
        assert_eq!(median_i(vec![3, 1, 2]), 2.0);
        assert_eq!(median_i(vec![4, 1, 2, 3]), 2.5);
        assert_eq!(median_i(Vec::new()), 0.0);
        assert_eq!(median_f(vec![2.0, f64::NAN, 1.0]).map(|m| m.is_nan() || m == 2.0), Some(true));
        assert_eq!(median_f(Vec::new()), None);
    }

    #[test]
    fn the_last_arrival_is_late_by_the_median_of_the_others() {
        let run = |member, start| Run {
            member,
            start,
            end: start + 10,
            name: 0,
            kind: CollectiveKind::AllReduce,
            scope: 0,
            bytes: None,
            group: None,
            from_hlo: false,
        };
        let (last, late) = last_and_late(&[run(0, 100), run(1, 130), run(2, 110), run(3, 400)]);
        assert_eq!((last, late), (3, 290.0), "400 − median(100, 130, 110)");
        // Ties go to the first member in device order.
        assert_eq!(last_and_late(&[run(0, 5), run(1, 5)]).0, 0);
    }
}
