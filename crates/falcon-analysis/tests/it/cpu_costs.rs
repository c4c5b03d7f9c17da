//! XLA:CPU captures costed from their own HLO: the example workload's captures (`tests/data/compare/`, README
//! there) log `model_flops` a step from XLA's own `compiled.cost_analysis()` of the train step — the anchor. The
//! FLOPs Falcon counts a step from the capture's programs (XLA's base cost rules: elementwise 1 FLOP an element,
//! transcendentals apart, fusions the sum of their instructions) must agree with it to 0.01 %; then the roofline,
//! bound-by and MFU against a measured CPU peak, and the caller's `--peak-tflops` over it.

use falcon_analysis::device::PeakSource;
use falcon_analysis::input::find_profiles;
use falcon_analysis::profile::{analyze_files, AnalyzeOptions, CpuPeak, ProfileReport};
use falcon_core::bound::BoundBy;
use std::path::Path;

fn data(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn analyze(name: &str, options: &AnalyzeOptions) -> ProfileReport {
    let files = find_profiles(&data(name), None).unwrap();
    analyze_files(&files, options).unwrap()
}

/// The `model_flops` the workload logged (the same on every line: one compiled step).
fn logged_flops(name: &str) -> f64 {
    let text = std::fs::read_to_string(data(name).join("metrics.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    line["model_flops"].as_f64().unwrap()
}

fn measured() -> CpuPeak {
    CpuPeak { tflops: 0.1, memory_gb_per_s: 10.0, cores: 2, measured: "pool local on vm at test time".into() }
}

#[test]
fn flops_a_step_agree_with_xla_cost_analysis_on_every_capture() {
    for name in ["compare/batch8", "compare/batch16", "compare/layers3"] {
        let r = analyze(name, &AnalyzeOptions::default());
        let o = r.overview.as_ref().unwrap();
        let (ours, xla) =
            (o.capture_model_flops.unwrap_or_else(|| panic!("{name}: {:?}", o.notes)), logged_flops(name));
        let rel = (ours - xla).abs() / xla;
        eprintln!("{name}: {ours:.6e} FLOPs a step, XLA's cost_analysis {xla:.6e} ({:+.2e})", rel);
        assert!(rel < 1e-4, "{name}: {ours} vs XLA's {xla}");
        // Without a peak nothing divides: MFU, utilizations and bound-by stay unknown and say how to know them.
        assert_eq!((o.mfu, o.flops_utilization, o.hbm_bw_utilization), (None, None, None), "{name}");
        assert!(o.operational_intensity.is_some_and(|oi| oi > 0.0), "{name}");
        assert!(o.notes.iter().any(|n| n.contains("falcon doctor --calibrate")), "{name}: {:?}", o.notes);
    }
}

#[test]
fn every_op_of_the_step_is_costed_and_a_dot_is_2mnk() {
    let r = analyze("compare/batch8", &AnalyzeOptions::default());
    let ops = r.ops.as_ref().expect("ops[]");
    assert!(ops.len() > 250, "{}", ops.len());
    assert!(ops.iter().all(|o| !o.category.is_empty() && o.occurrences == 8), "{ops:#?}");
    assert!(ops.iter().all(|o| o.bytes_accessed > 0 || o.category == "data formatting"), "{ops:#?}");
    // `%dot.35 = f32[64,256] dot(f32[512,64] …, f32[256,512] …)`: 64 × 256 outputs over a contraction of 512.
    let dot = ops.iter().find(|o| o.name == "dot.35").expect("dot.35");
    assert!(dot.expression.contains("f32[64,256] dot(f32[512,64]"), "{}", dot.expression);
    assert_eq!(dot.flops, 8 * 2 * 64 * 256 * 512);
    // Transcendentals are not FLOPs (XLA's rule): a fusion of multiplies and a tanh costs its multiplies only.
    let gelu = ops.iter().find(|o| o.name == "multiply_tanh_fusion").expect("multiply_tanh_fusion");
    let elements = 8.0 * 64.0 * 256.0;
    assert!((gelu.flops as f64 / 8.0 / elements) < 10.0, "{} FLOPs an element", gelu.flops as f64 / 8.0 / elements);
}

#[test]
fn a_measured_peak_gives_the_roofline_bound_by_and_mfu() {
    let options = AnalyzeOptions { cpu_peak: Some(measured()), ..AnalyzeOptions::default() };
    let r = analyze("compare/batch8", &options);
    let o = r.overview.as_ref().unwrap();
    assert_eq!(o.peak_source, PeakSource::Measured);
    assert_eq!(o.peak_teraflops_per_second, Some(0.05), "per core");
    let flops = o.capture_model_flops.unwrap();
    let mfu = flops / (o.step_time_ms.mean / 1e3 * 0.1e12);
    assert!((o.mfu.unwrap() - mfu).abs() < 1e-12, "{:?} vs {mfu}", o.mfu);
    assert_eq!(o.mfu_flops_source.as_deref(), Some("profile cost stats"));
    assert_eq!(o.mfu_peak_teraflops_per_second, Some(0.1));
    assert!(o.bound_by.is_some_and(|b| matches!(b, BoundBy::Compute | BoundBy::Memory)), "{:?}", o.notes);
    assert!(matches!(o.bound_by_resource.as_deref(), Some("Compute" | "DRAM")), "{:?}", o.bound_by_resource);
    assert!(o.flops_utilization.is_some() && o.hbm_bw_utilization.is_some());
    assert!(r.notes.iter().any(|n| n.contains("measured, not catalogued")), "{:?}", r.notes);
    let roofline = r.roofline.as_ref().unwrap();
    assert!(roofline.available && roofline.ridge_point > 0.0);
    // 0.05 TFLOP/s and 5 GB/s a core: the ridge at 10 FLOP/byte.
    assert!((roofline.ridge_point - 10.0).abs() < 1e-9, "{}", roofline.ridge_point);
    let ops = r.ops.as_ref().unwrap();
    assert!(ops.iter().all(|o| matches!(o.bound_by.as_str(), "Compute" | "DRAM" | "Unknown")), "{ops:#?}");
    assert!(ops.iter().any(|o| o.bound_by == "DRAM") && ops.iter().any(|o| o.bound_by == "Compute"));

    // The caller's peak beats the measured one (its memory bandwidth is kept).
    let given = AnalyzeOptions { peak_tflops: Some(0.2), ..options };
    let r = analyze("compare/batch8", &given);
    let o = r.overview.as_ref().unwrap();
    assert_eq!((o.peak_source, o.mfu_peak_teraflops_per_second), (PeakSource::Given, Some(0.2)));
    assert!((o.mfu.unwrap() - mfu / 2.0).abs() < 1e-12);
    assert!(o.hbm_bw_utilization.is_some());
}

#[test]
fn logged_flops_sit_beside_the_captures_own() {
    let options = AnalyzeOptions {
        cpu_peak: Some(measured()),
        logged_model_flops: Some(logged_flops("compare/batch8")),
        ..AnalyzeOptions::default()
    };
    let o = analyze("compare/batch8", &options).overview.unwrap();
    assert_eq!(o.mfu_flops_source.as_deref(), Some("profile cost stats"));
    assert_eq!(o.logged_model_flops, Some(logged_flops("compare/batch8")));
    // They agree: no note about a disagreement.
    assert!(!o.notes.iter().any(|n| n.contains("the workload logs model_flops")), "{:?}", o.notes);
}
