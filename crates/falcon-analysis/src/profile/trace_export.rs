//! Chrome trace export: streams an [`XSpace`] as a Chrome Trace Event Format JSON object
//! (`{"displayTimeUnit":"ns","traceEvents":[...]}`), loadable by Perfetto and chrome://tracing.
//!
//! Layout follows XProf's trace viewer: one process (`pid`) per plane, one thread (`tid`) per line,
//! each event a complete (`ph: "X"`) event. Unlike XProf nothing is skipped (no line or event
//! filter, no event cap) and timestamps are absolute: `ts` is microseconds since the Unix epoch with
//! nanosecond precision, written as an exact decimal (readers parsing it as `f64` keep ~0.25 µs).
//!
//! Thread ids are small and dense: a line's `tid` is its index in its plane + 1. Line ids are 64-bit (a host
//! line's id is its OS thread id), beyond the integers JavaScript readers (Perfetto, chrome://tracing) hold
//! exactly (2^53), so two threads could merge; the original id is kept, as a decimal string, in the
//! `thread_name` metadata event's `args.line_id`. The stats XProf keeps for itself are not written as args:
//! the flow-context stats `_pt`/`_ct` (producer/consumer type), `_p`/`_c` (producer/consumer id), `_r` (is
//! root) and `_a` (is async), [`INTERNAL_STATS`].
//!
//! Output is streamed through a buffered writer (optionally gzip-compressed); nothing is built in
//! memory beyond one event's stat de-duplication.

use std::io::{self, BufWriter, Write};

use falcon_xplane::{StatValue, XEvent, XLine, XPlane, XSpace, XStat};

/// Bytes stats longer than this are replaced by a note instead of being hex-encoded.
const MAX_HEX_BYTES: usize = 256;

/// Stat names XProf uses internally (to link events into flows), never shown as event args: producer type
/// and id, consumer type and id, is-root, is-async.
pub const INTERNAL_STATS: [&str; 6] = ["_pt", "_p", "_ct", "_c", "_r", "_a"];

/// What [`write_chrome_trace`] wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportSummary {
    /// Planes exported (one `pid` each).
    pub planes: usize,
    /// Lines exported (one `tid` each).
    pub lines: usize,
    /// Complete (`ph: "X"`) events written; equals the space's total event count.
    pub events: usize,
    /// Bytes written to `out` (compressed bytes when `gzip` is set).
    pub bytes_written: u64,
}

/// Writes `space` as a Chrome trace JSON object to `out`, gzip-compressed when `gzip` is set.
///
/// Per plane (index `i`): `pid = i + 1`, metadata events `process_name` (plane name) and
/// `process_sort_index` (`i`). Per line (index `j` in its plane): `tid = j + 1`, `thread_name` (display
/// name, else name; `args.line_id` is the line's own id as a decimal string) and `thread_sort_index` (`j`).
/// Per event:
/// `{"ph":"X","pid","tid","name","ts","dur","args"}` where `name` is the display name (the full
/// name then goes to `args.long_name` when different), `ts`/`dur` are in µs, and `args` holds the
/// event-metadata stats then the event's own stats (an event stat overrides a metadata stat of the
/// same id; XProf's [`INTERNAL_STATS`] left out), keyed by stat-metadata name: numbers as numbers
/// (non-finite doubles as strings),
/// strings and refs as strings, compressed strings inflated, bytes as lowercase hex (or a
/// `"<N bytes>"` note above 256 bytes).
pub fn write_chrome_trace(space: &XSpace, out: impl Write, gzip: bool) -> io::Result<ExportSummary> {
    let mut counter = CountingWriter { inner: out, count: 0 };
    let mut summary = if gzip {
        let enc = flate2::write::GzEncoder::new(&mut counter, flate2::Compression::default());
        let mut w = BufWriter::with_capacity(1 << 16, enc);
        let s = write_trace(space, &mut w)?;
        w.into_inner().map_err(|e| e.into_error())?.finish()?;
        s
    } else {
        let mut w = BufWriter::with_capacity(1 << 16, &mut counter);
        let s = write_trace(space, &mut w)?;
        w.flush()?;
        s
    };
    counter.flush()?;
    summary.bytes_written = counter.count;
    Ok(summary)
}

struct CountingWriter<W> {
    inner: W,
    count: u64,
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn write_trace<W: Write>(space: &XSpace, w: &mut W) -> io::Result<ExportSummary> {
    let mut summary = ExportSummary::default();
    w.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
    let mut first = true;
    for (pi, plane) in space.planes.iter().enumerate() {
        let pid = pi as u64 + 1;
        summary.planes += 1;
        sep(w, &mut first)?;
        write!(w, "{{\"ph\":\"M\",\"pid\":{pid},\"name\":\"process_name\",\"args\":{{\"name\":")?;
        write_json_str(w, &plane.name)?;
        w.write_all(b"}}")?;
        sep(w, &mut first)?;
        write!(w, "{{\"ph\":\"M\",\"pid\":{pid},\"name\":\"process_sort_index\",\"args\":{{\"sort_index\":{pi}}}}}")?;

        for (li, line) in plane.lines.iter().enumerate() {
            summary.lines += 1;
            // Dense per plane, so every reader holds it exactly; the line's own id goes to the metadata.
            let tid = li as u64 + 1;
            let tname = if !line.display_name.is_empty() {
                line.display_name.clone()
            } else if !line.name.is_empty() {
                line.name.clone()
            } else {
                format!("line {}", line.id)
            };
            sep(w, &mut first)?;
            write!(w, "{{\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"name\":\"thread_name\",\"args\":{{\"name\":")?;
            write_json_str(w, &tname)?;
            write!(w, ",\"line_id\":\"{}\"}}}}", line.id)?;
            sep(w, &mut first)?;
            write!(
                w,
                "{{\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"name\":\"thread_sort_index\",\"args\":{{\"sort_index\":{li}}}}}"
            )?;
            for event in &line.events {
                sep(w, &mut first)?;
                write_event(w, plane, line, event, pid, tid)?;
                summary.events += 1;
            }
        }
    }
    w.write_all(b"]}")?;
    Ok(summary)
}

fn sep<W: Write>(w: &mut W, first: &mut bool) -> io::Result<()> {
    if *first {
        *first = false;
        w.write_all(b"\n")
    } else {
        w.write_all(b",\n")
    }
}

fn write_event<W: Write>(
    w: &mut W,
    plane: &XPlane,
    line: &XLine,
    event: &XEvent,
    pid: u64,
    tid: u64,
) -> io::Result<()> {
    write!(w, "{{\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"name\":")?;
    let meta = plane.event_metadata_of(event);
    let display = plane.event_display_name(event);
    if display.is_empty() {
        write!(w, "\"event {}\"", event.metadata_id)?;
    } else {
        write_json_str(w, display)?;
    }
    // ts: line.timestamp_ns * 1000 + offset_ps, truncated to ns. Computed in i128: epoch
    // timestamps in ps (~1.7e21) overflow i64, so `XLine::event_start_ps` would saturate.
    let start_ns = (i128::from(line.timestamp_ns) * 1000 + i128::from(event.offset_ps)).div_euclid(1000);
    w.write_all(b",\"ts\":")?;
    write_ns_as_us(w, start_ns)?;
    w.write_all(b",\"dur\":")?;
    write_ns_as_us(w, (i128::from(event.duration_ps) + 500).div_euclid(1000))?;

    let meta_stats: &[XStat] = meta.map_or(&[], |m| m.stats.as_slice());
    let long_name = meta.filter(|m| !m.display_name.is_empty() && m.display_name != m.name).map(|m| m.name.as_str());
    if !meta_stats.is_empty() || !event.stats.is_empty() || long_name.is_some() {
        w.write_all(b",\"args\":{")?;
        let mut first = true;
        if let Some(long) = long_name {
            first = false;
            w.write_all(b"\"long_name\":")?;
            write_json_str(w, long)?;
        }
        let overridden = |s: &XStat| event.stats.iter().any(|e| e.metadata_id == s.metadata_id);
        for stat in meta_stats.iter().filter(|s| !overridden(s)).chain(&event.stats) {
            write_stat(w, plane, stat, &mut first)?;
        }
        w.write_all(b"}")?;
    }
    w.write_all(b"}")
}

/// Writes one stat as an arg (`"name":value`, after a comma unless it is the first); an unset stat or one of
/// [`INTERNAL_STATS`] writes nothing.
fn write_stat<W: Write>(w: &mut W, plane: &XPlane, stat: &XStat, first: &mut bool) -> io::Result<()> {
    let name = plane.stat_name(stat);
    if matches!(stat.value, StatValue::Unset) || INTERNAL_STATS.contains(&name) {
        return Ok(());
    }
    if !std::mem::replace(first, false) {
        w.write_all(b",")?;
    }
    if name.is_empty() {
        write!(w, "\"stat {}\":", stat.metadata_id)?;
    } else {
        write_json_str(w, name)?;
        w.write_all(b":")?;
    }
    match &stat.value {
        StatValue::Unset => unreachable!("filtered above"),
        StatValue::Double(v) if v.is_finite() => {
            serde_json::to_writer(&mut *w, v).map_err(io::Error::from)?;
        }
        StatValue::Double(v) => write_json_str(w, &v.to_string())?,
        StatValue::Uint64(v) => write!(w, "{v}")?,
        StatValue::Int64(v) => write!(w, "{v}")?,
        StatValue::Str(s) => write_json_str(w, s)?,
        StatValue::Ref(_) => match plane.stat_str(stat) {
            Some(s) => write_json_str(w, s)?,
            None => w.write_all(b"null")?,
        },
        StatValue::Bytes(b) => write_bytes(w, b)?,
        // Inflated within falcon-xplane's cap (`MAX_INFLATED_LEN`); one that does not inflate is written as bytes.
        StatValue::CompressedStr(b) => match stat.value.decompressed_str() {
            Some(Ok(s)) => write_json_str(w, &s)?,
            _ => write_bytes(w, b)?,
        },
    }
    Ok(())
}

fn write_bytes<W: Write>(w: &mut W, b: &[u8]) -> io::Result<()> {
    if b.len() > MAX_HEX_BYTES {
        return write!(w, "\"<{} bytes>\"", b.len());
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut buf = Vec::with_capacity(b.len() * 2 + 2);
    buf.push(b'"');
    for &x in b {
        buf.push(HEX[usize::from(x >> 4)]);
        buf.push(HEX[usize::from(x & 0xf)]);
    }
    buf.push(b'"');
    w.write_all(&buf)
}

/// Writes nanoseconds as an exact decimal number of microseconds (`1234.567`).
fn write_ns_as_us<W: Write>(w: &mut W, ns: i128) -> io::Result<()> {
    let sign = if ns < 0 { "-" } else { "" };
    let abs = ns.unsigned_abs();
    write!(w, "{sign}{}.{:03}", abs / 1000, abs % 1000)
}

/// Writes `s` as a JSON string literal (RFC 8259 escaping; non-ASCII passes through as UTF-8).
pub fn write_json_str<W: Write>(w: &mut W, s: &str) -> io::Result<()> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    w.write_all(b"\"")?;
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => &[b'\\', b'u', b'0', b'0', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]],
            _ => continue,
        };
        w.write_all(&bytes[start..i])?;
        w.write_all(esc)?;
        start = i + 1;
    }
    w.write_all(&bytes[start..])?;
    w.write_all(b"\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(s: &str) -> String {
        let mut v = Vec::new();
        write_json_str(&mut v, s).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn escapes_round_trip() {
        for s in ["", "plain", "q\"uo\\te", "ctl\u{0}\u{1}\u{8}\u{c}\u{1f}\n\r\t", "é ∑ 🚀 \u{2028}"] {
            let back: String = serde_json::from_str(&esc(s)).unwrap();
            assert_eq!(back, s);
        }
        assert_eq!(esc("a\u{1}b"), "\"a\\u0001b\"");
    }

    #[test]
    fn ns_as_us() {
        let f = |ns| {
            let mut v = Vec::new();
            write_ns_as_us(&mut v, ns).unwrap();
            String::from_utf8(v).unwrap()
        };
        assert_eq!(f(0), "0.000");
        assert_eq!(f(1_234_567), "1234.567");
        assert_eq!(f(-1_500), "-1.500");
        assert_eq!(f(1_700_000_000_123_456_789), "1700000000123456.789");
    }
}

/// What [`export_trace_file`] wrote.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct TraceFileExport {
    /// Host the profile file belongs to.
    pub host: String,
    /// The file written.
    pub output: std::path::PathBuf,
    pub planes: usize,
    pub lines: usize,
    pub events: usize,
    pub bytes_written: u64,
}

/// Exports one profile file as a Chrome trace at `output` (gzipped when its name ends in `.gz`). The
/// trace is written beside `output` under a temporary name and renamed into place, so `output` is
/// either the whole trace or untouched. The profile is read, not mapped.
pub fn export_trace_file(profile: &std::path::Path, output: &std::path::Path) -> crate::error::Result<TraceFileExport> {
    let file = crate::input::HostFile::user(crate::input::host_of(profile), profile.to_path_buf());
    export_host_trace(&file, output)
}

/// [`export_trace_file`] of a host's file, memory-mapped when it is a cache copy.
pub fn export_host_trace(
    profile: &crate::input::HostFile,
    output: &std::path::Path,
) -> crate::error::Result<TraceFileExport> {
    use crate::error::AnalysisError;
    let space = crate::input::load_complete_host(profile)?;
    let gzip = output.extension().is_some_and(|e| e == "gz");
    let dir = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let io = |what: &str, e: io::Error| AnalysisError::Io(format!("{what} {}: {e}", output.display()));
    let name = output.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let partial = dir.join(format!(".{name}.partial-{}", std::process::id()));
    let file = std::fs::File::create(&partial).map_err(|e| io("creating a temporary file for", e))?;
    let written = write_chrome_trace(&space, file, gzip).and_then(|s| {
        std::fs::rename(&partial, output)?;
        Ok(s)
    });
    let summary = match written {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(io("writing", e));
        }
    };
    Ok(TraceFileExport {
        host: profile.host.clone(),
        output: output.to_path_buf(),
        planes: summary.planes,
        lines: summary.lines,
        events: summary.events,
        bytes_written: summary.bytes_written,
    })
}
