//! Diffs of real spec files: what changed, in which group, and nothing for what did not.

use falcon_core::spec::parse_spec;
use falcon_exp::diff::{diff, diff_many, ChangeKind, Group};
use serde_json::{json, Value};
use std::path::PathBuf;

fn spec_json(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/specs").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::to_value(parse_spec(&text, name).unwrap_or_else(|e| panic!("{e}"))).unwrap()
}

#[test]
fn two_specs() {
    let a = spec_json("llama3-8b-dp2-fsdp8.yaml");
    let b = spec_json("llama3-8b.yaml");
    let changes = diff(&a, &b);
    let shown: Vec<String> = changes.iter().map(|c| c.to_string()).collect();
    assert_eq!(
        shown,
        [
            "config.parallelism.dp: 2 → 1",
            "config.parallelism.fsdp: 8 → 16",
            r#"name: "llama3-8b-dp2-fsdp8-remat-full" → "llama3-8b-fsdp16-remat-full""#,
        ]
    );
    let fsdp = &changes[1];
    assert_eq!(
        (fsdp.path.as_str(), fsdp.kind, fsdp.group),
        ("config.parallelism.fsdp", ChangeKind::Changed, Group::Parallelism)
    );
    assert_eq!((fsdp.a.clone(), fsdp.b.clone()), (Some(json!(8)), Some(json!(16))));
    assert_eq!(changes[2].group, Group::Bookkeeping, "the name says what a run is called, not what it runs");
    assert!(changes.iter().all(|c| !c.path.starts_with("config.remat") && !c.path.starts_with("resources")));
    assert_eq!(fsdp.group.as_str(), "parallelism");
    assert!(diff(&b, &b).is_empty());
}

#[test]
fn configs_only() {
    let a = spec_json("llama3-8b.yaml");
    let b = spec_json("llama3-8b-remat-minimal-bs128.yaml");
    let changes = diff(&a["config"], &b["config"]);
    let got: Vec<(&str, Group)> = changes.iter().map(|c| (c.path.as_str(), c.group)).collect();
    assert_eq!(got, [("batch_size", Group::BatchSequence), ("remat", Group::Remat)]);
}

#[test]
fn three_specs_show_only_the_keys_that_differ() {
    let specs = [
        ("base", spec_json("llama3-8b.yaml")),
        ("dp2", spec_json("llama3-8b-dp2-fsdp8.yaml")),
        ("minimal", spec_json("llama3-8b-remat-minimal-bs128.yaml")),
    ];
    let inputs: Vec<(&str, &Value)> = specs.iter().map(|(n, v)| (*n, &v["config"])).collect();
    let rows = diff_many(&inputs);
    let got: Vec<(&str, Group, Vec<Option<Value>>)> =
        rows.iter().map(|r| (r.path.as_str(), r.group, r.values.clone())).collect();
    assert_eq!(
        got,
        vec![
            ("batch_size", Group::BatchSequence, vec![Some(json!(256)), Some(json!(256)), Some(json!(128))]),
            ("parallelism.dp", Group::Parallelism, vec![Some(json!(1)), Some(json!(2)), Some(json!(1))]),
            ("parallelism.fsdp", Group::Parallelism, vec![Some(json!(16)), Some(json!(8)), Some(json!(16))]),
            ("remat", Group::Remat, vec![Some(json!("full")), Some(json!("full")), Some(json!("minimal"))]),
        ]
    );
}
