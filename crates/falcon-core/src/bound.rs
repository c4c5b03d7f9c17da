//! What limits a program: the one `bound_by` vocabulary every report, summary row and renderer uses.
//!
//! # Words
//!
//! [`BoundBy`] serializes as `compute`, `memory`, `host` or `partly_host`; *unknown* is the absence of a
//! value (`null` in JSON, no value in a summary row's `bound_by` column), never a word, and the report that
//! leaves it unknown says why in a note. The summary row's `bound_by` column stores [`BoundBy::as_str`], the
//! same string as the serde name.
//!
//! * `compute` — the program's FLOP rate is the largest fraction of its roof (XProf's roofline `Compute`).
//! * `memory` — a memory bandwidth is: HBM (XProf `HBM`; a CPU's main memory, `DRAM`) or an on-chip memory
//!   (`CMEM Read`, `CMEM Write`, `VMEM Read`, `VMEM Write`, GPU `Shm/L1`). Which one is kept beside it as XProf's resource name
//!   ([`BoundBy::from_xprof_resource`] maps it). Per-op rows (`ops[]`, `roofline.points[]`) keep XProf's
//!   resource name in their own `bound_by`, as XProf's tables print it.
//! * `host` / `partly_host` — the device waits on the host for at least [`HOST_BOUND_THRESHOLD`] /
//!   [`PARTLY_HOST_BOUND_THRESHOLD`] of the step time ([`HostVerdict::of`]).
//!
//! # The host-bound rule
//!
//! The host-bound **fraction** is the time the *device waits on the host* divided by the step time. The
//! device waits on the host when it is idle while the host does work the device needs (input, dispatch:
//! a host thread of the device's host runs a working event) or when it runs its own wait on a host
//! transfer (`*-done` of a host send/recv). Time the *host waits on the device* never counts: a host event
//! that waits (`block_until_ready`, `… (wait for completion)`, `cudaStreamSynchronize`, any `…wait…`)
//! masks the events enclosing it, so a Python frame blocked in `block_until_ready` is not host work. The
//! trace breakdown's `host_wait` is exactly that time (see `falcon_analysis::trace`), so the fraction is
//! `total.host_wait / total.duration` and a breakdown with `host_wait` 0 is never host-bound.

use serde::{Deserialize, Serialize};

/// Host-bound fraction at or above which the device is host-bound.
pub const HOST_BOUND_THRESHOLD: f64 = 0.20;
/// Host-bound fraction at or above which the device is partly host-bound.
pub const PARTLY_HOST_BOUND_THRESHOLD: f64 = 0.05;

/// What limits a program (see the module doc). Unknown is `None`, never a variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BoundBy {
    /// The compute roof.
    Compute,
    /// A memory bandwidth roof (HBM or an on-chip memory).
    Memory,
    /// The device waits on the host for at least [`HOST_BOUND_THRESHOLD`] of the step time.
    Host,
    /// The device waits on the host for at least [`PARTLY_HOST_BOUND_THRESHOLD`] of the step time.
    PartlyHost,
}

impl BoundBy {
    /// Every value, in declaration order.
    pub const ALL: [BoundBy; 4] = [BoundBy::Compute, BoundBy::Memory, BoundBy::Host, BoundBy::PartlyHost];

    /// The serde name (`compute`, `memory`, `host`, `partly_host`): what JSON, tables and summary rows show.
    pub fn as_str(self) -> &'static str {
        match self {
            BoundBy::Compute => "compute",
            BoundBy::Memory => "memory",
            BoundBy::Host => "host",
            BoundBy::PartlyHost => "partly_host",
        }
    }

    /// XProf's roofline resource name (`Compute`, `HBM`, `CMEM Read`, `CMEM Write`, `VMEM Read`, `VMEM Write`,
    /// `Shm/L1`; `DRAM` on XLA:CPU) as a bound; `None` for `Unknown`, an empty or an unrecognised name.
    pub fn from_xprof_resource(resource: &str) -> Option<BoundBy> {
        match resource.trim() {
            "Compute" => Some(BoundBy::Compute),
            "HBM" | "DRAM" | "CMEM Read" | "CMEM Write" | "VMEM Read" | "VMEM Write" | "Shm/L1" => {
                Some(BoundBy::Memory)
            }
            _ => None,
        }
    }
}

impl std::fmt::Display for BoundBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for BoundBy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BoundBy::ALL
            .into_iter()
            .find(|b| b.as_str() == s.trim())
            .ok_or_else(|| format!("unknown bound `{s}` (expected one of: compute, memory, host, partly_host)"))
    }
}

/// The host check's answer: the device is host-bound, partly host-bound, or not host-bound. The first two
/// serialize exactly as [`BoundBy::Host`] and [`BoundBy::PartlyHost`] (`host`, `partly_host`); the third is
/// `not_host`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HostVerdict {
    Host,
    PartlyHost,
    NotHost,
}

impl HostVerdict {
    /// The verdict for a host-bound fraction (see the module doc).
    pub fn of(fraction: f64) -> HostVerdict {
        if fraction >= HOST_BOUND_THRESHOLD {
            HostVerdict::Host
        } else if fraction >= PARTLY_HOST_BOUND_THRESHOLD {
            HostVerdict::PartlyHost
        } else {
            HostVerdict::NotHost
        }
    }

    /// The bound it names: `Host`, `PartlyHost`, or `None` when not host-bound.
    pub fn bound_by(self) -> Option<BoundBy> {
        match self {
            HostVerdict::Host => Some(BoundBy::Host),
            HostVerdict::PartlyHost => Some(BoundBy::PartlyHost),
            HostVerdict::NotHost => None,
        }
    }

    /// The serde name (`host`, `partly_host`, `not_host`).
    pub fn as_str(self) -> &'static str {
        match self {
            HostVerdict::Host => "host",
            HostVerdict::PartlyHost => "partly_host",
            HostVerdict::NotHost => "not_host",
        }
    }
}

impl std::fmt::Display for HostVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_names_are_the_strings_rows_store() {
        for b in BoundBy::ALL {
            assert_eq!(serde_json::to_value(b).unwrap(), serde_json::Value::String(b.as_str().to_string()));
            assert_eq!(b.as_str().parse::<BoundBy>(), Ok(b));
            assert_eq!(b.to_string(), b.as_str());
        }
        assert!("unknown".parse::<BoundBy>().is_err());
        assert!("partly host".parse::<BoundBy>().is_err());
        for v in [HostVerdict::Host, HostVerdict::PartlyHost, HostVerdict::NotHost] {
            assert_eq!(serde_json::to_value(v).unwrap(), serde_json::Value::String(v.as_str().to_string()));
            if let Some(b) = v.bound_by() {
                assert_eq!(v.as_str(), b.as_str(), "a host verdict is spelled as its bound");
            }
        }
    }

    #[test]
    fn thresholds_decide_the_host_verdict() {
        assert_eq!(HostVerdict::of(0.0), HostVerdict::NotHost);
        assert_eq!(HostVerdict::of(0.049), HostVerdict::NotHost);
        assert_eq!(HostVerdict::of(PARTLY_HOST_BOUND_THRESHOLD), HostVerdict::PartlyHost);
        assert_eq!(HostVerdict::of(0.19), HostVerdict::PartlyHost);
        assert_eq!(HostVerdict::of(HOST_BOUND_THRESHOLD), HostVerdict::Host);
        assert_eq!(HostVerdict::of(f64::NAN), HostVerdict::NotHost);
        assert_eq!(HostVerdict::of(0.3).bound_by(), Some(BoundBy::Host));
        assert_eq!(HostVerdict::of(0.01).bound_by(), None);
    }

    #[test]
    fn xprof_resources_map_to_compute_or_memory() {
        assert_eq!(BoundBy::from_xprof_resource("Compute"), Some(BoundBy::Compute));
        for r in ["HBM", "DRAM", "CMEM Read", "CMEM Write", "VMEM Read", "VMEM Write", "Shm/L1"] {
            assert_eq!(BoundBy::from_xprof_resource(r), Some(BoundBy::Memory), "{r}");
        }
        assert_eq!(BoundBy::from_xprof_resource("Unknown"), None);
        assert_eq!(BoundBy::from_xprof_resource(""), None);
    }
}
