//! Sweep files: a 2×2 grid over the llama3-8b spec, and the mistakes a sweep can make.

use falcon_core::spec::{config_hash, parse_spec};
use falcon_exp::sweep::{expand, expand_points, MAX_COMBINATIONS};
use serde_json::json;
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/specs")
}

fn data(name: &str) -> String {
    std::fs::read_to_string(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// What EXP does: read the base relative to the sweep file's folder.
fn load_base(path: &str) -> Result<String, String> {
    std::fs::read_to_string(dir().join(path)).map_err(|e| e.to_string())
}

#[test]
fn a_two_by_two_sweep_gives_four_named_specs() {
    let points = expand_points(&data("sweep-2x2.yaml"), "sweep-2x2.yaml", load_base).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = points.iter().map(|p| p.spec.name.as_str()).collect();
    assert_eq!(
        names,
        ["llama3-8b-bs128-full", "llama3-8b-bs128-minimal", "llama3-8b-bs256-full", "llama3-8b-bs256-minimal"]
    );
    assert_eq!(
        points[1].assignments,
        vec![("config.batch_size".into(), json!(128)), ("config.remat".into(), json!("minimal"))]
    );
    for point in &points {
        let [(_, bs), (_, remat)] = &point.assignments[..] else { panic!("two axes") };
        assert_eq!(&point.spec.config["batch_size"], bs);
        assert_eq!(&point.spec.config["remat"], remat);
        assert_eq!(point.spec.config["parallelism"]["fsdp"], 16, "the rest comes from the base");
    }
    // A combination is the same experiment as the spec written out by hand.
    let by_hand =
        parse_spec(&data("llama3-8b-remat-minimal-bs128.yaml"), "llama3-8b-remat-minimal-bs128.yaml").unwrap();
    assert_eq!(config_hash(&points[1].spec), config_hash(&by_hand));
    let base = parse_spec(&data("llama3-8b.yaml"), "llama3-8b.yaml").unwrap();
    assert_eq!(config_hash(&points[2].spec), config_hash(&base));
    let mut renamed = points[2].spec.clone();
    renamed.name = base.name.clone();
    assert_eq!(renamed, base);
    // expand() is the same list without the assignments.
    let specs = expand(&data("sweep-2x2.yaml"), "sweep-2x2.yaml", load_base).unwrap();
    assert_eq!(specs, points.into_iter().map(|p| p.spec).collect::<Vec<_>>());
}

#[test]
fn a_bad_combination_names_the_sweep_and_the_combination() {
    let e = expand(&data("sweep-bad-parallelism.yaml"), "sweep-bad-parallelism.yaml", load_base).unwrap_err();
    // The parallelism is written in the base; the message says which combination broke it.
    assert_eq!((e.file.as_str(), e.line, e.column, e.path.as_str()), ("llama3-8b.yaml", 23, 3, "config.parallelism"));
    assert!(e.message.contains("= 16 but the job has 32 devices (v5litepod-32 × 1 slice)"), "{e}");
    assert!(
        e.message.ends_with("(sweep sweep-bad-parallelism.yaml, combination 2/2: resources.accelerator=v5e-32)"),
        "{e}"
    );

    // A bad swept value is reported where the sweep writes it.
    let text = "base: llama3-8b.yaml\nsweep:\n  resources.accelerator: [v5e-16, v5e-17]\n";
    let e = expand(text, "inline.yaml", load_base).unwrap_err();
    assert_eq!((e.file.as_str(), e.line, e.column, e.path.as_str()), ("inline.yaml", 3, 35, "resources.accelerator"));
    assert!(e.message.contains("did you mean `v5e-16`?") && e.message.contains("combination 2/2"), "{e}");
}

#[test]
fn names_must_tell_combinations_apart() {
    let e = expand(&data("sweep-name-clash.yaml"), "sweep-name-clash.yaml", load_base).unwrap_err();
    assert_eq!((e.file.as_str(), e.line, e.path.as_str()), ("sweep-name-clash.yaml", 6, "name_template"));
    assert!(e.message.contains("combinations 1 and 2 both get the name `llama3-8b-bs128`"), "{e}");
    let e = expand(
        "base: llama3-8b.yaml\nsweep: {config.remat: [a]}\nname_template: x-${config.bs}\n",
        "t.yaml",
        load_base,
    )
    .unwrap_err();
    assert!(e.message.contains("`${config.bs}`"), "{e}");
}

#[test]
fn too_many_combinations() {
    let list: Vec<String> = (1..=40).map(|i| i.to_string()).collect();
    let text =
        format!("base: llama3-8b.yaml\nsweep:\n  config.batch_size: [{0}]\n  config.seq_len: [{0}]\n", list.join(", "));
    let e = expand(&text, "big.yaml", load_base).unwrap_err();
    assert_eq!((e.line, e.path.as_str()), (2, "sweep"));
    assert_eq!(e.message, format!("40 × 40 combinations is more than {MAX_COMBINATIONS}"));
}

#[test]
fn a_json_sweep_without_a_template_names_by_value() {
    let text = r#"{"base": "llama3-8b.yaml", "sweep": {"config.remat": ["full", "minimal"], "resources.slices": [1, 2], "config.parallelism.dp": [1, 2]}}"#;
    let e = expand(text, "s.json", load_base).unwrap_err();
    // slices 1 with dp 2 is 32-way parallelism on 16 chips: the second combination is refused.
    assert!(
        e.message.ends_with("combination 2/8: config.remat=full, resources.slices=1, config.parallelism.dp=2)"),
        "{e}"
    );
    assert_eq!((e.file.as_str(), e.path.as_str()), ("llama3-8b.yaml", "config.parallelism"));

    let text = r#"{"base": "llama3-8b.yaml", "sweep": {"config.remat": ["full", "minimal"]}}"#;
    let names: Vec<String> = expand(text, "s.json", load_base).unwrap().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["llama3-8b-fsdp16-remat-full-rematfull", "llama3-8b-fsdp16-remat-full-rematminimal"]);
}
