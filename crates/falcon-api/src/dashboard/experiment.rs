//! The experiment page (`/experiments/{id}`): its record and status timeline, metric charts by step (thinned
//! on the server, warm-up shaded), the analysis summary, goodput (one stacked bar of the held time), the memory curve with its trend and verdict, the log
//! tail (followed live while it runs), artifacts to download, what was skipped, the config snapshot.

use super::{can_write, error_page, principal, render, status_badge, time, Shell};
use crate::error::ApiResult;
use crate::request::experiment_id;
use crate::request::Path;
use crate::state::State;
use axum::extract::{Request, State as Extract};
use axum::response::Response;
use falcon_app::experiments::{ExperimentDetail, MemoryVerdict};
use falcon_app::render::html::{fmt_bytes, fmt_frac_pct, fmt_ms, table};
use falcon_app::render::markup::escape;
use falcon_app::render::svg::{line_chart, Line, LineChart, Reference, BLUE, GREY, PURPLE, RED};
use falcon_app::tokens::Principal;
use std::fmt::Write;
use std::sync::Arc;

/// Points a chart draws at most (each thinned bucket keeps its lowest and highest).
const CHART_POINTS: usize = 1000;
/// Charts on one page at most.
const MAX_CHARTS: usize = 12;
/// Bytes of each log the page shows.
const LOG_TAIL: u64 = 64 * 1024;

pub async fn page(Extract(state): Extract<Arc<State>>, Path(id): Path<String>, req: Request) -> Response {
    let viewer = principal(&req);
    match build(&state, &id, viewer.as_ref()).await {
        Ok((title, body)) => {
            let data = Some(format!("/api/v1/experiments/{id}"));
            render(Shell { title: &title, data, viewer: viewer.as_ref(), body })
        }
        Err(e) => error_page(e, viewer.as_ref()),
    }
}

async fn build(state: &State, id: &str, viewer: Option<&Principal>) -> ApiResult<(String, String)> {
    let id = experiment_id(id)?;
    let d = state.app.show_experiment(id, None).await?;
    let (charts, chart_notes) = state.app.metric_charts(id, CHART_POINTS, MAX_CHARTS).await?;
    let logs = state.app.experiment_log_tails(id, LOG_TAIL).await?;
    let r = &d.view.record;
    let mut s = String::new();
    s.push_str(&summary(&d, viewer));
    s.push_str(&timeline(&d));
    s.push_str("<section><h2>Metrics by step</h2>");
    if charts.is_empty() {
        s.push_str("<p class=\"empty\">No per-step metrics stored (yet).</p>");
    }
    s.push_str("<div class=\"charts\">");
    for c in &charts {
        let thinned =
            if c.points.len() < c.steps { format!(", drawn from {} points", c.points.len()) } else { String::new() };
        let chart = LineChart {
            title: format!("{} by step", c.metric),
            x_label: "step".into(),
            y_label: c.metric.clone(),
            lines: vec![Line {
                label: String::new(),
                points: c.points.clone(),
                color: BLUE,
                dashed: false,
                dots: c.steps <= 30,
            }],
            shade_until: c.warmup_until.map(|w| (w, "warm-up".to_string())),
            ..Default::default()
        };
        let _ = write!(
            s,
            "<figure>{}<figcaption>{} — {} steps{thinned}; the shaded steps are warm-up, left out of summaries.</figcaption></figure>",
            line_chart(&chart),
            escape(&c.metric),
            c.steps
        );
    }
    s.push_str("</div>");
    for n in &chart_notes {
        let _ = write!(s, "<p class=\"note\">{}</p>", escape(n));
    }
    s.push_str("</section>");
    s.push_str(&analysis(&d));
    let profiled = d.view.artifacts.iter().any(|a| a.kind == falcon_core::artifact::ArtifactKind::Xprof);
    if profiled && r.status == falcon_core::status::ExperimentStatus::Completed {
        s.push_str(&trace_steps(state, id).await);
    }
    s.push_str(&goodput(d.goodput.as_ref()));
    s.push_str(&memory(d.memory.as_ref()));
    // The log tail; a running experiment's is followed (dashboard.js reads the API's event stream).
    let live = !r.status.is_terminal();
    let _ = write!(s, "<section><h2>Log</h2>");
    if logs.is_empty() {
        s.push_str("<p class=\"empty\" data-log-empty>No log collected yet.</p>");
    }
    let follow = if live { format!(" data-follow=\"/api/v1/experiments/{id}/logs\"") } else { String::new() };
    let _ = write!(s, "<div class=\"logs\"{follow}>");
    for l in &logs {
        let _ = write!(
            s,
            "<h3>{}</h3><pre class=\"log\" tabindex=\"0\" data-source=\"{}\">{}</pre>",
            escape(&l.source),
            escape(&l.source),
            escape(&l.text)
        );
    }
    let _ = write!(
        s,
        "</div><p class=\"hint\">The last {} KiB of each log; whole logs: <a href=\"/api/v1/experiments/{id}/logs\">JSON</a>.</p></section>",
        LOG_TAIL / 1024
    );
    s.push_str(&artifacts(&d, id));
    let spec = serde_json::to_string_pretty(&r.spec).unwrap_or_default();
    let _ = write!(
        s,
        "<section><h2>Config snapshot</h2><p class=\"hint\">config hash <code>{}</code></p><pre class=\"spec\" tabindex=\"0\">{}</pre></section>",
        escape(&r.config_hash),
        escape(&spec)
    );
    Ok((format!("{} · {}", r.id, r.name), s))
}

fn link(href: String, text: String) -> String {
    format!("<a href=\"{}\">{}</a>", escape(&href), escape(&text))
}

fn summary(d: &ExperimentDetail, viewer: Option<&Principal>) -> String {
    let r = &d.view.record;
    let mut rows: Vec<(&str, String)> = vec![
        ("Status", format!("<span data-live-status=\"{}\">{}</span>", r.id, status_badge(r.status))),
        ("Scenario", escape(r.scenario.as_str())),
        ("Attempt", r.attempt.to_string()),
    ];
    if let Some(g) = r.goal {
        rows.push(("Goal", link(format!("/goals/{g}"), g.to_string())));
    }
    if let Some(sid) = r.session {
        rows.push(("Session", link(format!("/sessions/{sid}"), sid.to_string())));
    }
    if let Some(b) = r.baseline {
        rows.push((
            "Baseline",
            format!(
                "{} · {}",
                link(format!("/experiments/{b}"), b.to_string()),
                link(format!("/compare/{b}/{}", r.id), "compare with it".into())
            ),
        ));
    }
    if !r.labels.is_empty() {
        let labels: Vec<String> =
            r.labels.iter().map(|(k, v)| format!("<span class=\"label\">{}={}</span>", escape(k), escape(v))).collect();
        rows.push(("Labels", labels.join(" ")));
    }
    let history = format!(
        "/history?{}",
        serde_urlencoded::to_string([("name", r.name.as_str()), ("metric", falcon_app::requests::DEFAULT_METRIC)])
            .unwrap_or_default()
    );
    rows.push(("History", link(history, format!("every run named {}", r.name))));
    rows.push(("Created", time(r.created)));
    rows.push(("Updated", time(r.updated)));
    if let Some(reason) = &d.view.job_reason {
        rows.push(("Job", escape(reason)));
    }
    let mut s = String::from("<section class=\"summary\"><dl>");
    for (k, v) in rows {
        let _ = write!(s, "<dt>{k}</dt><dd>{v}</dd>");
    }
    s.push_str("</dl>");
    if !r.status.is_terminal() && can_write(viewer) {
        let _ = write!(
            s,
            "<p class=\"actions\"><button type=\"button\" data-post=\"/api/v1/experiments/{}/cancel\" data-confirm=\"Cancel {}?\">Cancel</button></p>",
            r.id, r.id
        );
    }
    s.push_str("</section>");
    s
}

fn timeline(d: &ExperimentDetail) -> String {
    let rows: Vec<Vec<String>> = d
        .view
        .history
        .iter()
        .map(|t| {
            vec![
                time(t.at),
                t.attempt.to_string(),
                t.from.map(|f| f.to_string()).unwrap_or_else(|| "–".into()),
                t.to.to_string(),
                t.reason.clone(),
            ]
        })
        .collect();
    // `table` escapes every cell; the time cell is markup, so it is built here instead.
    let mut s = String::from("<section><h2>Status timeline</h2><div class=\"table-wrap\"><table><thead><tr>");
    for h in ["When", "Attempt", "From", "To", "Why"] {
        let _ = write!(s, "<th scope=\"col\">{h}</th>");
    }
    s.push_str("</tr></thead><tbody>");
    for r in rows {
        let _ = write!(
            s,
            "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            r[0],
            escape(&r[1]),
            escape(&r[2]),
            escape(&r[3]),
            escape(&r[4])
        );
    }
    s.push_str("</tbody></table></div></section>");
    s
}

fn analysis(d: &ExperimentDetail) -> String {
    let mut s = String::from("<section><h2>Analysis</h2>");
    if d.view.analysis.is_empty() && d.view.metrics.is_empty() {
        s.push_str(
            "<p class=\"empty\">Nothing analysed yet: analyses run when the experiment completes.</p></section>",
        );
        return s;
    }
    if !d.view.analysis.is_empty() {
        let rows: Vec<Vec<String>> = d
            .view
            .analysis
            .iter()
            .map(|a| {
                let error = a.details.get("error").and_then(|e| e.as_str()).map(str::to_string);
                vec![
                    a.tool.clone(),
                    fmt_frac_pct(a.mfu),
                    falcon_app::render::profile::summary_step_time(a).unwrap_or_else(|| fmt_ms(None)),
                    fmt_frac_pct(a.duty_cycle),
                    a.peak_memory_bytes.map(|b| fmt_bytes(b as f64, false)).unwrap_or_else(|| "–".into()),
                    a.bound_by.clone().unwrap_or_else(|| "–".into()),
                    error.unwrap_or_default(),
                ]
            })
            .collect();
        s.push_str(&table(&["tool", "MFU", "step time", "duty cycle", "peak memory", "bound by", "error"], &rows));
        let findings: Vec<&str> = d
            .view
            .analysis
            .iter()
            .filter_map(|a| a.details.get("findings").and_then(|f| f.as_array()))
            .flatten()
            .filter_map(|f| f.get("summary").and_then(|s| s.as_str()))
            .collect();
        if !findings.is_empty() {
            s.push_str("<h3>Findings</h3><ol class=\"findings\">");
            for f in findings {
                let _ = write!(s, "<li>{}</li>", escape(f));
            }
            s.push_str("</ol>");
        }
    }
    if !d.view.metrics.is_empty() {
        s.push_str("<h3>Metric summaries (warm-up left out)</h3>");
        let num = |x: f64| falcon_app::render::html::fmt_num(x);
        let rows: Vec<Vec<String>> = d
            .view
            .metrics
            .iter()
            .map(|(name, m)| {
                vec![name.clone(), m.count.to_string(), num(m.mean), num(m.median), num(m.p90), num(m.min), num(m.max)]
            })
            .collect();
        s.push_str(&table(&["metric", "count", "mean", "median", "p90", "min", "max"], &rows));
    }
    s.push_str("</section>");
    s
}

/// Where each profiled step's time went (the trace analysis, computed once and kept), and the Chrome-trace
/// export for Perfetto.
async fn trace_steps(state: &State, id: falcon_core::ids::ExperimentId) -> String {
    let mut s = String::from("<section><h2>Trace: where each step's time goes</h2>");
    let run = match state.app.report(id, &falcon_app::reports::Report::Trace).await {
        Ok(bytes) => serde_json::from_slice::<serde_json::Value>(&bytes).unwrap_or_default(),
        Err(e) => {
            let _ = write!(s, "<p class=\"error\" role=\"alert\">{}</p></section>", escape(&e.to_string()));
            return s;
        }
    };
    let parts = [
        ("compute_us", "compute", "#1c7ed6"),
        ("wait_for_peers_us", "waiting for peers", "#e8590c"),
        ("transfer_us", "collective transfer", "#ae3ec9"),
        ("memcpy_us", "memcpy", "#f59f00"),
        ("host_wait_us", "host wait", "#d6336c"),
        ("other_us", "other", "#868e96"),
        ("idle_us", "idle", "#dee2e6"),
    ];
    let steps = run.get("steps").and_then(|v| v.as_array()).cloned().unwrap_or_default();
    if steps.is_empty() {
        s.push_str("<p class=\"empty\">The capture has no steps the trace analysis could find.</p>");
    } else {
        s.push_str("<div class=\"table-wrap\"><table class=\"steps\"><thead><tr><th scope=\"col\">step</th><th scope=\"col\">duration</th><th scope=\"col\">breakdown</th></tr></thead><tbody>");
        for st in &steps {
            let f = |k: &str| st.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
            let total = f("duration_us");
            let mut bar = String::new();
            let mut words = Vec::new();
            for (key, label, color) in parts {
                let v = f(key);
                if total > 0.0 && v > 0.0 {
                    let pct = v / total * 100.0;
                    let _ = write!(
                        bar,
                        "<span style=\"width:{pct:.2}%;background:{color}\" title=\"{label} {pct:.1} %\"></span>"
                    );
                    if pct >= 0.5 {
                        words.push(format!("{label} {pct:.0} %"));
                    }
                }
            }
            let _ = write!(
                s,
                "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td><span class=\"stack\" aria-hidden=\"true\">{bar}</span> <span class=\"hint\">{}</span></td></tr>",
                st.get("step").map(|v| v.to_string()).unwrap_or_default(),
                fmt_ms(Some(total / 1000.0)),
                escape(&words.join(", "))
            );
        }
        s.push_str("</tbody></table></div>");
    }
    s.push_str(&hosts_lateness(&run));
    let _ = write!(
        s,
        "<p>The whole trace: <a href=\"/api/v1/traces/{id}/export\" download>Chrome trace JSON (gzipped)</a> — open it in          Perfetto (ui.perfetto.dev) or chrome://tracing · the analysis as <a href=\"/api/v1/traces/{id}\">JSON</a></p></section>"
    );
    s
}

/// Hosts shown in the lateness chart at most (the late ones first).
const LATENESS_HOSTS: usize = 64;

/// A run of several hosts: the straggler finding and each host's lateness (the steps it arrived last at, and by
/// how much, median) as a bar chart, the late hosts first. Empty for a run of one host.
fn hosts_lateness(run: &serde_json::Value) -> String {
    let hosts = run.get("hosts").and_then(|v| v.as_array()).cloned().unwrap_or_default();
    if hosts.len() < 2 {
        return String::new();
    }
    let mut s = String::from("<h3>Hosts: who arrives late at the collectives</h3>");
    match run.get("straggler").filter(|v| !v.is_null()) {
        Some(g) => {
            let _ = write!(
                s,
                "<p class=\"finding\">{}</p>",
                escape(g.get("summary").and_then(|v| v.as_str()).unwrap_or_default())
            );
        }
        None => s.push_str("<p>No straggler: no host is late beyond the run's noise.</p>"),
    }
    let f = |h: &serde_json::Value, k: &str| h.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
    let mut rows: Vec<&serde_json::Value> = hosts.iter().collect();
    rows.sort_by(|a, b| {
        f(b, "steps_late").total_cmp(&f(a, "steps_late")).then_with(|| {
            let name = |h: &serde_json::Value| h.get("host").and_then(|v| v.as_str()).unwrap_or_default().to_string();
            name(a).cmp(&name(b))
        })
    });
    let max = rows.iter().map(|h| f(h, "late_us_median")).fold(0.0, f64::max);
    s.push_str("<div class=\"table-wrap\"><table class=\"steps lateness\"><thead><tr><th scope=\"col\">host</th><th scope=\"col\">late at</th><th scope=\"col\">late (median)</th><th scope=\"col\">wait for peers / step</th><th scope=\"col\">transfer / step</th></tr></thead><tbody>");
    for h in rows.iter().take(LATENESS_HOSTS) {
        let late = f(h, "late_us_median");
        let pct = if max > 0.0 { late / max * 100.0 } else { 0.0 };
        let steps = f(h, "steps").max(1.0) / f(h, "devices").max(1.0);
        let _ = write!(
            s,
            "<tr><td>{}</td><td class=\"num\">{} of {}</td><td><span class=\"stack\" aria-hidden=\"true\"><span style=\"width:{pct:.2}%;background:#e8590c\"></span></span> <span class=\"hint\">{}</span></td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(h.get("host").and_then(|v| v.as_str()).unwrap_or_default()),
            f(h, "steps_late"),
            steps,
            if late > 0.0 { fmt_ms(Some(late / 1000.0)) } else { "–".into() },
            fmt_ms(Some(f(h, "wait_for_peers_us") / steps / 1000.0)),
            fmt_ms(Some(f(h, "transfer_us") / steps / 1000.0)),
        );
    }
    s.push_str("</tbody></table></div>");
    if rows.len() > LATENESS_HOSTS {
        let _ = write!(s, "<p class=\"hint\">{} more hosts in the JSON.</p>", rows.len() - LATENESS_HOSTS);
    }
    s
}

/// Goodput: the held time as one stacked bar (productive, then each cause), its headline and a legend.
fn goodput(g: Option<&falcon_app::goodput::Goodput>) -> String {
    use falcon_app::goodput::Cause;
    let mut s = String::from("<section><h2>Goodput</h2>");
    let Some(g) = g else {
        s.push_str("<p class=\"empty\">No goodput yet (it is computed when the experiment has ended).</p></section>");
        return s;
    };
    let _ = write!(s, "<p class=\"goodput-headline\">{}</p>", escape(&g.headline()));
    if g.held_s > 0.0 {
        let color = |c: Cause| match c {
            Cause::FailedAttempts => "#862e9c",
            Cause::LostToRestarts => "#c92a2a",
            Cause::StartUp => "#f59f00",
            Cause::Checkpointing => "#1c7ed6",
            Cause::Evaluation => "#15aabf",
            Cause::OtherEvents => "#74c0fc",
            Cause::CompilationAndWarmUp => "#ae3ec9",
            Cause::InputAndHostStalls => "#d6336c",
            Cause::Tail => "#868e96",
            Cause::Unexplained => "#dee2e6",
        };
        let mut parts = vec![("productive".to_string(), 100.0 * g.productive_s / g.held_s, "#2b8a3e")];
        parts.extend(g.badput.iter().map(|b| (b.cause.short().to_string(), b.percent, color(b.cause))));
        let mut bar = String::new();
        let mut legend = Vec::new();
        for (label, pct, color) in parts.into_iter().filter(|p| p.1 > 0.0) {
            let _ =
                write!(bar, "<span style=\"width:{pct:.2}%;background:{color}\" title=\"{label} {pct:.1} %\"></span>");
            legend.push(format!(
                "<li><span class=\"swatch\" style=\"background:{color}\"></span>{} {pct:.1} %</li>",
                escape(&label)
            ));
        }
        let _ = write!(
            s,
            "<p><span class=\"stack goodput\" role=\"img\" aria-label=\"{}\">{bar}</span></p><ul class=\"legend\">{}</ul>",
            escape(&g.headline()),
            legend.join("")
        );
        let _ = write!(
            s,
            "<p class=\"hint\">held {:.1} s ({:.0} chip-s) over {} attempt(s); waiting for capacity {:.1} s (not held). \
             The same as JSON: <code>falcon exp show --json</code> → <code>goodput</code>.</p>",
            g.held_s, g.held_chip_seconds, g.attempts, g.waiting_s
        );
    }
    for n in &g.notes {
        let _ = write!(s, "<p class=\"hint\">{}</p>", escape(n));
    }
    s.push_str("</section>");
    s
}

fn memory(v: Option<&MemoryVerdict>) -> String {
    let mut s = String::from("<section><h2>Memory</h2>");
    let Some(v) = v else {
        s.push_str(
            "<p class=\"empty\">No memory verdict yet (it is computed when the experiment completes).</p></section>",
        );
        return s;
    };
    let h = &v.headline;
    let call = if h.leak_suspected {
        "<strong class=\"bad\">✖ leak suspected</strong>"
    } else {
        "<strong class=\"ok\">✔ no leak</strong>"
    };
    let _ = write!(
        s,
        "<p>{call} — {} ({})</p>",
        escape(&h.reason),
        escape(&falcon_app::render::memory::source_label(h.source.as_deref(), h.per))
    );
    for series in v.series.iter().filter(|se| se.curve.len() >= 2) {
        let points: Vec<(f64, f64)> = series.curve.iter().map(|p| (p[0], p[1] / (1 << 20) as f64)).collect();
        let mut lines = vec![Line { label: "memory (MiB)".into(), points, color: PURPLE, dashed: false, dots: false }];
        let slope = series.summary.growth_bytes_per_step.or(series.summary.growth_bytes_per_s);
        if let (Some(b), Some(m)) = (series.intercept, slope) {
            let (x0, x1) = (series.curve[0][0], series.curve[series.curve.len() - 1][0]);
            let x0 = series.warmup_until.unwrap_or(x0);
            let mib = |x: f64| (b + m * x) / (1 << 20) as f64;
            lines.push(Line {
                label: "trend after warm-up".into(),
                points: vec![(x0, mib(x0)), (x1, mib(x1))],
                color: if series.summary.leak_suspected { RED } else { GREY },
                dashed: true,
                dots: false,
            });
        }
        let per = match series.summary.per {
            Some(falcon_app::experiments::Per::Second) => "second",
            _ => "step",
        };
        let label = falcon_app::render::memory::source_label(series.summary.source.as_deref(), series.summary.per);
        let chart = LineChart {
            title: format!("Memory: {label}"),
            x_label: per.into(),
            y_label: "MiB".into(),
            lines,
            shade_until: series.warmup_until.map(|w| (w, "warm-up".to_string())),
            references: Vec::<Reference>::new(),
            marks: Vec::new(),
        };
        let _ = write!(
            s,
            "<figure>{}<figcaption>{}: {}</figcaption></figure>",
            line_chart(&chart),
            escape(&label),
            escape(&series.summary.reason)
        );
    }
    for n in &v.notes {
        let _ = write!(s, "<p class=\"note\">{}</p>", escape(n));
    }
    s.push_str("</section>");
    s
}

fn artifacts(d: &ExperimentDetail, id: falcon_core::ids::ExperimentId) -> String {
    let prefix = format!("experiments/{id}/");
    let mut s = String::from("<section><h2>Artifacts</h2>");
    if d.view.artifacts.is_empty() {
        s.push_str("<p class=\"empty\">No artifact stored.</p>");
    } else {
        s.push_str("<div class=\"table-wrap\"><table><thead><tr><th scope=\"col\">path</th><th scope=\"col\">kind</th><th scope=\"col\">size</th></tr></thead><tbody>");
        for a in &d.view.artifacts {
            let path = a.key.strip_prefix(&prefix).unwrap_or(&a.key);
            let _ = write!(
                s,
                "<tr><td><a href=\"/api/v1/experiments/{id}/artifacts/{}\" download>{}</a></td><td>{}</td><td class=\"num\">{}</td></tr>",
                escape(&crate::request::url_path(path)),
                escape(path),
                escape(a.kind.as_str()),
                fmt_bytes(a.size as f64, false)
            );
        }
        s.push_str("</tbody></table></div>");
    }
    if !d.view.skipped.is_empty() || !d.view.notes.is_empty() {
        s.push_str("<h3>Not stored or skipped</h3><ul class=\"notes\">");
        for k in &d.view.skipped {
            let _ = write!(s, "<li><code>{}</code>: {}</li>", escape(&k.path), escape(&k.reason));
        }
        for n in &d.view.notes {
            let at = n.line.map(|l| format!(":{l}")).unwrap_or_default();
            let _ = write!(s, "<li><code>{}{at}</code>: {}</li>", escape(&n.file), escape(&n.reason));
        }
        s.push_str("</ul>");
    }
    s.push_str("</section>");
    s
}
