//! The small protobuf and stat readers the op-metrics builders share: varints and fields of the serialized
//! messages XProf keeps in stats (`MemoryAccessBreakdown`, `core_details`), stat values as numbers or text, and the
//! stat ids of a plane by name.

use std::collections::HashMap;

use falcon_xplane::{StatValue, XEvent, XPlane, XStat};

use super::MemoryAccessed;

// ---------------------------------------------------------------------------------------------
// Small protobuf helpers.

pub(super) fn read_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    let mut shift = 0u32;
    loop {
        let byte = *buf.get(*pos)?;
        *pos += 1;
        if shift < 64 {
            value |= u64::from(byte & 0x7f) << shift;
        }
        if byte & 0x80 == 0 {
            return Some(value);
        }
        shift += 7;
        if shift > 70 {
            return None;
        }
    }
}

/// The fields of one protobuf message: (field number, varint value or embedded bytes).
pub(super) enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

pub(super) fn proto_fields(buf: &[u8]) -> Vec<(u64, Field<'_>)> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < buf.len() {
        let Some(key) = read_varint(buf, &mut pos) else {
            break;
        };
        let (field, wire) = (key >> 3, key & 7);
        match wire {
            0 => match read_varint(buf, &mut pos) {
                Some(v) => out.push((field, Field::Varint(v))),
                None => break,
            },
            1 => pos += 8,
            5 => pos += 4,
            2 => {
                let Some(len) = read_varint(buf, &mut pos) else {
                    break;
                };
                let Ok(len) = usize::try_from(len) else { break };
                let Some(end) = pos.checked_add(len).filter(|e| *e <= buf.len()) else {
                    break;
                };
                out.push((field, Field::Bytes(&buf[pos..end])));
                pos = end;
            }
            _ => break,
        }
    }
    out
}

/// Decodes a serialized `MemoryAccessBreakdown` (per occurrence).
pub fn decode_memory_access_breakdown(bytes: &[u8]) -> Vec<MemoryAccessed> {
    proto_fields(bytes)
        .into_iter()
        .filter_map(|(field, value)| match (field, value) {
            (1, Field::Bytes(msg)) => {
                let mut m = MemoryAccessed::default();
                for (f, v) in proto_fields(msg) {
                    if let Field::Varint(v) = v {
                        match f {
                            1 => m.operation_type = v,
                            2 => m.memory_space = v,
                            3 => m.bytes_accessed = v,
                            _ => {}
                        }
                    }
                }
                m.is_read = m.operation_type == 1;
                Some(m)
            }
            _ => None,
        })
        .collect()
}

/// `local_chip_id` (field 4) of a serialized `CoreDetails`, when present.
pub(super) fn core_details_chip_id(bytes: &[u8]) -> Option<u64> {
    proto_fields(bytes).into_iter().find_map(|(f, v)| match (f, v) {
        (4, Field::Varint(v)) => Some(v),
        _ => None,
    })
}

// ---------------------------------------------------------------------------------------------
// Stat helpers.

pub(super) fn stat_u64(value: &StatValue) -> Option<u64> {
    match *value {
        StatValue::Uint64(v) => Some(v),
        StatValue::Int64(v) => Some(v as u64),
        _ => None,
    }
}

pub(super) fn stat_text(plane: &XPlane, stat: &XStat) -> String {
    match &stat.value {
        StatValue::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        // Inflated within falcon-xplane's cap (`MAX_INFLATED_LEN`); one that does not inflate reads as "".
        StatValue::CompressedStr(_) => stat.value.decompressed_str().and_then(|r| r.ok()).unwrap_or_default(),
        _ => plane.stat_str(stat).map(str::to_string).unwrap_or_default(),
    }
}

/// Stat ids of the names this module reads, resolved once per plane.
pub(super) struct StatIds {
    ids: HashMap<&'static str, i64>,
}

pub(super) const STAT_NAMES: [&str; 22] = [
    "program_id",
    "symbol_id",
    "hlo_category",
    "tf_op",
    "flops",
    "model_flops",
    "bytes_accessed",
    "memory_access_breakdown",
    "deduplicated_name",
    "source",
    "source_stack",
    "min_duration_ps",
    "self_duration_ps",
    "dma_stall_duration_ps",
    "Time Scale Multiplier",
    "device_offset_ps",
    "device_duration_ps",
    "hlo_op",
    "group_id",
    "shape",
    "hlo_module",
    "core_details",
];

impl StatIds {
    pub(super) fn new(plane: &XPlane) -> StatIds {
        let mut ids = HashMap::new();
        for m in plane.stat_metadata.values() {
            if let Some(name) = STAT_NAMES.iter().find(|n| **n == m.name) {
                ids.insert(*name, m.id);
            }
        }
        StatIds { ids }
    }

    pub(super) fn find<'s>(&self, stats: &'s [XStat], name: &str) -> Option<&'s XStat> {
        let id = *self.ids.get(name)?;
        stats.iter().find(|s| s.metadata_id == id)
    }

    /// Event stat first, then its metadata's.
    pub(super) fn event<'s>(&self, plane: &'s XPlane, event: &'s XEvent, name: &str) -> Option<&'s XStat> {
        self.find(&event.stats, name).or_else(|| self.find(&plane.event_metadata_of(event)?.stats, name))
    }
}
