//! Low-level protobuf wire-format reading: varints, fixed-width values, length-delimited slices,
//! tags and skipping of unknown fields.
//!
//! Every read checks the remaining input before touching it and reports the absolute byte offset
//! (from the start of the whole buffer) on failure. Nothing here allocates except the bounded
//! group stack used to skip (deprecated) unknown groups.

use crate::DecodeError;

/// Deepest nesting of unknown protobuf groups we are willing to skip.
pub(crate) const MAX_GROUP_DEPTH: usize = 64;

/// The six wire types of the protobuf encoding that exist (6 and 7 are invalid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireType {
    Varint,
    Fixed64,
    Len,
    StartGroup,
    EndGroup,
    Fixed32,
}

impl WireType {
    pub(crate) fn name(self) -> &'static str {
        match self {
            WireType::Varint => "varint (0)",
            WireType::Fixed64 => "fixed64 (1)",
            WireType::Len => "length-delimited (2)",
            WireType::StartGroup => "start-group (3)",
            WireType::EndGroup => "end-group (4)",
            WireType::Fixed32 => "fixed32 (5)",
        }
    }
}

/// A decoded field key.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tag {
    pub(crate) field: u32,
    pub(crate) wire: WireType,
    /// Absolute offset of the first byte of the key.
    pub(crate) offset: usize,
}

/// A cursor over one message's bytes. `base` is the absolute offset of `buf[0]`.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0, base: 0 }
    }

    /// Absolute offset of the next unread byte.
    pub(crate) fn offset(&self) -> usize {
        self.base + self.pos
    }

    /// Bytes left to read.
    pub(crate) fn len(&self) -> usize {
        self.remaining()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Number of bytes left without the continuation bit: the number of varints in a packed run
    /// (a capacity hint; a truncated last varint is then reported by [`Reader::varint`]).
    pub(crate) fn varint_count(&self) -> usize {
        self.buf.get(self.pos..).map_or(0, |rest| rest.iter().filter(|&&b| b < 0x80).count())
    }

    fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    pub(crate) fn varint(&mut self) -> Result<u64, DecodeError> {
        let start = self.offset();
        // Fast path: one-byte varint.
        if let Some(&b) = self.buf.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                return Ok(u64::from(b));
            }
        }
        let mut value: u64 = 0;
        for i in 0..10u32 {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(DecodeError::TruncatedVarint { offset: start });
            };
            self.pos += 1;
            if i == 9 && b > 1 {
                // The tenth byte may only contribute the top bit of a u64.
                return Err(DecodeError::VarintOverflow { offset: start });
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(value);
            }
        }
        Err(DecodeError::VarintOverflow { offset: start })
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let start = self.offset();
        let remaining = self.remaining();
        match self.buf.get(self.pos..self.pos + N) {
            Some(s) => {
                self.pos += N;
                let mut out = [0u8; N];
                out.copy_from_slice(s);
                Ok(out)
            }
            None => Err(DecodeError::TruncatedFixed { offset: start, width: N, remaining }),
        }
    }

    pub(crate) fn fixed64(&mut self) -> Result<u64, DecodeError> {
        self.fixed::<8>().map(u64::from_le_bytes)
    }

    pub(crate) fn fixed32(&mut self) -> Result<u32, DecodeError> {
        self.fixed::<4>().map(u32::from_le_bytes)
    }

    /// Reads a length prefix and returns the payload with its absolute start offset.
    pub(crate) fn len_delimited(&mut self) -> Result<(usize, &'a [u8]), DecodeError> {
        let len_offset = self.offset();
        let len = self.varint()?;
        let remaining = self.remaining();
        if len > remaining as u64 {
            return Err(DecodeError::LengthExceedsInput { offset: len_offset, len, remaining });
        }
        // `len <= remaining`, so it fits in usize.
        let len = len as usize;
        let start = self.pos;
        self.pos += len;
        Ok((self.base + start, &self.buf[start..start + len]))
    }

    /// Reads a length-delimited payload as a nested reader.
    pub(crate) fn sub(&mut self) -> Result<Reader<'a>, DecodeError> {
        let (base, buf) = self.len_delimited()?;
        Ok(Reader { buf, pos: 0, base })
    }

    /// Reads the next field key, or `None` at the end of the message.
    pub(crate) fn tag(&mut self) -> Result<Option<Tag>, DecodeError> {
        if self.is_empty() {
            return Ok(None);
        }
        let offset = self.offset();
        let key = self.varint()?;
        let wire = match key & 7 {
            0 => WireType::Varint,
            1 => WireType::Fixed64,
            2 => WireType::Len,
            3 => WireType::StartGroup,
            4 => WireType::EndGroup,
            5 => WireType::Fixed32,
            w => return Err(DecodeError::InvalidWireType { offset, wire_type: w as u8 }),
        };
        let field = key >> 3;
        if field == 0 || field > 0x1FFF_FFFF {
            return Err(DecodeError::InvalidFieldNumber { offset, field });
        }
        Ok(Some(Tag { field: field as u32, wire, offset }))
    }

    /// How many times each of `fields` occurs in the rest of this message, without moving `self`.
    ///
    /// A capacity hint for the decoder: it counts fields that are really present (so a capacity
    /// taken from it is never larger than what decoding them would allocate anyway) and stops
    /// quietly at the first malformed field, which the decoder then reports with its offset.
    pub(crate) fn count_fields<const N: usize>(&self, fields: [u32; N]) -> [usize; N] {
        let mut r = self.clone();
        let mut counts = [0usize; N];
        while let Ok(Some(t)) = r.tag() {
            if let Some(i) = fields.iter().position(|&f| f == t.field) {
                counts[i] += 1;
            }
            if r.skip(t).is_err() {
                break;
            }
        }
        counts
    }

    /// Skips the value of an unknown field whose key was just read.
    pub(crate) fn skip(&mut self, tag: Tag) -> Result<(), DecodeError> {
        match tag.wire {
            WireType::Varint => self.varint().map(drop),
            WireType::Fixed64 => self.fixed64().map(drop),
            WireType::Fixed32 => self.fixed32().map(drop),
            WireType::Len => self.len_delimited().map(drop),
            WireType::StartGroup => self.skip_group(tag),
            WireType::EndGroup => Err(DecodeError::UnexpectedEndGroup { offset: tag.offset, field: tag.field }),
        }
    }

    /// Skips a group iteratively (no recursion), up to [`MAX_GROUP_DEPTH`] levels deep.
    fn skip_group(&mut self, open: Tag) -> Result<(), DecodeError> {
        let mut stack: Vec<u32> = Vec::with_capacity(4);
        stack.push(open.field);
        while let Some(&innermost) = stack.last() {
            let Some(tag) = self.tag()? else {
                return Err(DecodeError::UnterminatedGroup { offset: open.offset, field: open.field });
            };
            match tag.wire {
                WireType::StartGroup => {
                    if stack.len() >= MAX_GROUP_DEPTH {
                        return Err(DecodeError::NestingTooDeep { offset: tag.offset, max_depth: MAX_GROUP_DEPTH });
                    }
                    stack.push(tag.field);
                }
                WireType::EndGroup => {
                    if tag.field != innermost {
                        return Err(DecodeError::UnexpectedEndGroup { offset: tag.offset, field: tag.field });
                    }
                    stack.pop();
                }
                _ => self.skip(tag)?,
            }
        }
        Ok(())
    }
}
