//! The HLO programs of a capture: decoded from the `HloProto`s XLA stores on the `/host:metadata` plane, and
//! what Falcon reads from them.
//!
//! - `proto`: the messages (only the fields read), shapes and element types.
//! - `metadata`: what XLA recorded per instruction (opcode, name scope, source line) — the XLA:CPU time
//!   breakdown and A/B matching use it.
//! - `program`: one program as a graph (operands, users, post orders).
//! - `cost`: the GPU cost model — FLOPs and bytes per instruction as XProf computes them, and past it.
//! - `ops`: what the op tools show of a GPU op: category, cost, HLO text, scope, source, precision.
//! - `collectives`: what each collective of a host's timeline moves (bytes, group size), from its instruction.
//! - `attribution`: kernels inside XLA command buffers (CUDA graphs) charged to the HLO op each executes.
//!
//! Nothing here panics on any input: a program that does not decode is skipped and named in the notes.

pub(crate) mod attribution;
pub mod collectives;
pub mod cost;
pub mod metadata;
pub mod ops;
pub(crate) mod program;
pub(crate) mod proto;

pub use metadata::{hlo_index, HloIndex, InstructionInfo, HLO_PROTO_STAT, METADATA_PLANE};
pub use ops::{GpuHlo, HloOpInfo};
