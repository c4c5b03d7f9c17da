//! Names of XSpace planes and lines the profile tools, step detection and the timeline readers look for.

/// Name of the host threads plane (XProf `kHostThreadsPlaneName`).
pub const HOST_CPU_PLANE: &str = "/host:CPU";

/// Line-name suffixes of lines XProf derives from the raw op events; never counted (nor scanned for step
/// markers).
pub const DERIVED_LINE_SUFFIXES: [&str; 4] = ["XLA Modules", "XLA Ops", "Framework Ops", "Framework Name Scope"];
