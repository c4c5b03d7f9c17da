//! `goal report`'s renderers: a [`GoalReport`] as terminal tables, Markdown or a self-contained HTML page.
//! The report's own sections are built once as neutral blocks and written out by each format; the profile
//! comparison is rendered by the shared `report::compare_*` renderers. The baseline → best config diff lists
//! the configuration changes; the bookkeeping ones (name, goal, the labels Falcon sets: `diff::Group`'s
//! `bookkeeping`) follow in a short section of their own, so they never read as what made the best better.

use super::html::{self, escape, table};
use super::{compare_html, compare_md, compare_table};
use crate::goal_report::GoalReport;
use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement};
use falcon_core::status::Direction;

/// One section of the report.
struct Section {
    /// What it is (`goal`, `progress`, `ranking`, `config_diff`, `bookkeeping`, `verdicts`, `goodput`, `notes`).
    id: &'static str,
    title: String,
    body: Body,
}

enum Body {
    /// `key: value` lines.
    Pairs(Vec<(&'static str, String)>),
    /// A table; `empty` is said instead when there are no rows, `more` after the rows.
    Table { header: Vec<&'static str>, rows: Vec<Vec<String>>, empty: String, more: Option<String> },
    /// A bulleted list.
    List(Vec<String>),
}

fn sections(r: &GoalReport, top: usize) -> Vec<Section> {
    let g = &r.goal;
    let p = &r.progress;
    let mut out = Vec::new();

    let mut pairs = vec![
        ("goal", g.id.to_string()),
        ("status", g.status.to_string()),
        ("metric", format!("{} ({})", g.metric, g.direction)),
        ("target", g.target.map_or("—".into(), num)),
        ("baseline", r.baseline.map_or("—".into(), |b| b.to_string())),
        ("priority", g.priority.to_string()),
    ];
    if let Some(owner) = &g.owner {
        pairs.push(("claimed by", format!("{owner} until {}", g.lease_expires.map_or("—".into(), |t| t.to_rfc3339()))));
    }
    if let Some(w) = &g.workload {
        pairs.push(("workload", w.clone()));
    }
    if let Some(h) = &g.hardware {
        pairs.push(("hardware", h.clone()));
    }
    out.push(Section { id: "goal", title: "Goal".into(), body: Body::Pairs(pairs) });

    out.push(Section {
        id: "progress",
        title: "Progress".into(),
        body: Body::Pairs(vec![
            ("baseline value", p.baseline_value.map_or("—".into(), num)),
            (
                "best value",
                match (&r.best, p.best_value) {
                    (Some(b), Some(v)) => format!("{} ({} {})", num(v), b.experiment, b.name),
                    _ => "—".into(),
                },
            ),
            ("target", p.target.map_or("—".into(), num)),
            ("change vs baseline", pct(p.delta_vs_baseline)),
            ("gap closed", super::numbers::fraction_percent(p.gap_closed)),
            ("meets target", yes_no(p.meets_target)),
        ]),
    });

    let shown = r.ranking.len().min(top.max(1));
    out.push(Section {
        id: "ranking",
        title: "Ranking".into(),
        body: Body::Table {
            header: vec!["rank", "experiment", "name", "value", "vs baseline", "verdict", "meets target"],
            rows: r.ranking[..shown]
                .iter()
                .map(|row| {
                    vec![
                        row.rank.to_string(),
                        row.experiment.to_string(),
                        row.name.clone(),
                        format!("{} ({})", num(row.value), row.statistic),
                        pct(row.delta_vs_baseline),
                        row_verdict(row),
                        yes_no(row.meets_target),
                    ]
                })
                .collect(),
            empty: format!("no completed experiment with `{}`", g.metric),
            more: (r.ranking.len() > shown)
                .then(|| format!("{} more (--top, or --json for all)", r.ranking.len() - shown)),
        },
    });

    if let (Some(base), Some(best)) = (r.baseline, r.best.as_ref().filter(|b| Some(b.experiment) != r.baseline)) {
        // What the best runs differently, then (apart) what only names it differently: its name, goal, role.
        let (config, bookkeeping) = falcon_exp::diff::split_bookkeeping(&r.config_diff);
        out.push(Section {
            id: "config_diff",
            title: format!("Config diff: baseline {base} → best {}", best.experiment),
            body: Body::Table {
                header: vec!["path", "group", "baseline", "best"],
                rows: config
                    .iter()
                    .map(|c| {
                        let mut values = super::numbers::config_values(&[c.a.as_ref(), c.b.as_ref()]).into_iter();
                        vec![
                            c.path.clone(),
                            c.group.to_string(),
                            values.next().unwrap_or_default(),
                            values.next().unwrap_or_default(),
                        ]
                    })
                    .collect(),
                empty: if bookkeeping.is_empty() {
                    "no differences".into()
                } else {
                    "no configuration differences: the same config, run again".into()
                },
                more: None,
            },
        });
        if !bookkeeping.is_empty() {
            out.push(Section {
                id: "bookkeeping",
                title: "Bookkeeping (not configuration)".into(),
                body: Body::List(bookkeeping.iter().map(|c| c.to_string()).collect()),
            });
        }
        out.push(Section {
            id: "verdicts",
            title: format!("Metric verdicts: baseline {base} → best {}", best.experiment),
            body: Body::Table {
                header: vec![
                    "metric",
                    "verdict",
                    "direction",
                    "baseline median",
                    "best median",
                    "change",
                    "95% CI",
                    "p",
                    "evidence",
                ],
                rows: r
                    .verdicts
                    .iter()
                    .map(|v| {
                        vec![
                            v.metric.clone(),
                            v.verdict.as_str().to_string(),
                            v.direction.as_str().replace('_', " "),
                            v.a.median.map_or("—".into(), num),
                            v.b.median.map_or("—".into(), num),
                            pct(v.delta_rel),
                            match (v.ci_low_rel, v.ci_high_rel, v.min_effect) {
                                (Some(lo), Some(hi), Some(e)) => format!(
                                    "{} … {} (margin ±{})",
                                    pct(Some(lo)),
                                    pct(Some(hi)),
                                    super::numbers::percent(e * 100.0)
                                ),
                                (Some(lo), Some(hi), None) => format!("{} … {}", pct(Some(lo)), pct(Some(hi))),
                                _ => "—".into(),
                            },
                            super::verdict::p_value(v.p_value),
                            super::verdict::evidence(v),
                        ]
                    })
                    .collect(),
                empty: "no metric both experiments logged".into(),
                more: None,
            },
        });
    }
    if !r.goodput.is_empty() {
        out.push(Section {
            id: "goodput",
            title: "Goodput".into(),
            body: Body::Table {
                header: vec!["experiment", "goodput", "held chip-s", "where the rest went"],
                rows: r
                    .goodput
                    .iter()
                    .take(top)
                    .map(|run| {
                        let g = &run.goodput;
                        vec![
                            run.experiment.to_string(),
                            g.goodput_percent.map_or("—".into(), super::numbers::percent),
                            num(g.held_chip_seconds),
                            g.headline(),
                        ]
                    })
                    .collect(),
                empty: String::new(),
                more: (r.goodput.len() > top).then(|| format!("{} more", r.goodput.len() - top)),
            },
        });
    }
    out
}

/// A ranking row's verdict against the baseline: `baseline`, `re-run of baseline`, or the verdict with its
/// runs a side (`improved, 3 vs 2 runs`; an inconclusive one with the runs a side that would decide it); `—`
/// without one.
pub fn row_verdict(row: &crate::contract::GoalRow) -> String {
    if row.baseline {
        return "baseline".into();
    }
    if row.baseline_rerun {
        return "re-run of baseline".into();
    }
    match &row.verdict {
        None => "—".into(),
        Some(v) => {
            let mut out = match v.runs {
                Some(runs) => format!("{}, {} vs {} runs", v.verdict.as_str(), runs.a, runs.b),
                None => v.verdict.as_str().to_string(),
            };
            if let Some(n) = v.repeats_needed {
                out.push_str(&format!(" (~{n} a side would decide)"));
            }
            out
        }
    }
}

fn notes_section(r: &GoalReport) -> Option<Section> {
    (!r.notes.is_empty()).then(|| Section { id: "notes", title: "Notes".into(), body: Body::List(r.notes.clone()) })
}

/// Terminal tables.
pub fn render_table(r: &GoalReport, top: usize) -> String {
    let mut out = format!("Goal report: {} — {}\n", r.goal.id, r.goal.title);
    let write = |out: &mut String, s: &Section| {
        out.push('\n');
        out.push_str(&s.title);
        out.push('\n');
        out.push_str(&"─".repeat(s.title.chars().count()));
        out.push('\n');
        match &s.body {
            Body::Pairs(pairs) => {
                let width = pairs.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0);
                for (k, v) in pairs {
                    out.push_str(&format!("{k:<width$}  {v}\n"));
                }
            }
            Body::Table { header, rows, empty, more } => {
                if rows.is_empty() {
                    out.push_str(&format!("({empty})\n"));
                } else {
                    let mut t = comfy_table::Table::new();
                    t.load_preset(UTF8_FULL_CONDENSED)
                        .set_content_arrangement(ContentArrangement::Dynamic)
                        .set_header(header.clone());
                    for row in rows {
                        t.add_row(row.iter().map(|c| clip(c, 72)));
                    }
                    out.push_str(&t.to_string());
                    out.push('\n');
                }
                if let Some(more) = more {
                    out.push_str(&format!("… {more}\n"));
                }
            }
            Body::List(items) => {
                for item in items {
                    out.push_str(&format!("- {item}\n"));
                }
            }
        }
    };
    for s in sections(r, top) {
        write(&mut out, &s);
    }
    if let Some(c) = &r.profile {
        // The comparison's tables carry their own title.
        out.push('\n');
        out.push_str(compare_table::render(c, top).trim_end());
        out.push('\n');
    }
    if let Some(s) = notes_section(r) {
        write(&mut out, &s);
    }
    out
}

/// Markdown: `# Goal report: <title>`, then one `##` section each.
pub fn render_md(r: &GoalReport, top: usize) -> String {
    let mut out = format!("# Goal report: {}\n", md_text(&r.goal.title));
    let write = |out: &mut String, s: &Section| {
        out.push_str(&format!("\n## {}\n\n", md_text(&s.title)));
        match &s.body {
            Body::Pairs(pairs) => {
                for (k, v) in pairs {
                    out.push_str(&format!("- **{k}:** {}\n", md_text(v)));
                }
            }
            Body::Table { header, rows, empty, more } => {
                if rows.is_empty() {
                    out.push_str(&format!("_{}_\n", md_text(empty)));
                } else {
                    out.push_str(&format!("| {} |\n", header.join(" | ")));
                    out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
                    for row in rows {
                        let cells: Vec<String> = row.iter().map(|c| md_text(c)).collect();
                        out.push_str(&format!("| {} |\n", cells.join(" | ")));
                    }
                }
                if let Some(more) = more {
                    out.push_str(&format!("\n_… {}_\n", md_text(more)));
                }
            }
            Body::List(items) => {
                for item in items {
                    out.push_str(&format!("- {}\n", md_text(item)));
                }
            }
        }
    };
    for s in sections(r, top) {
        write(&mut out, &s);
    }
    if let Some(c) = &r.profile {
        out.push('\n');
        out.push_str(compare_md::render(c, top, 2).trim_end());
        out.push('\n');
    }
    if let Some(s) = notes_section(r) {
        write(&mut out, &s);
    }
    out
}

/// A self-contained HTML page: the report's sections (progress as cards), then the profile comparison's.
pub fn render_html(r: &GoalReport, top: usize) -> String {
    let section = |s: &Section| {
        let mut out = format!("<section class=\"goal-report\">\n<h2>{}</h2>\n", escape(&s.title));
        match &s.body {
            _ if s.id == "progress" => out.push_str(&progress_cards(r)),
            Body::Pairs(pairs) => {
                out.push_str("<div class=\"table-wrap\"><table class=\"pairs\">\n");
                for (k, v) in pairs {
                    out.push_str(&format!("<tr><th>{}</th><td>{}</td></tr>\n", escape(k), escape(v)));
                }
                out.push_str("</table></div>\n");
            }
            Body::Table { header, rows, empty, more } => {
                if rows.is_empty() {
                    out.push_str(&format!("<p class=\"note\">{}</p>\n", escape(empty)));
                } else {
                    out.push_str(&table(header, rows));
                }
                if let Some(more) = more {
                    out.push_str(&format!("<p class=\"note\">… {}</p>\n", escape(more)));
                }
            }
            Body::List(items) => {
                out.push_str("<ul class=\"notes\">\n");
                for item in items {
                    out.push_str(&format!("<li>{}</li>\n", escape(item)));
                }
                out.push_str("</ul>\n");
            }
        }
        out.push_str("</section>\n");
        out
    };
    let mut parts: Vec<String> = sections(r, top).iter().map(section).collect();
    if let Some(c) = &r.profile {
        parts.push(compare_html::render_section(c, top));
    }
    if let Some(s) = notes_section(r) {
        parts.push(section(&s));
    }
    html::render_page(&format!("Goal report: {}", r.goal.title), &parts)
}

/// The progress section of the HTML page: best value, change against the baseline, target and gap closed.
fn progress_cards(r: &GoalReport) -> String {
    let p = &r.progress;
    let card = |class: &str, label: &str, value: String, sub: String| {
        format!(
            "<div class=\"card {class}\"><div class=\"label\">{}</div><div class=\"value\">{}</div><div class=\"sub\">{sub}</div></div>\n",
            escape(label),
            escape(&value)
        )
    };
    // Better or worse than the baseline, in the goal's direction.
    let moved = match (p.best_value, p.baseline_value) {
        (Some(v), Some(b)) if v == b => "same",
        (Some(v), Some(b)) if (v < b) == (p.direction == Direction::Minimize) => "good",
        (Some(_), Some(_)) => "bad",
        _ => "same",
    };
    let mut out = String::from("<div class=\"cards\">\n");
    let best =
        r.best.as_ref().map_or("no completed experiment".into(), |b| escape(&format!("{} · {}", b.experiment, b.name)));
    out.push_str(&card(moved, &format!("best {}", p.metric), p.best_value.map_or("—".into(), num), best));
    let baseline = match (r.baseline, p.baseline_value) {
        (Some(id), Some(v)) => escape(&format!("baseline {id}: {}", num(v))),
        (Some(id), None) => escape(&format!("baseline {id}: no value")),
        _ => "no baseline".into(),
    };
    out.push_str(&card(moved, "vs baseline", pct(p.delta_vs_baseline), baseline));
    let (class, met) = match p.meets_target {
        Some(true) => ("good", "met"),
        Some(false) => ("unsure", "not met yet"),
        None => ("same", "no target or no best"),
    };
    let gap = p.gap_closed.map_or(String::new(), |g| {
        format!(
            "<br>gap closed {:.1}% <meter min=\"0\" max=\"1\" value=\"{:.4}\">{:.1}%</meter>",
            g * 100.0,
            g.clamp(0.0, 1.0),
            g * 100.0
        )
    });
    out.push_str(&card(
        class,
        &format!("target ({})", p.direction),
        p.target.map_or("—".into(), num),
        format!("{met}{gap}"),
    ));
    out.push_str("</div>\n");
    out
}

/// A value as the report writes it: the shared formatter's [`num`](super::numbers::num) (at most 4 significant
/// figures, SI prefixes from 10 000).
pub use super::numbers::num;

/// At most `max` characters: a long value (a whole command line) ends in `…` on a terminal.
fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn pct(x: Option<f64>) -> String {
    super::numbers::relative_percent(x)
}

fn yes_no(x: Option<bool>) -> String {
    x.map_or("—".into(), |m| if m { "yes".into() } else { "no".into() })
}

/// Text safe in Markdown prose and table cells (no accidental emphasis, tags, links or cell breaks); an
/// underscore inside a word (`batch_size`) cannot start emphasis and stays as it is. Backticks are kept: the
/// notes quote names and commands as code.
fn md_text(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let word = |i: Option<usize>| i.and_then(|i| chars.get(i)).is_some_and(|c| c.is_alphanumeric());
    let mut out = String::with_capacity(s.len());
    for (i, &ch) in chars.iter().enumerate() {
        let intraword = ch == '_' && word(i.checked_sub(1)) && word(Some(i + 1));
        if matches!(ch, '\\' | '*' | '[' | ']' | '<' | '>' | '|') || (ch == '_' && !intraword) {
            out.push('\\');
        }
        out.push(if ch == '\n' { ' ' } else { ch });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_four_significant_figures() {
        assert_eq!(num(0.0128831), "0.01288");
        assert_eq!(num(39741.907), "39.74 k");
        assert_eq!(num(2.0), "2");
        assert_eq!(num(0.03581), "0.03581");
        assert_eq!(num(123456.0), "123.5 k");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(1.5e-7), "1.5e-7");
    }

    #[test]
    fn markdown_is_escaped() {
        assert_eq!(md_text("x|y_z _w_"), "x\\|y_z \\_w\\_");
    }
}
