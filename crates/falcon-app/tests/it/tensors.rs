//! `accuracy tensors A B` in process (`App::compare_tensors` and the renderers `falcon accuracy tensors` prints):
//! the committed dumps of falcon-analysis (tests/data/tensors) — formats, the top rows shown, tolerances, what
//! counts as a mismatch (what `--fail-on-mismatch` fails on) and the kinds (so the exit codes) of missing and
//! corrupt input.

use super::harness::message;
use falcon_app::accuracy::{tensor_mismatch_reason, TensorOptions, TensorReport};
use falcon_app::render::{html, tensors};
use falcon_app::{App, Result};
use std::path::{Path, PathBuf};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-analysis/tests/data/tensors").canonicalize().unwrap()
}

/// The rows of the text formats when `--top` is not given.
const TOP: usize = 20;

/// `accuracy tensors A B` with `options`.
async fn compare(app: &App, a: &Path, b: &Path, options: &TensorOptions) -> Result<TensorReport> {
    app.compare_tensors(a, b, options).await
}

/// The options of `--map FILE`.
fn mapped(map: &Path) -> TensorOptions {
    TensorOptions { map: Some(map.to_path_buf()), ..TensorOptions::default() }
}

/// The options of `--rtol R --atol A`.
fn tolerances(rtol: f64, atol: f64) -> TensorOptions {
    TensorOptions { rtol: Some(rtol), atol: Some(atol), ..TensorOptions::default() }
}

/// The table names the mapping, the tensors on one side only and the map's unused line, worst rows first; the
/// top rows asked for, then how many more.
#[tokio::test]
async fn table_output_lists_the_worst_tensors_first() {
    let h = super::harness::app().await;
    let d = data();
    let (a, b, map) = (d.join("dir_a"), d.join("dir_b"), d.join("dir_map.txt"));
    let r = compare(&h.app, &a, &b, &mapped(&map)).await.unwrap();
    let text = tensors::render_table(&r, TOP);
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

    let text = tensors::render_table(&r, 2);
    assert!(text.contains("Tensors (2 of 8, worst first)") && text.contains("… 6 more"), "{text}");
}

/// The JSON is the report struct: every tensor, the failing count, failing first, each row's tolerances.
#[tokio::test]
async fn json_is_the_report_struct() {
    let h = super::harness::app().await;
    let d = data();
    let report =
        compare(&h.app, &d.join("a.safetensors"), &d.join("b.safetensors"), &TensorOptions::default()).await.unwrap();
    let v = serde_json::to_value(&report).unwrap();
    let r: TensorReport = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(r, report);
    assert_eq!(r.tensors.len(), 6);
    assert_eq!(r.failed, r.tensors.iter().filter(|t| !t.allclose).count());
    assert!(!r.tensors[0].allclose, "failing first");
    assert!(v["tensors"][0]["rtol"].as_f64().is_some());
}

/// Markdown is a section with the tensor table; HTML a self-contained page titled with both dumps.
#[tokio::test]
async fn markdown_and_html() {
    let h = super::harness::app().await;
    let d = data();
    let (a, b) = (d.join("stored_a.npz"), d.join("deflated_b.npz"));
    let r = compare(&h.app, &a, &b, &TensorOptions::default()).await.unwrap();
    let md = tensors::render_md(&r, TOP);
    assert!(md.starts_with("## Tensor comparison"), "{md}");
    assert!(md.contains("| tensor ") && md.contains("| x "), "{md}");
    // The page `--format html` prints.
    let page =
        html::render_page(&format!("Tensor comparison: {} → {}", r.a, r.b), &[tensors::render_html_section(&r, TOP)]);
    assert!(
        page.starts_with("<!DOCTYPE html>") && page.contains("Tensor comparison") && page.contains("<table>"),
        "{page}"
    );
    assert!(!page.contains("<script"), "self-contained, no scripts");
}

/// A tensor failing allclose is a mismatch, saying which; wider tolerances pass it and the table says which
/// ones it used; a shape mismatch alone is a mismatch too.
#[tokio::test]
async fn fail_on_mismatch_exits_5_and_tolerances_can_be_widened() {
    let h = super::harness::app().await;
    let d = data();
    let (a, pass, fail) = (d.join("f32_pass_a.npy"), d.join("f32_pass_b.npy"), d.join("f32_fail_b.npy"));
    let r = compare(&h.app, &a, &pass, &TensorOptions::default()).await.unwrap();
    assert!(!r.mismatched(), "{r:?}");
    let r = compare(&h.app, &a, &fail, &TensorOptions::default()).await.unwrap();
    assert!(r.mismatched(), "{r:?}");
    let why = tensor_mismatch_reason(&r);
    assert!(why.contains("1 of 1 tensors fail allclose (f32_fail_b)"), "{why}");
    let r = compare(&h.app, &a, &fail, &tolerances(1e-2, 1e-3)).await.unwrap();
    assert!(!r.mismatched(), "{r:?}");
    let text = tensors::render_table(&r, TOP);
    assert!(text.contains("rtol 0.01, atol 0.001"), "{text}");
    // A shape mismatch alone is a mismatch too.
    let r = compare(&h.app, &d.join("dir_a"), &d.join("dir_b"), &tolerances(1.0, 1.0)).await.unwrap();
    assert!(r.mismatched(), "{r:?}");
    let why = tensor_mismatch_reason(&r);
    assert!(why.contains("1 shape mismatch"), "{why}");
}

/// A missing dump or mapping file is not found (exit 3), naming which dump; a corrupt `.npy` and a bad map line
/// are failures (exit 1) naming the file (and line).
#[tokio::test]
async fn missing_input_exits_3_and_corrupt_input_exits_1() {
    let h = super::harness::app().await;
    let tmp = tempfile::tempdir().unwrap();
    let d = data();
    let a = d.join("f16_a.npy");
    let err = compare(&h.app, &a, Path::new("missing.npz"), &TensorOptions::default()).await.unwrap_err();
    assert_eq!(err.kind().exit_code(), 3, "{}", message(&err));
    assert!(message(&err).contains("tensor dump B not found: missing.npz"), "{}", message(&err));
    let err = compare(&h.app, Path::new("missing.npy"), &a, &TensorOptions::default()).await.unwrap_err();
    assert_eq!(err.kind().exit_code(), 3, "{}", message(&err));
    assert_eq!(err.kind().code(), "not_found");

    let bad = tmp.path().join("bad.npy");
    std::fs::write(&bad, b"\x93NUMPY\x01\x00\xff\x00{'descr'").unwrap();
    let err = compare(&h.app, &a, &bad, &TensorOptions::default()).await.unwrap_err();
    assert_eq!(err.kind().exit_code(), 1, "{}", message(&err));
    assert!(message(&err).contains("bad.npy: header length 255 runs past the end"), "{}", message(&err));

    let map = tmp.path().join("map.txt");
    std::fs::write(&map, "ok ok\n\none two three\n").unwrap();
    let err = compare(&h.app, &d.join("dir_a"), &d.join("dir_b"), &mapped(&map)).await.unwrap_err();
    assert_eq!(err.kind().exit_code(), 1, "{}", message(&err));
    assert!(message(&err).contains("map.txt:3:"), "{}", message(&err));
    let err =
        compare(&h.app, &d.join("dir_a"), &d.join("dir_b"), &mapped(&tmp.path().join("nope.txt"))).await.unwrap_err();
    assert_eq!(err.kind().exit_code(), 3, "{}", message(&err));
}
