//! The boundary between a workload and Falcon's own state on the local backend (`[jobs] isolation`).
//!
//! A job's command is untrusted: whoever can submit an experiment runs it. It must not reach Falcon's store
//! (the database, the artifact folder), its configuration or its credentials, nor another job's folder. What
//! keeps it out, by how Falcon runs:
//!
//! - **As root** ([`Mode::JobUser`]): the command runs as a user id of its own, taken from `[jobs] job_uids` (one
//!   no running process uses, so two live jobs never share one), with no supplementary groups, no capabilities
//!   and `no_new_privs` (a set-uid program cannot lift it back); through `setpriv` from util-linux. Its wrapper
//!   shell stays root, so the files Falcon trusts (`pid`, `exit_code`, the logs) are root's and the job cannot
//!   replace them; the job owns only `artifacts/` (its `FALCON_ARTIFACT_DIR`) and `home/` (its `HOME`).
//! - **As another user** ([`Mode::Namespace`]), where the kernel lets that user create a user namespace: the
//!   command runs as Falcon's user, and the worker makes itself undumpable (so its open files under
//!   `/proc/<pid>/fd` are closed to processes of the same user).
//! - **In both**, the job runs in a mount namespace of its own where the data dir, the configuration file in use,
//!   a local artifact store or SQLite file outside the data dir, the credentials Falcon itself uses (a GCS key
//!   file, `~/.aws` for an S3 store on the credential chain, the kubeconfig of a Kubernetes pool) are covered by
//!   empty read-only folders or `/dev/null`, and the job folders' root shows the job's own folders only (its
//!   attempt's, and the job's folder its attempts share, which holds the experiment's configuration snapshot). In the
//!   user namespace case the covers are made in one namespace and the job runs in a second one inside it, so
//!   the kernel locks them: the job cannot unmount them.
//! - **Always**, the job's environment carries none of Falcon's: no `FALCON_*` variable but those describing the
//!   job, no store credentials (`AWS_*` keys, `GOOGLE_APPLICATION_CREDENTIALS`, `KUBECONFIG`, `DATABASE_URL`,
//!   `MYSQL_PWD`), no `XDG_*` folders of Falcon's user; isolated jobs get `HOME` = their `home/`. A spec's
//!   `workload.env` is applied last: what a workload needs, it is given by name.
//!
//! [`Mode::Off`] — `isolation = "none"`, or neither root nor user namespaces available — keeps only the clean
//! environment and the job folder outside the data dir; `falcon doctor` says so.

use falcon_core::config::{Config, Isolation};
use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// How workloads are kept apart (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// As root: a user id of the job's own, and a mount namespace.
    JobUser {
        /// The ids jobs may take.
        uids: std::ops::RangeInclusive<u32>,
        /// The `setpriv` program that drops to the job's user.
        setpriv: PathBuf,
    },
    /// As another user: user and mount namespaces, as Falcon's user.
    Namespace,
    /// No boundary beyond the environment and the folder, and why.
    Off(String),
}

/// What a worker keeps workloads out of, and how.
#[derive(Debug, Clone)]
pub struct Boundary {
    mode: Mode,
    /// The job folders' root (absolute); inside the job's namespace only its own folder shows.
    work_dir: PathBuf,
    /// Folders covered in the job's namespace.
    hidden_dirs: Vec<PathBuf>,
    /// Files covered in the job's namespace.
    hidden_files: Vec<PathBuf>,
}

/// Environment variables a workload never inherits from the worker (besides every `FALCON_*`).
const CREDENTIAL_VARS: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_PROFILE",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "CLOUDSDK_CONFIG",
    "KUBECONFIG",
    "DATABASE_URL",
    "MYSQL_PWD",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
];

/// Whether the worker's variable `key` is withheld from workloads.
pub fn withheld(key: &str) -> bool {
    key.starts_with("FALCON_") || CREDENTIAL_VARS.contains(&key)
}

impl Boundary {
    /// No boundary (tests and tools that build a backend by hand): a clean environment only.
    pub fn off(work_dir: &Path, why: &str) -> Boundary {
        Boundary {
            mode: Mode::Off(why.to_string()),
            work_dir: absolute(work_dir),
            hidden_dirs: Vec::new(),
            hidden_files: Vec::new(),
        }
    }

    /// The boundary `[jobs]` asks for on this machine, hiding what `config` names (see the module docs).
    /// `config_file`: the configuration file in use, if any.
    pub fn from_config(config: &Config, config_file: Option<&Path>) -> Boundary {
        let mut b = Boundary::off(&config.jobs.work_dir, "");
        b.mode = choose_mode(config);
        if let Mode::Off(_) = b.mode {
            return b;
        }
        b.hidden_dirs.push(absolute(&config.data_dir));
        b.hidden_files.extend(config_file.map(absolute));
        if let Some(db) = falcon_core::config::sqlite_path(&config.db) {
            let db = absolute(Path::new(db));
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let mut name = db.clone().into_os_string();
                name.push(suffix);
                b.hidden_files.push(PathBuf::from(name));
            }
        }
        let artifacts = config.artifacts.strip_prefix("file://").unwrap_or(&config.artifacts);
        if !artifacts.contains("://") {
            b.hidden_dirs.push(absolute(Path::new(artifacts)));
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        if config.artifacts.starts_with("gs://") {
            b.hidden_files.extend(config.gcs.credential_path.as_ref().map(|p| absolute(Path::new(p))));
            b.hidden_files.extend(std::env::var_os("GOOGLE_APPLICATION_CREDENTIALS").map(|p| absolute(p.as_ref())));
            b.hidden_dirs.extend(home.as_ref().map(|h| h.join(".config/gcloud")));
        }
        if config.artifacts.starts_with("s3://") && config.s3.access_key_id.is_none() {
            b.hidden_dirs.extend(home.as_ref().map(|h| h.join(".aws")));
            for var in ["AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"] {
                b.hidden_files.extend(std::env::var_os(var).map(|p| absolute(p.as_ref())));
            }
        }
        if config.pools.iter().any(|p| p.backend == falcon_core::config::PoolBackend::Kubernetes) {
            b.hidden_dirs.extend(home.as_ref().map(|h| h.join(".kube")));
            if let Some(list) = std::env::var_os("KUBECONFIG") {
                b.hidden_files.extend(std::env::split_paths(&list).map(|p| absolute(&p)));
            }
        }
        b.hidden_dirs.extend(home.as_ref().map(|h| h.join(".config/falcon")));
        b.hidden_dirs.sort();
        b.hidden_dirs.dedup();
        b.hidden_files.sort();
        b.hidden_files.dedup();
        if b.mode == Mode::Namespace {
            // Same user as the jobs: its open files (the database among them) are closed to them under /proc.
            if let Err(e) = nix::sys::prctl::set_dumpable(false) {
                tracing::warn!("could not make the worker undumpable (its open files stay visible to jobs): {e}");
            }
        }
        b
    }

    /// The mode in force.
    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    /// The job folders' root.
    pub fn work_dir(&self) -> &Path {
        &self.work_dir
    }

    /// One line for `falcon doctor` and the worker's log.
    pub fn describe(&self) -> String {
        match &self.mode {
            Mode::JobUser { uids, .. } => format!(
                "workloads run as a user id of their own ({}-{}) in a mount namespace that hides the data dir, \
                 the configuration and Falcon's credentials; job folders under {}",
                uids.start(),
                uids.end(),
                self.work_dir.display()
            ),
            Mode::Namespace => format!(
                "workloads run as this user in user and mount namespaces that hide the data dir, the \
                 configuration and Falcon's credentials (as root each would run as a user of its own); job \
                 folders under {}",
                self.work_dir.display()
            ),
            Mode::Off(why) => format!(
                "workloads are NOT kept from Falcon's store ({why}): they run as this user with a clean \
                 environment, in job folders under {}",
                self.work_dir.display()
            ),
        }
    }

    /// Whether the job's command runs under a user or namespaces of its own.
    pub fn isolated(&self) -> bool {
        !matches!(self.mode, Mode::Off(_))
    }

    /// Picks the job's user (as root), and prepares what the child does before it runs the wrapper: everything
    /// that allocates happens here, so the child only makes system calls.
    /// `job_dir` is the attempt's folder, `shared` the job's own folder (kept across its attempts) when it has
    /// one; the job's user is picked from `job` (its name), so its attempts share one while it is free.
    pub(crate) fn prepare(&self, job_dir: &Path, shared: Option<&Path>, job: &str) -> Result<Prepared, String> {
        let name = job_dir.file_name().ok_or_else(|| format!("{} has no folder name", job_dir.display()))?;
        let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(|_| format!("{} holds a NUL", p.display()));
        let own = self.work_dir.join(name);
        let shared = match shared.and_then(Path::file_name) {
            Some(n) => Some(c(&self.work_dir.join(n))?),
            None => None,
        };
        let mut plan = Plan {
            user_ns: self.mode == Mode::Namespace,
            maps: Vec::new(),
            work_dir: c(&self.work_dir)?,
            own: c(&own)?,
            shared,
            dirs: self.hidden_dirs.iter().map(|p| c(p)).collect::<Result<_, _>>()?,
            files: self.hidden_files.iter().map(|p| c(p)).collect::<Result<_, _>>()?,
        };
        if plan.user_ns {
            let (uid, gid) = (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw());
            plan.maps = vec![
                (CString::new("/proc/self/setgroups").expect("no NUL"), b"deny".to_vec()),
                (CString::new("/proc/self/uid_map").expect("no NUL"), format!("{uid} {uid} 1").into_bytes()),
                (CString::new("/proc/self/gid_map").expect("no NUL"), format!("{gid} {gid} 1").into_bytes()),
            ];
        }
        let user = match &self.mode {
            Mode::JobUser { uids, setpriv } => {
                let mut used = running_uids();
                used.extend(uids_of_live_jobs(&self.work_dir));
                Some((free_uid(uids, job.as_bytes(), &used)?, setpriv.clone()))
            }
            _ => None,
        };
        Ok(Prepared { plan, user })
    }
}

/// What one job's start needs, made ready in the worker.
pub(crate) struct Prepared {
    plan: Plan,
    /// The job's user id and the `setpriv` that drops to it (as root).
    pub(crate) user: Option<(u32, PathBuf)>,
}

impl Prepared {
    /// The command-line prefix that runs the command as the job's user (empty when it runs as Falcon's).
    pub(crate) fn drop_privileges(&self) -> Vec<String> {
        match &self.user {
            Some((uid, setpriv)) => vec![
                setpriv.display().to_string(),
                format!("--reuid={uid}"),
                format!("--regid={uid}"),
                "--clear-groups".into(),
                "--no-new-privs".into(),
                "--inh-caps=-all".into(),
                "--bounding-set=-all".into(),
                "--".into(),
            ],
            None => Vec::new(),
        }
    }
}

/// The mounts of a job's namespace, as C strings made before the fork.
#[derive(Clone)]
struct Plan {
    user_ns: bool,
    maps: Vec<(CString, Vec<u8>)>,
    work_dir: CString,
    own: CString,
    shared: Option<CString>,
    dirs: Vec<CString>,
    files: Vec<CString>,
}

impl Plan {
    /// Runs in the child after fork: only system calls on values made before the fork, no allocation (only the
    /// error number reaches the worker, which names the step).
    fn enter(&self) -> std::io::Result<()> {
        use nix::mount::{mount, MsFlags};
        use nix::sched::{unshare, CloneFlags};
        let io = |e: nix::errno::Errno| std::io::Error::from_raw_os_error(e as i32);
        let none: Option<&std::ffi::CStr> = None;
        let namespaces = match self.user_ns {
            true => CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS,
            false => CloneFlags::CLONE_NEWNS,
        };
        if self.user_ns {
            // The worker made itself undumpable, which leaves /proc/self's files root's: the child (about to run
            // the job, which exec makes dumpable anyway) takes its own back to write its user namespace's maps.
            nix::sys::prctl::set_dumpable(true).map_err(io)?;
        }
        unshare(namespaces).map_err(io)?;
        if self.user_ns {
            self.write_maps().map_err(io)?;
        }
        mount(none, c"/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none).map_err(io)?;
        let quiet = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
        // The job folders' root: an empty folder, then the job's own folder put back.
        // A bind mount's source must be in this namespace: the folder is opened here, before it is covered.
        let own = nix::fcntl::open(
            self.own.as_c_str(),
            nix::fcntl::OFlag::O_PATH | nix::fcntl::OFlag::O_DIRECTORY | nix::fcntl::OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )
        .map_err(io)?;
        let shared = match &self.shared {
            Some(path) => {
                let flags = nix::fcntl::OFlag::O_PATH | nix::fcntl::OFlag::O_DIRECTORY | nix::fcntl::OFlag::O_CLOEXEC;
                Some((path, nix::fcntl::open(path.as_c_str(), flags, nix::sys::stat::Mode::empty()).map_err(io)?))
            }
            None => None,
        };
        let tmpfs = Some(c"tmpfs");
        mount(Some(c"falcon-jobs"), self.work_dir.as_c_str(), tmpfs, quiet, Some(c"mode=0755,size=64k,nr_inodes=64"))
            .map_err(io)?;
        let bind = MsFlags::MS_BIND | MsFlags::MS_REC;
        for (path, fd) in [(&self.own, &own)].into_iter().chain(shared.as_ref().map(|(p, fd)| (*p, fd))) {
            let mut text = [0u8; 32];
            let source = fd_path(fd.as_raw_fd(), &mut text);
            nix::unistd::mkdir(path.as_c_str(), nix::sys::stat::Mode::from_bits_truncate(0o755)).map_err(io)?;
            mount(Some(source), path.as_c_str(), none, bind, none).map_err(io)?;
        }
        drop(own);
        drop(shared);
        for dir in &self.dirs {
            let cover = Some(c"mode=000,size=4k,nr_inodes=1");
            match mount(Some(c"falcon-hidden"), dir.as_c_str(), tmpfs, quiet | MsFlags::MS_RDONLY, cover) {
                Ok(()) | Err(nix::errno::Errno::ENOENT | nix::errno::Errno::ENOTDIR) => {}
                Err(e) => return Err(io(e)),
            }
        }
        for file in &self.files {
            match mount(Some(c"/dev/null"), file.as_c_str(), none, MsFlags::MS_BIND, none) {
                Ok(()) | Err(nix::errno::Errno::ENOENT | nix::errno::Errno::ENOTDIR) => {}
                Err(e) => return Err(io(e)),
            }
        }
        if self.user_ns {
            // A second pair inside the first: the covers came from a more privileged namespace, so the kernel
            // locks them, and the job (all-powerful in its own namespace) cannot unmount them.
            unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS).map_err(io)?;
            self.write_maps().map_err(io)?;
        }
        Ok(())
    }

    /// Writes the user namespace's `setgroups`, `uid_map` and `gid_map` (system calls only).
    fn write_maps(&self) -> nix::Result<()> {
        use nix::fcntl::{open, OFlag};
        for (path, bytes) in &self.maps {
            let fd = open(path.as_c_str(), OFlag::O_WRONLY | OFlag::O_CLOEXEC, nix::sys::stat::Mode::empty())?;
            if nix::unistd::write(&fd, bytes)? != bytes.len() {
                return Err(nix::errno::Errno::EIO);
            }
        }
        Ok(())
    }
}

/// `/proc/self/fd/<fd>` written into `buf`, without allocating (the child of a fork may not).
fn fd_path(fd: i32, buf: &mut [u8; 32]) -> &std::ffi::CStr {
    let prefix = b"/proc/self/fd/";
    buf[..prefix.len()].copy_from_slice(prefix);
    let mut digits = [0u8; 10];
    let (mut n, mut len) = (fd.unsigned_abs(), 0);
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        buf[prefix.len() + i] = digits[len - 1 - i];
    }
    buf[prefix.len() + len] = 0;
    std::ffi::CStr::from_bytes_until_nul(&buf[..]).unwrap_or(c"/proc/self/fd/")
}

/// Runs `prepared`'s set-up in the child of `cmd` between fork and exec.
#[allow(unsafe_code)]
pub(crate) fn set_up_child(cmd: &mut tokio::process::Command, prepared: &Prepared) {
    let plan = prepared.plan.clone();
    // SAFETY: the closure runs in the forked child; it only makes system calls (through nix) on C strings made
    // before the fork, and allocates nothing.
    unsafe { cmd.pre_exec(move || plan.enter()) };
}

/// The mode `[jobs] isolation` gives on this machine.
fn choose_mode(config: &Config) -> Mode {
    if config.jobs.isolation == Isolation::None {
        return Mode::Off("[jobs] isolation = \"none\"".into());
    }
    if nix::unistd::geteuid().is_root() {
        let uids = match falcon_core::config::parse_uid_range(&config.jobs.job_uids) {
            Ok(u) => u,
            Err(e) => return Mode::Off(format!("[jobs] job_uids: {e}")),
        };
        return match find_setpriv() {
            Some(setpriv) => Mode::JobUser { uids, setpriv },
            None => Mode::Off("setpriv (util-linux) is not installed: it runs each job as a user of its own".into()),
        };
    }
    match user_namespaces_work() {
        Ok(()) => Mode::Namespace,
        Err(e) => Mode::Off(format!("not root, and this user cannot create a user namespace: {e}")),
    }
}

fn find_setpriv() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"].iter().map(PathBuf::from).collect();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs.into_iter().map(|d| d.join("setpriv")).find(|p| p.is_file())
}

/// Whether this process may create a user namespace (and mount in it): tried in a child that exits at once.
#[allow(unsafe_code)]
fn user_namespaces_work() -> std::io::Result<()> {
    use nix::sched::{unshare, CloneFlags};
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new("/bin/true");
    // SAFETY: the closure runs in the forked child and only makes one system call.
    unsafe {
        cmd.pre_exec(|| {
            unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)
                .map_err(|e| std::io::Error::from_raw_os_error(e as i32))
        });
    }
    let status = cmd.status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!("/bin/true in one {status}")))
    }
}

/// A user id from `uids` that is not `used`, starting from one the job's name picks (so a restarted
/// worker does not crowd the first ids).
fn free_uid(
    uids: &std::ops::RangeInclusive<u32>,
    name: &[u8],
    used: &std::collections::HashSet<u32>,
) -> Result<u32, String> {
    let count = u64::from(uids.end() - uids.start()) + 1;
    let start = name.iter().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(*b))) % count;
    (0..count)
        .map(|i| uids.start() + ((start + i) % count) as u32)
        .find(|uid| !used.contains(uid))
        .ok_or_else(|| format!("every job user id of {}-{} is in use by a running process", uids.start(), uids.end()))
}

impl Boundary {
    /// Fails, naming the folder, when a job's user could not enter every folder above the job folders (it would
    /// not reach its own `FALCON_ARTIFACT_DIR`): a setting to fix, not a moment to wait out.
    pub fn check_reachable(&self) -> Result<(), String> {
        match &self.mode {
            Mode::JobUser { .. } => reachable(&self.work_dir),
            _ => Ok(()),
        }
    }
}

/// `PATH` as a job user can use it: the folders of `path` that user may enter (every folder above open to others),
/// so `python3` finds the system's rather than failing on a shim under `/root`.
pub(crate) fn path_for_job_user(path: &std::ffi::OsStr) -> std::ffi::OsString {
    use std::os::unix::fs::MetadataExt;
    let enterable = |dir: &Path| {
        dir.is_absolute()
            && dir.ancestors().all(|d| std::fs::metadata(d).is_ok_and(|m| m.mode() & 0o001 != 0 || d == Path::new("/")))
    };
    let kept: Vec<PathBuf> = std::env::split_paths(path).filter(|d| enterable(d)).collect();
    std::env::join_paths(kept).unwrap_or_default()
}

fn reachable(work_dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    for folder in work_dir.ancestors().skip(1) {
        let Ok(meta) = std::fs::metadata(folder) else { continue };
        if meta.mode() & 0o001 == 0 {
            return Err(format!(
                "a job's user cannot enter {} (mode {:o}), above the job folders {}: let other users \
                 enter it (chmod o+x), or set [jobs] work_dir to a folder they may reach (such as \
                 /var/tmp/falcon-jobs), or [jobs] isolation = \"none\"",
                folder.display(),
                meta.mode() & 0o7777,
                work_dir.display()
            ));
        }
    }
    Ok(())
}

/// The users of the jobs under `work_dir` that have not ended (a `uid` and no `exit_code`): one started a moment
/// ago may have no process under its user yet, and two jobs must never share one.
fn uids_of_live_jobs(work_dir: &Path) -> std::collections::HashSet<u32> {
    let Ok(entries) = std::fs::read_dir(work_dir) else { return Default::default() };
    entries
        .flatten()
        .filter(|e| !e.path().join("exit_code").exists())
        .filter_map(|e| crate::untrusted::read_small(&e.path().join("uid"), 16).ok()??.trim().parse().ok())
        .collect()
}

/// The real user ids of every running process.
fn running_uids() -> std::collections::HashSet<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Default::default() };
    entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter_map(|e| {
            let status = std::fs::read_to_string(e.path().join("status")).ok()?;
            let line = status.lines().find(|l| l.starts_with("Uid:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .collect()
}

/// `path` made absolute against the working directory, and its links resolved where it exists.
fn absolute(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn falcons_variables_and_store_credentials_are_withheld() {
        for key in
            ["FALCON_DB", "FALCON_TOKEN", "AWS_SECRET_ACCESS_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "KUBECONFIG"]
        {
            assert!(withheld(key), "{key}");
        }
        for key in ["PATH", "LANG", "CUDA_VISIBLE_DEVICES", "PYTHONPATH", "XLA_FLAGS", "FALCONX"] {
            assert!(!withheld(key), "{key}");
        }
    }

    #[test]
    fn fd_paths_are_written_without_allocating() {
        let mut buf = [0u8; 32];
        assert_eq!(fd_path(7, &mut buf).to_str().unwrap(), "/proc/self/fd/7");
        assert_eq!(fd_path(1234567, &mut buf).to_str().unwrap(), "/proc/self/fd/1234567");
        assert_eq!(fd_path(0, &mut buf).to_str().unwrap(), "/proc/self/fd/0");
    }

    #[test]
    fn a_job_user_is_one_no_process_and_no_live_job_uses() {
        let me = nix::unistd::getuid().as_raw();
        let used = running_uids();
        assert!(used.contains(&me), "this test's own uid is in use");
        let uid = free_uid(&(me..=me.saturating_add(1)), b"job", &used).unwrap();
        assert_eq!(uid, me + 1);
        assert!(free_uid(&(me..=me), b"job", &used).unwrap_err().contains("in use"));
        // A job that started (its `uid` written) and has not ended holds its user, with or without a process.
        let work = tempfile::tempdir().unwrap();
        for (name, uid, ended) in [("a-a1-local", "70001", false), ("b-a1-local", "70002", true)] {
            let dir = work.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("uid"), uid).unwrap();
            if ended {
                std::fs::write(dir.join("exit_code"), "0").unwrap();
            }
        }
        let live = uids_of_live_jobs(work.path());
        assert_eq!(live, [70001].into_iter().collect());
        assert_eq!(free_uid(&(70001..=70002), b"x", &live).unwrap(), 70002);
    }
}
