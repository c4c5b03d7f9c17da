//! `falcon serve`: one process with the Web API under `/api/v1` and, unless turned off, the worker loop.
//!
//! - It refuses to listen on a non-loopback address, or behind `--allowed-host`, while no live token exists
//!   (anyone who can reach it could run commands through the worker); on loopback over a store that never held a
//!   token it is open, for one person on their machine (see `security`). When the last live token is revoked
//!   while it runs, it says so in its log and stays closed.
//! - Connections are bounded in number and in time, per client too, with a reserve for health checks and
//!   requests with a token (`connections`); what one token or client may hold once its request is read, after the
//!   guard (`budget`).
//! - On the shutdown signal (SIGTERM or SIGINT in the CLI) it stops accepting connections, closes idle ones, lets
//!   requests in flight finish, ends event streams (they see `stopping` and send their `end`), and drops what is
//!   still open after the grace period (5 s); meanwhile the worker loop stops cleanly (its running jobs' samples
//!   written, its leases handed back, or left to lapse after 3 s) — the call returns within 10 s whatever the
//!   clients do.

use crate::security;
use crate::state::State;
use falcon_app::{App, AppError};
use falcon_core::ErrorKind;
use std::future::Future;
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
    /// How many connections, and how long a client may take (the stop's grace for open requests among them).
    pub limits: crate::connections::Limits,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            worker: true,
            max_analyses: 2,
            allowed_hosts: Vec::new(),
            limits: crate::connections::Limits::default(),
        }
    }
}

/// The router over a state (for tests and for [`serve`]).
pub fn router(state: Arc<State>) -> axum::Router {
    crate::routes::router(crate::dashboard::router())
        // After the guard (it needs the principal): what one client may hold (`budget`).
        .route_layer(axum::middleware::from_fn(crate::budget::limit))
        // On matched routes only: a path with no route is a 404, a method a route lacks a 405.
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), security::guard))
        .layer(axum::middleware::from_fn(security::response_headers))
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
    let exposed = if !options.bind.ip().is_loopback() {
        Some(format!("on {}", options.bind))
    } else if !options.allowed_hosts.is_empty() {
        Some(format!("behind --allowed-host {}", options.allowed_hosts.join(", ")))
    } else {
        None
    };
    if let (Some(exposed), false) = (exposed, tokens) {
        return Err(AppError::new(
            ErrorKind::Usage,
            format!("refusing to serve {exposed} with no live token: nobody could sign in, or, once open, anyone could run commands"),
        )
        .with_hint("create one first (`falcon token create --name NAME --scope admin`), or bind 127.0.0.1 alone"));
    }
    let listener = tokio::net::TcpListener::bind(options.bind)
        .await
        .map_err(|e| AppError::new(ErrorKind::Failure, format!("listening on {}: {e}", options.bind)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| AppError::new(ErrorKind::Failure, format!("reading the bound address: {e}")))?;
    let (stop_tx, stop_rx) = watch::channel(false);
    app.limit_heavy_analyses(options.max_analyses);
    let state = Arc::new(State::new(app.clone(), addr, &options.allowed_hosts, stop_rx.clone()));
    let mut limits = options.limits.clone();
    limits.max_connections = crate::connections::fit_to_open_files(limits.max_connections);
    let grace = limits.grace;
    let server = tokio::spawn(crate::connections::run(listener, router(state.clone()), limits, stop_rx.clone()));
    let worker = options.worker.then(|| {
        let (app, mut stop) = (app.clone(), stop_rx.clone());
        tokio::spawn(async move { run_worker(&app, &mut stop).await })
    });
    let watcher = tokio::spawn(watch_tokens(app.clone(), tokens, stop_rx.clone()));
    let ever = app.tokens_ever().await?;
    on_ready(addr, ever);
    if ever && !tokens {
        eprintln!("{NO_LIVE_TOKEN}");
    }

    shutdown.await;
    let _ = stop_tx.send(true);
    // The connections drain (at most the grace) while the worker stops; the worker gets 3 s past the grace.
    let worker = async {
        if let Some(worker) = worker {
            match tokio::time::timeout(grace + Duration::from_secs(3), worker).await {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(e))) => eprintln!("falcon serve: the worker stopped with an error: {e}"),
                Ok(Err(e)) => eprintln!("falcon serve: the worker task failed: {e}"),
                Err(_) => eprintln!("falcon serve: the worker did not stop in time: its leases lapse by themselves"),
            }
        }
    };
    let (served, ()) = tokio::join!(server, worker);
    if let Err(e) = served {
        tracing::warn!("the server task failed: {e}");
    }
    watcher.abort();
    Ok(())
}

/// What the log says when no live token is left over a store that has held one.
const NO_LIVE_TOKEN: &str =
    "falcon serve: warning: no live token is left (the last one was revoked): the server stays \
     closed to everyone; create one on this machine (`falcon token create --name NAME --scope admin`) to let anyone in";

/// Watches the tokens while the server runs (every 2 s): when the last live one is revoked, the log says so.
async fn watch_tokens(app: Arc<App>, mut live: bool, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            r = stop.changed() => if r.is_err() || *stop.borrow() { return },
        }
        match app.tokens_exist().await {
            Ok(now) => {
                if live && !now {
                    eprintln!("{NO_LIVE_TOKEN}");
                }
                live = now;
            }
            Err(e) => tracing::debug!("reading the tokens: {e}"),
        }
    }
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
