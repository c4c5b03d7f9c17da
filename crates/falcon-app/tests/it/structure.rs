//! The façade's shape (rust-analyzer's rule for `ide::Analysis`): `lib.rs` hands every use case to its module, and
//! no module names `App` — each is given the context below it (`ctx::Ctx`: the configuration, EXP, the analysis
//! service), so the façade depends on the modules and never the other way round. Comments may link to the façade.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The lines of code of a Rust file that name `word` (comments left out).
fn naming(text: &str, word: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let code = line.split("//").next().unwrap_or("");
            let named = code.match_indices(word).any(|(at, _)| {
                let before = code[..at].chars().next_back();
                let after = code[at + word.len()..].chars().next();
                let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                !ident(before) && !ident(after)
            });
            named.then(|| format!("{}: {}", i + 1, line.trim()))
        })
        .collect()
}

#[test]
fn no_module_of_falcon_app_names_the_facade() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    assert!(files.len() > 20, "the sources were found: {files:?}");
    let mut found = Vec::new();
    for f in &files {
        if f == &src.join("lib.rs") {
            continue;
        }
        for line in naming(&std::fs::read_to_string(f).unwrap(), "App") {
            found.push(format!("{}:{line}", f.strip_prefix(&src).unwrap().display()));
        }
    }
    assert!(
        found.is_empty(),
        "modules that name `App` (take `&Ctx` and call the module that does it):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_check_sees_a_module_that_names_the_facade() {
    assert_eq!(
        naming("fn f(app: &App) {}\n// [`App::x`]\nlet x = AppError::usage(\"\");", "App"),
        ["1: fn f(app: &App) {}"]
    );
}
