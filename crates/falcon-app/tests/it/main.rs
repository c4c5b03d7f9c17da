//! `falcon-app`'s use cases tested in process, over [`falcon_app::App`] on a SQLite file in a temporary folder and
//! the memory artifact store — no binary spawned, no service started. One test binary for the crate; each area a
//! module.

mod harness;
mod requests;
mod structure;
