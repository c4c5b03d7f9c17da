//! A GPU experiment as a user on a one-GPU machine runs it (issue 33): a pool offering `h200-141gb-1`, a spec
//! asking for `h200-141gb` with `devices: 1`, a workload that writes the real H200 capture and metrics of the
//! project's test data (`falcon-analysis/tests/data/h200/jax_tfm8_b8`, command buffers on). `context` shows one
//! chip's peaks; the worker's stored profile row and `profile analyze e-N` give one MFU, from the capture's own
//! FLOPs; the logged `model_flops` (XLA's `cost_analysis()`, 1.65e12, which leaves the cuBLAS calls out) is shown
//! beside the capture's 5.85e12 with a note saying which MFU uses; the step time says how it was measured; the API
//! and MCP give the same row, MFU and findings.

use crate::common;

use crate::common::serve::{client, get_json, Server};
use crate::common::{code, falcon, json};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-analysis/tests/data/h200/jax_tfm8_b8").join(name)
}

/// `profile_analyze` over `falcon mcp` (JSON-RPC over pipes): the tool's structured result.
fn mcp_profile_analyze(dir: &Path, id: &str) -> Value {
    let mut child = common::mcp_child(dir);
    let mut stdin = child.stdin.take().unwrap();
    let lines = [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
            "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "profile_analyze",
            "arguments": {"input": id, "tool": ["overview"]}}}),
    ];
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let result = loop {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "falcon mcp ended without answering");
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == 2 {
            break v["result"]["structuredContent"].clone();
        }
    };
    drop(stdin);
    let _ = child.wait();
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_gpu_pool_one_mfu_from_the_capture_and_the_logged_flops_flagged() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(code(&falcon(dir.path(), &["init"])), 0);
    let toml = dir.path().join("falcon.toml");
    let mut text = std::fs::read_to_string(&toml).unwrap();
    text.push_str(
        "\n[[pools]]\nname = \"workstation\"\nbackend = \"local\"\nzone = \"desk\"\nplatform = \"gpu\"\n\
         accelerators = [\"h200-141gb-1\"]\ncapacity = 1\n",
    );
    std::fs::write(&toml, text).unwrap();
    let spec = format!(
        "name: h200-tfm8\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'mkdir -p \
         $FALCON_ARTIFACT_DIR/plugins/profile/run1 && cp {xplane} $FALCON_ARTIFACT_DIR/plugins/profile/run1/vm.xplane.pb \
         && cp {metrics} $FALCON_ARTIFACT_DIR/metrics.jsonl']\nresources: {{accelerator: h200-141gb, devices: 1}}\n",
        xplane = fixture("vm.xplane.pb").display(),
        metrics = fixture("metrics.jsonl").display()
    );
    std::fs::write(dir.path().join("h200.yaml"), spec).unwrap();

    // One chip's peaks for the one-GPU pool.
    let context = json(&falcon(dir.path(), &["context", "--json"]));
    let pool = context["pools"].as_array().unwrap().iter().find(|p| p["name"] == "workstation").unwrap().clone();
    let peak = &pool["peaks"][0];
    assert_eq!(peak["accelerator"], "h200-141gb-1", "{pool:#}");
    assert_eq!(peak["peak_bf16_tflops"], 989.0, "{pool:#}");

    let out = falcon(dir.path(), &["exp", "submit", "h200.yaml", "--wait", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let id = json(&out)["id"].as_str().unwrap().to_string();
    let shown = json(&falcon(dir.path(), &["exp", "show", &id, "--json"]));
    assert_eq!(shown["spec"]["resources"]["accelerator"], "h200-141gb-1", "the model and devices resolve to the shape");
    let rows = shown["analysis"].as_array().unwrap_or_else(|| panic!("{shown:#}"));
    let profile_row = rows.iter().find(|r| r["tool"] == "profile").unwrap_or_else(|| panic!("{rows:#?}"));
    let stored = profile_row["mfu"].as_f64().expect("the worker's stored MFU");

    let analyzed = json(&falcon(dir.path(), &["profile", "analyze", &id, "--tool", "overview", "--json"]));
    let o = &analyzed["overview"];
    let mfu = o["mfu"].as_f64().unwrap();
    assert!((mfu - stored).abs() < 1e-9, "exp show {stored} vs profile analyze {mfu}: one answer");
    assert_eq!(o["mfu_flops_source"], "profile cost stats");
    assert_eq!(o["mfu_peak_teraflops_per_second"], 989.0);
    let capture = o["capture_model_flops"].as_f64().unwrap();
    assert!((capture / 5.85e12 - 1.0).abs() < 0.01, "{capture:e}");
    assert!((o["logged_model_flops"].as_f64().unwrap() / 1.653e12 - 1.0).abs() < 0.01, "{o:#}");
    // MFU per device: the capture's FLOPs over the host step time and one H200's dense peak.
    let step_s = o["step_time_ms"]["mean"].as_f64().unwrap() / 1e3;
    assert!((mfu - capture / (step_s * 989e12)).abs() < 1e-9, "{mfu}");
    assert!((0.2..0.35).contains(&mfu), "{mfu}");
    let notes: Vec<&str> = o["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    let flagged = notes.iter().find(|n| n.contains("logs model_flops")).unwrap_or_else(|| panic!("{notes:#?}"));
    assert!(
        flagged.contains("1.653e12") && flagged.contains("5.851e12") && flagged.contains("MFU uses the capture"),
        "{flagged}"
    );
    // Two step times, named.
    assert_eq!(o["step_time_source"], "host step markers");
    let device = o["device_step_time_ms"]["mean"].as_f64().unwrap();
    assert!((device - 15.9).abs() < 0.2 && o["step_time_ms"]["mean"].as_f64().unwrap() > device, "{o:#}");
    let text =
        String::from_utf8(falcon(dir.path(), &["profile", "analyze", &id, "--tool", "overview"]).stdout).unwrap();
    assert!(text.contains("host step markers") && text.contains("device"), "{text}");
    // The stored row names its step time and carries the findings; `exp show` prints which step time it is.
    let details = &profile_row["details"];
    assert_eq!(details["step_time_source"], "host step markers", "{details:#}");
    assert!((details["device_step_time_ms"].as_f64().unwrap() - device).abs() < 1e-9);
    assert_eq!(details["findings"][0]["kind"], "hbm_bound_attention", "{details:#}");
    assert_eq!(details["findings"][0]["summary"], analyzed["findings"][0]["summary"], "one answer");
    let show = String::from_utf8(falcon(dir.path(), &["exp", "show", &id]).stdout).unwrap();
    let line = show.lines().find(|l| l.starts_with("profile analysis:")).unwrap_or_else(|| panic!("{show}"));
    assert!(line.contains("(host step markers; device 15."), "{line}");
    assert!(text.contains("Findings") && text.contains("HBM-bound attention"), "{text}");

    // The API and MCP: the same stored row and the same analysis.
    let server = Server::start(dir.path(), &["--no-worker"], &[]);
    let c = client();
    let (status, exp) = get_json(&c, &server.url(&format!("/api/v1/experiments/{id}"))).await;
    assert_eq!(status, 200, "{exp}");
    let api_row = exp["analysis"].as_array().unwrap().iter().find(|r| r["tool"] == "profile").unwrap().clone();
    assert_eq!(api_row["mfu"].as_f64(), Some(stored), "{api_row:#}");
    let (status, api) = get_json(&c, &server.url(&format!("/api/v1/profiles/{id}?tool=overview"))).await;
    assert_eq!(status, 200, "{api}");
    assert_eq!(api["overview"]["mfu"].as_f64(), Some(mfu), "API vs profile analyze");
    assert_eq!(api["findings"], analyzed["findings"]);
    drop(server);
    let mcp = mcp_profile_analyze(dir.path(), &id);
    assert_eq!(mcp["overview"]["mfu"].as_f64(), Some(mfu), "MCP vs profile analyze: {mcp:#}");
    assert_eq!(mcp["findings"], analyzed["findings"]);
    // One kept report answers all three (falcon_app::reports): computed once, by the CLI's `--json` above, kept
    // among the experiment's artifacts, then read from the store by the API and MCP.
    assert_eq!(api, analyzed, "the API serves the kept report");
    assert_eq!(mcp, analyzed, "MCP serves the kept report");
    let artifacts = json(&falcon(dir.path(), &["exp", "artifacts", &id, "--json"]));
    let kept: Vec<&str> = artifacts["items"].as_array().unwrap().iter().filter_map(|a| a["key"].as_str()).collect();
    assert!(kept.iter().any(|p| p.ends_with("reports/profile-overview.json")), "{artifacts:#}");
}
