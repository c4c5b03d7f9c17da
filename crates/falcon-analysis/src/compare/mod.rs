//! A/B compare of two captures: A is the baseline, B the candidate.
//!
//! What it answers, and how:
//!
//! * **Did step time change?** Each capture is one run: its per-step times become one run sample (median,
//!   within-run spread, step count) and the two go through [`falcon_core::stats::compare_runs`], the run-level
//!   verdict EXP's `exp compare` also uses (`improved | regressed | same | inconclusive`, t-interval, p-value,
//!   `runs`, `between_run_cv`, `repeats_needed`). One capture's steps say nothing about how much another run of
//!   the same config would differ, so the between-run noise is the documented default floor: only large
//!   changes are called from two captures, smaller ones are `inconclusive` with the runs it would take. MFU
//!   gets the same treatment from per-step samples when the profile knows the model FLOPs.
//! * **Which ops moved?** Ops are paired by [`matching`] (name, deduplicated name, then a fingerprint
//!   that survives fusion renumbering, read with the programs' HLO where the capture has it, see
//!   `signature`); every pair that is not an exact name match carries a confidence and is made only at
//!   [`CompareOptions::min_confidence`] or above. Every op of either side appears once in
//!   [`ProfileComparison::ops`], as `matched`, `added` (B only) or `removed` (A only). Self times are summed
//!   in integer picoseconds, so the per-op deltas add up exactly to the delta of total op time; on device
//!   profiles the idle delta makes up the rest of the total-time delta.
//! * **Ranked lists**: the top regressions and improvements are over matched ops only (an op new in B is no
//!   regression of anything); added and removed ops have their own lists, by self time.
//! * **Did they move along the roofline?** Each matched op with cost data has its point (operational
//!   intensity, FLOP rate) in A and in B, its bound-by on each side, and whether it crossed the ridge.
//! * **Memory**: peak and per-step growth of the headline allocator.
//!
//! Device profiles (TPU, GPU) compare their device op databases; CPU-only captures compare their XLA:CPU
//! op profiles, which carry no FLOPs or bytes (so no roofline) and no categories (the opcode stands in).

pub mod hosts;
mod kernel_rows;
pub mod matching;
mod rows;
mod signature;
mod types;

use falcon_core::stats::{compare_runs, CompareOptions as VerdictOptions, Direction, RunSample, Verdict};

use crate::device::Hardware;
use crate::error::{AnalysisError, Result};
use crate::input::HostFile;
use crate::op_metrics::OpMetricsDb;
use crate::profile::{analyze_files_with_db, AnalyzeOptions, CpuPeak, ProfileReport, Tool};
use matching::{match_ops, OpRow};
pub use matching::{MatchedBy, MIN_CONFIDENCE};
use signature::Signatures;
pub use types::*;
use types::{delta_ps, delta_us, ps_to_us, rel};

/// Parameters of a comparison.
#[derive(Debug, Clone, Copy)]
pub struct CompareOptions {
    /// Statistics of the step-time and MFU verdicts.
    pub verdict: VerdictOptions,
    /// How many ops the ranked lists (regressions, improvements, added, removed) keep.
    pub top: usize,
    /// Pairs other than exact name matches scoring below this are not made (see [`matching`]).
    pub min_confidence: f64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions { verdict: VerdictOptions::default(), top: 10, min_confidence: MIN_CONFIDENCE }
    }
}

/// What one capture contributes to a comparison.
pub(crate) struct SideData {
    pub side: Side,
    rows: Vec<OpRow>,
    source: OpSource,
    report: ProfileReport,
}

fn hardware_name(h: Hardware) -> &'static str {
    match h {
        Hardware::Tpu => "tpu",
        Hardware::Gpu => "gpu",
        Hardware::CpuOnly => "cpu",
    }
}

/// Analyses one capture for a comparison.
pub(crate) fn side_data(input: &str, files: &[HostFile], cpu_peak: Option<&CpuPeak>) -> Result<SideData> {
    let options = AnalyzeOptions {
        tools: vec![Tool::Overview, Tool::Ops, Tool::Memory, Tool::Steps],
        cpu_peak: cpu_peak.cloned(),
        ..AnalyzeOptions::default()
    };
    let (report, db): (ProfileReport, OpMetricsDb) = analyze_files_with_db(files, &options)?;
    let device = &report.device;
    let cpu = device.hardware == Hardware::CpuOnly;
    let programs: std::collections::BTreeSet<&str> = if cpu {
        report.cpu_ops.iter().flat_map(|p| p.ops.iter().map(|o| o.hlo_module.as_str())).collect()
    } else {
        db.ops.iter().map(|o| o.hlo_module.as_str()).collect()
    };
    let signatures = read_signatures(files, &programs)?;
    let (rows, source) = if cpu {
        let profile = report.cpu_ops.as_ref().cloned().unwrap_or_default();
        (rows::cpu_rows(&profile, &db, device, &signatures), OpSource::XlaCpu)
    } else {
        (rows::device_rows(&db, device, &signatures), OpSource::Device)
    };
    let op_time_ps: u64 = rows.iter().map(|r| r.self_time_ps).sum();
    let is_device = source == OpSource::Device;
    let steps = report.steps.as_ref();
    let mut notes = report.notes.clone();
    if let Some(o) = &report.overview {
        notes.extend(o.notes.iter().cloned());
    }
    for n in &signatures.notes {
        if !notes.contains(n) {
            notes.push(n.clone());
        }
    }
    if signatures.by_op.is_empty() && !rows.is_empty() {
        notes.push(
            "the capture holds no HLO programs: its ops are matched without opcodes, shapes or framework op names"
                .to_string(),
        );
    }
    let side = Side {
        input: input.to_string(),
        files: files.to_vec(),
        device_type: device.device_type.clone(),
        hardware: hardware_name(device.hardware).to_string(),
        device_cores: device.device_cores,
        step_times_ms: steps.map_or_else(Vec::new, |s| s.steps.iter().map(|st| st.duration_ps as f64 / 1e9).collect()),
        ops: rows.len(),
        op_time_ps,
        total_time_ps: is_device.then_some(db.total_time_ps),
        idle_time_ps: is_device.then(|| db.total_time_ps.saturating_sub(op_time_ps)),
        mfu: report.overview.as_ref().and_then(|o| o.mfu),
        launch: None,
        notes,
    };
    Ok(SideData { side, rows, source, report })
}

/// The signatures of the programs in a capture: hosts are read in order until every program in `programs`
/// is described (usually the first host describes them all).
fn read_signatures(files: &[HostFile], programs: &std::collections::BTreeSet<&str>) -> Result<Signatures> {
    let mut signatures = Signatures::default();
    for file in files {
        if programs.iter().all(|p| signatures.modules.contains(*p)) {
            break;
        }
        signatures.add_space(&crate::input::load_host(file)?);
    }
    Ok(signatures)
}

/// One input of a comparison.
#[derive(Debug, Clone, Copy)]
pub enum CompareInput<'a> {
    /// An XProf capture: its name and host files.
    Profile(&'a str, &'a [HostFile]),
    /// A Chrome trace (PyTorch profiler, JAX `*.trace.json.gz`): its name and file.
    Trace(&'a str, &'a std::path::Path),
}

/// Compares two inputs, either of which may be a Chrome trace: with a trace on either side, GPU kernels are
/// compared by name ([`kernel_rows`]; an XProf capture contributes its kernel stats); two captures compare as
/// [`compare_files`]. `max_decompressed` caps a gzipped trace's inflated size.
pub fn compare_inputs(
    a: CompareInput<'_>,
    b: CompareInput<'_>,
    options: &CompareOptions,
    max_decompressed: u64,
) -> Result<ProfileComparison> {
    compare_inputs_with_peaks(a, b, options, max_decompressed, [None, None])
}

/// [`compare_inputs`] with each side's measured CPU peak (`falcon doctor --calibrate`), which an XLA:CPU capture's
/// roofline placement and MFU divide by.
pub fn compare_inputs_with_peaks(
    a: CompareInput<'_>,
    b: CompareInput<'_>,
    options: &CompareOptions,
    max_decompressed: u64,
    cpu_peaks: [Option<&CpuPeak>; 2],
) -> Result<ProfileComparison> {
    let traces = matches!(a, CompareInput::Trace(..)) || matches!(b, CompareInput::Trace(..));
    let side = |input: CompareInput<'_>, peak: Option<&CpuPeak>| -> Result<SideData> {
        match input {
            CompareInput::Trace(name, path) => kernel_rows::trace_side(name, path, max_decompressed),
            CompareInput::Profile(name, files) if traces => {
                let mut s = side_data(name, files, peak)?;
                let kernels = crate::profile::analyze_files(
                    files,
                    &AnalyzeOptions { tools: vec![Tool::Kernels], ..AnalyzeOptions::default() },
                )?;
                s.rows = kernel_rows::kernel_stat_rows(kernels.kernels.as_deref().unwrap_or_default());
                s.side.ops = s.rows.len();
                s.side.op_time_ps = s.rows.iter().map(|r| r.self_time_ps).sum();
                s.side.total_time_ps = None;
                s.side.idle_time_ps = None;
                s.source = OpSource::Kernels;
                Ok(s)
            }
            CompareInput::Profile(name, files) => side_data(name, files, peak),
        }
    };
    let (a, b) = (side(a, cpu_peaks[0])?, side(b, cpu_peaks[1])?);
    if traces && (a.rows.is_empty() || b.rows.is_empty()) {
        let empty = if a.rows.is_empty() { &a.side.input } else { &b.side.input };
        return Err(AnalysisError::Invalid(format!(
            "{empty} has no GPU kernels to compare (a trace is compared with another by its kernels)"
        )));
    }
    compare_sides(a, b, options)
}

/// Compares two captures, each given as its host files (see [`crate::input::find_profiles`]).
pub fn compare_files(
    a: (&str, &[HostFile]),
    b: (&str, &[HostFile]),
    options: &CompareOptions,
) -> Result<ProfileComparison> {
    let a = side_data(a.0, a.1, None)?;
    let b = side_data(b.0, b.1, None)?;
    compare_sides(a, b, options)
}

fn op_change(a: Option<&OpRow>, b: Option<&OpRow>, matched: Option<(MatchedBy, f64)>) -> OpChange {
    let a_ps = a.map_or(0, |r| r.self_time_ps);
    let b_ps = b.map_or(0, |r| r.self_time_ps);
    let main = b.or(a).expect("an op change has at least one side");
    let status = match (a, b) {
        (Some(_), Some(_)) => OpStatus::Matched,
        (None, _) => OpStatus::Added,
        (_, None) => OpStatus::Removed,
    };
    let a_flops = a.and_then(|r| r.flops);
    let b_flops = b.and_then(|r| r.flops);
    OpChange {
        name: main.name.clone(),
        a_name: a.filter(|r| b.is_some_and(|b| b.name != r.name)).map(|r| r.name.clone()),
        program: main.module.clone(),
        category: main.category.clone(),
        status,
        matched_by: matched.map(|m| m.0),
        confidence: matched.map(|m| m.1),
        a_self_time_us: ps_to_us(a_ps),
        b_self_time_us: ps_to_us(b_ps),
        delta_us: delta_us(a_ps, b_ps),
        delta_rel: a.and_then(|_| rel(a_ps as f64, b_ps as f64)),
        delta_ps: delta_ps(a_ps, b_ps),
        a_occurrences: a.map_or(0, |r| r.occurrences),
        b_occurrences: b.map_or(0, |r| r.occurrences),
        a_flops,
        b_flops,
        flops_ratio: match (a_flops, b_flops) {
            (Some(x), Some(y)) if x > 0 => Some(y as f64 / x as f64),
            _ => None,
        },
        a_bytes: a.and_then(|r| r.bytes_accessed),
        b_bytes: b.and_then(|r| r.bytes_accessed),
        a_flop_rate: a.and_then(|r| r.point.as_ref()).map(|p| p.flop_rate_gflops),
        b_flop_rate: b.and_then(|r| r.point.as_ref()).map(|p| p.flop_rate_gflops),
        a_bandwidth: a.and_then(|r| r.point.as_ref()).map(|p| p.memory_bw_gibs),
        b_bandwidth: b.and_then(|r| r.point.as_ref()).map(|p| p.memory_bw_gibs),
        a_bound_by: a.and_then(|r| r.point.as_ref()).map(|p| p.bound_by.clone()),
        b_bound_by: b.and_then(|r| r.point.as_ref()).map(|p| p.bound_by.clone()),
    }
}

fn sum_opt(acc: &mut Option<u64>, v: Option<u64>) {
    if let Some(v) = v {
        *acc = Some(acc.unwrap_or(0).saturating_add(v));
    }
}

fn categories(a: &[OpRow], b: &[OpRow]) -> Vec<CategoryChange> {
    #[derive(Default)]
    struct Acc {
        ps: [u64; 2],
        ops: [usize; 2],
        flops: [Option<u64>; 2],
        bytes: [Option<u64>; 2],
    }
    let mut by: std::collections::BTreeMap<&str, Acc> = std::collections::BTreeMap::new();
    for (side, rows) in [a, b].into_iter().enumerate() {
        for r in rows {
            let acc = by.entry(r.category.as_str()).or_default();
            acc.ps[side] += r.self_time_ps;
            acc.ops[side] += 1;
            sum_opt(&mut acc.flops[side], r.flops);
            sum_opt(&mut acc.bytes[side], r.bytes_accessed);
        }
    }
    let rate = |flops: Option<u64>, ps: u64| flops.filter(|_| ps > 0).map(|f| f as f64 / (ps as f64 / 1e3));
    let mut out: Vec<CategoryChange> = by
        .into_iter()
        .map(|(category, acc)| CategoryChange {
            category: category.to_string(),
            a_self_time_us: ps_to_us(acc.ps[0]),
            b_self_time_us: ps_to_us(acc.ps[1]),
            delta_us: delta_us(acc.ps[0], acc.ps[1]),
            delta_rel: rel(acc.ps[0] as f64, acc.ps[1] as f64),
            delta_ps: delta_ps(acc.ps[0], acc.ps[1]),
            a_ops: acc.ops[0],
            b_ops: acc.ops[1],
            a_flops: acc.flops[0],
            b_flops: acc.flops[1],
            a_bytes: acc.bytes[0],
            b_bytes: acc.bytes[1],
            a_flop_rate: rate(acc.flops[0], acc.ps[0]),
            b_flop_rate: rate(acc.flops[1], acc.ps[1]),
        })
        .collect();
    out.sort_by(|x, y| {
        y.delta_ps.unsigned_abs().cmp(&x.delta_ps.unsigned_abs()).then_with(|| x.category.cmp(&y.category))
    });
    out
}

fn memory_delta(a: &ProfileReport, b: &ProfileReport) -> Option<MemoryDelta> {
    let ma = a.memory.as_ref().filter(|m| m.peak_allocator.is_some());
    let mb = b.memory.as_ref().filter(|m| m.peak_allocator.is_some());
    if ma.is_none() && mb.is_none() {
        return None;
    }
    let peak = |m: Option<&crate::memory::MemoryProfile>| m.map_or(0, |m| m.peak_bytes);
    let growth = |m: Option<&crate::memory::MemoryProfile>| {
        m.filter(|m| !m.step_growth_bytes.is_empty())
            .map(|m| m.step_growth_bytes.iter().map(|&g| g as f64).sum::<f64>() / m.step_growth_bytes.len() as f64)
    };
    let (ga, gb) = (growth(ma), growth(mb));
    Some(MemoryDelta {
        a_peak_bytes: peak(ma),
        b_peak_bytes: peak(mb),
        delta_peak_bytes: peak(mb) - peak(ma),
        a_step_growth_bytes: ga,
        b_step_growth_bytes: gb,
        delta_step_growth_bytes: ga.zip(gb).map(|(x, y)| y - x),
        a_leak_suspected: ma.is_some_and(|m| m.leak_suspected),
        b_leak_suspected: mb.is_some_and(|m| m.leak_suspected),
    })
}

/// Per-step MFU samples: the profile's model FLOPs per step over each step's time.
fn mfu_samples(report: &ProfileReport, side: &Side) -> Option<Vec<f64>> {
    if side.step_times_ms.is_empty() {
        return None;
    }
    let o = report.overview.as_ref()?;
    let flops = o.mfu_model_flops.filter(|f| *f > 0.0)?;
    o.mfu?;
    let peak = report.device.peak_teraflops_per_second * 1e12 * f64::from(report.device.device_cores.max(1));
    (peak > 0.0).then(|| side.step_times_ms.iter().filter(|t| **t > 0.0).map(|t| flops / (t / 1e3 * peak)).collect())
}

pub(crate) fn compare_sides(a: SideData, b: SideData, options: &CompareOptions) -> Result<ProfileComparison> {
    if a.source != b.source {
        return Err(AnalysisError::Invalid(format!(
            "cannot compare a {} profile ({}) with a {} profile ({}): one has device ops, the other only XLA:CPU ops",
            a.side.hardware, a.side.input, b.side.hardware, b.side.input
        )));
    }
    // Kernels pair by exact name only (see `kernel_rows`): no fingerprint pair can reach a confidence above 1.
    let min_confidence = if a.source == OpSource::Kernels { f64::INFINITY } else { options.min_confidence };
    let m = match_ops(&a.rows, &b.rows, min_confidence);
    let mut ops: Vec<OpChange> = Vec::with_capacity(m.pairs.len() + m.added.len() + m.removed.len());
    let mut summary = MatchSummary {
        matched: m.pairs.len(),
        added: m.added.len(),
        removed: m.removed.len(),
        min_confidence: options.min_confidence,
        rejected: m.rejected,
        ..MatchSummary::default()
    };
    for p in &m.pairs {
        match p.by {
            MatchedBy::Name => summary.by_name += 1,
            MatchedBy::DeduplicatedName => summary.by_deduplicated_name += 1,
            MatchedBy::Fingerprint => summary.by_fingerprint += 1,
        }
        ops.push(op_change(Some(&a.rows[p.a]), Some(&b.rows[p.b]), Some((p.by, p.confidence))));
    }
    ops.extend(m.removed.iter().map(|&i| op_change(Some(&a.rows[i]), None, None)));
    ops.extend(m.added.iter().map(|&i| op_change(None, Some(&b.rows[i]), None)));
    ops.sort_by(|x, y| {
        y.delta_ps
            .unsigned_abs()
            .cmp(&x.delta_ps.unsigned_abs())
            .then_with(|| x.name.cmp(&y.name))
            .then_with(|| x.program.cmp(&y.program))
    });

    let ra = roofline_frame(&a.report);
    let rb = roofline_frame(&b.report);
    let roofline_peaks = (a.source == OpSource::Device).then_some(RooflinePeaks {
        a_peak_flop_rate: ra.0,
        b_peak_flop_rate: rb.0,
        a_peak_hbm_bw: ra.1,
        b_peak_hbm_bw: rb.1,
        a_ridge_point: ra.2,
        b_ridge_point: rb.2,
    });
    let mut roofline: Vec<RooflineChange> = m
        .pairs
        .iter()
        .filter_map(|p| {
            let (x, y) = (&a.rows[p.a], &b.rows[p.b]);
            let (pa, pb) = (x.point.as_ref()?, y.point.as_ref()?);
            let above = |oi: f64, ridge: f64| ridge > 0.0 && oi >= ridge;
            Some(RooflineChange {
                name: y.name.clone(),
                category: y.category.clone(),
                a_oi: pa.operational_intensity,
                a_flop_rate: pa.flop_rate_gflops,
                b_oi: pb.operational_intensity,
                b_flop_rate: pb.flop_rate_gflops,
                a_bound_by: pa.bound_by.clone(),
                b_bound_by: pb.bound_by.clone(),
                crossed_ridge: above(pa.operational_intensity, ra.2) != above(pb.operational_intensity, rb.2),
                b_self_time_us: ps_to_us(y.self_time_ps),
                delta_us: delta_us(x.self_time_ps, y.self_time_ps),
            })
        })
        .collect();
    roofline.sort_by(|x, y| y.b_self_time_us.total_cmp(&x.b_self_time_us).then_with(|| x.name.cmp(&y.name)));

    // `ops` is ordered by |delta| (largest first), so each filter keeps the largest moves in order.
    let matched = |o: &&OpChange| o.status == OpStatus::Matched;
    let regressions: Vec<OpChange> =
        ops.iter().filter(matched).filter(|o| o.delta_ps > 0).take(options.top).cloned().collect();
    let improvements: Vec<OpChange> =
        ops.iter().filter(matched).filter(|o| o.delta_ps < 0).take(options.top).cloned().collect();
    let added = by_self_time(&ops, OpStatus::Added, options.top);
    let removed = by_self_time(&ops, OpStatus::Removed, options.top);

    let secs = |s: &Side| s.step_times_ms.iter().map(|t| t / 1e3).collect::<Vec<f64>>();
    let step_time =
        one_run_each("step_time_s", Direction::LowerIsBetter, &secs(&a.side), &secs(&b.side), &options.verdict);
    let mfu_verdict = match (mfu_samples(&a.report, &a.side), mfu_samples(&b.report, &b.side)) {
        (Some(x), Some(y)) => Some(one_run_each("mfu", Direction::HigherIsBetter, &x, &y, &options.verdict)),
        _ => None,
    };
    let mfu = MfuDelta {
        a: a.side.mfu,
        b: b.side.mfu,
        delta: a.side.mfu.zip(b.side.mfu).map(|(x, y)| y - x),
        verdict: mfu_verdict,
    };
    let totals = Totals {
        op_time: TimeDelta::of(a.side.op_time_ps, b.side.op_time_ps),
        idle_time: a.side.idle_time_ps.zip(b.side.idle_time_ps).map(|(x, y)| TimeDelta::of(x, y)),
        total_time: a.side.total_time_ps.zip(b.side.total_time_ps).map(|(x, y)| TimeDelta::of(x, y)),
    };
    let mut notes = Vec::new();
    if a.source == OpSource::XlaCpu {
        notes.push(
            "CPU-only captures: op times are XLA:CPU's per-op events; FLOPs, bytes and categories come from the \
             capture's own HLO (XLA's cost analysis rules, as `cost_analysis()` counts them), and roofline placement \
             from the measured CPU peak (`falcon doctor --calibrate`) when there is one"
                .to_string(),
        );
    }
    if a.source == OpSource::Kernels {
        notes.push(
            "GPU kernels compared by name (a Chrome trace has no HLO ops): times summed over each whole trace, \
             categories are kernel families, kernels new in B are `added`, gone from A `removed`"
                .to_string(),
        );
        if let (Some(x), Some(y)) = (&a.side.launch, &b.side.launch) {
            notes.push(format!(
                "launches: {:.0} → {:.0} kernels a step; the device waits on the host {} → {} of the step",
                x.kernels_per_step,
                y.kernels_per_step,
                x.host_wait_fraction.map_or("?".into(), |f| format!("{:.0}%", 100.0 * f)),
                y.host_wait_fraction.map_or("?".into(), |f| format!("{:.0}%", 100.0 * f)),
            ));
        }
    }
    if a.side.step_times_ms.is_empty() || b.side.step_times_ms.is_empty() {
        notes.push("a capture has no step markers, so there are no per-step times to compare".to_string());
    }
    if a.side.device_type != b.side.device_type {
        notes.push(format!("different devices: A ran on {}, B on {}", a.side.device_type, b.side.device_type));
    }
    let (hosts, straggler) = hosts::compare_hosts(a.report.multihost.as_ref(), b.report.multihost.as_ref());
    Ok(ProfileComparison {
        hosts,
        straggler,
        categories: categories(&a.rows, &b.rows),
        memory: memory_delta(&a.report, &b.report),
        a: a.side,
        b: b.side,
        op_source: a.source,
        step_time,
        mfu,
        totals,
        ops,
        roofline,
        roofline_peaks,
        regressions,
        improvements,
        added,
        removed,
        matching: summary,
        notes,
    })
}

/// The `top` ops of one status, most self time (on the side that has them) first; ties by name, program.
fn by_self_time(ops: &[OpChange], status: OpStatus, top: usize) -> Vec<OpChange> {
    let mut list: Vec<&OpChange> = ops.iter().filter(|o| o.status == status).collect();
    let time = |o: &OpChange| o.delta_ps.unsigned_abs();
    list.sort_by(|x, y| {
        time(y).cmp(&time(x)).then_with(|| x.name.cmp(&y.name)).then_with(|| x.program.cmp(&y.program))
    });
    list.into_iter().take(top).cloned().collect()
}

/// (peak GFLOP/s, peak HBM GiB/s, ridge point FLOP/byte) of a capture's device, as the roofline uses them.
fn roofline_frame(report: &ProfileReport) -> (f64, f64, f64) {
    let (flop, hbm) = crate::roofline::peaks_of(&report.device);
    (flop, hbm, if hbm > 0.0 { flop / (hbm * 1.073_741_824) } else { 0.0 })
}

/// The run-level verdict of two captures, one run each: every captured step counts (a capture holds the
/// profiled steps, past warm-up); a capture without steps is a side without runs (`inconclusive`).
fn one_run_each(metric: &str, direction: Direction, a: &[f64], b: &[f64], opts: &VerdictOptions) -> Verdict {
    let run = |steps: &[f64]| RunSample::from_steps(steps, Some(0)).into_iter().collect::<Vec<_>>();
    compare_runs(metric, direction, &run(a), &run(b), None, opts)
}
