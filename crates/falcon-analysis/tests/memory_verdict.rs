//! The memory verdict on real captures agrees with XProf's memory profile of the same capture: the TPU v6e
//! inference and the GPU V100x8 captures each hold one step of allocations (XProf puts every snapshot of the
//! headline allocator in one step id), so neither has growth across steps to measure — the verdict says so,
//! calls no leak, and carries XProf's peak. A synthetic capture that keeps 100 MiB a step is a leak.

use std::collections::BTreeSet;
use std::path::PathBuf;

use falcon_analysis::leak::{profile_series, verdict, MemoryVerdict};
use falcon_analysis::memory::memory_profile;
use falcon_analysis::steps::detect_steps;
use serde_json::Value;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn xplane_data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../falcon-xplane/tests/data").join(name)
}

fn json_at(path: PathBuf) -> Value {
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if path.extension().is_some_and(|x| x == "gz") {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text).expect("gunzip");
        return serde_json::from_slice(&text).expect("parse json");
    }
    serde_json::from_slice(&bytes).expect("parse json")
}

fn int(v: &Value) -> i64 {
    v.as_str().map_or_else(|| v.as_i64().unwrap_or(0), |s| s.parse().unwrap())
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
