//! Checks `memory_profile` against XProf 2.24.2's outputs for the same capture:
//! - TPU v6e inference: `tpu_v6e_inference_xprof_memory_profile.json` (proto JSON of XProf's
//!   `MemoryProfile`) and `tpu_v6e_inference_xprof_cli_get_memory_profile.json` (the
//!   `xprof get_memory_profile` summary, rounded to 0.01);
//! - GPU V100x8 TF: `gpu_v100x8_tf_xprof_memory_profile.json.gz` (XProf's `MemoryProfile`, gzipped) for
//!   every allocator, plus consistency checks;
//! - JAX CPU capture: no panic, consistent results;
//! - synthetic XSpaces for the processing-order rules, step growth and the leak rule;
//! - the memory verdict ([`falcon_analysis::leak`]) on the TPU and GPU captures agrees with XProf's memory
//!   profile: each holds one step of allocations (XProf puts every snapshot of the headline allocator in one
//!   step id), so there is no growth across steps to measure, no leak, and the peak is XProf's; on synthetic
//!   captures it calls a leak where memory is kept each step and none where it is freed.

use std::collections::BTreeSet;
use std::path::PathBuf;

use falcon_analysis::leak::{profile_series, verdict, MemoryVerdict};
use falcon_analysis::memory::{
    leak_suspected, memory_profile, Allocation, AllocatorMemory, MemoryActivity, MemoryProfile, TimelinePoint,
    MAX_TIMELINE_POINTS,
};
use falcon_analysis::steps::{detect_steps, Step, StepReport};
use falcon_xplane::{StatValue, XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata};
use serde_json::Value;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn xplane_data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../falcon-xplane/tests/data").join(name)
}

/// A JSON file, gunzipped when its name ends in `.gz`.
fn json_at(path: PathBuf) -> Value {
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if path.extension().is_some_and(|x| x == "gz") {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text).expect("gunzip");
        return serde_json::from_slice(&text).expect("parse json");
    }
    serde_json::from_slice(&bytes).expect("parse json")
}

fn profile_of(path: PathBuf) -> MemoryProfile {
    let space = falcon_xplane::decode_file(path).expect("decode xplane");
    memory_profile(&space, &detect_steps(&space))
}

/// An int64 XProf printed as a JSON string (proto JSON), or a plain number.
fn int(v: &Value) -> i64 {
    match v {
        Value::String(s) => s.parse().expect("integer string"),
        Value::Number(n) => n.as_i64().expect("integer"),
        Value::Null => 0,
        other => panic!("not an integer: {other}"),
    }
}

fn float(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

fn allocator<'a>(p: &'a MemoryProfile, id: &str) -> &'a AllocatorMemory {
    p.allocators.iter().find(|a| a.id == id).unwrap_or_else(|| panic!("no allocator {id}"))
}

/// Compares XProf's `profileSummary` with ours.
fn check_summary(ours: &AllocatorMemory, xprof: &Value) {
    let s = &xprof["profileSummary"];
    let peak = &s["peakStats"];
    let id = &ours.id;
    assert_eq!(ours.peak_bytes, int(&s["peakBytesUsageLifetime"]), "{id} lifetime peak");
    assert_eq!(ours.memory_capacity_bytes, int(&s["memoryCapacity"]), "{id} capacity");
    let w = &ours.peak_in_window;
    assert_eq!(w.timestamp_ps, int(&s["peakStatsTimePs"]), "{id} peak time");
    assert_eq!(w.stack_reserved_bytes, int(&peak["stackReservedBytes"]), "{id} stack");
    assert_eq!(w.heap_allocated_bytes, int(&peak["heapAllocatedBytes"]), "{id} heap");
    assert_eq!(w.free_bytes, int(&peak["freeMemoryBytes"]), "{id} free");
    assert_eq!(w.peak_bytes, int(&peak["peakBytesInUse"]), "{id} peak in window");
    // XProf prints the double with 6 significant digits.
    let frag = float(&peak["fragmentation"]);
    assert!((w.fragmentation - frag).abs() <= 1e-6, "{id} fragmentation {} vs {frag}", w.fragmentation);
}

type PointKey = (i64, (i64, i64, i64, i64), (String, i64, i64, i64, String, i64), (String, String, String));

fn xprof_point(s: &Value) -> PointKey {
    let st = &s["aggregationStats"];
    let m = &s["activityMetadata"];
    (
        int(&s["timeOffsetPs"]),
        (
            int(&st["stackReservedBytes"]),
            int(&st["heapAllocatedBytes"]),
            int(&st["freeMemoryBytes"]),
            int(&st["peakBytesInUse"]),
        ),
        (
            text(&m["memoryActivity"]),
            int(&m["requestedBytes"]),
            int(&m["allocationBytes"]),
            int(&m["address"]),
            text(&m["tfOpName"]),
            int(&m["stepId"]),
        ),
        (text(&m["regionType"]), text(&m["dataType"]), text(&m["tensorShape"])),
    )
}

fn our_point(p: &TimelinePoint) -> PointKey {
    let activity = match p.activity.activity {
        MemoryActivity::Allocation => "ALLOCATION",
        MemoryActivity::Deallocation => "DEALLOCATION",
    };
    (
        p.time_offset_ps,
        (p.stats.stack_reserved_bytes, p.stats.heap_allocated_bytes, p.stats.free_bytes, p.stats.peak_bytes_in_use),
        (
            activity.to_owned(),
            p.activity.requested_bytes,
            p.activity.allocation_bytes,
            p.activity.address,
            p.activity.tf_op.clone(),
            p.activity.step_id,
        ),
        (p.activity.region_type.clone(), p.activity.data_type.clone(), p.activity.shape.clone()),
    )
}

/// Timeline: same length, same time sequence, same points in the same order (XProf's sort by time
/// is unstable; on these captures its order of equal times is the processing order, as ours).
fn check_timeline(ours: &AllocatorMemory, xprof: &Value) {
    let theirs: Vec<PointKey> =
        xprof["sampledTimelineSnapshots"].as_array().expect("timeline").iter().map(xprof_point).collect();
    let mine: Vec<PointKey> = ours.timeline.iter().map(our_point).collect();
    assert_eq!(mine.len(), theirs.len(), "{} timeline length", ours.id);
    let times = |v: &[PointKey]| v.iter().map(|p| p.0).collect::<Vec<_>>();
    assert_eq!(times(&mine), times(&theirs), "{} timeline times", ours.id);
    assert_eq!(mine, theirs, "{} timeline points", ours.id);
    let fr_theirs: Vec<f64> = xprof["sampledTimelineSnapshots"]
        .as_array()
        .expect("timeline")
        .iter()
        .map(|s| float(&s["aggregationStats"]["fragmentation"]))
        .collect();
    let mut f1: Vec<f64> = ours.timeline.iter().map(|p| p.stats.fragmentation).collect();
    let mut f2 = fr_theirs;
    f1.sort_by(f64::total_cmp);
    f2.sort_by(f64::total_cmp);
    for (x, y) in f1.iter().zip(&f2) {
        assert!((x - y).abs() <= 1e-6, "{} fragmentation {x} vs {y}", ours.id);
    }
}

type RowKey = (i64, i64, String, String, String, String, i64, i64, bool);

/// Active allocations at the peak as a multiset of rows (XProf's metadata of the row's snapshot or
/// special allocation, plus its occurrence count).
fn check_active_allocations(ours: &AllocatorMemory, xprof: &Value) {
    let snapshots = xprof["memoryProfileSnapshots"].as_array().expect("snapshots");
    let specials = xprof["specialAllocations"].as_array().cloned().unwrap_or_default();
    let mut theirs: Vec<RowKey> = Vec::new();
    for row in xprof["activeAllocations"].as_array().expect("active allocations") {
        let special = int(&row["specialIndex"]);
        let m = if special >= 0 {
            &specials[usize::try_from(special).expect("index")]
        } else {
            &snapshots[usize::try_from(int(&row["snapshotIndex"])).expect("index")]["activityMetadata"]
        };
        theirs.push((
            int(&m["allocationBytes"]),
            int(&m["requestedBytes"]),
            text(&m["tfOpName"]),
            text(&m["regionType"]),
            text(&m["dataType"]),
            text(&m["tensorShape"]),
            int(&m["stepId"]),
            int(&row["numOccurrences"]),
            special >= 0,
        ));
    }
    let key = |a: &Allocation| -> RowKey {
        (
            a.bytes,
            a.requested_bytes,
            a.tf_op.clone(),
            a.region_type.clone(),
            a.data_type.clone(),
            a.shape.clone(),
            a.step_id,
            a.occurrences,
            a.special,
        )
    };
    let mut mine: Vec<RowKey> = ours.top_allocations.iter().map(key).collect();
    // XProf keeps one snapshot per non-special row.
    assert_eq!(mine.iter().filter(|r| !r.8).count(), snapshots.len(), "{} kept snapshots", ours.id);
    mine.sort();
    theirs.sort();
    assert_eq!(mine, theirs, "{} active allocations", ours.id);
    // Sorted as XProf: bytes desc, requested desc.
    assert!(ours
        .top_allocations
        .windows(2)
        .all(|w| (w[0].bytes, w[0].requested_bytes) >= (w[1].bytes, w[1].requested_bytes)));
}

fn check_against_xprof(ours: &MemoryProfile, xprof: &Value) {
    let ids: Vec<String> = xprof["memoryIds"].as_array().expect("memoryIds").iter().map(text).collect();
    let mine: Vec<String> = ours.allocators.iter().map(|a| a.id.clone()).collect();
    assert_eq!(mine, ids, "memory ids");
    assert_eq!(int(&xprof["numHosts"]), 1);
    let per = xprof["memoryProfilePerAllocator"].as_object().expect("per allocator");
    assert_eq!(per.len(), ours.allocators.len());
    for (id, x) in per {
        let a = allocator(ours, id);
        check_summary(a, x);
        check_timeline(a, x);
        check_active_allocations(a, x);
        assert!(a.timeline.len() <= MAX_TIMELINE_POINTS);
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[test]
fn tpu_matches_xprof_memory_profile() {
    let ours = profile_of(xplane_data("tpu_v6e_inference.xplane.pb"));
    let xprof = json_at(data("tpu_v6e_inference_xprof_memory_profile.json"));
    check_against_xprof(&ours, &xprof);

    // The capture has every allocation matched by a deallocation (XProf snapshot count = timeline
    // length here since there are fewer than 1000 events per allocator).
    for a in &ours.allocators {
        let n =
            xprof["memoryProfilePerAllocator"][&a.id]["sampledTimelineSnapshots"].as_array().expect("timeline").len();
        assert_eq!(a.num_allocations + a.num_deallocations, n, "{} events", a.id);
    }
    // An inference capture: no steps, no growth series.
    assert!(ours.step_growth_bytes.is_empty());
    assert!(!ours.leak_suspected);
}

#[test]
fn tpu_matches_xprof_cli_summary() {
    let ours = profile_of(xplane_data("tpu_v6e_inference.xplane.pb"));
    let cli = json_at(data("tpu_v6e_inference_xprof_cli_get_memory_profile.json"));
    let details = &cli["peak_usage_details"];
    let close = |actual: f64, expected: &Value, what: &str| {
        let expected = float(expected);
        assert!((actual - expected).abs() < 1e-9, "{what}: {actual} vs {expected}");
    };
    // The CLI's capacity is the largest over all allocators.
    let capacity = ours.allocators.iter().map(|a| a.memory_capacity_bytes).max().expect("allocators");
    let capacity_gib = round2(capacity as f64 / GIB);
    let peak_gib = round2(ours.peak_bytes as f64 / GIB);
    close(capacity_gib, &cli["memory_capacity_gib"], "capacity");
    close(round2(ours.memory_capacity_bytes as f64 / GIB), &cli["memory_capacity_gib"], "headline capacity");
    close(peak_gib, &cli["peak_memory_usage_gib"], "peak");
    let w = &ours.peak_in_window;
    close(round2(w.stack_reserved_bytes as f64 / GIB), &details["stack_reservation_gib"], "stack");
    close(round2(w.heap_allocated_bytes as f64 / GIB), &details["heap_allocation_gib"], "heap");
    close(round2(w.free_bytes as f64 / GIB), &details["free_memory_gib"], "free");
    close(round2(w.fragmentation * 100.0), &details["fragmentation_percent"], "fragmentation");
    close(round2(peak_gib / capacity_gib * 100.0), &details["utilization_percent"], "utilization");
    // The headline is the allocator with the largest in-window peak.
    let max_peak = ours.allocators.iter().map(|a| a.peak_in_window.peak_bytes).max();
    assert_eq!(Some(ours.peak_bytes), max_peak);
    let id = ours.peak_allocator.as_deref().expect("headline allocator");
    let head = allocator(&ours, id);
    assert_eq!(ours.timeline, head.timeline);
    assert_eq!(ours.top_allocations, head.top_allocations);
}

#[test]
fn gpu_capture_is_sensible() {
    let ours = profile_of(xplane_data("gpu_v100x8_tf.xplane.pb"));
    assert!(!ours.allocators.is_empty());
    let id = ours.peak_allocator.clone().expect("headline allocator");
    assert!(!id.contains("host"), "headline {id} should be a device allocator");
    for a in &ours.allocators {
        assert!(a.timeline.len() <= MAX_TIMELINE_POINTS);
        assert!(a.timeline.windows(2).all(|w| w[0].time_offset_ps <= w[1].time_offset_ps));
        let w = &a.peak_in_window;
        assert_eq!(w.peak_bytes, w.stack_reserved_bytes + w.heap_allocated_bytes);
        assert_eq!(a.memory_capacity_bytes, w.peak_bytes + w.free_bytes);
        assert!(a.timeline.iter().all(|p| p.in_use_bytes <= w.peak_bytes));
        let live: i64 = a.top_allocations.iter().map(|r| r.bytes * r.occurrences).sum();
        assert!(live <= w.peak_bytes || w.peak_bytes == 0, "{}: {live} live > peak", a.id);
    }
    // Steps exist on this capture: one growth value per pair of consecutive steps.
    let space = falcon_xplane::decode_file(xplane_data("gpu_v100x8_tf.xplane.pb")).expect("decode");
    let steps = detect_steps(&space);
    assert_eq!(ours.step_growth_bytes.len(), steps.steps.len().saturating_sub(1));
    serde_json::to_string(&ours).expect("serialize");
}

#[test]
fn gpu_matches_xprof_memory_profile() {
    let ours = profile_of(xplane_data("gpu_v100x8_tf.xplane.pb"));
    check_against_xprof(&ours, &json_at(data("gpu_v100x8_tf_xprof_memory_profile.json.gz")));
}

#[test]
fn cpu_capture_does_not_panic() {
    let ours = profile_of(xplane_data("jax_cpu_mlp_vm.xplane.pb"));
    serde_json::to_string(&ours).expect("serialize");
    if ours.allocators.is_empty() {
        // Empty, and it says why (XLA:CPU records no allocator events).
        let notes = ours.notes.clone();
        assert_eq!(MemoryProfile { notes: Vec::new(), ..ours }, MemoryProfile::default());
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("no allocator events"), "{notes:?}");
    } else {
        assert!(ours.peak_allocator.is_some());
    }
}

// ---------------------------------------------------------------------------------------------
// Synthetic captures.

const STATS: [&str; 12] = [
    "bytes_reserved",
    "bytes_allocated",
    "bytes_available",
    "fragmentation",
    "peak_bytes_in_use",
    "requested_bytes",
    "allocation_bytes",
    "addr",
    "tf_op",
    "index_on_host",
    "data_type",
    "group_id",
];

fn stat_id(name: &str) -> i64 {
    STATS.iter().position(|s| *s == name).expect("known stat") as i64 + 1
}

/// (offset_ps, allocation?, heap bytes after, size, address, tf_op, peak_bytes_in_use)
struct Ev(i64, bool, i64, i64, i64, &'static str, i64);

fn host_space(lines: &[&[Ev]]) -> XSpace {
    let mut plane = XPlane { name: "/host:CPU".into(), ..XPlane::default() };
    for (i, name) in STATS.iter().enumerate() {
        let id = i as i64 + 1;
        plane.stat_metadata.insert(id, XStatMetadata { id, name: (*name).into(), ..XStatMetadata::default() });
    }
    for (id, name) in [(1, "MemoryAllocation"), (2, "MemoryDeallocation"), (3, "Other")] {
        plane.event_metadata.insert(id, XEventMetadata { id, name: name.into(), ..XEventMetadata::default() });
    }
    let st = |name: &str, value: StatValue| XStat { metadata_id: stat_id(name), value };
    for (k, events) in lines.iter().enumerate() {
        let mut line = XLine { id: k as i64, name: format!("thread/{k}"), timestamp_ns: 1_000, ..XLine::default() };
        for e in events.iter() {
            line.events.push(XEvent {
                metadata_id: if e.1 { 1 } else { 2 },
                offset_ps: e.0,
                duration_ps: 1,
                stats: vec![
                    st("index_on_host", StatValue::Int64(0)),
                    st("bytes_reserved", StatValue::Int64(0)),
                    st("bytes_allocated", StatValue::Int64(e.2)),
                    st("bytes_available", StatValue::Int64(1000 - e.2)),
                    st("fragmentation", StatValue::Double(0.25)),
                    st("peak_bytes_in_use", StatValue::Int64(e.6)),
                    st("requested_bytes", StatValue::Int64(e.3)),
                    st("allocation_bytes", StatValue::Int64(e.3)),
                    st("addr", StatValue::Uint64(e.4 as u64)),
                    st("tf_op", StatValue::Str(e.5.into())),
                    st("data_type", StatValue::Int64(1)),
                ],
                ..XEvent::default()
            });
        }
        // A non-memory event is ignored.
        line.events.push(XEvent { metadata_id: 3, offset_ps: 5, ..XEvent::default() });
        plane.lines.push(line);
    }
    XSpace { planes: vec![plane], ..XSpace::default() }
}

fn steps_ending_at(ends_ps: &[i128]) -> StepReport {
    StepReport {
        steps: ends_ps
            .iter()
            .enumerate()
            .map(|(i, &end)| Step { step_num: i as i64, start_ps: end - 10, duration_ps: 10 })
            .collect(),
        ..StepReport::default()
    }
}

#[test]
fn no_allocation_events_is_an_empty_profile() {
    let empty_with = |why: &str| MemoryProfile { notes: vec![why.to_string()], ..MemoryProfile::default() };
    assert_eq!(
        memory_profile(&XSpace::default(), &StepReport::default()),
        empty_with("no memory profile: the capture has no `/host:CPU` plane")
    );
    let space = host_space(&[&[]]);
    let p = memory_profile(&space, &StepReport::default());
    assert_eq!(MemoryProfile { notes: Vec::new(), ..p.clone() }, MemoryProfile::default());
    assert_eq!(p.notes.len(), 1);
    assert!(p.notes[0].starts_with("no memory profile: the capture has no allocator events"), "{:?}", p.notes);
}

#[test]
fn processing_order_rules_and_deallocation_metadata() {
    // Line 0 is processed first although its events are later in time.
    let space = host_space(&[
        &[Ev(300, true, 300, 200, 0x20, "b", 999), Ev(400, false, 100, 200, 0x20, "", 7)],
        &[Ev(100, true, 100, 100, 0x10, "a", 5), Ev(200, true, 300, 200, 0x30, "c", 6)],
    ]);
    let p = memory_profile(&space, &StepReport::default());
    assert_eq!(p.allocators.len(), 1);
    let a = &p.allocators[0];
    assert_eq!(a.id, "0");
    // Lifetime peak: the last *processed* event's value (line 1's last event).
    assert_eq!(a.peak_bytes, 6);
    // In-window peak 300 is reached twice; the later-processed tie (offset 200, line 1) wins.
    assert_eq!(a.peak_in_window.peak_bytes, 300);
    assert_eq!(a.peak_in_window.timestamp_ps, 200);
    assert_eq!(a.peak_in_window.time_ps, 1_000_000 + 200);
    assert_eq!(a.memory_capacity_bytes, 1000);
    assert_eq!((a.num_allocations, a.num_deallocations), (3, 1));
    // Timeline sorted by time; the deallocation copied the tf_op of the allocation at its address.
    let times: Vec<i64> = a.timeline.iter().map(|t| t.time_offset_ps).collect();
    assert_eq!(times, vec![100, 200, 300, 400]);
    assert_eq!(a.timeline[3].activity.tf_op, "b");
    assert_eq!(a.timeline[3].activity.data_type, "float");
    assert!(a.timeline.iter().all(|t| t.activity.step_id == 0));
    // Live at the peak (time 200): allocations at 100 and 200.
    let rows: Vec<(i64, &str)> = a.top_allocations.iter().map(|r| (r.bytes, r.tf_op.as_str())).collect();
    assert_eq!(rows, vec![(200, "c"), (100, "a")]);
    assert_eq!(p.peak_allocator.as_deref(), Some("0"));
}

#[test]
fn timeline_is_down_sampled_with_a_max_box_filter() {
    let n = 2 * MAX_TIMELINE_POINTS + 1;
    let events: Vec<Ev> = (0..n).map(|i| Ev(i as i64, true, (i % 7) as i64, 1, i as i64, "", 0)).collect();
    let space = host_space(&[&events]);
    let a = &memory_profile(&space, &StepReport::default()).allocators[0];
    assert_eq!(a.timeline.len(), MAX_TIMELINE_POINTS);
    // 999 boxes of width 2, then one of width 3 (count1 = 1000 * 3 - 2001).
    for (k, t) in a.timeline.iter().enumerate() {
        let lo = 2 * k;
        let hi = if k + 1 < MAX_TIMELINE_POINTS { lo + 2 } else { lo + 3 };
        let best = (lo..hi).max_by_key(|&i| (i % 7, std::cmp::Reverse(i))).expect("box");
        assert_eq!(t.time_offset_ps, best as i64, "box {k}");
    }
}

#[test]
fn step_growth_and_leak_rule() {
    // In use grows 100 -> 200 -> 300 -> 400 -> 500 across step ends.
    let events: Vec<Ev> = (1..=5).map(|i| Ev(i * 1000, true, i * 100, 100, i, "leak", 0)).collect();
    let space = host_space(&[&events]);
    let base = 1_000 * 1000; // line timestamp in ps
    let ends: Vec<i128> = (1..=5).map(|i| base + i * 1000 + 500).collect();
    let p = memory_profile(&space, &steps_ending_at(&ends));
    assert_eq!(p.step_growth_bytes, vec![100, 100, 100, 100]);
    assert!(p.leak_suspected);
    assert!(p.allocators[0].leak_suspected);

    // A step ending before the first event sees 0 in use; no steps -> no growth.
    let p = memory_profile(&space, &steps_ending_at(&[base, base + 2500]));
    assert_eq!(p.step_growth_bytes, vec![200]);
    assert!(!p.leak_suspected);
    assert!(memory_profile(&space, &StepReport::default()).step_growth_bytes.is_empty());

    // The rule itself: >= 3 consecutive positive growths totalling > 1% of capacity.
    assert!(leak_suspected(&[1, 1, 1], 200));
    assert!(!leak_suspected(&[1, 1, 1], 300));
    assert!(!leak_suspected(&[5, 5, -1, 5, 5], 100));
    assert!(!leak_suspected(&[10, 10], 10));
    assert!(!leak_suspected(&[], 0));
}

#[test]
fn the_memory_verdict_on_a_capture_agrees_with_the_step_growth() {
    const MIB: i64 = 1 << 20;
    let base = 1_000 * 1000; // line timestamp in ps
    let ends: Vec<i128> = (1..=12).map(|i| base + i * 1000 + 500).collect();
    let verdict_of =
        |p: &MemoryProfile| verdict(&[profile_series(&p.step_end_in_use_bytes, Some(p.peak_bytes))], vec![]);

    // 100 MiB allocated each step and never freed.
    let kept: Vec<Ev> =
        (1..=12).map(|i| Ev(i * 1000, true, i * 100 * MIB, 100 * MIB, i, "leak", i * 100 * MIB)).collect();
    let p = memory_profile(&host_space(&[&kept]), &steps_ending_at(&ends));
    assert_eq!(p.step_end_in_use_bytes, (1..=12).map(|i| i * 100 * MIB).collect::<Vec<_>>());
    assert!(p.step_growth_bytes.iter().all(|g| *g == 100 * MIB));
    let v = verdict_of(&p);
    assert!(v.headline.leak_suspected && p.leak_suspected, "{}", v.headline.reason);
    assert_eq!(v.headline.growth_bytes_per_step, Some((100 * MIB) as f64));

    // The same allocations, each freed before the step ends: flat, no leak by either rule.
    let freed: Vec<Ev> = (1..=12)
        .flat_map(|i| {
            [
                Ev(i * 1000, true, 100 * MIB, 100 * MIB, i, "tmp", 100 * MIB),
                Ev(i * 1000 + 100, false, 0, 100 * MIB, i, "tmp", 100 * MIB),
            ]
        })
        .collect();
    let p = memory_profile(&host_space(&[&freed]), &steps_ending_at(&ends));
    let v = verdict_of(&p);
    assert!(!v.headline.leak_suspected && !p.leak_suspected, "{}", v.headline.reason);
    assert_eq!(v.headline.growth_bytes_per_step, Some(0.0));
}

/// Our verdict on a capture and the headline allocator it came from.
fn ours(capture: &str) -> (String, MemoryVerdict) {
    let space = falcon_xplane::decode_file(xplane_data(capture)).expect("decode");
    let m = memory_profile(&space, &detect_steps(&space));
    let id = m.peak_allocator.clone().expect("a headline allocator");
    (id, verdict(&[profile_series(&m.step_end_in_use_bytes, Some(m.peak_bytes))], vec![]))
}

fn agrees_with_xprof(capture: &str, xprof: &str) {
    let (id, v) = ours(capture);
    let xprof = json_at(data(xprof));
    let alloc = &xprof["memoryProfilePerAllocator"][&id];
    // XProf's steps of this allocator: the step ids of its snapshots.
    let steps: BTreeSet<i64> = alloc["memoryProfileSnapshots"]
        .as_array()
        .expect("snapshots")
        .iter()
        .map(|s| int(&s["activityMetadata"]["stepId"]))
        .collect();
    assert_eq!(steps.len(), 1, "{capture}: XProf sees one step of allocations ({steps:?})");
    // One step: no growth across steps, so no trend and no leak — as XProf.
    let h = &v.headline;
    assert_eq!(h.source.as_deref(), Some("profile"));
    assert!(!h.leak_suspected, "{h:?}");
    assert_eq!((h.growth_bytes_per_step, h.ci), (None, None), "{h:?}");
    assert!(h.reason.contains("no growth across steps"), "{}", h.reason);
    // The peak is XProf's in-window peak of that allocator (stack + heap at the peak).
    let peak = &alloc["profileSummary"]["peakStats"];
    let xprof_peak = int(&peak["stackReservedBytes"]) + int(&peak["heapAllocatedBytes"]);
    assert_eq!(h.peak_bytes, Some(xprof_peak as u64), "{capture}");
    // The floor follows the peak: 5 % of it is above 64 MiB here.
    assert_eq!(h.floor_bytes, Some(0.05 * xprof_peak as f64));
}

#[test]
fn tpu_verdict_agrees_with_xprof_memory_profile() {
    agrees_with_xprof("tpu_v6e_inference.xplane.pb", "tpu_v6e_inference_xprof_memory_profile.json");
}

#[test]
fn gpu_verdict_agrees_with_xprof_memory_profile() {
    agrees_with_xprof("gpu_v100x8_tf.xplane.pb", "gpu_v100x8_tf_xprof_memory_profile.json.gz");
}
