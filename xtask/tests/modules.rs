//! No two modules of a crate refer to each other (`xtask::modules`: `use`, `crate::`/`super::` paths, intra-doc
//! links and calls into child modules, a child's use of its own ancestors aside; a folder counts as one module). A
//! pair that does is one module in two files, or a helper that belongs in a third module both use.
//!
//! `KNOWN` lists the pairs still to be untangled (issue 35): the test fails on any pair not in it, and on any
//! entry that no longer occurs (take it out), so the list only shrinks.

use std::path::PathBuf;

const KNOWN: &[&str] = &[
    "falcon-api: dashboard ↔ routes",
    "falcon-api: dashboard ↔ security",
    "falcon-api: openapi ↔ routes",
];

#[test]
fn no_two_modules_of_a_crate_refer_to_each_other() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    crates.push(root.join("xtask/src"));
    crates.sort();
    let mut found = Vec::new();
    for src in &crates {
        let name = src.parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
        for (a, b) in xtask::modules::mutual_references(src) {
            found.push(format!("{name}: {} ↔ {}", if a.is_empty() { "(root)" } else { &a }, b));
        }
    }
    let new: Vec<&String> = found.iter().filter(|f| !KNOWN.contains(&f.as_str())).collect();
    assert!(new.is_empty(), "{} new pair(s) of modules refer to each other:\n  {new:?}", new.len());
    let gone: Vec<&&str> = KNOWN.iter().filter(|k| !found.iter().any(|f| f == *k)).collect();
    assert!(gone.is_empty(), "untangled: take these out of KNOWN: {gone:?}");
}
