//! Numbers for people: real reports rendered to text (an experiment's `exp show` with machine-sized metrics, its
//! goodput report, `profile analyze` of a CPU XSpace run dir, `profile compare` of two as tables and Markdown)
//! print no measured number with more than 4 significant figures — the issue's `model_flops 12138306560.000000`,
//! `tokens_per_s 6803.958855`, `op time µs 849300.444`. Ids and counts are exempt, by the rule [`violations`]
//! states. JSON keeps the exact values (the contract tests hold it).

use super::experiments::{initialised, show, submit};
use super::profile::{analyze_request, analyze_text};
use falcon_app::render::{goodput, profile_compare, Format};
use falcon_app::requests::{GoodputRequest, ProfileCompareRequest};
use regex::Regex;
use std::path::Path;

/// The most significant figures a measured number may print with.
const MAX_DIGITS: usize = 4;

/// Words that name a unit: an integer just before one is a measurement, not a count.
const UNITS: [&str; 21] = [
    "ns", "µs", "ms", "s", "h", "B", "KiB", "MiB", "GiB", "TiB", "GB", "%", "pp", "chip-s", "FLOP", "FLOPs", "GFLOP",
    "TFLOP", "×", "seconds", "bytes",
];

/// The significant figures of a number token (`12.480` → 5, `0.01235` → 4, `1.5e-7` → 2, `1200` → 2): leading
/// zeros never count; trailing zeros count after a decimal point only.
fn significant_figures(token: &str) -> usize {
    let mantissa = token.trim_start_matches(['+', '-']).split('e').next().unwrap_or_default();
    let digits: String = if mantissa.contains('.') {
        mantissa.replace('.', "").trim_start_matches('0').to_string()
    } else {
        mantissa.trim_start_matches('0').trim_end_matches('0').to_string()
    };
    digits.len().max(1)
}

/// The number tokens of `text` that break the rule, each with the line it is on.
///
/// The rule, made precise:
/// - The text splits into words at white space, table rules and punctuation that never sits inside a number
///   (`│ ┆ | ( ) [ ] , ; = × → … / ± − " ' \``), and a word's final `.` or `:` (the end of a sentence) is dropped.
/// - A word is a *number token* when it is a whole decimal number: an optional sign, digits, an optional fraction,
///   an optional exponent (`-12.14`, `0.000123`, `1.5e-7`). So an id is never one: `e-1`, `s-3`, `batch8`, a hex
///   SHA with a letter, a timestamp (`2026-02-03T04:05:06.123+00:00`), a path (`run1/vm.xplane.pb`).
/// - An *integer* token (no point, no exponent) is an id or a count (occurrences, steps, runs, a program id, a
///   byte count of a file, a SHA of digits only) and is exempt — unless the next word is a unit (`849300 µs`,
///   `123456 chip-s`): then it is a measurement and the rule holds for it.
/// - Every other number token has at most [`MAX_DIGITS`] significant figures ([`significant_figures`]).
fn violations(text: &str) -> Vec<String> {
    let number = Regex::new(r"^[+-]?[0-9]+(\.[0-9]+)?(e[+-]?[0-9]+)?$").unwrap();
    let separators = |c: char| c.is_whitespace() || "│┆|()[],;=×→…/±−\"'`".contains(c);
    let mut out = Vec::new();
    for line in text.lines() {
        let words: Vec<&str> =
            line.split(separators).map(|w| w.strip_suffix(['.', ':']).unwrap_or(w)).filter(|w| !w.is_empty()).collect();
        for (i, word) in words.iter().enumerate() {
            if !number.is_match(word) {
                continue;
            }
            let integer = !word.contains(['.', 'e']);
            let before_unit = words.get(i + 1).is_some_and(|next| UNITS.contains(next));
            if integer && !before_unit {
                continue;
            }
            if significant_figures(word) > MAX_DIGITS {
                out.push(format!("`{word}` in: {line}"));
            }
        }
    }
    out
}

fn assert_readable(what: &str, text: &str) {
    if std::env::var_os("FALCON_PRINT_TEXT").is_some() {
        eprintln!("==== {what}\n{text}");
    }
    let bad = violations(text);
    assert!(
        bad.is_empty(),
        "{what}: numbers with more than {MAX_DIGITS} significant figures:\n{}\n\n{text}",
        bad.join("\n")
    );
}

fn compare_data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-analysis/tests/data/compare").join(name).display().to_string()
}

#[test]
fn the_rule_flags_machine_numbers_and_spares_ids_and_counts() {
    assert_eq!((significant_figures("12.480"), significant_figures("0.01235"), significant_figures("1200")), (5, 4, 2));
    assert_eq!((significant_figures("-1.5e-7"), significant_figures("0")), (2, 1));
    // The issue's lines, as they printed.
    for line in [
        "│ model_flops ┆ 12138306560.000000 │",
        "goodput_percent 59.773888",
        "tokens_per_s 6803.958855",
        "| op time µs | 849300.444 |",
        "held 849301 µs",
        "(123456 chip-s)",
    ] {
        assert_eq!(violations(line).len(), 1, "{line}");
    }
    // As they print now, and ids and counts.
    for line in [
        "│ model_flops ┆ 12.14 G │ tokens_per_s 6804 │ 59.77 % │ 1.5e-7 │ -0.0003123 │",
        "e-1 s-3 batch16 4f1c2a9b3d0e 20260203 program 1234567890123 (15 of 274) n=8",
        "2026-02-03T04:05:06.123456+00:00 /tmp/.tmp12345/run1/vm.xplane.pb 127.0.0.1:8080",
        "snapshot code/abc.tar.gz (1.5 KiB); 123456 events; steps 10..20.",
    ] {
        assert!(violations(line).is_empty(), "{line}: {:?}", violations(line));
    }
}

/// An experiment whose metrics are the issue's machine-sized numbers: `exp show` and its goodput report.
#[tokio::test(flavor = "multi_thread")]
async fn an_experiment_and_its_goodput_print_readable_numbers() {
    let f = initialised().await;
    let dir = f.path();
    let metrics = dir.join("metrics-in.jsonl");
    let lines: Vec<String> = (0..12)
        .map(|i| {
            let i = f64::from(i);
            format!(
                "{{\"step\": {i}, \"step_time_s\": {}, \"model_flops\": 12138306560, \"tokens_per_s\": {}, \
                 \"loss\": {}, \"lr\": 0.000312345, \"goodput_percent\": 59.773888, \"tiny\": 0.0000123456789}}",
                0.1234567 + i * 1e-4,
                6803.958855 + i * 0.123,
                2.456789123 / (1.0 + i * 0.01),
            )
        })
        .collect();
    std::fs::write(&metrics, lines.join("\n") + "\n").unwrap();
    let spec = dir.join("numbers.yaml");
    std::fs::write(
        &spec,
        format!(
            "name: numbers\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'cp {} \
             $FALCON_ARTIFACT_DIR/metrics.jsonl']\nconfig: {{lr: 0.000312345, batch_size: 32768}}\nresources: \
             {{accelerator: cpu}}\n",
            metrics.display()
        ),
    )
    .unwrap();
    submit(&f.app, &spec, true).await.unwrap();
    let detail = show(&f.app, "e-1", None).await.unwrap();
    let text = falcon_app::render::experiment::text(&detail);
    assert!(text.contains("model_flops") && text.contains("12.14 G"), "{text}");
    assert!(text.contains("6804") && text.contains("59.77"), "{text}");
    assert_readable("exp show", &text);

    let report = f.app.goodput_report(&GoodputRequest::default().query()).await.unwrap();
    let text = goodput::report(&report);
    assert!(text.contains("e-1"), "{text}");
    assert_readable("goodput", &text);
}

/// `profile analyze` of a CPU XSpace run dir, and `profile compare` of two as the terminal table and Markdown.
#[tokio::test]
async fn profile_reports_print_readable_numbers() {
    let h = super::harness::app().await;
    let (a, b) = (compare_data("batch8"), compare_data("batch16"));
    for markdown in [false, true] {
        let text = analyze_text(&h.app, &analyze_request(&a, &["all"]), 15, markdown).await.unwrap();
        assert!(text.contains("XLA:CPU ops by total time"), "{text}");
        assert_readable("profile analyze", &text);
    }
    let request = ProfileCompareRequest { a: a.clone(), b: b.clone(), host: None, top: 10 };
    let result = h.app.compare_profiles(&a, &b, None, &request.options().unwrap()).await.unwrap();
    for format in [Format::Table, Format::Md] {
        let text = profile_compare::render(&result, format, 10).unwrap();
        assert!(text.contains("op time "), "{text}");
        assert_readable("profile compare", &text);
    }
}
