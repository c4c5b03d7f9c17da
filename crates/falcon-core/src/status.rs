//! Lifecycle statuses of experiments, jobs and goals, and the scenarios an experiment can belong to.
//!
//! Which transitions are valid is decided by the modules that own each lifecycle (EXP, Job); this file only
//! names the states and spells them the one way they are stored and printed.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A status word that is not one of the known values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{input}` (expected one of: {expected})")]
pub struct UnknownValue {
    /// The rejected text.
    pub input: String,
    /// What was being parsed.
    pub what: &'static str,
    /// The accepted values, comma separated.
    pub expected: String,
}

macro_rules! string_enum {
    ($(#[$doc:meta])* $name:ident, $what:literal, { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored and printed spelling.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownValue;
            /// Case-insensitive.
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $(if s.eq_ignore_ascii_case($text) { return Ok($name::$variant); })+
                Err(UnknownValue {
                    input: s.to_string(),
                    what: $what,
                    expected: [$($text),+].join(", "),
                })
            }
        }
    };
}

string_enum!(
    /// Where an experiment is in its lifecycle (docs/DESIGN.md §2).
    ExperimentStatus, "experiment status", {
        /// Recorded, not yet handed to the Job module.
        Pending = "PENDING",
        /// A job exists and is waiting for or acquiring resources.
        Provisioning = "PROVISIONING",
        /// The workload is running.
        Running = "RUNNING",
        /// Finished successfully.
        Completed = "COMPLETED",
        /// Finished unsuccessfully.
        Failed = "FAILED",
        /// Stopped on request.
        Cancelled = "CANCELLED",
    }
);

impl ExperimentStatus {
    /// Whether the experiment has reached an end state.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

string_enum!(
    /// Where a job is in its lifecycle (docs/DESIGN.md §2, Job).
    JobStatus, "job status", {
        /// Waiting for the scheduler to place it.
        Queued = "QUEUED",
        /// Handed to a backend.
        Submitted = "SUBMITTED",
        /// The backend accepted it but it is not running yet (the reason is recorded beside it).
        Pending = "PENDING",
        /// Running on the backend.
        Running = "RUNNING",
        /// Exited successfully.
        Succeeded = "SUCCEEDED",
        /// Exited unsuccessfully (reason and exit code recorded).
        Failed = "FAILED",
        /// Stopped on request.
        Cancelled = "CANCELLED",
        /// Lost its resources.
        Preempted = "PREEMPTED",
    }
);

impl JobStatus {
    /// Whether the job's attempt has ended.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Cancelled | Self::Preempted)
    }
}

string_enum!(
    /// Where an optimization goal is.
    GoalStatus, "goal status", {
        /// Nobody works on it.
        Open = "OPEN",
        /// Someone holds a lease on it.
        Claimed = "CLAIMED",
        /// The target was reached.
        Achieved = "ACHIEVED",
        /// Given up.
        Abandoned = "ABANDONED",
    }
);

string_enum!(
    /// What kind of experiment this is (the seed's scenarios).
    Scenario, "scenario", {
        /// Algorithm experiments.
        Algorithm = "algorithm",
        /// Performance benchmarks.
        Benchmark = "benchmark",
        /// Cross-framework accuracy alignment.
        Accuracy = "accuracy",
        /// Profiling runs.
        Profiling = "profiling",
        /// Kernel benchmarks.
        KernelBench = "kernel_bench",
    }
);

string_enum!(
    /// Whether larger or smaller values of a metric are better.
    Direction, "direction", {
        /// Larger is better.
        Maximize = "maximize",
        /// Smaller is better.
        Minimize = "minimize",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_parse_case_insensitively_and_print_canonically() {
        for s in ExperimentStatus::ALL {
            assert_eq!(s.as_str().to_lowercase().parse::<ExperimentStatus>().unwrap(), *s);
        }
        assert_eq!("kernel_bench".parse::<Scenario>().unwrap(), Scenario::KernelBench);
        assert_eq!(serde_json::to_string(&JobStatus::Preempted).unwrap(), "\"PREEMPTED\"");
    }

    #[test]
    fn unknown_values_list_the_accepted_ones() {
        let err = "DONE".parse::<ExperimentStatus>().unwrap_err().to_string();
        assert!(err.contains("DONE") && err.contains("COMPLETED"), "{err}");
    }

    #[test]
    fn terminal_states() {
        assert!(ExperimentStatus::Cancelled.is_terminal());
        assert!(!ExperimentStatus::Provisioning.is_terminal());
        assert!(JobStatus::Preempted.is_terminal());
        assert!(!JobStatus::Pending.is_terminal());
    }
}
