//! The batch script a submission runs as: `#SBATCH` options, the spec's and `FALCON_*` environment, the command
//! between two time stamps (`started`, `ended`), every value quoted for `/bin/sh`.

use super::SlurmBackend;
use crate::backend::Submission;
use crate::error::{JobError, Result};
use falcon_core::config::Platform;
use std::path::Path;

impl SlurmBackend {
    /// The batch script for a submission.
    pub(super) fn script(&self, sub: &Submission<'_>, dir: &Path) -> Result<String> {
        let mut s = String::from("#!/bin/sh\n");
        let mut opt = |line: String| {
            s.push_str("#SBATCH ");
            s.push_str(&line);
            s.push('\n');
        };
        opt(format!("--job-name={}", sub.name));
        opt(format!("--output=\"{}\"", Self::output_pattern(dir, "stdout.log")));
        opt(format!("--error=\"{}\"", Self::output_pattern(dir, "stderr.log")));
        opt(format!("--nodes={}", sub.resolved.hosts.max(1)));
        match sub.resolved.accelerator.platform {
            Platform::Cpu => opt(format!("--cpus-per-task={}", sub.resolved.chips.max(1))),
            Platform::Gpu => opt(format!("--gpus-per-node={}", sub.resolved.accelerator.chips_per_host.max(1))),
            Platform::Tpu => {
                return Err(self.fail(
                    "submit",
                    format!("{} is a TPU type; Slurm pools cannot run it", sub.resolved.accelerator.name),
                ));
            }
        }
        if let Some(timeout) = sub.spec.timeout_s {
            opt(format!("--time={}", timeout.div_ceil(60) + 1));
        }
        if let Some(p) = &self.partition {
            opt(format!("--partition={p}"));
        }
        if let Some(a) = &self.account {
            opt(format!("--account={a}"));
        }
        opt("--no-requeue".into());
        s.push_str(&format!("# Falcon job {}, attempt {}, pool {}.\n", sub.job, sub.attempt, sub.pool.name));
        let quote =
            |field: String, value: &str| sh_quote(value).ok_or_else(|| JobError::spec(field, "contains a NUL byte"));
        for (key, value) in &sub.spec.env {
            let ok = !key.is_empty()
                && !key.starts_with(|c: char| c.is_ascii_digit())
                && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ok {
                return Err(JobError::spec(format!("env.{key}"), "not a valid environment variable name"));
            }
            s.push_str(&format!("export {key}={}\n", quote(format!("env.{key}"), value)?));
        }
        let dir_text = dir.to_string_lossy();
        let artifacts = dir.join("artifacts");
        let falcon = [
            ("FALCON_JOB_ID", sub.job.to_string()),
            ("FALCON_JOB_NAME", sub.name.clone()),
            ("FALCON_JOB_ATTEMPT", sub.attempt.to_string()),
            ("FALCON_JOB_DIR", dir_text.to_string()),
            ("FALCON_ARTIFACT_DIR", artifacts.to_string_lossy().to_string()),
        ];
        for (key, value) in falcon {
            s.push_str(&format!("export {key}={}\n", quote(key.to_string(), &value)?));
        }
        if sub.spec.command.is_empty() {
            return Err(JobError::spec("command", "must name a program to run"));
        }
        // When the job really started (Slurm's `start_time` has whole seconds), in nanoseconds, for the job manager's
        // RUNNING time; a `date` without `%N` writes something unreadable, and the backend falls back to Slurm's.
        s.push_str(&format!("date +%s%N > {STARTED_TMP} 2>/dev/null && mv {STARTED_TMP} {STARTED} 2>/dev/null\n"));
        // The command runs in this shell's place only until it ends: then the end is stamped the same way (Slurm's
        // `end_time` has whole seconds) and its status passed on. Slurm signals every process of the job on a
        // cancel, preemption or time limit, the command included, so nothing needs forwarding.
        for (i, arg) in sub.spec.command.iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(&quote(format!("command[{i}]"), arg)?);
        }
        s.push('\n');
        s.push_str(&format!(
            "rc=$?\ndate +%s%N > {ENDED_TMP} 2>/dev/null && mv {ENDED_TMP} {ENDED} 2>/dev/null\nexit $rc\n"
        ));
        Ok(s)
    }
}

/// The file the batch script writes its start time to, in the job folder (through `$FALCON_JOB_DIR`).
const STARTED: &str = "\"$FALCON_JOB_DIR/started\"";
const STARTED_TMP: &str = "\"$FALCON_JOB_DIR/started.tmp\"";
/// The file the batch script writes the command's end time to.
const ENDED: &str = "\"$FALCON_JOB_DIR/ended\"";
const ENDED_TMP: &str = "\"$FALCON_JOB_DIR/ended.tmp\"";

/// `value` quoted for `/bin/sh` (single quotes unless it is plainly safe); `None` for a NUL byte.
pub fn sh_quote(value: &str) -> Option<String> {
    if value.contains('\0') {
        return None;
    }
    let plain = !value.is_empty() && value.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    Some(if plain { value.to_string() } else { format!("'{}'", value.replace('\'', r"'\''")) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::slurm::SlurmBackend;
    use crate::pool::Pool;
    use serde_json::Value;

    #[test]
    fn shell_quoting_survives_the_shell() {
        assert_eq!(sh_quote("plain-1.0/x"), Some("plain-1.0/x".into()));
        assert_eq!(sh_quote(""), Some("''".into()));
        assert_eq!(sh_quote("it's"), Some(r"'it'\''s'".into()));
        assert_eq!(sh_quote("a\0b"), None);
    }

    #[test]
    fn the_batch_script_quotes_everything_and_sets_the_options() {
        use crate::spec::{JobSpec, Resources, RetryPolicy};
        use falcon_core::config::{PoolBackend, PoolConfig};
        use std::collections::BTreeMap;
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("slurm.conf");
        std::fs::write(&conf, "").unwrap();
        let config = PoolConfig {
            name: "hpc".into(),
            backend: PoolBackend::Slurm,
            zone: "local".into(),
            platform: Platform::Cpu,
            accelerators: vec!["cpu".into()],
            capacity: 8,
            settings: BTreeMap::from([
                ("slurm_conf".to_string(), Value::String(conf.display().to_string())),
                ("partition".to_string(), Value::String("debug".into())),
                ("account".to_string(), Value::String("team-a".into())),
            ]),
        };
        let pool = Pool::from_config(&config).unwrap();
        let jobs = dir.path().join("jobs 100%");
        let backend = SlurmBackend::from_pool(&pool, &jobs).unwrap();
        let tricky = ["a b", "it's", "$HOME", "`id`", "*", "line\nbreak", "", "\"q\"", "back\\slash"];
        let mut command = vec![
            "sh".to_string(),
            "-c".into(),
            r#"printf '[%s]' "$@"; printf '{%s}' "$V" "$FALCON_JOB_ATTEMPT""#.into(),
            "x".into(),
        ];
        command.extend(tricky.iter().map(|s| s.to_string()));
        let spec = JobSpec {
            name: "quote".into(),
            image: None,
            command,
            env: BTreeMap::from([("V".into(), "it's $HOME `x`".into())]),
            resources: Resources { devices: Some(3), ..Resources::of("cpu", 1) },
            artifact_uri: None,
            timeout_s: Some(61),
            priority: 0,
            retry: RetryPolicy::default(),
            labels: BTreeMap::new(),
        };
        let resolved = spec.resolve().unwrap();
        let sub = Submission {
            job: falcon_core::ids::JobId(7),
            name: "quote-a2-hpc".into(),
            spec: &spec,
            resolved: &resolved,
            attempt: 2,
            pool: &pool,
        };
        let job_dir = backend.job_dir(&sub.name);
        let script = backend.script(&sub, &job_dir).unwrap();
        let out_pattern = job_dir.join("stdout.log").display().to_string().replace('%', "%%");
        for line in [
            "#!/bin/sh\n".to_string(),
            "#SBATCH --job-name=quote-a2-hpc\n".into(),
            format!("#SBATCH --output=\"{out_pattern}\"\n"),
            "#SBATCH --nodes=1\n".into(),
            "#SBATCH --cpus-per-task=3\n".into(),
            "#SBATCH --time=3\n".into(),
            "#SBATCH --partition=debug\n".into(),
            "#SBATCH --account=team-a\n".into(),
            "#SBATCH --no-requeue\n".into(),
            "export FALCON_JOB_ID=j-7\n".into(),
            "export FALCON_JOB_ATTEMPT=2\n".into(),
        ] {
            assert!(script.contains(&line), "missing {line:?} in\n{script}");
        }
        // The script itself runs the command with its arguments intact.
        std::fs::create_dir_all(&job_dir).unwrap();
        let path = job_dir.join("job.sh");
        std::fs::write(&path, &script).unwrap();
        let out = std::process::Command::new("/bin/sh").arg(&path).env("HOME", "/home/h").output().unwrap();
        let expected: String = tricky.iter().map(|s| format!("[{s}]")).collect::<String>() + "{it's $HOME `x`}{2}";
        assert_eq!(String::from_utf8_lossy(&out.stdout), expected, "{script}");
        // It wrote when it started, in nanoseconds since the epoch.
        for stamp in ["started", "ended"] {
            let ns = std::fs::read_to_string(job_dir.join(stamp)).unwrap();
            assert!(ns.trim().parse::<u64>().is_ok_and(|ns| ns > 1_600_000_000_000_000_000), "{stamp}: {ns:?}");
        }
        // The stamps are read only as plain files: one the job replaced by a FIFO (which would block an open) or a
        // symbolic link is no stamp, at once.
        assert!(backend.started(Some(&sub.name)).is_some());
        let stamp = job_dir.join("started");
        std::fs::remove_file(&stamp).unwrap();
        assert!(std::process::Command::new("mkfifo").arg(&stamp).status().unwrap().success());
        assert_eq!(backend.started(Some(&sub.name)), None, "a FIFO");
        std::fs::remove_file(&stamp).unwrap();
        std::os::unix::fs::symlink(job_dir.join("ended"), &stamp).unwrap();
        assert_eq!(backend.started(Some(&sub.name)), None, "a symbolic link");
        // The command's exit status is the script's.
        let mut failing = spec.clone();
        failing.command = vec!["sh".into(), "-c".into(), "exit 7".into()];
        let script = backend.script(&Submission { spec: &failing, ..sub.clone() }, &job_dir).unwrap();
        std::fs::write(&path, &script).unwrap();
        let status = std::process::Command::new("/bin/sh").arg(&path).status().unwrap();
        assert_eq!(status.code(), Some(7), "{script}");

        let mut nul = spec.clone();
        nul.env.insert("BAD".into(), "a\0b".into());
        let sub_nul = Submission { spec: &nul, ..sub.clone() };
        assert!(backend.script(&sub_nul, &job_dir).unwrap_err().to_string().contains("env.BAD"));
    }
}
