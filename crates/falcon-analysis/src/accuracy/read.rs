//! Reads any supported metrics input, choosing the reader from the path and, for plain text, the content.
//!
//! - a directory: TensorBoard event files under it;
//! - a file whose name contains `tfevents`: one TensorBoard event file;
//! - `.json`: Megatron-LM golden values (or, when it holds one object per line, as `.jsonl`);
//! - `.jsonl`: MaxText metrics when a record has a `learning/` or `perf/` key, else generic JSONL;
//! - `.csv` / `.tsv`: generic CSV;
//! - anything else is sniffed: MaxText console lines (`completed step:`), Megatron-LM log lines
//!   (`iteration N/ M | … | lm loss: …`), or JSON lines (MaxText's GCS `metrics_step_*.txt`); the first
//!   signature met wins.

use std::path::Path;

use super::{generic, maxtext, megatron, tfevents, RunSeries};
use crate::error::{AnalysisError, Result};

/// How to read inputs whose layout is not fixed.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// The step column of generic JSONL/CSV inputs (default: `step`, else `iteration`, else `global_step`).
    pub step_column: Option<String>,
}

/// The formats content sniffing can tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sniffed {
    MaxtextConsole,
    MegatronLog,
    MaxtextJsonl,
    Jsonl,
}

/// Reads `path` (a file or a directory of event files) into its metric series.
pub fn read_path(path: &Path, opts: &ReadOptions) -> Result<RunSeries> {
    let shown = path.display().to_string();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(AnalysisError::NotFound(format!("{shown}: no such file or directory")));
        }
        Err(e) => return Err(AnalysisError::Io(format!("{shown}: {e}"))),
    };
    if meta.is_dir() {
        return tfevents::read_dir(path);
    }
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if file_name.contains("tfevents") {
        return tfevents::read_file(path);
    }
    let bytes = std::fs::read(path).map_err(|e| AnalysisError::Io(format!("{shown}: {e}")))?;
    let (text, lossy) = match String::from_utf8(bytes) {
        Ok(t) => (t, false),
        Err(e) => (String::from_utf8_lossy(e.as_bytes()).into_owned(), true),
    };
    if text.trim().is_empty() {
        return Err(AnalysisError::Invalid(format!("{shown}: empty file")));
    }
    let ext = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    let step_column = opts.step_column.as_deref();
    let mut run = match ext.as_str() {
        "json" if !looks_like_json_lines(&text) => megatron::parse_golden(&text, &shown)?,
        "json" | "jsonl" => {
            if has_maxtext_keys(&text) {
                maxtext::parse_jsonl(&text, &shown)?
            } else {
                generic::parse_jsonl(&text, &shown, step_column)?
            }
        }
        "csv" | "tsv" => generic::parse_csv(&text, &shown, step_column)?,
        _ => match sniff(&text) {
            Some(Sniffed::MaxtextConsole) => maxtext::parse_console(&text, &shown)?,
            Some(Sniffed::MegatronLog) => megatron::parse_log(&text, &shown)?,
            Some(Sniffed::MaxtextJsonl) => maxtext::parse_jsonl(&text, &shown)?,
            Some(Sniffed::Jsonl) => generic::parse_jsonl(&text, &shown, step_column)?,
            None => {
                return Err(AnalysisError::Invalid(format!(
                    "{shown}: cannot tell the format (expected a MaxText console log with `completed step: N, …` lines, \
                     a Megatron-LM log with `iteration N/ M | … | lm loss: … |` lines, a .jsonl/.csv metrics table, \
                     a Megatron golden-values .json, or a TensorBoard event file or directory)"
                )));
            }
        },
    };
    if lossy {
        run.notes.push("the file is not valid UTF-8: invalid bytes replaced".into());
    }
    Ok(run)
}

/// Whether a JSONL text carries MaxText's metric keys (`"learning/…"` or `"perf/…"` as a key).
fn has_maxtext_keys(text: &str) -> bool {
    text.contains("\"learning/") || text.contains("\"perf/")
}

/// Whether the text is JSON lines (a first line that is a whole JSON object, and more lines after it),
/// not one JSON document.
fn looks_like_json_lines(text: &str) -> bool {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first_is_object = lines.next().is_some_and(|l| {
        l.starts_with('{') && serde_json::from_str::<serde_json::Value>(&generic::sanitize_nonfinite(l)).is_ok()
    });
    first_is_object && lines.next().is_some()
}

/// The first format signature met in the text.
fn sniff(text: &str) -> Option<Sniffed> {
    let mut first_content = true;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if first_content {
            first_content = false;
            if trimmed.starts_with('{') && trimmed.ends_with('}') {
                return Some(if has_maxtext_keys(text) { Sniffed::MaxtextJsonl } else { Sniffed::Jsonl });
            }
        }
        if line.contains("completed step: ") || line.contains("Completed eval after train step ") {
            return Some(Sniffed::MaxtextConsole);
        }
        if line.contains("iteration")
            && line.contains(" | ")
            && (line.contains("lm loss") || line.contains("consumed samples"))
        {
            return Some(Sniffed::MegatronLog);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_first_signature() {
        assert_eq!(sniff("banner\ncompleted step: 1, seconds: 1.0, loss: 2.0\n"), Some(Sniffed::MaxtextConsole));
        assert_eq!(
            sniff("args\n [2025-01-01 00:00:00] iteration 10/ 100 | consumed samples: 320 | lm loss: 1.0E+00 |\n"),
            Some(Sniffed::MegatronLog)
        );
        assert_eq!(sniff("{\"step\": 0.0, \"learning/loss\": 1.0}\n"), Some(Sniffed::MaxtextJsonl));
        assert_eq!(sniff("{\"step\": 0, \"loss\": 1.0}\n"), Some(Sniffed::Jsonl));
        assert_eq!(sniff("hello\nworld\n"), None);
    }
}
