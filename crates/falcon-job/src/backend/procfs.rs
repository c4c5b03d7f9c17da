//! The resource use of a process tree, read from `/proc` (Linux): what the local backend samples.
//!
//! The tree of a job is its wrapper process (the group leader), every process of its process group, and every
//! descendant of either (a child that moved to a group or session of its own is still counted). Its memory is
//! the sum of the members' resident set sizes (`/proc/<pid>/stat` field 24, in pages); its CPU time the sum of
//! their user and system time plus that of their children already reaped (fields 14–17, in clock ticks), so
//! the total keeps counting work whose process ended. Zombies count for CPU time only.
//!
//! Cost: one `/proc` listing and one read of `/proc/<pid>/stat` per process on the machine every
//! [`FULL_SCAN_EVERY`]-th sample; in between, only the members found last time are read again (a process
//! started since is found at the next full scan, at most [`FULL_SCAN_EVERY`] samples later).

use std::collections::{HashMap, HashSet};

/// Every how many samples of a tree the whole of `/proc` is scanned for new members.
pub const FULL_SCAN_EVERY: u32 = 8;

/// What one sample of a tree measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeUsage {
    /// Resident memory of the members, in bytes.
    pub rss_bytes: u64,
    /// User + system CPU time of the members and their reaped children, in seconds.
    pub cpu_s: f64,
    /// Live members.
    pub processes: usize,
}

/// The parts of `/proc/<pid>/stat` the sampler reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub pid: i32,
    pub zombie: bool,
    pub ppid: i32,
    pub pgrp: i32,
    /// utime + stime + cutime + cstime, in clock ticks.
    pub ticks: u64,
    /// Resident set size, in pages.
    pub rss_pages: u64,
}

/// Parses one `/proc/<pid>/stat` line (the command name may hold spaces and parentheses: fields are counted
/// from its last `)`).
pub fn parse_stat(text: &str) -> Option<Stat> {
    let (head, rest) = text.rsplit_once(')')?;
    let pid = head.split_once('(')?.0.trim().parse().ok()?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Field k of proc(5) is f[k - 3].
    let num = |k: usize| f.get(k - 3)?.parse::<i64>().ok();
    let ticks = [14, 15, 16, 17].iter().map(|&k| num(k).map(|v| v.max(0) as u64)).sum::<Option<u64>>()?;
    Some(Stat {
        pid,
        zombie: matches!(f.first(), Some(&"Z") | Some(&"X")),
        ppid: num(4)? as i32,
        pgrp: num(5)? as i32,
        ticks,
        rss_pages: num(24)?.max(0) as u64,
    })
}

fn read_stat(pid: i32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The members of the tree rooted at `root` (also the leader of its process group) among `all`.
pub fn members(root: i32, all: &[Stat]) -> Vec<Stat> {
    let mut inside: HashSet<i32> = all.iter().filter(|s| s.pid == root || s.pgrp == root).map(|s| s.pid).collect();
    let children: HashMap<i32, Vec<i32>> = all.iter().fold(HashMap::new(), |mut m, s| {
        m.entry(s.ppid).or_default().push(s.pid);
        m
    });
    let mut stack: Vec<i32> = inside.iter().copied().collect();
    while let Some(pid) = stack.pop() {
        for child in children.get(&pid).into_iter().flatten() {
            if inside.insert(*child) {
                stack.push(*child);
            }
        }
    }
    all.iter().filter(|s| inside.contains(&s.pid)).copied().collect()
}

/// Samples one process tree, remembering its members between samples.
#[derive(Debug)]
pub struct TreeSampler {
    root: i32,
    known: Vec<i32>,
    samples: u32,
    page_bytes: u64,
    ticks_per_s: f64,
}

impl TreeSampler {
    /// A sampler of the tree whose root (and process group leader) is `root`.
    pub fn new(root: i32) -> Self {
        use nix::unistd::{sysconf, SysconfVar};
        let page_bytes = sysconf(SysconfVar::PAGE_SIZE).ok().flatten().map_or(4096, |v| v as u64);
        let ticks_per_s = sysconf(SysconfVar::CLK_TCK).ok().flatten().map_or(100.0, |v| v as f64);
        TreeSampler { root, known: Vec::new(), samples: 0, page_bytes, ticks_per_s }
    }

    /// The tree's use now; `None` when no member is left.
    pub fn sample(&mut self) -> Option<TreeUsage> {
        let full = self.samples.is_multiple_of(FULL_SCAN_EVERY) || self.known.is_empty();
        self.samples = self.samples.wrapping_add(1);
        let stats = if full {
            let all: Vec<Stat> = std::fs::read_dir("/proc")
                .ok()?
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
                .filter_map(read_stat)
                .collect();
            members(self.root, &all)
        } else {
            self.known.iter().filter_map(|&pid| read_stat(pid)).collect()
        };
        self.known = stats.iter().map(|s| s.pid).collect();
        if stats.is_empty() {
            return None;
        }
        let rss_pages: u64 = stats.iter().filter(|s| !s.zombie).map(|s| s.rss_pages).sum();
        let ticks: u64 = stats.iter().map(|s| s.ticks).sum();
        Some(TreeUsage {
            rss_bytes: rss_pages.saturating_mul(self.page_bytes),
            cpu_s: ticks as f64 / self.ticks_per_s,
            processes: stats.iter().filter(|s| !s.zombie).count(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_with_odd_command_names() {
        let line = "4242 (my (odd) prog) S 4000 4242 4000 0 -1 4194560 100 0 0 0 25 5 3 2 20 0 1 0 100 123456 789 \
                    18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0";
        let s = parse_stat(line).unwrap();
        assert_eq!(s, Stat { pid: 4242, zombie: false, ppid: 4000, pgrp: 4242, ticks: 35, rss_pages: 789 });
        assert!(parse_stat("12 (x) Z 1 12").is_none());
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn the_tree_is_the_group_and_every_descendant() {
        let s = |pid, ppid, pgrp| Stat { pid, zombie: false, ppid, pgrp, ticks: 1, rss_pages: 1 };
        // 10 leads the group; 11 is in it; 12 left for a group of its own (setsid) but descends from 11;
        // 13 descends from 12; 20 and 21 are strangers.
        let all = [s(1, 0, 1), s(10, 1, 10), s(11, 10, 10), s(12, 11, 12), s(13, 12, 12), s(20, 1, 20), s(21, 20, 20)];
        let pids: Vec<i32> = members(10, &all).iter().map(|m| m.pid).collect();
        assert_eq!(pids, [10, 11, 12, 13]);
    }

    #[test]
    fn this_process_is_sampled() {
        let me = std::process::id() as i32;
        let mut sampler = TreeSampler::new(me);
        let usage = sampler.sample().expect("this process");
        assert!(usage.rss_bytes > 1 << 20 && usage.processes >= 1, "{usage:?}");
        // The second sample reads only the members found by the first.
        let again = sampler.sample().expect("this process");
        assert!(again.cpu_s >= usage.cpu_s);
    }
}
