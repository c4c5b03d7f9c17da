//! "Where does the time go?" on a real XLA:CPU capture of the example workload (batch 16): the programs'
//! HloProtos in the capture describe every op, their name scopes agree with XLA's own optimized-HLO dump of
//! the same run (`hlo/jit_step.after_optimizations.txt.gz`, an independent record), and every breakdown sums
//! to 100 % of op time, with the steps' wall time beside it.

use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;

use falcon_analysis::cpu_ops::cpu_op_profile;
use falcon_analysis::profile::hlo::hlo_index;
use falcon_analysis::profile::time_breakdown::time_breakdown;
use falcon_analysis::steps::detect_steps;

fn run_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/compare/batch16")
}

/// `instruction name → op_name` of the `metadata={op_name="…"}` attributes in XLA's text dump.
fn op_names_in_dump() -> HashMap<String, String> {
    let gz = std::fs::read(run_dir().join("hlo/jit_step.after_optimizations.txt.gz")).unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(gz.as_slice()).read_to_string(&mut text).unwrap();
    let mut out = HashMap::new();
    for line in text.lines() {
        let line = line.trim_start().trim_start_matches("ROOT ");
        let Some(rest) = line.strip_prefix('%') else { continue };
        let Some((name, _)) = rest.split_once(" = ") else { continue };
        if let Some(i) = line.find("metadata={op_name=\"") {
            let tail = &line[i + "metadata={op_name=\"".len()..];
            if let Some(end) = tail.find('"') {
                out.insert(name.to_string(), tail[..end].to_string());
            }
        }
    }
    out
}

#[test]
fn the_cpu_capture_says_where_its_op_time_goes() {
    let space = falcon_xplane::decode_file(run_dir().join("plugins/profile/run1/vm.xplane.pb")).unwrap();
    let ops = cpu_op_profile(&space);
    let index = hlo_index(&space);
    assert!(index.modules >= 1 && index.notes.is_empty(), "{} modules, {:?}", index.modules, index.notes);

    // The capture's own HloProto and XLA's dump agree on the name scope of every jit_step op both describe.
    let dump = op_names_in_dump();
    let mut checked = 0;
    for op in ops.ops.iter().filter(|o| o.hlo_module == "jit_step") {
        let (Some(info), Some(expected)) = (index.get(&op.hlo_module, &op.name), dump.get(&op.name)) else { continue };
        assert_eq!(info.op_name.as_deref(), Some(expected.as_str()), "{}", op.name);
        checked += 1;
    }
    assert!(checked >= 100, "only {checked} jit_step ops checked against the dump");

    let steps = detect_steps(&space);
    let durations: Vec<i64> = steps.steps.iter().map(|s| s.duration_ps).collect();
    let b = time_breakdown(&ops, &index, &durations).expect("op time");
    for rows in [&b.by_category, &b.by_scope, &b.by_source] {
        let sum: f64 = rows.iter().map(|r| r.share).sum();
        assert!((sum - 1.0).abs() < 1e-9, "shares sum to {sum}");
    }
    assert!(b.attributed > 0.95, "attributed {}", b.attributed);
    assert!(!b.by_source.is_empty(), "JAX records source lines through the stack-frame index");
    assert!(b.by_source.iter().any(|r| r.name.contains(".py:")), "{:?}", &b.by_source[..3]);
    assert!(b.by_scope.iter().any(|r| r.name.starts_with("jit(step)")), "{:?}", &b.by_scope[..3]);
    assert!(b.by_category.iter().any(|r| r.name.ends_with("fusion")), "{:?}", b.by_category);
    assert_eq!(b.steps, steps.steps.len());
    let wall = b.wall_time_us.expect("steps in the capture");
    assert!((b.parallelism.unwrap() - b.op_time_us / wall).abs() < 1e-9);
    assert!((b.op_time_us - ops.total_time_us).abs() < 1e-6 * ops.total_time_us);
    eprintln!(
        "op time {:.1} ms over {:.1} ms of {} steps; top category {} {:.1} %, top scope {} {:.1} %, top line {} {:.1} %",
        b.op_time_us / 1e3,
        wall / 1e3,
        b.steps,
        b.by_category[0].name,
        b.by_category[0].share * 100.0,
        b.by_scope[0].name,
        b.by_scope[0].share * 100.0,
        b.by_source[0].name,
        b.by_source[0].share * 100.0
    );
}
