//! Located documents: a YAML or JSON text turned into a [`serde_json::Value`] plus a [`SourceMap`] that says
//! where every key and value was written, so that checks made after parsing can still point at a line and
//! column.
//!
//! YAML goes through `saphyr` (YAML 1.2, core schema: `yes`/`no` stay strings, duplicate keys are refused,
//! alias expansion is bounded). JSON goes through `serde_json` (its syntax errors are the best there are) and
//! then through a small scanner over the now known-valid text that records positions.

use super::{FieldPath, SpecError};
use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, YamlData};
use serde_json::{Map, Number, Value};
use std::collections::{BTreeMap, HashSet};

/// Deepest nesting accepted, in both formats (serde_json's own limit is 128).
const MAX_DEPTH: usize = 128;

/// Largest document accepted: a snapshot must fit the metadata store's 1 MiB limit (docs/DESIGN.md §3).
pub const MAX_BYTES: usize = 1 << 20;

/// A place in a source file: 1-based line and column, counted in characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, schemars::JsonSchema)]
pub struct Spot {
    /// The file, as the caller named it.
    pub file: String,
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1, in characters.
    pub column: usize,
}

impl Spot {
    /// A spot in `file`.
    pub fn new(file: &str, line: usize, column: usize) -> Spot {
        Spot { file: file.to_string(), line: line.max(1), column: column.max(1) }
    }
}

/// Where each path of a parsed document was written: the spot of every key and of every value.
///
/// Paths are lists of segments (object keys, array indexes written in decimal). Lookups fall back to the
/// nearest ancestor, and finally to the start of the document, so every path has a spot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceMap {
    file: String,
    values: BTreeMap<FieldPath, Spot>,
    keys: BTreeMap<FieldPath, Spot>,
}

impl SourceMap {
    /// An empty map for `file`: every lookup answers 1:1 of that file.
    pub fn new(file: &str) -> SourceMap {
        SourceMap { file: file.to_string(), values: BTreeMap::new(), keys: BTreeMap::new() }
    }

    /// The file this map was made for.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// Where the value at `path` starts (or that of its nearest located ancestor).
    pub fn value_spot(&self, path: &[String]) -> Spot {
        for len in (0..=path.len()).rev() {
            if let Some(spot) = self.values.get(&path[..len]) {
                return spot.clone();
            }
            if len < path.len() {
                if let Some(spot) = self.keys.get(&path[..len]) {
                    return spot.clone();
                }
            }
        }
        Spot::new(&self.file, 1, 1)
    }

    /// Where the key that names `path` is written; the value's spot when there is no key (the root, an array
    /// element).
    pub fn key_spot(&self, path: &[String]) -> Spot {
        match self.keys.get(path) {
            Some(spot) => spot.clone(),
            None => self.value_spot(path),
        }
    }

    /// The spot an error about `path` should point at: the key for an object or an array (a message about a
    /// whole block reads best at its name), the value itself for a scalar.
    pub fn spot_for(&self, path: &[String], root: &Value) -> Spot {
        match lookup(root, path) {
            Some(Value::Object(_) | Value::Array(_)) => self.key_spot(path),
            _ => self.value_spot(path),
        }
    }

    /// Moves every recorded spot inside `text` (see [`within`]): a parser may place an implicit node (a null
    /// key or value at the end of the input) on the line after the last.
    fn clamp_to(&mut self, text: &str) {
        for spot in self.values.values_mut().chain(self.keys.values_mut()) {
            (spot.line, spot.column) = within(text, spot.line, spot.column);
        }
    }

    /// Records where the key naming `path` is written.
    pub fn set_key(&mut self, path: FieldPath, spot: Spot) {
        self.keys.insert(path, spot);
    }

    /// Records where the value at `path` starts.
    pub fn set_value(&mut self, path: FieldPath, spot: Spot) {
        self.values.insert(path, spot);
    }

    /// Replaces everything recorded under `at` by what `from` recorded under `from_path`, re-rooted at `at`.
    /// The key spot of `at` itself is kept unless `from` has one. Used by sweeps: a swept value comes from
    /// the sweep file while the rest of the spec comes from its base.
    pub fn graft(&mut self, at: &[String], from: &SourceMap, from_path: &[String]) {
        let under = |p: &FieldPath, root: &[String]| p.len() >= root.len() && p[..root.len()] == *root;
        self.values.retain(|p, _| !under(p, at));
        self.keys.retain(|p, _| !(under(p, at) && p.len() > at.len()));
        let rebase = |p: &FieldPath| {
            let mut out = at.to_vec();
            out.extend_from_slice(&p[from_path.len()..]);
            out
        };
        for (p, spot) in &from.values {
            if under(p, from_path) {
                self.values.insert(rebase(p), spot.clone());
            }
        }
        for (p, spot) in &from.keys {
            if under(p, from_path) && (p.len() > from_path.len() || !at.is_empty()) {
                self.keys.insert(rebase(p), spot.clone());
            }
        }
    }
}

/// The value at `path` under `root`, if any (array indexes as decimal segments).
pub(crate) fn lookup<'v>(root: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(root, |node, seg| match node {
        Value::Object(map) => map.get(seg),
        Value::Array(items) => seg.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

/// A parsed YAML or JSON document and where each part of it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The document's content (YAML scalars resolved by the YAML 1.2 core schema).
    pub value: Value,
    /// Where each key and value was written.
    pub source: SourceMap,
}

impl Document {
    /// A document made in code (an API request body, a spec built by a program): every spot is 1:1 of `file`.
    pub fn from_value(value: Value, file: &str) -> Document {
        Document { value, source: SourceMap::new(file) }
    }

    /// An error about `path`, pointing where [`SourceMap::spot_for`] says.
    pub fn error(&self, path: &[String], message: impl Into<String>) -> SpecError {
        SpecError::at(self.source.spot_for(path, &self.value), path, message)
    }
}

/// Whether `file` (and, without a telling extension, the text) says JSON.
fn looks_like_json(text: &str, file: &str) -> Option<bool> {
    let ext = file.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase());
    match ext.as_deref() {
        Some("json") => Some(true),
        Some("yaml" | "yml") => Some(false),
        _ if text.trim_start().starts_with('{') => None,
        _ => Some(false),
    }
}

/// Parses a YAML or JSON document, keeping positions. The format comes from `file`'s extension (`.json`,
/// `.yaml`, `.yml`); otherwise a text that starts with `{` is tried as JSON first, then as YAML. Only syntax
/// is checked here (one document, string keys, no duplicate keys, at most 128 levels deep, at most
/// [`MAX_BYTES`]).
pub fn parse_document(text: &str, file: &str) -> Result<Document, SpecError> {
    if text.len() > MAX_BYTES {
        return Err(SpecError {
            file: file.to_string(),
            line: 1,
            column: 1,
            path: String::new(),
            message: format!("the file is {} bytes; a spec is at most {MAX_BYTES} bytes (1 MiB)", text.len()),
            hint: Some("keep large data in artifacts and name it in the spec".to_string()),
        });
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match looks_like_json(text, file) {
        Some(true) => parse_json(text, file),
        Some(false) => parse_yaml(text, file),
        None => parse_json(text, file).or_else(|json_err| parse_yaml(text, file).map_err(|_| json_err)),
    }
}

/// `(line, column)` moved inside `text` when a parser reports a position past its end (YAML's end-of-input mark
/// on the line after a last line without a newline; a column past its line): an error names a place in the file.
fn within(text: &str, line: usize, column: usize) -> (usize, usize) {
    let lines: Vec<&str> = text.split('\n').collect();
    let line = line.clamp(1, lines.len().max(1));
    let width = lines.get(line - 1).map_or(0, |l| l.chars().count());
    (line, column.clamp(1, width + 1))
}

fn syntax_error(file: &str, line: usize, column: usize, message: String, format: &str) -> SpecError {
    SpecError {
        file: file.to_string(),
        line: line.max(1),
        column: column.max(1),
        path: String::new(),
        message,
        hint: Some(format!("the file is not valid {format}")),
    }
}

// ---------------------------------------------------------------------------------------------- YAML

fn parse_yaml(text: &str, file: &str) -> Result<Document, SpecError> {
    // saphyr's loader builds its tree with a stack, but dropping or walking a tree nested hundreds of
    // thousands deep recurses; refuse absurd nesting before handing the text over.
    if nesting_estimate(text) > MAX_DEPTH {
        return Err(syntax_error(file, 1, 1, format!("nested more than {MAX_DEPTH} levels deep"), "YAML"));
    }
    let docs = MarkedYaml::load_from_str(text).map_err(|e| {
        let mark = e.marker();
        let (line, column) = within(text, mark.line(), mark.col() + 1);
        syntax_error(file, line, column, e.info().to_string(), "YAML")
    })?;
    let mut docs = docs.into_iter();
    let Some(doc) = docs.next() else {
        return Err(syntax_error(file, 1, 1, "the document is empty".into(), "YAML"));
    };
    if let Some(second) = docs.next() {
        let start = second.span.start;
        let (line, column) = within(text, start.line(), start.col() + 1);
        return Err(syntax_error(file, line, column, "a second YAML document; a spec is one document".into(), "YAML"));
    }
    let mut source = SourceMap::new(file);
    let mut path = Vec::new();
    let value = yaml_value(&doc, &mut path, &mut source, 0).map_err(|mut e| {
        (e.line, e.column) = within(text, e.line, e.column);
        e
    })?;
    source.clamp_to(text);
    Ok(Document { value, source })
}

/// An upper bound on how deeply the text nests: open `[`/`{` outside quotes and comments, plus the block
/// indicators (`- `, `? `, `: `) on the current line, which nest without brackets (`- - - x`). Nesting by
/// indentation alone needs quadratic text, which the size limit bounds.
fn nesting_estimate(text: &str) -> usize {
    let (mut depth, mut on_line, mut max) = (0usize, 0usize, 0usize);
    let mut quote: Option<char> = None;
    let mut comment = false;
    let mut prev = ' ';
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\n' {
            on_line = 0;
            comment = false;
        }
        if comment {
            continue;
        }
        if let Some(q) = quote {
            if c == q && !(q == '"' && prev == '\\') {
                quote = None;
            }
        } else {
            match c {
                // A quote opens a quoted scalar only where a scalar can start; inside a plain scalar
                // (`don't`) it is an ordinary character.
                '"' | '\'' if prev.is_whitespace() || matches!(prev, '[' | '{' | ',' | ':' | '-' | '?') => {
                    quote = Some(c);
                }
                '#' if prev.is_whitespace() => comment = true,
                '[' | '{' => depth += 1,
                ']' | '}' => depth = depth.saturating_sub(1),
                '-' | '?' | ':' if chars.peek().is_none_or(|n| n.is_whitespace()) => on_line += 1,
                _ => {}
            }
            max = max.max(depth + on_line);
        }
        prev = if prev == '\\' && c == '\\' { ' ' } else { c };
    }
    max
}

fn spot_of(node: &MarkedYaml, file: &str) -> Spot {
    Spot::new(file, node.span.start.line(), node.span.start.col() + 1)
}

fn yaml_value(
    node: &MarkedYaml,
    path: &mut FieldPath,
    source: &mut SourceMap,
    depth: usize,
) -> Result<Value, SpecError> {
    let file = source.file.clone();
    let spot = spot_of(node, &file);
    if depth > MAX_DEPTH {
        return Err(SpecError::at(spot, path, format!("nested more than {MAX_DEPTH} levels deep")));
    }
    source.set_value(path.clone(), spot.clone());
    let value = match &node.data {
        YamlData::Value(scalar) => scalar_value(scalar).map_err(|m| SpecError::at(spot.clone(), path, m))?,
        YamlData::Sequence(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                path.push(i.to_string());
                out.push(yaml_value(item, path, source, depth + 1)?);
                path.pop();
            }
            Value::Array(out)
        }
        YamlData::Mapping(entries) => {
            let mut out = Map::new();
            for (key, item) in entries {
                let key_spot = spot_of(key, &file);
                let name = yaml_key(key).map_err(|m| SpecError::at(key_spot.clone(), path, m))?;
                if out.contains_key(&name) {
                    path.push(name.clone());
                    return Err(SpecError::at(key_spot, path, format!("duplicate key `{name}`")));
                }
                path.push(name.clone());
                source.set_key(path.clone(), key_spot);
                let v = yaml_value(item, path, source, depth + 1)?;
                path.pop();
                out.insert(name, v);
            }
            Value::Object(out)
        }
        // A tag says how to read the node; the node itself is what counts here.
        YamlData::Tagged(_, inner) => return yaml_value(inner, path, source, depth + 1),
        YamlData::Representation(text, _, _) => Value::String(text.to_string()),
        YamlData::Alias(_) => return Err(SpecError::at(spot, path, "an alias that names no anchor")),
        YamlData::BadValue => {
            return Err(SpecError::at(spot, path, "a value that does not fit its tag (e.g. `!!int abc`)"));
        }
    };
    Ok(value)
}

fn scalar_value(scalar: &Scalar) -> Result<Value, String> {
    Ok(match scalar {
        Scalar::Null => Value::Null,
        Scalar::Boolean(b) => Value::Bool(*b),
        Scalar::Integer(i) => Value::Number((*i).into()),
        Scalar::FloatingPoint(f) => match Number::from_f64(f.into_inner()) {
            Some(n) => Value::Number(n),
            None => return Err(format!("`{}` is not a finite number; JSON snapshots cannot hold it", f.into_inner())),
        },
        Scalar::String(s) => Value::String(s.to_string()),
    })
}

fn yaml_key(key: &MarkedYaml) -> Result<String, String> {
    match &key.data {
        YamlData::Value(Scalar::String(s)) => Ok(s.to_string()),
        YamlData::Value(Scalar::Integer(i)) => Ok(i.to_string()),
        YamlData::Value(Scalar::Boolean(b)) => Ok(b.to_string()),
        YamlData::Value(Scalar::FloatingPoint(f)) => Ok(f.into_inner().to_string()),
        YamlData::Value(Scalar::Null) => Ok("null".to_string()),
        YamlData::Tagged(_, inner) => yaml_key(inner),
        YamlData::Representation(text, _, _) => Ok(text.to_string()),
        _ => Err("a key must be a plain word or string, not a list or mapping".to_string()),
    }
}

// ---------------------------------------------------------------------------------------------- JSON

fn parse_json(text: &str, file: &str) -> Result<Document, SpecError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        let message = e.to_string();
        // serde_json appends " at line L column C"; the position goes in front instead.
        let message = match message.rfind(" at line ") {
            Some(i) => message[..i].to_string(),
            None => message,
        };
        let (line, column) = within(text, e.line(), e.column());
        syntax_error(file, line, column, message, "JSON")
    })?;
    let mut scanner = Scanner { chars: text.chars().collect(), at: 0, line: 1, column: 1, file };
    let mut source = SourceMap::new(file);
    scanner.skip_ws();
    scanner.value(&mut Vec::new(), &mut source)?;
    Ok(Document { value, source })
}

/// Walks JSON text that serde_json has already accepted, recording the spot of each key and value and
/// refusing duplicate keys (which serde_json would silently collapse).
struct Scanner<'a> {
    chars: Vec<char>,
    at: usize,
    line: usize,
    column: usize,
    file: &'a str,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += 1;
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r')) {
            self.bump();
        }
    }

    fn spot(&self) -> Spot {
        Spot::new(self.file, self.line, self.column)
    }

    fn confused(&self, path: &FieldPath) -> SpecError {
        SpecError::at(self.spot(), path, "unexpected character in JSON")
    }

    /// A string literal, returned raw (with its quotes).
    fn string(&mut self) -> String {
        let start = self.at;
        self.bump(); // opening quote
        while let Some(c) = self.bump() {
            match c {
                '\\' => {
                    self.bump();
                }
                '"' => break,
                _ => {}
            }
        }
        self.chars[start..self.at].iter().collect()
    }

    fn value(&mut self, path: &mut FieldPath, source: &mut SourceMap) -> Result<(), SpecError> {
        source.set_value(path.clone(), self.spot());
        match self.peek() {
            Some('{') => {
                self.bump();
                self.skip_ws();
                let mut seen = HashSet::new();
                if self.peek() == Some('}') {
                    self.bump();
                    return Ok(());
                }
                loop {
                    let key_spot = self.spot();
                    if self.peek() != Some('"') {
                        return Err(self.confused(path));
                    }
                    let raw = self.string();
                    let key: String = serde_json::from_str(&raw).map_err(|_| self.confused(path))?;
                    path.push(key.clone());
                    if !seen.insert(key.clone()) {
                        return Err(SpecError::at(key_spot, path, format!("duplicate key `{key}`")));
                    }
                    source.set_key(path.clone(), key_spot);
                    self.skip_ws();
                    if self.bump() != Some(':') {
                        return Err(self.confused(path));
                    }
                    self.skip_ws();
                    self.value(path, source)?;
                    path.pop();
                    self.skip_ws();
                    match self.bump() {
                        Some(',') => self.skip_ws(),
                        Some('}') => return Ok(()),
                        _ => return Err(self.confused(path)),
                    }
                }
            }
            Some('[') => {
                self.bump();
                self.skip_ws();
                if self.peek() == Some(']') {
                    self.bump();
                    return Ok(());
                }
                let mut index = 0usize;
                loop {
                    path.push(index.to_string());
                    self.value(path, source)?;
                    path.pop();
                    index += 1;
                    self.skip_ws();
                    match self.bump() {
                        Some(',') => self.skip_ws(),
                        Some(']') => return Ok(()),
                        _ => return Err(self.confused(path)),
                    }
                }
            }
            Some('"') => {
                self.string();
                Ok(())
            }
            Some(_) => {
                while matches!(self.peek(), Some(c) if !matches!(c, ',' | '}' | ']' | ' ' | '\t' | '\n' | '\r')) {
                    self.bump();
                }
                Ok(())
            }
            None => Err(self.confused(path)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> FieldPath {
        if s.is_empty() {
            Vec::new()
        } else {
            s.split('.').map(str::to_string).collect()
        }
    }

    fn at(doc: &Document, path: &str) -> (usize, usize, usize, usize) {
        let k = doc.source.key_spot(&p(path));
        let v = doc.source.value_spot(&p(path));
        (k.line, k.column, v.line, v.column)
    }

    #[test]
    fn yaml_positions_of_keys_and_values() {
        let text = "name: x\nresources:\n  accelerator: v6e-8\n  zones: [a, b]\nlist:\n  - 1\n  - {k: v}\n";
        let doc = parse_document(text, "s.yaml").unwrap();
        assert_eq!(doc.value["resources"]["zones"][1], "b");
        assert_eq!(at(&doc, "name"), (1, 1, 1, 7));
        assert_eq!(at(&doc, "resources.accelerator"), (3, 3, 3, 16));
        assert_eq!(at(&doc, "resources.zones.1").2, 4);
        assert_eq!(at(&doc, "resources.zones.1").3, 14);
        assert_eq!(at(&doc, "list.1.k"), (7, 6, 7, 9));
        // Unknown paths fall back to the nearest ancestor.
        assert_eq!(doc.source.value_spot(&p("resources.accelerator.deeper")), Spot::new("s.yaml", 3, 16));
        assert_eq!(doc.source.spot_for(&p("resources"), &doc.value), Spot::new("s.yaml", 2, 1));
    }

    #[test]
    fn yaml_core_schema_scalars() {
        let doc = parse_document("a: yes\nb: true\nc: 1e3\nd: '12'\ne: ~\nf: 0x10\ng: 1.5\n", "x.yml").unwrap();
        assert_eq!(
            doc.value,
            serde_json::json!({"a": "yes", "b": true, "c": 1000.0, "d": "12", "e": null, "f": 16, "g": 1.5})
        );
    }

    #[test]
    fn json_positions_and_duplicates() {
        let text = "{\n  \"name\": \"x\",\n  \"r\": {\"a\": [1, {\"b\": \"\\\"q\"}]}\n}";
        let doc = parse_document(text, "s.json").unwrap();
        assert_eq!(at(&doc, "name"), (2, 3, 2, 11));
        assert_eq!(at(&doc, "r.a.1.b"), (3, 19, 3, 24));
        let err = parse_document("{\"a\": 1,\n \"a\": 2}", "d.json").unwrap_err();
        assert_eq!((err.line, err.column, err.path.as_str()), (2, 2, "a"));
        assert!(err.message.contains("duplicate key `a`"), "{err}");
        let err = parse_document("a: 1\na: 2\n", "d.yaml").unwrap_err();
        assert!(err.message.contains("duplicate"), "{err}");
    }

    #[test]
    fn syntax_errors_carry_positions() {
        let err = parse_document("{\"a\": 1,,}", "bad.json").unwrap_err();
        assert_eq!((err.file.as_str(), err.line), ("bad.json", 1));
        assert!(err.column >= 9, "{err}");
        assert!(!err.message.contains("at line"), "{err}");
        let err = parse_document("a: [1, 2\nb: 3\n", "bad.yaml").unwrap_err();
        assert_eq!(err.file, "bad.yaml");
        assert!(err.line >= 1, "{err}");
        // A position past the end (YAML's mark after a last line without a newline) is moved inside the file.
        let err = parse_document("a: {b: 1,\nc: [1, 2", "eof.yaml").unwrap_err();
        assert!(err.line <= 2 && err.column <= 9, "{err}");
        let err = parse_document("a: 1\n---\nb: 2\n", "two.yaml").unwrap_err();
        assert!(err.message.contains("second YAML document"), "{err}");
        assert_eq!(parse_document("# nothing\n", "e.yaml").unwrap_err().message, "the document is empty");
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let sneaky = format!("x: don't\ny: {deep}\n");
        let blocks = format!("{}x\n", "- ".repeat(100_000));
        assert!(parse_document(&blocks, "deep.yaml").unwrap_err().message.contains("nested"));
        let big = format!("x: '{}'\n", "a".repeat(MAX_BYTES));
        assert!(parse_document(&big, "big.yaml").unwrap_err().message.contains("at most"));
        let indented: String = (0..200).map(|i| format!("{}k{i}:\n", " ".repeat(i))).collect();
        assert!(parse_document(&indented, "i.yaml").unwrap_err().message.contains("nested"));
        assert!(parse_document(&sneaky, "deep.yaml").unwrap_err().message.contains("nested"));
        let quoted = format!("x: '{}'\ny: \"{}\"\n", "[".repeat(500), "{".repeat(500));
        assert!(parse_document(&quoted, "q.yaml").is_ok(), "brackets inside quotes do not count");
        assert!(parse_document(&deep, "deep.yaml").unwrap_err().message.contains("nested"));
        assert!(parse_document(&deep, "deep.json").is_err());
    }

    #[test]
    fn json_and_yaml_read_floats_alike() {
        // serde_json's default float parser may be one ulp off; falcon-core turns on `float_roundtrip` so a
        // JSON twin of a YAML spec gets the same snapshot and hash.
        for text in ["952349200.8233073", "3.0e-4", "0.1", "1e300", "-2.5e-308"] {
            let json = parse_document(&format!("{{\"x\": {text}}}"), "f.json").unwrap().value;
            let yaml = parse_document(&format!("x: {text}"), "f.yaml").unwrap().value;
            assert_eq!(json, yaml, "{text}");
            assert_eq!(json["x"].as_f64(), text.parse::<f64>().ok(), "{text}");
        }
    }

    #[test]
    fn format_detection() {
        // No extension: JSON when it starts with `{`, falling back to YAML (a flow mapping).
        assert_eq!(parse_document("{\"a\": 1}", "-").unwrap().value, serde_json::json!({"a": 1}));
        assert_eq!(parse_document("{a: 1}", "-").unwrap().value, serde_json::json!({"a": 1}));
        assert_eq!(parse_document("a: 1", "stdin").unwrap().value, serde_json::json!({"a": 1}));
        assert!(parse_document("{a: 1}", "x.json").is_err(), "a .json file is JSON");
    }

    #[test]
    fn graft_rebases_spots() {
        let base = parse_document("config:\n  batch_size: 1\n  remat: full\n", "base.yaml").unwrap();
        let sweep = parse_document("sweep:\n  config.batch_size: [128, 256]\n", "sweep.yaml").unwrap();
        let mut source = base.source.clone();
        let from = vec!["sweep".to_string(), "config.batch_size".to_string(), "1".to_string()];
        source.graft(&p("config.batch_size"), &sweep.source, &from);
        assert_eq!(source.value_spot(&p("config.batch_size")), Spot::new("sweep.yaml", 2, 28));
        assert_eq!(source.key_spot(&p("config.batch_size")), Spot::new("base.yaml", 2, 3));
        assert_eq!(source.value_spot(&p("config.remat")), Spot::new("base.yaml", 3, 10));
    }
}
