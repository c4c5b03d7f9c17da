//! The Slurm backend: each job attempt is one Slurm batch job, submitted with `sbatch` and watched with
//! `squeue --json` (Slurm 22.05 and later; the JSON shapes of 23.11+ are accepted too).
//!
//! # Pool settings
//!
//! - `slurm_conf`: path of the cluster's `slurm.conf`, passed as `SLURM_CONF` to every Slurm command (when
//!   absent the worker's environment is inherited, so `SLURM_CONF` or `/etc/slurm/slurm.conf` applies);
//! - `partition`, `account` (optional): `--partition` / `--account` of every job.
//!
//! # Job folders
//!
//! Everything about a job lives in `<jobs_dir>/<object-name>/` (`[jobs] work_dir`), as with the local backend:
//!
//! - `job.sh`: the generated batch script (`#SBATCH` options, `FALCON_*` and spec environment, then the command
//!   between two time stamps, its exit status passed on);
//! - `stdout.log`, `stderr.log`: written by Slurm (`--output` / `--error`);
//! - `artifacts/`: the job's `FALCON_ARTIFACT_DIR`;
//! - `jobid`: the Slurm job id, written (atomically) once `sbatch` accepted the job;
//! - `started`, `ended`: when the command started and ended, nanoseconds since the epoch (written atomically by the
//!   script; Slurm's own `start_time` and `end_time` have whole seconds): the job's RUNNING time and end;
//! - `final.json`: the job's end state as last seen in `squeue` (the `squeue --json` job fields this backend
//!   uses), kept because Slurm forgets finished jobs `MinJobAge` seconds (300 by default) after they end.
//!
//! **Shared-filesystem assumption**: the job writes its logs and artifacts into that folder and the worker reads
//! them from there, so the folder must be the same path on the worker and on the job's (first) node: a
//! single-node cluster, or `jobs_dir` on a shared filesystem. The batch script runs on the first allocated
//! node only; a multi-host program starts its other processes itself (e.g. with `srun`). As with `sbatch`'s
//! default `--export=ALL`, the job also inherits the worker's environment (the script's exports come on top) —
//! less Falcon's own `FALCON_*` settings and its store's credentials, which `sbatch` is never given
//! (`isolation::withheld`).
//!
//! **The workload boundary** is Slurm's: the job runs as the user who submitted it (the worker's), on the
//! cluster's nodes, under Slurm's own confinement (cgroups). Falcon's store must therefore not be reachable
//! from the nodes as that user: keep the data dir (the SQLite file, a local artifact folder) on the worker's own
//! disk, away from the shared filesystem that holds `[jobs] work_dir`, or use MySQL and GCS/S3 with credentials
//! the nodes do not have; a worker that runs as root submits as root, so run it as a service user instead
//! (docs/RELIABILITY.md, "Security").
//!
//! # Handles
//!
//! A [`BackendRef`] is `"<slurm-job-id>@<object-name>"` (e.g. `"42@train-a1-slurm"`): the id is what Slurm
//! knows, the object name locates the folder. [`Backend::submit`] and [`Backend::find`] both return this form.
//! A bare `"<slurm-job-id>"` is accepted too (its folder is then found by scanning `<jobs_dir>/*/jobid`).
//! A Slurm job counts as ours only when its `name` is the object name (and, where `squeue` shows it, its
//! `standard_output` is our `stdout.log`), so an id reused by a restarted cluster is never mistaken for ours.
//!
//! # Idempotence
//!
//! [`Backend::submit`] first looks for the job ([`Backend::find`]): a job of that name in `squeue` (with our
//! output path), else a recorded `jobid`. A recorded `jobid` means Slurm accepted the job once, so it is
//! adopted even after Slurm forgot it: a restarted worker never submits the same attempt twice.
//!
//! # States
//!
//! `squeue --json` is read afresh on every call (nothing is cached across calls) and filtered by `job_id`
//! here (Slurm 22.05 ignores `-j` and `--state` with `--json`). `PENDING` is unschedulable (a capacity
//! stockout the manager fails over from) when the reason says the pool lacks resources ([`is_unschedulable`]).
//! When `squeue` no longer knows a job, the backend answers from `final.json`, then from the `jobcomp/filetxt`
//! file the configuration names (`JobCompLoc`), and otherwise reports [`BackendState::Missing`].
//! Exit codes come from the raw wait status Slurm reports ([`decode_exit`]). The manager enforces the exact
//! timeout; the Slurm `--time` limit is only a backstop one minute later.
//!
//! # Resource use
//!
//! [`Backend::sample`] asks `sstat --noconvert --allsteps` for the running steps' `TRESUsageInTot` and sums
//! their `mem` (the steps' current resident memory, in bytes) and `cpu` (CPU time so far). It needs the cluster
//! to gather accounting (`JobAcctGatherType=jobacct_gather/linux` or `/cgroup`, read once from `scontrol show
//! config`): with `jobacct_gather/none`, or without `sstat` on PATH, the backend says it cannot sample. Slurm
//! refreshes the numbers every `JobAcctGatherFrequency` (30 s by default; `task=1` for a finer curve), so a job
//! is asked no more often than that (each `sstat` costs the worker about 8 ms of CPU).
//!
//! # Files
//!
//! This file holds the backend and its [`Backend`] methods; `commands.rs` runs the Slurm commands (and reads
//! `sbatch`'s answer), `squeue.rs` reads `squeue --json` and maps states, `jobcomp.rs` reads the jobcomp file,
//! `script.rs` writes the batch script, `sstat.rs` reads accounting settings and `sstat` usage.

mod commands;
mod jobcomp;
mod script;
mod squeue;
mod sstat;

pub use commands::{parse_sbatch, Submitted};
pub use jobcomp::{jobcomp_location, parse_jobcomp};
pub use script::sh_quote;
pub use squeue::{decode_exit, is_unschedulable, map_state, parse_squeue, SlurmJob};
pub use sstat::{accounting, parse_slurm_duration, parse_sstat, Accounting};

use super::{Backend, BackendRef, BackendState, CpuUse, LogSnapshot, Sample, Submission};
use crate::error::{JobError, Result};
use crate::pool::Pool;
use async_trait::async_trait;
use commands::{failure_text, RunError, SBATCH_LIMIT, SCANCEL_LIMIT, SSTAT_LIMIT};
use falcon_core::config::Platform;
use serde_json::Value;
use squeue::parse_job;
use std::path::{Path, PathBuf};
use std::time::Duration;

const BACKEND: &str = "slurm";
const SCRIPT: &str = "job.sh";
const FINAL: &str = "final.json";

/// Runs jobs as Slurm batch jobs (see the [module documentation](self)).
#[derive(Debug, Clone)]
pub struct SlurmBackend {
    pool: String,
    jobs_dir: PathBuf,
    slurm_conf: Option<PathBuf>,
    partition: Option<String>,
    account: Option<String>,
    cancel_wait: Duration,
    /// What the cluster's accounting allows, once known.
    accounting: std::sync::Arc<tokio::sync::OnceCell<Accounting>>,
    /// When each job was last asked with `sstat` (object name → time).
    last_sstat: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>>,
}

impl SlurmBackend {
    /// A backend for a `slurm` pool keeping job folders under `jobs_dir` (created when needed). Reads the
    /// pool settings `slurm_conf`, `partition` and `account` (all optional strings).
    pub fn from_pool(pool: &Pool, jobs_dir: &Path) -> Result<SlurmBackend> {
        let bad = |message: String| JobError::InvalidPool { pool: pool.name.clone(), message };
        if pool.platform == Platform::Tpu {
            return Err(bad("the slurm backend cannot offer TPUs".into()));
        }
        let text = |key: &str| -> Result<Option<String>> {
            match pool.settings.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
                Some(other) => Err(bad(format!("settings.{key}: expected a string, got {other}"))),
            }
        };
        let slurm_conf = text("slurm_conf")?.map(PathBuf::from);
        if let Some(conf) = &slurm_conf {
            if !conf.is_file() {
                return Err(bad(format!("settings.slurm_conf: {} is not a file", conf.display())));
            }
        }
        let partition = text("partition")?;
        let account = text("account")?;
        for (key, value) in [("partition", &partition), ("account", &account)] {
            if let Some(v) = value {
                if !v.chars().all(|c| c.is_ascii_alphanumeric() || "-_.,".contains(c)) {
                    return Err(bad(format!("settings.{key}: `{v}` has characters Slurm names do not use")));
                }
            }
        }
        let jobs_dir =
            std::path::absolute(jobs_dir).map_err(|e| bad(format!("jobs folder {}: {e}", jobs_dir.display())))?;
        match jobs_dir.to_str() {
            Some(s) if !s.contains(['"', '\\', '\n', '\r']) => {}
            _ => {
                return Err(bad(format!(
                    "jobs folder {}: the path must be UTF-8 without `\"`, `\\` or line breaks",
                    jobs_dir.display()
                )))
            }
        }
        Ok(SlurmBackend {
            pool: pool.name.clone(),
            jobs_dir,
            slurm_conf,
            partition,
            account,
            cancel_wait: Duration::from_secs(10),
            accounting: Default::default(),
            last_sstat: Default::default(),
        })
    }

    /// How long [`Backend::cancel`] waits for Slurm to report the job ended after `scancel` (default 10 s).
    pub fn with_cancel_wait(mut self, wait: Duration) -> Self {
        self.cancel_wait = wait;
        self
    }

    /// The folder of the job submitted under object name `name`.
    pub fn job_dir(&self, name: &str) -> PathBuf {
        self.jobs_dir.join(name)
    }

    /// The Slurm job id in a handle of this backend (`"<id>@<name>"` or `"<id>"`).
    pub fn job_id(job: &BackendRef) -> Option<u64> {
        let id = job.0.split_once('@').map_or(job.0.as_str(), |(id, _)| id);
        id.parse().ok()
    }

    fn fail(&self, operation: &'static str, message: impl std::fmt::Display) -> JobError {
        JobError::Backend { backend: BACKEND, pool: self.pool.clone(), operation, message: message.to_string() }
    }

    fn check_name(&self, operation: &'static str, name: &str) -> Result<()> {
        let ok = !name.is_empty()
            && name.len() <= 200
            && !name.starts_with('.')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if ok {
            Ok(())
        } else {
            Err(self.fail(operation, format!("`{name}` is not a usable job name (letters, digits, `-`, `_`, `.`)")))
        }
    }

    /// The job id and (when known) object name of a handle.
    fn locate(&self, operation: &'static str, job: &BackendRef) -> Result<(u64, Option<String>)> {
        let bad = || self.fail(operation, format!("`{}` is not a Slurm job handle (`<job-id>@<name>`)", job.0));
        let id = Self::job_id(job).ok_or_else(bad)?;
        match job.0.split_once('@') {
            Some((_, name)) => {
                self.check_name(operation, name)?;
                Ok((id, Some(name.to_string())))
            }
            None => Ok((id, self.scan_for(id))),
        }
    }

    /// The folder whose `jobid` is `id`, by scanning `<jobs_dir>/*/jobid`.
    fn scan_for(&self, id: u64) -> Option<String> {
        std::fs::read_dir(&self.jobs_dir).ok()?.flatten().find_map(|e| {
            (read_jobid(&e.path()) == Some(id)).then(|| e.file_name().to_str().map(str::to_string)).flatten()
        })
    }

    /// The `--output` value for a folder, as `squeue` shows it (`%` doubled).
    fn output_pattern(dir: &Path, file: &str) -> String {
        dir.join(file).to_string_lossy().replace('%', "%%")
    }

    /// Whether `job` is the Slurm job this backend submitted under `name`.
    fn owns(&self, job: &SlurmJob, name: &str) -> bool {
        if job.name != name {
            return false;
        }
        match job.standard_output.as_deref() {
            None | Some("") => true,
            Some(out) => {
                let dir = self.job_dir(name);
                out == Self::output_pattern(&dir, "stdout.log") || Path::new(out) == dir.join("stdout.log")
            }
        }
    }

    /// The job with this id, if it is ours (any job with this id when the name is unknown).
    fn pick<'a>(&self, jobs: &'a [SlurmJob], id: u64, name: Option<&str>) -> Option<&'a SlurmJob> {
        jobs.iter().find(|j| j.job_id == id && name.is_none_or(|n| self.owns(j, n)))
    }

    /// Keeps a job's end state in its folder (best effort: squeue still knows it for a while).
    fn record_final(&self, name: Option<&str>, job: &SlurmJob) {
        let Some(name) = name else { return };
        let dir = self.job_dir(name);
        if !dir.is_dir() {
            return;
        }
        let text = job.to_json().to_string();
        if std::fs::read_to_string(dir.join(FINAL)).is_ok_and(|old| old == text) {
            return;
        }
        if let Err(e) = write_atomic(&dir.join(FINAL), text.as_bytes()) {
            tracing::warn!(
                "slurm backend ({}): recording the end of job {} in {}: {e}",
                self.pool,
                job.job_id,
                dir.display()
            );
        }
    }

    /// When the command started, from the `started` file the batch script writes.
    fn started(&self, name: Option<&str>) -> Option<falcon_core::time::Millis> {
        self.stamp(name, "started")
    }

    /// A time stamp the batch script wrote (`started`, `ended`: nanoseconds; a small file, anything else there is
    /// ignored).
    fn stamp(&self, name: Option<&str>, file: &str) -> Option<falcon_core::time::Millis> {
        use std::io::Read;
        let path = self.job_dir(name?).join(file);
        // The job owns its folder: a FIFO there would block the open, a symbolic link point anywhere. Only a plain
        // file is read.
        if !std::fs::symlink_metadata(&path).ok()?.is_file() {
            return None;
        }
        let mut text = String::new();
        std::fs::File::open(&path).ok()?.take(64).read_to_string(&mut text).ok()?;
        let ns: i64 = text.trim().parse().ok()?;
        (ns > 0).then_some(falcon_core::time::Millis(ns / 1_000_000))
    }

    /// The end state recorded in the folder, if it is this job's.
    fn read_final(&self, name: Option<&str>, id: u64) -> Option<SlurmJob> {
        let text = std::fs::read_to_string(self.job_dir(name?).join(FINAL)).ok()?;
        let value: Value = serde_json::from_str(&text).ok()?;
        parse_job(&value).ok().filter(|j| j.job_id == id)
    }

    /// [`Backend::find`], its errors naming `operation`.
    async fn look_up(&self, operation: &'static str, name: &str) -> Result<Option<BackendRef>> {
        self.check_name(operation, name)?;
        let dir = self.job_dir(name);
        let recorded = read_jobid(&dir);
        let handle = |id: u64| BackendRef(format!("{id}@{name}"));
        let jobs = match self.squeue(operation).await {
            Ok(jobs) => jobs,
            // Slurm accepted it once (the id is recorded): that answer stands without the controller.
            Err(_) if recorded.is_some() => return Ok(recorded.map(handle)),
            Err(e) => return Err(e),
        };
        let ours: Vec<u64> = jobs.iter().filter(|j| self.owns(j, name)).map(|j| j.job_id).collect();
        if let Some(id) = recorded.filter(|id| ours.contains(id)) {
            return Ok(Some(handle(id)));
        }
        if let Some(id) = ours.iter().copied().max() {
            if dir.is_dir() {
                if let Err(e) = write_atomic(&dir.join("jobid"), id.to_string().as_bytes()) {
                    tracing::warn!("slurm backend ({}): recording the id of adopted job {id}: {e}", self.pool);
                }
            }
            return Ok(Some(handle(id)));
        }
        Ok(recorded.map(handle))
    }

    /// Undoes a failed submission: the folder when this call created it, else its `jobid` and script.
    fn clean_up(&self, dir: &Path, created: bool) {
        if created {
            let _ = std::fs::remove_dir_all(dir);
        } else {
            for file in ["jobid", SCRIPT] {
                let _ = std::fs::remove_file(dir.join(file));
            }
        }
    }
}

#[async_trait]
impl Backend for SlurmBackend {
    fn kind(&self) -> &'static str {
        BACKEND
    }

    async fn submit(&self, sub: &Submission<'_>) -> Result<BackendRef> {
        self.check_name("submit", &sub.name)?;
        if let Some(found) = self.look_up("submit", &sub.name).await? {
            return Ok(found);
        }
        let dir = self.job_dir(&sub.name);
        let script = self.script(sub, &dir)?;
        let created = !dir.exists();
        let artifacts = dir.join("artifacts");
        std::fs::create_dir_all(&artifacts)
            .map_err(|e| self.fail("submit", format!("creating {}: {e}", artifacts.display())))?;
        let script_path = dir.join(SCRIPT);
        if let Err(e) = write_atomic(&script_path, script.as_bytes()) {
            self.clean_up(&dir, created);
            return Err(self.fail("submit", format!("writing {}: {e}", script_path.display())));
        }
        let _ = std::fs::remove_file(dir.join("jobid"));
        let script_arg = script_path.to_string_lossy();
        let command = format!("sbatch --parsable {script_arg}");
        let out = match self.run("sbatch", &["--parsable", &script_arg], SBATCH_LIMIT).await {
            Ok(out) => out,
            Err(RunError::Timeout) => {
                // Slurm may have accepted it: keep the folder; the next submit adopts the job by name.
                return Err(self.run_error("submit", &command, RunError::Timeout, SBATCH_LIMIT));
            }
            Err(e) => {
                self.clean_up(&dir, created);
                return Err(self.run_error("submit", &command, e, SBATCH_LIMIT));
            }
        };
        if !out.status.success() {
            let text = failure_text(&out);
            // A timeout talking to slurmctld may still have queued the job: keep its folder so it can be adopted.
            if !text.contains("timed out") {
                self.clean_up(&dir, created);
            }
            return Err(self.fail("submit", format!("`{command}` {text}")));
        }
        let submitted = parse_sbatch(&String::from_utf8_lossy(&out.stdout)).map_err(|m| self.fail("submit", m))?;
        if let Err(e) = write_atomic(&dir.join("jobid"), submitted.job_id.to_string().as_bytes()) {
            // The job is queued: report it; `find` can still locate it by name.
            tracing::warn!(
                "slurm backend ({}): job {} submitted but recording its id failed: {e}",
                self.pool,
                submitted.job_id
            );
        }
        Ok(BackendRef(format!("{}@{}", submitted.job_id, sub.name)))
    }

    async fn find(&self, name: &str) -> Result<Option<BackendRef>> {
        self.look_up("find", name).await
    }

    async fn status(&self, job: &BackendRef) -> Result<BackendState> {
        let (id, name) = self.locate("status", job)?;
        let jobs = self.squeue("status").await?;
        let bad = |m: String| self.fail("status", format!("squeue --json: job {id}: {m}"));
        if let Some(found) = self.pick(&jobs, id, name.as_deref()) {
            let state = match map_state(found).map_err(bad)? {
                BackendState::Running { started } => {
                    BackendState::Running { started: self.started(name.as_deref()).or(started) }
                }
                state => state,
            };
            if is_final(&state) {
                self.record_final(name.as_deref(), found);
            }
            return Ok(state);
        }
        if let Some(recorded) = self.read_final(name.as_deref(), id) {
            return map_state(&recorded).map_err(bad);
        }
        if let Some(done) = self.jobcomp_record(id, name.as_deref()) {
            if let Ok(state) = map_state(&done) {
                self.record_final(name.as_deref(), &done);
                return Ok(state);
            }
        }
        Ok(BackendState::Missing)
    }

    async fn ended_at(&self, job: &BackendRef) -> Option<falcon_core::time::Millis> {
        let (id, name) = self.locate("ended_at", job).ok()?;
        if let Some(at) = self.stamp(name.as_deref(), "ended") {
            return Some(at);
        }
        let end = self.read_final(name.as_deref(), id)?.end_time?;
        // Whole seconds: the end of that second, so that nothing the job did falls after it (the job manager takes
        // the earlier of this and its own check).
        Some(falcon_core::time::Millis(end.checked_add(1)?.checked_mul(1000)?))
    }

    async fn cancel(&self, job: &BackendRef) -> Result<()> {
        let (id, name) = self.locate("cancel", job)?;
        let jobs = self.squeue("cancel").await?;
        let Some(found) = self.pick(&jobs, id, name.as_deref()) else { return Ok(()) };
        if map_state(found).is_ok_and(|s| is_final(&s)) {
            self.record_final(name.as_deref(), found);
            return Ok(());
        }
        let id_text = id.to_string();
        let command = format!("scancel {id}");
        let out = self
            .run("scancel", &[&id_text], SCANCEL_LIMIT)
            .await
            .map_err(|e| self.run_error("cancel", &command, e, SCANCEL_LIMIT))?;
        if !out.status.success() {
            return Err(self.fail("cancel", format!("`{command}` {}", failure_text(&out))));
        }
        // scancel exits 0 even for ids it does not know: ask squeue until the job has ended.
        let deadline = tokio::time::Instant::now() + self.cancel_wait;
        let mut last = found.state.clone();
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let jobs = self.squeue("cancel").await?;
            let Some(found) = self.pick(&jobs, id, name.as_deref()) else { return Ok(()) };
            if map_state(found).is_ok_and(|s| is_final(&s)) {
                self.record_final(name.as_deref(), found);
                return Ok(());
            }
            last.clone_from(&found.state);
            if tokio::time::Instant::now() >= deadline {
                return Err(self.fail(
                    "cancel",
                    format!("job {id} is still {last} {} s after `{command}`", self.cancel_wait.as_secs_f32()),
                ));
            }
        }
    }

    async fn logs(&self, job: &BackendRef) -> Result<Vec<LogSnapshot>> {
        let (_, name) = self.locate("logs", job)?;
        let Some(name) = name else { return Ok(Vec::new()) };
        let dir = self.job_dir(&name);
        let mut out = Vec::new();
        for source in ["stdout", "stderr"] {
            match std::fs::read(dir.join(format!("{source}.log"))) {
                Ok(text) => out.push(LogSnapshot { source: source.into(), text }),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(self.fail("logs", format!("reading {}/{source}.log: {e}", dir.display()))),
            }
        }
        Ok(out)
    }

    async fn failure_output(&self, job: &BackendRef) -> Result<Option<Vec<u8>>> {
        let (_, name) = self.locate("failure output", job)?;
        let Some(name) = name else { return Ok(None) };
        let path = self.job_dir(&name).join("stderr.log");
        crate::failure::read_tail(&path).map_err(|e| self.fail("failure output", format!("{}: {e}", path.display())))
    }

    fn artifact_dir(&self, job: &BackendRef) -> Option<PathBuf> {
        let (_, name) = self.locate("artifacts", job).ok()?;
        Some(self.job_dir(&name?).join("artifacts"))
    }

    async fn sample(&self, job: &BackendRef) -> Result<Sample> {
        let accounting = self.accounting.get_or_init(|| self.accounting_check()).await;
        if let Some(why) = &accounting.unsupported {
            return Ok(Sample::Unsupported(why.clone()));
        }
        {
            let mut last = self.last_sstat.lock().expect("sstat times lock");
            let now = std::time::Instant::now();
            if last.get(&job.0).is_some_and(|at| now.duration_since(*at) < accounting.refresh) {
                return Ok(Sample::NoReading); // Slurm has nothing newer yet
            }
            last.insert(job.0.clone(), now);
        }
        let (id, _) = self.locate("sample", job)?;
        let job_arg = id.to_string();
        let args = ["--noheader", "--parsable2", "--noconvert", "--allsteps", "--format=JobID,TRESUsageInTot", "-j"];
        let command = format!("sstat {} {job_arg}", args.join(" "));
        let out = match self.run("sstat", &[&args[..], &[job_arg.as_str()]].concat(), SSTAT_LIMIT).await {
            Ok(out) => out,
            Err(RunError::Spawn(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Sample::Unsupported(format!("`sstat` is not installed on the worker's PATH ({e})")));
            }
            Err(e) => return Err(self.run_error("sample", &command, e, SSTAT_LIMIT)),
        };
        if !out.status.success() {
            return Err(self.fail("sample", format!("`{command}` {}", failure_text(&out))));
        }
        // No step running (not started yet, or between steps): sstat says so on stderr and prints nothing.
        Ok(match parse_sstat(&String::from_utf8_lossy(&out.stdout)).map_err(|m| self.fail("sample", m))? {
            Some((rss_bytes, cpu_s)) => Sample::Usage { rss_bytes, cpu: CpuUse::Total(cpu_s) },
            None => Sample::NoReading,
        })
    }
}
/// Whether a state is an end state (Slurm will not change it).
fn is_final(state: &BackendState) -> bool {
    !matches!(state, BackendState::Pending { .. } | BackendState::Running { .. } | BackendState::Missing)
}

fn read_jobid(dir: &Path) -> Option<u64> {
    std::fs::read_to_string(dir.join("jobid")).ok()?.trim().parse().ok()
}

/// Writes a file so that readers see the old or the new content, never a part (a temporary file, renamed).
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp.{}.{}", std::process::id(), N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    let tmp = PathBuf::from(tmp);
    let written = std::fs::write(&tmp, bytes).and_then(|_| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_carry_the_id_and_name() {
        assert_eq!(SlurmBackend::job_id(&BackendRef("42@train-a1-slurm".into())), Some(42));
        assert_eq!(SlurmBackend::job_id(&BackendRef("42".into())), Some(42));
        assert_eq!(SlurmBackend::job_id(&BackendRef("x@y".into())), None);
    }

    #[test]
    fn pools_are_checked() {
        use falcon_core::config::{PoolBackend, PoolConfig};
        use std::collections::BTreeMap;
        let config = |settings: BTreeMap<String, Value>| PoolConfig {
            name: "hpc".into(),
            backend: PoolBackend::Slurm,
            zone: "local".into(),
            platform: Platform::Cpu,
            accelerators: vec!["cpu".into()],
            capacity: 2,
            settings,
        };
        let pool = |settings| Pool::from_config(&config(settings)).unwrap();
        let err = |settings| SlurmBackend::from_pool(&pool(settings), Path::new("/tmp/j")).unwrap_err().to_string();
        assert!(SlurmBackend::from_pool(&pool(BTreeMap::new()), Path::new("/tmp/j")).is_ok());
        assert!(err(BTreeMap::from([("slurm_conf".into(), Value::String("/no/such/slurm.conf".into()))]))
            .contains("slurm_conf"));
        assert!(err(BTreeMap::from([("partition".into(), Value::from(3))])).contains("settings.partition"));
        assert!(err(BTreeMap::from([("partition".into(), Value::String("a b".into()))])).contains("settings.partition"));
        let quote = SlurmBackend::from_pool(&pool(BTreeMap::new()), Path::new("/tmp/a\"b")).unwrap_err().to_string();
        assert!(quote.contains("jobs folder"), "{quote}");
    }
}
