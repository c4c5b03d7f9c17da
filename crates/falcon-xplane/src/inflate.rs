//! `XStat.compressed_str_value` (field 8): a string stored compressed.
//!
//! The XSpace schema documents it as gzip-compressed; the inflater also accepts a zlib stream
//! (both are recognised by their headers), and refuses anything else.

use std::io::Read;

use crate::{StatValue, XPlane, XStat};

/// The largest string [`StatValue::decompressed_str`] inflates (256 MiB): a bound on what a small
/// compressed input ("zip bomb") can make it allocate.
pub const MAX_INFLATED_LEN: usize = 256 << 20;

/// Why a `compressed_str_value` could not be inflated.
#[derive(Debug, thiserror::Error)]
pub enum InflateError {
    #[error("compressed string is neither gzip nor zlib (first bytes {head:02x?})")]
    UnknownFormat { head: Vec<u8> },
    #[error("corrupt compressed string: {0}")]
    Corrupt(std::io::Error),
    #[error("compressed string inflates to more than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("compressed string is not UTF-8 (at byte {valid_up_to} of the inflated text)")]
    InvalidUtf8 { valid_up_to: usize },
}

/// Inflates a gzip or zlib stream to a string of at most `limit` bytes.
pub fn inflate_str(compressed: &[u8], limit: usize) -> Result<String, InflateError> {
    let reader: Box<dyn Read + '_> = match compressed {
        [0x1f, 0x8b, ..] => Box::new(flate2::read::MultiGzDecoder::new(compressed)),
        // zlib: CM = 8 (deflate), CINFO <= 7, and the header checksum.
        [cmf, flg, ..] if cmf & 0x0f == 8 && cmf >> 4 <= 7 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0 => {
            Box::new(flate2::read::ZlibDecoder::new(compressed))
        }
        _ => return Err(InflateError::UnknownFormat { head: compressed.iter().take(4).copied().collect() }),
    };
    let mut out = Vec::new();
    reader.take(limit as u64 + 1).read_to_end(&mut out).map_err(InflateError::Corrupt)?;
    if out.len() > limit {
        return Err(InflateError::TooLarge { limit });
    }
    String::from_utf8(out).map_err(|e| InflateError::InvalidUtf8 { valid_up_to: e.utf8_error().valid_up_to() })
}

impl StatValue {
    /// The inflated string of a `CompressedStr` (at most [`MAX_INFLATED_LEN`] bytes); `None` for
    /// other variants.
    pub fn decompressed_str(&self) -> Option<Result<String, InflateError>> {
        match self {
            StatValue::CompressedStr(bytes) => Some(inflate_str(bytes, MAX_INFLATED_LEN)),
            _ => None,
        }
    }
}

impl XPlane {
    /// The string of a `Str`, `Ref` or `CompressedStr` stat: [`XPlane::stat_str`], plus inflated
    /// compressed strings (`None` when one does not inflate).
    pub fn stat_string<'s>(&'s self, stat: &'s XStat) -> Option<std::borrow::Cow<'s, str>> {
        match &stat.value {
            StatValue::CompressedStr(_) => stat.value.decompressed_str()?.ok().map(Into::into),
            _ => self.stat_str(stat).map(Into::into),
        }
    }
}
