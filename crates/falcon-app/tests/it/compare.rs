//! `profile compare A B` in process, on real captures: a capture against itself is all zeros, batch 8 against
//! batch 16 is a regression with per-op deltas that add up, the Markdown report carries the JSON's numbers, and
//! bad inputs fail with the error kind (hence the exit code) docs/DESIGN.md §6 gives them. The use case is
//! [`falcon_app::App::compare_profiles`], the document [`falcon_app::render::profile_compare`], as the CLI calls
//! them; the flags, exit codes and stderr of the binary stay in falcon-cli's `compare_cli`.

use super::harness::message;
use falcon_app::profiles::ProfileCompareResult;
use falcon_app::render::numbers::{relative_percent, TimeUnit};
use falcon_app::render::{profile_compare, Format};
use falcon_app::requests::{ProfileCompareRequest, DEFAULT_TOP};
use falcon_app::App;
use falcon_core::ErrorKind;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn compare_data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../falcon-analysis/tests/data/compare")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

fn capture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-xplane/tests/data").join(name).to_str().unwrap().to_string()
}

/// `profile compare A B --top N` as the CLI runs it: the request checked into options, then the use case.
async fn compare(app: &App, a: &str, b: &str, top: u32) -> falcon_app::Result<ProfileCompareResult> {
    let request = ProfileCompareRequest { a: a.to_string(), b: b.to_string(), host: None, top };
    let options = request.options()?;
    app.compare_profiles(a, b, None, &options).await
}

/// The JSON document `--json` prints.
fn json(result: &ProfileCompareResult) -> Value {
    profile_compare::json(result).unwrap()
}

/// The document in `format` with `top` rows per ranked table, as the CLI prints it.
fn render(result: &ProfileCompareResult, format: Format, top: u32) -> String {
    let text = profile_compare::render(result, format, top as usize).unwrap();
    text.trim_end_matches('\n').to_string()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Every op and category delta is zero and nothing was added or removed.
fn assert_all_zero(c: &Value) {
    let ops = c["ops"].as_array().unwrap();
    assert!(!ops.is_empty());
    for o in ops {
        assert_eq!(f(&o["delta_us"]), 0.0, "{o}");
        assert_eq!(o["delta_ps"], 0, "{o}");
        assert_eq!(o["status"], "matched", "{o}");
    }
    for k in c["categories"].as_array().unwrap() {
        assert_eq!(f(&k["delta_us"]), 0.0, "{k}");
    }
    assert_eq!(c["matching"]["added"], 0);
    assert_eq!(c["matching"]["removed"], 0);
    assert_eq!(f(&c["totals"]["op_time"]["delta_us"]), 0.0);
}

/// Files whose names end in `.tmp` in `dir`: what an interrupted atomic write would leave.
fn leftovers(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect()
}

/// Writes a rendered report into `path` as `-o FILE` does: the target checked, then written atomically with
/// one final newline.
fn write_report(path: &Path, text: &str, force: bool) -> falcon_app::Result<()> {
    falcon_app::files::check_output_target(path, force)?;
    falcon_app::files::write_atomically(path, format!("{}\n", text.trim_end_matches('\n')))
}

#[tokio::test]
async fn a_run_dir_against_itself_is_all_zero_and_the_same() {
    let h = super::harness::app().await;
    let a = compare_data("batch8");
    let result = compare(&h.app, &a, &a, DEFAULT_TOP).await.unwrap();
    assert!(!result.comparison.regressed(), "--fail-on-regression passes");
    let c = json(&result);
    assert_all_zero(&c);
    assert_eq!(c["step_time"]["verdict"], "same", "{}", c["step_time"]);
    assert_eq!(c["op_source"], "xla_cpu");
    assert!(c["regressions"].as_array().unwrap().is_empty());
    assert!(c["improvements"].as_array().unwrap().is_empty());
    assert!(c.get("config_diff").is_none(), "paths are not experiments");
}

#[tokio::test]
async fn batch8_against_batch16_regresses_with_deltas_that_add_up() {
    let h = super::harness::app().await;
    let (a, b) = (compare_data("batch8"), compare_data("batch16"));
    let result = compare(&h.app, &a, &b, DEFAULT_TOP).await.unwrap();
    let c = json(&result);

    let v = &c["step_time"];
    assert_eq!(v["metric"], "step_time_s");
    assert_eq!(v["direction"], "lower_is_better");
    for key in ["a", "b", "delta_rel", "ci_low_rel", "ci_high_rel", "p_value"] {
        assert!(v.get(key).is_some(), "step_time.{key} missing: {v}");
    }
    assert_eq!(v["a"]["n"], 8);
    assert_eq!(v["b"]["n"], 8);
    assert_eq!(v["verdict"], "regressed", "{v}");
    let ratio = f(&v["b"]["median"]) / f(&v["a"]["median"]);
    assert!((2.0..4.0).contains(&ratio), "double the batch, about 2.9x the step time: {ratio}");

    for key in ["a", "b", "delta"] {
        assert!(c["mfu"].get(key).is_some(), "mfu.{key} missing: {}", c["mfu"]);
    }
    let ops = c["ops"].as_array().unwrap();
    assert!(ops.len() > 100);
    for o in ops {
        for key in [
            "name",
            "category",
            "status",
            "a_self_time_us",
            "b_self_time_us",
            "delta_us",
            "delta_rel",
            "a_bound_by",
            "b_bound_by",
        ] {
            assert!(o.get(key).is_some(), "ops[].{key} missing: {o}");
        }
        assert!(["matched", "added", "removed"].contains(&o["status"].as_str().unwrap()), "{o}");
        let d = f(&o["b_self_time_us"]) - f(&o["a_self_time_us"]);
        assert!((f(&o["delta_us"]) - d).abs() <= 1e-6 * d.abs().max(1.0), "{o}");
    }
    let statuses = |s: &str| ops.iter().filter(|o| o["status"] == s).count() as u64;
    assert_eq!(c["matching"]["added"], statuses("added"));
    assert_eq!(c["matching"]["removed"], statuses("removed"));
    assert_eq!(c["matching"]["matched"], statuses("matched"));
    for k in c["categories"].as_array().unwrap() {
        for key in ["category", "a_self_time_us", "b_self_time_us", "delta_us"] {
            assert!(k.get(key).is_some(), "categories[].{key} missing: {k}");
        }
    }
    // The capture's HLO costs each op: the matched matmuls do twice the FLOPs at twice the batch.
    let dots: Vec<f64> = ops
        .iter()
        .filter(|o| o["status"] == "matched" && o["category"] == "dot")
        .map(|o| o["flops_ratio"].as_f64().unwrap_or_else(|| panic!("{o}")))
        .collect();
    assert!(!dots.is_empty() && dots.iter().all(|r| (r - 2.0).abs() < 1e-9), "{dots:?}");

    let sum: f64 = ops.iter().map(|o| f(&o["delta_us"])).sum();
    let total = f(&c["totals"]["op_time"]["delta_us"]);
    assert!(total > 0.0);
    assert!((sum - total).abs() <= 1e-6 * total.abs(), "Σ ops[].delta_us {sum} vs totals.op_time.delta_us {total}");
    let cat_sum: f64 = c["categories"].as_array().unwrap().iter().map(|k| f(&k["delta_us"])).sum();
    assert!((cat_sum - total).abs() <= 1e-6 * total.abs(), "Σ categories[].delta_us {cat_sum} vs {total}");
    let exact: i64 = ops.iter().map(|o| o["delta_ps"].as_i64().unwrap()).sum();
    assert_eq!(exact, c["totals"]["op_time"]["delta_ps"].as_i64().unwrap(), "picoseconds add up exactly");

    // What --fail-on-regression acts on: B regressed, with a reason to give; the table has its step time.
    assert!(result.comparison.regressed());
    let reason = profile_compare::regression_reason(&result.comparison);
    assert!(reason.contains("regress"), "{reason}");
    assert!(render(&result, Format::Table, DEFAULT_TOP).contains("Step time"), "the table that is printed");
    // Reversed, B is faster: not a regression.
    let reversed = compare(&h.app, &b, &a, DEFAULT_TOP).await.unwrap();
    assert!(!reversed.comparison.regressed());
    assert_eq!(json(&reversed)["step_time"]["verdict"], "improved");
}

/// The first table under the Markdown heading that starts with `heading`: its header, then its rows, as trimmed
/// cells.
fn md_table_with_header(md: &str, heading: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let start = md.lines().position(|l| l.starts_with('#') && l.trim_start_matches('#').trim().starts_with(heading));
    let start = start.unwrap_or_else(|| panic!("no heading `{heading}` in:\n{md}"));
    let lines: Vec<&str> =
        md.lines().skip(start + 1).skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|')).collect();
    assert!(lines.len() >= 2, "no table under `{heading}`");
    let cells = |l: &&str| -> Vec<String> {
        let inner = l.trim().trim_start_matches('|').trim_end_matches('|');
        inner.split(" | ").map(|c| c.trim().trim_matches('|').trim().to_string()).collect()
    };
    (cells(&lines[0]), lines.iter().skip(2).map(cells).collect()) // header, separator, rows
}

/// The rows of the first table under the Markdown heading that starts with `heading`, as trimmed cells.
fn md_table(md: &str, heading: &str) -> Vec<Vec<String>> {
    md_table_with_header(md, heading).1
}

/// The time unit a header cell (or a row label) names last: `A ms`, `op time µs`.
fn unit(cell: &str) -> TimeUnit {
    match cell.split_whitespace().last() {
        Some("ns") => TimeUnit::Ns,
        Some("µs") => TimeUnit::Us,
        Some("ms") => TimeUnit::Ms,
        Some("s") => TimeUnit::S,
        Some("h") => TimeUnit::H,
        _ => panic!("no time unit in `{cell}`"),
    }
}

/// A JSON time in µs as a cell of a column in `unit`.
fn us(unit: TimeUnit, v: &Value) -> String {
    unit.fmt(f(v))
}

/// A JSON change in µs as a cell of a column in `unit`.
fn dus(unit: TimeUnit, v: &Value) -> String {
    unit.fmt_signed(f(v))
}

fn pct(v: &Value) -> String {
    relative_percent(v.as_f64())
}

fn unquote(s: &str) -> &str {
    s.trim_matches('`')
}

#[tokio::test]
async fn markdown_carries_the_numbers_of_the_json() {
    let h = super::harness::app().await;
    let (a, b) = (compare_data("batch8"), compare_data("batch16"));
    let result = compare(&h.app, &a, &b, 7).await.unwrap();
    let c = json(&result);
    let md = render(&result, Format::Md, 7);
    assert!(md.starts_with("# Profile comparison"), "level-1 title: {md}");

    let (header, steps) = md_table_with_header(&md, "Step time");
    assert_eq!(steps.len(), 2);
    let step_unit = unit(&header[2]);
    assert_eq!(unit(&header[3]), step_unit, "one unit for the table: {header:?}");
    for (row, side) in steps.iter().zip(["a", "b"]) {
        let s = &c["step_time"][side];
        assert_eq!(row[1], s["n"].to_string());
        assert_eq!(row[2], step_unit.fmt(f(&s["median"]) * 1e6), "{side} median");
        assert_eq!(row[3], step_unit.fmt(f(&s["mean"]) * 1e6), "{side} mean");
    }
    assert!(md.contains(&format!("Δ median {}", pct(&c["step_time"]["delta_rel"]))), "{md}");
    assert!(md.contains("**regressed**"));

    let totals = md_table(&md, "MFU and totals");
    let op_time = totals.iter().find(|r| r[0].starts_with("op time ")).unwrap();
    let (t, u) = (&c["totals"]["op_time"], unit(&op_time[0]));
    assert_eq!(op_time[1..], [us(u, &t["a_us"]), us(u, &t["b_us"]), dus(u, &t["delta_us"]), pct(&t["delta_rel"])]);

    let (header, regressions) = md_table_with_header(&md, "Top regressions");
    let u = unit(&header[3]);
    assert_eq!((unit(&header[4]), unit(&header[5])), (u, u), "A, B and Δ share a unit: {header:?}");
    let expected = c["regressions"].as_array().unwrap();
    assert_eq!(regressions.len(), 7);
    assert_eq!(expected.len(), 7, "--top bounds the ranked list");
    for (row, o) in regressions.iter().zip(expected) {
        let (name, a_name) = match row[0].split_once(" (A: ") {
            Some((n, rest)) => (unquote(n), Some(unquote(rest.trim_end_matches(')')))),
            None => (unquote(&row[0]), None),
        };
        assert_eq!(name, o["name"].as_str().unwrap());
        assert_eq!(a_name, o["a_name"].as_str());
        assert_eq!(row[1], o["category"].as_str().unwrap());
        assert_eq!(row[2], o["status"].as_str().unwrap());
        assert_eq!(
            row[3..7],
            [us(u, &o["a_self_time_us"]), us(u, &o["b_self_time_us"]), dus(u, &o["delta_us"]), pct(&o["delta_rel"])],
            "{o}"
        );
        assert!(f(&o["delta_us"]) > 0.0);
    }
    let (header, improvements) = md_table_with_header(&md, "Top improvements");
    let u = unit(&header[5]);
    for (row, o) in improvements.iter().zip(c["improvements"].as_array().unwrap()) {
        assert_eq!(row[5], dus(u, &o["delta_us"]));
        assert!(f(&o["delta_us"]) < 0.0);
    }

    let (header, categories) = md_table_with_header(&md, "Categories");
    let u = unit(&header[2]);
    let expected = c["categories"].as_array().unwrap();
    assert_eq!(categories.len(), expected.len(), "Markdown lists every category");
    for (row, k) in categories.iter().zip(expected) {
        assert_eq!(row[0], k["category"].as_str().unwrap());
        assert_eq!(
            row[2..6],
            [us(u, &k["a_self_time_us"]), us(u, &k["b_self_time_us"]), dus(u, &k["delta_us"]), pct(&k["delta_rel"])],
            "{k}"
        );
    }
    let m = &c["matching"];
    assert!(md.contains(&format!("matched {} (by name {}", m["matched"], m["by_name"])), "{md}");
}

#[tokio::test]
async fn a_tpu_capture_against_itself_has_zero_deltas_and_a_still_roofline() {
    let h = super::harness::app().await;
    let dir = tempfile::tempdir().unwrap();
    let a = capture("tpu_v6e_inference.xplane.pb");
    let result = compare(&h.app, &a, &a, DEFAULT_TOP).await.unwrap();
    let c = json(&result);
    assert_all_zero(&c);
    assert_eq!(c["op_source"], "device");
    let roofline = c["roofline"].as_array().unwrap();
    assert!(!roofline.is_empty(), "TPU ops have cost data");
    for r in roofline {
        assert_eq!(r["crossed_ridge"], false, "{r}");
        assert_eq!(r["a_oi"], r["b_oi"]);
        assert_eq!(r["a_bound_by"], r["b_bound_by"]);
    }
    assert!(f(&c["roofline_peaks"]["a_ridge_point"]) > 0.0);
    assert_eq!(f(&c["totals"]["idle_time"]["delta_us"]), 0.0);
    assert_eq!(f(&c["totals"]["total_time"]["delta_us"]), 0.0);
    assert_eq!(c["mfu"]["delta"], 0.0);

    // The other formats render too: table, Markdown with the roofline section, a self-contained HTML file.
    let table = render(&result, Format::Table, DEFAULT_TOP);
    assert!(table.contains("Roofline changes (0 crossed the ridge"), "{table}");
    let md = render(&result, Format::Md, DEFAULT_TOP);
    let rows = md_table(&md, "Roofline changes");
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r[7] == "no"));
    let html = render(&result, Format::Html, DEFAULT_TOP);
    let path = dir.path().join("report.html");
    write_report(&path, &html, false).unwrap();
    assert!(path.is_file());
    let leftovers = leftovers(dir.path());
    assert!(leftovers.is_empty(), "no temporary files left: {leftovers:?}");
}

#[tokio::test]
async fn output_files_are_written_whole_or_not_at_all() {
    let h = super::harness::app().await;
    let dir = tempfile::tempdir().unwrap();
    let a = compare_data("batch8");
    let result = compare(&h.app, &a, &a, DEFAULT_TOP).await.unwrap();
    let path = dir.path().join("cmp.md");
    write_report(&path, &render(&result, Format::Md, DEFAULT_TOP), false).unwrap();
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.starts_with("# Profile comparison"));
    let refused = write_report(&path, &render(&result, Format::Json, DEFAULT_TOP), false).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Conflict, "an existing file is replaced only with --force (exit 4)");
    assert_eq!(refused.kind().exit_code(), 4);
    assert!(std::fs::read_to_string(&path).unwrap().starts_with("# Profile comparison"));
    write_report(&path, &render(&result, Format::Json, DEFAULT_TOP), true)
        .expect("an existing file is replaced with --force");
    let replaced: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(replaced["step_time"]["verdict"], "same");

    let missing = dir.path().join("missing/dir/cmp.txt");
    let err = write_report(&missing, &render(&result, Format::Table, DEFAULT_TOP), false).unwrap_err();
    assert!(message(&err).contains("missing/dir"), "{}", message(&err));
    assert!(!dir.path().join("missing").exists(), "nothing written");
    let err = write_report(&dir.path().join("missing/cmp.json"), &render(&result, Format::Json, DEFAULT_TOP), false)
        .unwrap_err();
    assert!(message(&err).contains("missing"), "{}", message(&err));
    assert!(!dir.path().join("missing").exists(), "nothing written");
    let leftovers = leftovers(dir.path());
    assert!(leftovers.is_empty(), "no temporary files left: {leftovers:?}");
}

#[tokio::test]
async fn bad_inputs_fail_with_clear_errors_and_exit_codes() {
    let h = super::harness::app().await;
    let dir = tempfile::tempdir().unwrap();
    let a = compare_data("batch8");

    let absent = dir.path().join("no-such-run.xplane.pb").display().to_string();
    let err = compare(&h.app, &a, &absent, DEFAULT_TOP).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "exit 3: {}", message(&err));
    assert_eq!(err.kind().exit_code(), 3);
    assert!(message(&err).contains("no-such-run.xplane.pb"), "{}", message(&err));
    let err = compare(&h.app, "nowhere", &a, DEFAULT_TOP).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{}", message(&err));
    assert!(message(&err).contains("nowhere"), "{}", message(&err));

    let garbage = dir.path().join("x.xplane.pb");
    std::fs::write(&garbage, (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect::<Vec<u8>>())
        .unwrap();
    let garbage = garbage.display().to_string();
    let err = compare(&h.app, &a, &garbage, DEFAULT_TOP).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid, "not a readable profile: {}", message(&err));
    assert_eq!(err.kind().exit_code(), 1);
    assert!(message(&err).contains("x.xplane.pb"), "{}", message(&err));
    let err = compare(&h.app, &garbage, &a, DEFAULT_TOP).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid, "{}", message(&err));
    assert!(message(&err).contains("x.xplane.pb"), "{}", message(&err));

    let tpu = capture("tpu_v6e_inference.xplane.pb");
    let err = compare(&h.app, &tpu, &a, DEFAULT_TOP).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failure, "{}", message(&err));
    let message = message(&err);
    assert!(message.contains("cannot compare") && message.contains("tpu") && message.contains("cpu"), "{message}");
}

/// `exp submit FILE --wait` in process: the spec parsed as the CLI parses it, submitted, the worker run here
/// until it ends; the experiment must have completed. Its id.
async fn submit(app: &App, text: &str, origin: &str) -> String {
    super::harness::submit_and_wait(app, text, origin).await.view.record.id.to_string()
}

#[tokio::test]
async fn two_experiments_bring_their_config_diff() {
    let h = super::harness::app().await;
    let mut ids = Vec::new();
    for (batch, run) in [(8, "batch8"), (16, "batch16")] {
        let spec = format!(
            "name: cmp-bs{batch}\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'cp -R {}/plugins $FALCON_ARTIFACT_DIR/']\n\
             config: {{batch_size: {batch}, layers: 4}}\nresources: {{accelerator: cpu}}\n",
            compare_data(run)
        );
        ids.push(submit(&h.app, &spec, &format!("bs{batch}.yaml")).await);
    }
    let result = compare(&h.app, &ids[0], &ids[1], DEFAULT_TOP).await.unwrap();
    let c = json(&result);
    assert_eq!(c["step_time"]["verdict"], "regressed");
    let diff = c["config_diff"].as_array().unwrap_or_else(|| panic!("config_diff missing: {}", c["config_diff"]));
    let batch = diff.iter().find(|d| d["path"] == "config.batch_size").unwrap_or_else(|| panic!("{diff:?}"));
    assert_eq!(batch["a"], 8);
    assert_eq!(batch["b"], 16);
    assert!(diff.iter().all(|d| d["path"] != "config.layers"), "equal values are no change");

    let rows = md_table(&render(&result, Format::Md, DEFAULT_TOP), "Config diff");
    assert!(rows.iter().any(|r| r[0] == "`config.batch_size`" && r[2] == "`8`" && r[3] == "`16`"), "{rows:?}");
}

/// 2 against 3 layers: a program of another structure. The ops of B's new layer are `added`, listed apart by
/// self time (JSON `added[]` and the report's "Added ops" table), never among the regressions; every matched op
/// carries its confidence, at the threshold or above.
#[tokio::test]
async fn another_structure_lists_its_new_ops_apart_with_confidences() {
    let h = super::harness::app().await;
    let (a, b) = (compare_data("batch8"), compare_data("layers3"));
    let result = compare(&h.app, &a, &b, 5).await.unwrap();
    let c = json(&result);
    let min = f(&c["matching"]["min_confidence"]);
    assert_eq!(min, 0.8);
    let ops = c["ops"].as_array().unwrap();
    for o in ops {
        match o["status"].as_str().unwrap() {
            "matched" => {
                let conf = f(&o["confidence"]);
                assert!((min..=1.0).contains(&conf), "{o}");
                if o["matched_by"] == "name" {
                    assert_eq!(conf, 1.0, "{o}");
                }
            }
            _ => assert!(o["confidence"].is_null() && o.get("confidence").is_some(), "null, not absent: {o}"),
        }
    }
    let exact: i64 = ops.iter().map(|o| o["delta_ps"].as_i64().unwrap()).sum();
    assert_eq!(exact, c["totals"]["op_time"]["delta_ps"].as_i64().unwrap());
    for key in ["regressions", "improvements"] {
        assert!(c[key].as_array().unwrap().iter().all(|o| o["status"] == "matched"), "{key}: {}", c[key]);
    }
    let added = c["added"].as_array().unwrap();
    assert_eq!(added.len(), 5, "--top bounds the list");
    assert!(c["matching"]["added"].as_u64().unwrap() >= 100, "{}", c["matching"]);
    let b_time: Vec<f64> = added.iter().map(|o| f(&o["b_self_time_us"])).collect();
    assert!(b_time.windows(2).all(|w| w[0] >= w[1]), "most self time first: {b_time:?}");
    let most = ops.iter().filter(|o| o["status"] == "added").map(|o| f(&o["b_self_time_us"])).fold(0.0, f64::max);
    assert_eq!(b_time[0], most);
    assert!(added.iter().all(|o| o["status"] == "added" && f(&o["a_self_time_us"]) == 0.0));
    assert!(c["removed"].as_array().unwrap().len() as u64 == c["matching"]["removed"].as_u64().unwrap().min(5));

    let md = render(&result, Format::Md, 5);
    let (header, rows) = md_table_with_header(&md, "Added ops (B only");
    assert_eq!(rows.len(), 5);
    for (row, o) in rows.iter().zip(added) {
        assert_eq!(unquote(&row[0]), o["name"].as_str().unwrap());
        assert_eq!(row[4], us(unit(&header[4]), &o["b_self_time_us"]));
    }
    let regressions = md_table(&md, "Top regressions");
    for (row, o) in regressions.iter().zip(c["regressions"].as_array().unwrap()) {
        assert_eq!(row[2], "matched");
        let word = o["matched_by"].as_str().unwrap().replace('_', " ");
        assert_eq!(row[9], format!("{word} {:.2}", f(&o["confidence"])), "{o}");
    }
    assert!(md.contains("need confidence ≥ 0.80"), "{md}");
    // The terminal report has the same lists.
    let table = render(&result, Format::Table, 5);
    assert!(table.contains("Added ops (B only; 5 of") && table.contains("Removed ops (A only;"), "{table}");
}
