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
    assert_eq!(
        (l.id, l.display_id, l.timestamp_ns, l.duration_ps),
        (42, 43, 1_000, 9_999)
    );
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
    assert!(matches!(
        decode(&[0x80]),
        Err(DecodeError::TruncatedVarint { offset: 0 })
    ));
    assert!(matches!(
        decode(&[0x0e]),
        Err(DecodeError::InvalidWireType {
            offset: 0,
            wire_type: 6
        })
    ));
    assert!(matches!(
        decode(&[0x0f]),
        Err(DecodeError::InvalidWireType {
            offset: 0,
            wire_type: 7
        })
    ));
    assert!(matches!(
        decode(&[0x0a, 0x05, 0x00]),
        Err(DecodeError::LengthExceedsInput {
            offset: 1,
            len: 5,
            remaining: 1
        })
    ));
    assert!(matches!(
        decode(&[0x00]),
        Err(DecodeError::InvalidFieldNumber {
            offset: 0,
            field: 0
        })
    ));
    assert!(matches!(
        decode(&[0x7c]),
        Err(DecodeError::UnexpectedEndGroup { offset: 0, .. })
    ));
    let overflow = [
        0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
    ];
    let mut plane = vec![0x0a, overflow.len() as u8];
    plane.extend_from_slice(&overflow);
    assert!(matches!(
        decode(&plane),
        Err(DecodeError::VarintOverflow { offset: 3 })
    ));
    // XSpace.errors as a varint.
    let e = decode(&[0x10, 0x01]).unwrap_err();
    assert!(
        matches!(
            e,
            DecodeError::UnexpectedWireType {
                offset: 0,
                field: "errors",
                ..
            }
        ),
        "{e}"
    );
    // Invalid UTF-8 in XSpace.hostnames at payload byte 1.
    let e = decode(&[0x22, 0x02, b'a', 0xff]).unwrap_err();
    assert!(
        matches!(
            e,
            DecodeError::InvalidUtf8 {
                offset: 3,
                field: "hostnames",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("XSpace.hostnames at offset 3"));
    // Truncated double.
    let e = decode(&[0x0a, 0x04, 0x32, 0x02, 0x11, 0x00]).unwrap_err();
    assert!(
        matches!(
            e,
            DecodeError::TruncatedFixed {
                offset: 5,
                width: 8,
                remaining: 1
            }
        ),
        "{e}"
    );
}

#[test]
fn deep_groups_are_rejected_without_recursion() {
    let mut deep = Vec::new();
    for _ in 0..100_000 {
        key(20, 3, &mut deep);
    }
    assert!(matches!(
        decode(&deep),
        Err(DecodeError::NestingTooDeep { .. })
    ));
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
    assert!(matches!(
        decode(&unclosed),
        Err(DecodeError::UnterminatedGroup {
            offset: 0,
            field: 20
        })
    ));
}
