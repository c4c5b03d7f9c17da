//! `falcon profile …` as a user runs it: analyse files, run directories and experiments; bad input gets
//! a clear error and the exit code docs/DESIGN.md §6 gives it; an experiment with a profile gets its summary row.

use crate::common::{falcon, falcon_with, json};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

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

#[test]
fn analyze_a_tpu_file_gives_the_guaranteed_json_with_xprof_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let file = capture("tpu_v6e_inference.xplane.pb");
    let out = falcon(dir.path(), &["profile", "analyze", file.to_str().unwrap(), "--tool", "all", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let r = json(&out);
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
    let out = falcon(dir.path(), &["profile", "analyze", file.to_str().unwrap(), "--markdown"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("## Overview") && text.contains("TPU v6 Lite") && text.contains("copy-done"), "{text}");
}

#[test]
fn gpu_kernels_and_cpu_steps_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let gpu = capture("gpu_v100x8_tf.xplane.pb");
    let out =
        falcon(dir.path(), &["profile", "analyze", gpu.to_str().unwrap(), "--tool", "kernels,overview", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let r = json(&out);
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
    let out = falcon(dir.path(), &["profile", "analyze", "logdir", "--tool", "overview", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let r = json(&out);
    let xprof = analysis_data("jax_cpu_mlp_xprof_cli_get_overview.json");
    let mean: f64 = xprof["performance_summary"]["steptime_ms_average"].as_str().unwrap().parse().unwrap();
    assert!((r["overview"]["step_time_ms"]["mean"].as_f64().unwrap() - mean).abs() < 0.05, "{}", r["overview"]);
    assert_eq!(r["overview"]["device_type"], "CPU");
    assert!(!r["cpu_ops"]["ops"].as_array().unwrap().is_empty(), "XLA:CPU op profile");
    let out = falcon(dir.path(), &["profile", "analyze", "logdir", "--host", "nohost", "--json"]);
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn bad_inputs_fail_with_clear_errors_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(capture("tpu_v6e_inference.xplane.pb")).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty.xplane.pb", Vec::new()),
        ("truncated.xplane.pb", good[..good.len() / 3].to_vec()),
        ("random.xplane.pb", (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect()),
        (
            "tool_output.xplane.pb",
            std::fs::read(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../falcon-analysis/tests/data/tpu_v6e_inference_xprof_hlo_stats.json"),
            )
            .unwrap(),
        ),
    ];
    for (name, bytes) in &cases {
        std::fs::write(dir.path().join(name), bytes).unwrap();
        let out = falcon(dir.path(), &["profile", "analyze", name, "--json"]);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", String::from_utf8_lossy(&out.stdout));
        let err = json(&out);
        let message = err["error"]["message"].as_str().unwrap();
        assert!(message.contains(name), "{name}: the message names the file: {message}");
        let out = falcon(dir.path(), &["profile", "analyze", name]);
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("error:"), "{name}");
    }
    assert!(json(&falcon(dir.path(), &["profile", "analyze", "truncated.xplane.pb", "--json"]))["error"]["message"]
        .as_str()
        .unwrap()
        .contains("offset"));
    std::fs::create_dir(dir.path().join("nothing")).unwrap();
    for missing in ["nothing", "no-such-file.xplane.pb", "e-99"] {
        let out = falcon(dir.path(), &["profile", "analyze", missing, "--json"]);
        assert_eq!(out.status.code(), Some(3), "{missing}: {}", String::from_utf8_lossy(&out.stdout));
    }
}

#[test]
fn an_experiment_with_a_profile_gets_a_summary_row_and_exports_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(falcon(dir.path(), &["init"]).status.code(), Some(0));
    let src = capture("jax_cpu_mlp_vm.xplane.pb");
    let spec = format!(
        "name: profiled\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'mkdir -p $FALCON_ARTIFACT_DIR/plugins/profile/2026_01_01_00_00_00 \
         && cp {} $FALCON_ARTIFACT_DIR/plugins/profile/2026_01_01_00_00_00/vm.xplane.pb']\nresources: {{accelerator: cpu}}\n",
        src.display()
    );
    std::fs::write(dir.path().join("p.yaml"), spec).unwrap();
    let out = falcon(dir.path(), &["exp", "submit", "p.yaml", "--wait", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let shown = json(&out);
    let id = shown["id"].as_str().unwrap().to_string();
    let rows: Vec<&Value> = shown["analysis"].as_array().unwrap().iter().filter(|r| r["tool"] == "profile").collect();
    assert_eq!(rows.len(), 1, "exp submit --wait analysed the profile: {shown}");
    let xprof = analysis_data("jax_cpu_mlp_xprof_cli_get_overview.json");
    let mean: f64 = xprof["performance_summary"]["steptime_ms_average"].as_str().unwrap().parse().unwrap();
    assert_eq!(rows[0]["tool"], "profile");
    assert!((rows[0]["step_time_ms"].as_f64().unwrap() - mean).abs() < 0.05, "{}", rows[0]);

    // By experiment id: fetched into the cache, same numbers.
    let out = falcon(dir.path(), &["profile", "analyze", &id, "--tool", "steps", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(json(&out)["steps"]["steps"].as_array().unwrap().len() > 1);
    let fetched = json(&falcon(dir.path(), &["profile", "fetch", &id, "--json"]));
    let local = fetched["files"][0]["path"].as_str().unwrap();
    assert_eq!(std::fs::read(local).unwrap(), std::fs::read(&src).unwrap());

    let out = falcon(dir.path(), &["profile", "export-trace", &id, "-o", "trace.json.gz", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let written = json(&out);
    assert!(written["events"].as_u64().unwrap() > 100);
    let gz = std::fs::read(dir.path().join("trace.json.gz")).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gz[..]), &mut text).unwrap();
    let trace: Value = serde_json::from_str(&text).unwrap();
    assert!(trace["traceEvents"].as_array().unwrap().len() as u64 >= written["events"].as_u64().unwrap());
    let again = falcon(dir.path(), &["profile", "export-trace", &id, "-o", "trace.json.gz"]);
    assert_eq!(again.status.code(), Some(4), "an existing output is not replaced without --force");

    // An experiment without a profile: not found.
    std::fs::write(dir.path().join("q.yaml"), "name: plain\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [true]\nresources: {accelerator: cpu}\n").unwrap();
    let plain = json(&falcon(dir.path(), &["exp", "submit", "q.yaml", "--wait", "--json"]));
    let out = falcon(dir.path(), &["profile", "analyze", plain["id"].as_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn a_gs_uri_is_fetched_from_the_bucket_and_analysed() {
    let endpoint = std::env::var("FALCON_TEST_GCS_ENDPOINT").unwrap_or_else(|_| {
        panic!("the GCS emulator is needed: FALCON_TEST_GCS_ENDPOINT is not set (run scripts/test.sh, which starts it)")
    });
    let bucket = format!("falcon-profile-{}", std::process::id());
    let curl = |args: &[&str]| {
        let out = Command::new("curl").arg("-fsS").args(args).output().expect("curl");
        assert!(out.status.success(), "curl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
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
    let gcs_env = [("FALCON_GCS_ENDPOINT", endpoint.as_str()), ("FALCON_GCS_ANONYMOUS", "1")];
    let run = |args: &[&str]| falcon_with(dir.path(), args, &gcs_env);
    // The folder of the run: the newest run's hosts are found under it.
    let out = run(&["profile", "analyze", &format!("gs://{bucket}/team/run1"), "--tool", "overview", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let r = json(&out);
    assert_eq!(r["overview"]["device_type"], "TPU v6 Lite");
    assert_eq!(r["files"][0]["host"], "t1v-0");
    assert_eq!(std::fs::read(r["files"][0]["path"].as_str().unwrap()).unwrap(), std::fs::read(&file).unwrap());
    // Nothing there: not found.
    let out = run(&["profile", "analyze", &format!("gs://{bucket}/nothing-here"), "--json"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stdout));
    // One named object that is not there: its download's error is the answer.
    let out = run(&["profile", "analyze", &format!("gs://{bucket}/team/gone.xplane.pb"), "--json"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stdout));
    let err = json(&out);
    assert!(err["error"]["message"].as_str().unwrap().contains("gone.xplane.pb"), "{err}");

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
    let args = |input: &str| ["profile", "analyze", input, "--tool", "overview,hlo", "--json"].map(String::from);
    let remote = run(&args(&format!("gs://{bucket}/team/run2")).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(remote.status.code(), Some(0), "{}", String::from_utf8_lossy(&remote.stdout));
    let remote = json(&remote);
    let failed: Vec<&str> =
        remote["failed_hosts"].as_array().unwrap().iter().map(|f| f["host"].as_str().unwrap()).collect();
    assert_eq!(failed, ["w-2"]);
    assert_eq!(remote["overview"]["hosts"], 2);
    let local = json(&run(&args("local").iter().map(String::as_str).collect::<Vec<_>>()));
    assert_eq!(remote["overview"], local["overview"]);
    assert_eq!(remote["ops"], local["ops"]);

    // Fanned out to two jobs (the local backend), each downloading only its hosts: the same report, byte for byte.
    assert_eq!(run(&["init"]).status.code(), Some(0));
    let uri = format!("gs://{bucket}/team/run2");
    let one = run(&["--json", "profile", "analyze", &uri]);
    let two = run(&["--json", "profile", "analyze", &uri, "--fan-out", "2"]);
    assert_eq!((one.status.code(), two.status.code()), (Some(0), Some(0)), "{}", String::from_utf8_lossy(&two.stdout));
    assert!(String::from_utf8_lossy(&two.stderr).contains("3 hosts in 2 jobs"));
    assert!(one.stdout == two.stdout, "the merged report of gs:// differs from the single-process one");
}

#[test]
fn hosts_of_a_run_are_combined_or_picked() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("logdir/plugins/profile/2026_01_01_00_00_00");
    std::fs::create_dir_all(&run).unwrap();
    for host in ["host-a", "host-b"] {
        std::fs::copy(capture("tpu_v6e_inference.xplane.pb"), run.join(format!("{host}.xplane.pb"))).unwrap();
    }
    let one = json(&falcon(
        dir.path(),
        &["profile", "analyze", "logdir", "--host", "host-b", "--tool", "overview,hlo", "--json"],
    ));
    let both = json(&falcon(dir.path(), &["profile", "analyze", "logdir", "--tool", "overview,hlo", "--json"]));
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

#[test]
fn a_host_that_cannot_be_read_is_named_and_the_others_are_analysed() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("logdir/plugins/profile/2026_01_01_00_00_00");
    std::fs::create_dir_all(&run).unwrap();
    let bytes = std::fs::read(capture("tpu_v6e_inference.xplane.pb")).unwrap();
    for host in ["host-a", "host-b"] {
        std::fs::write(run.join(format!("{host}.xplane.pb")), &bytes).unwrap();
    }
    let args = ["profile", "analyze", "logdir", "--tool", "overview,hlo", "--json"];
    let good = json(&falcon(dir.path(), &args));
    assert!(good.get("failed_hosts").is_none(), "absent when every host was read");
    // A host cut off mid-write (a job killed while its profiler flushed) and one that is not a profile at all.
    std::fs::write(run.join("host-c.xplane.pb"), &bytes[..bytes.len() / 3]).unwrap();
    std::fs::write(run.join("host-d.xplane.pb"), b"{\"not\": \"a profile\"}").unwrap();
    let out = falcon(dir.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let r = json(&out);
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
    let out = falcon(dir.path(), &args);
    assert_ne!(out.status.code(), Some(0));
    let err = json(&out);
    assert!(err["error"]["message"].as_str().unwrap().contains("none of the run's 4 hosts"), "{err}");
}

#[test]
fn a_goal_on_a_profile_metric_ranks_from_the_summary_rows() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(falcon(dir.path(), &["init"]).status.code(), Some(0));
    let src = capture("jax_cpu_mlp_vm.xplane.pb");
    std::fs::write(
        dir.path().join("base.yaml"),
        format!(
            "name: base\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'mkdir -p $FALCON_ARTIFACT_DIR/plugins/profile/r \
             && cp {} $FALCON_ARTIFACT_DIR/plugins/profile/r/vm.xplane.pb']\nconfig: {{variant: 1}}\nresources: {{accelerator: cpu}}\n",
            src.display()
        ),
    )
    .unwrap();
    std::fs::write(dir.path().join("sweep.yaml"), "base: base.yaml\nsweep:\n  config.variant: [1, 2]\n").unwrap();
    let goal = json(&falcon(
        dir.path(),
        &["goal", "create", "--title", "faster steps", "--metric", "profile_step_time_ms", "--json"],
    ));
    let gid = goal["id"].as_str().unwrap().to_string();
    let out = falcon(dir.path(), &["session", "submit", "sweep.yaml", "--goal", &gid, "--wait", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let cmp = json(&falcon(dir.path(), &["goal", "compare", &gid, "--json"]));
    let rows = cmp["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "both experiments ranked from their profile summaries: {cmp}");
    let xprof = analysis_data("jax_cpu_mlp_xprof_cli_get_overview.json");
    let mean: f64 = xprof["performance_summary"]["steptime_ms_average"].as_str().unwrap().parse().unwrap();
    assert!((rows[0]["value"].as_f64().unwrap() - mean).abs() < 0.05, "{}", rows[0]);
}
