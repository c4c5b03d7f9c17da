//! `falcon gc`: keeps a long-running worker's disk bounded.
//!
//! Two things grow without end on a worker machine:
//! - job folders, `<data_dir>/jobs/<object-name>/` (the local backend's state, logs and the job's own
//!   artifact folder). One is removed when its job ended more than `--older-than` ago (default 7 days) and its
//!   outputs were collected into the artifact store; a running job's folder is never removed (the rules are
//!   [`falcon_exp::housekeeping`]'s, through the Job module);
//! - the profile cache, `<data_dir>/cache/profiles/` (copies of remote profiles and artifacts made for
//!   analysis, fetched again when missing). It is trimmed to `--cache-cap` (default 10 GiB), least recently
//!   used first (by the later of access and modification time); a file used in the last minute is kept.
//!
//! With `dry_run` nothing is removed and the report lists what would be.

use crate::{ctx::Ctx, AppError, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Job folders of jobs that ended longer ago than this are collected by default.
pub const DEFAULT_JOB_AGE: Duration = Duration::from_secs(7 * 24 * 3600);
/// The profile cache is trimmed to this by default.
pub const DEFAULT_CACHE_CAP: u64 = 10 * 1024 * 1024 * 1024;
/// Cache files used more recently than this are never removed (an analysis may be reading them).
const CACHE_IN_USE: Duration = Duration::from_secs(60);

/// What to collect.
#[derive(Debug, Clone)]
pub struct GcRequest {
    /// Say what would be removed, remove nothing.
    pub dry_run: bool,
    /// Only job folders of jobs that ended longer ago than this.
    pub job_age: Duration,
    /// The profile cache's size after trimming, at most.
    pub cache_cap: u64,
}

impl Default for GcRequest {
    fn default() -> Self {
        GcRequest { dry_run: false, job_age: DEFAULT_JOB_AGE, cache_cap: DEFAULT_CACHE_CAP }
    }
}

/// One thing removed (or, in a dry run, to be removed), or kept with the reason.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct GcItem {
    /// `job_dir` or `cache_file`.
    pub kind: &'static str,
    pub path: PathBuf,
    pub bytes: u64,
    /// The job of a job folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// Why it stays (kept items only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What `falcon gc` did.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct GcReport {
    pub dry_run: bool,
    /// Removed, or in a dry run to be removed.
    pub removed: Vec<GcItem>,
    /// Bytes of `removed`.
    pub bytes: u64,
    /// Job folders that stay, with the reason.
    pub kept: Vec<GcItem>,
    /// The profile cache: bytes before and after, and the cap.
    pub cache: CacheUsage,
}

/// The profile cache's size around a collection.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CacheUsage {
    pub path: PathBuf,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub cap: u64,
}

/// Parses a size: bytes, or a number with `K`, `M`, `G`, `T` (powers of 1024; `KiB`, `GB`… also read).
pub fn parse_size(text: &str) -> Result<u64> {
    let bad = || AppError::usage(format!("invalid size `{text}` (write e.g. `500M`, `10G`, `1T` or bytes)"));
    let t = text.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(t.len());
    let (number, unit) = t.split_at(digits_end);
    let number: f64 = number.parse().map_err(|_| bad())?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().trim_end_matches("ib").trim_end_matches('b') {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => return Err(bad()),
    };
    let bytes = number * scale as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(bad());
    }
    Ok(bytes as u64)
}

/// Parses `--older-than`: a duration (`90s`, `12h`, `7d`), or zero (`0`, `0s`) for "however recently".
pub fn parse_age(text: &str) -> Result<Duration> {
    let t = text.trim();
    if !t.is_empty() && t.trim_end_matches(['s', 'm', 'h', 'd']).chars().all(|c| c == '0') && t.starts_with('0') {
        return Ok(Duration::ZERO);
    }
    falcon_core::spec::parse_duration(t).map(Duration::from_secs).map_err(AppError::usage)
}

pub(crate) async fn gc(cx: &Ctx, request: &GcRequest) -> Result<GcReport> {
    let config = cx.config()?;
    let cache_dir = config.data_dir.join("cache").join("profiles");
    let dirs = cx.exp().await?.collect_job_dirs(request.job_age, request.dry_run).await?;
    let mut removed = Vec::new();
    let mut kept = Vec::new();
    for d in dirs {
        let item = GcItem {
            kind: "job_dir",
            path: d.path,
            bytes: d.bytes,
            job: d.job.map(|j| j.to_string()),
            reason: d.kept_because,
        };
        if d.remove {
            removed.push(item);
        } else {
            kept.push(item);
        }
    }
    let (cache, trimmed) = trim_cache(&cache_dir, request.cache_cap, request.dry_run)?;
    removed.extend(trimmed);
    let bytes = removed.iter().map(|i| i.bytes).sum();
    Ok(GcReport { dry_run: request.dry_run, removed, bytes, kept, cache })
}

/// Removes the least recently used files under `dir` until it holds at most `cap` bytes.
fn trim_cache(dir: &Path, cap: u64, dry_run: bool) -> Result<(CacheUsage, Vec<GcItem>)> {
    let mut files = Vec::new();
    walk(dir, &mut files);
    let before: u64 = files.iter().map(|f| f.1).sum();
    // Oldest use first.
    files.sort_by_key(|f| f.2);
    let now = SystemTime::now();
    let mut total = before;
    let mut removed = Vec::new();
    for (path, bytes, used) in files {
        if total <= cap {
            break;
        }
        if now.duration_since(used).unwrap_or_default() < CACHE_IN_USE {
            continue;
        }
        if !dry_run {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!("gc: removing {} failed: {e}", path.display());
                continue;
            }
        }
        total -= bytes;
        removed.push(GcItem { kind: "cache_file", path, bytes, job: None, reason: None });
    }
    if !dry_run && !removed.is_empty() {
        remove_empty_dirs(dir);
    }
    Ok((CacheUsage { path: dir.to_path_buf(), bytes_before: before, bytes_after: total, cap }, removed))
}

/// Every regular file under `dir`: (path, bytes, last use). Links are neither followed nor counted.
fn walk(dir: &Path, out: &mut Vec<(PathBuf, u64, SystemTime)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let Ok(meta) = entry.path().symlink_metadata() else { continue };
        if meta.is_dir() {
            walk(&entry.path(), out);
        } else if meta.is_file() {
            let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            let used = meta.accessed().map_or(modified, |a| a.max(modified));
            out.push((entry.path(), meta.len(), used));
        }
    }
}

/// Removes the empty folders below `dir` (not `dir` itself).
fn remove_empty_dirs(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            remove_empty_dirs(&path);
            // Fails, harmlessly, when something is left in it.
            let _ = std::fs::remove_dir(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("512").unwrap(), 512);
        assert_eq!(parse_size("10G").unwrap(), 10 << 30);
        assert_eq!(parse_size("1.5KiB").unwrap(), 1536);
        assert_eq!(parse_size("2 MB").unwrap(), 2 << 20);
        assert!(parse_size("ten").is_err());
        assert!(parse_size("5X").is_err());
    }

    #[test]
    fn ages_are_durations_or_zero() {
        assert_eq!(parse_age("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_age("0s").unwrap(), Duration::ZERO);
        assert_eq!(parse_age("7d").unwrap(), Duration::from_secs(7 * 86_400));
        assert!(parse_age("soon").is_err());
        assert!(parse_age("").is_err());
    }

    #[test]
    fn the_cache_is_trimmed_least_recently_used_first_and_keeps_files_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let old = SystemTime::now() - Duration::from_secs(3600);
        let write = |name: &str, bytes: usize, at: SystemTime| {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, vec![0u8; bytes]).unwrap();
            let f = std::fs::File::options().write(true).open(&path).unwrap();
            f.set_times(std::fs::FileTimes::new().set_accessed(at).set_modified(at)).unwrap();
        };
        write("e-1/a.xplane.pb", 100, old - Duration::from_secs(100));
        write("e-2/b.xplane.pb", 100, old);
        write("e-3/c.xplane.pb", 100, SystemTime::now());
        let (usage, dry) = trim_cache(dir.path(), 150, true).unwrap();
        assert_eq!((usage.bytes_before, usage.bytes_after), (300, 100));
        assert_eq!(dry.len(), 2);
        assert!(dir.path().join("e-1/a.xplane.pb").exists(), "a dry run removes nothing");
        let (usage, removed) = trim_cache(dir.path(), 150, false).unwrap();
        assert_eq!(removed, dry, "the dry run said what the real one did");
        assert_eq!(usage.bytes_after, 100);
        assert!(!dir.path().join("e-1").exists() && !dir.path().join("e-2").exists());
        assert!(dir.path().join("e-3/c.xplane.pb").exists(), "the most recently used stays");
        let (_, removed) = trim_cache(dir.path(), 0, false).unwrap();
        assert!(removed.is_empty(), "a file used in the last minute is never removed");
    }
}
