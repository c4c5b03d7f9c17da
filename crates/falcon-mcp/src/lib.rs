//! `falcon mcp`: the Model Context Protocol server (stdio, the official Rust SDK `rmcp`), Falcon's third front end
//! beside the CLI and the Web API (`falcon-api`), a thin shell over the same `falcon-app` calls. It depends on
//! `falcon-app` and `falcon-core` only (the layering test keeps it so): the error envelope and the schema
//! conventions it shares with the Web API are `falcon_app::contract`'s.
//!
//! - **Tools:** one per use case ([`tools::TOOLS`]), named after the CLI command (`exp show` → `exp_show`); input
//!   schemas from the argument structs, output schemas from the types the CLI prints with `--json` (the
//!   OpenAPI document's derive); the result is that `--json` object as `structuredContent` (and as text). A
//!   failure is a tool error (`isError: true`) whose structured content is the CLI's and the API's error body,
//!   `{"error": {"code", "message", "hint"}}`; only a call the protocol cannot take (an unknown tool) is a
//!   JSON-RPC error. `exp_submit` with `wait` sends progress notifications when the request carries a progress
//!   token, honours `timeout_s`, and stops when the client cancels the request.
//! - **Prompts:** the agent skills, one prompt each, the skill's procedure as the prompt ([`prompts`]).
//! - **Read-only:** `--read-only` offers only the tools that change nothing: no submit, cancel, goal create,
//!   claim or close. (Analyses still keep their derived results, as the Web API's GET routes do.)
//! - **Invariants:** stdout carries JSON-RPC only: logs go to stderr, nothing prints a progress bar; a use case
//!   is never written here, only called.
//!
//! # In detail
//!
//! - **Owns:** `falcon mcp` over `rmcp` (stdio): `tools.rs` the tool table — one per use case, input schemas from
//!   `args.rs`, output schemas from the `--json` types — and its dispatch, `prompts.rs` the skills as prompts,
//!   `progress.rs` progress notifications, `framing.rs` JSON-RPC's own errors for lines that are not requests (not
//!   JSON: -32700; an over-long method: -32601, never echoed), `lib.rs` the handler and stdio lifecycle
//! - **Must not:** name `falcon-api`; hold a use case; write anything but JSON-RPC to stdout
//! - **Invariants:** every tool's structured result is the CLI's `--json` object; errors are
//!   `falcon_app::contract::ErrorBody`

mod args;
mod framing;
mod progress;
pub mod prompts;
pub mod tools;

use falcon_app::{App, AppError};
use falcon_core::ErrorKind;
use progress::Progress;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams, GetPromptResponse, Implementation,
    ListPromptsResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use std::future::Future;
use std::sync::Arc;

/// How `falcon mcp` runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct McpOptions {
    /// Offer only the tools that change nothing.
    pub read_only: bool,
}

/// The server: the application and what it offers.
#[derive(Clone)]
pub struct FalconMcp {
    app: Arc<App>,
    read_only: bool,
}

impl FalconMcp {
    pub fn new(app: Arc<App>, options: McpOptions) -> Self {
        FalconMcp { app, read_only: options.read_only }
    }

    /// The tools offered, as listed.
    pub fn tools(&self) -> Vec<Tool> {
        tools::offered(self.read_only).map(listed).collect()
    }
}

/// A tool as `tools/list` gives it.
fn listed(spec: &tools::ToolSpec) -> Tool {
    let mut annotations = ToolAnnotations::new();
    annotations.title = Some(spec.title.to_string());
    annotations.read_only_hint = Some(!spec.writes);
    annotations.destructive_hint = Some(false);
    // Everything reached is this project's own store and clusters (and the URIs a caller names).
    annotations.open_world_hint = Some(false);
    let tool = Tool::new(spec.name, spec.description, Arc::new((spec.input)()))
        .with_title(spec.title)
        .with_annotations(annotations);
    match (spec.output)() {
        Some(schema) => tool.with_raw_output_schema(Arc::new(schema)),
        None => tool,
    }
}

/// The error body of the CLI's `--json` and the Web API: `{"error": {"code", "message", "hint"}}`.
pub fn error_body(e: &AppError) -> serde_json::Value {
    falcon_app::contract::ErrorBody::of(e).to_value()
}

impl ServerHandler for FalconMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_prompts().build())
            .with_server_info(Implementation::new("falcon", env!("CARGO_PKG_VERSION")).with_title("Falcon"))
            .with_instructions(
                "Falcon runs, tracks and analyses ML performance experiments. Call `context` first: it names the \
                 stores, pools, open goals and running experiments. Each tool returns the same JSON object as the \
                 matching `falcon … --json` command; a failure is a tool error carrying {\"error\": {code, message, \
                 hint}}. The prompts are Falcon's skills: step-by-step procedures for common goals.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::offered(self.read_only).find(|t| t.name == name).map(listed)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(spec) = tools::offered(self.read_only).find(|t| t.name == request.name) else {
            let why = if self.read_only && tools::TOOLS.iter().any(|t| t.name == request.name) {
                "is not offered: the server runs with --read-only"
            } else {
                "does not exist (tools/list names them)"
            };
            return Err(McpError::invalid_params(format!("tool `{}` {why}", request.name), None));
        };
        let token = context.meta.get_progress_token().or_else(|| request.meta.as_ref()?.get_progress_token());
        let progress = Progress::new(context.peer.clone(), token);
        let arguments = request.arguments.unwrap_or_default();
        let started = std::time::Instant::now();
        let result = tokio::select! {
            r = tools::call(&self.app, spec.name, arguments, &progress) => r,
            _ = context.ct.cancelled() => Err(AppError::new(ErrorKind::Failure, format!("{}: cancelled by the client", spec.name))),
        };
        progress.finish().await;
        tracing::info!(tool = spec.name, ok = result.is_ok(), ms = started.elapsed().as_millis() as u64, "tool call");
        Ok(match result {
            Ok(value) => CallToolResult::structured(value),
            Err(e) => CallToolResult::structured_error(error_body(&e)),
        }
        .into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let prompts = prompts::list().map_err(|e| McpError::internal_error(e.to_string(), Some(error_body(&e))))?;
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        match prompts::get(&request.name) {
            Ok(prompt) => Ok(prompt.into()),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                Err(McpError::invalid_params(format!("no prompt named `{}`", request.name), Some(error_body(&e))))
            }
            Err(e) => Err(McpError::internal_error(e.to_string(), Some(error_body(&e)))),
        }
    }
}

/// Serves MCP over stdin/stdout until the client closes its end or `shutdown` completes.
pub async fn serve_stdio(
    app: Arc<App>,
    options: McpOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> falcon_app::Result<()> {
    let failure = |what: &str, e: &dyn std::fmt::Display| AppError::new(ErrorKind::Failure, format!("{what}: {e}"));
    let (transport, writer) = framing::filtered(tokio::io::stdin(), tokio::io::stdout());
    let session = async {
        let running = FalconMcp::new(app, options)
            .serve(transport)
            .await
            .map_err(|e| failure("the MCP session did not start", &e))?;
        let cancel = running.cancellation_token();
        tokio::select! {
            ended = running.waiting() => { ended.map_err(|e| failure("the MCP session ended abnormally", &e))?; }
            _ = shutdown => cancel.cancel(),
        }
        Ok(())
    }
    .await;
    // Every line the session answered (the parse errors of a client that never initialized too) goes out first.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
    session
}
