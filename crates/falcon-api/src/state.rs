//! What every request handler shares: the application, the server's own address and names, the limit on heavy
//! analyses, and the signal that the server is stopping (followers end their streams on it).

use falcon_app::App;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{watch, Mutex, Semaphore};

/// The server's shared state.
pub struct State {
    pub app: Arc<App>,
    /// Where it listens.
    pub addr: SocketAddr,
    /// `Host` values that name this server (see `security`).
    pub hosts: Vec<String>,
    /// Heavy analyses (profile tools, comparisons, traces) running at once, at most.
    pub heavy: Arc<Semaphore>,
    /// Becomes `true` when the server stops: event streams end.
    pub stopping: watch::Receiver<bool>,
    /// Whether any live token exists, and when that was read (a short cache: one database read a second at most).
    tokens: Mutex<Option<(bool, Instant)>>,
}

/// How long the answer to "does any token exist?" is reused.
const TOKENS_TTL: Duration = Duration::from_secs(1);

impl State {
    pub fn new(
        app: Arc<App>,
        addr: SocketAddr,
        extra_hosts: &[String],
        heavy: usize,
        stopping: watch::Receiver<bool>,
    ) -> Self {
        let port = addr.port();
        let mut hosts = vec![format!("{}:{port}", host_of(addr))];
        if addr.ip().is_loopback() || addr.ip().is_unspecified() {
            hosts.extend([format!("localhost:{port}"), format!("127.0.0.1:{port}"), format!("[::1]:{port}")]);
        }
        hosts.extend(extra_hosts.iter().map(|h| h.to_ascii_lowercase()));
        let mut seen = std::collections::HashSet::new();
        hosts.retain(|h| seen.insert(h.clone()));
        State { app, addr, hosts, heavy: Arc::new(Semaphore::new(heavy.max(1))), stopping, tokens: Mutex::new(None) }
    }

    /// Whether any live token exists (read at most once a second).
    pub async fn tokens_exist(&self) -> falcon_app::Result<bool> {
        let mut cached = self.tokens.lock().await;
        if let Some((known, at)) = *cached {
            if at.elapsed() < TOKENS_TTL {
                return Ok(known);
            }
        }
        let known = self.app.tokens_exist().await?;
        *cached = Some((known, Instant::now()));
        Ok(known)
    }

    /// Whether the server listens on a loopback address only.
    pub fn loopback(&self) -> bool {
        self.addr.ip().is_loopback()
    }
}

fn host_of(addr: SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) => a.ip().to_string(),
        SocketAddr::V6(a) => format!("[{}]", a.ip()),
    }
}
