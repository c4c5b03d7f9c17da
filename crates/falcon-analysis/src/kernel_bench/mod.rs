//! Kernel-bench results: format, analysis, comparison. (Being written.)
