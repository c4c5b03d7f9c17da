//! Deep trace analysis (`falcon_analysis::trace`): synthetic timelines for the definitions, and the
//! fixture captures read by the timeline readers.

use falcon_analysis::timeline::{
    CollectiveKind, Device, DeviceKind, Event, EventClass, HostThread, StepMarker, StepSource, Timeline, TimelineSource,
};
use falcon_analysis::trace::host::{HostActivityKind, HostVerdict, HOST_BOUND_THRESHOLD};
use falcon_analysis::trace::steps::StepRule;
use falcon_analysis::trace::{analyze_trace, breakdown_window, summary, TraceAnalysis, TraceOptions, TraceReport};
use falcon_core::bound::BoundBy;
use proptest::prelude::*;

const US: i64 = 1_000_000;

/// A timeline builder with interned names; times in µs.
struct B {
    tl: Timeline,
}

impl B {
    fn new() -> B {
        B {
            tl: Timeline {
                source: TimelineSource::XSpace,
                origin_ps: 0,
                devices: Vec::new(),
                host_threads: Vec::new(),
                steps: Vec::new(),
                names: Vec::new(),
                events_read: 0,
                notes: Vec::new(),
                rank: None,
                chip: None,
            },
        }
    }

    fn name(&mut self, n: &str) -> u32 {
        if let Some(i) = self.tl.names.iter().position(|x| x == n) {
            return i as u32;
        }
        self.tl.names.push(n.to_string());
        (self.tl.names.len() - 1) as u32
    }

    fn ev(&mut self, start_us: i64, dur_us: i64, name: &str, class: EventClass) -> Event {
        Event { start_ps: start_us * US, dur_ps: dur_us * US, name: self.name(name), class }
    }

    fn device(&mut self, id: u32, events: Vec<Event>, modules: Vec<Event>) {
        let mut events = events;
        events.sort_by_key(|e| e.start_ps);
        let mut modules = modules;
        modules.sort_by_key(|e| e.start_ps);
        self.tl.devices.push(Device {
            id,
            name: format!("/device:TPU:{id}"),
            kind: DeviceKind::Tpu,
            host: String::new(),
            events,
            modules,
            launches: Vec::new(),
            collectives: Vec::new(),
        });
    }

    fn thread(&mut self, id: u64, name: &str, events: Vec<Event>) {
        let mut events = events;
        events.sort_by_key(|e| e.start_ps);
        self.tl.host_threads.push(HostThread { id, name: name.to_string(), host: String::new(), events });
    }

    fn marker(&mut self, step: i64, start_us: i64, dur_us: i64, device: Option<u32>, source: StepSource) {
        self.tl.steps.push(StepMarker {
            step,
            start_ps: start_us * US,
            dur_ps: dur_us * US,
            device,
            host: None,
            source,
        });
    }
}

const C: EventClass = EventClass::Compute;
const AR: EventClass = EventClass::Collective(CollectiveKind::AllReduce);
const AG: EventClass = EventClass::Collective(CollectiveKind::AllGather);
const MC: EventClass = EventClass::MemCopy;
const HW: EventClass = EventClass::HostWait;

fn all() -> TraceOptions {
    TraceOptions::default()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

fn check_rows_partition(r: &TraceReport) {
    let rows = r.steps.iter().chain(r.devices.iter().flat_map(|d| d.steps.iter()));
    for s in rows {
        let b = &s.breakdown;
        let sum = b.compute_us + b.collective_us + b.memcpy_us + b.host_wait_us + b.other_us + b.idle_us;
        assert!(close(sum, b.duration_us), "step {} sum {sum} != duration {}", s.step, b.duration_us);
        assert!(b.idle_us >= -1e-9 && b.compute_us >= 0.0 && b.collective_us >= 0.0);
    }
}

// ---------------------------------------------------------------------------------------------
// Partition identity and precedence (brute force on unit-time grids)
// ---------------------------------------------------------------------------------------------

fn class_strategy() -> impl Strategy<Value = EventClass> {
    prop_oneof![
        Just(EventClass::Compute),
        Just(AR),
        Just(AG),
        Just(EventClass::Collective(CollectiveKind::SendRecv)),
        Just(EventClass::MemCopy),
        Just(EventClass::InfeedOutfeed),
        Just(EventClass::HostWait),
        Just(EventClass::Other),
        Just(EventClass::Module),
    ]
}

/// Category of one instant by the documented precedence: 0 compute, 1 collective, 2 memcpy,
/// 3 host wait, 4 other, 5 idle.
fn category_at(events: &[Event], t: i64) -> (usize, bool) {
    let running: Vec<EventClass> =
        events.iter().filter(|e| e.dur_ps > 0 && e.start_ps <= t && t < e.end_ps()).map(|e| e.class).collect();
    let has = |f: &dyn Fn(&EventClass) -> bool| running.iter().any(f);
    let compute = has(&|c| *c == EventClass::Compute);
    let coll = has(&|c| matches!(c, EventClass::Collective(_)));
    let cat = if compute {
        0
    } else if coll {
        1
    } else if has(&|c| matches!(c, EventClass::MemCopy | EventClass::InfeedOutfeed)) {
        2
    } else if has(&|c| *c == EventClass::HostWait) {
        3
    } else if has(&|c| *c == EventClass::Other) {
        4
    } else {
        5
    };
    (cat, compute && coll)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn partition_is_exact_and_follows_precedence(
        raw in prop::collection::vec((0i64..100, 0i64..30, class_strategy()), 0..40),
        w in (0i64..120, 0i64..120),
    ) {
        let events: Vec<Event> = raw.iter().map(|&(s, d, c)| Event { start_ps: s, dur_ps: d, name: 0, class: c }).collect();
        let (ws, we) = (w.0.min(w.1), w.0.max(w.1));
        let b = breakdown_window(&events, ws, we);
        prop_assert_eq!(b.compute + b.collective + b.memcpy + b.host_wait + b.other + b.idle, b.duration);
        prop_assert_eq!(b.duration, we - ws);
        let mut expect = [0i64; 6];
        let mut hidden = 0;
        for t in ws..we {
            let (cat, h) = category_at(&events, t);
            expect[cat] += 1;
            hidden += i64::from(h);
        }
        prop_assert_eq!([b.compute, b.collective, b.memcpy, b.host_wait, b.other, b.idle], expect);
        prop_assert_eq!(b.hidden_collective, hidden);
    }

    #[test]
    fn report_rows_partition_on_random_timelines(
        devs in prop::collection::vec(prop::collection::vec((0i64..1000, 0i64..200, class_strategy()), 0..30), 1..4),
        mods in prop::collection::vec(0i64..1000, 0..6),
    ) {
        let mut b = B::new();
        for (i, evs) in devs.iter().enumerate() {
            let events: Vec<Event> = evs.iter().map(|&(s, d, c)| b.ev(s, d, "op", c)).collect();
            let modules: Vec<Event> = mods.iter().map(|&s| b.ev(s, 50, "jit_step", EventClass::Module)).collect();
            b.device(i as u32, events, modules);
        }
        // Host threads: nested and overlapping events, some of them waits.
        for (i, evs) in devs.iter().enumerate().take(2) {
            let host: Vec<Event> = evs
                .iter()
                .map(|&(s, d, c)| {
                    let name = if matches!(c, EventClass::HostWait | EventClass::Other) { "block_until_ready" } else { "dispatch" };
                    b.ev((s + 37) % 1000, d / 2 + 1, name, EventClass::Other)
                })
                .collect();
            b.thread(i as u64, "python", host);
        }
        let r = analyze_trace(&b.tl, &all());
        check_rows_partition(&r);
        // The verdict reads the breakdown's numbers: fraction = host_wait / duration, so no host wait
        // means no host-bound verdict.
        if let (Some(t), Some(h)) = (r.total, r.host_bound.as_ref()) {
            prop_assert!(close(h.fraction, t.host_wait_us / t.duration_us), "{} vs {:?}", h.fraction, t);
            prop_assert!(close(h.host_wait_us, t.host_wait_us), "{} vs {}", h.host_wait_us, t.host_wait_us);
            if t.host_wait_us == 0.0 {
                prop_assert_eq!(h.verdict, HostVerdict::NotHost);
                prop_assert_eq!(h.bound_by, None);
            }
            prop_assert_eq!(h.bound_by, h.verdict.bound_by());
        }
        // The exposed collective of all steps equals the sum over kinds when kinds never overlap
        // each other; at least: every kind's exposed <= total.
        for o in &r.overlap {
            prop_assert!(o.exposed_us <= o.total_us + 1e-9);
            prop_assert!((0.0..=1.0).contains(&o.hidden_fraction));
        }
        let json = serde_json::to_value(&r).unwrap();
        prop_assert!(json["steps"].is_array());
    }
}

#[test]
fn precedence_compute_over_collective_over_memcpy_over_host_wait() {
    let mut b = B::new();
    // 0..10 compute+all-reduce+memcpy, 10..20 all-reduce+memcpy+hostwait, 20..30 memcpy+hostwait,
    // 30..40 host wait, 40..50 nothing, 50..60 other.
    let events = vec![
        b.ev(0, 10, "fusion", C),
        b.ev(0, 20, "all-reduce", AR),
        b.ev(0, 30, "copy", MC),
        b.ev(10, 30, "recv-done", HW),
        b.ev(50, 10, "mystery", EventClass::Other),
    ];
    b.device(0, events, vec![]);
    b.marker(1, 0, 60, None, StepSource::HostAnnotation);
    let r = analyze_trace(&b.tl, &all());
    assert_eq!(r.step_detection.rule, StepRule::HostMarkers);
    let s = &r.steps[0].breakdown;
    assert_eq!(
        (s.duration_us, s.compute_us, s.collective_us, s.memcpy_us, s.host_wait_us, s.idle_us, s.other_us),
        (60.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0)
    );
    assert_eq!(s.hidden_collective_us, 10.0);
    check_rows_partition(&r);
    assert!(r.notes.iter().any(|n| n.contains("other")));
}

#[test]
fn hidden_vs_exposed_collective_and_overlap_per_kind() {
    let mut b = B::new();
    // all-reduce 0..100 (half under compute 50..150); all-gather 200..240 fully exposed, with a
    // second all-gather overlapping it 220..260 (union 60).
    let events = vec![
        b.ev(0, 100, "all-reduce.1", AR),
        b.ev(50, 100, "fusion.2", C),
        b.ev(200, 40, "all-gather.3", AG),
        b.ev(220, 40, "all-gather.4", AG),
        b.ev(300, 10, "fusion.5", C),
        b.ev(305, 10, "all-gather.6", AG),
    ];
    b.device(0, events, vec![]);
    let r = analyze_trace(&b.tl, &all());
    assert_eq!(r.step_detection.rule, StepRule::WholeTrace);
    assert!(r.notes.iter().any(|n| n.contains("whole trace")));
    let t = r.total.unwrap();
    assert_eq!(t.duration_us, 315.0);
    assert_eq!(t.compute_us, 110.0);
    assert_eq!(t.collective_us, 50.0 + 60.0 + 5.0);
    assert_eq!(t.hidden_collective_us, 50.0 + 5.0);
    let ar = r.overlap.iter().find(|o| o.kind == "all-reduce").unwrap();
    assert_eq!((ar.total_us, ar.exposed_us, ar.hidden_fraction), (100.0, 50.0, 0.5));
    let ag = r.overlap.iter().find(|o| o.kind == "all-gather").unwrap();
    assert_eq!((ag.total_us, ag.exposed_us), (70.0, 65.0));
    let s = summary(&r);
    assert!(close(s.exposed_collective_percent.unwrap(), 115.0 / 315.0 * 100.0));
    assert!(close(s.idle_percent.unwrap(), t.idle_us / 315.0 * 100.0));
}

#[test]
fn gaps_carry_host_activity_and_host_bound_verdict() {
    let mut b = B::new();
    let events = vec![b.ev(0, 10, "fusion.1", C), b.ev(30, 10, "fusion.2", C), b.ev(45, 5, "fusion.3", C)];
    b.device(0, events, vec![]);
    // `train_loop` is the step marker's own event (excluded); the wait is listed but not work.
    let host = vec![
        b.ev(0, 50, "train_loop", EventClass::Other),
        b.ev(12, 16, "PjitFunction(f)", EventClass::Other),
        b.ev(14, 2, "tiny", EventClass::Other),
        b.ev(40, 5, "Execute (wait for completion)", EventClass::Other),
    ];
    b.thread(7, "python", host);
    b.marker(0, 0, 50, None, StepSource::HostAnnotation);
    let r = analyze_trace(&b.tl, &TraceOptions { top_gaps: 2, ..TraceOptions::default() });
    // Gaps: 10..30 (20) and 40..45 (5).
    assert_eq!(r.gaps.len(), 2);
    let g = &r.gaps[0];
    assert_eq!((g.device, g.start_us, g.duration_us, g.step), (0, 10.0, 20.0, Some(0)));
    let names: Vec<(&str, f64)> = g.host_activity.iter().map(|h| (h.name.as_str(), h.overlap_us)).collect();
    assert_eq!(names, vec![("PjitFunction(f)", 16.0), ("tiny", 2.0)]);
    assert_eq!(g.host_activity[0].thread, "python");
    assert!(!g.host_activity[0].waiting);
    let g1 = &r.gaps[1];
    assert_eq!((g1.start_us, g1.duration_us), (40.0, 5.0));
    assert_eq!(g1.host_activity.len(), 1);
    assert!(g1.host_activity[0].waiting);
    assert_eq!(g1.host_activity[0].activity, HostActivityKind::Wait);
    // Device idle 25 of 50; the host works during 16 of it: that is the step's host wait, in the
    // breakdown and in the host check alike.
    let t = r.total.unwrap();
    assert_eq!((t.host_wait_us, t.idle_us), (16.0, 9.0));
    let h = r.host_bound.as_ref().unwrap();
    assert_eq!((h.idle_host_busy_us, h.device_wait_us, h.host_wait_us, h.step_time_us), (16.0, 0.0, 16.0, 50.0));
    assert!(close(h.fraction, 0.32));
    assert!(close(h.fraction, t.host_wait_us / t.duration_us));
    assert_eq!(h.verdict, HostVerdict::Host);
    assert_eq!(h.bound_by, Some(BoundBy::Host));
    // Evidence by innermost time: `tiny` runs inside `PjitFunction(f)` for 2 of its 16 µs.
    let ev: Vec<(&str, f64)> = h.evidence.iter().map(|e| (e.name.as_str(), e.overlap_us)).collect();
    assert_eq!(ev, vec![("PjitFunction(f)", 14.0), ("tiny", 2.0)]);
    assert_eq!(summary(&r).host_bound_fraction, Some(h.fraction));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["host_bound"]["verdict"], "host");
    assert_eq!(json["host_bound"]["bound_by"], "host");
}

#[test]
fn host_bound_counts_host_wait_and_only_idle_with_busy_host() {
    let mut b = B::new();
    // 0..80 compute, 80..90 host wait, 90..100 idle with host idle.
    let events = vec![b.ev(0, 80, "fusion", C), b.ev(80, 10, "recv-done", HW)];
    b.device(0, events, vec![]);
    b.marker(0, 0, 100, None, StepSource::ProfilerStep);
    let r = analyze_trace(&b.tl, &all());
    let h = r.host_bound.as_ref().unwrap();
    assert!(close(h.fraction, 0.1));
    assert_eq!(h.verdict, HostVerdict::PartlyHost);
    assert_eq!(h.bound_by, Some(BoundBy::PartlyHost));
    assert_eq!((h.idle_host_busy_us, h.device_wait_us, h.host_wait_us), (0.0, 10.0, 10.0));
    assert_eq!(r.total.unwrap().host_wait_us, 10.0);
    assert!(h.evidence.is_empty());
    assert_eq!(HostVerdict::of(0.01), HostVerdict::NotHost);
    assert_eq!(serde_json::to_value(h).unwrap()["verdict"], "partly_host");
}

#[test]
fn module_executions_define_steps() {
    let mut b = B::new();
    let modules = vec![
        b.ev(0, 10, "jit_f", EventClass::Module),
        b.ev(12, 3, "jit_init", EventClass::Module),
        b.ev(20, 10, "jit_f", EventClass::Module),
        b.ev(50, 10, "jit_f", EventClass::Module),
    ];
    let events = vec![b.ev(0, 8, "fusion", C), b.ev(20, 8, "fusion", C), b.ev(50, 8, "fusion", C)];
    b.device(0, events, modules);
    let r = analyze_trace(&b.tl, &all());
    assert_eq!(r.step_detection.rule, StepRule::ModuleExecutions);
    assert_eq!(r.step_detection.module.as_deref(), Some("jit_f"));
    assert_eq!(r.step_detection.module_executions, Some(3));
    let spans: Vec<(i64, f64, f64)> = r.steps.iter().map(|s| (s.step, s.start_us, s.breakdown.duration_us)).collect();
    assert_eq!(spans, vec![(0, 0.0, 20.0), (1, 20.0, 30.0), (2, 50.0, 10.0)]);
    assert_eq!(r.steps[1].breakdown.idle_us, 22.0);
    // Adjacent steps form one window: the gap 28..50 is one gap, not split at 50.
    assert_eq!(r.gaps[0].start_us, 28.0);
    assert_eq!(r.gaps[0].duration_us, 22.0);
}

#[test]
fn device_markers_win_over_host_markers_and_stragglers_compare_devices() {
    let mut b = B::new();
    let d0 = vec![b.ev(0, 50, "fusion", C), b.ev(50, 50, "all-reduce", AR), b.ev(100, 50, "fusion", C)];
    let d1 = vec![b.ev(0, 90, "fusion", C), b.ev(90, 10, "all-reduce", AR), b.ev(100, 80, "fusion", C)];
    b.device(0, d0, vec![]);
    b.device(1, d1, vec![]);
    b.marker(0, 0, 100, None, StepSource::HostAnnotation);
    b.marker(1, 100, 100, None, StepSource::HostAnnotation);
    // Device 1 has its own Steps line (one step).
    b.marker(0, 0, 100, Some(1), StepSource::DeviceStepsLine);
    let r = analyze_trace(&b.tl, &all());
    assert_eq!(r.devices[0].step_detection.rule, StepRule::HostMarkers);
    assert_eq!(r.devices[1].step_detection.rule, StepRule::DeviceMarkers);
    assert_eq!(r.step_detection.rule, StepRule::Mixed);
    assert_eq!(r.steps.len(), 2);
    assert_eq!(r.steps[0].devices, 2);
    assert_eq!(r.steps[1].devices, 1);
    // Step 0: mean over devices: compute (50 + 90) / 2, exposed all-reduce (50 + 10) / 2.
    assert_eq!(r.steps[0].breakdown.compute_us, 70.0);
    assert_eq!(r.steps[0].breakdown.collective_us, 30.0);
    check_rows_partition(&r);
    let st = r.stragglers.as_ref().unwrap();
    assert_eq!(st.steps[0].slowest_device, 1);
    assert_eq!((st.steps[0].min_work_us, st.steps[0].max_work_us), (50.0, 90.0));
    assert_eq!(st.slowest_device, Some(1));
    let json = serde_json::to_value(&r).unwrap();
    for key in [
        "step",
        "duration_us",
        "compute_us",
        "collective_us",
        "memcpy_us",
        "host_wait_us",
        "idle_us",
        "hidden_collective_us",
    ] {
        assert!(json["steps"][0].get(key).is_some(), "steps[] lacks {key}");
    }
    for key in ["step_detection", "stragglers", "notes", "overlap", "gaps", "host_bound", "devices"] {
        assert!(json.get(key).is_some(), "report lacks {key}");
    }
    assert!(json["overlap"][0].get("hidden_fraction").is_some());
    assert!(json["host_bound"].get("verdict").is_some());
}

#[test]
fn profiler_steps_preferred_over_nested_annotations_and_options_select() {
    let mut b = B::new();
    let ev = vec![b.ev(0, 10, "aten::mm", C)];
    b.device(0, ev, vec![]);
    b.marker(2, 0, 20, None, StepSource::ProfilerStep);
    b.marker(3, 20, 20, None, StepSource::ProfilerStep);
    b.marker(9, 5, 5, None, StepSource::HostAnnotation);
    let opts = TraceOptions { analyses: vec![TraceAnalysis::Breakdown], ..TraceOptions::default() };
    let r = analyze_trace(&b.tl, &opts);
    assert_eq!(r.steps.iter().map(|s| s.step).collect::<Vec<_>>(), vec![2, 3]);
    assert!(r.overlap.is_empty() && r.gaps.is_empty() && r.host_bound.is_none() && r.stragglers.is_none());
    assert_eq!(summary(&r).host_bound_fraction, None);
    assert_eq!("gaps".parse::<TraceAnalysis>(), Ok(TraceAnalysis::Gaps));
    assert!("nope".parse::<TraceAnalysis>().is_err());
}

#[test]
fn empty_timeline_is_not_an_error() {
    let r = analyze_trace(&B::new().tl, &all());
    assert!(r.steps.is_empty() && r.devices.is_empty());
    assert_eq!(r.step_detection.rule, StepRule::None);
    assert!(!r.notes.is_empty());
    let s = summary(&r);
    assert_eq!(s.exposed_collective_percent, None);
}

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

fn xplane(path: &str) -> Timeline {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let space = falcon_xplane::decode_file(&p).unwrap();
    falcon_analysis::timeline::xspace::from_xspace(&space, "")
}

fn chrome(path: &str) -> Timeline {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    falcon_analysis::timeline::chrome::read_chrome_trace_file(&p).unwrap()
}

fn within(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-9)
}

#[test]
fn tpu_inference_fixture_steps_by_jit_f_with_all_reduce() {
    let tl = xplane("../falcon-xplane/tests/data/tpu_v6e_inference.xplane.pb");
    let r = analyze_trace(&tl, &all());
    assert_eq!(r.devices.len(), 4);
    assert_eq!(r.step_detection.rule, StepRule::ModuleExecutions);
    assert!(r.step_detection.module.as_deref().is_some_and(|m| m.starts_with("jit_f")), "{:?}", r.step_detection);
    assert_eq!(r.step_detection.module_executions, Some(100));
    assert_eq!(r.steps.len(), 100);
    for d in &r.devices {
        assert_eq!(d.step_detection.steps, 100, "{}", d.name);
        assert_eq!(d.steps.len(), 100);
        for s in &d.steps {
            let b = &s.breakdown;
            let sum = b.compute_us + b.collective_us + b.memcpy_us + b.host_wait_us + b.other_us + b.idle_us;
            assert!(within(sum, b.duration_us, 1e-3), "{} step {}: {sum} vs {}", d.name, s.step, b.duration_us);
            assert!(b.duration_us > 0.0 && b.compute_us > 0.0);
        }
        // The `jit__psum` program runs outside the `jit_f` steps: its all-reduce is in overlap[].
        let ar = d.overlap.iter().find(|o| o.kind == "all-reduce").expect("all-reduce on every device");
        assert!(ar.total_us > 100_000.0, "{ar:?}");
        assert!(d.outside_steps_busy_us >= ar.exposed_us);
    }
    check_rows_partition(&r);
    let ar = r.overlap.iter().find(|o| o.kind == "all-reduce").unwrap();
    assert!(ar.total_us > 100_000.0 && ar.exposed_us <= ar.total_us);
    let st = r.stragglers.as_ref().unwrap();
    assert_eq!(st.devices.len(), 4);
    assert_eq!(st.steps.len(), 100);
    assert!(st.slowest_device.is_some());
    let h = r.host_bound.as_ref().unwrap();
    assert!((0.0..=1.0).contains(&h.fraction));
    assert!(!r.gaps.is_empty() && r.gaps.len() <= 10);
    let sm = summary(&r);
    assert!(sm.idle_percent.is_some() && sm.exposed_collective_percent.is_some());
    serde_json::to_string(&r).unwrap();
}

#[test]
fn jax_cpu_fixture_xspace_and_chrome_trace_agree() {
    let a = analyze_trace(&xplane("../falcon-xplane/tests/data/jax_cpu_mlp_vm.xplane.pb"), &all());
    let b = analyze_trace(&chrome("tests/data/jax_cpu_mlp_vm.trace.json.gz"), &all());
    for r in [&a, &b] {
        assert_eq!(r.step_detection.rule, StepRule::HostMarkers);
        assert_eq!(r.devices.len(), 1);
        assert_eq!(r.devices[0].kind, DeviceKind::CpuExecutor);
        check_rows_partition(r);
    }
    let steps =
        |r: &TraceReport| r.steps.iter().map(|s| (s.step, s.start_us, s.breakdown.duration_us)).collect::<Vec<_>>();
    assert_eq!(steps(&a).len(), 5);
    let (sa, sb) = (steps(&a), steps(&b));
    for (x, y) in sa.iter().zip(&sb) {
        assert_eq!(x.0, y.0);
        assert!(within(x.2, y.2, 1e-6), "{x:?} vs {y:?}");
    }
    assert_eq!(sa.len(), sb.len());
    for (x, y) in a.steps.iter().zip(&b.steps) {
        let (p, q) = (&x.breakdown, &y.breakdown);
        assert!(within(p.compute_us, q.compute_us, 0.01), "step {}: {p:?} vs {q:?}", x.step);
        assert!(within(p.idle_us, q.idle_us, 0.01), "step {}: {p:?} vs {q:?}", x.step);
        assert!(p.compute_us > 0.8 * p.duration_us);
    }
    let (ha, hb) = (a.host_bound.as_ref().unwrap(), b.host_bound.as_ref().unwrap());
    assert!(within(ha.fraction, hb.fraction, 0.01));
    assert_eq!(ha.verdict, hb.verdict);
    assert_eq!(a.gaps.len(), b.gaps.len());
    assert!(within(a.gaps[0].duration_us, b.gaps[0].duration_us, 0.01));
}

#[test]
fn pytorch_cpu_trace_is_broken_down() {
    let tl = chrome("tests/data/pytorch_cpu_tfm2.pt.trace.json.gz");
    let r = analyze_trace(&tl, &all());
    assert_eq!(r.step_detection.rule, StepRule::HostMarkers);
    assert_eq!(r.steps.iter().map(|s| s.step).collect::<Vec<_>>(), vec![2, 3, 4]);
    check_rows_partition(&r);
    for s in &r.steps {
        assert!(s.breakdown.compute_us > 0.5 * s.breakdown.duration_us, "{s:?}");
        assert_eq!(s.breakdown.collective_us, 0.0);
    }
    let h = r.host_bound.as_ref().unwrap();
    // The profiler session span encloses every step: a wrapper, not host work.
    assert!(h.evidence.iter().all(|e| !e.name.starts_with("PyTorch Profiler")), "{h:?}");
    assert!(r.gaps.iter().all(|g| g.host_activity.iter().all(|a| !a.name.starts_with("PyTorch Profiler"))));
    assert!(summary(&r).idle_percent.is_some());
}

#[test]
fn tpu_fixture_xspace_and_xprof_trace_viewer_json_agree() {
    let a = analyze_trace(&xplane("../falcon-xplane/tests/data/tpu_v6e_inference.xplane.pb"), &all());
    let b = analyze_trace(&chrome("tests/data/tpu_v6e_inference_xprof_trace_viewer.json.gz"), &all());
    assert_eq!(a.step_detection, b.step_detection);
    assert_eq!(a.devices.len(), b.devices.len());
    assert_eq!(a.steps.len(), b.steps.len());
    for (x, y) in a.steps.iter().zip(&b.steps) {
        assert_eq!(x.step, y.step);
        let (p, q) = (&x.breakdown, &y.breakdown);
        for (u, v) in [(p.duration_us, q.duration_us), (p.compute_us, q.compute_us), (p.memcpy_us, q.memcpy_us)] {
            assert!(within(u, v, 1e-3), "step {}: {p:?} vs {q:?}", x.step);
        }
    }
    assert_eq!(a.overlap.len(), b.overlap.len());
    for (x, y) in a.overlap.iter().zip(&b.overlap) {
        assert_eq!(x.kind, y.kind);
        assert!(within(x.total_us, y.total_us, 1e-3) && within(x.exposed_us, y.exposed_us, 1e-3));
    }
}

// ---------------------------------------------------------------------------------------------
// One host-bound rule: only the device waiting on the host counts
// ---------------------------------------------------------------------------------------------

#[test]
fn a_host_waiting_on_the_device_is_not_host_work_and_masks_its_frames() {
    let mut b = B::new();
    // Device busy 0..10 and 30..50; idle 10..30.
    let events = vec![b.ev(0, 10, "fusion.1", C), b.ev(30, 20, "fusion.2", C)];
    b.device(0, events, vec![]);
    // A Python frame 8..30 that dispatches (8..12) then blocks in `block_until_ready` (12..30); a second
    // thread synchronizes 10..30 inside a frame of its own.
    let host = vec![
        b.ev(8, 22, "$train.py:40 step", EventClass::Other),
        b.ev(9, 3, "PjitFunction(step)", EventClass::Other),
        b.ev(12, 18, "$api.py:2479 block_until_ready", EventClass::Other),
    ];
    b.thread(1, "python", host);
    let sync = vec![b.ev(10, 20, "loop", EventClass::Other), b.ev(10, 20, "cudaStreamSynchronize", EventClass::Other)];
    b.thread(2, "worker", sync);
    b.marker(0, 0, 50, None, StepSource::HostAnnotation);
    let r = analyze_trace(&b.tl, &all());
    let t = r.total.unwrap();
    // Only 10..12 (the dispatch) is the device waiting on the host.
    assert_eq!((t.host_wait_us, t.idle_us), (2.0, 18.0));
    let h = r.host_bound.as_ref().unwrap();
    assert_eq!((h.host_wait_us, h.idle_host_busy_us), (2.0, 2.0));
    assert!(close(h.fraction, 2.0 / 50.0));
    assert_eq!((h.verdict, h.bound_by), (HostVerdict::NotHost, None));
    let ev: Vec<&str> = h.evidence.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(ev, vec!["PjitFunction(step)"], "waits and the frames they block are no evidence");
    let g = &r.gaps[0];
    assert_eq!((g.start_us, g.duration_us), (10.0, 20.0));
    let wait = g.host_activity.iter().find(|a| a.name.contains("block_until_ready")).expect("listed");
    assert!(wait.waiting && wait.activity == HostActivityKind::Wait);
    assert!(g.host_activity.iter().any(|a| a.name == "cudaStreamSynchronize" && a.waiting));
    assert_eq!(serde_json::to_value(&r).unwrap()["host_bound"]["bound_by"], serde_json::Value::Null);
}

#[test]
fn xla_cpu_runtime_is_the_device_not_the_host() {
    let run = |kind: DeviceKind| {
        let mut b = B::new();
        let events = vec![b.ev(0, 10, "fusion.1", C), b.ev(40, 10, "fusion.2", C)];
        b.device(0, events, vec![]);
        b.tl.devices[0].kind = kind;
        // An executor thread schedules thunks 10..40 (no op runs).
        let pool = vec![b.ev(5, 40, "ThunkExecutor::Execute", EventClass::Other)];
        b.thread(1, "tf_XLAEigen/1", pool);
        b.marker(0, 0, 50, None, StepSource::HostAnnotation);
        analyze_trace(&b.tl, &all())
    };
    let cpu = run(DeviceKind::CpuExecutor);
    assert_eq!(cpu.total.unwrap().host_wait_us, 0.0, "XLA:CPU scheduling its own thunks");
    assert_eq!(cpu.host_bound.as_ref().unwrap().verdict, HostVerdict::NotHost);
    assert_eq!(cpu.gaps[0].host_activity[0].activity, HostActivityKind::DeviceRuntime);
    // Beside a TPU the same host event is host work (60 % of the step).
    let tpu = run(DeviceKind::Tpu);
    assert_eq!(tpu.total.unwrap().host_wait_us, 30.0);
    let h = tpu.host_bound.as_ref().unwrap();
    assert!(h.fraction >= HOST_BOUND_THRESHOLD && h.verdict == HostVerdict::Host);
}

fn batch16() -> Timeline {
    xplane("tests/data/compare/batch16/plugins/profile/run1/vm.xplane.pb")
}

#[test]
fn batch16_cpu_capture_breakdown_and_verdict_agree() {
    let r = analyze_trace(&batch16(), &all());
    assert_eq!(r.devices.len(), 1);
    assert_eq!(r.devices[0].kind, DeviceKind::CpuExecutor);
    assert_eq!(r.steps.len(), 8);
    check_rows_partition(&r);
    let t = r.total.unwrap();
    let h = r.host_bound.as_ref().unwrap();
    // The verdict is the breakdown's host wait over its step time, per step and in total.
    assert!(close(h.fraction, t.host_wait_us / t.duration_us), "{} vs {t:?}", h.fraction);
    assert!(close(h.host_wait_us, t.host_wait_us));
    assert!(close(h.step_time_us, t.duration_us));
    let per_step: f64 = r.steps.iter().map(|s| s.breakdown.host_wait_us).sum();
    assert!(close(per_step, t.host_wait_us));
    // The host spends the idle gaps in `block_until_ready` (waiting on the device): that is not host-bound.
    // What remains is dispatch (PjitFunction …), about 1 % of the step time.
    assert!(h.fraction > 0.0 && h.fraction < 0.05, "{}", h.fraction);
    assert_eq!((h.verdict, h.bound_by), (HostVerdict::NotHost, None));
    assert!(h.evidence.iter().all(|e| !e.name.contains("block_until_ready") && !e.name.contains("wait")), "{h:?}");
    assert!(h.evidence.iter().any(|e| e.name.starts_with("PjitFunction")), "{h:?}");
    let waits = r.gaps.iter().flat_map(|g| &g.host_activity).filter(|a| a.name.contains("block_until_ready"));
    let mut n = 0;
    for a in waits {
        assert!(a.waiting && a.activity == HostActivityKind::Wait, "{a:?}");
        n += 1;
    }
    assert!(n > 0, "the gaps show the host in block_until_ready");
    // One duty-cycle definition: busy share of the steps.
    let duty = summary(&r).duty_cycle.unwrap();
    assert!(close(duty, (t.compute_us + t.collective_us + t.memcpy_us + t.other_us) / t.duration_us));
    assert!(duty > 0.85 && duty < 0.95, "{duty}");
}

#[test]
fn fixtures_verdicts_read_the_breakdown() {
    for r in [
        analyze_trace(&xplane("../falcon-xplane/tests/data/tpu_v6e_inference.xplane.pb"), &all()),
        analyze_trace(&xplane("../falcon-xplane/tests/data/jax_cpu_mlp_vm.xplane.pb"), &all()),
        analyze_trace(&chrome("tests/data/pytorch_cpu_tfm2.pt.trace.json.gz"), &all()),
        analyze_trace(&xplane("../falcon-xplane/tests/data/gpu_v100x8_tf.xplane.pb"), &all()),
    ] {
        let (t, h) = (r.total.unwrap(), r.host_bound.as_ref().unwrap());
        assert!(close(h.fraction, t.host_wait_us / t.duration_us), "{} vs {t:?}", h.fraction);
        assert_eq!(h.verdict, HostVerdict::of(h.fraction));
        for d in &r.devices {
            let (dt, dh) = (d.total.unwrap(), d.host_bound.as_ref().unwrap());
            assert!(close(dh.fraction, dt.host_wait_us / dt.duration_us), "{}", d.name);
        }
    }
}
