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
    CollectiveOp, Device, DeviceKind, Event, EventClass, HostThread, Launch, NameId, StepMarker, StepSource, Timeline,
    TimelineSource,
};
use crate::error::AnalysisError;

mod batch;
mod event;
mod parser;
mod scanner;
mod values;

use batch::{preparse, Batcher, RawBatch};
use event::PreBatch;
use parser::{apply, Parser};
use scanner::Scanner;

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
    crate::error::check_profile_size(path, meta.len())?;
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
