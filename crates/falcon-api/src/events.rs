//! Server-sent events: an item of a followed stream (`falcon_app::streams`) as one event — its name (`log`,
//! `status`, `end`) and its object as `data`; a failed read is an `error` event carrying the error envelope.

use axum::response::sse::Event;
use falcon_app::contract::ErrorBody;
use falcon_app::streams::StreamEvent;

/// One stream item as a server-sent event.
pub(crate) fn sse_event(item: falcon_app::Result<StreamEvent>) -> Event {
    match item {
        Ok(event) => Event::default().event(event.name()).data(event.data().to_string()),
        Err(e) => Event::default().event("error").data(ErrorBody::of(&e).to_value().to_string()),
    }
}
