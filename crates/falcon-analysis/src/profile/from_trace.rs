//! `profile analyze` over a Chrome trace (PyTorch profiler traces, JAX's `*.trace.json.gz`): the report of an
//! XProf capture, in the same shapes where the fields mean the same, from what a trace holds.
//!
//! - `overview`: devices (the trace's GPUs, else its CPU op threads), step time between the trace's step
//!   markers (`ProfilerStep#N`), the device step time (first to last device event a step), duty cycle and idle
//!   from the trace breakdown ([`crate::trace`], host wait by the launch), `bound_by` from its host-bound check.
//!   A trace records no FLOPs: MFU only with `--model-flops` and `--peak-tflops`.
//! - `kernels[]` ([`crate::kernels::KernelStat`]), `kernel_types[]` and `launch` (launch statistics and the
//!   launch-bound call) with the `kernels` tool; `framework_ops[]` (by launching op) and `framework_scopes[]`
//!   (by outermost range) with the `ops` tool — see [`crate::trace::kernels`].
//! - `steps`: the step windows the trace analysis uses.
//! - `findings[]`: launch-bound, and time outside any kernel, as on XSpace.
//! - HLO stats, roofline and memory: a Chrome trace has none; the report says so.

use crate::device::{DeviceInfo, Hardware};
use crate::findings::{Finding, FindingKind};
use crate::input::HostFile;
use crate::overview::Overview;
use crate::steps::{step_time_stats, Step, StepReport, StepSource};
use crate::timeline::{DeviceKind, Timeline};
use crate::trace::kernels::kernel_view;
use crate::trace::steps::detect_steps;
use crate::trace::{analyze_trace, TraceAnalysis, TraceOptions};
use falcon_core::bound::HostVerdict;

use super::{AnalyzeOptions, ProfileReport, Tool};

/// The report of one Chrome trace (see the module doc).
pub fn analyze_timeline(file: &HostFile, tl: &Timeline, options: &AnalyzeOptions) -> ProfileReport {
    let wants = |t: Tool| options.tools.is_empty() || options.tools.contains(&t);
    let mut notes: Vec<String> = tl.notes.clone();
    let trace = analyze_trace(
        tl,
        &TraceOptions { analyses: vec![TraceAnalysis::Breakdown, TraceAnalysis::Host], ..TraceOptions::default() },
    );
    let gpus = tl.devices.iter().filter(|d| d.kind == DeviceKind::Gpu && !d.events.is_empty()).count();
    let main = tl
        .devices
        .iter()
        .find(|d| d.kind == DeviceKind::Gpu && !d.events.is_empty())
        .or_else(|| tl.devices.iter().find(|d| !d.events.is_empty()));
    let windows: Vec<(i64, i64)> =
        main.map(|d| detect_steps(tl, d).windows.iter().map(|w| (w.start_ps, w.end_ps)).collect()).unwrap_or_default();
    let step_list: Vec<Step> = main
        .map(|d| {
            detect_steps(tl, d)
                .windows
                .iter()
                .map(|w| Step {
                    step_num: w.step,
                    start_ps: tl.origin_ps + i128::from(w.start_ps),
                    duration_ps: w.end_ps - w.start_ps,
                })
                .collect()
        })
        .unwrap_or_default();
    let steps = StepReport {
        source: if step_list.is_empty() { StepSource::None } else { StepSource::TraceMarkers },
        step_time_ms: step_time_stats(&step_list),
        steps: step_list,
    };
    let host_wait = trace.host_bound.as_ref().map(|h| h.fraction);
    let view = kernel_view(tl, &windows, host_wait);
    let device = DeviceInfo {
        hardware: if gpus > 0 { Hardware::Gpu } else { Hardware::CpuOnly },
        device_type: if gpus > 0 { "GPU".to_string() } else { "CPU".to_string() },
        device_cores: gpus.max(usize::from(main.is_some())) as u32,
        device_name: main.map(|d| d.name.clone()).unwrap_or_default(),
        ..DeviceInfo::default()
    };
    let overview = wants(Tool::Overview).then(|| {
        let mut o = Overview {
            device_type: device.device_type.clone(),
            device_cores: device.device_cores,
            hosts: 1,
            step_time_ms: steps.step_time_ms.clone(),
            step_time_source: (!steps.steps.is_empty()).then(|| "host step markers".to_string()),
            ..Overview::default()
        };
        if let Some(d) = main {
            let device_steps: Vec<Step> = windows
                .iter()
                .filter_map(|&(a, b)| {
                    let mut inside = d.events.iter().filter(|e| e.dur_ps > 0 && e.start_ps >= a && e.start_ps < b);
                    let first = inside.next()?;
                    let (s, mut end) = (first.start_ps, first.end_ps());
                    for e in inside {
                        end = end.max(e.end_ps());
                    }
                    Some(Step { step_num: 0, start_ps: i128::from(s), duration_ps: end - s })
                })
                .collect();
            o.device_step_time_ms = (!device_steps.is_empty()).then(|| step_time_stats(&device_steps));
        }
        if let Some(t) = &trace.total {
            o.device_duty_cycle_percent = t.duty_cycle().map(|d| 100.0 * d);
            o.device_idle_percent = t.duty_cycle().map(|d| 100.0 * (1.0 - d));
        }
        if let Some(h) = trace.host_bound.as_ref().filter(|h| h.verdict != HostVerdict::NotHost) {
            o.bound_by = h.bound_by;
        }
        match (options.model_flops_per_step, options.peak_tflops, o.step_time_ms.n) {
            (Some(f), Some(p), n) if n > 0 && device.device_cores > 0 => {
                o.mfu = Some(f / (o.step_time_ms.mean / 1e3 * p * 1e12 * f64::from(device.device_cores)));
                o.mfu_model_flops = Some(f);
                o.mfu_flops_source = Some(options.model_flops_source.clone().unwrap_or("caller model flops".into()));
                o.mfu_peak_teraflops_per_second = Some(p);
            }
            _ => o.notes.push(
                "MFU unknown: a Chrome trace records no FLOPs or device peaks (pass --model-flops and --peak-tflops)"
                    .to_string(),
            ),
        }
        o.notes.push(
            "duty cycle and idle from the trace breakdown over the steps; host wait by the launch (see profile trace)"
                .to_string(),
        );
        o
    });
    let mut findings: Vec<Finding> = Vec::new();
    if let Some(l) = view.launch.as_ref().filter(|l| l.launch_bound) {
        findings.push(Finding {
            kind: FindingKind::LaunchBound,
            share: l.host_wait_fraction.unwrap_or(0.0),
            ops: Vec::new(),
            summary: l.summary.clone(),
        });
    }
    for tool in [Tool::Hlo, Tool::Roofline, Tool::Memory] {
        if wants(tool) && !options.tools.is_empty() {
            notes.push(format!(
                "{}: a Chrome trace has no HLO ops, FLOPs or allocator timeline (an XProf capture has)",
                tool.as_str()
            ));
        }
    }
    if gpus > 0 && view.kernels.is_empty() {
        notes.push("the trace's GPU events carry no launch records (correlation ids): no kernel or op view".into());
    }
    ProfileReport {
        tools: Tool::ALL.into_iter().filter(|&t| wants(t)).collect(),
        files: vec![file.clone()],
        device,
        overview,
        ops: None,
        op_profile: None,
        cpu_ops: None,
        time_breakdown: None,
        roofline: None,
        memory: None,
        kernels: wants(Tool::Kernels).then(|| view.kernels.clone()),
        kernel_steps: None,
        steps: wants(Tool::Steps).then_some(steps),
        findings: wants(Tool::Overview).then_some(findings),
        framework_ops: wants(Tool::Ops).then(|| view.ops.clone()),
        framework_scopes: wants(Tool::Ops).then(|| view.scopes.clone()),
        kernel_types: wants(Tool::Kernels).then(|| view.kernel_types.clone()),
        launch: (wants(Tool::Kernels) || wants(Tool::Overview)).then(|| view.launch.clone()).flatten(),
        failed_hosts: Vec::new(),
        multihost: None,
        notes,
    }
}
