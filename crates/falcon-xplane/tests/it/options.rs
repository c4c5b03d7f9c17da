//! Decode options, memory-mapped files and compressed strings, on the real captures in `tests/data/`.

use std::io::Write;
use std::path::PathBuf;

use falcon_xplane::{
    decode, decode_file, decode_file_with, decode_with, DecodeOptions, InflateError, StatValue, XStat, MAX_INFLATED_LEN,
};

const FIXTURES: [&str; 3] = ["gpu_v100x8_tf.xplane.pb", "jax_cpu_mlp_vm.xplane.pb", "tpu_v6e_inference.xplane.pb"];

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

#[test]
fn threads_and_mmap_do_not_change_the_result() {
    for name in FIXTURES {
        let bytes = std::fs::read(data(name)).unwrap();
        let one = decode_with(&bytes, &DecodeOptions::default().threads(1)).unwrap();
        for threads in [2, 4] {
            let opts = DecodeOptions::default().threads(threads).min_parallel_bytes(0);
            assert!(decode_with(&bytes, &opts).unwrap() == one, "{name}, {threads} threads");
        }
        // Mapped (all three are over the 64 KiB threshold; the GPU one is over the 1 MiB release
        // step) and read.
        let mapped = decode_file_with(data(name), &DecodeOptions::default().mmap(true)).unwrap();
        assert!(mapped == one, "{name} mapped");
        assert!(decode_file(data(name)).unwrap() == one, "{name} read (the default)");
    }
}

/// A file is read into an anonymous mapping whose consumed pages are dropped while decoding (they read back as
/// zeros): the decoder must never read a byte it has released. Four copies of the V100 capture back to back (one
/// XSpace of 12 MB, planes repeated) release many steps, on one thread and on several, with and without skipped
/// stats; cuts of it give the same errors as decoding the bytes.
#[test]
fn anonymous_read_equals_plain_read() {
    let one = std::fs::read(data("gpu_v100x8_tf.xplane.pb")).unwrap();
    let bytes: Vec<u8> = std::iter::repeat_n(&one, 4).flatten().copied().collect();
    let dir = std::env::temp_dir().join(format!("falcon-xplane-anon-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("four.xplane.pb");
    std::fs::write(&path, &bytes).unwrap();
    let skip = ["_src", "_pt", "_p", "_ct", "_c", "run_id", "long_name"];
    for threads in [1, 2, 3] {
        for skip in [&skip[..0], &skip[..]] {
            let opts = DecodeOptions::default().threads(threads).min_parallel_bytes(0).skip_stats(skip);
            let read = decode_file_with(&path, &opts).unwrap();
            assert!(read == decode_with(&bytes, &opts).unwrap(), "{threads} threads, skip {skip:?}");
            assert_eq!(read.planes.len(), 4 * decode(&one).unwrap().planes.len());
        }
    }
    for cut in [bytes.len() / 3, bytes.len() / 2 + 12_345, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        for threads in [1, 2] {
            let opts = DecodeOptions::default().threads(threads).min_parallel_bytes(0);
            let a = decode_file_with(&path, &opts).map(|_| ()).map_err(|e| format!("{e:?}"));
            let b = decode_with(&bytes[..cut], &opts).map(|_| ()).map_err(|e| format!("{e:?}"));
            assert_eq!(a, b, "cut at {cut}, {threads} threads");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn files_are_read_unless_mapping_is_asked_for_and_only_regular_files_are_decoded() {
    assert!(!DecodeOptions::default().mmap, "user files are read: a mapped file truncated meanwhile is SIGBUS");
    // A truncated capture (one still being written) is a decode error naming the offset.
    let dir = std::env::temp_dir().join(format!("falcon-xplane-opts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("shrinks.xplane.pb");
    let bytes = std::fs::read(data("gpu_v100x8_tf.xplane.pb")).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let e = decode_file(&path).expect_err("half a capture");
    assert!(e.offset().is_some(), "a decode error with an offset, not an I/O error: {e}");
    for special in ["/dev/zero", "/dev/null"] {
        let e = decode_file(special).expect_err(special);
        assert!(e.to_string().contains("not a regular file"), "{special}: {e}");
    }
    let e = decode_file(&dir).expect_err("a directory");
    assert!(e.to_string().contains("not a regular file"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn threads_give_the_same_error_on_truncated_and_corrupted_captures() {
    let bytes = std::fs::read(data("gpu_v100x8_tf.xplane.pb")).unwrap();
    let one = DecodeOptions::default().threads(1);
    let many = DecodeOptions::default().threads(3).min_parallel_bytes(0);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..6 {
        let cut = (next() % bytes.len() as u64) as usize;
        let a = decode_with(&bytes[..cut], &one).map(|_| ()).map_err(|e| format!("{e:?}"));
        let b = decode_with(&bytes[..cut], &many).map(|_| ()).map_err(|e| format!("{e:?}"));
        assert_eq!(a, b, "cut at {cut}");
        let mut flipped = bytes.clone();
        for _ in 0..3 {
            let at = (next() % bytes.len() as u64) as usize;
            flipped[at] = next() as u8;
        }
        let a = decode_with(&flipped, &one).map_err(|e| format!("{e:?}"));
        let b = decode_with(&flipped, &many).map_err(|e| format!("{e:?}"));
        match (a, b) {
            (Ok(a), Ok(b)) => assert!(a == b),
            (a, b) => assert_eq!(a.err(), b.err()),
        }
    }
}

#[test]
fn skip_stats_drops_only_the_named_stats() {
    let bytes = std::fs::read(data("jax_cpu_mlp_vm.xplane.pb")).unwrap();
    let all = decode(&bytes).unwrap();
    let skip = ["_src", "_pt", "_p", "_ct", "_c"];
    let some = decode_with(&bytes, &DecodeOptions::default().skip_stats(&skip)).unwrap();
    let count = |s: &falcon_xplane::XSpace, keep: &dyn Fn(&str) -> bool| -> usize {
        s.planes
            .iter()
            .map(|p| {
                p.lines.iter().flat_map(|l| &l.events).flat_map(|e| &e.stats).filter(|st| keep(p.stat_name(st))).count()
            })
            .sum()
    };
    let kept = count(&some, &|_| true);
    assert_eq!(kept, count(&all, &|n| !skip.contains(&n)));
    assert!(kept < count(&all, &|_| true));
    assert_eq!(count(&some, &|n| skip.contains(&n)), 0);
    assert_eq!(some.planes.len(), all.planes.len());
    for (a, s) in all.planes.iter().zip(&some.planes) {
        assert_eq!(a.event_count(), s.event_count());
        assert_eq!(a.stat_metadata, s.stat_metadata);
    }
}

fn gzip(text: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(text).unwrap();
    enc.finish().unwrap()
}

#[test]
fn compressed_strings_inflate() {
    let text = "%fusion.3 = f32[8,64]{1,0} fusion(f32[8,64]{1,0} %p0), kind=kLoop".repeat(20);
    let gz = StatValue::CompressedStr(gzip(text.as_bytes()));
    assert_eq!(gz.decompressed_str().unwrap().unwrap(), text);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(text.as_bytes()).unwrap();
    let zlib = StatValue::CompressedStr(z.finish().unwrap());
    assert_eq!(zlib.decompressed_str().unwrap().unwrap(), text);
    assert!(StatValue::Str(text.clone()).decompressed_str().is_none());

    // Through the plane helper, which also covers plain and ref strings.
    let plane = falcon_xplane::XPlane::default();
    let stat = XStat { metadata_id: 1, value: gz };
    assert_eq!(plane.stat_string(&stat).unwrap(), text);
    let plain = XStat { metadata_id: 1, value: StatValue::Str("abc".into()) };
    assert_eq!(plane.stat_string(&plain).unwrap(), "abc");

    // Errors, not panics.
    let err = |v: Vec<u8>| StatValue::CompressedStr(v).decompressed_str().unwrap().unwrap_err();
    assert!(matches!(err(b"plain text".to_vec()), InflateError::UnknownFormat { .. }));
    assert!(matches!(err(vec![]), InflateError::UnknownFormat { .. }));
    let mut corrupt = gzip(text.as_bytes());
    let n = corrupt.len();
    corrupt.truncate(n / 2);
    assert!(matches!(err(corrupt), InflateError::Corrupt(_)));
    assert!(matches!(err(gzip(&[b'a', 0xff, b'b'])), InflateError::InvalidUtf8 { valid_up_to: 1 }));
    assert!(plane.stat_string(&XStat { metadata_id: 1, value: StatValue::CompressedStr(b"nope".to_vec()) }).is_none());
}

#[test]
fn inflating_is_bounded() {
    // 3 MiB of zeros compress to a few KiB; the inflater stops at its limit.
    let bomb = gzip(&vec![0u8; 3 << 20]);
    assert!(bomb.len() < 20_000);
    assert!(matches!(falcon_xplane::inflate_str(&bomb, 1 << 20), Err(InflateError::TooLarge { limit: 1_048_576 })));
    assert_eq!(falcon_xplane::inflate_str(&bomb, 3 << 20).unwrap().len(), 3 << 20);
    assert_eq!(MAX_INFLATED_LEN, 256 << 20);
}
