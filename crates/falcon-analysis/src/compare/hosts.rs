//! A vs B per host, for runs of several hosts: each host's step time, waiting for peers and transfer a step, and
//! lateness on both sides, and whether the straggler changed — from each side's multi-host analysis
//! ([`crate::trace::multihost`]). Hosts pair by name; a host on one side only has the other side's fields `null`.

use serde::Serialize;

use crate::trace::multihost::{HostRow, MultiHost};

/// One host on both sides (per step: means over its steps).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct HostChange {
    pub host: String,
    pub a_step_time_us: Option<f64>,
    pub b_step_time_us: Option<f64>,
    pub a_wait_for_peers_us: Option<f64>,
    pub b_wait_for_peers_us: Option<f64>,
    pub a_transfer_us: Option<f64>,
    pub b_transfer_us: Option<f64>,
    pub a_steps_late: Option<usize>,
    pub b_steps_late: Option<usize>,
    pub a_late_us_median: Option<f64>,
    pub b_late_us_median: Option<f64>,
}

/// The straggler of each side, and what changed, in words.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StragglerChange {
    pub a_host: Option<String>,
    pub b_host: Option<String>,
    pub a_late_us_median: Option<f64>,
    pub b_late_us_median: Option<f64>,
    pub a_lost_percent: Option<f64>,
    pub b_lost_percent: Option<f64>,
    pub summary: String,
}

fn per_step(h: &HostRow, total: f64) -> f64 {
    let steps = h.steps as f64 / h.devices.max(1) as f64;
    if steps > 0.0 {
        total / steps
    } else {
        0.0
    }
}

/// The per-host rows (A's host order, then B's hosts not in A) and the straggler change; empty and `None` when
/// neither side has a multi-host analysis.
pub(crate) fn compare_hosts(
    a: Option<&MultiHost>,
    b: Option<&MultiHost>,
) -> (Vec<HostChange>, Option<StragglerChange>) {
    if a.is_none() && b.is_none() {
        return (Vec::new(), None);
    }
    let ha: &[HostRow] = a.map_or(&[][..], |m| m.hosts.as_slice());
    let hb: &[HostRow] = b.map_or(&[][..], |m| m.hosts.as_slice());
    let mut names: Vec<&str> = ha.iter().map(|h| h.host.as_str()).collect();
    names.extend(hb.iter().map(|h| h.host.as_str()).filter(|n| !ha.iter().any(|h| h.host == *n)));
    let rows = names
        .into_iter()
        .map(|name| {
            let ra = ha.iter().find(|h| h.host == name);
            let rb = hb.iter().find(|h| h.host == name);
            HostChange {
                host: name.to_string(),
                a_step_time_us: ra.map(|h| h.step_time_us),
                b_step_time_us: rb.map(|h| h.step_time_us),
                a_wait_for_peers_us: ra.map(|h| per_step(h, h.wait_for_peers_us)),
                b_wait_for_peers_us: rb.map(|h| per_step(h, h.wait_for_peers_us)),
                a_transfer_us: ra.map(|h| per_step(h, h.transfer_us)),
                b_transfer_us: rb.map(|h| per_step(h, h.transfer_us)),
                a_steps_late: ra.map(|h| h.steps_late),
                b_steps_late: rb.map(|h| h.steps_late),
                a_late_us_median: ra.and_then(|h| h.late_us_median),
                b_late_us_median: rb.and_then(|h| h.late_us_median),
            }
        })
        .collect();
    let sa = a.and_then(|m| m.straggler.as_ref());
    let sb = b.and_then(|m| m.straggler.as_ref());
    let describe = |s: &crate::trace::multihost::Straggler| {
        format!("{} ({:.2} ms late at {} of {} steps)", s.host, s.late_us_median / 1e3, s.steps_late, s.steps)
    };
    let summary = match (sa, sb) {
        (None, None) => "no straggler on either side".to_string(),
        (Some(x), None) => format!("A's straggler {} is gone in B", describe(x)),
        (None, Some(y)) => format!("B has a straggler A did not: {}", describe(y)),
        (Some(x), Some(y)) if x.host == y.host => format!(
            "the same straggler on both sides: {} → {:.2} ms late (the others lost {:.1} % → {:.1} %)",
            describe(x),
            y.late_us_median / 1e3,
            x.lost_percent,
            y.lost_percent
        ),
        (Some(x), Some(y)) => format!("the straggler moved: A {} → B {}", describe(x), describe(y)),
    };
    let change = StragglerChange {
        a_host: sa.map(|s| s.host.clone()),
        b_host: sb.map(|s| s.host.clone()),
        a_late_us_median: sa.map(|s| s.late_us_median),
        b_late_us_median: sb.map(|s| s.late_us_median),
        a_lost_percent: sa.map(|s| s.lost_percent),
        b_lost_percent: sb.map(|s| s.lost_percent),
        summary,
    };
    (rows, Some(change))
}
