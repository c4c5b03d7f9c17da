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
//! Everything about a job lives in `<jobs_dir>/<object-name>/`, as with the local backend:
//!
//! - `job.sh`: the generated batch script (`#SBATCH` options, `FALCON_*` and spec environment, then `exec` of the
//!   command);
//! - `stdout.log`, `stderr.log`: written by Slurm (`--output` / `--error`);
//! - `artifacts/`: the job's `FALCON_ARTIFACT_DIR`;
//! - `jobid`: the Slurm job id, written (atomically) once `sbatch` accepted the job;
//! - `final.json`: the job's end state as last seen in `squeue` (the `squeue --json` job fields this backend
//!   uses), kept because Slurm forgets finished jobs `MinJobAge` seconds (300 by default) after they end.
//!
//! **Shared-filesystem assumption**: the job writes its logs and artifacts into that folder and the worker reads
//! them from there, so the folder must be the same path on the worker and on the job's (first) node: a
//! single-node cluster, or `jobs_dir` on a shared filesystem. The batch script runs on the first allocated
//! node only; a multi-host program starts its other processes itself (e.g. with `srun`). As with `sbatch`'s
//! default `--export=ALL`, the job also inherits the worker's environment (the script's exports come on top).
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

use super::{Backend, BackendRef, BackendState, CpuUse, LogSnapshot, Sample, Submission};
use crate::error::{JobError, Result};
use crate::pool::Pool;
use async_trait::async_trait;
use falcon_core::config::Platform;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

const BACKEND: &str = "slurm";
const SQUEUE_LIMIT: Duration = Duration::from_secs(60);
const SBATCH_LIMIT: Duration = Duration::from_secs(120);
const SCANCEL_LIMIT: Duration = Duration::from_secs(60);
const SSTAT_LIMIT: Duration = Duration::from_secs(10);
const SCRIPT: &str = "job.sh";
const FINAL: &str = "final.json";
/// Read at most this much of the end of a jobcomp file.
const JOBCOMP_TAIL: u64 = 64 << 20;

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

/// What the cluster's accounting allows the sampler (from `scontrol show config`).
#[derive(Debug, Clone, PartialEq)]
pub struct Accounting {
    /// Why jobs cannot be sampled (`JobAcctGatherType=jobacct_gather/none`); `None` when they can.
    pub unsupported: Option<String>,
    /// How often Slurm refreshes a step's usage (`JobAcctGatherFrequency`, its `task=` part; 30 s by default):
    /// `sstat` is not asked more often than that (it costs the worker ~8 ms of CPU a call), and never more often
    /// than once a second.
    pub refresh: Duration,
}

/// What `sbatch --parsable` said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    /// The job id.
    pub job_id: u64,
    /// The cluster, when Slurm names one (`<id>;<cluster>`, multi-cluster setups).
    pub cluster: Option<String>,
}

/// The fields of one `squeue --json` job this backend uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmJob {
    /// `job_id`.
    pub job_id: u64,
    /// `name` (the object name, for jobs of this backend).
    pub name: String,
    /// `job_state`: the 22.05 string, or the deciding element of the 23.11+ list (flags such as `COMPLETING`
    /// before the base state, as 22.05 shows them).
    pub state: String,
    /// `state_reason` (`"None"` when there is none).
    pub reason: String,
    /// `exit_code`: the raw wait status (`exit 3` → 768), when known. See [`decode_exit`].
    pub exit_status: Option<i64>,
    /// `standard_output`: the `--output` pattern (22.05 leaves it unexpanded; `""` when not given).
    pub standard_output: Option<String>,
}

impl SlurmJob {
    /// This job as a JSON object shaped like a 22.05 `squeue --json` entry (what `final.json` holds).
    fn to_json(&self) -> Value {
        serde_json::json!({
            "job_id": self.job_id,
            "name": self.name,
            "job_state": self.state,
            "state_reason": self.reason,
            "exit_code": self.exit_status,
            "standard_output": self.standard_output,
        })
    }
}

/// Why running a command gave no output.
enum RunError {
    /// It could not be started.
    Spawn(std::io::Error),
    /// It ran past its limit and was killed.
    Timeout,
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

    async fn run(&self, program: &str, args: &[&str], limit: Duration) -> std::result::Result<Output, RunError> {
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        if let Some(conf) = &self.slurm_conf {
            cmd.env("SLURM_CONF", conf);
        }
        match tokio::time::timeout(limit, cmd.output()).await {
            Err(_) => Err(RunError::Timeout),
            Ok(Err(e)) => Err(RunError::Spawn(e)),
            Ok(Ok(out)) => Ok(out),
        }
    }

    fn run_error(&self, operation: &'static str, command: &str, error: RunError, limit: Duration) -> JobError {
        match error {
            RunError::Timeout => {
                self.fail(operation, format!("`{command}` did not finish within {} s", limit.as_secs()))
            }
            RunError::Spawn(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.fail(operation, format!("running `{command}`: {e} (is the Slurm client installed and on PATH?)"))
            }
            RunError::Spawn(e) => self.fail(operation, format!("running `{command}`: {e}")),
        }
    }

    /// Every job `squeue --json` shows now.
    async fn squeue(&self, operation: &'static str) -> Result<Vec<SlurmJob>> {
        let out = self
            .run("squeue", &["--json"], SQUEUE_LIMIT)
            .await
            .map_err(|e| self.run_error(operation, "squeue --json", e, SQUEUE_LIMIT))?;
        if !out.status.success() {
            return Err(self.fail(operation, format!("`squeue --json` {}", failure_text(&out))));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        parse_squeue(&text).map_err(|m| self.fail(operation, m))
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

    /// The end state recorded in the folder, if it is this job's.
    fn read_final(&self, name: Option<&str>, id: u64) -> Option<SlurmJob> {
        let text = std::fs::read_to_string(self.job_dir(name?).join(FINAL)).ok()?;
        let value: Value = serde_json::from_str(&text).ok()?;
        parse_job(&value).ok().filter(|j| j.job_id == id)
    }

    /// The slurm.conf the commands use.
    fn conf_path(&self) -> PathBuf {
        self.slurm_conf
            .clone()
            .or_else(|| std::env::var_os("SLURM_CONF").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("/etc/slurm/slurm.conf"))
    }

    /// The job's last line in the `jobcomp/filetxt` file, when the configuration has one.
    fn jobcomp_record(&self, id: u64, name: Option<&str>) -> Option<SlurmJob> {
        let conf = std::fs::read_to_string(self.conf_path()).ok()?;
        let path = jobcomp_location(&conf)?;
        let text = read_tail(&path, JOBCOMP_TAIL).ok()?;
        parse_jobcomp(&text, id, name)
    }

    /// The batch script for a submission.
    fn script(&self, sub: &Submission<'_>, dir: &Path) -> Result<String> {
        let mut s = String::from("#!/bin/sh\n");
        let mut opt = |line: String| {
            s.push_str("#SBATCH ");
            s.push_str(&line);
            s.push('\n');
        };
        opt(format!("--job-name={}", sub.name));
        opt(format!("--output=\"{}\"", Self::output_pattern(dir, "stdout.log")));
        opt(format!("--error=\"{}\"", Self::output_pattern(dir, "stderr.log")));
        opt(format!("--nodes={}", sub.resolved.hosts.max(1)));
        match sub.resolved.accelerator.platform {
            Platform::Cpu => opt(format!("--cpus-per-task={}", sub.resolved.chips.max(1))),
            Platform::Gpu => opt(format!("--gpus-per-node={}", sub.resolved.accelerator.chips_per_host.max(1))),
            Platform::Tpu => {
                return Err(self.fail(
                    "submit",
                    format!("{} is a TPU type; Slurm pools cannot run it", sub.resolved.accelerator.name),
                ));
            }
        }
        if let Some(timeout) = sub.spec.timeout_s {
            opt(format!("--time={}", timeout.div_ceil(60) + 1));
        }
        if let Some(p) = &self.partition {
            opt(format!("--partition={p}"));
        }
        if let Some(a) = &self.account {
            opt(format!("--account={a}"));
        }
        opt("--no-requeue".into());
        s.push_str(&format!("# Falcon job {}, attempt {}, pool {}.\n", sub.job, sub.attempt, sub.pool.name));
        let quote =
            |field: String, value: &str| sh_quote(value).ok_or_else(|| JobError::spec(field, "contains a NUL byte"));
        for (key, value) in &sub.spec.env {
            let ok = !key.is_empty()
                && !key.starts_with(|c: char| c.is_ascii_digit())
                && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ok {
                return Err(JobError::spec(format!("env.{key}"), "not a valid environment variable name"));
            }
            s.push_str(&format!("export {key}={}\n", quote(format!("env.{key}"), value)?));
        }
        let dir_text = dir.to_string_lossy();
        let artifacts = dir.join("artifacts");
        let falcon = [
            ("FALCON_JOB_ID", sub.job.to_string()),
            ("FALCON_JOB_NAME", sub.name.clone()),
            ("FALCON_JOB_ATTEMPT", sub.attempt.to_string()),
            ("FALCON_JOB_DIR", dir_text.to_string()),
            ("FALCON_ARTIFACT_DIR", artifacts.to_string_lossy().to_string()),
        ];
        for (key, value) in falcon {
            s.push_str(&format!("export {key}={}\n", quote(key.to_string(), &value)?));
        }
        if sub.spec.command.is_empty() {
            return Err(JobError::spec("command", "must name a program to run"));
        }
        s.push_str("exec");
        for (i, arg) in sub.spec.command.iter().enumerate() {
            s.push(' ');
            s.push_str(&quote(format!("command[{i}]"), arg)?);
        }
        s.push('\n');
        Ok(s)
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
            let state = map_state(found).map_err(bad)?;
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

impl SlurmBackend {
    /// What the cluster's accounting allows, from `scontrol show config` (the defaults when it does not say).
    async fn accounting_check(&self) -> Accounting {
        match self.run("scontrol", &["show", "config"], SQUEUE_LIMIT).await {
            Ok(out) if out.status.success() => accounting(&String::from_utf8_lossy(&out.stdout)),
            _ => accounting(""),
        }
    }
}

/// What `scontrol show config` output says of sampling: `JobAcctGatherType=jobacct_gather/none` means `sstat`
/// has nothing to report; `JobAcctGatherFrequency` (`30`, `task=1`, `task=10,energy=30`) how often a step's
/// usage is refreshed (30 s when not said).
pub fn accounting(config: &str) -> Accounting {
    let value = |key: &str| {
        config.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    let unsupported = value("JobAcctGatherType").filter(|g| g.ends_with("/none")).map(|gather| {
        format!(
            "the cluster gathers no accounting (JobAcctGatherType={gather}), so `sstat` has nothing to report; set \
             JobAcctGatherType=jobacct_gather/linux (or /cgroup) in slurm.conf"
        )
    });
    let seconds = value("JobAcctGatherFrequency").and_then(|f| {
        f.split(',').find_map(|part| match part.trim().split_once('=') {
            Some(("task", n)) => n.trim().parse::<u64>().ok(),
            Some(_) => None,
            None => part.trim().parse::<u64>().ok(),
        })
    });
    Accounting { unsupported, refresh: Duration::from_secs(seconds.unwrap_or(30).max(1)) }
}

/// The running steps' resident memory (bytes) and CPU time (seconds) summed, from `sstat --noheader
/// --parsable2 --noconvert --format=JobID,TRESUsageInTot` (lines `<id>.<step>|cpu=00:00:02,…,mem=15282176,…`);
/// `None` when no step is listed.
pub fn parse_sstat(stdout: &str) -> std::result::Result<Option<(u64, f64)>, String> {
    let mut total: Option<(u64, f64)> = None;
    for line in stdout.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let tres = line.split_once('|').map(|(_, t)| t).ok_or_else(|| format!("sstat: unexpected line {line:?}"))?;
        let field = |name: &str| tres.split(',').find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='));
        let mem = field("mem").and_then(|m| m.parse::<u64>().ok());
        let cpu = field("cpu").and_then(parse_slurm_duration);
        let (Some(mem), Some(cpu)) = (mem, cpu) else {
            return Err(format!("sstat: no `mem` and `cpu` usage in {line:?}"));
        };
        let (m, c) = total.get_or_insert((0, 0.0));
        *m = m.saturating_add(mem);
        *c += cpu;
    }
    Ok(total)
}

/// A Slurm duration in seconds: `[D-]HH:MM:SS[.fff]`, `MM:SS[.fff]` or plain seconds.
pub fn parse_slurm_duration(text: &str) -> Option<f64> {
    let (days, rest) = match text.split_once('-') {
        Some((d, r)) => (d.parse::<f64>().ok()?, r),
        None => (0.0, text),
    };
    let parts: Vec<f64> = rest.split(':').map(|p| p.parse::<f64>().ok()).collect::<Option<_>>()?;
    let secs = match parts[..] {
        [h, m, s] => h * 3600.0 + m * 60.0 + s,
        [m, s] => m * 60.0 + s,
        [s] => s,
        _ => return None,
    };
    Some(days * 86400.0 + secs).filter(|s| s.is_finite() && *s >= 0.0)
}

/// Whether a state is an end state (Slurm will not change it).
fn is_final(state: &BackendState) -> bool {
    !matches!(state, BackendState::Pending { .. } | BackendState::Running | BackendState::Missing)
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

/// The last `max` bytes of a file (from the first whole line).
fn read_tail(path: &Path, max: u64) -> std::io::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let start = len.saturating_sub(max);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Ok(match (start > 0, text.find('\n')) {
        (true, Some(i)) => text[i + 1..].to_string(),
        _ => text,
    })
}

/// What a failed command said: its stderr (else stdout) on one line, after its exit status.
fn failure_text(out: &Output) -> String {
    let status = match out.status.code() {
        Some(code) => format!("exited with status {code}"),
        None => "was killed by a signal".to_string(),
    };
    let said = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes).lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
    };
    let text = match said(&out.stderr) {
        t if t.is_empty() => said(&out.stdout),
        t => t,
    };
    if text.is_empty() {
        format!("{status} and printed nothing")
    } else {
        format!("{status}: {text}")
    }
}

/// `value` quoted for `/bin/sh` (single quotes unless it is plainly safe); `None` for a NUL byte.
pub fn sh_quote(value: &str) -> Option<String> {
    if value.contains('\0') {
        return None;
    }
    let plain = !value.is_empty() && value.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    Some(if plain { value.to_string() } else { format!("'{}'", value.replace('\'', r"'\''")) })
}

/// The job id in `sbatch --parsable` output (`<id>` or `<id>;<cluster>`); the plain `Submitted batch job <id>`
/// is accepted too. Errors say what sbatch printed.
pub fn parse_sbatch(stdout: &str) -> std::result::Result<Submitted, String> {
    let Some(line) = stdout.lines().map(str::trim).rfind(|l| !l.is_empty()) else {
        return Err("sbatch printed no job id (its output was empty)".into());
    };
    let line = line.strip_prefix("Submitted batch job ").unwrap_or(line);
    let (id, cluster) = match line.split_once(';') {
        Some((id, cluster)) => (id.trim(), Some(cluster.trim()).filter(|c| !c.is_empty()).map(str::to_string)),
        None => (line.split_whitespace().next().unwrap_or(""), None),
    };
    match id.parse::<u64>() {
        Ok(job_id) => Ok(Submitted { job_id, cluster }),
        Err(_) => {
            let shown: String = stdout.trim().chars().take(200).collect();
            Err(format!("sbatch printed no job id: `{shown}`"))
        }
    }
}

/// An integer field: a number, or the `{"set", "infinite", "number"}` object of data_parser v0.0.40+.
fn number(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => {
            n.as_i64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15).map(|f| f as i64))
        }
        Value::Object(o) => {
            if o.get("set").and_then(Value::as_bool) == Some(false)
                || o.get("infinite").and_then(Value::as_bool) == Some(true)
            {
                return None;
            }
            o.get("number").and_then(number)
        }
        _ => None,
    }
}

/// Flags that Slurm 22.05 shows instead of the base state (in its order); later versions list them beside it.
const FLAG_STATES: [&str; 12] = [
    "COMPLETING",
    "STAGE_OUT",
    "CONFIGURING",
    "RESIZING",
    "REQUEUED",
    "REQUEUE_FED",
    "REQUEUE_HOLD",
    "SPECIAL_EXIT",
    "STOPPED",
    "REVOKED",
    "RESV_DEL_HOLD",
    "SIGNALING",
];

const BASE_STATES: [&str; 12] = [
    "PENDING",
    "RUNNING",
    "SUSPENDED",
    "COMPLETED",
    "CANCELLED",
    "FAILED",
    "TIMEOUT",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "OUT_OF_MEMORY",
];

/// The deciding state of a 23.11+ `job_state` list.
fn pick_state(states: &[String]) -> Option<String> {
    FLAG_STATES
        .iter()
        .find(|f| states.iter().any(|s| s == *f))
        .map(|s| s.to_string())
        .or_else(|| states.iter().find(|s| BASE_STATES.contains(&s.as_str())).cloned())
        .or_else(|| states.first().cloned())
}

/// The raw wait status in `exit_code`: an integer (22.05), or the v0.0.40+ object with `return_code` and
/// `signal.id`.
fn exit_status(value: Option<&Value>) -> Option<i64> {
    let value = value?;
    if let Some(raw) = number(value) {
        return Some(raw);
    }
    let o = value.as_object()?;
    let signal = o.get("signal").and_then(|s| s.get("id").or(Some(s))).and_then(number).unwrap_or(0);
    if (1..0x7f).contains(&signal) {
        return Some(signal);
    }
    let code = o.get("return_code").and_then(number)?;
    Some((code & 0xff) << 8)
}

/// One job object of `squeue --json` (or of `final.json`).
fn parse_job(job: &Value) -> std::result::Result<SlurmJob, String> {
    let o = job.as_object().ok_or("a job entry is not an object")?;
    let job_id =
        o.get("job_id").and_then(number).filter(|id| *id >= 0).ok_or("a job entry has no numeric `job_id`")? as u64;
    let text = |key: &str| o.get(key).and_then(Value::as_str).map(str::to_string);
    let state = match o.get("job_state") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Array(list)) => {
            let states: Vec<String> = list.iter().filter_map(Value::as_str).map(str::to_string).collect();
            pick_state(&states).ok_or_else(|| format!("job {job_id}: `job_state` is an empty list"))?
        }
        other => {
            return Err(format!(
                "job {job_id}: `job_state` is {}",
                other.map_or("missing".into(), |v| format!("`{v}`"))
            ))
        }
    };
    Ok(SlurmJob {
        job_id,
        name: text("name").unwrap_or_default(),
        state,
        reason: text("state_reason").unwrap_or_else(|| "None".into()),
        exit_status: exit_status(o.get("exit_code")),
        standard_output: text("standard_output"),
    })
}

/// The jobs in `squeue --json` output, every state; filter them yourself (22.05 ignores `-j`/`--state` with
/// `--json`). Accepts the 22.05 shape (openapi v0.0.38) and the 23.11+ one (`job_state` lists, numbers as
/// `{set, infinite, number}`). Errors name squeue and what was wrong; nothing here panics.
pub fn parse_squeue(json: &str) -> std::result::Result<Vec<SlurmJob>, String> {
    let value: Value = serde_json::from_str(json).map_err(|e| {
        let start: String = json.trim().chars().take(120).collect();
        format!("squeue --json printed invalid JSON ({e}): `{start}`")
    })?;
    let o = value.as_object().ok_or("squeue --json printed JSON that is not an object")?;
    let meta = o.get("meta").and_then(|m| m.get("plugin"));
    let plugin = meta
        .and_then(|p| p.get("data_parser").or_else(|| p.get("type")))
        .and_then(Value::as_str)
        .unwrap_or("unknown plugin")
        .to_string();
    if let Some(errors) = o.get("errors").and_then(Value::as_array).filter(|e| !e.is_empty()) {
        let said: Vec<String> = errors
            .iter()
            .map(|e| {
                let field = |k: &str| e.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
                match (field("description"), field("source"), field("error")) {
                    (Some(d), Some(s), Some(x)) => format!("{d} ({s}: {x})"),
                    (Some(d), None, Some(x)) => format!("{d} ({x})"),
                    (Some(d), _, None) => d.to_string(),
                    (None, _, Some(x)) => x.to_string(),
                    (None, _, None) => e.to_string(),
                }
            })
            .collect();
        return Err(format!("squeue --json ({plugin}) reported errors: {}", said.join("; ")));
    }
    let jobs =
        o.get("jobs").and_then(Value::as_array).ok_or_else(|| format!("squeue --json ({plugin}): no `jobs` list"))?;
    jobs.iter().map(|j| parse_job(j).map_err(|m| format!("squeue --json ({plugin}): {m}"))).collect()
}

/// The exit code in a raw wait(2) status as Slurm reports it: `status >> 8` for a normal exit
/// (`status & 0x7f == 0`), else `128 + signal` (the shell's convention). `None` for values that are no wait
/// status (negative, above 16 bits, a stopped process).
pub fn decode_exit(status: i64) -> Option<i32> {
    if !(0..=0xffff).contains(&status) {
        return None;
    }
    match status & 0x7f {
        0 => Some(((status >> 8) & 0xff) as i32),
        0x7f => None,
        signal => Some(128 + signal as i32),
    }
}

/// Whether a pending job waits for capacity the pool lacks now (a stockout the manager fails over from), by its
/// `state_reason`: `Resources`, `Priority` (queued behind other jobs for the same capacity), nodes down or
/// unavailable, partition limits or a partition that is down. Holds, dependencies, begin times, licenses and
/// account limits are not capacity.
pub fn is_unschedulable(reason: &str) -> bool {
    const REASONS: [&str; 10] = [
        "Resources",
        "Priority",
        "ReqNodeNotAvail",
        "NodeDown",
        "PartitionNodeLimit",
        "PartitionTimeLimit",
        "PartitionDown",
        "PartitionInactive",
        "BadConstraints",
        "PartitionConfig",
    ];
    let reason = reason.trim();
    REASONS.iter().any(|r| reason == *r || reason.starts_with(&format!("{r},")))
        || reason.starts_with("Nodes_required_for_job_are_DOWN")
        || reason.starts_with("Nodes required for job are DOWN")
}

/// What a Slurm job state means to the job manager. Errors name an unknown state.
pub fn map_state(job: &SlurmJob) -> std::result::Result<BackendState, String> {
    let reason = Some(job.reason.trim()).filter(|r| !r.is_empty() && *r != "None");
    let state = job.state.trim().to_ascii_uppercase();
    let slurm = match reason {
        Some(r) => format!("Slurm {state}: {r}"),
        None => format!("Slurm {state}"),
    };
    let code = job.exit_status.and_then(decode_exit).filter(|c| *c != 0);
    let ended = || match code {
        Some(c) if c > 128 => format!("killed by signal {}", c - 128),
        Some(c) => format!("exited with status {c}"),
        None => "ended without an exit status".to_string(),
    };
    Ok(match state.as_str() {
        "PENDING" | "REQUEUED" | "REQUEUE_FED" | "REQUEUE_HOLD" | "RESV_DEL_HOLD" | "POWER_UP_NODE" => {
            BackendState::Pending {
                reason: reason.unwrap_or(&state).to_string(),
                unschedulable: reason.is_some_and(is_unschedulable),
            }
        }
        "CONFIGURING" | "RUNNING" | "COMPLETING" | "SUSPENDED" | "STOPPED" | "RESIZING" | "SIGNALING" | "STAGE_OUT"
        | "UPDATE_DB" => BackendState::Running,
        "COMPLETED" => BackendState::Succeeded,
        "FAILED" | "SPECIAL_EXIT" | "LAUNCH_FAILED" | "RECONFIG_FAIL" => {
            BackendState::Failed { exit_code: code, reason: format!("{} ({slurm})", ended()) }
        }
        "OUT_OF_MEMORY" => {
            BackendState::Failed { exit_code: code, reason: format!("out of memory: {} ({slurm})", ended()) }
        }
        "BOOT_FAIL" => BackendState::Failed { exit_code: code, reason: format!("a node failed to boot ({slurm})") },
        "DEADLINE" => BackendState::Failed { exit_code: code, reason: format!("Slurm deadline reached ({slurm})") },
        "TIMEOUT" => BackendState::Failed { exit_code: None, reason: "Slurm time limit reached".into() },
        "CANCELLED" | "REVOKED" => BackendState::Cancelled,
        "PREEMPTED" | "NODE_FAIL" => BackendState::Preempted { reason: slurm },
        _ => return Err(format!("unknown job_state `{}`", job.state)),
    })
}

/// `JobCompLoc` of a `slurm.conf` whose `JobCompType` is `jobcomp/filetxt` (keys are case-insensitive;
/// the default location when only the type is set).
pub fn jobcomp_location(conf: &str) -> Option<PathBuf> {
    let mut kind = None;
    let mut loc = None;
    for line in conf.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some((key, value)) = line.split_once('=') else { continue };
        let value = value.trim().trim_matches('"');
        match key.trim().to_ascii_lowercase().as_str() {
            "jobcomptype" => kind = Some(value.to_string()),
            "jobcomploc" => loc = Some(value.to_string()),
            _ => {}
        }
    }
    if kind.as_deref().map(|k| k.trim_start_matches("jobcomp/")) != Some("filetxt") {
        return None;
    }
    Some(PathBuf::from(loc.filter(|l| !l.is_empty()).unwrap_or_else(|| "/var/log/slurm_jobcomp.log".into())))
}

/// The last record of job `id` (named `name`, when given) in a `jobcomp/filetxt` file: one `Key=Value` line
/// per job end, `ExitCode=<code>:<signal>` (turned back into a raw wait status).
pub fn parse_jobcomp(text: &str, id: u64, name: Option<&str>) -> Option<SlurmJob> {
    text.lines().rev().find_map(|line| {
        let field = |key: &str| {
            line.split_whitespace().find_map(|t| t.split_once('=').filter(|(k, _)| *k == key).map(|(_, v)| v))
        };
        if field("JobId")?.parse::<u64>().ok()? != id {
            return None;
        }
        let job_name = field("Name").unwrap_or("");
        if name.is_some_and(|n| n != job_name) {
            return None;
        }
        let state = field("JobState")?;
        let exit_status = field("ExitCode").and_then(|e| {
            let (code, signal) = e.split_once(':')?;
            let (code, signal): (i64, i64) = (code.parse().ok()?, signal.parse().ok()?);
            Some(if (1..0x7f).contains(&signal) { signal } else { (code & 0xff) << 8 })
        });
        Some(SlurmJob {
            job_id: id,
            name: job_name.to_string(),
            state: state.to_string(),
            reason: "None".into(),
            exit_status,
            standard_output: None,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY: &str = include_str!("../../tests/data/slurm/squeue_empty.json");
    const PENDING: &str = include_str!("../../tests/data/slurm/squeue_pending.json");
    const FILTER_IGNORED: &str = include_str!("../../tests/data/slurm/squeue_json_j_filter_ignored.json");
    const RUNNING: &str = include_str!("../../tests/data/slurm/squeue_running.json");
    const FAILED: &str = include_str!("../../tests/data/slurm/squeue_failed.json");
    const MIXED: &str = include_str!("../../tests/data/slurm/squeue_mixed_terminal.json");
    const NODE_FAIL: &str = include_str!("../../tests/data/slurm/squeue_node_fail.json");
    const ALL_TERMINAL: &str = include_str!("../../tests/data/slurm/squeue_all_terminal.json");
    const JOBCOMP: &str = include_str!("../../tests/data/slurm/jobcomp.txt");
    /// `squeue --json` exits 0 when slurmctld is unreachable: the `errors` list says so (CONTROLLER_DOWN.md).
    const CONTROLLER_DOWN: &str = include_str!("../../tests/data/slurm/squeue_controller_down.json");

    fn job(json: &str, id: u64) -> SlurmJob {
        parse_squeue(json).unwrap().into_iter().find(|j| j.job_id == id).unwrap()
    }

    fn state(json: &str, id: u64) -> BackendState {
        map_state(&job(json, id)).unwrap()
    }

    #[test]
    fn sbatch_output_gives_the_job_id() {
        let parsable = include_str!("../../tests/data/slurm/sbatch_parsable.stdout");
        assert_eq!(parse_sbatch(parsable), Ok(Submitted { job_id: 1, cluster: None }));
        let plain = include_str!("../../tests/data/slurm/sbatch_plain.stdout");
        assert_eq!(parse_sbatch(plain).unwrap().job_id, 2);
        assert_eq!(parse_sbatch("77;falcontest\n"), Ok(Submitted { job_id: 77, cluster: Some("falcontest".into()) }));
        for bad in [
            include_str!("../../tests/data/slurm/sbatch_bad_partition.stdout"),
            include_str!("../../tests/data/slurm/sbatch_missing_script.stdout"),
            include_str!("../../tests/data/slurm/sbatch_controller_down.stdout"),
            "",
            "\n\n",
        ] {
            let err = parse_sbatch(bad).unwrap_err();
            assert!(err.contains("sbatch printed no job id"), "{err}");
        }
        let err = parse_sbatch("sbatch: error: oops\n").unwrap_err();
        assert!(err.contains("sbatch") && err.contains("oops"), "{err}");
        assert!(parse_sbatch("-3").is_err() && parse_sbatch("99999999999999999999999").is_err());
    }

    #[test]
    fn squeue_snapshots_parse_with_every_job() {
        assert_eq!(parse_squeue(EMPTY).unwrap(), vec![]);
        let ids = |json: &str| parse_squeue(json).unwrap().iter().map(|j| j.job_id).collect::<Vec<_>>();
        assert_eq!(ids(PENDING), [1, 2, 3]);
        assert_eq!(ids(FILTER_IGNORED), [1, 2, 3], "-j is ignored with --json: filter by job_id");
        assert_eq!(ids(RUNNING), [1, 2, 3]);
        assert_eq!(ids(FAILED), [1, 2, 3, 4, 5, 6]);
        assert_eq!(ids(MIXED), [1, 2, 3, 4, 5, 6]);
        assert_eq!(ids(NODE_FAIL), [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(ids(ALL_TERMINAL), [1, 2, 3, 4, 5, 6, 7, 8]);
        let pend = job(PENDING, 2);
        assert_eq!(
            pend,
            SlurmJob {
                job_id: 2,
                name: "pend".into(),
                state: "PENDING".into(),
                reason: "Resources".into(),
                exit_status: Some(0),
                standard_output: Some("<REPO>/.cache/slurm/jobs/%x-%j.out".into()),
            }
        );
        assert_eq!(job(FAILED, 5).exit_status, Some(768));
    }

    #[test]
    fn states_map_as_the_manager_needs() {
        assert_eq!(state(PENDING, 1), BackendState::Running);
        assert_eq!(state(PENDING, 2), BackendState::Pending { reason: "Resources".into(), unschedulable: true });
        assert_eq!(state(PENDING, 3), BackendState::Pending { reason: "JobHeldUser".into(), unschedulable: false });
        assert_eq!(state(RUNNING, 1), BackendState::Cancelled);
        assert_eq!(state(RUNNING, 2), BackendState::Running);
        assert_eq!(state(FAILED, 2), BackendState::Succeeded);
        assert_eq!(state(FAILED, 4), BackendState::Running);
        match state(FAILED, 5) {
            BackendState::Failed { exit_code: Some(3), reason } => {
                assert!(
                    reason.contains("exited with status 3")
                        && reason.contains("FAILED")
                        && reason.contains("NonZeroExitCode"),
                    "{reason}"
                )
            }
            other => panic!("{other:?}"),
        }
        match state(FAILED, 6) {
            BackendState::Failed { exit_code: Some(137), reason } => {
                assert!(reason.contains("signal 9") && reason.contains("JobLaunchFailure"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            state(MIXED, 4),
            BackendState::Failed { exit_code: None, reason: "Slurm time limit reached".into() }
        );
        assert_eq!(state(MIXED, 3), BackendState::Cancelled, "cancelled while held");
        match state(NODE_FAIL, 7) {
            BackendState::Preempted { reason } => {
                assert!(reason.contains("NODE_FAIL") && reason.contains("NodeDown"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(state(NODE_FAIL, 8), BackendState::Pending { reason: "BeginTime".into(), unschedulable: false });
        assert_eq!(state(ALL_TERMINAL, 8), BackendState::Cancelled);
    }

    #[test]
    fn exit_statuses_decode_like_wait() {
        assert_eq!(decode_exit(0), Some(0));
        assert_eq!(decode_exit(768), Some(3));
        assert_eq!(decode_exit(9), Some(137));
        assert_eq!(decode_exit(15), Some(143));
        assert_eq!(decode_exit(255 << 8), Some(255));
        assert_eq!(decode_exit(0x8b), Some(139), "core dump flag ignored");
        for odd in [-1, -2, 0x10000, i64::MAX, i64::MIN, 0x7f] {
            assert_eq!(decode_exit(odd), None, "{odd}");
        }
    }

    #[test]
    fn newer_json_shapes_are_understood() {
        let v40 = r#"{"meta": {"plugin": {"type": "openapi/slurmctld", "data_parser": "data_parser/v0.0.40"}},
            "errors": [], "warnings": [], "jobs": [
            {"job_id": 9, "name": "a", "job_state": ["RUNNING"], "state_reason": "None",
             "exit_code": {"status": ["SUCCESS"], "return_code": {"set": true, "infinite": false, "number": 0}}},
            {"job_id": 10, "name": "b", "job_state": ["FAILED"], "state_reason": "NonZeroExitCode",
             "exit_code": {"status": ["EXITED"], "return_code": {"set": true, "infinite": false, "number": 3},
                           "signal": {"id": {"set": false, "infinite": false, "number": 0}, "name": ""}}},
            {"job_id": 11, "name": "c", "job_state": ["CANCELLED", "COMPLETING"], "exit_code": null},
            {"job_id": 12, "name": "d", "job_state": ["FAILED"],
             "exit_code": {"status": ["SIGNALED"], "return_code": {"set": true, "number": 0},
                           "signal": {"id": {"set": true, "number": 9}, "name": "KILL"}}},
            {"job_id": 13, "name": "e", "job_state": ["PENDING", "REQUEUED"], "state_reason": "BeginTime"}]}"#;
        let jobs = parse_squeue(v40).unwrap();
        let states: Vec<_> = jobs.iter().map(|j| map_state(j).unwrap()).collect();
        assert_eq!(states[0], BackendState::Running);
        assert!(matches!(&states[1], BackendState::Failed { exit_code: Some(3), .. }), "{:?}", states[1]);
        assert_eq!(states[2], BackendState::Running, "still completing");
        assert!(matches!(&states[3], BackendState::Failed { exit_code: Some(137), .. }), "{:?}", states[3]);
        assert_eq!(states[4], BackendState::Pending { reason: "BeginTime".into(), unschedulable: false });
    }

    #[test]
    fn odd_squeue_output_is_an_error_not_a_panic() {
        let cases = [
            ("", "invalid JSON"),
            ("slurm_load_jobs error: Unable to contact slurm controller", "invalid JSON"),
            ("[]", "not an object"),
            ("{}", "no `jobs` list"),
            (r#"{"jobs": {}}"#, "no `jobs` list"),
            (r#"{"jobs": [1]}"#, "not an object"),
            (r#"{"jobs": [{"name": "x"}]}"#, "job_id"),
            (r#"{"jobs": [{"job_id": -4, "job_state": "RUNNING"}]}"#, "job_id"),
            (r#"{"jobs": [{"job_id": 4}]}"#, "`job_state` is missing"),
            (r#"{"jobs": [{"job_id": 4, "job_state": 7}]}"#, "`job_state` is `7`"),
            (r#"{"jobs": [{"job_id": 4, "job_state": []}]}"#, "empty list"),
            (r#"{"errors": [{"error": "Unable to contact slurm controller"}], "jobs": []}"#, "Unable to contact"),
            (&PENDING[..PENDING.len() / 2], "invalid JSON"),
            (CONTROLLER_DOWN, "reported errors: Failed while looking for jobs (slurm_load_jobs: Unspecified error)"),
        ];
        for (text, expected) in cases {
            let err = parse_squeue(text).unwrap_err();
            assert!(err.contains("squeue --json") && err.contains(expected), "{text:?}: {err}");
        }
        let odd = SlurmJob {
            job_id: 1,
            name: "x".into(),
            state: "WEIRD".into(),
            reason: "None".into(),
            exit_status: Some(-7),
            standard_output: None,
        };
        assert!(map_state(&odd).unwrap_err().contains("WEIRD"));
        let strange = r#"{"jobs": [{"job_id": 4.0, "job_state": "FAILED", "exit_code": "x", "name": null}]}"#;
        assert_eq!(
            map_state(&parse_squeue(strange).unwrap()[0]).unwrap(),
            BackendState::Failed { exit_code: None, reason: "ended without an exit status (Slurm FAILED)".into() }
        );
    }

    #[test]
    fn unschedulable_reasons_are_about_capacity() {
        for yes in [
            "Resources",
            "Priority",
            "ReqNodeNotAvail",
            "ReqNodeNotAvail, UnavailableNodes:n1",
            "NodeDown",
            "PartitionNodeLimit",
        ] {
            assert!(is_unschedulable(yes), "{yes}");
        }
        for no in
            ["JobHeldUser", "JobHeldAdmin", "BeginTime", "Dependency", "None", "", "Licenses", "QOSMaxJobsPerUserLimit"]
        {
            assert!(!is_unschedulable(no), "{no}");
        }
    }

    #[test]
    fn jobcomp_records_answer_for_forgotten_jobs() {
        let conf = "# c\nJobCompType=jobcomp/filetxt\njobcomploc=/x/jobcomp.txt # here\n";
        assert_eq!(jobcomp_location(conf), Some(PathBuf::from("/x/jobcomp.txt")));
        assert_eq!(jobcomp_location("JobCompType=jobcomp/filetxt"), Some(PathBuf::from("/var/log/slurm_jobcomp.log")));
        assert_eq!(jobcomp_location("JobCompType=jobcomp/none\nJobCompLoc=/x"), None);
        assert_eq!(jobcomp_location(""), None);

        let exit3 = parse_jobcomp(JOBCOMP, 5, Some("exit3")).unwrap();
        assert_eq!((exit3.state.as_str(), exit3.exit_status), ("FAILED", Some(768)));
        assert!(matches!(map_state(&exit3).unwrap(), BackendState::Failed { exit_code: Some(3), .. }));
        let kill9 = parse_jobcomp(JOBCOMP, 6, None).unwrap();
        assert!(matches!(map_state(&kill9).unwrap(), BackendState::Failed { exit_code: Some(137), .. }));
        assert_eq!(map_state(&parse_jobcomp(JOBCOMP, 2, Some("pend")).unwrap()).unwrap(), BackendState::Succeeded);
        assert!(matches!(
            map_state(&parse_jobcomp(JOBCOMP, 4, None).unwrap()).unwrap(),
            BackendState::Failed { exit_code: None, .. }
        ));
        assert!(matches!(
            map_state(&parse_jobcomp(JOBCOMP, 7, None).unwrap()).unwrap(),
            BackendState::Preempted { .. }
        ));
        assert_eq!(parse_jobcomp(JOBCOMP, 8, None).unwrap().state, "CANCELLED", "the last line of a job wins");
        assert_eq!(parse_jobcomp(JOBCOMP, 5, Some("other-name")), None, "a reused id is not ours");
        assert_eq!(parse_jobcomp(JOBCOMP, 999, None), None);
        assert_eq!(parse_jobcomp("garbage\nJobId=x\nJobId=5 Name=y\n=\n", 5, None), None);
    }

    #[test]
    fn handles_carry_the_id_and_name() {
        assert_eq!(SlurmBackend::job_id(&BackendRef("42@train-a1-slurm".into())), Some(42));
        assert_eq!(SlurmBackend::job_id(&BackendRef("42".into())), Some(42));
        assert_eq!(SlurmBackend::job_id(&BackendRef("x@y".into())), None);
    }

    #[test]
    fn shell_quoting_survives_the_shell() {
        assert_eq!(sh_quote("plain-1.0/x"), Some("plain-1.0/x".into()));
        assert_eq!(sh_quote(""), Some("''".into()));
        assert_eq!(sh_quote("it's"), Some(r"'it'\''s'".into()));
        assert_eq!(sh_quote("a\0b"), None);
    }

    #[test]
    fn the_batch_script_quotes_everything_and_sets_the_options() {
        use crate::spec::{JobSpec, Resources, RetryPolicy};
        use falcon_core::config::{PoolBackend, PoolConfig};
        use std::collections::BTreeMap;
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("slurm.conf");
        std::fs::write(&conf, "").unwrap();
        let config = PoolConfig {
            name: "hpc".into(),
            backend: PoolBackend::Slurm,
            zone: "local".into(),
            platform: Platform::Cpu,
            accelerators: vec!["cpu".into()],
            capacity: 8,
            settings: BTreeMap::from([
                ("slurm_conf".to_string(), Value::String(conf.display().to_string())),
                ("partition".to_string(), Value::String("debug".into())),
                ("account".to_string(), Value::String("team-a".into())),
            ]),
        };
        let pool = Pool::from_config(&config).unwrap();
        let jobs = dir.path().join("jobs 100%");
        let backend = SlurmBackend::from_pool(&pool, &jobs).unwrap();
        let tricky = ["a b", "it's", "$HOME", "`id`", "*", "line\nbreak", "", "\"q\"", "back\\slash"];
        let mut command = vec![
            "sh".to_string(),
            "-c".into(),
            r#"printf '[%s]' "$@"; printf '{%s}' "$V" "$FALCON_JOB_ATTEMPT""#.into(),
            "x".into(),
        ];
        command.extend(tricky.iter().map(|s| s.to_string()));
        let spec = JobSpec {
            name: "quote".into(),
            image: None,
            command,
            env: BTreeMap::from([("V".into(), "it's $HOME `x`".into())]),
            resources: Resources { accelerator: "cpu".into(), slices: 1, devices: Some(3), topology: None },
            zones: vec![],
            capacity: Default::default(),
            reservation: None,
            artifact_uri: None,
            timeout_s: Some(61),
            priority: 0,
            retry: RetryPolicy::default(),
            labels: BTreeMap::new(),
        };
        let resolved = spec.resolve().unwrap();
        let sub = Submission {
            job: falcon_core::ids::JobId(7),
            name: "quote-a2-hpc".into(),
            spec: &spec,
            resolved: &resolved,
            attempt: 2,
            pool: &pool,
        };
        let job_dir = backend.job_dir(&sub.name);
        let script = backend.script(&sub, &job_dir).unwrap();
        let out_pattern = job_dir.join("stdout.log").display().to_string().replace('%', "%%");
        for line in [
            "#!/bin/sh\n".to_string(),
            "#SBATCH --job-name=quote-a2-hpc\n".into(),
            format!("#SBATCH --output=\"{out_pattern}\"\n"),
            "#SBATCH --nodes=1\n".into(),
            "#SBATCH --cpus-per-task=3\n".into(),
            "#SBATCH --time=3\n".into(),
            "#SBATCH --partition=debug\n".into(),
            "#SBATCH --account=team-a\n".into(),
            "#SBATCH --no-requeue\n".into(),
            "export FALCON_JOB_ID=j-7\n".into(),
            "export FALCON_JOB_ATTEMPT=2\n".into(),
        ] {
            assert!(script.contains(&line), "missing {line:?} in\n{script}");
        }
        // The script itself runs the command with its arguments intact.
        std::fs::create_dir_all(&job_dir).unwrap();
        let path = job_dir.join("job.sh");
        std::fs::write(&path, &script).unwrap();
        let out = std::process::Command::new("/bin/sh").arg(&path).env("HOME", "/home/h").output().unwrap();
        let expected: String = tricky.iter().map(|s| format!("[{s}]")).collect::<String>() + "{it's $HOME `x`}{2}";
        assert_eq!(String::from_utf8_lossy(&out.stdout), expected, "{script}");

        let mut nul = spec.clone();
        nul.env.insert("BAD".into(), "a\0b".into());
        let sub_nul = Submission { spec: &nul, ..sub.clone() };
        assert!(backend.script(&sub_nul, &job_dir).unwrap_err().to_string().contains("env.BAD"));
    }

    #[test]
    fn sstat_lines_sum_over_steps() {
        // Observed from Slurm 22.05 with jobacct_gather/linux (`sstat --noconvert`).
        let one = "3.batch|cpu=00:00:01,energy=0,fs/disk=1690083,mem=225030144,pages=0,vmem=229339136\n";
        assert_eq!(parse_sstat(one), Ok(Some((225_030_144, 1.0))));
        let two = format!("{one}3.0|cpu=1-00:01:02.5,mem=100,vmem=1\n");
        assert_eq!(parse_sstat(&two), Ok(Some((225_030_244, 86_463.5))));
        assert_eq!(parse_sstat(""), Ok(None));
        assert!(parse_sstat("3.batch|energy=0").unwrap_err().contains("no `mem`"));
        assert!(parse_sstat("garbage").is_err());
        assert_eq!(parse_slurm_duration("01:30.250"), Some(90.25));
        assert_eq!(parse_slurm_duration("x"), None);
        let none = accounting("JobAcctGatherFrequency  = 30\nJobAcctGatherType       = jobacct_gather/none\n");
        assert!(none.unsupported.unwrap().contains("JobAcctGatherType=jobacct_gather/none"));
        assert_eq!(none.refresh, Duration::from_secs(30));
        let linux =
            accounting("JobAcctGatherFrequency  = energy=60,task=1\nJobAcctGatherType = jobacct_gather/linux\n");
        assert_eq!((linux.unsupported, linux.refresh), (None, Duration::from_secs(1)));
        assert_eq!(accounting(""), Accounting { unsupported: None, refresh: Duration::from_secs(30) });
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
