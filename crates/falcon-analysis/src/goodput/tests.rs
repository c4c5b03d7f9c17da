use super::*;

/// A run built step by step with a known truth: the issue's test workload on a 10-second queue.
struct Run {
    attempts: Vec<Attempt>,
    steps: Vec<StepRecord>,
    now: f64,
}

impl Run {
    fn attempt(&mut self, n: u32, queued: f64, running: f64, chips: f64) {
        self.attempts.push(Attempt {
            attempt: n,
            queued_ms: Some((queued * 1e3).round() as i64),
            running_ms: Some((running * 1e3).round() as i64),
            ended_ms: None,
            chips,
            outcome: Outcome::Unknown,
        });
        self.now = running;
    }
    fn step(&mut self, step: i64, dur: f64) {
        self.now += dur;
        self.steps.push(StepRecord { step, time_s: self.now, step_time_s: Some(dur), event: None, event_s: None });
    }
    fn event(&mut self, step: i64, what: &str, dur: f64) {
        self.now += dur;
        self.steps.push(StepRecord {
            step,
            time_s: self.now,
            step_time_s: None,
            event: Some(what.into()),
            event_s: Some(dur),
        });
    }
    /// The last attempt exits 0 `after` seconds from now.
    fn end(&mut self, after: f64) {
        self.ended(after, Outcome::Completed);
    }
    /// The last attempt fails (a non-zero exit, killed, preempted) `after` seconds from now.
    fn fail(&mut self, after: f64) {
        self.ended(after, Outcome::Failed);
    }
    fn ended(&mut self, after: f64, outcome: Outcome) {
        self.now += after;
        let last = self.attempts.last_mut().unwrap();
        last.ended_ms = Some((self.now * 1e3).round() as i64);
        last.outcome = outcome;
    }
    fn input(&self) -> GoodputInput {
        GoodputInput { attempts: self.attempts.clone(), steps: self.steps.clone(), host_wait: None }
    }
}

const T0: f64 = 1_800_000_000.0;

/// Sleeps 5 s, a 3 s first step, 0.1 s steps with 40 ms more every 10th, a 1 s checkpoint every 20 steps; killed
/// 0.2 s after step 30, retried from the step-20 checkpoint; 0.5 s after step 50 it ends.
fn issue_workload(chips: f64) -> Run {
    let mut run = Run { attempts: Vec::new(), steps: Vec::new(), now: 0.0 };
    run.attempt(1, T0, T0 + 10.0, chips);
    run.attempt_steps(1..=30);
    run.fail(0.2);
    let killed = run.now;
    run.attempt(2, killed, killed + 2.0, chips);
    run.attempt_steps(21..=50);
    run.end(0.5);
    run
}

impl Run {
    /// One attempt's work: 5 s of start-up, then `steps` (the first 3 s, every 10th 0.14 s, the others 0.1 s), a
    /// 1 s checkpoint after every 20th.
    fn attempt_steps(&mut self, steps: std::ops::RangeInclusive<i64>) {
        self.now += 5.0;
        let first = *steps.start();
        for step in steps {
            let dur = match step {
                s if s == first => 3.0,
                s if s % 10 == 0 => 0.14,
                _ => 0.1,
            };
            self.step(step, dur);
            if step % 20 == 0 {
                self.event(step, "checkpoint", 1.0);
            }
        }
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-4
}

#[test]
fn the_issue_workload_gives_each_cause_its_truth() {
    let g = goodput(&issue_workload(8.0).input());
    let truth = [
        (Cause::FailedAttempts, 0.0),
        // Attempt 1's steps 21..=30 (one of them a stall step) and the 0.2 s until it was killed.
        (Cause::LostToRestarts, 10.0 * 0.1 + 0.04 + 0.2),
        (Cause::StartUp, 10.0),
        // After step 20 in the first attempt (before the resume point: kept) and after step 40.
        (Cause::Checkpointing, 2.0),
        (Cause::Evaluation, 0.0),
        (Cause::OtherEvents, 0.0),
        (Cause::CompilationAndWarmUp, 2.0 * 2.9),
        // Kept stall steps: 10 and 20, then 30, 40, 50.
        (Cause::InputAndHostStalls, 5.0 * 0.04),
        (Cause::Tail, 0.5),
        (Cause::Unexplained, 0.0),
    ];
    for (cause, seconds) in truth {
        assert!(close(g.seconds(cause), seconds), "{cause:?}: {} vs {seconds}: {g:#?}", g.seconds(cause));
    }
    assert!(close(g.steady_step_s.unwrap(), 0.1));
    assert!(close(g.productive_s, 50.0 * 0.1), "{}", g.productive_s);
    let held = g.productive_s + g.badput.iter().map(|b| b.seconds).sum::<f64>();
    assert!(close(held, g.held_s), "every held second is attributed once: {held} vs {}", g.held_s);
    assert!(close(g.held_chip_seconds, 8.0 * g.held_s));
    assert!(close(g.waiting_s, 12.0), "10 s queued, then 2 s for the retry");
    assert_eq!((g.attempts, g.steps), (2, 50));
    assert!(close(g.goodput_percent.unwrap(), 100.0 * 5.0 / g.held_s));
    assert!(
        g.headline().starts_with(&format!("{:.0} % goodput; start-up ", g.goodput_percent.unwrap())),
        "{}",
        g.headline()
    );
}

#[test]
fn a_run_without_a_step_clock_has_no_goodput_and_says_why() {
    let mut run = issue_workload(1.0);
    run.steps.clear();
    let g = goodput(&run.input());
    assert_eq!(g.goodput_percent, None);
    assert!(g.reason.as_deref().unwrap().contains("no step clock"));
    // The first attempt was killed: failed. The retry completed: its time is unexplained, not failed.
    let held = |a: &Attempt| (a.ended_ms.unwrap() - a.running_ms.unwrap()) as f64 / 1e3;
    let (killed, completed) = (held(&run.attempts[0]), held(&run.attempts[1]));
    assert!(close(g.seconds(Cause::FailedAttempts), killed), "{g:#?}");
    assert!(close(g.seconds(Cause::Unexplained), completed), "{g:#?}");
    assert!(close(g.held_s, killed + completed));
    assert!(g.notes.iter().any(|n| n.contains("attempt 2 completed but logged no step clock")), "{:?}", g.notes);
    assert!(g.headline().starts_with("goodput unknown: no step clock"));
    assert_eq!(goodput(&GoodputInput::default()).goodput_percent, None);
}

#[test]
fn an_attempt_that_logged_nothing_is_a_failed_attempt() {
    let mut run = Run { attempts: Vec::new(), steps: Vec::new(), now: 0.0 };
    run.attempt(1, T0, T0 + 1.0, 1.0);
    run.fail(4.0); // crashed before its first step
    run.attempt(2, run.now, run.now, 1.0);
    run.now += 1.0;
    for step in 1..=10 {
        run.step(step, 0.5);
    }
    run.end(0.0);
    let g = goodput(&run.input());
    assert!(close(g.seconds(Cause::FailedAttempts), 4.0), "{g:#?}");
    assert!(close(g.seconds(Cause::StartUp), 1.0));
    // The first step is warm-up, but no slower than the rest: no compile time.
    assert!(close(g.seconds(Cause::CompilationAndWarmUp), 0.0));
    assert!(close(g.goodput_percent.unwrap(), 100.0 * 5.0 / 10.0));
}

#[test]
fn a_trace_host_wait_bounds_the_stalls_and_the_rest_is_unexplained() {
    let mut input = issue_workload(1.0).input();
    input.host_wait = Some(HostWait { fraction: 0.001 });
    let g = goodput(&input);
    // Ordinary kept steps: 48 of them (two warm-up steps out of 50), 43 × 0.1 + 5 × 0.14 = 5.0 s.
    assert!(close(g.seconds(Cause::InputAndHostStalls), 0.001 * 5.0), "{g:#?}");
    assert!(close(g.seconds(Cause::Unexplained), 0.2 - 0.005), "{}", g.seconds(Cause::Unexplained));
    assert!(g.notes.iter().any(|n| n.contains("host wait")));
}

#[test]
fn gaps_between_records_are_unexplained_and_events_are_classed() {
    let mut run = Run { attempts: Vec::new(), steps: Vec::new(), now: 0.0 };
    run.attempt(1, T0, T0, 2.0);
    for step in 1..=4 {
        run.step(step, 1.0);
    }
    run.now += 0.5; // nothing logged for half a second
    run.event(4, "eval", 2.0);
    run.event(4, "profiler-flush", 0.25);
    run.step(5, 1.0);
    run.end(0.0);
    let g = goodput(&run.input());
    assert!(close(g.seconds(Cause::Unexplained), 0.5), "{g:#?}");
    assert!(close(g.seconds(Cause::Evaluation), 2.0));
    assert!(close(g.seconds(Cause::OtherEvents), 0.25));
    assert!(close(g.badput.iter().find(|b| b.cause == Cause::Evaluation).unwrap().chip_seconds, 4.0));
}

#[test]
fn records_outside_the_held_time_and_running_attempts_are_noted() {
    let mut run = issue_workload(1.0);
    run.steps.push(StepRecord { step: 99, time_s: T0 - 100.0, step_time_s: None, event: None, event_s: None });
    run.attempts.push(Attempt {
        attempt: 3,
        queued_ms: None,
        running_ms: Some(0),
        ended_ms: None,
        chips: 1.0,
        outcome: Outcome::Unknown,
    });
    let g = goodput(&run.input());
    assert!(g.notes.iter().any(|n| n.contains("1 metrics line(s) fall outside")), "{:?}", g.notes);
    assert!(g.notes.iter().any(|n| n.contains("still running")));
}

#[test]
fn totals_sum_chip_seconds_and_count_runs_without_a_clock_as_unexplained() {
    let a = goodput(&issue_workload(8.0).input());
    let b = goodput(&issue_workload(1.0).input());
    let mut none = issue_workload(2.0);
    none.steps.clear();
    let c = goodput(&none.input());
    let t = totals([&a, &b, &c]);
    assert_eq!((t.runs, t.runs_without), (2, 1));
    assert!(close(t.held_chip_seconds, a.held_chip_seconds + b.held_chip_seconds + c.held_chip_seconds));
    assert!(close(t.productive_chip_seconds, 9.0 * 5.0));
    let attributed = t.productive_chip_seconds + t.badput.iter().map(|b| b.chip_seconds).sum::<f64>();
    // The run without a clock counts its held time as failed attempts (the killed one) and unexplained (the completed
    // one) inside its own record; in the totals it is all unexplained, once.
    assert!(close(attributed, t.held_chip_seconds), "{attributed} vs {}", t.held_chip_seconds);
    assert!(close(t.goodput_percent.unwrap(), 100.0 * 45.0 / t.held_chip_seconds));
    assert_eq!(totals([]).goodput_percent, None);
}

#[test]
fn a_line_just_after_the_recorded_end_is_the_attempts() {
    // The backend's end comes from a coarse file time: the last line's own clock may be a few ms later.
    let mut run = Run { attempts: Vec::new(), steps: Vec::new(), now: 0.0 };
    run.attempt(1, T0, T0, 1.0);
    for step in 1..=10 {
        run.step(step, 0.5);
    }
    run.end(0.0);
    run.attempts[0].ended_ms = run.attempts[0].ended_ms.map(|e| e - 30);
    let g = goodput(&run.input());
    assert!(g.notes.iter().all(|n| !n.contains("outside")), "{:?}", g.notes);
    assert_eq!(g.steps, 10);
    assert!(close(g.held_s, 5.0), "held up to the last line: {}", g.held_s);
    // Far after the end, a line is not the attempt's.
    run.steps.push(StepRecord { step: 11, time_s: run.now + 5.0, step_time_s: Some(0.5), event: None, event_s: None });
    assert!(goodput(&run.input()).notes.iter().any(|n| n.contains("1 metrics line(s) fall outside")));
}

/// One attempt on `chips` chips, placed at `T0`, that ends `held` seconds later as `outcome` with no step records.
fn silent(outcome: Outcome, held: f64, chips: f64) -> GoodputInput {
    let mut run = Run { attempts: Vec::new(), steps: Vec::new(), now: 0.0 };
    run.attempt(1, T0 - 1.0, T0, chips);
    run.ended(held, outcome);
    run.input()
}

#[test]
fn a_completed_attempt_without_a_step_clock_is_unexplained_not_failed() {
    // The issue: a run that exits 0 and logs no step clock said "failed attempts 100 %".
    let g = goodput(&silent(Outcome::Completed, 0.5, 1.0));
    assert_eq!(g.goodput_percent, None);
    assert!(g.reason.as_deref().unwrap().contains("no step clock"), "{g:#?}");
    assert!(close(g.held_s, 0.5) && close(g.held_chip_seconds, 0.5), "{g:#?}");
    assert_eq!(g.seconds(Cause::FailedAttempts), 0.0, "{g:#?}");
    let unexplained = g.badput.iter().find(|b| b.cause == Cause::Unexplained).unwrap();
    assert!(close(unexplained.seconds, 0.5) && close(unexplained.percent, 100.0), "{unexplained:?}");
    assert!(close(unexplained.chip_seconds, 0.5));
    let note = g.notes.iter().find(|n| n.contains("logged no step clock")).unwrap_or_else(|| panic!("{g:#?}"));
    assert!(note.starts_with("attempt 1 completed") && note.contains("cannot be split"), "{note}");
    // Metrics lines without a `time` reach analysis as no records at all: the same. A line outside its held time is
    // not its either.
    let mut input = silent(Outcome::Completed, 0.5, 1.0);
    input.steps.push(StepRecord { step: 1, time_s: T0 + 60.0, step_time_s: Some(0.1), event: None, event_s: None });
    let g = goodput(&input);
    assert!(close(g.seconds(Cause::Unexplained), 0.5) && g.seconds(Cause::FailedAttempts) == 0.0, "{g:#?}");
}

#[test]
fn a_failed_or_unrecorded_attempt_without_steps_is_a_failed_attempt() {
    for outcome in [Outcome::Failed, Outcome::Unknown] {
        let g = goodput(&silent(outcome, 2.0, 1.0));
        assert!(close(g.seconds(Cause::FailedAttempts), 2.0), "{outcome:?}: {g:#?}");
        assert_eq!(g.seconds(Cause::Unexplained), 0.0, "{outcome:?}");
        assert!(g.notes.iter().all(|n| !n.contains("logged no step clock")), "{:?}", g.notes);
    }
}

#[test]
fn chip_seconds_come_from_the_attempts_chips_at_least_one() {
    // An 8-GPU shape: every chip-second is 8 × its seconds, in the held time and in each cause.
    let g = goodput(&issue_workload(8.0).input());
    assert!(close(g.held_chip_seconds, 8.0 * g.held_s));
    assert!(close(g.productive_chip_seconds, 8.0 * g.productive_s));
    for b in &g.badput {
        assert!(close(b.chip_seconds, 8.0 * b.seconds), "{b:?}");
    }
    let g = goodput(&silent(Outcome::Completed, 1.5, 8.0));
    assert!(close(g.held_chip_seconds, 12.0) && close(g.badput.last().unwrap().chip_seconds, 12.0), "{g:#?}");
    // A one-GPU pool, and counts that make no sense: an attempt that held anything held at least one chip.
    for chips in [1.0, 0.0, -3.0, f64::NAN] {
        let g = goodput(&silent(Outcome::Failed, 1.5, chips));
        assert!(close(g.held_chip_seconds, 1.5), "{chips}: {}", g.held_chip_seconds);
        assert!(close(g.badput[0].chip_seconds, 1.5), "{chips}: {:?}", g.badput[0]);
    }
}

#[test]
fn an_attempt_deserialised_without_an_outcome_is_unknown() {
    let a: Attempt =
        serde_json::from_str(r#"{"attempt": 1, "queued_ms": null, "running_ms": 0, "ended_ms": 10, "chips": 1}"#)
            .unwrap();
    assert_eq!(a.outcome, Outcome::Unknown);
    let completed = serde_json::to_value(Outcome::Completed).unwrap();
    assert_eq!(completed, "completed");
}
