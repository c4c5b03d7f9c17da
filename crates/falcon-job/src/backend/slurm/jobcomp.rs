//! Answers for jobs `squeue` forgot: the `jobcomp/filetxt` file the cluster's `slurm.conf` names
//! (`JobCompLoc`), its last line for a job read back into a [`SlurmJob`].

use super::{SlurmBackend, SlurmJob};
use std::path::{Path, PathBuf};

/// Read at most this much of the end of a jobcomp file.
const JOBCOMP_TAIL: u64 = 64 << 20;

impl SlurmBackend {
    /// The slurm.conf the commands use.
    fn conf_path(&self) -> PathBuf {
        self.slurm_conf
            .clone()
            .or_else(|| std::env::var_os("SLURM_CONF").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("/etc/slurm/slurm.conf"))
    }

    /// The job's last line in the `jobcomp/filetxt` file, when the configuration has one.
    pub(super) fn jobcomp_record(&self, id: u64, name: Option<&str>) -> Option<SlurmJob> {
        let conf = std::fs::read_to_string(self.conf_path()).ok()?;
        let path = jobcomp_location(&conf)?;
        let text = read_tail(&path, JOBCOMP_TAIL).ok()?;
        parse_jobcomp(&text, id, name)
    }
}

/// `JobCompLoc` of a `slurm.conf` whose `JobCompType` is `jobcomp/filetxt` (keys are case-insensitive;
/// the default location when only the type is set).
pub fn jobcomp_location(conf: &str) -> Option<PathBuf> {
    let mut kind = None;
    let mut loc = None;
    for line in conf.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some((key, value)) = line.split_once('=') else { continue };
        let value = value.trim().trim_matches('"');
        match key.trim().to_ascii_lowercase().as_str() {
            "jobcomptype" => kind = Some(value.to_string()),
            "jobcomploc" => loc = Some(value.to_string()),
            _ => {}
        }
    }
    if kind.as_deref().map(|k| k.trim_start_matches("jobcomp/")) != Some("filetxt") {
        return None;
    }
    Some(PathBuf::from(loc.filter(|l| !l.is_empty()).unwrap_or_else(|| "/var/log/slurm_jobcomp.log".into())))
}

/// The last record of job `id` (named `name`, when given) in a `jobcomp/filetxt` file: one `Key=Value` line
/// per job end, `ExitCode=<code>:<signal>` (turned back into a raw wait status).
pub fn parse_jobcomp(text: &str, id: u64, name: Option<&str>) -> Option<SlurmJob> {
    text.lines().rev().find_map(|line| {
        let field = |key: &str| {
            line.split_whitespace().find_map(|t| t.split_once('=').filter(|(k, _)| *k == key).map(|(_, v)| v))
        };
        if field("JobId")?.parse::<u64>().ok()? != id {
            return None;
        }
        let job_name = field("Name").unwrap_or("");
        if name.is_some_and(|n| n != job_name) {
            return None;
        }
        let state = field("JobState")?;
        let exit_status = field("ExitCode").and_then(|e| {
            let (code, signal) = e.split_once(':')?;
            let (code, signal): (i64, i64) = (code.parse().ok()?, signal.parse().ok()?);
            Some(if (1..0x7f).contains(&signal) { signal } else { (code & 0xff) << 8 })
        });
        Some(SlurmJob {
            job_id: id,
            name: job_name.to_string(),
            state: state.to_string(),
            reason: "None".into(),
            exit_status,
            standard_output: None,
            start_time: None,
            end_time: None,
        })
    })
}

/// The last `max` bytes of a file (from the first whole line).
fn read_tail(path: &Path, max: u64) -> std::io::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let start = len.saturating_sub(max);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Ok(match (start > 0, text.find('\n')) {
        (true, Some(i)) => text[i + 1..].to_string(),
        _ => text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::slurm::map_state;
    use crate::backend::BackendState;

    const JOBCOMP: &str = include_str!("../../../tests/data/slurm/jobcomp.txt");

    #[test]
    fn jobcomp_records_answer_for_forgotten_jobs() {
        let conf = "# c\nJobCompType=jobcomp/filetxt\njobcomploc=/x/jobcomp.txt # here\n";
        assert_eq!(jobcomp_location(conf), Some(PathBuf::from("/x/jobcomp.txt")));
        assert_eq!(jobcomp_location("JobCompType=jobcomp/filetxt"), Some(PathBuf::from("/var/log/slurm_jobcomp.log")));
        assert_eq!(jobcomp_location("JobCompType=jobcomp/none\nJobCompLoc=/x"), None);
        assert_eq!(jobcomp_location(""), None);

        let exit3 = parse_jobcomp(JOBCOMP, 5, Some("exit3")).unwrap();
        assert_eq!((exit3.state.as_str(), exit3.exit_status), ("FAILED", Some(768)));
        assert!(matches!(map_state(&exit3).unwrap(), BackendState::Failed { exit_code: Some(3), .. }));
        let kill9 = parse_jobcomp(JOBCOMP, 6, None).unwrap();
        assert!(matches!(map_state(&kill9).unwrap(), BackendState::Failed { exit_code: Some(137), .. }));
        assert_eq!(map_state(&parse_jobcomp(JOBCOMP, 2, Some("pend")).unwrap()).unwrap(), BackendState::Succeeded);
        assert!(matches!(
            map_state(&parse_jobcomp(JOBCOMP, 4, None).unwrap()).unwrap(),
            BackendState::Failed { exit_code: None, .. }
        ));
        assert!(matches!(
            map_state(&parse_jobcomp(JOBCOMP, 7, None).unwrap()).unwrap(),
            BackendState::Preempted { .. }
        ));
        assert_eq!(parse_jobcomp(JOBCOMP, 8, None).unwrap().state, "CANCELLED", "the last line of a job wins");
        assert_eq!(parse_jobcomp(JOBCOMP, 5, Some("other-name")), None, "a reused id is not ours");
        assert_eq!(parse_jobcomp(JOBCOMP, 999, None), None);
        assert_eq!(parse_jobcomp("garbage\nJobId=x\nJobId=5 Name=y\n=\n", 5, None), None);
    }
}
