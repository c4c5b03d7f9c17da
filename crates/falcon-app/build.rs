//! Embeds the repository's agent skills (`skills/<name>/…`, every file of every skill folder) into the binary, so
//! every front end can list, show and install them without the repository beside it. Writes
//! `$OUT_DIR/skills.rs`: `FILES: &[(&str, &[u8])]`, each file's path below `skills/` and its bytes, sorted.

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let root = manifest.join("../../skills");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&root) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() && path.join("SKILL.md").is_file() {
                walk(&root, &path, &mut files);
            }
        }
    }
    files.sort();
    let mut out = String::from("/// Every file of every skill folder: its path below `skills/`, its bytes.\npub static FILES: &[(&str, &[u8])] = &[\n");
    for (relative, absolute) in &files {
        out.push_str(&format!("    ({relative:?}, include_bytes!({:?})),\n", absolute.display().to_string()));
    }
    out.push_str("];\n");
    let target = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("skills.rs");
    std::fs::write(&target, out).expect("writing skills.rs");
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(root, &path, out);
        } else if path.is_file() {
            let relative = path.strip_prefix(root).expect("below skills/").to_string_lossy().replace('\\', "/");
            let absolute = path.canonicalize().unwrap_or(path);
            out.push((relative, absolute));
        }
    }
}
