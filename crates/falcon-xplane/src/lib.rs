//! XSpace/XPlane decoding for profile analysis.
//!
//! A hand-written protobuf wire decoder for XProf's `*.xplane.pb` files (message `XSpace` of package
//! `tensorflow.profiler`). It depends on no other Falcon crate so it can be fuzzed alone.
//!
//! Guarantees:
//! - [`decode`] never panics; malformed input gives a [`DecodeError`] naming the absolute byte
//!   offset and what was expected.
//! - No recursion on input-controlled depth: the schema nests at most five messages deep and unknown
//!   groups are skipped iteratively (bounded by [`MAX_GROUP_DEPTH`](wire::MAX_GROUP_DEPTH)).
//! - No allocation is sized by an untrusted length: lengths are checked against the remaining input
//!   first and collections only grow by pushing decoded elements.
//! - Unknown fields are skipped by wire type; known fields with the wrong wire type are an error
//!   (except `XEventMetadata.child_id`, accepted packed or unpacked).
//! - An empty buffer is a valid, empty `XSpace` (proto3 semantics); callers report "no planes".
//!
//! Protobuf merge semantics are simplified: for a repeated embedded message every occurrence is a
//! new element; a singular scalar or oneof takes its last occurrence; a duplicate map key keeps the
//! last entry (entries are not merged).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

mod wire;

use wire::{Reader, Tag, WireType};

/// Why a buffer is not a valid `XSpace`. Offsets are absolute byte offsets into the input.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("truncated varint at offset {offset}")]
    TruncatedVarint { offset: usize },
    #[error("varint at offset {offset} overflows 64 bits")]
    VarintOverflow { offset: usize },
    #[error("truncated {width}-byte fixed-width value at offset {offset}: only {remaining} bytes remain")]
    TruncatedFixed {
        offset: usize,
        width: usize,
        remaining: usize,
    },
    #[error("length {len} at offset {offset} exceeds the remaining {remaining} bytes")]
    LengthExceedsInput {
        offset: usize,
        len: u64,
        remaining: usize,
    },
    #[error("invalid wire type {wire_type} at offset {offset}")]
    InvalidWireType { offset: usize, wire_type: u8 },
    #[error("invalid field number {field} at offset {offset}")]
    InvalidFieldNumber { offset: usize, field: u64 },
    #[error(
        "field {message}.{field} at offset {offset} has wire type {found}, expected {expected}"
    )]
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
    InvalidUtf8 {
        offset: usize,
        message: &'static str,
        field: &'static str,
    },
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
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
    pub event_metadata: HashMap<i64, XEventMetadata>,
    /// Keyed by `XStatMetadata.id`.
    pub stat_metadata: HashMap<i64, XStatMetadata>,
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
    /// Field 8 `compressed_str_value`: a gzip-compressed string, kept compressed (this crate has no
    /// inflate dependency).
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
    pub fn planes_with_prefix<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = &'a XPlane> + 'a {
        self.planes
            .iter()
            .filter(move |p| p.name.starts_with(prefix))
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
        self.event_metadata_of(event)
            .map_or("", |m| m.name.as_str())
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
        self.stat_metadata
            .get(&stat.metadata_id)
            .map_or("", |m| m.name.as_str())
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
        let id = self.stat_metadata_by_name(name)?.id;
        event
            .stats
            .iter()
            .find(|s| s.metadata_id == id)
            .or_else(|| {
                self.event_metadata_of(event)?
                    .stats
                    .iter()
                    .find(|s| s.metadata_id == id)
            })
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

/// Decodes a serialized `XSpace`. An empty buffer is a valid empty space.
pub fn decode(bytes: &[u8]) -> Result<XSpace, DecodeError> {
    let mut r = Reader::new(bytes);
    decode_space(&mut r)
}

/// Reads a file and decodes it as an `XSpace`.
pub fn decode_file(path: impl AsRef<Path>) -> Result<XSpace, DecodeError> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|source| DecodeError::Io {
        path: path.to_owned(),
        source,
    })?;
    decode(&bytes)
}

// ---------------------------------------------------------------------------------------------
// Field readers with wire-type checks.

fn expect(
    tag: Tag,
    want: WireType,
    message: &'static str,
    field: &'static str,
) -> Result<(), DecodeError> {
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

fn read_u64(
    r: &mut Reader<'_>,
    tag: Tag,
    m: &'static str,
    f: &'static str,
) -> Result<u64, DecodeError> {
    expect(tag, WireType::Varint, m, f)?;
    r.varint()
}

fn read_i64(
    r: &mut Reader<'_>,
    tag: Tag,
    m: &'static str,
    f: &'static str,
) -> Result<i64, DecodeError> {
    // int64 is two's complement in a varint.
    read_u64(r, tag, m, f).map(|v| v as i64)
}

fn read_bytes(
    r: &mut Reader<'_>,
    tag: Tag,
    m: &'static str,
    f: &'static str,
) -> Result<Vec<u8>, DecodeError> {
    expect(tag, WireType::Len, m, f)?;
    Ok(r.len_delimited()?.1.to_vec())
}

fn read_string(
    r: &mut Reader<'_>,
    tag: Tag,
    m: &'static str,
    f: &'static str,
) -> Result<String, DecodeError> {
    expect(tag, WireType::Len, m, f)?;
    let (start, bytes) = r.len_delimited()?;
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s.to_owned()),
        Err(e) => Err(DecodeError::InvalidUtf8 {
            offset: start + e.valid_up_to(),
            message: m,
            field: f,
        }),
    }
}

fn read_message<'a>(
    r: &mut Reader<'a>,
    tag: Tag,
    m: &'static str,
    f: &'static str,
) -> Result<Reader<'a>, DecodeError> {
    expect(tag, WireType::Len, m, f)?;
    r.sub()
}

// ---------------------------------------------------------------------------------------------
// Message decoders. The schema's nesting is fixed (at most XSpace > XPlane > XLine > XEvent > XStat),
// so none of these recurse on input-controlled depth.

fn decode_space(r: &mut Reader<'_>) -> Result<XSpace, DecodeError> {
    const M: &str = "XSpace";
    let mut s = XSpace::default();
    while let Some(t) = r.tag()? {
        match t.field {
            1 => s
                .planes
                .push(decode_plane(&mut read_message(r, t, M, "planes")?)?),
            2 => s.errors.push(read_string(r, t, M, "errors")?),
            3 => s.warnings.push(read_string(r, t, M, "warnings")?),
            4 => s.hostnames.push(read_string(r, t, M, "hostnames")?),
            _ => r.skip(t)?,
        }
    }
    Ok(s)
}

fn decode_plane(r: &mut Reader<'_>) -> Result<XPlane, DecodeError> {
    const M: &str = "XPlane";
    let mut p = XPlane::default();
    while let Some(t) = r.tag()? {
        match t.field {
            1 => p.id = read_i64(r, t, M, "id")?,
            2 => p.name = read_string(r, t, M, "name")?,
            3 => p
                .lines
                .push(decode_line(&mut read_message(r, t, M, "lines")?)?),
            4 => {
                let mut entry = read_message(r, t, M, "event_metadata")?;
                let (key, value) = decode_map_entry(
                    &mut entry,
                    "XPlane.EventMetadataEntry",
                    decode_event_metadata,
                )?;
                p.event_metadata.insert(key, value);
            }
            5 => {
                let mut entry = read_message(r, t, M, "stat_metadata")?;
                let (key, value) =
                    decode_map_entry(&mut entry, "XPlane.StatMetadataEntry", decode_stat_metadata)?;
                p.stat_metadata.insert(key, value);
            }
            6 => p
                .stats
                .push(decode_stat(&mut read_message(r, t, M, "stats")?)?),
            _ => r.skip(t)?,
        }
    }
    Ok(p)
}

/// A `map<int64, V>` entry: key = field 1 (varint), value = field 2 (message). Missing parts default.
fn decode_map_entry<V: Default>(
    r: &mut Reader<'_>,
    m: &'static str,
    decode_value: fn(&mut Reader<'_>) -> Result<V, DecodeError>,
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

fn decode_line(r: &mut Reader<'_>) -> Result<XLine, DecodeError> {
    const M: &str = "XLine";
    let mut l = XLine::default();
    while let Some(t) = r.tag()? {
        match t.field {
            1 => l.id = read_i64(r, t, M, "id")?,
            2 => l.name = read_string(r, t, M, "name")?,
            3 => l.timestamp_ns = read_i64(r, t, M, "timestamp_ns")?,
            4 => l
                .events
                .push(decode_event(&mut read_message(r, t, M, "events")?)?),
            9 => l.duration_ps = read_i64(r, t, M, "duration_ps")?,
            10 => l.display_id = read_i64(r, t, M, "display_id")?,
            11 => l.display_name = read_string(r, t, M, "display_name")?,
            _ => r.skip(t)?,
        }
    }
    Ok(l)
}

fn decode_event(r: &mut Reader<'_>) -> Result<XEvent, DecodeError> {
    const M: &str = "XEvent";
    let mut e = XEvent::default();
    while let Some(t) = r.tag()? {
        match t.field {
            1 => e.metadata_id = read_i64(r, t, M, "metadata_id")?,
            2 => {
                e.offset_ps = read_i64(r, t, M, "offset_ps")?;
                e.num_occurrences = 0;
            }
            3 => e.duration_ps = read_i64(r, t, M, "duration_ps")?,
            4 => e
                .stats
                .push(decode_stat(&mut read_message(r, t, M, "stats")?)?),
            5 => {
                e.num_occurrences = read_i64(r, t, M, "num_occurrences")?;
                e.offset_ps = 0;
            }
            _ => r.skip(t)?,
        }
    }
    Ok(e)
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

fn decode_event_metadata(r: &mut Reader<'_>) -> Result<XEventMetadata, DecodeError> {
    const M: &str = "XEventMetadata";
    let mut m = XEventMetadata::default();
    while let Some(t) = r.tag()? {
        match t.field {
            1 => m.id = read_i64(r, t, M, "id")?,
            2 => m.name = read_string(r, t, M, "name")?,
            3 => m.metadata = read_bytes(r, t, M, "metadata")?,
            4 => m.display_name = read_string(r, t, M, "display_name")?,
            5 => m
                .stats
                .push(decode_stat(&mut read_message(r, t, M, "stats")?)?),
            6 => match t.wire {
                // Packed: a run of varints.
                WireType::Len => {
                    let mut packed = r.sub()?;
                    while !packed.is_empty() {
                        m.child_id.push(packed.varint()? as i64);
                    }
                }
                _ => m.child_id.push(read_i64(r, t, M, "child_id")?),
            },
            _ => r.skip(t)?,
        }
    }
    Ok(m)
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

#[cfg(test)]
mod tests;
