//! Generic metric tables: JSONL (one object per line) and CSV (header row), each with a step column.
//!
//! The step column is the one named by the caller, else the first of `step`, `iteration`, `global_step`
//! present. Every other column whose cells are numbers becomes a series; empty cells are skipped, other
//! non-numeric cells are skipped with a note. A step that is not an integer is an error naming the line.
//!
//! Also the helpers the other text readers share: a per-metric point collector, number parsing that
//! accepts `nan`/`inf`, and JSON lines that tolerate Python's bare `NaN`/`Infinity`.

use std::collections::{BTreeMap, BTreeSet};

use falcon_core::metrics_jsonl::{self, StepColumn};
use serde_json::{Map, Value};

use super::{RunSeries, Series, SourceFormat};
use crate::error::{AnalysisError, Result};

pub use falcon_core::metrics_jsonl::STEP_COLUMNS;
pub(crate) use falcon_core::metrics_jsonl::{
    json_message, json_number, json_step, nonfinite, parse_step, sanitize_nonfinite,
};

/// Reads a generic JSONL file: one JSON object per line, a step column, numeric values — through the
/// metrics-JSONL reader EXP also uses ([`falcon_core::metrics_jsonl`]): nested objects flattened with `/`,
/// Python's bare `NaN`/`Infinity` accepted, malformed lines, records without a step and over-long names
/// skipped, each counted in a note.
pub fn parse_jsonl(text: &str, path: &str, step_column: Option<&str>) -> Result<RunSeries> {
    let step = step_column.map_or(StepColumn::Detect, StepColumn::Named);
    let read = metrics_jsonl::read(text, step);
    if read.objects == 0 {
        return Err(AnalysisError::Invalid(match read.notes.first() {
            Some(n) => format!("{path}: no JSON records ({n})"),
            None => format!("{path}: empty file (no JSON records)"),
        }));
    }
    let Some(step_key) = read.step_column else {
        let keys = metrics_jsonl::objects(text).objects;
        let keys: BTreeSet<&str> = keys.iter().flat_map(|(_, m)| m.keys().map(String::as_str)).collect();
        return Err(no_step_column(path, keys.iter().copied()));
    };
    if step_column.is_some() && read.records.is_empty() {
        let objects = metrics_jsonl::objects(text).objects;
        let keys: BTreeSet<&str> = objects.iter().flat_map(|(_, m)| m.keys().map(String::as_str)).collect();
        return Err(AnalysisError::Invalid(format!(
            "{path}: no record has the step column {step_key:?} (keys found: {})",
            list(keys.iter().copied())
        )));
    }
    let mut col = Collector::default();
    for record in &read.records {
        for (name, value) in &record.values {
            col.push(name, record.step, *value);
        }
    }
    let notes: Vec<String> = read.notes.iter().map(ToString::to_string).collect();
    if col.is_empty() {
        return Err(AnalysisError::Invalid(format!("{path}: no numeric metric values besides {step_key:?}")));
    }
    Ok(col.finish(path, SourceFormat::Jsonl, notes))
}

/// Reads a generic CSV file: a header row, a step column, numeric cells (tab-separated when the header
/// has tabs and no commas).
pub fn parse_csv(text: &str, path: &str, step_column: Option<&str>) -> Result<RunSeries> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first_line = text.lines().find(|l| !l.trim().is_empty());
    let Some(first_line) = first_line else {
        return Err(AnalysisError::Invalid(format!("{path}: empty file (no CSV header)")));
    };
    let delimiter = if first_line.contains('\t') && !first_line.contains(',') { b'\t' } else { b',' };
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .delimiter(delimiter)
        .from_reader(text.as_bytes());
    let headers: Vec<String> = reader.headers().map_err(|e| csv_error(path, &e))?.iter().map(str::to_string).collect();
    let step_idx = match step_column {
        Some(c) => headers.iter().position(|h| h == c).ok_or_else(|| {
            AnalysisError::Invalid(format!(
                "{path}:1: no column {c:?} (columns: {})",
                list(headers.iter().map(String::as_str))
            ))
        })?,
        None => STEP_COLUMNS
            .iter()
            .find_map(|c| headers.iter().position(|h| h == c))
            .ok_or_else(|| no_step_column(path, headers.iter().map(String::as_str)))?,
    };
    let step_name = headers[step_idx].clone();
    let mut col = Collector::default();
    let mut skipped = NonNumeric::default();
    let mut without_step = 0usize;
    let mut rows = 0usize;
    for record in reader.records() {
        let record = record.map_err(|e| csv_error(path, &e))?;
        rows += 1;
        let line = record.position().map_or(0, |p| p.line());
        let step_cell = record.get(step_idx).unwrap_or("");
        if step_cell.is_empty() {
            without_step += 1;
            continue;
        }
        let step = parse_step(step_cell).ok_or_else(|| {
            AnalysisError::Invalid(format!("{path}:{line}: step {step_name:?} is not an integer: {step_cell:?}"))
        })?;
        for (i, cell) in record.iter().enumerate() {
            if i == step_idx || cell.is_empty() {
                continue;
            }
            let Some(name) = headers.get(i) else { continue };
            match parse_number(cell) {
                Some(x) => col.push(name, step, x),
                None => skipped.add(name, line as usize),
            }
        }
    }
    let mut notes = Vec::new();
    if without_step > 0 {
        notes.push(format!("{without_step} rows with an empty {step_name:?} skipped"));
    }
    skipped.note(&mut notes);
    if col.is_empty() {
        return Err(AnalysisError::Invalid(if rows == 0 {
            format!("{path}: no data rows after the header")
        } else {
            format!("{path}: no numeric metric values besides {step_name:?}")
        }));
    }
    Ok(col.finish(path, SourceFormat::Csv, notes))
}

fn csv_error(path: &str, e: &csv::Error) -> AnalysisError {
    match e.kind() {
        csv::ErrorKind::UnequalLengths { pos, expected_len, len } => {
            let line = pos.as_ref().map_or(0, |p| p.line());
            AnalysisError::Invalid(format!("{path}:{line}: {len} fields, but the header has {expected_len}"))
        }
        _ => match e.position() {
            Some(p) => AnalysisError::Invalid(format!("{path}:{}: {e}", p.line())),
            None => AnalysisError::Invalid(format!("{path}: {e}")),
        },
    }
}

fn no_step_column<'a>(path: &str, found: impl Iterator<Item = &'a str>) -> AnalysisError {
    AnalysisError::Invalid(format!(
        "{path}: no step column (looked for \"step\", \"iteration\", \"global_step\"; found: {}); name one with --step-column",
        list(found)
    ))
}

/// At most 20 names, quoted, comma-separated.
fn list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<String> = names.map(|n| format!("{n:?}")).collect();
    if names.is_empty() {
        return "none".into();
    }
    if names.len() > 20 {
        format!("{}, … ({} in all)", names[..20].join(", "), names.len())
    } else {
        names.join(", ")
    }
}

/// Non-numeric cells skipped, per metric: count and first line.
#[derive(Default)]
struct NonNumeric(BTreeMap<String, (usize, usize)>);

impl NonNumeric {
    fn add(&mut self, name: &str, line: usize) {
        self.0.entry(name.to_string()).or_insert((0, line)).0 += 1;
    }

    fn note(self, notes: &mut Vec<String>) {
        for (name, (n, line)) in self.0 {
            notes.push(format!("{name:?}: {n} non-numeric values skipped (first on line {line})"));
        }
    }
}

/// Collects `(step, value)` points per metric name; a later value at the same step replaces the earlier.
#[derive(Debug, Default)]
pub(crate) struct Collector {
    series: BTreeMap<String, (BTreeMap<i64, f64>, Option<u32>)>,
    replaced: usize,
    nan: BTreeMap<String, usize>,
}

impl Collector {
    pub(crate) fn push(&mut self, name: &str, step: i64, value: f64) {
        if !value.is_finite() {
            *self.nan.entry(name.to_string()).or_default() += 1;
        }
        let entry = match self.series.get_mut(name) {
            Some(e) => e,
            None => self.series.entry(name.to_string()).or_default(),
        };
        if entry.0.insert(step, value).is_some() {
            self.replaced += 1;
        }
    }

    /// Marks series `name` as averaged over `n` iterations per point.
    pub(crate) fn set_averaged(&mut self, name: &str, n: Option<u32>) {
        if let Some(e) = self.series.get_mut(name) {
            e.1 = n;
        }
    }

    /// Forgets everything collected (a new run starts).
    pub(crate) fn clear(&mut self) {
        self.series.clear();
        self.replaced = 0;
        self.nan.clear();
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.series.values().all(|(p, _)| p.is_empty())
    }

    pub(crate) fn finish(self, path: &str, format: SourceFormat, mut notes: Vec<String>) -> RunSeries {
        if self.replaced > 0 {
            notes.push(format!("{} values at repeated steps: the later value kept", self.replaced));
        }
        for (name, n) in &self.nan {
            notes.push(format!("{name:?}: {n} values are NaN or infinite"));
        }
        let series = self
            .series
            .into_iter()
            .filter(|(_, (p, _))| !p.is_empty())
            .map(|(name, (points, averaged_over))| Series { name, points: points.into_iter().collect(), averaged_over })
            .collect();
        RunSeries { path: path.to_string(), format, series, notes }
    }
}

/// A number as logs print it: decimal, exponent (`6.159759E+00`), `nan`, `inf`, `-inf`, `Infinity`
/// (any case); surrounding blanks ignored.
pub(crate) fn parse_number(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    s.parse::<f64>().ok()
}

/// A line a log reader recognised but could not parse: an error naming `path:line`, except the file's
/// last line when the file ends mid-line (a log still being written), which is skipped with a note.
pub(crate) fn bad_line(path: &str, line_no: usize, cut_off: bool, msg: String, notes: &mut Vec<String>) -> Result<()> {
    if cut_off {
        notes.push(format!("line {line_no} is cut off (the file ends mid-line): skipped ({msg})"));
        Ok(())
    } else {
        Err(AnalysisError::Invalid(format!("{path}:{line_no}: {msg}")))
    }
}

/// The objects of a JSONL text with their 1-based line numbers, read by the shared metrics-JSONL reader:
/// malformed and cut-off lines are skipped, each with a note.
pub(crate) fn json_lines(text: &str, notes: &mut Vec<String>) -> Vec<(usize, Map<String, Value>)> {
    let read = metrics_jsonl::objects(text);
    notes.extend(read.notes.iter().map(ToString::to_string));
    read.objects
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_logs_print_them() {
        assert_eq!(parse_number("6.159759E+00"), Some(6.159759));
        assert_eq!(parse_number(" 131072.0 "), Some(131072.0));
        assert!(parse_number("NAN").unwrap().is_nan());
        assert_eq!(parse_number("-INF"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_number("1.2.3"), None);
    }

    #[test]
    fn jsonl_step_column_fallbacks() {
        let r = parse_jsonl(
            "{\"iteration\": 1, \"loss\": 2.5}\n{\"iteration\": 2, \"loss\": 2.0, \"tag\": \"x\"}\n",
            "m.jsonl",
            None,
        )
        .unwrap();
        assert_eq!(r.get("loss").unwrap().points, vec![(1, 2.5), (2, 2.0)]);
        assert!(r.get("tag").is_none());
        assert!(r.notes.iter().any(|n| n.contains("\"tag\"")), "{:?}", r.notes);
        let e = parse_jsonl("{\"epoch\": 1, \"loss\": 2.5}\n", "m.jsonl", None).unwrap_err().to_string();
        assert!(e.contains("m.jsonl") && e.contains("\"epoch\"") && e.contains("\"loss\""), "{e}");
    }

    #[test]
    fn jsonl_nested_and_cut_off_tail() {
        let r =
            parse_jsonl("{\"step\": 0, \"train\": {\"loss\": 1.0}}\n{\"step\": 1, \"train\": {\"lo", "m.jsonl", None)
                .unwrap();
        assert_eq!(r.get("train/loss").unwrap().points, vec![(0, 1.0)]);
        assert!(r.notes.iter().any(|n| n.contains("line 2")), "{:?}", r.notes);
    }

    #[test]
    fn csv_tabs_and_empty_cells() {
        let r = parse_csv("global_step\tloss\tacc\n1\t2.0\t\n2\t1.5\t0.5\n", "m.tsv", None).unwrap();
        assert_eq!(r.get("loss").unwrap().points, vec![(1, 2.0), (2, 1.5)]);
        assert_eq!(r.get("acc").unwrap().points, vec![(2, 0.5)]);
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }
}
