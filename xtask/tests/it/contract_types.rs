//! Only the edge knows serialization: the storage crate (`falcon-infra`) keeps rows and EXP (`falcon-exp`) its
//! results without a wire schema of their own; the JSON the front ends return is `falcon_app::contract`'s (issue
//! 46). The test fails on a `JsonSchema` derive in either crate's sources and on either depending on `schemars`.

use std::path::{Path, PathBuf};

/// The crates below the edge.
const BELOW_THE_EDGE: [&str; 2] = ["falcon-infra", "falcon-exp"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The types a source declares with a `JsonSchema` derive (before its inline tests).
fn wire_types(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().take_while(|l| !l.starts_with("#[cfg(test)]")).collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if !(line.trim_start().starts_with("#[derive(") && line.contains("JsonSchema")) {
            continue;
        }
        let declared = lines[i + 1..].iter().take(12).find_map(|l| {
            let l = l.trim_start();
            let rest = l.strip_prefix("pub struct ").or_else(|| l.strip_prefix("pub enum "))?;
            Some(rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("").to_string())
        });
        found.extend(declared);
    }
    found
}

#[test]
fn the_storage_crate_and_exp_carry_no_wire_schema() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut problems = Vec::new();
    for krate in BELOW_THE_EDGE {
        let dir = root.join("crates").join(krate);
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        if manifest.lines().any(|l| l.trim_start().starts_with("schemars")) {
            problems.push(format!("{krate} depends on schemars: its wire views belong in falcon_app::contract"));
        }
        let mut files = Vec::new();
        rust_files(&dir.join("src"), &mut files);
        for f in files {
            for t in wire_types(&std::fs::read_to_string(&f).unwrap()) {
                problems
                    .push(format!("{krate}: {t} derives JsonSchema: its wire view belongs in falcon_app::contract"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_scan_finds_a_derive_and_its_type() {
    let text = "/// Doc.\n#[derive(Debug, Serialize, schemars::JsonSchema)]\n#[serde(rename_all = \"lowercase\")]\npub enum Kind {\n}\n#[derive(Debug)]\npub struct Plain;\n#[cfg(test)]\n#[derive(JsonSchema)]\npub struct InTests;";
    assert_eq!(wire_types(text), ["Kind"]);
}
