//! Exports every real XSpace fixture to Chrome trace JSON (plain and gzip), reads it back and checks
//! structure, event counts and naming; cross-checks the JAX CPU capture's `hlo_op` events against
//! the Chrome trace JAX (XProf) wrote from the same capture.

use std::collections::{BTreeMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use falcon_analysis::trace_export::{write_chrome_trace, ExportSummary, INTERNAL_STATS};
use falcon_xplane::{StatValue, XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata};
use serde_json::Value;

fn xplane_data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../falcon-xplane/tests/data")
}

fn fixtures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(xplane_data())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".xplane.pb"))
        .collect();
    v.sort();
    assert!(v.len() >= 3, "fixtures: {v:?}");
    v
}

fn tmp(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("trace_export");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{}-{name}", std::process::id()))
}

fn read_json(path: &Path, gzip: bool) -> Value {
    let mut raw = Vec::new();
    let f = std::fs::File::open(path).unwrap();
    if gzip {
        flate2::read::GzDecoder::new(f).read_to_end(&mut raw).unwrap();
    } else {
        std::io::BufReader::new(f).read_to_end(&mut raw).unwrap();
    }
    serde_json::from_slice(&raw).expect("valid JSON")
}

fn export(space: &XSpace, name: &str, gzip: bool) -> (ExportSummary, Value) {
    let path = tmp(name);
    let f = std::fs::File::create(&path).unwrap();
    let t0 = std::time::Instant::now();
    let summary = write_chrome_trace(space, f, gzip).unwrap();
    eprintln!("export {name}: {:.1} ms", t0.elapsed().as_secs_f64() * 1e3);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), summary.bytes_written);
    let json = read_json(&path, gzip);
    std::fs::remove_file(&path).unwrap();
    (summary, json)
}

/// Structural checks common to every export; returns the `X` events.
fn check_structure(space: &XSpace, summary: &ExportSummary, json: &Value) -> Vec<Value> {
    let events = json["traceEvents"].as_array().expect("traceEvents array");
    let total: usize = space.planes.iter().map(XPlane::event_count).sum();
    let lines: usize = space.planes.iter().map(|p| p.lines.len()).sum();
    assert_eq!(summary.planes, space.planes.len());
    assert_eq!(summary.lines, lines);
    assert_eq!(summary.events, total);

    let mut procs = HashSet::new();
    let mut threads = HashSet::new();
    let mut xs = Vec::new();
    for e in events {
        match e["ph"].as_str().unwrap() {
            "M" => match e["name"].as_str().unwrap() {
                "process_name" => {
                    assert!(e["args"]["name"].is_string());
                    procs.insert(e["pid"].as_i64().unwrap());
                }
                "thread_name" => {
                    assert!(e["args"]["name"].is_string());
                    let line_id = e["args"]["line_id"].as_str().expect("the line's own id, as text");
                    line_id.parse::<i64>().unwrap_or_else(|err| panic!("line_id {line_id:?}: {err}"));
                    threads.insert((e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap()));
                }
                "process_sort_index" | "thread_sort_index" => {
                    assert!(e["args"]["sort_index"].is_u64())
                }
                other => panic!("unexpected metadata {other}"),
            },
            "X" => xs.push(e.clone()),
            other => panic!("unexpected ph {other}"),
        }
    }
    assert_eq!(procs.len(), space.planes.len());
    assert_eq!(threads.len(), lines);
    // Thread ids are 1..=lines of each plane: small, dense, exact in any JSON reader.
    for (pi, plane) in space.planes.iter().enumerate() {
        let mut tids: Vec<i64> = threads.iter().filter(|(p, _)| *p == pi as i64 + 1).map(|(_, t)| *t).collect();
        tids.sort_unstable();
        assert_eq!(tids, (1..=plane.lines.len() as i64).collect::<Vec<_>>(), "plane {pi}");
    }
    assert_eq!(xs.len(), total, "one X event per XEvent");
    for e in &xs {
        let pid = e["pid"].as_i64().unwrap();
        let tid = e["tid"].as_i64().unwrap();
        assert!(procs.contains(&pid), "pid {pid} has no process_name");
        assert!(threads.contains(&(pid, tid)), "({pid},{tid}) has no thread_name");
        assert!(e["name"].is_string());
        assert!(e["ts"].as_f64().unwrap() > 0.0);
        assert!(e["dur"].as_f64().unwrap() >= 0.0);
        if let Some(args) = e["args"].as_object() {
            for internal in INTERNAL_STATS {
                assert!(!args.contains_key(internal), "internal stat `{internal}` in {e}");
            }
        }
    }
    xs
}

#[test]
fn exports_every_fixture_plain_and_gzip() {
    for path in fixtures() {
        let space = falcon_xplane::decode_file(&path).unwrap();
        let stem = path.file_name().unwrap().to_string_lossy().into_owned();
        let (plain_sum, plain) = export(&space, &format!("{stem}.json"), false);
        let (gz_sum, gz) = export(&space, &format!("{stem}.json.gz"), true);
        let xs = check_structure(&space, &plain_sum, &plain);
        check_structure(&space, &gz_sum, &gz);
        assert_eq!(plain, gz, "{stem}: gzip and plain differ");
        assert!(gz_sum.bytes_written < plain_sum.bytes_written);
        eprintln!(
            "{stem}: planes {} lines {} events {} plain {} B gzip {} B",
            plain_sum.planes, plain_sum.lines, plain_sum.events, plain_sum.bytes_written, gz_sum.bytes_written
        );

        // Spot-check the first event of every line against the XSpace.
        let mut by_thread: BTreeMap<(i64, i64), &Value> = BTreeMap::new();
        for e in &xs {
            by_thread.entry((e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap())).or_insert(e);
        }
        let line_ids: BTreeMap<(i64, i64), String> = plain["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| {
                let key = (e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap());
                (key, e["args"]["line_id"].as_str().unwrap().to_string())
            })
            .collect();
        let mut internal_in_space = 0usize;
        for (pi, plane) in space.planes.iter().enumerate() {
            for (li, line) in plane.lines.iter().enumerate() {
                let tid = li as i64 + 1;
                assert_eq!(line_ids[&(pi as i64 + 1, tid)], line.id.to_string(), "{stem}: the line's id is kept");
                for ev in &line.events {
                    let meta = plane.event_metadata_of(ev).map_or(&[][..], |m| m.stats.as_slice());
                    internal_in_space +=
                        ev.stats.iter().chain(meta).filter(|s| INTERNAL_STATS.contains(&plane.stat_name(s))).count();
                }
                let Some(ev) = line.events.first() else {
                    continue;
                };
                let e = by_thread[&(pi as i64 + 1, tid)];
                assert_eq!(e["name"].as_str().unwrap(), plane.event_display_name(ev));
                let ts_us = line.timestamp_ns as f64 / 1e3 + ev.offset_ps as f64 / 1e6;
                assert!((e["ts"].as_f64().unwrap() - ts_us).abs() < 1.0);
                let dur_us = ev.duration_ps as f64 / 1e6;
                assert!((e["dur"].as_f64().unwrap() - dur_us).abs() < 0.001 + 1e-9 * dur_us);
            }
        }
        let beyond = space.planes.iter().flat_map(|p| &p.lines).filter(|l| l.id.unsigned_abs() > 1 << 53).count();
        eprintln!("{stem}: {beyond} line ids beyond 2^53, {internal_in_space} internal stats left out");
    }
}

/// `(name, ts, dur)` of complete events whose args carry `hlo_op`, sorted by ts.
fn hlo_ops(json: &Value) -> Vec<(String, f64, f64)> {
    let mut v: Vec<(String, f64, f64)> = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["args"]["hlo_op"].is_string())
        .map(|e| (e["name"].as_str().unwrap().to_owned(), e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap()))
        .collect();
    v.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    v
}

#[test]
fn jax_cpu_hlo_ops_match_jax_written_trace() {
    let space = falcon_xplane::decode_file(xplane_data().join("jax_cpu_mlp_vm.xplane.pb")).unwrap();
    let (_, ours) = export(&space, "jax_cpu.json", false);
    let theirs =
        read_json(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/jax_cpu_mlp_vm.trace.json.gz"), true);
    let ours = hlo_ops(&ours);
    let theirs = hlo_ops(&theirs);
    assert!(!theirs.is_empty());
    assert_eq!(ours.len(), theirs.len(), "hlo_op event counts");

    // JAX's trace is relative to the profile start; ours is absolute. Align by the median offset.
    let mut diffs: Vec<f64> = ours.iter().zip(&theirs).map(|(a, b)| a.1 - b.1).collect();
    diffs.sort_by(f64::total_cmp);
    let shift = diffs[diffs.len() / 2];

    let key = |v: &[(String, f64, f64)], shift: f64| -> BTreeMap<(String, i64, i64), usize> {
        let mut m = BTreeMap::new();
        for (n, ts, dur) in v {
            *m.entry((n.clone(), (ts - shift).round() as i64, dur.round() as i64)).or_insert(0) += 1;
        }
        m
    };
    let (mut max_ts, mut max_dur) = (0.0f64, 0.0f64);
    for (a, b) in ours.iter().zip(&theirs) {
        assert_eq!(a.0, b.0, "names in ts order");
        max_ts = max_ts.max((a.1 - shift - b.1).abs());
        max_dur = max_dur.max((a.2 - b.2).abs());
    }
    eprintln!(
        "jax cpu: {} hlo_op events, shift {shift:.3} us, max |dts| {max_ts:.4} us, max |ddur| {max_dur:.4} us",
        ours.len()
    );
    assert!(max_ts < 1.0 && max_dur < 1.0);
    // Rounded-set equality (robust to sub-µs rounding boundaries: compare within 1 µs above).
    let (ka, kb) = (key(&ours, shift), key(&theirs, 0.0));
    let exact = ka.iter().filter(|(k, n)| kb.get(*k) == Some(n)).count();
    eprintln!("jax cpu: rounded (name, ts, dur) keys equal: {exact}/{}", kb.len());
}

#[test]
fn hostile_names_and_stats_round_trip() {
    let hostile = "q\"uote\\back\nnl\ttab\u{0}nul\u{1f}us é🚀 \u{7f}";
    let mut plane = XPlane { id: 1, name: format!("/plane:{hostile}"), ..Default::default() };
    plane.event_metadata.insert(
        7,
        XEventMetadata {
            id: 7,
            name: format!("long {hostile}"),
            display_name: hostile.to_owned(),
            stats: vec![XStat { metadata_id: 1, value: StatValue::Int64(-5) }],
            ..Default::default()
        },
    );
    for (id, name) in [(1, "i"), (2, "u"), (3, "d"), (4, hostile), (5, "r"), (6, "b"), (8, "nan")] {
        plane.stat_metadata.insert(id, XStatMetadata { id, name: name.to_owned(), description: String::new() });
    }
    plane.lines.push(XLine {
        id: 3,
        name: format!("line {hostile}"),
        timestamp_ns: 1_700_000_000_123_456_789,
        events: vec![XEvent {
            metadata_id: 7,
            offset_ps: 1_500,
            duration_ps: 2_345_678,
            stats: vec![
                XStat { metadata_id: 1, value: StatValue::Int64(-42) },
                XStat { metadata_id: 2, value: StatValue::Uint64(u64::MAX) },
                XStat { metadata_id: 3, value: StatValue::Double(0.25) },
                XStat { metadata_id: 4, value: StatValue::Str(hostile.to_owned()) },
                XStat { metadata_id: 5, value: StatValue::Ref(4) },
                XStat { metadata_id: 6, value: StatValue::Bytes(vec![0, 0xab, 0xff]) },
                XStat { metadata_id: 8, value: StatValue::Double(f64::NAN) },
            ],
            ..Default::default()
        }],
        ..Default::default()
    });
    let space = XSpace { planes: vec![plane], ..Default::default() };

    let mut buf = Vec::new();
    let summary = write_chrome_trace(&space, &mut buf, false).unwrap();
    assert_eq!(summary.bytes_written, buf.len() as u64);
    let text = std::str::from_utf8(&buf).unwrap();
    assert!(text.contains("\"ts\":1700000000123456.790"), "{text}");
    let json: Value = serde_json::from_slice(&buf).unwrap();
    let evs = json["traceEvents"].as_array().unwrap();
    assert_eq!(evs[0]["args"]["name"], format!("/plane:{hostile}").as_str());
    assert_eq!(evs[2]["args"]["name"], format!("line {hostile}").as_str());
    let x = &evs[4];
    assert_eq!(x["ph"], "X");
    assert_eq!(x["name"], hostile);
    assert_eq!(x["dur"].as_f64().unwrap(), 2.346);
    let args = &x["args"];
    assert_eq!(args["long_name"], format!("long {hostile}").as_str());
    assert_eq!(args["i"], -42, "event stat overrides metadata stat");
    assert_eq!(args["u"].as_u64(), Some(u64::MAX));
    assert_eq!(args["d"], 0.25);
    assert_eq!(args[hostile], hostile);
    assert_eq!(args["r"], hostile, "ref resolved to the stat-metadata name");
    assert_eq!(args["b"], "00abff");
    assert_eq!(args["nan"], "NaN");
    assert_eq!(text.matches("\"i\":").count(), 1, "no duplicate key");

    // Same through gzip.
    let mut gz = Vec::new();
    write_chrome_trace(&space, &mut gz, true).unwrap();
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(gz.as_slice()).read_to_end(&mut raw).unwrap();
    assert_eq!(raw, buf);
}

#[test]
fn thread_ids_are_dense_and_internal_stats_are_left_out() {
    // Two host threads whose ids differ only beyond 2^53 (a reader holding numbers as doubles would merge
    // them), and a third line with a small id; events carry XProf's flow stats beside real ones.
    let (big, bigger) = ((1i64 << 60) + 1, (1i64 << 60) + 2);
    assert_eq!(big as f64, bigger as f64, "the ids are indistinguishable as doubles");
    let mut plane = XPlane { id: 1, name: "/host:CPU".into(), ..Default::default() };
    plane.event_metadata.insert(1, XEventMetadata { id: 1, name: "op".into(), ..Default::default() });
    for (id, name) in [(1, "_pt"), (2, "_p"), (3, "_r"), (4, "_ct"), (5, "_c"), (6, "_a"), (7, "step_num"), (8, "_x")] {
        plane.stat_metadata.insert(id, XStatMetadata { id, name: name.into(), description: String::new() });
    }
    let event = |offset_ps: i64| XEvent {
        metadata_id: 1,
        offset_ps,
        duration_ps: 1_000_000,
        stats: (1..=8).map(|id| XStat { metadata_id: id, value: StatValue::Int64(id) }).collect(),
        ..Default::default()
    };
    for (id, name) in [(big, "thread a"), (bigger, "thread b"), (7, "thread c")] {
        plane.lines.push(XLine {
            id,
            name: name.into(),
            timestamp_ns: 1_700_000_000_000_000_000,
            events: vec![event(0), event(2_000_000)],
            ..Default::default()
        });
    }
    let space = XSpace { planes: vec![plane], ..Default::default() };
    let mut buf = Vec::new();
    let summary = write_chrome_trace(&space, &mut buf, false).unwrap();
    let json: Value = serde_json::from_slice(&buf).unwrap();
    let xs = check_structure(&space, &summary, &json);
    let events = json["traceEvents"].as_array().unwrap();
    let threads: Vec<(i64, &str, &str)> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| {
            (e["tid"].as_i64().unwrap(), e["args"]["name"].as_str().unwrap(), e["args"]["line_id"].as_str().unwrap())
        })
        .collect();
    let (big_text, bigger_text) = (big.to_string(), bigger.to_string());
    assert_eq!(
        threads,
        [(1, "thread a", big_text.as_str()), (2, "thread b", bigger_text.as_str()), (3, "thread c", "7")]
    );
    let per_tid = |tid: i64| xs.iter().filter(|e| e["tid"] == tid).count();
    assert_eq!((per_tid(1), per_tid(2), per_tid(3)), (2, 2, 2), "no two threads merged");
    // Every tid is written as a small integer literal.
    let text = std::str::from_utf8(&buf).unwrap();
    assert!(!text.contains(&format!("\"tid\":{big}")) && !text.contains(&format!("\"tid\":{bigger}")), "{text}");
    for e in &xs {
        let args = e["args"].as_object().unwrap();
        let names: Vec<&str> = args.keys().map(String::as_str).collect();
        assert_eq!(names, ["_x", "step_num"], "only the flow stats are left out: {e}");
        assert_eq!(args["step_num"], 7);
    }
}
