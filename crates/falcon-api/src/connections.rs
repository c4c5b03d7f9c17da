//! The connections of `falcon serve`: accepting them, bounding how many there are and how long a client may take,
//! and closing them all when the server stops. No client, slow or idle or many, can hold the server.
//!
//! - **Request heads in time.** A connection waiting for a request head (a new one, or a kept-alive one between
//!   requests) must deliver the whole head within [`Limits::header_timeout`] (15 s), however slowly its bytes
//!   come; else it is closed (hyper's header-read timer). A body must arrive within `body::BODY_TIMEOUT` of the
//!   handler asking for it (408; the token-free sign-in's within 5 s); a body a handler does not read closes the
//!   connection after the answer.
//! - **Answers taken in time.** A connection whose client takes none of what it is sent for
//!   [`Limits::send_timeout`] (30 s: a download never read, its socket's buffer full) is dropped.
//! - **A bounded number of connections.** At most [`Limits::max_connections`] at once (1024 by default; lowered to
//!   what the process may open), and [`Limits::max_per_client`] from one non-loopback address (64): a reverse
//!   proxy on this machine speaks for many clients, so loopback peers count only toward the total. A connection
//!   over a limit takes the place of the oldest connection that has no request in flight (of that client, for the
//!   per-client limit); when every one is busy, the newcomer gets a 503 and is closed.
//! - **A stop that ends.** On stop, accepting ends, connections with no request in flight (idle, or a head still
//!   arriving) close at once, those with one get [`Limits::grace`] to finish (event streams end by themselves on the stop signal), then the rest
//!   are dropped.

use axum::body::Body;
use axum::http::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tokio::task::JoinSet;
use tower::ServiceExt;

/// What a client may take.
#[derive(Debug, Clone)]
pub struct Limits {
    /// How long a connection may take to deliver a request head, from when it starts waiting for one.
    pub header_timeout: Duration,
    /// How long a connection may wait on a client that takes none of what it is sent.
    pub send_timeout: Duration,
    /// Connections at once.
    pub max_connections: usize,
    /// Connections at once from one non-loopback address.
    pub max_per_client: usize,
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
            grace: Duration::from_secs(5),
        }
    }
}

/// One open connection, as the table sees it.
struct Conn {
    peer: IpAddr,
    opened: Instant,
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
}

/// Why a connection was not admitted.
#[derive(Debug, PartialEq, Eq)]
enum Refusal {
    Total(usize),
    Client(usize),
}

impl Table {
    /// Admits a connection from `peer`, closing the oldest idle one in its way, or says why it cannot.
    fn admit(&self, peer: IpAddr, limits: &Limits) -> Result<(u64, Arc<Conn>), Refusal> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if !peer.is_loopback() {
            let mine = open.values().filter(|c| c.peer == peer).count();
            if mine >= limits.max_per_client && !evict_oldest_idle(&mut open, Some(peer)) {
                return Err(Refusal::Client(limits.max_per_client));
            }
        }
        if open.len() >= limits.max_connections && !evict_oldest_idle(&mut open, None) {
            return Err(Refusal::Total(limits.max_connections));
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed) as u64;
        let conn =
            Arc::new(Conn { peer, opened: Instant::now(), in_flight: AtomicUsize::new(0), close: Notify::new() });
        open.insert(id, conn.clone());
        Ok((id, conn))
    }

    fn remove(&self, id: u64) {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
    }

    fn len(&self) -> usize {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// Closes the oldest connection with no request in flight (from `peer` when given); whether there was one.
fn evict_oldest_idle(open: &mut HashMap<u64, Arc<Conn>>, peer: Option<IpAddr>) -> bool {
    let victim = open
        .iter()
        .filter(|(_, c)| peer.is_none_or(|p| c.peer == p) && c.in_flight.load(Ordering::Acquire) == 0)
        .min_by_key(|(_, c)| c.opened)
        .map(|(id, _)| *id);
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
    let mut tasks = JoinSet::new();
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was accepted: wait a moment.
                    tracing::warn!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stopped(&mut stop) => break,
        };
        while tasks.try_join_next().is_some() {}
        match table.admit(peer.ip(), &limits) {
            Ok((id, conn)) => {
                let (table, router, limits, stop) = (table.clone(), router.clone(), limits.clone(), stop.clone());
                tasks.spawn(async move {
                    serve_one(stream, conn, router, &limits, stop).await;
                    table.remove(id);
                });
            }
            Err(why) => {
                tasks.spawn(refuse(stream, why));
            }
        }
    }
    drop(listener);
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
    router: axum::Router,
    limits: &Limits,
    mut stop: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let counter = conn.clone();
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        counter.in_flight.fetch_add(1, Ordering::AcqRel);
        let guard = InFlight(counter.clone());
        let answer = router.clone().oneshot(req.map(Body::new));
        async move {
            let response = answer.await?;
            Ok::<_, std::convert::Infallible>(response.map(|body| Body::new(Guarded { body, _guard: guard })))
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
                    tracing::debug!("a connection from {}: {e}", conn.peer);
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
        Refusal::Total(n) => format!("the server has {n} connections open, each with a request in flight"),
        Refusal::Client(n) => format!("this client has {n} connections open, each with a request in flight"),
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

/// An answer's body that keeps its request counted in flight while it is sent.
struct Guarded {
    body: Body,
    _guard: InFlight,
}

impl http_body::Body for Guarded {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        http_body::Body::is_end_stream(&self.body)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::Body::size_hint(&self.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(total: usize, per_client: usize) -> Limits {
        Limits { max_connections: total, max_per_client: per_client, ..Limits::default() }
    }

    #[test]
    fn a_connection_over_a_limit_takes_the_place_of_the_oldest_idle_one() {
        let table = Table::default();
        let l = limits(3, 2);
        let far: IpAddr = "203.0.113.7".parse().unwrap();
        let other: IpAddr = "203.0.113.8".parse().unwrap();
        let (a, ca) = table.admit(far, &l).unwrap();
        let (_, cb) = table.admit(far, &l).unwrap();
        cb.in_flight.store(1, Ordering::Release);
        // A third from the same client: the oldest idle one of that client (a) gives way.
        let (_, cc) = table.admit(far, &l).unwrap();
        assert!(!table.open.lock().unwrap().contains_key(&a), "a was closed");
        drop(ca);
        cc.in_flight.store(1, Ordering::Release);
        // The client's two are busy now: a third is refused, another client is admitted (total 3).
        assert_eq!(table.admit(far, &l).err(), Some(Refusal::Client(2)));
        let (_, cd) = table.admit(other, &l).unwrap();
        cd.in_flight.store(1, Ordering::Release);
        // All three busy: nothing gives way.
        assert_eq!(table.admit(other, &l).err(), Some(Refusal::Total(3)));
        // Loopback peers are counted in the total only.
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(table.admit(local, &l).err(), Some(Refusal::Total(3)));
        cd.in_flight.store(0, Ordering::Release);
        assert!(table.admit(local, &l).is_ok(), "the idle one gives way");
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
