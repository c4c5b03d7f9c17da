//! The local backend: each job is a child process group on this machine.
//!
//! Everything about a job lives in its folder `<root>/<object-name>/` (`[jobs] work_dir`, outside the data dir):
//! `pid`, `stdout.log`, `stderr.log`, `exit_code` (written by the wrapper shell when the command ends),
//! `cancelled` (a marker), `uid` (the job's user, when it has one), `artifacts/` (the job's
//! `FALCON_ARTIFACT_DIR`) and `home/` (its `HOME` when isolated). The state is on disk, so a worker that restarts
//! adopts running jobs by reading the folder; the process runs in its own process group and survives the worker.
//!
//! The command runs behind the [`Boundary`](super::isolation) of `[jobs] isolation`: as root, the wrapper shell
//! (which writes the files Falcon trusts) stays root and the command runs as the job's own user, owning only
//! `artifacts/` and `home/`; every file the job could touch is read as untrusted ([`crate::untrusted`]).

use super::isolation::Boundary;
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
    boundary: Boundary,
    grace: Duration,
    /// The process tree sampler of each job sampled so far, by object name (see [`super::procfs`]).
    samplers: Mutex<HashMap<String, TreeSampler>>,
}

impl LocalBackend {
    /// A backend keeping job folders under `root`, its jobs with a clean environment but no other boundary (see
    /// [`LocalBackend::with_boundary`]).
    pub fn new(root: impl Into<PathBuf>, pool: &str) -> Self {
        let root = root.into();
        LocalBackend {
            boundary: Boundary::off(&root, "a backend built without a boundary"),
            root,
            pool: pool.to_string(),
            grace: Duration::from_secs(10),
            samplers: Mutex::new(HashMap::new()),
        }
    }

    /// Runs jobs behind `boundary` (its work dir is where job folders live).
    pub fn with_boundary(mut self, boundary: Boundary) -> Self {
        self.root = boundary.work_dir().to_path_buf();
        self.boundary = boundary;
        self
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
        crate::untrusted::read_small(&dir.join("pid"), 32).ok()??.trim().parse().ok()
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

impl LocalBackend {
    /// Gives the job's user its own folders (`artifacts/`, `home/` and the job's folder its attempts share, private
    /// to it) and records its id; the attempt's folder itself stays the worker's, so the job cannot replace the
    /// files Falcon trusts.
    fn hand_over(&self, dir: &Path, folders: &[&Path], uid: u32) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let fail = |what: &Path, e: std::io::Error| self.fail("submit", format!("{}: {e}", what.display()));
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).map_err(|e| fail(dir, e))?;
        for folder in folders {
            std::os::unix::fs::chown(folder, Some(uid), Some(uid)).map_err(|e| fail(folder, e))?;
            std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o700)).map_err(|e| fail(folder, e))?;
        }
        let tmp = dir.join("uid.tmp");
        std::fs::write(&tmp, uid.to_string())
            .and_then(|_| std::fs::rename(&tmp, dir.join("uid")))
            .map_err(|e| fail(&dir.join("uid"), e))
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
        let home = dir.join("home");
        for folder in [&artifacts, &home] {
            std::fs::create_dir_all(folder)
                .map_err(|e| self.fail("submit", format!("creating {}: {e}", folder.display())))?;
        }
        let marker = format!("falcon-job:{}", sub.name);
        // The job's own folder, kept across its attempts (where EXP writes the configuration snapshot).
        let shared = self.root.join(&sub.spec.name);
        let shared = shared.is_dir().then_some(shared);
        self.boundary
            .check_reachable()
            .map_err(|message| JobError::InvalidPool { pool: self.pool.clone(), message })?;
        let prepared = match self.boundary.isolated() {
            true => Some(
                self.boundary.prepare(&dir, shared.as_deref(), &sub.spec.name).map_err(|e| self.fail("submit", e))?,
            ),
            false => None,
        };
        if let Some((uid, _)) = prepared.as_ref().and_then(|p| p.user.as_ref()) {
            let mut folders = vec![artifacts.as_path(), home.as_path()];
            folders.extend(shared.as_deref());
            self.hand_over(&dir, &folders, *uid)?;
        }
        let mut cmd = tokio::process::Command::new("/bin/sh");
        cmd.arg("-c").arg(WRAPPER).arg(&marker);
        if let Some(p) = &prepared {
            cmd.args(p.drop_privileges());
        }
        cmd.args(&sub.spec.command).env_clear();
        // The worker's environment less Falcon's own and its store's credentials (see `isolation`).
        cmd.envs(std::env::vars_os().filter(|(k, _)| !k.to_str().is_some_and(super::isolation::withheld)));
        if let Some(p) = &prepared {
            cmd.env("HOME", &home).env("USER", "falcon-job").env("LOGNAME", "falcon-job");
            if p.user.is_some() {
                if let Some(path) = std::env::var_os("PATH") {
                    cmd.env("PATH", super::isolation::path_for_job_user(&path));
                }
            }
        }
        cmd.envs(&sub.spec.env)
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
        if let Some(p) = &prepared {
            super::isolation::set_up_child(&mut cmd, p);
        }
        let mut child = cmd.spawn().map_err(|e| match prepared.is_some() {
            true => self.fail(
                "submit",
                format!(
                    "starting the job behind its boundary (namespaces, covers over Falcon's data dir, configuration \
                     and credentials): {e}; `falcon doctor` says what this machine allows"
                ),
            ),
            false => self.fail("submit", format!("starting /bin/sh: {e}")),
        })?;
        drop(prepared);
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
        if let Ok(Some(text)) = crate::untrusted::read_small(&dir.join("exit_code"), 32) {
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
            let path = dir.join(format!("{source}.log"));
            match crate::untrusted::read_log(&path) {
                Ok(Some(text)) => out.push(LogSnapshot { source: source.into(), text }),
                Ok(None) => {}
                Err(e) => return Err(self.fail("logs", format!("{}: {e}", path.display()))),
            }
        }
        Ok(out)
    }

    async fn failure_output(&self, job: &BackendRef) -> Result<Option<Vec<u8>>> {
        let dir = self.dir(job);
        let path = dir.join("stderr.log");
        let mut tail = crate::failure::read_tail(&path)
            .map_err(|e| self.fail("failure output", format!("{}: {e}", path.display())))?;
        // A job user cannot enter a folder only its owner may (code under /root, a 0700 checkout): say why.
        let uid = crate::untrusted::read_small(&dir.join("uid"), 16).ok().flatten();
        if let (Some(text), Some(uid)) = (tail.as_mut(), uid) {
            let denied = String::from_utf8_lossy(text).contains("Permission denied");
            if denied {
                text.extend_from_slice(
                    format!(
                        "\nfalcon: the job ran as user id {} (isolation): its code, interpreter and data must be \
                         readable by other users, in folders they may enter, or set [jobs] isolation = \"none\"\n",
                        uid.trim()
                    )
                    .as_bytes(),
                );
            }
        }
        Ok(tail)
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
