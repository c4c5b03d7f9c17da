//! Comparing GPU kernels: the sides of a comparison where one input is a Chrome trace (a PyTorch profiler
//! trace). Each side's rows are its kernels (and copies, memsets) summed by name — the op is the kernel, its
//! category the kernel's family ([`crate::trace::kernels::kernel_family`]: `gemm`, `attention`, `triton fused`,
//! `elementwise`, `copy`, …), its provenance the framework op that launched most of its time — and they are paired
//! by exact name only: kernel names carry no fingerprint that survives a change (eager `elementwise_kernel`s and
//! `torch.compile`'s `triton_poi_fused_…` kernels are different kernels, added and removed). An XProf capture on
//! the other side contributes its GPU kernels the same way (its `kernel_stats`).

use std::collections::HashMap;
use std::path::Path;

use super::matching::OpRow;
use super::{hardware_name, OpSource, Side, SideData};
use crate::error::Result;
use crate::gpu_kernels::KernelStat;
use crate::input::HostFile;
use crate::profile::{AnalyzeOptions, ProfileReport, Tool};
use crate::timeline::{DeviceKind, EventClass, Timeline};

use crate::trace::kernels::kernel_family;

/// Rows from a timeline's GPU device events, by name.
fn timeline_rows(tl: &Timeline) -> Vec<OpRow> {
    let ops = crate::trace::kernels::kernel_view(tl, &[], None);
    // The launching op of most of each kernel's time.
    let mut op_of: HashMap<&str, (&str, f64)> = HashMap::new();
    for k in &ops.kernels {
        let e = op_of.entry(k.name.as_str()).or_insert((k.op_name.as_str(), 0.0));
        if k.total_time_us > e.1 {
            *e = (k.op_name.as_str(), k.total_time_us);
        }
    }
    let mut by: HashMap<(String, EventClass), (u64, u64, i64)> = HashMap::new();
    for d in tl.devices.iter().filter(|d| d.kind == DeviceKind::Gpu) {
        for e in &d.events {
            let r = by.entry((tl.name(e.name).to_string(), e.class)).or_insert((0, 0, i64::MAX));
            r.0 += 1;
            r.1 += e.dur_ps.max(0) as u64;
            r.2 = r.2.min(e.start_ps);
        }
    }
    let mut rows: Vec<OpRow> = by
        .into_iter()
        .map(|((name, class), (n, ps, first))| OpRow {
            module: String::new(),
            deduplicated_name: String::new(),
            category: kernel_family(&name, class).to_string(),
            provenance: op_of.get(name.as_str()).map(|o| o.0.to_string()).unwrap_or_default(),
            first_start_ps: Some(i128::from(first)),
            occurrences: n,
            self_time_ps: ps,
            flops: None,
            bytes_accessed: None,
            point: None,
            signature: None,
            name,
        })
        .collect();
    rows.sort_by(|a, b| b.self_time_ps.cmp(&a.self_time_ps).then_with(|| a.name.cmp(&b.name)));
    rows
}

/// Rows from an XProf capture's kernel stats, by kernel name.
pub(crate) fn kernel_stat_rows(kernels: &[KernelStat]) -> Vec<OpRow> {
    let mut by: HashMap<&str, (u64, f64, &str, f64)> = HashMap::new();
    for k in kernels {
        let r = by.entry(k.name.as_str()).or_insert((0, 0.0, k.op_name.as_str(), 0.0));
        r.0 += k.occurrences;
        r.1 += k.total_time_us;
        if k.total_time_us > r.3 {
            r.2 = k.op_name.as_str();
            r.3 = k.total_time_us;
        }
    }
    by.into_iter()
        .map(|(name, (n, us, op, _))| OpRow {
            module: String::new(),
            name: name.to_string(),
            deduplicated_name: String::new(),
            category: kernel_family(name, crate::timeline::xspace::classify_gpu_kernel(name)).to_string(),
            provenance: op.to_string(),
            first_start_ps: None,
            occurrences: n,
            self_time_ps: (us * 1e6).round() as u64,
            flops: None,
            bytes_accessed: None,
            point: None,
            signature: None,
        })
        .collect()
}

/// One Chrome trace as a comparison side.
pub(crate) fn trace_side(input: &str, path: &Path, max_decompressed: u64) -> Result<SideData> {
    let tl = crate::timeline::chrome::read_chrome_trace_file_with(path, max_decompressed)?;
    let host = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let file = HostFile::user(host, path.to_path_buf());
    let options =
        AnalyzeOptions { tools: vec![Tool::Overview, Tool::Kernels, Tool::Steps], ..AnalyzeOptions::default() };
    let report: ProfileReport = crate::profile::from_trace::analyze_timeline(&file, &tl, &options);
    let rows = timeline_rows(&tl);
    let mut notes = report.notes.clone();
    if let Some(o) = &report.overview {
        notes.extend(o.notes.iter().cloned());
    }
    let side = Side {
        input: input.to_string(),
        files: vec![file],
        device_type: report.device.device_type.clone(),
        hardware: hardware_name(report.device.hardware).to_string(),
        device_cores: report.device.device_cores,
        step_times_ms: report
            .steps
            .as_ref()
            .map_or_else(Vec::new, |s| s.steps.iter().map(|st| st.duration_ps as f64 / 1e9).collect()),
        ops: rows.len(),
        op_time_ps: rows.iter().map(|r| r.self_time_ps).sum(),
        total_time_ps: None,
        idle_time_ps: None,
        mfu: None,
        launch: report.launch.clone(),
        notes,
    };
    Ok(SideData { side, rows, source: OpSource::Kernels, report })
}
