//! Goodput: of the time an experiment held its accelerators, how much went into productive steps, and where the
//! rest went.
//!
//! A pure computation over what EXP and the Job module recorded (each attempt's placement and release) and what the
//! workload logged (its step clock: `step`, `time` and `step_time_s` in `metrics.jsonl`, and optional `event` lines);
//! the application layer gathers them ([`GoodputInput`]) and hands them here. Nothing is asked of the workload beyond
//! its metrics lines.
//!
//! # The rules
//!
//! - **Held** is every attempt's time from placement (running) to release (its end). **Waiting for capacity** (queued
//!   → running) is reported apart: it is not held.
//! - Each step record belongs to the attempt whose held span contains its `time`. A step's duration is its
//!   `step_time_s`, else the time since the attempt's previous record. An **event line** (`event`: `checkpoint`,
//!   `eval`/`evaluation`, or anything else) took `event_s` seconds (else the time since the previous record) and is
//!   not a step.
//! - The **steady-state step time** is the median duration of the steps after each attempt's warm-up. An attempt's
//!   **warm-up** is its first step and the slow steps (over 1.5× the median of all steps) right after it.
//! - Time is attributed once, in this order: **failed attempts** (an attempt that failed — a non-zero exit, killed,
//!   cancelled, preempted, or an end not recorded — with no step record: all its held time; a **completed** attempt
//!   with no step record is not a failure: its held time cannot be split, so it is all unexplained, and a note says
//!   why);
//!   **lost to restarts** (the records of an attempt at or after the step the next attempt resumed from, and the time
//!   from its last record to its end — progress a restart repeated); **start-up** (placement → the first record's
//!   start); **checkpointing**, **evaluation**, **other events** (event lines); **compilation and warm-up** (warm-up
//!   steps' time over the steady-state step time); **input and host stalls** (the time over the steady-state step
//!   time of the other steps slower than 1.1× it — a step within that is normal variance, all productive; with a
//!   trace's host wait, that share of the step time, at most the excess);
//!   **tail** (the last attempt's time after its last record); **unexplained** (the rest: gaps between records, a
//!   step time beyond a trace's host wait) — always shown. **Productive** is every kept step's time up to the
//!   steady-state step time (all of it for an ordinary step within 1.1× it).
//! - Chip-seconds are seconds × the attempt's chips (its accelerator shape's devices; at least 1 for an attempt that
//!   held anything).
//!
//! A run with no step clock gets no goodput (`goodput_percent: null`) and the reason.

use serde::{Deserialize, Serialize};

#[cfg(test)]
mod tests;

/// One attempt of an experiment's job, as the Job module recorded it (milliseconds since the Unix epoch).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Attempt {
    /// Attempt number, from 1.
    pub attempt: u32,
    /// When it was queued (submitted or requeued for a retry).
    pub queued_ms: Option<i64>,
    /// When it was placed and started running; `None` if it never ran.
    pub running_ms: Option<i64>,
    /// When it ended (finished, failed, preempted, cancelled); `None` while it runs.
    pub ended_ms: Option<i64>,
    /// Chips (accelerator devices) it held: its accelerator shape's (8 for an 8-GPU shape; a CPU job's cores, 1 by
    /// default); a missing or nonsensical count is 1.
    pub chips: f64,
    /// How it ended; `unknown` when not recorded.
    #[serde(default)]
    pub outcome: Outcome,
}

/// How an attempt ended, as the Job module recorded it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Its command exited 0.
    Completed,
    /// A non-zero exit, killed, cancelled or preempted.
    Failed,
    /// Not recorded (it has not ended, or its end was not kept): without step records it counts as failed.
    #[default]
    Unknown,
}

/// One line of the workload's step clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepRecord {
    /// The step number.
    pub step: i64,
    /// Wall clock at the end of the step or event, seconds since the Unix epoch (the metrics line's `time`).
    pub time_s: f64,
    /// The step's own duration (`step_time_s`), when logged.
    pub step_time_s: Option<f64>,
    /// `checkpoint`, `eval`, …: the line marks an event, not a step.
    pub event: Option<String>,
    /// The event's duration (`event_s`), when logged.
    pub event_s: Option<f64>,
}

/// What a profile's trace says of the host: the share of the profiled steps' time the device waited on it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HostWait {
    /// 0..=1.
    pub fraction: f64,
}

/// What the goodput of one experiment is computed from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GoodputInput {
    pub attempts: Vec<Attempt>,
    pub steps: Vec<StepRecord>,
    pub host_wait: Option<HostWait>,
}

/// Where held time went that did not train.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    FailedAttempts,
    LostToRestarts,
    StartUp,
    Checkpointing,
    Evaluation,
    OtherEvents,
    CompilationAndWarmUp,
    InputAndHostStalls,
    Tail,
    Unexplained,
}

impl Cause {
    /// Every cause, in attribution order.
    pub const ALL: [Cause; 10] = [
        Cause::FailedAttempts,
        Cause::LostToRestarts,
        Cause::StartUp,
        Cause::Checkpointing,
        Cause::Evaluation,
        Cause::OtherEvents,
        Cause::CompilationAndWarmUp,
        Cause::InputAndHostStalls,
        Cause::Tail,
        Cause::Unexplained,
    ];

    /// The short name a headline uses.
    pub fn short(self) -> &'static str {
        match self {
            Cause::FailedAttempts => "failed attempts",
            Cause::LostToRestarts => "lost to restarts",
            Cause::StartUp => "start-up",
            Cause::Checkpointing => "checkpoint",
            Cause::Evaluation => "eval",
            Cause::OtherEvents => "other events",
            Cause::CompilationAndWarmUp => "compile",
            Cause::InputAndHostStalls => "input",
            Cause::Tail => "tail",
            Cause::Unexplained => "unexplained",
        }
    }
}

/// Held time of one cause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Badput {
    pub cause: Cause,
    pub seconds: f64,
    pub chip_seconds: f64,
    /// Share of the held time, 0..=100.
    pub percent: f64,
}

/// One experiment's goodput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Goodput {
    /// Productive share of the held time, 0..=100; `null` without a step clock (see `reason`).
    pub goodput_percent: Option<f64>,
    /// Why `goodput_percent` is `null`.
    pub reason: Option<String>,
    /// Held: every attempt from placement to release.
    pub held_s: f64,
    pub held_chip_seconds: f64,
    /// Productive step time.
    pub productive_s: f64,
    pub productive_chip_seconds: f64,
    /// Waiting for capacity (queued → running), not held.
    pub waiting_s: f64,
    /// The steady-state step time.
    pub steady_step_s: Option<f64>,
    /// Every cause, in attribution order (zeros included).
    pub badput: Vec<Badput>,
    pub attempts: u32,
    /// Steps kept (not repeated by a restart).
    pub steps: usize,
    pub notes: Vec<String>,
}

impl Goodput {
    /// No goodput, and why (what it is computed from could not be read).
    pub fn unknown(reason: impl Into<String>) -> Goodput {
        Goodput {
            goodput_percent: None,
            reason: Some(reason.into()),
            held_s: 0.0,
            held_chip_seconds: 0.0,
            productive_s: 0.0,
            productive_chip_seconds: 0.0,
            waiting_s: 0.0,
            steady_step_s: None,
            badput: Vec::new(),
            attempts: 0,
            steps: 0,
            notes: Vec::new(),
        }
    }

    /// "62 % goodput; start-up 18 %, compile 9 %, input 7 %": the three largest causes of at least 0.5 %.
    pub fn headline(&self) -> String {
        let Some(g) = self.goodput_percent else {
            return format!("goodput unknown: {}", self.reason.as_deref().unwrap_or("no step clock"));
        };
        let mut top: Vec<&Badput> = self.badput.iter().filter(|b| b.percent >= 0.5).collect();
        top.sort_by(|a, b| b.percent.total_cmp(&a.percent));
        let parts: Vec<String> =
            top.iter().take(3).map(|b| format!("{} {:.0} %", b.cause.short(), b.percent)).collect();
        if parts.is_empty() {
            format!("{g:.0} % goodput")
        } else {
            format!("{g:.0} % goodput; {}", parts.join(", "))
        }
    }

    /// Seconds of one cause.
    pub fn seconds(&self, cause: Cause) -> f64 {
        self.badput.iter().find(|b| b.cause == cause).map_or(0.0, |b| b.seconds)
    }
}

/// Chip-seconds of many runs by cause, summed: what a pool or a goal's chips did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GoodputTotals {
    /// Runs summed (those with a goodput; the rest are counted in `runs_without`).
    pub runs: usize,
    /// Runs that held resources but have no goodput (no step clock); their held time is in `held_chip_seconds`
    /// and in the `unexplained` cause.
    pub runs_without: usize,
    pub held_chip_seconds: f64,
    pub productive_chip_seconds: f64,
    /// Productive share of the held chip-seconds, 0..=100; `null` when nothing was held.
    pub goodput_percent: Option<f64>,
    /// Every cause's chip-seconds and share of the held chip-seconds, in attribution order.
    pub badput: Vec<Badput>,
    pub waiting_s: f64,
}

/// Sums runs' goodput. A run without a step clock adds its held time as unexplained, so that every held
/// chip-second is counted once.
pub fn totals<'g>(runs: impl IntoIterator<Item = &'g Goodput>) -> GoodputTotals {
    let mut t = GoodputTotals::default();
    let mut by = [0.0f64; Cause::ALL.len()];
    let mut secs = [0.0f64; Cause::ALL.len()];
    for g in runs {
        t.held_chip_seconds += g.held_chip_seconds;
        t.waiting_s += g.waiting_s;
        if g.goodput_percent.is_none() {
            t.runs_without += 1;
            let k = Cause::ALL.len() - 1;
            by[k] += g.held_chip_seconds;
            secs[k] += g.held_s;
            continue;
        }
        t.runs += 1;
        t.productive_chip_seconds += g.productive_chip_seconds;
        for b in &g.badput {
            if let Some(k) = Cause::ALL.iter().position(|&c| c == b.cause) {
                by[k] += b.chip_seconds;
                secs[k] += b.seconds;
            }
        }
    }
    let share = |x: f64| if t.held_chip_seconds > 0.0 { 100.0 * x / t.held_chip_seconds } else { 0.0 };
    t.goodput_percent = (t.held_chip_seconds > 0.0).then(|| share(t.productive_chip_seconds));
    t.badput = Cause::ALL
        .iter()
        .enumerate()
        .map(|(k, &cause)| Badput { cause, seconds: secs[k], chip_seconds: by[k], percent: share(by[k]) })
        .collect();
    t
}

/// Warm-up steps are the first step of an attempt and the steps right after it slower than this × the median.
const WARM_UP_FACTOR: f64 = 1.5;

/// A metrics line this many seconds after an attempt's recorded end is still the attempt's (the end comes from a
/// file's coarse time stamp or a whole second; the line from the workload's own clock).
const CLOCK_SLACK_S: f64 = 0.1;

/// An ordinary step up to this × the steady-state step time is normal variance (all productive); a slower one
/// stalled, for its time over the steady state.
const STALL_FACTOR: f64 = 1.1;

/// One attempt's records, resolved: each with its start and end (seconds since the epoch).
struct Span<'r> {
    record: &'r StepRecord,
    start: f64,
    end: f64,
}

/// Computes one experiment's goodput.
pub fn goodput(input: &GoodputInput) -> Goodput {
    let mut notes = Vec::new();
    let mut attempts: Vec<&Attempt> = input.attempts.iter().collect();
    attempts.sort_by_key(|a| a.attempt);
    // Each attempt's held span, from its placement to its end.
    let mut held: Vec<Option<(f64, f64)>> = attempts
        .iter()
        .map(|a| {
            let start = a.running_ms? as f64 / 1e3;
            let end = a.ended_ms.map(|e| e as f64 / 1e3)?;
            (end >= start).then_some((start, end))
        })
        .collect();
    let waiting_s: f64 =
        attempts.iter().filter_map(|a| Some(((a.running_ms? - a.queued_ms?) as f64 / 1e3).max(0.0))).sum();
    if attempts.iter().any(|a| a.running_ms.is_some() && a.ended_ms.is_none()) {
        notes.push("an attempt is still running: its time is not counted until it ends".to_string());
    }
    // Records by attempt, in time order.
    let mut records: Vec<&StepRecord> = input.steps.iter().filter(|r| r.time_s.is_finite()).collect();
    records.sort_by(|a, b| a.time_s.total_cmp(&b.time_s));
    let mut by_attempt: Vec<Vec<&StepRecord>> = vec![Vec::new(); attempts.len()];
    let mut outside = 0usize;
    for r in records {
        // A line written just before the process ended may carry a time a little after the end the backend
        // recorded (file times are coarse): it is the attempt's, and so is the time up to it.
        let within = |&(s, e): &(f64, f64)| r.time_s >= s && r.time_s <= e + CLOCK_SLACK_S;
        match held.iter().position(|h| h.as_ref().is_some_and(within)) {
            Some(i) => {
                by_attempt[i].push(r);
                if let Some((_, end)) = held[i].as_mut() {
                    *end = end.max(r.time_s);
                }
            }
            None => outside += 1,
        }
    }
    if outside > 0 {
        notes.push(format!("{outside} metrics line(s) fall outside every attempt's held time and are not counted"));
    }
    let mut spans: Vec<Vec<Span<'_>>> = Vec::with_capacity(attempts.len());
    let mut first_unknown = false;
    for (h, recs) in held.iter().zip(&by_attempt) {
        let Some((start, _)) = *h else {
            spans.push(Vec::new());
            continue;
        };
        let mut prev = start;
        let mut out = Vec::with_capacity(recs.len());
        for (i, r) in recs.iter().enumerate() {
            let own = if r.event.is_some() { r.event_s } else { r.step_time_s };
            let dur = match own.filter(|d| d.is_finite() && *d >= 0.0) {
                Some(d) => d.min(r.time_s - start),
                None => {
                    first_unknown |= i == 0 && r.event.is_none();
                    r.time_s - prev
                }
            };
            out.push(Span { record: r, start: r.time_s - dur, end: r.time_s });
            prev = r.time_s;
        }
        spans.push(out);
    }
    if first_unknown {
        notes.push(
            "the first step of an attempt has no step_time_s: its start is taken as the placement, so start-up \
             counts as compilation"
                .to_string(),
        );
    }

    let mut seconds = [0.0f64; Cause::ALL.len()];
    let mut chip_seconds = [0.0f64; Cause::ALL.len()];
    let slot = |c: Cause| Cause::ALL.iter().position(|&x| x == c).unwrap_or(Cause::ALL.len() - 1);
    let mut add = |c: Cause, s: f64, chips: f64| {
        seconds[slot(c)] += s.max(0.0);
        chip_seconds[slot(c)] += s.max(0.0) * chips;
    };
    // Steps that a later attempt repeated: from the step the next attempt with steps resumed at.
    let resume_of_next = |i: usize| -> Option<i64> {
        spans[i + 1..].iter().find_map(|s| s.iter().filter(|x| x.record.event.is_none()).map(|x| x.record.step).min())
    };
    // Kept steps and their warm-up flags, for the steady-state step time.
    let mut kept: Vec<(usize, usize, bool)> = Vec::new(); // (attempt, index, warm-up)
    let all_durations: Vec<f64> =
        spans.iter().flatten().filter(|s| s.record.event.is_none()).map(|s| s.end - s.start).collect();
    let overall_median = median(all_durations);
    let mut held_s = 0.0;
    let mut held_chip = 0.0;
    let mut completed_without_clock = Vec::new();
    for (i, a) in attempts.iter().enumerate() {
        let Some((start, end)) = held[i] else { continue };
        let chips = chips_of(a);
        held_s += end - start;
        held_chip += (end - start) * chips;
        let s = &spans[i];
        if s.is_empty() {
            // Nothing tells where a completed attempt's time went: it is not a failure, it is unexplained.
            if a.outcome == Outcome::Completed {
                completed_without_clock.push(a.attempt);
                add(Cause::Unexplained, end - start, chips);
            } else {
                add(Cause::FailedAttempts, end - start, chips);
            }
            continue;
        }
        let resume = resume_of_next(i);
        let lost_from = s.iter().position(|x| resume.is_some_and(|r| x.record.event.is_none() && x.record.step >= r));
        add(Cause::StartUp, s[0].start - start, chips);
        let mut warm = true;
        let mut prev_end = s[0].start;
        for (k, x) in s.iter().enumerate() {
            if lost_from.is_some_and(|l| k >= l) {
                add(Cause::LostToRestarts, x.end - prev_end, chips);
                prev_end = x.end;
                continue;
            }
            add(Cause::Unexplained, x.start - prev_end, chips);
            prev_end = x.end;
            match x.record.event.as_deref() {
                Some(e) => add(event_cause(e), x.end - x.start, chips),
                None => {
                    let slow = overall_median.is_some_and(|m| x.end - x.start > WARM_UP_FACTOR * m);
                    warm = warm && (k == 0 || slow);
                    kept.push((i, k, warm));
                }
            }
        }
        let last_attempt = spans[i + 1..].iter().all(|s| s.is_empty());
        let tail = if last_attempt && lost_from.is_none() { Cause::Tail } else { Cause::LostToRestarts };
        add(tail, end - prev_end, chips);
    }
    let steady = median(
        kept.iter().filter(|(_, _, warm)| !warm).map(|&(i, k, _)| spans[i][k].end - spans[i][k].start).collect(),
    )
    .or(overall_median);
    let mut productive = 0.0;
    let mut productive_chip = 0.0;
    let mut excess_ordinary = 0.0;
    let mut excess_ordinary_chip = 0.0;
    let mut ordinary_time = 0.0;
    for &(i, k, warm) in &kept {
        let chips = chips_of(attempts[i]);
        let d = spans[i][k].end - spans[i][k].start;
        // An ordinary step within the normal variance of the steady state is all productive.
        let good = match steady {
            Some(m) if !warm && d <= STALL_FACTOR * m => d,
            Some(m) => d.min(m),
            None => d,
        };
        productive += good;
        productive_chip += good * chips;
        if warm {
            add(Cause::CompilationAndWarmUp, d - good, chips);
        } else {
            excess_ordinary += d - good;
            excess_ordinary_chip += (d - good) * chips;
            ordinary_time += d;
        }
    }
    // Input and host stalls: the ordinary steps' excess, or the trace's host wait share of their time.
    let stalls = match input.host_wait {
        Some(h) if h.fraction.is_finite() => (h.fraction.clamp(0.0, 1.0) * ordinary_time).min(excess_ordinary),
        _ => excess_ordinary,
    };
    let share = if excess_ordinary > 0.0 { stalls / excess_ordinary } else { 0.0 };
    seconds[slot(Cause::InputAndHostStalls)] += stalls;
    chip_seconds[slot(Cause::InputAndHostStalls)] += excess_ordinary_chip * share;
    seconds[slot(Cause::Unexplained)] += excess_ordinary - stalls;
    chip_seconds[slot(Cause::Unexplained)] += excess_ordinary_chip * (1.0 - share);
    if !completed_without_clock.is_empty() {
        let which: Vec<String> = completed_without_clock.iter().map(u32::to_string).collect();
        notes.push(format!(
            "{} {} completed but logged no step clock (metrics lines with `step` and `time`) while it held its \
             chips: that held time cannot be split, so it is unexplained, not a failed attempt",
            if which.len() == 1 { "attempt" } else { "attempts" },
            which.join(", ")
        ));
    }
    if input.host_wait.is_some() {
        notes.push(
            "input and host stalls: the trace's host wait share of the step time; the rest of the slow steps' time \
             is unexplained"
                .to_string(),
        );
    }

    let steps = kept.len();
    let (goodput_percent, reason) = if held_s <= 0.0 {
        (None, Some("the experiment never held its resources (no attempt ran and ended)".to_string()))
    } else if steps == 0 {
        (None, Some("no step clock: the run logged no metrics lines with `step` and `time`".to_string()))
    } else {
        (Some(100.0 * productive / held_s), None)
    };
    let badput = Cause::ALL
        .iter()
        .enumerate()
        .map(|(k, &cause)| Badput {
            cause,
            seconds: seconds[k],
            chip_seconds: chip_seconds[k],
            percent: if held_s > 0.0 { 100.0 * seconds[k] / held_s } else { 0.0 },
        })
        .collect();
    Goodput {
        goodput_percent,
        reason,
        held_s,
        held_chip_seconds: held_chip,
        productive_s: productive,
        productive_chip_seconds: productive_chip,
        waiting_s,
        steady_step_s: steady,
        badput,
        attempts: attempts.len() as u32,
        steps,
        notes,
    }
}

/// An attempt's chips; a missing or nonsensical count is 1.
fn chips_of(a: &Attempt) -> f64 {
    if a.chips.is_finite() && a.chips > 0.0 {
        a.chips
    } else {
        1.0
    }
}

fn event_cause(event: &str) -> Cause {
    match event.to_ascii_lowercase().as_str() {
        "checkpoint" | "checkpointing" | "save" | "restore" => Cause::Checkpointing,
        "eval" | "evaluation" | "validation" => Cause::Evaluation,
        _ => Cause::OtherEvents,
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}
