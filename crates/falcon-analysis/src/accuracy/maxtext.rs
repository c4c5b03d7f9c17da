//! MaxText metrics: the `metrics_file` JSONL and the console (stdout / absl log) lines.
//!
//! Both give series under MaxText's JSONL key names (`learning/loss`, `learning/lm_loss`,
//! `perf/step_time_seconds`, `eval/avg_loss`, …), so a console log and a metrics file of the same run
//! align the same way against another framework.
//!
//! JSONL (maxtext `common/metric_logger.py`): one `json.dumps` object per write, every scalar as a float,
//! plus `step` (a float) and `run_name`. The writer truncates the file when it writes step 0, so a step-0
//! record after later steps starts a new run: the records before it are dropped (noted). Running-eval
//! snapshots (they carry `eval/step_time_seconds`) are written at the *eval* step, not a train step, and
//! are skipped (noted); the eval summary written at the train step is kept.
//!
//! Console: `completed step: N, seconds: …, TFLOP/s/device: …, Tokens/s/device: …, total_weights: …,
//! loss: …, lm_loss: …, perplexity: …[, moe_lb_loss: …][, main_model_loss: …, mtp_loss: …]`, with an
//! optional absl prefix (`I0822 12:00:00.000000 140 metric_logger.py:230] `), the
//! `[Rampup Batch Size Phase], ` prefix (no TFLOP/Tokens), older lines with fewer fields
//! (`TFLOP/s: …`), and eval lines `Completed eval after train step N, loss=…, perplexity=…, …` or the
//! older `average loss after step=N: …, eval_loss=…, total_weights=…`.

use super::generic::{json_lines, json_number, json_step, parse_number, Collector};
use super::{RunSeries, SourceFormat};
use crate::error::{AnalysisError, Result};

/// Reads a MaxText `metrics_file` JSONL (or a GCS `metrics_step_*_to_step_*.txt`, the same records).
pub fn parse_jsonl(text: &str, path: &str) -> Result<RunSeries> {
    let mut notes = Vec::new();
    let records = json_lines(text, &mut notes);
    if records.is_empty() {
        return Err(AnalysisError::Invalid(format!("{path}: empty file (no JSON records)")));
    }
    let mut col = Collector::default();
    let mut max_step: Option<i64> = None;
    let mut kept_records = 0usize;
    let mut running_eval = 0usize;
    let mut non_numeric: Vec<String> = Vec::new();
    for (line, obj) in &records {
        let step_value = obj
            .get("step")
            .ok_or_else(|| AnalysisError::Invalid(format!("{path}:{line}: no \"step\" in the record")))?;
        let step = json_step(step_value).ok_or_else(|| {
            AnalysisError::Invalid(format!("{path}:{line}: \"step\" is not an integer: {step_value}"))
        })?;
        if obj.contains_key("eval/step_time_seconds") {
            running_eval += 1;
            continue;
        }
        if step == 0 && max_step.is_some_and(|m| m > 0) {
            notes.push(format!(
                "line {line}: step 0 again, a new run starts (MaxText truncates its metrics file at step 0): \
                 the {kept_records} records before it (steps up to {}) dropped",
                max_step.unwrap_or(0)
            ));
            col.clear();
            kept_records = 0;
            max_step = None;
        }
        kept_records += 1;
        max_step = Some(max_step.map_or(step, |m| m.max(step)));
        for (key, value) in obj {
            if key == "step" || key == "run_name" || value.is_null() {
                continue;
            }
            match json_number(value) {
                Some(x) => col.push(key, step, x),
                None => {
                    if !non_numeric.contains(key) {
                        non_numeric.push(key.clone());
                    }
                }
            }
        }
    }
    if running_eval > 0 {
        notes.push(format!(
            "{running_eval} running-eval records skipped (their step counts eval batches, not train steps; \
             the eval summary at the train step is kept)"
        ));
    }
    if !non_numeric.is_empty() {
        notes.push(format!("non-numeric keys skipped: {}", non_numeric.join(", ")));
    }
    if col.is_empty() {
        return Err(AnalysisError::Invalid(format!("{path}: no numeric metric values in the records")));
    }
    Ok(col.finish(path, SourceFormat::MaxtextJsonl, notes))
}

/// Reads MaxText console output (stdout or an absl log file); lines that are not step or eval lines are
/// skipped (counted in a note).
pub fn parse_console(text: &str, path: &str) -> Result<RunSeries> {
    const STEP: &str = "completed step: ";
    const EVAL: &str = "Completed eval after train step ";
    const OLD_EVAL: &str = "verage loss after step=";
    let mut col = Collector::default();
    let mut notes = Vec::new();
    let (mut other, mut running_eval, mut profiler) = (0usize, 0usize, 0usize);
    let unterminated = !text.is_empty() && !text.ends_with('\n');
    let n_lines = text.lines().count();
    for (idx, line) in text.lines().enumerate() {
        let line_no = idx + 1;
        let parsed = if let Some(pos) = line.find(STEP) {
            parse_step_line(&line[pos + STEP.len()..], &mut col)
        } else if let Some(pos) = line.find(EVAL) {
            parse_eval_line(&line[pos + EVAL.len()..], &mut col)
        } else if let Some(pos) = line.find(OLD_EVAL) {
            parse_old_eval_line(&line[pos + OLD_EVAL.len()..], &mut col)
        } else {
            if line.contains("Completed eval step: ") {
                running_eval += 1;
            } else if line.contains("completed profiler activation/deactivation step: ") {
                profiler += 1;
            } else if !line.trim().is_empty() {
                other += 1;
            }
            Ok(())
        };
        if let Err(msg) = parsed {
            super::generic::bad_line(path, line_no, unterminated && line_no == n_lines, msg, &mut notes)?;
        }
    }
    if running_eval > 0 {
        notes.push(format!("{running_eval} running-eval lines skipped (their step counts eval batches)"));
    }
    if profiler > 0 {
        notes.push(format!("{profiler} profiler activation/deactivation step lines have no metrics"));
    }
    if other > 0 {
        notes.push(format!("{other} other lines skipped"));
    }
    if col.is_empty() {
        return Err(AnalysisError::Invalid(format!(
            "{path}: no MaxText step lines (`completed step: N, seconds: …, loss: …`) found"
        )));
    }
    Ok(col.finish(path, SourceFormat::MaxtextConsole, notes))
}

/// The JSONL key of a console train-line field.
fn train_key(field: &str) -> String {
    match field {
        "seconds" => "perf/step_time_seconds".into(),
        "TFLOP/s/device" | "TFLOP/s" => "perf/per_device_tflops_per_sec".into(),
        "Tokens/s/device" | "Tokens/s" => "perf/per_device_tokens_per_sec".into(),
        "live slice count" => "perf/live_slice_count".into(),
        other => format!("learning/{}", other.replace(' ', "_")),
    }
}

/// The JSONL key of a console eval-line field.
fn eval_key(field: &str) -> String {
    match field {
        "loss" | "eval_loss" => "eval/avg_loss".into(),
        "perplexity" => "eval/avg_perplexity".into(),
        "avg_mtp_acceptance_rate" => "eval/avg_mtp_acceptance_rate_percent".into(),
        "dpo_reward_accuracy" => "eval/avg_dpo_reward_accuracy".into(),
        other => format!("eval/{}", other.replace(' ', "_")),
    }
}

/// A console value: a number, possibly wrapped as Python prints arrays and numpy scalars
/// (`Array(2.3, dtype=float32)`, `np.float64(2.3)`), possibly with a trailing `%`.
fn console_value(v: &str) -> Option<f64> {
    let mut v = v.trim();
    if let Some(open) = v.find('(') {
        v = &v[open + 1..];
        if let Some(end) = v.find([',', ')']) {
            v = &v[..end];
        }
    }
    parse_number(v.trim().trim_end_matches('%'))
}

/// The leading integer of `s` (after blanks).
fn leading_int(s: &str) -> Option<i64> {
    let s = s.trim_start();
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    s[..end].parse().ok()
}

/// `N, seconds: x, …` (after `completed step: `).
fn parse_step_line(rest: &str, col: &mut Collector) -> std::result::Result<(), String> {
    let mut parts = rest.split(", ");
    let step_text = parts.next().unwrap_or("").trim();
    let step = step_text.parse::<i64>().map_err(|_| format!("step {step_text:?} is not an integer"))?;
    let mut fields = Vec::new();
    for part in parts {
        let part = part.trim();
        if part.is_empty() || part.starts_with("dtype=") {
            continue;
        }
        let (key, value) = part.split_once(": ").ok_or_else(|| format!("field {part:?} is not `name: value`"))?;
        let key = key.trim();
        let x = console_value(value).ok_or_else(|| format!("{key:?} is not a number: {:?}", value.trim()))?;
        fields.push((train_key(key), x));
    }
    for (key, x) in fields {
        col.push(&key, step, x);
    }
    Ok(())
}

/// `N, loss=x, perplexity=y, …` (after `Completed eval after train step `).
fn parse_eval_line(rest: &str, col: &mut Collector) -> std::result::Result<(), String> {
    let mut parts = rest.split(", ");
    let step_text = parts.next().unwrap_or("").trim();
    let step = step_text.parse::<i64>().map_err(|_| format!("eval step {step_text:?} is not an integer"))?;
    let mut fields = Vec::new();
    for part in parts {
        let part = part.trim();
        if part.is_empty() || part.starts_with("dtype=") {
            continue;
        }
        let (key, value) = part.split_once('=').ok_or_else(|| format!("eval field {part:?} is not `name=value`"))?;
        let key = key.trim();
        let x = console_value(value).ok_or_else(|| format!("eval {key:?} is not a number: {:?}", value.trim()))?;
        fields.push((eval_key(key), x));
    }
    for (key, x) in fields {
        col.push(&key, step, x);
    }
    Ok(())
}

/// Older eval lines, best effort: `N: eval_step_count=10, eval_loss=2.3, total_weights=…` (after
/// `average loss after step=`); fields that do not read as `name=number` are ignored.
fn parse_old_eval_line(rest: &str, col: &mut Collector) -> std::result::Result<(), String> {
    let step = leading_int(rest).ok_or_else(|| format!("eval step in {:?} is not an integer", rest.trim()))?;
    let body = rest.split_once([':', ',']).map_or("", |(_, b)| b);
    for part in body.split(", ") {
        let Some((key, value)) = part.trim().split_once('=') else { continue };
        let key = key.trim();
        if matches!(key, "step" | "eval_step_count") {
            continue;
        }
        if let Some(x) = console_value(value) {
            col.push(&eval_key(key), step, x);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absl_rampup_and_moe_fields() {
        let text = "I0822 10:00:00.123456 140 metric_logger.py:230] [Rampup Batch Size Phase], completed step: 3, seconds: 1.250, total_weights: 4096, loss: 9.100, lm_loss: 9.000, perplexity: 8103.084, moe_lb_loss: 0.012\n\
                    completed step: 4, seconds: 1.000, live slice count: 2, TFLOP/s/device: 10.000, Tokens/s/device: 20.000, total_weights: 8192, loss: 8.000, lm_loss: 8.000, perplexity: 2980.958, main_model_loss: 7.900, mtp_loss: 0.100\n";
        let r = parse_console(text, "out.log").unwrap();
        assert_eq!(r.get("perf/step_time_seconds").unwrap().points, vec![(3, 1.25), (4, 1.0)]);
        assert_eq!(r.get("perf/per_device_tflops_per_sec").unwrap().points, vec![(4, 10.0)]);
        assert_eq!(r.get("learning/moe_lb_loss").unwrap().points, vec![(3, 0.012)]);
        assert_eq!(r.get("learning/mtp_loss").unwrap().points, vec![(4, 0.1)]);
        assert_eq!(r.get("perf/live_slice_count").unwrap().points, vec![(4, 2.0)]);
    }

    #[test]
    fn eval_lines_old_and_new() {
        let text = "Completed eval after train step 100, loss=2.345, perplexity=10.433, total_weights=1024.0, avg_z_loss=0.000, avg_mtp_loss=0.100, avg_mtp_acceptance_rate=45.50%\n\
                    average loss after step=50: eval_step_count=10, eval_loss=Array(2.5, dtype=float32), total_weights=512.0\n\
                    Completed eval step: 0, seconds: 0.100, running loss=2.000, running perplexity=7.389, running total_weights=10\n";
        let r = parse_console(text, "out.log").unwrap();
        assert_eq!(r.get("eval/avg_loss").unwrap().points, vec![(50, 2.5), (100, 2.345)]);
        assert_eq!(r.get("eval/avg_mtp_acceptance_rate_percent").unwrap().points, vec![(100, 45.5)]);
        assert_eq!(r.get("eval/total_weights").unwrap().points, vec![(50, 512.0), (100, 1024.0)]);
        assert!(r.notes.iter().any(|n| n.contains("running-eval")), "{:?}", r.notes);
    }
}
