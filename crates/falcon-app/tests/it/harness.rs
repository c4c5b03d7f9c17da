//! An `App` on the embedded defaults in a temporary folder: SQLite under it, artifacts in memory.

use falcon_app::App;
use falcon_core::config::{Config, ConfigLayer, MachineFacts};

/// The application and the folder it lives in (removed when dropped).
pub struct Harness {
    pub app: App,
    _dir: tempfile::TempDir,
}

/// A new application with its database created (as `falcon init` would).
pub async fn app() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let layer = ConfigLayer::from_toml("data_dir = \".falcon\"\nartifacts = \"memory://\"\n", "falcon.toml")
        .unwrap()
        .rebase(dir.path());
    let config: Config = Config::resolve([layer], MachineFacts { cores: 2 });
    let app = App::new(config);
    app.connection().await.expect("the database is created");
    Harness { app, _dir: dir }
}
