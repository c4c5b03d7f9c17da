//! Every experiment has a memory curve and a leak call, without the workload's help, in process: a session on the
//! embedded defaults (SQLite, local artifacts, local jobs) runs a Python workload that keeps 8 MiB of host memory
//! per step for 40 steps of 0.25 s and says nothing about memory, beside the same workload freeing each buffer, and
//! each experiment's detail gives its `memory`.

use super::experiments::{initialised, json, show, submit, submit_session};
use falcon_app::App;
use serde_json::Value;

/// The workload: `config.mode` is `leak` (keeps each buffer), `free` (drops it) or `leak_silent` (keeps it and
/// writes no metrics at all). The first two write `step`, `time` and `step_time_s` a step.
const WORKLOAD: &str = r#"import json, os, time
mode = json.load(open(os.environ["FALCON_EXP_CONFIG"]))["mode"]
out = None if mode == "leak_silent" else open(os.path.join(os.environ["FALCON_ARTIFACT_DIR"], "metrics.jsonl"), "w")
held = []
for step in range(40):
    started = time.time()
    buf = b"x" * (8 << 20)
    if mode != "free":
        held.append(buf)
    del buf
    time.sleep(0.25)
    if out:
        out.write(json.dumps({"step": step, "time": time.time(), "step_time_s": time.time() - started}) + "\n")
        out.flush()
"#;

async fn memory_of(app: &App, id: &str) -> Value {
    let shown = json(&show(app, id, None).await.unwrap());
    assert_eq!(shown["status"], "COMPLETED", "{shown:#}");
    let memory = shown["memory"].clone();
    assert!(memory.is_object(), "{id} has no memory verdict: {shown:#}");
    memory
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_leak_is_called_and_a_clean_run_is_not() {
    let f = initialised().await;
    let (app, d) = (&f.app, f.path());
    std::fs::write(d.join("workload.py"), WORKLOAD).unwrap();
    // The CLI runs jobs in the folder it was started in and names the script relative to it; in process the
    // folder is not the process's, so the script is named by its path.
    std::fs::write(
        d.join("sweep.yaml"),
        format!(
            "base:\n  name: mem\n  scenario: benchmark\n  workload: {{framework: python, command: [python3, {}]}}\n  \
             config: {{mode: leak}}\n  resources: {{accelerator: cpu}}\nsweep:\n  config.mode: [leak, free, leak_silent]\n\
             name_template: \"mem-${{config.mode}}\"\n",
            d.join("workload.py").display()
        ),
    )
    .unwrap();
    let session = json(&submit_session(app, &d.join("sweep.yaml"), None, None).await.unwrap());
    let id_of = |name: &str| {
        let e = session["experiments"].as_array().unwrap().iter().find(|e| e["name"] == name);
        e.unwrap_or_else(|| panic!("no {name}: {session:#}"))["id"].as_str().unwrap().to_string()
    };

    // Kept: +8 MiB a step, by step (the metrics' time aligns the samples), a leak.
    let leak = memory_of(app, &id_of("mem-leak")).await;
    assert_eq!((leak["source"].as_str(), leak["per"].as_str()), (Some("sampled_rss"), Some("step")), "{leak:#}");
    assert_eq!(leak["leak_suspected"], true, "{leak:#}");
    let per_step = leak["growth_bytes_per_step"].as_f64().unwrap() / (1 << 20) as f64;
    assert!((per_step - 8.0).abs() < 0.5, "{per_step} MiB a step: {leak:#}");
    let ci: Vec<f64> = leak["ci"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert!(ci[0] > 0.0 && ci[0] <= ci[1], "{ci:?}");
    assert!(leak["peak_bytes"].as_u64().unwrap() > 300 << 20, "{leak:#}");
    assert_eq!(leak["series"][0]["curve"].as_array().unwrap().len(), 40, "one point a step: {leak:#}");

    // Freed each step: flat, no leak.
    let free = memory_of(app, &id_of("mem-free")).await;
    assert_eq!(free["leak_suspected"], false, "{free:#}");
    assert!(free["growth_bytes_per_step"].as_f64().unwrap().abs() < (1 << 20) as f64, "{free:#}");

    // No metrics at all: by second, and still a leak (+32 MiB a second).
    let silent = memory_of(app, &id_of("mem-leak_silent")).await;
    assert_eq!(
        (silent["per"].as_str(), silent["leak_suspected"].as_bool()),
        (Some("second"), Some(true)),
        "{silent:#}"
    );
    let per_s = silent["growth_bytes_per_s"].as_f64().unwrap() / (1 << 20) as f64;
    assert!((24.0..40.0).contains(&per_s), "{per_s} MiB/s");
    assert!(silent["series"][0]["notes"][0].as_str().unwrap().contains("no `time`"), "{silent:#}");

    // The terminal view says it in words, with the curve.
    let text = falcon_app::render::experiment::text(&show(app, &id_of("mem-leak"), None).await.unwrap());
    assert!(text.contains("memory (sampled RSS by step): LEAK SUSPECTED"), "{text}");
    assert!(text.contains("grows +8."), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn logged_device_memory_is_tested_too() {
    let f = initialised().await;
    let (app, d) = (&f.app, f.path());
    // 30 steps whose logged peak HBM grows by 100 MiB a step (104857600 bytes).
    std::fs::write(
        d.join("hbm.yaml"),
        "name: hbm\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'for i in $(seq 0 29); do \
         echo \"{\\\"step\\\": $i, \\\"peak_hbm_bytes\\\": $((1073741824 + i * 104857600))}\" >> \
         $FALCON_ARTIFACT_DIR/metrics.jsonl; done']\nresources: {accelerator: cpu}\n",
    )
    .unwrap();
    let shown = json(&submit(app, &d.join("hbm.yaml"), true).await.unwrap());
    assert_eq!(shown["status"], "COMPLETED", "{shown:#}");
    let memory = &shown["memory"];
    assert_eq!(memory["source"], "metrics:peak_hbm_bytes", "{memory:#}");
    assert_eq!(memory["leak_suspected"], true, "{memory:#}");
    assert_eq!(memory["growth_bytes_per_step"], 104857600.0, "{memory:#}");
    assert_eq!(memory["peak_bytes"], 1073741824u64 + 29 * 104857600, "{memory:#}");
    // The analysis rows keep the others; the memory row moved to `memory`.
    let tools: Vec<&str> = shown["analysis"].as_array().unwrap().iter().filter_map(|a| a["tool"].as_str()).collect();
    assert!(!tools.contains(&"memory"), "{tools:?}");
}
