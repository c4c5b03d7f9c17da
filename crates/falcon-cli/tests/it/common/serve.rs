//! `falcon serve` started the way a user starts it, for the API and dashboard tests.

use super::{code, falcon};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `falcon serve`; killed when dropped.
pub struct Server {
    pub child: Child,
    pub base: String,
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Server {
    pub fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
        super::enterable(dir);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_falcon"));
        cmd.current_dir(dir).arg("serve").args(args).env("HOME", dir);
        if !args.contains(&"--bind") {
            cmd.args(["--bind", "127.0.0.1:0"]);
        }
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("FALCON_")) {
            cmd.env_remove(k);
        }
        cmd.envs(env.iter().copied()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("falcon serve");
        let stderr = child.stderr.take().unwrap();
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("listening on http://").nth(1) {
                    let _ = tx.send(rest.split_whitespace().next().unwrap_or("").to_string());
                }
                sink.lock().unwrap().push(line);
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("falcon serve did not start: {:?}", log.lock().unwrap()));
        Server { child, base: format!("http://{addr}"), log }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends SIGTERM and waits for the server to exit, at most `within` (a longer wait fails the test).
    pub fn terminate(&mut self, within: Duration) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let started = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(started.elapsed() < within, "still running {:?} after SIGTERM", started.elapsed());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap()
}

/// `POST /signin` with `token` as the dashboard's form sends it (JSON), through `c`.
pub async fn sign_in(c: &reqwest::Client, server: &Server, token: &str) -> reqwest::Response {
    c.post(server.url("/signin"))
        .header("content-type", "application/json")
        .body(serde_json::json!({ "token": token }).to_string())
        .send()
        .await
        .unwrap()
}

/// A project with fast polling; `db` replaces the SQLite default.
pub fn project(db: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["init"];
    if let Some(db) = db {
        args.extend(["--db", db]);
    }
    let out = falcon(dir.path(), &args);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let toml = dir.path().join("falcon.toml");
    let mut text = std::fs::read_to_string(&toml).unwrap();
    if let Some(db) = db {
        assert!(text.contains(db), "init writes the database it made: {text}");
    }
    text.push_str("\n[jobs]\npoll_interval_ms = 200\n");
    std::fs::write(&toml, text).unwrap();
    dir
}

/// A shell workload: 10 steps of `0.<base_ms>` s written as metrics, and a line of log per step.
pub fn spec(name: &str, base_ms: u32) -> String {
    format!(
        "name: {name}\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'for i in $(seq 0 9); do \
         echo \"step $i of ${{config.base_ms}} ms\"; echo \"{{\\\"step\\\": $i, \\\"step_time_s\\\": 0.${{config.base_ms}}}}\" \
         >> $FALCON_ARTIFACT_DIR/metrics.jsonl; sleep 0.1; done']\nconfig: {{base_ms: {base_ms}}}\nresources: {{accelerator: cpu}}\n"
    )
}

pub async fn get_json(c: &reqwest::Client, url: &str) -> (u16, Value) {
    let r = c.get(url).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

pub async fn post(c: &reqwest::Client, url: &str, content_type: &str, body: String) -> (u16, Value) {
    let r = c.post(url).header("content-type", content_type).body(body).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// Reads a Server-Sent Events response until `end` (or `limit`): (event, data) pairs.
pub async fn events(mut response: reqwest::Response, limit: Duration) -> Vec<(String, Value)> {
    let started = Instant::now();
    let (mut buffer, mut out) = (String::new(), Vec::new());
    while started.elapsed() < limit {
        let chunk = match tokio::time::timeout(Duration::from_secs(20), response.chunk()).await {
            Ok(Ok(Some(c))) => c,
            _ => break,
        };
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(at) = buffer.find("\n\n") {
            let block: String = buffer.drain(..at + 2).collect();
            let event = block.lines().find_map(|l| l.strip_prefix("event: ")).unwrap_or("message").to_string();
            let data: String = block.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
            if data.is_empty() {
                continue; // a keep-alive comment
            }
            let done = event == "end";
            out.push((event, serde_json::from_str(&data).unwrap_or(Value::String(data))));
            if done {
                return out;
            }
        }
    }
    out
}
