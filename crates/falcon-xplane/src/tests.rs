//! Unit tests on hand-built wire encodings.

use super::*;

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn key(field: u32, wire: u8, out: &mut Vec<u8>) {
    varint(u64::from(field) << 3 | u64::from(wire), out);
}

fn vfield(field: u32, v: u64, out: &mut Vec<u8>) {
    key(field, 0, out);
    varint(v, out);
}

fn lfield(field: u32, payload: &[u8], out: &mut Vec<u8>) {
    key(field, 2, out);
    varint(payload.len() as u64, out);
    out.extend_from_slice(payload);
}

fn stat(id: u64, value_field: u32, value: &[u8], wire: u8) -> Vec<u8> {
    let mut s = Vec::new();
    vfield(1, id, &mut s);
    key(value_field, wire, &mut s);
    s.extend_from_slice(value);
    s
}

fn sample_space() -> Vec<u8> {
    // Stat metadata 7 = "flops", 8 = "kind".
    let mut smd7 = Vec::new();
    vfield(1, 7, &mut smd7);
    lfield(2, b"flops", &mut smd7);
    lfield(3, b"floating point ops", &mut smd7);
    let mut e7 = Vec::new();
    vfield(1, 7, &mut e7);
    lfield(2, &smd7, &mut e7);
    let mut smd8 = Vec::new();
    vfield(1, 8, &mut smd8);
    lfield(2, b"kind", &mut smd8);
    let mut e8 = Vec::new();
    vfield(1, 8, &mut e8);
    lfield(2, &smd8, &mut e8);

    // Event metadata 3 = "fusion.1" with a flops stat, children 4 and 5 packed, 6 unpacked.
    let mut emd = Vec::new();
    vfield(1, 3, &mut emd);
    lfield(2, b"%fusion.1 = f32[] fusion()", &mut emd);
    lfield(4, b"fusion.1", &mut emd);
    lfield(3, &[1, 2, 3], &mut emd);
    let mut flops = Vec::new();
    vfield(1, 7, &mut flops);
    vfield(3, 1000, &mut flops);
    lfield(5, &flops, &mut emd);
    lfield(6, &[4, 5], &mut emd);
    vfield(6, 6, &mut emd);
    let mut ee = Vec::new();
    vfield(1, 3, &mut ee);
    lfield(2, &emd, &mut ee);

    // Event with a double stat, a ref stat and an unknown fixed32 field.
    let mut ev = Vec::new();
    vfield(1, 3, &mut ev);
    vfield(2, 500, &mut ev);
    vfield(3, 250, &mut ev);
    lfield(4, &stat(8, 7, &[7], 0), &mut ev);
    lfield(4, &stat(9, 2, &2.5f64.to_le_bytes(), 1), &mut ev);
    key(99, 5, &mut ev);
    ev.extend_from_slice(&[0, 0, 0, 0]);
    let mut agg = Vec::new();
    vfield(1, 3, &mut agg);
    vfield(5, 12, &mut agg);
    vfield(104, 1, &mut agg); // unknown varint field

    let mut line = Vec::new();
    vfield(1, 42, &mut line);
    lfield(2, b"XLA Ops", &mut line);
    vfield(3, 1_000, &mut line);
    lfield(4, &ev, &mut line);
    lfield(4, &agg, &mut line);
    vfield(9, 9_999, &mut line);
    vfield(10, 43, &mut line);
    lfield(11, b"Ops", &mut line);

    let mut plane = Vec::new();
    vfield(1, 1, &mut plane);
    lfield(2, b"/device:TPU:0", &mut plane);
    lfield(3, &line, &mut plane);
    lfield(4, &ee, &mut plane);
    lfield(5, &e7, &mut plane);
    lfield(5, &e8, &mut plane);
    let mut ps = Vec::new();
    vfield(1, 7, &mut ps);
    vfield(4, (-5i64) as u64, &mut ps);
    lfield(6, &ps, &mut plane);

    let mut space = Vec::new();
    lfield(1, &plane, &mut space);
    lfield(2, b"an error", &mut space);
    lfield(3, b"a warning", &mut space);
    lfield(4, b"host0", &mut space);
    // Unknown group field 20 containing a nested group and a varint.
    key(20, 3, &mut space);
    key(21, 3, &mut space);
    vfield(1, 1, &mut space);
    key(21, 4, &mut space);
    key(20, 4, &mut space);
    space
}

#[test]
fn empty_buffer_is_an_empty_space() {
    assert_eq!(decode(&[]).unwrap(), XSpace::default());
}

#[test]
fn decodes_hand_built_space() {
    let s = decode(&sample_space()).unwrap();
    assert_eq!(s.errors, ["an error"]);
    assert_eq!(s.warnings, ["a warning"]);
    assert_eq!(s.hostnames, ["host0"]);
    let p = s.plane_by_name("/device:TPU:0").unwrap();
    assert_eq!(p.id, 1);
    let md = &p.event_metadata[&3];
    assert_eq!(md.display_name, "fusion.1");
    assert_eq!(md.metadata, [1, 2, 3]);
    assert_eq!(md.child_id, [4, 5, 6]);
    assert_eq!(p.stat_metadata[&7].description, "floating point ops");
    let l = p.line_by_name("XLA Ops").unwrap();
    assert_eq!((l.id, l.display_id, l.timestamp_ns, l.duration_ps), (42, 43, 1_000, 9_999));
    assert_eq!(l.display_name, "Ops");
    let e = &l.events[0];
    assert_eq!((e.offset_ps, e.duration_ps), (500, 250));
    assert_eq!(l.event_start_ps(e), 1_000_500);
    let epoch = XLine { timestamp_ns: 1_700_000_000_000_000_000, ..l.clone() };
    assert_eq!(epoch.event_start_ps(e), 1_700_000_000_000_000_000_000 + 500, "epoch picoseconds do not overflow");
    assert_eq!(p.event_name(e), "%fusion.1 = f32[] fusion()");
    assert_eq!(p.event_display_name(e), "fusion.1");
    assert_eq!(p.stat_name(&e.stats[0]), "kind");
    assert_eq!(e.stats[0].value, StatValue::Ref(7));
    assert_eq!(p.stat_str(&e.stats[0]), Some("flops"));
    assert_eq!(e.stats[1].value, StatValue::Double(2.5));
    assert_eq!(p.stat_name(&e.stats[1]), "");
    // `flops` is found on the event metadata.
    assert_eq!(p.event_stat(e, "flops").unwrap().value.as_i64(), Some(1000));
    assert_eq!(p.plane_stat("flops").unwrap().value, StatValue::Int64(-5));
    let agg = &l.events[1];
    assert_eq!((agg.num_occurrences, agg.offset_ps), (12, 0));
    assert_eq!(p.event_count(), 2);
}

#[test]
fn every_truncation_errors_with_an_offset_inside_the_input() {
    let bytes = sample_space();
    for cut in 1..bytes.len() {
        // Cutting exactly at a top-level field boundary is a valid shorter message.
        if let Err(e) = decode(&bytes[..cut]) {
            let off = e.offset().unwrap();
            assert!(off <= cut, "cut {cut}: {e} (offset {off})");
        }
    }
    assert!(decode(&bytes[..bytes.len() - 1]).is_err());
}

#[test]
fn specific_errors() {
    assert!(matches!(decode(&[0x80]), Err(DecodeError::TruncatedVarint { offset: 0 })));
    assert!(matches!(decode(&[0x0e]), Err(DecodeError::InvalidWireType { offset: 0, wire_type: 6 })));
    assert!(matches!(decode(&[0x0f]), Err(DecodeError::InvalidWireType { offset: 0, wire_type: 7 })));
    assert!(matches!(
        decode(&[0x0a, 0x05, 0x00]),
        Err(DecodeError::LengthExceedsInput { offset: 1, len: 5, remaining: 1 })
    ));
    assert!(matches!(decode(&[0x00]), Err(DecodeError::InvalidFieldNumber { offset: 0, field: 0 })));
    assert!(matches!(decode(&[0x7c]), Err(DecodeError::UnexpectedEndGroup { offset: 0, .. })));
    let overflow = [0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f];
    let mut plane = vec![0x0a, overflow.len() as u8];
    plane.extend_from_slice(&overflow);
    assert!(matches!(decode(&plane), Err(DecodeError::VarintOverflow { offset: 3 })));
    // XSpace.errors as a varint.
    let e = decode(&[0x10, 0x01]).unwrap_err();
    assert!(matches!(e, DecodeError::UnexpectedWireType { offset: 0, field: "errors", .. }), "{e}");
    // Invalid UTF-8 in XSpace.hostnames at payload byte 1.
    let e = decode(&[0x22, 0x02, b'a', 0xff]).unwrap_err();
    assert!(matches!(e, DecodeError::InvalidUtf8 { offset: 3, field: "hostnames", .. }), "{e}");
    assert!(e.to_string().contains("XSpace.hostnames at offset 3"));
    // Truncated double.
    let e = decode(&[0x0a, 0x04, 0x32, 0x02, 0x11, 0x00]).unwrap_err();
    assert!(matches!(e, DecodeError::TruncatedFixed { offset: 5, width: 8, remaining: 1 }), "{e}");
}

#[test]
fn deep_groups_are_rejected_without_recursion() {
    let mut deep = Vec::new();
    for _ in 0..100_000 {
        key(20, 3, &mut deep);
    }
    assert!(matches!(decode(&deep), Err(DecodeError::NestingTooDeep { .. })));
    let mut ok = Vec::new();
    for _ in 0..10 {
        key(20, 3, &mut ok);
    }
    for _ in 0..10 {
        key(20, 4, &mut ok);
    }
    assert_eq!(decode(&ok).unwrap(), XSpace::default());
    let mut unclosed = Vec::new();
    key(20, 3, &mut unclosed);
    assert!(matches!(decode(&unclosed), Err(DecodeError::UnterminatedGroup { offset: 0, field: 20 })));
}

/// A space with two planes of several lines each (events with stats), so that the lines can be
/// decoded on several threads, with plane-level fields before, between and after the lines.
fn multi_line_space() -> Vec<u8> {
    let mut space = Vec::new();
    for plane_id in 0..2u64 {
        let mut plane = Vec::new();
        vfield(1, plane_id, &mut plane);
        lfield(2, format!("/host:CPU{plane_id}").as_bytes(), &mut plane);
        for line_id in 0..5u64 {
            let mut line = Vec::new();
            vfield(1, line_id, &mut line);
            lfield(2, format!("thread {line_id}").as_bytes(), &mut line);
            vfield(3, 1_000 + line_id, &mut line);
            for ev in 0..(3 + 2 * line_id) {
                let mut e = Vec::new();
                vfield(1, 1 + ev % 2, &mut e);
                vfield(2, 10 * ev, &mut e);
                vfield(3, 7, &mut e);
                for s in 0..(ev % 3) {
                    lfield(4, &stat(1 + s, 4, &[ev as u8 & 0x7f], 0), &mut e);
                }
                lfield(4, &e, &mut line);
            }
            lfield(3, &line, &mut plane);
            if line_id == 2 {
                // A plane stat between lines.
                let mut ps = Vec::new();
                vfield(1, 2, &mut ps);
                vfield(3, 99, &mut ps);
                lfield(6, &ps, &mut plane);
            }
        }
        for (id, name) in [(1u64, "a"), (2, "b")] {
            let mut md = Vec::new();
            vfield(1, id, &mut md);
            lfield(2, name.as_bytes(), &mut md);
            let mut entry = Vec::new();
            vfield(1, id, &mut entry);
            lfield(2, &md, &mut entry);
            lfield(4, &entry, &mut plane);
        }
        for (id, name) in [(1u64, "x"), (2, "y"), (3, "z")] {
            let mut md = Vec::new();
            vfield(1, id, &mut md);
            lfield(2, name.as_bytes(), &mut md);
            let mut entry = Vec::new();
            vfield(1, id, &mut entry);
            lfield(2, &md, &mut entry);
            lfield(5, &entry, &mut plane);
        }
        lfield(1, &plane, &mut space);
    }
    space
}

fn threaded(threads: usize) -> DecodeOptions<'static> {
    DecodeOptions::default().threads(threads).min_parallel_bytes(0)
}

/// Same `Ok` value or the same error (compared by their `Debug` text).
fn same(a: &Result<XSpace, DecodeError>, b: &Result<XSpace, DecodeError>) -> bool {
    match (a, b) {
        (Ok(a), Ok(b)) => a == b,
        (Err(a), Err(b)) => format!("{a:?}") == format!("{b:?}"),
        _ => false,
    }
}

#[test]
fn threads_do_not_change_results_or_errors() {
    let bytes = multi_line_space();
    let one = decode_with(&bytes, &threaded(1)).unwrap();
    assert_eq!(one.planes.len(), 2);
    assert_eq!(one.planes[0].lines.len(), 5);
    assert_eq!(one.planes[0].stats.len(), 1);
    assert_eq!(one.planes[1].event_count(), 3 + 5 + 7 + 9 + 11);
    for threads in [2, 3, 8] {
        assert_eq!(decode_with(&bytes, &threaded(threads)).unwrap(), one);
    }
    // Every truncation, and every single-byte corruption to a few values, gives the same error on
    // one thread and on several (the first in input order).
    for cut in 0..bytes.len() {
        let a = decode_with(&bytes[..cut], &threaded(1));
        let b = decode_with(&bytes[..cut], &threaded(3));
        assert!(same(&a, &b), "cut {cut}: {a:?} vs {b:?}");
    }
    let mut flipped = bytes.clone();
    for at in 0..bytes.len() {
        for v in [0x00, 0xff] {
            flipped[at] = v;
            let a = decode_with(&flipped, &threaded(1));
            let b = decode_with(&flipped, &threaded(2));
            assert!(same(&a, &b), "byte {at} = {v:#x}: {a:?} vs {b:?}");
        }
        flipped[at] = bytes[at];
    }
}

#[test]
fn collections_are_allocated_at_their_exact_size() {
    let space = decode_with(&multi_line_space(), &threaded(1)).unwrap();
    assert_eq!(space.planes.capacity(), space.planes.len());
    for p in &space.planes {
        assert_eq!(p.lines.capacity(), p.lines.len());
        assert_eq!(p.stats.capacity(), p.stats.len());
        for l in &p.lines {
            assert_eq!(l.events.capacity(), l.events.len());
            for e in &l.events {
                assert_eq!(e.stats.capacity(), e.stats.len());
            }
        }
    }
    let md = &decode(&sample_space()).unwrap().planes[0].event_metadata[&3];
    assert_eq!(md.stats.capacity(), md.stats.len());
    assert_eq!(md.child_id.capacity(), md.child_id.len());
}

#[test]
fn skip_stats_leaves_out_stats_by_name() {
    let bytes = multi_line_space();
    let all = decode(&bytes).unwrap();
    let some = decode_with(&bytes, &DecodeOptions::default().skip_stats(&["x", "y"])).unwrap();
    let (mut kept, mut dropped) = (0, 0);
    for (pa, ps) in all.planes.iter().zip(&some.planes) {
        assert_eq!(pa.stat_metadata, ps.stat_metadata, "metadata stays");
        assert!(ps.stats.is_empty(), "the plane stat is `y`");
        for (la, ls) in pa.lines.iter().zip(&ps.lines) {
            for (ea, es) in la.events.iter().zip(&ls.events) {
                let expected: Vec<&XStat> =
                    ea.stats.iter().filter(|s| !["x", "y"].contains(&pa.stat_name(s))).collect();
                assert_eq!(es.stats.iter().collect::<Vec<_>>(), expected);
                assert_eq!(es.stats.capacity(), es.stats.len());
                kept += es.stats.len();
                dropped += ea.stats.len() - es.stats.len();
            }
        }
    }
    assert!(kept == 0 && dropped > 0, "stats only use ids 1 and 2: {kept} {dropped}");
    // Event metadata stats are filtered too.
    let s = decode_with(&sample_space(), &DecodeOptions::default().skip_stats(&["flops"])).unwrap();
    let p = &s.planes[0];
    assert!(p.event_metadata[&3].stats.is_empty());
    assert!(p.stats.is_empty());
    assert_eq!(p.lines[0].events[0].stats.len(), 2, "event stats 8 and 9 are not `flops`");
}
