//! The outer scanner: finds the top-level structure and the bounds of each event, which serde then parses from
//! the buffer (`from_slice` is several times faster than serde's byte-wise reader).

use super::values::{AnySeed, Val};
#[allow(unused_imports)]
use super::*;

pub(super) struct Scanner<R> {
    pub(super) r: R,
    pub(super) buf: Vec<u8>,
    pub(super) pos: usize,
    pub(super) end: usize,
    pub(super) eof: bool,
    /// Line number (1-based) at `pos`, and the absolute offset where that line starts.
    pub(super) line: usize,
    pub(super) line_start: u64,
    /// Absolute offset of `buf[0]`.
    pub(super) consumed: u64,
    /// A read error met while prefilling, reported by the next `fill` (where the reads would have met it).
    pub(super) pending: Option<std::io::Error>,
    /// What the top level says (read here, handed to the [`Parser`] at the end).
    pub(super) env: Envelope,
}

/// The top-level facts that the scanner reads outside `traceEvents`.
#[derive(Default)]
pub(super) struct Envelope {
    pub(super) base_time_ns: Option<i64>,
    pub(super) pytorch_envelope: bool,
    pub(super) saw_trace_events: bool,
    pub(super) top_is_array: bool,
    pub(super) top_keys: Vec<String>,
    /// `distributedInfo.rank` (a PyTorch trace of one rank of a distributed run).
    pub(super) rank: Option<i64>,
    /// `deviceProperties[0].name` (`NVIDIA H100 80GB HBM3`).
    pub(super) device: Option<String>,
}

/// What Falcon reads of a PyTorch trace's `deviceProperties`: each device's name.
#[derive(serde::Deserialize)]
struct DeviceProperties {
    #[serde(default)]
    name: Option<String>,
}

/// What Falcon reads of a PyTorch trace's `distributedInfo`.
#[derive(serde::Deserialize)]
struct DistributedInfo {
    #[serde(default)]
    rank: Option<i64>,
}

pub(super) enum Top {
    Object,
    Array,
}

impl<R: Read> Scanner<R> {
    pub(super) fn new(r: R) -> Self {
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
    pub(super) fn prefill(&mut self) {
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

    pub(super) fn position(&self) -> Option<Position> {
        let offset = self.consumed + self.pos as u64;
        Some(Position { line: self.line, column: offset.saturating_sub(self.line_start) as usize + 1 })
    }

    pub(super) fn syntax(&self, what: &str) -> ChromeTraceError {
        let position = self.position();
        let at = position.map_or(String::new(), |p| format!(" at line {} column {}", p.line, p.column));
        if self.pos >= self.end && self.eof {
            ChromeTraceError::Truncated { message: format!("EOF while expecting {what}{at}"), position }
        } else {
            ChromeTraceError::Syntax { message: format!("expected {what}{at}"), position }
        }
    }

    /// Reads more input, keeping `buf[keep..]` (moved to the front). Returns false at EOF.
    pub(super) fn fill(&mut self, keep: usize) -> Result<bool, ChromeTraceError> {
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
    pub(super) fn peek(&mut self) -> Result<Option<u8>, ChromeTraceError> {
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
    pub(super) fn value(&mut self) -> Result<(usize, usize, usize, usize), ChromeTraceError> {
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
    pub(super) fn value_error(e: &serde_json::Error, line: usize, col: usize) -> ChromeTraceError {
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

    pub(super) fn expect(&mut self, byte: u8, what: &str) -> Result<(), ChromeTraceError> {
        if self.peek()? == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.syntax(what))
        }
    }

    pub(super) fn document<S: FnMut(&[u8], usize, usize) -> Result<(), ChromeTraceError>>(
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

    pub(super) fn object<S: FnMut(&[u8], usize, usize) -> Result<(), ChromeTraceError>>(
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
                        "distributedInfo" => {
                            p.pytorch_envelope = true;
                            // Lenient: a record of another shape is no rank, never an error.
                            match serde_json::from_slice::<DistributedInfo>(slice) {
                                Ok(info) => {
                                    p.rank = info.rank;
                                    Ok(())
                                }
                                Err(_) => serde_json::from_slice::<IgnoredAny>(slice).map(|_| ()),
                            }
                        }
                        "deviceProperties" => {
                            p.pytorch_envelope = true;
                            // Lenient, as `distributedInfo`: another shape names no device.
                            match serde_json::from_slice::<Vec<DeviceProperties>>(slice) {
                                Ok(devices) => {
                                    p.device =
                                        devices.into_iter().find_map(|d| d.name).map(|n| n.chars().take(200).collect());
                                    Ok(())
                                }
                                Err(_) => serde_json::from_slice::<IgnoredAny>(slice).map(|_| ()),
                            }
                        }
                        _ => {
                            if matches!(other, "schemaVersion" | "traceName") {
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

    pub(super) fn events<S: FnMut(&[u8], usize, usize) -> Result<(), ChromeTraceError>>(
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
pub(super) fn describe_byte(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("`{}`", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

/// The bytes that [`Scanner::value`] acts on outside strings.
pub(super) static STRUCTURAL: [bool; 256] = {
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
pub(super) fn find_quote_or_backslash(s: &[u8]) -> Option<usize> {
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

/// What the first read fills before choosing between reading in place and the threaded pipeline.
pub(super) const PREFILL_BYTES: usize = 1 << 20;
