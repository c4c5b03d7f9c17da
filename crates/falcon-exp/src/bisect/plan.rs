//! The search itself, pure: what the runs so far say about each commit, and what to run next.
//!
//! Commits are indexed along first parents, `0` the good end and `n − 1` the bad one. Each step:
//!
//! 1. **The ends.** Each gets [`Options::min_runs`] runs; then the run-level verdict of bad against good decides
//!    whether there is anything to find. `inconclusive` adds runs to both ends (two at a time) up to
//!    [`Options::max_runs`] a side; `same`, or `inconclusive` at the cap, is the answer: no culprit.
//! 2. **A probe** is classified by two run-level verdicts against the ends: a change from the good end in the ends'
//!    direction makes it **bad**; a change from it to the bad end in that direction makes it **good**; neither
//!    adds runs at the probe until one decides or the cap is hit (**inconclusive**, searched around like a
//!    skipped commit). Comparing against both ends never asks a noisy probe to prove it is the *same* as an end
//!    (which needs many more runs than telling an 8 % change apart).
//! 3. **Failing commits** — two failed runs and more failures than runs with the metric, or the cap spent
//!    without [`Options::min_runs`] measured runs — are **skipped** and named, like `git bisect skip`.
//! 4. The culprit is the first bad commit after the last good one, once its own verdict against its parent decides
//!    too (runs are added to both up to the cap; at the cap the culprit stands with that verdict as it is); when
//!    only skipped or inconclusive commits lie
//!    between them, the answer is the range, no culprit. Otherwise the next probes are [`Options::probes`] commits
//!    spread evenly over the open range (two at once split it in three).
//!
//! Every verdict pools the run-to-run noise of the other commits' runs (their within-commit variance of log
//! medians) as its prior, as the history of a config hash does for `exp compare`: the workload's noise is the
//! same at every commit, and a probe with three runs borrows what twenty others know.

use falcon_core::stats::{compare_runs, CompareOptions, Direction, NoiseEstimate, RunSample, Verdict, VerdictKind};
use std::collections::BTreeMap;

/// How the search runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The metric compared.
    pub metric: String,
    /// Which way is better.
    pub direction: Direction,
    /// Runs a commit gets before its first verdict.
    pub min_runs: usize,
    /// Runs a commit gets at most (measured, live and failed together).
    pub max_runs: usize,
    /// Commits probed at once.
    pub probes: usize,
}

/// What one commit's runs are so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommitRuns {
    /// The completed runs' samples of the metric.
    pub samples: Vec<RunSample>,
    /// Runs still live (pending, provisioning, running).
    pub live: usize,
    /// Runs that failed, were cancelled, or completed without the metric.
    pub failed: usize,
}

impl CommitRuns {
    fn all(&self) -> usize {
        self.samples.len() + self.live + self.failed
    }
    fn failing(&self, opts: &Options) -> bool {
        (self.failed >= 2 && self.failed > self.samples.len())
            || (self.live == 0 && self.all() >= opts.max_runs && self.samples.len() < opts.min_runs)
    }
}

/// What the runs say about a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Like the good end.
    Good,
    /// Changed like the bad end.
    Bad,
    /// Its runs fail.
    Skipped,
    /// The cap of runs did not decide it.
    Inconclusive,
    /// Runs are still going or still to add.
    Pending,
}

impl Class {
    /// As the JSON writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Good => "good",
            Class::Bad => "bad",
            Class::Skipped => "skipped",
            Class::Inconclusive => "inconclusive",
            Class::Pending => "pending",
        }
    }
}

/// How the search ends.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// The first bad commit after the last good one, with the verdict of it against its parent.
    Culprit { index: usize, verdict: Box<Verdict> },
    /// The ends do not differ (`same`, or `inconclusive` at the cap): nothing to find.
    NoChange,
    /// The change is in `(good, bad]`, but every commit between was skipped or inconclusive.
    Range { good: usize, bad: usize },
    /// An end cannot be measured.
    EndFails { index: usize },
}

/// One step's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Runs to add: (commit index, how many).
    pub submit: Vec<(usize, usize)>,
    /// The answer, once there is one.
    pub decision: Option<Decision>,
    /// The verdict of the bad end against the good one, once both have their runs.
    pub ends: Option<Verdict>,
    /// Each commit with runs, classified, with its verdict against the good end when it has one.
    pub classes: BTreeMap<usize, (Class, Option<Verdict>)>,
}

/// The pooled noise of every commit's runs but `except`'s: within-commit variance of log medians, by degrees of
/// freedom. `None` below one degree of freedom.
fn pooled_noise(runs: &BTreeMap<usize, CommitRuns>, except: &[usize]) -> Option<NoiseEstimate> {
    let (mut ss, mut dof) = (0.0f64, 0usize);
    for (i, r) in runs {
        if except.contains(i) {
            continue;
        }
        let logs: Vec<f64> =
            r.samples.iter().map(|s| s.median).filter(|m| m.is_finite() && *m > 0.0).map(f64::ln).collect();
        if logs.len() < 2 {
            continue;
        }
        let mean = logs.iter().sum::<f64>() / logs.len() as f64;
        ss += logs.iter().map(|y| (y - mean).powi(2)).sum::<f64>();
        dof += logs.len() - 1;
    }
    (dof > 0).then(|| NoiseEstimate { cv: (ss / dof as f64).sqrt(), runs: dof + 1 })
}

/// The run-level verdict of commit `b` against commit `a`, the other commits' noise as its prior.
pub fn verdict(runs: &BTreeMap<usize, CommitRuns>, a: usize, b: usize, opts: &Options) -> Verdict {
    let empty = CommitRuns::default();
    let (ra, rb) = (runs.get(&a).unwrap_or(&empty), runs.get(&b).unwrap_or(&empty));
    let noise = pooled_noise(runs, &[a, b]);
    compare_runs(&opts.metric, opts.direction, &ra.samples, &rb.samples, noise, &CompareOptions::default())
}

/// The next step of a search over `n` commits (n ≥ 2) given the runs so far (indexed by commit).
pub fn plan(n: usize, runs: &BTreeMap<usize, CommitRuns>, opts: &Options) -> Plan {
    let mut out = Plan { submit: Vec::new(), decision: None, ends: None, classes: BTreeMap::new() };
    let empty = CommitRuns::default();
    let at = |i: usize| runs.get(&i).unwrap_or(&empty);
    let (good, bad) = (0, n - 1);
    // 1. The ends.
    let mut waiting = false;
    for end in [good, bad] {
        let r = at(end);
        if r.failing(opts) {
            out.decision = Some(Decision::EndFails { index: end });
            return out;
        }
        let have = r.samples.len() + r.live;
        if have < opts.min_runs {
            out.submit.push((end, opts.min_runs - have));
        }
        waiting |= r.live > 0 || have < opts.min_runs;
    }
    if waiting {
        return out;
    }
    let ends = verdict(runs, good, bad, opts);
    let changed = ends.verdict;
    out.classes.insert(good, (Class::Good, None));
    let bad_class = match changed {
        VerdictKind::Improved | VerdictKind::Regressed => Class::Bad,
        VerdictKind::Same => Class::Good,
        VerdictKind::Inconclusive => Class::Pending,
    };
    out.classes.insert(bad, (bad_class, Some(ends.clone())));
    out.ends = Some(ends);
    match changed {
        VerdictKind::Improved | VerdictKind::Regressed => {}
        VerdictKind::Same => {
            out.decision = Some(Decision::NoChange);
            return out;
        }
        VerdictKind::Inconclusive => {
            let room = |i: usize| opts.max_runs.saturating_sub(at(i).all());
            if room(good) == 0 || room(bad) == 0 {
                out.decision = Some(Decision::NoChange);
                out.classes.insert(bad, (Class::Inconclusive, out.ends.clone()));
            } else {
                out.submit = vec![(good, room(good).min(2)), (bad, room(bad).min(2))];
            }
            return out;
        }
    }
    // 2. The probes run so far.
    let mut top_up: BTreeMap<usize, usize> = BTreeMap::new();
    for (&i, r) in runs.range(1..bad) {
        if r.all() == 0 {
            continue;
        }
        let class = if r.failing(opts) {
            (Class::Skipped, None)
        } else if r.samples.len() + r.live < opts.min_runs {
            top_up.insert(i, opts.min_runs - r.samples.len() - r.live);
            (Class::Pending, None)
        } else if r.live > 0 {
            (Class::Pending, None)
        } else {
            let from_good = verdict(runs, good, i, opts);
            if from_good.verdict == changed {
                (Class::Bad, Some(from_good))
            } else if verdict(runs, i, bad, opts).verdict == changed {
                (Class::Good, Some(from_good))
            } else if r.all() < opts.max_runs {
                top_up.insert(i, (opts.max_runs - r.all()).min(2));
                (Class::Pending, Some(from_good))
            } else {
                (Class::Inconclusive, Some(from_good))
            }
        };
        out.classes.insert(i, class);
    }
    // 3. Where the change is.
    let first_bad = out.classes.iter().find(|(_, (c, _))| *c == Class::Bad).map_or(bad, |(i, _)| *i);
    let last_good =
        out.classes.range(..first_bad).rev().find(|(_, (c, _))| *c == Class::Good).map_or(good, |(i, _)| *i);
    if first_bad == last_good + 1 {
        // The culprit against its parent, decided too while both have room for runs: the answer a person checks.
        let v = verdict(runs, last_good, first_bad, opts);
        let room = |i: usize| opts.max_runs.saturating_sub(at(i).all());
        let live = at(last_good).live + at(first_bad).live;
        if live > 0 {
            return out;
        }
        if v.verdict != changed && room(last_good) > 0 && room(first_bad) > 0 {
            out.submit = vec![(last_good, room(last_good).min(2)), (first_bad, room(first_bad).min(2))];
            return out;
        }
        out.decision = Some(Decision::Culprit { index: first_bad, verdict: Box::new(v) });
        return out;
    }
    let open: Vec<usize> = (last_good + 1..first_bad)
        .filter(|i| !matches!(out.classes.get(i).map(|c| c.0), Some(Class::Skipped | Class::Inconclusive)))
        .collect();
    if open.is_empty() {
        out.decision = Some(Decision::Range { good: last_good, bad: first_bad });
        return out;
    }
    let running: Vec<usize> = open.iter().copied().filter(|i| out.classes.contains_key(i)).collect();
    if !running.is_empty() {
        out.submit = running.iter().filter_map(|i| top_up.get(i).map(|k| (*i, *k))).collect();
        return out;
    }
    // 4. New probes, spread over the open range.
    let k = opts.probes.clamp(1, open.len());
    let mut picks: Vec<usize> = (1..=k).map(|j| open[(j * (open.len() + 1) / (k + 1)).saturating_sub(1)]).collect();
    picks.dedup();
    out.submit = picks.into_iter().map(|i| (i, opts.min_runs)).collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(probes: usize) -> Options {
        Options { metric: "step_time_s".into(), direction: Direction::LowerIsBetter, min_runs: 3, max_runs: 10, probes }
    }

    /// A deterministic stand-in for run-to-run noise: ±3 % spread by a fixed sequence.
    fn run(level: f64, k: usize) -> RunSample {
        let wobble = [0.0, 0.03, -0.03, 0.015, -0.015, 0.02, -0.02, 0.01, -0.01, 0.0][k % 10];
        RunSample { median: level * (1.0 + wobble), spread: 0.0002, n_steps: 30 }
    }

    /// Drives the planner to its decision over commits whose level is `level(i)`, every run finishing at once;
    /// returns the decision and the runs used.
    fn drive(n: usize, level: impl Fn(usize) -> f64, fails: &[usize], probes: usize) -> (Decision, usize) {
        let mut runs: BTreeMap<usize, CommitRuns> = BTreeMap::new();
        for _ in 0..200 {
            let p = plan(n, &runs, &opts(probes));
            if let Some(d) = p.decision {
                return (d, runs.values().map(CommitRuns::all).sum());
            }
            assert!(!p.submit.is_empty(), "a plan without a decision submits something");
            for (i, k) in p.submit {
                let r = runs.entry(i).or_default();
                for _ in 0..k {
                    if fails.contains(&i) {
                        r.failed += 1;
                    } else {
                        let n = r.samples.len();
                        r.samples.push(run(level(i), n + i));
                    }
                }
            }
        }
        panic!("no decision in 200 steps");
    }

    #[test]
    fn finds_an_eight_percent_step_among_24_commits() {
        for culprit in [1, 2, 11, 14, 22, 23] {
            for probes in [1, 2] {
                let (d, used) = drive(24, |i| if i >= culprit { 1.08 } else { 1.0 }, &[], probes);
                match d {
                    Decision::Culprit { index, verdict } => {
                        assert_eq!(index, culprit, "probes {probes}");
                        assert_eq!(verdict.verdict, VerdictKind::Regressed);
                    }
                    other => panic!("culprit {culprit}: {other:?}"),
                }
                assert!(used <= 60, "culprit {culprit}, probes {probes}: {used} runs");
            }
        }
    }

    #[test]
    fn no_change_names_no_culprit() {
        let (d, used) = drive(24, |_| 1.0, &[], 1);
        assert_eq!(d, Decision::NoChange);
        assert!(used <= 20, "{used}");
    }

    #[test]
    fn failing_commits_are_skipped_and_a_range_is_said_when_only_they_remain() {
        // The culprit is 12; 5 fails to run: skipped, 12 still found. When its parent 11 fails, 11 or 12 may have
        // made the change (as `git bisect skip` says); when 12 itself fails, 12 or 13.
        let (d, _) = drive(24, |i| if i >= 12 { 1.08 } else { 1.0 }, &[5], 1);
        assert!(matches!(d, Decision::Culprit { index: 12, .. }), "{d:?}");
        let (d, _) = drive(24, |i| if i >= 12 { 1.08 } else { 1.0 }, &[11], 1);
        assert_eq!(d, Decision::Range { good: 10, bad: 12 });
        let (d, _) = drive(24, |i| if i >= 12 { 1.08 } else { 1.0 }, &[12], 1);
        assert_eq!(d, Decision::Range { good: 11, bad: 13 });
        let (d, _) = drive(24, |_| 1.0, &[0], 1);
        assert_eq!(d, Decision::EndFails { index: 0 });
    }

    #[test]
    fn an_improvement_is_searched_like_a_regression() {
        let (d, _) = drive(10, |i| if i >= 4 { 0.9 } else { 1.0 }, &[], 1);
        assert!(matches!(d, Decision::Culprit { index: 4, .. }), "{d:?}");
    }

    #[test]
    fn two_probes_split_the_range_in_three() {
        let mut runs = BTreeMap::new();
        for end in [0, 23] {
            let level = if end == 0 { 1.0 } else { 1.08 };
            runs.insert(end, CommitRuns { samples: (0..6).map(|k| run(level, k)).collect(), ..Default::default() });
        }
        let p = plan(24, &runs, &opts(2));
        assert_eq!(p.submit, vec![(7, 3), (15, 3)]);
        let p = plan(24, &runs, &opts(1));
        assert_eq!(p.submit, vec![(11, 3)]);
    }
}
