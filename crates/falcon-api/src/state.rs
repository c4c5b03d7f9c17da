//! What every request handler shares: the application (which holds the limit on heavy analyses), the server's
//! own address and names, and the signal that the server is stopping (followers end their streams on it).

use falcon_app::App;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{watch, Mutex};

/// The server's shared state.
pub struct State {
    pub app: Arc<App>,
    /// Where it listens.
    pub addr: SocketAddr,
    /// `Host` values that name this server (see `security`).
    pub hosts: Vec<String>,
    /// Becomes `true` when the server stops: event streams end.
    pub stopping: watch::Receiver<bool>,
    /// Names were given with `--allowed-host`: a proxy forwards to this server, so it is never open, and its
    /// sign-in cookie is `Secure`.
    pub behind_proxy: bool,
    /// Whether the store has ever held a token, and when a `false` was read (a short cache: one database read a
    /// second at most while it is `false`; once `true` it stays so, as the store's rows do).
    tokens_ever: Mutex<Option<(bool, Instant)>>,
}

/// How long the answer "no token was ever made" is reused.
const TOKENS_TTL: Duration = Duration::from_secs(1);

impl State {
    pub fn new(app: Arc<App>, addr: SocketAddr, extra_hosts: &[String], stopping: watch::Receiver<bool>) -> Self {
        let port = addr.port();
        let mut hosts = vec![format!("{}:{port}", host_of(addr))];
        if addr.ip().is_loopback() || addr.ip().is_unspecified() {
            hosts.extend([format!("localhost:{port}"), format!("127.0.0.1:{port}"), format!("[::1]:{port}")]);
        }
        hosts.extend(extra_hosts.iter().map(|h| h.to_ascii_lowercase()));
        let mut seen = std::collections::HashSet::new();
        hosts.retain(|h| seen.insert(h.clone()));
        State { app, addr, hosts, stopping, behind_proxy: !extra_hosts.is_empty(), tokens_ever: Mutex::new(None) }
    }

    /// Whether the store has ever held a token, revoked ones included (a `false` is read again after a second).
    pub async fn tokens_ever(&self) -> falcon_app::Result<bool> {
        let mut cached = self.tokens_ever.lock().await;
        match *cached {
            Some((true, _)) => return Ok(true),
            Some((false, at)) if at.elapsed() < TOKENS_TTL => return Ok(false),
            _ => {}
        }
        let known = self.app.tokens_ever().await?;
        *cached = Some((known, Instant::now()));
        Ok(known)
    }

    /// Whether a request without credentials is let in, as the local user: only on a loopback bind with no
    /// `--allowed-host`, over a store that has never held a token — once one was made the server never opens
    /// again, even when every token is revoked.
    pub async fn open(&self) -> falcon_app::Result<bool> {
        Ok(self.addr.ip().is_loopback() && !self.behind_proxy && !self.tokens_ever().await?)
    }
}

fn host_of(addr: SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) => a.ip().to_string(),
        SocketAddr::V6(a) => format!("[{}]", a.ip()),
    }
}
