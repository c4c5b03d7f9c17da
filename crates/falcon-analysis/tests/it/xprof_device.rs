//! Device-info rules on the reference captures (peaks, catalog fallback, serialization).

use falcon_analysis::device::{device_info, Hardware, PeakSource};
use falcon_analysis::hlo_stats::hlo_stats;
use falcon_analysis::op_metrics::op_metrics_db;
use falcon_analysis::overview::overview;
use falcon_analysis::roofline::roofline;
use falcon_analysis::steps::detect_steps;
use falcon_xplane::{decode_file, XSpace};

fn capture(name: &str) -> XSpace {
    let path = format!("{}/../falcon-xplane/tests/data/{name}.xplane.pb", env!("CARGO_MANIFEST_DIR"));
    decode_file(&path).expect("capture decodes")
}

#[test]
fn gpu_peaks_follow_xprof_when_vendor_unknown() {
    // The V100 TF capture has clock/cores/compute capability but no `device_vendor` stat: XProf
    // then reports no compute peak (its roofline shows peak_flop_rate 0) and `GPU` as device type.
    let d = device_info(&capture("gpu_v100x8_tf"));
    assert_eq!(d.hardware, Hardware::Gpu);
    assert_eq!(d.device_type, "GPU");
    assert_eq!(d.peak_teraflops_per_second, 0.0);
    assert_eq!(d.peak_source, PeakSource::None);
    assert!((d.peak_bws_giga_bytes_per_second[0] - 898.048).abs() < 1e-6);
    assert_eq!(d.hbm_ridge_point(), 0.0);
}

#[test]
fn tpu_peaks_from_device_stats() {
    let d = device_info(&capture("tpu_v6e_inference"));
    assert_eq!(d.peak_teraflops_per_second, 918.0);
    assert!(d.has_merged_vmem && !d.has_cmem && !d.has_megacore);
    assert_eq!(d.device_cores, 4);
}

#[test]
fn analyses_serialize() {
    let space = capture("tpu_v6e_inference");
    let d = device_info(&space);
    let db = op_metrics_db(&space, &d);
    let steps = detect_steps(&space);
    let r = roofline(&db, &d, &steps);
    let o = overview(&space, &d, &db, &steps, &r, None);
    let rows = hlo_stats(&db, &d);
    let json = serde_json::to_value(&rows).expect("serialize");
    assert!(json[0]["program_id"].is_string());
    serde_json::to_string(&o).expect("overview");
    serde_json::to_string(&r).expect("roofline");
    if std::env::var("FALCON_DUMP").is_ok() {
        println!("{}", serde_json::to_string_pretty(&o).unwrap_or_default());
        println!("{}", serde_json::to_string_pretty(&r.program).unwrap_or_default());
        println!(
            "busy {} idle {} total {} op {}",
            db.busy_time_ps, db.idle_time_ps, db.total_time_ps, db.total_op_time_ps
        );
        let g = capture("gpu_v100x8_tf");
        let gd = device_info(&g);
        let gdb = op_metrics_db(&g, &gd);
        println!("{:?} total {}", gdb.precision, gdb.total_time_ps);
    }
}
