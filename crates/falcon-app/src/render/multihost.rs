//! The multi-host part of a trace report (`profile trace`, `profile analyze` of a run of several hosts): the
//! straggler finding, the per-host table and the collectives matched across members. The numbers are
//! [`falcon_analysis::trace::multihost`]'s; this only lays them out.

use super::numbers::{duration_us, num, num_opt, percent, TimeUnit};
use super::text::new_table;
use falcon_analysis::trace::multihost::{CollectiveRow, HostRow, LateStep, Straggler};

/// What the sections read: the report's multi-host fields.
pub struct MultiHostView<'a> {
    pub hosts: &'a [HostRow],
    pub collectives: &'a [CollectiveRow],
    pub late_steps: &'a [LateStep],
    pub straggler: Option<&'a Straggler>,
}

impl<'a> MultiHostView<'a> {
    /// The view of `profile analyze`'s multi-host section.
    pub fn of(m: &'a falcon_analysis::trace::multihost::MultiHost) -> MultiHostView<'a> {
        MultiHostView {
            hosts: &m.hosts,
            collectives: &m.collectives,
            late_steps: &m.late_steps,
            straggler: m.straggler.as_ref(),
        }
    }
}

fn heading(md: bool, text: &str) -> String {
    if md {
        format!("\n## {text}\n")
    } else {
        format!("\n{text}")
    }
}

/// The sections, in order: the straggler (or why none is named: the report's notes say), the hosts, the collectives
/// across members. Empty when the trace has one host and no collective matched across devices.
pub fn sections(v: &MultiHostView<'_>, top: usize, md: bool) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(s) = v.straggler {
        out.push(heading(md, "Straggler"));
        out.push(s.summary.clone());
    }
    if v.hosts.len() > 1 || !v.collectives.is_empty() {
        out.push(heading(md, "Hosts (per step: mean; late: the steps it arrived last at collectives)"));
        let mut rows: Vec<&HostRow> = v.hosts.iter().collect();
        // The late hosts first, then by name: on a run of many hosts the ones to look at are at the top.
        rows.sort_by(|a, b| b.steps_late.cmp(&a.steps_late).then_with(|| a.host.cmp(&b.host)));
        let shown = &rows[..rows.len().min(top.max(1))];
        // Per step, in µs: a sum over a host's steps (of all its devices) over its steps a device.
        let per = |h: &HostRow, x: f64| (h.steps > 0).then(|| x / (h.steps as f64 / h.devices.max(1) as f64));
        // One unit for the step-time columns (their largest value's), one for the lateness column.
        let unit = TimeUnit::for_column_us(shown.iter().map(|h| h.step_time_us));
        let late_unit = TimeUnit::for_column_us(shown.iter().filter_map(|h| h.late_us_median));
        let u = unit.symbol();
        let mut table = new_table(
            md,
            [
                "host".to_string(),
                "steps".to_string(),
                format!("step {u}"),
                format!("compute {u}"),
                format!("wait for peers {u}"),
                format!("transfer {u}"),
                format!("host wait {u}"),
                "late at".to_string(),
                format!("late median {}", late_unit.symbol()),
            ],
        );
        for h in shown {
            let cell = |x: f64| per(h, x).map_or_else(|| "—".into(), |x| unit.fmt(x));
            table.add_row([
                h.host.clone(),
                h.steps.to_string(),
                unit.fmt(h.step_time_us),
                cell(h.compute_us),
                cell(h.wait_for_peers_us),
                cell(h.transfer_us),
                cell(h.host_wait_us),
                h.steps_late.to_string(),
                h.late_us_median.map_or_else(|| "—".into(), |l| late_unit.fmt(l)),
            ]);
        }
        out.push(table.to_string());
        if v.hosts.len() > top.max(1) {
            out.push(format!("({} more hosts: --top or --json)", v.hosts.len() - top.max(1)));
        }
        if !v.late_steps.is_empty() {
            let shown: Vec<String> = v
                .late_steps
                .iter()
                .take(top.max(1))
                .map(|s| format!("{} {} +{}", s.step, s.host, duration_us(s.late_us)))
                .collect();
            out.push(format!("last to arrive, by step: {}", shown.join(", ")));
        }
    }
    if !v.collectives.is_empty() {
        out.push(heading(md, "Collectives across members (wait for peers vs transfer, bandwidth)"));
        let shown: Vec<&CollectiveRow> = v.collectives.iter().take(top.max(1)).collect();
        let unit = TimeUnit::for_column_us(shown.iter().flat_map(|c| [c.wait_for_peers_us, c.transfer_us]));
        let mut table = new_table(
            md,
            [
                "collective".to_string(),
                "kind".to_string(),
                "instances".to_string(),
                "members".to_string(),
                "bytes".to_string(),
                format!("wait {}", unit.symbol()),
                format!("transfer {}", unit.symbol()),
                "algbw GB/s".to_string(),
                "busbw GB/s".to_string(),
                "of link peak".to_string(),
            ],
        );
        for c in shown {
            table.add_row([
                c.name.clone(),
                c.kind.clone(),
                c.instances.to_string(),
                c.members.to_string(),
                c.bytes.map_or_else(|| "—".into(), super::numbers::human_bytes),
                unit.fmt(c.wait_for_peers_us),
                unit.fmt(c.transfer_us),
                num_opt(c.algbw_gbps),
                c.busbw_gbps.map_or_else(|| "—".into(), |b| format!("{} (×{})", num(b), num(c.busbw_factor))),
                c.link.as_ref().map_or_else(
                    || "—".into(),
                    |l| match l.busbw_percent {
                        Some(p) => format!("{} of {} {}", percent(p), l.name, num(l.peak_gbps)),
                        None => format!("{} {}", l.name, num(l.peak_gbps)),
                    },
                ),
            ]);
        }
        out.push(table.to_string());
        if let Some(l) = v.collectives.iter().find_map(|c| c.link.as_ref()) {
            out.push(format!(
                "link peak: {} of {}, {} GB/s one way (half the vendor's bidirectional figure; nccl-tests' busbw \
                 is compared with it) — assuming {}",
                l.name,
                l.chip,
                num(l.peak_gbps),
                l.assumes
            ));
        }
        if v.collectives.iter().all(|c| c.bytes.is_none()) {
            out.push(
                "bytes: the trace records no message sizes for these collectives (PyTorch: no message size or input \
                 dims on their records; XSpace: no HLO program on /host:metadata holds the instruction)"
                    .into(),
            );
        }
    }
    out
}

/// `profile compare` of two runs of several hosts: the straggler change, then each host A vs B (the late hosts of
/// either side first), at most `top` rows. `None` when neither side has several hosts.
pub fn compare_section(
    c: &falcon_analysis::compare::ProfileComparison,
    top: usize,
    md: bool,
) -> Option<super::text::Section> {
    use super::text::{Part, Section};
    let change = c.straggler.as_ref()?;
    let mut parts = vec![Part::Text(format!("straggler: {}", change.summary))];
    let late = |n: Option<usize>, l: Option<f64>| match (n, l) {
        (Some(n), Some(l)) if n > 0 => format!("{n} × {}", duration_us(l)),
        (Some(_), _) => "0".to_string(),
        _ => "—".to_string(),
    };
    let mut rows: Vec<&falcon_analysis::compare::hosts::HostChange> = c.hosts.iter().collect();
    rows.sort_by(|x, y| {
        let k = |h: &falcon_analysis::compare::hosts::HostChange| {
            h.a_steps_late.unwrap_or(0).max(h.b_steps_late.unwrap_or(0))
        };
        k(y).cmp(&k(x)).then_with(|| x.host.cmp(&y.host))
    });
    let shown = &rows[..rows.len().min(top.max(1))];
    // One unit for the time columns: the one their largest value reads best in.
    let unit = TimeUnit::for_column_us(
        shown
            .iter()
            .flat_map(|h| {
                [
                    h.a_step_time_us,
                    h.b_step_time_us,
                    h.a_wait_for_peers_us,
                    h.b_wait_for_peers_us,
                    h.a_transfer_us,
                    h.b_transfer_us,
                ]
            })
            .flatten(),
    );
    let ms = |x: Option<f64>| x.map_or_else(|| "—".to_string(), |v| unit.fmt(v));
    let u = unit.symbol();
    let mut t = new_table(
        md,
        [
            "host".to_string(),
            format!("step {u} A"),
            format!("step {u} B"),
            format!("wait {u} A"),
            format!("wait {u} B"),
            format!("transfer {u} A"),
            format!("transfer {u} B"),
            "late A".to_string(),
            "late B".to_string(),
        ],
    );
    for h in shown {
        t.add_row([
            h.host.clone(),
            ms(h.a_step_time_us),
            ms(h.b_step_time_us),
            ms(h.a_wait_for_peers_us),
            ms(h.b_wait_for_peers_us),
            ms(h.a_transfer_us),
            ms(h.b_transfer_us),
            late(h.a_steps_late, h.a_late_us_median),
            late(h.b_steps_late, h.b_late_us_median),
        ]);
    }
    parts.push(Part::Table(t));
    if rows.len() > top.max(1) {
        parts.push(Part::Text(format!("({} more hosts in --json)", rows.len() - top.max(1))));
    }
    Some(Section { title: "Hosts (per step; late: steps last at the collectives × median lateness)".into(), parts })
}
