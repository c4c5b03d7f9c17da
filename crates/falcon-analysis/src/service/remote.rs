//! Profiles under a `gs://` / `s3://` URI: the newest run's hosts are listed, then copied into the cache
//! (`<data_dir>/cache/profiles/uri/<scheme>/<bucket>/<key>`). [`Analysis::fetch_uri`] copies them all;
//! an analysis streams them instead ([`Analysis::analyze_uri`]): host i+1 downloads while host i is analysed,
//! so a run of many hosts takes about the longer of the two and never waits for the whole download first. A
//! host whose download fails is named in the report and the others are analysed.

use std::path::{Path, PathBuf};

use falcon_infra::ArtifactStore;

use super::{download_from, run_of, Analysis, ResolvedProfile};
use crate::error::{AnalysisError, Result};
use crate::input::{host_of, HostFile, XPLANE_SUFFIX};
use crate::profile::partial::{analyze_shard, shard_range, ShardPartial};
use crate::profile::{analyze_hosts, AnalyzeOptions, FailedHost, HostInput, HostProgress, ProfileReport};

/// The profile objects of one run under a URI.
struct RemoteRun {
    store: ArtifactStore,
    /// Object keys, one per host, in host order.
    keys: Vec<String>,
    /// Where they are copied.
    cache: PathBuf,
}

impl RemoteRun {
    fn local(&self, key: &str) -> Result<PathBuf> {
        cache_path(&self.cache, key)
    }
}

/// Where object `key` is copied under `cache`, never outside it: a bucket may hold an object named
/// `a/../../x.xplane.pb`, or one starting with `/`.
fn cache_path(cache: &Path, key: &str) -> Result<PathBuf> {
    if key.split('/').any(|part| part.is_empty() || part == "." || part == "..") {
        return Err(AnalysisError::Invalid(format!(
            "object `{key}`: a name with an empty, `.` or `..` part is not copied (it would leave the cache)"
        )));
    }
    Ok(cache.join(key))
}

impl Analysis {
    /// The newest run's profile objects under `uri` (one object, or a folder), optionally only `host`'s.
    async fn remote_run(&self, uri: &str, host: Option<&str>) -> Result<RemoteRun> {
        let (scheme, rest) =
            uri.split_once("://").ok_or_else(|| AnalysisError::Invalid(format!("{uri}: not a URI")))?;
        let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(AnalysisError::Invalid(format!("{uri}: no bucket name")));
        }
        let store = ArtifactStore::open(&format!("{scheme}://{bucket}"), &self.config.gcs, &self.config.s3)?;
        let key = key.trim_end_matches('/');
        let mut keys: Vec<String> = if key.ends_with(XPLANE_SUFFIX) {
            vec![key.to_string()]
        } else {
            let listed = store.list(key).await?;
            let profiles: Vec<String> =
                listed.into_iter().map(|m| m.key).filter(|k| k.ends_with(XPLANE_SUFFIX)).collect();
            let Some(run) = profiles.iter().map(|k| run_of(k)).max() else {
                return Err(AnalysisError::NotFound(format!("{uri}: no `*{XPLANE_SUFFIX}` object under it")));
            };
            profiles.into_iter().filter(|k| run_of(k) == run).collect()
        };
        keys.retain(|k| host.is_none_or(|h| host_of(Path::new(k)) == h));
        if keys.is_empty() {
            return Err(AnalysisError::NotFound(format!("{uri}: no profile of host `{}`", host.unwrap_or(""))));
        }
        keys.sort_by_key(|k| host_of(Path::new(k)));
        Ok(RemoteRun { store, keys, cache: self.cache_dir().join("uri").join(scheme).join(bucket) })
    }

    /// Copies the profile files under a `gs://` / `s3://` URI (one object, or the newest run under a folder)
    /// into the cache.
    pub async fn fetch_uri(&self, uri: &str, host: Option<&str>) -> Result<ResolvedProfile> {
        let run = self.remote_run(uri, host).await?;
        let mut files = Vec::new();
        let mut downloaded = 0u64;
        for key in &run.keys {
            let local = run.local(key)?;
            downloaded += download_from(&run.store, key, &local, None).await?;
            files.push(HostFile::cached(host_of(&local), local));
        }
        Ok(ResolvedProfile {
            input: uri.to_string(),
            experiment: None,
            remote: Some(uri.to_string()),
            files,
            downloaded_bytes: downloaded,
        })
    }

    /// Analyses the profile under a URI while it downloads: one host ahead, each host analysed as soon as it
    /// is on disk (see the module docs). [`AnalyzeOptions::progress`] is told each host as it is downloaded.
    pub(super) async fn analyze_uri(
        &self,
        uri: &str,
        host: Option<&str>,
        options: &AnalyzeOptions,
    ) -> Result<(ResolvedProfile, ProfileReport)> {
        let run = self.remote_run(uri, host).await?;
        let total = run.keys.len();
        let opts = options.clone();
        let (downloaded, report) =
            stream_hosts(&run, &run.keys, &options.progress, move |hosts| analyze_hosts(hosts, total, &opts)).await?;
        let report = report?;
        let resolved = ResolvedProfile {
            input: uri.to_string(),
            experiment: None,
            remote: Some(uri.to_string()),
            files: report.files.clone(),
            downloaded_bytes: downloaded,
        };
        Ok((resolved, report))
    }

    /// The hosts of the newest run under `uri`, in order, and the folder they are copied under.
    pub(super) async fn remote_hosts(&self, uri: &str) -> Result<(Vec<String>, PathBuf)> {
        let run = self.remote_run(uri, None).await?;
        Ok((run.keys.iter().map(|k| host_of(Path::new(k))).collect(), run.cache))
    }

    /// Shard `shard` of `shards` of the run under `uri`: only its hosts are downloaded, streamed into the analysis.
    pub(super) async fn remote_shard(
        &self,
        uri: &str,
        shard: usize,
        shards: usize,
        options: &AnalyzeOptions,
    ) -> Result<ShardPartial> {
        let run = self.remote_run(uri, None).await?;
        let run_hosts: Vec<String> = run.keys.iter().map(|k| host_of(Path::new(k))).collect();
        let mine = &run.keys[shard_range(run.keys.len(), shard, shards)];
        let opts = options.clone();
        let hosts = run_hosts.clone();
        let (_, partial) = stream_hosts(&run, mine, &options.progress, move |inputs| {
            analyze_shard(hosts, inputs, shard, shards, &opts)
        })
        .await?;
        let mut partial = partial?;
        partial.root = run.cache.clone();
        Ok(partial)
    }
}

/// Downloads `keys` of `run` one host ahead of `analyse`, which takes them as they arrive (on a blocking thread).
/// A host whose download fails is handed on as failed when the run has more than one host; the bytes downloaded
/// and `analyse`'s answer come back.
async fn stream_hosts<T: Send + 'static>(
    run: &RemoteRun,
    keys: &[String],
    progress: &HostProgress,
    analyse: impl FnOnce(Box<dyn Iterator<Item = HostInput> + Send>) -> T + Send + 'static,
) -> Result<(u64, T)> {
    let total = run.keys.len();
    let count = keys.len();
    // At most one downloaded host waits for the analysis: the download runs one host ahead.
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<HostInput>(1);
    let download = async {
        let mut downloaded = 0u64;
        for (done, key) in keys.iter().enumerate() {
            let host = host_of(Path::new(key));
            let fetched = match run.local(key) {
                Ok(local) => download_from(&run.store, key, &local, None).await.map(|bytes| (bytes, local)),
                Err(e) => Err(e),
            };
            let input = match fetched {
                Ok((bytes, local)) => {
                    downloaded += bytes;
                    Ok(HostFile::cached(host, local))
                }
                Err(e) if total > 1 => Err(FailedHost { host, path: PathBuf::from(key), error: e.to_string() }),
                Err(e) => return Err(e),
            };
            progress.report(done + 1, count);
            if sender.send(input).await.is_err() {
                break; // the analysis stopped (an error): it has its answer
            }
        }
        drop(sender);
        Ok(downloaded)
    };
    let analysis =
        tokio::task::spawn_blocking(move || analyse(Box::new(std::iter::from_fn(move || receiver.blocking_recv()))));
    let (downloaded, answer) = tokio::join!(download, analysis);
    // A download that stops the run (the only host failed) is the answer, not the analysis of no hosts it left.
    let downloaded = downloaded?;
    let answer = answer.map_err(|e| AnalysisError::Io(format!("analysis task failed: {e}")))?;
    Ok((downloaded, answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_names_stay_inside_the_cache() {
        let cache = Path::new("/c");
        assert_eq!(
            cache_path(cache, "run/plugins/profile/r/h.xplane.pb").unwrap(),
            cache.join("run/plugins/profile/r/h.xplane.pb")
        );
        for bad in ["a/../../etc/h.xplane.pb", "/abs/h.xplane.pb", "a//h.xplane.pb", "./h.xplane.pb", "..", ""] {
            let err = cache_path(cache, bad).unwrap_err().to_string();
            assert!(err.contains("leave the cache"), "{bad}: {err}");
        }
    }
}
