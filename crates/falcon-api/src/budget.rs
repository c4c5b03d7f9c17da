//! What one client may hold once its request is read and the guard knows who sent it (the limits on connections by
//! address, before any request, are `connections`'). On every route, after `security::guard`:
//!
//! - **The reserve.** A connection admitted into the reserve (see `connections`: the other connections were all
//!   busy, or its address's budget spent) serves only health checks, the static assets and requests a token or a
//!   sign-in vouches for; anything else gets a 503 and the connection closes — a token-free `POST /signin` whose
//!   body never comes cannot sit there. No long-lived answer is sent from the reserve (503: event streams and
//!   downloads wait for a free connection), and one holder has at most a quarter of it (at least one) in flight.
//! - **Long-lived answers.** An event stream (`/ui/live`, followed logs) or an answer of unknown or large length
//!   (an artifact download) counts against its holder — the token (a sign-in counts for its token), or the client
//!   (`connections::Client`) when no token is involved — until it is sent or dropped: at most
//!   [`Budgets::max_streams`] (16 by default) at once, then a 429. A download the client does not read ends at the
//!   connection's send timeout.
//!
//! A holder is in [`Budgets`] only while it holds something, so its memory is bounded by the connections.

use crate::error::ApiError;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use falcon_app::tokens::Principal;
use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, Mutex};

/// An answer over this many bytes is long-lived (a download), as is one of unknown length.
const LARGE: u64 = 1 << 20;

/// A connection's client as the limits count it: this machine (every loopback address: any local process may pick
/// any of 127.0.0.0/8), an IPv4 address, or an IPv6 /64 (what one site is given).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Client {
    Local,
    V4(Ipv4Addr),
    V6(u64),
}

impl Client {
    pub fn of(ip: IpAddr) -> Client {
        match ip.to_canonical() {
            ip if ip.is_loopback() => Client::Local,
            IpAddr::V4(a) => Client::V4(a),
            IpAddr::V6(a) => Client::V6((u128::from(a) >> 64) as u64),
        }
    }
}

impl fmt::Display for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Client::Local => write!(f, "this machine (loopback)"),
            Client::V4(a) => write!(f, "{a}"),
            Client::V6(prefix) => write!(f, "{}/64", Ipv6Addr::from(u128::from(*prefix) << 64)),
        }
    }
}

/// What a connection tells each of its requests: its client, whether it is in the reserve, and the server's budgets.
#[derive(Clone)]
pub struct Admission {
    pub client: Client,
    pub reserve: bool,
    pub budgets: Arc<Budgets>,
}

/// Who holds an answer: a token (a sign-in counts for its token), or a client without one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Holder {
    Token(String),
    Client(Client),
}

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Holder::Token(name) => write!(f, "token `{name}`"),
            Holder::Client(c) => write!(f, "client {c}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Stream = 0,
    Reserve = 1,
}

/// What each holder holds now: long-lived answers, and requests in flight on reserve connections.
pub struct Budgets {
    /// Long-lived answers at once per holder.
    pub max_streams: usize,
    /// Requests in flight on reserve connections per holder: a quarter of the reserve, at least one.
    pub reserve_share: usize,
    held: Mutex<HashMap<Holder, [usize; 2]>>,
}

impl Budgets {
    /// Budgets of `max_streams` long-lived answers per holder, over a reserve of `reserve` connections.
    pub fn new(max_streams: usize, reserve: usize) -> Budgets {
        Budgets { max_streams, reserve_share: (reserve / 4).max(1), held: Mutex::default() }
    }

    /// One of `who`'s slots of `kind`, until the slot is dropped; the limit when all are taken.
    fn take(self: &Arc<Self>, who: &Holder, kind: Kind) -> Result<Slot, usize> {
        let limit = match kind {
            Kind::Stream => self.max_streams,
            Kind::Reserve => self.reserve_share,
        };
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if held.get(who).map_or(0, |c| c[kind as usize]) >= limit {
            return Err(limit);
        }
        held.entry(who.clone()).or_default()[kind as usize] += 1;
        Ok(Slot { budgets: self.clone(), who: who.clone(), kind })
    }

    /// How many of `kind` `who` holds now.
    #[cfg(test)]
    fn holds(&self, who: &Holder, kind: Kind) -> usize {
        self.held.lock().unwrap().get(who).map_or(0, |c| c[kind as usize])
    }
}

/// A slot taken from a holder's budget, given back when dropped.
struct Slot {
    budgets: Arc<Budgets>,
    who: Holder,
    kind: Kind,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut held = self.budgets.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(counts) = held.get_mut(&self.who) {
            let n = &mut counts[self.kind as usize];
            *n = n.saturating_sub(1);
            if *counts == [0, 0] {
                held.remove(&self.who);
            }
        }
    }
}

/// The rules of the module docs, after the guard (a request on a connection of `connections` carries its
/// [`Admission`]; one without, as in a test calling the router directly, passes).
pub async fn limit(req: Request, next: Next) -> Response {
    let Some(admission) = req.extensions().get::<Admission>().cloned() else { return next.run(req).await };
    let path = req.uri().path();
    // Health checks and the static assets answer at once from memory: they hold nothing.
    if crate::security::exempt(path) || path.starts_with("/assets/") {
        return next.run(req).await;
    }
    let principal = req.extensions().get::<Principal>().cloned();
    let holder = match &principal {
        Some(p) if *p != crate::security::local_principal() => Holder::Token(p.name.clone()),
        _ => Holder::Client(admission.client),
    };
    let mut reserved = None;
    if admission.reserve {
        if principal.is_none() {
            return busy(
                "the server's connections are taken; the few kept in reserve serve only requests with a token or a sign-in",
                "try again shortly",
            );
        }
        match admission.budgets.take(&holder, Kind::Reserve) {
            Ok(slot) => reserved = Some(slot),
            Err(n) => {
                return busy(
                    format!(
                        "the server's connections are taken, and {holder} has {n} requests in flight in the reserve"
                    ),
                    "wait for one of them to end",
                )
            }
        }
    }
    let response = next.run(req).await;
    if !long_lived(&response) {
        return held(response, reserved);
    }
    if admission.reserve {
        return busy(
            "the server's connections are taken: event streams and downloads wait for a free one",
            "try again shortly",
        );
    }
    match admission.budgets.take(&holder, Kind::Stream) {
        Ok(slot) => held(response, Some(slot)),
        Err(n) => {
            let mut e = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_requests",
                format!("{holder} has {n} event streams or downloads open, the most it may have at once"),
            )
            .hint("close one (a dashboard tab, a log follower, a download), then try again");
            e.retry_after = Some(5);
            e.into_response()
        }
    }
}

/// An answer that may take long to send: an event stream, or a body of unknown length or over [`LARGE`] bytes.
fn long_lived(response: &Response) -> bool {
    let events = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"));
    events || http_body::Body::size_hint(response.body()).upper().is_none_or(|n| n > LARGE)
}

/// A 503 from the reserve; the connection closes after it (a body the request declared is never read).
fn busy(message: impl Into<String>, hint: &str) -> Response {
    let mut e = ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message).hint(hint);
    e.retry_after = Some(1);
    let mut response = e.into_response();
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// `response` with `slot` held until its body is sent or dropped.
fn held(response: Response, slot: Option<Slot>) -> Response {
    match slot {
        Some(slot) => response.map(|body| Body::new(crate::body::Held::new(body, slot))),
        None => response,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use falcon_core::auth::Scope;
    use tower::ServiceExt;

    #[test]
    fn clients_are_counted_by_machine_address_or_ipv6_prefix() {
        let c = |s: &str| Client::of(s.parse().unwrap());
        assert_eq!(c("127.0.0.1"), Client::Local);
        assert_eq!(c("127.3.2.1"), Client::Local, "any of 127.0.0.0/8 is this machine");
        assert_eq!(c("::1"), Client::Local);
        assert_eq!(c("::ffff:127.0.0.1"), Client::Local, "an IPv4-mapped loopback address");
        assert_eq!(c("::ffff:203.0.113.7"), c("203.0.113.7"));
        assert_ne!(c("203.0.113.7"), c("203.0.113.8"));
        assert_eq!(c("2001:db8:1:2::5"), c("2001:db8:1:2:ffff::9"), "one /64");
        assert_ne!(c("2001:db8:1:2::5"), c("2001:db8:1:3::5"));
        assert_eq!(c("2001:db8:1:2::5").to_string(), "2001:db8:1:2::/64");
    }

    #[test]
    fn slots_are_given_back_and_holders_forgotten() {
        let budgets = Arc::new(Budgets::new(2, 8));
        let who = Holder::Token("reader".into());
        let a = budgets.take(&who, Kind::Stream).unwrap();
        let _b = budgets.take(&who, Kind::Stream).unwrap();
        assert_eq!(budgets.take(&who, Kind::Stream).err(), Some(2));
        assert!(budgets.take(&Holder::Token("other".into()), Kind::Stream).is_ok(), "another holder has its own");
        let r = [budgets.take(&who, Kind::Reserve).unwrap(), budgets.take(&who, Kind::Reserve).unwrap()];
        assert_eq!(budgets.take(&who, Kind::Reserve).err(), Some(2), "a quarter of 8");
        drop(a);
        assert!(budgets.take(&who, Kind::Stream).is_ok());
        drop((_b, r));
        assert!(budgets.held.lock().unwrap().is_empty(), "nothing is kept for a holder that holds nothing");
    }

    /// A router under the middleware, each request carrying `admission` and, when given, a principal (as the guard
    /// adds it).
    fn app(admission: Admission, principal: Option<Principal>) -> axum::Router {
        let stream = || async {
            (
                [(header::CONTENT_TYPE, "text/event-stream")],
                Body::from_stream(futures::stream::pending::<Result<bytes::Bytes, std::io::Error>>()),
            )
        };
        axum::Router::new()
            .route("/healthz", get(|| async { "ok" }))
            .route("/signin", axum::routing::post(|| async { "signed in" }))
            .route("/page", get(|| async { "a page" }))
            .route("/big", get(|| async { vec![0u8; (LARGE + 1) as usize] }))
            .route("/events", get(stream))
            .route_layer(axum::middleware::from_fn(limit))
            .layer(axum::middleware::from_fn(move |mut req: Request, next: Next| {
                let (admission, principal) = (admission.clone(), principal.clone());
                async move {
                    req.extensions_mut().insert(admission);
                    if let Some(p) = principal {
                        req.extensions_mut().insert(p);
                    }
                    next.run(req).await
                }
            }))
    }

    async fn status(app: &axum::Router, method: &str, path: &str) -> (u16, Response) {
        let req = Request::builder().method(method).uri(path).body(Body::empty()).unwrap();
        let response = app.clone().oneshot(req).await.unwrap();
        (response.status().as_u16(), response)
    }

    #[tokio::test]
    async fn the_reserve_serves_health_checks_and_vouched_short_requests_only() {
        let budgets = Arc::new(Budgets::new(16, 8));
        let reserve = Admission { client: Client::Local, reserve: true, budgets: budgets.clone() };
        let reader = Principal { name: "reader".into(), scope: Scope::Read };
        let anonymous = app(reserve.clone(), None);
        assert_eq!(status(&anonymous, "GET", "/healthz").await.0, 200);
        let (code, response) = status(&anonymous, "POST", "/signin").await;
        assert_eq!(code, 503, "a token-free request does not sit in the reserve");
        assert_eq!(response.headers()["connection"], "close");
        let vouched = app(reserve, Some(reader.clone()));
        let (code, page) = status(&vouched, "GET", "/page").await;
        assert_eq!(code, 200);
        assert_eq!(budgets.holds(&Holder::Token("reader".into()), Kind::Reserve), 1, "held while the page is sent");
        let (_, other) = status(&vouched, "GET", "/page").await;
        assert_eq!(status(&vouched, "GET", "/page").await.0, 503, "a quarter of the reserve (2) per holder");
        drop((page, other));
        assert_eq!(status(&vouched, "GET", "/page").await.0, 200);
        assert_eq!(status(&vouched, "GET", "/events").await.0, 503, "no stream from the reserve");
        assert_eq!(status(&vouched, "GET", "/big").await.0, 503, "no download from the reserve");
        assert!(budgets.held.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn long_lived_answers_are_limited_per_token_and_per_client_without_one() {
        let budgets = Arc::new(Budgets::new(2, 16));
        let admission = Admission { client: Client::Local, reserve: false, budgets: budgets.clone() };
        let reader = app(admission.clone(), Some(Principal { name: "reader".into(), scope: Scope::Read }));
        let (a, stream) = status(&reader, "GET", "/events").await;
        let (b, download) = status(&reader, "GET", "/big").await;
        assert_eq!((a, b), (200, 200));
        let (code, refused) = status(&reader, "GET", "/events").await;
        assert_eq!(code, 429);
        assert_eq!(refused.headers()["retry-after"], "5");
        let body = axum::body::to_bytes(refused.into_body(), 4096).await.unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["error"]["code"], "too_many_requests");
        assert!(v["error"]["message"].as_str().unwrap().contains("token `reader` has 2"), "{v}");
        assert_eq!(status(&reader, "GET", "/page").await.0, 200, "short answers are not counted");
        // An open server's local user is counted by its client; another token has its own budget.
        let local = app(admission.clone(), Some(crate::security::local_principal()));
        let (_, l1) = status(&local, "GET", "/events").await;
        assert_eq!(budgets.holds(&Holder::Client(Client::Local), Kind::Stream), 1);
        drop(stream);
        let (code, _again) = status(&reader, "GET", "/events").await;
        assert_eq!(code, 200, "a stream ended gives its slot back");
        drop((download, l1));
    }
}
