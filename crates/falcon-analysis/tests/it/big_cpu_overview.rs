//! A big XLA:CPU capture's overview is computed with the capture freed as soon as the trace's timeline is built
//! (tool `overview` alone), or with it kept (beside tool `memory`, which reads it again): both give the same
//! overview, in one process and merged from a shard. The capture: 64 copies of the CPU fixture back to back, one
//! XSpace of 101,504 events (over the 100,000 at which the helper threads and the early free start).

use std::path::PathBuf;

use falcon_analysis::input::find_profiles;
use falcon_analysis::profile::partial::{analyze_shard, merge_shards};
use falcon_analysis::profile::{analyze_files, AnalyzeOptions, Tool};

#[test]
fn a_freed_capture_gives_the_overview_a_kept_one_gives() {
    let one =
        std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/jax_cpu_mlp_vm.xplane.pb")).unwrap();
    let bytes: Vec<u8> = std::iter::repeat_n(&one, 64).flatten().copied().collect();
    let space = falcon_xplane::decode(&bytes).unwrap();
    let events: usize = space.planes.iter().flat_map(|p| &p.lines).map(|l| l.events.len()).sum();
    assert!(events >= 100_000, "{events} events: under the threshold, the test would not take the early free");
    let dir = std::env::temp_dir().join(format!("falcon-big-cpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("vm.xplane.pb");
    std::fs::write(&path, &bytes).unwrap();
    let files = find_profiles(&path, None).unwrap();

    let alone = AnalyzeOptions { tools: vec![Tool::Overview], ..Default::default() };
    let kept = AnalyzeOptions { tools: vec![Tool::Overview, Tool::Memory], ..Default::default() };
    let freed = analyze_files(&files, &alone).unwrap();
    let with_memory = analyze_files(&files, &kept).unwrap();
    assert!(with_memory.memory.is_some());
    let overview = freed.overview.as_ref().expect("an overview");
    assert!(overview.step_time_ms.n > 0, "the capture has steps (else it is kept)");
    assert!(overview.device_duty_cycle_percent.is_some(), "the trace breakdown ran: {overview:?}");
    assert_eq!(serde_json::to_string(&freed.overview).unwrap(), serde_json::to_string(&with_memory.overview).unwrap());

    // Merged from one shard: the merge decodes the first host again and takes the same path.
    let run_hosts = vec![files[0].host.clone()];
    let shard = analyze_shard(run_hosts, files.iter().cloned().map(Ok), 0, 1, &alone).unwrap();
    let again = files.clone();
    let merged =
        merge_shards(vec![shard], move |f| Ok(again.iter().find(|g| g.host == f.host).unwrap().clone()), &alone)
            .unwrap();
    assert_eq!(serde_json::to_string(&merged).unwrap(), serde_json::to_string(&freed).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}
