//! `falcon profile compare A B`: the A/B comparison of two captures (A is the baseline), rendered as
//! terminal tables, Markdown, an HTML page or JSON, on stdout or atomically into a file. When both inputs
//! are experiments, their config diff goes with it (`config_diff` in JSON).

use crate::cli::{GlobalArgs, ProfileCompareArgs, ReportFormat};
use crate::output::check_output;
use falcon_app::experiments::{show_value, Change};
use falcon_app::profiles::{CompareOptions, ProfileComparison};
use falcon_app::render::{compare_html, compare_md, compare_table, html};
use falcon_app::App;
use falcon_core::stats::VerdictKind;
use falcon_core::ErrorKind;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, app: &App, args: &ProfileCompareArgs) -> anyhow::Result<ExitCode> {
    let format = crate::output::report_format(global, args.format)?;
    if let Some(out) = &args.output {
        check_output(out, args.force)?;
    }
    let options = CompareOptions { top: args.top, ..Default::default() };
    let spinner = (format != ReportFormat::Json && std::io::stderr().is_terminal())
        .then(|| Spinner::start(format!("comparing {} with {}", args.a, args.b)));
    let result = app.compare_profiles(&args.a, &args.b, args.host.as_deref(), &options).await;
    drop(spinner);
    let result = result?;
    let c = result.comparison;
    let text = render(&c, format, args.top, result.config_diff.as_deref())?;
    crate::output::emit_report(global, args.output.as_deref(), args.force, &text, format)?;
    if args.fail_on_regression && c.regressed() {
        eprintln!("regression: {}", regression_reason(&c));
        return Ok(ExitCode::from(ErrorKind::Regression.exit_code() as u8));
    }
    Ok(ExitCode::SUCCESS)
}

fn render(
    c: &ProfileComparison,
    format: ReportFormat,
    top: usize,
    config_diff: Option<&[Change]>,
) -> anyhow::Result<String> {
    Ok(match format {
        ReportFormat::Json => {
            let mut value = serde_json::to_value(c)?;
            if let (Some(changes), Some(map)) = (config_diff, value.as_object_mut()) {
                map.insert("config_diff".to_string(), serde_json::to_value(changes)?);
            }
            serde_json::to_string_pretty(&value)? + "\n"
        }
        ReportFormat::Table => compare_table::render_with(c, top, config_diff),
        ReportFormat::Md => compare_md::render_with(c, top, 1, config_diff),
        ReportFormat::Html => {
            let title = format!("Profile comparison: {} → {}", c.a.input, c.b.input);
            let mut sections = Vec::new();
            if let Some(changes) = config_diff {
                sections.push(config_diff_html(changes));
            }
            sections.push(compare_html::render_section(c, top));
            html::render_page(&title, &sections)
        }
    })
}

/// The experiments' config diff as an HTML section.
fn config_diff_html(changes: &[Change]) -> String {
    let mut s = String::from("<section class=\"config-diff\">\n<h2>Config diff</h2>\n");
    if changes.is_empty() {
        s.push_str("<p>no differences</p>\n");
    } else {
        s.push_str("<table>\n<thead><tr><th>path</th><th>group</th><th>A</th><th>B</th></tr></thead>\n<tbody>\n");
        for ch in changes {
            s.push_str(&format!(
                "<tr><td><code>{}</code></td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td></tr>\n",
                html::escape(&ch.path),
                ch.group.as_str(),
                html::escape(&show_value(ch.a.as_ref())),
                html::escape(&show_value(ch.b.as_ref()))
            ));
        }
        s.push_str("</tbody>\n</table>\n");
    }
    s.push_str("</section>\n");
    s
}

/// Why `c.regressed()`: the verdict(s) that say so.
fn regression_reason(c: &ProfileComparison) -> String {
    let mut why = Vec::new();
    for v in std::iter::once(&c.step_time).chain(c.mfu.verdict.as_ref()) {
        if v.verdict == VerdictKind::Regressed {
            why.push(compare_table::verdict_line(v, false));
        }
    }
    why.join("; ")
}

/// A spinner on stderr (only started when stderr is a terminal); stops and clears its line when dropped.
struct Spinner {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Spinner {
    fn start(message: String) -> Spinner {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            let started = std::time::Instant::now();
            let mut i = 0usize;
            while !flag.load(Ordering::Relaxed) {
                let mut err = std::io::stderr().lock();
                let _ =
                    write!(err, "\r{} {message} … {:.0}s", FRAMES[i % FRAMES.len()], started.elapsed().as_secs_f64());
                let _ = err.flush();
                drop(err);
                i += 1;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        });
        Spinner { stop, thread: Some(thread) }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
