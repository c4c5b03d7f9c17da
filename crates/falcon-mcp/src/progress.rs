//! Progress notifications for a long tool call: when the client sent a progress token with the request, each
//! report becomes a `notifications/progress` message (sent in order by one task); without a token, reports go
//! nowhere. Reporting never blocks the use case that reports; [`Progress::finish`] flushes before the result.

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use rmcp::RoleServer;
use tokio::sync::mpsc;

/// Where a tool call's progress goes.
pub struct Progress {
    tx: Option<mpsc::UnboundedSender<(f64, String)>>,
    sender: Option<tokio::task::JoinHandle<()>>,
}

impl Progress {
    /// Reports to `peer` under `token`, when there is one. The sending task ends when the `Progress` is dropped.
    pub fn new(peer: Peer<RoleServer>, token: Option<ProgressToken>) -> Progress {
        let Some(token) = token else { return Progress::none() };
        let (tx, mut rx) = mpsc::unbounded_channel::<(f64, String)>();
        let sender = tokio::spawn(async move {
            while let Some((progress, message)) = rx.recv().await {
                let param = ProgressNotificationParam::new(token.clone(), progress).with_message(message);
                if let Err(e) = peer.notify_progress(param).await {
                    tracing::debug!("a progress notification was not sent: {e}");
                    break;
                }
            }
        });
        Progress { tx: Some(tx), sender: Some(sender) }
    }

    /// Sends what is still queued, so every notification of a call goes out before its result.
    pub async fn finish(mut self) {
        self.tx = None;
        if let Some(sender) = self.sender.take() {
            let _ = sender.await;
        }
    }

    /// Reports going nowhere.
    pub fn none() -> Progress {
        Progress { tx: None, sender: None }
    }

    /// One step of progress (increasing) and what it was.
    pub fn report(&self, progress: f64, message: String) {
        if let Some(tx) = &self.tx {
            let _ = tx.send((progress, message));
        }
    }
}
