//! Followed streams: an experiment's logs as they grow and experiments' statuses as they change, as one typed
//! sequence of [`StreamEvent`]s that every front end renders — `exp logs -f` (lines, or JSON Lines with
//! `--json`), the API's `…/logs` with `Accept: text/event-stream` and the dashboard's live rows (server-sent
//! events named by [`StreamEvent::name`], carrying [`StreamEvent::data`]).
//!
//! A stream polls every [`Follow::every`]: logs are read from where the last read ended (byte offsets, whole
//! UTF-8 characters), statuses are compared with the last ones seen. It ends with one `end` event when what it
//! follows has ended, when [`Follow::stop`] turns `true` (the server stops) or after [`Follow::max`]. A read
//! that fails is an `Err` item and the stream goes on; a front end that cannot go on (the CLI) stops at it.
//! With [`Follow::drive_worker`] (a CLI with no server beside it) each poll first runs a worker pass, holding
//! the jobs' leases while it follows and handing them back at the end.

use crate::{ctx::Ctx, AppError, Result};
use falcon_core::ids::ExperimentId;
use falcon_core::status::ExperimentStatus;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::ops::Deref;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// One event of a followed stream. Serialised with its name under `event` (the CLI's JSON Lines); a server-sent
/// event carries the same object without it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum StreamEvent {
    /// New text of one of an experiment's logs (`<attempt>/<source>.log`).
    Log { experiment: ExperimentId, source: String, text: String },
    /// An experiment's status: at once, then on every change (`updated` is its row's update time, ms).
    Status { id: ExperimentId, status: ExperimentStatus, updated: i64 },
    /// The end of a log stream: the status the experiment ended in (`null` when the server stopped first).
    #[serde(rename = "end")]
    LogsEnd {
        experiment: ExperimentId,
        status: Option<ExperimentStatus>,
        /// Only on a server's stream: whether it ended because the server stops.
        #[serde(skip_serializing_if = "Option::is_none")]
        server_stopping: Option<bool>,
    },
    /// The end of a status stream.
    #[serde(rename = "end")]
    StatusEnd { all_ended: bool, server_stopping: bool },
}

impl StreamEvent {
    /// The event's name: `log`, `status` or `end`.
    pub fn name(&self) -> &'static str {
        match self {
            StreamEvent::Log { .. } => "log",
            StreamEvent::Status { .. } => "status",
            StreamEvent::LogsEnd { .. } | StreamEvent::StatusEnd { .. } => "end",
        }
    }

    /// The event's object without its name (a server-sent event's `data`).
    pub fn data(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        if let Some(map) = value.as_object_mut() {
            map.remove("event");
        }
        value
    }
}

/// How a stream follows.
#[derive(Debug, Clone)]
pub struct Follow {
    /// Time between two polls.
    pub every: Duration,
    /// Ends the stream when it turns `true` (a server that stops); `None` follows until the end.
    pub stop: Option<watch::Receiver<bool>>,
    /// Ends the stream after this long at most.
    pub max: Option<Duration>,
    /// Runs a worker pass before each poll (the CLI, with no worker beside it).
    pub drive_worker: bool,
}

impl Default for Follow {
    fn default() -> Follow {
        Follow { every: Duration::from_millis(500), stop: None, max: None, drive_worker: false }
    }
}

/// At most this many experiments one status stream follows.
pub const MAX_FOLLOWED: usize = 200;

/// What a stream follows, and what it has seen.
enum Target {
    Logs { id: ExperimentId, offsets: BTreeMap<String, u64> },
    Statuses { ids: Vec<ExperimentId>, seen: BTreeMap<ExperimentId, (ExperimentStatus, i64)> },
}

struct State<A> {
    cx: A,
    target: Target,
    follow: Follow,
    queue: VecDeque<Result<StreamEvent>>,
    started: Instant,
    background: Option<falcon_exp::housekeeping::Background>,
    polled: bool,
    done: bool,
}

/// An experiment's logs as they grow, until it ends (see the module docs).
pub(crate) fn follow_logs<'a, A>(
    cx: A,
    id: ExperimentId,
    follow: Follow,
) -> impl futures::Stream<Item = Result<StreamEvent>> + Send + 'a
where
    A: Deref<Target = Ctx> + Send + Sync + 'a,
{
    stream(cx, Target::Logs { id, offsets: BTreeMap::new() }, follow)
}

/// Experiments' statuses: each at once, then on every change, until every one has ended (see the module docs).
pub(crate) fn follow_statuses<'a, A>(
    cx: A,
    ids: &[ExperimentId],
    follow: Follow,
) -> Result<impl futures::Stream<Item = Result<StreamEvent>> + Send + 'a>
where
    A: Deref<Target = Ctx> + Send + Sync + 'a,
{
    let mut ids = ids.to_vec();
    ids.sort();
    ids.dedup();
    if ids.is_empty() || ids.len() > MAX_FOLLOWED {
        return Err(AppError::usage(format!("1 to {MAX_FOLLOWED} experiment ids, not {}", ids.len())));
    }
    Ok(stream(cx, Target::Statuses { ids, seen: BTreeMap::new() }, follow))
}

fn stream<'a, A>(cx: A, target: Target, follow: Follow) -> impl futures::Stream<Item = Result<StreamEvent>> + Send + 'a
where
    A: Deref<Target = Ctx> + Send + Sync + 'a,
{
    let start = State {
        cx,
        target,
        follow,
        queue: VecDeque::new(),
        started: Instant::now(),
        background: None,
        polled: false,
        done: false,
    };
    futures::stream::unfold(start, |mut s| async move {
        loop {
            if let Some(item) = s.queue.pop_front() {
                return Some((item, s));
            }
            if s.done {
                return None;
            }
            if s.polled {
                wait(&s.follow).await;
            }
            s.polled = true;
            poll(&mut s).await;
        }
    })
}

/// Sleeps until the next poll, or until the stop signal changes.
async fn wait(follow: &Follow) {
    match follow.stop.clone() {
        Some(mut stop) => {
            tokio::select! {
                _ = tokio::time::sleep(follow.every) => {}
                _ = stop.changed() => {}
            }
        }
        None => tokio::time::sleep(follow.every).await,
    }
}

/// One poll: what changed is queued, then the end when it is reached.
async fn poll<A: Deref<Target = Ctx>>(s: &mut State<A>) {
    let cx: &Ctx = &s.cx;
    if s.follow.drive_worker {
        if let Err(e) = drive(cx, &mut s.background).await {
            s.queue.push_back(Err(e));
        }
    }
    let stopping = s.follow.stop.as_ref().is_some_and(|r| *r.borrow());
    let out_of_time = s.follow.max.is_some_and(|max| s.started.elapsed() > max);
    let on_server = s.follow.stop.is_some();
    let end = match &mut s.target {
        Target::Logs { id, offsets } => {
            let status = crate::experiments::experiment_status(cx, *id).await;
            let read = crate::experiments::experiment_logs_from(cx, *id, offsets).await;
            let read_ok = read.is_ok();
            match read {
                Ok(chunks) => {
                    for c in chunks {
                        offsets.insert(c.source.clone(), c.next);
                        if !c.text.is_empty() {
                            s.queue.push_back(Ok(StreamEvent::Log { experiment: *id, source: c.source, text: c.text }));
                        }
                    }
                }
                Err(e) => s.queue.push_back(Err(e)),
            }
            let status = match status {
                Ok(status) => Some(status),
                Err(e) => {
                    // One failure a poll is enough to say: the log read's, else the status read's.
                    if read_ok {
                        s.queue.push_back(Err(e));
                    }
                    None
                }
            };
            let ended = status.is_some_and(|s| s.is_terminal());
            (ended || stopping || out_of_time).then(|| StreamEvent::LogsEnd {
                experiment: *id,
                status: if ended { status } else { None },
                server_stopping: on_server.then_some(stopping && !ended),
            })
        }
        Target::Statuses { ids, seen } => {
            let mut all_ended = true;
            for id in ids.iter() {
                // An experiment that cannot be read now is looked at again at the next poll.
                let Ok(rec) = crate::experiments::experiment_record(cx, *id).await else { continue };
                all_ended &= rec.status.is_terminal();
                if seen.get(id) != Some(&(rec.status, rec.updated.0)) {
                    seen.insert(*id, (rec.status, rec.updated.0));
                    s.queue.push_back(Ok(StreamEvent::Status { id: *id, status: rec.status, updated: rec.updated.0 }));
                }
            }
            (all_ended || stopping || out_of_time)
                .then_some(StreamEvent::StatusEnd { all_ended, server_stopping: stopping })
        }
    };
    if let Some(end) = end {
        if let Some(background) = s.background.take() {
            if let Ok(exp) = cx.exp().await {
                if let Err(e) = exp.stop_background(background).await {
                    s.queue.push_back(Err(e.into()));
                }
            }
        }
        s.queue.push_back(Ok(end));
        s.done = true;
    }
}

/// A worker pass, with the jobs' leases held in the background from the first one on.
async fn drive(cx: &Ctx, background: &mut Option<falcon_exp::housekeeping::Background>) -> Result<()> {
    let exp = cx.exp().await?;
    if background.is_none() {
        *background = Some(exp.start_background().await?);
    }
    exp.work().await?;
    Ok(())
}
