//! Artifact kinds and how a file the workload wrote is recognised as one (docs/DESIGN.md §2).

use serde::{Deserialize, Serialize};

/// What an artifact is. The kind lives in the metadata row only; the key keeps the path the workload wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactKind {
    /// An XProf profile (`*.xplane.pb`).
    Xprof,
    /// Metrics: `metrics*.jsonl`, TensorBoard event files.
    Metrics,
    /// Job logs.
    Logs,
    /// Chrome traces, HLO modules, LLO dumps.
    Trace,
    /// Effective configs and resource copies.
    Config,
    /// Kernel-bench results.
    KernelBench,
    /// The resource use (memory, CPU time) the Job module sampled while the job ran: `resources/<attempt>/*.jsonl`
    /// ([`crate::resources`]).
    Resources,
    /// Generated reports.
    Report,
    /// Anything else.
    Other,
}

impl ArtifactKind {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Xprof => "xprof",
            Self::Metrics => "metrics",
            Self::Logs => "logs",
            Self::Trace => "trace",
            Self::Config => "config",
            Self::KernelBench => "kernel_bench",
            Self::Resources => "resources",
            Self::Report => "report",
            Self::Other => "other",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Xprof,
            Self::Metrics,
            Self::Logs,
            Self::Trace,
            Self::Config,
            Self::KernelBench,
            Self::Resources,
            Self::Report,
            Self::Other,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }

    /// Recognises the kind of a file from its path relative to the artifact dir (only the file name counts,
    /// except that anything under a top-level `logs/` folder is logs, and JSONL under a top-level `resources/`
    /// folder is the sampled resource use).
    pub fn recognise(path: &str) -> Self {
        if path.starts_with("logs/") {
            return Self::Logs;
        }
        if path.starts_with(crate::resources::FOLDER) && path.ends_with(".jsonl") {
            return Self::Resources;
        }
        let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
        let ext_in = |exts: &[&str]| exts.iter().any(|e| name.ends_with(e));
        if name.ends_with(".xplane.pb") {
            Self::Xprof
        } else if (name.starts_with("metrics") && name.ends_with(".jsonl")) || name.contains("tfevents") {
            Self::Metrics
        } else if name.starts_with("kernel_bench") && name.ends_with(".jsonl") {
            Self::KernelBench
        } else if name.ends_with(".trace.json")
            || name.ends_with(".trace.json.gz")
            || name.contains(".hlo")
            || name.contains("llo")
        {
            Self::Trace
        } else if name.starts_with("config") && ext_in(&[".yaml", ".yml", ".json"]) {
            Self::Config
        } else if name.ends_with(".log") {
            Self::Logs
        } else {
            Self::Other
        }
    }
}

/// The MIME type an artifact is stored with, from its file name.
pub fn content_type_for(path: &str) -> &'static str {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let table: [(&str, &str); 12] = [
        (".json.gz", "application/gzip"),
        (".gz", "application/gzip"),
        (".jsonl", "application/x-ndjson"),
        (".json", "application/json"),
        (".pb", "application/x-protobuf"),
        (".yaml", "application/yaml"),
        (".yml", "application/yaml"),
        (".log", "text/plain; charset=utf-8"),
        (".txt", "text/plain; charset=utf-8"),
        (".md", "text/markdown; charset=utf-8"),
        (".html", "text/html; charset=utf-8"),
        (".csv", "text/csv; charset=utf-8"),
    ];
    table.iter().find(|(ext, _)| name.ends_with(ext)).map_or("application/octet-stream", |(_, t)| t)
}

/// The hex SHA-256 of `data`, as artifact records keep it.
pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(data).iter().map(|b| format!("{b:02x}")).collect()
}

/// The hex SHA-256 of a file's bytes, read a block at a time (never whole in memory).
pub fn sha256_file(path: &std::path::Path) -> std::io::Result<String> {
    sha256_reader(std::fs::File::open(path)?)
}

/// The hex SHA-256 of everything `reader` gives, a block at a time.
pub fn sha256_reader(mut file: impl std::io::Read) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect());
        }
        hasher.update(&buf[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_the_design_table() {
        let cases = [
            ("plugins/profile/run1/vm.xplane.pb", ArtifactKind::Xprof),
            ("metrics.jsonl", ArtifactKind::Metrics),
            ("metrics-host0.jsonl", ArtifactKind::Metrics),
            ("tb/events.out.tfevents.1700000000.host", ArtifactKind::Metrics),
            ("plugins/profile/run1/vm.trace.json.gz", ArtifactKind::Trace),
            ("dumps/module_0001.jit_step.hlo.pb", ArtifactKind::Trace),
            ("dumps/llo_dump.txt", ArtifactKind::Trace),
            ("config.yaml", ArtifactKind::Config),
            ("config_effective.json", ArtifactKind::Config),
            ("kernel_bench_results.jsonl", ArtifactKind::KernelBench),
            ("logs/1/proc.log", ArtifactKind::Logs),
            ("resources/1/usage.jsonl", ArtifactKind::Resources),
            ("sub/resources/1/usage.jsonl", ArtifactKind::Other),
            ("notes.txt", ArtifactKind::Other),
            ("metrics.csv", ArtifactKind::Other),
        ];
        for (path, kind) in cases {
            assert_eq!(ArtifactKind::recognise(path), kind, "{path}");
            assert_eq!(ArtifactKind::parse(kind.as_str()), Some(kind));
        }
    }

    #[test]
    fn content_types_follow_the_extension() {
        assert_eq!(content_type_for("a/vm.xplane.pb"), "application/x-protobuf");
        assert_eq!(content_type_for("metrics.jsonl"), "application/x-ndjson");
        assert_eq!(content_type_for("vm.trace.json.gz"), "application/gzip");
        assert_eq!(content_type_for("LOGS/1/X.LOG"), "text/plain; charset=utf-8");
        assert_eq!(content_type_for("blob"), "application/octet-stream");
    }
}
