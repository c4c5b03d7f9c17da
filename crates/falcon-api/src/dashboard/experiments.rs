//! The experiments page (`/`): filters as a GET form, a page of rows newest first with a link to the next page,
//! two rows picked for Compare, and the status of rows still running kept live over Server-Sent Events
//! (`/ui/live`).

use super::{error_page, principal, render, status_badge, time, Shell};
use crate::error::{ApiError, ApiResult};
use crate::request::{page_limit, query_pairs};
use crate::state::State;
use axum::extract::{RawQuery, Request, State as Extract};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use falcon_app::experiments::{ExperimentItem, ListQuery};
use falcon_app::render::markup::escape;
use falcon_app::streams::Follow;
use falcon_app::App;
use falcon_core::status::{ExperimentStatus, Scenario};
use futures::StreamExt;
use std::fmt::Write;
use std::sync::Arc;
use std::time::Duration;

/// The filters a page was asked for, as given (empty form fields are left out).
#[derive(Default)]
struct Filters {
    pairs: Vec<(String, String)>,
    query: ListQuery,
    cursor: Option<String>,
}

fn filters(raw: Option<&str>) -> ApiResult<Filters> {
    let mut f = Filters {
        query: ListQuery { limit: falcon_app::requests::DEFAULT_PAGE, ..Default::default() },
        ..Default::default()
    };
    for (key, value) in query_pairs(raw)? {
        let value = value.trim().to_string();
        if value.is_empty() {
            continue;
        }
        match key.as_str() {
            "status" => f.query.status = Some(value.clone()),
            "goal" => f.query.goal = Some(value.clone()),
            "session" => f.query.session = Some(value.clone()),
            "scenario" => f.query.scenario = Some(value.clone()),
            "label" => f.query.labels.push(value.clone()),
            "name" => f.query.name = Some(value.clone()),
            "limit" => f.query.limit = page_limit(&value)?.max(1) as u32,
            "cursor" => {
                f.cursor = Some(value);
                continue;
            }
            other => return Err(ApiError::usage(format!("unknown query parameter `{other}`"))),
        }
        f.pairs.push((key, value));
    }
    Ok(f)
}

fn encode(pairs: &[(String, String)]) -> String {
    serde_urlencoded::to_string(pairs).unwrap_or_default()
}

pub async fn page(Extract(state): Extract<Arc<State>>, RawQuery(raw): RawQuery, req: Request) -> Response {
    let viewer = principal(&req);
    match build(&state, raw.as_deref()).await {
        Ok((body, data)) => render(Shell { title: "Experiments", data: Some(data), viewer: viewer.as_ref(), body }),
        Err(e) => error_page(e, viewer.as_ref()),
    }
}

async fn build(state: &State, raw: Option<&str>) -> ApiResult<(String, String)> {
    let f = filters(raw)?;
    let page = state.app.list_experiments(&f.query, f.cursor.as_deref()).await?;
    let mut api = f.pairs.clone();
    if let Some(c) = &f.cursor {
        api.push(("cursor".into(), c.clone()));
    }
    let data = if api.is_empty() {
        "/api/v1/experiments".to_string()
    } else {
        format!("/api/v1/experiments?{}", encode(&api))
    };
    let mut s = form(&f);
    if page.items.is_empty() {
        s.push_str("<p class=\"empty\">No experiment matches these filters.</p>");
        return Ok((s, data));
    }
    // Picking two rows and pressing Compare sends `/compare?ids=e-1&ids=e-2` (works without scripts).
    s.push_str("<form method=\"get\" action=\"/compare\" class=\"pick\">");
    s.push_str(
        "<p class=\"actions\"><button type=\"submit\" data-compare>Compare the two selected</button> \
         <span class=\"hint\" aria-live=\"polite\" data-compare-hint>Select two experiments.</span></p>",
    );
    s.push_str("<div class=\"table-wrap\"><table class=\"sortable list\" data-live>");
    s.push_str("<caption class=\"sr\">Experiments, newest first</caption><thead><tr><th scope=\"col\">Pick</th>");
    for (i, h) in
        ["Id", "Name", "Status", "Scenario", "Goal", "Session", "Labels", "Created", "Updated"].iter().enumerate()
    {
        let _ = write!(
            s,
            "<th scope=\"col\" aria-sort=\"none\"><button type=\"button\" data-sort=\"{}\">{h}</button></th>",
            i + 1
        );
    }
    s.push_str("</tr></thead><tbody>");
    for item in &page.items {
        s.push_str(&row(item));
    }
    s.push_str("</tbody></table></div></form>");
    let _ = write!(s, "<nav class=\"pages\" aria-label=\"Pages\">");
    if f.cursor.is_some() {
        let _ = write!(s, "<a href=\"/?{}\">← Newest</a> ", escape(&encode(&f.pairs)));
    }
    if let Some(next) = &page.next_cursor {
        let mut pairs = f.pairs.clone();
        pairs.push(("cursor".into(), next.clone()));
        let _ = write!(s, "<a href=\"/?{}\" rel=\"next\">Older →</a>", escape(&encode(&pairs)));
    }
    s.push_str("</nav>");
    Ok((s, data))
}

fn form(f: &Filters) -> String {
    let q = &f.query;
    let mut s = String::from("<form method=\"get\" action=\"/\" class=\"filters\" role=\"search\">");
    let select = |name: &str, label: &str, options: &[&str], current: Option<&str>| {
        let mut o = format!("<label>{label} <select name=\"{name}\"><option value=\"\">any</option>");
        for opt in options {
            let sel = if current == Some(*opt) { " selected" } else { "" };
            let _ = write!(o, "<option{sel}>{opt}</option>");
        }
        o.push_str("</select></label> ");
        o
    };
    let statuses: Vec<&str> = ExperimentStatus::ALL.iter().map(|s| s.as_str()).collect();
    s.push_str(&select("status", "Status", &statuses, q.status.as_deref()));
    let scenarios: Vec<&str> = Scenario::ALL.iter().map(|s| s.as_str()).collect();
    s.push_str(&select("scenario", "Scenario", &scenarios, q.scenario.as_deref()));
    let text = |name: &str, label: &str, value: Option<&str>, hint: &str| {
        format!(
            "<label>{label} <input name=\"{name}\" value=\"{}\" placeholder=\"{hint}\" size=\"12\"></label> ",
            escape(value.unwrap_or(""))
        )
    };
    s.push_str(&text("goal", "Goal", q.goal.as_deref(), "g-1"));
    s.push_str(&text("session", "Session", q.session.as_deref(), "s-1"));
    s.push_str(&text("name", "Name", q.name.as_deref(), "exact name"));
    s.push_str(&text("label", "Label", q.labels.first().map(String::as_str), "key=value"));
    for extra in q.labels.iter().skip(1) {
        let _ = write!(s, "<input type=\"hidden\" name=\"label\" value=\"{}\">", escape(extra));
    }
    s.push_str("<button type=\"submit\">Filter</button> <a href=\"/\">Clear</a></form>");
    s
}

fn row(item: &ExperimentItem) -> String {
    let r = &item.record;
    let id = r.id.to_string();
    let link = |prefix: &str, v: Option<String>| match v {
        Some(v) => format!("<a href=\"/{prefix}/{0}\">{0}</a>", escape(&v)),
        None => "–".to_string(),
    };
    let labels: Vec<String> =
        r.labels.iter().map(|(k, v)| format!("<span class=\"label\">{}={}</span>", escape(k), escape(v))).collect();
    format!(
        "<tr data-id=\"{id}\"><td><input type=\"checkbox\" name=\"ids\" value=\"{id}\" aria-label=\"pick {id}\"></td>\
         <td data-key=\"{n}\"><a href=\"/experiments/{id}\">{id}</a></td><td>{name}</td><td class=\"st\">{status}</td>\
         <td>{scenario}</td><td>{goal}</td><td>{session}</td><td>{labels}</td><td data-key=\"{c}\">{created}</td>\
         <td data-key=\"{u}\" class=\"upd\">{updated}</td></tr>",
        n = r.id.0,
        name = escape(&r.name),
        status = status_badge(r.status),
        scenario = r.scenario,
        goal = link("goals", r.goal.map(|g| g.to_string())),
        session = link("sessions", r.session.map(|s| s.to_string())),
        labels = labels.join(" "),
        c = r.created.0,
        created = time(r.created),
        u = r.updated.0,
        updated = time(r.updated),
    )
}

/// How often the live stream reads the statuses it follows.
const LIVE_EVERY: Duration = Duration::from_secs(1);
/// A stream ends after this long (the page reconnects if it is still open).
const LIVE_FOR: Duration = Duration::from_secs(3600);

/// `GET /ui/live?ids=e-1,e-2`: the status stream of `falcon_app::streams` — `status` events `{"id", "status",
/// "updated"}`, each id's status at once, then on every change — until every one has ended (`end`), the server
/// stops, or an hour has passed.
pub async fn live(Extract(state): Extract<Arc<State>>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let mut ids = Vec::new();
    for (key, value) in query_pairs(raw.as_deref())? {
        if key != "ids" {
            return Err(ApiError::usage(format!("unknown query parameter `{key}`")));
        }
        for part in value.split(',').filter(|p| !p.is_empty()) {
            ids.push(crate::request::experiment_id(part)?);
        }
    }
    let follow =
        Follow { every: LIVE_EVERY, stop: Some(state.stopping.clone()), max: Some(LIVE_FOR), ..Follow::default() };
    let events =
        App::follow_statuses(state.app.clone(), &ids, follow).map_err(|e| ApiError::usage(format!("ids=: {e}")))?;
    let events = events.map(|e| Ok::<_, std::convert::Infallible>(crate::events::sse_event(e)));
    Ok(Sse::new(events).keep_alive(KeepAlive::default()).into_response())
}
