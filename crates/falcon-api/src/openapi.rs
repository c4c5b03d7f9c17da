//! The OpenAPI 3.1 document of the API (`/api/v1/openapi.json`), generated from the code: the route table below
//! (kept beside the router; a test requests every path it lists) and the JSON Schemas of the bodies, derived
//! with `schemars` from the same Rust types the handlers return — the derive the MCP server's tool schemas
//! come from too. Schemas are JSON Schema 2020-12 (OpenAPI 3.1's dialect), written for what the server sends
//! (serialization); every number may also be `null`, since a non-finite float is written as `null`.

use crate::bodies::SessionBody;
use falcon_app::experiments::{ArtifactView, ExperimentDetail, ExperimentItem, RunComparison};
use falcon_app::goals::{GoalComparison, GoalReport, GoalView, PoolUsage, SessionDetail};
use falcon_app::goodput::{Goodput, GoodputReport};
use falcon_app::page::Page;
use falcon_app::profiles::{ProfileComparison, ProfileReport, Tool, TraceRun};
use falcon_app::setup::DoctorReport;
use falcon_core::spec::ExperimentSpec;
use schemars::generate::{Contract, SchemaSettings};
use schemars::{JsonSchema, SchemaGenerator};
use serde::Serialize;
use serde_json::{json, Map, Value};

pub use falcon_app::contract::{DiffBody, ErrorBody, ErrorDetail, StoredAnalysis};

/// `GET /healthz`.
#[derive(Serialize, JsonSchema)]
pub struct Health {
    pub status: String,
}

/// A response: its status, what it means, and its bodies by content type.
type Answer = (u16, &'static str, Vec<(&'static str, Value)>);

struct Op {
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    /// `read` or `write`; `None`: no token needed.
    scope: Option<&'static str>,
    /// (name, in, required, schema, description)
    params: Vec<(String, &'static str, bool, Value, String)>,
    /// (content types, schema, required)
    body: Option<(Vec<&'static str>, Value, bool)>,
    /// (status, description, [(content type, schema)])
    ok: Vec<Answer>,
}

fn op(method: &'static str, path: &'static str, summary: &'static str) -> Op {
    let scope = if path.starts_with("/api/v1/") && path != "/api/v1/openapi.json" {
        Some(if method == "get" { "read" } else { "write" })
    } else {
        None
    };
    Op { method, path, summary, scope, params: Vec::new(), body: None, ok: Vec::new() }
}

impl Op {
    fn param(
        mut self,
        name: &'static str,
        place: &'static str,
        required: bool,
        schema: Value,
        doc: impl Into<String>,
    ) -> Op {
        self.params.push((name.to_string(), place, required, schema, doc.into()));
        self
    }
    /// The query parameters of a use case's request type, generated from it (`typed_query`).
    fn request<T: JsonSchema>(self) -> Op {
        self.request_with_path::<T>(&[])
    }
    /// The parameters of a use case's request type, those named in `path` the path's (required), the rest the
    /// query's.
    fn request_with_path<T: JsonSchema>(mut self, path: &[&str]) -> Op {
        for p in crate::typed_query::query_parameters::<T>() {
            let in_path = path.contains(&p.name.as_str());
            self.params.push((p.name, if in_path { "path" } else { "query" }, in_path, p.schema, p.description));
        }
        self
    }
    /// The query parameters of a use case's request type whose `ids` are the path's, each declared with [`Op::id`]
    /// (the API takes an id in its canonical form only).
    fn request_beside_ids<T: JsonSchema>(mut self, ids: &[&str]) -> Op {
        for p in crate::typed_query::query_parameters::<T>().into_iter().filter(|p| !ids.contains(&p.name.as_str())) {
            self.params.push((p.name, "query", false, p.schema, p.description));
        }
        self
    }
    /// An optional query parameter.
    fn query(self, name: &'static str, schema: Value, doc: impl Into<String>) -> Op {
        self.param(name, "query", false, schema, doc)
    }
    /// A path segment that is an id `{prefix}N`.
    fn id(self, name: &'static str, prefix: &str, doc: &'static str) -> Op {
        self.param(name, "path", true, id_schema(prefix), doc)
    }
    fn body(mut self, types: Vec<&'static str>, schema: Value) -> Op {
        self.body = Some((types, schema, true));
        self
    }
    /// A JSON body that may be left out (an empty body is `{}`).
    fn optional_body(mut self, schema: Value) -> Op {
        self.body = Some((vec!["application/json"], schema, false));
        self
    }
    fn json(mut self, status: u16, doc: &'static str, schema: Value) -> Op {
        self.ok.push((status, doc, vec![("application/json", schema)]));
        self
    }
    fn content(mut self, status: u16, doc: &'static str, content: Vec<(&'static str, Value)>) -> Op {
        self.ok.push((status, doc, content));
        self
    }
}

/// An id as the API takes it: `e-N`, `g-N`, `s-N`.
fn id_schema(prefix: &str) -> Value {
    json!({ "type": "string", "pattern": format!("^{prefix}[1-9][0-9]{{0,17}}$") })
}

/// An artifact path as `check_path` takes it: segments of no control character, `/` or backslash, none empty, `.`
/// or `..`.
fn artifact_path() -> Value {
    let c = r"[^/\\\u0000-\u001f\u007f-\u009f]";
    let d = r"[^/\\\u0000-\u001f\u007f-\u009f.]";
    let segment = format!(r"({c}*{d}{c}*|\.{{3,}})");
    matching(&format!("^{segment}(/{segment})*$"))
}

/// A request type's schema without `field` (the route's path carries it).
fn without(mut schema: Value, field: &str) -> Value {
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        props.remove(field);
    }
    if let Some(o) = schema.as_object_mut() {
        if let Some(Value::Array(required)) = o.get_mut("required") {
            required.retain(|r| r != field);
            if required.is_empty() {
                o.remove("required");
            }
        }
    }
    schema
}

/// One of `values`.
fn one_of(values: &[&str]) -> Value {
    json!({ "type": "string", "enum": values })
}

/// An integer from `min` to `max`.
fn int(min: u64, max: u64) -> Value {
    json!({ "type": "integer", "minimum": min, "maximum": max })
}

/// A string matching `pattern`.
fn matching(pattern: &str) -> Value {
    json!({ "type": "string", "pattern": pattern })
}

fn routes(g: &mut SchemaGenerator) -> Vec<Op> {
    // Request bodies are described as they are read (fields with defaults optional), inline.
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    settings.contract = Contract::Deserialize;
    let mut reads = settings.into_generator();
    let mut request = |f: fn(&mut SchemaGenerator) -> schemars::Schema| f(&mut reads).to_value();
    let text = json!({ "type": "string" });
    let binary = json!({ "type": "string", "contentEncoding": "binary" });
    let exp_id = "an experiment id, e-N";
    let report_format = one_of(&["json", "md", "html"]);
    let tools = format!("{}|all", Tool::ALL.map(Tool::as_str).join("|"));
    vec![
        op("get", "/api/v1/experiments", "Experiments, newest first (filters combine)")
            .request::<falcon_app::requests::ExperimentListRequest>()
            .json(200, "a page of experiments", g.subschema_for::<Page<ExperimentItem>>().to_value()),
        op("post", "/api/v1/experiments", "Submit an experiment spec (YAML or JSON); a worker runs it")
            .body(vec!["application/yaml", "application/json"], request(|g| g.root_schema_for::<ExperimentSpec>()))
            .json(201, "the experiment", g.subschema_for::<ExperimentDetail>().to_value()),
        op("get", "/api/v1/experiments/{id}", "One experiment: record, history, artifacts, metrics, analyses, memory")
            .id("id", "e-", exp_id)
            .request_beside_ids::<falcon_app::requests::ExperimentShowRequest>(&["id"])
            .json(200, "the experiment", g.subschema_for::<ExperimentDetail>().to_value()),
        op("post", "/api/v1/experiments/{id}/cancel", "Ask for an experiment to be cancelled")
            .id("id", "e-", exp_id)
            .json(200, "the experiment after the request", g.subschema_for::<ExperimentDetail>().to_value()),
        op("get", "/api/v1/experiments/{id}/logs", "Its logs; with Accept: text/event-stream, followed until it ends")
            .id("id", "e-", exp_id)
            .request_beside_ids::<falcon_app::requests::ExperimentLogLinesRequest>(&["id"])
            .content(
                200,
                "{source: text}, or Server-Sent Events `log` {experiment, source, text} then `end` {experiment, status}",
                vec![
                    ("application/json", json!({ "type": "object", "additionalProperties": { "type": "string" } })),
                    ("text/event-stream", text.clone()),
                ],
            ),
        op("get", "/api/v1/experiments/{id}/artifacts", "Its indexed artifacts")
            .id("id", "e-", exp_id)
            .request_beside_ids::<falcon_app::requests::ExperimentArtifactsRequest>(&["id"])
            .json(200, "a page of artifacts", g.subschema_for::<Page<ArtifactView>>().to_value()),
        op("get", "/api/v1/experiments/{id}/artifacts/{path}", "One artifact's bytes, streamed; Range: bytes=a-b")
            .id("id", "e-", exp_id)
            .param("path", "path", true, artifact_path(), "its path inside the experiment (no `..`, `.` or empty segments)")
            .param(
                "Range",
                "header",
                false,
                matching("^bytes=([0-9]{1,18}-[0-9]{0,18}|-[0-9]{1,18})$"),
                "one range: bytes=a-b, bytes=a-, bytes=-n",
            )
            .content(200, "the object", vec![("application/octet-stream", binary.clone())])
            .content(206, "the range asked for", vec![("application/octet-stream", binary)])
            .json(416, "a range past the end", g.subschema_for::<ErrorBody>().to_value()),
        op("get", "/api/v1/experiments/{a}/diff/{b}", "The config diff A → B")
            .id("a", "e-", exp_id)
            .id("b", "e-", exp_id)
            .json(200, "the changes", g.subschema_for::<DiffBody>().to_value()),
        op("get", "/api/v1/experiments/{a}/compare/{b}", "The run-level verdict on a metric, A the baseline")
            .request_with_path::<falcon_app::requests::ExperimentCompareRequest>(&["a", "b"])
            .json(200, "the verdict (a regression is a 200 too)", g.subschema_for::<RunComparison>().to_value()),
        op("get", "/api/v1/experiments/{id}/goodput", "Its goodput: productive share of the held time, badput by cause")
            .id("id", "e-", exp_id)
            .json(200, "the goodput (`exp show`'s `goodput`)", g.subschema_for::<Goodput>().to_value()),
        op("get", "/api/v1/goodput", "Goodput of ended runs and their chip-seconds by cause (filters combine)")
            .request::<falcon_app::requests::GoodputRequest>()
            .json(200, "the report (`falcon goodput --json`)", g.subschema_for::<GoodputReport>().to_value()),
        op("get", "/api/v1/goals", "Goals, highest priority first")
            .request::<falcon_app::requests::GoalListRequest>()
            .json(200, "a page of goals", g.subschema_for::<Page<GoalView>>().to_value()),
        op("post", "/api/v1/goals", "Create a goal")
            .body(vec!["application/json"], request(|g| g.root_schema_for::<falcon_app::requests::GoalCreateRequest>()))
            .json(201, "the goal", g.subschema_for::<GoalView>().to_value()),
        op("post", "/api/v1/goals/claim", "Claim a goal (or the next open one) with a lease")
            .optional_body(request(|g| g.root_schema_for::<falcon_app::requests::GoalClaimRequest>()))
            .json(200, "the claimed goal", g.subschema_for::<GoalView>().to_value()),
        op("get", "/api/v1/goals/{id}", "One goal")
            .id("id", "g-", "g-N")
            .json(200, "the goal", g.subschema_for::<GoalView>().to_value()),
        op("post", "/api/v1/goals/{id}/release", "Give a claimed goal back (the holder's token, or admin)")
            .id("id", "g-", "g-N")
            .optional_body(without(request(|g| g.root_schema_for::<falcon_app::requests::GoalCloseRequest>()), "id"))
            .json(200, "the goal", g.subschema_for::<GoalView>().to_value()),
        op("post", "/api/v1/goals/{id}/achieve", "Mark a goal achieved (the holder's token, or admin)")
            .id("id", "g-", "g-N")
            .optional_body(without(request(|g| g.root_schema_for::<falcon_app::requests::GoalCloseRequest>()), "id"))
            .json(200, "the goal", g.subschema_for::<GoalView>().to_value()),
        op("post", "/api/v1/goals/{id}/abandon", "Give a goal up (the holder's token, or admin)")
            .id("id", "g-", "g-N")
            .optional_body(without(request(|g| g.root_schema_for::<falcon_app::requests::GoalCloseRequest>()), "id"))
            .json(200, "the goal", g.subschema_for::<GoalView>().to_value()),
        op("get", "/api/v1/goals/{id}/compare", "The goal's experiments ranked against its baseline")
            .id("id", "g-", "g-N")
            .json(200, "the ranking", g.subschema_for::<GoalComparison>().to_value()),
        op("get", "/api/v1/goals/{id}/report", "The goal report")
            .id("id", "g-", "g-N")
            .query("format", report_format.clone(), "json (default), md or html")
            .request_beside_ids::<falcon_app::requests::GoalReportRequest>(&["id"])
            .content(
                200,
                "the report",
                vec![
                    ("application/json", g.subschema_for::<GoalReport>().to_value()),
                    ("text/markdown", text.clone()),
                    ("text/html", text.clone()),
                ],
            ),
        op("post", "/api/v1/sessions", "Submit a sweep (base inline or base: e-N; a server path is refused)")
            .query("name", matching(r"\S"), "the session's name (YAML body)")
            .query("goal", id_schema("g-"), "g-N (YAML body)")
            .query("repeats", int(1, 100), "runs per point (YAML body)")
            .body(vec!["application/json", "application/yaml"], request(|g| g.root_schema_for::<SessionBody>()))
            .json(201, "the session", g.subschema_for::<SessionDetail>().to_value()),
        op("get", "/api/v1/sessions/{id}", "One session with its experiments, metrics and its sweep as a grid")
            .id("id", "s-", "s-N")
            .request_beside_ids::<falcon_app::requests::SessionShowRequest>(&["id"])
            .json(200, "the session", g.subschema_for::<SessionDetail>().to_value()),
        op("post", "/api/v1/bisect", "Find the commit that moved a metric (code.repo a URL; the worker runs the search)")
            .body(vec!["application/json"], request(|g| g.root_schema_for::<falcon_app::requests::BisectStartRequest>()))
            .json(201, "the bisection, its ends' runs submitted", g.subschema_for::<falcon_app::contract::BisectView>().to_value()),
        op("get", "/api/v1/bisect/{id}", "A bisection: its culprit once decided, every commit tested")
            .id("id", "s-", "s-N")
            .json(200, "the bisection", g.subschema_for::<falcon_app::contract::BisectView>().to_value()),
        op("get", "/api/v1/pools", "The configured pools and their load")
            .request::<falcon_app::requests::PageRequest>()
            .json(200, "a page of pools", g.subschema_for::<Page<PoolUsage>>().to_value()),
        op("get", "/api/v1/profiles/{exp}", "The stored analysis; with ?tool=, those profile tools computed")
            .id("exp", "e-", exp_id)
            .query("tool", matching(&format!("^({tools})(,({tools}))*$")), format!("{}, all (comma-separated)", Tool::names()))
            .json(
                200,
                "the stored analysis, or the report of the tools",
                json!({ "oneOf": [g.subschema_for::<StoredAnalysis>().to_value(), g.subschema_for::<ProfileReport>().to_value()] }),
            ),
        op("get", "/api/v1/profiles/{a}/compare/{b}", "The A/B profile comparison (A the baseline)")
            .id("a", "e-", exp_id)
            .id("b", "e-", exp_id)
            .query("format", report_format, "json (default), md or html")
            .request_beside_ids::<falcon_app::requests::ExperimentProfileCompareRequest>(&["a", "b"])
            .content(
                200,
                "the comparison (with config_diff)",
                vec![
                    ("application/json", g.subschema_for::<ProfileComparison>().to_value()),
                    ("text/markdown", text.clone()),
                    ("text/html", text),
                ],
            ),
        op("get", "/api/v1/traces/{exp}", "Where each step's time goes")
            .id("exp", "e-", exp_id)
            .json(200, "the trace analysis", g.subschema_for::<TraceRun>().to_value()),
        op("get", "/api/v1/traces/{exp}/export", "The trace as gzipped Chrome trace JSON (for Perfetto)")
            .id("exp", "e-", exp_id)
            .content(
                200,
                "Chrome trace JSON, gzipped (the first host's capture)",
                vec![("application/gzip", json!({ "type": "string", "contentMediaType": "application/gzip" }))],
            ),
        op("get", "/healthz", "The process answers").json(200, "up", g.subschema_for::<Health>().to_value()),
        op("get", "/readyz", "The database and the artifact store answer")
            .json(200, "ready", g.subschema_for::<DoctorReport>().to_value())
            .json(503, "not ready: the failing checks", g.subschema_for::<DoctorReport>().to_value()),
        op("get", "/api/v1/openapi.json", "This document").json(200, "OpenAPI 3.1", json!({ "type": "object" })),
    ]
}

/// Every path the document lists, with its method (for the test that requests each).
pub fn paths() -> Vec<(&'static str, &'static str)> {
    let mut g = generator();
    routes(&mut g).into_iter().map(|o| (o.method, o.path)).collect()
}

fn generator() -> SchemaGenerator {
    let mut settings = SchemaSettings::draft2020_12();
    settings.definitions_path = "/components/schemas".into();
    settings.meta_schema = None;
    settings.contract = Contract::Serialize;
    settings.into_generator()
}

/// The document.
pub fn document() -> Value {
    let mut g = generator();
    let ops = routes(&mut g);
    let error = g.subschema_for::<ErrorBody>().to_value();
    let mut paths = Map::new();
    for o in ops {
        let mut responses = Map::new();
        for (status, doc, content) in &o.ok {
            let content: Map<String, Value> =
                content.iter().map(|(t, s)| (t.to_string(), json!({ "schema": s }))).collect();
            responses.insert(status.to_string(), json!({ "description": doc, "content": content }));
        }
        let errors: &[(&str, &str)] = &[
            ("400", "usage: a malformed request"),
            ("401", "no token, or an unknown or revoked one"),
            ("403", "a scope too small, or a Host/Origin that is not this server's"),
            ("404", "not found"),
            ("409", "conflicts with the current state"),
            ("422", "input that does not validate"),
            ("500", "the work failed"),
        ];
        for (status, doc) in errors {
            if *status == "401" && o.scope.is_none() {
                continue;
            }
            responses.insert(
                status.to_string(),
                json!({ "description": doc, "content": { "application/json": { "schema": error } } }),
            );
        }
        if o.method == "post" {
            for (status, doc) in [("413", "the body is over 1 MiB"), ("415", "the body is not JSON or YAML")] {
                responses.insert(
                    status.into(),
                    json!({ "description": doc, "content": { "application/json": { "schema": error } } }),
                );
            }
        }
        if o.path.starts_with("/api/v1/profiles") || o.path.starts_with("/api/v1/traces") {
            responses.insert(
                "429".into(),
                json!({ "description": "as many analyses run as the server allows (see Retry-After)",
                        "content": { "application/json": { "schema": error } } }),
            );
        }
        if o.path.ends_with("/logs") || o.path.ends_with("/artifacts/{path}") {
            responses.insert(
                "429".into(),
                json!({ "description": "the token (or the client, without one) has as many event streams and \
                                        downloads open as it may (see Retry-After)",
                        "content": { "application/json": { "schema": error } } }),
            );
        }
        let params: Vec<Value> = o
            .params
            .iter()
            .map(|(name, place, required, schema, doc)| {
                json!({ "name": name, "in": place, "required": required, "description": doc, "schema": schema })
            })
            .collect();
        let mut operation = json!({
            "summary": o.summary,
            "operationId": format!("{}{}", o.method, o.path.replace(['/', '{', '}', '.'], "_")),
            "parameters": params,
            "responses": responses,
        });
        if let Some((types, schema, required)) = &o.body {
            let content: Map<String, Value> =
                types.iter().map(|t| (t.to_string(), json!({ "schema": schema }))).collect();
            operation["requestBody"] = json!({ "required": required, "content": content });
        }
        operation["security"] = match o.scope {
            Some(scope) => json!([{ "bearer": [scope] }, {}]),
            None => json!([]),
        };
        let entry = paths.entry(o.path.to_string()).or_insert_with(|| json!({}));
        entry[o.method] = operation;
    }
    let mut schemas = Value::Object(g.take_definitions(true));
    falcon_app::contract::nullable_numbers(&mut schemas);
    let mut paths = Value::Object(paths);
    falcon_app::contract::nullable_numbers(&mut paths);
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Falcon",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The Web API of `falcon serve`: the CLI's `--json` objects over HTTP. On a loopback bind \
                            over a store that never held a token it is open; otherwise send `Authorization: Bearer \
                            <token>` (scopes read < write < admin; a write token acts on the goals it claimed, an \
                            admin on any). Errors are {\"error\": {code, message, hint}}.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
        },
    })
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    /// Each integer the document lets a client send — a parameter or a body field — has its bound: a number past
    /// a Rust integer's range is refused by the schema, never accepted by it and then refused by the reader
    /// (Schemathesis found `warmup=1424903977131149` against a `u32` that said no maximum).
    #[test]
    fn every_integer_a_client_sends_is_bounded() {
        fn walk(v: &Value, at: &str, out: &mut Vec<String>) {
            match v {
                Value::Object(o) => {
                    let integer = match o.get("type") {
                        Some(Value::String(t)) => t == "integer",
                        Some(Value::Array(t)) => t.iter().any(|t| t == "integer"),
                        _ => false,
                    };
                    if integer && o.get("maximum").is_none() {
                        out.push(at.to_string());
                    }
                    for (k, v) in o {
                        walk(v, &format!("{at}/{k}"), out);
                    }
                }
                Value::Array(a) => a.iter().enumerate().for_each(|(i, v)| walk(v, &format!("{at}/{i}"), out)),
                _ => {}
            }
        }
        let doc = super::document();
        let mut unbounded = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let at = format!("{method} {path}");
                walk(&op["parameters"], &format!("{at} parameters"), &mut unbounded);
                // A spec is core's document, read by its own validator (range errors with line:col, 422): the
                // requests' bodies are the use cases'.
                if at != "post /api/v1/experiments" {
                    walk(&op["requestBody"], &format!("{at} body"), &mut unbounded);
                }
            }
        }
        assert!(unbounded.is_empty(), "integers a client sends without a maximum:\n  {}", unbounded.join("\n  "));
    }
}
