//! Tests of the comparison section on a sample comparison with real roofline moves and on a degenerate one.

use super::*;
use crate::render::html::render_page;
use falcon_analysis::compare::{
    CategoryChange, MatchSummary, MatchedBy, MemoryDelta, MfuDelta, OpSource, RooflinePeaks, Side, Totals,
};
use falcon_core::stats::{Direction, SampleStats};

fn side(input: &str, steps: Vec<f64>) -> Side {
    Side {
        input: input.to_string(),
        files: Vec::new(),
        device_type: "TPU v6 lite".to_string(),
        hardware: "tpu".to_string(),
        device_cores: 1,
        step_times_ms: steps,
        ops: 3,
        op_time_ps: 1_000_000,
        total_time_ps: Some(2_000_000),
        idle_time_ps: Some(1_000_000),
        mfu: Some(0.3),
        launch: None,
        notes: vec!["a <note>".to_string()],
    }
}

fn verdict(kind: VerdictKind, a: Option<f64>, b: Option<f64>) -> Verdict {
    Verdict {
        metric: "step_time_s".to_string(),
        direction: Direction::LowerIsBetter,
        verdict: kind,
        a: SampleStats { n: 3, median: a, mean: a },
        b: SampleStats { n: 3, median: b, mean: b },
        delta_rel: Some(0.1),
        ci_low_rel: Some(0.05),
        ci_high_rel: Some(0.15),
        p_value: Some(0.001),
        runs: None,
        between_run_cv: None,
        repeats_needed: None,
        min_effect: Some(0.02),
        notes: Vec::new(),
    }
}

fn td(a: f64, b: f64) -> TimeDelta {
    TimeDelta { a_us: a, b_us: b, delta_us: b - a, delta_ps: ((b - a) * 1e6) as i64, delta_rel: Some((b - a) / a) }
}

fn op(name: &str, a: f64, b: f64) -> OpChange {
    OpChange {
        name: name.to_string(),
        a_name: None,
        program: "jit_step".to_string(),
        category: "fusion".to_string(),
        status: OpStatus::Matched,
        matched_by: Some(MatchedBy::Fingerprint),
        confidence: Some(0.934),
        a_self_time_us: a,
        b_self_time_us: b,
        delta_us: b - a,
        delta_rel: Some((b - a) / a),
        delta_ps: ((b - a) * 1e6) as i64,
        a_occurrences: 1,
        b_occurrences: 1,
        a_flops: None,
        b_flops: None,
        flops_ratio: None,
        a_bytes: None,
        b_bytes: None,
        a_flop_rate: None,
        b_flop_rate: None,
        a_bandwidth: None,
        b_bandwidth: None,
        a_bound_by: None,
        b_bound_by: None,
    }
}

fn rl(name: &str, a: (f64, f64), b: (f64, f64), crossed: bool, b_us: f64, delta: f64) -> RooflineChange {
    RooflineChange {
        name: name.to_string(),
        category: "fusion".to_string(),
        a_oi: a.0,
        a_flop_rate: a.1,
        b_oi: b.0,
        b_flop_rate: b.1,
        a_bound_by: "HBM".to_string(),
        b_bound_by: if crossed { "Compute" } else { "HBM" }.to_string(),
        crossed_ridge: crossed,
        b_self_time_us: b_us,
        delta_us: delta,
    }
}

/// A comparison with real A→B roofline moves: 12 ops, two of them (outside the top 4 by B time) crossed
/// the ridge.
fn sample() -> ProfileComparison {
    let mut roofline: Vec<RooflineChange> = (0..12)
        .map(|i| {
            let f = 1.0 + i as f64;
            rl(&format!("fusion.{i}"), (0.5 * f, 300.0 * f), (0.7 * f, 450.0 * f), false, 1000.0 / f, -10.0 * f + 30.0)
        })
        .collect();
    roofline[9] = rl("convolution.<9>", (200.0, 2e5), (900.0, 6e5), true, 100.0, -40.0);
    roofline[11] = rl("dot&11", (900.0, 7e5), (300.0, 3e5), true, 80.0, 25.0);
    ProfileComparison {
        a: side("exp-<a>", vec![10.0, 11.0, 10.5, 12.0]),
        b: side("exp-\"b\"", vec![11.0, 12.5, 11.8, 12.2]),
        op_source: OpSource::Device,
        step_time: verdict(VerdictKind::Regressed, Some(0.0105), Some(0.012)),
        mfu: MfuDelta { a: Some(0.3), b: Some(0.28), delta: Some(-0.02), verdict: None },
        totals: Totals {
            op_time: td(100.0, 120.0),
            idle_time: Some(td(50.0, 40.0)),
            total_time: Some(td(150.0, 160.0)),
        },
        ops: vec![op("fusion.1", 10.0, 30.0), op("fusion.2", 30.0, 10.0)],
        categories: vec![CategoryChange {
            category: "fusion".to_string(),
            a_self_time_us: 40.0,
            b_self_time_us: 40.0,
            delta_us: 0.0,
            delta_rel: Some(0.0),
            delta_ps: 0,
            a_ops: 2,
            b_ops: 2,
            a_flops: Some(10),
            b_flops: Some(10),
            a_bytes: None,
            b_bytes: None,
            a_flop_rate: Some(1.0),
            b_flop_rate: None,
        }],
        roofline,
        roofline_peaks: Some(RooflinePeaks {
            a_peak_flop_rate: 918_000.0,
            b_peak_flop_rate: 459_000.0,
            a_peak_hbm_bw: 1525.5,
            b_peak_hbm_bw: 800.0,
            a_ridge_point: 560.4,
            b_ridge_point: 534.3,
        }),
        regressions: vec![op("fusion.1 <script>alert(1)</script>", 10.0, 30.0)],
        improvements: vec![op("fusion.2", 30.0, 10.0)],
        added: vec![OpChange {
            status: OpStatus::Added,
            matched_by: None,
            confidence: None,
            a_occurrences: 0,
            b_occurrences: 7,
            delta_rel: None,
            ..op("ynn_fusion.70 <new>", 0.0, 42.5)
        }],
        removed: Vec::new(),
        memory: Some(MemoryDelta {
            a_peak_bytes: 1 << 30,
            b_peak_bytes: 3 << 29,
            delta_peak_bytes: 1 << 29,
            a_step_growth_bytes: Some(0.0),
            b_step_growth_bytes: Some(1024.0),
            delta_step_growth_bytes: Some(1024.0),
            a_leak_suspected: false,
            b_leak_suspected: true,
        }),
        hosts: Vec::new(),
        straggler: None,
        matching: MatchSummary {
            matched: 12,
            by_name: 10,
            by_deduplicated_name: 1,
            by_fingerprint: 1,
            added: 1,
            removed: 0,
            min_confidence: 0.8,
            rejected: 0,
        },
        notes: vec!["note with & and <b>".to_string()],
    }
}

/// Everything empty or non-finite.
fn degenerate() -> ProfileComparison {
    let mut c = sample();
    c.a.step_times_ms = vec![f64::NAN, f64::INFINITY];
    c.b.step_times_ms = Vec::new();
    c.step_time = Verdict {
        delta_rel: None,
        ci_low_rel: Some(f64::NAN),
        ci_high_rel: None,
        p_value: Some(f64::NAN),
        ..verdict(VerdictKind::Inconclusive, None, Some(f64::INFINITY))
    };
    c.mfu = MfuDelta { a: Some(f64::NAN), b: None, delta: Some(f64::INFINITY), verdict: None };
    c.totals = Totals {
        op_time: TimeDelta { a_us: 0.0, b_us: 0.0, delta_us: 0.0, delta_ps: 0, delta_rel: None },
        idle_time: None,
        total_time: None,
    };
    c.ops.clear();
    c.categories.clear();
    c.regressions = vec![OpChange { delta_us: f64::NAN, ..op("x", f64::NAN, f64::INFINITY) }];
    c.improvements.clear();
    c.roofline = vec![
        rl("zero", (0.0, 0.0), (0.0, 0.0), false, 0.0, 0.0),
        rl("nan", (f64::NAN, 1.0), (1.0, f64::INFINITY), true, f64::NAN, f64::NAN),
        rl("same", (1.0, 1.0), (1.0, 1.0), false, 1.0, 0.0),
    ];
    c.roofline_peaks = Some(RooflinePeaks {
        a_peak_flop_rate: 0.0,
        b_peak_flop_rate: f64::NAN,
        a_peak_hbm_bw: 0.0,
        b_peak_hbm_bw: f64::INFINITY,
        a_ridge_point: 0.0,
        b_ridge_point: f64::NAN,
    });
    c.memory = None;
    c
}

fn assert_clean(html: &str) {
    for bad in ["NaN", "inf\"", "=\"inf", "Infinity", "\"-0\""] {
        assert!(!html.contains(bad), "output contains {bad:?}");
    }
    let lower = html.to_lowercase();
    let allowed = lower.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
    let http = lower.matches("http://").count() + lower.matches("https://").count();
    assert_eq!(http, allowed, "only the SVG namespace may name a URL");
    assert!(!lower.contains("<script"), "no scripts");
    assert!(!lower.contains("url("), "no external references from CSS");
}

#[test]
fn section_escapes_names_and_is_clean() {
    let c = sample();
    let html = render_page("A <vs> B", &[render_section(&c, 4)]);
    assert!(!html.contains("<script>alert"), "op names are escaped");
    assert!(html.contains("fusion.1 &lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("<title>A &lt;vs&gt; B</title>"));
    assert!(html.contains("exp-&quot;b&quot;"));
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    for word in ["regressed", "step time", "MFU", "memory peak", "leak suspected"] {
        assert!(html.contains(word), "missing {word}");
    }
    assert_eq!(html.matches("<svg").count(), 3, "roofline, steps and delta charts");
    assert_clean(&html);
}

/// Matched ops say how they were paired; ops of one side only have tables of their own, by self time.
#[test]
fn ops_of_one_side_are_listed_apart_from_the_ranked_changes() {
    let c = sample();
    let html = render_section(&c, 4);
    assert!(html.contains("fingerprint (0.93)"), "the confidence of a matched op");
    let added = html.find("<h3>Added ops (B only, 1 of 1)</h3>").expect("an added-ops table");
    let regressions = html.find("<h3>Regressions (matched ops, B slower)</h3>").unwrap();
    assert!(regressions < added);
    let after = &html[added..];
    assert!(after.contains("ynn_fusion.70 &lt;new&gt;") && after.contains("42.5"), "{after}");
    assert!(!html[regressions..added].contains("ynn_fusion.70"), "an added op is no regression");
    assert!(html.contains("<h3>Removed ops (A only, 0 of 0)</h3>") && html.contains("No op of A is missing from B."));
    assert!(html.contains("min confidence") && html.contains("0.80"));
    assert_clean(&html);
}

/// The chart's arrows: the top 4 by B time plus the two that crossed the ridge, one group each.
#[test]
fn roofline_has_one_arrow_per_shown_op() {
    let c = sample();
    let chart = roofline_chart(&c, 4);
    assert_eq!(chart.matches("class=\"op-move\"").count(), 6, "{chart}");
    assert_eq!(chart.matches("class=\"arrow\"").count(), 6, "every op moved");
    assert_eq!(chart.matches("class=\"roof\"").count(), 2, "A and B roofs differ");
    assert!(chart.contains("stroke-opacity=\"0.25\""), "crossed ops are highlighted");
    assert!(chart.contains("convolution.&lt;9&gt;") && chart.contains("dot&amp;11"));
    let table = roofline_table(&c, 4);
    assert!(table.find("convolution.&lt;9&gt;").unwrap() < table.find("fusion.0").unwrap(), "crossed first");
    // same frames: one roof; an op that did not move has no arrow line but still its group
    let mut same = c.clone();
    same.roofline_peaks = Some(RooflinePeaks {
        b_peak_flop_rate: 918_000.0,
        b_peak_hbm_bw: 1525.5,
        b_ridge_point: 560.4,
        ..c.roofline_peaks.clone().unwrap()
    });
    same.roofline = vec![rl("still", (1.0, 10.0), (1.0, 10.0), false, 5.0, 0.0)];
    let chart = roofline_chart(&same, 4);
    assert_eq!(chart.matches("class=\"roof\"").count(), 1);
    assert_eq!(chart.matches("class=\"op-move\"").count(), 1);
    assert_eq!(chart.matches("class=\"arrow\"").count(), 0);
    assert_clean(&chart);
}

#[test]
fn degenerate_inputs_render_without_nan() {
    let c = degenerate();
    let html = render_page("degenerate", &[render_section(&c, 10)]);
    assert_clean(&html);
    let chart = roofline_chart(&c, 10);
    assert_eq!(chart.matches("class=\"op-move\"").count(), 1, "only the positive finite op is placed");
    // no roofline at all, no steps, no ops, top 0
    let mut none = degenerate();
    none.roofline_peaks = None;
    none.a.step_times_ms.clear();
    none.regressions.clear();
    let html = render_section(&none, 0);
    assert!(html.contains("No roofline") && html.contains("No per-step times") && html.contains("No op changed"));
    assert!(!html.contains("<svg"));
    assert_clean(&html);
    // one step each, identical: zero ranges
    let mut flat = sample();
    flat.a.step_times_ms = vec![5.0];
    flat.b.step_times_ms = vec![5.0];
    flat.regressions = vec![op("z", 1.0, 1.0)];
    flat.improvements.clear();
    assert_clean(&render_section(&flat, 3));
    // roofline entries but empty list
    let mut empty = sample();
    empty.roofline.clear();
    assert!(roofline_chart(&empty, 3).contains("No roofline"));
}
