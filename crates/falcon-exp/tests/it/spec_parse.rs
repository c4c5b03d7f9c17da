//! Spec files as engineers write them: a good llama3-8b spec and its JSON twin, and the mistakes that must be
//! caught before a job is spent, each reported at file:line:column with the field's path.

use falcon_core::catalog;
use falcon_core::ids::{ExperimentId, GoalId};
use falcon_core::spec::{canonical_json, config_hash, parse_spec, substitute, Capacity, ExperimentSpec, SpecError};
use falcon_core::status::Scenario;
use serde_json::json;
use std::path::PathBuf;

fn data(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/specs").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn parse(name: &str) -> Result<ExperimentSpec, SpecError> {
    parse_spec(&data(name), name)
}

fn refused(name: &str) -> SpecError {
    match parse(name) {
        Ok(spec) => panic!("{name} was accepted: {spec:?}"),
        Err(e) => e,
    }
}

#[test]
fn the_llama3_spec_parses() {
    let spec = parse("llama3-8b.yaml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(spec.name, "llama3-8b-fsdp16-remat-full");
    assert_eq!(spec.scenario, Scenario::Benchmark);
    assert_eq!((spec.goal, spec.baseline), (Some(GoalId(7)), Some(ExperimentId(41))));
    assert_eq!(spec.workload.framework, "maxtext");
    assert_eq!(spec.workload.command.len(), 8);
    assert_eq!(spec.config["parallelism"], json!({"dp": 1, "fsdp": 16, "tp": 1, "pp": 1, "ep": 1, "sp": 1}));
    assert_eq!(spec.config["optimizer"]["lr"], json!(3.0e-4));
    assert_eq!(spec.resources.capacity, Capacity::Spot);
    assert_eq!(spec.resources.zones, ["us-west4-a", "us-east5-b"]);
    assert_eq!((spec.timeout, spec.priority, spec.retries), (Some(7200), 3, 2));
    assert_eq!(spec.devices(), Some(16));
    assert_eq!(spec.accelerator_type().unwrap(), catalog::lookup("v5e-16").unwrap());
}

#[test]
fn the_json_twin_is_the_same_spec_with_the_same_hash() {
    let yaml = parse("llama3-8b.yaml").unwrap();
    let json = parse("llama3-8b.json").unwrap();
    assert_eq!(yaml, json);
    assert_eq!(config_hash(&yaml), config_hash(&json));
    let as_json = |s: &ExperimentSpec| canonical_json(&serde_json::to_value(s).unwrap());
    assert_eq!(as_json(&yaml), as_json(&json));
    // The hash is pinned (cross-checked with Python: json.dumps(sort_keys=True, separators=(",", ":")) and
    // hashlib.sha256): a change to canonicalisation or to what is hashed must be deliberate.
    assert_eq!(config_hash(&yaml), "62b1cf7832a22e7101bf80fbe46599c34e4f5c76f1683027011d67ce68adb59d");
}

#[test]
fn a_typo_in_a_top_level_key() {
    let e = refused("typo-resouces.yaml");
    assert_eq!((e.file.as_str(), e.line, e.column, e.path.as_str()), ("typo-resouces.yaml", 29, 1, "resouces"));
    assert_eq!(
        e.to_string(),
        "typo-resouces.yaml:29:1: resouces: unknown field `resouces` (did you mean `resources`?)"
    );
}

#[test]
fn a_wrong_type() {
    let e = refused("wrong-type-batch-size.yaml");
    assert_eq!((e.line, e.column, e.path.as_str()), (25, 15, "config.batch_size"));
    assert!(
        e.to_string().starts_with("wrong-type-batch-size.yaml:25:15: config.batch_size: must be a positive integer"),
        "{e}"
    );
    assert!(e.message.contains("\"big\""), "{e}");
}

#[test]
fn a_parallelism_product_that_misses_the_devices() {
    let e = refused("bad-parallelism.yaml");
    assert_eq!((e.line, e.column, e.path.as_str()), (23, 3, "config.parallelism"));
    assert_eq!(
        e.to_string(),
        "bad-parallelism.yaml:23:3: config.parallelism: dp×fsdp×tp×pp×ep×sp = 8 but the job has 16 devices (v5litepod-16 × 1 slice)"
    );
    assert!(e.hint.as_deref().unwrap().contains("fsdp: 16"), "{e:?}");
}

#[test]
fn an_unknown_accelerator() {
    let e = refused("unknown-accelerator.yaml");
    assert_eq!((e.line, e.column, e.path.as_str()), (30, 16, "resources.accelerator"));
    assert!(e.message.starts_with("unknown accelerator type `v5litepod-17` (did you mean `v5litepod-16`?)"), "{e}");
    assert_eq!(e.hint.as_deref(), Some("did you mean `v5litepod-16`?"));
}

#[test]
fn an_unknown_placeholder() {
    let e = refused("unknown-placeholder.yaml");
    assert_eq!((e.line, e.column, e.path.as_str()), (14, 7, "workload.command.4"));
    assert!(
        e.message.contains("`${config.batchsize}`") && e.message.contains("did you mean `config.batch_size`"),
        "{e}"
    );
}

#[test]
fn substitution_fills_command_and_env() {
    let spec = substitute(&parse("llama3-8b.yaml").unwrap()).unwrap();
    assert_eq!(
        spec.workload.command,
        [
            "python3",
            "-m",
            "maxtext.train",
            "model_name=llama3-8b",
            "per_device_batch_size=256",
            "max_target_length=8192",
            "remat_policy=full",
            "steps=100"
        ]
    );
    assert_eq!(spec.workload.env["MESH"], r#"{"dp":1,"ep":1,"fsdp":16,"pp":1,"sp":1,"tp":1}"#);
    assert_eq!(spec.workload.env["XLA_FLAGS"], "--xla_tpu_enable_latency_hiding_scheduler=true");
}
