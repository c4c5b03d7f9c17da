//! The session page of a bisection (`/sessions/{id}` when the session's kind is `bisect`): the answer first (the
//! culprit, or why there is none, with the ends' verdict and the culprit's against its parent), then the search
//! drawn — the commits of the range along x (0: the good end … n−1: the bad end), each tested commit's runs as
//! dots (each run's median) and their geometric mean as a bar, coloured by the commit's verdict, the culprit
//! marked — then every tested commit as a row with links to its experiments. Its JSON is the `BisectView`.

use super::status_badge;
use crate::error::ApiResult;
use crate::state::State;
use falcon_app::contract::{BisectTested, BisectView};
use falcon_app::experiments::ListQuery;
use falcon_app::goals::SessionDetail;
use falcon_app::render::compare_table::verdict_line;
use falcon_app::render::markup::escape;
use falcon_app::render::numbers::num_opt;
use falcon_app::render::svg::{dot_chart, DotChart, DotColumn, BLUE, DARK, GREEN, GREY, PURPLE, RED};
use falcon_core::ids::ExperimentId;
use falcon_core::status::ExperimentStatus;
use std::collections::HashMap;
use std::fmt::Write;

/// The most pages of a commit's experiments read to find the runs a bisection reused from elsewhere.
const PAGES: usize = 20;

/// What the page shows of one run: where it is and the median of the metric (once it has a summary).
#[derive(Debug, Clone, Copy)]
pub(super) struct Run {
    pub status: ExperimentStatus,
    pub median: Option<f64>,
}

/// The page's title, body and JSON link for the bisection of `detail`.
pub(super) async fn build(state: &State, detail: &SessionDetail) -> ApiResult<(String, String, String)> {
    let session = &detail.view.session;
    let v = state.app.bisect(session.id).await?;
    let runs = runs_of(state, detail, &v).await?;
    Ok((
        format!("{} · {}", session.id, session.name),
        body(&v, &runs, session.goal),
        format!("/api/v1/bisect/{}", session.id),
    ))
}

/// Each tested experiment's status and median: the session's own from its detail, the ones the search reused
/// from elsewhere read by name and commit.
async fn runs_of(state: &State, detail: &SessionDetail, v: &BisectView) -> ApiResult<HashMap<ExperimentId, Run>> {
    let mut runs: HashMap<ExperimentId, Run> = detail
        .experiments()
        .map(|(e, row)| (e.id, Run { status: e.status, median: row.metrics.get(&v.metric).map(|m| m.median) }))
        .collect();
    let name = detail.view.session.spec.pointer("/bisect/spec/name").and_then(|n| n.as_str()).map(str::to_string);
    for t in &v.tested {
        let mut missing = t.experiments.iter().filter(|id| !runs.contains_key(id)).count();
        let mut cursor: Option<String> = None;
        let query = ListQuery {
            name: name.clone(),
            commit: Some(t.commit.clone()),
            limit: 500,
            with_metrics: true,
            ..Default::default()
        };
        for _ in 0..PAGES {
            if missing == 0 {
                break;
            }
            let page = state.app.list_experiments(&query, cursor.as_deref()).await?;
            for item in page.items {
                let id = item.record.id;
                if t.experiments.contains(&id) && !runs.contains_key(&id) {
                    let median = item.metrics.as_ref().and_then(|m| m.get(&v.metric)).map(|m| m.median);
                    runs.insert(id, Run { status: item.record.status, median });
                    missing -= 1;
                }
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
    }
    Ok(runs)
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// A verdict's colour in the chart, its shape and class in the table (readable without colour).
fn look(verdict: &str) -> (&'static str, &'static str, &'static str) {
    match verdict {
        "good" => (GREEN, "✔", "verdict ok"),
        "bad" => (RED, "✖", "verdict bad"),
        "skipped" => (GREY, "⊘", "verdict"),
        "inconclusive" => (PURPLE, "?", "verdict wait"),
        "pending" => (BLUE, "○", "verdict wait"),
        _ => (DARK, "–", "verdict"),
    }
}

const VERDICTS: [&str; 6] = ["good", "bad", "skipped", "inconclusive", "pending", "undecided"];

/// The page's body (store text escaped).
pub(super) fn body(
    v: &BisectView,
    runs: &HashMap<ExperimentId, Run>,
    goal: Option<falcon_core::ids::GoalId>,
) -> String {
    let mut s = answer(v, goal);
    s.push_str(&chart(v, runs));
    s.push_str(&table(v, runs));
    s
}

fn answer(v: &BisectView, goal: Option<falcon_core::ids::GoalId>) -> String {
    let mut s = String::from("<section class=\"summary\" data-bisect><h2>Answer</h2>");
    match (&v.culprit, v.state.as_str()) {
        (Some(c), _) => {
            let _ = write!(
                s,
                "<p class=\"answer\"><strong>Culprit</strong> <code data-culprit>{}</code> “{}” — {}, {}</p>\
                 <p class=\"hint\">{}</p>",
                escape(&c.commit),
                escape(&c.subject),
                escape(&c.author),
                escape(&c.date),
                escape(&v.message)
            );
        }
        (None, "decided") => {
            let _ = write!(s, "<p class=\"answer\"><strong>No culprit</strong>: {}</p>", escape(&v.message));
        }
        (None, _) => {
            let _ = write!(
                s,
                "<p class=\"answer\"><strong>Searching</strong>: {}</p><p class=\"hint\">The search goes on with \
                 <code>falcon worker</code> (or <code>falcon bisect --session {}</code> <code>--wait</code>); the runs \
                 still going are followed below. Reload the page for its next step.</p>",
                escape(v.message.strip_prefix("searching: ").unwrap_or(&v.message)),
                v.session
            );
        }
    }
    if !v.candidates.is_empty() {
        s.push_str("<p>The change is in one of:</p><ul>");
        for c in &v.candidates {
            let _ = write!(s, "<li><code>{}</code> {}</li>", escape(short(&c.commit)), escape(&c.subject));
        }
        s.push_str("</ul>");
    }
    let _ = write!(
        s,
        "<dl><dt>State</dt><dd data-state=\"{0}\">{0}</dd><dt>Metric</dt><dd>{1}</dd>",
        escape(&v.state),
        escape(&v.metric)
    );
    let _ = write!(
        s,
        "<dt>Ends (bad vs good)</dt><dd>{}</dd>",
        v.verdict
            .as_ref()
            .map_or("not yet: both ends need their runs".to_string(), |e| escape(&verdict_line(e, false)))
    );
    if let Some(cv) = &v.culprit_verdict {
        let _ = write!(s, "<dt>Culprit vs its parent</dt><dd>{}</dd>", escape(&verdict_line(cv, false)));
    }
    for (which, c) in [("Good end", &v.good), ("Bad end", &v.bad)] {
        let _ = write!(
            s,
            "<dt>{which}</dt><dd><code title=\"{}\">{}</code> {}</dd>",
            escape(&c.commit),
            escape(short(&c.commit)),
            escape(&c.subject)
        );
    }
    let _ = write!(
        s,
        "<dt>Range</dt><dd>{} commits (first parents, the good end included) · {} tested</dd>\
         <dt>Runs</dt><dd>{} · <a href=\"/?session={}\">the session's experiments as a list</a></dd>",
        v.commits,
        v.tested.len(),
        v.runs,
        v.session
    );
    if let Some(g) = goal {
        let _ = write!(s, "<dt>Goal</dt><dd><a href=\"/goals/{g}\">{g}</a></dd>");
    }
    s.push_str("</dl></section>");
    s
}

fn column(t: &BisectTested, runs: &HashMap<ExperimentId, Run>) -> DotColumn {
    let (color, _, _) = look(&t.verdict);
    let values: Vec<f64> = t.experiments.iter().filter_map(|id| runs.get(id).and_then(|r| r.median)).collect();
    let delta = t.delta_rel.map(|d| format!(", {:+.1} % vs good", d * 100.0)).unwrap_or_default();
    DotColumn {
        x: t.index as f64,
        label: format!(
            "#{} {} “{}”: {}, {} run(s), geometric mean of the medians {}{delta}",
            t.index,
            short(&t.commit),
            t.subject,
            t.verdict,
            t.runs,
            num_opt(t.median)
        ),
        values,
        summary: t.median,
        color,
    }
}

fn chart(v: &BisectView, runs: &HashMap<ExperimentId, Run>) -> String {
    let last = v.commits.saturating_sub(1) as f64;
    let marks = v
        .culprit
        .as_ref()
        .and_then(|c| v.tested.iter().find(|t| t.commit == c.commit))
        .map(|t| (t.index as f64, format!("culprit {}", short(&t.commit))))
        .into_iter()
        .collect();
    let legend = VERDICTS
        .iter()
        .filter(|w| v.tested.iter().any(|t| t.verdict == **w))
        .map(|w| (w.to_string(), look(w).0))
        .collect();
    let c = DotChart {
        title: format!("{} at the commits tested, {} commits from good to bad", v.metric, v.commits),
        x_label: format!("commit (0 = good end … {} = bad end)", v.commits.saturating_sub(1)),
        y_label: v.metric.clone(),
        x_domain: Some((-0.5, last + 0.5)),
        columns: v.tested.iter().map(|t| column(t, runs)).collect(),
        marks,
        x_names: vec![(0.0, "good".into()), (last, "bad".into())],
        legend,
    };
    format!(
        "<section><h2>The search</h2><figure>{}<figcaption>Each tested commit: its runs' medians of {} as dots, \
         their geometric mean as a bar, in the colour of the commit's verdict; the red dashed line marks the \
         culprit.</figcaption></figure>",
        dot_chart(&c),
        escape(&v.metric)
    )
}

fn table(v: &BisectView, runs: &HashMap<ExperimentId, Run>) -> String {
    if v.tested.is_empty() {
        return "<p class=\"empty\">No commit has runs yet.</p></section>".to_string();
    }
    let mut s = String::from(
        "<h3>Commits tested</h3><div class=\"table-wrap\"><table class=\"bisect\"><thead><tr>\
         <th scope=\"col\">#</th><th scope=\"col\">commit</th><th scope=\"col\">subject</th>\
         <th scope=\"col\">runs</th><th scope=\"col\">median</th><th scope=\"col\">Δ vs good</th>\
         <th scope=\"col\">verdict</th><th scope=\"col\">experiments</th></tr></thead><tbody>",
    );
    let culprit = v.culprit.as_ref().map(|c| c.commit.as_str());
    for t in &v.tested {
        let (_, shape, class) = look(&t.verdict);
        let end = match t.index {
            0 => " <span class=\"hint\">good end</span>",
            i if i + 1 == v.commits => " <span class=\"hint\">bad end</span>",
            _ => "",
        };
        let is_culprit = culprit == Some(t.commit.as_str());
        let runs_cell = if t.failed > 0 { format!("{} ({} failed)", t.runs, t.failed) } else { t.runs.to_string() };
        let mut links = Vec::with_capacity(t.experiments.len());
        for id in &t.experiments {
            let mut link = format!("<a href=\"/experiments/{id}\">{id}</a>");
            match runs.get(id).map(|r| r.status) {
                Some(st) if !st.is_terminal() => {
                    let _ = write!(link, " <span data-live-status=\"{id}\">{}</span>", status_badge(st));
                }
                Some(st) if st != ExperimentStatus::Completed => link.push_str(&format!(" {}", status_badge(st))),
                _ => {}
            }
            links.push(link);
        }
        let _ = write!(
            s,
            "<tr data-commit=\"{}\"{}><td class=\"num\">{}{end}</td><td><code title=\"{}\">{}</code></td><td>{}</td>\
             <td class=\"num\">{runs_cell}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td><span class=\"{class}\">{shape} {}</span>{}</td><td>{}</td></tr>",
            escape(&t.commit),
            if is_culprit { " class=\"culprit\"" } else { "" },
            t.index,
            escape(&t.commit),
            escape(short(&t.commit)),
            escape(&t.subject),
            escape(&num_opt(t.median)),
            t.delta_rel.map_or("—".into(), |d| format!("{:+.1} %", d * 100.0)),
            escape(&t.verdict),
            if is_culprit { " <strong>★ culprit</strong>" } else { "" },
            links.join(" ")
        );
    }
    s.push_str("</tbody></table></div></section>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use falcon_app::contract::BisectCommit;

    fn commit(sha: &str, subject: &str) -> BisectCommit {
        BisectCommit { commit: sha.repeat(40), subject: subject.into(), author: "A <a@b>".into(), date: "2026".into() }
    }

    fn tested(index: usize, sha: &str, subject: &str, verdict: &str, ids: &[i64]) -> BisectTested {
        BisectTested {
            commit: sha.repeat(40),
            subject: subject.into(),
            index,
            runs: ids.len(),
            measured: ids.len(),
            failed: 0,
            verdict: verdict.into(),
            median: Some(1.0 + index as f64 / 10.0),
            delta_rel: Some(index as f64 / 10.0),
            experiments: ids.iter().map(|i| ExperimentId(*i)).collect(),
        }
    }

    #[test]
    fn the_answer_the_chart_and_a_row_per_commit_with_subjects_escaped() {
        let evil = "<script>alert(1)</script> & \"q\"";
        let v = BisectView {
            session: "s-7".parse().unwrap(),
            state: "decided".into(),
            culprit: Some(commit("c", evil)),
            culprit_verdict: None,
            verdict: None,
            good: commit("a", "first"),
            bad: commit("e", "last"),
            commits: 5,
            runs: 6,
            tested: vec![
                tested(0, "a", "first", "good", &[1, 2]),
                tested(2, "c", evil, "bad", &[3, 4]),
                tested(4, "e", "last", "bad", &[5, 6]),
            ],
            candidates: Vec::new(),
            message: format!("ccc \"{evil}\" changed step_time_s"),
            metric: "step_time_s".into(),
        };
        let runs: HashMap<ExperimentId, Run> = (1..=6)
            .map(|i| {
                (ExperimentId(i), Run { status: ExperimentStatus::Completed, median: Some(1.0 + i as f64 / 20.0) })
            })
            .collect();
        let html = body(&v, &runs, None);
        assert!(!html.contains("<script"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot;"), "{html}");
        let answer = html.find("<strong>Culprit</strong>").unwrap();
        assert!(answer < html.find("<svg").unwrap() && html.contains(&"c".repeat(40)), "the answer first: {html}");
        assert_eq!(html.matches("<tr data-commit=").count(), 3, "{html}");
        assert_eq!(html.matches("<g class=\"column\">").count(), 3, "{html}");
        assert_eq!(html.matches("<circle").count(), 6 + 2, "six runs' dots, two legend keys: {html}");
        assert!(html.contains("culprit cccccccccccc") && html.contains("★ culprit"), "{html}");
        assert!(html.contains("href=\"/experiments/e-3\""), "{html}");
        let searching = BisectView { state: "searching".into(), culprit: None, ..v };
        let html = body(&searching, &HashMap::new(), None);
        assert!(html.contains("data-state=\"searching\"") && html.contains("<strong>Searching</strong>"), "{html}");
    }
}
