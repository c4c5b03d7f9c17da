//! The crate's integration tests: one binary (linking it once is most of what a test binary costs), a module
//! per file.

mod fixtures;
mod fuzz_regressions;
mod options;
mod proptests;
