//! `falcon serve` as its users meet it: the real binary on a free loopback port, over SQLite and over MariaDB
//! (`FALCON_TEST_MYSQL_URL`, default root@127.0.0.1:3306), driven over HTTP. An experiment POSTed runs to
//! COMPLETED under serve's worker while its log streams over Server-Sent Events; lists, sessions, run-level
//! compare and diff, artifacts with Range; the token matrix; the browser protections (Host, Origin, content
//! type, body cap), traversal and SQL-ish values; a non-loopback bind without tokens; SIGTERM with a stream open.

use crate::common::serve::{client, events, get_json, post, project, spec, Server};
use crate::common::{code, falcon, falcon_with, json};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// `GET …/{id}/logs` as Server-Sent Events.
async fn follow_logs(c: &reqwest::Client, server: &Server, id: &str) -> reqwest::Response {
    let url = server.url(&format!("/api/v1/experiments/{id}/logs"));
    c.get(url).header("accept", "text/event-stream").send().await.unwrap()
}

async fn end_to_end(db: Option<&str>) {
    let dir = project(db);
    let server = Server::start(dir.path(), &[], &[]);
    let c = client();

    // Submit (YAML), and follow its log over SSE until it completes under serve's worker.
    let (status, created) =
        post(&c, &server.url("/api/v1/experiments"), "application/yaml", spec("api-one", 100)).await;
    assert_eq!(status, 201, "{created:#}");
    let id = created["id"].as_str().unwrap().to_string();
    let stream = follow_logs(&c, &server, &id).await;
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    let got = events(stream, Duration::from_secs(90)).await;
    let (last, data) = got.last().cloned().unwrap_or_default();
    assert_eq!((last.as_str(), data["status"].as_str()), ("end", Some("COMPLETED")), "{got:?}");
    let text: String = got.iter().filter(|(e, _)| e == "log").filter_map(|(_, d)| d["text"].as_str()).collect();
    assert!(text.contains("step 0 of 100 ms") && text.contains("step 9 of 100 ms"), "{text}");

    // `exp logs -f --json` follows the same stream (falcon_app::streams): the same text of each log and the
    // same end, its events the SSE ones with their name under `event` (a CLI's end has no `server_stopping`).
    let out = falcon(dir.path(), &["exp", "logs", &id, "-f", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let by_source = |items: Vec<(&str, &Value)>| {
        let mut texts = std::collections::BTreeMap::<String, String>::new();
        for (_, d) in items.into_iter().filter(|(e, _)| *e == "log") {
            *texts.entry(d["source"].as_str().unwrap().to_string()).or_default() += d["text"].as_str().unwrap();
        }
        texts
    };
    let cli = by_source(lines.iter().map(|l| (l["event"].as_str().unwrap(), l)).collect());
    assert_eq!(cli, by_source(got.iter().map(|(e, d)| (e.as_str(), d)).collect()), "{lines:?}");
    let mut end = data.clone();
    end.as_object_mut().unwrap().remove("server_stopping");
    end["event"] = "end".into();
    assert_eq!(lines.last(), Some(&end), "{lines:?}");

    // Listed, shown.
    let (s, page) = get_json(&c, &server.url("/api/v1/experiments?status=COMPLETED&name=api-one")).await;
    assert_eq!(s, 200);
    assert_eq!(page["items"][0]["id"], id.as_str(), "{page:#}");
    assert!(page["next_cursor"].is_null());
    let (_, shown) = get_json(&c, &server.url(&format!("/api/v1/experiments/{id}"))).await;
    assert!(shown["metrics"]["step_time_s"]["count"].as_u64().unwrap() >= 8, "{shown:#}");

    // A session: 3 runs at 100 ms and 3 at 120 ms (+20 %), then the run-level verdict between them.
    let sweep = format!(
        "{{\"sweep\": {}, \"name\": \"plus20\"}}",
        serde_json::json!(format!(
            "base:\n{}sweep:\n  config.base_ms: [100, 120]\nrepeats: 3\n",
            spec("api-sweep", 100).lines().map(|l| format!("  {l}\n")).collect::<String>()
        ))
    );
    let (s, session) = post(&c, &server.url("/api/v1/sessions"), "application/json", sweep).await;
    assert_eq!(s, 201, "{session:#}");
    let sid = session["id"].as_str().unwrap().to_string();
    let started = Instant::now();
    let session = loop {
        let (_, v) = get_json(&c, &server.url(&format!("/api/v1/sessions/{sid}"))).await;
        if v["status"] == "COMPLETED" {
            break v;
        }
        assert!(started.elapsed() < Duration::from_secs(180), "session still {}", v["status"]);
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let runs = |ms: u64| -> String {
        let items = session["experiments"].as_array().unwrap();
        let ids: Vec<&str> =
            items.iter().filter(|e| e["spec"]["config"]["base_ms"] == ms).map(|e| e["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), 3, "{session:#}");
        ids.join(",")
    };
    let (a, b) = (runs(100), runs(120));
    let (s, verdict) =
        get_json(&c, &server.url(&format!("/api/v1/experiments/{a}/compare/{b}?metric=step_time_s"))).await;
    assert_eq!(s, 200);
    assert_eq!(verdict["verdict"], "regressed", "{verdict:#}");
    assert!((verdict["delta_rel"].as_f64().unwrap() - 0.2).abs() < 0.01, "{verdict:#}");
    let first = |ids: &str| ids.split(',').next().unwrap().to_string();
    let (_, diff) = get_json(&c, &server.url(&format!("/api/v1/experiments/{}/diff/{}", first(&a), first(&b)))).await;
    assert!(diff["changes"].as_array().unwrap().iter().any(|ch| ch["path"] == "config.base_ms"), "{diff:#}");

    // Artifacts: listed; one streamed whole and by a range.
    let (_, arts) = get_json(&c, &server.url(&format!("/api/v1/experiments/{id}/artifacts"))).await;
    assert!(arts["items"].as_array().unwrap().iter().any(|a| a["key"].as_str().unwrap().ends_with("/metrics.jsonl")));
    let whole = c.get(server.url(&format!("/api/v1/experiments/{id}/artifacts/metrics.jsonl"))).send().await.unwrap();
    assert_eq!(whole.status(), 200);
    let whole = whole.bytes().await.unwrap();
    assert_eq!(whole.iter().filter(|b| **b == b'\n').count(), 10);
    let part = c
        .get(server.url(&format!("/api/v1/experiments/{id}/artifacts/metrics.jsonl")))
        .header("range", "bytes=2-7")
        .send()
        .await
        .unwrap();
    assert_eq!(part.status(), 206);
    assert_eq!(part.headers()["content-range"], format!("bytes 2-7/{}", whole.len()).as_str());
    assert_eq!(&part.bytes().await.unwrap()[..], &whole[2..8]);

    // Not found is a 404 with the JSON error.
    let (s, e) = get_json(&c, &server.url("/api/v1/experiments/e-999999")).await;
    assert_eq!((s, e["error"]["code"].as_str()), (404, Some("not_found")), "{e:#}");
    let log = server.log.lock().unwrap().join("\n");
    assert!(log.contains("POST /api/v1/experiments 201"), "the access log: {log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_experiment_runs_through_the_api_on_sqlite() {
    end_to_end(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_experiment_runs_through_the_api_on_mariadb() {
    let server = std::env::var("FALCON_TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".into());
    let db = format!("{}/falcon_api_{}", server.trim_end_matches('/'), uuid::Uuid::new_v4().simple());
    end_to_end(Some(&db)).await;
}

fn token(dir: &Path, name: &str, scope: &str) -> String {
    let out = falcon(dir, &["token", "create", "--name", name, "--scope", scope, "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let created = json(&out);
    assert_eq!((created["name"].as_str(), created["scope"].as_str()), (Some(name), Some(scope)));
    created["token"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_decide_who_may_read_and_write() {
    let dir = project(None);
    let server = Server::start(dir.path(), &["--no-worker"], &[]);
    let c = client();
    let list = server.url("/api/v1/experiments");
    assert_eq!(get_json(&c, &list).await.0, 200, "no token defined on loopback: open");
    for proxy in ["x-forwarded-for", "forwarded", "x-real-ip"] {
        let r = c.get(&list).header(proxy, "203.0.113.7").send().await.unwrap();
        assert_eq!(r.status(), 401, "{proxy}: a proxied request may come from anywhere; open is for this machine");
    }

    let read = token(dir.path(), "reader", "read");
    let write = token(dir.path(), "writer", "write");
    tokio::time::sleep(Duration::from_millis(1100)).await; // the server rereads "any token?" each second
    let with = |t: &str| c.get(&list).bearer_auth(t);
    assert_eq!(c.get(&list).send().await.unwrap().status(), 401, "a token exists now: none is 401");
    assert_eq!(with("falcon_unknown").send().await.unwrap().status(), 401);
    assert_eq!(with(&read).send().await.unwrap().status(), 200);
    let cancel = server.url("/api/v1/experiments/e-1/cancel");
    let posted = |t: &str| c.post(&cancel).bearer_auth(t).header("content-type", "application/json").send();
    let r = posted(&read).await.unwrap();
    assert_eq!(r.status(), 403, "a read token may not write");
    assert!(r.json::<Value>().await.unwrap()["error"]["message"].as_str().unwrap().contains("needs write"));
    assert_eq!(posted(&write).await.unwrap().status(), 404, "a write token gets past the checks (e-1 does not exist)");
    assert_eq!(c.get(server.url("/healthz")).send().await.unwrap().status(), 200, "health needs no token");
    assert_eq!(c.get(server.url("/readyz")).send().await.unwrap().status(), 200);

    let out = falcon(dir.path(), &["token", "revoke", "reader", "--json"]);
    assert_eq!(code(&out), 0);
    assert!(json(&out)["revoked"].is_number());
    assert_eq!(with(&read).send().await.unwrap().status(), 401, "revoked: 401 at once");
    let listed = json(&falcon(dir.path(), &["token", "list", "--json"]));
    let text = listed.to_string();
    assert!(!text.contains(&read) && !text.contains(&write), "a listing never shows a secret");
    assert_eq!(listed["items"].as_array().unwrap().len(), 2);
}

#[test]
fn a_non_loopback_bind_needs_a_token_first() {
    let dir = project(None);
    let out = falcon_with(dir.path(), &["serve", "--bind", "0.0.0.0:0", "--no-worker", "--json"], &[]);
    assert_eq!(code(&out), 2, "{}", String::from_utf8_lossy(&out.stderr));
    let e = json(&out);
    assert!(e["error"]["message"].as_str().unwrap().contains("with no live token"), "{e:#}");
    token(dir.path(), "admin", "admin");
    let server = Server::start(dir.path(), &["--no-worker", "--bind", "0.0.0.0:0"], &[]);
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_elsewhere_cannot_drive_the_server_and_odd_input_is_refused() {
    let dir = project(None);
    let server = Server::start(dir.path(), &["--no-worker"], &[]);
    let c = client();
    let submit = server.url("/api/v1/experiments");
    let body = spec("x", 100);

    // A cross-site form post (text/plain, a form type) never reaches a handler.
    for kind in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
        let (s, e) = post(&c, &submit, kind, body.clone()).await;
        assert_eq!((s, e["error"]["code"].as_str()), (415, Some("unsupported_media_type")), "{kind}");
    }
    // An Origin that is not this server, and a Host that does not name it (DNS rebinding).
    let r = c
        .post(&submit)
        .header("content-type", "application/yaml")
        .header("origin", "http://evil.example")
        .body(body.clone());
    assert_eq!(r.send().await.unwrap().status(), 403);
    let port = server.base.rsplit(':').next().unwrap().to_string();
    let r = c.get(server.url("/api/v1/experiments")).header("host", format!("evil.example:{port}"));
    assert_eq!(r.send().await.unwrap().status(), 403);
    let own_origin = c.get(server.url("/api/v1/pools")).header("origin", server.base.clone());
    assert_eq!(own_origin.send().await.unwrap().status(), 200, "our own page may");
    // Bodies over 1 MiB: 413.
    let (s, e) = post(&c, &submit, "application/yaml", "#".repeat((1 << 20) + 10)).await;
    assert_eq!((s, e["error"]["code"].as_str()), (413, Some("payload_too_large")));
    // A spec that does not validate: 422 with line:col.
    let (s, e) = post(&c, &submit, "application/yaml", "name: x\nscenario: nonsense\n".into()).await;
    assert_eq!(s, 422, "{e:#}");
    assert!(e["error"]["message"].as_str().unwrap().starts_with("request body:2:"), "{e:#}");
    // Traversal in an artifact path.
    for path in ["..%2F..%2Fetc%2Fpasswd", "a/../../b", "%2Fetc%2Fpasswd"] {
        let s = c.get(server.url(&format!("/api/v1/experiments/e-1/artifacts/{path}"))).send().await.unwrap().status();
        assert!(s == 422 || s == 400 || s == 404, "{path}: {s}");
        assert_ne!(s, 200);
    }
    // SQL-ish filter values are values: nothing matches, nothing breaks.
    for q in ["name=%27%20OR%201%3D1%20--", "label=a%3D1%27%20OR%20%271%27%3D%271", "label=%27%3D%27"] {
        let (s, page) = get_json(&c, &server.url(&format!("/api/v1/experiments?{q}"))).await;
        assert_eq!((s, page["items"].as_array().map(Vec::len)), (200, Some(0)), "{q}: {page:#}");
    }
    for q in ["status=RUNNING%27%20OR%20%271%27%3D%271", "goal=g-1%3B%20DROP%20TABLE%20goals", "limit=-1", "bogus=1"] {
        let (s, e) = get_json(&c, &server.url(&format!("/api/v1/experiments?{q}"))).await;
        assert_eq!((s, e["error"]["code"].as_str()), (400, Some("usage")), "{q}: {e:#}");
    }
    // Ids in the API's canonical form only (the OpenAPI patterns): the CLI's bare `4` is a 400, not goal g-4.
    for path in ["/api/v1/goals/1", "/api/v1/goals/g-", "/api/v1/sessions/1", "/api/v1/experiments/1"] {
        let (s, e) = get_json(&c, &server.url(path)).await;
        assert_eq!((s, e["error"]["code"].as_str()), (400, Some("usage")), "{path}: {e:#}");
    }
    let close = serde_json::json!({ "reason": "bare id" }).to_string();
    let (s, e) = post(&c, &server.url("/api/v1/goals/1/abandon"), "application/json", close).await;
    assert_eq!((s, e["error"]["code"].as_str()), (400, Some("usage")), "{e:#}");
    // A server-side path as a sweep's base is refused.
    let sweep = serde_json::json!({ "sweep": "base: /etc/passwd\nsweep:\n  config.a: [1]\n" }).to_string();
    let (s, e) = post(&c, &server.url("/api/v1/sessions"), "application/json", sweep).await;
    assert!(s == 422 || s == 400, "{s}: {e:#}");
    assert!(e["error"]["message"].as_str().unwrap().contains("file on the server"), "{e:#}");
    // The OpenAPI document lists every route; each answers (not the router's 404).
    let (_, doc) = get_json(&c, &server.url("/api/v1/openapi.json")).await;
    assert_eq!(doc["openapi"], "3.1.0");
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            let concrete = path
                .replace(
                    "{id}",
                    if path.contains("goals") {
                        "g-1"
                    } else if path.contains("sessions") {
                        "s-1"
                    } else {
                        "e-1"
                    },
                )
                .replace("{a}", "e-1")
                .replace("{b}", "e-2")
                .replace("{exp}", "e-1")
                .replace("{path}", "metrics.jsonl");
            let r = if method == "get" {
                c.get(server.url(&concrete)).send().await.unwrap()
            } else {
                c.post(server.url(&concrete))
                    .header("content-type", "application/json")
                    .body("{}")
                    .send()
                    .await
                    .unwrap()
            };
            let status = r.status().as_u16();
            let text = r.text().await.unwrap_or_default();
            assert!(status < 500, "{method} {concrete}: {status} {text}");
            if status == 404 {
                let e: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                assert_eq!(e["error"]["code"], "not_found", "{method} {concrete}: {text}");
                let message = e["error"]["message"].as_str().unwrap_or("");
                assert!(!message.starts_with("no route"), "{method} {concrete} is routed: {text}");
            }
        }
    }
    // What is not routed answers with the error body too: 404 for a path, 405 (with Allow) for a method.
    let (s, e) = get_json(&c, &server.url("/api/v2/nothing")).await;
    assert_eq!((s, e["error"]["code"].as_str()), (404, Some("not_found")));
    for method in ["PUT", "DELETE", "PATCH", "TRACE"] {
        let r = c.request(method.parse().unwrap(), server.url("/api/v1/experiments")).send().await.unwrap();
        assert_eq!(r.status(), 405, "{method}");
        assert!(r.headers().get("allow").is_some(), "{method}");
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["error"]["code"], "method_not_allowed", "{method}");
    }
    // An empty POST needs no content type (a form always sends one); a body without one is refused.
    let r = c.post(server.url("/api/v1/experiments/e-999/cancel")).send().await.unwrap();
    assert_eq!(r.status(), 404);
    let r = c.post(server.url("/api/v1/experiments/e-999/cancel")).body("x").send().await.unwrap();
    assert_eq!(r.status(), 415);
    // JSON bodies are objects: an array is not read as the fields in order.
    let (s, e) = post(&c, &server.url("/api/v1/goals/claim"), "application/json", "[null, null]".into()).await;
    assert_eq!((s, e["error"]["code"].as_str()), (422, Some("invalid")), "{e:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_within_ten_seconds_with_a_stream_open() {
    let dir = project(None);
    let mut server = Server::start(dir.path(), &[], &[]);
    let c = client();
    let long =
        "name: long\nscenario: benchmark\nworkload: {framework: shell, command: [sh, -c, 'echo started; sleep 60']}\n\
                resources: {accelerator: cpu}\n";
    let (s, created) = post(&c, &server.url("/api/v1/experiments"), "application/yaml", long.into()).await;
    assert_eq!(s, 201);
    let id = created["id"].as_str().unwrap().to_string();
    let stream = follow_logs(&c, &server, &id).await;
    let reader = tokio::spawn(events(stream, Duration::from_secs(30)));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let status = server.terminate(Duration::from_secs(12));
    assert_eq!(status.code(), Some(0), "{:?}", server.log.lock().unwrap());
    let got = reader.await.unwrap();
    let (last, data) = got.last().cloned().unwrap_or_default();
    assert_eq!((last.as_str(), data["server_stopping"].as_bool()), ("end", Some(true)), "{got:?}");
    let log = server.log.lock().unwrap().join("\n");
    assert!(log.contains("falcon serve: stopped"), "{log}");
}
