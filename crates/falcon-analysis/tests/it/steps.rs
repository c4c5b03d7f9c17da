//! Checks `detect_steps` against XProf's own outputs for the same captures:
//! - JAX CPU MLP (host `train` step annotations): `xprof_cli_get_overview.json` (mean/stddev, printed
//!   with one decimal) and `xprof_overview_page.json` (per-step times, microsecond precision);
//! - TPU v6e inference (no step markers): XProf reports no step time;
//! - GPU V100x8 TF (device `Steps` lines): `xprof_overview_page.json` step-time table.

use std::path::PathBuf;

use falcon_analysis::steps::{detect_steps, StepReport, StepSource};
use falcon_xplane::{StatValue, XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn xplane_data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../falcon-xplane/tests/data").join(name)
}

fn json(name: &str) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(data(name)).expect("read json")).expect("parse json")
}

fn report(path: PathBuf) -> StepReport {
    detect_steps(&falcon_xplane::decode_file(path).expect("decode xplane"))
}

/// A number XProf printed as a string (e.g. `"26.3"`).
fn num(v: &serde_json::Value) -> f64 {
    v.as_str().expect("string").parse().expect("number")
}

fn assert_rel(actual: f64, expected: f64, what: &str) {
    let rel = (actual - expected).abs() / expected.abs();
    assert!(rel <= 0.005, "{what}: ours {actual} vs XProf {expected} (rel diff {rel})");
}

/// `(step label, step time ms)` rows of the overview page's step-time DataTable.
fn overview_step_rows(page: &serde_json::Value) -> Vec<(String, f64)> {
    let table = &page[1];
    let cols = table["cols"].as_array().expect("cols");
    let step_col = cols.iter().position(|c| c["id"] == "stepTimeMs").expect("stepTimeMs");
    table["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            let c = r["c"].as_array().expect("c");
            (c[0]["v"].as_str().expect("label").to_owned(), c[step_col]["v"].as_f64().expect("step time"))
        })
        .collect()
}

#[test]
fn jax_cpu_steps_match_xprof() {
    let r = report(data("jax_cpu_mlp_vm.xplane.pb"));
    assert_eq!(r.source, StepSource::HostStepAnnotations);

    // Per-step times: overview page step-time table ("train 0" .. "train 4").
    let page = json("jax_cpu_mlp_xprof_overview_page.json");
    let rows = overview_step_rows(&page);
    assert_eq!(rows.len(), 5);
    assert_eq!(r.steps.len(), rows.len());
    for (step, (label, ms)) in r.steps.iter().zip(&rows) {
        assert_eq!(label, &format!("train {}", step.step_num));
        assert_rel(step.duration_ps as f64 / 1e9, *ms, label);
    }
    assert_eq!(r.steps.iter().map(|s| s.step_num).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
    assert!(r.steps.windows(2).all(|w| w[0].start_ps < w[1].start_ps));

    // Mean / stddev recomputed from XProf's own per-step times.
    let xs: Vec<f64> = rows.iter().map(|(_, ms)| *ms).collect();
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (xs.len() - 1) as f64).sqrt();
    assert_eq!(r.step_time_ms.n, 5);
    assert_rel(r.step_time_ms.mean, mean, "mean vs XProf per-step times");
    assert_rel(r.step_time_ms.stddev, sd, "stddev vs XProf per-step times");

    // get_overview prints one decimal: ours must print the same.
    let ov = json("jax_cpu_mlp_xprof_cli_get_overview.json");
    let ps = &ov["performance_summary"];
    assert_eq!(format!("{:.1}", r.step_time_ms.mean), ps["steptime_ms_average"]);
    assert_eq!(format!("{:.1}", r.step_time_ms.stddev), ps["steptime_ms_standard_deviation"]);
    assert_rel(r.step_time_ms.mean, num(&ps["steptime_ms_average"]), "mean");
    // Min / max as printed on the overview page.
    let p = &page[1]["p"];
    let min = r.steps.iter().map(|s| s.duration_ps).min().unwrap() as f64 / 1e9;
    let max = r.steps.iter().map(|s| s.duration_ps).max().unwrap() as f64 / 1e9;
    assert_eq!(format!("{min:.1}"), p["steptime_ms_minimum"]);
    assert_eq!(format!("{max:.1}"), p["steptime_ms_maximum"]);
}

#[test]
fn tpu_inference_has_no_steps_like_xprof() {
    let r = report(xplane_data("tpu_v6e_inference.xplane.pb"));
    let ov = json("tpu_v6e_inference_xprof_cli_get_overview.json");
    let ps = &ov["performance_summary"];
    assert_eq!(num(&ps["steptime_ms_average"]), 0.0);
    assert_eq!(num(&ps["steptime_ms_standard_deviation"]), 0.0);
    assert_eq!(r.source, StepSource::None);
    assert!(r.steps.is_empty());
    assert_eq!(r.step_time_ms.n, 0);
    assert_eq!(format!("{:.2}", r.step_time_ms.mean), ps["steptime_ms_average"]);
    assert_eq!(format!("{:.2}", r.step_time_ms.stddev), ps["steptime_ms_standard_deviation"]);
}

#[test]
fn gpu_device_steps_match_xprof() {
    let r = report(xplane_data("gpu_v100x8_tf.xplane.pb"));
    assert_eq!(r.source, StepSource::DeviceStepsLine);
    let page = json("gpu_v100x8_tf_xprof_overview_page.json");
    let rows = overview_step_rows(&page);
    assert_eq!(rows.len(), 1);
    assert_eq!(r.steps.len(), 1);
    assert_eq!(rows[0].0, r.steps[0].step_num.to_string());
    // Two GPUs carry a `Steps` event for group 0 (19.87 ms and 21.31 ms): XProf takes the longest.
    assert_rel(r.steps[0].duration_ps as f64 / 1e9, rows[0].1, "gpu step 0");
    let p = &page[1]["p"];
    assert_eq!(format!("{:.1}", r.step_time_ms.mean), p["steptime_ms_average"]);
    assert_eq!(format!("{:.1}", r.step_time_ms.stddev), p["steptime_ms_standard_deviation"]);
    assert_eq!(r.step_time_ms.n, 1);
}

#[test]
fn report_serializes() {
    let r = report(data("jax_cpu_mlp_vm.xplane.pb"));
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["source"], "host_step_annotations");
    assert_eq!(v["steps"].as_array().unwrap().len(), 5);
    assert!(v["steps"][0]["start_ps"].is_i64());
    assert!(v["steps"][0]["duration_ps"].is_i64());
    assert_eq!(v["step_time_ms"]["n"], 5);
    assert!(v["step_time_ms"]["mean"].is_f64());
    assert!(v["step_time_ms"]["stddev"].is_f64());
}

// ---- synthetic spaces ----------------------------------------------------------------------------

fn plane(name: &str, events: &[&str], stats: &[&str], lines: Vec<XLine>) -> XPlane {
    XPlane {
        name: name.to_owned(),
        lines,
        event_metadata: events
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let id = i as i64 + 1;
                (id, XEventMetadata { id, name: (*n).to_owned(), ..Default::default() })
            })
            .collect(),
        stat_metadata: stats
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let id = i as i64 + 1;
                (id, XStatMetadata { id, name: (*n).to_owned(), ..Default::default() })
            })
            .collect(),
        ..Default::default()
    }
}

fn ev(metadata_id: i64, offset_ps: i64, duration_ps: i64, stats: &[(i64, i64)]) -> XEvent {
    XEvent {
        metadata_id,
        offset_ps,
        duration_ps,
        stats: stats.iter().map(|&(id, v)| XStat { metadata_id: id, value: StatValue::Int64(v) }).collect(),
        ..Default::default()
    }
}

fn line(name: &str, events: Vec<XEvent>) -> XLine {
    XLine { name: name.to_owned(), events, ..Default::default() }
}

#[test]
fn device_step_prefers_enclosing_host_marker_and_drops_host_only_steps() {
    // stats: 1 group_id, 2 _r
    let dev = plane(
        "/device:GPU:0",
        &["0", "1"],
        &["group_id"],
        vec![line("Steps", vec![ev(1, 1_000, 500, &[(1, 0)]), ev(2, 3_000, 800, &[(1, 1)])])],
    );
    let host = plane(
        "/host:CPU",
        &["train", "test/inner", "other"],
        &["group_id", "_r"],
        vec![line(
            "python",
            vec![
                ev(1, 900, 700, &[(1, 0), (2, 1)]),   // encloses device step 0
                ev(1, 2_900, 500, &[(1, 1), (2, 1)]), // shorter than device step 1
                ev(1, 9_000, 100, &[(1, 7), (2, 1)]), // host-only group: dropped
                ev(2, 1_000, 5_000, &[(1, 0)]),       // contains '/': not a marker
                ev(3, 0, 9_000, &[(1, 0)]),           // not a marker name
            ],
        )],
    );
    let r = detect_steps(&XSpace { planes: vec![dev, host], ..Default::default() });
    assert_eq!(r.source, StepSource::DeviceStepsLine);
    let got: Vec<(i64, i128, i64)> = r.steps.iter().map(|s| (s.step_num, s.start_ps, s.duration_ps)).collect();
    assert_eq!(got, vec![(0, 900, 700), (1, 3_000, 800)]);
    assert_eq!(r.step_time_ms.n, 2);
    let (a, b) = (700e-9, 800e-9);
    assert!((r.step_time_ms.mean - (a + b) / 2.0).abs() < 1e-15);
    assert!((r.step_time_ms.stddev - ((b - a) / 2.0) * 2f64.sqrt()).abs() < 1e-15);
}

#[test]
fn unmarked_host_events_are_not_steps() {
    // `train` without `_r`, `step_num` or `group_id` is not tied to a step.
    let host = plane("/host:CPU", &["train"], &["other"], vec![line("python", vec![ev(1, 0, 10, &[(1, 1)])])]);
    let r = detect_steps(&XSpace { planes: vec![host], ..Default::default() });
    assert_eq!(r.source, StepSource::None);
    assert!(r.steps.is_empty());
    assert_eq!(r.step_time_ms.n, 0);
    assert_eq!(r.step_time_ms.mean, 0.0);
}
