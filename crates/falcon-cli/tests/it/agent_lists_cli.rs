//! What an agent gets per call, at the process boundary of the real binary: the text `exp list --with-metrics` and
//! `exp diff` assemble, and the help texts, which name every subcommand and put the global options apart. The use
//! case's outcomes (metric summaries in lists and sessions, ISO times, re-runs and their labels, bookkeeping kept
//! apart in `exp diff`'s JSON) are tested in process in falcon-app/tests/it/agent_lists.rs.

use crate::common::{code, falcon, json};
use std::path::Path;

/// A spec whose shell workload logs 20 steps of `step_time_s` (0.1, 0.101, 0.102, …) and `loss`.
const BASE: &str = "name: base\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'for i in \
    $(seq 0 19); do echo \"{\\\"step\\\": $i, \\\"step_time_s\\\": 0.10$((i % 3)), \\\"loss\\\": 2.$((9 - i / 3))}\" \
    >> $FALCON_ARTIFACT_DIR/metrics.jsonl; done']\nconfig: {batch_size: 8}\nresources: {accelerator: cpu}\n\
    labels: {role: baseline, team: perf}\n";

/// The sweep over the base: batch 8 (the baseline's config again) and 16.
const SWEEP: &str = "base: base.yaml\nsweep:\n  config.batch_size: [8, 16]\n";

fn ok(out: &std::process::Output) -> &std::process::Output {
    assert_eq!(
        code(out),
        0,
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(out: &std::process::Output) -> String {
    String::from_utf8(ok(out).stdout.clone()).unwrap()
}

/// The process boundary of the lists' text: what the CLI assembles for `exp list --with-metrics` (each metric's
/// median) and `exp diff` (the configuration first, then bookkeeping in a section of its own). The summaries, ISO
/// times and re-runs are tested in process in falcon-app/tests/it/agent_lists.rs.
#[test]
fn lists_and_sessions_carry_metric_summaries_iso_times_and_reruns() {
    let dir = tempfile::tempdir().unwrap();
    let d: &Path = dir.path();
    ok(&falcon(d, &["init"]));
    std::fs::write(d.join("base.yaml"), BASE).unwrap();
    std::fs::write(d.join("sweep.yaml"), SWEEP).unwrap();
    let baseline = json(ok(&falcon(d, &["exp", "submit", "base.yaml", "--wait", "--json"])));
    assert_eq!((baseline["id"].as_str(), baseline["status"].as_str()), (Some("e-1"), Some("COMPLETED")));
    let goal = json(ok(&falcon(
        d,
        &["goal", "create", "--title", "faster", "--metric", "step_time_s", "--baseline", "e-1", "--json"],
    )));
    let gid = goal["id"].as_str().unwrap().to_string();
    let submitted = json(ok(&falcon(d, &["session", "submit", "sweep.yaml", "--goal", &gid, "--wait", "--json"])));
    assert_eq!(submitted["status"], "COMPLETED", "{submitted:#}");

    // The table gives each metric's median.
    let table = text(&falcon(d, &["exp", "list", "--with-metrics"]));
    assert!(table.contains("median of each metric") && table.contains("step_time_s 0.101"), "{table}");

    // exp diff: bookkeeping has its own section after the configuration.
    let lines: Vec<String> = text(&falcon(d, &["exp", "diff", "e-1", "e-3"])).lines().map(str::to_string).collect();
    assert_eq!(lines[0], "config.batch_size: 8 → 16", "{lines:?}");
    assert!(lines[1].starts_with("bookkeeping"), "{lines:?}");
    assert_eq!(
        lines[2..],
        [
            format!("  goal: (absent) → \"{gid}\""),
            "  labels.role: \"baseline\" → \"sweep\"".to_string(),
            "  name: \"base\" → \"base-batch_size16\"".to_string(),
        ]
    );
    let rerun = text(&falcon(d, &["exp", "diff", "e-1", "e-2"]));
    assert!(rerun.starts_with("no configuration differences\nbookkeeping"), "{rerun}");
}

/// The text of `falcon <args> --help`.
fn help(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut all = args.to_vec();
    all.push("--help");
    text(&falcon(dir.path(), &all))
}

#[test]
fn every_group_summary_names_its_subcommands() {
    let top = help(&[]);
    for group in ["exp", "goal", "session", "pool", "profile", "accuracy", "kernel", "config"] {
        let text = help(&[group]);
        // The one-line summary: the first paragraph (clap may wrap it).
        let summary = text.split("\n\n").next().unwrap().replace('\n', " ");
        let commands: Vec<&str> = text
            .split("Commands:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{group}: no commands in\n{text}"))
            .lines()
            .take_while(|l| !l.trim().is_empty())
            // `  name  summary`; a wrapped summary continues further in.
            .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|c| *c != "help")
            .collect();
        assert!(!commands.is_empty(), "{group}");
        let words: Vec<&str> = summary.split(|c: char| !(c.is_alphanumeric() || c == '-')).collect();
        for command in &commands {
            assert!(words.contains(command), "`falcon {group} --help` summary {summary:?} omits `{command}`");
        }
        // The top-level list shows the same summary.
        let line = top.lines().find(|l| l.starts_with(&format!("  {group} "))).unwrap();
        assert!(summary.starts_with(line.trim_start()[group.len()..].trim()), "{line:?} vs {summary:?}");
    }
    let exp = help(&["exp"]);
    assert!(exp.lines().next().unwrap().contains("history"), "{exp}");
    assert!(help(&["goal"]).split("\n\n").next().unwrap().contains("report"));
}

/// Whether a line of `help` declares `flag` (`      --db <URL>  …`, `  -v, --verbose…`), not just mentions it.
fn declares(help: &str, flag: &str) -> bool {
    help.lines().map(str::trim_start).any(|l| {
        let l = if l.len() > 4 && l.as_bytes()[0] == b'-' && &l[2..4] == ", " { &l[4..] } else { l };
        l.starts_with(flag)
    })
}

#[test]
fn global_options_have_their_own_heading() {
    for args in [&["exp", "list"][..], &["goal", "report"], &["session", "submit"], &[]] {
        let text = help(args);
        let (own, global) = text
            .split_once("Global options:\n")
            .unwrap_or_else(|| panic!("{args:?}: no `Global options:` heading in\n{text}"));
        for flag in ["--json", "--config <FILE>", "--data-dir <DIR>", "--db <URL>", "--artifacts <URL>", "--verbose"] {
            assert!(declares(global, flag), "{args:?}: `{flag}` under Global options:\n{global}");
            assert!(!declares(own, flag), "{args:?}: `{flag}` among the command's own options:\n{own}");
        }
    }
    let list = help(&["exp", "list"]);
    let own = list.split("Global options:").next().unwrap();
    assert!(declares(own, "--status") && declares(own, "--with-metrics"), "{own}");
}
