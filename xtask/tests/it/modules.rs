//! No two modules of a crate refer to each other (`xtask::modules`: `use`, `crate::`/`super::` paths, intra-doc
//! links and calls into child modules, a child's use of its own ancestors aside; a folder counts as one module). A
//! pair that does is one module in two files, or a helper that belongs in a third module both use.

use std::path::PathBuf;

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
    assert!(found.is_empty(), "{} pair(s) of modules refer to each other:\n  {}", found.len(), found.join("\n  "));
}
