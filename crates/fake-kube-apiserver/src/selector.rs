//! Label and field selectors, in the subset of Kubernetes syntax the fake understands.
//!
//! Label selectors: `a=b`, `a==b`, `a!=b`, `a` (exists), `!a` (does not exist),
//! `a in (x,y)`, `a notin (x,y)`, combined with commas (logical AND).
//! Field selectors: `path=value`, `path==value`, `path!=value` with dotted JSON paths
//! such as `metadata.name`, `metadata.namespace`, `status.phase`, `spec.nodeName`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::util::{get_path, value_as_plain_string};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    reqs: Vec<Requirement>,
}

fn split_top_level_commas(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

fn parse_set(rest: &str, term: &str) -> Result<Vec<String>, String> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("unable to parse requirement: {term:?}: expected (v1,v2,...)"))?;
    Ok(inner.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect())
}

fn check_key(key: &str, term: &str) -> Result<String, String> {
    let key = key.trim();
    if key.is_empty() || key.contains(char::is_whitespace) {
        return Err(format!("unable to parse requirement: {term:?}: invalid label key"));
    }
    Ok(key.to_string())
}

impl LabelSelector {
    /// Parse a selector string such as `job-name=x,team`.
    pub fn parse(s: &str) -> Result<LabelSelector, String> {
        let mut reqs = Vec::new();
        for term in split_top_level_commas(s) {
            let t = term.trim();
            if t.is_empty() {
                continue;
            }
            let words: Vec<&str> = t.split_whitespace().collect();
            if words.len() >= 2 && (words[1] == "in" || words[1] == "notin") {
                let key = check_key(words[0], t)?;
                let after_key = t[words[0].len()..].trim_start();
                let rest = &after_key[words[1].len()..];
                let values = parse_set(rest, t)?;
                reqs.push(if words[1] == "in" {
                    Requirement::In(key, values)
                } else {
                    Requirement::NotIn(key, values)
                });
            } else if let Some(k) = t.strip_prefix('!') {
                reqs.push(Requirement::NotExists(check_key(k, t)?));
            } else if let Some((k, v)) = t.split_once("!=") {
                reqs.push(Requirement::NotEq(check_key(k, t)?, v.trim().to_string()));
            } else if let Some((k, v)) = t.split_once("==") {
                reqs.push(Requirement::Eq(check_key(k, t)?, v.trim().to_string()));
            } else if let Some((k, v)) = t.split_once('=') {
                reqs.push(Requirement::Eq(check_key(k, t)?, v.trim().to_string()));
            } else {
                reqs.push(Requirement::Exists(check_key(t, t)?));
            }
        }
        Ok(LabelSelector { reqs })
    }

    /// Does a label map satisfy every requirement?
    pub fn matches_labels(&self, labels: &BTreeMap<String, String>) -> bool {
        self.reqs.iter().all(|r| match r {
            Requirement::Eq(k, v) => labels.get(k) == Some(v),
            Requirement::NotEq(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|x| vs.contains(x)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|x| !vs.contains(x)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::NotExists(k) => !labels.contains_key(k),
        })
    }

    /// Does an object's `metadata.labels` satisfy the selector?
    pub fn matches_object(&self, obj: &Value) -> bool {
        self.matches_labels(&labels_of(obj))
    }
}

/// `metadata.labels` of an object as a map (non-string values are ignored).
pub(crate) fn labels_of(obj: &Value) -> BTreeMap<String, String> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string()))).collect())
        .unwrap_or_default()
}

/// A parsed field selector.
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldSelector {
    reqs: Vec<(String, bool, String)>, // (path, equal?, value)
}

impl FieldSelector {
    pub fn parse(s: &str) -> Result<FieldSelector, String> {
        let mut reqs = Vec::new();
        for term in s.split(',') {
            let t = term.trim();
            if t.is_empty() {
                continue;
            }
            if let Some((k, v)) = t.split_once("!=") {
                reqs.push((k.trim().to_string(), false, v.trim().to_string()));
            } else if let Some((k, v)) = t.split_once("==") {
                reqs.push((k.trim().to_string(), true, v.trim().to_string()));
            } else if let Some((k, v)) = t.split_once('=') {
                reqs.push((k.trim().to_string(), true, v.trim().to_string()));
            } else {
                return Err(format!("invalid selector: '{t}'; can't understand '{t}'"));
            }
        }
        Ok(FieldSelector { reqs })
    }

    pub fn matches_object(&self, obj: &Value) -> bool {
        self.reqs.iter().all(|(path, eq, want)| {
            let got = value_as_plain_string(get_path(obj, path));
            (got == *want) == *eq
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn equality_and_existence() {
        let l = labels(&[("job-name", "x"), ("team", "ml")]);
        assert!(LabelSelector::parse("job-name=x").unwrap().matches_labels(&l));
        assert!(LabelSelector::parse("job-name==x,team").unwrap().matches_labels(&l));
        assert!(!LabelSelector::parse("job-name=y").unwrap().matches_labels(&l));
        assert!(!LabelSelector::parse("job-name=x,other").unwrap().matches_labels(&l));
        assert!(LabelSelector::parse("!other").unwrap().matches_labels(&l));
        assert!(!LabelSelector::parse("!team").unwrap().matches_labels(&l));
        assert!(LabelSelector::parse("team!=infra").unwrap().matches_labels(&l));
        assert!(LabelSelector::parse("").unwrap().matches_labels(&l));
    }

    #[test]
    fn set_based() {
        let l = labels(&[("env", "prod")]);
        assert!(LabelSelector::parse("env in (prod, dev)").unwrap().matches_labels(&l));
        assert!(!LabelSelector::parse("env notin (prod,dev),x").unwrap().matches_labels(&l));
        assert!(LabelSelector::parse("tier notin (a)").unwrap().matches_labels(&l));
        assert!(LabelSelector::parse("env in prod").is_err());
    }

    #[test]
    fn field_selector() {
        let obj = serde_json::json!({"metadata": {"name": "a"}, "status": {"phase": "Running"}});
        assert!(FieldSelector::parse("metadata.name=a").unwrap().matches_object(&obj));
        assert!(FieldSelector::parse("status.phase!=Pending").unwrap().matches_object(&obj));
        assert!(!FieldSelector::parse("metadata.name=b").unwrap().matches_object(&obj));
        assert!(FieldSelector::parse("nonsense").is_err());
    }
}
