//! Copying a job's logs and local artifact folder into the artifact store, incrementally.

use crate::error::Result;
use falcon_infra::{ArtifactStore, PutMode};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// A file is copied while the job runs only once it has not changed for this long (it is probably complete);
/// at the end everything is copied.
const SETTLE: Duration = Duration::from_secs(2);

/// Remembers what was copied, so each tick copies only new or changed files.
pub(crate) struct ArtifactSync {
    store: ArtifactStore,
    copied: Mutex<HashMap<PathBuf, (u64, SystemTime)>>,
    logs: Mutex<HashMap<String, usize>>,
}

impl ArtifactSync {
    pub(crate) fn new(store: ArtifactStore) -> Self {
        ArtifactSync { store, copied: Mutex::new(HashMap::new()), logs: Mutex::new(HashMap::new()) }
    }

    /// Replaces the stored log with the full text so far, when it grew.
    pub(crate) async fn put_log(&self, key: &str, text: Vec<u8>) -> Result<()> {
        let len = text.len();
        if self.logs.lock().expect("log map lock").get(key) == Some(&len) {
            return Ok(());
        }
        self.store.put_bytes(key, text, PutMode::Overwrite).await?;
        self.logs.lock().expect("log map lock").insert(key.to_string(), len);
        Ok(())
    }

    /// Copies new and changed files under `dir` to `<prefix>/<relative path>`.
    pub(crate) async fn upload_dir(&self, dir: &Path, prefix: &str, last: bool) -> Result<()> {
        let mut files = Vec::new();
        walk(dir, &mut files);
        files.sort();
        for path in files {
            let Ok(meta) = std::fs::metadata(&path) else { continue };
            let Ok(modified) = meta.modified() else { continue };
            let settled = SystemTime::now().duration_since(modified).unwrap_or_default() >= SETTLE;
            if !last && !settled {
                continue;
            }
            let stamp = (meta.len(), modified);
            if self.copied.lock().expect("copy map lock").get(&path) == Some(&stamp) {
                continue;
            }
            let Ok(relative) = path.strip_prefix(dir) else { continue };
            let rel = relative.to_string_lossy().replace('\\', "/");
            let key = format!("{prefix}/{rel}");
            let mode = if self.store.exists(&key).await? { PutMode::Overwrite } else { PutMode::Create };
            self.store.put_file(&key, &path, mode).await?;
            self.copied.lock().expect("copy map lock").insert(path, stamp);
        }
        Ok(())
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => walk(&path, out),
            Ok(t) if t.is_file() => out.push(path),
            _ => {}
        }
    }
}
