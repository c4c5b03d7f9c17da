//! The first answers on the quickstart's XLA:CPU capture (the example JAX workload at batch 16), in process, as a
//! user gets them: `profile analyze` and `profile trace` speak one bound-by vocabulary and do not contradict each
//! other, unknown numbers are `null` with a note (never 0), the CPU count comes from the capture, every tool prints
//! its rows or one line saying why it has none, and the summary rows store the same words and the same duty cycle.

use super::profile::{analyze_json, analyze_request, analyze_text, err, input, ok, run_experiment, show_experiment};
use super::trace::{trace_json, trace_request, trace_text};
use falcon_app::requests::ProfileAnalyzeRequest;
use falcon_core::ErrorKind;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn batch16() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../falcon-analysis/tests/data/compare/batch16/plugins/profile/run1/vm.xplane.pb")
}

/// The words of `falcon_core::bound`: a bound is one of these or `null`.
const BOUNDS: [&str; 4] = ["compute", "memory", "host", "partly_host"];

fn is_bound_or_null(v: &Value) -> bool {
    v.is_null() || v.as_str().is_some_and(|s| BOUNDS.contains(&s))
}

fn notes(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn analyze_and_trace_agree_in_one_vocabulary_with_nulls_for_the_unknown() {
    let harness = super::harness::app().await;
    let file = batch16();
    let file = input(&file);
    let a = ok(analyze_json(&harness.app, &analyze_request(file, &["all"])).await);
    let t = ok(trace_json(&harness.app, &trace_request(file)).await);
    let o = &a["overview"];
    let h = &t["host_bound"];

    // One vocabulary: the overview's and the trace's bound-by are the same enum's words (or null).
    assert!(is_bound_or_null(&o["bound_by"]), "{}", o["bound_by"]);
    assert!(is_bound_or_null(&h["bound_by"]), "{}", h["bound_by"]);
    let verdict = h["verdict"].as_str().unwrap();
    assert!(["host", "partly_host", "not_host"].contains(&verdict), "{verdict}");
    if verdict != "not_host" {
        assert_eq!(h["bound_by"], verdict, "a host verdict is spelled as its bound");
    } else {
        assert!(h["bound_by"].is_null());
    }

    // No contradiction: the verdict is the breakdown's host wait over its step time.
    let total = &t["total"];
    let f = |k: &str| total[k].as_f64().unwrap_or_else(|| panic!("total.{k}: {total}"));
    let fraction = h["fraction"].as_f64().unwrap();
    assert!((fraction - f("host_wait_us") / f("duration_us")).abs() < 1e-9, "{fraction} vs {total}");
    assert!((h["host_wait_us"].as_f64().unwrap() - f("host_wait_us")).abs() < 1e-6);
    if f("host_wait_us") == 0.0 {
        assert!(!["host", "partly_host"].contains(&verdict));
    }
    // On this capture the host waits in `block_until_ready` during the device's gaps: not host-bound, and the
    // overview (no measured CPU peak in this store: no roof to place the costed ops against) leaves bound-by
    // unknown with its reason.
    assert_eq!(verdict, "not_host");
    assert!(fraction < 0.05, "{fraction}");
    assert!(o["bound_by"].is_null());
    let on = notes(&o["notes"]);
    assert!(on.iter().any(|n| n.starts_with("bound-by unknown")), "{on:?}");
    let waits: Vec<&Value> = t["gaps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["host_activity"].as_array().unwrap())
        .filter(|x| x["name"].as_str().unwrap().contains("block_until_ready"))
        .collect();
    assert!(!waits.is_empty());
    assert!(waits.iter().all(|x| x["waiting"] == true && x["activity"] == "wait"));

    // Unknown is null with a note, never 0: what needs a peak. What the capture's HLO gives is known.
    for k in ["flops_utilization", "hbm_bw_utilization", "mfu", "roofline_efficiency"] {
        assert!(o[k].is_null(), "overview.{k} = {}", o[k]);
    }
    assert!(on.iter().any(|n| n.contains("falcon doctor --calibrate")), "{on:?}");
    assert!(o["operational_intensity"].as_f64().is_some_and(|oi| oi > 0.0), "{o}");
    // The workload logs 859,293,184 FLOPs a step (XLA's cost_analysis()); the capture's HLO says the same.
    let flops = o["capture_model_flops"].as_f64().unwrap();
    assert!((flops / 859_293_184.0 - 1.0).abs() < 1e-4, "{flops}");

    // One duty cycle: the overview's is the trace breakdown's busy share.
    let busy = (f("compute_us") + f("collective_us") + f("memcpy_us") + f("other_us")) / f("duration_us");
    let duty = o["device_duty_cycle_percent"].as_f64().expect("duty cycle known on CPU");
    assert!((duty - 100.0 * busy).abs() < 1e-6, "{duty} vs {}", 100.0 * busy);
    assert!(duty > 80.0 && duty < 100.0);
    assert!((o["device_idle_percent"].as_f64().unwrap() - (100.0 - duty)).abs() < 1e-6);

    // The CPU count comes from the capture: two intra-op pool threads; the header says so.
    let cores = o["device_cores"].as_u64().unwrap();
    assert_eq!(cores, 2);
    assert_eq!(a["device"]["device_cores"], cores);
    assert_eq!(a["device"]["cpu_threads"]["intra_op_threads"], cores);
    assert_eq!(a["device"]["cpu_threads"]["threads"], 4);
    let text = analyze_text(&harness.app, &analyze_request(file, &["overview"]), 15, false).await.unwrap();
    let header = text.lines().next().unwrap();
    assert!(header.contains("2 × CPU") && !header.contains("0 ×"), "{header}");

    // Steps: the JSON has them, and so do the rows that say where step time goes.
    assert_eq!(a["steps"]["steps"].as_array().unwrap().len(), 8);
    assert_eq!(t["steps"].as_array().unwrap().len(), 8);
    // The XLA:CPU rows sit in the documented `cpu_ops`; `ops[]` holds the costed ops of the steps.
    let costed = a["ops"].as_array().unwrap();
    assert!(costed.len() > 100 && costed.iter().all(|o| o["category"] != ""), "{}", costed.len());
    assert!(costed.iter().any(|o| o["flops"].as_u64().is_some_and(|f| f > 0)));
    assert!(a["cpu_ops"]["ops"].as_array().unwrap().len() > 100);
    // No peak: the roofline places the ops by intensity alone, and says it has no roof.
    assert!(notes(&a["roofline"]["notes"]).iter().any(|n| n.contains("no peak FLOP rate")), "{}", a["roofline"]);
    assert!(!notes(&a["memory"]["notes"]).is_empty());
}

/// Non-empty lines of a tool's text output after the header line.
fn body(text: &str) -> Vec<&str> {
    text.lines().skip(1).filter(|l| !l.trim().is_empty()).collect()
}

#[tokio::test]
async fn each_tool_prints_rows_or_one_line_saying_why() {
    let h = super::harness::app().await;
    let file = batch16();
    let file = input(&file);
    for (tool, why) in [("memory", "no allocator events")] {
        let text = analyze_text(&h.app, &analyze_request(file, &[tool]), 15, false).await.unwrap();
        let lines = body(&text);
        assert_eq!(lines.len(), 1, "tool {tool}: one reason line:\n{text}");
        assert!(lines[0].starts_with(&format!("{tool}: ")) && lines[0].contains(why), "tool {tool}: {}", lines[0]);
    }
    // Steps: the eight steps as rows, then the step-time line.
    let text = analyze_text(&h.app, &analyze_request(file, &["steps"]), 15, false).await.unwrap();
    let lines = body(&text);
    assert!(lines[0].starts_with("Steps (8 of 8"), "{text}");
    let rows: Vec<&&str> = lines.iter().filter(|l| l.starts_with("│ ") && !l.contains("step ┆")).collect();
    assert_eq!(rows.len(), 8, "{text}");
    assert!(lines.last().unwrap().starts_with("step time 35."), "{text}");
    // Ops: the XLA:CPU op rows.
    let text = analyze_text(&h.app, &analyze_request(file, &["ops"]), 3, false).await.unwrap();
    assert!(text.contains("XLA:CPU ops by total time (3 of "), "{text}");
    // The overview only: no op table, no other tool's line.
    let text = analyze_text(&h.app, &analyze_request(file, &["overview"]), 15, false).await.unwrap();
    assert!(text.contains("\nOverview\n"), "{text}");
    for other in ["XLA:CPU ops", "Steps (", "hlo:", "memory:", "roofline:", "kernels:"] {
        assert!(!text.contains(other), "tool overview printed `{other}`:\n{text}");
    }
    assert!(text.contains("unknown (see notes)") && !text.contains("0.00%") && !text.contains("┆ 0 %"), "{text}");
    let j = ok(analyze_json(&h.app, &analyze_request(file, &["overview"])).await);
    let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
    assert!(!keys.contains(&"steps") && !keys.contains(&"roofline") && keys.contains(&"overview"), "{keys:?}");
    assert_eq!(j["tools"], serde_json::json!(["overview"]));
    // The trace's verdict line uses the same words.
    let text = trace_text(&h.app, &trace_request(file), false).await.unwrap();
    let verdict = text.lines().find(|l| l.starts_with("host-bound:")).expect("verdict line");
    assert!(verdict.contains("not host-bound (verdict not_host)"), "{verdict}");
    assert!(!text.contains("partly_host_bound") && !text.contains("partly host"), "{text}");
}

#[tokio::test]
async fn summary_rows_store_the_same_words_and_duty_cycle() {
    let h = super::harness::app().await;
    let spec = b16_spec();
    let shown = run_experiment(&h.app, &spec).await;
    let id = shown["id"].as_str().unwrap().to_string();
    // The trace row is written by the trace analysis of the experiment (and by the worker loop).
    ok(trace_json(&h.app, &trace_request(&id)).await);
    let (shown, _) = show_experiment(&h.app, &id).await;
    let rows = shown["analysis"].as_array().unwrap();
    let row = |tool: &str| {
        rows.iter().find(|r| r["tool"] == tool).unwrap_or_else(|| panic!("no {tool} row: {shown}")).clone()
    };
    let (profile, trace) = (row("profile"), row("trace"));
    for r in [&profile, &trace] {
        assert!(is_bound_or_null(&r["bound_by"]), "{r}");
    }
    // Not host-bound and no roofline: both rows leave bound-by unknown rather than inventing a word.
    assert!(profile["bound_by"].is_null() && trace["bound_by"].is_null(), "{profile} {trace}");
    let (pd, td) = (profile["duty_cycle"].as_f64().unwrap(), trace["duty_cycle"].as_f64().unwrap());
    assert!((pd - td).abs() < 1e-9, "profile row duty {pd} vs trace row {td}");
    let a = ok(analyze_json(&h.app, &analyze_request(&id, &["overview"])).await);
    assert!((a["overview"]["device_duty_cycle_percent"].as_f64().unwrap() / 100.0 - pd).abs() < 1e-9);
}

/// A spec whose job leaves the batch-16 capture as its profile.
fn b16_spec() -> String {
    format!(
        "name: b16\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'mkdir -p $FALCON_ARTIFACT_DIR/plugins/profile/run1 \
         && cp {} $FALCON_ARTIFACT_DIR/plugins/profile/run1/vm.xplane.pb']\nresources: {{accelerator: cpu}}\n",
        batch16().display()
    )
}

/// A profile report kept before the machine was calibrated is not served after: `falcon doctor --calibrate` gives
/// kept reports a new name, and the next read is costed against the measured peak of the experiment's pool.
#[tokio::test]
async fn a_calibration_after_a_kept_report_is_read_by_the_next_analysis() {
    let h = super::harness::app().await;
    let spec = b16_spec();
    let id = run_experiment(&h.app, &spec).await["id"].as_str().unwrap().to_string();
    let before = ok(analyze_json(&h.app, &analyze_request(&id, &["overview"])).await);
    assert_eq!(before["overview"]["peak_source"], "none");
    assert!(before["overview"]["mfu"].is_null());
    let again = ok(analyze_json(&h.app, &analyze_request(&id, &["overview"])).await);
    assert_eq!(again, before, "kept");
    let c = h.app.calibrate(&[]).await.unwrap();
    assert_eq!(c.kept[0].pool, "local");
    let after = ok(analyze_json(&h.app, &analyze_request(&id, &["overview"])).await);
    let o = &after["overview"];
    assert_eq!(o["peak_source"], "measured", "{o}");
    assert_eq!(o["mfu_peak_teraflops_per_second"].as_f64(), Some(c.matmul_tflops));
    assert!(o["mfu"].as_f64().is_some_and(|m| m > 0.0) && !o["bound_by"].is_null(), "{o}");
}

/// Where the op time goes, and MFU from the workload's FLOPs with a given peak (the capture's metrics.jsonl
/// logs `model_flops` = 859,293,184 per step; an experiment's logged value is used without the flag).
#[tokio::test]
async fn the_op_profile_says_where_the_time_goes_and_mfu_needs_flops_and_a_peak() {
    let h = super::harness::app().await;
    let file = batch16();
    let file = input(&file);
    let r = ok(analyze_json(&h.app, &analyze_request(file, &["ops", "overview"])).await);
    let b = &r["time_breakdown"];
    for key in ["by_category", "by_scope", "by_source"] {
        let rows = b[key].as_array().unwrap();
        let sum: f64 = rows.iter().map(|row| row["share"].as_f64().unwrap()).sum();
        assert!((sum - 1.0).abs() < 1e-9, "{key} shares sum to {sum}");
    }
    let (op, wall) = (b["op_time_us"].as_f64().unwrap(), b["wall_time_us"].as_f64().unwrap());
    assert!(op > 0.0 && wall > 0.0 && (b["parallelism"].as_f64().unwrap() - op / wall).abs() < 1e-9, "{b}");
    assert!(r["overview"]["mfu"].is_null());
    assert!(notes(&r["overview"]["notes"]).iter().any(|n| n.contains("--peak-tflops")), "{}", r["overview"]);
    let text = analyze_text(&h.app, &analyze_request(file, &["ops"]), 15, false).await.unwrap();
    assert!(text.contains("Where the time goes") && text.contains("share of op time"), "{text}");

    let with = ProfileAnalyzeRequest {
        model_flops: Some(859293184.0),
        peak_tflops: Some(0.1),
        ..analyze_request(file, &["overview"])
    };
    let with = ok(analyze_json(&h.app, &with).await);
    let o = &with["overview"];
    let step_s = o["step_time_ms"]["mean"].as_f64().unwrap() / 1e3;
    let expected = 859_293_184.0 / (step_s * 0.1e12);
    assert!((o["mfu"].as_f64().unwrap() - expected).abs() < 1e-12, "{o}");
    assert_eq!(o["mfu_flops_source"], "caller model flops");
    // The given peak is the whole machine's: 0.05 TFLOP/s a core on its two.
    assert_eq!((o["mfu_peak_teraflops_per_second"].as_f64(), o["peak_source"].as_str()), (Some(0.1), Some("given")));
    assert_eq!(o["peak_teraflops_per_second"], 0.05);
    let bad = ProfileAnalyzeRequest { peak_tflops: Some(-1.0), ..analyze_request(file, &["all"]) };
    assert_eq!(err(analyze_json(&h.app, &bad).await).kind(), ErrorKind::Usage);
}
