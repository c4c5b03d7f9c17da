//! Collecting a job's outputs — its logs and every file it wrote into its artifact folder — into the artifact
//! store, incrementally, with one job-outputs row per file in the metadata store.
//!
//! Invariants:
//! - Every file the job wrote ends up stored under a key that its row maps back to its name, or recorded as
//!   skipped with its reason (a symbolic link, a FIFO or other special file, a hard link, a sparse file, a file
//!   over `[jobs] max_artifact_mib` or one that would take the job past `max_experiment_artifacts_mib`, an
//!   unreadable folder, a name whose key would be too long). One bad file never stops the others.
//! - A file is read as untrusted ([`crate::untrusted`]): opened without following a link or blocking on a FIFO,
//!   checked on the open file to be the regular, single-linked file the walk saw (a hard link could name
//!   Falcon's own database, whose SQLite locks a mere open and close in this process would drop), and read to
//!   its cap at most, however it grows meanwhile.
//! - Keys: each path segment keeps its characters except `%`, `\` and control characters, and bytes that are
//!   not UTF-8, which are percent-encoded (`x\y` is `x%5Cy`, never `x/y`); a segment over
//!   [`MAX_SEGMENT_BYTES`] keeps its first part plus `~` and a hash of the whole, so the local backend's
//!   staging name fits the file system's 255-byte limit.
//! - Live snapshots — logs, the sampled resource use (`resources/…`), `metrics*.jsonl`, `resources*.jsonl` — are
//!   replaced each time they change while the job runs (files streamed, never buffered); every other file is
//!   written once, and a later change is refused and recorded (the first stored version stays).
//! - A retried attempt's metrics files (`metrics*.jsonl`) are stored under `attempts/<attempt>/`, beside the first
//!   attempt's: each attempt's step clock is kept, so goodput sees the steps a restart repeated.
//! - A store failure (not a bad file) fails the collection as a whole, so the caller can retry it before the
//!   job is terminal; what was stored stays recorded.

use crate::error::Result;
use falcon_core::ids::JobId;
use falcon_infra::meta::{JobOutput, StoredOutput};
use falcon_infra::{ArtifactStore, InfraError, MetaStore, ObjectInfo, PutMode};
use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// A file is copied while the job runs only once it has not changed for this long (it is probably complete);
/// at the end everything is copied.
const SETTLE: Duration = Duration::from_secs(2);

/// The longest key segment kept as is; longer ones are shortened with a hash (see the module docs).
pub const MAX_SEGMENT_BYTES: usize = 200;

/// What one file's collection stands at.
#[derive(Debug, Clone, PartialEq)]
struct Copied {
    /// Size and modification time of the version stored.
    stamp: (u64, SystemTime),
    /// Whether a refusal of a later version was recorded already.
    refused: bool,
}

/// What an earlier worker recorded of one job's outputs: path → (size stored, live).
type Recorded = HashMap<String, (u64, bool)>;

/// How much of a job's files is collected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// The largest file, in bytes.
    pub file: u64,
    /// All of one job's files together, in bytes.
    pub job: u64,
}

impl Caps {
    /// The caps `[jobs]` sets.
    pub fn from_config(jobs: &falcon_core::config::JobsConfig) -> Caps {
        Caps {
            file: jobs.max_artifact_mib.saturating_mul(1 << 20),
            job: jobs.max_experiment_artifacts_mib.saturating_mul(1 << 20),
        }
    }
}

impl Default for Caps {
    fn default() -> Self {
        Caps::from_config(&falcon_core::config::JobsConfig::default())
    }
}

/// A file smaller than this is never called sparse (file systems allocate in blocks).
const SPARSE_MIN_BYTES: u64 = 1 << 20;

/// Remembers what was copied, so each pass copies only new or changed files.
pub(crate) struct ArtifactSync {
    store: ArtifactStore,
    meta: MetaStore,
    caps: Caps,
    /// Bytes stored per job, by recorded path (the latest version of a live file).
    stored: Mutex<HashMap<JobId, HashMap<String, u64>>>,
    copied: Mutex<HashMap<(JobId, PathBuf), Copied>>,
    /// Outputs recorded by an earlier worker, loaded once per job: `path` → (size, live).
    recorded: Mutex<HashMap<JobId, Recorded>>,
    /// Skips already recorded: `(job, path, reason)`.
    skips: Mutex<HashSet<(JobId, String, String)>>,
    logs: Mutex<HashMap<String, usize>>,
}

impl ArtifactSync {
    pub(crate) fn new(store: ArtifactStore, meta: MetaStore, caps: Caps) -> Self {
        ArtifactSync {
            store,
            meta,
            caps,
            stored: Mutex::new(HashMap::new()),
            copied: Mutex::new(HashMap::new()),
            recorded: Mutex::new(HashMap::new()),
            skips: Mutex::new(HashSet::new()),
            logs: Mutex::new(HashMap::new()),
        }
    }

    /// Replaces a live snapshot the job does not write itself (a log, the sampled resource use) at `key` with
    /// the full text so far, when its length changed; recorded as `rel` among the job's outputs.
    pub(crate) async fn put_live(&self, job: JobId, key: &str, rel: &str, text: Vec<u8>) -> Result<()> {
        let len = text.len();
        if self.logs.lock().expect("log map lock").get(key) == Some(&len) {
            return Ok(());
        }
        let info = self.store.put_bytes(key, text, PutMode::Overwrite).await?;
        self.record(job, rel, Some(&info), None, true).await?;
        self.logs.lock().expect("log map lock").insert(key.to_string(), len);
        Ok(())
    }

    /// Copies new and changed files under `dir` to `<prefix>/<key of the relative path>` (a retried attempt's metrics
    /// files under `attempts/<attempt>/`), recording each in the job's outputs. `last`: the job has ended, so
    /// unsettled files are copied too.
    pub(crate) async fn upload_dir(
        &self,
        job: JobId,
        attempt: i64,
        dir: &Path,
        prefix: &str,
        last: bool,
    ) -> Result<()> {
        let mut found = Walked::default();
        // Every file is opened beneath the artifact folder and through no link (a job may swap a folder of its
        // for a link between the walk and the read); the folder itself a link: nothing under it is collected.
        let root = match crate::untrusted::open_folder(dir) {
            Ok(root) => root,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return self.record_skip_once(job, ".", &format!("the artifact folder: {e}")).await,
        };
        walk(dir, dir, &mut found);
        found.files.sort();
        for (path, reason) in &found.skipped {
            let rel = display_rel(dir, path);
            self.record_skip_once(job, &rel, reason).await?;
        }
        self.load_recorded(job).await?;
        for path in found.files {
            let rel = attempt_rel(&display_rel(dir, &path), attempt);
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue }; // removed since the walk
            let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            let settled = SystemTime::now().duration_since(modified).unwrap_or_default() >= SETTLE;
            let live = is_live(&rel);
            // A live snapshot (logs, metrics) is copied while it is still being written: a file appended to every
            // step never settles, and its readers skip a line cut mid-write. Write-once files wait to settle.
            if !last && !settled && !live {
                continue;
            }
            let stamp = (meta.len(), modified);
            let previous = self.copied.lock().expect("copy map lock").get(&(job, path.clone())).cloned();
            let previous = previous.or_else(|| self.adopt_recorded(job, &path, &rel, stamp));
            match &previous {
                Some(p) if p.stamp == stamp => continue,
                Some(p) if !live => {
                    let reason = format!(
                        "changed after it was stored ({} bytes stored, now {}): only logs and metrics files are \
                         replaced, so the first version is kept",
                        p.stamp.0, stamp.0
                    );
                    self.refuse(job, &rel, path, previous, &reason).await?;
                    continue;
                }
                _ => {}
            }
            let opened = match crate::untrusted::not_collectable(&meta) {
                Some(why) => Err(why),
                None => crate::untrusted::open_beneath(
                    &root,
                    path.strip_prefix(dir).unwrap_or(&path),
                    Some((meta.dev(), meta.ino())),
                )
                .map_err(|e| format!("could not be read: {e}"))
                .and_then(|(file, meta)| self.within_caps(job, &rel, &file, meta.len()).map(|()| file)),
            };
            let file = match opened {
                Ok(file) => file,
                Err(reason) => {
                    self.refuse(job, &rel, path, previous, &reason).await?;
                    continue;
                }
            };
            let relative = path.strip_prefix(dir).unwrap_or(&path);
            let relative = match is_metrics(&rel) && attempt > 1 {
                true => Path::new("attempts").join(attempt.to_string()).join(relative),
                false => relative.to_path_buf(),
            };
            let key = match object_key(prefix, &relative) {
                Ok(k) => k,
                Err(reason) => {
                    self.record_skip_once(job, &rel, &reason).await?;
                    continue;
                }
            };
            let mode = if live { PutMode::Overwrite } else { PutMode::Create };
            let reader = Capped { file: tokio::fs::File::from_std(file), left: self.caps.file, cap: self.caps.file };
            match self.store.put_reader(&key, reader, mode).await {
                Ok(info) => {
                    self.stored.lock().expect("stored map lock").entry(job).or_default().insert(rel.clone(), info.size);
                    self.record(job, &rel, Some(&info), None, live).await?;
                    self.copied.lock().expect("copy map lock").insert((job, path), Copied { stamp, refused: false });
                }
                // An earlier worker stored this write-once file and stopped before recording it (a put is whole or
                // absent, so the object is complete): adopted as the stored version, as if recorded. When the file
                // now differs from it, the first version is kept and the refusal recorded, as for any later change.
                Err(InfraError::AlreadyExists { .. }) if !live => {
                    let stored = self.store.digest(&key).await?;
                    self.record(job, &rel, Some(&stored), None, false).await?;
                    let same = stored.size == stamp.0
                        && crate::untrusted::open_beneath(&root, path.strip_prefix(dir).unwrap_or(&path), None)
                            .and_then(|(f, _)| falcon_core::artifact::sha256_reader(f))
                            .is_ok_and(|sha| sha == stored.sha256);
                    if !same {
                        let reason = format!(
                            "differs from the version an earlier worker stored ({} bytes stored, now {}): only logs \
                             and metrics files are replaced, so the first version is kept",
                            stored.size, stamp.0
                        );
                        self.record_refusal(job, &rel, &reason).await?;
                    }
                    let stored_stamp = if same { stamp } else { (stored.size, SystemTime::UNIX_EPOCH) };
                    let copied = Copied { stamp: stored_stamp, refused: !same };
                    self.copied.lock().expect("copy map lock").insert((job, path), copied);
                }
                // The file, not the store: it vanished or cannot be read. Recorded; the others go on.
                Err(InfraError::Io { operation: "reading", source, .. }) => {
                    self.refuse(job, &rel, path, previous, &format!("could not be read: {source}")).await?;
                }
                Err(InfraError::InvalidKey { reason, .. }) => {
                    self.record_skip_once(job, &rel, &format!("no valid object key: {reason}")).await?;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Records why the file at `path` (recorded as `rel`) is not stored this time: a skip when no version of it
    /// is stored, else a refusal beside the stored version, which stays (once, not at every pass).
    async fn refuse(&self, job: JobId, rel: &str, path: PathBuf, previous: Option<Copied>, reason: &str) -> Result<()> {
        match previous {
            Some(p) if !p.refused => {
                self.record_refusal(job, rel, reason).await?;
                self.copied.lock().expect("copy map lock").insert((job, path), Copied { refused: true, ..p });
            }
            Some(_) => {}
            None => self.record_skip_once(job, rel, reason).await?,
        }
        Ok(())
    }

    /// Why `file` (`len` bytes, recorded as `rel`) is not stored, if it is not: over the per-file cap, sparse,
    /// or past the job's cap with what is stored already.
    fn within_caps(&self, job: JobId, rel: &str, file: &std::fs::File, len: u64) -> std::result::Result<(), String> {
        let mib = |b: u64| b >> 20;
        if len >= SPARSE_MIN_BYTES && crate::untrusted::data_bytes(file, len) < len / 2 {
            return Err("a sparse file (mostly holes, which the store would keep at full length): not collected".into());
        }
        if len > self.caps.file {
            return Err(format!(
                "over the {} MiB cap on one file ([jobs] max_artifact_mib): not collected",
                mib(self.caps.file)
            ));
        }
        let stored = self.stored.lock().expect("stored map lock");
        let others: u64 = stored.get(&job).map_or(0, |m| m.iter().filter(|(p, _)| *p != rel).map(|(_, n)| *n).sum());
        if others.saturating_add(len) > self.caps.job {
            return Err(format!(
                "would take the job's collected files past the {} MiB cap on one experiment ([jobs] \
                 max_experiment_artifacts_mib): not collected",
                mib(self.caps.job)
            ));
        }
        Ok(())
    }

    async fn record(
        &self,
        job: JobId,
        rel: &str,
        info: Option<&ObjectInfo>,
        skip: Option<&str>,
        live: bool,
    ) -> Result<()> {
        let stored = info.map(|i| StoredOutput { key: i.key.clone(), size: i.size, sha256: i.sha256.clone() });
        let output = JobOutput { path: rel.to_string(), stored, skip_reason: skip.map(str::to_string), live };
        Ok(self.meta.put_job_output(job, &output).await?)
    }

    /// Records a skipped file once per reason (each pass finds it again).
    pub(crate) async fn record_skip_once(&self, job: JobId, rel: &str, reason: &str) -> Result<()> {
        let marker = (job, rel.to_string(), reason.to_string());
        if self.skips.lock().expect("skip set lock").contains(&marker) {
            return Ok(());
        }
        self.record(job, rel, None, Some(reason), false).await?;
        self.skips.lock().expect("skip set lock").insert(marker);
        Ok(())
    }

    /// Keeps the stored version of a write-once file and records that a later one was refused.
    async fn record_refusal(&self, job: JobId, rel: &str, reason: &str) -> Result<()> {
        let mut outputs = self.meta.job_outputs(job).await?;
        let mut output = match outputs.iter().position(|o| o.path == rel) {
            Some(i) => outputs.swap_remove(i),
            None => JobOutput { path: rel.to_string(), stored: None, skip_reason: None, live: false },
        };
        output.skip_reason = Some(reason.to_string());
        Ok(self.meta.put_job_output(job, &output).await?)
    }

    /// Loads, once per job, what an earlier worker recorded (so a restarted worker neither re-uploads nor
    /// mistakes its own earlier uploads for changes).
    async fn load_recorded(&self, job: JobId) -> Result<()> {
        if self.recorded.lock().expect("recorded map lock").contains_key(&job) {
            return Ok(());
        }
        let rows = self.meta.job_outputs(job).await?;
        let map: Recorded = rows.into_iter().filter_map(|o| Some((o.path, (o.stored?.size, o.live)))).collect();
        let sizes = map.iter().map(|(p, (size, _))| (p.clone(), *size)).collect();
        self.stored.lock().expect("stored map lock").entry(job).or_insert(sizes);
        self.recorded.lock().expect("recorded map lock").insert(job, map);
        Ok(())
    }

    /// A file an earlier worker stored: taken as copied when its size matches (a live file is always copied
    /// again at the end, which is harmless).
    fn adopt_recorded(&self, job: JobId, path: &Path, rel: &str, stamp: (u64, SystemTime)) -> Option<Copied> {
        let recorded = self.recorded.lock().expect("recorded map lock");
        let &(size, live) = recorded.get(&job)?.get(rel)?;
        let copied = if size == stamp.0 && !live {
            Copied { stamp, refused: false }
        } else {
            Copied { stamp: (size, SystemTime::UNIX_EPOCH), refused: false }
        };
        drop(recorded);
        self.copied.lock().expect("copy map lock").insert((job, path.to_path_buf()), copied.clone());
        Some(copied)
    }
}

/// A file read to its cap at most: one that grows past it while it is read fails the read (the partial upload is
/// dropped), so the store never holds more than the cap of it.
struct Capped {
    file: tokio::fs::File,
    left: u64,
    cap: u64,
}

impl tokio::io::AsyncRead for Capped {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.file).poll_read(cx, buf);
        if let std::task::Poll::Ready(Ok(())) = polled {
            let n = (buf.filled().len() - before) as u64;
            if n > self.left {
                let cap = self.cap >> 20;
                return std::task::Poll::Ready(Err(std::io::Error::other(format!(
                    "it grew past the {cap} MiB cap on one file ([jobs] max_artifact_mib) while it was read"
                ))));
            }
            self.left -= n;
        }
        polled
    }
}

/// A metrics file (`metrics*.jsonl`), wherever it is.
fn is_metrics(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name.starts_with("metrics") && name.ends_with(".jsonl")
}

/// The name a file is recorded under: a retried attempt's metrics file under `attempts/<attempt>/`.
fn attempt_rel(rel: &str, attempt: i64) -> String {
    match is_metrics(rel) && attempt > 1 {
        true => format!("attempts/{attempt}/{rel}"),
        false => rel.to_string(),
    }
}

/// Files that grow while the job runs and are replaced as they do.
pub fn is_live(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    rel.starts_with("logs/")
        || rel.starts_with(falcon_core::resources::FOLDER)
        || ((name.starts_with("metrics") || name.starts_with("resources")) && name.ends_with(".jsonl"))
}

#[derive(Default)]
struct Walked {
    files: Vec<PathBuf>,
    skipped: Vec<(PathBuf, String)>,
}

/// Regular files under `dir`, never following a symbolic link; everything else found is skipped with a reason.
fn walk(root: &Path, dir: &Path, out: &mut Walked) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            if dir != root || dir.exists() {
                out.skipped.push((dir.to_path_buf(), format!("folder could not be read: {e}")));
            }
            return;
        }
    };
    for entry in entries {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                out.skipped.push((dir.to_path_buf(), format!("folder could not be listed to the end: {e}")));
                return;
            }
        };
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => walk(root, &path, out),
            Ok(t) if t.is_file() => out.files.push(path),
            Ok(t) if t.is_symlink() => out.skipped.push((path, "a symbolic link: not followed".into())),
            Ok(t) => out.skipped.push((path, format!("not a regular file ({}): not collected", kind(&t)))),
            Err(e) => out.skipped.push((path, format!("could not be inspected: {e}"))),
        }
    }
}

fn kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else {
        "an unknown kind"
    }
}

/// The relative path as shown to users (lossy UTF-8, `/`-separated).
fn display_rel(dir: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(dir).unwrap_or(path);
    let parts: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

/// The object key of a file at `relative` under the job's folder (see the module docs), or why it has none.
pub fn object_key(prefix: &str, relative: &Path) -> std::result::Result<String, String> {
    let mut key = prefix.trim_end_matches('/').to_string();
    for segment in relative.iter() {
        key.push('/');
        key.push_str(&key_segment(segment));
    }
    if key.len() > 1024 {
        return Err(format!("its object key would be {} bytes, over the store's 1024-byte limit", key.len()));
    }
    Ok(key)
}

fn key_segment(segment: &OsStr) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for chunk in segment.as_bytes().utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '%' || c == '\\' || c.is_control() {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("%{b:02X}"));
                }
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.len() > MAX_SEGMENT_BYTES {
        let hash = &falcon_core::artifact::sha256_hex(out.as_bytes())[..16];
        let mut cut = MAX_SEGMENT_BYTES - 17;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out = format!("{}~{hash}", &out[..cut]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn keys_map_back_to_distinct_names() {
        let k = |p: &[u8]| object_key("experiments/e-1", Path::new(OsStr::from_bytes(p))).unwrap();
        assert_eq!(k(b"a/metrics.jsonl"), "experiments/e-1/a/metrics.jsonl");
        assert_eq!(k(b"x\\y"), "experiments/e-1/x%5Cy");
        assert_ne!(k(b"x\\y"), k(b"x/y"));
        assert_eq!(k(b"100%"), "experiments/e-1/100%25");
        assert_eq!(k(b"tab\there\n"), "experiments/e-1/tab%09here%0A");
        assert_eq!(k(b"bad\xffutf8"), "experiments/e-1/bad%FFutf8");
        let long = "n".repeat(250);
        let key = k(long.as_bytes());
        let seg = key.rsplit('/').next().unwrap();
        assert!(seg.len() <= MAX_SEGMENT_BYTES && seg.contains('~'), "{seg}");
        assert_ne!(k("n".repeat(249).as_bytes()), key);
        let deep: Vec<u8> = (0..300).flat_map(|_| b"dddd/".iter().copied()).chain(*b"f").collect();
        assert!(object_key("p", Path::new(OsStr::from_bytes(&deep))).unwrap_err().contains("1024-byte"));
    }

    #[test]
    fn live_files_are_logs_metrics_and_resources() {
        for live in ["logs/1/stdout.log", "metrics.jsonl", "sub/metrics_rank0.jsonl", "resources.jsonl"] {
            assert!(is_live(live), "{live}");
        }
        for once in ["checkpoint.bin", "metrics.json", "plugins/profile/x/host.xplane.pb", "notmetrics.jsonl"] {
            assert!(!is_live(once), "{once}");
        }
    }
}
