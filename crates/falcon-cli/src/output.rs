//! Printing: JSON on stdout, human text on stdout, errors on stderr (or as a JSON envelope on stdout), and the
//! exit code each failure maps to (docs/DESIGN.md §6).

use falcon_app::contract::ErrorBody;
use falcon_core::ErrorKind;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// A failure the CLI itself raises (bad config file, missing file, existing file): the application layer's
/// error type, so kinds and hints are classified in one place.
pub use falcon_app::AppError as CliFailure;

/// Prints a value as pretty JSON on stdout: the one document of a `--json` command.
pub fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    print_stdout(&text)
}

/// Prints a JSON document kept as bytes (a kept report) as pretty JSON on stdout, its keys in their order.
pub fn print_json_bytes(bytes: &[u8]) -> anyhow::Result<()> {
    let mut text = Vec::with_capacity(bytes.len() * 2);
    let mut from = serde_json::Deserializer::from_slice(bytes);
    serde_transcode::transcode(&mut from, &mut serde_json::Serializer::pretty(&mut text))
        .map_err(|e| anyhow::anyhow!("a kept report is not valid JSON ({e}); delete it to have it computed again"))?;
    print_stdout(&String::from_utf8(text)?)
}

/// Prints a value as one compact line of JSON on stdout: one record of a JSON Lines stream.
pub fn print_json_line<T: Serialize>(value: &T) -> anyhow::Result<()> {
    let text = serde_json::to_string(value)?;
    print_stdout(&text)
}

/// A list as the one JSON shape every list command prints: `{"items": [...], "next_cursor": …}`.
pub fn print_page<T: Serialize>(page: &falcon_app::page::Page<T>) -> anyhow::Result<()> {
    print_json(page)
}

/// The format a report command renders in: `--format`, else JSON with `--json`, else tables. `--json` with
/// another `--format` is a usage error (exit 2): stdout holds JSON with `--json`, always.
pub fn report_format(
    global: &crate::cli::GlobalArgs,
    format: Option<crate::cli::ReportFormat>,
) -> anyhow::Result<crate::cli::ReportFormat> {
    use crate::cli::ReportFormat;
    match format {
        Some(f) if global.json && f != ReportFormat::Json => Err(CliFailure::new(
            ErrorKind::Usage,
            format!("--json prints JSON; it cannot be combined with --format {}", format!("{f:?}").to_lowercase()),
        )
        .with_hint("drop --json, or use --format json (the same as --json)")
        .into()),
        Some(f) => Ok(f),
        None if global.json => Ok(ReportFormat::Json),
        None => Ok(ReportFormat::Table),
    }
}

/// Puts a rendered report where it goes: atomically into `-o FILE` (then `wrote FILE` on stderr, and with
/// `--json` the object `{"written": FILE, "bytes": N, "format": F}` on stdout), else on stdout.
pub fn emit_report(
    global: &crate::cli::GlobalArgs,
    output: Option<&Path>,
    force: bool,
    text: &str,
    format: crate::cli::ReportFormat,
) -> anyhow::Result<()> {
    match output {
        Some(path) => {
            let body = format!("{}\n", text.trim_end_matches('\n'));
            write_atomically(path, &body, force)?;
            eprintln!("wrote {}", path.display());
            if global.json {
                let format = format!("{format:?}").to_lowercase();
                print_json(&serde_json::json!({
                    "written": path.display().to_string(), "bytes": body.len(), "format": format
                }))?;
            }
            Ok(())
        }
        None => print_stdout(text.trim_end_matches('\n')),
    }
}

/// Prints text on stdout; a closed pipe (`falcon … | head`) is not an error.
pub fn print_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}") {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// Reports an error and returns the exit code for its kind.
pub fn report_error(err: &anyhow::Error, json: bool) -> ExitCode {
    let (kind, hint) = classify(err);
    let message = format!("{err:#}");
    if json {
        let envelope = ErrorBody::of_kind(kind, message.clone(), hint.clone()).to_value();
        let _ = print_stdout(&serde_json::to_string_pretty(&envelope).unwrap_or_default());
    } else {
        let mut err_out = std::io::stderr().lock();
        let _ = writeln!(err_out, "error: {message}");
        if let Some(hint) = hint {
            let _ = writeln!(err_out, "  hint: {hint}");
        }
    }
    ExitCode::from(kind.exit_code() as u8)
}

/// Reports a command-line parsing problem: help and version print normally; usage errors exit 2.
pub fn clap_error(e: clap::Error, json: bool) -> ExitCode {
    use clap::error::ErrorKind as Clap;
    if e.kind() == Clap::DisplayVersion && json {
        let _ = print_json(&serde_json::json!({ "name": "falcon", "version": env!("CARGO_PKG_VERSION") }));
        return ExitCode::SUCCESS;
    }
    if matches!(e.kind(), Clap::DisplayHelp | Clap::DisplayVersion | Clap::DisplayHelpOnMissingArgumentOrSubcommand) {
        let _ = e.print();
        return if e.kind() == Clap::DisplayHelpOnMissingArgumentOrSubcommand {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        };
    }
    if json {
        let message = e.kind().as_str().map(str::to_string).unwrap_or_else(|| e.to_string());
        let detail = e.to_string();
        let first_line = detail.lines().next().unwrap_or(&message).trim_start_matches("error: ").to_string();
        let envelope =
            ErrorBody::of_kind(ErrorKind::Usage, first_line, Some("run `falcon --help`".to_string())).to_value();
        let _ = print_stdout(&serde_json::to_string_pretty(&envelope).unwrap_or_default());
    } else {
        let _ = e.print();
    }
    ExitCode::from(ErrorKind::Usage.exit_code() as u8)
}

fn classify(err: &anyhow::Error) -> (ErrorKind, Option<String>) {
    for cause in err.chain() {
        if let Some(e) = cause.downcast_ref::<falcon_app::AppError>() {
            return (e.kind(), e.hint());
        }
        if let Some(e) = cause.downcast_ref::<falcon_core::spec::SpecError>() {
            return (e.kind(), e.hint.clone());
        }
    }
    (ErrorKind::Failure, None)
}

// --- report files (`-o FILE`) ---

/// The directory `path` goes into (the current one for a bare name).
fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Fails early, before the work, when the output cannot be written: no such directory, something there
/// that is not a regular file (never replaced), or a file and no `--force`.
pub fn check_output(path: &Path, force: bool) -> anyhow::Result<()> {
    let dir = parent_dir(path);
    if !dir.is_dir() {
        return Err(CliFailure::new(
            ErrorKind::NotFound,
            format!("cannot write {}: directory {} does not exist", path.display(), dir.display()),
        )
        .with_hint("create the directory first, or pick another --output")
        .into());
    }
    Ok(falcon_app::files::check_output_target(path, force)?)
}

/// Writes `text` to a temporary file beside `path`, then renames it over `path`: readers see the old file
/// or the whole new one, never a part.
pub fn write_atomically(path: &Path, text: &str, force: bool) -> anyhow::Result<()> {
    check_output(path, force)?;
    Ok(falcon_app::files::write_atomically(path, text)?)
}
