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
use crate::profile::partial::{self, ShardPartial};
use crate::profile::{AnalyzeOptions, ProfileReport, Tool};

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

    /// The run's report from every shard's partials: equal to [`Analysis::analyze`] of `input` in one process.
    /// The first host read is opened here again when the overview or the memory profile is asked for.
    pub async fn merge_shards(
        &self,
        input: &str,
        mut shards: Vec<ShardPartial>,
        options: &AnalyzeOptions,
    ) -> Result<(ResolvedProfile, ProfileReport)> {
        let root = if is_uri(input) { self.remote_hosts(input).await?.1 } else { PathBuf::from(input) };
        for shard in &mut shards {
            shard.rebase(&root);
        }
        shards.sort_by_key(|s| s.shard);
        let wanted =
            options.tools.is_empty() || options.tools.iter().any(|t| matches!(t, Tool::Overview | Tool::Memory));
        let first = match shards.iter().find_map(ShardPartial::first_read) {
            Some(file) if wanted => Some(self.open_host(input, &file.host).await?),
            _ => None,
        };
        let opts = options.clone();
        let report = tokio::task::spawn_blocking(move || {
            partial::merge_shards(
                shards,
                |want| first.ok_or_else(|| AnalysisError::NotFound(format!("host `{}`: not opened", want.host))),
                &opts,
            )
        })
        .await
        .map_err(|e| AnalysisError::Io(format!("analysis task failed: {e}")))??;
        let resolved = ResolvedProfile {
            input: input.to_string(),
            experiment: None,
            remote: is_uri(input).then(|| input.to_string()),
            files: report.files.clone(),
            downloaded_bytes: 0,
        };
        Ok((resolved, report))
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
