//! Trace analysis as a user asks for it (`falcon profile trace`), in process: XSpace and Chrome-trace inputs of the
//! same capture agree, a PyTorch CPU trace is broken down, bad traces fail clearly, and an experiment gets its
//! `trace` row.

use super::harness::as_printed;
use super::profile::{err, gunzip, input, ok, run_experiment, show_experiment};
use falcon_app::reports::Report;
use falcon_app::requests::ProfileTraceRequest;
use falcon_app::{App, AppError};
use falcon_core::ErrorKind;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn data(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let xplane = root.join("falcon-xplane/tests/data").join(name);
    if xplane.exists() {
        xplane
    } else {
        root.join("falcon-analysis/tests/data").join(name)
    }
}

/// `profile trace INPUT`'s request (every analysis, the first host).
pub(super) fn trace_request(input: &str) -> ProfileTraceRequest {
    ProfileTraceRequest { input: input.to_string(), analysis: vec!["all".into()], host: None }
}

/// What `profile trace --json` answers for the request: an experiment's kept report (computed and kept on the
/// first request), else the trace analysis of the input, as JSON.
pub(super) async fn trace_json(app: &App, request: &ProfileTraceRequest) -> Result<Value, AppError> {
    let options = request.options()?;
    let host = request.host.as_deref();
    if let Some((id, report)) = Report::answering_trace(&request.input, host, &options) {
        return Ok(serde_json::from_slice(&app.report(id, &report).await?).expect("a kept report is JSON"));
    }
    Ok(as_printed(&app.analyze_trace(&request.input, host, &options).await?))
}

/// What `profile trace` prints as text (`--markdown`: `markdown`), 15 step rows.
pub(super) async fn trace_text(app: &App, request: &ProfileTraceRequest, markdown: bool) -> Result<String, AppError> {
    let run = app.analyze_trace(&request.input, request.host.as_deref(), &request.options()?).await?;
    Ok(falcon_app::render::profile::trace(&run, 15, markdown))
}

async fn trace(app: &App, target: &Path) -> Value {
    ok(trace_json(app, &trace_request(input(target))).await)
}

/// The guaranteed fields, and the partition: the five categories (plus `other`) sum to the duration.
fn check_shape(r: &Value) {
    for key in ["steps", "overlap", "gaps", "host_bound"] {
        assert!(r.get(key).is_some(), "{key} missing");
    }
    assert!(r["host_bound"]["fraction"].is_number() && r["host_bound"]["verdict"].is_string());
    for s in r["steps"].as_array().unwrap() {
        let f = |k: &str| s[k].as_f64().unwrap_or_else(|| panic!("steps[].{k} missing: {s}"));
        let parts = f("compute_us")
            + f("collective_us")
            + f("memcpy_us")
            + f("host_wait_us")
            + f("idle_us")
            + s["other_us"].as_f64().unwrap_or(0.0);
        assert!((parts - f("duration_us")).abs() <= f("duration_us") * 0.001 + 1e-6, "partition: {s}");
        f("hidden_collective_us");
        s["step"].as_i64().unwrap();
    }
    for o in r["overlap"].as_array().unwrap() {
        for k in ["kind", "total_us", "exposed_us", "hidden_fraction"] {
            assert!(o.get(k).is_some(), "overlap[].{k} missing");
        }
    }
    for g in r["gaps"].as_array().unwrap() {
        for k in ["device", "start_us", "duration_us", "host_activity"] {
            assert!(g.get(k).is_some(), "gaps[].{k} missing");
        }
    }
}

pub(super) fn within(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()) + 1e-6
}

#[tokio::test]
async fn xspace_and_chrome_inputs_of_the_same_capture_agree() {
    let h = super::harness::app().await;
    for (xplane, chrome) in [
        ("jax_cpu_mlp_vm.xplane.pb", "jax_cpu_mlp_vm.trace.json.gz"),
        ("tpu_v6e_inference.xplane.pb", "tpu_v6e_inference_xprof_trace_viewer.json.gz"),
    ] {
        let a = trace(&h.app, &data(xplane)).await;
        let b = trace(&h.app, &data(chrome)).await;
        check_shape(&a);
        check_shape(&b);
        let (sa, sb) = (a["steps"].as_array().unwrap(), b["steps"].as_array().unwrap());
        assert!(!sa.is_empty(), "{xplane}: steps found");
        assert_eq!(sa.len(), sb.len(), "{xplane} vs {chrome}: step count");
        for k in ["duration_us", "compute_us", "collective_us", "memcpy_us", "host_wait_us", "idle_us"] {
            let total = |v: &Value| v["total"][k].as_f64().unwrap();
            assert!(
                within(total(&a), total(&b), 0.01),
                "{xplane} vs {chrome}: total.{k} {} vs {}",
                total(&a),
                total(&b)
            );
        }
    }
    // TPU: steps from the most executed module, 100 executions of jit_f on each of 4 cores.
    let tpu = trace(&h.app, &data("tpu_v6e_inference.xplane.pb")).await;
    assert_eq!(tpu["step_detection"]["rule"], "module_executions");
    assert_eq!(tpu["steps"].as_array().unwrap().len(), 100);
    assert!(tpu["step_detection"]["module"].as_str().unwrap().starts_with("jit_f"));
    assert_eq!(tpu["devices"].as_array().unwrap().len(), 4);
    assert!(tpu["overlap"].as_array().unwrap().iter().any(|o| o["kind"] == "all-reduce"));
}

#[tokio::test]
async fn a_pytorch_cpu_trace_is_broken_down() {
    let h = super::harness::app().await;
    let file = data("pytorch_cpu_tfm2.pt.trace.json.gz");
    let r = trace(&h.app, &file).await;
    check_shape(&r);
    let steps: Vec<i64> = r["steps"].as_array().unwrap().iter().map(|s| s["step"].as_i64().unwrap()).collect();
    assert_eq!(steps, vec![2, 3, 4], "ProfilerStep#2..4");
    assert!(r["steps"][0]["compute_us"].as_f64().unwrap() > 0.0);
    let text = trace_text(&h.app, &trace_request(input(&file)), true).await.unwrap();
    assert!(text.contains("## Where the step time goes"), "{text}");
}

#[tokio::test]
async fn bad_traces_fail_clearly() {
    let h = super::harness::app().await;
    let dir = &h.dir;
    let gz = std::fs::read(data("pytorch_cpu_tfm2.pt.trace.json.gz")).unwrap();
    let plain = gunzip(&gz);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated.trace.json", plain.as_bytes()[..plain.len() / 2].to_vec()),
        ("truncated.trace.json.gz", gz[..gz.len() / 2].to_vec()),
        ("not_a_trace.json", br#"{"a": 1, "b": [1, 2, 3]}"#.to_vec()),
        ("empty.json", Vec::new()),
    ];
    for (name, bytes) in &cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let e = err(trace_json(&h.app, &trace_request(input(&path))).await);
        assert_eq!(e.kind().exit_code(), 1, "{name}: {:?}: {e}", e.kind());
        let message = e.to_string();
        assert!(message.contains(name), "{name}: the message names the file: {message}");
    }
    std::fs::create_dir(dir.path().join("empty-dir")).unwrap();
    let e = err(trace_json(&h.app, &trace_request(input(&dir.path().join("empty-dir")))).await);
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
}

#[tokio::test]
async fn an_experiment_gets_its_trace_summary_row() {
    let h = super::harness::app().await;
    let src = data("jax_cpu_mlp_vm.xplane.pb");
    let spec = format!(
        "name: profiled\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'mkdir -p $FALCON_ARTIFACT_DIR/plugins/profile/r \
         && cp {} $FALCON_ARTIFACT_DIR/plugins/profile/r/vm.xplane.pb']\nresources: {{accelerator: cpu}}\n",
        src.display()
    );
    let shown = run_experiment(&h.app, &spec).await;
    let id = shown["id"].as_str().unwrap().to_string();
    let tools: Vec<&str> = shown["analysis"].as_array().unwrap().iter().map(|r| r["tool"].as_str().unwrap()).collect();
    assert_eq!(tools, ["profile", "trace"], "submitting with wait ran both analyses");
    let r = ok(trace_json(&h.app, &trace_request(&id)).await);
    assert_eq!(r["experiment"], id.as_str());
    let (shown, _) = show_experiment(&h.app, &id).await;
    let rows = shown["analysis"].clone();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tool"] == "trace")
        .unwrap_or_else(|| panic!("no trace row: {rows}"));
    let idle = row["details"]["idle_percent"].as_f64().unwrap();
    let total = &r["total"];
    assert!(
        within(idle, 100.0 * total["idle_us"].as_f64().unwrap() / total["duration_us"].as_f64().unwrap(), 0.001),
        "{row}"
    );
}

#[tokio::test]
async fn an_experiment_with_only_a_pytorch_trace_gets_a_trace_row() {
    let h = super::harness::app().await;
    let src = data("pytorch_cpu_tfm2.pt.trace.json.gz");
    let spec = format!(
        "name: torch\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'cp {} $FALCON_ARTIFACT_DIR/rank0.pt.trace.json.gz']\nresources: {{accelerator: cpu}}\n",
        src.display()
    );
    let shown = run_experiment(&h.app, &spec).await;
    let rows = shown["analysis"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{shown}");
    assert_eq!(rows[0]["tool"], "trace");
    assert_eq!(rows[0]["details"]["steps"], 3, "ProfilerStep#2..4: {}", rows[0]);
}
