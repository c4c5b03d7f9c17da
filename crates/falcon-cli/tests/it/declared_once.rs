//! A use case's defaults are written once, by its request type in `falcon_app::requests` (or the analysis'
//! options' `Default`): a front end takes them from there. This test reads the front ends' sources (the CLI's flag
//! definitions, MCP's argument structs and dispatch) and fails on a literal default — `default_value_t = 20`,
//! `default_value = "x"`, `unwrap_or(1.0)`, `#[serde(default = …)]` naming a local function — unless it is a flag
//! of the CLI alone (no other surface offers it), listed below with why. A new shared default written as a literal
//! is a drift waiting to happen: declare it on the type and name it.

use std::path::{Path, PathBuf};

/// Literal defaults that belong to one surface only: (file, flag or field, why).
const CLI_ONLY: &[(&str, &str, &str)] = &[
    ("cli.rs", "bind", "`serve`: the server's own address"),
    ("cli.rs", "max_analyses", "`serve`: the server's own limit"),
    ("cli.rs", "max_connections", "`serve`: the server's own limit"),
    ("cli.rs", "max_connections_per_client", "`serve`: the server's own limit"),
    ("cli.rs", "max_connections_per_local_client", "`serve`: the server's own limit"),
    ("cli.rs", "max_streams_per_client", "`serve`: the server's own limit"),
    ("cli.rs", "top", "`tensors`: rows of the text table (JSON has every tensor)"),
    ("cli.rs", "reason", "`goal release|achieve|abandon`: no reason is the empty one"),
    ("cli.rs", "older_than", "`gc`: a local maintenance command"),
    ("cli.rs", "cache_cap", "`gc`: a local maintenance command"),
    ("profile.rs", "tool", "`all` is the selection's own word for every tool (`Tool`'s names and `all`)"),
    ("profile.rs", "analysis", "`all` is the selection's own word for every analysis"),
    ("profile.rs", "top", "rows of the text/Markdown tables (JSON has every row)"),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The literal defaults in a source: (line, the field or flag it is for, the text).
fn literal_defaults(text: &str) -> Vec<(usize, String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let literal = [
            literal_after(code, "default_value_t = "),
            literal_after(code, "default_value = "),
            literal_after(code, "unwrap_or("),
        ]
        .into_iter()
        .flatten()
        .next();
        if let Some(value) = literal {
            // A clap attribute's field is the next `name: Type` line; an `unwrap_or`'s is named on its own line
            // (`let name = …`, `name: a.x.unwrap_or(…)`).
            let field = if code.contains("unwrap_or(") {
                same_line_name(code)
            } else {
                lines[i..].iter().take(6).find_map(|l| field_name(l))
            }
            .unwrap_or_default();
            found.push((i + 1, field, value));
        }
    }
    found
}

/// The literal (a number or a quoted string) right after `key`, if that is what follows it.
fn literal_after(code: &str, key: &str) -> Option<String> {
    let at = code.find(key)? + key.len();
    let rest = &code[at..];
    let first = rest.chars().next()?;
    if first == '"' {
        let end = rest[1..].find('"')? + 2;
        return Some(rest[..end].to_string());
    }
    let number: String = rest.chars().take_while(|c| c.is_ascii_digit() || ".-_ *".contains(*c)).collect();
    let number = number.trim_end().to_string();
    let next = rest[number.len()..].trim_start().chars().next();
    (number.starts_with(|c: char| c.is_ascii_digit() || c == '-') && matches!(next, Some(')' | ',' | ']') | None))
        .then_some(number)
}

/// `let name = …` or `name: …` → name.
fn same_line_name(code: &str) -> Option<String> {
    let t = code.trim();
    match t.strip_prefix("let ") {
        Some(rest) => rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().map(str::to_string),
        None => field_name(t),
    }
}

/// `pub name: Type,` or `name: Type,` → name.
fn field_name(line: &str) -> Option<String> {
    let t = line.trim().trim_start_matches("pub ");
    let (name, rest) = t.split_once(':')?;
    (!name.is_empty()
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !rest.starts_with(':'))
    .then(|| name.to_string())
}

#[test]
fn the_front_ends_write_no_shared_default_of_their_own() {
    let crates = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    rust_files(&crates.join("falcon-cli/src/cli.rs").parent().unwrap().join("cli"), &mut files);
    files.push(crates.join("falcon-cli/src/cli.rs"));
    rust_files(&crates.join("falcon-mcp/src"), &mut files);
    files.sort();
    let mut seen_cli_only = Vec::new();
    let mut drifts = Vec::new();
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(f).unwrap();
        let text = text.split("#[cfg(test)]").next().unwrap_or(&text);
        for (line, field, value) in literal_defaults(text) {
            if let Some(allowed) = CLI_ONLY.iter().find(|(file, flag, _)| *file == name && *flag == field) {
                seen_cli_only.push(*allowed);
            } else {
                drifts.push(format!(
                    "{}:{line}: `{field}` defaults to {value}",
                    f.strip_prefix(&crates).unwrap().display()
                ));
            }
        }
    }
    assert!(
        drifts.is_empty(),
        "defaults written by a front end (declare them on the request type in falcon_app::requests, or on the \
         options' Default, and name them):\n  {}",
        drifts.join("\n  ")
    );
    // Every entry of the list is still a literal default somewhere (an entry that no longer is goes).
    for entry in CLI_ONLY {
        assert!(seen_cli_only.contains(entry), "{entry:?} is listed but no longer a literal default: remove it");
    }
}

#[test]
fn the_reader_finds_the_literal_defaults_it_looks_for() {
    let src = "    /// Rows.\n    #[arg(long, default_value_t = 20)]\n    pub top: usize,\n\
               #[arg(long, default_value_t = falcon_app::requests::DEFAULT_TOP)]\n    pub rows: u32,\n\
               let tail = a.tail_bytes.unwrap_or(64 * 1024).clamp(1, 4);\n\
               #[arg(long, default_value = \"7d\")]\n    pub older_than: String,\n\
               let x = y.unwrap_or(u32::MAX);\n";
    let found: Vec<(String, String)> = literal_defaults(src).into_iter().map(|(_, f, v)| (f, v)).collect();
    assert_eq!(
        found,
        [("top".into(), "20".into()), ("tail".into(), "64 * 1024".into()), ("older_than".into(), "\"7d\"".into())]
    );
}
