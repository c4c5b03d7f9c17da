//! Profile analysis as a user asks for it (`falcon profile …`), in process: analyse files, run directories, `gs://`
//! URIs and experiments; bad input fails with a clear error of the kind (so the exit code) docs/DESIGN.md §6 gives
//! it; an experiment with a profile gets its summary row. The helpers below are the CLI's path from its flags to
//! the use case, shared by the other profile modules (`trace`, `pytorch`, `first_answers`).

use super::harness::as_printed;
use falcon_app::goals::SessionRequest;
use falcon_app::reports::Report;
use falcon_app::requests::{ExperimentShowRequest, GoalCreateRequest, ProfileAnalyzeRequest, DEFAULT_PRIORITY};
use falcon_app::{App, AppError};
use falcon_core::config::{Config, ConfigLayer, MachineFacts};
use falcon_core::ErrorKind;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn capture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-xplane/tests/data").join(name)
}

fn analysis_data(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-analysis/tests/data").join(name);
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// XProf's percent strings ("86.5%") as numbers.
fn xprof_percent(v: &Value) -> f64 {
    v.as_str().unwrap().trim_end_matches('%').parse().unwrap()
}

/// A path as the use cases take their input.
pub(super) fn input(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `profile analyze INPUT --tool TOOLS`' request (`&["all"]`: the flag's default).
pub(super) fn analyze_request(input: &str, tools: &[&str]) -> ProfileAnalyzeRequest {
    ProfileAnalyzeRequest {
        input: input.to_string(),
        tool: tools.iter().map(|t| t.to_string()).collect(),
        host: None,
        model_flops: None,
        peak_tflops: None,
    }
}

/// What `profile analyze --json` answers for the request: an experiment's kept report (computed and kept on the
/// first request), else the analysis of the input, as JSON.
pub(super) async fn analyze_json(app: &App, request: &ProfileAnalyzeRequest) -> Result<Value, AppError> {
    let options = request.options()?;
    let host = request.host.as_deref();
    if let Some((id, report)) = Report::answering_analysis(&request.input, host, &options) {
        return Ok(serde_json::from_slice(&app.report(id, &report).await?).expect("a kept report is JSON"));
    }
    let (_, report) = app.analyze_profile(&request.input, host, &options).await?;
    Ok(as_printed(&report))
}

/// What `profile analyze` prints as text (`--markdown`: `markdown`; `--top`: `top`, 15 by default).
pub(super) async fn analyze_text(
    app: &App,
    request: &ProfileAnalyzeRequest,
    top: usize,
    markdown: bool,
) -> Result<String, AppError> {
    let options = request.options()?;
    let (resolved, report) = app.analyze_profile(&request.input, request.host.as_deref(), &options).await?;
    Ok(falcon_app::render::profile::analysis(&resolved, &report, top, markdown))
}

/// A use case's answer as JSON, panicking with the error when it failed.
pub(super) fn ok(answer: Result<Value, AppError>) -> Value {
    answer.unwrap_or_else(|e| panic!("{:?}: {e}", e.kind()))
}

/// The error a use case answered with, panicking with the answer when it succeeded.
pub(super) fn err<T: std::fmt::Debug>(answer: Result<T, AppError>) -> AppError {
    match answer {
        Ok(v) => panic!("succeeded: {v:?}"),
        Err(e) => e,
    }
}

/// `exp submit SPEC --wait --json`: the experiment of the spec text run to its end by the embedded worker, then
/// the analyses it calls for; it must have completed (the CLI exits 1 otherwise). Its detail as JSON.
pub(super) async fn run_experiment(app: &App, spec: &str) -> Value {
    as_printed(&super::harness::submit_and_wait(app, spec, "spec.yaml").await)
}

/// `exp show ID`: the experiment's detail, as `--json` prints it and as the text `exp show` prints.
pub(super) async fn show_experiment(app: &App, id: &str) -> (Value, String) {
    let (id, warmup) = ExperimentShowRequest { id: id.to_string(), warmup: None }.show().unwrap();
    let detail = app.show_experiment(id, warmup).await.unwrap();
    (as_printed(&detail), falcon_app::render::experiment::text(&detail))
}

/// The gzip file's text, inflated by the system's `gzip` (falcon-app's dependencies have no gzip reader).
pub(super) fn gunzip(gz: &[u8]) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("gzip")
        .arg("-dc")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run gzip");
    let mut stdin = child.stdin.take().unwrap();
    let gz = gz.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&gz));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "gzip -dc failed");
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn analyze_a_tpu_file_gives_the_guaranteed_json_with_xprof_numbers() {
    let h = super::harness::app().await;
    let file = capture("tpu_v6e_inference.xplane.pb");
    let r = ok(analyze_json(&h.app, &analyze_request(input(&file), &["all"])).await);
    let xprof = analysis_data("tpu_v6e_inference_xprof_cli_get_overview.json");
    let o = &r["overview"];
    for key in [
        "device_type",
        "device_cores",
        "hosts",
        "step_time_ms",
        "device_duty_cycle_percent",
        "device_idle_percent",
        "flops_utilization",
        "hbm_bw_utilization",
        "bound_by",
        "operational_intensity",
        "mfu",
    ] {
        assert!(o.get(key).is_some(), "overview.{key} missing: {o}");
    }
    assert_eq!(o["device_type"], xprof["run_environment"]["device_type"]);
    assert_eq!(
        o["device_cores"].as_u64().unwrap().to_string(),
        xprof["run_environment"]["device_core_count"].as_str().unwrap()
    );
    assert_eq!(o["hosts"], 1);
    assert_eq!(o["step_time_ms"]["n"], 0, "the inference capture has no step markers");
    let duty = xprof_percent(&xprof["performance_summary"]["device_duty_cycle_percent"]);
    assert!((o["device_duty_cycle_percent"].as_f64().unwrap() - duty).abs() < 0.05 + 1e-9, "{o}");
    let hbm = xprof_percent(&xprof["performance_summary"]["hbm_bw_utilization_percent"]) / 100.0;
    assert!((o["hbm_bw_utilization"].as_f64().unwrap() - hbm).abs() < 0.00005 + 1e-9, "{o}");
    // XProf's word for the bounding resource is kept as `bound_by_resource`; `bound_by` is Falcon's one
    // vocabulary (falcon_core::bound::BoundBy), in which HBM-bound is `memory`.
    assert_eq!(o["bound_by_resource"], xprof["performance_summary"]["bound_by"]);
    assert_eq!(o["bound_by"], "memory");

    let hlo = analysis_data("tpu_v6e_inference_xprof_hlo_stats.json");
    let ops = r["ops"].as_array().unwrap();
    assert_eq!(ops.len(), hlo["rows"].as_array().unwrap().len(), "one row per XProf hlo_stats row");
    for key in [
        "program_id",
        "name",
        "category",
        "occurrences",
        "total_time_us",
        "self_time_us",
        "flops",
        "bytes_accessed",
        "flop_rate_gflops",
        "hbm_bw_gibs",
        "operational_intensity",
        "bound_by",
    ] {
        assert!(ops[0].get(key).is_some(), "ops[].{key} missing: {}", ops[0]);
    }
    let roof = &r["roofline"];
    let xroof = analysis_data("tpu_v6e_inference_xprof_roofline_model.json");
    let ridge: f64 = xroof[0]["p"]["hbm_ridge_point"].as_str().unwrap().parse().unwrap();
    assert!(
        (roof["ridge_point"].as_f64().unwrap() - ridge).abs() <= ridge * 0.005,
        "{} vs {ridge}",
        roof["ridge_point"]
    );
    for key in ["peak_flop_rate_gflops", "peak_hbm_bw_gibs", "points"] {
        assert!(roof.get(key).is_some(), "roofline.{key} missing");
    }
    let mem = &r["memory"];
    for key in ["allocators", "peak_bytes", "timeline", "top_allocations", "step_growth_bytes"] {
        assert!(mem.get(key).is_some(), "memory.{key} missing");
    }
    let xmem = analysis_data("tpu_v6e_inference_xprof_cli_get_memory_profile.json");
    let peak_gib = mem["peak_bytes"].as_f64().unwrap() / (1u64 << 30) as f64;
    assert!((peak_gib - xmem["peak_memory_usage_gib"].as_f64().unwrap()).abs() < 0.006, "{peak_gib}");
    assert!(r["kernels"].as_array().unwrap().is_empty(), "no GPU kernels on a TPU capture");

    // Text and Markdown render the same analysis.
    let text = analyze_text(&h.app, &analyze_request(input(&file), &["all"]), 15, true).await.unwrap();
    assert!(text.contains("## Overview") && text.contains("TPU v6 Lite") && text.contains("copy-done"), "{text}");
}

#[tokio::test]
async fn gpu_kernels_and_cpu_steps_through_the_cli() {
    let h = super::harness::app().await;
    let dir = &h.dir;
    let gpu = capture("gpu_v100x8_tf.xplane.pb");
    let r = ok(analyze_json(&h.app, &analyze_request(input(&gpu), &["kernels", "overview"])).await);
    let xk = analysis_data("gpu_v100x8_tf_xprof_kernel_stats.json");
    let kernels = r["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), xk["rows"].as_array().unwrap().len());
    for key in ["name", "occurrences", "total_time_us", "avg_time_us", "min_time_us", "max_time_us"] {
        assert!(kernels[0].get(key).is_some(), "kernels[].{key} missing");
    }
    assert!(r.get("ops").is_none() && r.get("memory").is_none(), "only the tools asked for");
    assert!(
        r["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("FLOP")),
        "says GPU ops have no FLOPs: {}",
        r["notes"]
    );

    // A JAX run directory (plugins/profile/<run>/<host>.xplane.pb), found from its root.
    let run = dir.path().join("logdir/plugins/profile/2026_01_01_00_00_00");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::copy(capture("jax_cpu_mlp_vm.xplane.pb"), run.join("vm.xplane.pb")).unwrap();
    let logdir = dir.path().join("logdir");
    let r = ok(analyze_json(&h.app, &analyze_request(input(&logdir), &["overview"])).await);
    let xprof = analysis_data("jax_cpu_mlp_xprof_cli_get_overview.json");
    let mean: f64 = xprof["performance_summary"]["steptime_ms_average"].as_str().unwrap().parse().unwrap();
    assert!((r["overview"]["step_time_ms"]["mean"].as_f64().unwrap() - mean).abs() < 0.05, "{}", r["overview"]);
    assert_eq!(r["overview"]["device_type"], "CPU");
    assert!(!r["cpu_ops"]["ops"].as_array().unwrap().is_empty(), "XLA:CPU op profile");
    let nohost = ProfileAnalyzeRequest { host: Some("nohost".into()), ..analyze_request(input(&logdir), &["all"]) };
    assert_eq!(err(analyze_json(&h.app, &nohost).await).kind(), ErrorKind::NotFound);
}

#[tokio::test]
async fn bad_inputs_fail_with_clear_errors_and_exit_codes() {
    let h = super::harness::app().await;
    let dir = &h.dir;
    let cases = super::fixtures::bad_xplanes();
    for (name, bytes) in &cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let e = err(analyze_json(&h.app, &analyze_request(input(&path), &["all"])).await);
        assert_eq!(e.kind().exit_code(), 1, "{name}: {:?}: {e}", e.kind());
        let message = e.to_string();
        assert!(message.contains(name), "{name}: the message names the file: {message}");
    }
    let truncated = dir.path().join("truncated.xplane.pb");
    assert!(err(analyze_json(&h.app, &analyze_request(input(&truncated), &["all"])).await)
        .to_string()
        .contains("offset"));
    std::fs::create_dir(dir.path().join("nothing")).unwrap();
    let nothing = dir.path().join("nothing");
    let no_such_file = dir.path().join("no-such-file.xplane.pb");
    for missing in [input(&nothing), input(&no_such_file), "e-99"] {
        let e = err(analyze_json(&h.app, &analyze_request(missing, &["all"])).await);
        assert_eq!(e.kind(), ErrorKind::NotFound, "{missing}: {e}");
    }
}

#[tokio::test]
async fn an_experiment_with_a_profile_gets_a_summary_row_and_exports_a_trace() {
    let h = super::harness::app().await;
    let dir = &h.dir;
    let src = capture("jax_cpu_mlp_vm.xplane.pb");
    let spec = format!(
        "name: profiled\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'mkdir -p $FALCON_ARTIFACT_DIR/plugins/profile/2026_01_01_00_00_00 \
         && cp {} $FALCON_ARTIFACT_DIR/plugins/profile/2026_01_01_00_00_00/vm.xplane.pb']\nresources: {{accelerator: cpu}}\n",
        src.display()
    );
    let shown = run_experiment(&h.app, &spec).await;
    let id = shown["id"].as_str().unwrap().to_string();
    let rows: Vec<&Value> = shown["analysis"].as_array().unwrap().iter().filter(|r| r["tool"] == "profile").collect();
    assert_eq!(rows.len(), 1, "submitting with wait analysed the profile: {shown}");
    let xprof = analysis_data("jax_cpu_mlp_xprof_cli_get_overview.json");
    let mean: f64 = xprof["performance_summary"]["steptime_ms_average"].as_str().unwrap().parse().unwrap();
    assert_eq!(rows[0]["tool"], "profile");
    assert!((rows[0]["step_time_ms"].as_f64().unwrap() - mean).abs() < 0.05, "{}", rows[0]);

    // By experiment id: fetched into the cache, same numbers.
    let steps = ok(analyze_json(&h.app, &analyze_request(&id, &["steps"])).await);
    assert!(steps["steps"]["steps"].as_array().unwrap().len() > 1);
    let fetched = as_printed(&h.app.fetch_profile(&id, None).await.unwrap());
    let local = fetched["files"][0]["path"].as_str().unwrap();
    assert_eq!(std::fs::read(local).unwrap(), std::fs::read(&src).unwrap());

    let output = dir.path().join("trace.json.gz");
    let written = h.app.export_trace(&id, &output, None, false).await.unwrap().summary;
    assert!(written.events > 100);
    let trace: Value = serde_json::from_str(&gunzip(&std::fs::read(&output).unwrap())).unwrap();
    assert!(trace["traceEvents"].as_array().unwrap().len() >= written.events);
    let again = err(h.app.export_trace(&id, &output, None, false).await);
    assert_eq!(again.kind(), ErrorKind::Conflict, "an existing output is not replaced without force: {again}");

    // An experiment without a profile: not found.
    let plain = run_experiment(
        &h.app,
        "name: plain\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [true]\nresources: {accelerator: cpu}\n",
    )
    .await;
    let e = err(analyze_json(&h.app, &analyze_request(plain["id"].as_str().unwrap(), &["all"])).await);
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
}

/// An application like the harness' whose `[gcs]` is the emulator at `endpoint`, without credentials (what
/// `FALCON_GCS_ENDPOINT` and `FALCON_GCS_ANONYMOUS` set), in `dir`.
fn app_on_gcs(dir: &Path, endpoint: &str) -> App {
    let toml = format!(
        "data_dir = \".falcon\"\nartifacts = \"memory://\"\n\n[gcs]\nendpoint = \"{endpoint}\"\nanonymous = true\n"
    );
    let layer = ConfigLayer::from_toml(&toml, "falcon.toml").unwrap().rebase(dir);
    App::new(Config::resolve([layer], MachineFacts { cores: 2 }))
}

/// Runs `curl -fsS ARGS` against the emulator (its setup, not Falcon).
fn curl(args: &[&str]) {
    let out = std::process::Command::new("curl").arg("-fsS").args(args).output().expect("curl");
    assert!(out.status.success(), "curl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

#[tokio::test]
async fn a_gs_uri_is_fetched_from_the_bucket_and_analysed() {
    let endpoint = std::env::var("FALCON_TEST_GCS_ENDPOINT").unwrap_or_else(|_| {
        panic!("the GCS emulator is needed: FALCON_TEST_GCS_ENDPOINT is not set (run scripts/test.sh, which starts it)")
    });
    let bucket = format!("falcon-profile-app-{}", std::process::id());
    curl(&[
        "-X",
        "POST",
        "-H",
        "Content-Type: application/json",
        "-d",
        &format!("{{\"name\":\"{bucket}\"}}"),
        &format!("{endpoint}/storage/v1/b"),
    ]);
    let file = capture("tpu_v6e_inference.xplane.pb");
    let name = "team%2Frun1%2Fplugins%2Fprofile%2F2026_02_03_04_05_06%2Ft1v-0.xplane.pb";
    curl(&[
        "-X",
        "POST",
        "--data-binary",
        &format!("@{}", file.display()),
        "-H",
        "Content-Type: application/octet-stream",
        &format!("{endpoint}/upload/storage/v1/b/{bucket}/o?uploadType=media&name={name}"),
    ]);

    let dir = tempfile::tempdir().unwrap();
    let app = app_on_gcs(dir.path(), &endpoint);
    // The folder of the run: the newest run's hosts are found under it.
    let uri = format!("gs://{bucket}/team/run1");
    let r = ok(analyze_json(&app, &analyze_request(&uri, &["overview"])).await);
    assert_eq!(r["overview"]["device_type"], "TPU v6 Lite");
    assert_eq!(r["files"][0]["host"], "t1v-0");
    assert_eq!(std::fs::read(r["files"][0]["path"].as_str().unwrap()).unwrap(), std::fs::read(&file).unwrap());
    // Nothing there: not found.
    let e = err(analyze_json(&app, &analyze_request(&format!("gs://{bucket}/nothing-here"), &["all"])).await);
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    // One named object that is not there: its download's error is the answer.
    let e = err(analyze_json(&app, &analyze_request(&format!("gs://{bucket}/team/gone.xplane.pb"), &["all"])).await);
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("gone.xplane.pb"), "{e}");

    // A run of three hosts, one cut off mid-write: streamed host by host, the broken one named, and the answer of
    // the readable two the same as from a local copy of them.
    let bytes = std::fs::read(&file).unwrap();
    let local = dir.path().join("local/plugins/profile/2026_02_03_04_05_06");
    std::fs::create_dir_all(&local).unwrap();
    for (host, body) in [("w-0", &bytes[..]), ("w-1", &bytes[..]), ("w-2", &bytes[..bytes.len() / 2])] {
        let path = dir.path().join(format!("{host}.upload"));
        std::fs::write(&path, body).unwrap();
        if host != "w-2" {
            std::fs::write(local.join(format!("{host}.xplane.pb")), body).unwrap();
        }
        let name = format!("team%2Frun2%2Fplugins%2Fprofile%2F2026_02_03_04_05_06%2F{host}.xplane.pb");
        curl(&[
            "-X",
            "POST",
            "--data-binary",
            &format!("@{}", path.display()),
            "-H",
            "Content-Type: application/octet-stream",
            &format!("{endpoint}/upload/storage/v1/b/{bucket}/o?uploadType=media&name={name}"),
        ]);
    }
    let remote =
        ok(analyze_json(&app, &analyze_request(&format!("gs://{bucket}/team/run2"), &["overview", "hlo"])).await);
    let failed: Vec<&str> =
        remote["failed_hosts"].as_array().unwrap().iter().map(|f| f["host"].as_str().unwrap()).collect();
    assert_eq!(failed, ["w-2"]);
    assert_eq!(remote["overview"]["hosts"], 2);
    let local = ok(analyze_json(&app, &analyze_request(input(&dir.path().join("local")), &["overview", "hlo"])).await);
    assert_eq!(remote["overview"], local["overview"]);
    assert_eq!(remote["ops"], local["ops"]);
}

#[tokio::test]
async fn hosts_of_a_run_are_combined_or_picked() {
    let h = super::harness::app().await;
    let dir = &h.dir;
    let run = dir.path().join("logdir/plugins/profile/2026_01_01_00_00_00");
    std::fs::create_dir_all(&run).unwrap();
    for host in ["host-a", "host-b"] {
        std::fs::copy(capture("tpu_v6e_inference.xplane.pb"), run.join(format!("{host}.xplane.pb"))).unwrap();
    }
    let logdir = dir.path().join("logdir");
    let both = analyze_request(input(&logdir), &["overview", "hlo"]);
    let one = ok(analyze_json(&h.app, &ProfileAnalyzeRequest { host: Some("host-b".into()), ..both.clone() }).await);
    let both = ok(analyze_json(&h.app, &both).await);
    assert_eq!(one["overview"]["hosts"], 1);
    assert_eq!(both["overview"]["hosts"], 2);
    assert_eq!(
        both["overview"]["device_cores"].as_u64().unwrap(),
        2 * one["overview"]["device_cores"].as_u64().unwrap()
    );
    let occurrences =
        |r: &Value| r["ops"].as_array().unwrap().iter().map(|o| o["occurrences"].as_u64().unwrap()).sum::<u64>();
    assert_eq!(occurrences(&both), 2 * occurrences(&one), "ops of both hosts are merged");
    assert_eq!(both["ops"].as_array().unwrap().len(), one["ops"].as_array().unwrap().len());
}

#[tokio::test]
async fn a_host_that_cannot_be_read_is_named_and_the_others_are_analysed() {
    let h = super::harness::app().await;
    let dir = &h.dir;
    let run = dir.path().join("logdir/plugins/profile/2026_01_01_00_00_00");
    std::fs::create_dir_all(&run).unwrap();
    let bytes = std::fs::read(capture("tpu_v6e_inference.xplane.pb")).unwrap();
    for host in ["host-a", "host-b"] {
        std::fs::write(run.join(format!("{host}.xplane.pb")), &bytes).unwrap();
    }
    let request = analyze_request(input(&dir.path().join("logdir")), &["overview", "hlo"]);
    let good = ok(analyze_json(&h.app, &request).await);
    assert!(good.get("failed_hosts").is_none(), "absent when every host was read");
    // A host cut off mid-write (a job killed while its profiler flushed) and one that is not a profile at all.
    std::fs::write(run.join("host-c.xplane.pb"), &bytes[..bytes.len() / 3]).unwrap();
    std::fs::write(run.join("host-d.xplane.pb"), b"{\"not\": \"a profile\"}").unwrap();
    let r = ok(analyze_json(&h.app, &request).await);
    let failed: Vec<&str> = r["failed_hosts"].as_array().unwrap().iter().map(|f| f["host"].as_str().unwrap()).collect();
    assert_eq!(failed, ["host-c", "host-d"]);
    assert!(r["failed_hosts"][1]["error"].as_str().unwrap().contains("JSON"), "{}", r["failed_hosts"]);
    let notes = r["notes"].as_array().unwrap();
    assert!(notes.iter().any(|n| n.as_str().unwrap().contains("host `host-c` skipped")), "{notes:?}");
    // The readable hosts give exactly the answer they give alone.
    assert_eq!(r["overview"]["hosts"], 2);
    assert_eq!(r["ops"], good["ops"]);
    assert_eq!(r["files"], good["files"]);
    // No host readable: an error naming the count.
    for host in ["host-a", "host-b"] {
        std::fs::write(run.join(format!("{host}.xplane.pb")), b"").unwrap();
    }
    let e = err(analyze_json(&h.app, &request).await);
    assert!(e.to_string().contains("none of the run's 4 hosts"), "{e}");
}

#[tokio::test]
async fn a_goal_on_a_profile_metric_ranks_from_the_summary_rows() {
    let h = super::harness::app().await;
    let src = capture("jax_cpu_mlp_vm.xplane.pb");
    let base = format!(
        "name: base\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'mkdir -p $FALCON_ARTIFACT_DIR/plugins/profile/r \
         && cp {} $FALCON_ARTIFACT_DIR/plugins/profile/r/vm.xplane.pb']\nconfig: {{variant: 1}}\nresources: {{accelerator: cpu}}\n",
        src.display()
    );
    let goal = h
        .app
        .create_goal(&GoalCreateRequest {
            title: "faster steps".into(),
            metric: "profile_step_time_ms".into(),
            direction: None,
            target: None,
            baseline: None,
            priority: DEFAULT_PRIORITY,
            workload: None,
            hardware: None,
        })
        .await
        .unwrap();
    let sweep = SessionRequest {
        name: "sweep",
        sweep_text: "base: base.yaml\nsweep:\n  config.variant: [1, 2]\n",
        file_label: "sweep.yaml",
        goal: Some(goal.id),
        wait: true,
        timeout: None,
        repeats: None,
    };
    let load = |name: &str| if name == "base.yaml" { Ok(base.clone()) } else { Err(format!("{name}: no such file")) };
    h.app.submit_session(&sweep, load, |_| {}, |_| {}).await.unwrap();
    let cmp = as_printed(&h.app.compare_goal(goal.id).await.unwrap());
    let rows = cmp["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "both experiments ranked from their profile summaries: {cmp}");
    let xprof = analysis_data("jax_cpu_mlp_xprof_cli_get_overview.json");
    let mean: f64 = xprof["performance_summary"]["steptime_ms_average"].as_str().unwrap().parse().unwrap();
    assert!((rows[0]["value"].as_f64().unwrap() - mean).abs() < 0.05, "{}", rows[0]);
}
