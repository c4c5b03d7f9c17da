//! What a collective's bus bandwidth is held against: the peak of the link its members share, from the catalog
//! chip the trace names (`Timeline::chip`: a TPU plane's device type, a GPU plane's device name, a PyTorch trace's
//! `deviceProperties`).
//!
//! nccl-tests' bus bandwidth is comparable to one direction of the link ("the speed of the hardware"), so the
//! peak is half the vendor's bidirectional figure per chip. Which link: TPU devices of one slice talk over ICI
//! (across slices DCN, which the catalog does not know); GPUs of one node over NVLink (an HGX board's 8; a group
//! larger than a node crosses the network, whose NICs the catalog does not know); CPU hosts over a network the
//! catalog does not know either. When there is no link, the reason is said instead of a number.

use serde::Serialize;

use crate::timeline::DeviceKind;

/// The link a collective's members share and how much of its peak the collective's bus bandwidth used.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct LinkUse {
    /// The link (`ICI`, `NVLink 4`).
    pub name: String,
    /// The catalog chip it is the link of (`v6e`, `h100-80gb`).
    pub chip: String,
    /// Peak one way, GB/s: half the vendor's bidirectional figure per chip.
    pub peak_gbps: f64,
    /// busbw / peak, percent; `null` without busbw.
    pub busbw_percent: Option<f64>,
    /// What the choice of link assumes (`the members share a slice`).
    pub assumes: String,
}

/// The link of a collective among `group` devices of `kind` whose chip is `chip`, with its bus bandwidth's
/// share of the peak; else why there is none.
pub fn link_use(
    chip: Option<&str>,
    kind: DeviceKind,
    group: usize,
    busbw_gbps: Option<f64>,
) -> Result<LinkUse, String> {
    if kind == DeviceKind::CpuExecutor {
        return Err("its members are CPU hosts, whose network the catalog does not know".into());
    }
    let Some(name) = chip else {
        return Err("the trace names no chip the catalog knows".into());
    };
    let Some(c) = falcon_core::catalog::chip_named(name) else {
        return Err(format!("the catalog has no chip `{name}`"));
    };
    let Some(link) = c.link else {
        return Err(format!("the catalog has no link for {name}"));
    };
    let assumes = match (kind, link.domain_chips) {
        (_, Some(domain)) if group > domain as usize => {
            return Err(format!(
                "its {group} members are more than one node's {domain} GPUs: it crosses the network, whose NICs the \
                 catalog does not know"
            ));
        }
        (_, Some(domain)) => format!("its members share one node ({domain} GPUs on {})", link.name),
        (_, None) => "its members share a slice (across slices it runs over DCN)".to_string(),
    };
    let peak = link.per_direction_gbps();
    Ok(LinkUse {
        name: link.name.to_string(),
        chip: name.to_string(),
        peak_gbps: peak,
        busbw_percent: busbw_gbps.filter(|_| peak > 0.0).map(|b| 100.0 * b / peak),
        assumes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_per_chip_and_why_not() {
        let ici = link_use(Some("v6e"), DeviceKind::Tpu, 4, Some(200.0)).unwrap();
        assert_eq!((ici.name.as_str(), ici.peak_gbps, ici.busbw_percent), ("ICI", 400.0, Some(50.0)));
        let nvl = link_use(Some("h100-80gb"), DeviceKind::Gpu, 8, None).unwrap();
        assert_eq!((nvl.name.as_str(), nvl.peak_gbps, nvl.busbw_percent), ("NVLink 4", 450.0, None));
        assert!(link_use(Some("h100-80gb"), DeviceKind::Gpu, 16, Some(1.0)).unwrap_err().contains("16 members"));
        assert!(link_use(Some("v4"), DeviceKind::Tpu, 4, Some(1.0)).unwrap_err().contains("no link for v4"));
        assert!(link_use(None, DeviceKind::Gpu, 2, Some(1.0)).unwrap_err().contains("names no chip"));
        assert!(link_use(Some("h100-80gb"), DeviceKind::CpuExecutor, 2, None).unwrap_err().contains("CPU hosts"));
    }
}
