//! The two timeline readers (`timeline::xspace::from_xspace`, `timeline::chrome`) on real captures:
//! - TPU v6e inference: the XSpace and XProf's trace-viewer JSON of it give the same devices, op
//!   events, classes, busy time and module executions;
//! - JAX CPU MLP: the XSpace and JAX's own `vm.trace.json.gz` give the same XLA:CPU op events and
//!   the same 5 host step markers;
//! - a PyTorch CPU profiler trace: `ProfilerStep#2..4` and a CPU-op device;
//! - a TF GPU XSpace: stream lines merged per GPU;
//!
//! And bad inputs: an error, never a panic.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::PathBuf;

use falcon_analysis::timeline::chrome::{from_chrome_json, read_chrome_trace_file, ChromeTraceError};
use falcon_analysis::timeline::xspace::{classify_gpu_kernel, classify_xla_op, from_xspace};
use falcon_analysis::timeline::{
    CollectiveKind, Device, DeviceKind, Event, EventClass, StepSource, Timeline, TimelineSource,
};
use proptest::prelude::*;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn xplane(name: &str) -> Timeline {
    let path = data(name);
    let path = if path.exists() {
        path
    } else {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../falcon-xplane/tests/data").join(name)
    };
    from_xspace(&falcon_xplane::decode_file(path).expect("decode xplane"), "")
}

fn chrome(name: &str) -> Timeline {
    read_chrome_trace_file(&data(name)).expect("read chrome trace")
}

fn chrome_str(json: &str) -> Result<Timeline, ChromeTraceError> {
    from_chrome_json(json.as_bytes())
}

/// Length of the union of the events' intervals, in ps.
fn busy_union(events: &[Event]) -> i64 {
    let mut iv: Vec<(i64, i64)> = events.iter().map(|e| (e.start_ps, e.end_ps())).collect();
    iv.sort_unstable();
    let (mut total, mut cur) = (0i64, None::<(i64, i64)>);
    for (s, e) in iv {
        match cur {
            Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                cur = Some((s, e));
            }
            None => cur = Some((s, e)),
        }
    }
    total + cur.map_or(0, |(s, e)| e - s)
}

fn class_counts(d: &Device) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for e in &d.events {
        *m.entry(format!("{:?}", e.class)).or_insert(0) += 1;
    }
    m
}

/// Module executions by name without the `(program id)` suffix.
fn module_counts(t: &Timeline, d: &Device) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for e in &d.modules {
        let name = t.name(e.name);
        let base = name.split('(').next().unwrap_or(name).to_owned();
        *m.entry(base).or_insert(0) += 1;
    }
    m
}

fn assert_within(a: i64, b: i64, rel: f64, what: &str) {
    let diff = (a - b).abs() as f64;
    assert!(diff <= rel * (b.abs().max(1) as f64), "{what}: {a} vs {b}");
}

#[test]
fn tpu_xspace_and_xprof_trace_viewer_agree() {
    let xs = xplane("tpu_v6e_inference.xplane.pb");
    let js = chrome("tpu_v6e_inference_xprof_trace_viewer.json.gz");
    assert_eq!(xs.source, TimelineSource::XSpace);
    assert_eq!(js.source, TimelineSource::ChromeJson);
    let names = |t: &Timeline| t.devices.iter().map(|d| d.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&xs), ["/device:TPU:0", "/device:TPU:1", "/device:TPU:2", "/device:TPU:3"]);
    assert_eq!(names(&xs), names(&js));
    for (x, j) in xs.devices.iter().zip(&js.devices) {
        assert_eq!(x.kind, DeviceKind::Tpu);
        assert_eq!(j.kind, DeviceKind::Tpu);
        // The same op events: XProf writes a zero-duration op as an instant, which the Chrome reader
        // keeps on `XLA Ops` lines, so the counts are exact.
        assert_eq!(x.events.len(), j.events.len(), "{}", x.name);
        assert!(x.events.len() > 1400);
        assert_eq!(class_counts(x), class_counts(j), "{}", x.name);
        assert_within(busy_union(&j.events), busy_union(&x.events), 0.01, &x.name);
        // Same op names in the same order (both sorted by start).
        let xn: Vec<&str> = x.events.iter().map(|e| xs.name(e.name)).collect();
        let jn: Vec<&str> = j.events.iter().map(|e| js.name(e.name)).collect();
        let same = xn.iter().zip(&jn).filter(|(a, b)| a == b).count();
        assert!(same * 100 >= xn.len() * 99, "{}: {same} of {} names in the same place", x.name, xn.len());
        // Modules: the most executed is jit_f, 100 times on every device.
        let xm = module_counts(&xs, x);
        assert_eq!(xm, module_counts(&js, j));
        let (top, n) = xm.iter().max_by_key(|(_, n)| **n).expect("modules");
        assert_eq!((top.as_str(), *n), ("jit_f", 100), "{}", x.name);
        assert!(x.modules.iter().all(|m| m.class == EventClass::Module));
        // Three all-reduces, copies as MemCopy.
        let cc = class_counts(x);
        assert_eq!(cc.get("Collective(AllReduce)"), Some(&3));
        assert_eq!(cc.get("MemCopy"), Some(&1200));
    }
    // An inference capture: no step markers.
    assert!(xs.steps.is_empty() && js.steps.is_empty());
    assert!(!xs.host_threads.is_empty() && !js.host_threads.is_empty());
    // Times are relative to the earliest event.
    for t in [&xs, &js] {
        let min = t
            .devices
            .iter()
            .flat_map(|d| d.events.iter().chain(&d.modules))
            .chain(t.host_threads.iter().flat_map(|h| &h.events))
            .map(|e| e.start_ps)
            .min();
        assert_eq!(min, Some(0));
        assert!(t.devices.iter().all(|d| d.events.windows(2).all(|w| w[0].start_ps <= w[1].start_ps)));
    }
    assert!(js.notes.iter().any(|n| n.contains("Host Offload Ops")), "{:?}", js.notes);
}

#[test]
fn jax_cpu_xspace_and_trace_json_agree() {
    let xs = xplane("jax_cpu_mlp_vm.xplane.pb");
    let js = chrome("jax_cpu_mlp_vm.trace.json.gz");
    for t in [&xs, &js] {
        assert_eq!(t.devices.len(), 1);
        assert_eq!(t.devices[0].kind, DeviceKind::CpuExecutor);
        assert_eq!(t.devices[0].name, "XLA:CPU executor threads");
    }
    let (x, j) = (&xs.devices[0], &js.devices[0]);
    // cpu_ops.rs counts 145 XLA:CPU op events on this capture.
    assert_eq!(x.events.len(), 145);
    assert_eq!(j.events.len(), 145);
    let total = |d: &Device| d.events.iter().map(|e| e.dur_ps).sum::<i64>();
    assert_within(total(j), total(x), 0.01, "total op time");
    let ops = |t: &Timeline, d: &Device| {
        let mut m: BTreeMap<String, usize> = BTreeMap::new();
        for e in &d.events {
            *m.entry(t.name(e.name).to_owned()).or_default() += 1;
        }
        m
    };
    assert_eq!(ops(&xs, x), ops(&js, j));
    assert!(x.events.iter().all(|e| e.class == EventClass::Compute));
    assert!(x.modules.is_empty() && j.modules.is_empty());

    // The 5 host step markers of `jax.profiler.StepTraceAnnotation("train", step_num=i)`.
    for t in [&xs, &js] {
        assert_eq!(t.steps.len(), 5);
        assert!(t.steps.iter().all(|s| s.source == StepSource::HostAnnotation && s.device.is_none()));
        assert_eq!(t.steps.iter().map(|s| s.step).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    }
    for (a, b) in xs.steps.iter().zip(&js.steps) {
        assert_within(a.dur_ps, b.dur_ps, 0.001, "step duration");
        assert!((a.start_ps - b.start_ps).abs() <= 1_000_000, "step start {a:?} vs {b:?}");
    }
    let host_events = |t: &Timeline| t.host_threads.iter().map(|h| h.events.len()).sum::<usize>();
    assert_eq!(host_events(&xs), host_events(&js));
    assert_eq!(xs.host_threads.len(), js.host_threads.len());
}

#[test]
fn pytorch_cpu_trace() {
    let t = chrome("pytorch_cpu_tfm2.pt.trace.json.gz");
    assert_eq!(t.source, TimelineSource::PyTorchJson);
    let steps: Vec<(i64, StepSource)> = t.steps.iter().map(|s| (s.step, s.source)).collect();
    assert_eq!(steps, [(2, StepSource::ProfilerStep), (3, StepSource::ProfilerStep), (4, StepSource::ProfilerStep)]);
    assert_eq!(t.steps[0].dur_ps, 560_294_103_000);
    assert_eq!(t.devices.len(), 1);
    let d = &t.devices[0];
    assert_eq!(d.kind, DeviceKind::CpuExecutor);
    assert!(d.events.len() > 1000, "{}", d.events.len());
    assert!(d.events.iter().all(|e| t.name(e.name).contains("::")), "cpu ops are aten:: and similar");
    // Top-level only: no event of the device nests in the previous one.
    let busy = busy_union(&d.events);
    let sum: i64 = d.events.iter().map(|e| e.dur_ps).sum();
    assert_eq!(busy, sum, "top-level cpu ops of one thread do not overlap");
    // Every step has CPU op work.
    for s in &t.steps {
        assert!(d.events.iter().any(|e| e.start_ps >= s.start_ps && e.start_ps < s.start_ps + s.dur_ps));
    }
    // Host threads hold the rest (annotations, nested ops); flows are counted in the notes.
    assert!(!t.host_threads.is_empty());
    assert!(t.notes.iter().any(|n| n.contains("phase `s`")), "{:?}", t.notes);
    // baseTimeNanoseconds makes the origin absolute (2026).
    assert!(t.origin_ps > 1_700_000_000_000_000_000_000, "{}", t.origin_ps);
    // Kineto's 3 decimals are whole nanoseconds.
    assert!(t.steps.iter().all(|s| s.start_ps % 1000 == 0), "{:?}", t.steps);
}

#[test]
fn gpu_xspace_streams_merged() {
    let t = xplane("gpu_v100x8_tf.xplane.pb");
    assert_eq!(t.devices.len(), 8);
    assert!(t.devices.iter().all(|d| d.kind == DeviceKind::Gpu));
    let g4 = t.devices.iter().find(|d| d.name == "/device:GPU:4").expect("GPU 4");
    // Stream #134(Compute) 665 kernels, H2D 2 + 80 and D2H 12 memcpys; derived lines not counted.
    assert_eq!(g4.events.len(), 665 + 2 + 80 + 12);
    assert_eq!(class_counts(g4).get("MemCopy"), Some(&94));
    let steps: Vec<_> = t.steps.iter().filter(|s| s.source == StepSource::DeviceStepsLine).collect();
    assert_eq!(steps.len(), 2);
    assert!(steps.iter().any(|s| s.device == Some(g4.id)));
}

#[test]
fn op_classes() {
    use EventClass::*;
    let c = |n: &str, cat: Option<&str>| classify_xla_op(n, cat);
    assert_eq!(c("fusion.12", Some("loop fusion")), Compute);
    assert_eq!(c("%fusion.1 = f32[8] fusion(x)", None), Compute);
    assert_eq!(c("all-reduce.3", Some("all-reduce")), Collective(CollectiveKind::AllReduce));
    assert_eq!(c("fusion.3", Some("all-gather fusion")), Collective(CollectiveKind::AllGather));
    assert_eq!(c("all-gather-start.1", None), Collective(CollectiveKind::AllGather));
    assert_eq!(c("collective-permute-done", None), Collective(CollectiveKind::CollectivePermute));
    assert_eq!(c("send.2", None), Collective(CollectiveKind::SendRecv));
    assert_eq!(c("copy-start.4", Some("copy-start")), MemCopy);
    assert_eq!(c("copy.1", None), MemCopy);
    assert_eq!(c("convert_copy_fusion", None), Compute);
    assert_eq!(c("offload-copy.0", None), MemCopy);
    assert_eq!(c("infeed.1", None), InfeedOutfeed);
    assert_eq!(c("outfeed", Some("outfeed")), InfeedOutfeed);
    assert_eq!(c("recv.1", Some("host recv")), InfeedOutfeed);
    assert_eq!(c("recv-done.1", Some("host recv")), HostWait);
    assert_eq!(classify_gpu_kernel("Memcpy HtoD (Pageable -> Device)"), MemCopy);
    assert_eq!(classify_gpu_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), Collective(CollectiveKind::AllReduce));
    assert_eq!(classify_gpu_kernel("volta_sgemm_128x64_nn"), Compute);
}

#[test]
fn chrome_phases_and_forms() {
    // Array form, unsorted, B/E pairs, instants, counters, flows, string pids, trailing {}.
    let json = r#"[
      {"ph":"X","name":"late","pid":1,"tid":1,"ts":10.5,"dur":1},
      {"ph":"B","name":"outer","pid":1,"tid":1,"ts":1},
      {"ph":"B","name":"inner","pid":1,"tid":1,"ts":2},
      {"ph":"E","pid":1,"tid":1,"ts":3},
      {"ph":"E","pid":1,"tid":1,"ts":5.000001},
      {"ph":"E","pid":1,"tid":2,"ts":5},
      {"ph":"i","name":"mark","pid":1,"tid":1,"ts":4,"s":"t"},
      {"ph":"C","name":"mem","pid":1,"ts":4,"args":{"bytes":10}},
      {"ph":"s","name":"f","pid":"Spans","tid":"x","ts":4,"id":1},
      {"ph":"X","name":"str","pid":"Spans","tid":"PyTorch Profiler","ts":0.25,"dur":0.5,"unknown":{"a":[1,2]}},
      {"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main"}},
      {}
    ]"#;
    let t = chrome_str(json).expect("parse");
    assert_eq!(t.source, TimelineSource::ChromeJson);
    assert!(t.devices.is_empty());
    assert_eq!(t.events_read, 11);
    let main = t.host_threads.iter().find(|h| h.name == "main").expect("main thread");
    let got: Vec<(&str, i64, i64)> = main.events.iter().map(|e| (t.name(e.name), e.start_ps, e.dur_ps)).collect();
    // Origin = the earliest event (ts 0.25 µs).
    assert_eq!(got, [("outer", 750_000, 4_000_001), ("inner", 1_750_000, 1_000_000), ("late", 10_250_000, 1_000_000)]);
    let spans = t.host_threads.iter().find(|h| h.name == "Spans/PyTorch Profiler").expect("string ids");
    assert_eq!(spans.events[0].start_ps, 0);
    for note in ["phase `C`", "phase `s`", "unmatched `E`", "instant"] {
        assert!(t.notes.iter().any(|n| n.contains(note)), "{note}: {:?}", t.notes);
    }
}

#[test]
fn chrome_pytorch_gpu() {
    let json = r#"{"schemaVersion":1,"traceEvents":[
      {"ph":"X","cat":"user_annotation","name":"ProfilerStep#7","pid":100,"tid":100,"ts":0,"dur":100},
      {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":100,"tid":100,"ts":1,"dur":10},
      {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":100,"ts":2,"dur":1},
      {"ph":"X","cat":"kernel","name":"volta_sgemm","pid":0,"tid":7,"ts":5,"dur":20,"args":{"device":0,"stream":7}},
      {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD","pid":0,"tid":8,"ts":6,"dur":3},
      {"ph":"X","cat":"kernel","name":"ncclDevKernel_AllGather_RING_LL","pid":1,"tid":9,"ts":30,"dur":5},
      {"ph":"X","cat":"gpu_user_annotation","name":"ProfilerStep#7","pid":0,"tid":7,"ts":5,"dur":50},
      {"ph":"f","id":1,"pid":0,"tid":7,"ts":5,"cat":"ac2g","name":"ac2g","bp":"e"}
    ],"traceName":"x"}"#;
    let t = chrome_str(json).expect("parse");
    assert_eq!(t.source, TimelineSource::PyTorchJson);
    assert_eq!(t.devices.len(), 2);
    let d0 = &t.devices[0];
    assert_eq!((d0.kind, d0.id, d0.events.len()), (DeviceKind::Gpu, 0, 2));
    assert_eq!(d0.events[0].class, EventClass::Compute);
    assert_eq!(d0.events[1].class, EventClass::MemCopy);
    assert_eq!(t.devices[1].events[0].class, EventClass::Collective(CollectiveKind::AllGather));
    assert_eq!(t.steps.len(), 1);
    assert_eq!((t.steps[0].step, t.steps[0].source), (7, StepSource::ProfilerStep));
    // With GPUs, CPU ops stay host events.
    assert_eq!(t.host_threads.iter().map(|h| h.events.len()).sum::<usize>(), 3);
}

#[test]
fn chrome_xla_device_json() {
    // XProf layout: metadata first, string args, Steps line, Async XLA Ops skipped, trailing {}.
    let json = r#"{"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[
      {"args":{"name":"/device:TPU:0"},"name":"process_name","ph":"M","pid":3},
      {"args":{"name":"Steps"},"name":"thread_name","ph":"M","pid":3,"tid":1},
      {"args":{"name":"XLA Modules"},"name":"thread_name","ph":"M","pid":3,"tid":2},
      {"args":{"name":"XLA Ops"},"name":"thread_name","ph":"M","pid":3,"tid":3},
      {"args":{"name":"Async XLA Ops"},"name":"thread_name","ph":"M","pid":3,"tid":4},
      {"args":{"group_id":"5"},"name":"5","ph":"X","pid":3,"tid":1,"ts":100,"dur":50},
      {"args":{"run_id":"1"},"name":"jit_step(1)","ph":"X","pid":3,"tid":2,"ts":100,"dur":40},
      {"args":{"hlo_category":"convolution fusion"},"name":"fusion.1","ph":"X","pid":3,"tid":3,"ts":100,"dur":10},
      {"args":{"hlo_category":"all-reduce"},"name":"all-reduce-start","ph":"X","pid":3,"tid":3,"ts":110,"dur":1},
      {"args":{"hlo_category":"all-reduce"},"name":"all-reduce-done","ph":"X","pid":3,"tid":3,"ts":120,"dur":5},
      {"name":"bitcast","ph":"i","pid":3,"tid":3,"ts":126,"s":"t"},
      {"name":"all-reduce","ph":"X","pid":3,"tid":4,"ts":110,"dur":15},
      {}]}"#;
    let t = chrome_str(json).expect("parse");
    assert_eq!(t.devices.len(), 1);
    let d = &t.devices[0];
    assert_eq!((d.id, d.name.as_str()), (3, "/device:TPU:0"));
    let classes: Vec<EventClass> = d.events.iter().map(|e| e.class).collect();
    assert_eq!(
        classes,
        [
            EventClass::Compute,
            EventClass::Collective(CollectiveKind::AllReduce),
            EventClass::Collective(CollectiveKind::AllReduce),
            EventClass::Compute
        ]
    );
    assert_eq!(d.events[3].dur_ps, 0, "instant kept as a zero-duration op");
    assert_eq!(d.modules.len(), 1);
    assert_eq!(t.steps.len(), 1);
    assert_eq!((t.steps[0].step, t.steps[0].device, t.steps[0].dur_ps), (5, Some(3), 50_000_000));
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).expect("gzip");
    enc.finish().expect("gzip")
}

#[test]
fn bad_inputs_are_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(data("jax_cpu_mlp_vm.trace.json.gz")).expect("open"))
        .read_to_end(&mut raw)
        .expect("gunzip");
    let gz = std::fs::read(data("jax_cpu_mlp_vm.trace.json.gz")).expect("read");
    let hlo_stats = std::fs::read(data("tpu_v6e_inference_xprof_hlo_stats.json")).expect("read");
    let random: Vec<u8> = (0u32..4096).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("whitespace", b"  \n ".to_vec()),
        ("truncated gz", gz[..gz.len() / 2].to_vec()),
        ("truncated json", raw[..raw.len() / 2].to_vec()),
        ("truncated json gz", gzip(&raw[..raw.len() / 3])),
        ("other object", br#"{"a":1}"#.to_vec()),
        ("xprof table", hlo_stats),
        ("table array", br#"[{"cols":[1]},{"rows":[]}]"#.to_vec()),
        ("scalar", b"42".to_vec()),
        ("array of numbers", b"[1,2,3]".to_vec()),
        ("traceEvents not array", br#"{"traceEvents":{"ph":"X"}}"#.to_vec()),
        ("trailing garbage", br#"{"traceEvents":[]} x"#.to_vec()),
        ("random bytes", random),
        ("deep nesting", format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes()),
        ("deep args", format!("{{\"traceEvents\":[{{\"ph\":\"X\",\"args\":{}", "[".repeat(100_000)).into_bytes()),
    ];
    for (what, bytes) in cases {
        let path = dir.path().join(what.replace(' ', "_"));
        std::fs::write(&path, &bytes).expect("write");
        let err = read_chrome_trace_file(&path).expect_err(what);
        let msg = err.to_string();
        assert!(!msg.is_empty(), "{what}");
        println!("{what}: {msg}");
    }
    // Positions and kinds.
    let e = from_chrome_json(&raw[..raw.len() / 2]).expect_err("truncated");
    assert!(matches!(e, ChromeTraceError::Truncated { position: Some(_), .. }), "{e:?}");
    let e = chrome_str(r#"{"a":1}"#).expect_err("object");
    assert!(matches!(e, ChromeTraceError::NotATrace { .. }) && e.to_string().contains("traceEvents"), "{e}");
    let e = chrome_str("").expect_err("empty");
    assert!(e.to_string().contains("empty"), "{e}");
    let e = chrome_str(" \n ").expect_err("whitespace");
    assert!(e.to_string().contains("empty"), "{e}");
    let e = chrome_str("{\"traceEvents\":[\n{\"ph\":\"X\",}]}").expect_err("syntax");
    assert!(matches!(e, ChromeTraceError::Syntax { position: Some(p), .. } if p.line == 2), "{e:?}");
    let path = dir.path().join("truncated_gz");
    assert!(read_chrome_trace_file(&path).expect_err("gz").to_string().contains("gzip"));
    // Missing file: not found.
    let missing = read_chrome_trace_file(&dir.path().join("nope.json")).expect_err("missing");
    assert_eq!(missing.kind(), falcon_core::ErrorKind::NotFound);
    // An empty trace is a trace.
    let t = chrome_str(r#"{"traceEvents":[{}]}"#).expect("empty trace");
    assert!(t.devices.is_empty() && t.host_threads.is_empty());
}

/// A generated JSON value (depth-limited), biased towards trace-event-like objects.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        prop_oneof![
            Just("X"),
            Just("B"),
            Just("E"),
            Just("M"),
            Just("i"),
            Just("C"),
            Just("process_name"),
            Just("thread_name"),
            Just("/device:TPU:0"),
            Just("/host:CPU"),
            Just("XLA Ops"),
            Just("Steps"),
            Just("XLA Modules"),
            Just("cpu_op"),
            Just("kernel"),
            Just("ProfilerStep#3"),
            Just("train"),
            Just("")
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        let key = prop_oneof![
            Just("ph"),
            Just("name"),
            Just("pid"),
            Just("tid"),
            Just("ts"),
            Just("dur"),
            Just("args"),
            Just("cat"),
            Just("traceEvents"),
            Just("hlo_op"),
            Just("step_num"),
            Just("group_id"),
            Just("_r"),
            Just("hlo_module"),
            Just("baseTimeNanoseconds"),
            Just("other")
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(serde_json::Value::Array),
            prop::collection::btree_map(key.prop_map(str::to_owned), inner, 0..8)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = from_chrome_json(bytes.as_slice());
    }

    #[test]
    fn arbitrary_json_never_panics(v in json_value(), wrap in 0u8..3) {
        let doc = match wrap {
            0 => v,
            1 => serde_json::json!({"traceEvents": [v, {}]}),
            _ => serde_json::json!([v]),
        };
        let text = serde_json::to_string(&doc).expect("serialize");
        let _ = from_chrome_json(text.as_bytes());
        // Cut anywhere: an error or a timeline, never a panic.
        let cut = text.len() / 2;
        let _ = from_chrome_json(&text.as_bytes()[..cut]);
    }
}
