//! Finding and loading the profile files an analysis reads.
//!
//! A local input is either one `.xplane.pb` file or a directory. In a directory the profile files are
//! looked for where JAX (`jax.profiler.trace`) and TensorFlow put them — `plugins/profile/<run>/<host>.xplane.pb`,
//! with `<run>` a timestamp — or directly inside it (a run directory itself). When several runs exist the
//! newest (largest name; run names are `%Y_%m_%d_%H_%M_%S`) is taken. Every `<host>.xplane.pb` of that
//! run is a host of the capture; `--host` keeps one. The host name is the file name minus `.xplane.pb`,
//! as in XProf.
//!
//! Loading checks more than the wire format, because the protobuf wire format accepts many byte
//! strings that are not profiles: an empty file, a file that decodes to an XSpace without planes, a
//! JSON document (an XProf tool output saved with the wrong name) and a gzip file (a Chrome trace) are
//! refused with a message saying so. Only regular files are read: a FIFO, socket or device given as the
//! input is refused before it is opened (opening a FIFO blocks; a device never ends).
//!
//! A file is memory-mapped only when it is Falcon's own copy in the cache ([`HostFile::cached`]: written
//! once under a temporary name and renamed into place, never changed), and read into memory otherwise: a
//! mapped file that another process truncates (a capture still being written, a file being replaced in
//! place) kills the reader with `SIGBUS`, which no error handling can catch. Reading costs the file's size
//! in memory on top of the decoded profile (docs/PERFORMANCE.md, "Reading vs memory-mapping").

use std::path::{Path, PathBuf};

use falcon_xplane::XSpace;

use crate::error::{AnalysisError, Result};

/// File-name suffix of XProf captures.
pub const XPLANE_SUFFIX: &str = ".xplane.pb";

/// One host's profile file.
#[derive(serde::Deserialize, Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct HostFile {
    /// Host name (file name without `.xplane.pb`).
    pub host: String,
    /// Path of the file.
    pub path: PathBuf,
    /// Whether the file is Falcon's own cache copy (never changed after it is written), which is then
    /// memory-mapped rather than read.
    #[serde(skip)]
    pub cached: bool,
}

impl HostFile {
    /// A file the user named (read, not mapped).
    pub fn user(host: String, path: PathBuf) -> HostFile {
        HostFile { host, path, cached: false }
    }

    /// A copy in Falcon's cache (memory-mapped).
    pub fn cached(host: String, path: PathBuf) -> HostFile {
        HostFile { host, path, cached: true }
    }
}

/// Refuses a path that exists but is neither a regular file nor a directory.
fn check_regular(path: &Path, meta: &std::fs::Metadata) -> Result<()> {
    if meta.is_file() || meta.is_dir() {
        return Ok(());
    }
    Err(AnalysisError::Invalid(format!("{}: it is not a regular file (a device, FIFO or socket)", path.display())))
}

/// The host of a profile file (its name minus `.xplane.pb`).
pub fn host_of(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.strip_suffix(XPLANE_SUFFIX).unwrap_or(&name).to_string()
}

/// The profile files of a local path (file or directory), optionally only `host`'s.
pub fn find_profiles(path: &Path, host: Option<&str>) -> Result<Vec<HostFile>> {
    let meta = std::fs::metadata(path).map_err(|e| AnalysisError::NotFound(format!("{}: {e}", path.display())))?;
    check_regular(path, &meta)?;
    let mut files =
        if meta.is_file() { vec![HostFile::user(host_of(path), path.to_path_buf())] } else { profiles_in_dir(path)? };
    if let Some(want) = host {
        let known: Vec<String> = files.iter().map(|f| f.host.clone()).collect();
        files.retain(|f| f.host == want);
        if files.is_empty() {
            return Err(AnalysisError::NotFound(format!(
                "{}: no profile of host `{want}` (hosts: {})",
                path.display(),
                known.join(", ")
            )));
        }
    }
    Ok(files)
}

fn profiles_in_dir(dir: &Path) -> Result<Vec<HostFile>> {
    let direct = xplanes_in(dir)?;
    if !direct.is_empty() {
        return Ok(direct);
    }
    let profile_root = dir.join("plugins").join("profile");
    let mut runs: Vec<PathBuf> = match std::fs::read_dir(&profile_root) {
        Ok(entries) => entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()).collect(),
        Err(_) => Vec::new(),
    };
    runs.sort();
    for run in runs.iter().rev() {
        let files = xplanes_in(run)?;
        if !files.is_empty() {
            return Ok(files);
        }
    }
    Err(AnalysisError::NotFound(format!(
        "{}: no `*{XPLANE_SUFFIX}` profile in it or under plugins/profile/<run>/",
        dir.display()
    )))
}

fn xplanes_in(dir: &Path) -> Result<Vec<HostFile>> {
    let entries = std::fs::read_dir(dir).map_err(|e| AnalysisError::Io(format!("reading {}: {e}", dir.display())))?;
    let mut files: Vec<HostFile> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.to_string_lossy().ends_with(XPLANE_SUFFIX))
        .map(|p| HostFile::user(host_of(&p), p))
        .collect();
    files.sort_by(|a, b| a.host.cmp(&b.host));
    Ok(files)
}

/// Stats no profile tool reads: the flow ids XProf's trace viewer draws arrows from (`_pt`/`_p`
/// producer type/id, `_ct`/`_c` consumer type/id), `_src` (source location of host TraceMes) and
/// `run_id` (XLA's per-execution id on host op events). On a JAX CPU capture they are four fifths of
/// all event stats, so leaving them out of the decoded space halves the memory an analysis needs.
/// Trace export keeps everything.
pub const STATS_NOT_ANALYSED: [&str; 6] = ["_src", "_pt", "_p", "_ct", "_c", "run_id"];

/// Decodes one profile file for the profile tools (without [`STATS_NOT_ANALYSED`]), refusing inputs
/// that are not profiles even when they happen to parse. The file is read, not mapped (see the module docs).
pub fn load(path: &Path) -> Result<XSpace> {
    load_with(path, &falcon_xplane::DecodeOptions::default().skip_stats(&STATS_NOT_ANALYSED))
}

/// [`load`] of a host's file, memory-mapped when it is a cache copy ([`HostFile::cached`]).
pub fn load_host(file: &HostFile) -> Result<XSpace> {
    load_with(&file.path, &falcon_xplane::DecodeOptions::default().skip_stats(&STATS_NOT_ANALYSED).mmap(file.cached))
}

/// Decodes one profile file with every stat (for trace export); read, not mapped.
pub fn load_complete(path: &Path) -> Result<XSpace> {
    load_with(path, &falcon_xplane::DecodeOptions::default())
}

/// [`load_complete`] of a host's file, memory-mapped when it is a cache copy.
pub fn load_complete_host(file: &HostFile) -> Result<XSpace> {
    load_with(&file.path, &falcon_xplane::DecodeOptions::default().mmap(file.cached))
}

fn load_with(path: &Path, options: &falcon_xplane::DecodeOptions<'_>) -> Result<XSpace> {
    let meta = std::fs::metadata(path).map_err(|e| AnalysisError::NotFound(format!("{}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(AnalysisError::Invalid(format!(
            "{}: it is not a regular file (a directory, device, FIFO or socket)",
            path.display()
        )));
    }
    let len = meta.len();
    crate::error::check_profile_size(path, len)?;
    let not_profile = |reason: String| AnalysisError::NotAProfile { path: path.to_path_buf(), reason };
    if len == 0 {
        return Err(not_profile("the file is empty (0 bytes)".into()));
    }
    let head = file_head(path);
    if head.starts_with(&[0x1f, 0x8b]) {
        return Err(not_profile(
            "the file is gzip-compressed, not a binary XSpace protobuf (a Chrome trace `*.trace.json.gz`? \
             `falcon profile trace` reads those)"
                .into(),
        ));
    }
    if looks_like_json(&head) {
        return Err(not_profile(
            "the file is JSON text, not a binary XSpace protobuf (an XProf tool output saved as .pb?)".into(),
        ));
    }
    let space = falcon_xplane::decode_file_with(path, options).map_err(|source| match source {
        falcon_xplane::DecodeError::Io { .. } => AnalysisError::Io(format!("{source}")),
        error => AnalysisError::Decode { path: path.to_path_buf(), error },
    })?;
    if space.planes.is_empty() {
        return Err(not_profile(format!("it decodes to an XSpace with no planes ({len} bytes)")));
    }
    Ok(space)
}

/// The first (up to) 64 bytes of a regular file; empty when it cannot be read (decoding then says why).
fn file_head(path: &Path) -> Vec<u8> {
    use std::io::Read;
    let mut head = Vec::with_capacity(64);
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(64).read_to_end(&mut head);
    }
    head
}

fn looks_like_json(head: &[u8]) -> bool {
    let first = head.iter().find(|b| !b.is_ascii_whitespace());
    matches!(first, Some(b'{') | Some(b'[')) && head.iter().all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace())
}

/// What a trace analysis reads: the XSpace files of a capture, or one Chrome trace JSON file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind", content = "files")]
pub enum TraceFiles {
    /// `<host>.xplane.pb` files (one per host).
    Xplane(Vec<HostFile>),
    /// A Chrome trace JSON file, plain or gzipped (XProf trace viewer output, JAX's `*.trace.json.gz`,
    /// a PyTorch profiler trace).
    ChromeJson(PathBuf),
    /// Chrome traces of the ranks of one distributed run (a folder of PyTorch rank traces), sorted by name; each
    /// rank is a host of the run, named `rank-<N>` by its `distributedInfo.rank`, else by the file.
    ChromeRanks(Vec<PathBuf>),
}

/// Whether a file name looks like a Chrome trace JSON (`.json`, `.json.gz`).
pub fn is_chrome_trace_name(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    name.ends_with(".json") || name.ends_with(".json.gz")
}

/// The trace input at a local path: a `.json[.gz]` file is a Chrome trace; any other file is taken as
/// an XSpace; a directory's XSpace files are preferred (as [`find_profiles`] finds them), else its
/// Chrome trace (`*.trace.json.gz` / `*.pt.trace.json[.gz]`, also under `plugins/profile/<run>/`); several Chrome
/// traces in one folder are the ranks of one run ([`TraceFiles::ChromeRanks`]; `host` keeps those whose file name
/// holds it).
pub fn find_trace(path: &Path, host: Option<&str>) -> Result<TraceFiles> {
    let meta = std::fs::metadata(path).map_err(|e| AnalysisError::NotFound(format!("{}: {e}", path.display())))?;
    check_regular(path, &meta)?;
    if meta.is_file() {
        return Ok(if is_chrome_trace_name(path) {
            TraceFiles::ChromeJson(path.to_path_buf())
        } else {
            TraceFiles::Xplane(find_profiles(path, host)?)
        });
    }
    match find_profiles(path, host) {
        Ok(files) => return Ok(TraceFiles::Xplane(files)),
        Err(AnalysisError::NotFound(_)) => {}
        Err(e) => return Err(e),
    }
    let mut dirs = vec![path.to_path_buf()];
    let runs = path.join("plugins").join("profile");
    if let Ok(entries) = std::fs::read_dir(&runs) {
        let mut found: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()).collect();
        found.sort();
        dirs.extend(found.into_iter().rev());
    }
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut traces = Vec::new();
        for p in entries.filter_map(|e| e.ok()).map(|e| e.path()) {
            if !(is_chrome_trace_name(&p) && p.to_string_lossy().contains("trace")) {
                continue;
            }
            // A rank's trace that is a FIFO, a device or a link to one is refused by name, never skipped: the
            // run would silently lose a rank.
            match std::fs::metadata(&p) {
                Ok(meta) if meta.is_dir() => {}
                Ok(meta) => {
                    check_regular(&p, &meta)?;
                    traces.push(p);
                }
                Err(e) => return Err(AnalysisError::Invalid(format!("{}: {e}", p.display()))),
            }
        }
        traces.sort();
        if let Some(h) = host {
            // `--host rank-2` (or any part of a file name) picks one rank's trace.
            traces.retain(|p| p.file_name().is_some_and(|n| n.to_string_lossy().contains(h)));
        }
        if traces.len() > 1 {
            return Ok(TraceFiles::ChromeRanks(traces));
        }
        if let Some(first) = traces.into_iter().next() {
            return Ok(TraceFiles::ChromeJson(first));
        }
    }
    Err(AnalysisError::NotFound(format!(
        "{}: no `*{XPLANE_SUFFIX}` profile and no Chrome trace (`*.trace.json[.gz]`) in it or under plugins/profile/<run>/",
        path.display()
    )))
}
