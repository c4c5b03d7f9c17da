//! Accuracy alignment on real and synthetic inputs read by the readers: Megatron-LM golden values of the
//! same BERT model on DGX A100 (every 5th step) and DGX H100 (every step) align on their common steps and
//! pass at Megatron's rtol 0.05; tightening rtol reports where the curves diverge; MaxText console output
//! and a Megatron-LM log map their names and step numbering, and Megatron's interval-averaged loss is
//! compared with MaxText's per-step loss averaged over the same windows.

use std::path::{Path, PathBuf};

use falcon_analysis::accuracy::align::{align, AccuracyReport, AlignOptions, MetricAlignment, Verdict};
use falcon_analysis::accuracy::read::{read_path, ReadOptions};
use falcon_analysis::accuracy::RunSeries;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/accuracy").join(name)
}

fn read(path: &Path) -> RunSeries {
    read_path(path, &ReadOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn golden_pair() -> (RunSeries, RunSeries) {
    (read(&data("bert_mcore_tp1_pp2__dev_dgx_a100.json")), read(&data("bert_mcore_tp1_pp2__dev_dgx_h100.json")))
}

fn metric<'a>(r: &'a AccuracyReport, name: &str) -> &'a MetricAlignment {
    r.metrics.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("no metric {name}: {:?}", r.metrics))
}

fn with_rtol(rtol: f64) -> AlignOptions {
    AlignOptions { rtol: Some(rtol), ..Default::default() }
}

#[test]
fn golden_a100_and_h100_align_despite_different_strides_and_pass_at_rtol_005() {
    let (a, b) = golden_pair();
    let r = align(&a, &b, &AlignOptions::default()).unwrap();
    assert_eq!(r.verdict, Verdict::Pass, "{r:#?}");
    assert_eq!((r.a.step_offset, r.b.step_offset), (0, 0), "both Megatron: no shift");
    assert_eq!(r.metrics.len(), 1, "only the loss by default: {:?}", r.metrics);
    let m = metric(&r, "lm loss");
    assert_eq!((m.a_name.as_deref(), m.b_name.as_deref()), (Some("lm loss"), Some("lm loss")));
    assert_eq!((m.rtol, m.atol), (0.05, 0.0));
    // A every 5th step (1, 5, …, 50), B every step: the 11 steps of A.
    assert_eq!(m.steps_compared, 11);
    let steps: Vec<i64> = m.points.iter().map(|p| p.step).collect();
    assert_eq!(steps, vec![1, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50]);
    assert_eq!(m.verdict, Verdict::Pass);
    assert_eq!((m.failing_steps, m.first_divergence_step), (0, None));
    // Step 50: 10.49226 → … 9.6868 (A100) vs 9.49558 (H100).
    assert_eq!(m.max_rel_err_step, Some(50));
    let expected = (9.49558f64 - 9.6868).abs() / 9.6868;
    assert!((m.max_rel_err.unwrap() - expected).abs() < 1e-12, "{:?}", m.max_rel_err);
    assert!((m.max_abs_err.unwrap() - 0.19122).abs() < 1e-9);
    assert_eq!(m.points[0].a, 10.49226);
    assert_eq!(m.points[0].b, 10.51634);

    // The other series are on both sides but not compared unless asked.
    assert!(r.metrics.iter().all(|m| m.a_name.as_deref() != Some("iteration-time")));
    for other in ["step time (s)", "num zeros", "mem-allocated-bytes", "mem-max-allocated-bytes"] {
        assert!(r.not_compared.iter().any(|n| n == other), "{other} not in {:?}", r.not_compared);
    }
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["verdict"], "pass");
    for key in [
        "name",
        "a_name",
        "b_name",
        "steps_compared",
        "max_abs_err",
        "max_rel_err",
        "mean_rel_err",
        "rtol",
        "atol",
        "first_divergence_step",
        "verdict",
    ] {
        assert!(json["metrics"][0].get(key).is_some(), "metrics[0].{key} missing");
    }
}

#[test]
fn asked_for_series_are_compared_with_their_own_tolerances() {
    let (a, b) = golden_pair();
    let opts = AlignOptions { metrics: vec!["iteration-time".into(), "num-zeros".into()], ..Default::default() };
    let r = align(&a, &b, &opts).unwrap();
    assert_eq!(r.metrics.len(), 2);
    // H100's iteration-time starts at step 2: steps 5..50 in common; H100 is ~36 % faster per step.
    let t = metric(&r, "step time (s)");
    assert_eq!((t.a_name.as_deref(), t.steps_compared, t.rtol), (Some("iteration-time"), 10, 0.05));
    assert_eq!(t.verdict, Verdict::Fail);
    assert_eq!(t.first_divergence_step, Some(5));
    // num-zeros at Megatron's rtol 0.20: steps 10 (21 %) and 40 (66 %) fail, the last step passes.
    let z = metric(&r, "num zeros");
    assert_eq!(z.rtol, 0.20);
    assert_eq!(z.failing_steps, 2);
    assert_eq!(z.first_divergence_step, None);
    assert_eq!(z.max_rel_err_step, Some(40));
    assert_eq!(r.verdict, Verdict::Fail);
}

#[test]
fn tightening_rtol_until_the_loss_fails_reports_the_first_divergence() {
    let (a, b) = golden_pair();
    let max_rel = metric(&align(&a, &b, &AlignOptions::default()).unwrap(), "lm loss").max_rel_err.unwrap();
    // Just above the largest relative error: still a pass.
    let m = align(&a, &b, &with_rtol(max_rel * (1.0 + 1e-9))).unwrap().metrics.remove(0);
    assert_eq!(m.verdict, Verdict::Pass);
    // The largest rtol that fails (just below it): only step 50 fails, and the curves diverge there.
    let r = align(&a, &b, &with_rtol(max_rel * (1.0 - 1e-9))).unwrap();
    let m = metric(&r, "lm loss");
    assert_eq!(r.verdict, Verdict::Fail);
    assert_eq!((m.failing_steps, m.first_divergence_step), (1, Some(50)));
    // Tighter: steps 30 (0.62 %), 40, 45, 50 fail; 35 (0.41 %) passes, so the failing tail starts at 40.
    let m = align(&a, &b, &with_rtol(0.005)).unwrap().metrics.remove(0);
    assert_eq!((m.failing_steps, m.first_divergence_step), (4, Some(40)));
    // Scanning rtol downwards, the divergence only moves earlier.
    let mut last = i64::MAX;
    for rtol in [0.019, 0.01, 0.008, 0.005, 0.003, 0.002, 0.001, 0.0005] {
        let m = align(&a, &b, &with_rtol(rtol)).unwrap().metrics.remove(0);
        let step = m.first_divergence_step.expect("fails below the largest relative error");
        assert!(step <= last, "rtol {rtol}: divergence at {step} after {last}");
        last = step;
    }
    assert_eq!(last, 1, "at rtol 0.0005 every step fails");
}

/// MaxText console lines, steps 0..n, `lm_loss` = f(step) (3 decimals, as MaxText prints).
fn maxtext_console(n: i64, f: impl Fn(i64) -> f64) -> String {
    let mut s = String::new();
    for step in 0..n {
        let l = f(step);
        s.push_str(&format!(
            "completed step: {step}, seconds: 1.000, TFLOP/s/device: 100.000, Tokens/s/device: 1000.000, total_weights: 4096, loss: {:.3}, lm_loss: {l:.3}, perplexity: {:.3}\n",
            l + 0.5,
            l.exp()
        ));
    }
    s
}

/// Megatron-LM log lines at `iterations`, `lm loss` = `loss(iteration)`.
fn megatron_log(iterations: &[i64], loss: impl Fn(i64) -> f64) -> String {
    let mut s = String::new();
    for &it in iterations {
        s.push_str(&format!(
            " [2025-09-07 23:58:47] iteration {it:>8}/{:>8} | consumed samples: {:>12} | elapsed time per iteration (ms): 1000.0 | learning rate: 5.999998E-05 | global batch size:    32 | lm loss: {:.6E} | loss scale: 1.0 | grad norm: 1.095 | number of skipped iterations:   0 | number of nan iterations:   0 |\n",
            100,
            it * 32,
            loss(it)
        ));
    }
    s
}

#[test]
fn maxtext_console_and_megatron_log_map_names_steps_and_averaging_windows() {
    let dir = tempfile::tempdir().unwrap();
    let f = |step: i64| ((10.0 - 0.1 * step as f64) * 1000.0).round() / 1000.0;
    let maxtext = dir.path().join("maxtext.log");
    std::fs::write(&maxtext, maxtext_console(30, f)).unwrap();
    // Megatron iteration i is MaxText step i − 1; each line averages the iterations since the previous one.
    let since = |it: i64| match it {
        1 => 0,
        10 => 1,
        _ => it - 10,
    };
    let mean = |it: i64| ((since(it) + 1)..=it).map(|i| f(i - 1)).sum::<f64>() / (it - since(it)) as f64;
    let megatron = dir.path().join("megatron.log");
    std::fs::write(&megatron, megatron_log(&[1, 10, 20, 30], mean)).unwrap();

    let (a, b) = (read(&maxtext), read(&megatron));
    let r = align(&a, &b, &AlignOptions::default()).unwrap();
    assert_eq!((r.a.step_offset, r.b.step_offset), (1, 0));
    assert_eq!(r.metrics.len(), 1, "{:?}", r.metrics);
    let m = &r.metrics[0];
    assert_eq!(m.name, "lm loss");
    assert_eq!((m.a_name.as_deref(), m.b_name.as_deref()), (Some("learning/lm_loss"), Some("lm loss")));
    assert_eq!(m.steps_compared, 4);
    assert_eq!(m.averaged_over, Some(10));
    assert!((m.points[1].a - mean(10)).abs() < 1e-12, "A averaged over (1, 10]: {:?}", m.points[1]);
    assert!(m.max_rel_err.unwrap() < 1e-6, "{m:?}");
    assert_eq!(m.verdict, Verdict::Pass);
    assert!(r.notes.iter().any(|n| n.contains("shifted by +1")), "{:?}", r.notes);
    assert!(r.notes.iter().any(|n| n.contains("averaged over the same windows")), "{:?}", r.notes);

    // Step time: MaxText seconds vs Megatron milliseconds.
    let r =
        align(&a, &b, &AlignOptions { metrics: vec!["elapsed time per iteration (ms)".into()], ..Default::default() })
            .unwrap();
    let t = &r.metrics[0];
    assert_eq!((t.name.as_str(), t.a_name.as_deref()), ("step time (s)", Some("perf/step_time_seconds")));
    assert_eq!(t.max_abs_err, Some(0.0));
    assert_eq!(t.verdict, Verdict::Pass);

    // A diverging candidate: the loss drifts from iteration 20 on.
    std::fs::write(&megatron, megatron_log(&[1, 10, 20, 30], |it| if it >= 20 { mean(it) * 1.2 } else { mean(it) }))
        .unwrap();
    let r = align(&a, &read(&megatron), &AlignOptions::default()).unwrap();
    assert_eq!(r.verdict, Verdict::Fail);
    assert_eq!(r.metrics[0].first_divergence_step, Some(20));
}
