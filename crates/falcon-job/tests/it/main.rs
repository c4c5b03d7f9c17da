//! The crate's integration tests: one binary (linking it once is most of what a test binary costs), a module
//! per file.

mod collection;
mod common;
mod kubernetes_backend;
mod kubernetes_common;
mod kubernetes_manager;
mod lease_renewal;
mod local_manager;
mod resource_sampling;
mod slurm_backend;
mod two_workers;
