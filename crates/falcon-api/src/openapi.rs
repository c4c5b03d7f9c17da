//! The OpenAPI 3.1 document of the API (`/api/v1/openapi.json`), generated from the code: the route table below
//! (kept beside the router; a test requests every path it lists) and the JSON Schemas of the bodies, derived
//! with `schemars` from the same Rust types the handlers return — the derive the MCP server's tool schemas
//! come from too. Schemas are JSON Schema 2020-12 (OpenAPI 3.1's dialect), written for what the server sends
//! (serialization); every number may also be `null`, since a non-finite float is written as `null`.

use falcon_app::experiments::{
    AnalysisSummary, ArtifactRecord, Change, ExperimentDetail, ExperimentItem, MemoryVerdict, RunComparison,
};
use falcon_app::goals::{GoalComparison, GoalReport, GoalView, PoolUsage, SessionDetail};
use falcon_app::page::Page;
use falcon_app::profiles::{ProfileComparison, ProfileReport, TraceRun};
use falcon_app::setup::DoctorReport;
use falcon_core::spec::ExperimentSpec;
use schemars::generate::{Contract, SchemaSettings};
use schemars::{JsonSchema, SchemaGenerator};
use serde::Serialize;
use serde_json::{json, Map, Value};

/// The error body every failure has.
#[derive(Serialize, JsonSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Serialize, JsonSchema)]
pub struct ErrorDetail {
    /// `usage`, `not_found`, `conflict`, `invalid`, `failure`, or the API's own: `unauthorized`, `forbidden`,
    /// `payload_too_large`, `unsupported_media_type`, `too_many_requests`, `range_not_satisfiable`.
    pub code: String,
    pub message: String,
    pub hint: Option<String>,
}

/// `GET …/diff/{b}`.
#[derive(Serialize, JsonSchema)]
pub struct DiffBody {
    /// Every path that differs, A → B; `group` says configuration or bookkeeping.
    pub changes: Vec<Change>,
}

/// `GET /api/v1/profiles/{exp}` without `tool`: what is stored.
#[derive(Serialize, JsonSchema)]
pub struct StoredAnalysis {
    pub experiment: falcon_core::ids::ExperimentId,
    /// The analysis summary rows (profile, trace, kernel_bench, accuracy).
    pub analysis: Vec<AnalysisSummary>,
    /// The memory verdict, `null` until analysed.
    pub memory: Option<MemoryVerdict>,
}

/// `GET /healthz`.
#[derive(Serialize, JsonSchema)]
pub struct Health {
    pub status: String,
}

/// The body of `POST /api/v1/goals`.
#[derive(serde::Deserialize, JsonSchema)]
#[allow(dead_code, reason = "the schema of the request; the handler reads the same fields")]
pub struct NewGoalRequest {
    pub title: String,
    /// `mfu`, `step_time_s`, `tokens_per_s`, …
    pub metric: String,
    /// `maximize` or `minimize` (default: the metric's standard direction).
    pub direction: Option<String>,
    pub target: Option<f64>,
    /// The baseline experiment (`e-N`).
    pub baseline: Option<String>,
    pub priority: Option<i64>,
    pub workload: Option<String>,
    pub hardware: Option<String>,
}

/// The body of `POST /api/v1/goals/claim`.
#[derive(serde::Deserialize, JsonSchema)]
#[allow(dead_code, reason = "the schema of the request")]
pub struct ClaimRequest {
    /// A goal (`g-N`); without it, the next open goal of highest priority.
    pub id: Option<String>,
    /// Who claims (default: the token's name).
    pub owner: Option<String>,
    /// The lease, in seconds (default 3600).
    pub lease_s: Option<u64>,
}

/// The body of `POST /api/v1/goals/{id}/release|achieve|abandon`.
#[derive(serde::Deserialize, JsonSchema)]
#[allow(dead_code, reason = "the schema of the request")]
pub struct CloseRequest {
    /// Why (kept in the goal's history).
    pub reason: Option<String>,
    /// Who (default: the token's name).
    pub owner: Option<String>,
}

/// The JSON body of `POST /api/v1/sessions` (a YAML body is the sweep itself).
#[derive(serde::Deserialize, JsonSchema)]
#[allow(dead_code, reason = "the schema of the request")]
pub struct SessionRequestBody {
    /// The sweep: its YAML/JSON text or the object (`base` inline or `base: e-N`, `sweep`, `name_template`,
    /// `repeats`).
    pub sweep: Value,
    pub name: Option<String>,
    /// The goal its experiments serve (`g-N`).
    pub goal: Option<String>,
    pub repeats: Option<usize>,
}

/// A response: its status, what it means, and its bodies by content type.
type Answer = (u16, &'static str, Vec<(&'static str, Value)>);

struct Op {
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    /// `read` or `write`; `None`: no token needed.
    scope: Option<&'static str>,
    /// (name, in, required, type, description)
    params: Vec<(&'static str, &'static str, bool, &'static str, &'static str)>,
    /// (content types, schema)
    body: Option<(Vec<&'static str>, Value)>,
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
        ty: &'static str,
        doc: &'static str,
    ) -> Op {
        self.params.push((name, place, required, ty, doc));
        self
    }
    fn id(self, name: &'static str, doc: &'static str) -> Op {
        self.param(name, "path", true, "string", doc)
    }
    fn body(mut self, types: Vec<&'static str>, schema: Value) -> Op {
        self.body = Some((types, schema));
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

fn routes(g: &mut SchemaGenerator) -> Vec<Op> {
    let page = |q: Op| {
        q.param("cursor", "query", false, "string", "the next_cursor of the previous page").param(
            "limit",
            "query",
            false,
            "integer",
            "page size, 0 to 1000",
        )
    };
    let text = json!({ "type": "string" });
    let binary = json!({ "type": "string", "contentEncoding": "binary" });
    let exp_id = "an experiment id, e-N";
    vec![
        page(op("get", "/api/v1/experiments", "Experiments, newest first (filters combine)"))
            .param("status", "query", false, "string", "PENDING, PROVISIONING, RUNNING, COMPLETED, FAILED, CANCELLED")
            .param("goal", "query", false, "string", "g-N")
            .param("session", "query", false, "string", "s-N")
            .param("scenario", "query", false, "string", "algorithm, benchmark, accuracy, profiling, kernel_bench")
            .param("label", "query", false, "string", "KEY=VALUE; repeatable, all must match")
            .param("since", "query", false, "string", "created within this duration: 90s, 2h, 7d")
            .param("name", "query", false, "string", "the experiments' name")
            .param("with_metrics", "query", false, "boolean", "each item with its metric summaries")
            .json(200, "a page of experiments", g.subschema_for::<Page<ExperimentItem>>().to_value()),
        op("post", "/api/v1/experiments", "Submit an experiment spec (YAML or JSON); a worker runs it")
            .body(vec!["application/yaml", "application/json"], g.subschema_for::<ExperimentSpec>().to_value())
            .json(201, "the experiment", g.subschema_for::<ExperimentDetail>().to_value()),
        op("get", "/api/v1/experiments/{id}", "One experiment: record, history, artifacts, metrics, analyses, memory")
            .id("id", exp_id)
            .json(200, "the experiment", g.subschema_for::<ExperimentDetail>().to_value()),
        op("post", "/api/v1/experiments/{id}/cancel", "Ask for an experiment to be cancelled")
            .id("id", exp_id)
            .json(200, "the experiment after the request", g.subschema_for::<ExperimentDetail>().to_value()),
        op("get", "/api/v1/experiments/{id}/logs", "Its logs; with Accept: text/event-stream, followed until it ends")
            .id("id", exp_id)
            .param("tail", "query", false, "integer", "the last N lines of each log")
            .content(
                200,
                "{source: text}, or Server-Sent Events `log` {experiment, source, text} then `end` {experiment, status}",
                vec![
                    ("application/json", json!({ "type": "object", "additionalProperties": { "type": "string" } })),
                    ("text/event-stream", text.clone()),
                ],
            ),
        page(op("get", "/api/v1/experiments/{id}/artifacts", "Its indexed artifacts"))
            .id("id", exp_id)
            .json(200, "a page of artifacts", g.subschema_for::<Page<ArtifactRecord>>().to_value()),
        op("get", "/api/v1/experiments/{id}/artifacts/{path}", "One artifact's bytes, streamed; Range: bytes=a-b")
            .id("id", exp_id)
            .id("path", "its path inside the experiment (no `..`)")
            .param("Range", "header", false, "string", "one range: bytes=a-b, bytes=a-, bytes=-n")
            .content(200, "the object", vec![("application/octet-stream", binary.clone())])
            .content(206, "the range asked for", vec![("application/octet-stream", binary)]),
        op("get", "/api/v1/experiments/{a}/diff/{b}", "The config diff A → B")
            .id("a", exp_id)
            .id("b", exp_id)
            .json(200, "the changes", g.subschema_for::<DiffBody>().to_value()),
        op("get", "/api/v1/experiments/{a}/compare/{b}", "The run-level verdict on a metric, A the baseline")
            .id("a", "runs: e-1, e-1,e-2, s-3 or config:<hash prefix>")
            .id("b", "runs, as A")
            .param("metric", "query", false, "string", "default step_time_s")
            .param("direction", "query", false, "string", "maximize or minimize, for a metric without a standard one")
            .param("warmup", "query", false, "integer", "steps dropped from each run's start")
            .json(200, "the verdict (a regression is a 200 too)", g.subschema_for::<RunComparison>().to_value()),
        page(op("get", "/api/v1/goals", "Goals, highest priority first"))
            .param("status", "query", false, "string", "OPEN, CLAIMED, ACHIEVED, ABANDONED")
            .json(200, "a page of goals", g.subschema_for::<Page<GoalView>>().to_value()),
        op("post", "/api/v1/goals", "Create a goal")
            .body(vec!["application/json"], g.subschema_for::<NewGoalRequest>().to_value())
            .json(201, "the goal", g.subschema_for::<GoalView>().to_value()),
        op("post", "/api/v1/goals/claim", "Claim a goal (or the next open one) with a lease")
            .body(vec!["application/json"], g.subschema_for::<ClaimRequest>().to_value())
            .json(200, "the claimed goal", g.subschema_for::<GoalView>().to_value()),
        op("get", "/api/v1/goals/{id}", "One goal")
            .id("id", "g-N")
            .json(200, "the goal", g.subschema_for::<GoalView>().to_value()),
        op("post", "/api/v1/goals/{id}/release", "Give a claimed goal back (another owner's: admin)")
            .id("id", "g-N")
            .body(vec!["application/json"], g.subschema_for::<CloseRequest>().to_value())
            .json(200, "the goal", g.subschema_for::<GoalView>().to_value()),
        op("post", "/api/v1/goals/{id}/achieve", "Mark a goal achieved (another owner's: admin)")
            .id("id", "g-N")
            .body(vec!["application/json"], g.subschema_for::<CloseRequest>().to_value())
            .json(200, "the goal", g.subschema_for::<GoalView>().to_value()),
        op("post", "/api/v1/goals/{id}/abandon", "Give a goal up (another owner's: admin)")
            .id("id", "g-N")
            .body(vec!["application/json"], g.subschema_for::<CloseRequest>().to_value())
            .json(200, "the goal", g.subschema_for::<GoalView>().to_value()),
        op("get", "/api/v1/goals/{id}/compare", "The goal's experiments ranked against its baseline")
            .id("id", "g-N")
            .json(200, "the ranking", g.subschema_for::<GoalComparison>().to_value()),
        op("get", "/api/v1/goals/{id}/report", "The goal report")
            .id("id", "g-N")
            .param("format", "query", false, "string", "json (default), md or html")
            .param("top", "query", false, "integer", "rows per ranked table")
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
            .param("name", "query", false, "string", "the session's name (YAML body)")
            .param("goal", "query", false, "string", "g-N (YAML body)")
            .param("repeats", "query", false, "integer", "runs per point (YAML body)")
            .body(vec!["application/json", "application/yaml"], g.subschema_for::<SessionRequestBody>().to_value())
            .json(201, "the session", g.subschema_for::<SessionDetail>().to_value()),
        op("get", "/api/v1/sessions/{id}", "One session with its experiments and metrics")
            .id("id", "s-N")
            .json(200, "the session", g.subschema_for::<SessionDetail>().to_value()),
        page(op("get", "/api/v1/pools", "The configured pools and their load"))
            .json(200, "a page of pools", g.subschema_for::<Page<PoolUsage>>().to_value()),
        op("get", "/api/v1/profiles/{exp}", "The stored analysis; with ?tool=, those profile tools computed")
            .id("exp", exp_id)
            .param("tool", "query", false, "string", "overview, ops, hlo, roofline, memory, kernels, steps, all (comma-separated)")
            .json(
                200,
                "the stored analysis, or the report of the tools",
                json!({ "oneOf": [g.subschema_for::<StoredAnalysis>().to_value(), g.subschema_for::<ProfileReport>().to_value()] }),
            ),
        op("get", "/api/v1/profiles/{a}/compare/{b}", "The A/B profile comparison (A the baseline)")
            .id("a", exp_id)
            .id("b", exp_id)
            .param("format", "query", false, "string", "json (default), md or html")
            .param("top", "query", false, "integer", "rows per ranked table")
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
            .id("exp", exp_id)
            .json(200, "the trace analysis", g.subschema_for::<TraceRun>().to_value()),
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
        let params: Vec<Value> = o
            .params
            .iter()
            .map(|(name, place, required, ty, doc)| {
                json!({ "name": name, "in": place, "required": required, "description": doc, "schema": { "type": ty } })
            })
            .collect();
        let mut operation = json!({
            "summary": o.summary,
            "operationId": format!("{}{}", o.method, o.path.replace(['/', '{', '}', '.'], "_")),
            "parameters": params,
            "responses": responses,
        });
        if let Some((types, schema)) = &o.body {
            let content: Map<String, Value> =
                types.iter().map(|t| (t.to_string(), json!({ "schema": schema }))).collect();
            operation["requestBody"] = json!({ "required": true, "content": content });
        }
        operation["security"] = match o.scope {
            Some(scope) => json!([{ "bearer": [scope] }, {}]),
            None => json!([]),
        };
        let entry = paths.entry(o.path.to_string()).or_insert_with(|| json!({}));
        entry[o.method] = operation;
    }
    let mut schemas = Value::Object(g.take_definitions(true));
    nullable_numbers(&mut schemas);
    let mut paths = Value::Object(paths);
    nullable_numbers(&mut paths);
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Falcon",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The Web API of `falcon serve`: the CLI's `--json` objects over HTTP. With no token defined \
                            and a loopback bind it is open; otherwise send `Authorization: Bearer <token>` (scopes read \
                            < write < admin). Errors are {\"error\": {code, message, hint}}.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
        },
    })
}

/// Every `"type": "number"` (alone or in a list) also allows `null`: a non-finite float is written as `null`.
fn nullable_numbers(value: &mut Value) {
    match value {
        Value::Object(map) => {
            match map.get_mut("type") {
                Some(Value::String(t)) if t == "number" => {
                    map.insert("type".into(), json!(["number", "null"]));
                }
                Some(Value::Array(types)) if types.contains(&json!("number")) && !types.contains(&json!("null")) => {
                    types.push(json!("null"));
                }
                _ => {}
            }
            for v in map.values_mut() {
                nullable_numbers(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(nullable_numbers),
        _ => {}
    }
}
