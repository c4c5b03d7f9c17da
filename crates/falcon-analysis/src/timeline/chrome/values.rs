//! Lenient scalar seeds: a value read as whatever it is (number, string, bool) and handed to a closure, grid and
//! block dimensions, and microsecond timestamps split without losing picoseconds.

#[allow(unused_imports)]
use super::*;

/// A value as the closure of an [`AnySeed`] sees it; containers and other types are skipped.
pub(super) enum Val<'s> {
    Str(&'s str),
    I(i64),
    U(u64),
    F(f64),
    Other,
}

impl Val<'_> {
    pub(super) fn as_i64(&self) -> Option<i64> {
        match *self {
            Val::I(v) => Some(v),
            Val::U(v) => i64::try_from(v).ok(),
            Val::F(v) if v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e18 => Some(v as i64),
            Val::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
    pub(super) fn as_f64(&self) -> Option<f64> {
        match *self {
            Val::I(v) => Some(v as f64),
            Val::U(v) => Some(v as f64),
            Val::F(v) => Some(v),
            Val::Str(s) => s.trim().parse().ok().filter(|v: &f64| v.is_finite()),
            Val::Other => None,
        }
    }
}

/// The visitor methods of a value that is `None` unless it is the one shape a visitor reads: a map, a number, a
/// bool or null is skipped as `None` (a string too, unless the visitor reads strings itself: `no_str` leaves it out).
macro_rules! none_unless_read {
    () => {
        none_unless_read!(no_str);
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok(None)
        }
    };
    (no_str) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    };
}

/// `[x, y, z]` of non-negative integers (a kernel's `grid` or `block`); anything else is skipped as `None`.
pub(super) struct Dim3Seed;

impl<'de> DeserializeSeed<'de> for Dim3Seed {
    type Value = Option<[u32; 3]>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(Dim3Visitor)
    }
}

pub(super) struct Dim3Visitor;

impl<'de> Visitor<'de> for Dim3Visitor {
    type Value = Option<[u32; 3]>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of three integers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = [1u32; 3];
        let mut ok = true;
        let mut i = 0;
        while let Some(v) =
            seq.next_element_seed(AnySeed(|v: Val<'_>| v.as_i64().and_then(|n| u32::try_from(n).ok())))?
        {
            match (out.get_mut(i), v) {
                (Some(slot), Some(n)) => *slot = n,
                _ => ok = false,
            }
            i += 1;
        }
        Ok((ok && i > 0).then_some(out))
    }
    none_unless_read!();
}

/// `Input Dims` (`[[d0, d1, …], [], …]`, one list per input): the elements of all its tensors, `None` when it is
/// not that shape or has no tensor.
pub(super) struct ElemsSeed;

impl<'de> DeserializeSeed<'de> for ElemsSeed {
    type Value = Option<u64>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(AnyVisitorSeq(|seq: &mut dyn FnMut() -> Option<Option<u64>>| {
            let mut total: Option<u64> = None;
            while let Some(t) = seq() {
                if let Some(n) = t {
                    total = Some(total.unwrap_or(0).saturating_add(n));
                }
            }
            total
        }))
    }
}

/// One tensor's dims: their product (`None` for an empty list or anything that is not a list of integers).
struct DimsSeed;

impl<'de> DeserializeSeed<'de> for DimsSeed {
    type Value = Option<u64>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Option<u64>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of dimensions")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let (mut product, mut any, mut ok) = (1u64, false, true);
                while let Some(d) = seq.next_element_seed(AnySeed(|v: Val<'_>| v.as_i64()))? {
                    match d.and_then(|n| u64::try_from(n).ok()) {
                        Some(n) => product = product.saturating_mul(n),
                        None => ok = false,
                    }
                    any = true;
                }
                Ok((any && ok).then_some(product))
            }
            none_unless_read!();
        }
        d.deserialize_any(V)
    }
}

/// A list whose elements are each read with [`DimsSeed`], handed to a closure as an iterator; anything else gives
/// `None`.
struct AnyVisitorSeq<F>(F);

impl<'de, F: FnOnce(&mut dyn FnMut() -> Option<Option<u64>>) -> Option<u64>> Visitor<'de> for AnyVisitorSeq<F> {
    type Value = Option<u64>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of tensor dimensions")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut err = None;
        let out = (self.0)(&mut || match seq.next_element_seed(DimsSeed) {
            Ok(v) => v,
            Err(e) => {
                err = Some(e);
                None
            }
        });
        match err {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }
    none_unless_read!();
}

/// `Input type` (`["float", "", …]`): the element size of its first named type.
pub(super) struct FirstTypeSeed;

impl<'de> DeserializeSeed<'de> for FirstTypeSeed {
    type Value = Option<u8>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Option<u8>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of type names")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = None;
                while let Some(b) = seq.next_element_seed(AnySeed(|v: Val<'_>| match v {
                    Val::Str(s) => crate::timeline::dtype_bytes(s),
                    _ => None,
                }))? {
                    out = out.or(b);
                }
                Ok(out)
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(crate::timeline::dtype_bytes(s))
            }
            none_unless_read!(no_str);
        }
        d.deserialize_any(V)
    }
}

pub(super) struct AnySeed<F>(pub(super) F);

impl<'de, R, F: FnOnce(Val<'_>) -> R> DeserializeSeed<'de> for AnySeed<F> {
    type Value = R;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<R, D::Error> {
        d.deserialize_any(AnyVisitor(self.0))
    }
}

pub(super) struct AnyVisitor<F>(pub(super) F);

impl<'de, R, F: FnOnce(Val<'_>) -> R> Visitor<'de> for AnyVisitor<F> {
    type Value = R;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E>(self, v: &str) -> Result<R, E> {
        Ok((self.0)(Val::Str(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<R, E> {
        Ok((self.0)(Val::I(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<R, E> {
        Ok((self.0)(Val::U(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<R, E> {
        Ok((self.0)(Val::F(v)))
    }
    fn visit_bool<E>(self, _: bool) -> Result<R, E> {
        Ok((self.0)(Val::Other))
    }
    fn visit_unit<E>(self) -> Result<R, E> {
        Ok((self.0)(Val::Other))
    }
    fn visit_none<E>(self) -> Result<R, E> {
        Ok((self.0)(Val::Other))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<R, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok((self.0)(Val::Other))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<R, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok((self.0)(Val::Other))
    }
}

/// Splits a µs value into whole µs and the fraction in ps, rounded to the finest power of ten of
/// picoseconds that the `f64` resolves at that magnitude (1 ps for XLA's relative timestamps, 1 ns for
/// Kineto's `ts` of ~5e12 µs, whose 3 decimals are nanoseconds), so that parse error does not show
/// up as spurious sub-nanosecond digits.
pub(super) fn split_us(x: f64) -> Option<(i64, i64)> {
    if !x.is_finite() || x.abs() >= 9.0e15 {
        return None;
    }
    let whole = x.floor();
    let frac_ps = (x - whole) * 1e6;
    let exp = if x == 0.0 { -1074 } else { x.abs().log2().floor() as i32 };
    let ulp_ps = 2f64.powi(exp - 52) * 1e6;
    let grain = if ulp_ps <= 1.0 { 1.0 } else { 10f64.powi(ulp_ps.log10().ceil() as i32) };
    let frac_ps = ((frac_ps / grain).round() * grain) as i64;
    Some((whole as i64, frac_ps))
}
