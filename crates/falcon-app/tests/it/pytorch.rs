//! PyTorch GPU traces as a user reads them (issue 34), in process, on the real H200 traces of the project's test
//! data (`falcon-analysis/tests/data/h200/pytorch/`): `profile analyze` gives kernels with tensor cores, framework
//! ops, launch statistics and the launch-bound call; `profile compare` of the eager and the `torch.compile`d step
//! shows the step time improved, the eager elementwise kernels removed and Triton's fused kernels added; an
//! experiment whose workload writes `pt_fast`'s trace and metrics reports the profiler's overhead (~2×).

use super::profile::{analyze_json, analyze_request, analyze_text, input, ok, run_experiment, show_experiment};
use super::trace::{trace_json, trace_request};
use falcon_app::render::{profile_compare, Format};
use falcon_app::requests::{ProfileCompareRequest, DEFAULT_TOP};
use falcon_app::App;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-analysis/tests/data/h200/pytorch").join(name)
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// What `profile compare A B --json` prints: the comparison's JSON document.
async fn compare_json(app: &App, a: &Path, b: &Path) -> Value {
    let request = ProfileCompareRequest { a: input(a).into(), b: input(b).into(), host: None, top: DEFAULT_TOP };
    let options = request.options().unwrap();
    let result = app.compare_profiles(&request.a, &request.b, None, &options).await.unwrap();
    serde_json::from_str(&profile_compare::render(&result, Format::Json, options.top).unwrap()).unwrap()
}

#[tokio::test]
async fn analyze_reads_a_pytorch_trace() {
    let h = super::harness::app().await;
    let trace = fixture("pt_lite.pt.trace.json.gz");
    let r = ok(analyze_json(&h.app, &analyze_request(input(&trace), &["all"])).await);
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
    let text = analyze_text(&h.app, &analyze_request(input(&trace), &["all"]), 15, false).await.unwrap();
    for want in ["Framework ops by device time", "GPU kernels by total time", "Launches", "launch-bound"] {
        assert!(text.contains(want), "{want}:\n{text}");
    }
}

#[tokio::test]
async fn compare_shows_what_torch_compile_changed() {
    let h = super::harness::app().await;
    let (a, b) = (fixture("pt_lite.pt.trace.json.gz"), fixture("pt_compiled.pt.trace.json.gz"));
    let c = compare_json(&h.app, &a, &b).await;
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

#[tokio::test]
async fn an_experiment_reports_the_profilers_overhead() {
    let h = super::harness::app().await;
    let spec = format!(
        "name: pt-fast\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'cp {trace} \
         $FALCON_ARTIFACT_DIR/pt_fast.pt.trace.json.gz && cp {metrics} $FALCON_ARTIFACT_DIR/metrics.jsonl']\nresources: {{accelerator: cpu}}\n",
        trace = fixture("pt_fast.pt.trace.json.gz").display(),
        metrics = fixture("pt_fast.metrics.jsonl").display()
    );
    let id = run_experiment(&h.app, &spec).await["id"].as_str().unwrap().to_string();
    let trace = ok(trace_json(&h.app, &trace_request(&id)).await);
    let o = &trace["profiler_overhead"];
    let ratio = o["ratio"].as_f64().unwrap_or_else(|| panic!("{trace:#}"));
    assert!((1.9..2.2).contains(&ratio), "{o}");
    assert_eq!(o["unprofiled_steps"], serde_json::json!([0]), "step 1 is the profiler's warm-up");
    assert_eq!(o["inflated"], true);
    let (_, shown) = show_experiment(&h.app, &id).await;
    assert!(shown.contains("profiler overhead 2."), "{shown}");
    let analyzed = ok(analyze_json(&h.app, &analyze_request(&id, &["all"])).await);
    let kinds: Vec<&str> = analyzed["findings"].as_array().unwrap().iter().map(|f| s(&f["kind"])).collect();
    assert!(kinds.contains(&"profiler_overhead") && kinds.contains(&"launch_bound"), "{kinds:?}");
}

#[tokio::test]
async fn compare_reads_a_trace_against_an_xprof_capture_by_kernels() {
    // The JAX capture (XSpace, its kernel_stats) against the eager PyTorch trace of a similar model on one H200.
    let h = super::harness::app().await;
    let xspace = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../falcon-analysis/tests/data/h200/jax_tfm8_b8_nocmdbuf/vm.xplane.pb");
    let trace = fixture("pt_lite.pt.trace.json.gz");
    let c = compare_json(&h.app, &xspace, &trace).await;
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
