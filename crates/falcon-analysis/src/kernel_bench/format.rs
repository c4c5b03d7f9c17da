//! Reading kernel-bench results: JSONL (one object per line) or CSV, checked field by field. Every error names
//! `file:line` and the field; nothing here panics on any input.

use crate::error::{AnalysisError, Result};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Which syntax a results file was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResultsFormat {
    /// One JSON object per line.
    Jsonl,
    /// Comma-separated values with a header row.
    Csv,
}

/// One measurement: a variant of a kernel at one shape and dtype on one hardware type.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct KernelResult {
    /// The problem (`matmul`).
    pub kernel: String,
    /// The implementation (`jnp_dot`).
    pub variant: String,
    /// True on the baseline variant of its (kernel, shape, dtype, hardware) group.
    pub reference: bool,
    /// The workload's own correctness check against the reference; `None` when the row does not say.
    pub correct: Option<bool>,
    /// The shape as written (any JSON; `null` when absent).
    pub shape: Value,
    /// The shape rendered as a key ([`shape_key`]): what rows are matched by.
    pub shape_key: String,
    /// Data type (`fp32`); empty when absent.
    pub dtype: String,
    /// Accelerator type (`v5p-8`, `cpu`); empty when absent.
    pub hardware: String,
    /// Timing samples, milliseconds per call (finite, ≥ 0, at least one).
    pub times_ms: Vec<f64>,
    /// Floating-point operations per call.
    pub flops: Option<f64>,
    /// Bytes moved per call.
    pub bytes: Option<f64>,
    /// 1-based line of the row in its file.
    pub line: usize,
}

/// A results file, read.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct KernelResults {
    /// The file read.
    pub path: PathBuf,
    /// How it was read.
    pub format: ResultsFormat,
    /// Its rows in file order.
    pub rows: Vec<KernelResult>,
}

/// Reads a results file: CSV when its name ends in `.csv`, else JSONL. A directory stands for its newest
/// `kernel_bench*.jsonl` / `kernel_bench*.csv` file. A missing file is not found; a malformed one is invalid,
/// with `file:line` and the field in the message.
pub fn read_results(path: &Path) -> Result<KernelResults> {
    let meta = std::fs::metadata(path).map_err(|e| AnalysisError::NotFound(format!("{}: {e}", path.display())))?;
    let file = if meta.is_dir() { newest_in(path)? } else { path.to_path_buf() };
    let bytes = std::fs::read(&file).map_err(|e| AnalysisError::Io(format!("{}: {e}", file.display())))?;
    let name = file.display().to_string();
    let format = if is_csv(&file) { ResultsFormat::Csv } else { ResultsFormat::Jsonl };
    let rows = match format {
        ResultsFormat::Csv => parse_csv(&name, &bytes)?,
        ResultsFormat::Jsonl => parse_jsonl(&name, &bytes)?,
    };
    Ok(KernelResults { path: file, format, rows })
}

fn is_csv(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv"))
}

/// The newest (by modification time, then name) `kernel_bench*.jsonl|csv` file directly in `dir`.
fn newest_in(dir: &Path) -> Result<PathBuf> {
    let entries = std::fs::read_dir(dir).map_err(|e| AnalysisError::Io(format!("{}: {e}", dir.display())))?;
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    for entry in entries.flatten() {
        let p = entry.path();
        let name = entry.file_name().to_string_lossy().to_ascii_lowercase();
        let wanted = name.starts_with("kernel_bench") && (name.ends_with(".jsonl") || name.ends_with(".csv"));
        if !wanted || !p.is_file() {
            continue;
        }
        let modified = entry.metadata().and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH);
        if best.as_ref().is_none_or(|(t, bp)| (modified, &p) > (*t, bp)) {
            best = Some((modified, p));
        }
    }
    best.map(|(_, p)| p).ok_or_else(|| {
        AnalysisError::NotFound(format!(
            "{}: no kernel_bench*.jsonl or kernel_bench*.csv file in this directory",
            dir.display()
        ))
    })
}

/// Parses JSONL text (`name` is used in messages). Blank lines are skipped.
pub fn parse_jsonl(name: &str, bytes: &[u8]) -> Result<Vec<KernelResult>> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut rows = Vec::new();
    for (idx, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = idx + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let at = Loc { name, line };
        let text = std::str::from_utf8(raw).map_err(|e| at.err(format!("not UTF-8 text ({e})")))?;
        let value: Value = serde_json::from_str(text).map_err(|e| at.err(format!("not valid JSON: {e}")))?;
        let Value::Object(obj) = value else {
            return Err(at.err(format!("expected a JSON object, found {}", type_name(&value))));
        };
        rows.push(row_from_object(&at, &obj)?);
    }
    finish(name, rows)
}

/// Parses CSV text with a header row (`name` is used in messages). Columns: kernel, variant, reference,
/// correct, shape, dtype, hardware, times_ms (samples separated by spaces or `;`), flops, bytes; kernel, variant
/// and times_ms are required, others may be absent or empty, unknown columns are ignored.
pub fn parse_csv(name: &str, bytes: &[u8]) -> Result<Vec<KernelResult>> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut reader = csv::ReaderBuilder::new().has_headers(true).trim(csv::Trim::All).from_reader(bytes);
    let header_loc = Loc { name, line: 1 };
    let headers = reader.headers().map_err(|e| csv_err(name, &e))?.clone();
    let column = |field: &str| headers.iter().position(|h| h.eq_ignore_ascii_case(field));
    let cols = Columns {
        kernel: column("kernel"),
        variant: column("variant"),
        reference: column("reference"),
        correct: column("correct"),
        shape: column("shape"),
        dtype: column("dtype"),
        hardware: column("hardware"),
        times_ms: column("times_ms"),
        flops: column("flops"),
        bytes: column("bytes"),
    };
    for (field, col) in [("kernel", cols.kernel), ("variant", cols.variant), ("times_ms", cols.times_ms)] {
        if col.is_none() {
            let have: Vec<&str> = headers.iter().collect();
            return Err(header_loc.err(format!("missing column `{field}` (the header has: {})", have.join(", "))));
        }
    }
    let mut rows = Vec::new();
    let mut record = csv::StringRecord::new();
    loop {
        match reader.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(csv_err(name, &e)),
        }
        let line = record.position().map_or(0, |p| usize::try_from(p.line()).unwrap_or(usize::MAX));
        if record.iter().all(str::is_empty) {
            continue;
        }
        let at = Loc { name, line };
        rows.push(row_from_csv(&at, &cols, &record)?);
    }
    finish(name, rows)
}

/// Renders a shape as the key rows are matched by: `null` → empty; a string as is; an array of scalars
/// joined by `x` (`256x256`); an object as `key=value` pairs sorted by key and joined by `,`
/// (`k=256,m=256,n=256`); anything else as compact JSON.
pub fn shape_key(shape: &Value) -> String {
    match shape {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(items) if items.iter().all(|v| !v.is_array() && !v.is_object()) => {
            items.iter().map(shape_key).collect::<Vec<_>>().join("x")
        }
        Value::Array(_) => shape.to_string(),
        Value::Object(map) => {
            let sorted: BTreeMap<&String, &Value> = map.iter().collect();
            sorted.into_iter().map(|(k, v)| format!("{k}={}", shape_key(v))).collect::<Vec<_>>().join(",")
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Rows

/// Where a row is: for error messages.
struct Loc<'a> {
    name: &'a str,
    line: usize,
}

impl Loc<'_> {
    fn err(&self, msg: String) -> AnalysisError {
        AnalysisError::Invalid(format!("{}:{}: {msg}", self.name, self.line))
    }

    fn field(&self, field: &str, msg: impl std::fmt::Display) -> AnalysisError {
        self.err(format!("field `{field}`: {msg}"))
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn row_from_object(at: &Loc<'_>, obj: &Map<String, Value>) -> Result<KernelResult> {
    let kernel = required_name(at, obj, "kernel")?;
    let variant = required_name(at, obj, "variant")?;
    let reference = opt_bool(at, obj, "reference")?.unwrap_or(false);
    let correct = opt_bool(at, obj, "correct")?;
    let shape = obj.get("shape").cloned().unwrap_or(Value::Null);
    let dtype = opt_string(at, obj, "dtype")?;
    let hardware = opt_string(at, obj, "hardware")?;
    let times_ms = match obj.get("times_ms") {
        None | Some(Value::Null) => return Err(at.field("times_ms", "missing (an array of timing samples in ms)")),
        Some(Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, v) in items.iter().enumerate() {
                match v.as_f64() {
                    Some(x) if x.is_finite() && x >= 0.0 => out.push(x),
                    Some(x) => {
                        return Err(at.field(&format!("times_ms[{i}]"), format!("expected a time ≥ 0, found {x}")))
                    }
                    None => {
                        return Err(
                            at.field(&format!("times_ms[{i}]"), format!("expected a number, found {}", type_name(v)))
                        )
                    }
                }
            }
            out
        }
        Some(other) => {
            return Err(at.field("times_ms", format!("expected an array of numbers, found {}", type_name(other))))
        }
    };
    if times_ms.is_empty() {
        return Err(at.field("times_ms", "no samples (the array is empty)"));
    }
    let flops = opt_count(at, obj, "flops")?;
    let bytes = opt_count(at, obj, "bytes")?;
    Ok(KernelResult {
        kernel,
        variant,
        reference,
        correct,
        shape_key: shape_key(&shape),
        shape,
        dtype,
        hardware,
        times_ms,
        flops,
        bytes,
        line: at.line,
    })
}

fn required_name(at: &Loc<'_>, obj: &Map<String, Value>, field: &str) -> Result<String> {
    match obj.get(field) {
        None | Some(Value::Null) => Err(at.field(field, "missing")),
        Some(Value::String(s)) if s.trim().is_empty() => Err(at.field(field, "empty")),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(at.field(field, format!("expected a string, found {}", type_name(other)))),
    }
}

fn opt_string(at: &Loc<'_>, obj: &Map<String, Value>, field: &str) -> Result<String> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(at.field(field, format!("expected a string, found {}", type_name(other)))),
    }
}

fn opt_bool(at: &Loc<'_>, obj: &Map<String, Value>, field: &str) -> Result<Option<bool>> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(at.field(field, format!("expected true or false, found {}", type_name(other)))),
    }
}

fn opt_count(at: &Loc<'_>, obj: &Map<String, Value>, field: &str) -> Result<Option<f64>> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Number(_)) => match v.as_f64() {
            Some(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
            _ => Err(at.field(field, format!("expected a number ≥ 0, found {v}"))),
        },
        Some(other) => Err(at.field(field, format!("expected a number ≥ 0, found {}", type_name(other)))),
    }
}

/// Column indices of a CSV header.
struct Columns {
    kernel: Option<usize>,
    variant: Option<usize>,
    reference: Option<usize>,
    correct: Option<usize>,
    shape: Option<usize>,
    dtype: Option<usize>,
    hardware: Option<usize>,
    times_ms: Option<usize>,
    flops: Option<usize>,
    bytes: Option<usize>,
}

fn row_from_csv(at: &Loc<'_>, cols: &Columns, record: &csv::StringRecord) -> Result<KernelResult> {
    let cell = |col: Option<usize>| col.and_then(|i| record.get(i)).unwrap_or("");
    let name = |field: &str, col: Option<usize>| -> Result<String> {
        let s = cell(col);
        if s.is_empty() {
            return Err(at.field(field, "empty"));
        }
        Ok(s.to_string())
    };
    let kernel = name("kernel", cols.kernel)?;
    let variant = name("variant", cols.variant)?;
    let reference = csv_bool(at, "reference", cell(cols.reference))?.unwrap_or(false);
    let correct = csv_bool(at, "correct", cell(cols.correct))?;
    let shape = csv_shape(cell(cols.shape));
    let times_ms = csv_times(at, cell(cols.times_ms))?;
    let flops = csv_count(at, "flops", cell(cols.flops))?;
    let bytes = csv_count(at, "bytes", cell(cols.bytes))?;
    Ok(KernelResult {
        kernel,
        variant,
        reference,
        correct,
        shape_key: shape_key(&shape),
        shape,
        dtype: cell(cols.dtype).to_string(),
        hardware: cell(cols.hardware).to_string(),
        times_ms,
        flops,
        bytes,
        line: at.line,
    })
}

fn csv_bool(at: &Loc<'_>, field: &str, s: &str) -> Result<Option<bool>> {
    match s.to_ascii_lowercase().as_str() {
        "" => Ok(None),
        "true" | "t" | "yes" | "y" | "1" => Ok(Some(true)),
        "false" | "f" | "no" | "n" | "0" => Ok(Some(false)),
        _ => Err(at.field(field, format!("expected true or false, found `{s}`"))),
    }
}

/// A CSV shape cell: JSON when it parses as an array or object, a number when it is one, else the text.
fn csv_shape(s: &str) -> Value {
    if s.is_empty() {
        return Value::Null;
    }
    if s.starts_with('[') || s.starts_with('{') {
        if let Ok(v) = serde_json::from_str::<Value>(s) {
            return v;
        }
    }
    if let Ok(v @ Value::Number(_)) = serde_json::from_str::<Value>(s) {
        return v;
    }
    Value::String(s.to_string())
}

fn csv_times(at: &Loc<'_>, s: &str) -> Result<Vec<f64>> {
    let body = s.strip_prefix('[').and_then(|t| t.strip_suffix(']')).unwrap_or(s);
    let seps: &[char] = if s.starts_with('[') { &[',', ' ', '\t', ';'] } else { &[' ', '\t', ';'] };
    let mut out = Vec::new();
    for (i, tok) in body.split(seps).filter(|t| !t.is_empty()).enumerate() {
        match tok.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => out.push(x),
            _ => return Err(at.field(&format!("times_ms[{i}]"), format!("expected a time ≥ 0, found `{tok}`"))),
        }
    }
    if out.is_empty() {
        return Err(at.field("times_ms", "no samples (separate them with spaces or `;`)"));
    }
    Ok(out)
}

fn csv_count(at: &Loc<'_>, field: &str, s: &str) -> Result<Option<f64>> {
    if s.is_empty() {
        return Ok(None);
    }
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
        _ => Err(at.field(field, format!("expected a number ≥ 0, found `{s}`"))),
    }
}

fn csv_err(name: &str, e: &csv::Error) -> AnalysisError {
    let line = e.position().map_or(0, |p| p.line());
    let what = match e.kind() {
        csv::ErrorKind::UnequalLengths { expected_len, len, .. } => {
            format!("{len} fields where the header has {expected_len}")
        }
        csv::ErrorKind::Utf8 { err, .. } => format!("not UTF-8 text (field {})", err.field() + 1),
        _ => e.to_string(),
    };
    if line > 0 {
        AnalysisError::Invalid(format!("{name}:{line}: {what}"))
    } else {
        AnalysisError::Invalid(format!("{name}: {what}"))
    }
}

// ---------------------------------------------------------------------------------------------------------
// Whole-file checks

/// Refuses an empty file, duplicate rows and a second reference in one group.
fn finish(name: &str, rows: Vec<KernelResult>) -> Result<Vec<KernelResult>> {
    if rows.is_empty() {
        return Err(AnalysisError::Invalid(format!("{name}: no kernel-bench results in this file")));
    }
    let mut seen: BTreeMap<(&str, &str, &str, &str, &str), usize> = BTreeMap::new();
    let mut references: BTreeMap<(&str, &str, &str, &str), (usize, &str)> = BTreeMap::new();
    for r in &rows {
        let key = (r.kernel.as_str(), r.variant.as_str(), r.shape_key.as_str(), r.dtype.as_str(), r.hardware.as_str());
        if let Some(first) = seen.insert(key, r.line) {
            return Err(AnalysisError::Invalid(format!(
                "{name}:{}: duplicate row: kernel `{}` variant `{}` shape `{}` dtype `{}` hardware `{}` is already at line {first}",
                r.line, r.kernel, r.variant, r.shape_key, r.dtype, r.hardware
            )));
        }
        if r.reference {
            let group = (r.kernel.as_str(), r.shape_key.as_str(), r.dtype.as_str(), r.hardware.as_str());
            if let Some((first, other)) = references.insert(group, (r.line, r.variant.as_str())) {
                return Err(AnalysisError::Invalid(format!(
                    "{name}:{}: field `reference`: kernel `{}` shape `{}` dtype `{}` hardware `{}` already has a reference row (variant `{other}` at line {first})",
                    r.line, r.kernel, r.shape_key, r.dtype, r.hardware
                )));
            }
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn shape_keys() {
        assert_eq!(shape_key(&serde_json::json!({"m": 256, "k": 128, "n": 64})), "k=128,m=256,n=64");
        assert_eq!(shape_key(&serde_json::json!([256, 512])), "256x512");
        assert_eq!(shape_key(&serde_json::json!({"q": [1, 8], "kv": [1, 4]})), "kv=1x4,q=1x8");
        assert_eq!(shape_key(&serde_json::json!([[1, 2], [3]])), "[[1,2],[3]]");
        assert_eq!(shape_key(&Value::Null), "");
        assert_eq!(shape_key(&serde_json::json!("1024x1024")), "1024x1024");
    }

    #[test]
    fn csv_rows() {
        let text = "kernel,variant,reference,correct,shape,dtype,hardware,times_ms,flops,bytes\n\
                    mm,ref,true,true,\"[4,4]\",fp32,cpu,1 2 3,128,\n\
                    mm,fast,false,yes,4x4,fp32,cpu,0.5;0.6;0.7,128,192\n";
        let rows = parse_csv("t.csv", text.as_bytes()).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].shape_key, "4x4");
        assert_eq!(rows[1].shape_key, "4x4");
        assert_eq!(rows[0].times_ms, vec![1.0, 2.0, 3.0]);
        assert_eq!(rows[1].times_ms, vec![0.5, 0.6, 0.7]);
        assert_eq!(rows[0].bytes, None);
        assert_eq!(rows[1].bytes, Some(192.0));
        assert_eq!(rows[1].line, 3);
        let bad = "kernel,variant,times_ms\nmm,a,1 x 3\n";
        let e = parse_csv("t.csv", bad.as_bytes()).unwrap_err().to_string();
        assert!(e.starts_with("t.csv:2: field `times_ms[1]`"), "{e}");
        let missing = "kernel,times_ms\nmm,1\n";
        let e = parse_csv("t.csv", missing.as_bytes()).unwrap_err().to_string();
        assert!(e.contains("t.csv:1: missing column `variant`"), "{e}");
        let ragged = "kernel,variant,times_ms\nmm,a,1,2\n";
        let e = parse_csv("t.csv", ragged.as_bytes()).unwrap_err().to_string();
        assert!(e.starts_with("t.csv:2:"), "{e}");
    }

    #[test]
    fn jsonl_errors_name_line_and_field() {
        let ok = r#"{"kernel":"mm","variant":"a","times_ms":[1]}"#;
        let cases = [
            (format!("{ok}\n\nnot json\n"), "f:3: not valid JSON"),
            (format!("{ok}\n[1]\n"), "f:2: expected a JSON object"),
            (r#"{"variant":"a","times_ms":[1]}"#.to_string(), "f:1: field `kernel`: missing"),
            (r#"{"kernel":"mm","variant":"a","times_ms":[1,-2]}"#.to_string(), "f:1: field `times_ms[1]`"),
            (r#"{"kernel":"mm","variant":"a","times_ms":[]}"#.to_string(), "f:1: field `times_ms`: no samples"),
            (r#"{"kernel":"mm","variant":"a","times_ms":[1],"flops":"x"}"#.to_string(), "f:1: field `flops`"),
            (r#"{"kernel":"mm","variant":"a","times_ms":[1],"correct":"yes"}"#.to_string(), "f:1: field `correct`"),
            (format!("{ok}\n{ok}\n"), "f:2: duplicate row"),
            (String::new(), "f: no kernel-bench results"),
        ];
        for (text, want) in cases {
            let e = parse_jsonl("f", text.as_bytes()).unwrap_err().to_string();
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
        let two_refs = r#"{"kernel":"mm","variant":"a","reference":true,"times_ms":[1]}
{"kernel":"mm","variant":"b","reference":true,"times_ms":[1]}"#;
        let e = parse_jsonl("f", two_refs.as_bytes()).unwrap_err().to_string();
        assert!(e.starts_with("f:2: field `reference`"), "{e}");
    }

    proptest! {
        #[test]
        fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = parse_jsonl("p", &bytes);
            let _ = parse_csv("p", &bytes);
        }

        #[test]
        fn parsers_never_panic_on_near_valid_text(
            lines in proptest::collection::vec(
                prop_oneof![
                    Just(r#"{"kernel":"mm","variant":"a","reference":true,"times_ms":[1,2]}"#.to_string()),
                    Just(r#"{"kernel":"mm","variant":"b","times_ms":[1e308,0],"flops":1e400}"#.to_string()),
                    Just("kernel,variant,times_ms".to_string()),
                    Just("mm,a,1;2".to_string()),
                    "[ -~]{0,60}",
                ],
                0..8,
            )
        ) {
            let text = lines.join("\n");
            let _ = parse_jsonl("p", text.as_bytes());
            let _ = parse_csv("p", text.as_bytes());
        }
    }
}
