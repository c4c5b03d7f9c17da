//! A multi-host run as an experiment, end to end with the real binary: a job leaves the four hosts' captures of a
//! JAX run whose process 2 starts each step 30 ms late (`examples/multihost`), and the straggler is named the same
//! way in `profile trace`, the experiment's stored `trace` row, `exp show` (JSON and text) and the dashboard's
//! experiment page (its per-host lateness chart).

use crate::common::serve::{client, get_json, post, project, Server};
use crate::common::{code, falcon, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn late_run() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../falcon-analysis/tests/data/multihost/jax-4-late2-30ms/plugins/profile/2026_12_01_00_00_00")
        .canonicalize()
        .unwrap()
}

fn spec() -> String {
    format!(
        "name: late-host\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'mkdir -p \
         $FALCON_ARTIFACT_DIR/plugins/profile/run1 && cp {}/host-*.xplane.pb $FALCON_ARTIFACT_DIR/plugins/profile/run1/']\n\
         resources: {{accelerator: cpu}}\n",
        late_run().display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_late_host_is_named_in_the_stored_row_exp_show_and_the_dashboard() {
    let dir = project(None);
    let server = Server::start(dir.path(), &[], &[]);
    let c = client();
    let (s, v) = post(&c, &server.url("/api/v1/experiments"), "application/yaml", spec()).await;
    assert_eq!(s, 201, "{v:#}");
    let id = v["id"].as_str().unwrap().to_string();
    let started = Instant::now();
    loop {
        let (_, e) = get_json(&c, &server.url(&format!("/api/v1/experiments/{id}"))).await;
        if e["status"] == "COMPLETED" {
            break;
        }
        assert!(e["status"] != "FAILED", "{e:#}");
        assert!(started.elapsed() < Duration::from_secs(120), "{id} still {}", e["status"]);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    // `profile trace` of the experiment: the run of four hosts, and it stores the experiment's trace row.
    let out = falcon(dir.path(), &["--json", "profile", "trace", &id]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let trace = json(&out);
    assert_eq!(trace["straggler"]["host"], "host-2", "{:#}", trace["straggler"]);
    assert_eq!(trace["hosts"].as_array().map(Vec::len), Some(4));

    let shown = json(&falcon(dir.path(), &["--json", "exp", "show", &id]));
    let row = shown["analysis"].as_array().unwrap().iter().find(|r| r["tool"] == "trace").cloned();
    let row = row.unwrap_or_else(|| panic!("no trace row: {shown:#}"));
    let d = &row["details"];
    assert_eq!(d["straggler"]["host"], "host-2", "{d:#}");
    assert_eq!(d["straggler"]["steps_late"], 10);
    let (wait, transfer) = (d["wait_for_peers_percent"].as_f64().unwrap(), d["transfer_percent"].as_f64().unwrap());
    assert!(wait > transfer, "waiting for the late host is the larger part: {wait} vs {transfer}");
    let exposed = d["exposed_collective_percent"].as_f64().unwrap();
    assert!((wait + transfer - exposed).abs() < 1e-6, "{d:#}");
    assert_eq!(d["hosts"][0]["host"], "host-2", "the late host first: {:#}", d["hosts"]);

    let text = String::from_utf8_lossy(&falcon(dir.path(), &["exp", "show", &id]).stdout).into_owned();
    assert!(text.contains("straggler host-2 (last at 10 of 10 steps"), "{text}");
    assert!(text.contains("waiting for peers"), "{text}");

    let page = c.get(server.url(&format!("/experiments/{id}"))).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("Hosts: who arrives late at the collectives"), "{html:.4000}");
    assert!(html.contains("host-2 arrived last at 10 of 10 steps"), "the straggler finding");
    assert!(html.contains("waiting for peers"), "the steps' breakdown splits the wait out");
    // The chart: one row per host, the late one first, with its lateness.
    let first_row =
        html.split("lateness\"><thead>").nth(1).and_then(|t| t.split("<tbody><tr><td>").nth(1)).unwrap_or("");
    assert!(first_row.starts_with("host-2<"), "{first_row:.300}");
    assert!(first_row.contains("10 of 10"), "{first_row:.300}");
}
