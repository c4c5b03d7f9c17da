//! `falcon serve`: one process with the Web API under `/api/v1` and, unless turned off, the worker loop.
//!
//! - It refuses to listen on a non-loopback address while no token exists (anyone who can reach it could run
//!   commands through the worker); on loopback with no token it is open, for one person on their machine.
//! - On the shutdown signal (SIGTERM or SIGINT in the CLI) it stops accepting connections, lets requests in
//!   flight finish, ends event streams (they see `stopping` and send their `end`), and gives up on what is
//!   still open after the grace period (10 s); the worker loop stops cleanly (its running jobs' samples written,
//!   its leases handed back) and the call returns.

use crate::security;
use crate::state::State;
use falcon_app::{App, AppError};
use falcon_core::ErrorKind;
use std::future::{Future, IntoFuture};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How `falcon serve` runs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Where to listen (default `127.0.0.1:8080`).
    pub bind: SocketAddr,
    /// Run the worker loop in the same process.
    pub worker: bool,
    /// Heavy analyses at once, at most (beyond: 429).
    pub max_analyses: usize,
    /// More `Host` names that address this server (behind a reverse proxy: its public name).
    pub allowed_hosts: Vec<String>,
    /// How long the stop waits for open requests and streams.
    pub grace: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            worker: true,
            max_analyses: 2,
            allowed_hosts: Vec::new(),
            grace: Duration::from_secs(10),
        }
    }
}

/// The router over a state (for tests and for [`serve`]).
pub fn router(state: Arc<State>) -> axum::Router {
    crate::routes::router()
        // On matched routes only: a path with no route is a 404, a method a route lacks a 405.
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), security::guard))
        .layer(axum::middleware::from_fn(security::access_log))
        .with_state(state)
}

/// Serves until `shutdown` completes (see the module docs); `on_ready` hears the address it listens on.
pub async fn serve(
    app: Arc<App>,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
    on_ready: impl FnOnce(SocketAddr, bool),
) -> falcon_app::Result<()> {
    let tokens = app.tokens_exist().await?;
    if !options.bind.ip().is_loopback() && !tokens {
        return Err(AppError::new(
            ErrorKind::Usage,
            format!(
                "refusing to listen on {} with no token defined: anyone reaching it could run commands",
                options.bind
            ),
        )
        .with_hint("create one first (`falcon token create --name NAME --scope admin`), or bind 127.0.0.1"));
    }
    let listener = tokio::net::TcpListener::bind(options.bind)
        .await
        .map_err(|e| AppError::new(ErrorKind::Failure, format!("listening on {}: {e}", options.bind)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| AppError::new(ErrorKind::Failure, format!("reading the bound address: {e}")))?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let state = Arc::new(State::new(app.clone(), addr, &options.allowed_hosts, options.max_analyses, stop_rx.clone()));
    let mut server_stop = stop_rx.clone();
    let server = axum::serve(listener, router(state))
        .with_graceful_shutdown(async move {
            let _ = server_stop.wait_for(|s| *s).await;
        })
        .into_future();
    let server = tokio::spawn(server);
    let worker = options.worker.then(|| {
        let (app, mut stop) = (app.clone(), stop_rx.clone());
        tokio::spawn(async move { run_worker(&app, &mut stop).await })
    });
    on_ready(addr, tokens);

    shutdown.await;
    let _ = stop_tx.send(true);
    match tokio::time::timeout(options.grace, server).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => tracing::warn!("the server stopped with an error: {e}"),
        Ok(Err(e)) => tracing::warn!("the server task failed: {e}"),
        Err(_) => eprintln!("falcon serve: connections still open after {} s: closing them", options.grace.as_secs()),
    }
    if let Some(worker) = worker {
        match worker.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("falcon serve: the worker stopped with an error: {e}"),
            Err(e) => eprintln!("falcon serve: the worker task failed: {e}"),
        }
    }
    Ok(())
}

/// The worker loop until `stop` turns true, then a clean stop.
async fn run_worker(app: &App, stop: &mut watch::Receiver<bool>) -> falcon_app::Result<()> {
    let poll = Duration::from_millis(app.config()?.jobs.poll_interval_ms);
    let mut worker = app.start_worker().await?;
    while !*stop.borrow() {
        let (events, wait) = worker.pass_or_back_off(poll).await;
        for e in events {
            if let falcon_app::worker::WorkerEvent::Warning { message } = e {
                tracing::warn!("{message}");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.changed() => {}
        }
    }
    worker.stop().await
}
