//! Tensor dump comparison: agreement with numpy on the committed dumps (tests/data/tensors, written with
//! expected.json by examples/tensors/make_dumps.py), results independent of the thread count on multi-chunk
//! tensors, and malformed files refused with a reason, never a panic.

use falcon_analysis::error::AnalysisError;
use falcon_analysis::tensors::{compare_dumps, TensorDiff, TensorOptions, TensorReport};
use proptest::prelude::*;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tensors")
}

fn expected() -> Value {
    let text = std::fs::read_to_string(data_dir().join("expected.json"))
        .expect("expected.json (run examples/tensors/make_dumps.py)");
    serde_json::from_str(&text).unwrap()
}

fn options(case: &Value, threads: usize) -> TensorOptions {
    TensorOptions {
        map: case["map"].as_str().map(|m| data_dir().join(m)),
        rtol: case["rtol"].as_f64(),
        atol: case["atol"].as_f64(),
        threads: Some(threads),
        max_decompressed_bytes: None,
    }
}

fn run_case(case: &Value, threads: usize) -> TensorReport {
    let a = data_dir().join(case["a"].as_str().unwrap());
    let b = data_dir().join(case["b"].as_str().unwrap());
    compare_dumps(&a, &b, &options(case, threads)).unwrap_or_else(|e| panic!("{}: {e}", case["name"]))
}

/// `got` agrees with numpy's `want` to 1e-6 relative (both absent, or both present and close).
fn close(what: &str, got: Option<f64>, want: &Value) {
    match (got, want.as_f64()) {
        (None, None) => {}
        (Some(g), Some(w)) => {
            let tol = 1e-6 * w.abs().max(g.abs());
            assert!((g - w).abs() <= tol, "{what}: falcon {g:e}, numpy {w:e}");
        }
        (g, _) => panic!("{what}: falcon {g:?}, numpy {want}"),
    }
}

fn check_tensor(case: &str, t: &TensorDiff, w: &Value) {
    let what = |field: &str| format!("{case} / {} / {field}", t.name);
    assert_eq!(t.a_name, w["a_name"].as_str().unwrap(), "{}", what("a_name"));
    assert_eq!(t.dtype, w["dtype"].as_str().unwrap(), "{}", what("dtype"));
    assert_eq!(t.dtype_b.as_deref(), w["dtype_b"].as_str(), "{}", what("dtype_b"));
    assert_eq!(serde_json::to_value(&t.shape).unwrap(), w["shape"], "{}", what("shape"));
    assert_eq!(t.elements, w["elements"].as_u64().unwrap(), "{}", what("elements"));
    assert_eq!(
        serde_json::to_value(&t.max_abs_err_index).unwrap(),
        w["max_abs_err_index"],
        "{}",
        what("max_abs_err_index")
    );
    for (field, got) in [
        ("max_abs_err", Some(t.max_abs_err)),
        ("a_at_max_abs_err", t.a_at_max_abs_err),
        ("b_at_max_abs_err", t.b_at_max_abs_err),
        ("max_rel_err", t.max_rel_err),
        ("mean_abs_err", Some(t.mean_abs_err)),
        ("rel_l2", t.rel_l2),
        ("cosine", t.cosine),
        ("close_fraction", Some(t.close_fraction)),
        ("rtol", Some(t.rtol)),
        ("atol", Some(t.atol)),
    ] {
        close(&what(field), got, &w[field]);
    }
    // Cosine is near 1 for every realistic pair; check it to 1e-12 absolute as well.
    if let (Some(g), Some(n)) = (t.cosine, w["cosine"].as_f64()) {
        assert!((g - n).abs() <= 1e-12, "{}: falcon {g}, numpy {n}", what("cosine"));
    }
    assert_eq!(t.max_ulp, w["max_ulp"].as_u64(), "{}", what("max_ulp"));
    assert_eq!(t.zero_a_nonzero_b, w["zero_a_nonzero_b"].as_u64().unwrap(), "{}", what("zero_a_nonzero_b"));
    assert_eq!(t.allclose, w["allclose"].as_bool().unwrap(), "{}", what("allclose"));
    for (field, got) in [("nan_a", t.nan_a), ("nan_b", t.nan_b), ("inf_a", t.inf_a), ("inf_b", t.inf_b)] {
        assert_eq!(got, w[field].as_u64().unwrap(), "{}", what(field));
    }
}

fn names(v: &Value) -> Vec<String> {
    let mut n: Vec<String> = v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect();
    n.sort();
    n
}

#[test]
fn tensor_comparison_agrees_with_numpy_on_the_same_files() {
    let expected = expected();
    let cases = expected["cases"].as_array().unwrap();
    assert!(cases.len() >= 10, "expected.json has {} cases", cases.len());
    let mut compared = 0;
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let r = run_case(case, 1);
        let want = case["tensors"].as_array().unwrap();
        assert_eq!(
            r.tensors.len(),
            want.len(),
            "{name}: tensors {:?}",
            r.tensors.iter().map(|t| &t.name).collect::<Vec<_>>()
        );
        for w in want {
            let t = r
                .tensors
                .iter()
                .find(|t| t.name == w["name"].as_str().unwrap())
                .unwrap_or_else(|| panic!("{name}: no {}", w["name"]));
            check_tensor(name, t, w);
            compared += 1;
        }
        let mut only_a = r.only_in_a.clone();
        only_a.sort();
        let mut only_b = r.only_in_b.clone();
        only_b.sort();
        assert_eq!(only_a, names(&case["only_in_a"]), "{name}: only in A");
        assert_eq!(only_b, names(&case["only_in_b"]), "{name}: only in B");
        let mut shapes: Vec<String> = r.shape_mismatches.iter().map(|s| s.name.clone()).collect();
        shapes.sort();
        assert_eq!(shapes, names(&case["shape_mismatches"]), "{name}: shape mismatches");
        assert_eq!(r.failed, want.iter().filter(|w| w["allclose"] == false).count(), "{name}: failed");
        assert_eq!(r.passed + r.failed, r.tensors.len());
        // Worst first: failing tensors, then by relative L2 error, largest first.
        for pair in r.tensors.windows(2) {
            let key = |t: &TensorDiff| (t.allclose, -t.rel_l2.unwrap_or(f64::INFINITY));
            assert!(key(&pair[0]) <= key(&pair[1]), "{name}: {} before {}", pair[0].name, pair[1].name);
        }
        // The same numbers with several threads.
        let mut r4 = run_case(case, 4);
        r4.seconds = r.seconds;
        assert_eq!(r4, r, "{name}: 4 threads");
    }
    assert!(compared >= 30, "compared {compared} tensors");
}

#[test]
fn the_committed_cases_cover_what_they_should() {
    let expected = expected();
    let cases = expected["cases"].as_array().unwrap();
    let all: Vec<&Value> = cases.iter().flat_map(|c| c["tensors"].as_array().unwrap()).collect();
    for dtype in ["f16", "bf16", "f32", "f64", "i64", "i32", "bool"] {
        assert!(all.iter().any(|t| t["dtype"] == dtype), "no {dtype} tensor");
    }
    assert!(all.iter().any(|t| t["allclose"] == true) && all.iter().any(|t| t["allclose"] == false));
    assert!(all.iter().any(|t| t["nan_a"].as_u64() > Some(0) && t["inf_b"].as_u64() > Some(0)));
    assert!(all.iter().any(|t| !t["dtype_b"].is_null()), "no mixed-dtype pair");
    assert!(all.iter().any(|t| t["rel_l2"].is_null()), "no tensor with ‖a‖ = 0");
}

#[test]
fn directory_report_explains_the_bfloat16_void_and_unused_map_lines() {
    let dir = data_dir();
    let r = compare_dumps(
        &dir.join("dir_a"),
        &dir.join("dir_b"),
        &TensorOptions { map: Some(dir.join("dir_map.txt")), ..Default::default() },
    )
    .unwrap();
    assert!(r.notes.iter().any(|n| n.contains("map line 3") && n.contains("not_in_a")), "{:?}", r.notes);
    assert!(r.mismatched());
    assert_eq!(
        r.bytes_compared,
        r.tensors
            .iter()
            .map(|t| t.elements * (elem_size(&t.dtype) + elem_size(t.dtype_b.as_ref().unwrap_or(&t.dtype))))
            .sum::<u64>()
    );
    // The bf16 pair is committed with the other fixtures: its absence is a failure, not a skip.
    for name in ["bf16_a.npy", "bf16_b.npy"] {
        assert!(dir.join(name).is_file(), "{} is committed with the tests", dir.join(name).display());
    }
    let r = compare_dumps(&dir.join("bf16_a.npy"), &dir.join("bf16_b.npy"), &TensorOptions::default()).unwrap();
    assert!(r.notes.iter().any(|n| n.contains("bfloat16")), "{:?}", r.notes);
}

fn elem_size(dtype: &str) -> u64 {
    match dtype {
        "bool" | "u8" | "i8" => 1,
        "f16" | "bf16" | "i16" | "u16" => 2,
        "f32" | "i32" | "u32" => 4,
        _ => 8,
    }
}

// ---------------------------------------------------------------------------------------------------------
// Multi-chunk tensors, written here

fn npy(descr: &str, shape: &[usize], fortran: bool, data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let mut dict = format!(
        "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
        if fortran { "True" } else { "False" }
    );
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((dict.len() as u16).to_le_bytes());
    out.extend(dict.as_bytes());
    out.extend(data);
    out
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A deterministic pseudo-random sequence in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

#[test]
fn multi_chunk_tensors_give_the_same_numbers_on_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let n = 700_001; // three chunks and a bit
    let a = values(n, 1);
    let mut b: Vec<f32> = a.iter().zip(values(n, 2)).map(|(x, e)| x + e * 1e-6).collect();
    b[654_321] += 0.5;
    let (pa, pb) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&pa).unwrap();
    std::fs::create_dir_all(&pb).unwrap();
    std::fs::write(pa.join("big.npy"), npy("<f4", &[n], false, &f32_bytes(&a))).unwrap();
    std::fs::write(pb.join("big.npy"), npy("<f4", &[n], false, &f32_bytes(&b))).unwrap();
    // A small second pair (one chunk), passing.
    let small = values(1000, 3);
    std::fs::write(pa.join("small.npy"), npy("<f4", &[10, 100], false, &f32_bytes(&small))).unwrap();
    std::fs::write(pb.join("small.npy"), npy("<f4", &[10, 100], false, &f32_bytes(&small))).unwrap();

    let one = compare_dumps(&pa, &pb, &TensorOptions { threads: Some(1), ..Default::default() }).unwrap();
    for threads in [2, 3, 8] {
        let mut r = compare_dumps(&pa, &pb, &TensorOptions { threads: Some(threads), ..Default::default() }).unwrap();
        r.seconds = one.seconds;
        assert_eq!(r, one, "{threads} threads");
    }
    let big = one.tensors.iter().find(|t| t.name == "big").unwrap();
    assert_eq!(big.max_abs_err_index, Some(vec![654_321]));
    assert!(!big.allclose);
    assert_eq!(big.close_fraction, (n - 1) as f64 / n as f64);
    // Direct sums in f64 for the relative L2 error.
    let (mut d2, mut a2) = (0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(&b) {
        let d = f64::from(*y) - f64::from(*x);
        d2 += d * d;
        a2 += f64::from(*x) * f64::from(*x);
    }
    let want = (d2 / a2).sqrt();
    assert!((big.rel_l2.unwrap() - want).abs() <= 1e-9 * want, "{:?} vs {want}", big.rel_l2);
    let small = one.tensors.iter().find(|t| t.name == "small").unwrap();
    assert!(small.allclose && small.max_abs_err == 0.0 && small.max_ulp == Some(0));
    assert_eq!(one.tensors[0].name, "big", "failing first");
    assert_eq!(one.bytes_compared, 2 * 4 * (n as u64 + 1000));
}

#[test]
fn deflated_npz_members_and_mixed_memory_orders_compare_through_memory() {
    let dir = tempfile::tempdir().unwrap();
    let n = 300_000;
    let a = values(n, 5);
    // B: the same values as a (600, 500) array in Fortran order, plus one changed element at [7, 9].
    let (rows, cols) = (600, 500);
    let mut bf = vec![0f32; n];
    for i in 0..rows {
        for j in 0..cols {
            bf[i + j * rows] = a[i * cols + j];
        }
    }
    bf[7 + 9 * rows] += 1.0;
    let pa = dir.path().join("a.npz");
    let pb = dir.path().join("b.npz");
    for (path, name, bytes, method) in [
        (&pa, "t.npy", npy("<f4", &[rows, cols], false, &f32_bytes(&a)), zip::CompressionMethod::Stored),
        (&pb, "t.npy", npy("<f4", &[rows, cols], true, &f32_bytes(&bf)), zip::CompressionMethod::Deflated),
    ] {
        let mut z = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
        z.start_file(name, zip::write::SimpleFileOptions::default().compression_method(method)).unwrap();
        z.write_all(&bytes).unwrap();
        z.finish().unwrap();
    }
    let r = compare_dumps(&pa, &pb, &TensorOptions { threads: Some(3), ..Default::default() }).unwrap();
    let t = &r.tensors[0];
    assert_eq!(t.max_abs_err_index, Some(vec![7, 9]));
    assert_eq!(t.max_abs_err, 1.0);
    assert_eq!(t.close_fraction, (n - 1) as f64 / n as f64);
}

// ---------------------------------------------------------------------------------------------------------
// Malformed input

fn invalid(result: Result<TensorReport, AnalysisError>, file: &Path, reason: &str) {
    match result {
        Err(AnalysisError::Invalid(m)) => {
            assert!(m.contains(&file.display().to_string()), "message does not name the file: {m}");
            assert!(m.contains(reason), "message {m:?} does not say {reason:?}");
        }
        other => panic!("expected Invalid({reason}) for {}, got {other:?}", file.display()),
    }
}

#[test]
fn malformed_dumps_are_refused_with_the_file_and_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.npy");
    std::fs::write(&good, npy("<f4", &[4], false, &f32_bytes(&[1.0, 2.0, 3.0, 4.0]))).unwrap();
    let valid = std::fs::read(&good).unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated.npy", valid[..valid.len() - 3].to_vec(), "truncated data"),
        (
            "header_len.npy",
            {
                let mut v = valid.clone();
                v[8..10].copy_from_slice(&4000u16.to_le_bytes());
                v
            },
            "runs past the end",
        ),
        ("magic.npy", b"NOTNUMPY at all".to_vec(), "not a .npy file"),
        ("short.npy", b"\x93NUM".to_vec(), "truncated"),
        (
            "dict.npy",
            npy("<f4", &[4], false, &[]).iter().map(|&c| if c == b':' { b';' } else { c }).collect(),
            "bad header dict",
        ),
        ("complex.npy", npy("<c8", &[1], false, &[0; 8]), "not supported"),
        (
            "version.npy",
            {
                let mut v = valid.clone();
                v[6] = 9;
                v
            },
            "version 9",
        ),
        ("garbage.npz", b"PK\x03\x04 this is not a zip".to_vec(), "not a readable .npz"),
        ("garbage.safetensors", b"\xff\xff\xff\xff\xff\xff\xff\x7f{}".to_vec(), "over the"),
        (
            "past.safetensors",
            {
                let mut v = 64u64.to_le_bytes().to_vec();
                v.extend(b"{}");
                v
            },
            "runs past the end",
        ),
        (
            "json.safetensors",
            {
                let mut v = 4u64.to_le_bytes().to_vec();
                v.extend(b"{x: ");
                v
            },
            "bad safetensors header",
        ),
        (
            "short_data.safetensors",
            {
                let h = br#"{"t":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#;
                let mut v = (h.len() as u64).to_le_bytes().to_vec();
                v.extend(h);
                v.extend([0u8; 12]);
                v
            },
            "the file has 12",
        ),
        (
            "f8.safetensors",
            {
                let h = br#"{"t":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[0,4]}}"#;
                let mut v = (h.len() as u64).to_le_bytes().to_vec();
                v.extend(h);
                v.extend([0u8; 4]);
                v
            },
            "not supported",
        ),
        ("unknown.bin", b"hello world".to_vec(), "not a tensor dump"),
    ];
    for (name, bytes, reason) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        invalid(compare_dumps(&good, &path, &TensorOptions::default()), &path, reason);
        invalid(compare_dumps(&path, &good, &TensorOptions::default()), &path, reason);
    }

    // A deflated member whose compressed stream is damaged: refused when its data is read.
    let npz = dir.path().join("damaged.npz");
    let big = values(50_000, 9);
    let mut z = zip::ZipWriter::new(std::fs::File::create(&npz).unwrap());
    z.start_file(
        "t.npy",
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated),
    )
    .unwrap();
    z.write_all(&npy("<f4", &[50_000], false, &f32_bytes(&big))).unwrap();
    z.finish().unwrap();
    let mut bytes = std::fs::read(&npz).unwrap();
    for b in &mut bytes[2000..2400] {
        *b ^= 0x5a;
    }
    std::fs::write(&npz, &bytes).unwrap();
    let a = dir.path().join("t_dir");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::write(a.join("t.npy"), npy("<f4", &[50_000], false, &f32_bytes(&big))).unwrap();
    invalid(compare_dumps(&a, &npz, &TensorOptions::default()), &npz, "t.npy");
}

#[test]
fn missing_inputs_are_not_found_and_bad_options_are_invalid() {
    let dir = data_dir();
    let missing = dir.join("no_such_dump.npz");
    match compare_dumps(&dir.join("f16_a.npy"), &missing, &TensorOptions::default()) {
        Err(e @ AnalysisError::NotFound(_)) => assert!(e.to_string().contains("dump B not found"), "{e}"),
        other => panic!("{other:?}"),
    }
    match compare_dumps(&missing, &dir.join("f16_a.npy"), &TensorOptions::default()) {
        Err(e @ AnalysisError::NotFound(_)) => assert!(e.to_string().contains("dump A not found"), "{e}"),
        other => panic!("{other:?}"),
    }
    let opts = TensorOptions { map: Some(dir.join("no_such_map.txt")), ..Default::default() };
    assert!(matches!(compare_dumps(&dir.join("dir_a"), &dir.join("dir_b"), &opts), Err(AnalysisError::NotFound(_))));

    let tmp = tempfile::tempdir().unwrap();
    let map = tmp.path().join("map.txt");
    std::fs::write(&map, "# ok\nembed embed\nthree names here\n").unwrap();
    let opts = TensorOptions { map: Some(map.clone()), ..Default::default() };
    match compare_dumps(&dir.join("dir_a"), &dir.join("dir_b"), &opts) {
        Err(AnalysisError::Invalid(m)) => assert!(m.contains(&format!("{}:3:", map.display())), "{m}"),
        other => panic!("{other:?}"),
    }
    let opts = TensorOptions { rtol: Some(-1.0), ..Default::default() };
    assert!(matches!(
        compare_dumps(&dir.join("f16_a.npy"), &dir.join("f16_b.npy"), &opts),
        Err(AnalysisError::Invalid(_))
    ));
}

// ---------------------------------------------------------------------------------------------------------
// Never a panic

/// Compares `bytes` (as a file named `name`) against a valid dump of the same kind, both ways; the result
/// may be a report or an error, but nothing panics.
fn compare_arbitrary(name: &str, bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    let ext = Path::new(name).extension().unwrap().to_str().unwrap();
    let good = data_dir().join(match ext {
        "npy" => "f32_pass_a.npy",
        "npz" => "stored_a.npz",
        _ => "a.safetensors",
    });
    let opts = TensorOptions { threads: Some(2), ..Default::default() };
    let _ = compare_dumps(&good, &path, &opts);
    let _ = compare_dumps(&path, &good, &opts);
    let _ = compare_dumps(&path, &path, &opts);
}

fn valid_bytes() -> Vec<(&'static str, Vec<u8>)> {
    let d = data_dir();
    vec![
        ("x.npy", std::fs::read(d.join("f32_pass_b.npy")).unwrap()),
        ("x.npy", std::fs::read(d.join("le_f_b.npy")).unwrap()),
        ("x.npz", std::fs::read(d.join("stored_a.npz")).unwrap()),
        ("x.npz", std::fs::read(d.join("deflated_b.npz")).unwrap()),
        ("x.safetensors", std::fs::read(d.join("b.safetensors")).unwrap()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600), kind in 0usize..3) {
        let name = ["r.npy", "r.npz", "r.safetensors"][kind];
        compare_arbitrary(name, &bytes);
        // With the right magic, so parsing goes further.
        let mut with_magic = match kind {
            0 => b"\x93NUMPY\x01\x00".to_vec(),
            1 => b"PK\x03\x04".to_vec(),
            _ => (bytes.len() as u64 / 2).to_le_bytes().to_vec(),
        };
        with_magic.extend(&bytes);
        compare_arbitrary(name, &with_magic);
    }

    #[test]
    fn mutated_files_never_panic(
        which in 0usize..5,
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let (name, mut bytes) = valid_bytes().swap_remove(which);
        for (at, v) in edits {
            let i = at.index(bytes.len());
            bytes[i] = v;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        compare_arbitrary(name, &bytes);
    }
}
