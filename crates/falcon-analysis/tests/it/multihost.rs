//! Multi-host analysis against the truth: real captures made on this machine by `examples/multihost/` (JAX with
//! `jax.distributed` on CPU over gloo, and PyTorch DDP over gloo, one process starting each step late, and
//! no-delay controls), each beside `reference.json` that `examples/multihost/reference.py` computed straight from
//! the raw events (XSpace through JAX's own reader, the PyTorch traces as JSON) — never through Falcon.
//!
//! The reference's definitions are the analysis's ([`falcon_analysis::trace::multihost`]): for each collective
//! instance, a member waits from its arrival to the last arrival and transfers from there to its own end. Falcon's
//! per-host wait and transfer over every instance are held to the reference within 1 % (they are computed from the
//! same events; the issue asks 10 %); the exposed split in the step breakdown within 10 %.

use std::path::{Path, PathBuf};

use falcon_analysis::input::find_trace;
use falcon_analysis::service::read_timeline;
use falcon_analysis::trace::{analyze_trace, TraceOptions, TraceReport};
use serde_json::Value;

fn run_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/multihost").join(name)
}

fn report(name: &str) -> TraceReport {
    let files = find_trace(&run_dir(name), None).unwrap();
    let tl = read_timeline(&files, 1 << 30).unwrap();
    analyze_trace(&tl, &TraceOptions::default())
}

fn reference(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run_dir(name).join("reference.json")).unwrap()).unwrap()
}

fn within(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()) + 1.0
}

const ALL: [&str; 7] = [
    "jax-4-late2-30ms",
    "jax-4-control",
    "jax-8-late5-15ms",
    "jax-8-late5-80ms",
    "jax-4-transfer",
    "torch-4-late2-30ms",
    "torch-4-control",
];

#[test]
fn wait_and_transfer_per_host_match_the_raw_event_reference() {
    for name in ALL {
        let r = report(name);
        let reference = reference(name);
        let per_host = reference["per_host"].as_object().unwrap();
        assert_eq!(r.hosts.len(), per_host.len(), "{name}: hosts");
        for (host, want) in per_host {
            let got = r.hosts.iter().find(|h| &h.host == host).unwrap_or_else(|| panic!("{name}: no host {host}"));
            let (w, t) = (want["wait_for_peers_us"].as_f64().unwrap(), want["transfer_us"].as_f64().unwrap());
            assert!(within(got.collective_wait_us, w, 0.01), "{name} {host}: wait {} vs {w}", got.collective_wait_us);
            assert!(
                within(got.collective_transfer_us, t, 0.01),
                "{name} {host}: transfer {} vs {t}",
                got.collective_transfer_us
            );
            // The breakdown's exposed part: at most all of it (PyTorch's gloo thread runs beside the main thread's
            // compute: part of its wait is hidden under it).
            assert!(got.wait_for_peers_us <= w + 1.0, "{name} {host}: exposed wait {} > {w}", got.wait_for_peers_us);
            assert!(got.wait_for_peers_us >= 0.8 * w, "{name} {host}: exposed wait {} ≪ {w}", got.wait_for_peers_us);
            assert_eq!(got.times_last, want["times_last"].as_u64().unwrap() as usize, "{name} {host}: times last");
        }
        let t = r.total.unwrap();
        assert!(within(t.wait_for_peers_us + t.transfer_us, t.collective_us, 1e-9), "{name}: the split is exact");
        let instances = reference["instances"].as_array().unwrap().len();
        assert_eq!(r.collectives.iter().map(|c| c.instances).sum::<usize>(), instances, "{name}: instances");
    }
}

#[test]
fn the_late_host_is_named_with_its_delay() {
    for (name, host, delay_us) in [
        ("jax-4-late2-30ms", "host-2", 30_000.0),
        ("jax-8-late5-15ms", "host-5", 15_000.0),
        ("jax-8-late5-80ms", "host-5", 80_000.0),
        ("torch-4-late2-30ms", "rank-2", 30_000.0),
    ] {
        let r = report(name);
        let s = r.straggler.as_ref().unwrap_or_else(|| panic!("{name}: no straggler; notes {:?}", r.notes));
        assert_eq!(s.host, host, "{name}");
        assert_eq!(s.steps, 10, "{name}: steps with collectives");
        assert!(s.steps_late >= 8, "{name}: late at {} of 10", s.steps_late);
        assert!((s.late_us_median - delay_us).abs() <= 0.3 * delay_us, "{name}: late {} µs", s.late_us_median);
        assert!(s.lost_percent > 10.0, "{name}: lost {}", s.lost_percent);
        // The reference agrees on who and by how much.
        let want = &reference(name)["straggler"];
        assert_eq!(want["host"], host);
        assert!(within(s.late_us_median, want["late_us_median"].as_f64().unwrap(), 0.01), "{name}: late vs reference");
        // The on-time hosts wait more than they transfer: a late peer is not "communication". Not on 8 processes
        // 15 ms late: on this machine's 2 cores the gloo all-reduce of 8 processes itself takes ~65 ms a step (the
        // reference's transfer says so too), so there the transfer is the larger part; 80 ms late, the wait is.
        for h in r.hosts.iter().filter(|h| h.host != host) {
            assert_eq!(h.steps_late, 0, "{name} {}", h.host);
            assert!(h.wait_for_peers_us > 0.5 * delay_us * 10.0, "{name} {}: wait {}", h.host, h.wait_for_peers_us);
            if name != "jax-8-late5-15ms" {
                let (w, t) = (h.wait_for_peers_us, h.transfer_us);
                assert!(w > t, "{name} {}: wait {w} ≤ transfer {t}", h.host);
            }
        }
        let late = r.hosts.iter().find(|h| h.host == host).unwrap();
        assert_eq!(late.wait_for_peers_us, 0.0, "{name}: the late host never waits");
        assert!(s.summary.contains(host) && s.summary.contains("late peer"), "{}", s.summary);
    }
}

#[test]
fn no_straggler_within_noise_and_the_transfer_dominates_the_controls() {
    for name in ["jax-4-control", "torch-4-control", "jax-4-transfer"] {
        let r = report(name);
        assert!(r.straggler.is_none(), "{name}: named {:?}", r.straggler);
        assert!(r.notes.iter().any(|n| n.starts_with("no straggler:")), "{name}: the note says why: {:?}", r.notes);
        for h in &r.hosts {
            assert!(
                h.transfer_us > h.wait_for_peers_us,
                "{name} {}: transfer {} ≤ wait {}",
                h.host,
                h.transfer_us,
                h.wait_for_peers_us
            );
        }
    }
}

#[test]
fn a_folder_of_rank_traces_is_one_run_of_its_ranks_with_bus_bandwidth_from_the_message() {
    let r = report("torch-4-late2-30ms");
    let hosts: Vec<&str> = r.devices.iter().map(|d| d.host.as_str()).collect();
    assert_eq!(hosts, ["rank-0", "rank-1", "rank-2", "rank-3"]);
    let c = &r.collectives[0];
    assert_eq!((c.name.as_str(), c.kind.as_str(), c.members, c.instances), ("gloo:all_reduce", "all-reduce", 4, 10));
    // 196608 floats (the MLP's gradients in one bucket: the trace's `Input Dims` and `Input type`).
    assert_eq!(c.bytes, Some(196_608 * 4));
    let algbw = 196_608.0 * 4.0 / (c.transfer_us_mean * 1e-6) / 1e9;
    assert!(within(c.algbw_gbps.unwrap(), algbw, 1e-9));
    assert!(within(c.busbw_gbps.unwrap(), algbw * 2.0 * 3.0 / 4.0, 1e-9), "NCCL's all-reduce factor 2(n−1)/n");
    // A gloo collective is a collective, not host wait.
    let t = r.total.unwrap();
    assert!(t.collective_us > 0.5 * t.duration_us && t.host_wait_us < 0.05 * t.duration_us, "{t:?}");
}

#[test]
fn one_rank_alone_has_no_peers() {
    let files = find_trace(&run_dir("torch-4-late2-30ms"), Some("rank-1")).unwrap();
    let tl = read_timeline(&files, 1 << 30).unwrap();
    let r = analyze_trace(&tl, &TraceOptions::default());
    assert_eq!(r.devices.len(), 1);
    assert!(r.collectives.is_empty() && r.straggler.is_none());
    assert!(r.notes.iter().any(|n| n.contains("no peer")), "{:?}", r.notes);
    assert_eq!(r.total.unwrap().wait_for_peers_us, 0.0);
}

/// A rank's trace in the folder that is a FIFO, a link to a device or a link to nothing is refused by its name,
/// without reading it (no hang on the FIFO, nothing from /dev/zero): the run is never analysed a rank short in
/// silence.
#[test]
fn a_rank_that_is_not_a_regular_file_is_refused_by_name() {
    for (name, make) in [
        ("rank-7.pt.trace.json", "fifo"),
        ("rank-8.pt.trace.json", "/dev/zero"),
        ("rank-9.pt.trace.json", "/nonexistent/trace"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        for e in std::fs::read_dir(run_dir("torch-4-late2-30ms")).unwrap().flatten() {
            std::fs::copy(e.path(), dir.path().join(e.file_name())).unwrap();
        }
        let odd = dir.path().join(name);
        if make == "fifo" {
            assert!(std::process::Command::new("mkfifo").arg(&odd).status().unwrap().success());
        } else {
            std::os::unix::fs::symlink(make, &odd).unwrap();
        }
        let err = find_trace(dir.path(), None).unwrap_err().to_string();
        assert!(err.contains(name), "{make}: {err}");
        // Without it, the folder is the run of its four ranks.
        std::fs::remove_file(&odd).unwrap();
        let files = find_trace(dir.path(), None).unwrap();
        assert!(matches!(files, falcon_analysis::input::TraceFiles::ChromeRanks(ref r) if r.len() == 4), "{files:?}");
    }
}

#[test]
fn compare_says_per_host_what_changed_and_that_the_straggler_is_gone() {
    let files = |name: &str| falcon_analysis::input::find_profiles(&run_dir(name), None).unwrap();
    let (a, b) = (files("jax-4-late2-30ms"), files("jax-4-control"));
    let c = falcon_analysis::compare::compare_files(
        ("late", &a),
        ("control", &b),
        &falcon_analysis::compare::CompareOptions::default(),
    )
    .unwrap();
    let s = c.straggler.as_ref().unwrap();
    assert_eq!((s.a_host.as_deref(), s.b_host.as_deref()), (Some("host-2"), None), "{s:?}");
    assert!(s.summary.contains("gone in B"), "{}", s.summary);
    assert_eq!(c.hosts.len(), 4);
    for h in &c.hosts {
        let (wa, wb) = (h.a_wait_for_peers_us.unwrap(), h.b_wait_for_peers_us.unwrap());
        if h.host == "host-2" {
            assert_eq!((wa, h.a_steps_late), (0.0, Some(10)));
        } else {
            // ~30 ms a step waiting for host-2 in A; ~1 ms in the control.
            assert!(wa > 25_000.0 && wb < 5_000.0, "{h:?}");
        }
    }
}

/// A public 8-GPU run (DLRM, 8 × V100, NCCL; facebookresearch/param's `dlrm_kineto`, MIT): one profiled step, so
/// each collective is a draw. HTA 0.5.0's own answers on the same files are in `hta.json`
/// (`examples/multihost/hta_reference.py`).
#[test]
fn public_nccl_traces_agree_with_the_reference_and_with_hta() {
    let name = "hta-dlrm-8";
    let r = report(name);
    let hta: Value = serde_json::from_str(&std::fs::read_to_string(run_dir(name).join("hta.json")).unwrap()).unwrap();
    let reference = reference(name);
    assert_eq!(r.hosts.len(), 8);
    for h in &r.hosts {
        let want = &reference["per_host"][&h.host];
        assert!(within(h.collective_wait_us, want["wait_for_peers_us"].as_f64().unwrap(), 0.01), "{}", h.host);
        assert!(within(h.collective_transfer_us, want["transfer_us"].as_f64().unwrap(), 0.01), "{}", h.host);
        // HTA's communication-kernel time per rank is the union of the same kernels: wait + transfer.
        let comm = hta["per_rank"][&h.host]["communication_kernels"]["total_us"].as_f64().unwrap();
        assert!(within(h.collective_wait_us + h.collective_transfer_us, comm, 0.01), "{}: vs HTA {comm}", h.host);
    }
    // HTA names rank-7 its one straggler candidate; Falcon too, and says by how much and at which collectives.
    assert_eq!(hta["potential_stragglers"]["num_candidates=1"][0], "rank-7");
    let s = r.straggler.as_ref().unwrap_or_else(|| panic!("no straggler: {:?}", r.notes));
    assert_eq!((s.host.as_str(), s.unit.as_str(), s.steps_late, s.steps), ("rank-7", "collective", 5, 8));
    assert!(within(s.late_us_median, 167.0, 0.05), "{}", s.late_us_median);
    // HTA's second candidate is wrong here: it compares each rank's last communication kernel of at least 1 % of the
    // step, and ranks 4 and 5 — last at the 6th collective — ran theirs short *because* they were late, so HTA
    // compared them on another collective and named rank-2, which arrived last at none.
    assert_eq!(hta["potential_stragglers"]["num_candidates=2"], serde_json::json!(["rank-2", "rank-7"]));
    let rank2 = r.hosts.iter().find(|h| h.host == "rank-2").unwrap();
    assert_eq!((rank2.times_last, rank2.steps_late), (0, 0));
    // Bytes and kind of each collective from the record that launched its kernel (`nccl:all_to_all` with its `Input
    // Dims` and `Input type`, found by the kernel's correlation id): the kernels' own args say neither, and their
    // names say `SendRecv` for what is an all-to-all.
    let mut ours: Vec<(String, u64)> = r
        .collectives
        .iter()
        .flat_map(|c| std::iter::repeat_n((c.kind.clone(), c.bytes.unwrap()), c.instances))
        .collect();
    let mut want: Vec<(String, u64)> = reference["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["collective"].as_str().unwrap().replace('_', "-"), i["bytes"].as_u64().unwrap()))
        .collect();
    ours.sort();
    want.sort();
    assert_eq!(ours, want);
    let big = r.collectives.iter().find(|c| c.bytes == Some(1_576_964)).unwrap();
    let algbw = 1_576_964.0 / (big.transfer_us_mean * 1e-6) / 1e9;
    assert!(within(big.busbw_gbps.unwrap(), algbw * 2.0 * 7.0 / 8.0, 1e-9), "all-reduce over 8: 2(n−1)/n");
    // The transfer is tiny against the waiting (the GPUs' clocks agree: each collective ends within µs on all ranks).
    let t = r.total.unwrap();
    assert!(t.wait_for_peers_us > 10.0 * t.transfer_us, "{t:?}");
}

/// Hosts whose clocks disagree (here host-1's moved 50 ms ahead, as an unsynchronised host would be): the clocks are
/// aligned on the collectives' ends, said in a note, and the answer is the synchronised one.
#[test]
fn a_host_whose_clock_is_off_is_aligned_on_the_collectives_ends() {
    use falcon_analysis::trace::members::{host_members, merge};
    let parts: Vec<_> = falcon_analysis::input::find_profiles(&run_dir("jax-4-late2-30ms"), None)
        .unwrap()
        .iter()
        .map(|f| {
            let space = falcon_analysis::input::load_host(f).unwrap();
            host_members(&falcon_analysis::profile::hlo::collectives::xspace_timeline(&space, &f.host))
        })
        .collect();
    let synced = merge(&parts).unwrap();
    assert!(!synced.notes.iter().any(|n| n.contains("clocks disagree")), "{:?}", synced.notes);
    let mut skewed = parts.clone();
    skewed[1].origin_ps += 50_000_000_000; // 50 ms
    let m = merge(&skewed).unwrap();
    let note = m.notes.iter().find(|n| n.contains("clocks disagree")).unwrap_or_else(|| panic!("{:?}", m.notes));
    // 50 ms, less the run's own scatter of the ends (a few tenths of a ms on this machine).
    assert!(note.contains("host-1 +49.") || note.contains("host-1 +50."), "{note}");
    let s = m.straggler.as_ref().unwrap();
    assert_eq!((s.host.as_str(), s.steps_late), ("host-2", 10));
    assert!(within(s.late_us_median, synced.straggler.as_ref().unwrap().late_us_median, 0.02));
    for (a, b) in m.hosts.iter().zip(&synced.hosts) {
        assert_eq!(a.host, b.host);
        assert!(
            within(a.collective_wait_us, b.collective_wait_us, 0.02),
            "{}: {} vs {}",
            a.host,
            a.collective_wait_us,
            b.collective_wait_us
        );
        assert!(within(a.wait_for_peers_us, b.wait_for_peers_us, 0.02), "{}: exposed wait", a.host);
    }
}

/// Two process groups that number their collectives alike (sequence 0, 1, … in each): a collective is its group's
/// sequence number, so a rank late in one group only is late there, and each group's all-reduces stay apart.
#[test]
fn the_same_sequence_number_in_two_process_groups_is_two_collectives() {
    let dir = tempfile::tempdir().unwrap();
    // Rank r's kernels: in group "dp", sequence 0 and 1, on time; in group "tp", sequence 0 and 1, rank 1 500 µs late.
    for rank in 0..2i64 {
        let base = 1_700_000_000_000_000i64; // µs since the epoch
        let mut events = vec![serde_json::json!({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1",
            "pid": 100 + rank, "tid": 1, "ts": base, "dur": 10_000})];
        for (k, (group, seq, start)) in
            [("dp", 0, 1_000), ("tp", 0, 3_000), ("dp", 1, 5_000), ("tp", 1, 7_000)].iter().enumerate()
        {
            let late = if *group == "tp" && rank == 1 { 500 } else { 0 };
            events.push(serde_json::json!({"ph": "X", "cat": "kernel",
                "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                "pid": rank, "tid": 7, "ts": base + start + late, "dur": 800 - late,
                "args": {"stream": 7, "correlation": 10 + k, "Collective name": "allreduce", "In msg nelems": 1024,
                         "Out msg nelems": 1024, "dtype": "Float", "Group size": 2, "Process Group Name": group,
                         "Seq": seq}}));
        }
        let trace = serde_json::json!({"distributedInfo": {"rank": rank, "world_size": 2, "backend": "nccl"},
            "traceEvents": events});
        std::fs::write(dir.path().join(format!("rank{rank}.pt.trace.json")), trace.to_string()).unwrap();
    }
    let r = {
        let files = find_trace(dir.path(), None).unwrap();
        analyze_trace(&read_timeline(&files, 1 << 30).unwrap(), &TraceOptions::default())
    };
    let scopes: Vec<(&str, usize, Option<u64>)> =
        r.collectives.iter().map(|c| (c.scope.as_str(), c.instances, c.bytes)).collect();
    assert_eq!(scopes, [("dp", 2, Some(4096)), ("tp", 2, Some(4096))], "{:?}", r.collectives);
    let dp = &r.collectives[0];
    let tp = &r.collectives[1];
    assert_eq!(dp.wait_for_peers_us, 0.0, "nobody waits in dp");
    // In tp rank 0 waits 500 µs at each of 2 collectives: a mean over the 2 members of 250 µs each.
    assert!(within(tp.wait_for_peers_us, 500.0, 1e-9), "{tp:?}");
    let rank1 = r.hosts.iter().find(|h| h.host == "rank-1").unwrap();
    assert_eq!(rank1.times_last, 2, "last at tp's two collectives only");
}

/// An XSpace names a TPU op by its HLO instruction: the all-reduce of the TPU v6e capture moves
/// f32[5,1024,1024,256] (5 GiB) in replica groups of 2 (`replica_groups=[4,2]<=[2,4]T(1,0)`), so its bus bandwidth
/// is its algorithm bandwidth (factor 2(n−1)/n = 1 for n = 2), whatever the 4 devices matched.
#[test]
fn xspace_collectives_take_bytes_and_group_from_their_hlo_instruction() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-xplane/tests/data/tpu_v6e_inference.xplane.pb");
    let space = falcon_xplane::decode_file(&path).unwrap();
    let tl = falcon_analysis::timeline::xspace::from_xspace(&space, "");
    let r = analyze_trace(&tl, &TraceOptions::default());
    let c = &r.collectives[0];
    assert_eq!((c.name.as_str(), c.instances, c.members, c.group_size), ("all-reduce", 3, 4, Some(2)));
    assert_eq!(c.bytes, Some(5 * 1024 * 1024 * 256 * 4));
    assert!(c.bytes_source.as_deref().is_some_and(|s| s.contains("HLO")));
    let algbw = 5.0 * 1024.0 * 1024.0 * 256.0 * 4.0 / (c.transfer_us_mean * 1e-6) / 1e9;
    assert!(within(c.algbw_gbps.unwrap(), algbw, 1e-9) && c.busbw_factor == 1.0);
    assert!(r.notes.iter().any(|n| n.contains("replica groups of 2 among the 4 devices")), "{:?}", r.notes);
}

/// An XLA:CPU op event names its instruction (`all-reduce.3`) but not its shapes: the bytes come from that
/// instruction in the capture's own HLO program (`/host:metadata`). The truth is the workload's: `jax_dp.py`'s MLP
/// has three `width × width` f32 weights whose gradients XLA all-reduces as one tuple each step — 3·w²·4 bytes
/// (w = 256, and 2048 for the transfer run: 48 MiB).
#[test]
fn xla_cpu_collectives_take_their_bytes_from_the_captures_hlo() {
    for (run, width) in [
        ("jax-4-late2-30ms", 256u64),
        ("jax-4-control", 256),
        ("jax-8-late5-15ms", 256),
        ("jax-8-late5-80ms", 256),
        ("jax-4-transfer", 2048),
    ] {
        let r = report(run);
        assert_eq!(r.collectives.len(), 1, "{run}");
        let c = &r.collectives[0];
        assert_eq!(c.bytes, Some(3 * width * width * 4), "{run}");
        assert!(c.bytes_source.as_deref().is_some_and(|s| s.contains("HLO")), "{run}: {:?}", c.bytes_source);
        let n = c.members as f64;
        let algbw = (3 * width * width * 4) as f64 / (c.transfer_us_mean * 1e-6) / 1e9;
        assert!(within(c.algbw_gbps.unwrap(), algbw, 1e-9), "{run}");
        assert!(within(c.busbw_gbps.unwrap(), algbw * 2.0 * (n - 1.0) / n, 1e-9), "{run}: 2(n−1)/n");
    }
}

/// Bus bandwidth is held against one direction of the link the members share, from the chip the trace names: the
/// DLRM ranks' `deviceProperties` say `Tesla V100-SXM2-32GB` (NVLink 2, 300 GB/s both ways per GPU, so 150 one
/// way); the TPU v6e capture's planes say v6e (ICI, 800 GB/s both ways per chip). CPU hosts over gloo have no
/// catalogued link, and a note says so rather than a number.
#[test]
fn busbw_is_held_against_the_links_peak_where_the_catalog_knows_it() {
    let r = report("hta-dlrm-8");
    assert!(!r.collectives.is_empty());
    for c in &r.collectives {
        let l = c.link.as_ref().unwrap_or_else(|| panic!("{}: no link", c.name));
        assert_eq!((l.name.as_str(), l.chip.as_str(), l.peak_gbps), ("NVLink 2", "v100-sxm2", 150.0));
        let busbw = c.busbw_gbps.unwrap();
        assert!(within(l.busbw_percent.unwrap(), 100.0 * busbw / 150.0, 1e-9), "{}", c.name);
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-xplane/tests/data/tpu_v6e_inference.xplane.pb");
    let space = falcon_xplane::decode_file(&path).unwrap();
    let tpu = analyze_trace(&falcon_analysis::timeline::xspace::from_xspace(&space, ""), &TraceOptions::default());
    let l = tpu.collectives[0].link.as_ref().unwrap();
    assert_eq!((l.name.as_str(), l.chip.as_str(), l.peak_gbps), ("ICI", "v6e", 400.0));
    assert!(within(l.busbw_percent.unwrap(), 100.0 * tpu.collectives[0].busbw_gbps.unwrap() / 400.0, 1e-9));
    let cpu = report("jax-4-transfer");
    assert!(cpu.collectives[0].busbw_gbps.is_some() && cpu.collectives[0].link.is_none());
    assert!(
        cpu.notes.iter().any(|n| n.contains("not held against a link") && n.contains("CPU hosts")),
        "{:?}",
        cpu.notes
    );
}
