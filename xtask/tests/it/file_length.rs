//! Every source file reads in one sitting: at most 800 lines before its inline tests (`#[cfg(test)]`). `LONG`
//! lists files still to be split along their seams, each with its length when listed (empty since issue 35 split
//! the last ones): the test fails on a file over the limit that is not listed, on a listed file that grew, and on
//! a listed file that is no longer over the limit (take it out), so the list only shrinks.

use std::path::{Path, PathBuf};

const LIMIT: usize = 800;

const LONG: &[(&str, usize)] = &[];

/// Lines before the first `#[cfg(test)]` at the start of a line (the whole file when there is none).
fn length(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().take_while(|l| !l.starts_with("#[cfg(test)]")).count()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        let name = p.file_name().unwrap_or_default().to_string_lossy().into_owned();
        if p.is_dir() && !matches!(name.as_str(), "target" | ".git" | ".cache" | "corpus" | "artifacts") {
            rust_files(&p, out);
        } else if name.ends_with(".rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_source_file_is_longer_than_one_sitting() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap();
    let mut files = Vec::new();
    for dir in ["crates", "xtask", "fuzz/fuzz_targets"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 100, "found {} files under {}", files.len(), root.display());
    let mut problems = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
        let n = length(f);
        match LONG.iter().find(|(p, _)| *p == rel) {
            Some((_, listed)) if n > *listed => {
                problems.push(format!("{rel}: {n} lines, grew past its listed {listed}"))
            }
            Some(_) if n <= LIMIT => problems.push(format!("{rel}: {n} lines now: take it out of LONG")),
            Some(_) => {}
            None if n > LIMIT => problems.push(format!("{rel}: {n} lines before its tests (at most {LIMIT})")),
            None => {}
        }
    }
    for (p, _) in LONG {
        if !root.join(p).exists() {
            problems.push(format!("{p}: gone: take it out of LONG"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
