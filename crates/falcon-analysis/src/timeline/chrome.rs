//! Chrome trace JSON → [`Timeline`]: XLA/XProf trace viewer output, JAX's `*.trace.json.gz`, PyTorch
//! (Kineto) profiler traces, and any other Chrome Trace Event Format file.
//!
//! # Streaming
//!
//! The document is never held as a `serde_json::Value`: a serde visitor walks the top-level object
//! (or array) and deserializes each element of `traceEvents` into a small fixed set of fields
//! (`ph`, `name`, `cat`, `pid`, `tid`, `ts`, `dur` and, from `args`, only `name`, `hlo_op`,
//! `hlo_module`, `hlo_category`, `group_id`, `step_num`, `_r`); everything else is skipped unparsed
//! into memory. Names are interned as they are read, and each kept event is one 32-byte row until the
//! timeline (24 bytes an event) is built.
//!
//! # Phases
//!
//! `X` complete events are kept (one without `dur` is dropped, as Perfetto does); `B`/`E` pairs are
//! matched per (`pid`, `tid`) in file order (the spec requires them ordered per thread) into complete
//! events, unmatched ones dropped; `M` `process_name` / `thread_name` identify devices and threads;
//! instants (`i`/`I`/`R`) are dropped except on an XLA device op line, where XProf's trace viewer
//! writes a zero-duration op as an instant: there they are kept as zero-duration ops so that op
//! counts match the XSpace (the process/thread names must precede them, as XProf writes them);
//! counters, flows, async and other phases are skipped and counted in `notes`. Timestamps are µs
//! (floats) converted to integer picoseconds with rounding, relative to the first timestamp read,
//! so epoch-scale `ts` values keep the precision of their `f64` parse.
//!
//! # Dialects
//!
//! - **XLA / XProf** (a `process_name` starting with `/device:` or `/host:`): a process named
//!   `/device:TPU:…` or `/device:GPU:…` is a device (`id` = `pid`). TPU: its `XLA Ops` thread holds
//!   the ops, `XLA Modules` the modules, `Steps` the step markers; `Async XLA Ops` and the lines
//!   XProf derives (`Framework Ops`, `Source code`, `Host Offload Ops row N`, `XLA TraceMe`, …) are
//!   skipped. GPU: every stream thread is an op line. Ops are classified as by the XSpace reader
//!   ([`super::xspace::classify_xla_op`] with the `hlo_category` arg). When no device process exists
//!   (a CPU capture, e.g. JAX's own `*.trace.json.gz` with only `/host:CPU`), the events carrying an
//!   `hlo_op` arg form one [`DeviceKind::CpuExecutor`] device named by that arg, exactly as the XSpace
//!   reader does, and events with `hlo_module` but no `hlo_op` its modules. The other host events are
//!   host threads; host step markers follow the XSpace rule (`train…`/`test…`/`TraceContext…`
//!   without `/`, with a `step_num`, `group_id` or non-zero `_r` arg).
//! - **PyTorch / Kineto** (envelope keys `schemaVersion`, `deviceProperties`, `traceName`,
//!   `baseTimeNanoseconds`, or `cat` values of the profiler): events of `cat` `kernel`,
//!   `gpu_memcpy`, `gpu_memset` are GPU device ops (device = `pid`, streams = `tid` merged;
//!   memcpy/memset → MemCopy, NCCL kernels → Collective, else Compute); `gpu_user_annotation` is
//!   skipped. In a CPU-only trace the device is the CPU op threads: the **top-level** `cpu_op` events
//!   of every thread (those not nested in another `cpu_op` of the same thread) form one CpuExecutor
//!   device, so its busy time is their union. `ProfilerStep#N` events (not `gpu_user_annotation`)
//!   are [`StepSource::ProfilerStep`] markers. Every other event (nested `cpu_op`s included) goes to
//!   its host thread. `baseTimeNanoseconds` gives the absolute origin.
//! - Any other Chrome trace: all events are host threads.
//!
//! # Errors
//!
//! Malformed input never panics: invalid or truncated JSON, a read error (truncated gzip), a document
//! that is not a trace (a scalar, an object without `traceEvents`, an array whose objects have no
//! `ph` — e.g. an XProf tool output table) each give a [`ChromeTraceError`] with the line and column
//! where known.
//!
//! # Bounds on hostile input
//!
//! The read fails at the first byte that cannot start a trace (a document starts with `{` or `[`, a trace
//! event with `{`), so a file of zeros or random bytes costs one buffer, not its whole length. A gzipped file
//! inflates through [`crate::limits::Bounded`]: more than the cap of decompressed bytes
//! ([`read_chrome_trace_file_with`]; [`crate::limits::DEFAULT_MAX_DECOMPRESSED_BYTES`] by default) is
//! [`ChromeTraceError::TooLarge`]. One JSON value (an event, a top-level member) may take at most
//! [`MAX_VALUE_BYTES`], so no input makes the read buffer grow past about twice that.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::xspace::{
    classify_cpu_op, classify_gpu_kernel, classify_xla_op, device_order, is_derived_host_line, is_gpu_stream_line,
    is_host_step_marker_name, sort_events, FxMap, Interner, CPU_EXECUTOR_NAME,
};
use super::{
    Device, DeviceKind, Event, EventClass, HostThread, Launch, NameId, StepMarker, StepSource, Timeline, TimelineSource,
};
use crate::error::AnalysisError;

/// Where in the input an error was found (1-based line, column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// Why a Chrome trace could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChromeTraceError {
    /// Well-formed input that is not a Chrome trace.
    #[error("not a Chrome trace: {reason}")]
    NotATrace { reason: String, position: Option<Position> },
    /// Invalid JSON.
    #[error("invalid JSON: {message}")]
    Syntax { message: String, position: Option<Position> },
    /// The JSON ends in the middle of a value.
    #[error("the JSON ends early (truncated file?): {message}")]
    Truncated { message: String, position: Option<Position> },
    /// Reading failed (I/O error, truncated or corrupt gzip).
    #[error("read error (truncated or corrupt gzip?): {message}")]
    Io { message: String, position: Option<Position> },
    /// The compressed input inflates past the cap on decompressed bytes (see [`crate::limits`]).
    #[error("decompresses to more than {limit} bytes, the cap on decompressed input")]
    TooLarge { limit: u64 },
}

/// The most bytes one JSON value of the document (a trace event, a top-level member other than
/// `traceEvents`) may take: real events are well under a MiB.
pub const MAX_VALUE_BYTES: usize = 256 << 20;

impl ChromeTraceError {
    /// Line and column of the error, when known.
    pub fn position(&self) -> Option<Position> {
        match self {
            ChromeTraceError::NotATrace { position, .. }
            | ChromeTraceError::Syntax { position, .. }
            | ChromeTraceError::Truncated { position, .. }
            | ChromeTraceError::Io { position, .. } => *position,
            ChromeTraceError::TooLarge { .. } => None,
        }
    }
}

/// Reads a Chrome trace file, gzip-compressed or not (detected from the magic bytes, not the name), with
/// the default cap on decompressed bytes.
pub fn read_chrome_trace_file(path: &Path) -> Result<Timeline, AnalysisError> {
    read_chrome_trace_file_with(path, crate::limits::DEFAULT_MAX_DECOMPRESSED_BYTES)
}

/// [`read_chrome_trace_file`] with a cap of `max_decompressed` bytes on what a gzipped file inflates to
/// ([`AnalysisError::DecompressedTooLarge`] past it). Only a regular file is read (a FIFO or a device is
/// refused before it is opened).
pub fn read_chrome_trace_file_with(path: &Path, max_decompressed: u64) -> Result<Timeline, AnalysisError> {
    let meta = std::fs::metadata(path).map_err(|e| AnalysisError::NotFound(format!("{}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(AnalysisError::Invalid(format!(
            "{}: not a regular file (a directory, device, FIFO or socket)",
            path.display()
        )));
    }
    let file = std::fs::File::open(path).map_err(|e| AnalysisError::NotFound(format!("{}: {e}", path.display())))?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let gz = {
        let head = reader.fill_buf().map_err(|e| AnalysisError::Io(format!("reading {}: {e}", path.display())))?;
        head.starts_with(&[0x1f, 0x8b])
    };
    let result = if gz {
        let inflated = crate::limits::Bounded::new(flate2::bufread::MultiGzDecoder::new(reader), max_decompressed);
        from_chrome_json(BufReader::with_capacity(1 << 16, inflated))
    } else {
        from_chrome_json(reader)
    };
    result.map_err(|e| match e {
        ChromeTraceError::TooLarge { limit } => AnalysisError::decompressed_too_large(path, limit),
        ChromeTraceError::Io { .. } => AnalysisError::Io(format!("reading {}: {e}", path.display())),
        e => AnalysisError::Invalid(format!("{}: {e}", path.display())),
    })
}

/// Reads a Chrome trace JSON document (uncompressed) from `reader`, streaming (see the module docs).
/// Pass a buffered reader for speed.
///
/// An input larger than the first buffer (1 MiB) is read in a 3-stage pipeline on scoped threads:
/// this thread reads and scans, copying whole events into ~1 MiB batches; a second thread parses each
/// batch's events with serde; a third interns their names and feeds the [`Parser`], in input order.
/// Bounded channels keep at most a few batches in flight. Errors are those of a sequential read: the
/// first one in input order.
pub fn from_chrome_json(reader: impl Read) -> Result<Timeline, ChromeTraceError> {
    let mut parser = Parser::default();
    let mut scanner = Scanner::new(reader);
    scanner.prefill();
    // All of it read, or a read failed within the first buffer: nothing to overlap, so no threads.
    if scanner.eof || scanner.pending.is_some() {
        let mut batcher = Batcher::new(|raw: RawBatch| apply(&mut parser, preparse(&raw)));
        let scanned = scanner.document(&mut |b: &[u8], line, col| batcher.push(b, line, col));
        batcher.flush()?;
        scanned?;
    } else {
        pipeline(&mut scanner, &mut parser)?;
    }
    parser.set_envelope(std::mem::take(&mut scanner.env));
    parser.finish()
}

/// The threaded read (see [`from_chrome_json`]).
fn pipeline<R: Read>(scanner: &mut Scanner<R>, parser: &mut Parser) -> Result<(), ChromeTraceError> {
    use std::sync::mpsc::sync_channel;
    let thread_failed = |what: &str| ChromeTraceError::Io {
        message: format!("internal error: the {what} thread failed"),
        position: None,
    };
    std::thread::scope(|s| {
        let (raw_tx, raw_rx) = sync_channel::<RawBatch>(2);
        let (pre_tx, pre_rx) = sync_channel::<PreBatch>(2);
        let parse = s.spawn(move || {
            for raw in raw_rx {
                let pb = preparse(&raw);
                drop(raw);
                let stop = pb.err.is_some();
                if pre_tx.send(pb).is_err() || stop {
                    break;
                }
            }
        });
        let feed = s.spawn(move || -> Result<(), ChromeTraceError> {
            for pb in pre_rx {
                apply(parser, pb)?;
            }
            Ok(())
        });
        // A send fails only when a later stage stopped, on an error that comes first in the input.
        let mut batcher = Batcher::new(move |raw: RawBatch| {
            raw_tx.send(raw).map_err(|_| ChromeTraceError::Io { message: "pipeline closed".into(), position: None })
        });
        let scanned = scanner.document(&mut |b: &[u8], line, col| batcher.push(b, line, col));
        let flushed = batcher.flush();
        drop(batcher);
        let parsed = parse.join();
        feed.join().map_err(|_| thread_failed("parser"))??;
        parsed.map_err(|_| thread_failed("event parsing"))?;
        flushed?;
        scanned
    })
}

// ---------------------------------------------------------------------------------------------
// The outer scanner: finds the top-level structure and the bounds of each event, which serde then
// parses from the buffer (`from_slice` is several times faster than serde's byte-wise reader).

struct Scanner<R> {
    r: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    eof: bool,
    /// Line number (1-based) at `pos`, and the absolute offset where that line starts.
    line: usize,
    line_start: u64,
    /// Absolute offset of `buf[0]`.
    consumed: u64,
    /// A read error met while prefilling, reported by the next `fill` (where the reads would have met it).
    pending: Option<std::io::Error>,
    /// What the top level says (read here, handed to the [`Parser`] at the end).
    env: Envelope,
}

/// The top-level facts that the scanner reads outside `traceEvents`.
#[derive(Default)]
struct Envelope {
    base_time_ns: Option<i64>,
    pytorch_envelope: bool,
    saw_trace_events: bool,
    top_is_array: bool,
    top_keys: Vec<String>,
}

enum Top {
    Object,
    Array,
}

impl<R: Read> Scanner<R> {
    fn new(r: R) -> Self {
        Scanner {
            r,
            buf: vec![0; 64 << 10],
            pos: 0,
            end: 0,
            eof: false,
            line: 1,
            line_start: 0,
            consumed: 0,
            pending: None,
            env: Envelope::default(),
        }
    }

    /// Fills the empty buffer, growing it to [`PREFILL_BYTES`] (until full, EOF or a read error, which is kept
    /// for the next `fill`). The buffer starts small, so a small input costs no megabyte.
    fn prefill(&mut self) {
        while !self.eof && self.pending.is_none() {
            if self.end == self.buf.len() {
                if self.buf.len() >= PREFILL_BYTES {
                    break;
                }
                let grown = (self.buf.len() * 2).min(PREFILL_BYTES);
                self.buf.resize(grown, 0);
            }
            match self.r.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => self.pending = Some(e),
            }
        }
    }

    fn position(&self) -> Option<Position> {
        let offset = self.consumed + self.pos as u64;
        Some(Position { line: self.line, column: offset.saturating_sub(self.line_start) as usize + 1 })
    }

    fn syntax(&self, what: &str) -> ChromeTraceError {
        let position = self.position();
        let at = position.map_or(String::new(), |p| format!(" at line {} column {}", p.line, p.column));
        if self.pos >= self.end && self.eof {
            ChromeTraceError::Truncated { message: format!("EOF while expecting {what}{at}"), position }
        } else {
            ChromeTraceError::Syntax { message: format!("expected {what}{at}"), position }
        }
    }

    /// Reads more input, keeping `buf[keep..]` (moved to the front). Returns false at EOF.
    fn fill(&mut self, keep: usize) -> Result<bool, ChromeTraceError> {
        if keep > 0 {
            self.buf.copy_within(keep..self.end, 0);
            self.consumed += keep as u64;
            self.end -= keep;
            self.pos -= keep;
        }
        if self.eof {
            return Ok(false);
        }
        if self.end == self.buf.len() {
            let grown = self.buf.len() * 2;
            self.buf.resize(grown, 0);
        }
        loop {
            let read = match self.pending.take() {
                Some(e) => Err(e),
                None => self.r.read(&mut self.buf[self.end..]),
            };
            match read {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    if let Some(limit) = crate::limits::LimitExceeded::in_io_error(&e) {
                        return Err(ChromeTraceError::TooLarge { limit });
                    }
                    let position = self.position();
                    let at = position.map_or(String::new(), |p| format!(" at line {} column {}", p.line, p.column));
                    return Err(ChromeTraceError::Io { message: format!("{e}{at}"), position });
                }
            }
        }
    }

    /// The next non-whitespace byte (not consumed), `None` at EOF.
    fn peek(&mut self) -> Result<Option<u8>, ChromeTraceError> {
        loop {
            while self.pos < self.end {
                let b = self.buf[self.pos];
                match b {
                    b'\n' => {
                        self.pos += 1;
                        self.line += 1;
                        self.line_start = self.consumed + self.pos as u64;
                    }
                    b' ' | b'\t' | b'\r' => self.pos += 1,
                    _ => return Ok(Some(b)),
                }
            }
            if !self.fill(self.pos)? {
                return Ok(None);
            }
        }
    }

    /// Scans one JSON value starting at `pos` (a non-whitespace byte); returns its range in `buf`,
    /// valid until the next read, and the line/column where it starts. Only brackets and strings
    /// are tracked: serde validates the value.
    fn value(&mut self) -> Result<(usize, usize, usize, usize), ChromeTraceError> {
        let start_line = self.line;
        let start_col = (self.consumed + self.pos as u64).saturating_sub(self.line_start) as usize + 1;
        let mut i = self.pos;
        let mut depth = 0usize;
        let mut in_str = false;
        let mut escape = false;
        let first = self.buf[i];
        let scalar = !matches!(first, b'{' | b'[' | b'"');
        loop {
            if i >= self.end {
                if self.end - self.pos > MAX_VALUE_BYTES {
                    return Err(ChromeTraceError::NotATrace {
                        reason: format!(
                            "the JSON value that starts at line {start_line} column {start_col} is longer than {} MiB \
                             (no trace event is)",
                            MAX_VALUE_BYTES >> 20
                        ),
                        position: Some(Position { line: start_line, column: start_col }),
                    });
                }
                let start = self.pos;
                let more = self.fill(start)?;
                i -= start;
                if !more {
                    if scalar {
                        break;
                    }
                    let message =
                        format!("EOF inside the JSON value that starts at line {start_line} column {start_col}");
                    let position = Some(Position { line: start_line, column: start_col });
                    return Err(ChromeTraceError::Truncated { message, position });
                }
                continue;
            }
            if in_str {
                if escape {
                    escape = false;
                    i += 1;
                    continue;
                }
                // Fast path: jump to the next quote or backslash.
                match find_quote_or_backslash(&self.buf[i..self.end]) {
                    Some(k) => {
                        i += k;
                        let b = self.buf[i];
                        i += 1;
                        if b == b'\\' {
                            escape = true;
                        } else {
                            in_str = false;
                            if depth == 0 {
                                break;
                            }
                        }
                    }
                    None => i = self.end,
                }
                continue;
            }
            if !scalar {
                // Skip to the next byte that matters outside strings.
                match self.buf[i..self.end].iter().position(|&c| STRUCTURAL[usize::from(c)]) {
                    Some(k) => i += k,
                    None => {
                        i = self.end;
                        continue;
                    }
                }
            }
            let b = self.buf[i];
            i += 1;
            if scalar {
                if matches!(b, b',' | b']' | b'}' | b' ' | b'\n' | b'\r' | b'\t') {
                    i -= 1;
                    break;
                }
                continue;
            }
            match b {
                b'"' => in_str = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        break;
                    }
                }
                b'\n' => {
                    self.line += 1;
                    self.line_start = self.consumed + i as u64;
                }
                _ => {}
            }
        }
        let range = (self.pos, i, start_line, start_col);
        self.pos = i;
        Ok(range)
    }

    /// Maps a serde error inside a value that starts at (`line`, `col`) to the document.
    fn value_error(e: &serde_json::Error, line: usize, col: usize) -> ChromeTraceError {
        use serde_json::error::Category;
        let position = if e.line() <= 1 {
            Position { line, column: col + e.column().saturating_sub(1) }
        } else {
            Position { line: line + e.line() - 1, column: e.column() }
        };
        let mut message = e.to_string();
        if let Some(cut) = message.rfind(" at line ") {
            message.truncate(cut);
        }
        let message = format!("{message} at line {} column {}", position.line, position.column);
        let position = Some(position);
        match e.classify() {
            Category::Io => ChromeTraceError::Io { message, position },
            Category::Syntax => ChromeTraceError::Syntax { message, position },
            Category::Eof => ChromeTraceError::Truncated { message, position },
            Category::Data => ChromeTraceError::NotATrace { reason: message, position },
        }
    }

    fn expect(&mut self, byte: u8, what: &str) -> Result<(), ChromeTraceError> {
        if self.peek()? == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.syntax(what))
        }
    }

    fn document<S: FnMut(&[u8], usize, usize) -> Result<(), ChromeTraceError>>(
        &mut self,
        sink: &mut S,
    ) -> Result<(), ChromeTraceError> {
        let top = match self.peek()? {
            None => {
                return Err(ChromeTraceError::NotATrace {
                    reason: "empty input (no JSON value)".into(),
                    position: self.position(),
                })
            }
            Some(b'[') => Top::Array,
            Some(b'{') => Top::Object,
            // Refused at its first byte: a scalar document is never a trace, and scanning to its end could read
            // the whole input (a file of zeros is one endless "value").
            Some(b) => {
                let position = self.position();
                let at = position.map_or(String::new(), |p| format!(" at line {} column {}", p.line, p.column));
                let kind = match b {
                    b'"' => "string",
                    b'-' | b'0'..=b'9' => "number",
                    b't' | b'f' => "boolean",
                    b'n' => "null",
                    _ => {
                        return Err(ChromeTraceError::Syntax {
                            message: format!(
                                "expected `{{` or `[`{at} (a Chrome trace starts with one), found {}",
                                describe_byte(b)
                            ),
                            position,
                        })
                    }
                };
                return Err(ChromeTraceError::NotATrace {
                    reason: format!(
                        "the document is a JSON {kind}{at}, not an object with `traceEvents` or an array of events"
                    ),
                    position,
                });
            }
        };
        self.pos += 1;
        match top {
            Top::Array => {
                self.env.top_is_array = true;
                self.events(sink)?;
            }
            Top::Object => self.object(sink)?,
        }
        match self.peek()? {
            None => Ok(()),
            Some(_) => Err(ChromeTraceError::Syntax {
                message: format!(
                    "trailing characters at line {} column {}",
                    self.line,
                    self.position().map_or(0, |q| q.column)
                ),
                position: self.position(),
            }),
        }
    }

    fn object<S: FnMut(&[u8], usize, usize) -> Result<(), ChromeTraceError>>(
        &mut self,
        sink: &mut S,
    ) -> Result<(), ChromeTraceError> {
        if self.peek()? == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            if self.peek()? != Some(b'"') {
                return Err(self.syntax("an object key"));
            }
            let (s, e, line, col) = self.value()?;
            let key: String =
                serde_json::from_slice(&self.buf[s..e]).map_err(|err| Self::value_error(&err, line, col))?;
            self.expect(b':', "`:`")?;
            if self.peek()?.is_none() {
                return Err(self.syntax("a value"));
            }
            match key.as_str() {
                "traceEvents" => {
                    if self.env.saw_trace_events {
                        return Err(ChromeTraceError::NotATrace {
                            reason: "`traceEvents` appears twice".into(),
                            position: self.position(),
                        });
                    }
                    self.env.saw_trace_events = true;
                    if self.peek()? != Some(b'[') {
                        return Err(ChromeTraceError::NotATrace {
                            reason: format!(
                                "`traceEvents` is not an array (line {} column {})",
                                self.line,
                                self.position().map_or(0, |q| q.column)
                            ),
                            position: self.position(),
                        });
                    }
                    self.pos += 1;
                    self.events(sink)?;
                }
                other => {
                    let (s, e, line, col) = self.value()?;
                    let slice = &self.buf[s..e];
                    let p = &mut self.env;
                    let parsed = match other {
                        "baseTimeNanoseconds" => {
                            p.pytorch_envelope = true;
                            let mut de = serde_json::Deserializer::from_slice(slice);
                            AnySeed(|v: Val<'_>| v.as_i64())
                                .deserialize(&mut de)
                                .and_then(|v| de.end().map(|()| v))
                                .map(|v| {
                                    p.base_time_ns = v;
                                })
                        }
                        _ => {
                            if matches!(other, "schemaVersion" | "deviceProperties" | "traceName" | "distributedInfo") {
                                p.pytorch_envelope = true;
                            } else if p.top_keys.len() < 8 {
                                p.top_keys.push(other.chars().take(40).collect());
                            }
                            serde_json::from_slice::<IgnoredAny>(slice).map(|_| ())
                        }
                    };
                    parsed.map_err(|err| Self::value_error(&err, line, col))?;
                }
            }
            match self.peek()? {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.syntax("`,` or `}` after an object member")),
            }
        }
    }

    fn events<S: FnMut(&[u8], usize, usize) -> Result<(), ChromeTraceError>>(
        &mut self,
        sink: &mut S,
    ) -> Result<(), ChromeTraceError> {
        loop {
            match self.peek()? {
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                None => return Err(self.syntax("a trace event or `]`")),
                Some(b'{') => {}
                // A trace event is an object: anything else is refused at its first byte.
                Some(b) => {
                    let position = self.position();
                    let at = position.map_or(String::new(), |p| format!(" at line {} column {}", p.line, p.column));
                    return Err(if matches!(b, b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n' | b'[') {
                        ChromeTraceError::NotATrace {
                            reason: format!("a trace event is a JSON object; found {}{at}", describe_byte(b)),
                            position,
                        }
                    } else {
                        ChromeTraceError::Syntax {
                            message: format!("expected a trace event (`{{`) or `]`{at}, found {}", describe_byte(b)),
                            position,
                        }
                    });
                }
            }
            let (s, e, line, col) = self.value()?;
            sink(&self.buf[s..e], line, col)?;
            match self.peek()? {
                Some(b',') => self.pos += 1,
                Some(b']') => {}
                _ => return Err(self.syntax("`,` or `]` after a trace event")),
            }
        }
    }
}

/// A byte for an error message: `` `x` `` when printable ASCII, else its hex value.
fn describe_byte(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("`{}`", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

/// The bytes that [`Scanner::value`] acts on outside strings.
static STRUCTURAL: [bool; 256] = {
    let mut t = [false; 256];
    t[b'"' as usize] = true;
    t[b'{' as usize] = true;
    t[b'}' as usize] = true;
    t[b'[' as usize] = true;
    t[b']' as usize] = true;
    t[b'\n' as usize] = true;
    t
};

/// The index of the first `"` or `\\` in `s`, eight bytes at a time.
fn find_quote_or_backslash(s: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let mut chunks = s.chunks_exact(8);
    let mut k = 0;
    for chunk in &mut chunks {
        let mut a = [0u8; 8];
        a.copy_from_slice(chunk);
        let w = u64::from_le_bytes(a);
        let q = w ^ (LO * u64::from(b'"'));
        let b = w ^ (LO * u64::from(b'\\'));
        // Exact for the lowest matching byte (a borrow only marks bytes above a match).
        let m = (q.wrapping_sub(LO) & !q & HI) | (b.wrapping_sub(LO) & !b & HI);
        if m != 0 {
            return Some(k + (m.trailing_zeros() / 8) as usize);
        }
        k += 8;
    }
    chunks.remainder().iter().position(|&c| c == b'"' || c == b'\\').map(|p| k + p)
}

// ---------------------------------------------------------------------------------------------
// Lenient scalar seeds.

/// A value as the closure of an [`AnySeed`] sees it; containers and other types are skipped.
enum Val<'s> {
    Str(&'s str),
    I(i64),
    U(u64),
    F(f64),
    Other,
}

impl Val<'_> {
    fn as_i64(&self) -> Option<i64> {
        match *self {
            Val::I(v) => Some(v),
            Val::U(v) => i64::try_from(v).ok(),
            Val::F(v) if v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e18 => Some(v as i64),
            Val::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
    fn as_f64(&self) -> Option<f64> {
        match *self {
            Val::I(v) => Some(v as f64),
            Val::U(v) => Some(v as f64),
            Val::F(v) => Some(v),
            Val::Str(s) => s.trim().parse().ok().filter(|v: &f64| v.is_finite()),
            Val::Other => None,
        }
    }
}

/// `[x, y, z]` of non-negative integers (a kernel's `grid` or `block`); anything else is skipped as `None`.
struct Dim3Seed;

impl<'de> DeserializeSeed<'de> for Dim3Seed {
    type Value = Option<[u32; 3]>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(Dim3Visitor)
    }
}

struct Dim3Visitor;

impl<'de> Visitor<'de> for Dim3Visitor {
    type Value = Option<[u32; 3]>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of three integers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = [1u32; 3];
        let mut ok = true;
        let mut i = 0;
        while let Some(v) =
            seq.next_element_seed(AnySeed(|v: Val<'_>| v.as_i64().and_then(|n| u32::try_from(n).ok())))?
        {
            match (out.get_mut(i), v) {
                (Some(slot), Some(n)) => *slot = n,
                _ => ok = false,
            }
            i += 1;
        }
        Ok((ok && i > 0).then_some(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

struct AnySeed<F>(F);

impl<'de, R, F: FnOnce(Val<'_>) -> R> DeserializeSeed<'de> for AnySeed<F> {
    type Value = R;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<R, D::Error> {
        d.deserialize_any(AnyVisitor(self.0))
    }
}

struct AnyVisitor<F>(F);

impl<'de, R, F: FnOnce(Val<'_>) -> R> Visitor<'de> for AnyVisitor<F> {
    type Value = R;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E>(self, v: &str) -> Result<R, E> {
        Ok((self.0)(Val::Str(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<R, E> {
        Ok((self.0)(Val::I(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<R, E> {
        Ok((self.0)(Val::U(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<R, E> {
        Ok((self.0)(Val::F(v)))
    }
    fn visit_bool<E>(self, _: bool) -> Result<R, E> {
        Ok((self.0)(Val::Other))
    }
    fn visit_unit<E>(self) -> Result<R, E> {
        Ok((self.0)(Val::Other))
    }
    fn visit_none<E>(self) -> Result<R, E> {
        Ok((self.0)(Val::Other))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<R, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok((self.0)(Val::Other))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<R, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok((self.0)(Val::Other))
    }
}

/// Splits a µs value into whole µs and the fraction in ps, rounded to the finest power of ten of
/// picoseconds that the `f64` resolves at that magnitude (1 ps for XLA's relative timestamps, 1 ns for
/// Kineto's `ts` of ~5e12 µs, whose 3 decimals are nanoseconds), so that parse error does not show
/// up as spurious sub-nanosecond digits.
fn split_us(x: f64) -> Option<(i64, i64)> {
    if !x.is_finite() || x.abs() >= 9.0e15 {
        return None;
    }
    let whole = x.floor();
    let frac_ps = (x - whole) * 1e6;
    let exp = if x == 0.0 { -1074 } else { x.abs().log2().floor() as i32 };
    let ulp_ps = 2f64.powi(exp - 52) * 1e6;
    let grain = if ulp_ps <= 1.0 { 1.0 } else { 10f64.powi(ulp_ps.log10().ceil() as i32) };
    let frac_ps = ((frac_ps / grain).round() * grain) as i64;
    Some((whole as i64, frac_ps))
}

// ---------------------------------------------------------------------------------------------
// Parse state.

/// A `pid` / `tid`: a number, or an interned string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
enum IdKey {
    #[default]
    None,
    Num(i64),
    Str(u32),
}

/// Fields read from `args`.
#[derive(Clone, Copy, Default)]
struct ArgFields {
    hlo_op: Option<NameId>,
    hlo_module: bool,
    hlo_category: Option<u32>,
    group_id: Option<i64>,
    step_num: Option<i64>,
    root: Option<i64>,
    launch: LaunchArgs,
}

/// What a PyTorch (Kineto) GPU event or CUDA call says of a launch: `correlation`, `stream`, `registers per
/// thread`, `shared memory`, `grid`, `block`, `est. achieved occupancy %`.
#[derive(Clone, Copy, Default)]
struct LaunchArgs {
    correlation: Option<i64>,
    stream: Option<i64>,
    registers: Option<i64>,
    shared_memory: Option<i64>,
    grid: Option<[u32; 3]>,
    block: Option<[u32; 3]>,
    occupancy: Option<f64>,
}

impl LaunchArgs {
    fn any(&self) -> bool {
        self.correlation.is_some() || self.stream.is_some()
    }
}

/// Fields read from one event.
#[derive(Clone, Copy, Default)]
struct Fields {
    any: bool,
    ph: Option<u8>,
    name: Option<NameId>,
    cat: Option<u32>,
    pid: IdKey,
    tid: IdKey,
    ts: Option<f64>,
    dur: Option<f64>,
    args: ArgFields,
}

const F_HLO_OP: u8 = 1;
const F_HLO_MODULE: u8 = 2;
const F_INSTANT: u8 = 4;

/// One kept event before classification.
#[derive(Clone, Copy)]
struct Raw {
    start_ps: i64,
    dur_ps: i64,
    name: NameId,
    track: u32,
    /// `hlo_category` arg if any, else `cat` (interned in `cats`); `u32::MAX` when none.
    cat: u32,
    flags: u8,
    /// Index into `Parser::launch_args`; `u32::MAX` when the event has none.
    launch: u32,
}

#[derive(Default)]
struct Parser {
    names: Interner,
    id_strs: Interner,
    cats: Interner,
    tracks: FxMap<(IdKey, IdKey), u32>,
    track_keys: Vec<(IdKey, IdKey)>,
    last_track: Option<((IdKey, IdKey), u32)>,
    proc_names: FxMap<IdKey, String>,
    thread_names: FxMap<(IdKey, IdKey), String>,
    raws: Vec<Raw>,
    launch_args: Vec<LaunchArgs>,
    open: FxMap<u32, Vec<Fields>>,
    /// Events that may be on a `Steps` line: (raw index, step).
    step_cands: Vec<(u32, Option<i64>)>,
    host_marks: Vec<(u32, Option<i64>)>,
    profiler_steps: Vec<(u32, i64)>,
    base_us: Option<i64>,
    base_time_ns: Option<i64>,
    pytorch_envelope: bool,
    saw_trace_events: bool,
    top_is_array: bool,
    top_keys: Vec<String>,
    events_read: u64,
    with_ph: u64,
    empty_objects: u64,
    no_ph_objects: u64,
    skipped_phases: BTreeMap<char, u64>,
    dropped_no_ts: u64,
    dropped_no_dur: u64,
    dropped_range: u64,
    unmatched_end: u64,
    instants_dropped: u64,
    scratch: String,
}

impl Parser {
    fn track(&mut self, pid: IdKey, tid: IdKey) -> u32 {
        if let Some((k, t)) = self.last_track {
            if k == (pid, tid) {
                return t;
            }
        }
        let next = u32::try_from(self.track_keys.len()).unwrap_or(u32::MAX);
        let t = *self.tracks.entry((pid, tid)).or_insert(next);
        if t == next {
            self.track_keys.push((pid, tid));
        }
        self.last_track = Some(((pid, tid), t));
        t
    }

    /// µs → ps relative to the first timestamp's whole µs.
    fn rel_ps(&mut self, ts_us: f64) -> Option<i64> {
        let (whole, frac_ps) = split_us(ts_us)?;
        let base = *self.base_us.get_or_insert(whole);
        whole.checked_sub(base)?.checked_mul(1_000_000)?.checked_add(frac_ps)
    }

    fn pre_id(&mut self, pb: &PreBatch, id: PreId) -> IdKey {
        match id {
            PreId::None => IdKey::None,
            PreId::Num(n) => IdKey::Num(n),
            PreId::Str(span) => IdKey::Str(self.id_strs.intern(pb.str(span))),
        }
    }

    fn set_envelope(&mut self, env: Envelope) {
        self.base_time_ns = env.base_time_ns;
        self.pytorch_envelope = env.pytorch_envelope;
        self.saw_trace_events = env.saw_trace_events;
        self.top_is_array = env.top_is_array;
        self.top_keys = env.top_keys;
    }

    fn name_str(&self, id: Option<NameId>) -> &str {
        id.and_then(|i| self.names_ref().get(i as usize)).map_or("", String::as_str)
    }

    fn names_ref(&self) -> &[String] {
        self.names.names()
    }

    fn is_xla_device_op_track(&self, pid: IdKey, tid: IdKey) -> bool {
        let device = self.proc_names.get(&pid).is_some_and(|p| p.starts_with("/device:"));
        device && self.thread_names.get(&(pid, tid)).is_some_and(|t| t == "XLA Ops" || t == "Sparse Core Ops")
    }

    /// Handles one parsed event object.
    fn event(&mut self, f: Fields) {
        if !f.any {
            self.empty_objects += 1;
            return;
        }
        self.events_read += 1;
        let Some(ph) = f.ph else {
            self.no_ph_objects += 1;
            return;
        };
        self.with_ph += 1;
        match ph {
            b'X' => {
                if f.dur.is_none() {
                    self.dropped_no_dur += 1;
                    return;
                }
                self.complete(f, 0);
            }
            b'B' => {
                let t = self.track(f.pid, f.tid);
                self.open.entry(t).or_default().push(f);
            }
            b'E' => {
                let t = self.track(f.pid, f.tid);
                let begin = self.open.get_mut(&t).and_then(Vec::pop);
                match (begin, begin.and_then(|b| b.ts), f.ts) {
                    (Some(mut b), Some(start), Some(end)) => {
                        b.dur = Some(end - start);
                        self.complete(b, 0);
                    }
                    _ => self.unmatched_end += 1,
                }
            }
            b'i' | b'I' | b'R' => {
                if self.is_xla_device_op_track(f.pid, f.tid) {
                    self.complete(Fields { dur: Some(0.0), ..f }, F_INSTANT);
                } else {
                    self.instants_dropped += 1;
                }
            }
            b'M' => {
                let what = self.name_str(f.name);
                if what == "process_name" {
                    self.proc_names.insert(f.pid, std::mem::take(&mut self.scratch));
                } else if what == "thread_name" {
                    self.thread_names.insert((f.pid, f.tid), std::mem::take(&mut self.scratch));
                }
            }
            other => *self.skipped_phases.entry(char::from(other)).or_default() += 1,
        }
    }

    fn complete(&mut self, f: Fields, flags: u8) {
        let Some(start_ps) = f.ts.and_then(|ts| self.rel_ps(ts)) else {
            self.dropped_no_ts += 1;
            return;
        };
        let dur_ps =
            split_us(f.dur.unwrap_or(0.0)).and_then(|(whole, frac)| whole.checked_mul(1_000_000)?.checked_add(frac));
        let Some(dur_ps) = dur_ps else {
            self.dropped_range += 1;
            return;
        };
        let dur_ps = dur_ps.max(0);
        let track = self.track(f.pid, f.tid);
        let idx = u32::try_from(self.raws.len()).unwrap_or(u32::MAX);
        let orig_name = f.name.unwrap_or_else(|| self.names.intern(""));
        let mut flags = flags;
        if f.args.hlo_op.is_some() {
            flags |= F_HLO_OP;
        }
        if f.args.hlo_module {
            flags |= F_HLO_MODULE;
        }
        let cat = f.args.hlo_category.or(f.cat).unwrap_or(u32::MAX);
        let launch = if f.args.launch.any() {
            self.launch_args.push(f.args.launch);
            u32::try_from(self.launch_args.len() - 1).unwrap_or(u32::MAX)
        } else {
            u32::MAX
        };
        self.raws.push(Raw { start_ps, dur_ps, name: f.args.hlo_op.unwrap_or(orig_name), track, cat, flags, launch });

        let a = f.args;
        let name = self.names.names().get(orig_name as usize).map_or("", String::as_str);
        if let Some(n) = name.strip_prefix("ProfilerStep#") {
            if let Ok(step) = n.trim().parse::<i64>() {
                self.profiler_steps.push((idx, step));
            }
        }
        if is_host_step_marker_name(name)
            && (a.group_id.is_some() || a.root.is_some_and(|r| r != 0) || a.step_num.is_some())
        {
            let step = a.step_num.or(a.group_id);
            self.host_marks.push((idx, step));
        }
        let maybe_steps_line = self.thread_names.get(&(f.pid, f.tid)).is_none_or(|t| t == "Steps");
        if maybe_steps_line {
            let step = name.trim().parse::<i64>().ok().or(a.group_id).or(a.step_num);
            self.step_cands.push((idx, step));
        }
    }

    fn finish(mut self) -> Result<Timeline, ChromeTraceError> {
        if !self.top_is_array && !self.saw_trace_events {
            let keys = if self.top_keys.is_empty() { "none".to_owned() } else { self.top_keys.join(", ") };
            return Err(ChromeTraceError::NotATrace {
                reason: format!("a JSON object without a `traceEvents` array (keys: {keys})"),
                position: None,
            });
        }
        if self.with_ph == 0 && self.no_ph_objects > 0 {
            return Err(ChromeTraceError::NotATrace {
                reason: format!(
                    "none of its {} event objects has a `ph` field (an XProf tool output or other JSON table?)",
                    self.no_ph_objects
                ),
                position: None,
            });
        }
        Ok(self.build())
    }

    fn build(&mut self) -> Timeline {
        let mut notes: Vec<String> = Vec::new();
        let pytorch = self.pytorch_envelope
            || ["cpu_op", "kernel", "user_annotation", "gpu_memcpy", "gpu_memset", "cuda_runtime", "python_function"]
                .iter()
                .any(|c| self.cats.get(c).is_some());
        let xla = self.proc_names.values().any(|p| p.starts_with("/device:") || p.starts_with("/host:"));
        let source = if pytorch { TimelineSource::PyTorchJson } else { TimelineSource::ChromeJson };

        // Per-track role.
        #[derive(Clone, Copy, PartialEq)]
        enum Role {
            Host,
            DeviceOps(u32, DeviceKind),
            DeviceModules(u32, DeviceKind),
            DeviceSteps(u32, DeviceKind),
            Skip,
        }
        let mut skipped_lines: BTreeMap<String, u64> = BTreeMap::new();
        let roles: Vec<Role> = self
            .track_keys
            .iter()
            .map(|&(pid, tid)| {
                let pname = self.proc_names.get(&pid).map_or("", String::as_str);
                let tname = self.thread_names.get(&(pid, tid)).map_or("", String::as_str);
                if !pytorch && pname.starts_with("/device:") {
                    let id = match pid {
                        IdKey::Num(n) => u32::try_from(n).unwrap_or(u32::MAX),
                        _ => u32::MAX,
                    };
                    let kind = if pname.starts_with("/device:TPU:") {
                        DeviceKind::Tpu
                    } else if pname.starts_with("/device:GPU:") {
                        DeviceKind::Gpu
                    } else {
                        *skipped_lines.entry(format!("{pname} (not a TPU/GPU device)")).or_default() += 1;
                        return Role::Skip;
                    };
                    match tname {
                        "XLA Ops" | "Sparse Core Ops" if kind == DeviceKind::Tpu => Role::DeviceOps(id, kind),
                        "XLA Modules" | "Sparse Core Modules" => Role::DeviceModules(id, kind),
                        "Steps" => Role::DeviceSteps(id, kind),
                        t if kind == DeviceKind::Gpu && is_gpu_stream_line(t) => Role::DeviceOps(id, kind),
                        t => {
                            let key = if t.starts_with("Host Offload Ops") { "Host Offload Ops" } else { t };
                            *skipped_lines.entry(key.to_owned()).or_default() += 1;
                            Role::Skip
                        }
                    }
                } else if xla && is_derived_host_line(tname) {
                    Role::Skip
                } else {
                    Role::Host
                }
            })
            .collect();
        let any_xla_device = roles.iter().any(|r| !matches!(r, Role::Host | Role::Skip));
        if !skipped_lines.is_empty() {
            let list: Vec<String> = skipped_lines.keys().cloned().collect();
            notes.push(format!("device lines skipped (as XProf's trace viewer or as derived): {}", list.join(", ")));
        }

        let cat_of = |cats: &Interner, c: u32| -> String {
            if c == u32::MAX {
                String::new()
            } else {
                cats.names().get(c as usize).map_or(String::new(), |s| s.to_ascii_lowercase())
            }
        };
        // Category classes for PyTorch.
        let ncats = self.cats.names().len();
        let cat_lower: Vec<String> = (0..ncats).map(|c| cat_of(&self.cats, c as u32)).collect();
        let is_gpu_cat = |c: u32| {
            cat_lower
                .get(c as usize)
                .is_some_and(|s| matches!(s.as_str(), "kernel" | "gpu_memcpy" | "gpu_memset" | "memcpy" | "memset"))
        };
        let is_cat = |c: u32, want: &str| cat_lower.get(c as usize).is_some_and(|s| s == want);
        let pytorch_gpu = pytorch && self.raws.iter().any(|r| is_gpu_cat(r.cat));

        // Step markers' raw indices are collected before events are moved.
        let mut markers: Vec<(i64, i64, i64, Option<u32>, StepSource)> = Vec::new(); // (start, dur, step, device, src)
        for (ordinal, &(idx, step)) in self.step_cands.iter().enumerate() {
            let Some(r) = self.raws.get(idx as usize) else { continue };
            if let Some(Role::DeviceSteps(id, _)) = roles.get(r.track as usize) {
                markers.push((
                    r.start_ps,
                    r.dur_ps,
                    step.unwrap_or(ordinal as i64),
                    Some(*id),
                    StepSource::DeviceStepsLine,
                ));
            }
        }
        let mut lone = 0i64;
        for &(idx, step) in &self.host_marks {
            let Some(r) = self.raws.get(idx as usize) else { continue };
            if roles.get(r.track as usize) == Some(&Role::Host) {
                let step = step.unwrap_or_else(|| {
                    lone += 1;
                    lone - 1
                });
                markers.push((r.start_ps, r.dur_ps, step, None, StepSource::HostAnnotation));
            }
        }
        for &(idx, step) in &self.profiler_steps {
            let Some(r) = self.raws.get(idx as usize) else { continue };
            if pytorch && !is_cat(r.cat, "gpu_user_annotation") {
                markers.push((r.start_ps, r.dur_ps, step, None, StepSource::ProfilerStep));
            }
        }

        // Distribute events.
        let mut devices: BTreeMap<(u8, u32), Device> = BTreeMap::new();
        let mut threads: BTreeMap<u32, Vec<Event>> = BTreeMap::new();
        let mut cpu_candidates: BTreeMap<u32, Vec<Event>> = BTreeMap::new();
        let new_device = |id: u32, kind: DeviceKind, name: String| Device {
            id,
            name,
            kind,
            host: String::new(),
            events: Vec::new(),
            modules: Vec::new(),
            launches: Vec::new(),
        };
        let raws = std::mem::take(&mut self.raws);
        let launch_args = std::mem::take(&mut self.launch_args);
        let args_of = |r: &Raw| launch_args.get(r.launch as usize).copied().unwrap_or_default();
        // PyTorch: the CUDA calls that launched device work, by correlation id: (start, duration, track).
        let mut calls: FxMap<i64, (i64, i64, u32)> = FxMap::default();
        let mut gpu_annotations = 0u64;
        for r in &raws {
            let role = roles.get(r.track as usize).copied().unwrap_or(Role::Skip);
            let name_s = self.names.names().get(r.name as usize).map_or("", String::as_str);
            let ev = |class: EventClass| Event { start_ps: r.start_ps, dur_ps: r.dur_ps, name: r.name, class };
            let (pid, _) = self.track_keys.get(r.track as usize).copied().unwrap_or_default();
            let pname = || self.proc_names.get(&pid).cloned().unwrap_or_default();
            match role {
                Role::Skip => {}
                Role::DeviceOps(id, kind) => {
                    let class = if kind == DeviceKind::Tpu {
                        let c = (r.cat != u32::MAX).then(|| self.cats.names().get(r.cat as usize)).flatten();
                        classify_xla_op(name_s, c.map(String::as_str))
                    } else {
                        classify_gpu_kernel(name_s)
                    };
                    devices.entry((0, id)).or_insert_with(|| new_device(id, kind, pname())).events.push(ev(class));
                }
                Role::DeviceModules(id, kind) => {
                    devices
                        .entry((0, id))
                        .or_insert_with(|| new_device(id, kind, pname()))
                        .modules
                        .push(ev(EventClass::Module));
                }
                Role::DeviceSteps(..) => {}
                Role::Host if pytorch => {
                    if is_gpu_cat(r.cat) {
                        let id = match pid {
                            IdKey::Num(n) => u32::try_from(n).unwrap_or(u32::MAX),
                            _ => u32::MAX,
                        };
                        let mut class = classify_gpu_kernel(name_s);
                        if matches!(
                            cat_lower.get(r.cat as usize).map(String::as_str),
                            Some("gpu_memcpy" | "gpu_memset" | "memcpy" | "memset")
                        ) {
                            class = EventClass::MemCopy;
                        }
                        let a = args_of(r);
                        let d = devices
                            .entry((1, id))
                            .or_insert_with(|| new_device(id, DeviceKind::Gpu, format!("GPU {id}")));
                        d.events.push(ev(class));
                        d.launches.push(Launch {
                            stream: a.stream,
                            correlation: a.correlation,
                            // The call's start, resolved below (raw time until then).
                            launch_ps: None,
                            launch_dur_ps: 0,
                            launch_thread: None,
                            grid: a.grid.unwrap_or_default(),
                            block: a.block.unwrap_or_default(),
                            registers_per_thread: a.registers.and_then(|n| u32::try_from(n).ok()).unwrap_or(0),
                            shared_memory_bytes: a.shared_memory.and_then(|n| u32::try_from(n).ok()).unwrap_or(0),
                            occupancy_percent: a.occupancy.map(|o| o as f32),
                        });
                    } else if is_cat(r.cat, "gpu_user_annotation") {
                        gpu_annotations += 1;
                    } else if !pytorch_gpu && is_cat(r.cat, "cpu_op") {
                        cpu_candidates.entry(r.track).or_default().push(ev(classify_cpu_op(name_s)));
                    } else {
                        if let Some(c) = args_of(r).correlation {
                            calls.entry(c).or_insert((r.start_ps, r.dur_ps, r.track));
                        }
                        threads.entry(r.track).or_default().push(ev(EventClass::Other));
                    }
                }
                Role::Host => {
                    if xla && !any_xla_device && r.flags & F_HLO_OP != 0 {
                        cpu_candidates.entry(u32::MAX).or_default().push(ev(classify_cpu_op(name_s)));
                    } else if xla && !any_xla_device && r.flags & F_HLO_MODULE != 0 {
                        cpu_candidates.entry(u32::MAX - 1).or_default().push(ev(EventClass::Module));
                    } else {
                        threads.entry(r.track).or_default().push(ev(EventClass::Other));
                    }
                }
            }
        }
        drop(raws);
        if gpu_annotations > 0 {
            notes.push(format!("{gpu_annotations} gpu_user_annotation events skipped"));
        }

        // The CPU executor device.
        if !cpu_candidates.is_empty() {
            let mut cpu = new_device(0, DeviceKind::CpuExecutor, String::new());
            if pytorch {
                cpu.name = "CPU op threads".to_owned();
                for (track, mut evs) in cpu_candidates {
                    sort_events(&mut evs);
                    let mut end = i64::MIN;
                    for e in evs {
                        // Partly overlapping (not nested) events are kept so the union stays exact.
                        if e.start_ps >= end || e.end_ps() > end {
                            end = end.max(e.end_ps());
                            cpu.events.push(e);
                        } else {
                            threads.entry(track).or_default().push(Event { class: EventClass::Other, ..e });
                        }
                    }
                }
            } else {
                cpu.name = CPU_EXECUTOR_NAME.to_owned();
                cpu.events = cpu_candidates.remove(&u32::MAX).unwrap_or_default();
                cpu.modules = cpu_candidates.remove(&(u32::MAX - 1)).unwrap_or_default();
            }
            if !cpu.events.is_empty() {
                devices.insert((2, 0), cpu);
            }
        }

        // Origin: the earliest kept event or marker.
        let min_rel = devices
            .values()
            .flat_map(|d| d.events.iter().chain(&d.modules).map(|e| e.start_ps))
            .chain(threads.values().flat_map(|t| t.iter().map(|e| e.start_ps)))
            .chain(markers.iter().map(|m| m.0))
            .min()
            .unwrap_or(0);
        let base_ps = i128::from(self.base_us.unwrap_or(0)) * 1_000_000;
        let first_abs = base_ps + i128::from(min_rel);
        let origin_ps = if let Some(ns) = self.base_time_ns {
            i128::from(ns) * 1000 + first_abs
        } else if first_abs >= 1_000_000_000_000_000_000_000 {
            first_abs
        } else {
            notes.push("timestamps are relative to an unknown epoch: origin_ps is 0".into());
            0
        };

        // Name compaction: keep only the names used, in first-use order.
        let old_names = std::mem::take(&mut self.names).into_names();
        let mut remap: Vec<NameId> = vec![NameId::MAX; old_names.len()];
        let mut new_names: Vec<String> = Vec::new();
        let mut old_names: Vec<Option<String>> = old_names.into_iter().map(Some).collect();
        let mut fix = |e: &mut Event| {
            let i = e.name as usize;
            if let Some(slot) = remap.get_mut(i) {
                if *slot == NameId::MAX {
                    *slot = NameId::try_from(new_names.len()).unwrap_or(NameId::MAX);
                    new_names.push(old_names.get_mut(i).and_then(Option::take).unwrap_or_default());
                }
                e.name = *slot;
            }
            e.start_ps -= min_rel;
        };

        let mut out_devices: Vec<Device> = devices.into_values().collect();
        for d in &mut out_devices {
            d.events.iter_mut().chain(d.modules.iter_mut()).for_each(&mut fix);
            super::sort_with_launches(&mut d.events, &mut d.launches);
            sort_events(&mut d.modules);
            if d.name.is_empty() {
                d.name = format!("device {}", d.id);
            }
        }
        out_devices.sort_by_cached_key(device_order);

        let mut host_threads: Vec<(u32, HostThread)> = Vec::with_capacity(threads.len());
        for (track, mut events) in threads {
            events.iter_mut().for_each(&mut fix);
            sort_events(&mut events);
            let (pid, tid) = self.track_keys.get(track as usize).copied().unwrap_or_default();
            let id = match tid {
                IdKey::Num(n) => n as u64,
                IdKey::Str(s) => u64::from(s),
                IdKey::None => 0,
            };
            let name = self.thread_names.get(&(pid, tid)).cloned().unwrap_or_else(|| {
                let show = |k: IdKey| match k {
                    IdKey::Num(n) => n.to_string(),
                    IdKey::Str(s) => self.id_strs.names().get(s as usize).cloned().unwrap_or_default(),
                    IdKey::None => String::new(),
                };
                format!("{}/{}", show(pid), show(tid))
            });
            host_threads.push((track, HostThread { id, name, host: String::new(), events }));
        }
        host_threads.sort_by(|(_, a), (_, b)| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
        // Each launch's call: its start (relative, like the events), duration and thread index.
        if !calls.is_empty() {
            let index: FxMap<u32, u32> = host_threads
                .iter()
                .enumerate()
                .map(|(i, (track, _))| (*track, u32::try_from(i).unwrap_or(u32::MAX)))
                .collect();
            for l in out_devices.iter_mut().flat_map(|d| d.launches.iter_mut()) {
                if let Some(&(start, dur, track)) = l.correlation.and_then(|c| calls.get(&c)) {
                    l.launch_ps = Some(start - min_rel);
                    l.launch_dur_ps = dur;
                    l.launch_thread = index.get(&track).copied();
                }
            }
        }
        let host_threads: Vec<HostThread> = host_threads.into_iter().map(|(_, t)| t).collect();

        let mut steps: Vec<StepMarker> = markers
            .into_iter()
            .map(|(start, dur, step, device, source)| StepMarker {
                step,
                start_ps: start - min_rel,
                dur_ps: dur,
                device,
                source,
            })
            .collect();
        steps.sort_by_key(|m| (m.start_ps, m.device, m.step));

        // Notes on what was skipped.
        for (ph, n) in &self.skipped_phases {
            notes.push(format!("{n} events of phase `{ph}` skipped (counters, flows, async, …)"));
        }
        let counted = [
            (self.instants_dropped, "instant events dropped"),
            (self.dropped_no_dur, "`X` events without `dur` dropped"),
            (self.dropped_no_ts, "events without a usable `ts` dropped"),
            (self.dropped_range, "events with an out-of-range `dur` dropped"),
            (self.unmatched_end, "unmatched `E` events dropped"),
            (self.open.values().map(|v| v.len() as u64).sum(), "unmatched `B` events dropped"),
            (self.no_ph_objects, "objects without `ph` skipped"),
        ];
        for (n, what) in counted {
            if n > 0 {
                notes.push(format!("{n} {what}"));
            }
        }

        Timeline {
            source,
            origin_ps,
            devices: out_devices,
            host_threads,
            steps,
            names: new_names,
            events_read: self.events_read,
            notes,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Event parsing: serde reads one event's bytes into a `PreEvent` whose strings are spans of the
// batch's arena, with every string that the parser interns recorded as an `Interned` in input order (the
// interners' contents, e.g. the `cat` values that mark a PyTorch trace, follow that order). `apply`
// then replays them into the `Parser`.

type Span = (usize, usize);

#[derive(Clone, Copy)]
enum PreId {
    None,
    Num(i64),
    Str(Span),
}

#[derive(Clone, Copy)]
enum Interned {
    Name(Option<Span>),
    Cat(Option<Span>),
    Pid(PreId),
    Tid(PreId),
    ArgName(Span),
    HloOp(Option<Span>),
    HloCategory(Option<Span>),
}

/// The scalar fields of one event; its `Interned`s end at `ops_end`.
#[derive(Clone, Copy, Default)]
struct PreEvent {
    any: bool,
    ph: Option<u8>,
    ts: Option<f64>,
    dur: Option<f64>,
    hlo_module: bool,
    group_id: Option<i64>,
    step_num: Option<i64>,
    root: Option<i64>,
    launch: LaunchArgs,
    ops_end: usize,
}

/// Events parsed from one [`RawBatch`], up to its first error.
#[derive(Default)]
struct PreBatch {
    arena: String,
    ops: Vec<Interned>,
    events: Vec<PreEvent>,
    err: Option<ChromeTraceError>,
}

impl PreBatch {
    fn push_str(&mut self, s: &str) -> Span {
        let start = self.arena.len();
        self.arena.push_str(s);
        (start, self.arena.len())
    }

    fn push_num(&mut self, n: impl fmt::Display) -> Span {
        use std::fmt::Write;
        let start = self.arena.len();
        let _ = write!(self.arena, "{n}");
        (start, self.arena.len())
    }

    fn str(&self, (a, b): Span) -> &str {
        self.arena.get(a..b).unwrap_or("")
    }

    fn id(&mut self, v: Val<'_>) -> PreId {
        match v {
            Val::Str(s) => PreId::Str(self.push_str(s)),
            Val::F(f) if f.is_finite() => PreId::Num(f as i64),
            v => v.as_i64().map_or(PreId::None, PreId::Num),
        }
    }
}

/// Whole events' bytes, copied from the scanner's buffer, with where each ends and starts.
#[derive(Default)]
struct RawBatch {
    bytes: Vec<u8>,
    /// (end offset in `bytes`, line, column) of each event; each starts where the previous ends.
    events: Vec<(usize, usize, usize)>,
}

/// What the first read fills before choosing between reading in place and the threaded pipeline.
const PREFILL_BYTES: usize = 1 << 20;

/// A batch is handed on once it holds this many bytes.
const BATCH_BYTES: usize = 1 << 20;

/// Collects events into [`RawBatch`]es and hands each full one to `out`.
struct Batcher<F> {
    cur: RawBatch,
    out: F,
}

impl<F: FnMut(RawBatch) -> Result<(), ChromeTraceError>> Batcher<F> {
    fn new(out: F) -> Self {
        Batcher { cur: RawBatch::default(), out }
    }

    fn push(&mut self, bytes: &[u8], line: usize, col: usize) -> Result<(), ChromeTraceError> {
        self.cur.bytes.extend_from_slice(bytes);
        self.cur.events.push((self.cur.bytes.len(), line, col));
        if self.cur.bytes.len() >= BATCH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ChromeTraceError> {
        if self.cur.events.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.cur);
        (self.out)(batch)
    }
}

/// Parses a batch's events (stopping at the first error, kept in `err`).
fn preparse(raw: &RawBatch) -> PreBatch {
    let mut pb = PreBatch {
        arena: String::with_capacity(1 << 12),
        ops: Vec::with_capacity(raw.events.len() * 4),
        ..PreBatch::default()
    };
    pb.events.reserve(raw.events.len());
    // One UTF-8 check for the whole batch lets serde read each event as `&str`, skipping its per-string
    // validation; a batch with invalid UTF-8 is read as bytes, so serde reports the bad string as before.
    let text = std::str::from_utf8(&raw.bytes).ok();
    let mut start = 0;
    for &(end, line, col) in &raw.events {
        let mut ev = PreEvent::default();
        let parsed = match text.and_then(|t| t.get(start..end)) {
            Some(event) => {
                let mut de = serde_json::Deserializer::from_str(event);
                EventSeed { pb: &mut pb, ev: &mut ev }.deserialize(&mut de).and_then(|()| de.end())
            }
            None => {
                let mut de = serde_json::Deserializer::from_slice(raw.bytes.get(start..end).unwrap_or_default());
                EventSeed { pb: &mut pb, ev: &mut ev }.deserialize(&mut de).and_then(|()| de.end())
            }
        };
        start = end;
        if let Err(err) = parsed {
            pb.err = Some(Scanner::<&[u8]>::value_error(&err, line, col));
            break;
        }
        ev.ops_end = pb.ops.len();
        pb.events.push(ev);
    }
    pb
}

/// Feeds a parsed batch's events to the parser, then returns its error if any.
fn apply(p: &mut Parser, pb: PreBatch) -> Result<(), ChromeTraceError> {
    let mut op = 0;
    for ev in &pb.events {
        p.scratch.clear();
        let mut f = Fields {
            any: ev.any,
            ph: ev.ph,
            ts: ev.ts,
            dur: ev.dur,
            args: ArgFields {
                hlo_module: ev.hlo_module,
                group_id: ev.group_id,
                step_num: ev.step_num,
                root: ev.root,
                launch: ev.launch,
                ..ArgFields::default()
            },
            ..Fields::default()
        };
        for o in pb.ops.get(op..ev.ops_end).unwrap_or_default() {
            match *o {
                Interned::Name(s) => f.name = s.map(|s| p.names.intern(pb.str(s))),
                Interned::Cat(s) => f.cat = s.map(|s| p.cats.intern(pb.str(s))),
                Interned::Pid(id) => f.pid = p.pre_id(&pb, id),
                Interned::Tid(id) => f.tid = p.pre_id(&pb, id),
                Interned::ArgName(s) => {
                    p.scratch.clear();
                    p.scratch.push_str(pb.str(s));
                }
                Interned::HloOp(s) => f.args.hlo_op = s.map(|s| p.names.intern(pb.str(s))),
                Interned::HloCategory(s) => f.args.hlo_category = s.map(|s| p.cats.intern(pb.str(s))),
            }
        }
        op = ev.ops_end;
        p.event(f);
    }
    match pb.err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

struct EventSeed<'a> {
    pb: &'a mut PreBatch,
    ev: &'a mut PreEvent,
}

impl<'de> DeserializeSeed<'de> for EventSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(EventVisitor { pb: self.pb, ev: self.ev })
    }
}

struct EventVisitor<'a> {
    pb: &'a mut PreBatch,
    ev: &'a mut PreEvent,
}

#[derive(Clone, Copy)]
enum EvKey {
    Ph,
    Name,
    Cat,
    Pid,
    Tid,
    Ts,
    Dur,
    Args,
    Other,
}

impl<'de> Visitor<'de> for EventVisitor<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a trace event object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let EventVisitor { pb, ev } = self;
        while let Some(key) = map.next_key_seed(AnySeed(|v: Val<'_>| match v {
            Val::Str(k) => match k {
                "ph" => EvKey::Ph,
                "name" => EvKey::Name,
                "cat" => EvKey::Cat,
                "pid" => EvKey::Pid,
                "tid" => EvKey::Tid,
                "ts" => EvKey::Ts,
                "dur" => EvKey::Dur,
                "args" => EvKey::Args,
                _ => EvKey::Other,
            },
            _ => EvKey::Other,
        }))? {
            ev.any = true;
            match key {
                EvKey::Ph => {
                    ev.ph = map.next_value_seed(AnySeed(|v: Val<'_>| match v {
                        Val::Str(s) => s.bytes().next(),
                        _ => None,
                    }))?;
                }
                EvKey::Name => {
                    let name = map.next_value_seed(AnySeed(|v: Val<'_>| match v {
                        Val::Str(s) => Some(pb.push_str(s)),
                        Val::I(n) => Some(pb.push_num(n)),
                        Val::U(n) => Some(pb.push_num(n)),
                        _ => None,
                    }))?;
                    pb.ops.push(Interned::Name(name));
                }
                EvKey::Cat => {
                    let cat = map.next_value_seed(AnySeed(|v: Val<'_>| match v {
                        Val::Str(s) => Some(pb.push_str(s)),
                        _ => None,
                    }))?;
                    pb.ops.push(Interned::Cat(cat));
                }
                EvKey::Pid => {
                    let id = map.next_value_seed(AnySeed(|v: Val<'_>| pb.id(v)))?;
                    pb.ops.push(Interned::Pid(id));
                }
                EvKey::Tid => {
                    let id = map.next_value_seed(AnySeed(|v: Val<'_>| pb.id(v)))?;
                    pb.ops.push(Interned::Tid(id));
                }
                EvKey::Ts => ev.ts = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_f64()))?,
                EvKey::Dur => ev.dur = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_f64()))?,
                EvKey::Args => map.next_value_seed(ArgsSeed { pb: &mut *pb, ev: &mut *ev })?,
                EvKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct ArgsSeed<'a> {
    pb: &'a mut PreBatch,
    ev: &'a mut PreEvent,
}

impl<'de> DeserializeSeed<'de> for ArgsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(ArgsVisitor { pb: self.pb, ev: self.ev })
    }
}

struct ArgsVisitor<'a> {
    pb: &'a mut PreBatch,
    ev: &'a mut PreEvent,
}

#[derive(Clone, Copy)]
enum ArgKey {
    Name,
    HloOp,
    HloModule,
    HloCategory,
    GroupId,
    StepNum,
    Root,
    Correlation,
    Stream,
    Registers,
    SharedMemory,
    Grid,
    Block,
    Occupancy,
    Other,
}

impl<'de> Visitor<'de> for ArgsVisitor<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an args object")
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let ArgsVisitor { pb, ev } = self;
        while let Some(key) = map.next_key_seed(AnySeed(|v: Val<'_>| match v {
            Val::Str(k) => match k {
                "name" => ArgKey::Name,
                "hlo_op" => ArgKey::HloOp,
                "hlo_module" => ArgKey::HloModule,
                "hlo_category" => ArgKey::HloCategory,
                "group_id" => ArgKey::GroupId,
                "step_num" => ArgKey::StepNum,
                "_r" => ArgKey::Root,
                "correlation" => ArgKey::Correlation,
                "stream" => ArgKey::Stream,
                "registers per thread" => ArgKey::Registers,
                "shared memory" => ArgKey::SharedMemory,
                "grid" => ArgKey::Grid,
                "block" => ArgKey::Block,
                "est. achieved occupancy %" => ArgKey::Occupancy,
                _ => ArgKey::Other,
            },
            _ => ArgKey::Other,
        }))? {
            match key {
                ArgKey::Name => {
                    let span = map.next_value_seed(AnySeed(|v: Val<'_>| match v {
                        Val::Str(s) => pb.push_str(s),
                        Val::I(n) => pb.push_num(n),
                        Val::U(n) => pb.push_num(n),
                        _ => (0, 0),
                    }))?;
                    pb.ops.push(Interned::ArgName(span));
                }
                ArgKey::HloOp => {
                    let op = map.next_value_seed(AnySeed(|v: Val<'_>| match v {
                        Val::Str(s) => Some(pb.push_str(s)),
                        _ => None,
                    }))?;
                    pb.ops.push(Interned::HloOp(op));
                }
                ArgKey::HloModule => {
                    ev.hlo_module = map.next_value_seed(AnySeed(|v: Val<'_>| matches!(v, Val::Str(_))))?;
                }
                ArgKey::HloCategory => {
                    let c = map.next_value_seed(AnySeed(|v: Val<'_>| match v {
                        Val::Str(s) => Some(pb.push_str(s)),
                        _ => None,
                    }))?;
                    pb.ops.push(Interned::HloCategory(c));
                }
                ArgKey::GroupId => ev.group_id = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_i64()))?,
                ArgKey::StepNum => ev.step_num = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_i64()))?,
                ArgKey::Root => ev.root = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_i64()))?,
                ArgKey::Correlation => {
                    ev.launch.correlation = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_i64()))?;
                }
                ArgKey::Stream => ev.launch.stream = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_i64()))?,
                ArgKey::Registers => {
                    ev.launch.registers = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_i64()))?;
                }
                ArgKey::SharedMemory => {
                    ev.launch.shared_memory = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_i64()))?;
                }
                ArgKey::Grid => ev.launch.grid = map.next_value_seed(Dim3Seed)?,
                ArgKey::Block => ev.launch.block = map.next_value_seed(Dim3Seed)?,
                ArgKey::Occupancy => {
                    ev.launch.occupancy = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_f64()))?;
                }
                ArgKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}
