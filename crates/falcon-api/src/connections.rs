//! The connections of `falcon serve`: accepting them, bounding how many there are, how many one client may hold
//! and how long a client may take, and closing them all when the server stops. No client, slow or idle or many, can
//! hold the server.
//!
//! - **Request heads in time.** A connection waiting for a request head (a new one, or a kept-alive one between
//!   requests) must deliver the whole head within [`Limits::header_timeout`] (15 s), however slowly its bytes
//!   come; else it is closed (hyper's header-read timer). A body must arrive within `body::BODY_TIMEOUT` of the
//!   handler asking for it (408; the token-free sign-in's within 5 s); a body a handler does not read closes the
//!   connection after the answer.
//! - **Answers taken in time.** A connection whose client takes none of what it is sent for
//!   [`Limits::send_timeout`] (30 s: a download never read, its socket's buffer full) is dropped.
//! - **A bounded number of connections.** At most [`Limits::max_connections`] at once (1024 by default; lowered to
//!   what the process may open), and a budget per client (`budget::Client`, counted before any request is read):
//!   [`Limits::max_per_client`] (64) from one non-loopback address (an IPv6 client by its /64), and
//!   [`Limits::max_per_local_client`] (256) from this machine — every loopback address together, as any local
//!   process may pick any of 127.0.0.0/8; more, as a reverse proxy here speaks for many clients. A connection over a
//!   limit takes the place of the oldest connection that has no request in flight (of that client, for its budget),
//!   except a new one still in its first [`HEAD_GRACE`] (1 s): its head comes at once on any working link, and a
//!   flood of newcomers must not close it before it is read.
//! - **A reserve.** [`Limits::reserved`] of the connections (16, at most a quarter) are kept back: a connection
//!   that finds the others busy, or its client's budget spent with none of them idle, is admitted into the
//!   reserve, where only health checks and requests a token or a sign-in vouches for are served, and no long-lived
//!   answer (`budget` applies that once the guard has read the request). So a client that takes every other
//!   connection — from the same loopback address as everyone else — does not lock out the others. A newcomer that
//!   finds no room in the reserve either waits for one, up to [`ADMIT_WAIT`] (1 s), in the order it came (a queue as
//!   long as the reserve; while it is full, accepting pauses and newcomers wait in the kernel's queue), so that a
//!   client reconnecting as fast as it can does not win every place that frees; after that, a 503 and it is closed.
//!   A newcomer with room outside the reserve does not wait.
//! - **What one identity may hold.** Long-lived answers (event streams, downloads) at once per token or client:
//!   [`Limits::max_streams_per_client`] (16), then a 429 (`budget`).
//! - **A stop that ends.** On stop, accepting ends, connections with no request in flight (idle, or a head still
//!   arriving) close at once, those with one get [`Limits::grace`] to finish (event streams end by themselves on
//!   the stop signal), then the rest are dropped.

use crate::budget::{Admission, Budgets, Client};
use axum::body::Body;
use axum::http::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tokio::task::JoinSet;
use tower::ServiceExt;

/// How long a new connection is safe from giving way to a newcomer, before its first request.
pub const HEAD_GRACE: Duration = Duration::from_secs(1);

/// How long a newcomer waits for room in the reserve before it is refused.
pub const ADMIT_WAIT: Duration = Duration::from_secs(1);

/// What a client may take.
#[derive(Debug, Clone)]
pub struct Limits {
    /// How long a connection may take to deliver a request head, from when it starts waiting for one.
    pub header_timeout: Duration,
    /// How long a connection may wait on a client that takes none of what it is sent.
    pub send_timeout: Duration,
    /// Connections at once.
    pub max_connections: usize,
    /// Connections at once from one non-loopback client (an IPv4 address, an IPv6 /64).
    pub max_per_client: usize,
    /// Connections at once from this machine (every loopback address together).
    pub max_per_local_client: usize,
    /// Of `max_connections`, how many are kept for health checks and requests a token or sign-in vouches for (at
    /// most a quarter of them).
    pub reserved: usize,
    /// Long-lived answers (event streams, downloads) at once per token (a sign-in counts for its token), or per
    /// client without one.
    pub max_streams_per_client: usize,
    /// How long requests in flight get to finish once the server stops.
    pub grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_timeout: Duration::from_secs(15),
            send_timeout: Duration::from_secs(30),
            max_connections: 1024,
            max_per_client: 64,
            max_per_local_client: 256,
            reserved: 16,
            max_streams_per_client: 16,
            grace: Duration::from_secs(5),
        }
    }
}

impl Limits {
    /// The connections kept in reserve: [`Limits::reserved`], at most a quarter of [`Limits::max_connections`].
    pub fn reserve(&self) -> usize {
        self.reserved.min(self.max_connections / 4)
    }

    /// The connections `client` may have outside the reserve.
    fn budget(&self, client: Client) -> usize {
        match client {
            Client::Local => self.max_per_local_client,
            _ => self.max_per_client,
        }
    }
}

/// One open connection, as the table sees it.
struct Conn {
    client: Client,
    /// Admitted into the reserve (see the module docs).
    reserve: bool,
    opened: Instant,
    /// Has had a request (a new connection is kept for [`HEAD_GRACE`] while its first head comes).
    served: AtomicBool,
    /// Requests whose answer has not been sent in full (an event stream stays in flight while it runs).
    in_flight: AtomicUsize,
    /// Told to close (another connection took its place).
    close: Notify,
}

/// Every open connection, by a number of its own.
#[derive(Default)]
struct Table {
    open: Mutex<HashMap<u64, Arc<Conn>>>,
    next: AtomicUsize,
    /// Told when a connection ends.
    freed: Notify,
}

/// Why a connection was not admitted.
#[derive(Debug, PartialEq, Eq)]
enum Refusal {
    Total(usize),
    Client(Client, usize),
    Stopping,
}

impl Table {
    /// Admits a connection from `client`, closing the oldest idle one in its way, into the reserve when none is, or
    /// says why it cannot (see the module docs).
    fn admit(&self, client: Client, limits: &Limits, now: Instant) -> Result<(u64, Arc<Conn>), Refusal> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let (reserve, budget) = (limits.reserve(), limits.budget(client));
        let mine = open.values().filter(|c| !c.reserve && c.client == client).count();
        let mut over = None;
        if mine >= budget && !evict_oldest_idle(&mut open, now, |c| !c.reserve && c.client == client) {
            over = Some(Refusal::Client(client, budget));
        }
        if over.is_none() {
            let shared = open.values().filter(|c| !c.reserve).count();
            if shared >= limits.max_connections.saturating_sub(reserve)
                && !evict_oldest_idle(&mut open, now, |c| !c.reserve)
            {
                over = Some(Refusal::Total(limits.max_connections));
            }
        }
        let in_reserve = over.is_some();
        if let Some(refusal) = over {
            let held = open.values().filter(|c| c.reserve).count();
            if held >= reserve && !evict_oldest_idle(&mut open, now, |c| c.reserve) {
                return Err(refusal);
            }
            tracing::debug!("a connection from {client} admitted into the reserve ({refusal:?})");
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed) as u64;
        let conn = Arc::new(Conn {
            client,
            reserve: in_reserve,
            opened: now,
            served: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            close: Notify::new(),
        });
        open.insert(id, conn.clone());
        Ok((id, conn))
    }

    fn remove(&self, id: u64) {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
        self.freed.notify_one();
    }

    fn len(&self) -> usize {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// Whether a connection may give way to a newcomer: no request in flight, and past its [`HEAD_GRACE`] if it has
/// had none yet.
fn gives_way(c: &Conn, now: Instant) -> bool {
    c.in_flight.load(Ordering::Acquire) == 0
        && (c.served.load(Ordering::Acquire) || now.saturating_duration_since(c.opened) >= HEAD_GRACE)
}

/// Closes the oldest connection that may give way among those `which` picks; whether there was one.
fn evict_oldest_idle(open: &mut HashMap<u64, Arc<Conn>>, now: Instant, which: impl Fn(&Conn) -> bool) -> bool {
    let victim =
        open.iter().filter(|(_, c)| which(c) && gives_way(c, now)).min_by_key(|(_, c)| c.opened).map(|(id, _)| *id);
    match victim.and_then(|id| open.remove(&id)) {
        Some(conn) => {
            conn.close.notify_one();
            true
        }
        None => false,
    }
}

/// Lowers `wanted` to what the process may open (keeping room for the database, the artifact store and the
/// worker's files), raising the soft limit on open files to the hard one first.
pub fn fit_to_open_files(wanted: usize) -> usize {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else { return wanted };
    let mut soft = soft;
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        soft = hard;
    }
    let room = usize::try_from(soft).unwrap_or(usize::MAX).saturating_sub(256).max(16);
    if room < wanted {
        eprintln!("falcon serve: at most {room} connections at once (the process may open {soft} files)");
    }
    wanted.min(room)
}

/// Accepts connections on `listener` and serves `router` on them until `stop` turns true (see the module docs).
pub async fn run(listener: TcpListener, router: axum::Router, limits: Limits, mut stop: watch::Receiver<bool>) {
    let table = Arc::new(Table::default());
    let budgets = Arc::new(Budgets::new(limits.max_streams_per_client, limits.reserve()));
    let mut tasks = JoinSet::new();
    // Newcomers waiting for room in the reserve, in the order they came.
    let mut waiting: VecDeque<(TcpStream, Client, Instant)> = VecDeque::new();
    let serve = {
        let (table, limits, stop) = (table.clone(), limits.clone(), stop.clone());
        move |tasks: &mut JoinSet<()>, stream: TcpStream, (id, conn): (u64, Arc<Conn>)| {
            let (table, router, limits, stop) = (table.clone(), router.clone(), limits.clone(), stop.clone());
            let admission = Admission { client: conn.client, reserve: conn.reserve, budgets: budgets.clone() };
            tasks.spawn(async move {
                serve_one(stream, conn, admission, router, &limits, stop).await;
                table.remove(id);
            });
        }
    };
    loop {
        // The waiting ones first: admitted in their order while there is room, refused once they waited too long.
        while let Some((_, client, since)) = waiting.front() {
            let now = Instant::now();
            match table.admit(*client, &limits, now) {
                Ok(admitted) => {
                    if let Some((stream, _, _)) = waiting.pop_front() {
                        serve(&mut tasks, stream, admitted);
                    }
                }
                Err(why) if now.duration_since(*since) >= ADMIT_WAIT => {
                    if let Some((stream, _, _)) = waiting.pop_front() {
                        tasks.spawn(refuse(stream, why));
                    }
                }
                Err(_) => break,
            }
        }
        let full = waiting.len() >= limits.reserve().max(1);
        let (stream, peer) = tokio::select! {
            accepted = listener.accept(), if !full => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was accepted: wait a moment.
                    tracing::warn!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            // Room may have come: a connection ended, or one passed its grace.
            () = table.freed.notified(), if !waiting.is_empty() => continue,
            () = tokio::time::sleep(Duration::from_millis(50)), if !waiting.is_empty() => continue,
            () = stopped(&mut stop) => break,
        };
        while tasks.try_join_next().is_some() {}
        let client = Client::of(peer.ip());
        let now = Instant::now();
        match table.admit(client, &limits, now) {
            Ok(admitted) => serve(&mut tasks, stream, admitted),
            Err(_) => waiting.push_back((stream, client, now)),
        }
    }
    drop(listener);
    for (stream, _, _) in waiting {
        tasks.spawn(refuse(stream, Refusal::Stopping));
    }
    let open = table.len();
    if open > 0 {
        tracing::debug!("{open} connection(s) open at the stop");
    }
    let drained = tokio::time::timeout(limits.grace, async { while tasks.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        eprintln!(
            "falcon serve: {} connection(s) still busy after {} s: closing them",
            table.len(),
            limits.grace.as_secs()
        );
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
}

/// Resolves when the server stops.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// One connection, until it ends, is told to close, or the server stops.
async fn serve_one(
    stream: TcpStream,
    conn: Arc<Conn>,
    admission: Admission,
    router: axum::Router,
    limits: &Limits,
    mut stop: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let counter = conn.clone();
    let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
        counter.in_flight.fetch_add(1, Ordering::AcqRel);
        counter.served.store(true, Ordering::Release);
        let guard = InFlight(counter.clone());
        req.extensions_mut().insert(admission.clone());
        let answer = router.clone().oneshot(req.map(Body::new));
        async move {
            let response = answer.await?;
            Ok::<_, std::convert::Infallible>(response.map(|body| Body::new(crate::body::Held::new(body, guard))))
        }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .serve_connection(TokioIo::new(SendTimed::new(stream, limits.send_timeout)), service);
    tokio::pin!(connection);
    let mut stopping = false;
    loop {
        tokio::select! {
            served = connection.as_mut() => {
                if let Err(e) = served {
                    tracing::debug!("a connection from {}: {e}", conn.client);
                }
                return;
            }
            _ = conn.close.notified() => return,
            () = stopped(&mut stop), if !stopping => {
                // No request in flight (idle, or a head still arriving): closed at once; busy: after its answer.
                if conn.in_flight.load(Ordering::Acquire) == 0 {
                    return;
                }
                stopping = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
}

/// A connection over a limit: a 503 with the JSON error, then closed.
async fn refuse(mut stream: TcpStream, why: Refusal) {
    let message = match why {
        Refusal::Total(n) => {
            format!("the server has {n} connections open, its reserve included, each with a request in flight")
        }
        Refusal::Client(client, n) => format!(
            "client {client} has {n} connections open, each with a request in flight, and the server's reserve is busy"
        ),
        Refusal::Stopping => "the server is stopping".to_string(),
    };
    let body = serde_json::json!({ "error": { "code": "unavailable", "message": message,
        "hint": "close idle connections, or try again shortly" } })
    .to_string();
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         retry-after: 1\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.shutdown().await
    })
    .await;
}

/// A connection's socket that gives up on a client that takes nothing: a write that has waited
/// [`Limits::send_timeout`] for room (the kernel's buffers full; the client reads none of it) fails, and hyper drops
/// the connection. Any write that goes through starts the wait over, so a slow reader that keeps reading is served.
struct SendTimed {
    io: TcpStream,
    limit: Duration,
    /// Armed when a write finds no room; `waiting` says whether it is.
    timer: Pin<Box<tokio::time::Sleep>>,
    waiting: bool,
}

impl SendTimed {
    fn new(io: TcpStream, limit: Duration) -> SendTimed {
        SendTimed { io, limit, timer: Box::pin(tokio::time::sleep(limit)), waiting: false }
    }

    /// A write's outcome, failed once the wait for room passes the limit.
    fn timed(&mut self, cx: &mut Context<'_>, written: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        if written.is_ready() {
            self.waiting = false;
            return written;
        }
        if !self.waiting {
            self.waiting = true;
            let deadline = tokio::time::Instant::now() + self.limit;
            self.timer.as_mut().reset(deadline);
        }
        match self.timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client took nothing it was sent for {} s", self.limit.as_secs()),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for SendTimed {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for SendTimed {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write(cx, buf);
        self.timed(cx, written)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.timed(cx, written)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// Counts a request in flight until its answer's body is sent or dropped.
struct InFlight(Arc<Conn>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(total: usize, per_client: usize, reserved: usize) -> Limits {
        Limits { max_connections: total, max_per_client: per_client, reserved, ..Limits::default() }
    }

    fn client(ip: &str) -> Client {
        Client::of(ip.parse().unwrap())
    }

    fn busy(conn: &Conn) {
        conn.in_flight.store(1, Ordering::Release);
    }

    /// A clock a [`HEAD_GRACE`] later at each reading: every connection admitted before is past its grace.
    struct Clock(std::cell::Cell<Instant>);

    impl Clock {
        fn new() -> Clock {
            Clock(std::cell::Cell::new(Instant::now()))
        }

        fn next(&self) -> Instant {
            self.0.set(self.0.get() + HEAD_GRACE);
            self.0.get()
        }
    }

    #[test]
    fn a_connection_over_a_limit_takes_the_place_of_the_oldest_idle_one() {
        let (table, clock) = (Table::default(), Clock::new());
        let l = limits(3, 2, 0);
        let (far, other) = (client("203.0.113.7"), client("203.0.113.8"));
        let (a, ca) = table.admit(far, &l, clock.next()).unwrap();
        let (_, cb) = table.admit(far, &l, clock.next()).unwrap();
        busy(&cb);
        // A third from the same client: the oldest idle one of that client (a) gives way.
        let (_, cc) = table.admit(far, &l, clock.next()).unwrap();
        assert!(!table.open.lock().unwrap().contains_key(&a), "a was closed");
        drop(ca);
        busy(&cc);
        // The client's two are busy now: a third is refused (no reserve), another client is admitted (total 3).
        assert_eq!(table.admit(far, &l, clock.next()).err(), Some(Refusal::Client(far, 2)));
        let (_, cd) = table.admit(other, &l, clock.next()).unwrap();
        busy(&cd);
        // All three busy: nothing gives way.
        assert_eq!(table.admit(other, &l, clock.next()).err(), Some(Refusal::Total(3)));
        let local = client("127.0.0.1");
        assert_eq!(table.admit(local, &l, clock.next()).err(), Some(Refusal::Total(3)));
        cd.in_flight.store(0, Ordering::Release);
        assert!(table.admit(local, &l, clock.next()).is_ok(), "the idle one gives way");
    }

    #[test]
    fn loopback_peers_have_a_budget_and_the_reserve_takes_who_is_over_a_limit() {
        let (table, clock) = (Table::default(), Clock::new());
        let l = Limits { max_per_local_client: 3, ..limits(8, 2, 2) };
        assert_eq!(l.reserve(), 2);
        // This machine, from any loopback address: 3 outside the reserve, all busy.
        let conns: Vec<_> = ["127.0.0.1", "127.0.0.2", "::1"]
            .iter()
            .map(|ip| table.admit(client(ip), &l, clock.next()).unwrap())
            .collect();
        conns.iter().for_each(|(_, c)| busy(c));
        assert!(conns.iter().all(|(_, c)| !c.reserve && c.client == Client::Local));
        // A fourth from this machine: into the reserve (two places), then refused.
        let (_, r1) = table.admit(client("127.0.0.1"), &l, clock.next()).unwrap();
        assert!(r1.reserve);
        busy(&r1);
        let (_, r2) = table.admit(client("127.0.0.1"), &l, clock.next()).unwrap();
        assert!(r2.reserve);
        assert_eq!(
            table.admit(client("127.0.0.1"), &l, clock.next()).err(),
            None,
            "an idle one in the reserve gives way"
        );
        assert!(!table.open.lock().unwrap().values().any(|c| Arc::ptr_eq(c, &r2)), "r2 was closed");
        let reserved: Vec<_> = table.open.lock().unwrap().values().filter(|c| c.reserve).cloned().collect();
        reserved.iter().for_each(|c| busy(c));
        assert_eq!(table.admit(client("127.0.0.1"), &l, clock.next()).err(), Some(Refusal::Client(Client::Local, 3)));
        // Another client is admitted outside the reserve (6 places there: 8 less 2; 3 taken); over its budget of 2,
        // its oldest idle connection gives way.
        let far = client("203.0.113.9");
        let (first, _) = table.admit(far, &l, clock.next()).unwrap();
        let (_, second) = table.admit(far, &l, clock.next()).unwrap();
        let (_, third) = table.admit(far, &l, clock.next()).unwrap();
        assert!(!second.reserve && !third.reserve);
        assert!(!table.open.lock().unwrap().contains_key(&first), "the first gave way");
        busy(&second);
        busy(&third);
        // The shared places are 5 of 6 busy: one more for someone, then only the reserve (busy: refused).
        let other = client("198.51.100.1");
        let (_, last) = table.admit(other, &l, clock.next()).unwrap();
        assert!(!last.reserve);
        busy(&last);
        assert_eq!(table.admit(other, &l, clock.next()).err(), Some(Refusal::Total(8)));
        assert_eq!(table.len(), 8);
    }

    #[test]
    fn a_new_connection_keeps_its_place_while_its_first_head_comes() {
        let table = Table::default();
        let l = limits(4, 64, 1);
        let t0 = Instant::now();
        let far = client("203.0.113.7");
        let (_, a) = table.admit(far, &l, t0).unwrap();
        let (_, b) = table.admit(far, &l, t0).unwrap();
        let (_, c) = table.admit(far, &l, t0).unwrap();
        let (_, d) = table.admit(far, &l, t0).unwrap();
        assert!(!a.reserve && !b.reserve && !c.reserve && d.reserve, "3 shared places and a reserve of 1");
        // Within their grace, none of the four gives way: no room, a newcomer is refused.
        let soon = t0 + HEAD_GRACE / 2;
        assert_eq!(table.admit(far, &l, soon).err(), Some(Refusal::Total(4)));
        // One that has had a request and is idle between requests gives way at once.
        a.served.store(true, Ordering::Release);
        assert!(table.admit(far, &l, soon).is_ok_and(|(_, n)| !n.reserve), "a gave way");
        // Past its grace, a connection that never sent a head gives way too (in the reserve, to one for it).
        let later = t0 + HEAD_GRACE;
        [&b, &c].iter().for_each(|x| busy(x));
        let newest = table.admit(far, &l, soon).map(|_| ());
        assert_eq!(newest.err(), Some(Refusal::Total(4)), "d is still in its grace, the new one too");
        assert!(table.admit(far, &l, later).is_ok_and(|(_, n)| n.reserve), "d gave way");
    }

    #[test]
    fn the_reserve_is_at_most_a_quarter() {
        assert_eq!(Limits::default().reserve(), 16);
        assert_eq!(limits(40, 64, 16).reserve(), 10);
        assert_eq!(limits(3, 64, 16).reserve(), 0);
    }

    /// One request on a new connection, read to its end: the status (0 when none came) and how long it took.
    async fn exchange(at: std::net::SocketAddr, path: &str) -> (u16, Duration) {
        use tokio::io::AsyncReadExt;
        let started = Instant::now();
        let mut s = TcpStream::connect(at).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nHost: {at}\r\nConnection: close\r\n\r\n");
        s.write_all(request.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out).await;
        let status = String::from_utf8_lossy(&out).split_whitespace().nth(1).and_then(|c| c.parse().ok());
        (status.unwrap_or(0), started.elapsed())
    }

    /// Every place busy (the reserve too): a newcomer waits for one in its turn, and gets a 503 after
    /// [`ADMIT_WAIT`] when none frees.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_newcomer_waits_its_turn_for_the_reserve_then_gets_a_503() {
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let held = gate.clone();
        let router = axum::Router::new()
            .route(
                "/hold",
                axum::routing::get(move || {
                    let held = held.clone();
                    async move { held.acquire().await.map(|p| p.forget()).map_or("closed", |_| "done") }
                }),
            )
            .route("/quick", axum::routing::get(|| async { "ok" }));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let at = listener.local_addr().unwrap();
        let (stop_tx, stop) = watch::channel(false);
        let limits = Limits { max_connections: 4, reserved: 1, ..Limits::default() };
        let server = tokio::spawn(run(listener, router, limits, stop));
        // Four requests held: the three shared places and the reserve's one.
        let holds: Vec<_> = (0..4).map(|_| tokio::spawn(exchange(at, "/hold"))).collect();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let waiter = tokio::spawn(exchange(at, "/quick"));
        tokio::time::sleep(Duration::from_millis(300)).await;
        gate.add_permits(1);
        let (status, took) = waiter.await.unwrap();
        assert_eq!(status, 200, "admitted when a place freed");
        assert!(took >= Duration::from_millis(250), "it waited for it: {took:?}");
        // All busy again, and nothing frees: a 503 after the wait.
        let more = tokio::spawn(exchange(at, "/hold"));
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (status, took) = exchange(at, "/quick").await;
        assert_eq!(status, 503);
        assert!(took >= ADMIT_WAIT && took < ADMIT_WAIT * 3, "{took:?}");
        gate.add_permits(8);
        for h in holds.into_iter().chain([more]) {
            assert_eq!(h.await.unwrap().0, 200);
        }
        let _ = stop_tx.send(true);
        server.await.unwrap();
    }

    /// A response of 64 MiB to a client that reads none of it: the connection is dropped at the send timeout, while
    /// one that reads it gets all of it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_that_takes_nothing_is_dropped_at_the_send_timeout() {
        use tokio::io::AsyncReadExt;
        const SIZE: usize = 64 << 20;
        let router = axum::Router::new().route("/big", axum::routing::get(|| async { vec![7u8; SIZE] }));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let at = listener.local_addr().unwrap();
        let (stop_tx, stop) = watch::channel(false);
        let limits = Limits { send_timeout: Duration::from_secs(1), ..Limits::default() };
        let server = tokio::spawn(run(listener, router, limits, stop));
        let request = format!("GET /big HTTP/1.1\r\nHost: {at}\r\nConnection: close\r\n\r\n");

        let mut stalled = TcpStream::connect(at).await.unwrap();
        stalled.write_all(request.as_bytes()).await.unwrap();
        tokio::time::sleep(Duration::from_secs(3)).await;
        let mut got = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(10), stalled.read_to_end(&mut got)).await;
        assert!(matches!(read, Ok(Ok(_)) | Ok(Err(_))), "the connection was closed");
        assert!(got.len() < SIZE, "it was dropped before the whole answer: {} bytes", got.len());

        let mut reader = TcpStream::connect(at).await.unwrap();
        reader.write_all(request.as_bytes()).await.unwrap();
        let mut got = Vec::new();
        reader.read_to_end(&mut got).await.unwrap();
        assert!(got.len() > SIZE, "a reader gets all of it: {} bytes", got.len());
        let _ = stop_tx.send(true);
        server.await.unwrap();
    }
}
