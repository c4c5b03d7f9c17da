//! Where artifacts live: parsing `--artifacts` values into a backend and building its OpenDAL operator.

use crate::error::{InfraError, Result};
use falcon_core::config::{GcsConfig, S3Config};
use opendal::layers::{RetryLayer, TimeoutLayer};
use opendal::{services, Operator};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A parsed artifact location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArtifactLocation {
    /// A local directory (a plain path or `file://PATH`).
    Local(PathBuf),
    /// `gs://BUCKET/PREFIX`.
    Gcs {
        /// Bucket.
        bucket: String,
        /// Prefix inside the bucket (no leading or trailing `/`; may be empty).
        prefix: String,
    },
    /// `s3://BUCKET/PREFIX`.
    S3 {
        /// Bucket.
        bucket: String,
        /// Prefix inside the bucket.
        prefix: String,
    },
    /// `memory://` — process memory, for tests: a new empty store each time it is opened. `memory://NAME`: the
    /// store of that name, shared by every opening in the process (an application's EXP and analysis open the
    /// store each on its own and must see one store).
    Memory {
        /// Empty for a store of its own.
        name: String,
    },
}

impl ArtifactLocation {
    /// Parses a path or URI.
    pub fn parse(location: &str) -> Result<Self> {
        let bad =
            |reason: &str| InfraError::BadArtifactLocation { location: location.to_string(), reason: reason.into() };
        if location.trim().is_empty() {
            return Err(bad("it is empty; give a directory, gs://BUCKET/PREFIX or s3://BUCKET/PREFIX"));
        }
        let Some((scheme, rest)) = location.split_once("://") else {
            return Ok(ArtifactLocation::Local(PathBuf::from(location)));
        };
        let bucket_and_prefix = |rest: &str| -> Result<(String, String)> {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            let valid = !bucket.is_empty()
                && bucket.len() <= 222
                && bucket.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b));
            if !valid {
                return Err(bad("the bucket name must be non-empty: lowercase letters, digits, `-`, `_`, `.`"));
            }
            let prefix = prefix.trim_matches('/').to_string();
            if !prefix.is_empty() {
                super::key::validate_prefix(&prefix).map_err(|e| bad(&format!("bad prefix: {e}")))?;
            }
            Ok((bucket.to_string(), prefix))
        };
        match scheme {
            "file" => {
                if rest.is_empty() {
                    return Err(bad("file:// needs a path"));
                }
                Ok(ArtifactLocation::Local(PathBuf::from(rest)))
            }
            "gs" => bucket_and_prefix(rest).map(|(bucket, prefix)| ArtifactLocation::Gcs { bucket, prefix }),
            "s3" => bucket_and_prefix(rest).map(|(bucket, prefix)| ArtifactLocation::S3 { bucket, prefix }),
            "memory" => {
                let name = rest.trim_matches('/');
                let valid = name.len() <= 222
                    && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b));
                if !valid {
                    return Err(bad("a memory store's name is lowercase letters, digits, `-`, `_`, `.`"));
                }
                Ok(ArtifactLocation::Memory { name: name.to_string() })
            }
            other => {
                Err(bad(&format!("unknown scheme `{other}://` (expected a path, file://, gs://, s3:// or memory://)")))
            }
        }
    }

    /// The URI of the store's root, without a trailing `/`.
    pub fn base_uri(&self) -> String {
        let join = |scheme: &str, bucket: &str, prefix: &str| {
            if prefix.is_empty() {
                format!("{scheme}://{bucket}")
            } else {
                format!("{scheme}://{bucket}/{prefix}")
            }
        };
        match self {
            ArtifactLocation::Local(dir) => format!("file://{}", absolute(dir).display()),
            ArtifactLocation::Gcs { bucket, prefix } => join("gs", bucket, prefix),
            ArtifactLocation::S3 { bucket, prefix } => join("s3", bucket, prefix),
            ArtifactLocation::Memory { name } if name.is_empty() => "memory://".to_string(),
            ArtifactLocation::Memory { name } => format!("memory://{name}"),
        }
    }

    /// Builds the OpenDAL operator for this location.
    pub(crate) fn operator(&self, gcs: &GcsConfig, s3: &S3Config) -> Result<Operator> {
        // Installs OpenDAL's HTTP transport (reqwest) once per process; needed by GCS and S3.
        opendal::install_default();
        let fail = |source: opendal::Error| InfraError::Storage {
            operation: "open",
            uri: self.base_uri(),
            source: Box::new(source),
        };
        let op = match self {
            ArtifactLocation::Local(dir) => {
                let root = absolute(dir);
                let staging = root.join(super::key::STAGING_DIR);
                std::fs::create_dir_all(&staging).map_err(|e| InfraError::Io {
                    operation: "creating",
                    path: staging.display().to_string(),
                    source: e,
                })?;
                let builder =
                    services::Fs::default().root(&root.to_string_lossy()).atomic_write_dir(&staging.to_string_lossy());
                Operator::new(builder).map_err(fail)?
            }
            ArtifactLocation::Gcs { bucket, prefix } => {
                let mut builder = services::Gcs::default().bucket(bucket).root(&format!("/{prefix}"));
                if let Some(endpoint) = &gcs.endpoint {
                    builder = builder.endpoint(endpoint);
                }
                if let Some(path) = &gcs.credential_path {
                    builder = builder.credential_path(path);
                }
                if gcs.anonymous {
                    builder = builder.skip_signature().disable_vm_metadata().disable_config_load();
                }
                Operator::new(builder).map_err(fail)?
            }
            ArtifactLocation::S3 { bucket, prefix } => {
                let mut builder = services::S3::default()
                    .bucket(bucket)
                    .root(&format!("/{prefix}"))
                    .region(s3.region.as_deref().unwrap_or("us-east-1"));
                if let Some(endpoint) = &s3.endpoint {
                    builder = builder.endpoint(endpoint);
                }
                if s3.anonymous {
                    builder = builder.skip_signature().disable_config_load().disable_ec2_metadata();
                } else {
                    match (&s3.access_key_id, &s3.secret_access_key) {
                        // Static keys go first in the credential chain (else: AWS_* environment, ~/.aws, IMDS).
                        (Some(key_id), Some(secret)) => {
                            builder = builder.access_key_id(key_id).secret_access_key(secret);
                        }
                        (None, None) => {}
                        _ => {
                            return Err(fail(opendal::Error::new(
                                opendal::ErrorKind::ConfigInvalid,
                                "[s3] access_key_id and secret_access_key must be set together",
                            )))
                        }
                    }
                }
                Operator::new(builder).map_err(fail)?
            }
            ArtifactLocation::Memory { name } if name.is_empty() => {
                Operator::new(services::Memory::default()).map_err(fail)?
            }
            ArtifactLocation::Memory { name } => {
                static NAMED: std::sync::Mutex<BTreeMap<String, Operator>> = std::sync::Mutex::new(BTreeMap::new());
                let mut named = NAMED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                match named.get(name) {
                    Some(op) => op.clone(),
                    None => {
                        let op = Operator::new(services::Memory::default()).map_err(fail)?;
                        named.insert(name.clone(), op.clone());
                        op
                    }
                }
            }
        };
        let remote = matches!(self, ArtifactLocation::Gcs { .. } | ArtifactLocation::S3 { .. });
        Ok(if remote {
            op.layer(TimeoutLayer::new().with_timeout(Duration::from_secs(60)).with_io_timeout(Duration::from_secs(30)))
                .layer(RetryLayer::new().with_max_times(3).with_min_delay(Duration::from_millis(100)).with_jitter())
        } else {
            op
        })
    }
}

fn absolute(dir: &Path) -> PathBuf {
    std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_supported_form() {
        assert_eq!(ArtifactLocation::parse("/data/arts").unwrap(), ArtifactLocation::Local("/data/arts".into()));
        assert_eq!(ArtifactLocation::parse("file:///data/arts").unwrap(), ArtifactLocation::Local("/data/arts".into()));
        assert_eq!(
            ArtifactLocation::parse("gs://my-bucket/falcon/prod/").unwrap(),
            ArtifactLocation::Gcs { bucket: "my-bucket".into(), prefix: "falcon/prod".into() }
        );
        assert_eq!(
            ArtifactLocation::parse("s3://b").unwrap(),
            ArtifactLocation::S3 { bucket: "b".into(), prefix: String::new() }
        );
        assert_eq!(ArtifactLocation::parse("memory://").unwrap(), ArtifactLocation::Memory { name: String::new() });
        assert_eq!(ArtifactLocation::parse("memory://t-1").unwrap().base_uri(), "memory://t-1");
        assert_eq!(ArtifactLocation::parse("gs://b/p").unwrap().base_uri(), "gs://b/p");
    }

    #[test]
    fn wrong_uris_say_what_is_wrong() {
        for (bad, why) in [
            ("gs://", "bucket"),
            ("gs://Bad_Bucket/x", "bucket"),
            ("gs://b/../x", "prefix"),
            ("ftp://host/x", "unknown scheme"),
            ("", "empty"),
        ] {
            let err = ArtifactLocation::parse(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
