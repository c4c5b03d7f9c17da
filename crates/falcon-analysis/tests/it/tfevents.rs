//! The TensorBoard event-file reader against files written by TensorBoard's own writer
//! (tests/data/tfevents, made by examples/tfevents/write_events.py with tensorboard 2.21.0): every scalar
//! comes back bit for bit; corrupt and truncated copies give errors naming the record and its byte offset;
//! no input makes `parse` panic.

use falcon_analysis::accuracy::tfevents::{parse, read_dir, read_file};
use falcon_analysis::accuracy::{RunSeries, SourceFormat};
use falcon_analysis::error::AnalysisError;
use proptest::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tfevents")
}

fn expected() -> Value {
    serde_json::from_str(&std::fs::read_to_string(data().join("expected.json")).unwrap()).unwrap()
}

/// File names in name order.
fn files() -> Vec<String> {
    let mut names: Vec<String> = expected()["files"].as_object().unwrap().keys().cloned().collect();
    names.sort();
    names
}

/// tag → step → f64 bits, from a file's expected rows.
fn expected_points(file: &Value) -> BTreeMap<String, BTreeMap<i64, u64>> {
    let mut out: BTreeMap<String, BTreeMap<i64, u64>> = BTreeMap::new();
    for row in file["scalars"].as_array().unwrap() {
        let row = row.as_array().unwrap();
        let (tag, step) = (row[0].as_str().unwrap(), row[1].as_i64().unwrap());
        let bits = u64::from_str_radix(row[3].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        // The human-readable value is the same number.
        assert_eq!(row[2].as_f64().unwrap(), f64::from_bits(bits), "{row:?}");
        assert!(out.entry(tag.to_string()).or_default().insert(step, bits).is_none(), "duplicate row {row:?}");
    }
    out
}

fn actual_points(run: &RunSeries) -> BTreeMap<String, BTreeMap<i64, u64>> {
    let mut out = BTreeMap::new();
    for s in &run.series {
        assert_eq!(s.averaged_over, None);
        assert!(s.points.windows(2).all(|w| w[0].0 < w[1].0), "{}: steps not strictly increasing", s.name);
        let points: BTreeMap<i64, u64> = s.points.iter().map(|&(step, v)| (step, v.to_bits())).collect();
        assert!(out.insert(s.name.clone(), points).is_none(), "series {} twice", s.name);
    }
    assert!(run.series.windows(2).all(|w| w[0].name < w[1].name), "series not sorted by name");
    out
}

#[test]
fn real_files_read_back_bit_for_bit() {
    let exp = expected();
    assert!(exp["writer"].as_str().unwrap().starts_with("tensorboard 2.21.0"));
    for name in files() {
        let file = &exp["files"][&name];
        let path = data().join("run").join(&name);
        let run = read_file(&path).unwrap();
        assert_eq!(run.format, SourceFormat::Tfevents);
        assert_eq!(run.path, path.display().to_string());
        assert_eq!(actual_points(&run), expected_points(file), "{name}");

        // parse on the bytes gives the same.
        let again = parse(&std::fs::read(&path).unwrap(), "x").unwrap();
        assert_eq!(again.series, run.series);

        // The skipped values are counted per tag in one note; nothing else is noted.
        let skipped = file["skipped"].as_object().unwrap();
        if skipped.is_empty() {
            assert!(run.notes.is_empty(), "{name}: {:?}", run.notes);
        } else {
            assert_eq!(run.notes.len(), 1, "{name}: {:?}", run.notes);
            let note = &run.notes[0];
            let total: u64 = skipped.values().map(|c| c.as_u64().unwrap()).sum();
            assert!(
                note.starts_with(&format!("skipped {total} non-scalar values in {} tags: ", skipped.len())),
                "{note}"
            );
            for (tag, count) in skipped {
                let at = note.find(&format!("`{tag}` (")).unwrap_or_else(|| panic!("{tag} not in {note}"));
                let rest = &note[at..];
                let end = rest.find(", `").unwrap_or(rest.len());
                assert!(rest[..end].ends_with(&format!(") ×{count}")), "{tag}: {}", &rest[..end]);
            }
        }
    }
}

#[test]
fn the_encodings_in_the_data_are_all_there() {
    // Guards the test data: the reader must have met each encoding the writer script puts in.
    let run = read_file(&data().join("run").join(&files()[0])).unwrap();
    let tags: Vec<&str> = run.series.iter().map(|s| s.name.as_str()).collect();
    for tag in [
        "lm loss",
        "grad-norm",
        "learning-rate",
        "learning/lm_loss",
        "perf/step_time_seconds",
        "fp16/loss_scale",
        "bf16/grad_norm",
        "counters/tokens",
        "counters/samples",
        "content/lr",
        "content/loss_f64",
    ] {
        assert!(tags.contains(&tag), "{tag} missing from {tags:?}");
    }
    // Step 20 of `lm loss` was written twice; the later value (+0.25) won.
    let loss = run.get("lm loss").unwrap();
    let v20 = loss.points.iter().find(|p| p.0 == 20).unwrap().1;
    let formula = 10.5 * (-20.0f64 / 30.0).exp() + 2.0 + 0.05 * 20.0f64.sin();
    assert!((v20 - formula - 0.25).abs() < 1e-5, "{v20} vs {formula} + 0.25");
    // Metadata only on the first event of perf/step_time_seconds, yet every event read.
    assert_eq!(run.get("perf/step_time_seconds").unwrap().points.len(), 12);
}

#[test]
fn read_dir_merges_files_in_name_order_later_wins() {
    let exp = expected();
    let mut merged: BTreeMap<String, BTreeMap<i64, u64>> = BTreeMap::new();
    for name in files() {
        for (tag, points) in expected_points(&exp["files"][&name]) {
            merged.entry(tag).or_default().extend(points);
        }
    }
    let run = read_dir(&data().join("run")).unwrap();
    assert_eq!(actual_points(&run), merged);
    assert_eq!(run.get("lm loss").unwrap().points.len(), 100);
    assert_eq!(run.get("lm loss").unwrap().points.first().unwrap().0, 0);
    assert_eq!(run.get("lm loss").unwrap().points.last().unwrap().0, 99);
    assert!(run.notes[0].starts_with("merged 2 event files in name order"), "{:?}", run.notes);
    assert!(
        run.notes.iter().any(|n| n.starts_with(&format!("{}: skipped 15 non-scalar values", files()[0]))),
        "{:?}",
        run.notes
    );

    // One level up: the same files, found in the subdirectory.
    let up = read_dir(&data()).unwrap();
    assert_eq!(up.series, run.series);

    // A file path is read as a file.
    let one = read_dir(&data().join("run").join(&files()[1])).unwrap();
    assert_eq!(one.series, read_file(&data().join("run").join(&files()[1])).unwrap().series);
}

#[test]
fn read_dir_name_order_not_listing_order() {
    // Copies named so that the later-named file is the first run: its values must win at steps 50..59.
    let dir = tempfile::tempdir().unwrap();
    let names = files();
    std::fs::copy(data().join("run").join(&names[1]), dir.path().join("events.out.tfevents.1000000000.a")).unwrap();
    std::fs::copy(data().join("run").join(&names[0]), dir.path().join("events.out.tfevents.2000000000.a")).unwrap();
    std::fs::write(dir.path().join("README.txt"), "not an event file").unwrap();
    let run = read_dir(dir.path()).unwrap();
    let first = read_file(&data().join("run").join(&names[0])).unwrap();
    let step55 = |r: &RunSeries| r.get("lm loss").unwrap().points.iter().find(|p| p.0 == 55).unwrap().1;
    assert_eq!(step55(&run).to_bits(), step55(&first).to_bits());
}

#[test]
fn read_dir_without_event_files_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/other.json"), "{}").unwrap();
    let e = read_dir(dir.path()).unwrap_err();
    assert!(matches!(e, AnalysisError::NotFound(_)), "{e:?}");
    assert!(e.to_string().contains("no TensorBoard event file"), "{e}");
    assert!(matches!(read_dir(&dir.path().join("missing")).unwrap_err(), AnalysisError::NotFound(_)));
    assert!(matches!(read_file(&dir.path().join("missing")).unwrap_err(), AnalysisError::NotFound(_)));
}

/// `(offset, payload length)` of each record of a well-formed file.
fn records(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut off = 0;
    while off < bytes.len() {
        let len = usize::try_from(u64::from_le_bytes(bytes[off..off + 8].try_into().unwrap())).unwrap();
        out.push((off, len));
        off += 12 + len + 4;
    }
    assert_eq!(off, bytes.len());
    out
}

fn first_file() -> Vec<u8> {
    std::fs::read(data().join("run").join(&files()[0])).unwrap()
}

fn invalid(bytes: &[u8]) -> String {
    match parse(bytes, "f") {
        Err(AnalysisError::Invalid(m)) => m,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn a_flipped_payload_byte_is_a_payload_crc_error_at_its_record() {
    let bytes = first_file();
    let recs = records(&bytes);
    assert!(recs.len() > 60);
    for (n, &(off, len)) in recs.iter().enumerate() {
        for pos in [off + 12, off + 12 + len / 2, off + 12 + len - 1, off + 12 + len] {
            let mut b = bytes.clone();
            b[pos] ^= 0x10;
            let m = invalid(&b);
            assert!(
                m.starts_with(&format!("f: record {n} at byte offset {off}: payload CRC mismatch (stored 0x")),
                "{pos}: {m}"
            );
        }
    }
}

#[test]
fn a_flipped_length_byte_is_a_length_crc_error_at_its_record() {
    let bytes = first_file();
    for (n, &(off, _)) in records(&bytes).iter().enumerate() {
        for pos in off..off + 12 {
            let mut b = bytes.clone();
            b[pos] ^= 0x01;
            let m = invalid(&b);
            assert!(
                m.starts_with(&format!("f: record {n} at byte offset {off}: length CRC mismatch (stored 0x")),
                "{pos}: {m}"
            );
        }
    }
}

#[test]
fn truncation_is_an_error_except_at_a_record_end_or_a_missing_last_footer() {
    let bytes = first_file();
    let recs = records(&bytes);
    let full = read_file(&data().join("run").join(&files()[0])).unwrap();
    let total_points = |r: &RunSeries| r.series.iter().map(|s| s.points.len()).sum::<usize>();
    let len = bytes.len();
    let cuts: Vec<usize> = (0..len).filter(|&c| c < 400 || c + 400 > len || c % 11 == 0).collect();
    for cut in cuts {
        let (n, &(off, plen)) = recs.iter().enumerate().rev().find(|(_, r)| r.0 <= cut).unwrap();
        let result = parse(&bytes[..cut], "f");
        if cut == off {
            // A record boundary: a well-formed shorter file.
            let run = result.unwrap_or_else(|e| panic!("cut {cut}: {e}"));
            assert!(total_points(&run) <= total_points(&full));
        } else if cut == off + 12 + plen {
            // Only the last payload's footer is missing: tolerated, with a note.
            let run = result.unwrap_or_else(|e| panic!("cut {cut}: {e}"));
            assert!(
                run.notes
                    .iter()
                    .any(|m| m
                        .starts_with(&format!("record {n} at byte offset {off}: the final payload CRC is missing"))),
                "cut {cut}: {:?}",
                run.notes
            );
        } else {
            let m = match result {
                Err(AnalysisError::Invalid(m)) => m,
                other => panic!("cut {cut}: expected Invalid, got {other:?}"),
            };
            assert!(m.starts_with(&format!("f: record {n} at byte offset {off}: truncated record")), "cut {cut}: {m}");
        }
    }
    // Exactly the last 4 bytes gone: every scalar still read, and the note says so.
    let run = parse(&bytes[..len - 4], "f").unwrap();
    assert_eq!(run.series, full.series);
    let (off, _) = *recs.last().unwrap();
    assert!(run.notes[0]
        .starts_with(&format!("record {} at byte offset {off}: the final payload CRC is missing", recs.len() - 1)));
}

/// Re-frames a file's payloads with correct lengths and CRCs, so a mutated payload reaches the protobuf decoder.
fn reframe(payloads: &[Vec<u8>]) -> Vec<u8> {
    let masked = |d: &[u8]| {
        let c = crc32c::crc32c(d);
        c.rotate_right(15).wrapping_add(0xa282_ead8)
    };
    let mut out = Vec::new();
    for p in payloads {
        let len = (p.len() as u64).to_le_bytes();
        out.extend(len);
        out.extend(masked(&len).to_le_bytes());
        out.extend(p);
        out.extend(masked(p).to_le_bytes());
    }
    out
}

#[test]
fn reframing_the_real_file_gives_it_back() {
    let bytes = first_file();
    let payloads: Vec<Vec<u8>> = records(&bytes).iter().map(|&(o, l)| bytes[o + 12..o + 12 + l].to_vec()).collect();
    assert_eq!(reframe(&payloads), bytes, "TensorBoard's framing and CRCs are what the test (and reader) compute");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = parse(&bytes, "r");
    }

    #[test]
    fn mutated_real_file_never_panics(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut bytes = first_file();
        for (i, x) in &flips {
            let i = i.index(bytes.len());
            bytes[i] ^= x | 1;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        match parse(&bytes, "m") {
            Ok(_) | Err(AnalysisError::Invalid(_)) => {}
            Err(e) => prop_assert!(false, "unexpected error kind: {e:?}"),
        }
    }

    #[test]
    fn mutated_payloads_with_good_crcs_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..16),
    ) {
        // The CRCs are recomputed after the edit, so the protobuf decoder and the scalar extraction see the
        // corrupt payloads: they must give a result or an Invalid error naming a record, never panic.
        let bytes = first_file();
        let mut payloads: Vec<Vec<u8>> = records(&bytes).iter().map(|&(o, l)| bytes[o + 12..o + 12 + l].to_vec()).collect();
        for (r, at, x, op) in &edits {
            let r = r.index(payloads.len());
            let p = &mut payloads[r];
            let i = at.index(p.len() + 1);
            match op {
                0 if i < p.len() => p[i] ^= x | 1,
                1 => p.insert(i, *x),
                _ if i < p.len() => { p.remove(i); }
                _ => p.push(*x),
            }
        }
        match parse(&reframe(&payloads), "m") {
            Ok(run) => prop_assert!(run.series.iter().all(|s| s.points.windows(2).all(|w| w[0].0 < w[1].0))),
            Err(AnalysisError::Invalid(m)) => prop_assert!(m.starts_with("m: record "), "{}", m),
            Err(e) => prop_assert!(false, "unexpected error kind: {e:?}"),
        }
    }
}
