//! The vocabulary of analysis summary rows, shared by the analysis module (which writes them after analysing
//! an experiment's artifacts) and EXP (whose goals rank experiments on them): the tool names, and which goal
//! metrics the profile row answers from which column.

/// Summary-row tool name of the profile analysis (overview, MFU, memory).
pub const PROFILE_TOOL: &str = "profile";
/// Summary-row tool name of the deep trace analysis.
pub const TRACE_TOOL: &str = "trace";
/// Summary-row tool name of the kernel-bench analysis.
pub const KERNEL_BENCH_TOOL: &str = "kernel_bench";
/// Summary-row tool name of the accuracy alignment.
pub const ACCURACY_TOOL: &str = "accuracy";
/// Summary-row tool name of the memory verdict (every memory series of an experiment, the leak call).
pub const MEMORY_TOOL: &str = "memory";

/// A column of the profile summary row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileColumn {
    /// Model FLOPs utilization, a fraction.
    Mfu,
    /// Device duty cycle, a fraction.
    DutyCycle,
    /// Peak device memory in bytes.
    PeakMemoryBytes,
    /// Mean step time from the profile, in ms.
    StepTimeMs,
}

/// The goal metrics the profile summary row answers, with the column each comes from.
pub const PROFILE_METRICS: &[(&str, ProfileColumn)] = &[
    ("mfu", ProfileColumn::Mfu),
    ("duty_cycle", ProfileColumn::DutyCycle),
    ("peak_hbm_bytes", ProfileColumn::PeakMemoryBytes),
    ("profile_step_time_ms", ProfileColumn::StepTimeMs),
];

/// The profile column a goal metric is read from, when it is one of [`PROFILE_METRICS`].
pub fn profile_column(metric: &str) -> Option<ProfileColumn> {
    PROFILE_METRICS.iter().find(|(m, _)| *m == metric).map(|(_, c)| *c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_metric_has_a_standard_direction() {
        for (metric, _) in PROFILE_METRICS {
            assert!(crate::stats::direction_for(metric).is_some(), "{metric}");
        }
        assert_eq!(profile_column("mfu"), Some(ProfileColumn::Mfu));
        assert_eq!(profile_column("loss"), None);
    }
}
