//! `falcon accuracy tensors`: the committed dumps of falcon-analysis (tests/data/tensors) through the binary —
//! formats, --top, tolerances, --fail-on-mismatch, and the exit codes of missing and corrupt input.

use crate::common::{code, falcon, json};
use std::path::{Path, PathBuf};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-analysis/tests/data/tensors").canonicalize().unwrap()
}

fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn table_output_lists_the_worst_tensors_first() {
    let tmp = tempfile::tempdir().unwrap();
    let d = data();
    let (a, b, map) = (d.join("dir_a"), d.join("dir_b"), d.join("dir_map.txt"));
    let out = falcon(tmp.path(), &["accuracy", "tensors", arg(&a), arg(&b), "--map", arg(&map)]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("MISMATCH: 8 compared, 5 pass, 3 fail · 1 shape mismatch · 1 only in A · 1 only in B"),
        "{text}"
    );
    assert!(text.contains("layer0/attn/q → l0/q"), "{text}");
    assert!(text.contains("Only in A (1)") && text.contains("only_a") && text.contains("only_b"), "{text}");
    assert!(text.contains("map line 3"), "{text}");
    // Failing rows come before passing ones.
    let last_fail = text.rfind("┆ FAIL").unwrap();
    let first_pass = text.find("┆ pass").unwrap();
    assert!(last_fail < first_pass, "{text}");

    let out = falcon(tmp.path(), &["accuracy", "tensors", arg(&a), arg(&b), "--map", arg(&map), "--top", "2"]);
    let text = stdout(&out);
    assert!(text.contains("Tensors (2 of 8, worst first)") && text.contains("… 6 more"), "{text}");
}

#[test]
fn json_is_the_report_struct() {
    let tmp = tempfile::tempdir().unwrap();
    let d = data();
    let out = falcon(
        tmp.path(),
        &["--json", "accuracy", "tensors", arg(&d.join("a.safetensors")), arg(&d.join("b.safetensors"))],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v = json(&out);
    let r: falcon_app::accuracy::TensorReport = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(r.tensors.len(), 6);
    assert_eq!(r.failed, r.tensors.iter().filter(|t| !t.allclose).count());
    assert!(!r.tensors[0].allclose, "failing first");
    assert!(v["tensors"][0]["rtol"].as_f64().is_some());
    // --format json is the same document.
    let out2 = falcon(
        tmp.path(),
        &["accuracy", "tensors", arg(&d.join("a.safetensors")), arg(&d.join("b.safetensors")), "--format", "json"],
    );
    let mut v2 = json(&out2);
    v2["seconds"] = v["seconds"].clone();
    assert_eq!(v2, v);
}

#[test]
fn markdown_and_html() {
    let tmp = tempfile::tempdir().unwrap();
    let d = data();
    let (a, b) = (d.join("stored_a.npz"), d.join("deflated_b.npz"));
    let md = stdout(&falcon(tmp.path(), &["accuracy", "tensors", arg(&a), arg(&b), "--format", "md"]));
    assert!(md.starts_with("## Tensor comparison"), "{md}");
    assert!(md.contains("| tensor ") && md.contains("| x "), "{md}");
    let out = falcon(tmp.path(), &["accuracy", "tensors", arg(&a), arg(&b), "--format", "html"]);
    assert_eq!(code(&out), 0);
    let page = stdout(&out);
    assert!(
        page.starts_with("<!DOCTYPE html>") && page.contains("Tensor comparison") && page.contains("<table>"),
        "{page}"
    );
    assert!(!page.contains("<script"), "self-contained, no scripts");
}

#[test]
fn fail_on_mismatch_exits_5_and_tolerances_can_be_widened() {
    let tmp = tempfile::tempdir().unwrap();
    let d = data();
    let (a, pass, fail) = (d.join("f32_pass_a.npy"), d.join("f32_pass_b.npy"), d.join("f32_fail_b.npy"));
    let out = falcon(tmp.path(), &["accuracy", "tensors", arg(&a), arg(&pass), "--fail-on-mismatch"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = falcon(tmp.path(), &["accuracy", "tensors", arg(&a), arg(&fail), "--fail-on-mismatch"]);
    assert_eq!(code(&out), 5);
    assert!(stderr(&out).contains("mismatch: 1 of 1 tensors fail allclose (f32_fail_b)"), "{}", stderr(&out));
    // Without the flag the report is printed and the exit is 0.
    assert_eq!(code(&falcon(tmp.path(), &["accuracy", "tensors", arg(&a), arg(&fail)])), 0);
    let out = falcon(
        tmp.path(),
        &["accuracy", "tensors", arg(&a), arg(&fail), "--rtol", "1e-2", "--atol", "1e-3", "--fail-on-mismatch"],
    );
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert!(stdout(&out).contains("rtol 1e-2, atol 1e-3"), "{}", stdout(&out));
    // A shape mismatch alone is a mismatch too.
    let out = falcon(
        tmp.path(),
        &[
            "accuracy",
            "tensors",
            arg(&d.join("dir_a")),
            arg(&d.join("dir_b")),
            "--fail-on-mismatch",
            "--rtol",
            "1",
            "--atol",
            "1",
        ],
    );
    assert_eq!(code(&out), 5);
    assert!(stderr(&out).contains("1 shape mismatch"), "{}", stderr(&out));
}

#[test]
fn missing_input_exits_3_and_corrupt_input_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let d = data();
    let a = d.join("f16_a.npy");
    let out = falcon(tmp.path(), &["accuracy", "tensors", arg(&a), "missing.npz"]);
    assert_eq!(code(&out), 3);
    assert!(stderr(&out).contains("tensor dump B not found: missing.npz"), "{}", stderr(&out));
    let out = falcon(tmp.path(), &["--json", "accuracy", "tensors", "missing.npy", arg(&a)]);
    assert_eq!(code(&out), 3);
    assert_eq!(json(&out)["error"]["code"], "not_found");

    let bad = tmp.path().join("bad.npy");
    std::fs::write(&bad, b"\x93NUMPY\x01\x00\xff\x00{'descr'").unwrap();
    let out = falcon(tmp.path(), &["accuracy", "tensors", arg(&a), "bad.npy"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("bad.npy: header length 255 runs past the end"), "{}", stderr(&out));

    let map = tmp.path().join("map.txt");
    std::fs::write(&map, "ok ok\n\none two three\n").unwrap();
    let out =
        falcon(tmp.path(), &["accuracy", "tensors", arg(&d.join("dir_a")), arg(&d.join("dir_b")), "--map", "map.txt"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("map.txt:3:"), "{}", stderr(&out));
    let out =
        falcon(tmp.path(), &["accuracy", "tensors", arg(&d.join("dir_a")), arg(&d.join("dir_b")), "--map", "nope.txt"]);
    assert_eq!(code(&out), 3);
}
