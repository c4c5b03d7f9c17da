//! A use case's request read from the query string, and its OpenAPI parameters, both from the request type's
//! JSON schema (`falcon_app::requests`): the type is the one declaration; this edge only knows that a query
//! string's values are text, typed here by the schema (integers, booleans; a repeatable parameter collects its
//! values into a list) before the type's own deserializer reads them — unknown parameters and bad values are
//! refused with the JSON error.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// One query parameter of a request type.
pub struct QueryParam {
    pub name: String,
    /// Its JSON schema (the property's, its description taken out).
    pub schema: Value,
    pub description: String,
    /// An array: the parameter may repeat.
    pub repeatable: bool,
}

/// The query parameters of request type `T`, in its declaration order.
pub fn query_parameters<T: JsonSchema>() -> Vec<QueryParam> {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>().to_value();
    let defs = schema.get("$defs").cloned().unwrap_or(Value::Null);
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Vec::new() };
    props
        .iter()
        .map(|(name, s)| {
            let mut schema = inline(s, &defs);
            let description = s.get("description").and_then(Value::as_str).unwrap_or("").replace('\n', " ");
            if let Some(o) = schema.as_object_mut() {
                o.remove("description");
            }
            let repeatable = types(&schema).contains(&"array");
            QueryParam { name: name.clone(), schema, description, repeatable }
        })
        .collect()
}

/// A property's schema with a `$ref` to one of the type's definitions (an enum) put in place, and an optional
/// one (`anyOf [X, null]`) read as X: a query parameter is absent, never null.
fn inline(s: &Value, defs: &Value) -> Value {
    let resolve = |v: &Value| -> Value {
        match v.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
            Some(name) => defs.get(name).cloned().unwrap_or(Value::Null),
            None => v.clone(),
        }
    };
    if let Some(any) = s.get("anyOf").and_then(Value::as_array) {
        if let Some(x) = any.iter().find(|v| v.get("type").and_then(Value::as_str) != Some("null")) {
            let mut out = resolve(x);
            if let (Some(o), Some(d)) = (out.as_object_mut(), s.get("description")) {
                o.insert("description".into(), d.clone());
            }
            return out;
        }
    }
    let mut out = resolve(s);
    if let Some(o) = out.as_object_mut() {
        // `type: [string, null]` is an optional string.
        if let Some(Value::Array(t)) = o.get("type").cloned() {
            let kept: Vec<Value> = t.into_iter().filter(|v| v != "null").collect();
            o.insert("type".into(), if kept.len() == 1 { kept[0].clone() } else { Value::Array(kept) });
        }
    }
    out
}

fn types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Reads request `T` from the query string's pairs.
pub fn from_query<T: JsonSchema + DeserializeOwned>(raw: Option<&str>) -> ApiResult<T> {
    from_path_and_query(&[], raw)
}

/// Reads request `T` from the path's parameters (`path`: name and value) and the query string's pairs; a query
/// parameter that names a path parameter is given twice.
pub fn from_path_and_query<T: JsonSchema + DeserializeOwned>(
    path: &[(&str, String)],
    raw: Option<&str>,
) -> ApiResult<T> {
    from_path_and_pairs(path, crate::request::query_pairs(raw)?)
}

/// Reads request `T` from the path's parameters and the query's pairs (those a surface takes for itself, such as
/// a report's `format`, already taken out).
pub fn from_path_and_pairs<T: JsonSchema + DeserializeOwned>(
    path: &[(&str, String)],
    pairs: Vec<(String, String)>,
) -> ApiResult<T> {
    let params = query_parameters::<T>();
    let mut map = serde_json::Map::new();
    for (key, value) in path {
        map.insert((*key).to_string(), Value::String(value.clone()));
    }
    for (key, value) in pairs {
        let Some(p) = params.iter().find(|p| p.name == key) else {
            return Err(ApiError::usage(format!("unknown query parameter `{key}`")));
        };
        let typed = typed_value(&p.schema, &key, value)?;
        if p.repeatable {
            if let Value::Array(a) = map.entry(key).or_insert_with(|| Value::Array(Vec::new())) {
                a.push(typed);
            }
        } else if map.insert(key.clone(), typed).is_some() {
            return Err(ApiError::usage(format!("query parameter `{key}` given twice")));
        }
    }
    // Checked against the type's schema (its patterns and bounds): what the OpenAPI document says is what is taken.
    Ok(falcon_app::requests::read::<T>(map)?)
}

/// A query value as the JSON its schema types it.
fn typed_value(schema: &Value, key: &str, value: String) -> ApiResult<Value> {
    let t = types(schema);
    if t.contains(&"integer") {
        return value
            .parse::<u64>()
            .map(Value::from)
            .map_err(|_| ApiError::usage(format!("{key}={value}: a whole number")));
    }
    if t.contains(&"boolean") {
        return crate::request::flag(key, &value).map(Value::from);
    }
    Ok(Value::String(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use falcon_app::requests::{ExperimentListRequest, DEFAULT_PAGE};

    #[test]
    fn a_list_request_from_its_query_string() {
        let r: ExperimentListRequest =
            from_query(Some("status=completed&label=a%3D1&label=b%3D2&limit=10&with_metrics=true&scenario=BENCHMARK"))
                .unwrap();
        assert_eq!(r.status, Some(falcon_core::status::ExperimentStatus::Completed));
        assert_eq!(r.label, ["a=1", "b=2"]);
        assert_eq!((r.limit, r.with_metrics), (10, true));
        assert_eq!(r.scenario, Some(falcon_core::status::Scenario::Benchmark));
        let d: ExperimentListRequest = from_query(None).unwrap();
        assert_eq!(d.limit, DEFAULT_PAGE);
        for (q, says) in [
            ("colour=red", "unknown query parameter `colour`"),
            ("limit=ten", "limit=ten: a whole number"),
            ("limit=1&limit=2", "given twice"),
            ("status=DONE", "DONE"),
            ("with_metrics=maybe", "true or false"),
            ("session=3", "session=3: does not match"),
            ("since=", "since=: at least 2 characters"),
        ] {
            let err = from_query::<ExperimentListRequest>(Some(q)).unwrap_err().message;
            assert!(err.contains(says), "{q}: {err}");
        }
    }

    #[test]
    fn a_compare_request_from_its_path_and_query() {
        use falcon_app::requests::ExperimentCompareRequest;
        use falcon_core::stats::Direction;
        let path = [("a", "e-1,e-2".to_string()), ("b", "s-3".to_string())];
        let r: ExperimentCompareRequest =
            from_path_and_query(&path, Some("direction=maximize&warmup=3&metric=tokens_per_s")).unwrap();
        assert_eq!((r.a.as_str(), r.b.as_str(), r.metric.as_str()), ("e-1,e-2", "s-3", "tokens_per_s"));
        assert_eq!((r.direction, r.warmup), (Some(Direction::HigherIsBetter), Some(3)));
        let d: ExperimentCompareRequest = from_path_and_query(&path, None).unwrap();
        assert_eq!(d.metric, falcon_app::requests::DEFAULT_METRIC);
        let twice = from_path_and_query::<ExperimentCompareRequest>(&path, Some("a=e-9")).unwrap_err().message;
        assert!(twice.contains("given twice"), "{twice}");
        let bad = ExperimentCompareRequest { metric: "a b".into(), ..d }.compare().unwrap_err().to_string();
        assert!(bad.contains("metric=a b"), "{bad}");
    }

    #[test]
    fn parameters_carry_the_types_enums_and_defaults() {
        let params = query_parameters::<ExperimentListRequest>();
        let by = |n: &str| params.iter().find(|p| p.name == n).unwrap();
        assert_eq!(by("limit").schema["default"], DEFAULT_PAGE);
        assert!(by("label").repeatable && !by("limit").repeatable);
        // A documented enum is `oneOf` its values' `const`s.
        let scenarios: Vec<Value> =
            by("scenario").schema["oneOf"].as_array().unwrap().iter().map(|v| v["const"].clone()).collect();
        let want: Vec<Value> = falcon_core::status::Scenario::ALL.iter().map(|s| s.as_str().into()).collect();
        assert_eq!(scenarios, want);
    }
}
