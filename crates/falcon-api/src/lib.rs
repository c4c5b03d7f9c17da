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

mod bodies;
mod body;
pub mod connections;
mod dashboard;
pub mod error;
pub mod openapi;
mod reports;
mod request;
pub(crate) mod routes;
mod security;
pub mod server;
mod state;

pub use server::{router, serve, ServeOptions};
pub use state::State;
