//! The last step of a run's fold: the sections computed from the merged hosts (op profile, HLO stats, roofline,
//! overview, findings) and the report itself.

use super::device::Hardware;
use super::hlo_stats::hlo_stats;
use super::op_profile::{op_profile, GroupBy};
use super::roofline::roofline;
use super::{findings, overview, time_breakdown, AnalyzeOptions, FailedHost, OpProfileTrees, ProfileReport, Tool};
use crate::error::Result;
use crate::input::HostFile;
use crate::profile::cpu_ops::CpuOpProfile;
use crate::profile::device::DeviceInfo;
use crate::profile::hlo::HloIndex;
use crate::profile::kernels::{KernelStat, StepKernelBreakdown};
use crate::profile::op_metrics::OpMetricsDb;
use crate::profile::steps::StepReport;

/// What the report needs of the first host's capture itself, beyond its partial.
pub(crate) struct FirstHost {
    pub capture: Capture,
    /// Big enough to be freed on a helper thread.
    pub big: bool,
    pub memory: Option<super::memory::MemoryProfile>,
}

/// The first host's capture, or what the report reads of it when it was freed before the report was finished.
pub(crate) enum Capture {
    /// The capture, and the CPU overview's trace when it was computed beside the partial (XLA:CPU, tool `overview`).
    Kept { space: falcon_xplane::XSpace, cpu_trace: Option<crate::trace::TraceReport> },
    /// A big XLA:CPU capture freed once the overview's timeline was built (the capture and the trace analysis's
    /// working memory never add up): the trace, and the device step times of the capture's own steps (which are the
    /// run's: the fold keeps the first host's steps when it has any, and only then is a capture freed).
    Freed { cpu_trace: crate::trace::TraceReport, device_step_times: Option<crate::steps::StepTimeStats> },
}

/// Everything the fold gathered.
pub(crate) struct Folded<'o> {
    pub options: &'o AnalyzeOptions,
    pub device: Option<DeviceInfo>,
    pub db: Option<OpMetricsDb>,
    pub steps: Option<StepReport>,
    pub hlo: HloIndex,
    pub cpu_ops: Option<CpuOpProfile>,
    pub kernels: Vec<KernelStat>,
    pub kernel_steps: Vec<StepKernelBreakdown>,
    pub notes: Vec<String>,
    pub total_cores: u32,
    pub analysed: Vec<HostFile>,
    pub failed_hosts: Vec<FailedHost>,
    pub first: Option<FirstHost>,
    /// Each read host's part of the multi-host analysis, in host order (runs of several hosts, tool `steps`).
    pub members: Vec<crate::trace::members::HostMembers>,
}

/// The report (and the merged device op database) of a fold with at least one host read.
pub(crate) fn finish(folded: Folded<'_>) -> Result<(ProfileReport, OpMetricsDb)> {
    let Folded {
        options,
        device,
        db,
        steps,
        hlo,
        cpu_ops,
        kernels,
        kernel_steps,
        mut notes,
        total_cores,
        analysed,
        failed_hosts,
        mut first,
        members,
    } = folded;
    for f in &failed_hosts {
        notes.push(format!("host `{}` skipped, its profile could not be read: {}", f.host, f.error));
    }
    let files = analysed.as_slice();
    if files.len() > 1 && options.wants(Tool::Memory) {
        notes.push(format!(
            "memory profile is per host (as in XProf); this is host `{}` — pass --host for another",
            files.first().map(|f| f.host.as_str()).unwrap_or("")
        ));
    }
    let mut device = device.unwrap_or_default();
    device.device_cores = total_cores;
    if device.hardware == Hardware::CpuOnly {
        notes.extend(super::device::apply_cpu_peak(&mut device, options.peak_tflops, options.cpu_peak.as_ref()));
    }
    let steps = steps.unwrap_or_default();
    let db = db.unwrap_or_default();
    let roof = roofline(&db, &device, &steps);
    let memory = first.as_mut().and_then(|f| f.memory.take());
    let overview = match (first.as_mut(), options.wants(Tool::Overview)) {
        (Some(FirstHost { capture, .. }), true) => {
            let (mut o, device_step_times) = match capture {
                Capture::Kept { space, cpu_trace } => (
                    match cpu_trace.take() {
                        Some(trace) => overview::cpu_overview_of(&trace, &device, &db, &steps, &roof),
                        None => overview::overview(space, &device, &db, &steps, &roof, options.model_flops_per_step),
                    },
                    crate::steps::device_step_times(space, &steps),
                ),
                Capture::Freed { cpu_trace, device_step_times } => {
                    (overview::cpu_overview_of(cpu_trace, &device, &db, &steps, &roof), device_step_times.take())
                }
            };
            o.device_step_time_ms = device_step_times;
            o.hosts = files.len() as u32;
            if device.hardware == Hardware::CpuOnly {
                // The caller's FLOPs, else the capture's own (its HLO); the logged ones only when neither is known.
                let source = options.model_flops_source.as_deref().unwrap_or("caller model flops");
                overview::cpu_mfu(&mut o, options.model_flops_per_step.map(|f| (f, source)), &device);
                overview::with_logged_flops(&mut o, options.logged_model_flops);
            } else {
                overview::with_logged_flops(&mut o, options.logged_model_flops);
                if let Some(label) = &options.model_flops_source {
                    if o.mfu_flops_source.as_deref() == Some("caller model flops") {
                        o.mfu_flops_source = Some(label.clone());
                    }
                }
            }
            Some(o)
        }
        _ => None,
    };
    // Freeing a decoded capture's million allocations takes a tenth of its analysis: done off the answer's path.
    // Only a big one: a small capture is freed at once, and no detached thread outlives the call for it.
    if let Some(FirstHost { capture: Capture::Kept { space, .. }, big: true, .. }) = first {
        // A thread that cannot be started drops the closure, and the capture with it, here.
        let _ = std::thread::Builder::new().name("drop-capture".into()).spawn(move || drop(space));
    }
    let op_profile = options.wants(Tool::Ops).then(|| OpProfileTrees {
        by_program: op_profile(&db, &device, GroupBy::Program, false),
        by_program_exclude_idle: op_profile(&db, &device, GroupBy::Program, true),
        by_category: op_profile(&db, &device, GroupBy::Category, false),
        by_provenance: op_profile(&db, &device, GroupBy::Provenance, false),
    });
    let ops = options.wants(Tool::Hlo).then(|| hlo_stats(&db, &device));
    let step_durations: Vec<i64> = steps.steps.iter().map(|s| s.duration_ps).collect();
    let time_breakdown = match (&cpu_ops, options.wants(Tool::Ops)) {
        (Some(cpu), true) => time_breakdown::time_breakdown(cpu, &hlo, &step_durations),
        _ => None,
    };
    let findings = options.wants(Tool::Overview).then(|| match device.hardware {
        Hardware::Gpu => findings::gpu_findings(&db, roof.ridge_point, &kernels),
        _ => Vec::new(),
    });
    let report = ProfileReport {
        tools: Tool::ALL.into_iter().filter(|&t| options.wants(t)).collect(),
        files: files.to_vec(),
        device,
        overview,
        ops,
        op_profile,
        cpu_ops: cpu_ops.filter(|_| options.wants(Tool::Ops) || options.wants(Tool::Overview)),
        time_breakdown,
        roofline: options.wants(Tool::Roofline).then_some(roof),
        memory,
        kernels: options.wants(Tool::Kernels).then_some(kernels),
        kernel_steps: options.wants(Tool::Kernels).then_some(kernel_steps),
        steps: options.wants(Tool::Steps).then_some(steps),
        findings,
        framework_ops: None,
        framework_scopes: None,
        kernel_types: None,
        launch: None,
        failed_hosts,
        multihost: (options.wants(Tool::Steps) && members.len() > 1)
            .then(|| crate::trace::members::merge(&members))
            .flatten(),
        notes,
    };
    Ok((report, db))
}
