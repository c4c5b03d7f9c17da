//! The local backend: each job is a child process group on this machine.
//!
//! Everything about a job lives in its folder `<root>/<object-name>/`: `pid`, `stdout.log`, `stderr.log`,
//! `exit_code` (written by the wrapper shell when the command ends), `cancelled` (a marker), and `artifacts/`
//! (the job's `FALCON_ARTIFACT_DIR`). The state is on disk, so a worker that restarts adopts running jobs by
//! reading the folder; the process runs in its own process group and survives the worker.

use super::procfs::TreeSampler;
use super::{Backend, BackendRef, BackendState, CpuUse, LogSnapshot, Sample, Submission};
use crate::error::{JobError, Result};
use async_trait::async_trait;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// The wrapper: runs the command with its output in the job folder and records the exit status atomically.
const WRAPPER: &str = r#""$@" >"$FALCON_JOB_DIR/stdout.log" 2>"$FALCON_JOB_DIR/stderr.log" </dev/null
rc=$?
printf '%s' "$rc" >"$FALCON_JOB_DIR/exit_code.tmp" && mv "$FALCON_JOB_DIR/exit_code.tmp" "$FALCON_JOB_DIR/exit_code""#;

/// Runs jobs as local processes.
#[derive(Debug)]
pub struct LocalBackend {
    root: PathBuf,
    pool: String,
    grace: Duration,
    /// The process tree sampler of each job sampled so far, by object name (see [`super::procfs`]).
    samplers: Mutex<HashMap<String, TreeSampler>>,
}

impl LocalBackend {
    /// A backend keeping job folders under `root`.
    pub fn new(root: impl Into<PathBuf>, pool: &str) -> Self {
        LocalBackend {
            root: root.into(),
            pool: pool.to_string(),
            grace: Duration::from_secs(10),
            samplers: Mutex::new(HashMap::new()),
        }
    }

    /// How long cancel waits after SIGTERM before SIGKILL (default 10 s).
    pub fn with_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    fn dir(&self, job: &BackendRef) -> PathBuf {
        self.root.join(&job.0)
    }

    fn fail(&self, operation: &'static str, message: impl std::fmt::Display) -> JobError {
        JobError::Backend { backend: "local", pool: self.pool.clone(), operation, message: message.to_string() }
    }

    fn pid(&self, dir: &Path) -> Option<i32> {
        std::fs::read_to_string(dir.join("pid")).ok()?.trim().parse().ok()
    }

    /// Whether this job was already started here: its pid or exit status is recorded, or — when a worker died
    /// between starting the process and recording its pid — a live process carries its marker (the pid is
    /// recorded then). Never starting a job twice rests on this.
    fn adopt(&self, job: &BackendRef) -> Result<bool> {
        let dir = self.dir(job);
        if dir.join("pid").exists() || dir.join("exit_code").exists() {
            return Ok(true);
        }
        if !dir.exists() {
            return Ok(false);
        }
        match find_process(&format!("falcon-job:{}", job.0)) {
            Some(pid) => {
                std::fs::write(dir.join("pid"), pid.to_string()).map_err(|e| self.fail("adopt", e))?;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

/// Whether anything of the job in folder `dir` (named after its object) may still be running: its recorded
/// process group has a live member, or a live process carries its marker and runs in this very folder (the
/// same object name can live under another data dir). What `falcon gc` asks before it removes a job folder.
pub(crate) fn folder_in_use(dir: &Path) -> bool {
    let recorded = std::fs::read_to_string(dir.join("pid")).ok().and_then(|p| p.trim().parse::<i32>().ok());
    if recorded.is_some_and(group_alive) {
        return true;
    }
    let Some(name) = dir.file_name().and_then(|n| n.to_str()) else { return true };
    let marker = format!("falcon-job:{name}");
    let mut wanted = b"FALCON_JOB_DIR=".to_vec();
    wanted.extend_from_slice(dir.as_os_str().as_encoded_bytes());
    let Ok(entries) = std::fs::read_dir("/proc") else { return true };
    entries.flatten().any(|e| {
        let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<i32>().ok()) else { return false };
        if !alive(pid, &marker) {
            return false;
        }
        // Unreadable environment: assume it is ours.
        std::fs::read(format!("/proc/{pid}/environ")).map_or(true, |env| env.split(|b| *b == 0).any(|v| v == wanted))
    })
}

/// The live process whose command line carries `marker` (the wrapper shell of a job), if any.
fn find_process(marker: &str) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        alive(pid, marker).then_some(pid)
    })
}

/// Whether `pid` is a live (not zombie) process whose command line carries our marker.
fn alive(pid: i32, marker: &str) -> bool {
    let stat = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s,
        Err(_) => return false,
    };
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
    if matches!(state, Some("Z") | Some("X") | None) {
        return false;
    }
    std::fs::read(format!("/proc/{pid}/cmdline")).map(|c| String::from_utf8_lossy(&c).contains(marker)).unwrap_or(false)
}

/// Whether any live (not zombie) process is still in process group `pgid`: the wrapper, the command, or
/// anything the command started.
fn group_alive(pgid: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else { return false };
    entries.flatten().any(|e| {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { return false };
        let Some((_, rest)) = stat.rsplit_once(')') else { return false };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // After the command name: state, ppid, pgrp.
        fields.len() > 2 && fields[0] != "Z" && fields[0] != "X" && fields[2] == pgid.to_string()
    })
}

#[async_trait]
impl Backend for LocalBackend {
    fn kind(&self) -> &'static str {
        "local"
    }

    async fn submit(&self, sub: &Submission<'_>) -> Result<BackendRef> {
        let job = BackendRef(sub.name.clone());
        let dir = self.dir(&job);
        if self.adopt(&job)? {
            return Ok(job);
        }
        let artifacts = dir.join("artifacts");
        std::fs::create_dir_all(&artifacts)
            .map_err(|e| self.fail("submit", format!("creating {}: {e}", artifacts.display())))?;
        let marker = format!("falcon-job:{}", sub.name);
        let mut cmd = tokio::process::Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(WRAPPER)
            .arg(&marker)
            .args(&sub.spec.command)
            .envs(&sub.spec.env)
            .env("FALCON_JOB_ID", sub.job.to_string())
            .env("FALCON_JOB_NAME", &sub.name)
            .env("FALCON_JOB_ATTEMPT", sub.attempt.to_string())
            .env("FALCON_JOB_DIR", &dir)
            .env("FALCON_ARTIFACT_DIR", &artifacts)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .kill_on_drop(false);
        let mut child = cmd.spawn().map_err(|e| self.fail("submit", format!("starting /bin/sh: {e}")))?;
        let pid = child.id().ok_or_else(|| self.fail("submit", "the process exited before it got a pid"))?;
        let tmp = dir.join("pid.tmp");
        std::fs::write(&tmp, pid.to_string())
            .and_then(|_| std::fs::rename(&tmp, dir.join("pid")))
            .map_err(|e| self.fail("submit", format!("recording the pid: {e}")))?;
        // Reap the child when it ends so it never lingers as a zombie; its exit status is in `exit_code`.
        tokio::spawn(async move {
            let _ = child.wait().await;
        });
        Ok(job)
    }

    async fn find(&self, name: &str) -> Result<Option<BackendRef>> {
        let job = BackendRef(name.to_string());
        Ok(self.adopt(&job)?.then_some(job))
    }

    async fn ended_at(&self, job: &BackendRef) -> Option<falcon_core::time::Millis> {
        let written = std::fs::metadata(self.dir(job).join("exit_code")).ok()?.modified().ok()?;
        let ms = written.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis();
        Some(falcon_core::time::Millis(i64::try_from(ms).ok()?))
    }

    async fn status(&self, job: &BackendRef) -> Result<BackendState> {
        let dir = self.dir(job);
        let pid = self.pid(&dir);
        if pid.is_none() && !dir.join("exit_code").exists() {
            return Ok(BackendState::Missing);
        }
        let cancelled = dir.join("cancelled").exists();
        if let Ok(text) = std::fs::read_to_string(dir.join("exit_code")) {
            let code: i32 =
                text.trim().parse().map_err(|_| self.fail("status", format!("bad exit_code file: {text:?}")))?;
            return Ok(match code {
                0 => BackendState::Succeeded,
                _ if cancelled => BackendState::Cancelled,
                c if c > 128 => {
                    BackendState::Failed { exit_code: Some(c), reason: format!("killed by signal {}", c - 128) }
                }
                c => BackendState::Failed { exit_code: Some(c), reason: format!("exited with status {c}") },
            });
        }
        if pid.is_some_and(|pid| alive(pid, &format!("falcon-job:{}", job.0))) {
            return Ok(BackendState::Running { started: None });
        }
        // The exit code may land a moment after the process is gone; look once more.
        tokio::time::sleep(Duration::from_millis(50)).await;
        if dir.join("exit_code").exists() {
            return Box::pin(self.status(job)).await;
        }
        Ok(if cancelled {
            BackendState::Cancelled
        } else {
            BackendState::Failed {
                exit_code: None,
                reason: "the process ended without recording an exit status (killed?)".into(),
            }
        })
    }

    async fn cancel(&self, job: &BackendRef) -> Result<()> {
        let dir = self.dir(job);
        let Some(pid) = self.pid(&dir) else { return Ok(()) };
        std::fs::write(dir.join("cancelled"), b"").map_err(|e| self.fail("cancel", e))?;
        if dir.join("exit_code").exists() {
            return Ok(());
        }
        if !group_alive(pid) {
            return Ok(());
        }
        let group = Pid::from_raw(pid);
        let _ = killpg(group, Signal::SIGTERM);
        let deadline = tokio::time::Instant::now() + self.grace;
        while tokio::time::Instant::now() < deadline {
            if !group_alive(pid) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = killpg(group, Signal::SIGKILL);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while group_alive(pid) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    }

    async fn logs(&self, job: &BackendRef) -> Result<Vec<LogSnapshot>> {
        let dir = self.dir(job);
        let mut out = Vec::new();
        for source in ["stdout", "stderr"] {
            match std::fs::read(dir.join(format!("{source}.log"))) {
                Ok(text) => out.push(LogSnapshot { source: source.into(), text }),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(self.fail("logs", e)),
            }
        }
        Ok(out)
    }

    async fn failure_output(&self, job: &BackendRef) -> Result<Option<Vec<u8>>> {
        let path = self.dir(job).join("stderr.log");
        crate::failure::read_tail(&path).map_err(|e| self.fail("failure output", format!("{}: {e}", path.display())))
    }

    /// The job's process tree from `/proc`: its wrapper, its process group and their descendants
    /// ([`super::procfs`]).
    async fn sample(&self, job: &BackendRef) -> Result<Sample> {
        let dir = self.dir(job);
        let Some(pid) = self.pid(&dir) else { return Ok(Sample::NoReading) };
        if dir.join("exit_code").exists() {
            self.samplers.lock().expect("sampler map lock").remove(&job.0);
            return Ok(Sample::NoReading);
        }
        let mut samplers = self.samplers.lock().expect("sampler map lock");
        let usage = samplers.entry(job.0.clone()).or_insert_with(|| TreeSampler::new(pid)).sample();
        Ok(match usage {
            Some(u) => Sample::Usage { rss_bytes: u.rss_bytes, cpu: CpuUse::Total(u.cpu_s) },
            None => {
                samplers.remove(&job.0);
                Sample::NoReading
            }
        })
    }

    fn artifact_dir(&self, job: &BackendRef) -> Option<PathBuf> {
        Some(self.dir(job).join("artifacts"))
    }
}
