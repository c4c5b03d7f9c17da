//! The metric name map of accuracy alignment: names that mean the same quantity across sources (MaxText, Megatron-LM,
//! generic logs) grouped in classes, each member with its factor to the class's unit, and which names are losses;
//! the default tolerances they start from.

/// Default relative tolerance: Megatron's approximate golden-values gate on `lm loss` (and on step time and
/// memory).
pub const DEFAULT_RTOL: f64 = 0.05;

/// Megatron's relative tolerance on `num-zeros`.
pub const NUM_ZEROS_RTOL: f64 = 0.20;

/// A member of an equivalence class: a name as some source spells it, and the factor to the class's unit.
pub(super) struct Member {
    pub(super) name: &'static str,
    pub(super) scale: f64,
    /// Stands in only when no earlier member exists (MaxText's `learning/loss` includes auxiliary losses).
    pub(super) fallback: bool,
}

pub(super) const fn m(name: &'static str) -> Member {
    Member { name, scale: 1.0, fallback: false }
}

/// A group of names that mean the same metric across frameworks; on each side the first member present
/// is used.
pub(super) struct Class {
    pub(super) canonical: &'static str,
    pub(super) members: &'static [Member],
    pub(super) rtol: f64,
    /// Compared by default.
    pub(super) loss: bool,
}

pub(super) const CLASSES: &[Class] = &[
    Class {
        canonical: "lm loss",
        members: &[
            m("lm loss"),
            m("learning/lm_loss"),
            m("lm_loss"),
            Member { name: "learning/loss", scale: 1.0, fallback: true },
            Member { name: "loss", scale: 1.0, fallback: true },
        ],
        rtol: DEFAULT_RTOL,
        loss: true,
    },
    Class {
        canonical: "load balancing loss",
        members: &[m("load_balancing_loss"), m("learning/moe_lb_loss"), m("moe_lb_loss")],
        rtol: DEFAULT_RTOL,
        loss: true,
    },
    Class { canonical: "z loss", members: &[m("z_loss"), m("learning/z_loss")], rtol: DEFAULT_RTOL, loss: true },
    // Megatron's TensorBoard name for its validation `lm loss`; MaxText writes eval averages at the train step.
    Class {
        canonical: "validation loss",
        members: &[m("lm loss validation"), m("eval/avg_loss")],
        rtol: DEFAULT_RTOL,
        loss: true,
    },
    // Megatron's grad norm is computed before clipping, as MaxText's raw_grad_norm (not learning/grad_norm).
    Class {
        canonical: "grad norm",
        members: &[m("grad norm"), m("grad-norm"), m("learning/raw_grad_norm"), m("raw_grad_norm")],
        rtol: DEFAULT_RTOL,
        loss: false,
    },
    Class {
        canonical: "learning rate",
        members: &[
            m("learning rate"),
            m("learning-rate"),
            m("learning/current_learning_rate"),
            m("current_learning_rate"),
            m("lr"),
        ],
        rtol: DEFAULT_RTOL,
        loss: false,
    },
    Class {
        canonical: "params norm",
        members: &[m("params norm"), m("params-norm"), m("learning/param_norm"), m("param_norm")],
        rtol: DEFAULT_RTOL,
        loss: false,
    },
    Class {
        canonical: "step time (s)",
        members: &[
            m("iteration-time"),
            Member { name: "elapsed time per iteration (ms)", scale: 1e-3, fallback: false },
            m("perf/step_time_seconds"),
            m("step_time_seconds"),
            m("step_time"),
            m("seconds"),
        ],
        rtol: DEFAULT_RTOL,
        loss: false,
    },
    Class {
        canonical: "throughput (TFLOP/s/device)",
        members: &[
            m("throughput"),
            m("throughput per GPU (TFLOP/s/GPU)"),
            m("perf/per_device_tflops_per_sec"),
            m("per_device_tflops_per_sec"),
            m("TFLOP/s/device"),
        ],
        rtol: DEFAULT_RTOL,
        loss: false,
    },
    Class {
        canonical: "tokens/s/device",
        members: &[m("perf/per_device_tokens_per_sec"), m("per_device_tokens_per_sec"), m("Tokens/s/device")],
        rtol: DEFAULT_RTOL,
        loss: false,
    },
    Class {
        canonical: "global batch size",
        members: &[m("global batch size"), m("batch-size"), m("batch_size")],
        rtol: DEFAULT_RTOL,
        loss: false,
    },
    Class { canonical: "loss scale", members: &[m("loss scale"), m("loss-scale")], rtol: DEFAULT_RTOL, loss: false },
    Class { canonical: "num zeros", members: &[m("num zeros"), m("num-zeros")], rtol: NUM_ZEROS_RTOL, loss: false },
    Class { canonical: "mem-allocated-bytes", members: &[m("mem-allocated-bytes")], rtol: DEFAULT_RTOL, loss: false },
    Class {
        canonical: "mem-max-allocated-bytes",
        members: &[m("mem-max-allocated-bytes")],
        rtol: DEFAULT_RTOL,
        loss: false,
    },
    Class { canonical: "mem-reserved-bytes", members: &[m("mem-reserved-bytes")], rtol: DEFAULT_RTOL, loss: false },
    Class { canonical: "mem-allocated-count", members: &[m("mem-allocated-count")], rtol: DEFAULT_RTOL, loss: false },
];

/// The class and member a name belongs to.
pub(super) fn member_of(name: &str) -> Option<(&'static Class, &'static Member)> {
    CLASSES.iter().find_map(|c| c.members.iter().find(|m| m.name == name).map(|m| (c, m)))
}

/// The class a name (member or canonical name) belongs to.
pub(super) fn class_of(name: &str) -> Option<&'static Class> {
    member_of(name).map(|(c, _)| c).or_else(|| CLASSES.iter().find(|c| c.canonical == name))
}

/// Unit factor of a series name (1 unless the map says otherwise).
pub(super) fn scale_of(name: &str) -> f64 {
    member_of(name).map_or(1.0, |(_, m)| m.scale)
}

/// A loss by its name: contains `loss`, and is not a loss scale or a perplexity.
pub(super) fn is_loss_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("loss") && !n.contains("scale") && !n.contains("ppl") && !n.contains("perplexity")
}
