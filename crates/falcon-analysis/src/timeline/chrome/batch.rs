//! Whole events' bytes, copied from the scanner's buffer into batches, and each batch parsed by serde into a
//! `PreBatch` (on a thread of its own in the pipeline).

use super::event::{EventSeed, PreBatch, PreEvent};
use super::scanner::Scanner;
#[allow(unused_imports)]
use super::*;

/// Whole events' bytes, copied from the scanner's buffer, with where each ends and starts.
#[derive(Default)]
pub(super) struct RawBatch {
    pub(super) bytes: Vec<u8>,
    /// (end offset in `bytes`, line, column) of each event; each starts where the previous ends.
    pub(super) events: Vec<(usize, usize, usize)>,
}

/// A batch is handed on once it holds this many bytes.
pub(super) const BATCH_BYTES: usize = 1 << 20;

/// Collects events into [`RawBatch`]es and hands each full one to `out`.
pub(super) struct Batcher<F> {
    pub(super) cur: RawBatch,
    pub(super) out: F,
}

impl<F: FnMut(RawBatch) -> Result<(), ChromeTraceError>> Batcher<F> {
    pub(super) fn new(out: F) -> Self {
        Batcher { cur: RawBatch::default(), out }
    }

    pub(super) fn push(&mut self, bytes: &[u8], line: usize, col: usize) -> Result<(), ChromeTraceError> {
        self.cur.bytes.extend_from_slice(bytes);
        self.cur.events.push((self.cur.bytes.len(), line, col));
        if self.cur.bytes.len() >= BATCH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    pub(super) fn flush(&mut self) -> Result<(), ChromeTraceError> {
        if self.cur.events.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.cur);
        (self.out)(batch)
    }
}

/// Parses a batch's events (stopping at the first error, kept in `err`).
pub(super) fn preparse(raw: &RawBatch) -> PreBatch {
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
