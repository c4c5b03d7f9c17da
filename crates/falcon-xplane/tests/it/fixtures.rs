//! Decoding the real XProf captures in `tests/data/` (copied from the project's shared `fixtures/xprof/`).
//! Expected counts were cross-checked against Google's protobuf Python runtime on the same files.

use std::path::PathBuf;
use std::time::Instant;

use falcon_xplane::{decode, decode_file, DecodeError, StatValue, XSpace};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn load(name: &str) -> (Vec<u8>, XSpace) {
    let bytes = std::fs::read(data(name)).unwrap();
    let start = Instant::now();
    let space = decode(&bytes).unwrap();
    eprintln!("decoded {name} ({} bytes) in {:?}", bytes.len(), start.elapsed());
    (bytes, space)
}

/// (plane name, lines, events, per-event stats, event metadata, stat metadata, plane stats)
type PlaneFacts = (&'static str, usize, usize, usize, usize, usize, usize);

fn check_planes(space: &XSpace, expected: &[PlaneFacts]) {
    let got: Vec<PlaneFacts> = space
        .planes
        .iter()
        .zip(expected)
        .map(|(p, e)| {
            let stats = p.lines.iter().flat_map(|l| &l.events).map(|e| e.stats.len()).sum();
            (e.0, p.lines.len(), p.event_count(), stats, p.event_metadata.len(), p.stat_metadata.len(), p.stats.len())
        })
        .collect();
    let names: Vec<&str> = space.planes.iter().map(|p| p.name.as_str()).collect();
    let expected_names: Vec<&str> = expected.iter().map(|e| e.0).collect();
    assert_eq!(names, expected_names);
    assert_eq!(got, expected);
}

/// Sums of all event `duration_ps` and `offset_ps`, and the count of all stats (event, event
/// metadata and plane level).
fn checksums(space: &XSpace) -> (i64, i64, usize) {
    let events = || space.planes.iter().flat_map(|p| &p.lines).flat_map(|l| &l.events);
    let dur = events().map(|e| e.duration_ps).sum();
    let off = events().map(|e| e.offset_ps).sum();
    let stats = events().map(|e| e.stats.len()).sum::<usize>()
        + space.planes.iter().flat_map(|p| p.event_metadata.values()).map(|m| m.stats.len()).sum::<usize>()
        + space.planes.iter().map(|p| p.stats.len()).sum::<usize>();
    (dur, off, stats)
}

#[test]
fn tpu_v6e_inference() {
    let (_, s) = load("tpu_v6e_inference.xplane.pb");
    assert!(s.hostnames.is_empty() && s.errors.is_empty() && s.warnings.is_empty());
    check_planes(
        &s,
        &[
            ("/device:TPU:0", 5, 2317, 6041, 138, 40, 12),
            ("/device:TPU:1", 5, 1712, 3627, 125, 40, 12),
            ("/device:TPU:2", 5, 1712, 3627, 125, 40, 12),
            ("/device:TPU:3", 5, 1712, 3627, 125, 40, 12),
            ("/host:metadata", 0, 0, 0, 8, 5, 0),
            ("/host:CPU", 122, 19270, 20278, 328, 60, 1),
            ("Task Environment", 0, 0, 0, 0, 2, 2),
        ],
    );
    assert_eq!(checksums(&s), (1_889_540_529_928_898, 1_016_227_643_717_502_846, 37_959));
    let tpu0 = s.plane_by_name("/device:TPU:0").unwrap();
    assert_eq!(tpu0.id, 2);
    for line in ["XLA Modules", "XLA Ops", "Async XLA Ops", "Overlay", "XLA TraceMe"] {
        assert!(tpu0.line_by_name(line).is_some(), "{line}");
    }
    let stat = |name| tpu0.plane_stat(name).map(|s| s.value.clone());
    assert_eq!(stat("device_type_string"), Some(StatValue::Str("TPU v6 Lite".into())));
    assert_eq!(stat("peak_teraflops_per_second"), Some(StatValue::Double(918.0)));
    assert_eq!(stat("has_merged_vmem"), Some(StatValue::Int64(1)));
    let hbm = tpu0.plane_stat("peak_hbm_bw_gigabytes_per_second").unwrap().value.as_f64().unwrap();
    assert!((hbm - 1637.993152512).abs() < 1e-9);
    // XLA Ops events carry device timing; HLO cost stats live on the event metadata.
    let ops = tpu0.line_by_name("XLA Ops").unwrap();
    let ev = &ops.events[0];
    assert!(tpu0.event_stat(ev, "device_duration_ps").is_some());
    assert!(ops.events.iter().any(|e| tpu0.event_stat(e, "hlo_category").is_some()));
    let with_display = ops.events.iter().find(|e| !tpu0.event_metadata_of(e).unwrap().display_name.is_empty()).unwrap();
    let long = tpu0.event_name(with_display);
    assert!(long.starts_with('%') && long.contains(" = "), "{long}");
    let host = s.plane_by_name("/host:CPU").unwrap();
    let allocs = host.lines.iter().flat_map(|l| &l.events).filter(|e| host.event_name(e) == "MemoryAllocation").count();
    assert_eq!(allocs, 453);
    assert_eq!(s.planes_with_prefix("/device:TPU:").count(), 4);
}

#[test]
fn gpu_v100x8_tf() {
    let (_, s) = load("gpu_v100x8_tf.xplane.pb");
    assert_eq!(s.hostnames, ["34.83.195.179:6003"]);
    check_planes(
        &s,
        &[
            ("/host:CPU", 22, 15354, 81621, 5056, 1367, 0),
            ("/device:GPU:0", 0, 0, 0, 0, 10, 6),
            ("/device:GPU:1", 1, 19, 114, 1, 16, 6),
            ("/device:GPU:2", 0, 0, 0, 0, 10, 6),
            ("/device:GPU:3", 0, 0, 0, 0, 10, 6),
            ("/device:GPU:4", 7, 3875, 9060, 739, 1402, 6),
            ("/device:GPU:5", 0, 0, 0, 0, 10, 6),
            ("/device:GPU:6", 7, 3880, 9160, 739, 1402, 6),
            ("/device:GPU:7", 0, 0, 0, 0, 10, 6),
        ],
    );
    assert_eq!(checksums(&s), (569_974_059_000, 52_134_737_747_050_000, 100_003));
    let gpu4 = s.plane_by_name("/device:GPU:4").unwrap();
    for line in ["Steps", "Stream #134(Compute)", "TensorFlow Ops"] {
        assert!(gpu4.line_by_name(line).is_some(), "{line}");
    }
    assert_eq!(gpu4.plane_stat("clock_rate").unwrap().value, StatValue::Int64(1_530_000));
    assert_eq!(gpu4.plane_stat("core_count").unwrap().value, StatValue::Int64(80));
    assert_eq!(gpu4.plane_stat("memory_bandwidth").unwrap().value, StatValue::Uint64(898_048_000_000));
    assert_eq!(gpu4.plane_stat("memory_size").unwrap().value, StatValue::Uint64(16_945_512_448));
    assert_eq!(gpu4.plane_stat("compute_cap_major").unwrap().value.as_i64(), Some(7));
    let host = s.plane_by_name("/host:CPU").unwrap();
    let allocs = host.lines.iter().flat_map(|l| &l.events).filter(|e| host.event_name(e) == "MemoryAllocation").count();
    assert_eq!(allocs, 1859);
}

#[test]
fn jax_cpu_mlp() {
    let (_, s) = load("jax_cpu_mlp_vm.xplane.pb");
    assert_eq!(s.hostnames, ["vm"]);
    check_planes(
        &s,
        &[
            ("/host:metadata", 0, 0, 0, 8, 6, 4),
            ("/host:CPU", 5, 1586, 4028, 110, 48, 1),
            ("Task Environment", 0, 0, 0, 0, 3, 3),
        ],
    );
    assert_eq!(checksums(&s), (562_623_197_000, 114_198_957_172_000, 4052));
    assert!(s.plane_by_name("/host:CPU").unwrap().line_by_name("python").is_some());
}

#[test]
fn decode_file_matches_decode_and_reports_missing_files() {
    let path = data("jax_cpu_mlp_vm.xplane.pb");
    assert_eq!(decode_file(&path).unwrap(), decode(&std::fs::read(&path).unwrap()).unwrap());
    let err = decode_file(data("does_not_exist.xplane.pb")).unwrap_err();
    assert!(matches!(err, DecodeError::Io { .. }));
    assert!(err.to_string().contains("does_not_exist"), "{err}");
}

#[test]
fn truncated_fixtures_error_with_offsets() {
    for name in ["tpu_v6e_inference.xplane.pb", "jax_cpu_mlp_vm.xplane.pb"] {
        let bytes = std::fs::read(data(name)).unwrap();
        for cut in [1, 2, 3, 10, 100, 1000, bytes.len() / 3, bytes.len() / 2, bytes.len() - 1] {
            let err = decode(&bytes[..cut]).unwrap_err();
            let off = err.offset().unwrap();
            assert!(off <= cut, "{name} cut at {cut}: {err}");
        }
    }
}

#[test]
fn json_named_pb_is_an_error() {
    let dir = std::env::temp_dir().join(format!("falcon-xplane-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("not_really.xplane.pb");
    let json = br#"{"displayTimeUnit": "ns", "traceEvents": [{"ph": "X", "name": "op", "ts": 1.5}]}"#;
    std::fs::write(&path, json).unwrap();
    let err = decode_file(&path).unwrap_err();
    eprintln!("JSON as xplane: {err}");
    assert!(err.offset().is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn seeded_random_bytes_never_panic() {
    // xorshift64*, fixed seed.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let mut errors = 0;
    for _ in 0..2000 {
        let len = (next() % 512) as usize + 1;
        let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if decode(&bytes).is_err() {
            errors += 1;
        }
    }
    // Almost all random buffers are invalid.
    assert!(errors > 1900, "{errors}");
}
