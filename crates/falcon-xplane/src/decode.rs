//! The message decoders.
//!
//! The schema's nesting is fixed (at most XSpace > XPlane > XLine > XEvent > XStat), so none of these
//! recurse on input-controlled depth.
//!
//! Memory: every `Vec` and map is allocated once at its final size. Repeated fields of the big messages
//! (planes, lines, events, map entries) are counted first with [`Reader::count_fields`] (a scan that
//! only reads keys and lengths); the stats of an event / event metadata / plane are decoded into a
//! reused scratch vector and then moved into one of exactly their number. (A `Vec` grown by pushing
//! has up to twice the capacity it needs, and its first allocation already holds four elements: 160
//! bytes for a single 40-byte stat.)
//!
//! Threads: the lines of a big plane are decoded on up to [`DecodeOptions::threads`] threads (one
//! `Decoder` each; lines are independent). Errors are the same as a sequential decode's: the one at
//! the smallest offset, which is the first one a front-to-back decode meets.
//!
//! Input pages: [`crate::decode_file`] maps the file and passes a [`Release`] hook that the decoders
//! call as they move past each MiB of input, so that a consumed part of the mapping stops counting
//! towards the process's resident memory while the (larger) decoded form is built.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::wire::{Reader, Tag, WireType};
use crate::{
    DecodeError, DecodeOptions, IdMap, StatValue, XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata,
};

/// Called with an absolute byte range `[from, to)` of the input that no decoder reads again.
pub(crate) type ReleaseHook<'a> = &'a (dyn Fn(usize, usize) + Sync);

/// Where consumed input goes: a hook, and whether a released byte may still be read (a file mapping faults it
/// in again with the same contents) or not (an anonymous buffer's released pages read back as zeros).
#[derive(Clone, Copy)]
pub(crate) struct Release<'a> {
    pub(crate) hook: ReleaseHook<'a>,
    /// `false`: the decoder never reads a byte it has handed to `hook` (no release while pre-scanning).
    pub(crate) rereadable: bool,
}

/// Input is handed to the [`Release`] hook in steps of at least this many bytes.
const RELEASE_STEP: usize = 1 << 20;

/// Decodes a whole buffer.
pub(crate) fn decode_space(
    bytes: &[u8],
    options: &DecodeOptions<'_>,
    release: Option<Release<'_>>,
) -> Result<XSpace, DecodeError> {
    let threads = match options.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let mut d = Decoder { stats: Vec::new(), skip_stat_ids: Vec::new(), options, threads, release, released: 0 };
    d.space(&mut Reader::new(bytes))
}

struct Decoder<'o, 'r> {
    /// Stats of the message being decoded; empty between messages.
    stats: Vec<XStat>,
    /// `XStatMetadata` ids of the current plane whose name is in `options.skip_stats`.
    skip_stat_ids: Vec<i64>,
    options: &'o DecodeOptions<'o>,
    threads: usize,
    release: Option<Release<'r>>,
    /// Input before this absolute offset has been handed to `release` (or belongs to another thread).
    released: usize,
}

impl<'o, 'r> Decoder<'o, 'r> {
    /// A decoder for another thread, sharing options and hook.
    fn worker(&self) -> Self {
        Decoder {
            stats: Vec::new(),
            skip_stat_ids: self.skip_stat_ids.clone(),
            options: self.options,
            threads: 1,
            release: self.release,
            released: 0,
        }
    }

    /// Tells the hook that the input before `pos` is consumed, once there is at least a step of it.
    #[inline]
    fn consumed(&mut self, pos: usize) {
        if let Some(release) = self.release {
            if pos >= self.released + RELEASE_STEP {
                (release.hook)(self.released, pos);
                self.released = pos;
            }
        }
    }

    /// Moves the release mark to `pos` without releasing (the bytes before it are another
    /// decoder's to release, or too few to bother).
    fn skip_release_to(&mut self, pos: usize) {
        self.released = self.released.max(pos);
    }

    /// The scratch stats, moved into a vector of exactly their number (no allocation for none).
    fn take_stats(&mut self) -> Vec<XStat> {
        let mut out = Vec::with_capacity(self.stats.len());
        out.append(&mut self.stats);
        out
    }

    /// Decodes a stat into the scratch, unless its metadata id is one to skip.
    fn push_stat(&mut self, r: &mut Reader<'_>) -> Result<(), DecodeError> {
        let stat = decode_stat(r)?;
        if !self.skip_stat_ids.contains(&stat.metadata_id) {
            self.stats.push(stat);
        }
        Ok(())
    }

    fn space(&mut self, r: &mut Reader<'_>) -> Result<XSpace, DecodeError> {
        const M: &str = "XSpace";
        let [planes] = r.count_fields([1]);
        let mut s = XSpace { planes: Vec::with_capacity(planes), ..XSpace::default() };
        while let Some(t) = r.tag()? {
            match t.field {
                1 => {
                    let plane = self.plane(&mut read_message(r, t, M, "planes")?)?;
                    s.planes.push(plane);
                }
                2 => s.errors.push(read_string(r, t, M, "errors")?),
                3 => s.warnings.push(read_string(r, t, M, "warnings")?),
                4 => s.hostnames.push(read_string(r, t, M, "hostnames")?),
                _ => r.skip(t)?,
            }
            self.consumed(r.offset());
        }
        Ok(s)
    }

    /// Ids of this plane's stat metadata named in `options.skip_stats` (a pre-scan that stops
    /// quietly at malformed input; the decode proper reports it).
    fn skip_ids(&self, plane: &Reader<'_>) -> Vec<i64> {
        let mut ids = Vec::new();
        if self.options.skip_stats.is_empty() {
            return ids;
        }
        let mut r = plane.clone();
        while let Ok(Some(t)) = r.tag() {
            if t.field == 5 && t.wire == WireType::Len {
                let Ok(mut entry) = r.sub() else { break };
                if let Ok((key, m)) = decode_map_entry(&mut entry, "", decode_stat_metadata) {
                    if self.options.skip_stats.contains(&m.name.as_str()) {
                        ids.push(key);
                    }
                }
            } else if r.skip(t).is_err() {
                break;
            }
        }
        ids
    }

    fn plane(&mut self, r: &mut Reader<'_>) -> Result<XPlane, DecodeError> {
        const M: &str = "XPlane";
        let [lines, event_metadata, stat_metadata] = r.count_fields([3, 4, 5]);
        self.skip_stat_ids = self.skip_ids(r);
        let mut p = XPlane {
            lines: Vec::with_capacity(lines),
            event_metadata: IdMap::with_capacity_and_hasher(event_metadata, Default::default()),
            stat_metadata: IdMap::with_capacity_and_hasher(stat_metadata, Default::default()),
            ..XPlane::default()
        };
        // Lines to decode on worker threads: (index in `p.lines`, reader) when this plane is big.
        let parallel = self.threads > 1 && lines > 1 && {
            let mut line_bytes = 0usize;
            let mut scan = r.clone();
            while let Ok(Some(t)) = scan.tag() {
                let at = scan.offset();
                if scan.skip(t).is_err() {
                    break;
                }
                if t.field == 3 {
                    line_bytes += scan.offset() - at;
                }
            }
            line_bytes >= self.options.min_parallel_bytes
        };
        let mut deferred: Vec<Reader<'_>> = Vec::new();
        // Plane stats use their own scratch: metadata decoded in between uses `self.stats`.
        let mut plane_stats = Vec::new();
        let mut result = Ok(());
        while let Some(t) = r.tag().transpose() {
            let step = (|| -> Result<(), DecodeError> {
                let t = t?;
                match t.field {
                    1 => p.id = read_i64(r, t, M, "id")?,
                    2 => p.name = read_string(r, t, M, "name")?,
                    3 => {
                        let mut line = read_message(r, t, M, "lines")?;
                        if parallel {
                            self.skip_release_to(r.offset());
                            deferred.push(line);
                        } else {
                            let line = self.line(&mut line)?;
                            p.lines.push(line);
                        }
                    }
                    4 => {
                        let mut entry = read_message(r, t, M, "event_metadata")?;
                        let (key, value) =
                            decode_map_entry(&mut entry, "XPlane.EventMetadataEntry", |r| self.event_metadata(r))?;
                        p.event_metadata.insert(key, value);
                    }
                    5 => {
                        let mut entry = read_message(r, t, M, "stat_metadata")?;
                        let (key, value) =
                            decode_map_entry(&mut entry, "XPlane.StatMetadataEntry", decode_stat_metadata)?;
                        p.stat_metadata.insert(key, value);
                    }
                    6 => {
                        let stat = decode_stat(&mut read_message(r, t, M, "stats")?)?;
                        if !self.skip_stat_ids.contains(&stat.metadata_id) {
                            plane_stats.push(stat);
                        }
                    }
                    _ => r.skip(t)?,
                }
                Ok(())
            })();
            if let Err(e) = step {
                result = Err(e);
                break;
            }
            self.consumed(r.offset());
        }
        if !deferred.is_empty() {
            // Lines before a plane-level error are still decoded: one of them may hold an earlier
            // error, which a front-to-back decode would have reported instead.
            result = match (self.lines_in_parallel(deferred), result) {
                (Ok(lines), Ok(())) => {
                    p.lines = lines;
                    Ok(())
                }
                (Ok(_), Err(e)) | (Err(e), Ok(())) => Err(e),
                (Err(a), Err(b)) => Err(earlier(a, b)),
            };
        }
        result?;
        p.stats = plane_stats;
        p.stats.shrink_to_fit();
        Ok(p)
    }

    /// Decodes lines on `self.threads` threads (the calling one included), biggest first; returns
    /// them in input order, or the error at the smallest offset.
    fn lines_in_parallel(&self, readers: Vec<Reader<'_>>) -> Result<Vec<XLine>, DecodeError> {
        let n = readers.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(readers[i].len()));
        let next = AtomicUsize::new(0);
        let slots: Vec<Mutex<Option<Result<XLine, DecodeError>>>> = (0..n).map(|_| Mutex::new(None)).collect();
        // After an error, lines that start later cannot hold an earlier one: skip them.
        let first_error_at = AtomicUsize::new(usize::MAX);
        let work = |d: &mut Decoder<'_, '_>| loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(&i) = order.get(k) else { break };
            let mut r = readers[i].clone();
            if r.offset() > first_error_at.load(Ordering::Relaxed) {
                continue;
            }
            d.released = r.offset();
            let line = d.line(&mut r);
            if let Err(e) = &line {
                first_error_at.fetch_min(e.offset().unwrap_or(0), Ordering::Relaxed);
            }
            *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(line);
        };
        let workers = self.threads.min(n);
        std::thread::scope(|s| {
            let handles: Vec<_> = (1..workers)
                .map(|_| {
                    let mut d = self.worker();
                    s.spawn(move || work(&mut d))
                })
                .collect();
            work(&mut self.worker());
            // Join explicitly: the scope's implicit wait ends when the closures have returned, a
            // join when the threads have exited (thread-local destructors run, their memory freed).
            // Without it, a leak checker run right after `decode` sees those allocations as leaked.
            for h in handles {
                if let Err(panic) = h.join() {
                    std::panic::resume_unwind(panic);
                }
            }
        });
        let mut lines = Vec::with_capacity(n);
        let mut error: Option<DecodeError> = None;
        for slot in slots {
            match slot.into_inner().unwrap_or_else(|e| e.into_inner()) {
                Some(Ok(line)) if error.is_none() => lines.push(line),
                Some(Ok(_)) | None => {}
                Some(Err(e)) => {
                    error = Some(match error {
                        Some(prev) => earlier(prev, e),
                        None => e,
                    })
                }
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok(lines),
        }
    }

    fn line(&mut self, r: &mut Reader<'_>) -> Result<XLine, DecodeError> {
        const M: &str = "XLine";
        let events = self.count_events(r);
        let mut l = XLine { events: Vec::with_capacity(events), ..XLine::default() };
        while let Some(t) = r.tag()? {
            match t.field {
                1 => l.id = read_i64(r, t, M, "id")?,
                2 => l.name = read_string(r, t, M, "name")?,
                3 => l.timestamp_ns = read_i64(r, t, M, "timestamp_ns")?,
                4 => {
                    let event = self.event(&mut read_message(r, t, M, "events")?)?;
                    l.events.push(event);
                    self.consumed(r.offset());
                }
                9 => l.duration_ps = read_i64(r, t, M, "duration_ps")?,
                10 => l.display_id = read_i64(r, t, M, "display_id")?,
                11 => l.display_name = read_string(r, t, M, "display_name")?,
                _ => r.skip(t)?,
            }
        }
        self.consumed(r.offset());
        Ok(l)
    }

    /// `XLine.events` fields in the rest of `r` (see [`Reader::count_fields`]), releasing the
    /// scanned input as it goes (the decode after it faults the pages in again, one MiB at a time).
    fn count_events(&mut self, line: &Reader<'_>) -> usize {
        if !self.release.is_some_and(|r| r.rereadable) {
            return line.count_fields([4])[0];
        }
        let mut r = line.clone();
        let released = self.released;
        let mut n = 0;
        while let Ok(Some(t)) = r.tag() {
            n += usize::from(t.field == 4);
            if r.skip(t).is_err() {
                break;
            }
            self.consumed(r.offset());
        }
        self.released = released;
        n
    }

    fn event(&mut self, r: &mut Reader<'_>) -> Result<XEvent, DecodeError> {
        const M: &str = "XEvent";
        let mut e = XEvent::default();
        self.stats.clear();
        while let Some(t) = r.tag()? {
            match t.field {
                1 => e.metadata_id = read_i64(r, t, M, "metadata_id")?,
                2 => {
                    e.offset_ps = read_i64(r, t, M, "offset_ps")?;
                    e.num_occurrences = 0;
                }
                3 => e.duration_ps = read_i64(r, t, M, "duration_ps")?,
                4 => self.push_stat(&mut read_message(r, t, M, "stats")?)?,
                5 => {
                    e.num_occurrences = read_i64(r, t, M, "num_occurrences")?;
                    e.offset_ps = 0;
                }
                _ => r.skip(t)?,
            }
        }
        e.stats = self.take_stats();
        Ok(e)
    }

    fn event_metadata(&mut self, r: &mut Reader<'_>) -> Result<XEventMetadata, DecodeError> {
        const M: &str = "XEventMetadata";
        let mut m = XEventMetadata::default();
        self.stats.clear();
        while let Some(t) = r.tag()? {
            match t.field {
                1 => m.id = read_i64(r, t, M, "id")?,
                2 => m.name = read_string(r, t, M, "name")?,
                3 => m.metadata = read_bytes(r, t, M, "metadata")?,
                4 => m.display_name = read_string(r, t, M, "display_name")?,
                5 => self.push_stat(&mut read_message(r, t, M, "stats")?)?,
                6 => match t.wire {
                    // Packed: a run of varints.
                    WireType::Len => {
                        let mut packed = r.sub()?;
                        m.child_id.reserve(packed.varint_count());
                        while !packed.is_empty() {
                            m.child_id.push(packed.varint()? as i64);
                        }
                    }
                    _ => m.child_id.push(read_i64(r, t, M, "child_id")?),
                },
                _ => r.skip(t)?,
            }
        }
        m.stats = self.take_stats();
        m.child_id.shrink_to_fit();
        Ok(m)
    }
}

/// Of two errors, the one a front-to-back decode meets first.
fn earlier(a: DecodeError, b: DecodeError) -> DecodeError {
    if b.offset().unwrap_or(usize::MAX) < a.offset().unwrap_or(usize::MAX) {
        b
    } else {
        a
    }
}

// ---------------------------------------------------------------------------------------------
// Field readers with wire-type checks.

fn expect(tag: Tag, want: WireType, message: &'static str, field: &'static str) -> Result<(), DecodeError> {
    if tag.wire == want {
        Ok(())
    } else {
        Err(DecodeError::UnexpectedWireType {
            offset: tag.offset,
            message,
            field,
            found: tag.wire.name(),
            expected: want.name(),
        })
    }
}

#[inline]
fn read_u64(r: &mut Reader<'_>, tag: Tag, m: &'static str, f: &'static str) -> Result<u64, DecodeError> {
    expect(tag, WireType::Varint, m, f)?;
    r.varint()
}

#[inline]
fn read_i64(r: &mut Reader<'_>, tag: Tag, m: &'static str, f: &'static str) -> Result<i64, DecodeError> {
    // int64 is two's complement in a varint.
    read_u64(r, tag, m, f).map(|v| v as i64)
}

fn read_bytes(r: &mut Reader<'_>, tag: Tag, m: &'static str, f: &'static str) -> Result<Vec<u8>, DecodeError> {
    expect(tag, WireType::Len, m, f)?;
    Ok(r.len_delimited()?.1.to_vec())
}

fn read_string(r: &mut Reader<'_>, tag: Tag, m: &'static str, f: &'static str) -> Result<String, DecodeError> {
    expect(tag, WireType::Len, m, f)?;
    let (start, bytes) = r.len_delimited()?;
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s.to_owned()),
        Err(e) => Err(DecodeError::InvalidUtf8 { offset: start + e.valid_up_to(), message: m, field: f }),
    }
}

fn read_message<'a>(r: &mut Reader<'a>, tag: Tag, m: &'static str, f: &'static str) -> Result<Reader<'a>, DecodeError> {
    expect(tag, WireType::Len, m, f)?;
    r.sub()
}

/// A `map<int64, V>` entry: key = field 1 (varint), value = field 2 (message). Missing parts default.
fn decode_map_entry<V: Default>(
    r: &mut Reader<'_>,
    m: &'static str,
    mut decode_value: impl FnMut(&mut Reader<'_>) -> Result<V, DecodeError>,
) -> Result<(i64, V), DecodeError> {
    let mut key = 0i64;
    let mut value = None;
    while let Some(t) = r.tag()? {
        match t.field {
            1 => key = read_i64(r, t, m, "key")?,
            2 => value = Some(decode_value(&mut read_message(r, t, m, "value")?)?),
            _ => r.skip(t)?,
        }
    }
    Ok((key, value.unwrap_or_default()))
}

fn decode_stat(r: &mut Reader<'_>) -> Result<XStat, DecodeError> {
    const M: &str = "XStat";
    let mut s = XStat::default();
    while let Some(t) = r.tag()? {
        match t.field {
            1 => s.metadata_id = read_i64(r, t, M, "metadata_id")?,
            2 => {
                expect(t, WireType::Fixed64, M, "double_value")?;
                s.value = StatValue::Double(f64::from_bits(r.fixed64()?));
            }
            3 => s.value = StatValue::Uint64(read_u64(r, t, M, "uint64_value")?),
            4 => s.value = StatValue::Int64(read_i64(r, t, M, "int64_value")?),
            5 => s.value = StatValue::Str(read_string(r, t, M, "str_value")?),
            6 => s.value = StatValue::Bytes(read_bytes(r, t, M, "bytes_value")?),
            7 => s.value = StatValue::Ref(read_u64(r, t, M, "ref_value")?),
            8 => s.value = StatValue::CompressedStr(read_bytes(r, t, M, "compressed_str_value")?),
            _ => r.skip(t)?,
        }
    }
    Ok(s)
}

fn decode_stat_metadata(r: &mut Reader<'_>) -> Result<XStatMetadata, DecodeError> {
    const M: &str = "XStatMetadata";
    let mut m = XStatMetadata::default();
    while let Some(t) = r.tag()? {
        match t.field {
            1 => m.id = read_i64(r, t, M, "id")?,
            2 => m.name = read_string(r, t, M, "name")?,
            3 => m.description = read_string(r, t, M, "description")?,
            _ => r.skip(t)?,
        }
    }
    Ok(m)
}
