//! A run analysed in shards of hosts ([`crate::profile::partial`]): what one shard's job computes from the input
//! as the job's machine sees it, and the merge of every shard's partials into the run's report. Which jobs run
//! and where is not decided here: the application layer has EXP submit them; this only computes.
//!
//! Inputs are a local file or folder and a `gs://` / `s3://` URI (each job downloads only its hosts); an
//! experiment's profile is analysed in one process.

use std::path::{Path, PathBuf};

use super::{Analysis, ResolvedProfile};
use crate::error::{AnalysisError, Result};
use crate::input::{find_profiles, HostFile};
use crate::profile::partial::{self, decode_shard, ShardMerge, ShardPartial};
use crate::profile::{AnalyzeOptions, ProfileReport};

fn is_uri(input: &str) -> bool {
    input.starts_with("gs://") || input.starts_with("s3://")
}

impl Analysis {
    /// The hosts of the run `input` names, in the order every shard and the merge use.
    pub async fn run_hosts(&self, input: &str) -> Result<Vec<String>> {
        if is_uri(input) {
            return Ok(self.remote_hosts(input).await?.0);
        }
        Ok(local_run(input)?.iter().map(|f| f.host.clone()).collect())
    }

    /// The partials of shard `shard` (0-based) of `shards` of the run `input` names.
    pub async fn analyze_shard(
        &self,
        input: &str,
        shard: usize,
        shards: usize,
        options: &AnalyzeOptions,
    ) -> Result<ShardPartial> {
        if shards == 0 || shard >= shards {
            return Err(AnalysisError::Invalid(format!("shard {shard} of {shards}: not a shard (0 ≤ K < N)")));
        }
        if is_uri(input) {
            return self.remote_shard(input, shard, shards, options).await;
        }
        let files = local_run(input)?;
        let run_hosts: Vec<String> = files.iter().map(|f| f.host.clone()).collect();
        let mine: Vec<HostFile> = files[partial::shard_range(files.len(), shard, shards)].to_vec();
        let opts = options.clone();
        let mut answer = tokio::task::spawn_blocking(move || {
            partial::analyze_shard(run_hosts, mine.into_iter().map(Ok), shard, shards, &opts)
        })
        .await
        .map_err(|e| AnalysisError::Io(format!("analysis task failed: {e}")))??;
        answer.root = PathBuf::from(input);
        Ok(answer)
    }

    /// A merge of the run `input` names from its `shards` shards' partials, taken one by one
    /// ([`RunMerge::add`]); its report equals [`Analysis::analyze`] of `input` in one process.
    pub async fn merge_begin<'a>(
        &'a self,
        input: &str,
        shards: usize,
        options: &'a AnalyzeOptions,
    ) -> Result<RunMerge<'a>> {
        let root = if is_uri(input) { self.remote_hosts(input).await?.1 } else { PathBuf::from(input) };
        Ok(RunMerge { analysis: self, input: input.to_string(), root, merge: ShardMerge::new(shards, options) })
    }

    /// One host's file of the run, copied into the cache when remote.
    async fn open_host(&self, input: &str, host: &str) -> Result<HostFile> {
        let files = if is_uri(input) { self.fetch_uri(input, Some(host)).await?.files } else { local_run(input)? };
        files.into_iter().find(|f| f.host == host).ok_or_else(|| {
            AnalysisError::NotFound(format!("{input}: host `{host}` of the shards' partials is not in the run"))
        })
    }
}

/// The hosts of a local run; an experiment id is refused by name (its profile is analysed in one process).
fn local_run(input: &str) -> Result<Vec<HostFile>> {
    let path = Path::new(input);
    if !path.exists() && (input.starts_with("e-") || !input.is_empty() && input.bytes().all(|b| b.is_ascii_digit())) {
        return Err(AnalysisError::Invalid(format!(
            "{input}: an experiment's profile is analysed in one process; shards read a local folder or a gs:// / \
             s3:// URI"
        )));
    }
    find_profiles(path, None)
}

/// A run's merge in progress ([`Analysis::merge_begin`]): one shard's partials in memory at a time.
pub struct RunMerge<'a> {
    analysis: &'a Analysis,
    input: String,
    /// Where the run's files are here: each shard's paths are put under it.
    root: PathBuf,
    merge: ShardMerge<'a>,
}

impl RunMerge<'_> {
    /// The next shard's partials, as the bytes its job wrote (`what` names them in errors).
    pub async fn add(&mut self, bytes: &[u8], what: &str) -> Result<()> {
        cpu(|| {
            let mut partial = decode_shard(bytes, what)?;
            partial.rebase(&self.root);
            self.merge.add(partial)
        })
    }

    /// The run's report; the first host read is opened again when the overview or the memory profile is asked for.
    pub async fn finish(self) -> Result<(ResolvedProfile, ProfileReport)> {
        let first = match self.merge.first_read() {
            Some(file) if self.merge.needs_first_capture() => {
                let host = file.host.clone();
                Some(self.analysis.open_host(&self.input, &host).await?)
            }
            _ => None,
        };
        let merge = self.merge;
        let report = cpu(move || merge.finish(first))?;
        let input = self.input;
        let remote = is_uri(&input).then(|| input.clone());
        let resolved =
            ResolvedProfile { input, experiment: None, remote, files: report.files.clone(), downloaded_bytes: 0 };
        Ok((resolved, report))
    }
}

/// CPU-bound work from async code: on a multi-threaded runtime the worker thread is handed over for its length
/// (other tasks move to other threads); elsewhere it simply runs.
fn cpu<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(work),
        _ => work(),
    }
}
