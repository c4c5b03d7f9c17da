//! What an XLA collective's instruction text says of its message: an XSpace names a TPU/GPU op event by the HLO
//! instruction itself (`%all-reduce = f32[5,1024]{1,0} all-reduce(f32[5,1024]{1,0} %x), replica_groups=[4,2]<=[8],
//! …`), so its bytes and its group come from the text: bytes = the larger of the result's and the operands' shapes
//! (NCCL-tests' size: the full gathered size for all-gather, the full input for reduce-scatter), the group the size
//! of a replica group (`{{0,1},{2,3}}`, or the iota form `[G,S]<=[…]`: G groups of S). Lenient: what does not parse
//! is `None`; never a panic, bounded by the text's length.

/// Bytes of one element of an XLA primitive type (`f32`, `bf16`, `s8`, `pred`, `f8e4m3fn`, …); sub-byte types
/// count a byte (what the collective moves is rounded to bytes anyway).
fn element_bytes(ty: &str) -> Option<u64> {
    Some(match ty {
        "pred" | "s8" | "u8" | "s4" | "u4" | "s2" | "u2" => 1,
        "s16" | "u16" | "f16" | "bf16" => 2,
        "s32" | "u32" | "f32" => 4,
        "s64" | "u64" | "f64" | "c64" => 8,
        "c128" => 16,
        _ if ty.starts_with("f8") || ty.starts_with("f4") || ty.starts_with("f6") => 1,
        _ => return None,
    })
}

/// Σ bytes of the array shapes in `text` (`f32[5,1024]{1,0}`, tuples, layouts skipped); `None` when it holds none.
fn shapes_bytes(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    let (mut i, mut total, mut any) = (0usize, 0u64, false);
    while i < b.len() {
        // A type name: letters and digits right before a `[`.
        if b[i] == b'[' {
            let mut s = i;
            while s > 0 && b[s - 1].is_ascii_alphanumeric() {
                s -= 1;
            }
            let close = text[i..].find(']').map(|c| i + c);
            if let (Some(elem), Some(close)) = (element_bytes(&text[s..i]), close) {
                let dims = &text[i + 1..close];
                let mut n: u64 = 1;
                for d in dims.split(',').map(str::trim).filter(|d| !d.is_empty()) {
                    // `<=1024` (a bounded dynamic dimension) counts its bound.
                    n = n.saturating_mul(d.trim_start_matches("<=").parse::<u64>().ok()?);
                }
                total = total.saturating_add(n.saturating_mul(elem));
                any = true;
                i = close;
            }
        }
        i += 1;
    }
    any.then_some(total)
}

/// The message bytes and replica-group size of a collective's instruction text; each `None` when the text does not
/// say.
pub fn collective_size(text: &str) -> (Option<u64>, Option<u32>) {
    let Some((_, rhs)) = text.split_once(" = ") else { return (None, None) };
    // The opcode: the first `name(` at bracket depth 0 after the result's shape.
    let b = rhs.as_bytes();
    let (mut depth, mut open) = (0i32, None);
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth -= 1,
            b'(' if depth == 0 && i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'-') => {
                open = Some(i);
                break;
            }
            b'(' => depth += 1,
            b')' => depth -= 1,
            _ => {}
        }
    }
    let Some(open) = open else { return (None, None) };
    let result = shapes_bytes(&rhs[..open]);
    let close = {
        let mut d = 0i32;
        rhs[open..].char_indices().find_map(|(k, c)| {
            match c {
                '(' => d += 1,
                ')' => d -= 1,
                _ => {}
            }
            (d == 0).then_some(open + k)
        })
    };
    let operands = close.and_then(|c| shapes_bytes(&rhs[open + 1..c]));
    let bytes = match (result, operands) {
        (Some(r), Some(o)) => Some(r.max(o)),
        (r, o) => r.or(o),
    };
    let group = rhs.split_once("replica_groups=").and_then(|(_, g)| group_size(g));
    (bytes, group)
}

/// The size of a replica group: `{{0,1},{2,3}}` → 2; the iota form `[4,2]<=[8]` → 2.
fn group_size(g: &str) -> Option<u32> {
    if let Some(rest) = g.strip_prefix("{{") {
        let first = &rest[..rest.find('}')?];
        let n = first.split(',').filter(|x| !x.trim().is_empty()).count();
        return u32::try_from(n).ok().filter(|&n| n > 0);
    }
    let dims = g.strip_prefix('[')?;
    let dims = &dims[..dims.find(']')?];
    dims.split(',').nth(1)?.trim().parse().ok().filter(|&n: &u32| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tpu_fixtures_all_reduce_moves_5_gib_in_groups_of_2() {
        let text = "%all-reduce = f32[5,1024,1024,256]{3,2,1,0:T(8,128)} all-reduce(f32[5,1024,1024,256]{3,2,1,0:T(8,\
                    128)} %bitcast), channel_id=1, replica_groups=[4,2]<=[2,4]T(1,0), use_global_device_ids=true, \
                    to_apply=%region_0.3.clone";
        assert_eq!(collective_size(text), (Some(5 * 1024 * 1024 * 256 * 4), Some(2)));
    }

    #[test]
    fn gathers_count_the_gathered_size_and_scatters_the_full_input() {
        let ag = "%all-gather.1 = bf16[8,128]{1,0} all-gather(bf16[1,128]{1,0} %p), dimensions={0}, \
                  replica_groups={{0,1,2,3,4,5,6,7}}";
        assert_eq!(collective_size(ag), (Some(8 * 128 * 2), Some(8)));
        let rs = "%reduce-scatter = f32[2,64]{1,0} reduce-scatter(f32[8,64]{1,0} %g), replica_groups={{0,1,2,3}}, \
                  dimensions={0}, to_apply=%add";
        assert_eq!(collective_size(rs), (Some(8 * 64 * 4), Some(4)));
        let tuple = "%all-reduce-start = (f32[4]{0}, bf16[2,2]{1,0}) all-reduce-start(f32[4]{0} %a, bf16[2,2]{1,0} \
                     %b), replica_groups={}";
        assert_eq!(collective_size(tuple), (Some(16 + 8), None));
    }

    #[test]
    fn what_does_not_parse_is_none() {
        for text in ["all-reduce.3", "", "%x = ", "%x = f32[ all-reduce(", "%x = zz[4] all-reduce(zz[4] %y)", "=(((["] {
            let (bytes, _) = collective_size(text);
            assert_eq!(bytes, None, "{text}");
        }
        assert_eq!(collective_size("%x = f32[99999999999,99999999999,99999999999] all-reduce(%y)").0, Some(u64::MAX));
    }
}
