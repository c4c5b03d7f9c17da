//! Falcon's device-op analyses (device info, OpMetricsDb, HLO stats, roofline, overview) against
//! XProf 2.24.2's own outputs for the same captures (JSON files in `tests/data`, produced by XProf).
//!
//! Tolerances: counts and names exact; times and rates within 0.5% (relative); XProf's rounded
//! percent strings within their printed precision. Rows with equal self time (ties) are compared
//! as multisets: rows are matched by (program id, name) and each position must hold one of the
//! XProf rows of that position's tie group.

use std::collections::HashMap;

use falcon_analysis::device::{device_info, Hardware, PeakSource};
use falcon_analysis::hlo_stats::{hlo_stats, HloStatsRow};
use falcon_analysis::op_metrics::op_metrics_db;
use falcon_analysis::overview::overview;
use falcon_analysis::roofline::{roofline, RooflinePoint};
use falcon_analysis::steps::detect_steps;
use falcon_core::bound::BoundBy;
use falcon_xplane::{decode_file, XSpace};
use serde_json::Value;

const REL_TOL: f64 = 0.005;

fn capture(name: &str) -> XSpace {
    let path = format!("{}/../falcon-xplane/tests/data/{name}.xplane.pb", env!("CARGO_MANIFEST_DIR"));
    decode_file(&path).expect("capture decodes")
}

fn xprof(name: &str) -> Value {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("xprof json");
    serde_json::from_str(&text).expect("valid json")
}

/// Rows of a DataTable as column-id → value maps.
fn table_rows(table: &Value) -> Vec<HashMap<String, Value>> {
    let cols: Vec<String> =
        table["cols"].as_array().expect("cols").iter().map(|c| c["id"].as_str().expect("col id").to_string()).collect();
    table["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| cols.iter().cloned().zip(r["c"].as_array().expect("cells").iter().map(|c| c["v"].clone())).collect())
        .collect()
}

fn num(row: &HashMap<String, Value>, key: &str) -> f64 {
    match &row[key] {
        Value::Number(n) => n.as_f64().expect("f64"),
        Value::String(s) => s.parse().expect("numeric string"),
        Value::Bool(b) => f64::from(u8::from(*b)),
        other => panic!("{key}: not a number: {other}"),
    }
}

fn text<'a>(row: &'a HashMap<String, Value>, key: &str) -> &'a str {
    row[key].as_str().unwrap_or_else(|| panic!("{key}: not a string"))
}

fn close(ours: f64, theirs: f64) -> bool {
    let scale = ours.abs().max(theirs.abs());
    scale < 1e-9 || (ours - theirs).abs() <= REL_TOL * scale
}

#[track_caller]
fn assert_close(what: &str, ours: f64, theirs: f64) {
    assert!(close(ours, theirs), "{what}: falcon {ours} vs xprof {theirs}");
}

/// "86.5%" → 86.5
fn percent(s: &str) -> f64 {
    s.trim_end_matches('%').parse().expect("percent string")
}

/// Our value matches an XProf string printed with `decimals` decimals.
#[track_caller]
fn assert_printed(what: &str, ours: f64, printed: f64, decimals: i32) {
    let half_ulp = 0.5 * 10f64.powi(-decimals) + 1e-9;
    assert!((ours - printed).abs() <= half_ulp, "{what}: falcon {ours} vs xprof printed {printed}");
}

/// Checks that `ours[i]` is one of XProf's rows in the tie group of position `i`.
fn assert_tie_order<T>(
    ours: &[T],
    theirs: &[HashMap<String, Value>],
    our_key: impl Fn(&T) -> (String, String),
    their_key: impl Fn(&HashMap<String, Value>) -> (String, String),
    self_time: &str,
) {
    assert_eq!(ours.len(), theirs.len(), "row count");
    for (i, o) in ours.iter().enumerate() {
        let t = num(&theirs[i], self_time);
        let group: Vec<(String, String)> =
            theirs.iter().filter(|r| close(num(r, self_time), t)).map(&their_key).collect();
        assert!(group.contains(&our_key(o)), "position {i}: {:?} not in XProf tie group {group:?}", our_key(o));
    }
}

// ------------------------------------------------------------------------------------------------

#[test]
fn tpu_device_info_matches_xprof() {
    let space = capture("tpu_v6e_inference");
    let d = device_info(&space);
    let env = xprof("tpu_v6e_inference_xprof_cli_get_overview.json");
    assert_eq!(d.hardware, Hardware::Tpu);
    assert_eq!(d.device_type, env["run_environment"]["device_type"].as_str().expect("device_type"));
    assert_eq!(d.device_cores.to_string(), env["run_environment"]["device_core_count"].as_str().expect("cores"));
    assert_eq!(d.peak_source, PeakSource::DeviceStats);
    assert_eq!(d.catalog_chip.as_deref(), Some("v6e"));
    let props = &xprof("tpu_v6e_inference_xprof_roofline_model.json")[0]["p"];
    let prop = |k: &str| props[k].as_str().expect("prop").parse::<f64>().expect("numeric prop");
    assert_close("hbm_ridge_point", d.hbm_ridge_point(), prop("hbm_ridge_point"));
}

#[test]
fn tpu_hlo_stats_match_xprof_row_by_row() {
    let space = capture("tpu_v6e_inference");
    let d = device_info(&space);
    let db = op_metrics_db(&space, &d);
    let ours = hlo_stats(&db, &d);
    let theirs = table_rows(&xprof("tpu_v6e_inference_xprof_hlo_stats.json"));
    assert!(!theirs.is_empty());
    let key = |r: &HloStatsRow| (r.program_id.to_string(), r.name.clone());
    let their_key =
        |r: &HashMap<String, Value>| (text(r, "program_id").to_string(), text(r, "hlo_op_name").to_string());
    assert_tie_order(&ours, &theirs, key, their_key, "total_self_time");
    let by_key: HashMap<(String, String), &HloStatsRow> = ours.iter().map(|r| (key(r), r)).collect();
    for t in &theirs {
        let k = their_key(t);
        let o = by_key.get(&k).unwrap_or_else(|| panic!("missing row {k:?}"));
        let w = |f: &str| format!("{k:?}.{f}");
        assert_eq!(o.category, text(t, "category"), "{}", w("category"));
        assert_eq!(o.expression, text(t, "hlo_op_expression"), "{}", w("expression"));
        assert_eq!(o.provenance, text(t, "tf_op_name"), "{}", w("provenance"));
        assert_eq!(o.occurrences as f64, num(t, "occurrences"), "{}", w("occurrences"));
        assert_eq!(o.bound_by, text(t, "bound_by"), "{}", w("bound_by"));
        assert_eq!(if o.rematerialization { "Yes" } else { "No" }, text(t, "hlo_rematerialization"), "{}", w("remat"));
        assert_eq!(o.core_type, text(t, "core_type"), "{}", w("core_type"));
        assert_close(&w("total_time"), o.total_time_us, num(t, "total_time"));
        assert_close(&w("avg_time"), o.avg_time_us, num(t, "avg_time"));
        assert_close(&w("total_self_time"), o.self_time_us, num(t, "total_self_time"));
        assert_close(&w("avg_self_time"), o.avg_self_time_us, num(t, "avg_self_time"));
        // XProf prints these two ×100.
        assert_close(&w("total_self_time_percent"), o.self_time_fraction * 100.0, num(t, "total_self_time_percent"));
        assert_close(
            &w("cumulative"),
            o.cumulative_self_time_fraction * 100.0,
            num(t, "cumulative_total_self_time_percent"),
        );
        assert_close(&w("dma_stall"), o.dma_stall_fraction, num(t, "dma_stall_percent"));
        assert_close(&w("model_flop_rate"), o.model_flop_rate_gflops, num(t, "model_flop_rate"));
        assert_close(&w("normalized_flop_rate"), o.flop_rate_gflops, num(t, "normalized_flop_rate"));
        assert_close(&w("measured_memory_bw"), o.memory_bw_gibs, num(t, "measured_memory_bw"));
        assert_close(&w("hbm_bw"), o.hbm_bw_gibs, num(t, "hbm_bw"));
        assert_close(&w("cmem_read_bw"), o.cmem_read_bw_gibs, num(t, "cmem_read_bw"));
        assert_close(&w("cmem_write_bw"), o.cmem_write_bw_gibs, num(t, "cmem_write_bw"));
        assert_close(&w("operational_intensity"), o.operational_intensity, num(t, "operational_intensity"));
    }
}

fn assert_point(what: &str, o: &RooflinePoint, t: &HashMap<String, Value>) {
    let w = |f: &str| format!("{what}.{f}");
    assert_eq!(o.category, text(t, "category"), "{}", w("category"));
    assert_eq!(o.name, text(t, "operation"), "{}", w("operation"));
    assert_eq!(o.step, text(t, "step"), "{}", w("step"));
    assert_eq!(o.bound_by, text(t, "bound_by"), "{}", w("bound_by"));
    assert_eq!(o.program_id.to_string(), text(t, "hlo_module_id"), "{}", w("program id"));
    assert_eq!(o.occurrences as f64, num(t, "occurrences"), "{}", w("occurrences"));
    assert_eq!(o.include_infeed_outfeed, t["include_infeed_outfeed"].as_bool().expect("bool"), "{}", w("infeed"));
    let pairs: [(&str, f64); 19] = [
        ("total_time", o.total_time_us),
        ("avg_time", o.avg_time_us),
        ("total_self_time", o.self_time_us),
        ("avg_self_time", o.avg_self_time_us),
        ("total_self_time_percent", o.self_time_fraction),
        ("measured_flop_rate", o.measured_flop_rate_gflops),
        ("model_flop_rate", o.model_flop_rate_gflops),
        ("measured_memory_bw", o.measured_memory_bw_gibs),
        ("hbm_bw", o.hbm_bw_gibs),
        ("operational_intensity", o.operational_intensity),
        ("hbm_operational_intensity", o.hbm_operational_intensity),
        ("bottleneck_operational_intensity", o.bottleneck_operational_intensity),
        ("total_time_per_core", o.total_time_per_core_us),
        ("total_time_in_percentage", o.total_time_fraction),
        ("optimal_flop_rate", o.optimal_flop_rate_gflops),
        ("roofline_efficiency", o.roofline_efficiency),
        ("compute_efficiency", o.compute_efficiency),
        ("max_mem_bw_utilization", o.max_mem_bw_utilization),
        ("dma_stall_percent", o.dma_stall_fraction),
    ];
    for (col, ours) in pairs {
        if t.contains_key(col) {
            assert_close(&w(col), ours, num(t, col));
        }
    }
    for (col, ours) in [
        ("vmem_read_bw", o.vmem_read_bw_gibs),
        ("vmem_write_bw", o.vmem_write_bw_gibs),
        ("cmem_read_bw", o.cmem_read_bw_gibs),
        ("cmem_write_bw", o.cmem_write_bw_gibs),
        ("vmem_read_operational_intensity", o.vmem_read_operational_intensity),
        ("vmem_write_operational_intensity", o.vmem_write_operational_intensity),
    ] {
        if t.contains_key(col) {
            assert_close(&w(col), ours, num(t, col));
        }
    }
}

#[test]
fn tpu_roofline_matches_xprof() {
    let space = capture("tpu_v6e_inference");
    let d = device_info(&space);
    let db = op_metrics_db(&space, &d);
    let steps = detect_steps(&space);
    let r = roofline(&db, &d, &steps);
    let json = xprof("tpu_v6e_inference_xprof_roofline_model.json");
    let props = &json[0]["p"];
    let prop = |k: &str| props[k].as_str().expect("prop").parse::<f64>().expect("numeric prop");
    assert_eq!(r.device_type, props["device_type"].as_str().expect("device_type"));
    assert_eq!(r.has_cmem, prop("has_cmem") != 0.0);
    assert_eq!(r.has_merged_vmem, prop("has_merged_vmem") != 0.0);
    assert_eq!(r.megacore, prop("megacore") != 0.0);
    for (k, ours) in [
        ("peak_flop_rate", r.peak_flop_rate_gflops),
        ("peak_hbm_bw", r.peak_hbm_bw_gibs),
        ("peak_cmem_read_bw", r.peak_cmem_read_bw_gibs),
        ("peak_cmem_write_bw", r.peak_cmem_write_bw_gibs),
        ("peak_vmem_read_bw", r.peak_vmem_read_bw_gibs),
        ("peak_vmem_write_bw", r.peak_vmem_write_bw_gibs),
        ("hbm_ridge_point", r.ridge_point),
        ("cmem_read_ridge_point", r.cmem_read_ridge_point),
        ("cmem_write_ridge_point", r.cmem_write_ridge_point),
        ("vmem_read_ridge_point", r.vmem_read_ridge_point),
        ("vmem_write_ridge_point", r.vmem_write_ridge_point),
    ] {
        assert_close(k, ours, prop(k));
    }

    let rows = table_rows(&json[0]);
    let included: Vec<&HashMap<String, Value>> =
        rows.iter().filter(|t| t["include_infeed_outfeed"].as_bool() == Some(true)).collect();
    let excluded: Vec<&HashMap<String, Value>> =
        rows.iter().filter(|t| t["include_infeed_outfeed"].as_bool() == Some(false)).collect();
    // Program row.
    let program =
        included.iter().find(|t| text(t, "step") == "Total" && text(t, "category") == "Program").expect("program");
    assert_point("program", &r.program, program);
    let program_ex =
        excluded.iter().find(|t| text(t, "step") == "Total" && text(t, "category") == "Program").expect("program");
    assert_point("program excl. infeed", &r.program_excluding_infeed_outfeed, program_ex);
    // Average row.
    if let Some(avg) = included.iter().find(|t| text(t, "step") == "Average") {
        assert_point("average", r.average_step.as_ref().expect("average row"), avg);
    }
    // Per-op rows.
    let ops: Vec<HashMap<String, Value>> = included
        .iter()
        .filter(|t| text(t, "step") == "Total" && text(t, "category") != "Program")
        .map(|t| (*t).clone())
        .collect();
    assert_tie_order(
        &r.points,
        &ops,
        |p| (p.program_id.to_string(), p.name.clone()),
        |t| (text(t, "hlo_module_id").to_string(), text(t, "operation").to_string()),
        "total_self_time",
    );
    let by_key: HashMap<(String, String), &RooflinePoint> =
        r.points.iter().map(|p| ((p.program_id.to_string(), p.name.clone()), p)).collect();
    for t in &ops {
        let k = (text(t, "hlo_module_id").to_string(), text(t, "operation").to_string());
        let o = by_key.get(&k).unwrap_or_else(|| panic!("missing roofline row {k:?}"));
        assert_point(&format!("{k:?}"), o, t);
        assert_close(
            &format!("{k:?}.cumulative"),
            o.cumulative_self_time_fraction,
            num(t, "cumulative_total_self_time_percent"),
        );
    }
}

#[test]
fn tpu_overview_matches_xprof_cli() {
    let space = capture("tpu_v6e_inference");
    let d = device_info(&space);
    let db = op_metrics_db(&space, &d);
    let steps = detect_steps(&space);
    let r = roofline(&db, &d, &steps);
    let o = overview(&space, &d, &db, &steps, &r, None);
    let cli = xprof("tpu_v6e_inference_xprof_cli_get_overview.json");
    let ps = &cli["performance_summary"];
    let env = &cli["run_environment"];
    let s = |k: &str| ps[k].as_str().unwrap_or_else(|| panic!("{k}"));
    assert_eq!(o.device_type, env["device_type"].as_str().expect("device_type"));
    assert_eq!(o.device_cores.to_string(), env["device_core_count"].as_str().expect("cores"));
    assert_eq!(o.hosts.to_string(), env["host_count"].as_str().expect("hosts"));
    let known = |what: &str, v: Option<f64>| v.unwrap_or_else(|| panic!("{what} is known on this TPU capture"));
    assert_printed(
        "duty cycle",
        known("duty", o.device_duty_cycle_percent),
        percent(s("device_duty_cycle_percent")),
        1,
    );
    assert_printed("idle", known("idle", o.device_idle_percent), percent(s("device_idle_time_percent")), 1);
    let hbm = known("hbm", o.hbm_bw_utilization);
    assert_printed("hbm bw util", hbm * 100.0, percent(s("hbm_bw_utilization_percent")), 2);
    assert_printed("max mem bw util", hbm * 100.0, percent(s("max_mem_bw_utilization_percent")), 2);
    let flops = known("flops", o.flops_utilization);
    assert_printed("compute efficiency", flops * 100.0, percent(s("compute_efficiency_percent")), 2);
    let roof = known("roofline", o.roofline_efficiency);
    assert_printed("roofline efficiency", roof * 100.0, percent(s("roofline_efficiency_percent")), 2);
    assert_printed(
        "flop rate util rel. to roofline",
        roof * 100.0,
        percent(s("flop_rate_utilization_relative_to_roofline")),
        2,
    );
    // XProf's resource name is kept beside the one vocabulary's word for it.
    assert_eq!(o.bound_by_resource.as_deref(), Some(s("bound_by")));
    assert_eq!(s("bound_by"), "HBM");
    assert_eq!(o.bound_by, Some(BoundBy::Memory));
    assert_eq!(serde_json::to_value(&o).unwrap()["bound_by"], "memory");
    let oi = ps["operational_intensity_flop_per_byte"].as_f64().expect("oi");
    assert_printed("operational intensity", known("oi", o.operational_intensity), oi, 4);
    assert_printed("step time", o.step_time_ms.mean, s("steptime_ms_average").parse().expect("f64"), 2);
    assert_printed("step stddev", o.step_time_ms.stddev, s("steptime_ms_standard_deviation").parse().expect("f64"), 2);
    // MFU without steps: whole profile, profile cost stats; equals the Program row's model FLOP
    // rate ÷ peak.
    assert_eq!(o.peak_source, PeakSource::DeviceStats);
    assert_eq!(o.mfu_flops_source.as_deref(), Some("profile cost stats"));
    let mfu = o.mfu.expect("mfu");
    assert_close("mfu", mfu, r.program.model_flop_rate_gflops / r.peak_flop_rate_gflops);
    // A caller's per-step FLOPs cannot be used without steps.
    let o2 = overview(&space, &d, &db, &steps, &r, Some(1e15));
    assert_eq!(o2.mfu_flops_source.as_deref(), Some("profile cost stats"));
}

#[test]
fn tpu_memory_breakdown_decodes_to_hbm_bytes() {
    let space = capture("tpu_v6e_inference");
    let d = device_info(&space);
    let db = op_metrics_db(&space, &d);
    let fusion = db.ops.iter().find(|o| o.name == "broadcast_add_fusion").expect("fusion op");
    assert!(!fusion.memory_accessed_breakdown.is_empty());
    assert!(fusion.memory_accessed_breakdown.iter().all(|m| m.memory_space == 1));
    assert!(fusion.memory_accessed_breakdown.iter().any(|m| m.is_read));
    assert!(fusion.memory_accessed_breakdown.iter().any(|m| !m.is_read));
    let hbm: u64 = fusion.memory_accessed_breakdown.iter().map(|m| m.bytes_accessed).sum();
    assert_eq!(hbm, fusion.bytes_accessed);
    // IDLE op present, excluded from HLO stats.
    assert!(db.ops.iter().any(|o| o.is_idle()));
    assert!(db.has_hlo_costs);
}

#[test]
fn gpu_matches_xprof_run_environment_and_roofline() {
    let space = capture("gpu_v100x8_tf");
    let d = device_info(&space);
    assert_eq!(d.hardware, Hardware::Gpu);
    let page = xprof("gpu_v100x8_tf_xprof_overview_page.json");
    let env = &page[2]["p"];
    assert_eq!(d.device_type, env["device_type"].as_str().expect("device_type"));
    assert_eq!(d.device_cores.to_string(), env["device_core_count"].as_str().expect("cores"));
    let db = op_metrics_db(&space, &d);
    assert!(!db.has_hlo_costs);
    assert!(!db.notes.is_empty());
    // HLO stats: XProf has none for this TF capture.
    let theirs = table_rows(&xprof("gpu_v100x8_tf_xprof_hlo_stats.json"));
    assert_eq!(hlo_stats(&db, &d).len(), theirs.len());
    let steps = detect_steps(&space);
    let r = roofline(&db, &d, &steps);
    let json = xprof("gpu_v100x8_tf_xprof_roofline_model.json");
    let props = &json[0]["p"];
    let prop = |k: &str| props[k].as_str().expect("prop").parse::<f64>().expect("numeric prop");
    assert_close("peak_flop_rate", r.peak_flop_rate_gflops, prop("peak_flop_rate"));
    assert_close("peak_hbm_bw", r.peak_hbm_bw_gibs, prop("peak_hbm_bw"));
    assert_close("peak_vmem_write_bw", r.peak_vmem_write_bw_gibs, prop("peak_vmem_write_bw"));
    assert_close("hbm_ridge_point", r.ridge_point, prop("hbm_ridge_point"));
    let rows = table_rows(&json[0]);
    let program = rows
        .iter()
        .find(|t| text(t, "step") == "Total" && t["include_infeed_outfeed"].as_bool() == Some(true))
        .expect("program");
    assert_point("gpu program", &r.program, program);
    assert!(r.points.is_empty());
    assert!(r.average_step.is_none());
    // Per-step Program rows (XProf: one all-zero row per step, no HLO ops costed).
    let per_step: Vec<&HashMap<String, Value>> = rows
        .iter()
        .filter(|t| {
            !["Total", "Average"].contains(&text(t, "step")) && t["include_infeed_outfeed"].as_bool() == Some(true)
        })
        .collect();
    assert_eq!(r.steps.len(), per_step.len());
    for (o, t) in r.steps.iter().zip(per_step) {
        assert_point("gpu step", o, t);
    }
    // Precision split of device compute.
    let o = overview(&space, &d, &db, &steps, &r, None);
    let analysis = &page[0]["p"];
    assert_printed(
        "16bit",
        o.compute_16bit_percent.expect("16-bit share known on GPU"),
        percent(analysis["device_compute_16bit_percent"].as_str().expect("16")),
        1,
    );
    assert_printed(
        "32bit",
        o.compute_32bit_percent.expect("32-bit share known on GPU"),
        percent(analysis["device_compute_32bit_percent"].as_str().expect("32")),
        1,
    );
    assert_eq!(o.mfu, None);
    // No HLO costs and no peak: the roofline-derived fields are unknown (null with a note), not 0; XProf
    // does not compute a GPU duty cycle.
    assert_eq!((o.flops_utilization, o.hbm_bw_utilization, o.operational_intensity), (None, None, None));
    assert_eq!((o.bound_by, o.device_duty_cycle_percent), (None, None));
    assert!(o.device_idle_percent.is_some());
    let json = serde_json::to_value(&o).unwrap();
    for k in ["flops_utilization", "hbm_bw_utilization", "bound_by", "device_duty_cycle_percent"] {
        assert!(json[k].is_null(), "{k}: {}", json[k]);
    }
    assert!(o.notes.iter().any(|n| n.contains("duty cycle unknown")), "{:?}", o.notes);
    assert!(o.notes.iter().any(|n| n.contains("utilization") && n.contains("unknown")), "{:?}", o.notes);
}

#[test]
fn cpu_capture_has_no_device_analyses_and_says_what_it_knows() {
    let space = capture("jax_cpu_mlp_vm");
    let d = device_info(&space);
    assert_eq!(d.hardware, Hardware::CpuOnly);
    let cli = xprof("jax_cpu_mlp_xprof_cli_get_overview.json");
    assert_eq!(d.device_type, cli["run_environment"]["device_type"].as_str().expect("device_type"));
    // XProf reports 0 cores for a CPU capture; the capture's threads say more: two intra-op pool threads
    // (`tf_XLAEigen/…`), four threads that ran XLA ops, five thread lines.
    assert_eq!(cli["run_environment"]["device_core_count"].as_str(), Some("0"));
    let t = d.cpu_threads.expect("CPU threads of a CPU capture");
    assert_eq!((t.intra_op_threads, t.op_threads, t.threads), (2, 4, 5));
    assert_eq!(d.device_cores, 2);
    let db = op_metrics_db(&space, &d);
    assert!(db.device_ops().next().is_none());
    assert!(hlo_stats(&db, &d).is_empty());
    let steps = detect_steps(&space);
    let r = roofline(&db, &d, &steps);
    assert!(!r.available);
    assert!(r.points.is_empty());
    let o = overview(&space, &d, &db, &steps, &r, Some(1e12));
    assert_eq!(o.mfu, None);
    assert_eq!(o.device_cores, 2);
    let ps = &cli["performance_summary"];
    assert_printed("step", o.step_time_ms.mean, ps["steptime_ms_average"].as_str().expect("s").parse().expect("f"), 1);
    // XProf prints 0.0% duty cycle and idle for CPU; Falcon computes the duty cycle the trace analysis does,
    // from the same timeline, so `profile analyze` and `profile trace` give one number.
    assert_eq!(ps["device_duty_cycle_percent"].as_str(), Some("0.0%"));
    let tl = falcon_analysis::timeline::xspace::from_xspace(&space, "");
    let trace = falcon_analysis::trace::analyze_trace(&tl, &falcon_analysis::trace::TraceOptions::default());
    let trace_duty = falcon_analysis::trace::summary(&trace).duty_cycle.expect("trace duty cycle");
    let duty = o.device_duty_cycle_percent.expect("CPU duty cycle");
    assert!((duty - 100.0 * trace_duty).abs() < 1e-9, "{duty} vs {trace_duty}");
    assert!(duty > 80.0 && duty < 100.0, "{duty}");
    assert!((o.device_idle_percent.expect("idle") - (100.0 - duty)).abs() < 1e-9);
    // XProf's op database has no ops on XLA:CPU (its op profile, HLO stats and roofline are empty there): from it
    // the costs are unknown, with a note, never 0. Falcon's own analysis costs the XLA:CPU op events from the
    // capture's HLO (tests/it/cpu_costs.rs).
    assert_eq!((o.flops_utilization, o.hbm_bw_utilization, o.roofline_efficiency), (None, None, None));
    assert_eq!(o.operational_intensity, None);
    assert!(o.notes.iter().any(|n| n.contains("holds no HLO program for its XLA:CPU ops")), "{:?}", o.notes);
    // Not host-bound by the trace's host check: bound-by unknown, and a note says why.
    assert_eq!(trace.host_bound.as_ref().and_then(|h| h.bound_by), None);
    assert_eq!(o.bound_by, None);
    assert!(o.notes.iter().any(|n| n.starts_with("bound-by unknown")), "{:?}", o.notes);
}

#[test]
fn tpu_roofline_program_matches_xprof_cli() {
    let space = capture("tpu_v6e_inference");
    let d = device_info(&space);
    let db = op_metrics_db(&space, &d);
    let r = roofline(&db, &d, &detect_steps(&space));
    let cli = xprof("tpu_v6e_inference_xprof_cli_get_roofline_model.json");
    let p = &cli["program"];
    let f = |k: &str| p[k].as_f64().unwrap_or_else(|| panic!("{k}"));
    let s = |k: &str| p[k].as_str().unwrap_or_else(|| panic!("{k}"));
    assert_eq!(r.program.bound_by, s("bound_by"));
    assert_printed("ridge", r.ridge_point, f("bound_by_ridge_point_flop_per_byte"), 3);
    assert_printed("oi", r.program.operational_intensity, f("operational_intensity_flop_per_byte"), 4);
    assert_printed(
        "bottleneck oi",
        r.program.bottleneck_operational_intensity,
        f("bottleneck_operational_intensity_flop_per_byte"),
        4,
    );
    assert_printed("optimal", r.program.optimal_flop_rate_gflops, f("optimal_flop_rate_gflops"), 2);
    assert_printed("measured", r.program.measured_flop_rate_gflops, f("measured_flop_rate_gflops"), 2);
    assert_printed("model", r.program.model_flop_rate_gflops, f("model_flop_rate_gflops"), 2);
    assert_printed("mem bw", r.program.measured_memory_bw_gibs, f("measured_memory_bw_gibs"), 2);
    assert_printed("hbm bw", r.program.hbm_bw_gibs, f("hbm_bw_gibs"), 2);
    assert_printed("time", r.program.total_time_us / 1e3, f("total_time_ms"), 3);
    assert_printed("roofline eff", r.program.roofline_efficiency * 100.0, percent(s("roofline_efficiency_percent")), 2);
    assert_printed("hbm util", r.program.max_mem_bw_utilization * 100.0, percent(s("hbm_bw_utilization_percent")), 2);
    let info = &cli["device_info"];
    let g = |k: &str| info[k].as_f64().unwrap_or_else(|| panic!("{k}"));
    assert_close("peak_flop_rate", r.peak_flop_rate_gflops, g("peak_flop_rate"));
    assert_close("peak_hbm_bw_gibs", r.peak_hbm_bw_gibs, g("peak_hbm_bw_gibs"));
    assert_close("peak_vmem_read_bw_gibs", r.peak_vmem_read_bw_gibs, g("peak_vmem_read_bw_gibs"));
    assert_close("vmem_write_ridge_point", r.vmem_write_ridge_point, g("vmem_write_ridge_point"));
}
