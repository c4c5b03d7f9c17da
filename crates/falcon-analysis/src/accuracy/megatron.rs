//! Megatron-LM metrics: the training log lines and the functional tests' golden-values JSON.
//!
//! Log (megatron/training/training.py `training_log`): ` [timestamp] iteration N/ M | label: value | … |`,
//! every field ` label: value |`; the timestamp and any launcher prefix (`[default0]:`) are optional.
//! Each field becomes a series named by its label as printed (`lm loss`, `grad norm`, `learning rate`,
//! `elapsed time per iteration (ms)`, …), with the iteration as the step. Loss fields (labels ending in
//! `loss`: `lm loss`, `load_balancing_loss`, `mtp_1 loss`, …) are means over the iterations since the
//! previous line, so they get `averaged_over` = the log interval (the most common gap between logged
//! iterations; with a single line, its own iteration count). Validation lines
//! (` validation loss at iteration N | lm loss value: … | lm loss PPL: … |`) give `lm loss validation`
//! and `lm loss validation ppl`, the names Megatron uses for them in TensorBoard.
//!
//! Golden values (tests/functional_tests, `{metric: {start_step, end_step, step_interval, values}}`):
//! one series per metric key (`lm loss`, `num-zeros`, `iteration-time`, `mem-allocated-bytes`, …);
//! `"nan"` values become NaN (noted).

use std::collections::BTreeMap;

use serde_json::Value;

use super::generic::{json_message, json_number, nonfinite, parse_number, parse_step, sanitize_nonfinite, Collector};
use super::{RunSeries, SourceFormat};
use crate::error::{AnalysisError, Result};

/// Reads a Megatron-LM training log (stdout); other lines are skipped (counted in a note).
pub fn parse_log(text: &str, path: &str) -> Result<RunSeries> {
    let mut col = Collector::default();
    let mut notes = Vec::new();
    let mut iterations: Vec<i64> = Vec::new();
    let mut loss_names: Vec<String> = Vec::new();
    let mut went_back: Vec<String> = Vec::new();
    let (mut other, mut val_without_iteration) = (0usize, 0usize);
    let mut train_iters: Option<i64> = None;
    let unterminated = !text.is_empty() && !text.ends_with('\n');
    let n_lines = text.lines().count();
    for (idx, line) in text.lines().enumerate() {
        let line_no = idx + 1;
        let parsed = if let Some((kind, rest)) = validation_line(line) {
            match parse_validation(kind, rest) {
                Ok(Some((iteration, fields))) => {
                    for (name, x) in fields {
                        col.push(&name, iteration, x);
                    }
                    Ok(())
                }
                Ok(None) => {
                    val_without_iteration += 1;
                    Ok(())
                }
                Err(e) => Err(e),
            }
        } else if let Some((iteration, total, rest)) = iteration_line(line) {
            parse_fields(rest).map(|fields| {
                if let Some(&prev) = iterations.last() {
                    if iteration <= prev && went_back.len() < 3 {
                        went_back.push(format!("line {line_no}: iteration {iteration} after {prev}"));
                    }
                }
                iterations.push(iteration);
                train_iters = Some(total);
                for (label, x) in fields {
                    if is_loss(&label) && !loss_names.contains(&label) {
                        loss_names.push(label.clone());
                    }
                    col.push(&label, iteration, x);
                }
            })
        } else {
            if !line.trim().is_empty() {
                other += 1;
            }
            Ok(())
        };
        if let Err(msg) = parsed {
            super::generic::bad_line(path, line_no, unterminated && line_no == n_lines, msg, &mut notes)?;
        }
    }
    if col.is_empty() {
        return Err(AnalysisError::Invalid(format!(
            "{path}: no Megatron-LM training lines (`iteration N/ M | … | lm loss: … |`) found"
        )));
    }
    if let Some(interval) = log_interval(&iterations) {
        for name in &loss_names {
            col.set_averaged(name, Some(interval.every));
        }
        if !loss_names.is_empty() {
            let mut note = format!(
                "loss values ({}) are means over the log interval of {} iterations, not per-iteration values",
                loss_names.join(", "),
                interval.every
            );
            if interval.irregular {
                note.push_str("; the gap between logged iterations varies, this is the most common one");
            }
            notes.push(note);
        }
    }
    if !went_back.is_empty() {
        notes.push(format!(
            "the iteration goes back ({}): a resumed or another run; the later value kept at repeated iterations",
            went_back.join("; ")
        ));
    }
    if let Some(total) = train_iters {
        notes.push(format!("train iterations: {total}"));
    }
    if val_without_iteration > 0 {
        notes.push(format!("{val_without_iteration} validation lines without an iteration (end of training) skipped"));
    }
    if other > 0 {
        notes.push(format!("{other} other lines skipped"));
    }
    Ok(col.finish(path, SourceFormat::MegatronLog, notes))
}

/// Megatron prints the mean over the interval for every `total_loss_dict` entry: the loss keys.
fn is_loss(label: &str) -> bool {
    label.ends_with("loss")
}

struct Interval {
    every: u32,
    irregular: bool,
}

/// The most common positive gap between consecutive logged iterations (the smallest on a tie); with a
/// single logged iteration, that iteration (its line averages over the iterations since the start).
fn log_interval(iterations: &[i64]) -> Option<Interval> {
    let mut gaps: BTreeMap<i64, usize> = BTreeMap::new();
    for w in iterations.windows(2) {
        if w[1] > w[0] {
            *gaps.entry(w[1] - w[0]).or_default() += 1;
        }
    }
    let to_u32 = |x: i64| u32::try_from(x.max(1)).unwrap_or(u32::MAX);
    match gaps.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))) {
        Some((&gap, _)) => {
            // The first line may cover fewer iterations (a first-iteration print): not irregular.
            let irregular = gaps.len() > 1 && iterations.windows(2).skip(1).any(|w| w[1] > w[0] && w[1] - w[0] != gap);
            Some(Interval { every: to_u32(gap), irregular })
        }
        None => iterations.first().map(|&first| Interval { every: to_u32(first), irregular: false }),
    }
}

/// `(iteration, train_iters, rest after the first '|')` of a training line: `iteration <N>/ <M> |`
/// anywhere in the line (after a timestamp or launcher prefix).
fn iteration_line(line: &str) -> Option<(i64, i64, &str)> {
    for (pos, _) in line.match_indices("iteration") {
        let after = &line[pos + "iteration".len()..];
        let Some(first) = after.chars().next() else { continue };
        if !first.is_whitespace() {
            continue;
        }
        let s = after.trim_start();
        let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        if digits == 0 {
            continue;
        }
        let Ok(iteration) = s[..digits].parse::<i64>() else { continue };
        let Some(s) = s[digits..].strip_prefix('/') else { continue };
        let s = s.trim_start();
        let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let Ok(total) = s[..digits].parse::<i64>() else { continue };
        let Some(rest) = s[digits..].trim_start().strip_prefix('|') else { continue };
        return Some((iteration, total, rest));
    }
    None
}

/// `(kind, rest after " loss at ")` of a validation line: ` validation[-i] loss at …`.
fn validation_line(line: &str) -> Option<(&str, &str)> {
    let at = line.find(" loss at ")?;
    let kind = line[..at].split_whitespace().next_back()?;
    kind.starts_with("validation").then(|| (kind, &line[at + " loss at ".len()..]))
}

/// A validation line's iteration and its `(series name, value)` pairs.
type ValidationLine = (i64, Vec<(String, f64)>);

/// `iteration N | key value: v | key PPL: v |` → `(N, [("key validation", v), ("key validation ppl", v)])`;
/// `None` when the prefix names no iteration (`the end of training for val data`).
fn parse_validation(kind: &str, rest: &str) -> std::result::Result<Option<ValidationLine>, String> {
    let (prefix, fields) = rest.split_once('|').unwrap_or((rest, ""));
    let Some(after) = prefix.trim().strip_prefix("iteration") else { return Ok(None) };
    let after = after.trim_start();
    let digits = after.find(|c: char| !c.is_ascii_digit()).unwrap_or(after.len());
    let Ok(iteration) = after[..digits].parse::<i64>() else { return Ok(None) };
    let fields = parse_fields(fields)?
        .into_iter()
        .map(|(label, x)| {
            let name = if let Some(key) = label.strip_suffix(" value") {
                format!("{key} {kind}")
            } else if let Some(key) = label.strip_suffix(" PPL") {
                format!("{key} {kind} ppl")
            } else {
                format!("{label} {kind}")
            };
            (name, x)
        })
        .collect();
    Ok(Some((iteration, fields)))
}

/// ` label: value | label: value |` → `[(label, value)]`; a field without `:` reads as `label value`.
fn parse_fields(rest: &str) -> std::result::Result<Vec<(String, f64)>, String> {
    let mut out = Vec::new();
    for field in rest.split('|') {
        let field = field.trim();
        if field.is_empty() {
            continue;
        }
        let (label, value) = match field.rsplit_once(':') {
            Some((l, v)) => (l.trim(), v.trim()),
            None => match field.rsplit_once(char::is_whitespace) {
                Some((l, v)) => (l.trim(), v.trim()),
                None => return Err(format!("field {field:?} is not `label: value`")),
            },
        };
        if label.is_empty() {
            return Err(format!("field {field:?} has no label"));
        }
        let x = parse_number(value).ok_or_else(|| format!("{label:?} is not a number: {value:?}"))?;
        out.push((label.to_string(), x));
    }
    Ok(out)
}

/// Reads a Megatron-LM golden-values JSON: `{metric: {start_step, end_step, step_interval, values: {"step": value}}}`.
pub fn parse_golden(text: &str, path: &str) -> Result<RunSeries> {
    const SHAPE: &str =
        "expected Megatron golden values {metric: {start_step, end_step, step_interval, values: {\"step\": value}}}";
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(AnalysisError::Invalid(format!("{path}: empty file ({SHAPE})")));
    }
    let sanitized = sanitize_nonfinite(text);
    let doc: Value = serde_json::from_str(&sanitized).map_err(|e| {
        let (line, column) = char_position(text, &sanitized, e.line(), e.column());
        AnalysisError::Invalid(format!("{path}:{line}:{column}: not valid JSON: {}", json_message(&e)))
    })?;
    let Value::Object(metrics) = doc else {
        return Err(AnalysisError::Invalid(format!("{path}:1: not a JSON object ({SHAPE})")));
    };
    let mut col = Collector::default();
    let mut notes = Vec::new();
    let mut not_metrics = Vec::new();
    for (metric, entry) in &metrics {
        let Some(values) = entry.as_object().and_then(|e| e.get("values")) else {
            not_metrics.push(format!("{metric:?}"));
            continue;
        };
        let line = || locate(text, &[metric]);
        let Value::Object(values) = values else {
            return Err(AnalysisError::Invalid(format!("{path}:{}: {metric:?}.values is not an object", line())));
        };
        let mut nan = 0usize;
        let mut steps = Vec::with_capacity(values.len());
        for (step_key, value) in values {
            let at = || locate(text, &[metric, "values", step_key]);
            let step = parse_step(step_key).ok_or_else(|| {
                AnalysisError::Invalid(format!(
                    "{path}:{}: {metric:?}.values: step {step_key:?} is not an integer",
                    at()
                ))
            })?;
            let x = match value {
                Value::Null => f64::NAN,
                Value::String(s) => nonfinite(s).or_else(|| parse_number(s)).ok_or_else(|| {
                    AnalysisError::Invalid(format!(
                        "{path}:{}: {metric:?}.values.{step_key:?} is not a number: {s:?}",
                        at()
                    ))
                })?,
                v => json_number(v).ok_or_else(|| {
                    AnalysisError::Invalid(format!(
                        "{path}:{}: {metric:?}.values.{step_key:?} is not a number: {v}",
                        at()
                    ))
                })?,
            };
            if x.is_nan() {
                nan += 1;
            }
            steps.push(step);
            col.push(metric, step, x);
        }
        if nan > 0 {
            notes.push(format!("{metric:?}: {nan} values are \"nan\" (missing in the reference run), read as NaN"));
        }
        let field = |name: &str| entry.get(name).and_then(json_number);
        let (first, last) = (steps.iter().min().copied(), steps.iter().max().copied());
        if let (Some(start), Some(first)) = (field("start_step"), first) {
            if start != first as f64 {
                notes.push(format!("{metric:?}: start_step is {start} but the first value is at step {first}"));
            }
        }
        if let (Some(end), Some(last)) = (field("end_step"), last) {
            if end != last as f64 {
                notes.push(format!("{metric:?}: end_step is {end} but the last value is at step {last}"));
            }
        }
    }
    if !not_metrics.is_empty() {
        notes.push(format!("keys without \"values\" skipped: {}", not_metrics.join(", ")));
    }
    if col.is_empty() {
        return Err(AnalysisError::Invalid(format!("{path}: no metric values ({SHAPE})")));
    }
    // NaN values are counted above in the golden's own words; the collector's generic count would repeat them.
    let mut run = col.finish(path, SourceFormat::MegatronGolden, notes);
    run.notes.retain(|n| !n.ends_with("values are NaN or infinite"));
    Ok(run)
}

/// The 1-based line where the JSON keys `keys` occur in order (the first occurrence of each after the
/// previous); the last one found when a later key is not found.
fn locate(text: &str, keys: &[&str]) -> usize {
    let (mut pos, mut found) = (0, 0);
    for key in keys {
        let quoted = serde_json::to_string(key).unwrap_or_default();
        match text[pos..].find(&quoted) {
            Some(i) => {
                found = pos + i;
                pos = found + quoted.len();
            }
            None => break,
        }
    }
    text[..found].matches('\n').count() + 1
}

/// serde_json's `(line, byte column)` in `parsed` as a character column inside the same line of `text` (the file
/// as read: `parsed` may differ where non-finite numbers were rewritten), at least 1 and at most the line's
/// length + 1.
fn char_position(text: &str, parsed: &str, line: usize, byte_column: usize) -> (usize, usize) {
    let lines: Vec<&str> = text.split('\n').collect();
    let line = line.clamp(1, lines.len().max(1));
    let parsed_line = parsed.split('\n').nth(line - 1).unwrap_or("");
    let mut cut = byte_column.min(parsed_line.len());
    while !parsed_line.is_char_boundary(cut) {
        cut -= 1;
    }
    let width = lines.get(line - 1).map_or(0, |l| l.chars().count());
    (line, parsed_line[..cut].chars().count().clamp(1, width + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_from_gaps() {
        let i = log_interval(&[1, 100, 200, 300]).unwrap();
        assert_eq!((i.every, i.irregular), (100, false));
        let i = log_interval(&[100, 200, 250, 350]).unwrap();
        assert_eq!((i.every, i.irregular), (100, true));
        assert_eq!(log_interval(&[7]).unwrap().every, 7);
        assert!(log_interval(&[]).is_none());
    }

    #[test]
    fn moe_fields_and_validation_suffix() {
        let text = " [2024-04-06 03:02:12] iteration       71/     100 | consumed samples:         9088 | elapsed time per iteration (ms): 5361.6 | throughput per GPU (TFLOP/s/GPU): 243.6 | learning rate: 1.420000E-05 | global batch size:   128 | lm loss: 1.818812E+00 | load_balancing_loss: 1.013377E+00 | loss scale: 1.0 | grad norm: 1.300 | num zeros: 0.0 | number of skipped iterations:   0 | number of nan iterations:   0 |\n\
            -----------------------------------------------------------------------------------------------\n \
            validation-1 loss at iteration 71 | lm loss value: 1.900000E+00 | lm loss PPL: 6.685894E+00 | \n\
             validation loss at the end of training for val data | lm loss value: 1.8E+00 | lm loss PPL: 6.0E+00 | \n";
        let r = parse_log(text, "train.log").unwrap();
        assert_eq!(r.get("load_balancing_loss").unwrap().points, vec![(71, 1.013377)]);
        assert_eq!(r.get("load_balancing_loss").unwrap().averaged_over, Some(71));
        assert_eq!(r.get("loss scale").unwrap().averaged_over, None);
        assert_eq!(r.get("lm loss validation-1").unwrap().points, vec![(71, 1.9)]);
        assert_eq!(r.get("lm loss validation-1 ppl").unwrap().points, vec![(71, 6.685894)]);
        assert!(r.notes.iter().any(|n| n.contains("end of training")), "{:?}", r.notes);
    }

    #[test]
    fn locate_finds_nested_key_line() {
        let text = "{\n \"a\": {\n  \"values\": {\n   \"1\": 2,\n   \"x\": 3}}}";
        assert_eq!(locate(text, &["a", "values", "x"]), 5);
        assert_eq!(locate(text, &["a"]), 2);
    }
}
