//! The per-element side of the GPU cost model: XLA's clock-cycle table of the default GPU profile and the
//! opcodes XLA counts as elementwise.

use super::super::proto::element;

/// Per-element clock cycles of XLA's default GPU op profile (`sm_86`, from XLA's
/// `xla/service/gpu/model/hlo_op_profiles_data.h`) for `(opcode, element type)`; 3 for a pair it lacks. The
/// table has no bf16 row: every bf16 elementwise op is 3.
pub fn cycles(opcode: &str, element_type: i32) -> f64 {
    use element::*;
    let c = match (opcode, element_type) {
        ("add" | "subtract", F64 | C128) => 97,
        ("multiply", F64) => 97,
        ("multiply", C128) => 270,
        ("atan2", F16) => 482,
        ("atan2", F32) => 486,
        ("atan2", F64) => 3747,
        ("atan2", C64) => 5353,
        ("atan2", C128) => 39027,
        ("cbrt", F16) => 925,
        ("cbrt", F32) => 867,
        ("cbrt", F64) => 6339,
        ("cosine", F16) => 691,
        ("cosine" | "sine", F32) => 662,
        ("cosine", F64) => 1717,
        ("cosine", C128) => 6613,
        ("sine", F64) => 1789,
        ("sine", C128) => 5878,
        ("divide", S8) => 370,
        ("divide", S16) => 367,
        ("divide", S32 | U8) => 306,
        ("divide", S64) => 918,
        ("divide", U16) => 302,
        ("divide", U32) => 115,
        ("divide", U64) => 838,
        ("divide", F64) => 2016,
        ("divide", C64) => 687,
        ("divide", C128) => 7941,
        ("exponential", F16) => 108,
        ("exponential", F32) => 86,
        ("exponential", F64) => 1652,
        ("exponential", C64) => 1360,
        ("exponential", C128) => 4028,
        ("exponential-minus-one", F16) => 396,
        ("exponential-minus-one", F32) => 381,
        ("exponential-minus-one", F64) => 1900,
        ("exponential-minus-one", C64) => 1400,
        ("exponential-minus-one", C128) => 4161,
        ("log", F16) => 266,
        ("log", F32) => 244,
        ("log", F64) => 608,
        ("log", C64) => 950,
        ("log", C128) => 7599,
        ("log-plus-one", F16) => 284,
        ("log-plus-one", F32) => 262,
        ("log-plus-one", F64) => 2073,
        ("log-plus-one", C64) => 842,
        ("log-plus-one", C128) => 6962,
        ("logistic", F16) => 226,
        ("logistic", F32) => 176,
        ("logistic", F64) => 2412,
        ("power", S8) => 392,
        ("power", S16) => 396,
        ("power", S64) => 601,
        ("power", U8) => 388,
        ("power", U16) => 399,
        ("power", U64) => 604,
        ("power", F16) => 975,
        ("power", F32) => 925,
        ("power", F64) => 5511,
        ("power", C64) => 3351,
        ("power", C128) => 18205,
        ("rsqrt", F16) => 97,
        ("rsqrt" | "sqrt", F32) => 75,
        ("rsqrt", F64) => 698,
        ("rsqrt", C64) => 2383,
        ("rsqrt", C128) => 11318,
        ("sqrt", F16) => 97,
        ("sqrt", F64) => 986,
        ("sqrt", C64) => 3193,
        ("sqrt", C128) => 15606,
        ("tanh", F16) => 212,
        ("tanh", F32) => 190,
        ("tanh", F64) => 1609,
        ("tanh", C128) => 9939,
        _ => 3,
    };
    f64::from(c)
}

/// XLA's `IsOpElementwise`.
pub(super) fn is_elementwise_opcode(opcode: &str) -> bool {
    matches!(
        opcode,
        "abs"
            | "round-nearest-afz"
            | "round-nearest-even"
            | "ceil"
            | "count-leading-zeros"
            | "convert"
            | "bitcast-convert"
            | "copy"
            | "cosine"
            | "erf"
            | "exponential"
            | "exponential-minus-one"
            | "floor"
            | "imag"
            | "is-finite"
            | "log"
            | "log-plus-one"
            | "not"
            | "negate"
            | "popcnt"
            | "real"
            | "reduce-precision"
            | "rsqrt"
            | "logistic"
            | "sign"
            | "sine"
            | "sqrt"
            | "cbrt"
            | "tan"
            | "tanh"
            | "add"
            | "atan2"
            | "compare"
            | "complex"
            | "divide"
            | "maximum"
            | "minimum"
            | "multiply"
            | "power"
            | "remainder"
            | "subtract"
            | "and"
            | "or"
            | "xor"
            | "shift-left"
            | "shift-right-arithmetic"
            | "shift-right-logical"
            | "stochastic-convert"
            | "select"
            | "clamp"
    )
}
