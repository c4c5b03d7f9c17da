//! The layering test: the workspace keeps every arrow of docs/DESIGN.md §1 out, and the check itself catches an
//! injected forbidden edge.

use cargo_metadata::Metadata;
use serde_json::{json, Value};
use xtask::layering_violations;

fn metadata_json() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // Not `--offline`: metadata resolves the lock for every platform, which needs crates (e.g. Windows-only
    // ones) that a build on this host never downloads, so an empty cargo home would fail offline.
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("run cargo metadata");
    assert!(out.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

fn parse(value: Value) -> Metadata {
    serde_json::from_value(value).expect("cargo metadata JSON parses")
}

fn id_of(meta: &Value, name: &str) -> String {
    meta["packages"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap()["id"].as_str().unwrap().to_string()
}

/// Adds an edge `from → to` of the given kind (`null` = normal, "dev", "build") to the resolve graph.
fn inject(mut meta: Value, from: &str, to: &str, kind: Value) -> Metadata {
    let (from_id, to_id) = (id_of(&meta, from), id_of(&meta, to));
    let node =
        meta["resolve"]["nodes"].as_array_mut().unwrap().iter_mut().find(|n| n["id"] == from_id.as_str()).unwrap();
    node["deps"].as_array_mut().unwrap().push(json!({
        "name": to.replace('-', "_"),
        "pkg": to_id,
        "dep_kinds": [{ "kind": kind, "target": null }]
    }));
    parse(meta)
}

#[test]
fn the_workspace_keeps_every_forbidden_arrow_out() {
    let violations = layering_violations(&parse(metadata_json()));
    assert!(
        violations.is_empty(),
        "layering violations (docs/DESIGN.md §1):\n{}",
        violations.iter().map(|v| format!("  {v}")).collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn an_interface_crate_naming_a_storage_crate_is_caught() {
    let meta = metadata_json();
    for forbidden in ["falcon-infra", "falcon-job", "sqlx", "opendal"] {
        let v = layering_violations(&inject(meta.clone(), "falcon-cli", forbidden, Value::Null));
        assert!(v.iter().any(|v| v.krate == "falcon-cli" && v.dependency == forbidden), "{forbidden}: {v:?}");
    }
    let v = layering_violations(&inject(meta, "falcon-api", "falcon-infra", json!("build")));
    assert!(v.iter().any(|v| v.krate == "falcon-api" && v.dependency == "falcon-infra"), "build edges count: {v:?}");
}

#[test]
fn a_transitive_arrow_is_caught_with_its_path() {
    // falcon-job → falcon-exp would put EXP (and business words) below the Job module.
    let v = layering_violations(&inject(metadata_json(), "falcon-job", "falcon-exp", Value::Null));
    let hit = v.iter().find(|v| v.krate == "falcon-job" && v.dependency == "falcon-exp").expect("caught");
    assert!(hit.rule.contains("falcon-job → falcon-exp"), "{hit}");
    // falcon-infra → falcon-job reaches nothing new, but infra must never depend on anything above it.
    let v = layering_violations(&inject(metadata_json(), "falcon-infra", "falcon-job", Value::Null));
    assert!(v.iter().any(|v| v.krate == "falcon-infra" && v.dependency == "falcon-job"), "{v:?}");
    // EXP reaching analysis through another crate is caught too.
    let v = layering_violations(&inject(metadata_json(), "falcon-job", "falcon-analysis", Value::Null));
    assert!(
        v.iter().any(|v| v.krate == "falcon-exp"
            && v.dependency == "falcon-analysis"
            && v.rule.contains("falcon-exp → falcon-job → falcon-analysis")),
        "{v:?}"
    );
}

#[test]
fn dev_dependencies_are_ignored() {
    let v = layering_violations(&inject(metadata_json(), "falcon-cli", "falcon-infra", json!("dev")));
    assert!(v.is_empty(), "{v:?}");
}

#[test]
fn front_ends_reach_exp_and_analysis_only_through_falcon_app() {
    let meta = metadata_json();
    for (front, lower) in [
        ("falcon-cli", "falcon-exp"),
        ("falcon-cli", "falcon-analysis"),
        ("falcon-api", "falcon-exp"),
        ("falcon-api", "falcon-analysis"),
        ("falcon-mcp", "falcon-exp"),
        ("falcon-mcp", "falcon-analysis"),
        ("falcon-mcp", "falcon-infra"),
    ] {
        let v = layering_violations(&inject(meta.clone(), front, lower, Value::Null));
        assert!(v.iter().any(|v| v.krate == front && v.dependency == lower), "{front} → {lower}: {v:?}");
    }
    // The application layer itself never names storage or cluster crates.
    for forbidden in ["falcon-infra", "falcon-job", "sqlx", "opendal", "kube"] {
        let v = layering_violations(&inject(meta.clone(), "falcon-app", forbidden, Value::Null));
        assert!(v.iter().any(|v| v.krate == "falcon-app" && v.dependency == forbidden), "{forbidden}: {v:?}");
    }
    // Nothing below the application layer reaches up to it.
    let v = layering_violations(&inject(meta, "falcon-exp", "falcon-app", Value::Null));
    assert!(v.iter().any(|v| v.krate == "falcon-exp" && v.dependency == "falcon-app"), "{v:?}");
}

#[test]
fn the_protocol_front_ends_do_not_name_each_other() {
    let meta = metadata_json();
    for (a, b) in [("falcon-mcp", "falcon-api"), ("falcon-api", "falcon-mcp")] {
        let v = layering_violations(&inject(meta.clone(), a, b, Value::Null));
        assert!(v.iter().any(|v| v.krate == a && v.dependency == b), "{a} → {b}: {v:?}");
    }
    // As they are now: each names falcon-app and falcon-core only among Falcon's crates.
    let deps = |name: &str| -> Vec<String> {
        let m: cargo_metadata::Metadata = serde_json::from_value(meta.clone()).unwrap();
        let p = m.packages.iter().find(|p| p.name.as_str() == name).unwrap_or_else(|| panic!("no crate {name}"));
        let mut d: Vec<String> = p
            .dependencies
            .iter()
            .filter(|d| d.kind != cargo_metadata::DependencyKind::Development && d.name.starts_with("falcon-"))
            .map(|d| d.name.clone())
            .collect();
        d.sort();
        d
    };
    assert_eq!(deps("falcon-mcp"), ["falcon-app", "falcon-core"]);
    assert_eq!(deps("falcon-api"), ["falcon-app", "falcon-core"]);
}

#[test]
fn no_product_crate_depends_on_the_test_only_fake() {
    let meta = metadata_json();
    for product in ["falcon-cli", "falcon-job", "falcon-app"] {
        let v = layering_violations(&inject(meta.clone(), product, "fake-kube-apiserver", Value::Null));
        assert!(v.iter().any(|v| v.krate == product && v.dependency == "fake-kube-apiserver"), "{product}: {v:?}");
    }
    // As a dev-dependency (falcon-job's tests use it) it is fine.
    let v = layering_violations(&inject(meta, "falcon-cli", "fake-kube-apiserver", json!("dev")));
    assert!(v.is_empty(), "{v:?}");
}
