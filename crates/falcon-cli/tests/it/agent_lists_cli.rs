//! What an agent gets per call, on the real binary: `exp list --with-metrics` and `session show` carry each
//! experiment's stored metric summaries (the same numbers `exp show` gives), JSON timestamps come as
//! milliseconds and as RFC 3339 (`created` and `created_iso`), a sweep point that runs its baseline's config
//! is marked a re-run and does not inherit the baseline's `role` label, `exp diff` keeps bookkeeping apart
//! from configuration, and the help texts name every subcommand and put the global options apart.

use crate::common::{code, falcon, json};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

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

/// `ms` as `date -u` writes it, plus the milliseconds: an oracle independent of Falcon's own conversion.
fn date_u(ms: i64) -> String {
    let out = Command::new("date")
        .args(["-u", "-d", &format!("@{}", ms.div_euclid(1000)), "+%Y-%m-%dT%H:%M:%S"])
        .output()
        .expect("date");
    assert!(out.status.success());
    format!("{}.{:03}Z", String::from_utf8(out.stdout).unwrap().trim(), ms.rem_euclid(1000))
}

/// Every `<field>` of `object` that has a `<field>_iso` sibling agrees with it; returns the fields checked.
fn iso_siblings_agree(object: &Value) -> Vec<String> {
    let map = object.as_object().unwrap_or_else(|| panic!("not an object: {object}"));
    let mut checked = Vec::new();
    for (key, iso) in map.iter().filter(|(k, _)| k.ends_with("_iso")) {
        let field = key.strip_suffix("_iso").unwrap();
        match (&map[field], iso) {
            (Value::Null, Value::Null) => {}
            (ms, iso) => assert_eq!(iso.as_str().unwrap(), date_u(ms.as_i64().unwrap()), "`{key}` in {object}"),
        }
        checked.push(field.to_string());
    }
    checked.sort();
    checked
}

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

    // exp show: the record's and each transition's times twice.
    let shown = json(ok(&falcon(d, &["exp", "show", "e-1", "--json"])));
    assert_eq!(iso_siblings_agree(&shown), ["created", "updated"]);
    let history = shown["history"].as_array().unwrap();
    assert!(history.len() >= 3, "{history:?}");
    for t in history {
        assert_eq!(iso_siblings_agree(t), ["at"]);
    }

    // exp list without the flag: records with their ISO times, no metrics.
    let plain = json(ok(&falcon(d, &["exp", "list", "--json"])));
    let items = plain["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    for item in items {
        assert!(item.get("metrics").is_none(), "metrics only when asked for: {item}");
        assert_eq!(iso_siblings_agree(item), ["created", "updated"]);
    }

    // --with-metrics: each row has the summaries `exp show` gives for it, so ranking needs no `exp show`.
    let listed = json(ok(&falcon(d, &["exp", "list", "--with-metrics", "--json"])));
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.iter().map(|i| i["id"].as_str().unwrap()).collect::<Vec<_>>(), ["e-3", "e-2", "e-1"]);
    for item in items {
        let id = item["id"].as_str().unwrap();
        let show = json(ok(&falcon(d, &["exp", "show", id, "--json"])));
        assert_eq!(item["metrics"], show["metrics"], "{id}");
        let step = &item["metrics"]["step_time_s"];
        for field in ["count", "mean", "median", "p90", "min", "max", "last", "spread"] {
            assert!(step.get(field).is_some(), "{id}: `{field}` in {step}");
        }
        assert_eq!(step["count"], 18, "{id}: 20 steps less the default warm-up of 2");
        assert_eq!(item["metrics"]["loss"]["count"], 18);
    }
    // Pages keep them: the second page of one row too.
    let first = json(ok(&falcon(d, &["exp", "list", "--with-metrics", "--limit", "1", "--json"])));
    let cursor = first["next_cursor"].as_str().unwrap().to_string();
    let second =
        json(ok(&falcon(d, &["exp", "list", "--with-metrics", "--limit", "1", "--cursor", &cursor, "--json"])));
    assert_eq!(second["items"][0]["id"], "e-2");
    assert_eq!(second["items"][0]["metrics"], items[1]["metrics"]);
    // The table gives each metric's median.
    let table = text(&falcon(d, &["exp", "list", "--with-metrics"]));
    assert!(table.contains("median of each metric") && table.contains("step_time_s 0.101"), "{table}");

    // session show: every experiment with its metrics and whether it re-runs the goal baseline's config.
    let session = json(ok(&falcon(d, &["session", "show", "s-1", "--json"])));
    assert_eq!(session, submitted, "submit --wait prints what show prints");
    assert_eq!(iso_siblings_agree(&session), ["created"]);
    assert_eq!(session["goal"], gid.as_str());
    let experiments = session["experiments"].as_array().unwrap();
    let rows: Vec<(&str, bool, &str)> = experiments
        .iter()
        .map(|e| {
            (e["id"].as_str().unwrap(), e["baseline_rerun"].as_bool().unwrap(), e["labels"]["role"].as_str().unwrap())
        })
        .collect();
    assert_eq!(rows, [("e-2", true, "sweep"), ("e-3", false, "sweep")], "batch 8 is the baseline's config again");
    assert_eq!(experiments[0]["config_hash"], baseline["config_hash"]);
    assert_eq!(experiments[0]["labels"]["team"], "perf", "the other labels are inherited");
    for (e, listed) in experiments.iter().zip([&items[1], &items[0]]) {
        assert_eq!(iso_siblings_agree(e), ["created", "updated"]);
        assert_eq!(e["metrics"], listed["metrics"], "{}", e["id"]);
    }
    let differences: Vec<(&str, &str)> = session["differences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["path"].as_str().unwrap(), r["group"].as_str().unwrap()))
        .collect();
    assert_eq!(differences, [("config.batch_size", "batch_sequence"), ("name", "bookkeeping")]);
    let shown = text(&falcon(d, &["session", "show", "s-1"]));
    assert_eq!(shown.matches("re-run of baseline").count(), 1, "{shown}");
    assert!(shown.contains("step_time_s 0.101"), "{shown}");
    // Without the role label, the baseline is the only one `--label role=baseline` finds.
    let baselines = json(ok(&falcon(d, &["exp", "list", "--label", "role=baseline", "--json"])));
    assert_eq!(baselines["items"].as_array().unwrap().len(), 1);

    // goal list: the goal's times twice (no claim: no lease).
    let goals = json(ok(&falcon(d, &["goal", "list", "--json"])));
    assert_eq!(iso_siblings_agree(&goals["items"][0]), ["created", "lease_expires", "updated"]);
    assert_eq!(goals["items"][0]["lease_expires_iso"], Value::Null);

    // exp diff: bookkeeping keeps its group in JSON and has its own section after the configuration in text.
    let diff = json(ok(&falcon(d, &["exp", "diff", "e-1", "e-3", "--json"])));
    let groups: Vec<(&str, &str)> = diff["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["path"].as_str().unwrap(), c["group"].as_str().unwrap()))
        .collect();
    assert_eq!(
        groups,
        [
            ("config.batch_size", "batch_sequence"),
            ("goal", "bookkeeping"),
            ("labels.role", "bookkeeping"),
            ("name", "bookkeeping")
        ]
    );
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
