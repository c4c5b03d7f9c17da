//! Metrics JSONL: one JSON object per line, a step column, numeric fields. The one reader EXP (metric
//! summaries) and analysis (accuracy alignment) share, so a file means the same to both.
//!
//! What it accepts, and what it skips (every skip is counted in a [`Note`], never silent):
//! - Python's bare `NaN`, `Infinity`, `-Infinity` tokens (what `json.dumps` writes) and the strings `"nan"`,
//!   `"inf"` (Megatron): read as non-finite values. Readers decide what non-finite values mean; EXP keeps them
//!   out of summaries and counts them.
//! - A UTF-8 byte-order mark; blank lines.
//! - Nested objects, flattened with `/` (`{"train": {"loss": 1}}` → `train/loss`).
//! - A last line cut off mid-write (no newline after it, not valid JSON): skipped with a note.
//! - A malformed line anywhere else (not JSON, not an object): skipped with a note naming the line. The first
//!   [`MAX_LINE_NOTES`] get a note each; the rest one note with their count.
//! - A record without the step column, or whose step is not an integer: skipped, counted.
//! - A field name longer than [`MAX_KEY_CHARS`] characters (a metric name must fit the metadata store):
//!   skipped, counted.
//! - A value that is neither a number nor a non-finite spelling (text, a list): skipped, counted per field.
//! - The [`TIME_COLUMN`] (`time`: the wall clock when the step ended, seconds since the Unix epoch) is not a
//!   metric: a finite number there is the record's [`Record::time`], which aligns the step with series sampled
//!   on the clock (a job's memory); anything else there is skipped, counted.
//! - The [`EVENT_COLUMN`] (`event`: `"checkpoint"`, `"eval"`, …) marks a line as an event the workload spent time on
//!   (its duration in `event_s`), not a step: a string there is the record's [`Record::event`] (at most
//!   [`MAX_EVENT_CHARS`] characters kept). Summaries leave event lines out; goodput reads them.
//!
//! Pure: text in, records and notes out.

use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// The longest field name kept, in characters (the metadata store's metric-name limit).
pub const MAX_KEY_CHARS: usize = 255;

/// Malformed lines that get a note each; beyond, one note counts the rest.
pub const MAX_LINE_NOTES: usize = 20;

/// The field that carries the wall clock at the end of a step (seconds since the Unix epoch), not a metric.
pub const TIME_COLUMN: &str = "time";

/// The field that marks a line as an event (`checkpoint`, `eval`, …) rather than a step.
pub const EVENT_COLUMN: &str = "event";

/// The longest event name kept, in characters.
pub const MAX_EVENT_CHARS: usize = 64;

/// Step columns tried, in order, when the caller names none.
pub const STEP_COLUMNS: [&str; 3] = ["step", "iteration", "global_step"];

/// Something the reader skipped: a line (`line` is 1-based) or a count over the file (`line` is `None`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Note {
    /// The line, when the note is about one line.
    pub line: Option<usize>,
    /// What was skipped and why.
    pub reason: String,
}

impl Note {
    fn at(line: usize, reason: impl Into<String>) -> Self {
        Note { line: Some(line), reason: reason.into() }
    }

    fn file(reason: impl Into<String>) -> Self {
        Note { line: None, reason: reason.into() }
    }
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

/// The JSON objects of a JSONL text with their 1-based lines, and notes for the lines that are not objects.
#[derive(Debug, Clone, Default)]
pub struct Objects {
    /// `(line, object)` in file order.
    pub objects: Vec<(usize, Map<String, Value>)>,
    /// Malformed and cut-off lines.
    pub notes: Vec<Note>,
}

/// Reads every line that holds a JSON object; see the module docs for what is skipped.
pub fn objects(text: &str) -> Objects {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let unterminated = !text.is_empty() && !text.ends_with('\n');
    let n_lines = text.lines().count();
    let mut out = Objects::default();
    let mut malformed = 0usize;
    for (idx, line) in text.lines().enumerate() {
        let line_no = idx + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        let reason = match serde_json::from_str::<Value>(&sanitize_nonfinite(trimmed)) {
            Ok(Value::Object(m)) => {
                out.objects.push((line_no, m));
                continue;
            }
            Err(e) if unterminated && line_no == n_lines && e.is_eof() => {
                out.notes.push(Note::at(line_no, "cut off (the file ends mid-record): skipped"));
                continue;
            }
            Ok(other) => format!("expected a JSON object, found {}: skipped", kind(&other)),
            Err(e) => format!("not valid JSON (column {}: {}): skipped", e.column(), json_message(&e)),
        };
        malformed += 1;
        if malformed <= MAX_LINE_NOTES {
            out.notes.push(Note::at(line_no, reason));
        }
    }
    if malformed > MAX_LINE_NOTES {
        out.notes.push(Note::file(format!(
            "{} more malformed lines skipped ({malformed} in all)",
            malformed - MAX_LINE_NOTES
        )));
    }
    out
}

/// Which field is the step.
#[derive(Debug, Clone, Copy)]
pub enum StepColumn<'a> {
    /// This one.
    Named(&'a str),
    /// The first of [`STEP_COLUMNS`] any record has.
    Detect,
}

/// One record: its line, its step and its numeric fields (flattened names; values may be non-finite).
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// 1-based line.
    pub line: usize,
    /// The step.
    pub step: i64,
    /// The wall clock at the end of the step ([`TIME_COLUMN`]), seconds since the Unix epoch, when given.
    pub time: Option<f64>,
    /// `(field, value)` in the object's order.
    pub values: Vec<(String, f64)>,
    /// The event the line marks ([`EVENT_COLUMN`]), when it is one.
    pub event: Option<String>,
}

/// A metrics JSONL text, read.
#[derive(Debug, Clone, Default)]
pub struct MetricsText {
    /// The step column used; `None` when `Detect` found none.
    pub step_column: Option<String>,
    /// Records with a step, in file order.
    pub records: Vec<Record>,
    /// JSON objects in the file (records plus those skipped for their step).
    pub objects: usize,
    /// Everything skipped.
    pub notes: Vec<Note>,
}

/// Reads a metrics JSONL text; see the module docs.
pub fn read(text: &str, step: StepColumn<'_>) -> MetricsText {
    let Objects { objects, mut notes } = objects(text);
    let step_column = match step {
        StepColumn::Named(c) => Some(c.to_string()),
        StepColumn::Detect => {
            STEP_COLUMNS.iter().find(|c| objects.iter().any(|(_, m)| m.contains_key(**c))).map(|c| (*c).to_string())
        }
    };
    let mut out = MetricsText { step_column: step_column.clone(), objects: objects.len(), ..Default::default() };
    let Some(step_key) = step_column else {
        out.notes = notes;
        return out;
    };
    let mut no_step = Counted::default();
    let mut bad_step = Counted::default();
    let mut long_keys = Counted::default();
    let mut bad_time = Counted::default();
    let mut non_numeric: BTreeMap<String, Counted> = BTreeMap::new();
    for (line, obj) in &objects {
        let step = match obj.get(&step_key).filter(|v| !v.is_null()) {
            None => {
                no_step.add(*line);
                continue;
            }
            Some(v) => match json_step(v) {
                Some(s) => s,
                None => {
                    bad_step.add(*line);
                    continue;
                }
            },
        };
        let mut flat = Vec::new();
        flatten(obj, "", &mut flat);
        let mut values = Vec::with_capacity(flat.len());
        let mut time = None;
        let mut event = None;
        for (name, value) in flat {
            if name == step_key || value.is_null() {
                continue;
            }
            if name == TIME_COLUMN {
                match json_number(value).filter(|t| t.is_finite()) {
                    Some(t) => time = Some(t),
                    None => bad_time.add(*line),
                }
                continue;
            }
            if let (EVENT_COLUMN, Value::String(e)) = (name.as_str(), value) {
                event = Some(e.chars().take(MAX_EVENT_CHARS).collect());
                continue;
            }
            if name.chars().count() > MAX_KEY_CHARS {
                long_keys.add(*line);
                continue;
            }
            match json_number(value) {
                Some(x) => values.push((name, x)),
                None => non_numeric.entry(name).or_default().add(*line),
            }
        }
        out.records.push(Record { line: *line, step, time, values, event });
    }
    no_step.note(&mut notes, |n| format!("{n} records without {step_key:?} skipped"));
    bad_step.note(&mut notes, |n| format!("{n} records whose {step_key:?} is not an integer skipped"));
    long_keys.note(&mut notes, |n| format!("{n} fields with a name longer than {MAX_KEY_CHARS} characters skipped"));
    bad_time.note(&mut notes, |n| format!("{n} {TIME_COLUMN:?} values that are not finite numbers skipped"));
    for (name, c) in non_numeric {
        c.note(&mut notes, |n| format!("{name:?}: {n} non-numeric values skipped"));
    }
    out.notes = notes;
    out
}

/// A count of skipped things and the first line it happened on.
#[derive(Default)]
struct Counted {
    n: usize,
    first: usize,
}

impl Counted {
    fn add(&mut self, line: usize) {
        if self.n == 0 {
            self.first = line;
        }
        self.n += 1;
    }

    fn note(self, notes: &mut Vec<Note>, what: impl FnOnce(usize) -> String) {
        if self.n > 0 {
            notes.push(Note::file(format!("{} (first on line {})", what(self.n), self.first)));
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "an array",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::Null => "null",
        Value::Object(_) => "an object",
    }
}

/// `(name, value)` of every leaf of `obj`; nested objects joined with `/`.
pub fn flatten<'a>(obj: &'a Map<String, Value>, prefix: &str, out: &mut Vec<(String, &'a Value)>) {
    for (k, v) in obj {
        let name = if prefix.is_empty() { k.clone() } else { format!("{prefix}/{k}") };
        match v {
            Value::Object(inner) => flatten(inner, &name, out),
            _ => out.push((name, v)),
        }
    }
}

/// An integer step: `12`, or a float with no fraction (`12.0`, as MaxText writes `step`).
pub fn parse_step(s: &str) -> Option<i64> {
    let s = s.trim();
    s.parse::<i64>().ok().or_else(|| s.parse::<f64>().ok().and_then(step_from_f64))
}

/// A float that is an integer a step can be (within 2^53, where floats still hold every integer).
pub fn step_from_f64(x: f64) -> Option<i64> {
    (x.is_finite() && x.fract() == 0.0 && x.abs() <= 9_007_199_254_740_992.0).then_some(x as i64)
}

/// A JSON step: an integer, an integral float, or a string holding one.
pub fn json_step(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().and_then(step_from_f64)),
        Value::String(s) => parse_step(s),
        _ => None,
    }
}

/// A JSON metric value: a number, or a string spelling NaN or infinity (what [`sanitize_nonfinite`] turns
/// Python's bare tokens into; Megatron writes `"nan"`).
pub fn json_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => nonfinite(s),
        _ => None,
    }
}

/// `nan`, `inf`, `-inf`, `infinity`, `-infinity` in any case.
pub fn nonfinite(s: &str) -> Option<f64> {
    match s.trim().to_ascii_lowercase().as_str() {
        "nan" | "+nan" | "-nan" => Some(f64::NAN),
        "inf" | "+inf" | "infinity" | "+infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// Replaces Python's bare `NaN`, `Infinity`, `-Infinity` tokens (outside strings) by the strings `"NaN"`,
/// `"Infinity"`, `"-Infinity"`, so that a strict JSON parser accepts the text.
pub fn sanitize_nonfinite(text: &str) -> Cow<'_, str> {
    if !text.contains("NaN") && !text.contains("Infinity") {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 16);
    let (mut in_string, mut escaped, mut copied, mut i) = (false, false, 0, 0);
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        match ["-Infinity", "Infinity", "NaN"].into_iter().find(|t| bytes[i..].starts_with(t.as_bytes())) {
            Some(t) => {
                out.push_str(&text[copied..i]);
                out.push('"');
                out.push_str(t);
                out.push('"');
                i += t.len();
                copied = i;
            }
            None => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// serde_json's message without its ` at line L column C` tail.
pub fn json_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_tokens_cut_off_tails_and_garbage_are_read_or_noted() {
        let text = "{\"step\": 0, \"loss\": NaN, \"lr\": 0.1}\n\
                    garbage here\n\
                    {\"step\": 1, \"loss\": 2.0, \"train\": {\"acc\": 0.5}, \"tag\": \"x\"}\n\
                    [1, 2]\n\
                    {\"step\": 2, \"loss\": Infinity}\n\
                    {\"step\": 3, \"loss\": 1.";
        let m = read(text, StepColumn::Named("step"));
        assert_eq!(m.records.len(), 3);
        assert!(m.records[0].values[0].1.is_nan());
        assert_eq!(m.records[1].values, vec![("loss".to_string(), 2.0), ("train/acc".to_string(), 0.5)]);
        assert_eq!(m.records[2].values[0].1, f64::INFINITY);
        let lines: Vec<Option<usize>> = m.notes.iter().map(|n| n.line).collect();
        assert_eq!(lines, [Some(2), Some(4), Some(6), None], "{:?}", m.notes);
        assert!(m.notes[0].reason.starts_with("not valid JSON"), "{}", m.notes[0]);
        assert!(m.notes[1].reason.contains("found an array"), "{}", m.notes[1]);
        assert!(m.notes[2].reason.contains("cut off"), "{}", m.notes[2]);
        assert_eq!(m.notes[3].reason, "\"tag\": 1 non-numeric values skipped (first on line 3)");
    }

    #[test]
    fn steps_and_long_keys_are_counted() {
        let long = "k".repeat(MAX_KEY_CHARS + 1);
        let text = format!(
            "{{\"loss\": 1}}\n{{\"step\": \"x\", \"loss\": 1}}\n{{\"step\": 4.0, \"{long}\": 1, \"loss\": 3}}\n"
        );
        let m = read(&text, StepColumn::Named("step"));
        assert_eq!(
            m.records,
            vec![Record { line: 3, step: 4, time: None, values: vec![("loss".into(), 3.0)], event: None }]
        );
        let reasons: Vec<&str> = m.notes.iter().map(|n| n.reason.as_str()).collect();
        assert_eq!(
            reasons,
            [
                "1 records without \"step\" skipped (first on line 1)",
                "1 records whose \"step\" is not an integer skipped (first on line 2)",
                "1 fields with a name longer than 255 characters skipped (first on line 3)",
            ]
        );
        assert_eq!(m.objects, 3);
    }

    #[test]
    fn an_event_line_is_marked_not_noted() {
        let long = "x".repeat(100);
        let text = format!(
            "{{\"step\": 20, \"time\": 5.5, \"event\": \"checkpoint\", \"event_s\": 1.0}}\n\
             {{\"step\": 21, \"event\": \"{long}\"}}\n{{\"step\": 22, \"event\": 3, \"loss\": 1}}\n"
        );
        let m = read(&text, StepColumn::Named("step"));
        assert_eq!(m.records[0].event.as_deref(), Some("checkpoint"));
        assert_eq!(m.records[0].values, vec![("event_s".to_string(), 1.0)]);
        assert_eq!(m.records[1].event.as_ref().map(|e| e.chars().count()), Some(MAX_EVENT_CHARS));
        // A number there is not an event: a numeric field like any other.
        assert_eq!((m.records[2].event.as_deref(), m.records[2].values.len()), (None, 2));
        assert!(m.notes.is_empty(), "{:?}", m.notes);
    }

    #[test]
    fn time_is_the_step_clock_not_a_metric() {
        let text =
            "{\"step\": 0, \"time\": 1764662400.25, \"loss\": 2}\n{\"step\": 1, \"time\": \"late\", \"loss\": 1}\n";
        let m = read(text, StepColumn::Named("step"));
        assert_eq!(m.records[0].time, Some(1764662400.25));
        assert_eq!(m.records[0].values, vec![("loss".to_string(), 2.0)]);
        assert_eq!((m.records[1].time, m.records[1].values.len()), (None, 1));
        assert_eq!(m.notes[0].reason, "1 \"time\" values that are not finite numbers skipped (first on line 2)");
    }

    #[test]
    fn detect_finds_the_first_step_column_any_record_has() {
        let m = read("{\"iteration\": 1, \"loss\": 2}\n", StepColumn::Detect);
        assert_eq!(m.step_column.as_deref(), Some("iteration"));
        let m = read("{\"epoch\": 1, \"loss\": 2}\n", StepColumn::Detect);
        assert_eq!((m.step_column, m.records.len(), m.objects), (None, 0, 1));
    }

    #[test]
    fn many_malformed_lines_get_one_count() {
        let text = "x\n".repeat(MAX_LINE_NOTES + 5);
        let o = objects(&text);
        assert_eq!(o.notes.len(), MAX_LINE_NOTES + 1);
        assert_eq!(o.notes.last().unwrap().reason, "5 more malformed lines skipped (25 in all)");
    }

    #[test]
    fn sanitize_leaves_strings_alone() {
        let s = r#"{"a": NaN, "b": "NaN \" Infinity", "c": -Infinity, "d": Infinity}"#;
        let v: Value = serde_json::from_str(&sanitize_nonfinite(s)).unwrap();
        assert!(json_number(&v["a"]).unwrap().is_nan());
        assert_eq!(v["b"], Value::String("NaN \" Infinity".into()));
        assert_eq!(json_number(&v["c"]), Some(f64::NEG_INFINITY));
        assert_eq!(json_number(&v["d"]), Some(f64::INFINITY));
        assert_eq!(parse_step("12.0"), Some(12));
        assert_eq!(parse_step("1.5"), None);
        assert_eq!(parse_step("1e300"), None);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(text in "\\PC*") {
            let _ = read(&text, StepColumn::Detect);
        }
    }
}
