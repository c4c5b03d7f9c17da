//! Kernel-bench analysis on the example workload's real results (`examples/kernel_bench/bench.py`, two runs on
//! a 2-core CPU): medians, speed-ups, achieved throughput, roofline with and without peaks, fast_p by hand,
//! compare of a run with itself and with a second run, and malformed input.

use falcon_analysis::error::AnalysisError;
use falcon_analysis::kernel_bench::{
    analyze, compare, read_results, KernelOptions, KernelResults, PeakSource, ResultsFormat, RooflineBound,
};
use falcon_core::stats::VerdictKind;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kernel_bench").join(name)
}

fn run1() -> KernelResults {
    read_results(&data("cpu_results.jsonl")).expect("read run 1")
}

fn run2() -> KernelResults {
    read_results(&data("cpu_results_run2.jsonl")).expect("read run 2")
}

/// The file's rows as plain JSON, read without the crate.
fn raw_rows(name: &str) -> Vec<Value> {
    std::fs::read_to_string(data(name))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Median by the textbook rule (mean of the two middle values when n is even).
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn times(v: &Value) -> Vec<f64> {
    v["times_ms"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1e-300)
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn reads_the_example_results() {
    let r = run1();
    assert_eq!(r.format, ResultsFormat::Jsonl);
    assert_eq!(r.rows.len(), 18);
    assert!(r.rows.iter().all(|row| row.hardware == "cpu" && row.dtype == "fp32" && row.times_ms.len() == 30));
    let kernels: Vec<&str> = r.rows.iter().map(|row| row.kernel.as_str()).collect();
    assert!(kernels.contains(&"matmul") && kernels.contains(&"attention"));
    assert_eq!(r.rows.iter().filter(|row| row.reference).count(), 4, "one reference per kernel x shape");
    assert_eq!(r.rows[0].shape_key, "k=256,m=256,n=256");
    assert_eq!(r.rows[0].line, 1);
}

#[test]
fn medians_speedups_and_throughput_follow_from_the_samples() {
    let raw = raw_rows("cpu_results.jsonl");
    let report = analyze(&run1(), &KernelOptions::default());
    assert_eq!(report.rows.len(), raw.len());
    // Reference medians by (kernel, shape), computed from the raw JSON.
    let mut refs = BTreeMap::new();
    for v in raw.iter().filter(|v| v["reference"] == Value::Bool(true)) {
        refs.insert((v["kernel"].to_string(), v["shape"].to_string()), median(&times(v)));
    }
    for (row, v) in report.rows.iter().zip(&raw) {
        let t = times(v);
        let med = median(&t);
        assert!(close(row.median_ms, med), "{} {}: {} vs {med}", row.kernel, row.variant, row.median_ms);
        assert_eq!(row.n, t.len());
        assert_eq!(row.min_ms, t.iter().copied().fold(f64::INFINITY, f64::min));
        assert!(row.p25_ms <= row.median_ms && row.median_ms <= row.p75_ms);
        assert!(close(row.iqr_ms, row.p75_ms - row.p25_ms));
        let reference = refs[&(v["kernel"].to_string(), v["shape"].to_string())];
        assert!(close(row.speedup.unwrap(), reference / med), "speed-up of {}", row.variant);
        assert!(close(row.reference_median_ms.unwrap(), reference));
        let flops = v["flops"].as_f64().unwrap();
        let bytes = v["bytes"].as_f64().unwrap();
        assert!(close(row.achieved_tflops.unwrap(), flops / (med / 1e3) / 1e12));
        assert!(close(row.achieved_gbs.unwrap(), bytes / (med / 1e3) / 1e9));
        assert!(close(row.intensity.unwrap(), flops / bytes));
        // A CPU has no peaks in the catalog: no roofline without overrides.
        assert_eq!(row.peak_tflops, None);
        assert_eq!(row.roofline_fraction, None);
        assert_eq!(row.bound, None);
    }
    // References have speed-up 1 exactly.
    assert!(report.rows.iter().filter(|r| r.reference).all(|r| r.speedup == Some(1.0)));
    // Achieved GFLOP/s of the 512³ jnp.dot row, spelled out: 2·512³ FLOPs / median.
    let dot = report.rows.iter().find(|r| r.variant == "jnp_dot" && r.shape_key == "k=512,m=512,n=512").unwrap();
    let gflops = dot.achieved_tflops.unwrap() * 1e3;
    assert!(close(gflops, 2.0 * 512f64.powi(3) / (dot.median_ms * 1e-3) / 1e9));
    assert!(gflops > 1.0 && gflops < 10_000.0, "{gflops} GFLOP/s on a CPU");
    assert!(report.notes.iter().any(|n| n.contains("hardware `cpu` has no peak figures")), "{:?}", report.notes);
}

#[test]
fn roofline_with_peak_overrides() {
    let opts = KernelOptions { peak_tflops: Some(0.5), peak_gbs: Some(40.0), ..Default::default() };
    let report = analyze(&run1(), &opts);
    for row in &report.rows {
        assert_eq!(row.peak_tflops, Some(0.5));
        assert_eq!(row.peak_gbs, Some(40.0));
        assert_eq!(row.peak_source, Some(PeakSource::Override));
        let memory_roof = row.intensity.unwrap() * 40.0 / 1e3; // TFLOP/s at this intensity
        let roof = memory_roof.min(0.5);
        assert!(close(row.roofline_tflops.unwrap(), roof));
        assert!(close(row.roofline_fraction.unwrap(), row.achieved_tflops.unwrap() / roof));
        let want = if memory_roof < 0.5 { RooflineBound::Memory } else { RooflineBound::Compute };
        assert_eq!(row.bound, Some(want));
    }
    // 256³ matmul: intensity 2·256³/(3·256²·4) ≈ 42.7 FLOP/B → 1.7 TFLOP/s memory roof: compute bound.
    let mm = report.rows.iter().find(|r| r.kernel == "matmul" && r.shape_key == "k=256,m=256,n=256").unwrap();
    assert_eq!(mm.bound, Some(RooflineBound::Compute));
    assert!(!report.notes.iter().any(|n| n.contains("no peak figures")));
}

#[test]
fn catalog_hardware_gets_per_chip_peaks() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"{"kernel":"mm","variant":"ref","reference":true,"correct":true,"shape":[4096,4096,4096],"dtype":"bf16","hardware":"v5p-8","times_ms":[1.0,1.1,0.9],"flops":137438953472,"bytes":100663296}
{"kernel":"mm","variant":"ref","reference":true,"correct":true,"shape":[4096,4096,4096],"dtype":"bf16","hardware":"h100-80gb-8","times_ms":[0.3,0.3,0.3],"flops":137438953472,"bytes":100663296}
{"kernel":"copy","variant":"ref","reference":true,"correct":true,"shape":[1048576],"dtype":"bf16","hardware":"v5e-4","times_ms":[0.01],"bytes":4194304}
{"kernel":"mm","variant":"ref","reference":true,"correct":true,"shape":[8],"dtype":"bf16","hardware":"tpu-v99","times_ms":[1]}
"#;
    let path = write(dir.path(), "kernel_bench_tpu.jsonl", text);
    let report = analyze(&read_results(&path).unwrap(), &KernelOptions::default());
    let v5p = &report.rows[0];
    assert_eq!(
        (v5p.peak_tflops, v5p.peak_gbs, v5p.peak_source),
        (Some(459.0), Some(2765.0), Some(PeakSource::Catalog))
    );
    // 137.4 GFLOP in 1 ms = 137.4 TFLOP/s; intensity 1365 FLOP/B → compute bound at 459.
    assert!(close(v5p.achieved_tflops.unwrap(), 137_438_953_472.0 / 1e-3 / 1e12));
    assert_eq!(v5p.bound, Some(RooflineBound::Compute));
    assert!(close(v5p.roofline_fraction.unwrap(), v5p.achieved_tflops.unwrap() / 459.0));
    let h100 = &report.rows[1];
    assert_eq!((h100.peak_tflops, h100.peak_gbs), (Some(989.0), Some(3350.0)));
    // Bytes only: % of peak bandwidth (v5e: 819 GB/s).
    let copy = &report.rows[2];
    assert_eq!(copy.peak_gbs, Some(819.0));
    assert_eq!(copy.bound, Some(RooflineBound::Memory));
    assert!(close(copy.roofline_fraction.unwrap(), 4_194_304.0 / 1e-5 / 1e9 / 819.0));
    assert_eq!(report.rows[3].peak_tflops, None);
    assert!(report.notes.iter().any(|n| n.contains("`tpu-v99` is not in the catalog")), "{:?}", report.notes);
    // An override on one peak mixes with the catalog's other.
    let mixed =
        analyze(&read_results(&path).unwrap(), &KernelOptions { peak_tflops: Some(100.0), ..Default::default() });
    assert_eq!(
        (mixed.rows[0].peak_tflops, mixed.rows[0].peak_gbs, mixed.rows[0].peak_source),
        (Some(100.0), Some(2765.0), Some(PeakSource::Mixed))
    );
}

/// fast_p counted by hand from the raw file: non-reference rows that are correct and beat their reference's
/// median by more than p, over all non-reference rows.
fn fast_p_by_hand(raw: &[Value], p: f64) -> (usize, usize) {
    let mut refs = BTreeMap::new();
    for v in raw.iter().filter(|v| v["reference"] == Value::Bool(true)) {
        refs.insert((v["kernel"].to_string(), v["shape"].to_string()), median(&times(v)));
    }
    let variants: Vec<&Value> = raw.iter().filter(|v| v["reference"] != Value::Bool(true)).collect();
    let count = variants
        .iter()
        .filter(|v| v["correct"] == Value::Bool(true))
        .filter(|v| refs[&(v["kernel"].to_string(), v["shape"].to_string())] / median(&times(v)) > p)
        .count();
    (count, variants.len())
}

#[test]
fn fast_p_matches_a_count_by_hand() {
    let raw = raw_rows("cpu_results.jsonl");
    for p in [0.0, 0.5, 0.9, 1.0, 1.5] {
        let report = analyze(&run1(), &KernelOptions { p, ..Default::default() });
        let (count, n) = fast_p_by_hand(&raw, p);
        assert_eq!((report.fast_p.count, report.fast_p.n), (count, n), "p = {p}");
        assert_eq!(report.fast_p.value, Some(count as f64 / n as f64));
        assert_eq!(report.fast_p.p, p);
    }
    let report = analyze(&run1(), &KernelOptions::default());
    // 14 variant rows, 2 of them the deliberately wrong off-by-one matmul.
    assert_eq!(report.fast_0.n, 14);
    assert_eq!(report.fast_0.count, 12);
    assert_eq!(report.correct_fraction, Some(12.0 / 14.0));
    let wrong: Vec<_> = report.rows.iter().filter(|r| r.correct == Some(false)).collect();
    assert_eq!(wrong.len(), 2);
    assert!(wrong.iter().all(|r| r.variant.ends_with("off_by_one")));
    // fast_p never counts a wrong kernel, even one faster than its reference (the off-by-one skips work).
    let p0 = analyze(&run1(), &KernelOptions { p: 0.0, ..Default::default() });
    assert_eq!(p0.fast_p.count, 12);
    assert!(report.notes.iter().any(|n| n.contains("failed their correctness check")));
    let g = report.geomean_speedup.unwrap();
    assert!(g > 0.0 && g < 10.0);
}

#[test]
fn a_run_compared_with_itself_is_the_same_everywhere() {
    let c = compare(&run1(), &run1());
    assert_eq!(c.rows.len(), 18);
    assert!(c.only_in_base.is_empty() && c.only_in_new.is_empty());
    for row in &c.rows {
        assert_eq!(row.verdict.verdict, VerdictKind::Same, "{} {} {}", row.kernel, row.variant, row.shape_key);
        assert_eq!(row.verdict.delta_rel, Some(0.0));
        assert_eq!(row.base_median_ms, row.new_median_ms);
        assert_eq!(row.verdict.metric, "time_ms");
    }
    assert_eq!((c.same, c.regressed, c.improved, c.inconclusive, c.became_incorrect), (18, 0, 0, 0, 0));
    assert!(!c.has_regression());
}

#[test]
fn two_runs_get_a_verdict_per_row() {
    let (a, b) = (run1(), run2());
    let c = compare(&a, &b);
    assert_eq!(c.rows.len(), 18);
    assert_eq!(c.same + c.regressed + c.improved + c.inconclusive, 18);
    for (row, (ra, rb)) in c.rows.iter().zip(a.rows.iter().zip(&b.rows)) {
        assert_eq!((&row.kernel, &row.variant), (&ra.kernel, &ra.variant));
        assert!(close(row.base_median_ms.unwrap(), median(&ra.times_ms)));
        assert!(close(row.new_median_ms.unwrap(), median(&rb.times_ms)));
        let d = (row.new_median_ms.unwrap() - row.base_median_ms.unwrap()) / row.base_median_ms.unwrap();
        assert!(close(row.verdict.delta_rel.unwrap(), d));
        assert!(row.verdict.p_value.is_some());
        assert_eq!(row.verdict.a.n, 30);
        // A change verdict points the way the medians moved.
        match row.verdict.verdict {
            VerdictKind::Regressed => assert!(d > 0.0),
            VerdictKind::Improved => assert!(d < 0.0),
            _ => {}
        }
    }
    assert_eq!(c.has_regression(), c.regressed > 0);
    // The reverse comparison swaps regressions and improvements.
    let r = compare(&b, &a);
    assert_eq!((r.regressed, r.improved), (c.improved, c.regressed));
}

#[test]
fn compare_reports_unmatched_rows_and_lost_correctness() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(
        dir.path(),
        "base.jsonl",
        r#"{"kernel":"mm","variant":"ref","reference":true,"correct":true,"shape":[8],"dtype":"fp32","hardware":"cpu","times_ms":[1,1,1,1,1]}
{"kernel":"mm","variant":"fast","correct":true,"shape":[8],"dtype":"fp32","hardware":"cpu","times_ms":[1,1.01,0.99,1,1]}
{"kernel":"mm","variant":"old","correct":true,"shape":[8],"dtype":"fp32","hardware":"cpu","times_ms":[1]}
"#,
    );
    let new = write(
        dir.path(),
        "new.jsonl",
        r#"{"kernel":"mm","variant":"ref","reference":true,"correct":true,"shape":[8],"dtype":"fp32","hardware":"cpu","times_ms":[2,2.1,2.2,2,2.05,2.1]}
{"kernel":"mm","variant":"fast","correct":false,"shape":[8],"dtype":"fp32","hardware":"cpu","times_ms":[1,1.01,0.99,1,1]}
{"kernel":"mm","variant":"ref","reference":true,"correct":true,"shape":[8],"dtype":"fp32","hardware":"v5e-1","times_ms":[1]}
"#,
    );
    let c = compare(&read_results(&base).unwrap(), &read_results(&new).unwrap());
    assert_eq!(c.rows.len(), 2);
    assert_eq!(c.rows[0].verdict.verdict, VerdictKind::Regressed);
    assert_eq!(c.rows[1].verdict.verdict, VerdictKind::Same);
    assert!(c.rows[1].became_incorrect());
    assert_eq!(c.became_incorrect, 1);
    assert_eq!(c.only_in_base.len(), 1);
    assert_eq!(c.only_in_base[0].variant, "old");
    assert_eq!(c.only_in_new.len(), 1);
    assert_eq!(c.only_in_new[0].hardware, "v5e-1");
    assert!(c.has_regression());
    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(json["rows"][0]["verdict"]["verdict"], "regressed");
    assert_eq!(json["rows"][0]["verdict"]["direction"], "lower_is_better");
}

#[test]
fn csv_gives_the_same_analysis_as_jsonl() {
    let raw = raw_rows("cpu_results.jsonl");
    let mut csv = String::from("kernel,variant,reference,correct,shape,dtype,hardware,times_ms,flops,bytes\n");
    for v in &raw {
        let t: Vec<String> = times(v).iter().map(|x| x.to_string()).collect();
        csv.push_str(&format!(
            "{},{},{},{},\"{}\",{},{},{},{},{}\n",
            v["kernel"].as_str().unwrap(),
            v["variant"].as_str().unwrap(),
            v["reference"],
            v["correct"],
            v["shape"].to_string().replace('"', "\"\""),
            v["dtype"].as_str().unwrap(),
            v["hardware"].as_str().unwrap(),
            t.join(if v["kernel"] == "matmul" { " " } else { ";" }),
            v["flops"],
            v["bytes"]
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "kernel_bench.csv", &csv);
    let from_csv = read_results(&path).unwrap();
    assert_eq!(from_csv.format, ResultsFormat::Csv);
    let a = analyze(&from_csv, &KernelOptions::default());
    let b = analyze(&run1(), &KernelOptions::default());
    assert_eq!(a.rows.len(), b.rows.len());
    for (x, y) in a.rows.iter().zip(&b.rows) {
        assert_eq!((&x.kernel, &x.variant, &x.shape_key), (&y.kernel, &y.variant, &y.shape_key));
        assert_eq!(x.median_ms, y.median_ms);
        assert_eq!(x.speedup, y.speedup);
        assert_eq!(x.achieved_tflops, y.achieved_tflops);
        assert_eq!(x.line, y.line + 1, "CSV lines count the header");
    }
    assert_eq!(a.fast_p, b.fast_p);
}

#[test]
fn a_directory_stands_for_its_kernel_bench_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(data("cpu_results.jsonl"), dir.path().join("kernel_bench_results.jsonl")).unwrap();
    write(dir.path(), "metrics.jsonl", "{}\n");
    let r = read_results(dir.path()).unwrap();
    assert_eq!(r.rows.len(), 18);
    assert!(r.path.ends_with("kernel_bench_results.jsonl"));
    let empty = tempfile::tempdir().unwrap();
    assert!(matches!(read_results(empty.path()), Err(AnalysisError::NotFound(_))));
}

#[test]
fn malformed_rows_are_refused_with_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(data("cpu_results.jsonl")).unwrap();
    let mut lines: Vec<String> = good.lines().map(str::to_string).collect();
    let cases: Vec<(usize, String, &str)> = vec![
        (
            4,
            r#"{"kernel":"matmul","variant":"x","times_ms":"fast"}"#.into(),
            "field `times_ms`: expected an array of numbers",
        ),
        (
            7,
            r#"{"kernel":"matmul","variant":"x","times_ms":[1,null]}"#.into(),
            "field `times_ms[1]`: expected a number",
        ),
        (2, r#"{"kernel":7,"variant":"x","times_ms":[1]}"#.into(), "field `kernel`: expected a string"),
        (
            10,
            r#"{"kernel":"matmul","variant":"x","times_ms":[1],"bytes":-5}"#.into(),
            "field `bytes`: expected a number ≥ 0",
        ),
        (3, r#"{"kernel":"matmul","variant":"x","#.into(), "not valid JSON"),
    ];
    for (at, replacement, want) in cases {
        let original = std::mem::replace(&mut lines[at - 1], replacement);
        let path = write(dir.path(), "bad.jsonl", &(lines.join("\n") + "\n"));
        let err = read_results(&path).unwrap_err();
        lines[at - 1] = original;
        let msg = err.to_string();
        assert!(msg.starts_with(&format!("{}:{at}: ", path.display())), "{msg}");
        assert!(msg.contains(want), "{msg}");
        assert!(matches!(err, AnalysisError::Invalid(_)));
    }
    // A copied row is a duplicate of the first.
    let dup = write(dir.path(), "dup.jsonl", &format!("{good}{}\n", lines[0]));
    let msg = read_results(&dup).unwrap_err().to_string();
    assert!(msg.contains(":19: duplicate row") && msg.contains("already at line 1"), "{msg}");
    // A missing file is not found (exit 3 in the CLI).
    assert!(matches!(read_results(&dir.path().join("nope.jsonl")), Err(AnalysisError::NotFound(_))));
}
