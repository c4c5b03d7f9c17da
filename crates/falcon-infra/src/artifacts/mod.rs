//! The artifact store: large immutable files on Apache OpenDAL (local directory, GCS, S3, memory).
//!
//! Every write is atomic — a reader sees the whole object or none of it: the local backend stages into
//! `.falcon-staging/` and renames; GCS finalizes a resumable upload in one request; memory swaps the value.
//! Writes are immutable by default ([`PutMode::Create`]): a second put of the same key is refused. Each put
//! returns the size and SHA-256 it wrote, which the metadata store records and [`ArtifactStore::get_verified`]
//! checks.

mod key;
mod location;

pub use key::{validate_key, validate_prefix};
pub use location::ArtifactLocation;

use crate::error::{InfraError, Result};
use bytes::Bytes;
use falcon_core::config::{GcsConfig, S3Config};
use futures::TryStreamExt;
use opendal::{ErrorKind as DalKind, Operator};
use sha2::{Digest, Sha256};
use std::path::Path;
use tokio::io::{AsyncRead, AsyncReadExt};

const READ_CHUNK: usize = 1024 * 1024;

/// Whether a put may replace an existing object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PutMode {
    /// Refuse when the key exists (artifacts are immutable). Streams of any size.
    #[default]
    Create,
    /// Replace an existing object (for snapshots that grow, such as logs of a running job). Streamed like
    /// `Create`; readers see the old object or the new one whole.
    Overwrite,
}

/// What a put wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Key inside the store.
    pub key: String,
    /// Full URI.
    pub uri: String,
    /// Bytes written.
    pub size: u64,
    /// Hex SHA-256 of the bytes written.
    pub sha256: String,
    /// MIME type recorded.
    pub content_type: String,
}

/// What the backend says about an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectMeta {
    /// Key inside the store.
    pub key: String,
    /// Full URI.
    pub uri: String,
    /// Size in bytes.
    pub size: u64,
    /// The backend's entity tag, where it has one (GCS, S3).
    pub etag: Option<String>,
    /// Last modification time as the backend reports it.
    pub last_modified: Option<String>,
}

/// The artifact store. Cheap to clone.
#[derive(Clone, Debug)]
pub struct ArtifactStore {
    op: Operator,
    location: ArtifactLocation,
    base_uri: String,
}

impl ArtifactStore {
    /// Opens the store at `location` (a path, `file://`, `gs://`, `s3://` or `memory://`).
    pub fn open(location: &str, gcs: &GcsConfig, s3: &S3Config) -> Result<Self> {
        let location = ArtifactLocation::parse(location)?;
        let op = location.operator(gcs, s3)?;
        let base_uri = location.base_uri();
        Ok(ArtifactStore { op, location, base_uri })
    }

    /// An in-memory store (tests).
    pub fn memory() -> Self {
        Self::open("memory://", &GcsConfig::default(), &S3Config::default()).expect("the memory backend always opens")
    }

    /// Where the store is.
    pub fn location(&self) -> &ArtifactLocation {
        &self.location
    }

    /// The full URI of a key.
    pub fn uri(&self, key: &str) -> String {
        if self.base_uri.ends_with('/') {
            format!("{}{key}", self.base_uri)
        } else {
            format!("{}/{key}", self.base_uri)
        }
    }

    /// The key of a URI inside this store, if it is one.
    pub fn key_of(&self, uri: &str) -> Option<String> {
        let rest = uri.strip_prefix(&self.base_uri)?;
        let key = if self.base_uri.ends_with('/') { rest } else { rest.strip_prefix('/')? };
        validate_key(key).ok().map(|_| key.to_string())
    }

    /// Writes `data` under `key`.
    pub async fn put_bytes(&self, key: &str, data: impl Into<Bytes>, mode: PutMode) -> Result<ObjectInfo> {
        let data: Bytes = data.into();
        self.put_reader(key, &data[..], mode).await
    }

    /// Streams a local file into `key`.
    pub async fn put_file(&self, key: &str, path: &Path, mode: PutMode) -> Result<ObjectInfo> {
        let file = tokio::fs::File::open(path).await.map_err(|source| InfraError::Io {
            operation: "reading",
            path: path.display().to_string(),
            source,
        })?;
        self.put_reader(key, file, mode).await.map_err(|e| match e {
            InfraError::Io { operation, source, .. } => {
                InfraError::Io { operation, path: path.display().to_string(), source }
            }
            other => other,
        })
    }

    /// Streams any reader into `key`, hashing as it goes. On any failure the partial upload is aborted and no
    /// object appears.
    pub async fn put_reader<R: AsyncRead + Unpin>(
        &self,
        key: &str,
        mut reader: R,
        mode: PutMode,
    ) -> Result<ObjectInfo> {
        validate_key(key)?;
        let uri = self.uri(key);
        let content_type = falcon_core::artifact::content_type_for(key).to_string();
        let storage = |operation, source| storage_error(operation, &uri, source);
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        let mut buf = vec![0u8; READ_CHUNK];
        if mode == PutMode::Create && self.exists(key).await? {
            // The write itself is conditional (`if_not_exists`), which GCS and the local backend enforce; the
            // check first gives the same answer on emulators that ignore the precondition.
            return Err(InfraError::AlreadyExists { uri });
        }
        let mut writer = self
            .op
            .writer_with(key)
            .if_not_exists(mode == PutMode::Create)
            .content_type(&content_type)
            .await
            .map_err(|e| storage("write", e))?;
        let streamed: Result<()> = async {
            loop {
                let n = reader.read(&mut buf).await.map_err(|source| InfraError::Io {
                    operation: "reading",
                    path: "<input>".into(),
                    source,
                })?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
                size += n as u64;
                writer.write(Bytes::copy_from_slice(&buf[..n])).await.map_err(|e| storage("write", e))?;
            }
            writer.close().await.map_err(|e| storage("write", e))?;
            Ok(())
        }
        .await;
        if let Err(e) = streamed {
            let _ = writer.abort().await;
            return Err(e);
        }
        Ok(ObjectInfo { key: key.to_string(), uri, size, sha256: hex::encode(hasher.finalize()), content_type })
    }

    /// Reads a whole object.
    pub async fn get(&self, key: &str) -> Result<Bytes> {
        validate_key(key)?;
        let buffer = self.op.read(key).await.map_err(|e| storage_error("read", &self.uri(key), e))?;
        Ok(buffer.to_bytes())
    }

    /// Reads the bytes `range` of an object (a range past its end reads what there is: nothing when it starts
    /// past the end). For streaming large objects and reading logs from an offset.
    pub async fn get_range(&self, key: &str, range: std::ops::Range<u64>) -> Result<Bytes> {
        validate_key(key)?;
        if range.start >= range.end {
            return Ok(Bytes::new());
        }
        let size = self.stat(key).await?.size;
        let end = range.end.min(size);
        if range.start >= end {
            return Ok(Bytes::new());
        }
        let buffer = self
            .op
            .read_with(key)
            .range(range.start..end)
            .await
            .map_err(|e| storage_error("read", &self.uri(key), e))?;
        Ok(buffer.to_bytes())
    }

    /// Reads a whole object and checks it against the recorded size and SHA-256.
    pub async fn get_verified(&self, key: &str, size: u64, sha256: &str) -> Result<Bytes> {
        let data = self.get(key).await?;
        let uri = self.uri(key);
        if data.len() as u64 != size {
            return Err(InfraError::Integrity {
                uri,
                expected: format!("{size} bytes"),
                found: format!("{} bytes", data.len()),
            });
        }
        let found = hex::encode(Sha256::digest(&data));
        if !found.eq_ignore_ascii_case(sha256) {
            return Err(InfraError::Integrity {
                uri,
                expected: format!("sha256 {sha256}"),
                found: format!("sha256 {found}"),
            });
        }
        Ok(data)
    }

    /// The size and SHA-256 of a stored object, read as a stream (never whole in memory): what a put of it
    /// returned, for an object whose put was not recorded (its writer stopped between the two).
    pub async fn digest(&self, key: &str) -> Result<ObjectInfo> {
        self.read_hashed(key, &mut tokio::io::sink(), "<digest>").await
    }

    /// Streams an object into a local file (written beside it and renamed, so the file is whole or absent).
    /// Returns its size and SHA-256.
    pub async fn get_to_file(&self, key: &str, path: &Path) -> Result<ObjectInfo> {
        let io = |source| InfraError::Io { operation: "writing", path: path.display().to_string(), source };
        let partial = path.with_extension(format!("partial-{}", uuid::Uuid::new_v4().simple()));
        let mut file = tokio::fs::File::create(&partial).await.map_err(io)?;
        let copied = async {
            let info = self.read_hashed(key, &mut file, &path.display().to_string()).await?;
            file.sync_all().await.map_err(io)?;
            Ok(info)
        }
        .await;
        let placed = match copied {
            Ok(info) => tokio::fs::rename(&partial, path).await.map(|()| info).map_err(io),
            Err(e) => Err(e),
        };
        if placed.is_err() {
            let _ = tokio::fs::remove_file(&partial).await;
        }
        placed
    }

    /// Streams an object into `sink` (named `sink_name` in errors), hashing it on the way.
    async fn read_hashed<W: tokio::io::AsyncWrite + Unpin>(
        &self,
        key: &str,
        sink: &mut W,
        sink_name: &str,
    ) -> Result<ObjectInfo> {
        use tokio::io::AsyncWriteExt;
        validate_key(key)?;
        let uri = self.uri(key);
        let reader = self.op.reader(key).await.map_err(|e| storage_error("read", &uri, e))?;
        let mut stream = reader.into_bytes_stream(..).await.map_err(|e| storage_error("read", &uri, e))?;
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        while let Some(chunk) = stream.try_next().await.map_err(|source| InfraError::Io {
            operation: "reading",
            path: uri.clone(),
            source,
        })? {
            hasher.update(&chunk);
            size += chunk.len() as u64;
            sink.write_all(&chunk).await.map_err(|source| InfraError::Io {
                operation: "writing",
                path: sink_name.to_string(),
                source,
            })?;
        }
        Ok(ObjectInfo {
            key: key.to_string(),
            uri,
            size,
            sha256: hex::encode(hasher.finalize()),
            content_type: falcon_core::artifact::content_type_for(key).to_string(),
        })
    }

    /// What the backend knows of an object.
    pub async fn stat(&self, key: &str) -> Result<ObjectMeta> {
        validate_key(key)?;
        let meta = self.op.stat(key).await.map_err(|e| storage_error("stat", &self.uri(key), e))?;
        Ok(self.object_meta(key, &meta))
    }

    /// Whether an object exists.
    pub async fn exists(&self, key: &str) -> Result<bool> {
        match self.stat(key).await {
            Ok(_) => Ok(true),
            Err(InfraError::ObjectNotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Every object under a folder prefix (`""` for all), recursively, sorted by key.
    pub async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        validate_prefix(prefix)?;
        let folder = key::as_folder(prefix);
        let uri = self.uri(&folder);
        let lister = self.op.lister_with(&folder).recursive(true).await;
        let mut lister = match lister {
            Ok(l) => l,
            Err(e) if e.kind() == DalKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(storage_error("list", &uri, e)),
        };
        let mut out = Vec::new();
        while let Some(entry) = lister.try_next().await.map_err(|e| storage_error("list", &uri, e))? {
            let path = entry.path();
            if entry.metadata().is_dir() || path.starts_with(key::STAGING_DIR) {
                continue;
            }
            let key = path.trim_start_matches('/').to_string();
            // Some backends (the local one) list names only; ask for the rest.
            let meta = if entry.metadata().content_length() == 0 {
                self.op.stat(&key).await.map_err(|e| storage_error("stat", &self.uri(&key), e))?
            } else {
                entry.metadata().clone()
            };
            out.push(self.object_meta(&key, &meta));
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    /// Deletes one object (deleting a missing one is not an error).
    pub async fn delete(&self, key: &str) -> Result<()> {
        validate_key(key)?;
        self.op.delete(key).await.map_err(|e| storage_error("delete", &self.uri(key), e))
    }

    /// Deletes every object under a folder prefix; returns how many. An empty prefix is refused (it would
    /// delete the whole store).
    pub async fn delete_prefix(&self, prefix: &str) -> Result<usize> {
        if prefix.trim_matches('/').is_empty() {
            return Err(InfraError::InvalidKey { key: prefix.into(), reason: "refusing to delete the whole store" });
        }
        let objects = self.list(prefix).await?;
        for object in &objects {
            self.delete(&object.key).await?;
        }
        Ok(objects.len())
    }

    fn object_meta(&self, key: &str, meta: &opendal::Metadata) -> ObjectMeta {
        ObjectMeta {
            key: key.to_string(),
            uri: self.uri(key),
            size: meta.content_length(),
            etag: meta.etag().map(|e| e.trim_matches('"').to_string()),
            last_modified: meta.last_modified().map(|t| t.to_string()),
        }
    }
}

fn storage_error(operation: &'static str, uri: &str, source: opendal::Error) -> InfraError {
    match source.kind() {
        DalKind::NotFound => InfraError::ObjectNotFound { uri: uri.to_string() },
        DalKind::AlreadyExists | DalKind::ConditionNotMatch if operation == "write" => {
            InfraError::AlreadyExists { uri: uri.to_string() }
        }
        _ => InfraError::Storage { operation, uri: uri.to_string(), source: Box::new(source) },
    }
}
