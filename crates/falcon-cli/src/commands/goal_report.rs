//! `falcon goal report G [--format table|md|html|json] [-o FILE] [--top N]`.
//!
//! The report is composed here, in the interface layer, because it is the only layer that sees both EXP
//! (goals, experiments, config diffs, metric verdicts) and the analysis module (profile comparisons). It is
//! built once as a [`GoalReport`] and rendered as terminal tables, Markdown, a self-contained HTML page or
//! JSON.
//!
//! # JSON shape (`--json` or `--format json`; stable)
//!
//! ```text
//! {
//!   "goal":     { …the goal record, as `goal show --json`… },
//!   "progress": {
//!     "metric": "step_time_s", "direction": "minimize",
//!     "baseline_value": 0.0359 | null,   // median of the baseline experiment's metric
//!     "best_value": 0.0129 | null,       // median of the best experiment's metric
//!     "target": 0.01 | null,
//!     "delta_vs_baseline": -0.64 | null, // (best − baseline) / baseline
//!     "gap_closed": 0.89 | null,         // (best − baseline) / (target − baseline): 1 = target reached,
//!                                        // above 1 = beyond it, below 0 = worse than the baseline
//!     "meets_target": false | null
//!   },
//!   "best":     { "rank", "experiment", "name", "value", "delta_vs_baseline", "meets_target" } | null,
//!   "baseline": "e-1" | null,
//!   "ranking":  [ …every completed experiment of the goal with the metric, best first (same rows as `best`)… ],
//!   "config_diff": [ { "path", "kind", "a", "b", "group" } … ],   // EXP's diff, baseline (a) → best (b)
//!   "verdicts": [ { "metric", "direction", "verdict", "a", "b", "delta_rel", "ci_low_rel", "ci_high_rel",
//!                   "p_value" } … ],   // EXP verdicts baseline (a) → best (b): the goal's metric first, then
//!                                      // each of step_time_s, tokens_per_s, tflops_per_device, mfu, loss,
//!                                      // peak_hbm_bytes that both experiments logged
//!   "profile":  { …`profile compare baseline best --json`… } | null,
//!   "notes":    [ "why something above is empty or null" … ]
//! }
//! ```
//!
//! Missing pieces are never failures: a goal without a baseline, without a completed experiment with the
//! metric, whose best experiment is the baseline, or whose experiments have no profile still gets a report,
//! with `notes` saying what is missing. Only an unknown goal fails (exit 3).

use crate::cli::{GlobalArgs, GoalReportArgs, ReportFormat};
use crate::output::{print_stdout, CliFailure};
use crate::report::{compare_html, compare_md, compare_table};
use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement};
use falcon_analysis::compare::{CompareOptions, ProfileComparison};
use falcon_analysis::error::AnalysisError;
use falcon_analysis::service::Analysis;
use falcon_core::ids::{ExperimentId, GoalId};
use falcon_core::stats::{Direction as StatsDirection, Verdict};
use falcon_core::status::Direction;
use falcon_core::ErrorKind;
use falcon_exp::diff::Change;
use falcon_exp::goals::GoalRow;
use falcon_exp::{Exp, GoalRecord};
use serde::Serialize;
use std::path::Path;
use std::process::ExitCode;

/// The standard metrics compared between the baseline and the best experiment, besides the goal's own.
const STANDARD_METRICS: &[&str] = &["step_time_s", "tokens_per_s", "tflops_per_device", "mfu", "loss", "peak_hbm_bytes"];

/// Everything `goal report` says about a goal (see the module documentation for the JSON shape).
#[derive(Debug, Clone, Serialize)]
pub struct GoalReport {
    /// The goal.
    pub goal: GoalRecord,
    /// Target and how far the best experiment got towards it.
    pub progress: Progress,
    /// The best completed experiment of the goal on its metric.
    pub best: Option<GoalRow>,
    /// The goal's baseline experiment.
    pub baseline: Option<ExperimentId>,
    /// Every completed experiment of the goal with the metric, best first.
    pub ranking: Vec<GoalRow>,
    /// The spec changes from the baseline to the best experiment.
    pub config_diff: Vec<Change>,
    /// Metric verdicts, baseline (A) against best (B): the goal's metric first, then the standard ones.
    pub verdicts: Vec<Verdict>,
    /// The profile comparison, baseline (A) against best (B).
    pub profile: Option<ProfileComparison>,
    /// Why something is missing.
    pub notes: Vec<String>,
}

/// A goal's target and progress.
#[derive(Debug, Clone, Serialize)]
pub struct Progress {
    /// The goal's metric.
    pub metric: String,
    /// Which way it should move.
    pub direction: Direction,
    /// The baseline's value.
    pub baseline_value: Option<f64>,
    /// The best experiment's value.
    pub best_value: Option<f64>,
    /// The goal's target.
    pub target: Option<f64>,
    /// `(best − baseline) / baseline`.
    pub delta_vs_baseline: Option<f64>,
    /// `(best − baseline) / (target − baseline)`: the fraction of the baseline→target gap closed.
    pub gap_closed: Option<f64>,
    /// Whether the best reaches the target.
    pub meets_target: Option<bool>,
}

pub async fn run(global: &GlobalArgs, exp: &Exp, args: &GoalReportArgs) -> anyhow::Result<ExitCode> {
    let id: GoalId = args.id.parse().map_err(|e: falcon_core::ids::IdParseError| CliFailure::new(ErrorKind::Usage, e.to_string()))?;
    let report = build(exp, id, args.top).await?;
    let format = args.format.unwrap_or(if global.json { ReportFormat::Json } else { ReportFormat::Table });
    let text = match format {
        ReportFormat::Json => serde_json::to_string_pretty(&report)?,
        ReportFormat::Table => render_table(&report, args.top),
        ReportFormat::Md => render_md(&report, args.top),
        ReportFormat::Html => render_html(&report, args.top),
    };
    match &args.output {
        Some(path) => {
            write_atomically(path, text.trim_end())?;
            eprintln!("wrote {}", path.display());
        }
        None => print_stdout(text.trim_end())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Gathers the report: EXP for the goal, its ranking, diff and verdicts; analysis for the profiles.
pub async fn build(exp: &Exp, id: GoalId, top: usize) -> anyhow::Result<GoalReport> {
    let cmp = exp.compare_goal(id).await?;
    let goal = cmp.goal;
    let metric = goal.metric.clone();
    let best = cmp.rows.first().cloned();
    let baseline = goal.baseline;
    let mut notes = Vec::new();
    if baseline.is_none() {
        notes.push("the goal has no baseline experiment (`goal create --baseline`): no config diff, verdicts or profile comparison".into());
    }
    if best.is_none() {
        notes.push(format!("no completed experiment of this goal has a `{metric}` value yet"));
    }
    if let (Some(b), None) = (baseline, cmp.baseline_value) {
        notes.push(format!("the baseline {b} has no `{metric}` value"));
    }
    let progress = progress(&goal, cmp.baseline_value, best.as_ref());

    let (mut config_diff, mut verdicts, mut profile) = (Vec::new(), Vec::new(), None);
    match (baseline, &best) {
        (Some(b), Some(row)) if b == row.experiment => {
            notes.push(format!("the best experiment is the baseline {b}: nothing to diff or compare"));
        }
        (Some(b), Some(row)) => {
            match exp.diff(b, row.experiment).await {
                Ok(changes) => config_diff = changes,
                Err(e) => notes.push(format!("config diff {b} → {}: {e}", row.experiment)),
            }
            verdicts = metric_verdicts(exp, &goal, b, row.experiment, &mut notes).await;
            profile = profile_comparison(exp, b, row.experiment, top, &mut notes).await;
        }
        _ => {}
    }
    Ok(GoalReport { goal, progress, best, baseline, ranking: cmp.rows, config_diff, verdicts, profile, notes })
}

fn progress(goal: &GoalRecord, baseline_value: Option<f64>, best: Option<&GoalRow>) -> Progress {
    let best_value = best.map(|r| r.value);
    let gap_closed = match (baseline_value, goal.target, best_value) {
        (Some(b), Some(t), Some(v)) if t != b => Some((v - b) / (t - b)),
        _ => None,
    };
    Progress {
        metric: goal.metric.clone(),
        direction: goal.direction,
        baseline_value,
        best_value,
        target: goal.target,
        delta_vs_baseline: best.and_then(|r| r.delta_vs_baseline),
        gap_closed,
        meets_target: best.and_then(|r| r.meets_target),
    }
}

/// EXP verdicts for the goal's metric (in the goal's direction) and every standard metric both logged.
async fn metric_verdicts(exp: &Exp, goal: &GoalRecord, a: ExperimentId, b: ExperimentId, notes: &mut Vec<String>) -> Vec<Verdict> {
    let logged = |id: ExperimentId| async move { exp.show(id).await.map(|v| v.metrics.into_keys().collect::<std::collections::BTreeSet<String>>()) };
    let (in_a, in_b) = match (logged(a).await, logged(b).await) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) | (_, Err(e)) => {
            notes.push(format!("metric verdicts: {e}"));
            return Vec::new();
        }
    };
    let goal_direction = match goal.direction {
        Direction::Maximize => StatsDirection::HigherIsBetter,
        Direction::Minimize => StatsDirection::LowerIsBetter,
    };
    let mut verdicts = Vec::new();
    if in_a.contains(&goal.metric) && in_b.contains(&goal.metric) {
        match exp.compare(a, b, &goal.metric, Some(goal_direction), None).await {
            Ok(v) => verdicts.push(v),
            Err(e) => notes.push(format!("verdict on `{}`: {e}", goal.metric)),
        }
    } else {
        notes.push(format!(
            "no verdict on `{}`: it is not a logged metric of both experiments (profile metrics are compared in the profile section)",
            goal.metric
        ));
    }
    for metric in STANDARD_METRICS.iter().filter(|m| **m != goal.metric && in_a.contains(**m) && in_b.contains(**m)) {
        match exp.compare(a, b, metric, None, None).await {
            Ok(v) => verdicts.push(v),
            Err(e) => notes.push(format!("verdict on `{metric}`: {e}")),
        }
    }
    verdicts
}

/// The profile comparison baseline → best; a missing profile or a failed comparison is a note.
async fn profile_comparison(exp: &Exp, a: ExperimentId, b: ExperimentId, top: usize, notes: &mut Vec<String>) -> Option<ProfileComparison> {
    let analysis = match Analysis::connect(exp.config()).await {
        Ok(analysis) => analysis,
        Err(e) => {
            notes.push(format!("profile comparison: {e}"));
            return None;
        }
    };
    let options = CompareOptions { top, ..Default::default() };
    let result = analysis.compare(&a.to_string(), &b.to_string(), None, &options).await;
    analysis.close().await;
    match result {
        Ok(c) => Some(c),
        Err(AnalysisError::NotFound(why)) => {
            notes.push(format!("no profile comparison: {why}"));
            None
        }
        Err(e) => {
            notes.push(format!("profile comparison failed: {e}"));
            None
        }
    }
}

/// Writes `text` (plus a final newline) to a temporary file next to `path`, then renames it over `path`.
fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    let fail = |e: std::io::Error| {
        let kind = if e.kind() == std::io::ErrorKind::NotFound { ErrorKind::NotFound } else { ErrorKind::Failure };
        CliFailure::new(kind, format!("writing {}: {e}", path.display()))
    };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| CliFailure::new(ErrorKind::Usage, format!("-o {}: not a file name", path.display())))?;
    let temp = dir.join(format!(".{}.tmp-{}", name.to_string_lossy(), std::process::id()));
    let written = std::fs::write(&temp, format!("{text}\n")).and_then(|()| std::fs::rename(&temp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(fail(e).into());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------
// Rendering. The report's own sections are built once as neutral blocks and written out by each format; the
// profile comparison is rendered by the shared `report::compare_*` renderers.

/// One section of the report.
struct Section {
    /// What it is (`goal`, `progress`, `ranking`, `config_diff`, `verdicts`, `notes`).
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
        ("target", g.target.map_or("—".into(), |t| t.to_string())),
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
            ("target", p.target.map_or("—".into(), |t| t.to_string())),
            ("change vs baseline", pct(p.delta_vs_baseline)),
            ("gap closed", p.gap_closed.map_or("—".into(), |g| format!("{:.1}%", g * 100.0))),
            ("meets target", yes_no(p.meets_target)),
        ]),
    });

    let shown = r.ranking.len().min(top.max(1));
    out.push(Section {
        id: "ranking",
        title: "Ranking".into(),
        body: Body::Table {
            header: vec!["rank", "experiment", "name", "value", "vs baseline", "meets target"],
            rows: r.ranking[..shown]
                .iter()
                .map(|row| {
                    vec![
                        row.rank.to_string(),
                        row.experiment.to_string(),
                        row.name.clone(),
                        num(row.value),
                        pct(row.delta_vs_baseline),
                        yes_no(row.meets_target),
                    ]
                })
                .collect(),
            empty: format!("no completed experiment with `{}`", g.metric),
            more: (r.ranking.len() > shown).then(|| format!("{} more (--top, or --json for all)", r.ranking.len() - shown)),
        },
    });

    if let (Some(base), Some(best)) = (r.baseline, r.best.as_ref().filter(|b| Some(b.experiment) != r.baseline)) {
        out.push(Section {
            id: "config_diff",
            title: format!("Config diff: baseline {base} → best {}", best.experiment),
            body: Body::Table {
                header: vec!["path", "group", "baseline", "best"],
                rows: r
                    .config_diff
                    .iter()
                    .map(|c| vec![c.path.clone(), c.group.to_string(), falcon_exp::diff::show(c.a.as_ref()), falcon_exp::diff::show(c.b.as_ref())])
                    .collect(),
                empty: "no differences".into(),
                more: None,
            },
        });
        out.push(Section {
            id: "verdicts",
            title: format!("Metric verdicts: baseline {base} → best {}", best.experiment),
            body: Body::Table {
                header: vec!["metric", "verdict", "direction", "baseline median", "best median", "change", "95% CI", "p"],
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
                            match (v.ci_low_rel, v.ci_high_rel) {
                                (Some(lo), Some(hi)) => format!("{} … {}", pct(Some(lo)), pct(Some(hi))),
                                _ => "—".into(),
                            },
                            v.p_value.map_or("—".into(), |p| if p < 1e-3 { format!("{p:.2e}") } else { format!("{p:.4}") }),
                        ]
                    })
                    .collect(),
                empty: "no metric both experiments logged".into(),
                more: None,
            },
        });
    }
    out
}

fn notes_section(r: &GoalReport) -> Option<Section> {
    (!r.notes.is_empty()).then(|| Section { id: "notes", title: "Notes".into(), body: Body::List(r.notes.clone()) })
}

/// Terminal tables.
fn render_table(r: &GoalReport, top: usize) -> String {
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
                    t.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Dynamic).set_header(header.clone());
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
fn render_md(r: &GoalReport, top: usize) -> String {
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
fn render_html(r: &GoalReport, top: usize) -> String {
    use compare_html::{escape, table};
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
    compare_html::render_page(&format!("Goal report: {}", r.goal.title), &parts)
}

/// The progress section of the HTML page: best value, change against the baseline, target and gap closed.
fn progress_cards(r: &GoalReport) -> String {
    use compare_html::escape;
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
    let best = r.best.as_ref().map_or("no completed experiment".into(), |b| escape(&format!("{} · {}", b.experiment, b.name)));
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
    out.push_str(&card(class, &format!("target ({})", p.direction), p.target.map_or("—".into(), num), format!("{met}{gap}")));
    out.push_str("</div>\n");
    out
}

/// A value with about six significant digits.
fn num(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    if x == 0.0 {
        return "0".into();
    }
    let magnitude = x.abs().log10().floor() as i32;
    if !(-4..15).contains(&magnitude) {
        return format!("{x:.5e}");
    }
    let decimals = (5 - magnitude).clamp(0, 9) as usize;
    let text = format!("{x:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

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
    x.map_or("—".into(), |d| format!("{:+.2}%", d * 100.0))
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
    fn numbers_keep_six_significant_digits() {
        assert_eq!(num(0.0128831), "0.0128831");
        assert_eq!(num(39741.907), "39741.9");
        assert_eq!(num(2.0), "2");
        assert_eq!(num(0.03581), "0.03581");
        assert_eq!(num(123456.0), "123456");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(1.5e-7), "1.50000e-7");
    }

    #[test]
    fn markdown_is_escaped() {
        assert_eq!(md_text("x|y_z _w_"), "x\\|y_z \\_w\\_");
    }
}
