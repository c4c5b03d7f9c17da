//! XSpace/XPlane decoding for profile analysis.
//!
//! A hand-written protobuf wire decoder for XProf's `*.xplane.pb` files (message `XSpace` of package
//! `tensorflow.profiler`). It depends on no other Falcon crate so it can be fuzzed alone.
//!
//! Guarantees:
//! - [`decode`] never panics; malformed input gives a [`DecodeError`] naming the absolute byte
//!   offset and what was expected (the first error in input order, also when lines are decoded on
//!   several threads).
//! - No recursion on input-controlled depth: the schema nests at most five messages deep and unknown
//!   groups are skipped iteratively (bounded by [`MAX_GROUP_DEPTH`](wire::MAX_GROUP_DEPTH)).
//! - No allocation is sized by an untrusted length: lengths are checked against the remaining input
//!   first, and collections are allocated for the number of elements actually present (counted by
//!   a pre-scan of keys and lengths), never for a number read from the input.
//! - Unknown fields are skipped by wire type; known fields with the wrong wire type are an error
//!   (except `XEventMetadata.child_id`, accepted packed or unpacked).
//! - An empty buffer is a valid, empty `XSpace` (proto3 semantics); callers report "no planes".
//!
//! Performance (see `docs/PERFORMANCE.md`, "Profile analysis"): every collection is allocated once
//! at its exact size, the lines of a big plane are decoded on all cores ([`DecodeOptions::threads`]),
//! [`decode_file_with`] can memory-map a file the caller owns and give consumed input pages back while
//! decoding ([`DecodeOptions::mmap`]; off by default: a mapped file truncated by another process kills the
//! reader with `SIGBUS`), and
//! [`DecodeOptions::skip_stats`] leaves out stats a caller never reads. The example
//! `examples/decode_stats.rs` measures decode time and peak memory.
//!
//! Protobuf merge semantics are simplified: for a repeated embedded message every occurrence is a
//! new element; a singular scalar or oneof takes its last occurrence; a duplicate map key keeps the
//! last entry (entries are not merged).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

mod decode;
mod file;
mod inflate;
mod wire;

pub use inflate::{inflate_str, InflateError, MAX_INFLATED_LEN};

/// Why a buffer is not a valid `XSpace`. Offsets are absolute byte offsets into the input.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("truncated varint at offset {offset}")]
    TruncatedVarint { offset: usize },
    #[error("varint at offset {offset} overflows 64 bits")]
    VarintOverflow { offset: usize },
    #[error("truncated {width}-byte fixed-width value at offset {offset}: only {remaining} bytes remain")]
    TruncatedFixed { offset: usize, width: usize, remaining: usize },
    #[error("length {len} at offset {offset} exceeds the remaining {remaining} bytes")]
    LengthExceedsInput { offset: usize, len: u64, remaining: usize },
    #[error("invalid wire type {wire_type} at offset {offset}")]
    InvalidWireType { offset: usize, wire_type: u8 },
    #[error("invalid field number {field} at offset {offset}")]
    InvalidFieldNumber { offset: usize, field: u64 },
    #[error("field {message}.{field} at offset {offset} has wire type {found}, expected {expected}")]
    UnexpectedWireType {
        offset: usize,
        message: &'static str,
        field: &'static str,
        found: &'static str,
        expected: &'static str,
    },
    #[error("end-group for field {field} at offset {offset} without a matching start-group")]
    UnexpectedEndGroup { offset: usize, field: u32 },
    #[error("group for field {field} starting at offset {offset} is never closed")]
    UnterminatedGroup { offset: usize, field: u32 },
    #[error("nesting too deep at offset {offset} (more than {max_depth} levels)")]
    NestingTooDeep { offset: usize, max_depth: usize },
    #[error("invalid UTF-8 in {message}.{field} at offset {offset}")]
    InvalidUtf8 { offset: usize, message: &'static str, field: &'static str },
    #[error("cannot read {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
}

impl DecodeError {
    /// The byte offset the error refers to (`None` for I/O errors).
    pub fn offset(&self) -> Option<usize> {
        use DecodeError::*;
        match self {
            TruncatedVarint { offset }
            | VarintOverflow { offset }
            | TruncatedFixed { offset, .. }
            | LengthExceedsInput { offset, .. }
            | InvalidWireType { offset, .. }
            | InvalidFieldNumber { offset, .. }
            | UnexpectedWireType { offset, .. }
            | UnexpectedEndGroup { offset, .. }
            | UnterminatedGroup { offset, .. }
            | NestingTooDeep { offset, .. }
            | InvalidUtf8 { offset, .. } => Some(*offset),
            Io { .. } => None,
        }
    }
}

/// A plane's metadata by id. The ids are small integers looked up once or more per event, so the map hashes
/// with FxHash (`rustc-hash`) rather than the standard library's SipHash; build one with `IdMap::default()`.
pub type IdMap<V> = HashMap<i64, V, rustc_hash::FxBuildHasher>;

/// A whole profile: one plane per device / host component.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct XSpace {
    pub planes: Vec<XPlane>,
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
    pub hostnames: Vec<String>,
}

/// One device or host component, with its own metadata id spaces.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct XPlane {
    pub id: i64,
    pub name: String,
    pub lines: Vec<XLine>,
    /// Keyed by `XEventMetadata.id`.
    pub event_metadata: IdMap<XEventMetadata>,
    /// Keyed by `XStatMetadata.id`.
    pub stat_metadata: IdMap<XStatMetadata>,
    /// Plane-level stats (e.g. device capabilities).
    pub stats: Vec<XStat>,
}

/// A timeline (thread, stream, or derived line such as `XLA Ops`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct XLine {
    pub id: i64,
    pub display_id: i64,
    pub name: String,
    pub display_name: String,
    /// Line start, nanoseconds since the Unix epoch.
    pub timestamp_ns: i64,
    pub duration_ps: i64,
    pub events: Vec<XEvent>,
}

/// One occurrence (or an aggregate of occurrences) of an event.
///
/// `offset_ps` and `num_occurrences` form a protobuf oneof: at most one is non-zero; the last one
/// seen on the wire wins and resets the other.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct XEvent {
    pub metadata_id: i64,
    /// Picoseconds from the line's `timestamp_ns`.
    pub offset_ps: i64,
    /// For aggregated events (then there is no offset).
    pub num_occurrences: i64,
    pub duration_ps: i64,
    pub stats: Vec<XStat>,
}

/// A statistic; its name comes from the plane's `stat_metadata[metadata_id]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct XStat {
    pub metadata_id: i64,
    pub value: StatValue,
}

/// The oneof value of an `XStat`.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum StatValue {
    /// No value field was present.
    #[default]
    Unset,
    Double(f64),
    Uint64(u64),
    Int64(i64),
    Str(String),
    Bytes(Vec<u8>),
    /// The string is `stat_metadata[ref].name` of the same plane.
    Ref(u64),
    /// Field 8 `compressed_str_value`: a gzip-compressed string, kept compressed as decoded;
    /// [`StatValue::decompressed_str`] / [`XPlane::stat_string`] inflate it.
    CompressedStr(Vec<u8>),
}

impl StatValue {
    /// Integer view of `Int64`/`Uint64` (XProf's `IntOrUintValue`); `None` for a `Uint64` above `i64::MAX`.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            StatValue::Int64(v) => Some(v),
            StatValue::Uint64(v) => i64::try_from(v).ok(),
            _ => None,
        }
    }

    /// Numeric view of any numeric variant.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            StatValue::Double(v) => Some(v),
            StatValue::Int64(v) => Some(v as f64),
            StatValue::Uint64(v) => Some(v as f64),
            _ => None,
        }
    }
}

/// Metadata shared by all events with the same `metadata_id`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct XEventMetadata {
    pub id: i64,
    pub name: String,
    pub display_name: String,
    /// Opaque serialized extra.
    pub metadata: Vec<u8>,
    /// Stats constant for all events of this type.
    pub stats: Vec<XStat>,
    /// `event_metadata` keys of child events.
    pub child_id: Vec<i64>,
}

/// The name (and description) behind a stat id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct XStatMetadata {
    pub id: i64,
    pub name: String,
    pub description: String,
}

impl XSpace {
    /// The first plane with exactly this name.
    pub fn plane_by_name(&self, name: &str) -> Option<&XPlane> {
        self.planes.iter().find(|p| p.name == name)
    }

    /// Planes whose name starts with `prefix` (e.g. `/device:TPU:`).
    pub fn planes_with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a XPlane> + 'a {
        self.planes.iter().filter(move |p| p.name.starts_with(prefix))
    }
}

impl XPlane {
    /// The first line with exactly this name.
    pub fn line_by_name(&self, name: &str) -> Option<&XLine> {
        self.lines.iter().find(|l| l.name == name)
    }

    /// The event's metadata, if the id is known.
    pub fn event_metadata_of(&self, event: &XEvent) -> Option<&XEventMetadata> {
        self.event_metadata.get(&event.metadata_id)
    }

    /// The event's name (`""` when its metadata is missing).
    pub fn event_name(&self, event: &XEvent) -> &str {
        self.event_metadata_of(event).map_or("", |m| m.name.as_str())
    }

    /// The event's display name, falling back to its name.
    pub fn event_display_name(&self, event: &XEvent) -> &str {
        match self.event_metadata_of(event) {
            Some(m) if !m.display_name.is_empty() => &m.display_name,
            Some(m) => &m.name,
            None => "",
        }
    }

    /// The stat's name (`""` when its metadata is missing).
    pub fn stat_name(&self, stat: &XStat) -> &str {
        self.stat_metadata.get(&stat.metadata_id).map_or("", |m| m.name.as_str())
    }

    /// The stat metadata with this name (linear scan; names are unique per plane).
    pub fn stat_metadata_by_name(&self, name: &str) -> Option<&XStatMetadata> {
        self.stat_metadata.values().find(|m| m.name == name)
    }

    /// The first stat in `stats` whose metadata name is `name`.
    pub fn find_stat<'s>(&self, stats: &'s [XStat], name: &str) -> Option<&'s XStat> {
        let id = self.stat_metadata_by_name(name)?.id;
        stats.iter().find(|s| s.metadata_id == id)
    }

    /// A plane-level stat by name.
    pub fn plane_stat(&self, name: &str) -> Option<&XStat> {
        self.find_stat(&self.stats, name)
    }

    /// An event's stat by name: the event's own stats first, then its metadata's stats (as XProf).
    pub fn event_stat<'s>(&'s self, event: &'s XEvent, name: &str) -> Option<&'s XStat> {
        self.event_stat_by_id(event, Some(self.stat_metadata_by_name(name)?.id))
    }

    /// An event's stat by its metadata id (looked up once per plane by the caller): the event's own stats
    /// first, then its metadata's stats (as XProf's visitor); `None` for no id.
    pub fn event_stat_by_id<'s>(&'s self, event: &'s XEvent, id: Option<i64>) -> Option<&'s XStat> {
        let id = id?;
        event
            .stats
            .iter()
            .find(|s| s.metadata_id == id)
            .or_else(|| self.event_metadata_of(event)?.stats.iter().find(|s| s.metadata_id == id))
    }

    /// The string of a `Str` or `Ref` stat (XProf's `StrOrRefValue`).
    pub fn stat_str<'s>(&'s self, stat: &'s XStat) -> Option<&'s str> {
        match &stat.value {
            StatValue::Str(s) => Some(s),
            StatValue::Ref(r) => {
                let id = i64::try_from(*r).ok()?;
                self.stat_metadata.get(&id).map(|m| m.name.as_str())
            }
            _ => None,
        }
    }

    /// Total number of events over all lines.
    pub fn event_count(&self) -> usize {
        self.lines.iter().map(|l| l.events.len()).sum()
    }
}

impl XLine {
    /// Absolute start of an event in picoseconds since the Unix epoch (saturating).
    pub fn event_start_ps(&self, event: &XEvent) -> i128 {
        // Epoch timestamps in picoseconds (~1.7e21) do not fit in an i64.
        i128::from(self.timestamp_ns) * 1000 + i128::from(event.offset_ps)
    }
}

/// How to decode; [`DecodeOptions::default`] is what [`decode`] and [`decode_file`] use.
///
/// ```
/// let opts = falcon_xplane::DecodeOptions::default().threads(1).skip_stats(&["_src"]);
/// let space = falcon_xplane::decode_with(&[], &opts).unwrap();
/// assert!(space.planes.is_empty());
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DecodeOptions<'a> {
    /// Threads for the lines of a big plane: 0 (the default) = the machine's available
    /// parallelism, 1 = only the calling thread. Results and errors do not depend on it.
    pub threads: usize,
    /// A plane whose lines take fewer bytes than this is decoded on the calling thread only
    /// (default 2 MiB: below that, starting threads costs more than it saves).
    pub min_parallel_bytes: usize,
    /// Stats to leave out, by `XStatMetadata` name, from events, event metadata and planes (their
    /// `stat_metadata` entries stay). Use it to save memory on stats the caller never reads: on a
    /// JAX CPU capture `_src`, `_pt`, `_p`, `_ct` and `_c` are three quarters of all event stats.
    pub skip_stats: &'a [&'a str],
    /// [`decode_file_with`] memory-maps files of 64 KiB or more instead of reading them, and hands
    /// each consumed MiB back to the OS while decoding, so the input's pages do not add up with the
    /// decoded form in the peak resident memory. Off by default: set it only for a file that nothing
    /// truncates or rewrites while it is decoded (one the caller wrote and owns, such as a cache copy
    /// renamed into place), because a mapped file that shrinks ends the process with `SIGBUS`.
    pub mmap: bool,
}

impl Default for DecodeOptions<'_> {
    fn default() -> Self {
        DecodeOptions { threads: 0, min_parallel_bytes: 2 << 20, skip_stats: &[], mmap: false }
    }
}

impl<'a> DecodeOptions<'a> {
    /// Sets [`DecodeOptions::threads`].
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Sets [`DecodeOptions::min_parallel_bytes`].
    pub fn min_parallel_bytes(mut self, bytes: usize) -> Self {
        self.min_parallel_bytes = bytes;
        self
    }

    /// Sets [`DecodeOptions::skip_stats`].
    pub fn skip_stats(mut self, names: &'a [&'a str]) -> Self {
        self.skip_stats = names;
        self
    }

    /// Sets [`DecodeOptions::mmap`].
    pub fn mmap(mut self, mmap: bool) -> Self {
        self.mmap = mmap;
        self
    }
}

/// Decodes a serialized `XSpace`. An empty buffer is a valid empty space.
pub fn decode(bytes: &[u8]) -> Result<XSpace, DecodeError> {
    decode_with(bytes, &DecodeOptions::default())
}

/// [`decode`] with options.
pub fn decode_with(bytes: &[u8], options: &DecodeOptions<'_>) -> Result<XSpace, DecodeError> {
    decode::decode_space(bytes, options, None)
}

/// Decodes a file as an `XSpace`, read into memory (see [`DecodeOptions::mmap`] for mapping it).
/// Only a regular file is read: a directory, FIFO, socket or device is an [`DecodeError::Io`].
pub fn decode_file(path: impl AsRef<Path>) -> Result<XSpace, DecodeError> {
    decode_file_with(path, &DecodeOptions::default())
}

/// [`decode_file`] with options.
pub fn decode_file_with(path: impl AsRef<Path>, options: &DecodeOptions<'_>) -> Result<XSpace, DecodeError> {
    file::decode_file(path.as_ref(), options)
}

#[cfg(test)]
mod tests;
