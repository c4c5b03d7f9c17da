//! Profiler overhead: how much slower the traced steps ran than the steps the profiler did not record, from the
//! workload's own per-step wall times (its `step_time_s` metric). A profiler that records shapes, memory or
//! stacks adds host time to every op; the device then waits on the host more in the trace than in a normal step,
//! so a large ratio says that the trace's host time (and its host wait) is inflated by the profiler itself.
//!
//! - **Profiled steps**: the metric's steps whose numbers are among the trace's steps (PyTorch's `ProfilerStep#N`
//!   counts the same steps as a loop that calls `prof.step()` once a step).
//! - **Unprofiled steps**: the others, except the step right before the first traced one — `torch.profiler`'s
//!   warm-up step runs the profiler without recording.
//! - `ratio` = median profiled ÷ median unprofiled; above [`INFLATED_RATIO`] the trace is called inflated.

use serde::Serialize;

/// The ratio above which a trace's host time is called inflated by the profiler.
pub const INFLATED_RATIO: f64 = 1.2;

/// Profiled against unprofiled step times.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ProfilerOverhead {
    /// The metric read (`step_time_s`).
    pub metric: String,
    pub profiled_steps: Vec<i64>,
    pub unprofiled_steps: Vec<i64>,
    /// Median step time of each, ms.
    pub profiled_ms: f64,
    pub unprofiled_ms: f64,
    /// `profiled_ms / unprofiled_ms`.
    pub ratio: f64,
    /// `ratio > 1.2`.
    pub inflated: bool,
    /// One line with the numbers and what it means.
    pub summary: String,
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// The overhead from the trace's step numbers and the metric's `(step, seconds)` points; `None` when either
/// set of steps is empty.
pub fn profiler_overhead(traced: &[i64], metric: &str, points: &[(i64, f64)]) -> Option<ProfilerOverhead> {
    let first = *traced.iter().min()?;
    let valid = |v: f64| v.is_finite() && v > 0.0;
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for &(step, v) in points.iter().filter(|p| valid(p.1)) {
        if traced.contains(&step) {
            on.push((step, v));
        } else if step != first - 1 {
            off.push((step, v));
        }
    }
    if on.is_empty() || off.is_empty() {
        return None;
    }
    let profiled_ms = median(on.iter().map(|p| p.1 * 1e3).collect());
    let unprofiled_ms = median(off.iter().map(|p| p.1 * 1e3).collect());
    let ratio = profiled_ms / unprofiled_ms;
    let inflated = ratio > INFLATED_RATIO;
    let summary = if inflated {
        format!(
            "profiler overhead {ratio:.2}×: the traced steps took {profiled_ms:.1} ms, unprofiled ones {unprofiled_ms:.1} ms \
             ({metric}); about {:.1} ms a step of the trace's host time (and of its host wait) is the profiler's own — \
             profile with fewer options (no record_shapes / profile_memory / with_stack) before acting on host wait",
            profiled_ms - unprofiled_ms
        )
    } else {
        format!(
            "profiler overhead {ratio:.2}×: the traced steps took {profiled_ms:.1} ms, unprofiled ones {unprofiled_ms:.1} ms \
             ({metric}): the trace's timing is representative"
        )
    };
    Some(ProfilerOverhead {
        metric: metric.to_string(),
        profiled_steps: on.iter().map(|p| p.0).collect(),
        unprofiled_steps: off.iter().map(|p| p.0).collect(),
        profiled_ms,
        unprofiled_ms,
        ratio,
        inflated,
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warm_up_step_is_neither() {
        // pt_fast.metrics.jsonl: step 0 unprofiled, step 1 the profiler's warm-up, 2..6 traced.
        let points = [(0, 0.0196), (1, 0.0312), (2, 0.0413), (3, 0.0404), (4, 0.0409), (5, 0.0401), (6, 0.0402)];
        let o = profiler_overhead(&[2, 3, 4, 5, 6], "step_time_s", &points).unwrap();
        assert_eq!((o.profiled_steps.len(), o.unprofiled_steps.clone()), (5, vec![0]));
        assert!((o.ratio - 40.4 / 19.6).abs() < 0.01 && o.inflated, "{o:?}");
        assert!(o.summary.contains("2.06×"), "{}", o.summary);
        assert!(profiler_overhead(&[2], "step_time_s", &[(2, 0.04)]).is_none(), "no unprofiled step");
        assert!(profiler_overhead(&[], "step_time_s", &points).is_none());
        let lite = profiler_overhead(&[0], "step_time_s", &[(0, 0.02), (5, 0.021)]).unwrap();
        assert!(!lite.inflated && lite.summary.contains("representative"));
    }
}
