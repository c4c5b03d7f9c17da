//! `falcon_xplane::decode` on arbitrary bytes: it must never panic, an error's offset must lie within
//! the input, decoding on several threads must give exactly what one thread gives (value or error),
//! and inflating any compressed string must not panic either.

#![no_main]

use falcon_xplane::{decode_with, inflate_str, DecodeOptions, StatValue, XSpace};
use libfuzzer_sys::fuzz_target;

fn inflate_all(space: &XSpace) {
    let stats = space.planes.iter().flat_map(|p| {
        p.stats
            .iter()
            .chain(p.lines.iter().flat_map(|l| l.events.iter().flat_map(|e| &e.stats)))
            .chain(p.event_metadata.values().flat_map(|m| &m.stats))
    });
    for stat in stats {
        if let StatValue::CompressedStr(bytes) = &stat.value {
            // A small limit keeps a compressed "bomb" in the input from slowing the fuzzer down.
            let _ = inflate_str(bytes, 1 << 16);
        }
    }
}

/// `a == b`, except that NaN stats compare equal (by their `Debug` text; maps entry by entry, as
/// their iteration order differs between two maps).
fn same(a: &XSpace, b: &XSpace) -> bool {
    let dbg = |v: &dyn std::fmt::Debug| format!("{v:?}");
    (&a.errors, &a.warnings, &a.hostnames) == (&b.errors, &b.warnings, &b.hostnames)
        && a.planes.len() == b.planes.len()
        && a.planes.iter().zip(&b.planes).all(|(p, q)| {
            (p.id, &p.name) == (q.id, &q.name)
                && dbg(&p.stats) == dbg(&q.stats)
                && dbg(&p.lines) == dbg(&q.lines)
                && p.event_metadata.len() == q.event_metadata.len()
                && p.event_metadata.iter().all(|(k, v)| q.event_metadata.get(k).is_some_and(|w| dbg(v) == dbg(w)))
                && p.stat_metadata == q.stat_metadata
        })
}

fuzz_target!(|data: &[u8]| {
    let one = decode_with(data, &DecodeOptions::default().threads(1));
    let many = decode_with(data, &DecodeOptions::default().threads(3).min_parallel_bytes(0));
    match (&one, &many) {
        (Ok(a), Ok(b)) => {
            assert!(same(a, b), "threads changed the decoded value");
            inflate_all(a);
        }
        (Err(a), Err(b)) => {
            let offset = a.offset().expect("decoding a buffer has no I/O error");
            assert!(offset <= data.len(), "offset {offset} past the end ({})", data.len());
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "threads changed the error");
        }
        _ => panic!("one thread: {:?}; three: {:?}", one.is_ok(), many.is_ok()),
    }
});
