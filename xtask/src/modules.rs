//! Module structure inside a crate: which modules refer to which, and the pairs that refer to each other.
//!
//! A module is a source file (`lib.rs` or `main.rs` is the crate root, `a.rs` and `a/mod.rs` are `a`, `a/b.rs` is
//! `a::b`). Module A refers to module B when A's code (comments and string literals left out) names a path into
//! B: `crate::b::…`, `super::…` resolved from A, or a child of A by its name (`b::f()`, `mod b` aside) — the
//! longest prefix of the path that is a module is the one referred to. Doc comments count (an intra-doc link is
//! a reference a reader follows); other comments and string literals do not. A reference to one of A's own ancestors is
//! not counted (a child may use what its parent defines; the parent is its namespace). Two modules refer to each
//! other when each refers to the other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path inside its crate, `a::b` (the root is the empty string).
pub type ModPath = String;

/// The modules of a crate's `src/` folder by path, with the file each is in.
pub fn modules(src: &Path) -> BTreeMap<ModPath, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap_or(&path);
            let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            let file = parts.pop().unwrap_or_default();
            let stem = file.trim_end_matches(".rs");
            // `src/bin/*.rs` are crates of their own: left out.
            if parts.first().is_some_and(|p| p == "bin") {
                continue;
            }
            if !matches!(stem, "mod" | "lib" | "main") || !parts.is_empty() && stem != "mod" {
                parts.push(stem.to_string());
            }
            out.insert(parts.join("::"), path);
        }
    }
    out
}

/// `text` with comments, string and char literals blanked (their bytes become spaces), so paths are code only.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"///") || b[i..].starts_with(b"//!") {
            // Doc comments stay, as they are to the end of the line (a `/*` or a quote in prose is not code):
            // their intra-doc links (`[`crate::a`]`) are references a reader follows.
            out.extend(b"   ");
            i += 3;
            while i < b.len() && b[i] != b'\n' {
                out.push(b[i]);
                i += 1;
            }
        } else if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    out.extend(b"  ");
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    out.extend(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(if b[i] == b'\n' { b'\n' } else { b' ' });
                    i += 1;
                }
            }
        } else if b[i] == b'r' && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#')) {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') || (i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) {
                out.push(b[i]);
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            j += 1;
            while j < b.len() && !b[j..].starts_with(&close) {
                j += 1;
            }
            let end = (j + close.len()).min(b.len());
            out.extend(b[i..end].iter().map(|&c| if c == b'\n' { b'\n' } else { b' ' }));
            i = end;
        } else if b[i] == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    out.push(b' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(if b[i] == b'\n' { b'\n' } else { b' ' });
                    i += 1;
                }
            }
            out.push(b' ');
            i += 1;
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            out.extend(b"   ");
            i += 3;
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') {
            // '\n', '\u{…}'
            let mut j = i + 2;
            while j < b.len() && b[j] != b'\'' {
                j += 1;
            }
            out.extend(std::iter::repeat_n(b' ', j + 1 - i));
            i = j + 1;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path written in `code` that starts with `crate`, `super`, `self` or a bare identifier followed by
/// `::`, as its segments; a `{…}` group expands into one path per top-level entry.
fn paths(code: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !is_ident(chars[i]) || (i > 0 && (is_ident(chars[i - 1]) || chars[i - 1] == ':')) {
            i += 1;
            continue;
        }
        let (segs, end) = read_path(&chars, i);
        if segs.len() > 1 || chars.get(end) == Some(&'{') {
            expand(&chars, segs, end, &mut out);
        }
        i = end.max(i + 1);
    }
    out
}

/// Reads `a::b::c` from `at`; returns the segments and where it stopped (after a trailing `::` when a `{`
/// follows).
fn read_path(chars: &[char], mut at: usize) -> (Vec<String>, usize) {
    let mut segs = Vec::new();
    loop {
        let start = at;
        while at < chars.len() && is_ident(chars[at]) {
            at += 1;
        }
        if at == start {
            break;
        }
        segs.push(chars[start..at].iter().collect());
        if chars.get(at) == Some(&':') && chars.get(at + 1) == Some(&':') {
            at += 2;
            if chars.get(at) == Some(&'{') {
                return (segs, at);
            }
            continue;
        }
        break;
    }
    (segs, at)
}

fn expand(chars: &[char], prefix: Vec<String>, at: usize, out: &mut Vec<Vec<String>>) {
    if chars.get(at) != Some(&'{') {
        out.push(prefix);
        return;
    }
    // Top-level entries of the group.
    let mut depth = 0;
    let mut entry_start = at + 1;
    let mut j = at;
    while j < chars.len() {
        match chars[j] {
            '{' => depth += 1,
            '}' | ',' if depth == 1 => {
                let entry: String = chars[entry_start..j].iter().collect();
                let entry = entry.trim();
                let inner: Vec<char> = entry.chars().collect();
                if !inner.is_empty() && is_ident(inner[0]) {
                    let (segs, end) = read_path(&inner, 0);
                    let mut full = prefix.clone();
                    full.extend(segs);
                    expand(&inner, full, end, out);
                }
                entry_start = j + 1;
                if chars[j] == '}' {
                    return;
                }
            }
            '}' => depth -= 1,
            _ => {}
        }
        j += 1;
    }
}

/// A crate's modules and the module re-exports among them (`pub use profile::{steps, cpu_ops};` at the root
/// makes `steps` another name of `profile::steps`).
struct Tree {
    modules: BTreeMap<ModPath, PathBuf>,
    aliases: BTreeMap<ModPath, ModPath>,
}

impl Tree {
    fn new(modules: BTreeMap<ModPath, PathBuf>) -> Tree {
        let mut tree = Tree { modules, aliases: BTreeMap::new() };
        let mut aliases = BTreeMap::new();
        for (m, file) in &tree.modules {
            let Ok(text) = std::fs::read_to_string(file) else { continue };
            let code = code_only(&text);
            for stmt in code.split("pub use ").skip(1) {
                let stmt = stmt.split(';').next().unwrap_or("");
                for p in
                    paths(stmt).into_iter().chain(std::iter::once(stmt.trim().split("::").map(String::from).collect()))
                {
                    let Some(last) = p.last().filter(|l| l.chars().all(is_ident)) else { continue };
                    if let Some(target) = tree.exact(m, &p) {
                        let alias = if m.is_empty() { last.clone() } else { format!("{m}::{last}") };
                        if !tree.modules.contains_key(&alias) && alias != target {
                            aliases.insert(alias, target);
                        }
                    }
                }
            }
        }
        tree.aliases = aliases;
        tree
    }

    /// The module a path names exactly (every segment a module), without aliases.
    fn exact(&self, from: &str, path: &[String]) -> Option<ModPath> {
        let (base, rest) = start(from, path)?;
        let full: Vec<String> = base.into_iter().chain(rest.iter().cloned()).collect();
        let key = full.join("::");
        (!rest.is_empty() && self.modules.contains_key(&key)).then_some(key)
    }

    /// The module a path written in module `from` refers to, if it is one of the crate's (the longest prefix
    /// that is, through re-exports).
    fn resolve(&self, from: &str, path: &[String]) -> Option<ModPath> {
        let (base, rest) = start(from, path)?;
        let mut best = None;
        let mut cur = base.clone();
        for seg in rest {
            cur.push(seg.clone());
            let key = cur.join("::");
            if self.modules.contains_key(&key) {
                best = Some(key);
            } else if let Some(target) = self.aliases.get(&key) {
                cur = target.split("::").map(String::from).collect();
                best = Some(target.clone());
            } else {
                break;
            }
        }
        match path.first().map(String::as_str) {
            Some("crate" | "super" | "self") => best.or(Some(base.join("::"))),
            _ => best,
        }
    }
}

/// Where a path starts (the module its first segment is relative to) and the segments after that.
fn start<'p>(from: &str, path: &'p [String]) -> Option<(Vec<String>, &'p [String])> {
    let mut base: Vec<String> = if from.is_empty() { Vec::new() } else { from.split("::").map(String::from).collect() };
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        Some("self") => rest = &rest[1..],
        // A bare first segment names a child of `from`, or something else entirely (a crate, a type).
        _ => {}
    }
    Some((base, rest))
}

fn is_ancestor(a: &str, of: &str) -> bool {
    a.is_empty() || of.starts_with(&format!("{a}::"))
}

/// Every module's references to other modules of the crate (ancestors left out).
pub fn references(src: &Path) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let tree = Tree::new(modules(src));
    let mut refs: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for (m, file) in &tree.modules {
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        let code = code_only(&text);
        let set = refs.entry(m.clone()).or_default();
        for p in paths(&code) {
            if let Some(target) = tree.resolve(m, &p) {
                if &target != m && !is_ancestor(&target, m) {
                    set.insert(target);
                }
            }
        }
    }
    refs
}

/// The sibling modules (children of one parent) that a reference from `a` to `b` goes between: below their
/// nearest common ancestor, the child on the way to `a` and the child on the way to `b`. `None` when one is
/// the other's ancestor.
fn siblings(a: &str, b: &str) -> Option<(ModPath, ModPath)> {
    let (pa, pb): (Vec<&str>, Vec<&str>) =
        (a.split("::").filter(|s| !s.is_empty()).collect(), b.split("::").filter(|s| !s.is_empty()).collect());
    let common = pa.iter().zip(&pb).take_while(|(x, y)| x == y).count();
    if common >= pa.len() || common >= pb.len() {
        return None;
    }
    Some((pa[..=common].join("::"), pb[..=common].join("::")))
}

/// The pairs of sibling modules that refer to each other — a module with its submodules (a folder) counts as
/// one: `timeline/` refers to `trace/` when any file under it refers to any file under the other — each pair
/// once (`a < b`).
pub fn mutual_references(src: &Path) -> Vec<(ModPath, ModPath)> {
    let mut edges: BTreeSet<(ModPath, ModPath)> = BTreeSet::new();
    for (a, targets) in references(src) {
        for b in targets {
            if let Some(pair) = siblings(&a, &b) {
                edges.insert(pair);
            }
        }
    }
    edges.iter().filter(|(a, b)| a < b && edges.contains(&(b.clone(), a.clone()))).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_strings_are_not_code() {
        let code = code_only(
            "use crate::a; // crate::b\nlet s = \"crate::c\"; /* crate::d */ let r = r#\"crate::e\"#;\n/// [`crate::f`]",
        );
        assert!(code.contains("crate::a") && !code.contains("crate::b") && !code.contains("crate::c"));
        assert!(code.contains("crate::f"), "doc links count");
        assert!(!code.contains("crate::d") && !code.contains("crate::e"));
    }

    #[test]
    fn groups_expand() {
        let p = paths("use super::{matching::OpRow, OpSource, x::{y, z::W}};");
        assert!(p.contains(&vec!["super".to_string(), "matching".into(), "OpRow".into()]), "{p:?}");
        assert!(p.contains(&vec!["super".to_string(), "x".into(), "z".into(), "W".into()]), "{p:?}");
    }

    #[test]
    fn a_pair_that_refers_to_each_other_is_found_and_ancestors_are_not_counted() {
        let dir = std::env::temp_dir().join(format!("xtask-modules-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("a")).unwrap();
        std::fs::write(dir.join("lib.rs"), "mod a; mod b; mod c;").unwrap();
        std::fs::write(dir.join("a/mod.rs"), "mod child; use crate::b::f; fn g() { child::h(); }").unwrap();
        std::fs::write(dir.join("a/child.rs"), "use super::g; use crate::c::K;").unwrap();
        std::fs::write(dir.join("b.rs"), "pub fn f() { crate::a::g(); }").unwrap();
        std::fs::write(dir.join("c.rs"), "pub const K: u8 = 1;").unwrap();
        std::fs::write(dir.join("d.rs"), "use crate::child::X;").unwrap();
        std::fs::write(dir.join("lib.rs"), "mod a; mod b; mod c; mod d; pub use a::child;").unwrap();
        assert!(references(&dir)["d"].contains("a::child"), "through the root's re-export");
        assert_eq!(mutual_references(&dir), [("a".to_string(), "b".to_string())]);
        assert_eq!(references(&dir)["a::child"], BTreeSet::from(["c".to_string()]), "its parent is not counted");
        assert!(references(&dir)["a"].contains("a::child"));
        // A folder is one module: b refers to a, a's child refers to b, and they are a pair.
        std::fs::write(dir.join("a/mod.rs"), "mod child;").unwrap();
        std::fs::write(dir.join("a/child.rs"), "use crate::b::f;").unwrap();
        assert_eq!(mutual_references(&dir), [("a".to_string(), "b".to_string())]);
        let refs = references(&dir);
        assert_eq!(refs["a::child"], BTreeSet::from(["b".to_string()]), "its parent is not counted");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
