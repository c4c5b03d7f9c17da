//! Running the Slurm commands (`sbatch`, `squeue`, `scancel`, `sstat`, `scontrol`) with a time limit and
//! `SLURM_CONF`, what a failed one said, and what `sbatch --parsable` printed.

use super::{SlurmBackend, SlurmJob};
use crate::error::{JobError, Result};
use std::process::{Output, Stdio};
use std::time::Duration;

pub(super) const SQUEUE_LIMIT: Duration = Duration::from_secs(60);
pub(super) const SBATCH_LIMIT: Duration = Duration::from_secs(120);
pub(super) const SCANCEL_LIMIT: Duration = Duration::from_secs(60);
pub(super) const SSTAT_LIMIT: Duration = Duration::from_secs(10);

/// What `sbatch --parsable` said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    /// The job id.
    pub job_id: u64,
    /// The cluster, when Slurm names one (`<id>;<cluster>`, multi-cluster setups).
    pub cluster: Option<String>,
}

/// Why running a command gave no output.
pub(super) enum RunError {
    /// It could not be started.
    Spawn(std::io::Error),
    /// It ran past its limit and was killed.
    Timeout,
}

impl SlurmBackend {
    pub(super) async fn run(
        &self,
        program: &str,
        args: &[&str],
        limit: Duration,
    ) -> std::result::Result<Output, RunError> {
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        // `sbatch` hands its environment to the job (`--export=ALL`): never the worker's settings or its store's
        // credentials (`isolation::withheld`).
        for (key, _) in std::env::vars_os() {
            if key.to_str().is_some_and(crate::backend::isolation::withheld) {
                cmd.env_remove(key);
            }
        }
        if let Some(conf) = &self.slurm_conf {
            cmd.env("SLURM_CONF", conf);
        }
        match tokio::time::timeout(limit, cmd.output()).await {
            Err(_) => Err(RunError::Timeout),
            Ok(Err(e)) => Err(RunError::Spawn(e)),
            Ok(Ok(out)) => Ok(out),
        }
    }

    pub(super) fn run_error(
        &self,
        operation: &'static str,
        command: &str,
        error: RunError,
        limit: Duration,
    ) -> JobError {
        match error {
            RunError::Timeout => {
                self.fail(operation, format!("`{command}` did not finish within {} s", limit.as_secs()))
            }
            RunError::Spawn(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.fail(operation, format!("running `{command}`: {e} (is the Slurm client installed and on PATH?)"))
            }
            RunError::Spawn(e) => self.fail(operation, format!("running `{command}`: {e}")),
        }
    }

    /// Every job `squeue --json` shows now.
    pub(super) async fn squeue(&self, operation: &'static str) -> Result<Vec<SlurmJob>> {
        let out = self
            .run("squeue", &["--json"], SQUEUE_LIMIT)
            .await
            .map_err(|e| self.run_error(operation, "squeue --json", e, SQUEUE_LIMIT))?;
        if !out.status.success() {
            return Err(self.fail(operation, format!("`squeue --json` {}", failure_text(&out))));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        super::parse_squeue(&text).map_err(|m| self.fail(operation, m))
    }
}

/// What a failed command said: its stderr (else stdout) on one line, after its exit status.
pub(super) fn failure_text(out: &Output) -> String {
    let status = match out.status.code() {
        Some(code) => format!("exited with status {code}"),
        None => "was killed by a signal".to_string(),
    };
    let said = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes).lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
    };
    let text = match said(&out.stderr) {
        t if t.is_empty() => said(&out.stdout),
        t => t,
    };
    if text.is_empty() {
        format!("{status} and printed nothing")
    } else {
        format!("{status}: {text}")
    }
}

/// The job id in `sbatch --parsable` output (`<id>` or `<id>;<cluster>`); the plain `Submitted batch job <id>`
/// is accepted too. Errors say what sbatch printed.
pub fn parse_sbatch(stdout: &str) -> std::result::Result<Submitted, String> {
    let Some(line) = stdout.lines().map(str::trim).rfind(|l| !l.is_empty()) else {
        return Err("sbatch printed no job id (its output was empty)".into());
    };
    let line = line.strip_prefix("Submitted batch job ").unwrap_or(line);
    let (id, cluster) = match line.split_once(';') {
        Some((id, cluster)) => (id.trim(), Some(cluster.trim()).filter(|c| !c.is_empty()).map(str::to_string)),
        None => (line.split_whitespace().next().unwrap_or(""), None),
    };
    match id.parse::<u64>() {
        Ok(job_id) => Ok(Submitted { job_id, cluster }),
        Err(_) => {
            let shown: String = stdout.trim().chars().take(200).collect();
            Err(format!("sbatch printed no job id: `{shown}`"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sbatch_output_gives_the_job_id() {
        let parsable = include_str!("../../../tests/data/slurm/sbatch_parsable.stdout");
        assert_eq!(parse_sbatch(parsable), Ok(Submitted { job_id: 1, cluster: None }));
        let plain = include_str!("../../../tests/data/slurm/sbatch_plain.stdout");
        assert_eq!(parse_sbatch(plain).unwrap().job_id, 2);
        assert_eq!(parse_sbatch("77;falcontest\n"), Ok(Submitted { job_id: 77, cluster: Some("falcontest".into()) }));
        for bad in [
            include_str!("../../../tests/data/slurm/sbatch_bad_partition.stdout"),
            include_str!("../../../tests/data/slurm/sbatch_missing_script.stdout"),
            include_str!("../../../tests/data/slurm/sbatch_controller_down.stdout"),
            "",
            "\n\n",
        ] {
            let err = parse_sbatch(bad).unwrap_err();
            assert!(err.contains("sbatch printed no job id"), "{err}");
        }
        let err = parse_sbatch("sbatch: error: oops\n").unwrap_err();
        assert!(err.contains("sbatch") && err.contains("oops"), "{err}");
        assert!(parse_sbatch("-3").is_err() && parse_sbatch("99999999999999999999999").is_err());
    }
}
