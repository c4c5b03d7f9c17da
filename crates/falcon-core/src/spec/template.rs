//! `${config.a.b}` placeholders: how a spec's snapshot reaches the workload's command line and environment,
//! and how sweep name templates are filled in.
//!
//! A placeholder's path is dotted; array elements are numbered from 0 (`${config.layers.0}`). Strings and
//! numbers are written plainly, booleans as `true`/`false`, `null` as `null`, objects and arrays as compact
//! canonical JSON. `$${config.x}` writes a literal `${config.x}`.

use super::canonical::canonical_json;
use super::{did_you_mean, source::lookup, ExperimentSpec};
use serde_json::{json, Value};

/// A `${…}` placeholder that could not be replaced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: `{placeholder}`: {reason}")]
pub struct SubstitutionError {
    /// Where the placeholder is written (`workload.command.3`, `workload.env.XLA_FLAGS`, `name_template`).
    pub field: String,
    /// The placeholder as written, `${config.batch_sz}`.
    pub placeholder: String,
    /// Why it could not be replaced.
    pub reason: String,
}

/// Replaces `${config.…}` in `workload.command` items and `workload.env` values by the values of the spec's
/// `config`. Other `${…}` (shell variables such as `${HOME}`) are left alone. An unknown path is an error
/// naming the placeholder.
pub fn substitute(spec: &ExperimentSpec) -> Result<ExperimentSpec, SubstitutionError> {
    let root = json!({ "config": spec.config });
    let mut out = spec.clone();
    for (i, item) in out.workload.command.iter_mut().enumerate() {
        *item = render(item, &root, Some("config")).map_err(|e| e.at(format!("workload.command.{i}")))?;
    }
    for (key, value) in out.workload.env.iter_mut() {
        *value = render(value, &root, Some("config")).map_err(|e| e.at(format!("workload.env.{key}")))?;
    }
    Ok(out)
}

/// Fills a template such as `llama3-8b-bs${config.batch_size}-${resources.accelerator}` from `root` (a spec
/// as JSON): every `${path}` must name a value of `root`. The error's `field` is empty; the caller says
/// where the template came from.
pub fn render_template(template: &str, root: &Value) -> Result<String, SubstitutionError> {
    render(template, root, None).map_err(|e| e.at(String::new()))
}

/// A placeholder failure before its field is known.
pub(crate) struct Unresolved {
    placeholder: String,
    reason: String,
}

impl Unresolved {
    fn at(self, field: String) -> SubstitutionError {
        SubstitutionError { field, placeholder: self.placeholder, reason: self.reason }
    }
}

/// How a value is written into text.
pub fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_string(),
        Value::Array(_) | Value::Object(_) => canonical_json(value),
    }
}

/// Renders `text`; with `only = Some(root_key)`, placeholders whose first segment is not `root_key` are kept
/// verbatim.
pub(crate) fn render(text: &str, root: &Value, only: Option<&str>) -> Result<String, Unresolved> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        let escaped = i > 0 && rest[..i].ends_with('$');
        let after = &rest[i + 2..];
        let ours = only.is_none_or(|key| after.starts_with(key) && after[key.len()..].starts_with(['.', '}']));
        if !ours {
            out.push_str(&rest[..i + 2]);
            rest = after;
            continue;
        }
        if escaped {
            out.push_str(&rest[..i - 1]);
            out.push_str("${");
            rest = after;
            continue;
        }
        out.push_str(&rest[..i]);
        let Some(end) = after.find('}') else {
            let shown: String = rest[i..].chars().take(40).collect();
            return Err(Unresolved { placeholder: shown, reason: "no closing `}`".to_string() });
        };
        let inner = &after[..end];
        let placeholder = format!("${{{inner}}}");
        let path: Vec<String> = inner.trim().split('.').map(str::to_string).collect();
        match lookup(root, &path) {
            Some(value) if !path.iter().any(String::is_empty) => out.push_str(&render_value(value)),
            _ => return Err(Unresolved { placeholder, reason: explain_missing(root, &path) }),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Why `path` is not in `root`: the first missing segment, with the closest existing key when one is close.
fn explain_missing(root: &Value, path: &[String]) -> String {
    let mut node = root;
    for (depth, seg) in path.iter().enumerate() {
        let shown = path[..=depth].join(".");
        let next = match node {
            Value::Object(map) => match map.get(seg) {
                Some(v) => v,
                None => {
                    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
                    let mut reason = format!("`{shown}` does not exist");
                    if let Some(best) = did_you_mean(seg, &keys) {
                        let mut fixed = path[..depth].to_vec();
                        fixed.push(best.to_string());
                        reason.push_str(&format!(" (did you mean `{}`?)", fixed.join(".")));
                    }
                    return reason;
                }
            },
            Value::Array(items) => match seg.parse::<usize>().ok().and_then(|i| items.get(i)) {
                Some(v) => v,
                None => return format!("`{shown}` does not exist (the list has {} items)", items.len()),
            },
            _ => return format!("`{}` is not an object or list", path[..depth].join(".")),
        };
        node = next;
    }
    "empty path segment".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_values_plainly() {
        let root = json!({"config": {"bs": 256, "remat": "full", "lr": 0.5, "on": true, "p": {"dp": 1, "a": [1]}, "l": [4, 5]}});
        let r = |t: &str| render(t, &root, Some("config")).map_err(|e| e.reason);
        assert_eq!(r("bs=${config.bs}").unwrap(), "bs=256");
        assert_eq!(r("${config.remat}-${config.lr}-${config.on}").unwrap(), "full-0.5-true");
        assert_eq!(r("p=${config.p}").unwrap(), r#"p={"a":[1],"dp":1}"#);
        assert_eq!(r("${config.l.1}").unwrap(), "5");
        assert_eq!(r("echo ${HOME} $$ $${config.bs}").unwrap(), "echo ${HOME} $$ ${config.bs}");
        assert_eq!(r("${configuration}").unwrap(), "${configuration}");
        assert!(r("${config.bsz}").unwrap_err().contains("did you mean `config.bs`"));
        assert!(r("${config.l.7}").unwrap_err().contains("2 items"));
        assert!(r("${config.bs.x}").unwrap_err().contains("not an object"));
        assert!(r("${config.bs").unwrap_err().contains("closing"));
        assert!(r("${config..bs}").is_err());
    }

    #[test]
    fn templates_need_every_placeholder() {
        let root = json!({"config": {"bs": 1}, "name": "n"});
        assert_eq!(render_template("${name}-${config.bs}", &root).unwrap(), "n-1");
        let err = render_template("${HOME}", &root).unwrap_err();
        assert_eq!(err.placeholder, "${HOME}");
    }
}
