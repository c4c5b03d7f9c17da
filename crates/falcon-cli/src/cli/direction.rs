//! Flags more than one command takes.

use clap::Args;

/// Which way a metric without a standard direction is better (`exp compare`, `bisect`).
#[derive(Debug, Args)]
pub struct DirectionArgs {
    /// Larger values are better (for metrics without a standard direction).
    #[arg(long, conflicts_with = "lower_is_better")]
    pub higher_is_better: bool,
    /// Smaller values are better.
    #[arg(long)]
    pub lower_is_better: bool,
}

impl DirectionArgs {
    /// The direction the flags name, if one.
    pub fn direction(&self) -> Option<falcon_core::stats::Direction> {
        use falcon_core::stats::Direction;
        match (self.higher_is_better, self.lower_is_better) {
            (true, _) => Some(Direction::HigherIsBetter),
            (_, true) => Some(Direction::LowerIsBetter),
            _ => None,
        }
    }
}
