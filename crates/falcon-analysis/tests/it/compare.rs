//! A/B compare on real captures: the example workload at batch 8 (A) and 16 (B), and at 2 layers (A, the
//! batch-8 capture) and 3 layers (B: a program of another structure), made by
//! `examples/jax_transformer/capture_pair.sh` (see `tests/data/compare/README.md`), with XLA's own optimized
//! HLO of each run as the ground truth of which op is which computation; and the XProf fixtures compared
//! with themselves.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use falcon_analysis::compare::{compare_files, CompareOptions, MatchedBy, OpStatus, ProfileComparison};
use falcon_analysis::input::find_profiles;
use falcon_core::stats::VerdictKind;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(rel)
}

fn xplane(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-xplane/tests/data").join(name)
}

fn compare(a: &Path, b: &Path) -> ProfileComparison {
    let fa = find_profiles(a, None).unwrap();
    let fb = find_profiles(b, None).unwrap();
    compare_files((&a.display().to_string(), &fa), (&b.display().to_string(), &fb), &CompareOptions::default()).unwrap()
}

fn assert_all_zero(c: &ProfileComparison) {
    assert!(!c.ops.is_empty());
    for o in &c.ops {
        assert_eq!(o.status, OpStatus::Matched, "{o:?}");
        assert_eq!(o.matched_by, Some(MatchedBy::Name), "{o:?}");
        assert_eq!((o.delta_ps, o.delta_us), (0, 0.0), "{o:?}");
        assert!(o.delta_rel.is_none_or(|r| r == 0.0), "{o:?}");
        assert!(o.a_name.is_none());
    }
    assert!(c.categories.iter().all(|k| k.delta_ps == 0 && k.delta_us == 0.0));
    assert_eq!((c.matching.added, c.matching.removed), (0, 0));
    assert_eq!(c.totals.op_time.delta_ps, 0);
    assert!(c.regressions.is_empty() && c.improvements.is_empty());
    assert!(c.added.is_empty() && c.removed.is_empty());
    assert!(c.ops.iter().all(|o| o.confidence == Some(1.0)), "exact name matches are sure");
    assert!(c.roofline.iter().all(|r| !r.crossed_ridge && r.delta_us == 0.0 && r.a_oi == r.b_oi));
}

#[test]
fn a_capture_compared_with_itself_shows_no_change() {
    let a = data("compare/batch8");
    let c = compare(&a, &a);
    assert_all_zero(&c);
    assert_eq!(c.step_time.verdict, VerdictKind::Same, "{:?}", c.step_time);
    assert_eq!(c.step_time.a.n, 8);
    assert_eq!(c.step_time.delta_rel, Some(0.0));
    assert!(!c.regressed());
}

#[test]
fn device_fixtures_compared_with_themselves_show_no_change() {
    let tpu = xplane("tpu_v6e_inference.xplane.pb");
    let c = compare(&tpu, &tpu);
    assert_all_zero(&c);
    assert!(!c.roofline.is_empty(), "the TPU capture has cost data");
    let peaks = c.roofline_peaks.as_ref().unwrap();
    assert!(peaks.a_ridge_point > 0.0 && peaks.a_ridge_point == peaks.b_ridge_point);
    for t in [c.totals.idle_time.unwrap(), c.totals.total_time.unwrap()] {
        assert_eq!(t.delta_ps, 0);
    }
    // No step markers in this capture: nothing to test, and the verdict says so.
    assert_eq!(c.step_time.verdict, VerdictKind::Inconclusive);
    assert!(c.notes.iter().any(|n| n.contains("no step markers")), "{:?}", c.notes);

    let gpu = xplane("gpu_v100x8_tf.xplane.pb");
    let c = compare(&gpu, &gpu);
    assert_eq!(c.step_time.verdict, VerdictKind::Same, "one identical step on each side");
    assert_eq!(c.totals.total_time.unwrap().delta_ps, 0);
}

#[test]
fn on_device_profiles_op_and_idle_deltas_make_up_the_total_time_delta() {
    // Two different real device captures: the identity holds for any pair.
    let c = compare(&xplane("gpu_v100x8_tf.xplane.pb"), &xplane("tpu_v6e_inference.xplane.pb"));
    let (op, idle, total) = (c.totals.op_time, c.totals.idle_time.unwrap(), c.totals.total_time.unwrap());
    assert_eq!(op.delta_ps + idle.delta_ps, total.delta_ps);
    assert!(c.notes.iter().any(|n| n.contains("different devices")), "{:?}", c.notes);
}

#[test]
fn a_cpu_capture_and_a_device_capture_are_not_compared() {
    let err = compare_files(
        ("a", &find_profiles(&data("compare/batch8"), None).unwrap()),
        ("b", &find_profiles(&xplane("tpu_v6e_inference.xplane.pb"), None).unwrap()),
        &CompareOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("cannot compare a cpu profile"), "{err}");
}

/// What holds of every comparison: each op once, deltas that add up exactly, confidences where they belong,
/// and ranked lists of matched ops apart from the lists of added and removed ops.
fn assert_consistent(c: &ProfileComparison) {
    let sum_ps: i64 = c.ops.iter().map(|o| o.delta_ps).sum();
    assert_eq!(sum_ps, c.totals.op_time.delta_ps);
    let by_category: i64 = c.categories.iter().map(|k| k.delta_ps).sum();
    assert_eq!(by_category, c.totals.op_time.delta_ps);
    let a_ops = c.ops.iter().filter(|o| o.status != OpStatus::Added).count();
    let b_ops = c.ops.iter().filter(|o| o.status != OpStatus::Removed).count();
    assert_eq!((a_ops, b_ops), (c.a.ops, c.b.ops));
    let m = &c.matching;
    assert_eq!(m.matched, m.by_name + m.by_deduplicated_name + m.by_fingerprint);
    assert!(m.rejected <= m.removed);
    for o in &c.ops {
        match (o.status, o.confidence) {
            (OpStatus::Matched, Some(conf)) => {
                assert!((m.min_confidence..=1.0).contains(&conf), "{o:?}");
                if o.matched_by == Some(MatchedBy::Name) {
                    assert_eq!(conf, 1.0, "{o:?}");
                    assert!(o.a_name.is_none(), "{o:?}");
                }
            }
            (OpStatus::Matched, None) => panic!("a matched op without confidence: {o:?}"),
            (_, conf) => assert!(conf.is_none() && o.matched_by.is_none(), "{o:?}"),
        }
    }
    assert!(c.regressions.iter().chain(&c.improvements).all(|o| o.status == OpStatus::Matched));
    assert!(c.regressions.windows(2).all(|w| w[0].delta_ps >= w[1].delta_ps));
    assert!(c.improvements.windows(2).all(|w| w[0].delta_ps <= w[1].delta_ps));
    assert!(c.regressions.iter().all(|o| o.delta_ps > 0) && c.improvements.iter().all(|o| o.delta_ps < 0));
    let top = CompareOptions::default().top;
    for (list, status, count) in [(&c.added, OpStatus::Added, m.added), (&c.removed, OpStatus::Removed, m.removed)] {
        assert_eq!(list.len(), count.min(top));
        assert!(list.iter().all(|o| o.status == status), "{list:?}");
        assert!(list.windows(2).all(|w| w[0].delta_ps.abs() >= w[1].delta_ps.abs()), "most self time first");
        // The list holds the ops of that status with the most self time.
        let mut all: Vec<i64> = c.ops.iter().filter(|o| o.status == status).map(|o| o.delta_ps.abs()).collect();
        all.sort_unstable_by(|x, y| y.cmp(x));
        assert_eq!(list.iter().map(|o| o.delta_ps.abs()).collect::<Vec<_>>(), all[..list.len()]);
    }
}

#[test]
fn per_op_deltas_add_up_exactly_to_the_op_time_delta() {
    let c = compare(&data("compare/batch8"), &data("compare/batch16"));
    assert_consistent(&c);
    let sum_ps: i64 = c.ops.iter().map(|o| o.delta_ps).sum();
    assert_eq!(sum_ps, c.totals.op_time.delta_ps);
    let sum_us: f64 = c.ops.iter().map(|o| o.delta_us).sum();
    assert!((sum_us - c.totals.op_time.delta_us).abs() < 1e-6 * c.totals.op_time.delta_us.abs());
    let by_category: i64 = c.categories.iter().map(|k| k.delta_ps).sum();
    assert_eq!(by_category, c.totals.op_time.delta_ps);
    // Every op of either side appears exactly once.
    let a_ops = c.ops.iter().filter(|o| o.status != OpStatus::Added).count();
    let b_ops = c.ops.iter().filter(|o| o.status != OpStatus::Removed).count();
    assert_eq!((a_ops, b_ops), (c.a.ops, c.b.ops));
    // Twice the batch: the step takes much longer, beyond noise.
    assert_eq!(c.step_time.verdict, VerdictKind::Regressed, "{:?}", c.step_time);
    assert!(c.step_time.delta_rel.unwrap() > 0.5);
    assert!(c.regressed());
    // Ranked lists: largest increase / decrease first.
    assert!(c.regressions.windows(2).all(|w| w[0].delta_ps >= w[1].delta_ps));
    assert!(c.improvements.windows(2).all(|w| w[0].delta_ps <= w[1].delta_ps));
    assert!(c.regressions.iter().all(|o| o.delta_ps > 0));
    // XLA:CPU records no costs, but the capture's HLO does: every op of either side is costed (twice the batch,
    // twice the FLOPs for the matmuls), and a note says where the costs come from. Without a measured peak there
    // is no roof to place them against.
    let step_ops: Vec<_> = c.ops.iter().filter(|o| o.program == "jit_step").collect();
    assert!(step_ops.len() > 250, "{}", step_ops.len());
    for o in &step_ops {
        let costed = |occurrences: u64, flops: Option<u64>| occurrences == 0 || flops.is_some();
        assert!(costed(o.a_occurrences, o.a_flops) && costed(o.b_occurrences, o.b_flops), "{o:?}");
    }
    let dots: Vec<f64> = step_ops
        .iter()
        .filter(|o| o.status == OpStatus::Matched && o.category == "dot")
        .filter_map(|o| o.flops_ratio)
        .collect();
    assert!(!dots.is_empty() && dots.iter().all(|r| (r - 2.0).abs() < 1e-9), "{dots:?}");
    assert!(c.notes.iter().any(|n| n.contains("from the capture's own HLO")), "{:?}", c.notes);
}

/// One ENTRY instruction of an optimized HLO module: opcode, fusion kind, JAX op_name, result shape
/// (layouts left out).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Instruction {
    opcode: String,
    kind: String,
    op_name: String,
    shape: String,
}

/// `name → instruction` of the ENTRY computation of an optimized HLO module (gzipped text dump).
fn hlo_instructions(path: &Path) -> HashMap<String, Instruction> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_string(&mut text).unwrap();
    let entry = &text[text.find("ENTRY").expect("an ENTRY computation")..];
    let mut out = HashMap::new();
    for line in entry.lines().skip(1) {
        let line = line.trim_start().trim_start_matches("ROOT ");
        let Some((lhs, rhs)) = line.split_once(" = ") else { continue };
        let name = lhs.trim_start_matches('%').to_string();
        // `<shape> <opcode>(...`; a tuple shape is itself in parentheses.
        let shape_end = if rhs.starts_with('(') {
            let mut depth = 0;
            rhs.char_indices()
                .find(|&(_, ch)| {
                    depth += i32::from(ch == '(') - i32::from(ch == ')');
                    depth == 0
                })
                .map_or(0, |(i, _)| i + 1)
        } else {
            rhs.find(' ').unwrap_or(0)
        };
        let (shape, rest) = rhs.split_at(shape_end);
        let opcode = rest.trim_start().split('(').next().unwrap_or("").to_string();
        let mut shape_text = String::new();
        let mut in_layout = false;
        for ch in shape.chars() {
            match ch {
                '{' => in_layout = true,
                '}' => in_layout = false,
                _ if !in_layout => shape_text.push(ch),
                _ => {}
            }
        }
        let attr = |key: &str| {
            line.find(key).map(|i| {
                let rest = &line[i + key.len()..];
                rest.split([',', '"', ' ']).next().unwrap_or("").to_string()
            })
        };
        let kind = attr("kind=").unwrap_or_default();
        let op_name = line
            .find("op_name=\"")
            .map(|i| line[i + 9..].split('"').next().unwrap_or("").to_string())
            .unwrap_or_default();
        out.insert(name, Instruction { opcode, kind, op_name, shape: shape_text });
    }
    out
}

/// `name → (opcode, fusion kind, JAX op_name)` of the ENTRY instructions of an optimized HLO module.
fn hlo_identities(path: &Path) -> HashMap<String, (String, String, String)> {
    hlo_instructions(path).into_iter().map(|(n, i)| (n, (i.opcode, i.kind, i.op_name))).collect()
}

#[test]
fn renumbered_fusions_are_matched_to_the_same_computation() {
    let c = compare(&data("compare/batch8"), &data("compare/batch16"));
    let ha = hlo_identities(&data("compare/batch8/hlo/jit_step.after_optimizations.txt.gz"));
    let hb = hlo_identities(&data("compare/batch16/hlo/jit_step.after_optimizations.txt.gz"));
    assert!(ha.len() > 300 && hb.len() > 300, "{} {}", ha.len(), hb.len());

    // XLA renumbered many ops between the two runs: taken by name, dozens would pair different computations.
    let same_name_other_computation = ha.iter().filter(|(n, id)| hb.get(*n).is_some_and(|b| b != *id)).count();
    assert!(same_name_other_computation >= 30, "{same_name_other_computation}");

    let (mut checked, mut same, mut renumbered_right) = (0, 0, 0);
    for o in c.ops.iter().filter(|o| o.status == OpStatus::Matched && o.program == "jit_step") {
        let a_name = o.a_name.as_deref().unwrap_or(&o.name);
        let (Some(ia), Some(ib)) = (ha.get(a_name), hb.get(&o.name)) else { continue };
        checked += 1;
        if ia == ib {
            same += 1;
            if a_name != o.name {
                renumbered_right += 1;
            }
        }
    }
    assert!(checked > 250, "{checked}");
    let rate = same as f64 / checked as f64;
    assert!(rate >= 0.95, "{same} of {checked} matched pairs are the same computation");
    assert!(renumbered_right >= 30, "{renumbered_right} renumbered ops matched to their computation");
    assert!(c.matching.by_fingerprint >= 30, "{:?}", c.matching);
}

/// B has a third transformer layer: about a hundred ops A has no counterpart of, and XLA renumbered most
/// of the rest. A pair is made only when it is the same computation: no pair below the threshold, every
/// pair that is not an exact name match the same instruction (opcode, fusion kind, op_name and result shape)
/// by XLA's own optimized HLO of each run, and the ops new in B ranked apart from the regressions.
#[test]
fn a_program_of_another_structure_pairs_only_the_same_computation() {
    let c = compare(&data("compare/batch8"), &data("compare/layers3"));
    assert_consistent(&c);
    let ha = hlo_instructions(&data("compare/batch8/hlo/jit_step.after_optimizations.txt.gz"));
    let hb = hlo_instructions(&data("compare/layers3/hlo/jit_step.after_optimizations.txt.gz"));

    // The pair is hard: names say little, and B's extra layer has ops A has no counterpart of.
    let same_name_other_computation = ha.iter().filter(|(n, i)| hb.get(*n).is_some_and(|j| j != *i)).count();
    assert!(same_name_other_computation >= 50, "{same_name_other_computation}");
    let mut a_count: HashMap<&Instruction, i64> = HashMap::new();
    for i in ha.values() {
        *a_count.entry(i).or_default() += 1;
    }
    let mut new_in_b = 0;
    for i in hb.values() {
        let n = a_count.entry(i).or_default();
        *n -= 1;
        new_in_b += i64::from(*n < 0);
    }
    assert!(new_in_b >= 100, "{new_in_b} instructions of B are not in A");

    let (mut renamed, mut names, mut names_same) = (0, 0, 0);
    for o in c.ops.iter().filter(|o| o.status == OpStatus::Matched && o.program == "jit_step") {
        let a_name = o.a_name.as_deref().unwrap_or(&o.name);
        let (Some(ia), Some(ib)) = (ha.get(a_name), hb.get(&o.name)) else { continue };
        if o.matched_by == Some(MatchedBy::Name) {
            names += 1;
            names_same += usize::from(ia == ib);
        } else {
            renamed += 1;
            assert_eq!(ia, ib, "{a_name} → {}: another computation ({:?})", o.name, o.confidence);
        }
    }
    assert!(renamed >= 200, "{renamed} pairs beyond exact names checked");
    assert_eq!(names_same, names, "exact name matches are the same computation too");
    assert!(names >= 40, "{names}");

    // B is A plus a layer: nearly every op of A has its counterpart, the new layer's ops are `added`.
    let m = &c.matching;
    assert!(m.removed * 100 <= c.a.ops * 3, "{m:?}");
    assert!(m.added >= 100, "{m:?}");
    // The ranked lists: regressions are matched ops (not B's new ops), added ops are new in B by self time.
    assert!(!c.regressions.is_empty() && !c.added.is_empty());
    assert!(c.added.iter().all(|o| o.b_self_time_us > 0.0 && o.a_self_time_us == 0.0 && o.delta_rel.is_none()));
}
