//! `falcon doctor`'s flags.

use clap::Args;

/// `falcon doctor [--calibrate [--pool NAME]...]`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Also measure this machine's f32 matmul peak and memory bandwidth (a second or two, every core) and keep
    /// them for the local pools (or the --pool named): the XLA:CPU roofline, bound-by and MFU divide by them.
    #[arg(long)]
    pub calibrate: bool,
    /// The pool(s) the calibration is kept for (default: every local pool); run on a node of that pool.
    #[arg(long, value_name = "NAME", requires = "calibrate")]
    pub pool: Vec<String>,
}
