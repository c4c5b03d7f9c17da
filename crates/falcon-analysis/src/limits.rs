//! Bounds on what a hostile input can cost: the decompressed bytes of every compressed input (a gzipped Chrome
//! trace, a deflated `.npz` member) are capped.
//!
//! A gzip or deflate stream inflates by up to about 1000× (1 MiB of gzipped zeros is 1 GiB), so the size of the
//! file says nothing about the work of reading it. Every decompressing reader of this crate is wrapped in
//! [`Bounded`], which fails with a [`LimitExceeded`] I/O error once more than the cap has come out of it; the
//! readers turn that into the analysis error `DecompressedTooLarge`, which names the file, the cap and how to raise
//! it ([`FLAG`] on the reading commands, [`CONFIG_KEY`] in `falcon.toml` for the worker, [`ENV_VAR`]).
//! The default is [`falcon_core::config::DEFAULT_MAX_DECOMPRESSED_MIB`].

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};

/// The largest profile file read, in bytes (`[analysis] max_profile_mib`): process-wide, set from the one
/// configuration a process runs with when its analysis service is made ([`set_max_profile_bytes`]).
static MAX_PROFILE_BYTES: AtomicU64 = AtomicU64::new(mib_to_bytes(falcon_core::config::DEFAULT_MAX_PROFILE_MIB));

/// The `falcon.toml` key of the cap on one profile file (in MiB).
pub const PROFILE_CONFIG_KEY: &str = "[analysis] max_profile_mib";
/// The environment variable that sets [`PROFILE_CONFIG_KEY`].
pub const PROFILE_ENV_VAR: &str = "FALCON_MAX_PROFILE_MIB";

/// Sets the cap on one profile file (see [`MAX_PROFILE_BYTES`]).
pub fn set_max_profile_bytes(bytes: u64) {
    MAX_PROFILE_BYTES.store(bytes, Ordering::Relaxed);
}

/// The cap on one profile file, in bytes.
pub fn max_profile_bytes() -> u64 {
    MAX_PROFILE_BYTES.load(Ordering::Relaxed)
}

/// The reading commands' flag that raises the cap (in MiB).
pub const FLAG: &str = "--max-decompressed";
/// The `falcon.toml` key that raises the cap (in MiB), for the worker's automatic analysis too.
pub const CONFIG_KEY: &str = "[analysis] max_decompressed_mib";
/// The environment variable that sets [`CONFIG_KEY`].
pub const ENV_VAR: &str = "FALCON_MAX_DECOMPRESSED_MIB";

/// The default cap, in bytes.
pub const DEFAULT_MAX_DECOMPRESSED_BYTES: u64 = mib_to_bytes(falcon_core::config::DEFAULT_MAX_DECOMPRESSED_MIB);

/// MiB → bytes, saturating.
pub const fn mib_to_bytes(mib: u64) -> u64 {
    mib.saturating_mul(1 << 20)
}

/// The cap of a configuration, in bytes.
pub fn max_decompressed_bytes(config: &falcon_core::config::Config) -> u64 {
    mib_to_bytes(config.analysis.max_decompressed_mib)
}

/// The error a [`Bounded`] reader returns (inside an [`std::io::Error`]) once more than `limit` bytes came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("decompresses to more than {limit} bytes")]
pub struct LimitExceeded {
    /// The cap, in bytes.
    pub limit: u64,
}

impl LimitExceeded {
    /// The cap behind an I/O error, when a [`Bounded`] reader raised it (directly or wrapped by a reader above).
    pub fn in_io_error(e: &std::io::Error) -> Option<u64> {
        let mut source: Option<&(dyn std::error::Error + 'static)> = e.get_ref().map(|inner| inner as _);
        while let Some(err) = source {
            if let Some(l) = err.downcast_ref::<LimitExceeded>() {
                return Some(l.limit);
            }
            if let Some(io) = err.downcast_ref::<std::io::Error>() {
                source = io.get_ref().map(|inner| inner as _);
            } else {
                source = err.source();
            }
        }
        None
    }
}

/// A reader that fails once more than `limit` bytes have been read from it: put it around a decompressor.
/// Exactly `limit` bytes read fine; the read that would pass the limit returns a [`LimitExceeded`] error.
#[derive(Debug)]
pub struct Bounded<R> {
    inner: R,
    limit: u64,
    read: u64,
}

impl<R> Bounded<R> {
    /// Caps `inner` at `limit` bytes.
    pub fn new(inner: R, limit: u64) -> Self {
        Bounded { inner, limit, read: 0 }
    }

    /// Bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.read
    }
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // Ask for at most one byte past the limit, so a stream of exactly `limit` bytes is told from a longer
        // one without inflating more than needed.
        let room = (self.limit - self.read).saturating_add(1);
        let want = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.read += n as u64;
        if self.read > self.limit {
            return Err(std::io::Error::other(LimitExceeded { limit: self.limit }));
        }
        Ok(n)
    }
}

/// `limit` bytes as the MiB the flag takes (rounded up, so the message never names a smaller cap).
pub fn limit_mib(limit: u64) -> u64 {
    limit.div_ceil(1 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_up_to_the_limit_and_fails_past_it() {
        let mut out = Vec::new();
        Bounded::new(&[7u8; 100][..], 100).read_to_end(&mut out).unwrap();
        assert_eq!(out.len(), 100, "exactly the limit is fine");
        let mut bounded = Bounded::new(&[7u8; 101][..], 100);
        let e = bounded.read_to_end(&mut Vec::new()).unwrap_err();
        assert_eq!(LimitExceeded::in_io_error(&e), Some(100));
        assert_eq!(bounded.bytes_read(), 101, "it stops one byte past the limit");
        let plain = std::io::Error::other("disk on fire");
        assert_eq!(LimitExceeded::in_io_error(&plain), None);
        let wrapped = std::io::Error::other(e);
        assert_eq!(LimitExceeded::in_io_error(&wrapped), Some(100), "found through a wrapping io::Error");
    }

    #[test]
    fn a_gzip_bomb_stops_at_the_cap() {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(&vec![0u8; 8 << 20]).unwrap();
        let gz = enc.finish().unwrap();
        let mut r = Bounded::new(flate2::read::MultiGzDecoder::new(&gz[..]), 1 << 20);
        let mut sink = Vec::new();
        let e = r.read_to_end(&mut sink).unwrap_err();
        assert_eq!(LimitExceeded::in_io_error(&e), Some(1 << 20));
        assert!(sink.len() <= 1 << 20, "no more than the cap is handed out: {}", sink.len());
        assert_eq!(limit_mib(1 << 20), 1);
        assert_eq!(limit_mib((1 << 20) + 1), 2);
    }
}
