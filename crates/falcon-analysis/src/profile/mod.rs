//! One call that runs the profile tools over a capture (one file, or every host of a run) and returns
//! one report: what `falcon profile analyze` prints and what the summary row is made from.
//!
//! # Hosts
//!
//! Each host file is decoded, analysed and dropped before the next one is read, so peak memory is
//! that of the largest host, not of the capture. Hosts are combined the way XProf combines them for
//! its op-stats tools: the device op databases are merged (ops matched by program and name, times and
//! costs summed), and the device cores and host counts add up; HLO stats, op profile and roofline are
//! computed from the merged database. Step times come from the first host that has steps (in a
//! synchronous multi-host program every host runs the same steps). The memory profile is per host in
//! XProf; here it is the first host's (or the `--host` chosen), and a note says so when there are
//! several. Kernel stats are per host and concatenated.
//!
//! # Sections
//!
//! The report has the sections of the tools asked for ([`ProfileReport::tools`]) and no other, except
//! `cpu_ops`: on an XLA:CPU capture the device tools have nothing (no device op metrics: `ops[]` is
//! empty, `roofline` is not `available`), and the per-op profile XProf does not show, `cpu_ops`, comes
//! with the `ops` and the `overview` tools (profile compare reads it with the overview); the renderers
//! show it for `ops` only. Each empty section's reason is in the renderers' one line and the notes.

pub mod cpu_ops;
pub mod device;
pub mod findings;
pub mod from_trace;

pub mod hlo;
pub mod hlo_stats;
pub mod kernels;
pub mod memory;
pub mod op_metrics;
pub mod op_profile;
pub mod overview;
pub use crate::planes;
pub mod roofline;
pub mod steps;
pub mod time_breakdown;
pub mod trace_export;

use serde::Serialize;

use crate::cpu_ops::{cpu_op_profile_in_steps, CpuOpProfile};
use crate::device::{device_info, DeviceInfo, Hardware};
use crate::error::Result;
use crate::hlo_stats::{hlo_stats, HloStatsRow};
use crate::input::HostFile;
use crate::kernels::{kernel_stats, KernelStat, StepKernelBreakdown};
use crate::memory::{memory_profile, MemoryProfile};
use crate::op_metrics::{op_metrics_db, OpMetricsDb};
use crate::op_profile::{op_profile, GroupBy, OpProfileNode};
use crate::overview::Overview;
use crate::roofline::{roofline, Roofline};
use crate::steps::{detect_steps, StepReport};

/// One profile tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Tool {
    /// Device type, step time, duty cycle, utilizations, bound-by, MFU.
    Overview,
    /// Op profile trees (by program, category, provenance); the XLA:CPU op profile on CPU captures.
    Ops,
    /// HLO stats: one row per device op.
    Hlo,
    /// Roofline: peaks, ridge point, per-op and program points.
    Roofline,
    /// Allocator timeline, peak, top allocations, growth across steps.
    Memory,
    /// GPU kernel stats and per-step kernel time.
    Kernels,
    /// Step markers and step times.
    Steps,
}

impl Tool {
    /// Every tool, in report order.
    pub const ALL: [Tool; 7] =
        [Tool::Overview, Tool::Ops, Tool::Hlo, Tool::Roofline, Tool::Memory, Tool::Kernels, Tool::Steps];

    /// The name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Tool::Overview => "overview",
            Tool::Ops => "ops",
            Tool::Hlo => "hlo",
            Tool::Roofline => "roofline",
            Tool::Memory => "memory",
            Tool::Kernels => "kernels",
            Tool::Steps => "steps",
        }
    }
}

impl std::str::FromStr for Tool {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Tool::ALL.into_iter().find(|t| t.as_str() == s.trim().to_ascii_lowercase()).ok_or_else(|| {
            format!(
                "unknown profile tool `{s}` (expected one of: overview, ops, hlo, roofline, memory, kernels, steps)"
            )
        })
    }
}

/// What to compute.
#[derive(Debug, Clone, Default)]
pub struct AnalyzeOptions {
    /// Tools to run; empty means all.
    pub tools: Vec<Tool>,
    /// The workload's own model FLOPs per step (per chip-step summed over chips, i.e. the whole model step),
    /// used for MFU instead of the profile's cost stats.
    pub model_flops_per_step: Option<f64>,
    /// Where `model_flops_per_step` comes from, for `mfu_flops_source` (default `caller model flops`; the
    /// application layer says `logged model_flops` when it read the run's metric).
    pub model_flops_source: Option<String>,
    /// The device's peak TFLOP/s when the capture and the catalog have none (XLA:CPU captures).
    pub peak_tflops: Option<f64>,
    /// The model FLOPs per step the workload logged (`model_flops`, median), shown beside the capture's own
    /// count and used for MFU only when the capture has none.
    pub logged_model_flops: Option<f64>,
    /// Told `(hosts done, hosts in all)` as a remote run's hosts are downloaded (a front end's progress bar).
    pub progress: HostProgress,
}

/// A callback for progress over a run's hosts; none by default.
#[derive(Clone, Default)]
pub struct HostProgress(pub Option<std::sync::Arc<dyn Fn(usize, usize) + Send + Sync>>);

impl HostProgress {
    /// Reports `done` of `total` hosts.
    pub fn report(&self, done: usize, total: usize) {
        if let Some(f) = &self.0 {
            f(done, total);
        }
    }
}

impl std::fmt::Debug for HostProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "HostProgress(Some(..))" } else { "HostProgress(None)" })
    }
}

impl AnalyzeOptions {
    fn wants(&self, tool: Tool) -> bool {
        self.tools.is_empty() || self.tools.contains(&tool)
    }
}

/// Op profile trees.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OpProfileTrees {
    pub by_program: OpProfileNode,
    pub by_program_exclude_idle: OpProfileNode,
    pub by_category: OpProfileNode,
    pub by_provenance: OpProfileNode,
}

/// The result of `profile analyze`. Sections of tools not asked for are absent.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ProfileReport {
    /// The tools run, in report order (every tool when none was asked for).
    pub tools: Vec<Tool>,
    /// The host files analysed.
    pub files: Vec<HostFile>,
    /// Device identity and peaks (of the first host).
    pub device: DeviceInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overview: Option<Overview>,
    /// HLO stats rows (XProf `hlo_stats`, IDLE excluded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ops: Option<Vec<HloStatsRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op_profile: Option<OpProfileTrees>,
    /// XLA:CPU per-op profile (CPU captures, where XProf shows nothing; tools `ops` and `overview`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_ops: Option<CpuOpProfile>,
    /// Where the op time of an XLA:CPU capture goes: by category, name scope and source line, as shares of op
    /// time, beside the steps' wall time (tool `ops`; see [`time_breakdown`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_breakdown: Option<time_breakdown::TimeBreakdown>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roofline: Option<Roofline>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryProfile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernels: Option<Vec<KernelStat>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_steps: Option<Vec<StepKernelBreakdown>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<StepReport>,
    /// What a GPU engineer acts on, largest share first (tool `overview`, GPU captures; empty elsewhere).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub findings: Option<Vec<findings::Finding>>,
    /// Chrome traces that record launches: device time by launching framework op (tool `ops`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub framework_ops: Option<Vec<crate::trace::kernels::FrameworkOpRow>>,
    /// The same by outermost host range (`record_function`, optimizer step, autograd function; tool `ops`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub framework_scopes: Option<Vec<crate::trace::kernels::FrameworkOpRow>>,
    /// Chrome traces: device time by kind — compute, communication, memcpy, memset (tool `kernels`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_types: Option<Vec<crate::trace::kernels::KernelTypeRow>>,
    /// Chrome traces: launch statistics and the launch-bound call (tools `kernels`, `overview`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch: Option<crate::trace::kernels::LaunchStats>,
    /// Hosts of a multi-host run that could not be read (empty, truncated, not a profile, unreadable): each
    /// named with why; the other hosts are analysed and `files` lists only those. Absent when every host was read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_hosts: Vec<FailedHost>,
    /// What the analysis could not do or assumed, in words.
    pub notes: Vec<String>,
}

/// A host whose profile could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FailedHost {
    /// Host name.
    pub host: String,
    /// Its file (for a remote object that was not copied, the object's key).
    pub path: std::path::PathBuf,
    /// Why it could not be read.
    pub error: String,
}

/// Analyses the given host files (one capture) with the tools asked for.
pub fn analyze_files(files: &[HostFile], options: &AnalyzeOptions) -> Result<ProfileReport> {
    Ok(analyze_files_with_db(files, options)?.0)
}

/// [`analyze_files`], also returning the merged device op database the report was computed from (empty
/// on CPU-only captures and when no tool that needs it was asked for).
pub(crate) fn analyze_files_with_db(
    files: &[HostFile],
    options: &AnalyzeOptions,
) -> Result<(ProfileReport, OpMetricsDb)> {
    analyze_hosts_with_db(files.iter().cloned().map(Ok), files.len(), options)
}

/// One host of a run as it arrives: its local file, or why it could not be had (a failed download).
pub type HostInput = std::result::Result<HostFile, FailedHost>;

/// [`analyze_files`] over hosts that arrive one by one (downloaded while the previous one is analysed): each is
/// decoded, analysed and dropped before the next is taken. `total` is the run's host count: with more than one,
/// a host that cannot be had or read is named in [`ProfileReport::failed_hosts`] and the others are analysed.
pub fn analyze_hosts(
    hosts: impl IntoIterator<Item = HostInput>,
    total: usize,
    options: &AnalyzeOptions,
) -> Result<ProfileReport> {
    Ok(analyze_hosts_with_db(hosts, total, options)?.0)
}

fn analyze_hosts_with_db(
    hosts: impl IntoIterator<Item = HostInput>,
    total: usize,
    options: &AnalyzeOptions,
) -> Result<(ProfileReport, OpMetricsDb)> {
    let mut device: Option<DeviceInfo> = None;
    let mut db: Option<OpMetricsDb> = None;
    let mut steps: Option<StepReport> = None;
    let mut first_space_overview_input = None;
    let mut memory = None;
    let mut kernels: Vec<KernelStat> = Vec::new();
    let mut kernel_steps: Vec<StepKernelBreakdown> = Vec::new();
    let mut cpu_ops: Option<CpuOpProfile> = None;
    let mut hlo = hlo::HloIndex::default();
    let mut notes: Vec<String> = Vec::new();
    let mut total_cores = 0u32;
    let need_db = options.wants(Tool::Overview)
        || options.wants(Tool::Ops)
        || options.wants(Tool::Hlo)
        || options.wants(Tool::Roofline);

    let mut cpu_trace = None;
    let mut failed_hosts: Vec<FailedHost> = Vec::new();
    let mut analysed: Vec<HostFile> = Vec::with_capacity(total);
    for host in hosts {
        let file = match host {
            Ok(file) => file,
            Err(failed) => {
                failed_hosts.push(failed);
                continue;
            }
        };
        // One host that cannot be read (truncated by a job killed while writing, not a profile) does not sink a
        // multi-host run: it is named, and the others are analysed. A single file's error is the answer's.
        let space = match crate::input::load_host(&file) {
            Ok(space) => space,
            Err(e) if total > 1 => {
                failed_hosts.push(FailedHost {
                    host: file.host.clone(),
                    path: file.path.clone(),
                    error: e.to_string(),
                });
                continue;
            }
            Err(e) => return Err(e),
        };
        let i = analysed.len();
        analysed.push(file.clone());
        let dev = device_info(&space);
        total_cores += dev.device_cores;
        // The CPU overview's trace (the executor timeline's breakdown and host check) is the costly part of an
        // XLA:CPU overview and needs nothing else: it runs on a second thread beside the other tools.
        let trace_wanted = i == 0 && dev.hardware == Hardware::CpuOnly && options.wants(Tool::Overview);
        std::thread::scope(|scope| {
            let trace_thread = trace_wanted.then(|| scope.spawn(|| overview::cpu_trace(&space)));
            let host_steps = detect_steps(&space);
            if steps.as_ref().is_none_or(|s| s.steps.is_empty()) && !host_steps.steps.is_empty() || steps.is_none() {
                steps = Some(host_steps.clone());
            }
            if need_db && dev.hardware != Hardware::CpuOnly {
                let host_db = op_metrics_db(&space, &dev);
                match db.as_mut() {
                    None => db = Some(host_db),
                    Some(all) => all.merge(&host_db),
                }
            }
            if dev.hardware == Hardware::CpuOnly && options.wants(Tool::Ops) {
                let index = hlo::hlo_index(&space);
                hlo.modules += index.modules;
                hlo.notes.extend(index.notes);
                hlo.instructions.extend(index.instructions);
            }
            if dev.hardware == Hardware::CpuOnly && (options.wants(Tool::Ops) || options.wants(Tool::Overview)) {
                let profile = cpu_op_profile_in_steps(&space, &host_steps.steps);
                cpu_ops = Some(match cpu_ops.take() {
                    None => profile,
                    Some(mut all) => {
                        all.ops.extend(profile.ops);
                        all.op_events += profile.op_events;
                        all.total_time_us += profile.total_time_us;
                        all
                    }
                });
            }
            if options.wants(Tool::Memory) && i == 0 {
                memory = Some(memory_profile(&space, &host_steps));
            }
            if options.wants(Tool::Kernels) || options.wants(Tool::Overview) && dev.hardware == Hardware::Gpu {
                let report = kernel_stats(&space, &host_steps);
                kernels.extend(report.kernels);
                kernel_steps.extend(report.per_step);
                for note in report.notes.into_iter().filter(|_| options.wants(Tool::Kernels)) {
                    if !notes.contains(&note) {
                        notes.push(note);
                    }
                }
            }
            if let Some(thread) = trace_thread {
                cpu_trace = Some(thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
            }
        });
        if i == 0 {
            first_space_overview_input = Some(space);
        }
        if device.is_none() {
            device = Some(dev);
        }
    }
    if analysed.is_empty() {
        let first = failed_hosts.first().map_or(String::new(), |f| format!("{}: {}", f.host, f.error));
        return Err(crate::error::AnalysisError::Invalid(format!(
            "none of the run's {} hosts could be read (first: {first})",
            failed_hosts.len()
        )));
    }
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
    let steps = steps.unwrap_or_default();
    let db = db.unwrap_or_default();
    let roof = roofline(&db, &device, &steps);
    let overview = match (&first_space_overview_input, options.wants(Tool::Overview)) {
        (Some(space), true) => {
            let mut o = match cpu_trace.take() {
                Some(trace) => overview::cpu_overview_of(&trace, &device, &db, &steps),
                None => overview::overview(space, &device, &db, &steps, &roof, options.model_flops_per_step),
            };
            o.device_step_time_ms = crate::steps::device_step_times(space, &steps);
            overview::with_logged_flops(&mut o, options.logged_model_flops);
            o.hosts = files.len() as u32;
            if device.hardware == Hardware::CpuOnly {
                let source = options.model_flops_source.as_deref().unwrap_or("caller model flops");
                let flops = match (options.model_flops_per_step, options.logged_model_flops) {
                    (Some(f), _) => Some((f, source)),
                    (None, Some(f)) => Some((f, "logged model_flops (median per step)")),
                    (None, None) => None,
                };
                overview::cpu_mfu(&mut o, flops, options.peak_tflops);
            } else if let Some(label) = &options.model_flops_source {
                if o.mfu_flops_source.as_deref() == Some("caller model flops") {
                    o.mfu_flops_source = Some(label.clone());
                }
            }
            Some(o)
        }
        _ => None,
    };
    // Freeing a decoded capture's million allocations takes a tenth of its analysis: done off the answer's path.
    if let Some(space) = first_space_overview_input {
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
        cpu_ops,
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
        notes,
    };
    Ok((report, db))
}
