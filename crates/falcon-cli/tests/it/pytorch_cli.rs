//! PyTorch GPU traces as a user reads them (issue 34), on the real H200 traces of the project's test data
//! (`falcon-analysis/tests/data/h200/pytorch/`): `profile analyze` gives kernels with tensor cores, framework
//! ops, launch statistics and the launch-bound call; `profile compare` of the eager and the `torch.compile`d step
//! shows the step time improved, the eager elementwise kernels removed and Triton's fused kernels added; an
//! experiment whose workload writes `pt_fast`'s trace and metrics reports the profiler's overhead (~2×).

use crate::common::{code, falcon, json};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-analysis/tests/data/h200/pytorch").join(name)
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

#[test]
fn analyze_reads_a_pytorch_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = fixture("pt_lite.pt.trace.json.gz");
    let out = falcon(dir.path(), &["profile", "analyze", trace.to_str().unwrap(), "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let r = json(&out);
    let kernels = r["kernels"].as_array().unwrap();
    let tc = |prefix: &str| {
        let rows: Vec<&Value> = kernels.iter().filter(|k| s(&k["name"]).starts_with(prefix)).collect();
        assert!(!rows.is_empty(), "{prefix}");
        rows.iter().all(|k| k["is_kernel_using_tensor_core"] == true)
    };
    assert!(tc("nvjet_sm90_"), "cuBLAS Hopper GEMMs on tensor cores");
    assert!(tc("cudnn_generated_fort_native_sdpa_sm90_flash"), "cuDNN flash attention on tensor cores");
    assert!(kernels
        .iter()
        .filter(|k| s(&k["name"]).contains("elementwise_kernel"))
        .all(|k| k["is_kernel_using_tensor_core"] == false));
    let mm =
        kernels.iter().find(|k| s(&k["name"]).starts_with("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT")).unwrap();
    assert_eq!(mm["op_name"], "aten::mm");
    assert!(mm["occurrences"].as_u64().unwrap() > 1 && mm["grid_dim"][0].as_u64().unwrap() > 0);
    let ops = r["framework_ops"].as_array().unwrap();
    assert_eq!(ops[0]["name"], "aten::mm", "most device time: {}", ops[0]);
    assert!(r["framework_scopes"].as_array().unwrap().iter().any(|o| s(&o["name"]).starts_with("Optimizer.step")));
    let kinds: Vec<&str> = r["kernel_types"].as_array().unwrap().iter().map(|k| s(&k["kind"])).collect();
    assert_eq!(kinds, ["compute", "memcpy", "memset"]);
    let launch = &r["launch"];
    let per_step = launch["kernels_per_step"].as_f64().unwrap();
    assert!((per_step - 517.0).abs() < 1.0, "{launch}");
    assert_eq!(launch["launch_bound"], true, "{launch}");
    assert_eq!(r["findings"][0]["kind"], "launch_bound");
    assert!(s(&r["findings"][0]["summary"]).contains("CUDA graphs"));
    assert_eq!(r["overview"]["step_time_source"], "host step markers");
    assert_eq!(r["steps"]["steps"].as_array().unwrap().len(), 5);
    // The text report has the same sections.
    let text = String::from_utf8(falcon(dir.path(), &["profile", "analyze", trace.to_str().unwrap()]).stdout).unwrap();
    for want in ["Framework ops by device time", "GPU kernels by total time", "Launches", "launch-bound"] {
        assert!(text.contains(want), "{want}:\n{text}");
    }
}

#[test]
fn compare_shows_what_torch_compile_changed() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (fixture("pt_lite.pt.trace.json.gz"), fixture("pt_compiled.pt.trace.json.gz"));
    let out = falcon(dir.path(), &["profile", "compare", a.to_str().unwrap(), b.to_str().unwrap(), "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let c = json(&out);
    assert_eq!(c["op_source"], "kernels");
    assert_eq!(c["step_time"]["verdict"], "improved", "{}", c["step_time"]);
    let names =
        |list: &str| -> Vec<String> { c[list].as_array().unwrap().iter().map(|o| s(&o["name"]).to_string()).collect() };
    assert!(names("removed").iter().any(|n| n.contains("elementwise_kernel")), "{:?}", names("removed"));
    assert!(names("added").iter().any(|n| n.starts_with("triton_")), "{:?}", names("added"));
    let category = |name: &str| c["categories"].as_array().unwrap().iter().find(|k| k["category"] == name).cloned();
    assert!(category("triton fused").unwrap()["delta_us"].as_f64().unwrap() > 10_000.0);
    assert!(category("elementwise").unwrap()["delta_us"].as_f64().unwrap() < -10_000.0);
    let (la, lb) = (&c["a"]["launch"], &c["b"]["launch"]);
    assert!(lb["kernels_per_step"].as_f64().unwrap() < la["kernels_per_step"].as_f64().unwrap());
    assert!(lb["host_wait_fraction"].as_f64().unwrap() < la["host_wait_fraction"].as_f64().unwrap());
}

#[test]
fn an_experiment_reports_the_profilers_overhead() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(code(&falcon(dir.path(), &["init"])), 0);
    let spec = format!(
        "name: pt-fast\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'cp {trace} \
         $FALCON_ARTIFACT_DIR/pt_fast.pt.trace.json.gz && cp {metrics} $FALCON_ARTIFACT_DIR/metrics.jsonl']\nresources: {{accelerator: cpu}}\n",
        trace = fixture("pt_fast.pt.trace.json.gz").display(),
        metrics = fixture("pt_fast.metrics.jsonl").display()
    );
    std::fs::write(dir.path().join("pt.yaml"), spec).unwrap();
    let out = falcon(dir.path(), &["exp", "submit", "pt.yaml", "--wait", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let id = json(&out)["id"].as_str().unwrap().to_string();
    let trace = json(&falcon(dir.path(), &["profile", "trace", &id, "--json"]));
    let o = &trace["profiler_overhead"];
    let ratio = o["ratio"].as_f64().unwrap_or_else(|| panic!("{trace:#}"));
    assert!((1.9..2.2).contains(&ratio), "{o}");
    assert_eq!(o["unprofiled_steps"], serde_json::json!([0]), "step 1 is the profiler's warm-up");
    assert_eq!(o["inflated"], true);
    let shown = String::from_utf8(falcon(dir.path(), &["exp", "show", &id]).stdout).unwrap();
    assert!(shown.contains("profiler overhead 2."), "{shown}");
    let analyzed = json(&falcon(dir.path(), &["profile", "analyze", &id, "--json"]));
    let kinds: Vec<&str> = analyzed["findings"].as_array().unwrap().iter().map(|f| s(&f["kind"])).collect();
    assert!(kinds.contains(&"profiler_overhead") && kinds.contains(&"launch_bound"), "{kinds:?}");
}

#[test]
fn compare_reads_a_trace_against_an_xprof_capture_by_kernels() {
    // The JAX capture (XSpace, its kernel_stats) against the eager PyTorch trace of a similar model on one H200.
    let dir = tempfile::tempdir().unwrap();
    let xspace = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../falcon-analysis/tests/data/h200/jax_tfm8_b8_nocmdbuf/vm.xplane.pb");
    let trace = fixture("pt_lite.pt.trace.json.gz");
    let out = falcon(dir.path(), &["profile", "compare", xspace.to_str().unwrap(), trace.to_str().unwrap(), "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let c = json(&out);
    assert_eq!(c["op_source"], "kernels");
    let delta = |name: &str| {
        c["categories"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["category"] == name)
            .map(|k| k["delta_us"].as_f64().unwrap())
    };
    // XLA's fusion kernels are only on the JAX side, PyTorch's elementwise kernels only on the trace's.
    assert!(delta("xla fused").unwrap() < -10_000.0, "{}", c["categories"]);
    assert!(delta("elementwise").unwrap() > 10_000.0, "{}", c["categories"]);
    assert!(delta("gemm").is_some());
    assert!(c["b"]["launch"]["kernels_per_step"].as_f64().unwrap() > 400.0);
}
