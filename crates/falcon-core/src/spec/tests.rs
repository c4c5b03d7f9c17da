use super::*;
use proptest::prelude::*;
use serde_json::json;

const GOOD: &str = "\
name: llama3-8b-fsdp16-remat-full
scenario: benchmark
goal: g-7
baseline: e-41
workload:
  framework: maxtext
  image: us-docker.pkg.dev/proj/repo/maxtext:2026-11
  command: [python3, -m, maxtext.train, model=llama3-8b, \"per_device_batch_size=${config.batch_size}\", --steps, 100]
  env: {XLA_FLAGS: \"--xla_tpu_enable_latency_hiding_scheduler=true\", REMAT: \"${config.remat}\"}
config:
  model: llama3-8b
  parallelism: {dp: 1, fsdp: 16, tp: 1, pp: 1, ep: 1, sp: 1}
  remat: full
  batch_size: 256
  seq_len: 8192
  precision: bf16
resources: {accelerator: v5e-16, slices: 1, zones: [us-west4-a, us-east5-b], capacity: spot}
profile: {enabled: true, start_step: 10, num_steps: 5}
timeout: 1h30m
labels: {team: perf, tier: 1}
";

fn good() -> ExperimentSpec {
    parse_spec(GOOD, "good.yaml").unwrap_or_else(|e| panic!("{e}"))
}

/// GOOD with one line replaced (matched by its start) or, with `new` empty, removed.
fn edit(old_start: &str, new: &str) -> String {
    let mut found = false;
    let out: Vec<&str> = GOOD
        .lines()
        .filter_map(|line| {
            if !found && line.starts_with(old_start) {
                found = true;
                (!new.is_empty()).then_some(new)
            } else {
                Some(line)
            }
        })
        .collect();
    assert!(found, "no line starts with {old_start:?}");
    out.join("\n") + "\n"
}

fn error(text: &str) -> SpecError {
    match parse_spec(text, "bad.yaml") {
        Ok(spec) => panic!("accepted: {spec:?}"),
        Err(e) => e,
    }
}

#[test]
fn a_good_spec_parses_with_defaults_filled_in() {
    let spec = good();
    assert_eq!(spec.name, "llama3-8b-fsdp16-remat-full");
    assert_eq!(spec.scenario, Scenario::Benchmark);
    assert_eq!(spec.goal, Some(GoalId(7)));
    assert_eq!(spec.baseline, Some(ExperimentId(41)));
    assert_eq!(spec.workload.command[6], "100", "a YAML number in the command is taken as text");
    assert_eq!(spec.workload.env["REMAT"], "${config.remat}", "parsing keeps placeholders");
    assert_eq!(spec.config["parallelism"]["fsdp"], 16);
    assert_eq!(spec.resources.accelerator, "v5litepod-16", "aliases are canonicalised");
    assert_eq!(spec.resources.capacity, Capacity::Spot);
    assert_eq!(spec.timeout, Some(5400));
    assert_eq!(spec.priority, 0);
    assert_eq!(spec.retries, 2);
    assert_eq!(spec.labels["tier"], "1");
    assert_eq!(spec.devices(), Some(16));
    assert_eq!(spec.profile, Profile { enabled: true, start_step: 10, num_steps: 5 });

    let minimal =
        "name: m\nscenario: ALGORITHM\nworkload: {framework: jax, command: [python3]}\nresources: {accelerator: cpu}\n";
    let spec = parse_spec(minimal, "m.yaml").unwrap();
    assert_eq!(spec.scenario, Scenario::Algorithm, "scenarios are case-insensitive");
    assert_eq!(spec.config, json!({}));
    assert_eq!((spec.resources.slices, spec.resources.devices, spec.devices()), (1, None, Some(1)));
    assert!(!spec.profile.enabled);
    assert_eq!((spec.timeout, spec.retries), (None, 2));
}

#[test]
fn serialized_specs_parse_back_to_themselves() {
    let spec = good();
    let json = serde_json::to_string_pretty(&spec).unwrap();
    assert!(json.contains("\"timeout\": \"1h30m\""), "{json}");
    assert_eq!(parse_spec(&json, "round.json").unwrap(), spec);
    assert_eq!(parse_spec(&json, "no-extension").unwrap(), spec, "JSON is detected by its `{{`");
}

#[test]
fn unknown_keys_name_the_closest_field() {
    let e = error(&GOOD.replace("resources:", "resouces:"));
    assert_eq!((e.line, e.column, e.path.as_str()), (17, 1, "resouces"));
    assert!(e.message.contains("unknown field `resouces` (did you mean `resources`?)"), "{e}");
    assert!(e.hint.as_deref().unwrap().contains("name, scenario"), "{e:?}");
    assert!(e.to_string().starts_with("bad.yaml:17:1: resouces: unknown field"), "{e}");

    let e = error(&GOOD.replace("start_step", "start_stp"));
    assert_eq!((e.path.as_str(), e.line, e.column), ("profile.start_stp", 18, 26));
    assert!(e.message.contains("did you mean `start_step`"), "{e}");
    let e = error(&GOOD.replace("fsdp: 16", "fdsp: 16"));
    assert_eq!(e.path, "config.parallelism.fdsp");
    assert!(e.message.contains("did you mean `fsdp`"), "{e}");
    let e = error(&format!("{GOOD}completely_unrelated: 1\n"));
    assert!(!e.message.contains("did you mean"), "{e}");
}

#[test]
fn wrong_types_point_at_the_value() {
    let e = error(&GOOD.replace("batch_size: 256", "batch_size: \"big\""));
    assert_eq!((e.path.as_str(), e.line, e.column), ("config.batch_size", 14, 15));
    assert!(e.message.contains("positive integer") && e.message.contains("big"), "{e}");
    let e = error(&GOOD.replace("slices: 1", "slices: two"));
    assert_eq!((e.path.as_str(), e.line, e.column), ("resources.slices", 17, 42));
    assert!(e.message.contains("invalid type"), "{e}");
    let e = error(&GOOD.replace("tier: 1", "tier: [1]"));
    assert_eq!(e.path, "labels.tier");
    let e = error(&GOOD.replace("--steps, 100", "--steps, {a: 1}"));
    assert_eq!(e.path, "workload.command.6");
    for (old, new, path) in [
        ("batch_size: 256", "batch_size: 0", "config.batch_size"),
        ("seq_len: 8192", "seq_len: -1", "config.seq_len"),
        ("batch_size: 256", "batch_size: 2.5", "config.batch_size"),
        ("  precision: bf16", "  precision: 16", "config.precision"),
        ("  remat: full", "  remat: 3", "config.remat"),
        ("  model: llama3-8b", "  model: ''", "config.model"),
        ("fsdp: 16", "fsdp: 0", "config.parallelism.fsdp"),
    ] {
        assert_eq!(error(&GOOD.replace(old, new)).path, path, "{new}");
    }
}

#[test]
fn missing_fields_point_at_their_parent() {
    let e = error(&edit("name:", ""));
    assert_eq!((e.path.as_str(), e.line, e.column), ("", 1, 1));
    assert!(e.message.contains("missing field `name`"), "{e}");
    let e = error(&GOOD.replace("accelerator: v5e-16, ", ""));
    assert_eq!((e.path.as_str(), e.line), ("resources", 17));
    assert!(e.message.contains("missing field `accelerator`"), "{e}");
}

#[test]
fn scenarios_and_accelerators_list_what_is_valid() {
    let e = error(&GOOD.replace("scenario: benchmark", "scenario: benchmrk"));
    assert_eq!((e.path.as_str(), e.line, e.column), ("scenario", 2, 11));
    assert!(e.message.contains("did you mean `benchmark`") && e.message.contains("kernel_bench"), "{e}");
    let e = error(&GOOD.replace("v5e-16", "v5e-17"));
    assert_eq!((e.path.as_str(), e.line, e.column), ("resources.accelerator", 17, 26));
    assert!(e.message.contains("unknown accelerator type `v5e-17` (did you mean `v5e-16`?)"), "{e}");
    assert_eq!(e.hint.as_deref(), Some("did you mean `v5e-16`?"));
}

#[test]
fn parallelism_must_cover_the_devices() {
    let e = error(&GOOD.replace("fsdp: 16", "fsdp: 8"));
    assert_eq!((e.path.as_str(), e.line, e.column), ("config.parallelism", 12, 3));
    assert_eq!(
        e.to_string(),
        "bad.yaml:12:3: config.parallelism: dp×fsdp×tp×pp×ep×sp = 8 but the job has 16 devices (v5litepod-16 × 1 slice)"
    );
    assert!(e.hint.as_deref().unwrap().ends_with("e.g. fsdp: 16"), "{e:?}");
    let e = error(&GOOD.replace("slices: 1", "slices: 2"));
    assert!(e.message.contains("= 16 but the job has 32 devices (v5litepod-16 × 2 slices)"), "{e}");
    let spec = parse_spec(&GOOD.replace("slices: 1", "slices: 2").replace("{dp: 1", "{dp: 2"), "x.yaml").unwrap();
    assert_eq!(spec.devices(), Some(32));
    // Axes left out count as 1; cpu counts resources.devices.
    let cpu = "name: c\nscenario: algorithm\nworkload: {framework: jax, command: [x]}\nconfig: {parallelism: {dp: 4}}\nresources: {accelerator: cpu, devices: 4}\n";
    assert_eq!(parse_spec(cpu, "c.yaml").unwrap().devices(), Some(4));
    let e = error(&cpu.replace("devices: 4", "devices: 2"));
    assert!(e.message.ends_with("= 4 but the job has 2 devices (cpu × 2 devices)"), "{e}");
    let e = error(&GOOD.replace("parallelism: {dp: 1, fsdp: 16, tp: 1, pp: 1, ep: 1, sp: 1}", "parallelism: 16"));
    assert!(e.message.contains("mapping of axes"), "{e}");
}

#[test]
fn resource_mistakes() {
    let cases = [
        ("slices: 1", "slices: 0", "resources.slices", "at least 1"),
        ("capacity: spot", "capacity: reservation", "resources.capacity", "reservation's name"),
        ("capacity: spot", "capacity: spot, reservation: r1", "resources.reservation", "only used"),
        ("capacity: spot", "capacity: spott", "resources.capacity", "unknown variant"),
        ("slices: 1", "slices: 1, topology: 2x8", "resources.topology", "expected `4x4`"),
        ("slices: 1", "slices: 1, devices: 4", "resources.devices", "only for cpu"),
        ("us-east5-b]", "us-west4-a]", "resources.zones.1", "listed twice"),
    ];
    for (old, new, path, words) in cases {
        let e = error(&GOOD.replace(old, new));
        assert_eq!(e.path, path, "{new}: {e}");
        assert!(e.message.contains(words), "{new}: {e}");
    }
    let ok = GOOD.replace("capacity: spot", "capacity: reservation, reservation: r1, topology: 4X4");
    assert_eq!(parse_spec(&ok, "x.yaml").unwrap().resources.reservation.as_deref(), Some("r1"));
}

#[test]
fn gpu_specs_take_a_shape_or_a_model_with_devices() {
    let gpu = |resources: &str| {
        format!("name: g\nscenario: benchmark\nworkload: {{framework: jax, command: [x]}}\nresources: {resources}\n")
    };
    // A one-GPU machine: the shape, or the model and `devices`; one config either way.
    let shape = parse_spec(&gpu("{accelerator: h200-141gb-1}"), "g.yaml").unwrap();
    let model = parse_spec(&gpu("{accelerator: h200-141gb, devices: 1}"), "g.yaml").unwrap();
    assert_eq!((model.resources.accelerator.as_str(), model.resources.devices), ("h200-141gb-1", None));
    assert_eq!((shape.devices(), model.devices()), (Some(1), Some(1)));
    assert_eq!(shape.config_hash(), model.config_hash());
    let four = parse_spec(&gpu("{accelerator: H100-80GB, devices: 4}"), "g.yaml").unwrap();
    assert_eq!((four.resources.accelerator.as_str(), four.devices()), ("h100-80gb-4", Some(4)));
    // `devices` that agree with the shape are fine; others name the shape that would fit.
    assert!(parse_spec(&gpu("{accelerator: h200-141gb-8, devices: 8}"), "g.yaml").is_ok());
    let e = error(&gpu("{accelerator: h200-141gb-8, devices: 1}"));
    assert_eq!(e.path, "resources.devices", "{e}");
    assert!(e.message.contains("h200-141gb-8 has 8 GPUs, not 1"), "{e}");
    assert!(e.hint.as_deref().unwrap().contains("h200-141gb-1"), "{e:?}");
    let e = error(&gpu("{accelerator: h200-141gb, devices: 3}"));
    assert_eq!(e.path, "resources.devices", "{e}");
    assert!(e.message.contains("h200-141gb comes with 1, 2, 4, 8 GPUs, not 3"), "{e}");
}

#[test]
fn durations_commands_profiles_env() {
    let e = error(&GOOD.replace("timeout: 1h30m", "timeout: 2 hours"));
    assert_eq!((e.path.as_str(), e.line, e.column), ("timeout", 19, 10));
    assert!(e.message.contains("invalid duration `2 hours`"), "{e}");
    assert_eq!(parse_spec(&GOOD.replace("timeout: 1h30m", "timeout: 90"), "x.yaml").unwrap().timeout, Some(90));
    assert_eq!(error(&GOOD.replace("timeout: 1h30m", "timeout: 0")).path, "timeout");
    assert_eq!(error(&GOOD.replace("timeout: 1h30m", "timeout: -5")).path, "timeout");

    let e = error(&edit("  command:", "  command: []"));
    assert_eq!((e.path.as_str(), e.line, e.column), ("workload.command", 8, 3));
    assert!(e.message.contains("empty"), "{e}");
    assert_eq!(error(&edit("  command:", "  command: ['  ', x]")).path, "workload.command.0");
    // A NUL byte (YAML's "\0") cannot reach a process: refused at validation, naming the field.
    let e = error(&edit("  command:", "  command: [python3, \"a\\0b\"]"));
    assert_eq!(e.path, "workload.command.1", "{e}");
    assert!(e.message.contains("NUL"), "{e}");
    let e = error(&GOOD.replace("REMAT: \"${config.remat}\"", "REMAT: \"x\\0\""));
    assert_eq!(e.path, "workload.env.REMAT", "{e}");

    let e = error(&GOOD.replace("num_steps: 5", "num_steps: 0"));
    assert_eq!(e.path, "profile.num_steps");
    let off = GOOD.replace("enabled: true, start_step: 10, num_steps: 5", "enabled: false, num_steps: 0");
    assert!(!parse_spec(&off, "x.yaml").unwrap().profile.enabled, "num_steps does not matter when off");
    let implied = GOOD.replace("enabled: true, ", "");
    assert!(parse_spec(&implied, "x.yaml").unwrap().profile.enabled, "a profile block turns profiling on");

    let e = error(&GOOD.replace("REMAT:", "FALCON_ARTIFACT_DIR:"));
    assert_eq!(e.path, "workload.env.FALCON_ARTIFACT_DIR");
    assert!(e.message.contains("set by Falcon"), "{e}");
    assert_eq!(error(&GOOD.replace("REMAT:", "2BAD:")).path, "workload.env.2BAD");
    assert_eq!(error(&GOOD.replace("retries", "x").replace("labels:", "retries: 100\nlabels:")).path, "retries");
    assert_eq!(error(&GOOD.replace("goal: g-7", "goal: e-7")).path, "goal");
}

#[test]
fn retry_on_exit_codes_are_failing_codes_listed_once_with_retries_to_spend() {
    let with = |line: &str| GOOD.replace("labels:", &format!("{line}\nlabels:"));
    let spec = parse_spec(&with("retry_on_exit_codes: [134, 3]"), "x.yaml").unwrap();
    assert_eq!((spec.retry_on_exit_codes, spec.retries), (vec![134, 3], 2));
    assert!(good().retry_on_exit_codes.is_empty(), "default: only preemption is retried");
    for (line, says) in [
        ("retry_on_exit_codes: [0]", "not a failing exit code"),
        ("retry_on_exit_codes: [256]", "not a failing exit code"),
        ("retry_on_exit_codes: [3, 3]", "listed twice"),
        ("retry_on_exit_codes: [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]", "too many"),
        ("retries: 0\nretry_on_exit_codes: [3]", "`retries` is 0"),
    ] {
        let e = error(&with(line));
        assert_eq!(e.path, "retry_on_exit_codes", "{line}: {e}");
        assert!(e.message.contains(says), "{line}: {e}");
    }
    // Not in a spec that does not use it: its canonical form (and so its config hash) is unchanged.
    assert!(!serde_json::to_string(&good()).unwrap().contains("retry_on_exit_codes"));
}

#[test]
fn placeholders_are_checked_at_parse_time_and_substituted() {
    let e = error(&GOOD.replace("${config.remat}", "${config.remt}"));
    assert_eq!((e.path.as_str(), e.line), ("workload.env.REMAT", 9));
    assert!(e.message.contains("`${config.remt}`") && e.message.contains("did you mean `config.remat`"), "{e}");
    let e = error(&GOOD.replace("${config.batch_size}", "${config.batch}"));
    assert_eq!(e.path, "workload.command.4");

    let spec = good();
    let done = substitute(&spec).unwrap();
    assert_eq!(done.workload.command[4], "per_device_batch_size=256");
    assert_eq!(done.workload.env["REMAT"], "full");
    assert_eq!(done.workload.env["XLA_FLAGS"], spec.workload.env["XLA_FLAGS"]);
    let mut changed = spec.clone();
    changed.workload.command.push("--p=${config.parallelism}".into());
    changed.workload.command.push("${config.nope}".into());
    let e = substitute(&changed).unwrap_err();
    assert_eq!((e.field.as_str(), e.placeholder.as_str()), ("workload.command.8", "${config.nope}"));
    changed.workload.command.pop();
    assert_eq!(
        substitute(&changed).unwrap().workload.command[7],
        r#"--p={"dp":1,"ep":1,"fsdp":16,"pp":1,"sp":1,"tp":1}"#
    );
}

#[test]
fn the_hash_covers_config_and_hardware_shape_only() {
    let spec = good();
    let hash = config_hash(&spec);
    assert_eq!(hash.len(), 64);
    assert!(hash.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    assert_eq!(spec.config_hash(), hash);
    assert_eq!(
        canonical_json(&hashed_part(&spec)),
        r#"{"config":{"batch_size":256,"model":"llama3-8b","parallelism":{"dp":1,"ep":1,"fsdp":16,"pp":1,"sp":1,"tp":1},"precision":"bf16","remat":"full","seq_len":8192},"resources":{"accelerator":"v5litepod-16","slices":1}}"#
    );
    let same = |text: String| assert_eq!(config_hash(&parse_spec(&text, "x.yaml").unwrap()), hash, "{text}");
    same(GOOD.replace("v5e-16", "v5litepod-16"));
    same(GOOD.replace("capacity: spot", "capacity: on_demand").replace(", us-east5-b", ""));
    same(GOOD.replace("name: llama3-8b-fsdp16-remat-full", "name: other").replace("timeout: 1h30m", "timeout: 2h"));
    same(
        GOOD.replace("  model: llama3-8b\n", "")
            .replace("  precision: bf16\n", "  precision: bf16\n  model: llama3-8b\n"),
    );
    let differs = |text: String| assert_ne!(config_hash(&parse_spec(&text, "x.yaml").unwrap()), hash, "{text}");
    differs(GOOD.replace("remat: full", "remat: minimal"));
    differs(GOOD.replace("slices: 1", "slices: 2").replace("{dp: 1", "{dp: 2"));
}

#[test]
fn the_falcon_environment() {
    let spec = good();
    let env = falcon_env(&spec, ExperimentId(9), "/a/config.json", "/a/artifacts");
    assert_eq!(env["FALCON_EXP_ID"], "e-9");
    assert_eq!(env["FALCON_PROFILE_NUM_STEPS"], "5");
    assert_eq!(env.len(), 5);
    let mut off = spec;
    off.profile.enabled = false;
    assert_eq!(falcon_env(&off, ExperimentId(9), "c", "a").len(), 3);
}

#[test]
fn documents_that_are_not_specs() {
    let e = parse_spec("[1, 2]", "list.yaml").unwrap_err();
    assert!(e.message.contains("not a list"), "{e}");
    let e = parse_spec("", "empty.json").unwrap_err();
    assert_eq!((e.line, e.column), (1, 1));
    let e = parse_spec("name: [unclosed\n", "s.yaml").unwrap_err();
    assert_eq!(e.hint.as_deref(), Some("the file is not valid YAML"));
    let spec = good();
    let doc = Document::from_value(serde_json::to_value(&spec).unwrap(), "api");
    assert_eq!(spec_from_document(&doc).unwrap(), spec);
}

// -------------------------------------------------------------------------------------- properties

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e9f64..1e9).prop_map(|f| json!(f)),
        "[a-zA-Z0-9 _.:/-]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z_]{1,6}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// `value` as JSON text with every object's keys in the order `order` picks (reversed or rotated).
fn write_reordered(value: &Value, order: usize, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            if order % 2 == 1 {
                entries.reverse();
            }
            if !entries.is_empty() {
                let len = entries.len();
                entries.rotate_left(order % len);
            }
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push_str(": ");
                write_reordered(v, order / 2 + 1, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_reordered(v, order, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

proptest! {
    #[test]
    fn parse_spec_never_panics_on_arbitrary_text(text in any::<String>(), ext in prop_oneof![Just("s.yaml"), Just("s.json"), Just("s")]) {
        let _ = parse_spec(&text, ext);
    }

    #[test]
    fn parse_spec_never_panics_on_yamlish_text(text in "[-:{}\\[\\],'\"#&*!|>? \n\ta-z0-9$.]{0,80}") {
        let _ = parse_spec(&text, "s.yaml");
        let _ = parse_spec(&format!("name: x\nconfig:\n  {text}\n"), "s.yaml");
    }

    #[test]
    fn spec_checks_never_panic_on_arbitrary_values(value in arb_json()) {
        let _ = spec_from_document(&Document::from_value(value.clone(), "v"));
        let wrapped = json!({"name": "x", "scenario": "benchmark", "workload": {"framework": "f", "command": ["a"]},
            "resources": {"accelerator": "cpu"}, "config": value});
        let _ = spec_from_document(&Document::from_value(wrapped, "v"));
    }

    #[test]
    fn canonical_json_is_stable_under_key_reordering(value in arb_json(), order in 0usize..16) {
        let mut text = String::new();
        write_reordered(&value, order, &mut text);
        let reparsed: Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(canonical_json(&reparsed), canonical_json(&value));
        // The same text read as YAML (a superset of JSON) gives the same snapshot.
        let yaml = parse_document(&text, "x.yaml").unwrap();
        prop_assert_eq!(canonical_json(&yaml.value), canonical_json(&value));
        // Canonical JSON is itself JSON that reads back to the value.
        prop_assert_eq!(serde_json::from_str::<Value>(&canonical_json(&value)).unwrap(), value);
    }
}
