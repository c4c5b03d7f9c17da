//! The rules on records copied from real traces: `pt_fast` (tests/data/h200/pytorch/, a GPT-style step on an
//! H200, bf16 autocast) for GEMMs, attention, norms, losses, copies and the optimizer's tensor lists.

use super::*;

/// A record's owned parts: dims, types, concrete inputs.
type Owned = (Vec<Vec<i64>>, Vec<String>, Vec<String>);

fn rec(dims: &[&[i64]], types: &[&str], concrete: &[&str]) -> Owned {
    (
        dims.iter().map(|d| d.to_vec()).collect(),
        types.iter().map(|t| t.to_string()).collect(),
        concrete.iter().map(|c| c.to_string()).collect(),
    )
}

fn cost_of(name: &str, dims: &[&[i64]], types: &[&str], concrete: &[&str]) -> Costing {
    let (d, t, c) = rec(dims, types, concrete);
    cost(name, &AtenRecord { dims: &d, types: &t, concrete: &c })
}

fn costed(name: &str, dims: &[&[i64]], types: &[&str], concrete: &[&str]) -> AtenCost {
    match cost_of(name, dims, types, concrete) {
        Costing::Costed(c) => c,
        other => panic!("{name}: {other:?}"),
    }
}

const BF16: &str = "c10::BFloat16";

#[test]
fn gemms_are_2mnk_from_their_operands() {
    // pt_fast's LM-head gradient: [8192, 8192] · [8192, 1024].
    let c = costed("aten::mm", &[&[8192, 8192], &[8192, 1024]], &[BF16, BF16], &["", ""]);
    assert_eq!(c.flops, 2.0 * 8192.0 * 8192.0 * 1024.0);
    assert_eq!((c.bytes_read, c.bytes_written), ((8192.0 * 8192.0 + 8192.0 * 1024.0) * 2.0, 8192.0 * 1024.0 * 2.0));
    assert_eq!(c.family, AtenFamily::Gemm);
    // addmm(bias, [8192, 1024], [1024, 1024]): the bias is not an operand of the product.
    let c = costed(
        "aten::addmm",
        &[&[1024], &[8192, 1024], &[1024, 1024], &[], &[]],
        &[BF16, BF16, BF16, "Scalar", "Scalar"],
        &["", "", "", "1", "1"],
    );
    assert_eq!(c.flops, 2.0 * 8192.0 * 1024.0 * 1024.0);
    let c = costed("aten::bmm", &[&[16, 128, 64], &[16, 64, 256]], &["float", "float"], &["", ""]);
    assert_eq!((c.flops, c.bytes_written), (2.0 * 16.0 * 128.0 * 64.0 * 256.0, 16.0 * 128.0 * 256.0 * 4.0));
    let c = costed("baddbmm", &[&[16, 128, 256], &[16, 128, 64], &[16, 64, 256]], &["float"; 3], &["", "", ""]);
    assert_eq!(c.flops, 2.0 * 16.0 * 128.0 * 64.0 * 256.0);
    // Operands that do not multiply are not guessed at.
    assert!(
        matches!(cost_of("aten::mm", &[&[4, 5], &[6, 7]], &[BF16, BF16], &[]), Costing::Unknown(w) if w.contains("do not multiply"))
    );
    assert!(
        matches!(cost_of("aten::mm", &[&[], &[6, 7]], &[BF16, BF16], &[]), Costing::Unknown(w) if w.contains("no recorded shape"))
    );
}

#[test]
fn attention_counts_both_gemms_and_says_it_is_causal() {
    // pt_fast: _scaled_dot_product_cudnn_attention(q, k, v, bias, compute_log_sumexp, dropout_p, is_causal, …).
    let qkv: &[i64] = &[8, 16, 1024, 64];
    let c = costed(
        "aten::_scaled_dot_product_cudnn_attention",
        &[qkv, qkv, qkv, &[], &[], &[], &[], &[], &[]],
        &[BF16, BF16, BF16, "", "Scalar", "Scalar", "Scalar", "Scalar", ""],
        &["", "", "", "", "True", "0.10000000000000001", "True", "False", ""],
    );
    let forward = 4.0 * 8.0 * 16.0 * 1024.0 * 1024.0 * 64.0;
    assert_eq!(c.flops, forward);
    assert_eq!(c.detail.as_deref(), Some("causal (counted in full)"));
    assert!(!c.backward);
    // Its backward (grad_out, q, k, v, out, …): twice the forward.
    let b = costed(
        "aten::_scaled_dot_product_cudnn_attention_backward",
        &[qkv, qkv, qkv, qkv, qkv],
        &[BF16; 5],
        &["", "", "", "", ""],
    );
    assert_eq!((b.flops, b.backward), (2.0 * forward, true));
    // Flash attention's is_causal is its fifth argument; an efficient-attention bias makes it `masked`.
    let f = costed(
        "_scaled_dot_product_flash_attention",
        &[qkv, qkv, qkv, &[], &[]],
        &[BF16; 5],
        &["", "", "", "0.0", "False"],
    );
    assert_eq!((f.flops, f.detail), (forward, None));
    let m = costed(
        "_scaled_dot_product_efficient_attention",
        &[qkv, qkv, qkv, &[8, 16, 1024, 1024], &[], &[], &[]],
        &[BF16; 7],
        &["", "", "", "", "True", "0.0", "False"],
    );
    assert_eq!(m.detail.as_deref(), Some("masked"));
}

#[test]
fn the_model_of_pt_fast_adds_up_from_its_gemms_and_attention() {
    // GPT-style: L 6, d_model 1024, FF 4096, vocab 8192, B·S = 8192 tokens; forward and backward GEMMs (the backward
    // two of each forward's size), the LM head, attention 4·B·H·S²·Dh forward and twice that backward.
    let (l, d, v, t) = (6.0, 1024.0, 8192.0, 8192.0);
    let gemm = |m: i64, k: i64, n: i64| costed("aten::mm", &[&[m, k], &[k, n]], &[BF16, BF16], &["", ""]).flops;
    let tokens = t as i64;
    let per_layer =
        gemm(tokens, 1024, 3072) + gemm(tokens, 1024, 1024) + gemm(tokens, 1024, 4096) + gemm(tokens, 4096, 1024);
    let head = gemm(tokens, 1024, 8192);
    let qkv: &[i64] = &[8, 16, 1024, 64];
    let attn = costed("aten::_scaled_dot_product_cudnn_attention", &[qkv, qkv, qkv], &[BF16; 3], &[]).flops;
    let step = 3.0 * (l * per_layer + head) + 3.0 * l * attn;
    let analytic = 6.0 * (12.0 * d * d * l + d * v) * t + 12.0 * l * 8.0 * 1024.0 * 1024.0 * d;
    assert!((step / analytic - 1.0).abs() < 1e-12, "{step} vs {analytic}");
    assert!((analytic / 4.742e12 - 1.0).abs() < 1e-3, "{analytic}");
}

#[test]
fn convolutions_count_their_output_positions() {
    // convolution(input [2,3,32,32], weight [16,3,3,3], bias, stride [1,1], padding [1,1], dilation [1,1],
    // transposed, output_padding, groups): 32×32 outputs a channel.
    let c = costed(
        "aten::convolution",
        &[&[2, 3, 32, 32], &[16, 3, 3, 3], &[16], &[], &[], &[], &[], &[], &[]],
        &["float"; 9],
        &["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"],
    );
    assert_eq!(c.flops, 2.0 * 2.0 * 16.0 * 32.0 * 32.0 * 27.0);
    // Stride 2, no padding: 15×15; depthwise (groups 3): the weight's second dimension is 1.
    let c = costed(
        "convolution",
        &[&[1, 3, 32, 32], &[3, 1, 3, 3]],
        &["float"; 2],
        &["", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "3"],
    );
    assert_eq!(c.flops, 2.0 * 3.0 * 15.0 * 15.0 * 9.0);
    // The backward counts the gradients its mask asks for.
    let b = costed(
        "aten::convolution_backward",
        &[&[2, 16, 32, 32], &[2, 3, 32, 32], &[16, 3, 3, 3]],
        &["float"; 3],
        &["", "", "", "[16]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", "[True, True, False]"],
    );
    assert_eq!((b.flops, b.backward), (2.0 * 2.0 * 2.0 * 16.0 * 32.0 * 32.0 * 27.0, true));
    assert!(matches!(
        cost_of("convolution", &[&[1, 3, 8, 8], &[3, 3, 3, 3]], &["float"; 2], &["", "", "", "[1]", "[0]", "[1]", "True"]),
        Costing::Unknown(w) if w.contains("transposed")
    ));
}

#[test]
fn the_other_families_from_pt_fast_records() {
    let ln = costed(
        "aten::native_layer_norm",
        &[&[8, 1024, 1024], &[], &[1024], &[1024], &[]],
        &["float", "ScalarList", "float", "float", "Scalar"],
        &["", "[1024]", "", "", "1e-05"],
    );
    assert_eq!((ln.family, ln.flops), (AtenFamily::Norm, 8.0 * 8.0 * 1024.0 * 1024.0));
    let sm = costed("aten::_log_softmax", &[&[8192, 8192], &[], &[]], &[BF16, "Scalar", "Scalar"], &["", "1", "False"]);
    assert_eq!(
        (sm.family, sm.flops, sm.bytes_written),
        (AtenFamily::Softmax, 5.0 * 8192.0 * 8192.0, 8192.0 * 8192.0 * 2.0)
    );
    let emb = costed("aten::embedding", &[&[8192, 1024], &[8, 1024]], &["float", "long int"], &["", ""]);
    assert_eq!((emb.flops, emb.bytes_written), (0.0, 8192.0 * 1024.0 * 4.0));
    let loss = costed("aten::nll_loss_forward", &[&[8192, 8192], &[8192], &[]], &["float", "long int", ""], &[]);
    assert_eq!(loss.flops, 8192.0);
    let copy =
        costed("aten::copy_", &[&[8192, 8192], &[8192, 8192], &[]], &[BF16, "float", "Scalar"], &["", "", "False"]);
    assert_eq!((copy.flops, copy.bytes_read, copy.bytes_written), (0.0, 8192.0 * 8192.0 * 4.0, 8192.0 * 8192.0 * 2.0));
    let add =
        costed("aten::add", &[&[8, 1024, 1024], &[8, 1024, 1024], &[]], &["float", BF16, "Scalar"], &["", "", "1"]);
    assert_eq!((add.family, add.flops), (AtenFamily::Elementwise, 8.0 * 1024.0 * 1024.0));
    // Broadcasting: the largest input sets the element count.
    let bias = costed("aten::add_", &[&[8, 1024, 1024], &[1024]], &["float", "float"], &["", ""]);
    assert_eq!(bias.flops, 8.0 * 1024.0 * 1024.0);
    let sum = costed(
        "aten::sum",
        &[&[8192, 8192], &[], &[], &[]],
        &[BF16, "ScalarList", "Scalar", ""],
        &["", "[0]", "True", ""],
    );
    assert_eq!((sum.family, sum.flops), (AtenFamily::Reduction, 8192.0 * 8192.0));
}

#[test]
fn composites_views_and_the_unknown_are_said_so() {
    for composite in ["aten::linear", "aten::matmul", "aten::scaled_dot_product_attention", "aten::cross_entropy_loss"]
    {
        assert_eq!(cost_of(composite, &[], &[], &[]), Costing::Composite, "{composite}");
    }
    for free in
        ["aten::view", "aten::transpose", "aten::empty_strided", "aten::as_strided", "aten::_local_scalar_dense"]
    {
        assert_eq!(cost_of(free, &[], &[], &[]), Costing::Free, "{free}");
    }
    // pt_fast's optimizer: tensor lists record no shapes.
    let adam = cost_of("aten::_foreach_addcdiv_", &[&[], &[], &[], &[]], &["TensorList"; 3], &[]);
    assert!(matches!(adam, Costing::Unknown(w) if w.contains("tensor lists")));
    assert!(
        matches!(cost_of("aten::some_new_op", &[&[4]], &["float"], &[]), Costing::Unknown(w) if w.contains("no cost rule"))
    );
    // Hostile records: negative or absent sizes cost nothing and never panic.
    let c = costed("aten::mm", &[&[-5, 4], &[4, -3]], &["weird type"; 2], &[]);
    assert_eq!(c.flops, 0.0);
    assert_eq!(element_bytes("c10::Float8_e4m3fn"), Some(1.0));
    assert_eq!(element_bytes("Scalar"), None);
}

fn ev<'a>(name: &'a str, start: i64, dur: i64, r: &'a Owned) -> OpEvent<'a> {
    OpEvent {
        name,
        thread: 1,
        start_ps: start,
        dur_ps: dur,
        record: AtenRecord { dims: &r.0, types: &r.1, concrete: &r.2 },
    }
}

#[test]
fn each_op_is_counted_once_by_its_outermost_costed_call() {
    let none = rec(&[], &[], &[]);
    let mm = rec(&[&[64, 32], &[32, 16]], &[BF16, BF16], &["", ""]);
    let addmm = rec(&[&[16], &[64, 32], &[32, 16]], &[BF16, BF16, BF16], &["", "", ""]);
    let odd = rec(&[&[4]], &["float"], &[""]);
    let gemm = 2.0 * 64.0 * 32.0 * 16.0;
    let events = [
        // linear → t (free) and addmm → (a costed call's callee: not counted again) mm.
        ev("aten::linear", 0, 100, &none),
        ev("aten::t", 1, 2, &none),
        ev("aten::addmm", 10, 80, &addmm),
        ev("aten::mm", 20, 30, &mm),
        // An autograd node around a backward mm: counted.
        ev("AddmmBackward0", 200, 50, &none),
        ev("aten::mm", 210, 30, &mm),
        // An op no rule knows that calls a costed one: its work is counted there, so it is not listed.
        ev("aten::my_fused_thing", 300, 50, &none),
        ev("aten::mm", 310, 20, &mm),
        // One with nothing costed below it: listed, with its time.
        ev("aten::my_other_op", 400, 7_000_000, &odd),
    ];
    let c = count(&events);
    assert!(c.shapes_recorded);
    assert_eq!(c.flops, 3.0 * gemm);
    let names: Vec<(&str, u64)> = c.ops.iter().map(|o| (o.name.as_str(), o.calls)).collect();
    assert_eq!(names, [("aten::mm", 2), ("aten::addmm", 1)]);
    assert_eq!(c.uncosted.len(), 1, "{:?}", c.uncosted);
    assert_eq!((c.uncosted[0].name.as_str(), c.uncosted[0].host_time_us), ("aten::my_other_op", 7.0));
    assert!(c.uncosted[0].why.contains("no cost rule"));
    // Without shapes nothing is costed, and that is said.
    let bare = [ev("aten::mm", 0, 10, &none)];
    let c = count(&bare);
    assert!(!c.shapes_recorded && c.flops == 0.0 && c.uncosted[0].why.contains("no recorded shape"));
}

/// The whole of `pt_fast` (recorded with shapes): its five profiled steps cost the model's analytic FLOPs.
#[test]
fn pt_fast_costs_the_models_flops_a_step() {
    use std::io::Read;
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/h200/pytorch/pt_fast.pt.trace.json.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_string(&mut text).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let list = |v: &serde_json::Value| -> Vec<String> {
        v.as_array().map_or(Vec::new(), |a| a.iter().map(|x| x.as_str().unwrap_or("").to_string()).collect())
    };
    let records: Vec<(String, u64, i64, i64, Owned)> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "cpu_op")
        .map(|e| {
            let a = &e["args"];
            let dims = a["Input Dims"].as_array().map_or(Vec::new(), |d| {
                d.iter()
                    .map(|x| x.as_array().map_or(Vec::new(), |x| x.iter().filter_map(|v| v.as_i64()).collect()))
                    .collect()
            });
            let ps = |k: &str| (e[k].as_f64().unwrap_or(0.0) * 1e6).round() as i64;
            (
                e["name"].as_str().unwrap().to_string(),
                e["tid"].as_u64().unwrap_or(0),
                ps("ts"),
                ps("dur"),
                (dims, list(&a["Input type"]), list(&a["Concrete Inputs"])),
            )
        })
        .collect();
    let events: Vec<OpEvent<'_>> = records
        .iter()
        .map(|(n, t, s, d, r)| OpEvent {
            name: n,
            thread: *t,
            start_ps: *s,
            dur_ps: *d,
            record: AtenRecord { dims: &r.0, types: &r.1, concrete: &r.2 },
        })
        .collect();
    let c = count(&events);
    let per_step = c.flops / 5.0;
    eprintln!("pt_fast: {per_step:.4e} FLOPs a step (analytic 4.742e12); uncosted by host time:");
    for u in c.uncosted.iter().take(8) {
        eprintln!("  {} ×{}: {:.0} µs ({})", u.name, u.calls, u.host_time_us, u.why);
    }
    assert!((per_step / 4.742e12 - 1.0).abs() < 0.01, "{per_step:.4e} FLOPs a step");
    // Every GEMM is 2·M·N·K: mm and addmm rows only, their FLOPs the GEMMs' exactly.
    let gemm: f64 = c.ops.iter().filter(|o| o.family == AtenFamily::Gemm).map(|o| o.flops).sum();
    assert!(gemm / 5.0 > 4.0e12, "{gemm}");
    let attention: Vec<&CostedOp> = c.ops.iter().filter(|o| o.family == AtenFamily::Attention).collect();
    assert_eq!(attention.len(), 2, "forward and backward: {attention:?}");
    assert!(attention.iter().all(|o| o.calls == 30 && o.detail.as_deref() == Some("causal (counted in full)")));
    // What is not costed: the optimizer's tensor lists among them, each named with its time.
    assert!(
        c.uncosted.iter().any(|u| u.name == "aten::_foreach_addcdiv_" && u.why.contains("tensor lists")),
        "{:?}",
        c.uncosted
    );
}
