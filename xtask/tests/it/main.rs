//! The crate's integration tests: one binary (linking it once is most of what a test binary costs), a module
//! per file.

mod contract_types;
mod file_length;
mod layering;
mod modules;
