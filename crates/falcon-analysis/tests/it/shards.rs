//! A run analysed in shards (each shard's partials encoded, decoded and merged, as a fanned-out analysis does
//! across cluster jobs) gives the report the single-process analysis gives, byte for byte in JSON, on every
//! capture kind (XLA:CPU, TPU v6e, V100, H200) and on a multi-host run with a host that cannot be read.

use std::path::{Path, PathBuf};

use falcon_analysis::input::{find_profiles, HostFile};
use falcon_analysis::profile::partial::{
    analyze_shard, decode_shard, encode_shard, merge_shards, shard_range, ShardMerge, ShardPartial,
};
use falcon_analysis::profile::{analyze_files, AnalyzeOptions, Tool};

fn here(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn captures() -> Vec<PathBuf> {
    vec![
        here("tests/data/jax_cpu_mlp_vm.xplane.pb"),
        here("../falcon-xplane/tests/data/tpu_v6e_inference.xplane.pb"),
        here("../falcon-xplane/tests/data/gpu_v100x8_tf.xplane.pb"),
        here("tests/data/h200/jax_tfm8_b8/vm.xplane.pb"),
    ]
}

fn tool_sets() -> Vec<Vec<Tool>> {
    vec![vec![], vec![Tool::Overview], vec![Tool::Ops, Tool::Hlo], vec![Tool::Steps, Tool::Kernels]]
}

/// The merged report of `files` in `n` shards, each shard's partials through their bytes.
fn sharded(files: &[HostFile], n: usize, options: &AnalyzeOptions) -> String {
    let run_hosts: Vec<String> = files.iter().map(|f| f.host.clone()).collect();
    let shards: Vec<ShardPartial> = (0..n)
        .rev() // the merge puts them in order
        .map(|k| {
            let mine = files[shard_range(files.len(), k, n)].iter().cloned().map(Ok);
            let partial = analyze_shard(run_hosts.clone(), mine, k, n, options).unwrap();
            decode_shard(&encode_shard(&partial).unwrap(), "shard").unwrap()
        })
        .collect();
    let by_name = files.to_vec();
    let open = move |f: &HostFile| Ok(by_name.iter().find(|g| g.host == f.host).unwrap().clone());
    serde_json::to_string(&merge_shards(shards, open, options).unwrap()).unwrap()
}

fn single(files: &[HostFile], options: &AnalyzeOptions) -> String {
    serde_json::to_string(&analyze_files(files, options).unwrap()).unwrap()
}

#[test]
fn one_host_in_one_shard_is_the_single_process_report() {
    for capture in captures() {
        let files = find_profiles(&capture, None).unwrap();
        for tools in tool_sets() {
            let options = AnalyzeOptions { tools: tools.clone(), ..Default::default() };
            assert_eq!(sharded(&files, 1, &options), single(&files, &options), "{} {tools:?}", capture.display());
        }
    }
}

fn multi_host_run(dir: &Path) -> Vec<HostFile> {
    let tpu = here("../falcon-xplane/tests/data/tpu_v6e_inference.xplane.pb");
    let bytes = std::fs::read(&tpu).unwrap();
    for i in 0..7 {
        std::fs::write(dir.join(format!("host{i:02}.xplane.pb")), &bytes).unwrap();
    }
    // A host whose job was killed while writing it: named in failed_hosts, the others analysed.
    std::fs::write(dir.join("host03.xplane.pb"), &bytes[..bytes.len() / 3]).unwrap();
    find_profiles(dir, None).unwrap()
}

#[test]
fn a_multi_host_run_in_any_number_of_shards_is_the_single_process_report() {
    let dir = tempfile::tempdir().unwrap();
    let files = multi_host_run(dir.path());
    for tools in tool_sets() {
        let options = AnalyzeOptions { tools: tools.clone(), ..Default::default() };
        let want = single(&files, &options);
        assert!(want.contains("\"failed_hosts\""), "the truncated host is named: {want:.300}");
        for n in [1, 2, 3, 7] {
            assert_eq!(sharded(&files, n, &options), want, "{n} shards, tools {tools:?}");
        }
    }
}

#[test]
fn shards_split_the_hosts_exactly_once_and_evenly() {
    for hosts in [0, 1, 5, 64, 65] {
        for n in 1..=9 {
            let ranges: Vec<_> = (0..n).map(|k| shard_range(hosts, k, n)).collect();
            let covered: Vec<usize> = ranges.iter().flat_map(|r| r.clone()).collect();
            assert_eq!(covered, (0..hosts).collect::<Vec<_>>(), "{hosts} hosts in {n}");
            let lens: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
            assert!(lens.iter().max().unwrap() - lens.iter().min().unwrap() <= 1, "{lens:?}");
        }
    }
}

#[test]
fn a_merge_refuses_missing_duplicated_or_mismatched_shards() {
    let dir = tempfile::tempdir().unwrap();
    let files = multi_host_run(dir.path());
    let options = AnalyzeOptions { tools: vec![Tool::Steps], ..Default::default() };
    let run_hosts: Vec<String> = files.iter().map(|f| f.host.clone()).collect();
    let shard = |k: usize, n: usize, hosts: Vec<String>| {
        let mine = files[shard_range(files.len(), k, n)].iter().cloned().map(Ok);
        analyze_shard(hosts, mine, k, n, &options).unwrap()
    };
    let open = |f: &HostFile| Ok(f.clone());
    let err = |shards: Vec<ShardPartial>| merge_shards(shards, open, &options).unwrap_err().to_string();
    assert!(err(vec![]).contains("no shard"), "{}", err(vec![]));
    let missing = err(vec![shard(0, 3, run_hosts.clone()), shard(2, 3, run_hosts.clone())]);
    assert!(missing.contains("not shards 0..2 of 2"), "{missing}");
    let twice = err(vec![shard(0, 2, run_hosts.clone()), shard(0, 2, run_hosts.clone())]);
    assert!(twice.contains("not shards"), "{twice}");
    let mut other = run_hosts.clone();
    other.reverse();
    let listed = err(vec![shard(0, 2, run_hosts.clone()), shard(1, 2, other)]);
    assert!(listed.contains("listed the run's hosts differently"), "{listed}");
    // A shard that analysed another shard's hosts.
    let mut wrong = shard(1, 2, run_hosts.clone());
    wrong.hosts.reverse();
    let hosts = err(vec![shard(0, 2, run_hosts.clone()), wrong]);
    assert!(hosts.contains("did not analyse exactly its hosts"), "{hosts}");
    // Merged one at a time: a merge that ends before its last shard says so.
    let mut merge = ShardMerge::new(2, &options);
    merge.add(shard(0, 2, run_hosts.clone())).unwrap();
    let early = merge.finish(None).unwrap_err().to_string();
    assert!(early.contains("only 1 of the run's 2 shards"), "{early}");
}

#[test]
fn a_partial_of_another_format_or_not_a_partial_is_refused_by_name() {
    let e = decode_shard(b"not cbor at all", "partial.cbor of job 3").unwrap_err().to_string();
    assert!(e.contains("partial.cbor of job 3") && e.contains("not a shard's partial"), "{e}");
    let mut p = analyze_shard(vec![], Vec::new(), 0, 1, &AnalyzeOptions::default()).unwrap();
    p.version = 99;
    let e = decode_shard(&encode_shard(&p).unwrap(), "old.cbor").unwrap_err().to_string();
    assert!(e.contains("old.cbor") && e.contains("format 99"), "{e}");
    for cut in [0, 1, 7] {
        let bytes =
            encode_shard(&analyze_shard(vec!["a".into()], Vec::new(), 0, 1, &Default::default()).unwrap()).unwrap();
        assert!(decode_shard(&bytes[..cut.min(bytes.len())], "cut").is_err());
    }
}
