//! [`Ctx`]: what the use-case modules work with — the configuration (or how to load it) and EXP and analysis,
//! connected lazily on the first use case that needs each, so a command that only reads a local file never opens a
//! database, nor needs a valid configuration file. The façade (`crate::App`) holds one and hands it to the module
//! of each use case; a module never names the façade (as rust-analyzer's feature modules get the database, never
//! `Analysis`), so the façade depends on its modules and never the other way round.

use crate::Result;
use falcon_analysis::service::Analysis;
use falcon_core::config::Config;
use falcon_exp::Exp;
use tokio::sync::OnceCell;

/// The configuration plus lazily connected services.
pub(crate) struct Ctx {
    config: std::sync::OnceLock<Config>,
    load: Box<dyn Fn() -> Result<Config> + Send + Sync>,
    exp: OnceCell<Exp>,
    analysis: OnceCell<Analysis>,
    /// Heavy analyses allowed at once (a server's `--max-analyses`); unset: no limit.
    heavy: std::sync::OnceLock<std::sync::Arc<tokio::sync::Semaphore>>,
    /// Where submissions come from (the CLI: a local submitter and its folder); unset: a server, URLs only.
    origin: std::sync::OnceLock<falcon_exp::code::Origin>,
}

impl Ctx {
    /// An application over `config`; nothing is connected yet.
    pub(crate) fn new(config: Config) -> Ctx {
        let cx = Ctx::deferred(|| Err(crate::AppError::new(falcon_core::ErrorKind::Failure, "no configuration")));
        let _ = cx.config.set(config);
        cx
    }

    /// An application whose configuration is loaded (once) by `load` when a use case first needs it.
    pub(crate) fn deferred(load: impl Fn() -> Result<Config> + Send + Sync + 'static) -> Ctx {
        Ctx {
            config: std::sync::OnceLock::new(),
            load: Box::new(load),
            exp: OnceCell::new(),
            analysis: OnceCell::new(),
            heavy: std::sync::OnceLock::new(),
            origin: std::sync::OnceLock::new(),
        }
    }

    /// Submissions come from a user on this machine standing in `dir` (set once; later calls change nothing).
    pub(crate) fn submit_from(&self, dir: std::path::PathBuf) {
        let _ = self.origin.set(falcon_exp::code::Origin::local(dir));
    }

    /// Where submissions come from.
    pub(crate) fn origin(&self) -> falcon_exp::code::Origin {
        self.origin.get().cloned().unwrap_or_default()
    }

    /// The configuration it runs with (loaded now if it was deferred).
    pub(crate) fn config(&self) -> Result<&Config> {
        if let Some(c) = self.config.get() {
            return Ok(c);
        }
        let loaded = (self.load)()?;
        Ok(self.config.get_or_init(|| loaded))
    }

    /// EXP, connected on first use (migrates the database when needed). The database must exist: a missing
    /// one is "not found" naming the URL, and nothing is created; only [`Ctx::exp_creating`] (`init`) creates.
    pub(crate) async fn exp(&self) -> Result<&Exp> {
        let config = self.config()?;
        Ok(self.exp.get_or_try_init(|| Exp::connect(config)).await?)
    }

    /// EXP, creating the database when it is missing (for `init`).
    pub(crate) async fn exp_creating(&self) -> Result<&Exp> {
        let config = self.config()?;
        Ok(self.exp.get_or_try_init(|| Exp::init(config)).await?)
    }

    /// The analysis service, connected on first use.
    pub(crate) async fn analysis(&self) -> Result<&Analysis> {
        let config = self.config()?;
        Ok(self.analysis.get_or_try_init(|| Analysis::connect(config)).await?)
    }

    /// Allows at most `n` (≥ 1) heavy analyses at once from now on (a server sets it once; later calls change
    /// nothing): one more is refused as `too_many_requests` rather than queued.
    pub(crate) fn limit_heavy_analyses(&self, n: usize) {
        let _ = self.heavy.set(std::sync::Arc::new(tokio::sync::Semaphore::new(n.max(1))));
    }

    /// A heavy analysis' permit: `None` with no limit; refused when the limit is reached.
    pub(crate) fn heavy_permit(&self) -> Result<Option<tokio::sync::OwnedSemaphorePermit>> {
        let Some(limit) = self.heavy.get() else { return Ok(None) };
        limit.clone().try_acquire_owned().map(Some).map_err(|_| {
            crate::AppError::new(
                falcon_core::ErrorKind::TooManyRequests,
                "the server is running as many analyses as it allows; try again shortly",
            )
        })
    }

    /// Closes what was connected (pools drain; SQLite checkpoints its log).
    pub(crate) async fn close(&self) {
        if let Some(exp) = self.exp.get() {
            exp.close().await;
        }
        if let Some(analysis) = self.analysis.get() {
            analysis.close().await;
        }
    }
}
