//! `falcon mcp` as an agent harness drives it: the real binary over pipes, JSON-RPC a line at a time. stdout
//! carries JSON-RPC only (even while a job that prints runs under the embedded worker), a waited submit
//! reports progress and completes, failures are tool errors carrying the CLI's error body, `--read-only` lists
//! and accepts no tool that writes, hostile lines do not stop the server, and it ends cleanly when stdin closes
//! or on SIGTERM. (`tests/mcp/check_mcp.py` drives it with the official Python client in `.ci/run`.)

use crate::common;

use crate::common::serve::project;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// A running `falcon mcp` and every stdout line it wrote, in order.
struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    seen: Vec<Value>,
    next_id: u64,
}

impl Mcp {
    fn start(dir: &std::path::Path, extra: &[&str]) -> Mcp {
        let mut child = Command::new(env!("CARGO_BIN_EXE_falcon"))
            .current_dir(dir)
            .env("HOME", dir)
            .args(["mcp"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut mcp = Mcp { child, stdin, lines, seen: Vec::new(), next_id: 0 };
        let init = mcp.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "falcon", "{init}");
        mcp.send_line(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
        mcp
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and reads lines until its response (60 s at most); every line must be JSON-RPC 2.0.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send_line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string());
        self.response(id)
    }

    fn response(&mut self, id: u64) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|e| panic!("no response {id} ({e})"));
            let value: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carried a line that is not JSON ({e}): {line}"));
            assert_eq!(value["jsonrpc"], "2.0", "not JSON-RPC: {line}");
            self.seen.push(value.clone());
            if value["id"] == json!(id) {
                return value;
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// Closes stdin and waits for the exit status (10 s at most).
    fn close(mut self) -> i32 {
        drop(self.stdin.take());
        wait_exit(&mut self.child)
    }
}

fn wait_exit(child: &mut Child) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("falcon mcp did not exit within 10 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A shell job that writes to its stdout and stderr and logs three steps.
const NOISY: &str = "name: noisy\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'echo to-stdout; \
echo to-stderr >&2; printf \"%s\\n\" \"{\\\"jsonrpc\\\": 1}\"; for i in 0 1 2; do echo \"{\\\"step\\\": $i, \\\"step_time_s\\\": 0.1}\" >> \
$FALCON_ARTIFACT_DIR/metrics.jsonl; done']\nresources: {accelerator: cpu}\n";

#[test]
fn a_waited_submit_reports_progress_completes_and_stdout_stays_json_rpc() {
    let dir = project(None);
    let mut mcp = Mcp::start(dir.path(), &[]);
    let tools = mcp.request("tools/list", json!({}));
    let names: Vec<&str> =
        tools["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    for required in [
        "context",
        "exp_list",
        "exp_submit",
        "exp_show",
        "exp_compare",
        "exp_diff",
        "goal_claim",
        "goal_report",
        "profile_analyze",
        "profile_trace",
        "profile_compare",
        "accuracy_compare",
        "kernel_analyze",
    ] {
        assert!(names.contains(&required), "{required} missing from {names:?}");
    }
    for t in tools["result"]["tools"].as_array().unwrap() {
        assert_eq!(t["inputSchema"]["type"], "object", "{}", t["name"]);
        if let Some(out) = t.get("outputSchema") {
            assert_eq!(out["type"], "object", "{}", t["name"]);
        }
    }

    let params = json!({"name": "exp_submit", "arguments": {"spec_yaml": NOISY, "wait": true, "timeout_s": 60},
                        "_meta": {"progressToken": "submit-1"}});
    let r = mcp.request("tools/call", params);
    let result = &r["result"];
    assert!(result["isError"].is_null() || result["isError"] == false, "{r}");
    assert_eq!(result["structuredContent"]["status"], "COMPLETED", "{r}");
    let id = result["structuredContent"]["id"].as_str().unwrap().to_string();
    // The text content is the same object, for clients that read text only.
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, result["structuredContent"]);
    let progress: Vec<&Value> = mcp
        .seen
        .iter()
        .filter(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == "submit-1")
        .collect();
    assert!(progress.len() >= 2, "progress notifications: {progress:?}");
    assert!(progress.last().unwrap()["params"]["message"].as_str().unwrap().ends_with("COMPLETED"), "{progress:?}");
    let values: Vec<f64> = progress.iter().map(|p| p["params"]["progress"].as_f64().unwrap()).collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "progress increases: {values:?}");

    // The job's own stdout went to its log, not into the protocol.
    let logs = mcp.call("exp_logs", json!({"id": id}));
    let logs = logs["result"]["structuredContent"]["logs"].as_array().unwrap().clone();
    assert!(logs.iter().any(|l| l["text"].as_str().unwrap().contains("to-stdout")), "{logs:?}");

    // The same object as `falcon exp show --json`.
    let shown = mcp.call("exp_show", json!({"id": id}));
    let cli = common::json(&common::falcon(dir.path(), &["exp", "show", &id, "--json"]));
    assert_eq!(shown["result"]["structuredContent"], cli);
    assert_eq!(mcp.close(), 0);
}

#[test]
fn failures_are_tool_errors_with_the_cli_error_body() {
    let dir = project(None);
    let mut mcp = Mcp::start(dir.path(), &[]);
    let cases = [
        ("exp_show", json!({"id": "e-424242"}), "not_found"),
        ("exp_show", json!({"id": "not-an-id"}), "usage"),
        ("exp_show", json!({"id": "e-1", "colour": "red"}), "usage"),
        ("exp_show", json!({}), "usage"),
        ("exp_submit", json!({"spec_yaml": "name: [unclosed"}), "invalid"),
        ("exp_submit", json!({}), "usage"),
        ("exp_submit", json!({"spec_path": "/dev/zero"}), "failure"),
        ("exp_submit", json!({"spec_path": dir.path().join("absent.yaml")}), "not_found"),
        ("profile_analyze", json!({"input": dir.path().join("nothing.xplane.pb")}), "not_found"),
        ("profile_analyze", json!({"input": "e-1", "tool": ["flamegraph"]}), "usage"),
        ("goal_claim", json!({"owner": " "}), "usage"),
        ("exp_list", json!({"label": ["no-equals-sign"]}), "usage"),
    ];
    for (tool, args, code) in cases {
        let r = mcp.call(tool, args.clone());
        let result = &r["result"];
        assert_eq!(result["isError"], true, "{tool} {args}: {r}");
        let error = &result["structuredContent"]["error"];
        assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()), "{tool} {args}: {r}");
        let got = error["code"].as_str().unwrap();
        // /dev/zero as a spec is refused before it is read, as `falcon exp submit /dev/zero` refuses it.
        if args.get("spec_path").is_some_and(|p| p == "/dev/zero") {
            assert!(error["message"].as_str().unwrap().contains("/dev/zero: it is not a regular file"), "{r}");
        } else {
            assert_eq!(got, code, "{tool} {args}: {r}");
        }
    }
    // Hostile arguments: each refused with a message naming what, quickly, never a hang.
    let fifo = dir.path().join("fifo.xplane.pb");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let long_name = "n".repeat(255);
    let hostile = [
        ("exp_show", json!({"id": "e-1\u{0}"})),
        ("exp_show", json!({"id": "e-99999999999999999999999"})),
        ("profile_analyze", json!({"input": "/dev/zero"})),
        ("profile_analyze", json!({"input": fifo})),
        ("profile_trace", json!({"input": "/dev/urandom"})),
        ("accuracy_compare", json!({"a": "/dev/zero", "b": fifo})),
        ("kernel_analyze", json!({"input": dir.path().join(&long_name)})),
        ("exp_submit", json!({"spec_yaml": "a: &a [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nb: *a\n"})),
        ("exp_list", json!({"limit": -1})),
        ("exp_logs", json!({"id": "e-1", "tail_bytes": 0})),
    ];
    for (tool, args) in hostile {
        let started = Instant::now();
        let r = mcp.call(tool, args.clone());
        assert!(started.elapsed() < Duration::from_secs(10), "{tool} {args}: {:?}", started.elapsed());
        let result = &r["result"];
        assert_eq!(result["isError"], true, "{tool} {args}: {r}");
        assert!(result["structuredContent"]["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{r}");
    }
    // A tool that does not exist is a protocol error, and the server goes on.
    let r = mcp.call("rm_rf", json!({}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    // Hostile lines: not JSON, a JSON array of junk, 2 MB of one string, 20 MB without a newline (past rmcp's 16 MiB
    // line cap: discarded, not buffered). The server keeps answering.
    mcp.send_line("this is not JSON");
    mcp.send_line("[1, 2, {\"jsonrpc\": 7}]");
    mcp.send_line(&format!("{{\"jsonrpc\": \"2.0\", \"method\": \"x\", \"params\": \"{}\"}}", "a".repeat(2 << 20)));
    mcp.send_line(&"[".repeat(20 << 20));
    let r = mcp.request("ping", json!({}));
    assert!(r.get("result").is_some(), "{r}");
    assert_eq!(mcp.close(), 0);
}

#[test]
fn read_only_offers_and_accepts_no_tool_that_writes() {
    let dir = project(None);
    let mut mcp = Mcp::start(dir.path(), &["--read-only"]);
    let tools = mcp.request("tools/list", json!({}));
    let names: Vec<String> =
        tools["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect();
    for write in
        ["exp_submit", "exp_cancel", "goal_create", "goal_claim", "goal_release", "goal_achieve", "goal_abandon"]
    {
        assert!(!names.iter().any(|n| n == write), "{write} offered under --read-only: {names:?}");
        let r = mcp.call(write, json!({"id": "g-1", "owner": "x", "spec_yaml": NOISY}));
        assert_eq!(r["error"]["code"], -32602, "{write}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("--read-only"), "{r}");
    }
    for t in tools["result"]["tools"].as_array().unwrap() {
        assert_eq!(t["annotations"]["readOnlyHint"], true, "{}", t["name"]);
    }
    assert!(names.iter().any(|n| n == "exp_show") && names.iter().any(|n| n == "profile_analyze"));
    // Nothing was recorded.
    let listed = common::json(&common::falcon(dir.path(), &["exp", "list", "--json"]));
    assert_eq!(listed["items"], json!([]));
    assert_eq!(mcp.close(), 0);
}

#[test]
fn the_skills_are_prompts_and_sigterm_ends_the_server() {
    let dir = project(None);
    let mut mcp = Mcp::start(dir.path(), &[]);
    let listed = mcp.request("prompts/list", json!({}));
    let prompts = listed["result"]["prompts"].as_array().unwrap().clone();
    let skills = common::json(&common::falcon(dir.path(), &["skills", "list", "--json"]));
    assert_eq!(prompts.len(), skills["items"].as_array().unwrap().len());
    for p in &prompts {
        let name = p["name"].as_str().unwrap();
        let got = mcp.request("prompts/get", json!({"name": name}));
        let text = got["result"]["messages"][0]["content"]["text"].as_str().unwrap_or_else(|| panic!("{got}"));
        let skill = common::json(&common::falcon(dir.path(), &["skills", "show", name, "--json"]));
        assert!(skill["text"].as_str().unwrap().contains(text), "{name}: the prompt is the skill's procedure");
        assert!(!text.starts_with("---"), "{name}: without its frontmatter");
    }
    let missing = mcp.request("prompts/get", json!({"name": "no-such-skill"}));
    assert_eq!(missing["error"]["data"]["error"]["code"], "not_found", "{missing}");

    let pid = mcp.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    assert_eq!(wait_exit(&mut mcp.child), 0);
}

#[test]
fn a_wait_past_its_timeout_is_a_tool_error_and_the_experiment_goes_on() {
    let dir = project(None);
    let mut mcp = Mcp::start(dir.path(), &[]);
    let slow = "name: slow\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sleep, '30']\nresources: {accelerator: cpu}\n";
    let started = Instant::now();
    let r = mcp.call("exp_submit", json!({"spec_yaml": slow, "wait": true, "timeout_s": 2}));
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(2) && waited < Duration::from_secs(15), "{waited:?}");
    assert_eq!(r["result"]["isError"], true, "{r}");
    let message = r["result"]["structuredContent"]["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("e-1"), "the error names the experiment: {message}");
    // The experiment was recorded and is not failed by the caller giving up; it can be cancelled.
    let shown = mcp.call("exp_show", json!({"id": "e-1"}));
    let status = shown["result"]["structuredContent"]["status"].as_str().unwrap().to_string();
    assert!(["PENDING", "PROVISIONING", "RUNNING"].contains(&status.as_str()), "{status}");
    let cancelled = mcp.call("exp_cancel", json!({"id": "e-1"}));
    assert!(cancelled["result"]["isError"].is_null() || cancelled["result"]["isError"] == false, "{cancelled}");
    assert_eq!(mcp.close(), 0);
    // A worker carries the cancel out (and stops the job).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        common::falcon(dir.path(), &["worker", "--passes", "3"]);
        let shown = common::json(&common::falcon(dir.path(), &["exp", "show", "e-1", "--json"]));
        if shown["status"] == "CANCELLED" {
            break;
        }
        assert!(Instant::now() < deadline, "not cancelled: {}", shown["status"]);
    }
}

/// The sweep grid is a use case of falcon-app, not of the dashboard: `session show --json`, `GET
/// /api/v1/sessions/{id}` and the MCP tool `session_show` give the same grid (and the same one with another metric),
/// and `session show` prints it.
#[test]
fn the_session_grid_is_one_answer_from_the_cli_the_api_and_mcp() {
    let dir = project(None);
    let base: String = common::serve::spec("grid", 100).lines().map(|l| format!("  {l}\n")).collect();
    let sweep = format!("base:\n{base}sweep:\n  config.base_ms: [100, 120]\n  labels.k: [x, y]\n");
    std::fs::write(dir.path().join("grid.yaml"), sweep).unwrap();
    let out = common::falcon(dir.path(), &["session", "submit", "grid.yaml", "--wait", "--json"]);
    assert_eq!(common::code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let sid = common::json(&out)["id"].as_str().unwrap().to_string();

    let cli = common::json(&common::falcon(dir.path(), &["session", "show", &sid, "--json"]));
    let grid = &cli["grid"];
    assert_eq!(grid["metric"], "step_time_s", "{grid:#}");
    assert_eq!(grid["direction"], "lower_is_better");
    assert_eq!((grid["rows_key"].as_str(), grid["columns_key"].as_str()), (Some("config.base_ms"), Some("labels.k")));
    let cells: Vec<&Value> =
        grid["facets"][0]["cells"].as_array().unwrap().iter().flat_map(|r| r.as_array().unwrap()).collect();
    assert_eq!(cells.len(), 4, "{grid:#}");
    // base_ms 100 is best (0.100 s) in both label columns: a tie, both marked; the 120 row is not.
    let best: Vec<f64> = cells.iter().filter(|c| c["best"] == true).map(|c| c["value"].as_f64().unwrap()).collect();
    assert_eq!(best, [0.1, 0.1], "{grid:#}");
    assert_eq!(grid["best"].as_f64(), Some(0.1));
    let text = String::from_utf8(common::falcon(dir.path(), &["session", "show", &sid]).stdout).unwrap();
    assert!(text.contains("step_time_s over the sweep") && text.contains("config.base_ms ↓ · labels.k →"), "{text}");
    assert_eq!(text.matches("★ 0.1 e-").count(), 2, "{text}");

    let server = common::serve::Server::start(dir.path(), &["--no-worker"], &[]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let c = common::serve::client();
    let (status, api) = rt.block_on(common::serve::get_json(&c, &server.url(&format!("/api/v1/sessions/{sid}"))));
    assert_eq!(status, 200, "{api}");
    let mut mcp = Mcp::start(dir.path(), &[]);
    let from_mcp = mcp.call("session_show", json!({ "id": sid }));
    assert_eq!(api["grid"], *grid, "the API's grid is the CLI's");
    assert_eq!(from_mcp["result"]["structuredContent"]["grid"], *grid, "MCP's grid is the CLI's");

    // Another metric, asked the three ways.
    let cli =
        common::json(&common::falcon(dir.path(), &["session", "show", &sid, "--metric", "nothing_logged", "--json"]));
    let (_, api) =
        rt.block_on(common::serve::get_json(&c, &server.url(&format!("/api/v1/sessions/{sid}?metric=nothing_logged"))));
    let from_mcp = mcp.call("session_show", json!({ "id": sid, "metric": "nothing_logged" }));
    assert_eq!(cli["grid"]["metric"], "nothing_logged");
    assert_eq!(cli["grid"]["best"], Value::Null, "no run logged it: {:#}", cli["grid"]);
    assert_eq!(api["grid"], cli["grid"]);
    assert_eq!(from_mcp["result"]["structuredContent"]["grid"], cli["grid"]);
    assert_eq!(mcp.close(), 0);
}

#[test]
fn a_multi_host_trace_names_its_straggler_over_mcp_as_in_the_cli() {
    let dir = project(None);
    let run = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../falcon-analysis/tests/data/multihost/jax-4-late2-30ms")
        .canonicalize()
        .unwrap();
    let run = run.to_str().unwrap();
    let mut mcp = Mcp::start(dir.path(), &["--read-only"]);
    let r = mcp.call("profile_trace", json!({"input": run}));
    let over_mcp = &r["result"]["structuredContent"];
    assert_eq!(over_mcp["straggler"]["host"], "host-2", "{r:.3000}");
    assert_eq!(over_mcp["hosts"].as_array().map(Vec::len), Some(4));
    let cli = common::json(&common::falcon(dir.path(), &["--json", "profile", "trace", run]));
    // One JSON contract: the same answer over both.
    for key in ["hosts", "collectives", "late_steps", "straggler", "total"] {
        assert_eq!(over_mcp[key], cli[key], "{key}");
    }
    assert_eq!(mcp.close(), 0);
}
