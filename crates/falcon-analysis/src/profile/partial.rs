//! A run's report as a fold over its hosts: what one host contributes ([`HostPartial`], computed from its capture
//! alone), and the fold that combines the contributions in host order ([`RunFold`]) and finishes the report.
//!
//! One process folds the hosts as it decodes them (`analyze_files`). A fanned-out analysis computes the partials
//! of a shard of hosts in each cluster job ([`analyze_shard`]), writes them with [`encode_shard`], and the merge
//! ([`ShardMerge`], one shard at a time) folds every shard's partials in the same host order with the same code; only the first
//! host's capture is decoded again there, for what needs the capture itself (the overview, the memory profile).
//! Partials travel as CBOR: every number, `NaN` and infinities included, comes back bit for bit, so the merged
//! report equals the single-process one byte for byte.

use serde::{Deserialize, Serialize};

use super::cpu_ops::{cpu_op_profile_in_steps, CpuOpProfile};
use super::device::{device_info, DeviceInfo, Hardware};
use super::finish::{Capture, FirstHost, Folded};
use super::hlo::HloIndex;
use super::kernels::{kernel_stats, KernelReport};
use super::memory::memory_profile;
use super::op_metrics::{op_metrics_db, OpMetricsDb};
use super::steps::{detect_steps, StepReport};
use super::{overview, AnalyzeOptions, FailedHost, HostInput, ProfileReport, Tool};
use crate::error::{AnalysisError, Result};
use crate::input::HostFile;

/// What one host contributes to a run's report, computed from its capture alone.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostPartial {
    /// The host and its file.
    pub file: HostFile,
    /// Its device.
    pub device: DeviceInfo,
    /// Its steps.
    pub steps: StepReport,
    /// Its device op database (device captures, when a tool needs it).
    pub db: Option<OpMetricsDb>,
    /// Its programs' instructions (XLA:CPU captures, tool `ops`).
    pub hlo: Option<HloIndex>,
    /// Its XLA:CPU op profile (tools `ops`, `overview`).
    pub cpu_ops: Option<CpuOpProfile>,
    /// Its kernel statistics (tool `kernels`, or `overview` on GPU).
    pub kernels: Option<KernelReport>,
    /// Its part of the multi-host analysis (a run of several hosts, tool `steps`).
    #[serde(default)]
    pub members: Option<crate::trace::members::HostMembers>,
}

/// The partials of one shard of a run's hosts, in host order, and the hosts of the shard that could not be read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardPartial {
    /// Format of this document; a merge refuses another.
    pub version: u32,
    /// Which shard (0-based) of how many.
    pub shard: usize,
    pub shards: usize,
    /// The folder (or file) the shard's host paths are under on the machine that analysed it; the merge puts
    /// its own in its place ([`ShardPartial::rebase`]), so the report names files as the merging machine has them.
    #[serde(default)]
    pub root: std::path::PathBuf,
    /// Every host of the run, in order, as the shard listed them (the merge checks that all shards agree).
    pub run_hosts: Vec<String>,
    /// One entry per host of the shard, in host order.
    pub hosts: Vec<ShardHost>,
}

/// One host of a shard: its partial, or why it could not be read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ShardHost {
    Read(Box<HostPartial>),
    Failed(FailedHost),
}

impl ShardPartial {
    /// The shard's host paths under `to` instead of [`ShardPartial::root`] (paths elsewhere, such as the object
    /// key of a host that was never copied, stay as they are).
    pub fn rebase(&mut self, to: &std::path::Path) {
        let from = std::mem::replace(&mut self.root, to.to_path_buf());
        let moved = |path: &std::path::Path| match path.strip_prefix(&from) {
            Ok(rest) if rest.as_os_str().is_empty() => Some(to.to_path_buf()),
            Ok(rest) => Some(to.join(rest)),
            Err(_) => None,
        };
        for host in &mut self.hosts {
            match host {
                ShardHost::Read(p) => {
                    if let Some(path) = moved(&p.file.path) {
                        p.file.path = path;
                    }
                }
                ShardHost::Failed(f) => {
                    if let Some(path) = moved(&f.path) {
                        // The reader's error names the file as the shard's machine had it.
                        f.error = f.error.replace(&f.path.display().to_string(), &path.display().to_string());
                        f.path = path;
                    }
                }
            }
        }
    }
}

/// The partial document's format version.
pub const SHARD_FORMAT_VERSION: u32 = 2;

/// What the tools asked for need from every host.
pub(crate) fn host_partial(
    file: HostFile,
    space: &falcon_xplane::XSpace,
    options: &AnalyzeOptions,
    multi: bool,
) -> HostPartial {
    let device = device_info(space);
    let steps = detect_steps(space);
    let cpu = device.hardware == Hardware::CpuOnly;
    let hlo = (cpu && options.wants(Tool::Ops)).then(|| super::hlo::hlo_index(space));
    let cpu_ops = (cpu && needs_db(options)).then(|| cpu_op_profile_in_steps(space, &steps.steps));
    let db = match (&cpu_ops, needs_db(options)) {
        (_, false) => None,
        // XLA:CPU: the op events costed from the capture's own HLO (`op_metrics::cpu_op_db`).
        (Some(profile), true) => {
            let window: i64 = steps.steps.iter().map(|s| s.duration_ps.max(0)).sum();
            let programs = super::hlo::GpuHlo::decode(space).with_cpu_costs();
            Some(super::op_metrics::cpu_op_db(profile, &programs, window as u64, device.device_cores))
        }
        (None, true) => Some(op_metrics_db(space, &device)),
    };
    let kernels = (options.wants(Tool::Kernels) || options.wants(Tool::Overview) && device.hardware == Hardware::Gpu)
        .then(|| kernel_stats(space, &steps));
    // The host's own timeline, for its part of the run's multi-host analysis: only on a run of several hosts.
    let members = (multi && options.wants(Tool::Steps))
        .then(|| crate::trace::members::host_members(&super::hlo::collectives::xspace_timeline(space, &file.host)));
    HostPartial { file, device, steps, db, hlo, cpu_ops, kernels, members }
}

fn needs_db(options: &AnalyzeOptions) -> bool {
    options.wants(Tool::Overview)
        || options.wants(Tool::Ops)
        || options.wants(Tool::Hlo)
        || options.wants(Tool::Roofline)
}

/// A first host of at least this many events gets helper threads (the CPU trace beside the other tools, the
/// capture freed off the answer's path); below it they would cost more than they save.
const HELPER_THREAD_MIN_EVENTS: usize = 100_000;

/// The first host's partial and what the report needs of its capture; the CPU overview's trace (the costly part
/// of an XLA:CPU overview, needing nothing else) is computed on a second thread beside the partial when the
/// capture is big.
pub(crate) fn first_host(
    file: HostFile,
    space: falcon_xplane::XSpace,
    options: &AnalyzeOptions,
    multi: bool,
) -> (HostPartial, FirstHost) {
    let events: usize = space.planes.iter().flat_map(|p| &p.lines).map(|l| l.events.len()).sum();
    let big = events >= HELPER_THREAD_MIN_EVENTS;
    let trace_wanted = options.wants(Tool::Overview) && device_info(&space).hardware == Hardware::CpuOnly;
    if trace_wanted && big && !options.wants(Tool::Memory) {
        if let Some(done) = first_host_freeing(&file, &space, options, multi) {
            let (partial, timeline, device_step_times) = done;
            free_capture(space);
            let cpu_trace = overview::cpu_trace_of(&timeline);
            return (
                partial,
                FirstHost { capture: Capture::Freed { cpu_trace, device_step_times }, big, memory: None },
            );
        }
    }
    let (partial, cpu_trace) = std::thread::scope(|scope| {
        let thread = (trace_wanted && big).then(|| scope.spawn(|| overview::cpu_trace(&space)));
        let partial = host_partial(file, &space, options, multi);
        let trace = match thread {
            // Joined explicitly: the thread has exited (its thread-local destructors run) when this returns.
            Some(thread) => Some(thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))),
            None => trace_wanted.then(|| overview::cpu_trace(&space)),
        };
        (partial, trace)
    });
    let memory = options.wants(Tool::Memory).then(|| memory_profile(&space, &partial.steps));
    (partial, FirstHost { capture: Capture::Kept { space, cpu_trace }, big, memory })
}

/// For a big XLA:CPU capture whose report needs of it only the overview's trace: the partial and the device step
/// times on this thread, the trace's timeline beside them; `None` when the capture has no steps (the fold may then
/// take another host's, and the report reads this capture against those).
fn first_host_freeing(
    file: &HostFile,
    space: &falcon_xplane::XSpace,
    options: &AnalyzeOptions,
    multi: bool,
) -> Option<(HostPartial, crate::timeline::Timeline, Option<crate::steps::StepTimeStats>)> {
    std::thread::scope(|scope| {
        let thread = scope.spawn(|| overview::cpu_timeline(space));
        let partial = host_partial(file.clone(), space, options, multi);
        let device_step_times = crate::steps::device_step_times(space, &partial.steps);
        // Joined explicitly, as in `first_host`.
        let timeline = thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (!partial.steps.steps.is_empty()).then_some((partial, timeline, device_step_times))
    })
}

/// Frees a decoded capture off the answer's path (a million allocations take a tenth of an analysis); a thread
/// that cannot be started drops it here.
fn free_capture(space: falcon_xplane::XSpace) {
    let _ = std::thread::Builder::new().name("drop-capture".into()).spawn(move || drop(space));
}

/// A run's hosts combined in order (the rules in the module docs of [`crate::profile`]): what the report's finish
/// takes, filled host by host.
pub(crate) struct RunFold<'o>(Folded<'o>);

impl<'o> RunFold<'o> {
    /// An empty fold over a run of `total` hosts.
    pub(crate) fn new(options: &'o AnalyzeOptions, total: usize) -> RunFold<'o> {
        RunFold(Folded {
            options,
            device: None,
            db: None,
            steps: None,
            hlo: HloIndex::default(),
            cpu_ops: None,
            kernels: Vec::new(),
            kernel_steps: Vec::new(),
            notes: Vec::new(),
            total_cores: 0,
            analysed: Vec::with_capacity(total),
            failed_hosts: Vec::new(),
            first: None,
            members: Vec::new(),
        })
    }

    /// Hosts added so far (read ones).
    pub(crate) fn hosts_read(&self) -> usize {
        self.0.analysed.len()
    }

    /// A host that could not be had or read.
    pub(crate) fn fail(&mut self, failed: FailedHost) {
        self.0.failed_hosts.push(failed);
    }

    /// The next host's contribution.
    pub(crate) fn add(&mut self, p: HostPartial) {
        self.0.analysed.push(p.file);
        self.0.total_cores += p.device.device_cores;
        if self.0.steps.as_ref().is_none_or(|s| s.steps.is_empty()) && !p.steps.steps.is_empty()
            || self.0.steps.is_none()
        {
            self.0.steps = Some(p.steps);
        }
        if let Some(host_db) = p.db {
            match self.0.db.as_mut() {
                None => self.0.db = Some(host_db),
                Some(all) => all.merge(&host_db),
            }
        }
        if let Some(index) = p.hlo {
            self.0.hlo.modules += index.modules;
            self.0.hlo.notes.extend(index.notes);
            self.0.hlo.instructions.extend(index.instructions);
        }
        if let Some(profile) = p.cpu_ops {
            self.0.cpu_ops = Some(match self.0.cpu_ops.take() {
                None => profile,
                Some(mut all) => {
                    all.ops.extend(profile.ops);
                    all.op_events += profile.op_events;
                    all.total_time_us += profile.total_time_us;
                    all
                }
            });
        }
        if let Some(report) = p.kernels {
            self.0.kernels.extend(report.kernels);
            self.0.kernel_steps.extend(report.per_step);
            for note in report.notes.into_iter().filter(|_| self.0.options.wants(Tool::Kernels)) {
                if !self.0.notes.contains(&note) {
                    self.0.notes.push(note);
                }
            }
        }
        if self.0.device.is_none() {
            self.0.device = Some(p.device);
        }
        self.0.members.extend(p.members);
    }

    /// The report, with the first host's capture for what needs it; also the merged device op database.
    pub(crate) fn finish(self, first: Option<FirstHost>) -> Result<(ProfileReport, OpMetricsDb)> {
        let mut folded = self.0;
        if folded.analysed.is_empty() {
            let failed = &folded.failed_hosts;
            let first = failed.first().map_or(String::new(), |f| format!("{}: {}", f.host, f.error));
            return Err(AnalysisError::Invalid(format!(
                "none of the run's {} hosts could be read (first: {first})",
                failed.len()
            )));
        }
        folded.first = first;
        super::finish::finish(folded)
    }
}

/// Folds hosts as they arrive (each decoded, reduced to its partial and dropped before the next is taken).
pub(crate) fn fold_hosts(
    hosts: impl IntoIterator<Item = HostInput>,
    total: usize,
    options: &AnalyzeOptions,
) -> Result<(ProfileReport, OpMetricsDb)> {
    let mut fold = RunFold::new(options, total);
    let mut first = None;
    for host in hosts {
        let Some((file, space)) = load(host, total, &mut fold)? else { continue };
        if fold.hosts_read() == 0 {
            let (partial, f) = first_host(file, space, options, total > 1);
            fold.add(partial);
            first = Some(f);
        } else {
            fold.add(host_partial(file, &space, options, total > 1));
        }
    }
    fold.finish(first)
}

/// A host decoded; `None` when it could not be had or read and the run has other hosts (it is named in the fold).
fn load(host: HostInput, total: usize, fold: &mut RunFold<'_>) -> Result<Option<(HostFile, falcon_xplane::XSpace)>> {
    let file = match host {
        Ok(file) => file,
        Err(failed) => {
            fold.fail(failed);
            return Ok(None);
        }
    };
    // One host that cannot be read (truncated by a job killed while writing, not a profile) does not sink a
    // multi-host run: it is named, and the others are analysed. A single file's error is the answer's.
    match crate::input::load_host(&file) {
        Ok(space) => Ok(Some((file, space))),
        Err(e) if total > 1 => {
            fold.fail(FailedHost { host: file.host.clone(), path: file.path.clone(), error: e.to_string() });
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The partials of shard `shard` of `shards` of a run whose hosts are `run_hosts` (in order): the contiguous
/// slice [`shard_range`] gives, each host decoded, reduced and dropped in turn.
pub fn analyze_shard(
    run_hosts: Vec<String>,
    hosts: impl IntoIterator<Item = HostInput>,
    shard: usize,
    shards: usize,
    options: &AnalyzeOptions,
) -> Result<ShardPartial> {
    let total = run_hosts.len();
    let mut fold = RunFold::new(options, total);
    let mut out = Vec::new();
    for host in hosts {
        match load(host, total, &mut fold)? {
            Some((file, space)) => {
                out.push(ShardHost::Read(Box::new(host_partial(file, &space, options, total > 1))));
            }
            None => out.extend(fold.0.failed_hosts.pop().map(ShardHost::Failed)),
        }
    }
    Ok(ShardPartial { version: SHARD_FORMAT_VERSION, shard, shards, root: Default::default(), run_hosts, hosts: out })
}

/// The hosts (indexes into the run's ordered host list) of shard `shard` of `shards`: contiguous, sizes differing
/// by at most one, every host in exactly one shard.
pub fn shard_range(hosts: usize, shard: usize, shards: usize) -> std::ops::Range<usize> {
    let shards = shards.max(1);
    let (base, extra) = (hosts / shards, hosts % shards);
    let start = shard * base + shard.min(extra);
    let len = base + usize::from(shard < extra);
    start.min(hosts)..(start + len).min(hosts)
}

/// A shard's partials as bytes (CBOR).
pub fn encode_shard(partial: &ShardPartial) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    ciborium::into_writer(partial, &mut out)
        .map_err(|e| AnalysisError::Invalid(format!("cannot encode the shard's partial result: {e}")))?;
    Ok(out)
}

/// A shard's partials read back; `what` names the document in errors.
pub fn decode_shard(bytes: &[u8], what: &str) -> Result<ShardPartial> {
    let partial: ShardPartial = ciborium::from_reader(bytes)
        .map_err(|e| AnalysisError::Invalid(format!("{what}: not a shard's partial result: {e}")))?;
    if partial.version != SHARD_FORMAT_VERSION {
        return Err(AnalysisError::Invalid(format!(
            "{what}: partial result of format {} (this Falcon reads format {SHARD_FORMAT_VERSION})",
            partial.version
        )));
    }
    Ok(partial)
}

/// A run's report merged from its shards' partials, taken one at a time in shard order, each folded in and
/// dropped before the next: memory holds one shard's partials and the fold, whatever the number of shards. Refuses
/// a partial that is not the shard due, that lists the run's hosts differently, or that did not analyse exactly
/// its hosts, and a merge that ends before the last shard.
pub struct ShardMerge<'o> {
    fold: RunFold<'o>,
    options: &'o AnalyzeOptions,
    shards: usize,
    taken: usize,
    run_hosts: Vec<String>,
}

impl<'o> ShardMerge<'o> {
    /// A merge of `shards` shards.
    pub fn new(shards: usize, options: &'o AnalyzeOptions) -> ShardMerge<'o> {
        ShardMerge { fold: RunFold::new(options, 0), options, shards, taken: 0, run_hosts: Vec::new() }
    }

    /// The next shard's partials.
    pub fn add(&mut self, partial: ShardPartial) -> Result<()> {
        let (k, n) = (self.taken, self.shards);
        if partial.shard != k || partial.shards != n {
            return Err(AnalysisError::Invalid(format!(
                "the partial results are not shards 0..{n} of {n} (found shard {} of {} where shard {k} was due)",
                partial.shard, partial.shards
            )));
        }
        if k == 0 {
            self.run_hosts = partial.run_hosts;
        } else if partial.run_hosts != self.run_hosts {
            return Err(AnalysisError::Invalid(format!("shard {k} listed the run's hosts differently from shard 0")));
        }
        let mine = &self.run_hosts[shard_range(self.run_hosts.len(), k, n)];
        let names = partial.hosts.iter().map(|h| match h {
            ShardHost::Read(p) => p.file.host.as_str(),
            ShardHost::Failed(f) => f.host.as_str(),
        });
        if names.ne(mine.iter().map(String::as_str)) {
            return Err(AnalysisError::Invalid(format!("shard {k} did not analyse exactly its hosts")));
        }
        for host in partial.hosts {
            match host {
                ShardHost::Failed(f) => self.fold.fail(f),
                ShardHost::Read(p) => self.fold.add(*p),
            }
        }
        self.taken += 1;
        Ok(())
    }

    /// The first host read so far (the run's first, once its shard is in): the one whose capture the report's
    /// overview and memory profile are computed from.
    pub fn first_read(&self) -> Option<&HostFile> {
        self.fold.0.analysed.first()
    }

    /// Whether [`ShardMerge::finish`] needs the first host's file (the overview or the memory profile was asked for).
    pub fn needs_first_capture(&self) -> bool {
        self.options.wants(Tool::Overview) || self.options.wants(Tool::Memory)
    }

    /// The report, `first` being the first read host's file when [`ShardMerge::needs_first_capture`].
    pub fn finish(self, first: Option<HostFile>) -> Result<ProfileReport> {
        if self.taken != self.shards || self.shards == 0 {
            return Err(AnalysisError::Invalid(format!(
                "only {} of the run's {} shards' partial results were merged",
                self.taken, self.shards
            )));
        }
        let first = match first.filter(|_| self.needs_first_capture()) {
            Some(file) => {
                let space = crate::input::load_host(&file)?;
                Some(first_host(file, space, self.options, false).1)
            }
            None => None,
        };
        Ok(self.fold.finish(first)?.0)
    }
}

/// The run's report from every shard's partials (in any order: they are put in shard order) with [`ShardMerge`];
/// `open_first` gives the first read host's file from its name when its capture is needed.
pub fn merge_shards(
    mut shards: Vec<ShardPartial>,
    open_first: impl FnOnce(&HostFile) -> Result<HostFile>,
    options: &AnalyzeOptions,
) -> Result<ProfileReport> {
    if shards.is_empty() {
        return Err(AnalysisError::Invalid("no shard's partial result to merge".into()));
    }
    shards.sort_by_key(|s| s.shard);
    let mut merge = ShardMerge::new(shards.len(), options);
    for shard in shards {
        merge.add(shard)?;
    }
    let first = match merge.first_read() {
        Some(file) if merge.needs_first_capture() => Some(open_first(file)?),
        _ => None,
    };
    merge.finish(first)
}
