//! Configuration: the types, the layers and their pure merge (docs/DESIGN.md §6).
//!
//! Precedence, lowest first: built-in defaults < `falcon.toml` < `FALCON_*` environment < command-line flags.
//! The interface reads the file and the environment and hands their contents here; nothing in this module
//! does I/O.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The file name `falcon init` writes and the CLI searches for.
pub const CONFIG_FILE_NAME: &str = "falcon.toml";
/// The data directory used when nothing else is configured.
pub const DEFAULT_DATA_DIR: &str = ".falcon";

/// The effective configuration every service is built from.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Config {
    /// Where local state lives (the SQLite file, the local artifact directory).
    pub data_dir: PathBuf,
    /// Metadata store URL: `sqlite://PATH` or `mysql://USER@HOST:PORT/DB`.
    pub db: String,
    /// Artifact store location: a local path, `file://PATH`, `gs://BUCKET/PREFIX`, `s3://BUCKET/PREFIX`, or, for
    /// tests, `memory://` (a new store at each opening) or `memory://NAME` (the process's store of that name).
    pub artifacts: String,
    /// Settings of the GCS artifact backend.
    pub gcs: GcsConfig,
    /// Settings of the S3 artifact backend.
    pub s3: S3Config,
    /// The resource pools jobs run on.
    pub pools: Vec<PoolConfig>,
    /// Timings of the job worker.
    pub jobs: JobsConfig,
    /// Limits of the analyses.
    pub analysis: AnalysisConfig,
    /// The configuration file these settings came from, if any (set by the interface that read it; hidden from
    /// workloads). Not part of the printed configuration.
    #[serde(skip)]
    #[schemars(skip)]
    pub file: Option<PathBuf>,
}

/// The default of [`AnalysisConfig::max_decompressed_mib`]: 4 GiB.
pub const DEFAULT_MAX_DECOMPRESSED_MIB: u64 = 4096;
/// The default of [`AnalysisConfig::max_profile_mib`]: 1 GiB.
pub const DEFAULT_MAX_PROFILE_MIB: u64 = 1024;

/// Limits of the analyses (`[analysis]` in falcon.toml), what the worker's automatic analysis uses too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalysisConfig {
    /// The most MiB a compressed input (a gzipped trace, a deflated `.npz` member) may inflate to; beyond it
    /// the read fails naming the cap. The reading commands' `--max-decompressed MIB` overrides it per call.
    pub max_decompressed_mib: u64,
    /// The largest profile file (`.xplane.pb`, a Chrome or PyTorch trace, a shard's partials) read, in MiB: a
    /// bigger one is refused before a byte of it is read, naming the file and this cap
    /// (`FALCON_MAX_PROFILE_MIB`).
    pub max_profile_mib: u64,
    /// `profile analyze` of a run with more hosts than this (a folder or a `gs://` / `s3://` URI) runs as cluster
    /// jobs of at most this many hosts each, merged into one report (`--fan-out N` says it per call); unset: every
    /// run is analysed in the calling process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fan_out_hosts: Option<u32>,
}

impl Default for AnalysisConfig {
    fn default() -> Self {
        AnalysisConfig {
            max_decompressed_mib: DEFAULT_MAX_DECOMPRESSED_MIB,
            max_profile_mib: DEFAULT_MAX_PROFILE_MIB,
            fan_out_hosts: None,
        }
    }
}

/// The `[analysis]` part of a layer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalysisLayer {
    /// See [`AnalysisConfig::max_decompressed_mib`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_decompressed_mib: Option<u64>,
    /// See [`AnalysisConfig::max_profile_mib`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_profile_mib: Option<u64>,
    /// See [`AnalysisConfig::fan_out_hosts`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fan_out_hosts: Option<u32>,
}

/// Timings of the job worker and the boundary around workloads (`[jobs]` in falcon.toml).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobsConfig {
    /// Pause between worker passes, in milliseconds.
    pub poll_interval_ms: u64,
    /// How long a job may wait for capacity on a pool (unschedulable) before it moves to the next fitting
    /// pool, in seconds.
    pub capacity_timeout_s: u64,
    /// How long a worker's claim on a job lasts without renewal, in seconds.
    pub lease_s: u64,
    /// How often logs and artifacts of running jobs are copied to the artifact store, in seconds.
    pub log_interval_s: u64,
    /// How often each running job's resource use (memory, CPU time) is sampled, in milliseconds, on a timer of
    /// its own (independent of `poll_interval_ms`); 0 turns sampling off.
    pub sample_interval_ms: u64,
    /// How long an ended job's outputs are tried again when the artifact store refuses them (a store may come
    /// back), in seconds, and at least 10 tries; then the job ends FAILED with the store's error.
    pub collect_patience_s: u64,
    /// Where job folders live (each job's working folder: its logs, exit status and `FALCON_ARTIFACT_DIR`);
    /// never inside the data dir. Default: beside the data dir, `<data_dir>-jobs`.
    pub work_dir: PathBuf,
    /// How the local backend keeps a workload apart from Falcon's own state: `auto` (the default) runs each job
    /// as a user id of its own from `job_uids` when Falcon runs as root, and — as root or as any user the
    /// kernel lets create a user namespace — in a mount namespace where the data dir, the configuration file,
    /// the credentials and every other job's folder are hidden; `none` runs workloads as Falcon's own user,
    /// seeing all of it (for a machine where nothing untrusted runs).
    pub isolation: Isolation,
    /// The user ids jobs run as when Falcon runs as root, `FIRST-LAST` (default `61184-65519`, the range
    /// systemd keeps for dynamic users): each job takes one no running process uses.
    pub job_uids: String,
    /// The largest file collected from a job's artifact folder, in MiB; a bigger one is skipped and recorded
    /// with this cap (`exp show`'s skipped files).
    pub max_artifact_mib: u64,
    /// The most MiB collected from one job, its files together; a file that would go past it is skipped and
    /// recorded with this cap.
    pub max_experiment_artifacts_mib: u64,
}

/// How workloads are kept apart from Falcon (see [`JobsConfig::isolation`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// A user id of the job's own (as root) and a mount namespace hiding Falcon's state (where the kernel lets).
    #[default]
    Auto,
    /// None: the workload runs as Falcon's user and can reach its store.
    None,
}

/// The default [`JobsConfig::job_uids`].
pub const DEFAULT_JOB_UIDS: &str = "61184-65519";
/// The default [`JobsConfig::max_artifact_mib`]: 10 GiB.
pub const DEFAULT_MAX_ARTIFACT_MIB: u64 = 10 * 1024;
/// The default [`JobsConfig::max_experiment_artifacts_mib`]: 100 GiB.
pub const DEFAULT_MAX_EXPERIMENT_ARTIFACTS_MIB: u64 = 100 * 1024;

/// The job user ids of a `FIRST-LAST` range, or why it is not one (ids 1 to 2^31-2, FIRST ≤ LAST).
pub fn parse_uid_range(text: &str) -> Result<std::ops::RangeInclusive<u32>, String> {
    let (a, b) = text.split_once('-').ok_or_else(|| format!("`{text}` is not FIRST-LAST (such as 61184-65519)"))?;
    let id = |v: &str| {
        v.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (1..i32::MAX as u32).contains(n))
            .ok_or_else(|| format!("`{v}` is not a user id from 1 to {}", i32::MAX - 1))
    };
    let (first, last) = (id(a)?, id(b)?);
    if first > last {
        return Err(format!("`{text}`: the first id is above the last"));
    }
    Ok(first..=last)
}

/// The default [`JobsConfig::work_dir`] for a data dir: beside it, its name and `-jobs`.
pub fn default_work_dir(data_dir: &Path) -> PathBuf {
    let name = data_dir.file_name().map_or_else(|| "falcon".into(), |n| n.to_string_lossy().into_owned());
    let parent = data_dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    parent.join(format!("{name}-jobs"))
}

/// The default [`JobsConfig::sample_interval_ms`].
pub const DEFAULT_SAMPLE_INTERVAL_MS: u64 = 250;

impl Default for JobsConfig {
    fn default() -> Self {
        JobsConfig {
            poll_interval_ms: 1000,
            capacity_timeout_s: 60,
            lease_s: 30,
            log_interval_s: 5,
            sample_interval_ms: DEFAULT_SAMPLE_INTERVAL_MS,
            collect_patience_s: 300,
            work_dir: default_work_dir(Path::new(DEFAULT_DATA_DIR)),
            isolation: Isolation::Auto,
            job_uids: DEFAULT_JOB_UIDS.into(),
            max_artifact_mib: DEFAULT_MAX_ARTIFACT_MIB,
            max_experiment_artifacts_mib: DEFAULT_MAX_EXPERIMENT_ARTIFACTS_MIB,
        }
    }
}

/// The `[jobs]` part of a layer: fields merge one by one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobsLayer {
    /// See [`JobsConfig::poll_interval_ms`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
    /// See [`JobsConfig::capacity_timeout_s`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_timeout_s: Option<u64>,
    /// See [`JobsConfig::lease_s`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_s: Option<u64>,
    /// See [`JobsConfig::log_interval_s`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_interval_s: Option<u64>,
    /// See [`JobsConfig::sample_interval_ms`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_interval_ms: Option<u64>,
    /// See [`JobsConfig::collect_patience_s`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collect_patience_s: Option<u64>,
    /// See [`JobsConfig::work_dir`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_dir: Option<PathBuf>,
    /// See [`JobsConfig::isolation`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Isolation>,
    /// See [`JobsConfig::job_uids`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_uids: Option<String>,
    /// See [`JobsConfig::max_artifact_mib`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_artifact_mib: Option<u64>,
    /// See [`JobsConfig::max_experiment_artifacts_mib`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_experiment_artifacts_mib: Option<u64>,
}

/// GCS settings (used when `artifacts` is a `gs://` URI).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GcsConfig {
    /// API endpoint; unset means Google's. Set it to a local emulator's URL for tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Send no credentials (an emulator needs none).
    #[serde(default)]
    pub anonymous: bool,
    /// Path of a service-account key file; unset means application-default credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_path: Option<String>,
}

/// S3 settings (used when `artifacts` is an `s3://` URI).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct S3Config {
    /// API endpoint; unset means AWS's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Region; unset means `us-east-1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Send no credentials.
    #[serde(default)]
    pub anonymous: bool,
    /// Static access key id (with `secret_access_key`); unset means the AWS credential chain (`AWS_*`
    /// environment, `~/.aws`, instance metadata). S3-compatible servers (MinIO, Ceph, moto) are given keys here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_key_id: Option<String>,
    /// Static secret access key (with `access_key_id`). Printed as `***` by [`Config::redacted`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_access_key: Option<String>,
}

/// Which backend runs a pool's jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PoolBackend {
    /// Child processes on this machine.
    Local,
    /// A Slurm cluster.
    Slurm,
    /// A Kubernetes (GKE) cluster.
    Kubernetes,
}

/// The accelerator platform of a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Platform {
    /// Cloud TPU.
    Tpu,
    /// NVIDIA GPU.
    Gpu,
    /// CPU only.
    Cpu,
}

/// A resource pool: as configured, and (wrapped as `falcon_job::Pool`, once checked against the catalog) as
/// `pool list` shows it. `zone` is a cloud zone such as `us-east5-b`, `local` for a local pool; `accelerators`
/// are catalog types such as `v6e-8`, `h100-80gb-8` or `cpu` (aliases are accepted in the file and stored under
/// their canonical names); `capacity` counts chips, or cores for a CPU pool; `settings` hold what the backend
/// needs (kube context and namespace, Slurm partition, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PoolConfig {
    /// Unique name.
    pub name: String,
    /// Backend that runs its jobs.
    pub backend: PoolBackend,
    /// Zone.
    pub zone: String,
    /// Platform.
    pub platform: Platform,
    /// Accelerator types offered, canonical catalog names.
    pub accelerators: Vec<String>,
    /// Capacity in chips (cores for a CPU pool).
    pub capacity: u32,
    /// Backend settings.
    #[serde(default)]
    pub settings: BTreeMap<String, serde_json::Value>,
}

impl PoolConfig {
    /// The local CPU pool `falcon init` writes and the defaults use.
    pub fn local_cpu(cores: u32) -> Self {
        PoolConfig {
            name: "local".into(),
            backend: PoolBackend::Local,
            zone: "local".into(),
            platform: Platform::Cpu,
            accelerators: vec!["cpu".into()],
            capacity: cores.max(1),
            settings: BTreeMap::new(),
        }
    }
}

/// One layer of configuration: every field optional; a set field overrides the layers below it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigLayer {
    /// See [`Config::data_dir`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<PathBuf>,
    /// See [`Config::db`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db: Option<String>,
    /// See [`Config::artifacts`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<String>,
    /// See [`Config::gcs`]; fields merge one by one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gcs: Option<GcsLayer>,
    /// See [`Config::s3`]; fields merge one by one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3: Option<S3Layer>,
    /// See [`Config::pools`]; a layer that sets pools replaces the whole list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pools: Option<Vec<PoolConfig>>,
    /// See [`Config::jobs`]; fields merge one by one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs: Option<JobsLayer>,
    /// See [`Config::analysis`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<AnalysisLayer>,
}

/// The GCS part of a layer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GcsLayer {
    /// See [`GcsConfig::endpoint`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// See [`GcsConfig::anonymous`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anonymous: Option<bool>,
    /// See [`GcsConfig::credential_path`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_path: Option<String>,
}

/// The S3 part of a layer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct S3Layer {
    /// See [`S3Config::endpoint`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// See [`S3Config::region`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// See [`S3Config::anonymous`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anonymous: Option<bool>,
    /// See [`S3Config::access_key_id`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_key_id: Option<String>,
    /// See [`S3Config::secret_access_key`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_access_key: Option<String>,
}

/// A configuration source that could not be read as configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct ConfigError {
    /// Where the bad value came from: a file path, an environment variable, a flag.
    pub origin: String,
    /// What is wrong, with line and column for files.
    pub message: String,
}

/// A configured value that parses but cannot work (a duplicate pool name, a zero capacity).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ConfigProblem {
    /// Dotted path of the offending setting, e.g. `pools[1].capacity`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl ConfigLayer {
    /// Parses a `falcon.toml` text. `origin` names the file in errors; unknown keys are errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError { origin: origin.to_string(), message: e.to_string() })
    }

    /// Renders the layer as TOML (what `falcon init` writes).
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("a config layer always serializes to TOML")
    }

    /// Reads the `FALCON_*` variables from the given environment (the caller passes `std::env::vars()`).
    pub fn from_env<I, K, V>(vars: I) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut layer = ConfigLayer::default();
        for (key, value) in vars {
            let (key, value) = (key.as_ref(), value.as_ref().to_string());
            let flag = |v: &str| {
                parse_bool(v).ok_or_else(|| ConfigError {
                    origin: key.to_string(),
                    message: format!("`{v}` is not a boolean (use true/false, 1/0, yes/no)"),
                })
            };
            match key {
                "FALCON_DATA_DIR" => layer.data_dir = Some(PathBuf::from(value)),
                "FALCON_DB" => layer.db = Some(value),
                "FALCON_ARTIFACTS" => layer.artifacts = Some(value),
                "FALCON_GCS_ENDPOINT" => layer.gcs.get_or_insert_with(Default::default).endpoint = Some(value),
                "FALCON_GCS_ANONYMOUS" => {
                    layer.gcs.get_or_insert_with(Default::default).anonymous = Some(flag(&value)?)
                }
                "FALCON_GCS_CREDENTIAL_PATH" => {
                    layer.gcs.get_or_insert_with(Default::default).credential_path = Some(value)
                }
                "FALCON_S3_ENDPOINT" => layer.s3.get_or_insert_with(Default::default).endpoint = Some(value),
                "FALCON_S3_REGION" => layer.s3.get_or_insert_with(Default::default).region = Some(value),
                "FALCON_S3_ANONYMOUS" => layer.s3.get_or_insert_with(Default::default).anonymous = Some(flag(&value)?),
                "FALCON_S3_ACCESS_KEY_ID" => layer.s3.get_or_insert_with(Default::default).access_key_id = Some(value),
                "FALCON_S3_SECRET_ACCESS_KEY" => {
                    layer.s3.get_or_insert_with(Default::default).secret_access_key = Some(value)
                }
                "FALCON_MAX_DECOMPRESSED_MIB" => {
                    let mib = value.trim().parse().map_err(|_| ConfigError {
                        origin: key.to_string(),
                        message: format!("`{value}` is not a whole number of MiB"),
                    })?;
                    layer.analysis.get_or_insert_with(Default::default).max_decompressed_mib = Some(mib);
                }
                "FALCON_MAX_PROFILE_MIB" => {
                    let mib = value.trim().parse().map_err(|_| ConfigError {
                        origin: key.to_string(),
                        message: format!("`{value}` is not a whole number of MiB"),
                    })?;
                    layer.analysis.get_or_insert_with(Default::default).max_profile_mib = Some(mib);
                }
                _ => {}
            }
        }
        Ok(layer)
    }

    /// Makes the relative paths of a file layer relative to the file's folder, so a `falcon.toml` means the
    /// same thing from any working directory.
    pub fn rebase(mut self, base: &Path) -> Self {
        if let Some(dir) = &self.data_dir {
            if dir.is_relative() {
                self.data_dir = Some(base.join(dir));
            }
        }
        if let Some(dir) = self.jobs.as_mut().and_then(|j| j.work_dir.as_mut()) {
            if dir.is_relative() {
                *dir = base.join(&*dir);
            }
        }
        if let Some(db) = &self.db {
            if let Some(path) = sqlite_path(db) {
                if Path::new(path).is_relative() && path != ":memory:" {
                    self.db = Some(sqlite_url(&base.join(path)));
                }
            }
        }
        if let Some(artifacts) = &self.artifacts {
            if !artifacts.contains("://") && Path::new(artifacts).is_relative() {
                self.artifacts = Some(base.join(artifacts).display().to_string());
            }
        }
        self
    }

    /// Puts `over` on top of `self`.
    fn overlay(&mut self, over: ConfigLayer) {
        if over.data_dir.is_some() {
            self.data_dir = over.data_dir;
        }
        if over.db.is_some() {
            self.db = over.db;
        }
        if over.artifacts.is_some() {
            self.artifacts = over.artifacts;
        }
        if let Some(g) = over.gcs {
            let mine = self.gcs.get_or_insert_with(Default::default);
            mine.endpoint = g.endpoint.or(mine.endpoint.take());
            mine.anonymous = g.anonymous.or(mine.anonymous);
            mine.credential_path = g.credential_path.or(mine.credential_path.take());
        }
        if let Some(s) = over.s3 {
            let mine = self.s3.get_or_insert_with(Default::default);
            mine.endpoint = s.endpoint.or(mine.endpoint.take());
            mine.region = s.region.or(mine.region.take());
            mine.anonymous = s.anonymous.or(mine.anonymous);
            mine.access_key_id = s.access_key_id.or(mine.access_key_id.take());
            mine.secret_access_key = s.secret_access_key.or(mine.secret_access_key.take());
        }
        if over.pools.is_some() {
            self.pools = over.pools;
        }
        if let Some(j) = over.jobs {
            let mine = self.jobs.get_or_insert_with(Default::default);
            mine.poll_interval_ms = j.poll_interval_ms.or(mine.poll_interval_ms);
            mine.capacity_timeout_s = j.capacity_timeout_s.or(mine.capacity_timeout_s);
            mine.lease_s = j.lease_s.or(mine.lease_s);
            mine.log_interval_s = j.log_interval_s.or(mine.log_interval_s);
            mine.sample_interval_ms = j.sample_interval_ms.or(mine.sample_interval_ms);
            mine.collect_patience_s = j.collect_patience_s.or(mine.collect_patience_s);
            mine.work_dir = j.work_dir.or(mine.work_dir.take());
            mine.isolation = j.isolation.or(mine.isolation);
            mine.job_uids = j.job_uids.or(mine.job_uids.take());
            mine.max_artifact_mib = j.max_artifact_mib.or(mine.max_artifact_mib);
            mine.max_experiment_artifacts_mib = j.max_experiment_artifacts_mib.or(mine.max_experiment_artifacts_mib);
        }
        if let Some(a) = over.analysis {
            let mine = self.analysis.get_or_insert_with(Default::default);
            mine.max_decompressed_mib = a.max_decompressed_mib.or(mine.max_decompressed_mib);
            mine.max_profile_mib = a.max_profile_mib.or(mine.max_profile_mib);
            mine.fan_out_hosts = a.fan_out_hosts.or(mine.fan_out_hosts);
        }
    }
}

/// Facts about the machine the defaults depend on (passed in, so the merge stays pure).
#[derive(Debug, Clone, Copy)]
pub struct MachineFacts {
    /// Number of CPU cores, the default local pool's capacity.
    pub cores: u32,
}

impl Config {
    /// Merges layers given lowest precedence first (file, environment, flags) over the built-in defaults.
    /// Values derived from the data dir (`db`, `artifacts`) follow the final data dir unless set.
    pub fn resolve(layers: impl IntoIterator<Item = ConfigLayer>, machine: MachineFacts) -> Config {
        let mut merged = ConfigLayer::default();
        for layer in layers {
            merged.overlay(layer);
        }
        let data_dir = merged.data_dir.unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
        let db = merged.db.unwrap_or_else(|| sqlite_url(&data_dir.join("falcon.db")));
        let artifacts = merged.artifacts.unwrap_or_else(|| data_dir.join("artifacts").display().to_string());
        let gcs = merged.gcs.unwrap_or_default();
        let s3 = merged.s3.unwrap_or_default();
        let work_dir =
            merged.jobs.as_mut().and_then(|j| j.work_dir.take()).unwrap_or_else(|| default_work_dir(&data_dir));
        Config {
            data_dir,
            db,
            artifacts,
            gcs: GcsConfig {
                endpoint: gcs.endpoint,
                anonymous: gcs.anonymous.unwrap_or(false),
                credential_path: gcs.credential_path,
            },
            s3: S3Config {
                endpoint: s3.endpoint,
                region: s3.region,
                anonymous: s3.anonymous.unwrap_or(false),
                access_key_id: s3.access_key_id,
                secret_access_key: s3.secret_access_key,
            },
            pools: merged.pools.unwrap_or_else(|| vec![PoolConfig::local_cpu(machine.cores)]),
            jobs: {
                let d = JobsConfig::default();
                let j = merged.jobs.unwrap_or_default();
                JobsConfig {
                    poll_interval_ms: j.poll_interval_ms.unwrap_or(d.poll_interval_ms),
                    capacity_timeout_s: j.capacity_timeout_s.unwrap_or(d.capacity_timeout_s),
                    lease_s: j.lease_s.unwrap_or(d.lease_s),
                    log_interval_s: j.log_interval_s.unwrap_or(d.log_interval_s),
                    sample_interval_ms: j.sample_interval_ms.unwrap_or(d.sample_interval_ms),
                    collect_patience_s: j.collect_patience_s.unwrap_or(d.collect_patience_s),
                    work_dir,
                    isolation: j.isolation.unwrap_or(d.isolation),
                    job_uids: j.job_uids.unwrap_or(d.job_uids),
                    max_artifact_mib: j.max_artifact_mib.unwrap_or(d.max_artifact_mib),
                    max_experiment_artifacts_mib: j
                        .max_experiment_artifacts_mib
                        .unwrap_or(d.max_experiment_artifacts_mib),
                }
            },
            analysis: AnalysisConfig {
                max_decompressed_mib: merged
                    .analysis
                    .and_then(|a| a.max_decompressed_mib)
                    .unwrap_or(DEFAULT_MAX_DECOMPRESSED_MIB),
                max_profile_mib: merged.analysis.and_then(|a| a.max_profile_mib).unwrap_or(DEFAULT_MAX_PROFILE_MIB),
                fan_out_hosts: merged.analysis.and_then(|a| a.fan_out_hosts),
            },
            file: None,
        }
    }

    /// The same configuration with passwords in URLs and the S3 secret key replaced by `***`, for printing.
    pub fn redacted(&self) -> Config {
        let s3 =
            S3Config { secret_access_key: self.s3.secret_access_key.as_ref().map(|_| "***".into()), ..self.s3.clone() };
        Config { db: redact_url(&self.db), s3, ..self.clone() }
    }

    /// Checks what parsing cannot: pool names unique and non-empty, capacities positive, accelerators listed,
    /// a local pool's platform.
    pub fn problems(&self) -> Vec<ConfigProblem> {
        let mut problems = Vec::new();
        let mut seen = BTreeSet::new();
        let mut problem = |field: String, message: String| problems.push(ConfigProblem { field, message });
        if self.jobs.poll_interval_ms == 0 || self.jobs.lease_s == 0 {
            problem("jobs".into(), "poll_interval_ms and lease_s must be positive".into());
        }
        if self.jobs.sample_interval_ms != 0 && self.jobs.sample_interval_ms < 50 {
            problem(
                "jobs.sample_interval_ms".into(),
                "sample at most every 50 ms (0 turns sampling off): faster costs the machine more than it tells".into(),
            );
        }
        if self.jobs.lease_s * 1000 <= self.jobs.poll_interval_ms * 2 {
            problem(
                "jobs.lease_s".into(),
                "a lease must outlast at least two polls, or workers lose their jobs between passes".into(),
            );
        }
        if let Err(e) = parse_uid_range(&self.jobs.job_uids) {
            problem("jobs.job_uids".into(), e);
        }
        if self.jobs.max_artifact_mib == 0 || self.jobs.max_experiment_artifacts_mib == 0 {
            problem(
                "jobs.max_artifact_mib".into(),
                "a cap of 0 MiB keeps every file a job writes (max_artifact_mib, max_experiment_artifacts_mib)".into(),
            );
        }
        let (data, work) = (lexical(&self.data_dir), lexical(&self.jobs.work_dir));
        if work.starts_with(&data) || data.starts_with(&work) {
            problem(
                "jobs.work_dir".into(),
                format!(
                    "{} and the data dir {} must not hold one another: a workload would see Falcon's store",
                    self.jobs.work_dir.display(),
                    self.data_dir.display()
                ),
            );
        }
        if self.analysis.max_profile_mib == 0 {
            problem("analysis.max_profile_mib".into(), "a cap of 0 MiB refuses every profile".into());
        }
        if self.analysis.max_decompressed_mib == 0 {
            problem("analysis.max_decompressed_mib".into(), "a cap of 0 MiB refuses every compressed input".into());
        }
        if self.analysis.fan_out_hosts == Some(0) {
            problem(
                "analysis.fan_out_hosts".into(),
                "a job needs at least one host; leave it unset to fan out never".into(),
            );
        }
        if self.pools.is_empty() {
            problem("pools".into(), "no resource pool is configured; jobs could not run anywhere".into());
        }
        for (i, pool) in self.pools.iter().enumerate() {
            let at = |f: &str| format!("pools[{i}].{f}");
            if pool.name.trim().is_empty() {
                problem(at("name"), "a pool needs a non-empty name".into());
            } else if !seen.insert(pool.name.as_str()) {
                problem(at("name"), format!("pool name `{}` is used twice", pool.name));
            }
            if pool.capacity == 0 {
                problem(at("capacity"), format!("pool `{}` has capacity 0", pool.name));
            }
            if pool.accelerators.is_empty() {
                problem(at("accelerators"), format!("pool `{}` offers no accelerator type", pool.name));
            }
            if pool.zone.trim().is_empty() {
                problem(at("zone"), format!("pool `{}` needs a zone (`local` for a local pool)", pool.name));
            }
            if pool.backend == PoolBackend::Local && pool.platform == Platform::Tpu {
                problem(at("platform"), format!("pool `{}`: the local backend cannot offer TPUs", pool.name));
            }
        }
        problems
    }
}

/// `path` with `.` dropped and `..` taken back lexically (no I/O: links are not resolved).
fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.components().next_back(), Some(Component::Normal(_))) => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The path inside a `sqlite:` URL, if it is one.
pub fn sqlite_path(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    Some(rest.split('?').next().unwrap_or(rest))
}

/// The `sqlite://` URL of a file path.
pub fn sqlite_url(path: &Path) -> String {
    format!("sqlite://{}", path.display())
}

/// Removes the password from a URL (`mysql://user:***@host/db`) so it can be printed.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let (authority, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MACHINE: MachineFacts = MachineFacts { cores: 4 };

    #[test]
    fn defaults_live_under_the_data_dir() {
        let c = Config::resolve([], MACHINE);
        assert_eq!(c.data_dir, PathBuf::from(".falcon"));
        assert_eq!(c.db, "sqlite://.falcon/falcon.db");
        assert_eq!(c.artifacts, ".falcon/artifacts");
        assert_eq!(c.pools, vec![PoolConfig::local_cpu(4)]);
        assert!(c.problems().is_empty());
    }

    #[test]
    fn each_layer_overrides_the_one_below() {
        let file = ConfigLayer::from_toml(
            "data_dir = \"/srv/falcon\"\ndb = \"mysql://root@db/falcon\"\n[gcs]\nendpoint = \"http://file\"\n",
            "falcon.toml",
        )
        .unwrap();
        let env =
            ConfigLayer::from_env([("FALCON_DB", "sqlite:///env.db"), ("FALCON_GCS_ANONYMOUS", "1"), ("HOME", "/x")])
                .unwrap();
        let flags = ConfigLayer { data_dir: Some("/flag".into()), ..Default::default() };

        let only_file = Config::resolve([file.clone()], MACHINE);
        assert_eq!(only_file.db, "mysql://root@db/falcon");
        assert_eq!(only_file.artifacts, "/srv/falcon/artifacts");

        let file_env = Config::resolve([file.clone(), env.clone()], MACHINE);
        assert_eq!(file_env.db, "sqlite:///env.db");
        assert_eq!(file_env.gcs.endpoint.as_deref(), Some("http://file"), "gcs fields merge one by one");
        assert!(file_env.gcs.anonymous);

        let all = Config::resolve([file, env, flags], MACHINE);
        assert_eq!(all.data_dir, PathBuf::from("/flag"));
        assert_eq!(all.db, "sqlite:///env.db", "an explicit db is not re-derived from the data dir");
        assert_eq!(all.artifacts, "/flag/artifacts");
    }

    #[test]
    fn file_paths_are_relative_to_the_file() {
        let layer = ConfigLayer::from_toml("data_dir = \".falcon\"\nartifacts = \"arts\"\ndb = \"sqlite://x.db\"", "f")
            .unwrap()
            .rebase(Path::new("/proj"));
        let c = Config::resolve([layer], MACHINE);
        assert_eq!(c.data_dir, PathBuf::from("/proj/.falcon"));
        assert_eq!(c.artifacts, "/proj/arts");
        assert_eq!(c.db, "sqlite:///proj/x.db");
        let gs = ConfigLayer { artifacts: Some("gs://b/p".into()), ..Default::default() }.rebase(Path::new("/proj"));
        assert_eq!(gs.artifacts.as_deref(), Some("gs://b/p"));
    }

    #[test]
    fn unknown_keys_and_missing_pool_fields_name_the_place() {
        let err = ConfigLayer::from_toml("data_dir = \"x\"\ndatabase = \"y\"\n", "falcon.toml").unwrap_err();
        assert!(err.to_string().contains("falcon.toml") && err.message.contains("database"), "{err}");
        let err = ConfigLayer::from_toml(
            "[[pools]]\nname = \"a\"\nbackend = \"local\"\nzone = \"z\"\nplatform = \"cpu\"\naccelerators = [\"cpu\"]\n",
            "falcon.toml",
        )
        .unwrap_err();
        assert!(err.message.contains("capacity") && err.message.contains("line"), "{err}");
        let err = ConfigLayer::from_env([("FALCON_GCS_ANONYMOUS", "maybe")]).unwrap_err();
        assert_eq!(err.origin, "FALCON_GCS_ANONYMOUS");
    }

    #[test]
    fn init_output_parses_back_to_the_same_layer() {
        let layer = ConfigLayer {
            data_dir: Some(".falcon".into()),
            pools: Some(vec![PoolConfig::local_cpu(2)]),
            ..Default::default()
        };
        assert_eq!(ConfigLayer::from_toml(&layer.to_toml(), "init").unwrap(), layer);
    }

    #[test]
    fn job_timings_merge_field_by_field() {
        let file = ConfigLayer::from_toml("[jobs]\ncapacity_timeout_s = 30\nlease_s = 20\n", "f").unwrap();
        let flags =
            ConfigLayer { jobs: Some(JobsLayer { lease_s: Some(45), ..Default::default() }), ..Default::default() };
        let c = Config::resolve([file, flags], MACHINE);
        assert_eq!(c.jobs, JobsConfig { capacity_timeout_s: 30, lease_s: 45, ..JobsConfig::default() });
        let bad = ConfigLayer::from_toml("[jobs]\nlease_s = 1\npoll_interval_ms = 1000\n", "f").unwrap();
        let fields: Vec<_> = Config::resolve([bad], MACHINE).problems().into_iter().map(|p| p.field).collect();
        assert_eq!(fields, ["jobs.lease_s"]);
    }

    #[test]
    fn the_decompression_cap_has_a_default_a_key_and_a_variable() {
        assert_eq!(Config::resolve([], MACHINE).analysis.max_decompressed_mib, DEFAULT_MAX_DECOMPRESSED_MIB);
        let file = ConfigLayer::from_toml("[analysis]\nmax_decompressed_mib = 16\n", "f").unwrap();
        assert_eq!(Config::resolve([file.clone()], MACHINE).analysis.max_decompressed_mib, 16);
        let env = ConfigLayer::from_env([("FALCON_MAX_DECOMPRESSED_MIB", "64")]).unwrap();
        assert_eq!(Config::resolve([file, env], MACHINE).analysis.max_decompressed_mib, 64, "env over file");
        assert_eq!(
            ConfigLayer::from_env([("FALCON_MAX_DECOMPRESSED_MIB", "lots")]).unwrap_err().origin,
            "FALCON_MAX_DECOMPRESSED_MIB"
        );
        let zero = ConfigLayer::from_toml("[analysis]\nmax_decompressed_mib = 0\n", "f").unwrap();
        let fields: Vec<_> = Config::resolve([zero], MACHINE).problems().into_iter().map(|p| p.field).collect();
        assert_eq!(fields, ["analysis.max_decompressed_mib"]);
        let zero = ConfigLayer::from_toml("[analysis]\nfan_out_hosts = 0\n", "f").unwrap();
        let fields: Vec<_> = Config::resolve([zero], MACHINE).problems().into_iter().map(|p| p.field).collect();
        assert_eq!(fields, ["analysis.fan_out_hosts"]);
        let file = ConfigLayer::from_toml("[analysis]\nfan_out_hosts = 16\n", "f").unwrap();
        let env = ConfigLayer::from_env([("FALCON_MAX_DECOMPRESSED_MIB", "64")]).unwrap();
        let both = Config::resolve([file, env], MACHINE).analysis;
        assert_eq!(
            (both.fan_out_hosts, both.max_decompressed_mib),
            (Some(16), 64),
            "the env's cap keeps the file's fan-out"
        );
    }

    #[test]
    fn passwords_never_print() {
        assert_eq!(redact_url("mysql://root:s3cret@db:3306/falcon"), "mysql://root:***@db:3306/falcon");
        assert_eq!(redact_url("mysql://root@db/falcon"), "mysql://root@db/falcon");
        assert_eq!(redact_url("sqlite://.falcon/falcon.db"), "sqlite://.falcon/falcon.db");
        let c = Config::resolve([ConfigLayer { db: Some("mysql://u:pw@h/d".into()), ..Default::default() }], MACHINE);
        assert_eq!(c.redacted().db, "mysql://u:***@h/d");
        let env = ConfigLayer::from_env([("FALCON_S3_ACCESS_KEY_ID", "AKID"), ("FALCON_S3_SECRET_ACCESS_KEY", "sk")])
            .unwrap();
        let c = Config::resolve([env], MACHINE);
        assert_eq!((c.s3.access_key_id.as_deref(), c.s3.secret_access_key.as_deref()), (Some("AKID"), Some("sk")));
        let shown = c.redacted().s3;
        assert_eq!((shown.access_key_id.as_deref(), shown.secret_access_key.as_deref()), (Some("AKID"), Some("***")));
    }

    #[test]
    fn pool_problems_are_reported_per_field() {
        let mut bad = PoolConfig::local_cpu(1);
        bad.capacity = 0;
        bad.platform = Platform::Tpu;
        let c = Config::resolve(
            [ConfigLayer { pools: Some(vec![PoolConfig::local_cpu(1), bad]), ..Default::default() }],
            MACHINE,
        );
        let fields: Vec<_> = c.problems().into_iter().map(|p| p.field).collect();
        assert_eq!(fields, ["pools[1].name", "pools[1].capacity", "pools[1].platform"]);
    }

    #[test]
    fn the_workload_boundary_settings_resolve_rebase_and_are_checked() {
        // Job folders beside the data dir by default, following it; a file's relative work_dir is the file's.
        let c = Config::resolve([ConfigLayer { data_dir: Some("/srv/falcon".into()), ..Default::default() }], MACHINE);
        assert_eq!(c.jobs.work_dir, PathBuf::from("/srv/falcon-jobs"));
        assert_eq!((c.jobs.isolation, c.jobs.job_uids.as_str()), (Isolation::Auto, DEFAULT_JOB_UIDS));
        assert_eq!(default_work_dir(Path::new(".falcon")), PathBuf::from("./.falcon-jobs"));
        let file = ConfigLayer::from_toml(
            "[jobs]\nwork_dir = \"jobs\"\nisolation = \"none\"\njob_uids = \"100-200\"\nmax_artifact_mib = 5\n\
             max_experiment_artifacts_mib = 50\n[analysis]\nmax_profile_mib = 64\n",
            "falcon.toml",
        )
        .unwrap()
        .rebase(Path::new("/etc/falcon"));
        let c = Config::resolve([file], MACHINE);
        assert_eq!(c.jobs.work_dir, PathBuf::from("/etc/falcon/jobs"));
        assert_eq!((c.jobs.isolation, c.jobs.job_uids.as_str()), (Isolation::None, "100-200"));
        assert_eq!(
            (c.jobs.max_artifact_mib, c.jobs.max_experiment_artifacts_mib, c.analysis.max_profile_mib),
            (5, 50, 64)
        );
        assert!(c.problems().is_empty(), "{:?}", c.problems());
        let env = ConfigLayer::from_env([("FALCON_MAX_PROFILE_MIB", "32")]).unwrap();
        assert_eq!(Config::resolve([env], MACHINE).analysis.max_profile_mib, 32);
        assert_eq!(
            ConfigLayer::from_env([("FALCON_MAX_PROFILE_MIB", "big")]).unwrap_err().origin,
            "FALCON_MAX_PROFILE_MIB"
        );

        // The uid range: FIRST-LAST of real, non-root ids.
        assert_eq!(parse_uid_range("61184-65519"), Ok(61184..=65519));
        for bad in ["61184", "0-10", "10-5", "a-b", "1-4294967295", ""] {
            assert!(parse_uid_range(bad).is_err(), "{bad}");
        }
        // Settings that would leave a workload without its boundary are problems, each named.
        let problems = |toml: &str| -> Vec<String> {
            let layer = ConfigLayer::from_toml(toml, "falcon.toml").unwrap().rebase(Path::new("/p"));
            Config::resolve([layer], MACHINE).problems().into_iter().map(|p| p.field).collect()
        };
        assert_eq!(problems("[jobs]\njob_uids = \"0-9\"\n"), ["jobs.job_uids"]);
        assert_eq!(problems("data_dir = \"d\"\n[jobs]\nwork_dir = \"d/jobs\"\n"), ["jobs.work_dir"]);
        assert_eq!(problems("data_dir = \"d/inner\"\n[jobs]\nwork_dir = \"d/./x/..\"\n"), ["jobs.work_dir"]);
        assert_eq!(problems("[jobs]\nmax_experiment_artifacts_mib = 0\n"), ["jobs.max_artifact_mib"]);
        assert_eq!(problems("[analysis]\nmax_profile_mib = 0\n"), ["analysis.max_profile_mib"]);
    }
}
