//! The checks of a parsed spec document: unknown keys (with the closest known one, [`did_you_mean`]), the
//! types, then what the types cannot say (names, commands, environment, resources against the catalog, the
//! `config` keys Falcon reads and the parallelism product), in the order a person would fix them.

use super::{
    substitute, Capacity, Document, ExperimentSpec, FieldPath, SpecError, Spot, CODE_FIELDS, MAX_RETRIES,
    PARALLELISM_AXES, POSITIVE_CONFIG_KEYS, PROFILE_FIELDS, RESERVED_ENV, RESOURCES_FIELDS, SPEC_FIELDS,
    WORKLOAD_FIELDS,
};
use crate::catalog::{self, AcceleratorType};
use crate::config::Platform;
use serde_json::Value;

/// Checks a parsed document and builds the spec: unknown keys (with the closest known one), types, then
/// the checks of [`parse_spec`](super::parse_spec). Errors point at the document's [`SourceMap`](super::SourceMap).
pub fn spec_from_document(doc: &Document) -> Result<ExperimentSpec, SpecError> {
    let root = match &doc.value {
        Value::Object(map) => map,
        // The value is not shown: the file may be anything (`/etc/shadow`), and errors are read by others.
        other => {
            return Err(doc
                .error(&[], format!("not an experiment spec: a spec is a mapping of fields, not {}", kind_of(other)))
                .with_hint(format!("fields: {}", SPEC_FIELDS.join(", "))));
        }
    };
    if !root.is_empty() && !root.keys().any(|k| SPEC_FIELDS.contains(&k.as_str())) {
        // None of its keys is a spec field: not a spec with a typo but another file, whose keys are not shown.
        return Err(doc
            .error(&[], format!("not an experiment spec: none of its {} top-level keys is a spec field", root.len()))
            .with_hint(format!("a spec's fields: {}", SPEC_FIELDS.join(", "))));
    }
    check_keys(doc, &[], root, &SPEC_FIELDS)?;
    for (field, known) in [
        ("workload", &WORKLOAD_FIELDS[..]),
        ("resources", &RESOURCES_FIELDS),
        ("profile", &PROFILE_FIELDS),
        ("code", &CODE_FIELDS),
    ] {
        if let Some(Value::Object(map)) = root.get(field) {
            check_keys(doc, &[field.to_string()], map, known)?;
        }
    }
    if let Some(Value::Object(parallelism)) = root.get("config").and_then(|c| c.get("parallelism")) {
        check_keys(doc, &["config".to_string(), "parallelism".to_string()], parallelism, &PARALLELISM_AXES)?;
    }
    let mut spec: ExperimentSpec = serde_path_to_error::deserialize(&doc.value).map_err(|e| {
        let path: FieldPath = e
            .path()
            .iter()
            .filter_map(|seg| match seg {
                serde_path_to_error::Segment::Map { key } => Some(key.clone()),
                serde_path_to_error::Segment::Seq { index } => Some(index.to_string()),
                _ => None,
            })
            .collect();
        doc.error(&path, e.into_inner().to_string())
    })?;
    check(&mut spec, doc)?;
    Ok(spec)
}

/// `a string`, `a list`, … without the value (for a file that may not be a spec at all).
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// `a string`, `a list`, … for messages.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(n) => format!("a number ({n})"),
        Value::String(s) => format!("a string ({s:?})"),
        Value::Array(_) => "a list".to_string(),
        Value::Object(_) => "a mapping".to_string(),
    }
}

fn p(parts: &[&str]) -> FieldPath {
    parts.iter().map(|s| s.to_string()).collect()
}

/// Refuses keys of `map` (at `at`) that are not in `known`, suggesting the closest one.
fn check_keys(
    doc: &Document,
    at: &[String],
    map: &serde_json::Map<String, Value>,
    known: &[&str],
) -> Result<(), SpecError> {
    // Report the first unknown key in file order, so the error a person sees is the first one in the file.
    let mut unknown: Vec<(Spot, &String)> = map
        .keys()
        .filter(|k| !known.contains(&k.as_str()))
        .map(|k| {
            let mut path = at.to_vec();
            path.push(k.clone());
            (doc.source.key_spot(&path), k)
        })
        .collect();
    unknown.sort_by_key(|(spot, _)| (spot.line, spot.column));
    let Some((spot, key)) = unknown.into_iter().next() else { return Ok(()) };
    let mut path = at.to_vec();
    path.push(key.clone());
    let mut message = format!("unknown field `{key}`");
    if let Some(best) = did_you_mean(key, known) {
        message.push_str(&format!(" (did you mean `{best}`?)"));
    }
    let whose = if at.is_empty() { "spec".to_string() } else { format!("`{}`", at.join(".")) };
    Err(SpecError::at(spot, &path, message).with_hint(format!("the {whose} fields are: {}", known.join(", "))))
}

/// The candidate closest to `input` by edit distance (case-insensitive), if close enough to be a typo.
pub fn did_you_mean<'a>(input: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let lower = input.to_lowercase();
    let (distance, best) =
        candidates.iter().map(|c| (levenshtein(&lower, &c.to_lowercase()), *c)).min_by_key(|(d, _)| *d)?;
    let limit = (input.chars().count() / 3).max(1);
    (distance <= limit).then_some(best)
}

/// Edit distance by characters, counting a swap of two neighbours as one edit (optimal string alignment).
fn levenshtein(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // rows[i][j]: distance between a[..i] and b[..j].
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1).min(rows[i][j - 1] + 1).min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

/// The checks made after the types are right, in the order a person would fix them.
fn check(spec: &mut ExperimentSpec, doc: &Document) -> Result<(), SpecError> {
    let err = |parts: &[&str], message: String| doc.error(&p(parts), message);

    let name = spec.name.trim();
    if name.is_empty() || name.chars().count() > 128 || spec.name.chars().any(char::is_control) {
        return Err(err(&["name"], "must be 1–128 characters without control characters".into()));
    }
    if spec.workload.framework.trim().is_empty() {
        return Err(err(&["workload", "framework"], "must not be empty (e.g. `maxtext`, `jax`)".into()));
    }
    match spec.workload.command.first() {
        None => return Err(err(&["workload", "command"], "is empty: name the program to run".into())),
        Some(program) if program.trim().is_empty() => {
            return Err(err(&["workload", "command", "0"], "the program to run is blank".into()));
        }
        Some(_) => {}
    }
    // No program argument or environment value can hold a NUL byte: refused here, not retried by a worker.
    for (i, item) in spec.workload.command.iter().enumerate() {
        if item.contains('\0') {
            let index = i.to_string();
            return Err(err(
                &["workload", "command", &index],
                "contains a NUL byte, which no program argument can hold".into(),
            ));
        }
    }
    for (key, value) in &spec.workload.env {
        if value.contains('\0') {
            return Err(err(
                &["workload", "env", key],
                "contains a NUL byte, which no environment value can hold".into(),
            ));
        }
    }
    for key in spec.workload.env.keys() {
        let path = ["workload", "env", key.as_str()];
        let valid = !key.is_empty()
            && !key.starts_with(|c: char| c.is_ascii_digit())
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(doc_key_error(doc, &path, format!("`{key}` is not a valid environment variable name"))
                .with_hint("use letters, digits and `_`, not starting with a digit"));
        }
        if RESERVED_ENV.contains(&key.as_str()) {
            return Err(doc_key_error(doc, &path, format!("`{key}` is set by Falcon for every workload"))
                .with_hint(format!("Falcon sets {}; read them instead of setting them", RESERVED_ENV.join(", "))));
        }
    }

    let accel = check_resources(spec, doc)?;
    let devices = match accel.platform {
        Platform::Cpu => spec.resources.devices.unwrap_or(1),
        _ => accel.chips.saturating_mul(spec.resources.slices),
    };
    check_config(spec, doc, &accel, devices)?;

    if spec.profile.enabled && spec.profile.num_steps == 0 {
        return Err(err(&["profile", "num_steps"], "must be at least 1 when profiling is enabled".into())
            .with_hint("set `enabled: false` to run without a profile"));
    }
    if spec.retries > MAX_RETRIES {
        return Err(err(&["retries"], format!("{} is too many; at most {MAX_RETRIES}", spec.retries)));
    }
    check_retry_codes(spec, doc)?;
    if spec.timeout == Some(0) {
        return Err(err(&["timeout"], "must be longer than zero".into()));
    }
    for key in spec.labels.keys() {
        if key.trim().is_empty() {
            return Err(err(&["labels"], "a label needs a name".into()));
        }
    }
    if let Some(code) = &spec.code {
        if let Some(problem) = super::Code::repo_problem(&code.repo) {
            return Err(err(&["code", "repo"], problem));
        }
        if let Some(problem) = super::Code::ref_problem(&code.reference) {
            return Err(err(&["code", "ref"], problem).with_hint("e.g. `main`, `v1.2`, `4f1c2a9`, `main~3`"));
        }
    }
    // Placeholders must resolve now, not when the job starts.
    if let Err(e) = substitute(spec) {
        let path: FieldPath = e.field.split('.').map(str::to_string).collect();
        return Err(doc
            .error(&path, format!("`{}`: {}", e.placeholder, e.reason))
            .with_hint("placeholders name a path in `config`, e.g. `${config.batch_size}`"));
    }
    spec.resources.accelerator = accel.name.clone();
    if accel.platform == Platform::Gpu {
        // The shape says it: `h200-141gb, devices: 1` and `h200-141gb-1` are one config.
        spec.resources.devices = None;
    }
    Ok(())
}

/// An error pointing at a key itself (a bad map key), not at its value.
fn doc_key_error(doc: &Document, parts: &[&str], message: String) -> SpecError {
    let path = p(parts);
    SpecError::at(doc.source.key_spot(&path), &path, message)
}

fn check_resources(spec: &ExperimentSpec, doc: &Document) -> Result<AcceleratorType, SpecError> {
    let err = |parts: &[&str], message: String| doc.error(&p(parts), message);
    let r = &spec.resources;
    // A GPU model with `devices: N` (`accelerator: h200-141gb, devices: 1`) is its N-GPU shape.
    let model_shape = r.devices.and_then(|n| catalog::gpu_shape(&r.accelerator, n));
    let named_model = model_shape.is_some();
    let accel = match model_shape {
        Some(shape) => shape,
        None => catalog::lookup(&r.accelerator).map_err(|e| {
            let error = err(&["resources", "accelerator"], e.to_string());
            match (&e.suggestion, r.devices) {
                (_, Some(n))
                    if catalog::gpu_models().iter().any(|(m, _)| m.eq_ignore_ascii_case(r.accelerator.trim())) =>
                {
                    let (model, sizes) = catalog::gpu_models()
                        .into_iter()
                        .find(|(m, _)| m.eq_ignore_ascii_case(r.accelerator.trim()))
                        .unwrap_or_default();
                    let sizes: Vec<String> = sizes.iter().map(u32::to_string).collect();
                    err(&["resources", "devices"], format!("{model} comes with {} GPUs, not {n}", sizes.join(", ")))
                }
                (Some(s), _) => error.with_hint(format!("did you mean `{s}`?")),
                (None, _) => error,
            }
        })?,
    };
    if r.slices == 0 {
        return Err(err(&["resources", "slices"], "must be at least 1".into()));
    }
    if accel.platform == Platform::Cpu {
        if r.slices != 1 {
            return Err(err(&["resources", "slices"], "a cpu job runs on one host".into())
                .with_hint("use `resources.devices` for the number of cores"));
        }
        if r.devices == Some(0) {
            return Err(err(&["resources", "devices"], "must be at least 1".into()));
        }
    } else if accel.platform == Platform::Gpu {
        // `devices` on a GPU type must agree with its shape (or named the shape with the model above).
        if let Some(n) = r.devices.filter(|n| *n != accel.chips && !named_model) {
            let model = accel.name.rsplit_once('-').map_or(accel.name.as_str(), |(m, _)| m);
            let hint = match catalog::gpu_shape(model, n) {
                Some(shape) => {
                    format!("name the shape `{}`, or `accelerator: {model}` with `devices: {n}`", shape.name)
                }
                None => "set `slices` for more hosts".to_string(),
            };
            return Err(err(&["resources", "devices"], format!("{} has {} GPUs, not {n}", accel.name, accel.chips))
                .with_hint(hint));
        }
    } else if r.devices.is_some() {
        return Err(err(
            &["resources", "devices"],
            format!(
                "only for cpu and GPU types; {} has {} chips per slice (set `slices` instead)",
                accel.name, accel.chips
            ),
        ));
    }
    if let Some(topology) = &r.topology {
        catalog::check_topology(&accel, topology).map_err(|m| err(&["resources", "topology"], m))?;
    }
    match (r.capacity, r.reservation.as_deref().map(str::trim)) {
        (Capacity::Reservation, None | Some("")) => {
            return Err(err(&["resources", "capacity"], "`reservation` needs the reservation's name".into())
                .with_hint("add `reservation: NAME` under resources"));
        }
        (Capacity::Reservation, Some(_)) | (_, None) => {}
        (_, Some(_)) => {
            return Err(err(&["resources", "reservation"], "is only used with `capacity: reservation`".into()));
        }
    }
    for (i, zone) in r.zones.iter().enumerate() {
        let index = i.to_string();
        if zone.trim().is_empty() {
            return Err(err(&["resources", "zones", &index], "a zone name is empty".into()));
        }
        if r.zones[..i].contains(zone) {
            return Err(err(&["resources", "zones", &index], format!("zone `{zone}` is listed twice")));
        }
    }
    Ok(accel)
}

fn check_config(spec: &ExperimentSpec, doc: &Document, accel: &AcceleratorType, devices: u32) -> Result<(), SpecError> {
    let err = |parts: &[&str], message: String| doc.error(&p(parts), message);
    let Value::Object(config) = &spec.config else {
        return Err(err(&["config"], format!("must be a mapping, not {}", describe(&spec.config))));
    };
    let positive = |v: &Value| v.as_u64().is_some_and(|n| n > 0);
    for key in POSITIVE_CONFIG_KEYS {
        if let Some(v) = config.get(key) {
            if !positive(v) {
                return Err(err(&["config", key], format!("must be a positive integer, not {}", describe(v))));
            }
        }
    }
    for key in ["model", "precision"] {
        match config.get(key) {
            Some(Value::String(s)) if s.trim().is_empty() => {
                return Err(err(&["config", key], "must not be empty".into()));
            }
            Some(Value::String(_)) | None => {}
            Some(Value::Object(_)) if key == "model" => {}
            Some(other) => return Err(err(&["config", key], format!("must be a string, not {}", describe(other)))),
        }
    }
    match config.get("remat") {
        Some(Value::String(s)) if s.trim().is_empty() => {
            return Err(err(&["config", "remat"], "must not be empty (e.g. `full`, `minimal`, `none`)".into()));
        }
        Some(Value::String(_) | Value::Bool(_)) | None => {}
        Some(other) => {
            return Err(err(
                &["config", "remat"],
                format!("must be a policy name or a boolean, not {}", describe(other)),
            ));
        }
    }
    let Some(parallelism) = config.get("parallelism") else { return Ok(()) };
    let Value::Object(axes) = parallelism else {
        return Err(err(
            &["config", "parallelism"],
            format!("must be a mapping of axes, not {}", describe(parallelism)),
        )
        .with_hint(format!("e.g. {{{}}}", PARALLELISM_AXES.map(|a| format!("{a}: 1")).join(", "))));
    };
    let mut product: u64 = 1;
    let mut sizes = Vec::new();
    for axis in PARALLELISM_AXES {
        let n = match axes.get(axis) {
            None => 1,
            Some(v) if positive(v) => v.as_u64().unwrap_or(1),
            Some(v) => {
                return Err(err(
                    &["config", "parallelism", axis],
                    format!("must be a positive integer, not {}", describe(v)),
                ));
            }
        };
        product = product.saturating_mul(n);
        sizes.push((axis, n));
    }
    if product != u64::from(devices) {
        let whence = match accel.platform {
            Platform::Cpu => format!("cpu × {devices} device{}", plural(devices)),
            _ => format!("{} × {} slice{}", accel.name, spec.resources.slices, plural(spec.resources.slices)),
        };
        let factors = sizes.iter().map(|(a, n)| format!("{a}={n}")).collect::<Vec<_>>().join(" ");
        let mut hint = format!("{factors}; the product must equal the devices");
        // Suggest resizing the largest axis when that alone can fix it.
        if let Some((axis, n)) = sizes.iter().copied().max_by_key(|(_, n)| *n) {
            let rest = product / n;
            if rest > 0 && u64::from(devices) % rest == 0 {
                hint = format!("{hint}, e.g. {axis}: {}", u64::from(devices) / rest);
            }
        }
        return Err(err(
            &["config", "parallelism"],
            format!("{} = {product} but the job has {devices} devices ({whence})", PARALLELISM_AXES.join("×")),
        )
        .with_hint(hint));
    }
    Ok(())
}

fn plural(n: u32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `retry_on_exit_codes`: exit codes a process can have (1..=255; 0 is success), each once, a few of them, and only
/// with retries left to spend.
fn check_retry_codes(spec: &ExperimentSpec, doc: &Document) -> Result<(), SpecError> {
    let err = |parts: &[&str], message: String| doc.error(&p(parts), message);
    let codes = &spec.retry_on_exit_codes;
    let path = ["retry_on_exit_codes"];
    if codes.len() > super::MAX_RETRY_EXIT_CODES {
        return Err(err(&path, format!("{} codes are too many; at most {}", codes.len(), super::MAX_RETRY_EXIT_CODES)));
    }
    for (i, &code) in codes.iter().enumerate() {
        if !(1..=255).contains(&code) {
            return Err(err(&path, format!("{code} is not a failing exit code (1 to 255)")));
        }
        if codes[..i].contains(&code) {
            return Err(err(&path, format!("{code} is listed twice")));
        }
    }
    if !codes.is_empty() && spec.retries == 0 {
        return Err(err(&path, "needs retries to spend: `retries` is 0".into())
            .with_hint("set `retries: N` (attempts after the first) beside it"));
    }
    Ok(())
}
