//! Resource use: what the cluster's accounting allows the sampler (`scontrol show config`) and the running
//! steps' memory and CPU time in `sstat` output.

use super::commands::SQUEUE_LIMIT;
use super::SlurmBackend;
use std::time::Duration;

/// What the cluster's accounting allows the sampler (from `scontrol show config`).
#[derive(Debug, Clone, PartialEq)]
pub struct Accounting {
    /// Why jobs cannot be sampled (`JobAcctGatherType=jobacct_gather/none`); `None` when they can.
    pub unsupported: Option<String>,
    /// How often Slurm refreshes a step's usage (`JobAcctGatherFrequency`, its `task=` part; 30 s by default):
    /// `sstat` is not asked more often than that (it costs the worker ~8 ms of CPU a call), and never more often
    /// than once a second.
    pub refresh: Duration,
}

impl SlurmBackend {
    /// What the cluster's accounting allows, from `scontrol show config` (the defaults when it does not say).
    pub(super) async fn accounting_check(&self) -> Accounting {
        match self.run("scontrol", &["show", "config"], SQUEUE_LIMIT).await {
            Ok(out) if out.status.success() => accounting(&String::from_utf8_lossy(&out.stdout)),
            _ => accounting(""),
        }
    }
}

/// What `scontrol show config` output says of sampling: `JobAcctGatherType=jobacct_gather/none` means `sstat`
/// has nothing to report; `JobAcctGatherFrequency` (`30`, `task=1`, `task=10,energy=30`) how often a step's
/// usage is refreshed (30 s when not said).
pub fn accounting(config: &str) -> Accounting {
    let value = |key: &str| {
        config.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    let unsupported = value("JobAcctGatherType").filter(|g| g.ends_with("/none")).map(|gather| {
        format!(
            "the cluster gathers no accounting (JobAcctGatherType={gather}), so `sstat` has nothing to report; set \
             JobAcctGatherType=jobacct_gather/linux (or /cgroup) in slurm.conf"
        )
    });
    let seconds = value("JobAcctGatherFrequency").and_then(|f| {
        f.split(',').find_map(|part| match part.trim().split_once('=') {
            Some(("task", n)) => n.trim().parse::<u64>().ok(),
            Some(_) => None,
            None => part.trim().parse::<u64>().ok(),
        })
    });
    Accounting { unsupported, refresh: Duration::from_secs(seconds.unwrap_or(30).max(1)) }
}

/// The running steps' resident memory (bytes) and CPU time (seconds) summed, from `sstat --noheader
/// --parsable2 --noconvert --format=JobID,TRESUsageInTot` (lines `<id>.<step>|cpu=00:00:02,…,mem=15282176,…`);
/// `None` when no step is listed.
pub fn parse_sstat(stdout: &str) -> std::result::Result<Option<(u64, f64)>, String> {
    let mut total: Option<(u64, f64)> = None;
    for line in stdout.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let tres = line.split_once('|').map(|(_, t)| t).ok_or_else(|| format!("sstat: unexpected line {line:?}"))?;
        let field = |name: &str| tres.split(',').find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='));
        let mem = field("mem").and_then(|m| m.parse::<u64>().ok());
        let cpu = field("cpu").and_then(parse_slurm_duration);
        let (Some(mem), Some(cpu)) = (mem, cpu) else {
            return Err(format!("sstat: no `mem` and `cpu` usage in {line:?}"));
        };
        let (m, c) = total.get_or_insert((0, 0.0));
        *m = m.saturating_add(mem);
        *c += cpu;
    }
    Ok(total)
}

/// A Slurm duration in seconds: `[D-]HH:MM:SS[.fff]`, `MM:SS[.fff]` or plain seconds.
pub fn parse_slurm_duration(text: &str) -> Option<f64> {
    let (days, rest) = match text.split_once('-') {
        Some((d, r)) => (d.parse::<f64>().ok()?, r),
        None => (0.0, text),
    };
    let parts: Vec<f64> = rest.split(':').map(|p| p.parse::<f64>().ok()).collect::<Option<_>>()?;
    let secs = match parts[..] {
        [h, m, s] => h * 3600.0 + m * 60.0 + s,
        [m, s] => m * 60.0 + s,
        [s] => s,
        _ => return None,
    };
    Some(days * 86400.0 + secs).filter(|s| s.is_finite() && *s >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sstat_lines_sum_over_steps() {
        // Observed from Slurm 22.05 with jobacct_gather/linux (`sstat --noconvert`).
        let one = "3.batch|cpu=00:00:01,energy=0,fs/disk=1690083,mem=225030144,pages=0,vmem=229339136\n";
        assert_eq!(parse_sstat(one), Ok(Some((225_030_144, 1.0))));
        let two = format!("{one}3.0|cpu=1-00:01:02.5,mem=100,vmem=1\n");
        assert_eq!(parse_sstat(&two), Ok(Some((225_030_244, 86_463.5))));
        assert_eq!(parse_sstat(""), Ok(None));
        assert!(parse_sstat("3.batch|energy=0").unwrap_err().contains("no `mem`"));
        assert!(parse_sstat("garbage").is_err());
        assert_eq!(parse_slurm_duration("01:30.250"), Some(90.25));
        assert_eq!(parse_slurm_duration("x"), None);
        let none = accounting("JobAcctGatherFrequency  = 30\nJobAcctGatherType       = jobacct_gather/none\n");
        assert!(none.unsupported.unwrap().contains("JobAcctGatherType=jobacct_gather/none"));
        assert_eq!(none.refresh, Duration::from_secs(30));
        let linux =
            accounting("JobAcctGatherFrequency  = energy=60,task=1\nJobAcctGatherType = jobacct_gather/linux\n");
        assert_eq!((linux.unsupported, linux.refresh), (None, Duration::from_secs(1)));
        assert_eq!(accounting(""), Accounting { unsupported: None, refresh: Duration::from_secs(30) });
    }
}
