//! Running the `falcon` binary the way a user does, shared by the CLI test files.
#![allow(dead_code, reason = "each test file uses its own subset of the helpers")]

pub mod serve;

#[path = "../../../../falcon-app/tests/it/fixtures.rs"]
mod fixtures;
pub use fixtures::{bad_xplanes, slurm_pool_config, write_base_ms_spec};

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// Runs `falcon` in `dir` with a clean environment (no FALCON_* from the caller, HOME inside the test dir)
/// plus `env`.
pub fn falcon_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    enterable(dir);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_falcon"));
    cmd.current_dir(dir).args(args).env("HOME", dir).env_remove("XDG_CONFIG_HOME");
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("FALCON_")) {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run falcon")
}

/// Lets other users enter `dir` (a temporary folder is its owner's alone): run as root, Falcon runs each job as a
/// user of its own (`[jobs] isolation`), which must reach the test's scripts and its job folders beside the
/// data dir, as a checkout others may enter would let it.
pub fn enterable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(dir) {
        let mode = meta.permissions().mode();
        if mode & 0o005 != 0o005 {
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o755));
        }
    }
}

/// `falcon mcp` started in `dir` over pipes (stdin and stdout piped, stderr dropped), as an agent harness runs it.
pub fn mcp_child(dir: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_falcon"))
        .current_dir(dir)
        .env("HOME", dir)
        .arg("mcp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start falcon mcp")
}

/// [`falcon_with`] without extra environment.
pub fn falcon(dir: &Path, args: &[&str]) -> Output {
    falcon_with(dir, args, &[])
}

/// Stdout as JSON (panics with stdout and stderr when it is not).
pub fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The exit status.
pub fn code(out: &Output) -> i32 {
    out.status.code().expect("exited normally")
}
