//! Kernel stats against XProf 2.24.2's `kernel_stats` output for the same captures.
//!
//! Every expected value is read from XProf's JSON (a gviz DataTable) in `tests/data/`.

use std::path::PathBuf;

use falcon_analysis::kernels::{kernel_stats, KernelReport, KernelStat};
use falcon_analysis::steps::detect_steps;
use falcon_xplane::decode_file;
use serde_json::Value;

fn xplane(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../falcon-xplane/tests/data").join(name)
}

fn xprof_json(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name);
    let text = std::fs::read_to_string(&path).expect("read XProf JSON");
    serde_json::from_str(&text).expect("parse XProf JSON")
}

fn report_for(name: &str) -> KernelReport {
    let space = decode_file(xplane(name)).expect("decode xplane");
    let steps = detect_steps(&space);
    kernel_stats(&space, &steps)
}

/// One XProf row, keyed by column id.
struct Row {
    rank: f64,
    name: String,
    regs: f64,
    shmem: f64,
    block: String,
    grid: String,
    occupancy: f64,
    eligible: bool,
    uses_tc: bool,
    op_name: String,
    occurrences: f64,
    total: f64,
    avg: f64,
    min: f64,
    max: f64,
}

fn rows(table: &Value) -> Vec<Row> {
    let cols: Vec<&str> =
        table["cols"].as_array().expect("cols").iter().map(|c| c["id"].as_str().expect("col id")).collect();
    let idx = |id: &str| cols.iter().position(|c| *c == id).expect("column present");
    table["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            let c = r["c"].as_array().expect("cells");
            let v = |id: &str| &c[idx(id)]["v"];
            let num = |id: &str| v(id).as_f64().expect("number cell");
            let text = |id: &str| v(id).as_str().expect("text cell").to_owned();
            let flag = |id: &str| v(id).as_bool().expect("bool cell");
            Row {
                rank: num("rank"),
                name: text("kernel_name"),
                regs: num("registers_per_thread"),
                shmem: num("shmem_bytes"),
                block: text("block_dim"),
                grid: text("grid_dim"),
                occupancy: num("occupancy_pct"),
                eligible: flag("is_op_tensor_core_eligible"),
                uses_tc: flag("is_kernel_using_tensor_core"),
                op_name: text("op_name"),
                occurrences: num("occurrences"),
                total: num("total_duration_us"),
                avg: num("avg_duration_us"),
                min: num("min_duration_us"),
                max: num("max_duration_us"),
            }
        })
        .collect()
}

fn dims(d: [u32; 3]) -> String {
    format!("{},{},{}", d[0], d[1], d[2])
}

/// The exact (non-duration) identity of a row.
fn ident(k: &KernelStat) -> (String, String, u32, u32, String, String, bool, bool, u64) {
    (
        k.name.clone(),
        k.op_name.clone(),
        k.registers_per_thread,
        k.static_shmem_bytes + k.dynamic_shmem_bytes,
        dims(k.block_dim),
        dims(k.grid_dim),
        k.is_op_tensor_core_eligible,
        k.is_kernel_using_tensor_core,
        k.occurrences,
    )
}

fn row_ident(r: &Row) -> (String, String, u32, u32, String, String, bool, bool, u64) {
    (
        r.name.clone(),
        r.op_name.clone(),
        r.regs as u32,
        r.shmem as u32,
        r.block.clone(),
        r.grid.clone(),
        r.eligible,
        r.uses_tc,
        r.occurrences as u64,
    )
}

fn close(ours: f64, theirs: f64) -> bool {
    // 0.5% relative, with 1 ns of slack for XProf's 3-decimal microsecond rounding.
    (ours - theirs).abs() <= 0.005 * theirs.abs() + 0.001
}

#[test]
fn gpu_kernel_stats_match_xprof_row_by_row() {
    let report = report_for("gpu_v100x8_tf.xplane.pb");
    let expected = rows(&xprof_json("gpu_v100x8_tf_xprof_kernel_stats.json"));
    assert!(!expected.is_empty());
    assert_eq!(
        report.kernels.len(),
        expected.len(),
        "row count; ours: {:#?}",
        report.kernels.iter().map(ident).collect::<Vec<_>>()
    );

    // Ranks are 1..n in order.
    for (i, r) in expected.iter().enumerate() {
        assert_eq!(r.rank as usize, i + 1);
    }

    // Match rows as multisets: each expected row takes the first unused row of ours with the same
    // identity and durations within tolerance (rows with equal totals may be in any order).
    let mut used = vec![false; report.kernels.len()];
    for (i, r) in expected.iter().enumerate() {
        let found = report.kernels.iter().enumerate().position(|(j, k)| {
            !used[j]
                && ident(k) == row_ident(r)
                && close(k.total_time_us, r.total)
                && close(k.avg_time_us, r.avg)
                && close(k.min_time_us, r.min)
                && close(k.max_time_us, r.max)
                && (k.occupancy_percent - r.occupancy).abs() < 1e-9
        });
        let Some(j) = found else {
            panic!(
                "XProf row {} not matched: {:?} total {} avg {} min {} max {}",
                i + 1,
                row_ident(r),
                r.total,
                r.avg,
                r.min,
                r.max
            );
        };
        used[j] = true;
        // Same position, unless tied in total duration with the row XProf has there.
        let at = &report.kernels[i];
        assert!(j == i || close(at.total_time_us, r.total), "row {} is at position {} in ours", i + 1, j + 1);
    }

    // Sorted by total duration, longest first.
    for w in report.kernels.windows(2) {
        assert!(w[0].total_time_us >= w[1].total_time_us);
    }

    // XProf lists every distinct kernel here (fewer than its 1000-row cap): all launches are in.
    let xprof_launches: f64 = expected.iter().map(|r| r.occurrences).sum();
    assert_eq!(report.distinct_kernels, expected.len());
    assert_eq!(report.kernel_launches as f64, xprof_launches);
    let xprof_total: f64 = expected.iter().map(|r| r.total).sum();
    assert!(close(report.total_kernel_time_us, xprof_total));

    // No HLO protos in this TensorFlow capture: no FLOPs, and a note saying so.
    assert!(!report.has_hlo_costs);
    assert!(report.notes.iter().any(|n| n.contains("FLOP")));
}

#[test]
fn gpu_per_step_breakdown_is_consistent() {
    let space = decode_file(xplane("gpu_v100x8_tf.xplane.pb")).expect("decode xplane");
    let steps = detect_steps(&space);
    let report = kernel_stats(&space, &steps);
    let gpus = space.planes.iter().filter(|p| p.name.starts_with("/device:GPU:")).count();
    assert!(!steps.steps.is_empty());
    assert_eq!(report.per_step.len(), steps.steps.len());

    let mut sum_kernel = 0.0;
    for (s, step) in report.per_step.iter().zip(&steps.steps) {
        assert_eq!(s.step_num, step.step_num);
        assert_eq!(s.duration_ps, step.duration_ps);
        let step_us = step.duration_ps as f64 / 1e6;
        assert!(s.gpu_count <= gpus);
        assert!(s.kernel_time_us <= step_us * gpus as f64);
        let classes = s.compute_16bit_us
            + s.compute_32bit_us
            + s.host_to_device_us
            + s.device_to_host_us
            + s.device_to_device_us
            + s.collectives_us;
        assert!(classes <= step_us * s.gpu_count as f64 + 1e-6);
        // Kernels are compute events; non-overlapping can only shrink their summed time.
        assert!(s.compute_16bit_us + s.compute_32bit_us <= s.kernel_time_us + 1e-6);
        assert!((0.0..=100.0).contains(&s.compute_16bit_percent));
        sum_kernel += s.kernel_time_us;
    }
    assert!(sum_kernel <= report.total_kernel_time_us + 1e-6);
    // This capture's single step holds the grouped kernels of both busy GPUs.
    assert!(report.per_step.iter().any(|s| s.kernel_count > 0));
}

#[test]
fn gpu_16bit_share_matches_xprof_overview() {
    // XProf's overview page reports the 16-bit share of device compute ("%.1f%%").
    let overview = xprof_json("gpu_v100x8_tf_xprof_overview_page.json");
    let text = overview[0]["p"]["device_compute_16bit_percent"].as_str().expect("device_compute_16bit_percent");
    let xprof: f64 = text.trim_end_matches('%').parse().expect("percent");
    let report = report_for("gpu_v100x8_tf.xplane.pb");
    let c16: f64 = report.per_step.iter().map(|s| s.compute_16bit_us).sum();
    let c32: f64 = report.per_step.iter().map(|s| s.compute_32bit_us).sum();
    assert!(c16 + c32 > 0.0);
    let ours = 100.0 * c16 / (c16 + c32);
    assert!((ours - xprof).abs() <= 0.05 + 1e-9, "ours {ours} vs XProf {text}");
}

#[test]
fn tpu_capture_has_no_kernel_stats() {
    let expected = xprof_json("tpu_v6e_inference_xprof_kernel_stats.json");
    let xprof_rows = expected["rows"].as_array().expect("rows").len();
    let report = report_for("tpu_v6e_inference.xplane.pb");
    assert_eq!(report.kernels.len(), xprof_rows);
    assert!(report.kernels.is_empty());
    assert!(report.per_step.is_empty());
    assert!(!report.notes.is_empty());
}

#[test]
fn cpu_capture_does_not_panic() {
    let report = report_for("jax_cpu_mlp_vm.xplane.pb");
    assert!(report.kernels.is_empty());
    assert!(!report.notes.is_empty());
    // Serializes as snake_case JSON.
    let json = serde_json::to_value(&report).expect("serialize");
    assert!(json.get("has_hlo_costs").is_some());
    assert!(json.get("per_step").is_some());
}

#[test]
fn empty_space_does_not_panic() {
    let space = falcon_xplane::XSpace::default();
    let report = kernel_stats(&space, &detect_steps(&space));
    assert!(report.kernels.is_empty());
    assert!(report.per_step.is_empty());
}
