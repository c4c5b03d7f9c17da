//! The accuracy readers on real inputs, field by field:
//! - MaxText console lines from MaxText's documentation (a 4-device TPU v5p run, `console_v5p8.log`);
//! - Megatron-LM log lines from two deployments (`log_lines.txt`: with a timestamp; with a launcher
//!   prefix `[default0]:` and `throughput per GPU`);
//! - Megatron-LM golden values of BERT on DGX A100 (every 5th step) and DGX H100 (every step);
//! - a MaxText metrics JSONL (`maxtext_metrics.jsonl`): there is no published sample, so this one mirrors
//!   the documented format (analysis-formats §1.2: MaxText's `metric_logger.py` writes
//!   `json.dumps({key: float, …, "step": float(step), "run_name": …})` per step, eval summaries to the
//!   same file at the train step), with values in line with the console fixture;
//! - generic JSONL/CSV, and `read_path`'s choice of reader.
//!
//! And bad inputs: errors naming the file, the line and the field; arbitrary text never panics.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use falcon_analysis::accuracy::read::{read_path, ReadOptions};
use falcon_analysis::accuracy::{generic, maxtext, megatron, RunSeries, SourceFormat};
use falcon_analysis::error::AnalysisError;
use proptest::prelude::*;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/accuracy").join(name)
}

fn text(name: &str) -> String {
    std::fs::read_to_string(data(name)).expect("read fixture")
}

fn names(run: &RunSeries) -> BTreeSet<&str> {
    run.series.iter().map(|s| s.name.as_str()).collect()
}

/// The value of `metric` at `step`.
fn at(run: &RunSeries, metric: &str, step: i64) -> f64 {
    let s = run.get(metric).unwrap_or_else(|| panic!("no series {metric:?} in {:?}", names(run)));
    s.points.iter().find(|p| p.0 == step).unwrap_or_else(|| panic!("{metric:?} has no step {step}")).1
}

fn steps(run: &RunSeries, metric: &str) -> Vec<i64> {
    run.get(metric).unwrap().points.iter().map(|p| p.0).collect()
}

fn invalid(r: Result<RunSeries, AnalysisError>) -> String {
    match r {
        Err(AnalysisError::Invalid(m)) => m,
        Err(other) => panic!("expected Invalid, got {other:?}"),
        Ok(run) => panic!("expected an error, got {} series", run.series.len()),
    }
}

// ---------------------------------------------------------------- MaxText console

#[test]
fn maxtext_console_every_field_of_real_lines() {
    let run = maxtext::parse_console(&text("console_v5p8.log"), "console_v5p8.log").unwrap();
    assert_eq!(run.format, SourceFormat::MaxtextConsole);
    assert_eq!(run.path, "console_v5p8.log");
    assert_eq!(
        names(&run),
        BTreeSet::from([
            "learning/loss",
            "learning/total_weights",
            "perf/per_device_tflops_per_sec",
            "perf/per_device_tokens_per_sec",
            "perf/step_time_seconds",
        ])
    );
    for s in &run.series {
        assert_eq!(s.points.iter().map(|p| p.0).collect::<Vec<_>>(), (0..10).collect::<Vec<_>>(), "{}", s.name);
        assert_eq!(s.averaged_over, None);
    }
    assert!(run.notes.is_empty(), "{:?}", run.notes);
    // completed step: 0, seconds: 44.923, TFLOP/s/device: 17.022, Tokens/s/device: 1094.129, total_weights: 196608, loss: 12.038
    assert_eq!(at(&run, "perf/step_time_seconds", 0), 44.923);
    assert_eq!(at(&run, "perf/per_device_tflops_per_sec", 0), 17.022);
    assert_eq!(at(&run, "perf/per_device_tokens_per_sec", 0), 1094.129);
    assert_eq!(at(&run, "learning/total_weights", 0), 196608.0);
    assert_eq!(at(&run, "learning/loss", 0), 12.038);
    // completed step: 1, seconds: 0.319, TFLOP/s/device: 2400.734, Tokens/s/device: 154316.608, total_weights: 196608, loss: 12.038
    assert_eq!(at(&run, "perf/step_time_seconds", 1), 0.319);
    assert_eq!(at(&run, "perf/per_device_tflops_per_sec", 1), 2400.734);
    assert_eq!(at(&run, "perf/per_device_tokens_per_sec", 1), 154316.608);
    assert_eq!(at(&run, "learning/total_weights", 1), 196608.0);
    assert_eq!(at(&run, "learning/loss", 1), 12.038);
    // completed step: 4, seconds: 5.669, TFLOP/s/device: 134.884, Tokens/s/device: 8670.207, total_weights: 196608, loss: 11.110
    assert_eq!(at(&run, "perf/step_time_seconds", 4), 5.669);
    assert_eq!(at(&run, "perf/per_device_tflops_per_sec", 4), 134.884);
    assert_eq!(at(&run, "perf/per_device_tokens_per_sec", 4), 8670.207);
    assert_eq!(at(&run, "learning/loss", 4), 11.110);
    // completed step: 9, seconds: 5.667, TFLOP/s/device: 134.924, Tokens/s/device: 8672.758, total_weights: 196608, loss: 10.374
    assert_eq!(at(&run, "perf/step_time_seconds", 9), 5.667);
    assert_eq!(at(&run, "perf/per_device_tflops_per_sec", 9), 134.924);
    assert_eq!(at(&run, "perf/per_device_tokens_per_sec", 9), 8672.758);
    assert_eq!(at(&run, "learning/total_weights", 9), 196608.0);
    assert_eq!(at(&run, "learning/loss", 9), 10.374);
}

#[test]
fn maxtext_console_variants_absl_rampup_old_format_and_eval() {
    let log = "\
I0822 10:15:02.123456 139872 max_utils.py:512] System Information: Jax Version: 0.4.38
I0822 10:15:09.000001 139872 metric_logger.py:230] [Rampup Batch Size Phase], completed step: 0, seconds: 40.125, total_weights: 98304, loss: 12.041, lm_loss: 12.041, perplexity: 169482.125
I0822 10:15:14.000001 139872 metric_logger.py:230] completed step: 1, seconds: 5.125, TFLOP/s/device: 140.250, Tokens/s/device: 9000.500, total_weights: 196608, loss: 11.500, lm_loss: 11.450, perplexity: 94169.204, moe_lb_loss: 0.025, main_model_loss: 11.400, mtp_loss: 0.100
completed profiler activation/deactivation step: 2
completed step: 3, seconds: 5.500, TFLOP/s: 130.000, loss: 11.000
Completed eval step: 0, seconds: 0.500, running loss=11.200, running perplexity=73130.442, running total_weights=1024
Completed eval after train step 3, loss=11.123, perplexity=67735.312, total_weights=2048, avg_z_loss=0.000, avg_moe_lb_loss=0.020
";
    let run = maxtext::parse_console(log, "run.log").unwrap();
    assert_eq!(steps(&run, "perf/step_time_seconds"), vec![0, 1, 3]);
    assert_eq!(at(&run, "perf/step_time_seconds", 0), 40.125);
    assert_eq!(at(&run, "learning/total_weights", 0), 98304.0);
    assert_eq!(at(&run, "learning/perplexity", 0), 169482.125);
    assert_eq!(steps(&run, "perf/per_device_tflops_per_sec"), vec![1, 3], "rampup lines have no TFLOP/s");
    assert_eq!(at(&run, "perf/per_device_tflops_per_sec", 3), 130.0, "old `TFLOP/s` is per device");
    assert_eq!(at(&run, "perf/per_device_tokens_per_sec", 1), 9000.5);
    assert_eq!(at(&run, "learning/lm_loss", 1), 11.45);
    assert_eq!(at(&run, "learning/moe_lb_loss", 1), 0.025);
    assert_eq!(at(&run, "learning/main_model_loss", 1), 11.4);
    assert_eq!(at(&run, "learning/mtp_loss", 1), 0.1);
    assert_eq!(steps(&run, "learning/loss"), vec![0, 1, 3]);
    assert_eq!(steps(&run, "learning/lm_loss"), vec![0, 1], "old lines have fewer fields");
    // The eval summary is at the train step, under the JSONL's eval keys; the running eval is skipped.
    assert_eq!(steps(&run, "eval/avg_loss"), vec![3]);
    assert_eq!(at(&run, "eval/avg_loss", 3), 11.123);
    assert_eq!(at(&run, "eval/avg_perplexity", 3), 67735.312);
    assert_eq!(at(&run, "eval/total_weights", 3), 2048.0);
    assert_eq!(at(&run, "eval/avg_z_loss", 3), 0.0);
    assert_eq!(at(&run, "eval/avg_moe_lb_loss", 3), 0.02);
    let notes = run.notes.join("\n");
    assert!(notes.contains("1 running-eval lines skipped"), "{notes}");
    assert!(notes.contains("1 profiler activation/deactivation"), "{notes}");
    assert!(notes.contains("1 other lines skipped"), "{notes}");
}

#[test]
fn maxtext_console_nan_loss_is_a_value() {
    let run = maxtext::parse_console("completed step: 7, seconds: 1.000, loss: nan, lm_loss: inf\n", "x.log").unwrap();
    assert!(at(&run, "learning/loss", 7).is_nan());
    assert_eq!(at(&run, "learning/lm_loss", 7), f64::INFINITY);
    assert!(run.notes.iter().any(|n| n.contains("NaN or infinite")), "{:?}", run.notes);
}

// ---------------------------------------------------------------- MaxText JSONL

#[test]
fn maxtext_jsonl_documented_format() {
    let run = maxtext::parse_jsonl(&text("maxtext_metrics.jsonl"), "maxtext_metrics.jsonl").unwrap();
    assert_eq!(run.format, SourceFormat::MaxtextJsonl);
    let n = names(&run);
    assert!(!n.contains("step") && !n.contains("run_name"), "{n:?}");
    assert!(run.notes.is_empty(), "{:?}", run.notes);
    for key in [
        "learning/loss",
        "learning/lm_loss",
        "learning/perplexity",
        "learning/raw_grad_norm",
        "learning/grad_norm",
        "learning/total_weights",
        "learning/current_learning_rate",
        "perf/step_time_seconds",
        "perf/per_device_tflops",
        "perf/per_device_tflops_per_sec",
    ] {
        assert_eq!(steps(&run, key), vec![0, 1, 2, 3, 4], "{key}");
        assert_eq!(run.get(key).unwrap().averaged_over, None);
    }
    assert_eq!(at(&run, "learning/loss", 0), 12.038);
    assert_eq!(at(&run, "learning/lm_loss", 2), 11.6886);
    assert_eq!(at(&run, "perf/step_time_seconds", 0), 44.923);
    assert_eq!(at(&run, "perf/per_device_tflops_per_sec", 4), 134.892);
    assert_eq!(at(&run, "learning/current_learning_rate", 0), 6e-06);
    assert_eq!(at(&run, "learning/param_norm", 1), 1650.28125);
    // The eval summary record of the same file, at train step 3.
    assert_eq!(steps(&run, "eval/avg_loss"), vec![3]);
    assert_eq!(at(&run, "eval/avg_loss", 3), 11.1233);
    assert_eq!(at(&run, "eval/total_weights", 3), 2048.0);
}

#[test]
fn maxtext_jsonl_restart_running_eval_nan_and_cut_off_tail() {
    let jsonl = "\
{\"learning/loss\": 9.0, \"step\": 0.0, \"run_name\": \"old\"}
{\"learning/loss\": 8.0, \"step\": 1.0, \"run_name\": \"old\"}
{\"learning/loss\": 7.0, \"step\": 2.0, \"run_name\": \"old\"}
{\"learning/loss\": 12.0, \"perf/step_time_seconds\": 30.5, \"step\": 0.0, \"run_name\": \"new\"}
{\"eval/avg_loss\": 11.9, \"eval/avg_perplexity\": 147266.6, \"eval/total_weights\": 512.0, \"eval/avg_mtp_loss\": 0.0, \"eval/avg_mtp_acceptance_rate_percent\": 0.0, \"eval/step_time_seconds\": 0.25, \"step\": 1.0, \"run_name\": \"new\"}
{\"learning/loss\": NaN, \"perf/step_time_seconds\": 2.5, \"step\": 1.0, \"run_name\": \"new\"}
{\"learning/loss\": 11.0, \"step\": 2.0, \"run_na";
    let run = maxtext::parse_jsonl(jsonl, "metrics.jsonl").unwrap();
    let loss = &run.get("learning/loss").unwrap().points;
    assert_eq!(loss.len(), 2, "the first run is dropped, the cut-off record skipped: {loss:?}");
    assert_eq!(loss[0], (0, 12.0));
    assert!(loss[1].0 == 1 && loss[1].1.is_nan());
    assert!(run.get("eval/avg_loss").is_none(), "running eval is at an eval step");
    let notes = run.notes.join("\n");
    assert!(notes.contains("line 4: step 0 again") && notes.contains("3 records before it"), "{notes}");
    assert!(notes.contains("1 running-eval records skipped"), "{notes}");
    assert!(notes.contains("line 7: cut off"), "{notes}");
    assert!(notes.contains("\"learning/loss\": 1 values are NaN"), "{notes}");
}

// ---------------------------------------------------------------- Megatron log

#[test]
fn megatron_log_every_field_of_real_lines() {
    let run = megatron::parse_log(&text("log_lines.txt"), "log_lines.txt").unwrap();
    assert_eq!(run.format, SourceFormat::MegatronLog);
    assert_eq!(
        names(&run),
        BTreeSet::from([
            "consumed samples",
            "elapsed time per iteration (ms)",
            "global batch size",
            "grad norm",
            "learning rate",
            "lm loss",
            "loss scale",
            "num zeros",
            "number of nan iterations",
            "number of skipped iterations",
            "params norm",
            "throughput per GPU (TFLOP/s/GPU)",
        ])
    );
    // [2025-09-07 23:58:47] iteration      609/  500000 | consumed samples:        19488 | elapsed time per
    // iteration (ms): 438.3 | learning rate: 5.999998E-05 | global batch size:    32 | lm loss: 6.159759E+00 |
    // loss scale: 131072.0 | grad norm: 1.095 | number of skipped iterations:   0 | number of nan iterations:   0 |
    assert_eq!(at(&run, "consumed samples", 609), 19488.0);
    assert_eq!(at(&run, "elapsed time per iteration (ms)", 609), 438.3);
    assert_eq!(at(&run, "learning rate", 609), 5.999998E-05);
    assert_eq!(at(&run, "global batch size", 609), 32.0);
    assert_eq!(at(&run, "lm loss", 609), 6.159759);
    assert_eq!(at(&run, "loss scale", 609), 131072.0);
    assert_eq!(at(&run, "grad norm", 609), 1.095);
    assert_eq!(at(&run, "number of skipped iterations", 609), 0.0);
    assert_eq!(at(&run, "number of nan iterations", 609), 0.0);
    // iteration 610: consumed samples 19520, 436.7 ms, lm loss 6.002230E+00, grad norm 0.791
    assert_eq!(at(&run, "consumed samples", 610), 19520.0);
    assert_eq!(at(&run, "elapsed time per iteration (ms)", 610), 436.7);
    assert_eq!(at(&run, "learning rate", 610), 5.999998E-05);
    assert_eq!(at(&run, "lm loss", 610), 6.002230);
    assert_eq!(at(&run, "grad norm", 610), 0.791);
    // [default0]: [2026-09-11 12:06:52.987995] iteration        3/ 7629408 | consumed samples:           96 |
    // elapsed time per iteration (ms): 24379.9 | throughput per GPU (TFLOP/s/GPU): 26.8 | learning rate:
    // 1.406250E-04 | global batch size:    32 | lm loss: 1.107468E+01 | loss scale: 1.0 | grad norm: 30.066 |
    // num zeros: 1299.0 | params norm: 496.206 | number of skipped iterations:   0 | number of nan iterations:   0 |
    assert_eq!(at(&run, "consumed samples", 3), 96.0);
    assert_eq!(at(&run, "elapsed time per iteration (ms)", 3), 24379.9);
    assert_eq!(at(&run, "throughput per GPU (TFLOP/s/GPU)", 3), 26.8);
    assert_eq!(at(&run, "learning rate", 3), 1.406250E-04);
    assert_eq!(at(&run, "global batch size", 3), 32.0);
    assert_eq!(at(&run, "lm loss", 3), 11.07468);
    assert_eq!(at(&run, "loss scale", 3), 1.0);
    assert_eq!(at(&run, "grad norm", 3), 30.066);
    assert_eq!(at(&run, "num zeros", 3), 1299.0);
    assert_eq!(at(&run, "params norm", 3), 496.206);
    assert_eq!(at(&run, "number of skipped iterations", 3), 0.0);
    assert_eq!(steps(&run, "throughput per GPU (TFLOP/s/GPU)"), vec![3], "only the second deployment logs it");
    assert_eq!(steps(&run, "lm loss"), vec![3, 609, 610]);
    // Two deployments in one file: the iteration goes back, and that is said.
    assert!(run.notes.iter().any(|n| n.contains("iteration 3 after 610")), "{:?}", run.notes);
    // Losses are interval means (609 → 610: every iteration here); the others are not.
    assert_eq!(run.get("lm loss").unwrap().averaged_over, Some(1));
    assert_eq!(run.get("loss scale").unwrap().averaged_over, None);
    assert_eq!(run.get("grad norm").unwrap().averaged_over, None);
}

#[test]
fn megatron_log_interval_and_single_line() {
    let lines = text("log_lines.txt");
    let third = lines.lines().nth(2).unwrap();
    let run = megatron::parse_log(third, "one.log").unwrap();
    assert_eq!(run.get("lm loss").unwrap().averaged_over, Some(3), "first line: its own 3 iterations");
    let log = "\
 [2024-04-06 03:00:00] iteration      100/     300 | consumed samples:        12800 | learning rate: 1.000000E-05 | global batch size:   128 | lm loss: 2.000000E+00 | load_balancing_loss: 1.013377E+00 | mtp_1 loss: 2.500000E+00 | loss scale: 1.0 | grad norm: 1.300 | number of skipped iterations:   0 | number of nan iterations:   0 |
 [2024-04-06 03:01:00] iteration      200/     300 | consumed samples:        25600 | learning rate: 1.000000E-05 | global batch size:   128 | lm loss: 1.900000E+00 | load_balancing_loss: 1.01E+00 | mtp_1 loss: 2.400000E+00 | loss scale: 1.0 | grad norm: 1.200 | number of skipped iterations:   0 | number of nan iterations:   0 |
-----------------------------------------------------------------------------------------------
 validation loss at iteration 200 | lm loss value: 1.950000E+00 | lm loss PPL: 7.028688E+00 |
-----------------------------------------------------------------------------------------------
 [2024-04-06 03:02:00] iteration      300/     300 | consumed samples:        38400 | learning rate: 1.000000E-05 | global batch size:   128 | lm loss: 1.800000E+00 | load_balancing_loss: 1.00E+00 | mtp_1 loss: 2.300000E+00 | loss scale: 1.0 | grad norm: 1.100 | number of skipped iterations:   0 | number of nan iterations:   0 |
";
    let run = megatron::parse_log(log, "train.log").unwrap();
    for loss in ["lm loss", "load_balancing_loss", "mtp_1 loss"] {
        assert_eq!(run.get(loss).unwrap().averaged_over, Some(100), "{loss}");
        assert_eq!(steps(&run, loss), vec![100, 200, 300]);
    }
    assert_eq!(at(&run, "mtp_1 loss", 200), 2.4);
    assert_eq!(run.get("lm loss validation").unwrap().points, vec![(200, 1.95)]);
    assert_eq!(run.get("lm loss validation ppl").unwrap().points, vec![(200, 7.028688)]);
    assert_eq!(run.get("lm loss validation").unwrap().averaged_over, None);
    assert!(run.notes.iter().any(|n| n.contains("log interval of 100")), "{:?}", run.notes);
    assert!(run.notes.iter().any(|n| n.contains("2 other lines skipped")), "{:?}", run.notes);
}

// ---------------------------------------------------------------- Megatron golden values

const METRICS: [&str; 5] = ["iteration-time", "lm loss", "mem-allocated-bytes", "mem-max-allocated-bytes", "num-zeros"];

#[test]
fn megatron_golden_a100_every_fifth_step() {
    for file in ["bert_mcore_tp1_pp2__dev_dgx_a100.json", "bert_mcore_tp2_pp2__dev_dgx_a100.json"] {
        let run = megatron::parse_golden(&text(file), file).unwrap();
        assert_eq!(run.format, SourceFormat::MegatronGolden);
        assert_eq!(names(&run), BTreeSet::from(METRICS));
        assert!(run.notes.is_empty(), "{file}: {:?}", run.notes);
        for m in METRICS {
            assert_eq!(steps(&run, m), vec![1, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50], "{file} {m}");
            assert_eq!(run.get(m).unwrap().averaged_over, None);
        }
    }
    let run = megatron::parse_golden(&text("bert_mcore_tp1_pp2__dev_dgx_a100.json"), "a100.json").unwrap();
    assert_eq!(at(&run, "lm loss", 1), 10.49226);
    assert_eq!(at(&run, "lm loss", 25), 10.39219);
    assert_eq!(at(&run, "lm loss", 50), 9.6868);
    assert_eq!(at(&run, "num-zeros", 1), 2098.0);
    assert_eq!(at(&run, "num-zeros", 45), 3921.0);
    assert_eq!(at(&run, "mem-allocated-bytes", 30), 3375511040.0);
    assert_eq!(at(&run, "mem-max-allocated-bytes", 1), 4165166080.0);
    assert_eq!(at(&run, "mem-max-allocated-bytes", 5), 5631605760.0);
    assert_eq!(at(&run, "iteration-time", 1), 7.75804);
    assert_eq!(at(&run, "iteration-time", 50), 0.79338);
    let run = megatron::parse_golden(&text("bert_mcore_tp2_pp2__dev_dgx_a100.json"), "a100.json").unwrap();
    assert_eq!(at(&run, "lm loss", 1), 10.49689);
    assert_eq!(at(&run, "lm loss", 50), 9.67525);
    assert_eq!(at(&run, "num-zeros", 50), 3549.0);
    assert_eq!(at(&run, "mem-allocated-bytes", 1), 1754654208.0);
    assert_eq!(at(&run, "iteration-time", 25), 1.83901);
}

#[test]
fn megatron_golden_h100_every_step() {
    for file in ["bert_mcore_tp1_pp2__dev_dgx_h100.json", "bert_mcore_tp2_pp2__dev_dgx_h100.json"] {
        let run = megatron::parse_golden(&text(file), file).unwrap();
        assert_eq!(names(&run), BTreeSet::from(METRICS));
        assert!(run.notes.is_empty(), "{file}: {:?}", run.notes);
        for m in METRICS {
            let expected: Vec<i64> = if m == "iteration-time" { (2..=50).collect() } else { (1..=50).collect() };
            assert_eq!(steps(&run, m), expected, "{file} {m}");
        }
    }
    let run = megatron::parse_golden(&text("bert_mcore_tp1_pp2__dev_dgx_h100.json"), "h100.json").unwrap();
    assert_eq!(at(&run, "lm loss", 1), 10.51634);
    assert_eq!(at(&run, "lm loss", 2), 10.53035);
    assert_eq!(at(&run, "lm loss", 25), 10.35246);
    assert_eq!(at(&run, "lm loss", 50), 9.49558);
    assert_eq!(at(&run, "num-zeros", 1), 2452.0);
    assert_eq!(at(&run, "num-zeros", 50), 2787.0);
    assert_eq!(at(&run, "mem-allocated-bytes", 1), 3433473024.0);
    assert_eq!(at(&run, "mem-max-allocated-bytes", 2), 5707393024.0);
    assert_eq!(at(&run, "iteration-time", 2), 6.38114);
    assert_eq!(at(&run, "iteration-time", 3), 0.48561);
    let run = megatron::parse_golden(&text("bert_mcore_tp2_pp2__dev_dgx_h100.json"), "h100.json").unwrap();
    assert_eq!(at(&run, "lm loss", 1), 10.60965);
    assert_eq!(at(&run, "lm loss", 33), 10.1571);
    assert_eq!(at(&run, "num-zeros", 33), 2815.0);
    assert_eq!(at(&run, "mem-max-allocated-bytes", 33), 3125675520.0);
    assert_eq!(at(&run, "iteration-time", 50), 1.11598);
}

#[test]
fn megatron_golden_a100_steps_are_a_subset_of_h100() {
    let a = megatron::parse_golden(&text("bert_mcore_tp1_pp2__dev_dgx_a100.json"), "a.json").unwrap();
    let h = megatron::parse_golden(&text("bert_mcore_tp1_pp2__dev_dgx_h100.json"), "h.json").unwrap();
    for m in METRICS {
        let hs: BTreeSet<i64> = steps(&h, m).into_iter().collect();
        let common: Vec<i64> = steps(&a, m).into_iter().filter(|s| hs.contains(s)).collect();
        let expected: Vec<i64> =
            if m == "iteration-time" { vec![5, 10, 15, 20, 25, 30, 35, 40, 45, 50] } else { steps(&a, m) };
        assert_eq!(common, expected, "{m}");
    }
    // Same model, different hardware: the loss is within Megatron's own 5 % gate at every common step.
    for (s, va) in &a.get("lm loss").unwrap().points {
        let vh = at(&h, "lm loss", *s);
        assert!(((va - vh) / vh).abs() < 0.05, "step {s}: {va} vs {vh}");
    }
}

#[test]
fn megatron_golden_nan_strings() {
    let json = r#"{"lm loss": {"start_step": 1, "end_step": 3, "step_interval": 1, "values": {"1": 10.5, "2": "nan", "3": 10.4}}}"#;
    let run = megatron::parse_golden(json, "g.json").unwrap();
    let p = &run.get("lm loss").unwrap().points;
    assert_eq!(p.len(), 3);
    assert!(p[1].1.is_nan());
    assert_eq!(
        run.notes,
        vec!["\"lm loss\": 1 values are \"nan\" (missing in the reference run), read as NaN".to_string()]
    );
}

// ---------------------------------------------------------------- generic

#[test]
fn generic_jsonl_and_csv() {
    let jsonl = "{\"step\": 1, \"loss\": 2.5, \"note\": \"warmup\", \"acc\": null}\n\n{\"step\": 2, \"loss\": 2.25, \"acc\": 0.5}\n";
    let run = generic::parse_jsonl(jsonl, "m.jsonl", None).unwrap();
    assert_eq!(run.format, SourceFormat::Jsonl);
    assert_eq!(run.get("loss").unwrap().points, vec![(1, 2.5), (2, 2.25)]);
    assert_eq!(run.get("acc").unwrap().points, vec![(2, 0.5)]);
    assert!(run.get("note").is_none());
    assert!(
        run.notes.iter().any(|n| n.contains("\"note\": 1 non-numeric values skipped (first on line 1)")),
        "{:?}",
        run.notes
    );

    let csv = "global_step,train/loss,lr,phase\n0,3.0,1e-4,warm\n1,2.5,,main\n2,nan,1e-4,main\n";
    let run = generic::parse_csv(csv, "m.csv", None).unwrap();
    assert_eq!(run.format, SourceFormat::Csv);
    assert_eq!(steps(&run, "train/loss"), vec![0, 1, 2]);
    assert!(at(&run, "train/loss", 2).is_nan());
    assert_eq!(run.get("lr").unwrap().points, vec![(0, 1e-4), (2, 1e-4)], "empty cells skipped");
    assert!(run.get("phase").is_none());
    assert!(
        run.notes.iter().any(|n| n.contains("\"phase\": 3 non-numeric values skipped (first on line 2)")),
        "{:?}",
        run.notes
    );

    let run = generic::parse_csv("it,epoch,loss\n5,0,1.0\n", "m.csv", Some("it")).unwrap();
    assert_eq!(run.get("loss").unwrap().points, vec![(5, 1.0)]);
    assert_eq!(run.get("epoch").unwrap().points, vec![(5, 0.0)]);
}

// ---------------------------------------------------------------- read_path

#[test]
fn read_path_picks_the_reader() {
    let opts = ReadOptions::default();
    let run = read_path(&data("console_v5p8.log"), &opts).unwrap();
    assert_eq!(run.format, SourceFormat::MaxtextConsole);
    assert!(run.path.ends_with("console_v5p8.log"));
    assert_eq!(read_path(&data("log_lines.txt"), &opts).unwrap().format, SourceFormat::MegatronLog);
    assert_eq!(
        read_path(&data("bert_mcore_tp1_pp2__dev_dgx_h100.json"), &opts).unwrap().format,
        SourceFormat::MegatronGolden
    );
    assert_eq!(read_path(&data("maxtext_metrics.jsonl"), &opts).unwrap().format, SourceFormat::MaxtextJsonl);

    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, body: &str| -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        p
    };
    let p = write("plain.jsonl", "{\"iteration\": 3, \"loss\": 1.5}\n");
    assert_eq!(read_path(&p, &opts).unwrap().format, SourceFormat::Jsonl);
    let p = write("m.csv", "step,loss\n1,2.0\n");
    assert_eq!(read_path(&p, &opts).unwrap().format, SourceFormat::Csv);
    let p = write("m.csv", "iter,loss\n1,2.0\n");
    let opts_iter = ReadOptions { step_column: Some("iter".into()) };
    assert_eq!(read_path(&p, &opts_iter).unwrap().get("loss").unwrap().points, vec![(1, 2.0)]);
    // MaxText's GCS metrics files are JSON lines named .txt.
    let gcs = text("maxtext_metrics.jsonl");
    let p = write("metrics_step_000000_to_step_000004.txt", &gcs);
    assert_eq!(read_path(&p, &opts).unwrap().format, SourceFormat::MaxtextJsonl);
    // JSON lines named .json are read as JSON lines; a one-line golden file stays a golden file.
    let p = write("metrics.json", &gcs);
    assert_eq!(read_path(&p, &opts).unwrap().format, SourceFormat::MaxtextJsonl);
    let p = write("golden.json", &text("bert_mcore_tp1_pp2__dev_dgx_a100.json"));
    assert_eq!(read_path(&p, &opts).unwrap().format, SourceFormat::MegatronGolden);
    // A Megatron log after a long argument dump.
    let mut long = "arguments:\n".repeat(600);
    long.push_str(&text("log_lines.txt"));
    let p = write("train_output", &long);
    assert_eq!(read_path(&p, &opts).unwrap().format, SourceFormat::MegatronLog);
}

#[test]
fn read_path_errors() {
    let opts = ReadOptions::default();
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.log");
    match read_path(&missing, &opts) {
        Err(AnalysisError::NotFound(m)) => assert!(m.contains("nope.log"), "{m}"),
        other => panic!("expected NotFound, got {other:?}"),
    }
    // A directory goes to the TensorBoard reader, which finds no event file in an empty one.
    match read_path(dir.path(), &opts) {
        Err(AnalysisError::NotFound(m)) => assert!(m.contains("tfevents"), "{m}"),
        other => panic!("expected NotFound, got {other:?}"),
    }
    let p = dir.path().join("notes.txt");
    std::fs::write(&p, "hello\nworld\n").unwrap();
    let m = invalid(read_path(&p, &opts));
    assert!(m.contains("notes.txt") && m.contains("cannot tell the format"), "{m}");
    for name in ["empty.log", "empty.json", "empty.jsonl", "empty.csv"] {
        let p = dir.path().join(name);
        std::fs::write(&p, "\n \n").unwrap();
        let m = invalid(read_path(&p, &opts));
        assert!(m.contains(name) && m.contains("empty"), "{m}");
    }
}

// ---------------------------------------------------------------- malformed inputs

#[test]
fn malformed_inputs_name_file_line_and_field() {
    // Truncated golden JSON.
    let full = text("bert_mcore_tp1_pp2__dev_dgx_h100.json");
    let cut = &full[..full.len() / 2];
    let m = invalid(megatron::parse_golden(cut, "golden.json"));
    let line = cut.lines().count();
    assert!(m.starts_with(&format!("golden.json:{line}:")) && m.contains("not valid JSON"), "{m}");
    // A golden value that is not a number, on its line.
    let bad = "{\n  \"lm loss\": {\n    \"values\": {\n      \"1\": 10.5,\n      \"2\": \"ten\"\n    }\n  }\n}\n";
    let m = invalid(megatron::parse_golden(bad, "golden.json"));
    assert_eq!(m, "golden.json:5: \"lm loss\".values.\"2\" is not a number: \"ten\"");
    let m = invalid(megatron::parse_golden("[1, 2]", "golden.json"));
    assert!(m.starts_with("golden.json:1: not a JSON object"), "{m}");
    let m = invalid(megatron::parse_golden("{\"lm loss\": {\"values\": {\"x\": 1.0}}}", "golden.json"));
    assert!(m.contains("golden.json:1:") && m.contains("step \"x\" is not an integer"), "{m}");

    // A bad number on line 2 of a Megatron log.
    let src = text("log_lines.txt");
    let lines: Vec<&str> = src.lines().collect();
    let log = format!("{}\n{}\n", lines[0], lines[1].replace("6.002230E+00", "6.00x230E+00"));
    let m = invalid(megatron::parse_log(&log, "train.log"));
    assert_eq!(m, "train.log:2: \"lm loss\" is not a number: \"6.00x230E+00\"");
    let m = invalid(megatron::parse_log("nothing here\n", "train.log"));
    assert!(m.starts_with("train.log: no Megatron-LM training lines"), "{m}");

    // A bad number on line 3 of a MaxText console log.
    let console = text("console_v5p8.log").replacen("loss: 11.689", "loss: 11.6.89", 1);
    let m = invalid(maxtext::parse_console(&console, "console.log"));
    assert_eq!(m, "console.log:3: \"loss\" is not a number: \"11.6.89\"");
    let m = invalid(maxtext::parse_console("completed step: x, seconds: 1.0\n", "console.log"));
    assert_eq!(m, "console.log:1: step \"x\" is not an integer");
    let m = invalid(maxtext::parse_console("", "console.log"));
    assert!(m.starts_with("console.log: no MaxText step lines"), "{m}");

    // MaxText JSONL: a bad line is skipped with a note (the shared metrics-JSONL reader); a step that is not an
    // integer and a record without one are errors of the format.
    let jsonl = "{\"step\": 0.0, \"learning/loss\": 1.0}\n{\"step\": 1.0, \"learning/loss\": 1.0,,}\n{\"step\": 2.0}\n";
    let run = maxtext::parse_jsonl(jsonl, "metrics.jsonl").unwrap();
    assert_eq!(steps(&run, "learning/loss"), [0]);
    assert!(run.notes.iter().any(|n| n.starts_with("line 2: not valid JSON")), "{:?}", run.notes);
    let m = invalid(maxtext::parse_jsonl("{\"step\": 1.5, \"learning/loss\": 1.0}\n", "metrics.jsonl"));
    assert_eq!(m, "metrics.jsonl:1: \"step\" is not an integer: 1.5");
    let m = invalid(maxtext::parse_jsonl("{\"learning/loss\": 1.0}\n", "metrics.jsonl"));
    assert_eq!(m, "metrics.jsonl:1: no \"step\" in the record");
    let m = invalid(maxtext::parse_jsonl("", "metrics.jsonl"));
    assert!(m.starts_with("metrics.jsonl: empty file"), "{m}");

    // Generic: a step that is not a number; no step column; a short row.
    let m = invalid(generic::parse_csv("step,loss\n1,2.0\nten,1.0\n", "m.csv", None));
    assert_eq!(m, "m.csv:3: step \"step\" is not an integer: \"ten\"");
    let m = invalid(generic::parse_csv("epoch,loss\n1,2.0\n", "m.csv", None));
    assert!(m.starts_with("m.csv: no step column") && m.contains("\"epoch\", \"loss\""), "{m}");
    let m = invalid(generic::parse_csv("step,loss\n1,2.0\n2\n", "m.csv", None));
    assert_eq!(m, "m.csv:3: 1 fields, but the header has 2");
    let m = invalid(generic::parse_csv("step,loss\n1,2.0\n", "m.csv", Some("iter")));
    assert!(m.starts_with("m.csv:1: no column \"iter\""), "{m}");
    // Generic JSONL goes through the shared metrics-JSONL reader: a step that is not an integer and a line
    // that is not an object are skipped and noted, the rest is read.
    let run =
        generic::parse_jsonl("{\"step\": 1, \"loss\": 2}\n{\"step\": \"two\", \"loss\": 2}\n[1]\n", "m.jsonl", None)
            .unwrap();
    assert_eq!(steps(&run, "loss"), [1]);
    let notes = run.notes.join("\n");
    assert!(notes.contains("line 3: expected a JSON object, found an array"), "{notes}");
    assert!(notes.contains("1 records whose \"step\" is not an integer skipped (first on line 2)"), "{notes}");
    let m = invalid(generic::parse_jsonl("{\"step\": 1}\n[1]\n", "m.jsonl", None));
    assert!(m.contains("no numeric metric values"), "{m}");
    let m = invalid(generic::parse_jsonl("{\"step\": 1, \"loss\": 2}\n", "m.jsonl", Some("iter")));
    assert!(m.contains("no record has the step column \"iter\""), "{m}");
}

// ---------------------------------------------------------------- never panic

fn all_parsers(s: &str) {
    let _ = maxtext::parse_jsonl(s, "p");
    let _ = maxtext::parse_console(s, "p");
    let _ = megatron::parse_log(s, "p");
    let _ = megatron::parse_golden(s, "p");
    let _ = generic::parse_jsonl(s, "p", None);
    let _ = generic::parse_jsonl(s, "p", Some("x"));
    let _ = generic::parse_csv(s, "p", None);
    let _ = generic::parse_csv(s, "p", Some("step"));
}

fn fixtures() -> String {
    let mut all = String::new();
    for f in ["console_v5p8.log", "log_lines.txt", "bert_mcore_tp1_pp2__dev_dgx_a100.json", "maxtext_metrics.jsonl"] {
        all.push_str(&std::fs::read_to_string(Path::new(&data(f))).unwrap());
    }
    all
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,400}") {
        all_parsers(&s);
    }

    #[test]
    fn arbitrary_log_like_text_never_panics(
        parts in proptest::collection::vec(
            prop_oneof![
                Just("completed step: ".to_string()), Just("iteration ".to_string()), Just(" | ".to_string()),
                Just(": ".to_string()), Just(", ".to_string()), Just("/".to_string()), Just("=".to_string()),
                Just("\n".to_string()), Just("{\"step\": ".to_string()), Just("NaN".to_string()),
                Just(" loss at ".to_string()), Just("validation".to_string()), Just("(".to_string()),
                Just("\"values\": {".to_string()), Just("}".to_string()), Just("é".to_string()),
                "[0-9.eE+-]{1,8}", "[a-z ]{1,6}",
            ],
            0..60,
        )
    ) {
        all_parsers(&parts.concat());
    }

    #[test]
    fn cut_and_spliced_fixtures_never_panic(cut in 0usize..4000, splice in 0usize..4000, insert in "\\PC{0,12}") {
        let all = fixtures();
        let at = |i: usize| { let mut i = i.min(all.len()); while !all.is_char_boundary(i) { i -= 1; } i };
        let (a, b) = (at(cut.min(splice)), at(cut.max(splice)));
        all_parsers(&all[..b]);
        all_parsers(&format!("{}{}{}", &all[..a], insert, &all[b..]));
    }
}
