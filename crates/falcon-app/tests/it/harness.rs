//! An `App` on the embedded defaults in a temporary folder: SQLite under it, artifacts in a memory store of its own.

use falcon_app::App;
use falcon_core::config::{Config, ConfigLayer, MachineFacts};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The application and the folder it lives in (removed when dropped).
pub struct Harness {
    pub app: App,
    pub dir: tempfile::TempDir,
}

/// A new application with its database created (as `falcon init` would). Its artifacts are a named memory store
/// (`memory://NAME`: EXP and analysis, each opening the store, see the same one; no other test does). The folder
/// is open to other users, as a user's project folder is: jobs run as users of their own and enter their job
/// folders under it.
pub async fn app() -> Harness {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = tempfile::tempdir().unwrap();
    enterable(dir.path());
    let store = format!("memory://harness-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let toml = format!("data_dir = \".falcon\"\nartifacts = \"{store}\"\n");
    let layer = ConfigLayer::from_toml(&toml, "falcon.toml").unwrap().rebase(dir.path());
    let config: Config = Config::resolve([layer], MachineFacts { cores: 2 });
    let app = App::new(config);
    app.connection().await.expect("the database is created");
    Harness { app, dir }
}

/// Opens `dir` to other users (read and enter), as a folder a user made would be.
pub fn enterable(dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir).unwrap().permissions().mode();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o755)).unwrap();
}

/// The error as the user reads it: the error and its causes (what the CLI's `error: …` shows, `{err:#}`).
pub fn message(e: &falcon_app::AppError) -> String {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    text
}

/// `exp submit SPEC --wait` in process: the spec text parsed as the CLI parses a file named `origin`, submitted,
/// the embedded worker run until the experiment ends and the analyses it calls for; it must have completed (the CLI
/// exits 1 otherwise). Its detail.
pub async fn submit_and_wait(app: &App, text: &str, origin: &str) -> falcon_app::experiments::ExperimentDetail {
    let spec = falcon_core::spec::parse_spec(text, origin).unwrap();
    let (detail, _) = app.submit_experiment(&spec, true, None, |_| {}).await.unwrap();
    let status = detail.view.record.status;
    assert_eq!(status, falcon_core::status::ExperimentStatus::Completed, "{origin}: {}", as_printed(&detail));
    detail
}

/// A value as `--json` prints it, read back: through its text, as a JSON reader gets it (`serde_json::to_value`
/// refuses a report's `steps.steps[].start_ps`, picoseconds since the epoch beyond 64 bits, that the text holds).
pub fn as_printed<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::from_str(&serde_json::to_string(value).unwrap()).unwrap()
}
