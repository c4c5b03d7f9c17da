//! `falcon profile compare A B`: the A/B comparison of two captures (A is the baseline), rendered as
//! terminal tables, Markdown, an HTML page or JSON, on stdout or atomically into a file. When both inputs
//! are experiments, their config diff goes with it (`config_diff` in JSON). The use case is
//! [`App::compare_profiles`], the document [`falcon_app::render::profile_compare`]; this module parses,
//! shows a spinner and prints.

use crate::cli::{GlobalArgs, ProfileCompareArgs, ReportFormat};
use crate::output::check_output;
use falcon_app::render::profile_compare;
use falcon_app::App;
use falcon_core::ErrorKind;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, app: &App, args: &ProfileCompareArgs) -> anyhow::Result<ExitCode> {
    let format = crate::output::report_format(global, args.format)?;
    if let Some(out) = &args.output {
        check_output(out, args.force)?;
    }
    let request = falcon_app::requests::ProfileCompareRequest {
        a: args.a.clone(),
        b: args.b.clone(),
        host: args.host.clone(),
        top: args.top,
    };
    let options = request.options()?;
    let spinner = (format != ReportFormat::Json && std::io::stderr().is_terminal())
        .then(|| Spinner::start(format!("comparing {} with {}", args.a, args.b)));
    let result = app.compare_profiles(&args.a, &args.b, args.host.as_deref(), &options).await;
    drop(spinner);
    let result = result?;
    let text = profile_compare::render(&result, format.into(), options.top)?;
    crate::output::emit_report(global, args.output.as_deref(), args.force, &text, format)?;
    let c = &result.comparison;
    if args.fail_on_regression && c.regressed() {
        eprintln!("regression: {}", profile_compare::regression_reason(c));
        return Ok(ExitCode::from(ErrorKind::Regression.exit_code() as u8));
    }
    Ok(ExitCode::SUCCESS)
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
