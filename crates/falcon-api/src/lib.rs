//! The protocol front ends over `falcon-app`: the Web API of `falcon serve` — REST under `/api/v1`, an OpenAPI
//! 3.1 document at `/api/v1/openapi.json`, scoped bearer tokens, safe by default — and the dashboard. (The MCP
//! server is `falcon-mcp`, beside this crate.)
//!
//! - **Owns:** routing, HTTP status codes, request parsing, the security checks of every request
//!   (`security`), the connections and their limits (`connections`), the server's lifecycle (`server`).
//! - **Must not:** hold a use case (each route calls one `falcon-app` method and returns its struct as JSON,
//!   the same object the CLI's `--json` prints), touch storage or cluster clients, read a file a request names.
//! - **Invariants:** errors are `{"error": {"code", "message", "hint"}}` with the status of their kind; no
//!   route but `/healthz` and `/readyz` answers without passing `security::guard`.
//!
//! # In detail
//!
//! - **Owns:** `falcon serve`'s HTTP API (axum) and dashboard over `falcon-app`: `routes/` one module per noun
//!   (experiments with logs over Server-Sent Events and artifacts with `Range`; goals, sessions and pools; profiles
//!   and traces: the experiment's kept reports of `falcon_app::reports`; health), `events.rs` (a followed stream's
//!   items as server-sent events), `bodies.rs` (the JSON
//!   request bodies: the handlers parse them and the document derives their schemas), `security.rs` (access log; one
//!   Host naming the server, Origin, content type, bearer tokens with scopes or a dashboard sign-in session, open
//!   only on a loopback bind without `--allowed-host` over a store that never held a token; `nosniff` and a
//!   sandboxing CSP on every answer that is not a page), `body.rs` (1 MiB cap), `error.rs` (error kind → HTTP status,
//!   the CLI's error body), `openapi.rs` (the OpenAPI 3.1 document: a route table beside the router and `schemars`
//!   schemas of the same types the handlers return), `connections.rs` (the accept loop over hyper: request heads
//!   within 15 s, bodies within 30 s, answers taken within 30 s, a cap on connections in all and per client —
//!   loopback too — with the oldest idle one giving way and a reserve for health checks and requests with a
//!   token), `budget.rs` (after the guard: what the reserve serves, long-lived answers per token or client),
//!   `server.rs` (bind rules, the worker loop, a stop within 10 s whatever the clients do); `dashboard/` (the
//!   pages at `/`: experiments with the live status stream, experiment, compare, goals, session grid, history,
//!   sign-in (an opaque session id in a cookie, never the token; sign-out ends it on the server); `assets/` inside
//!   the binary)
//! - **Must not:** the same as the CLI; name `falcon-mcp`; keep state of its own beyond the "any token?" cache (the
//!   heavy-analysis limit is the application's, set from `--max-analyses`)
//! - **Invariants:** a use case is a `falcon-app` call, never written here; every body is the CLI's `--json` object;
//!   every route is in the document (a test requests each; Schemathesis checks the rest); no route reaches a handler
//!   past the security checks; nothing but the health routes, the sign-in form and the static assets answers without
//!   a token once one was ever made (revoking them all never reopens it); goal actions answer to the caller's
//!   identity, never to a body field; an artifact is never a page of the origin (a sandboxed download); a page
//!   escapes every stored text and runs no inline script (its CSP forbids them)

mod bodies;
mod body;
mod budget;
pub mod connections;
mod dashboard;
pub mod error;
mod events;
pub mod openapi;
mod request;
pub(crate) mod routes;
mod security;
pub mod server;
mod state;
mod typed_query;

pub use server::{router, serve, ServeOptions};
pub use state::State;
