//! The crate's integration tests: one binary (linking it once is most of what a test binary costs), a module
//! per file.

mod fuzz_regressions;
