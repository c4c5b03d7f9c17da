//! A request read against its own schema: every front end that hands a use case JSON-shaped arguments (the Web
//! API's query string, an MCP tool's arguments) gets back the request the type's schema describes, or a usage error
//! naming the field — so what the OpenAPI document and a tool's `inputSchema` promise is what is accepted, by
//! construction, not by a second list of rules. Serde's deserializer reads the types and enums; this adds the
//! constraints serde does not see: `pattern`, `minLength`/`maxLength`, `minimum`/`maximum`, `maxItems`.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::{AppError, Result};

/// Reads request `T` from an object of arguments, checked against `T`'s schema first.
pub fn read<T: JsonSchema + DeserializeOwned>(arguments: Map<String, Value>) -> Result<T> {
    check_fields::<T>(&arguments)?;
    serde_json::from_value(Value::Object(arguments)).map_err(|e| AppError::usage(e.to_string()))
}

/// Checks a request built in process (the CLI's, from its flags) against its type's schema, as [`read`] checks
/// one that arrives as JSON: the same rules for every front end.
pub fn checked<T: JsonSchema + serde::Serialize>(request: &T) -> Result<()> {
    let value = serde_json::to_value(request)
        .map_err(|e| AppError::new(falcon_core::ErrorKind::Failure, format!("encoding the request: {e}")))?;
    match value {
        Value::Object(fields) => check_fields::<T>(&fields),
        _ => Ok(()),
    }
}

/// Checks each field against its property's schema in `T`'s.
fn check_fields<T: JsonSchema>(fields: &Map<String, Value>) -> Result<()> {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>().to_value();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, value) in fields {
            if let Some(s) = props.get(name) {
                check(name, value, s)?;
            }
        }
    }
    Ok(())
}

/// Checks one value against a property's schema (an optional one's `anyOf [X, null]` read as X).
fn check(name: &str, value: &Value, schema: &Value) -> Result<()> {
    if value.is_null() {
        return Ok(());
    }
    if let Some(any) = schema.get("anyOf").and_then(Value::as_array) {
        for s in any.iter().filter(|s| s.get("type").and_then(Value::as_str) != Some("null")) {
            check(name, value, s)?;
        }
        return Ok(());
    }
    let bad = |why: String| Err(AppError::usage(format!("{name}={}: {why}", shown(value))));
    match value {
        Value::String(text) => {
            let chars = text.chars().count() as u64;
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64) {
                if chars < min {
                    return bad(format!("at least {min} characters"));
                }
            }
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
                if chars > max {
                    return bad(format!("at most {max} characters"));
                }
            }
            if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
                // The patterns are the types' own constants: one that does not compile is a defect, said as such.
                let re = regex::Regex::new(pattern)
                    .map_err(|e| AppError::new(falcon_core::ErrorKind::Failure, format!("{name}'s pattern: {e}")))?;
                if !re.is_match(text) {
                    return bad(format!("does not match `{pattern}`"));
                }
            }
        }
        Value::Number(n) => {
            if let (Some(min), Some(x)) = (schema.get("minimum").and_then(Value::as_f64), n.as_f64()) {
                if x < min {
                    return bad(format!("at least {min}"));
                }
            }
            if let (Some(max), Some(x)) = (schema.get("maximum").and_then(Value::as_f64), n.as_f64()) {
                if x > max {
                    return bad(format!("at most {max}"));
                }
            }
        }
        Value::Array(items) => {
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
                if items.len() as u64 > max {
                    return bad(format!("at most {max} values"));
                }
            }
            if let Some(item) = schema.get("items") {
                for v in items {
                    check(name, v, item)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// A value as an error shows it: a string as written, cut to 80 characters.
fn shown(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match text.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::requests::{ExperimentCompareRequest, ExperimentListRequest, GoodputRequest};
    use serde_json::json;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn what_the_schema_refuses_is_refused_naming_the_field() {
        for (a, says) in [
            (json!({"session": "3"}), "session=3: does not match"),
            (json!({"goal": "g-0"}), "goal=g-0"),
            (json!({"since": ""}), "since=: at least 2"),
            (json!({"since": "2H"}), "since=2H"),
            (json!({"limit": 1001}), "limit=1001: at most 1000"),
            (json!({"label": ["a=1", "b"]}), "label=b"),
            (json!({"cursor": "e-01"}), "cursor=e-01"),
        ] {
            let err = read::<ExperimentListRequest>(args(a.clone())).unwrap_err().to_string();
            assert!(err.contains(says), "{a}: {err}");
        }
        let err = read::<GoodputRequest>(args(json!({"since": "0s"}))).unwrap_err().to_string();
        assert!(err.contains("since=0s"), "{err}");
        let err = read::<ExperimentCompareRequest>(args(json!({"a": "e-1", "b": "e-2", "warmup": 5_000_000_000u64})))
            .unwrap_err()
            .to_string();
        assert!(err.contains("warmup=5000000000: at most 4294967295"), "{err}");
    }

    #[test]
    fn what_it_accepts_reads_as_the_type() {
        let r: ExperimentListRequest =
            read(args(json!({"session": "s-3", "since": "1h30m", "label": ["a=1"], "limit": 1000}))).unwrap();
        assert_eq!((r.session.as_deref(), r.since.as_deref(), r.limit), (Some("s-3"), Some("1h30m"), 1000));
        let c: ExperimentCompareRequest =
            read(args(json!({"a": "config:abcdef", "b": "s-2", "warmup": 4_294_967_295u64}))).unwrap();
        assert_eq!(c.warmup, Some(u32::MAX));
    }
}
