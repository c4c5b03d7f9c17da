use super::super::program::Program;
use super::super::proto::*;
use super::*;

fn shape(t: i32, dims: &[i64]) -> ShapeProto {
    ShapeProto {
        element_type: t,
        dimensions: dims.to_vec(),
        tuple_shapes: vec![],
        layout: Some(LayoutProto::default()),
    }
}

fn tuple(parts: Vec<ShapeProto>) -> ShapeProto {
    ShapeProto {
        element_type: element::TUPLE,
        tuple_shapes: parts,
        layout: Some(LayoutProto::default()),
        ..Default::default()
    }
}

fn ins(id: i64, name: &str, opcode: &str, s: ShapeProto, operands: &[i64]) -> HloInstructionProto {
    HloInstructionProto {
        id,
        name: name.into(),
        opcode: opcode.into(),
        shape: Some(s),
        operand_ids: operands.to_vec(),
        ..Default::default()
    }
}

fn comp(id: i64, name: &str, root: i64, instructions: Vec<HloInstructionProto>) -> HloComputationProto {
    HloComputationProto { id, name: name.into(), root_id: root, instructions }
}

fn module(computations: Vec<HloComputationProto>) -> HloModuleProto {
    HloModuleProto { name: "m".into(), computations, ..Default::default() }
}

fn cost_of(m: &HloModuleProto, name: &str) -> OpCost {
    let p = Program::new(m);
    let mut model = CostModel::new(&p);
    model.cost(&p.instruction(name).unwrap())
}

#[test]
fn elementwise_ops_cost_the_default_profiles_cycles() {
    let (n, bf16, f32) = (1024, element::BF16, element::F32);
    let m = module(vec![comp(
        1,
        "main",
        5,
        vec![
            ins(1, "p", "parameter", shape(bf16, &[n]), &[]),
            ins(2, "e16", "exponential", shape(bf16, &[n]), &[1]),
            ins(3, "c", "convert", shape(f32, &[n]), &[1]),
            ins(4, "e32", "exponential", shape(f32, &[n]), &[3]),
            ins(5, "d32", "divide", shape(f32, &[n]), &[4, 4]),
        ],
    )]);
    // No bf16 row in the table: 3 an element; f32 exp 86; f32 divide not in the table: 3.
    assert_eq!(cost_of(&m, "e16").flops, 3.0 * 1024.0);
    assert_eq!(cost_of(&m, "e32").flops, 86.0 * 1024.0);
    assert_eq!(cost_of(&m, "d32").flops, 3.0 * 1024.0);
    let c = cost_of(&m, "c");
    assert_eq!((c.bytes_read, c.bytes_written), (2048.0, 4096.0), "operands in, result out");
    assert_eq!(cost_of(&m, "p").bytes(), 0.0, "a parameter touches nothing");
    assert_eq!(cycles("tanh", element::F32), 190.0);
    assert_eq!(cycles("add", element::F32), 3.0);
}

#[test]
fn a_dot_is_two_flops_per_multiply_add() {
    let bf16 = element::BF16;
    let mut dot = ins(3, "dot", "dot", shape(bf16, &[8192, 4096]), &[1, 2]);
    dot.dot_dimension_numbers = Some(DotDimensionNumbers {
        lhs_contracting_dimensions: vec![1],
        rhs_contracting_dimensions: vec![0],
        ..Default::default()
    });
    let m = module(vec![comp(
        1,
        "main",
        3,
        vec![
            ins(1, "a", "parameter", shape(bf16, &[8192, 1024]), &[]),
            ins(2, "b", "parameter", shape(bf16, &[1024, 4096]), &[]),
            dot,
        ],
    )]);
    let c = cost_of(&m, "dot");
    assert_eq!(c.flops, 2.0 * 8192.0 * 4096.0 * 1024.0);
    assert_eq!(c.bytes(), (8192.0 * 1024.0 + 1024.0 * 4096.0 + 8192.0 * 4096.0) * 2.0);
    assert_eq!(c.source, CostSource::Xla);
}

#[test]
fn a_cublas_gemm_is_costed_from_its_backend_config_without_its_workspace() {
    let bf16 = element::BF16;
    let mut gemm = ins(
        3,
        "custom-call.81",
        "custom-call",
        tuple(vec![shape(bf16, &[8192, 4096]), shape(element::S8, &[33_554_432])]),
        &[1, 2],
    );
    gemm.custom_call_target = "__cublas$lt$matmul".into();
    gemm.backend_config = br#"{"operation_queue_id":"0","gemm_backend_config":{"alpha_real":1,
        "dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"],
        "lhs_batch_dimensions":[],"rhs_batch_dimensions":[]}}}"#
        .to_vec();
    let m = module(vec![comp(
        1,
        "main",
        3,
        vec![
            ins(1, "a", "parameter", shape(bf16, &[8192, 1024]), &[]),
            ins(2, "b", "parameter", shape(bf16, &[1024, 4096]), &[]),
            gemm,
        ],
    )]);
    let c = cost_of(&m, "custom-call.81");
    assert_eq!(c.flops, 6.871947673600e10, "XProf's 6.87e10 for this GEMM of the H200 fixture");
    assert_eq!(c.bytes_written, 8192.0 * 4096.0 * 2.0, "the result, not the 32 MiB workspace");
    assert_eq!(c.bytes_read, (8192.0 * 1024.0 + 1024.0 * 4096.0) * 2.0);
    assert_eq!(c.source, CostSource::Library);
    // Without a readable config: unknown, never a panic.
    let mut broken = m.clone();
    broken.computations[0].instructions[2].backend_config = b"{not json".to_vec();
    assert_eq!(cost_of(&broken, "custom-call.81").source, CostSource::Unknown);
}

#[test]
fn fused_ops_reached_from_two_roots_count_twice() {
    // root = mul(convert(p0), exp(sub(p1, bcast(reduce_max(p1))))) and the exp feeds a reduce_sum whose
    // result is broadcast back: the pattern of the H200 attention fusions (fusion.611), where XProf's
    // 42 FLOPs an element come from the exp and subtract being emitted for both roots.
    let (bf16, n, m_) = (element::BF16, [8, 1024], [8]);
    let reducer = comp(
        9,
        "add",
        3,
        vec![
            ins(1, "x", "parameter", shape(bf16, &[]), &[]),
            ins(2, "y", "parameter", shape(bf16, &[]), &[]),
            ins(3, "s", "add", shape(bf16, &[]), &[1, 2]),
        ],
    );
    let mut max = ins(4, "reduce_max", "reduce", shape(bf16, &m_), &[2, 3]);
    max.called_computation_ids = vec![9];
    max.dimensions = vec![1];
    let mut sum = ins(8, "reduce_sum", "reduce", shape(bf16, &m_), &[7, 3]);
    sum.called_computation_ids = vec![9];
    sum.dimensions = vec![1];
    let mut bcast = ins(5, "b", "broadcast", shape(bf16, &n), &[4]);
    bcast.dimensions = vec![0];
    let mut bcast2 = ins(10, "b2", "broadcast", shape(bf16, &n), &[9]);
    bcast2.dimensions = vec![0];
    let fused = comp(
        7,
        "fused",
        12,
        vec![
            ins(1, "p0", "parameter", shape(bf16, &n), &[]),
            HloInstructionProto { parameter_number: 1, ..ins(2, "p1", "parameter", shape(bf16, &n), &[]) },
            ins(3, "zero", "constant", shape(bf16, &[]), &[]),
            max,
            bcast,
            ins(6, "sub", "subtract", shape(bf16, &n), &[2, 5]),
            ins(13, "exp", "exponential", shape(bf16, &n), &[6]),
            ins(7, "mul1", "multiply", shape(bf16, &n), &[1, 13]),
            sum,
            ins(9, "neg", "negate", shape(bf16, &m_), &[8]),
            bcast2,
            ins(11, "add", "add", shape(bf16, &n), &[1, 10]),
            ins(12, "root", "multiply", shape(bf16, &n), &[11, 13]),
        ],
    );
    let mut fusion = ins(3, "fusion.611", "fusion", shape(bf16, &n), &[1, 2]);
    fusion.fusion_kind = "kCustom".into();
    fusion.called_computation_ids = vec![7];
    let m = module(vec![
        reducer,
        fused,
        comp(
            1,
            "main",
            3,
            vec![
                ins(1, "a", "parameter", shape(bf16, &n), &[]),
                ins(2, "b", "parameter", shape(bf16, &n), &[]),
                fusion,
            ],
        ),
    ]);
    let c = cost_of(&m, "fusion.611");
    let (big, small) = (8.0 * 1024.0, 8.0);
    // Per big element: sub ×2, exp ×2, reduce_max ×2 (its broadcast feeds the twice-used sub), mul1, reduce_sum
    // (1023 of 1024 elements), add, root — 3 cycles each, bf16; neg on the small shape.
    let want = 3.0 * (2.0 * big + 2.0 * big + 2.0 * (big - small) + big + (big - small) + big + big) + 3.0 * small;
    assert_eq!(c.flops, want);
    // Bytes: both parameters once (utilization capped at 1) and the output.
    assert_eq!((c.bytes_read, c.bytes_written), (2.0 * big * 2.0, big * 2.0));
}

#[test]
fn fused_attention_is_estimated_from_its_shapes() {
    let bf16 = element::BF16;
    let (b, s, h, d) = (8, 1024, 8, 128);
    let mut fmha =
        ins(4, "fmha", "custom-call", tuple(vec![shape(bf16, &[b, s, h, d]), shape(element::U8, &[16])]), &[1, 2, 3]);
    fmha.custom_call_target = "__cudnn$fmhaSoftmax".into();
    let mut bwd = fmha.clone();
    bwd.id = 5;
    bwd.name = "fmha_bwd".into();
    bwd.custom_call_target = "__cudnn$fmhaSoftmaxBackward".into();
    let m = module(vec![comp(
        1,
        "main",
        5,
        vec![
            ins(1, "q", "parameter", shape(bf16, &[b, s, h, d]), &[]),
            ins(2, "k", "parameter", shape(bf16, &[b, s, h, d]), &[]),
            ins(3, "v", "parameter", shape(bf16, &[b, s, h, d]), &[]),
            fmha,
            bwd,
        ],
    )]);
    let per_gemm = 2.0 * 8.0 * 8.0 * 1024.0 * 1024.0 * 128.0;
    let f = cost_of(&m, "fmha");
    assert_eq!((f.flops, f.source), (2.0 * per_gemm, CostSource::Estimated));
    assert_eq!(cost_of(&m, "fmha_bwd").flops, 5.0 * per_gemm);
}

#[test]
fn unknown_custom_calls_and_broken_graphs_never_panic() {
    let bf16 = element::BF16;
    let mut triton = ins(3, "pallas_call.1", "custom-call", shape(bf16, &[64, 64]), &[1, 2]);
    triton.custom_call_target = "__gpu$xla.gpu.triton".into();
    let mut dangling = ins(4, "dangling", "fusion", shape(bf16, &[64]), &[77, 3]);
    dangling.called_computation_ids = vec![404];
    let mut recursive = ins(5, "loop", "call", shape(bf16, &[64]), &[]);
    recursive.called_computation_ids = vec![1];
    let m = module(vec![comp(
        1,
        "main",
        5,
        vec![
            ins(1, "x", "parameter", shape(bf16, &[64, 64]), &[]),
            ins(2, "y", "parameter", shape(bf16, &[64, 64]), &[]),
            triton,
            dangling,
            recursive,
        ],
    )]);
    let t = cost_of(&m, "pallas_call.1");
    assert_eq!((t.flops, t.source), (0.0, CostSource::Unknown));
    assert_eq!(t.bytes(), 3.0 * 64.0 * 64.0 * 2.0, "its operands and result still move");
    let _ = cost_of(&m, "dangling");
    let _ = cost_of(&m, "loop");
}
