//! Element types of tensor dumps: their names, sizes, decoding to `f64`, torch's default tolerances and the
//! sign-magnitude view behind ULP distances.

use half::{bf16, f16};

/// The element type of a stored tensor (without byte order: see [`Stored`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    Bool,
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::U16 | DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::U64 | DType::I64 | DType::F64 => 8,
        }
    }

    /// The short name used in reports (`f32`, `bf16`, `i64`, `bool`).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// `torch.testing.assert_close`'s default `(rtol, atol)` for this dtype (`_DTYPE_PRECISIONS`; integers and
    /// booleans compare exactly).
    pub fn torch_tolerance(self) -> (f64, f64) {
        match self {
            DType::F16 => (1e-3, 1e-5),
            DType::BF16 => (1.6e-2, 1e-5),
            DType::F32 => (1.3e-6, 1e-5),
            DType::F64 => (1e-7, 1e-7),
            _ => (0.0, 0.0),
        }
    }

    /// Float precision rank (coarser = lower), for picking the dtype a mixed pair's ULPs are counted in.
    fn precision_rank(self) -> u8 {
        match self {
            DType::BF16 => 0,
            DType::F16 => 1,
            DType::F32 => 2,
            DType::F64 => 3,
            _ => 4,
        }
    }
}

/// The default tolerances of a pair: the larger of each side's, as torch does for mixed dtypes.
pub fn pair_tolerance(a: DType, b: DType) -> (f64, f64) {
    let (ra, aa) = a.torch_tolerance();
    let (rb, ab) = b.torch_tolerance();
    (ra.max(rb), aa.max(ab))
}

/// The float type ULP distances of a pair are counted in (the coarser of two floats); `None` when either side
/// is not a float.
pub fn ulp_dtype(a: DType, b: DType) -> Option<DType> {
    if !(a.is_float() && b.is_float()) {
        return None;
    }
    Some(if a.precision_rank() <= b.precision_rank() { a } else { b })
}

/// A dtype with its byte order as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stored {
    pub dtype: DType,
    pub big_endian: bool,
}

/// Decodes `bytes` (whole elements of `s`) into `out` (cleared first).
pub fn decode(s: Stored, bytes: &[u8], out: &mut Vec<f64>) {
    out.clear();
    macro_rules! each {
        ($n:literal, $conv:expr) => {{
            let conv = $conv;
            if s.big_endian {
                out.extend(bytes.chunks_exact($n).map(|c| {
                    let mut w = [0u8; $n];
                    w.copy_from_slice(c);
                    conv(w, true)
                }));
            } else {
                out.extend(bytes.chunks_exact($n).map(|c| {
                    let mut w = [0u8; $n];
                    w.copy_from_slice(c);
                    conv(w, false)
                }));
            }
        }};
    }
    match s.dtype {
        DType::Bool => out.extend(bytes.iter().map(|&b| if b != 0 { 1.0 } else { 0.0 })),
        DType::U8 => out.extend(bytes.iter().map(|&b| f64::from(b))),
        DType::I8 => out.extend(bytes.iter().map(|&b| f64::from(b as i8))),
        DType::U16 => each!(2, |w, be| f64::from(if be { u16::from_be_bytes(w) } else { u16::from_le_bytes(w) })),
        DType::I16 => each!(2, |w, be| f64::from(if be { i16::from_be_bytes(w) } else { i16::from_le_bytes(w) })),
        DType::U32 => each!(4, |w, be| f64::from(if be { u32::from_be_bytes(w) } else { u32::from_le_bytes(w) })),
        DType::I32 => each!(4, |w, be| f64::from(if be { i32::from_be_bytes(w) } else { i32::from_le_bytes(w) })),
        DType::U64 => each!(8, |w, be| (if be { u64::from_be_bytes(w) } else { u64::from_le_bytes(w) }) as f64),
        DType::I64 => each!(8, |w, be| (if be { i64::from_be_bytes(w) } else { i64::from_le_bytes(w) }) as f64),
        DType::F16 => {
            each!(2, |w, be| f16::from_bits(if be { u16::from_be_bytes(w) } else { u16::from_le_bytes(w) }).to_f64())
        }
        DType::BF16 => {
            each!(2, |w, be| bf16::from_bits(if be { u16::from_be_bytes(w) } else { u16::from_le_bytes(w) }).to_f64())
        }
        DType::F32 => each!(4, |w, be| f64::from(if be { f32::from_be_bytes(w) } else { f32::from_le_bytes(w) })),
        DType::F64 => each!(8, |w, be| if be { f64::from_be_bytes(w) } else { f64::from_le_bytes(w) }),
    }
}

/// ULP distances in one float dtype: a (non-NaN) value, rounded to the dtype, maps onto a line where adjacent
/// representable values are adjacent integers (±0 both map to 0); the distance of two values is the
/// difference of their images. Integers and booleans ([`OrdNone`]) have none.
pub trait Ordered {
    /// The image of `x` rounded to the dtype.
    fn ordered(x: f64) -> i64;

    /// The ULP distance of `x` and `y` (`i64::abs_diff` cannot overflow: images are within ±(2^63 − 1)).
    #[inline]
    fn distance(x: f64, y: f64) -> u64 {
        Self::ordered(x).abs_diff(Self::ordered(y))
    }
}

/// Sign-magnitude bits to a two's-complement line (branch-free: signs of real data are random).
#[inline]
fn sign_magnitude(bits: u64, sign: u64) -> i64 {
    let magnitude = (bits & !sign) as i64;
    let negative = -i64::from(bits & sign != 0);
    (magnitude ^ negative) - negative
}

pub struct OrdF16;
pub struct OrdBF16;
pub struct OrdF32;
pub struct OrdF64;
/// Integers and booleans: no ULPs.
pub struct OrdNone;

impl Ordered for OrdF16 {
    #[inline]
    fn ordered(x: f64) -> i64 {
        sign_magnitude(u64::from(f16::from_f64(x).to_bits()), 0x8000)
    }
}
impl Ordered for OrdBF16 {
    #[inline]
    fn ordered(x: f64) -> i64 {
        sign_magnitude(u64::from(bf16::from_f64(x).to_bits()), 0x8000)
    }
}
impl Ordered for OrdF32 {
    #[inline]
    fn ordered(x: f64) -> i64 {
        sign_magnitude(u64::from((x as f32).to_bits()), 0x8000_0000)
    }
}
impl Ordered for OrdF64 {
    #[inline]
    fn ordered(x: f64) -> i64 {
        sign_magnitude(x.to_bits(), 1 << 63)
    }
}
impl Ordered for OrdNone {
    #[inline]
    fn ordered(_: f64) -> i64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulp<O: Ordered>(a: f64, b: f64) -> u64 {
        O::distance(a, b)
    }

    #[test]
    fn ulp_distances_count_representable_steps() {
        assert_eq!(ulp::<OrdF32>(1.0, f64::from(f32::from_bits(1.0f32.to_bits() + 3))), 3);
        assert_eq!(ulp::<OrdF32>(0.0, -0.0), 0);
        // Across zero: the smallest subnormals on each side are two steps apart.
        assert_eq!(ulp::<OrdF32>(f64::from(f32::from_bits(1)), -f64::from(f32::from_bits(1))), 2);
        assert_eq!(ulp::<OrdF16>(1.0, 1.0 + 2f64.powi(-10)), 1);
        assert_eq!(ulp::<OrdBF16>(1.0, 1.0 + 2f64.powi(-7)), 1);
        assert_eq!(ulp::<OrdF64>(1.0, 1.0 + f64::EPSILON), 1);
        assert_eq!(ulp::<OrdF64>(f64::MAX, -f64::MAX), 2 * f64::MAX.to_bits());
    }

    #[test]
    fn decoding_handles_both_byte_orders() {
        let mut out = Vec::new();
        decode(Stored { dtype: DType::F32, big_endian: true }, &1.5f32.to_be_bytes(), &mut out);
        assert_eq!(out, [1.5]);
        decode(Stored { dtype: DType::I16, big_endian: false }, &(-7i16).to_le_bytes(), &mut out);
        assert_eq!(out, [-7.0]);
        decode(Stored { dtype: DType::BF16, big_endian: false }, &[0x80, 0x3f], &mut out);
        assert_eq!(out, [1.0]);
        decode(Stored { dtype: DType::Bool, big_endian: false }, &[0, 1, 2], &mut out);
        assert_eq!(out, [0.0, 1.0, 1.0]);
    }

    #[test]
    fn mixed_pairs_take_the_looser_tolerance_and_the_coarser_ulp() {
        assert_eq!(pair_tolerance(DType::F32, DType::BF16), (1.6e-2, 1e-5));
        assert_eq!(ulp_dtype(DType::F32, DType::BF16), Some(DType::BF16));
        assert_eq!(ulp_dtype(DType::F16, DType::F64), Some(DType::F16));
        assert_eq!(ulp_dtype(DType::F32, DType::I32), None);
    }
}
