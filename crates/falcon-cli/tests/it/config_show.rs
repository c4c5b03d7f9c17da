//! `falcon config show`: the text form shows the same sections as `--json`, secrets redacted the same way.

use crate::common::{code, falcon_with, json};

const S3_ENV: [(&str, &str); 5] = [
    ("FALCON_S3_ENDPOINT", "http://127.0.0.1:9000"),
    ("FALCON_S3_REGION", "eu-west-3"),
    ("FALCON_S3_ANONYMOUS", "false"),
    ("FALCON_S3_ACCESS_KEY_ID", "AKIDEXAMPLE"),
    ("FALCON_S3_SECRET_ACCESS_KEY", "very-secret-key"),
];

#[test]
fn text_shows_the_s3_table_that_json_shows_with_the_secret_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    let out = falcon_with(d, &["config", "show", "--json"], &S3_ENV);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let s3 = &json(&out)["config"]["s3"];
    assert_eq!(s3["endpoint"], "http://127.0.0.1:9000", "{s3}");
    assert_eq!(s3["secret_access_key"], "***", "{s3}");

    let out = falcon_with(d, &["config", "show"], &S3_ENV);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("very-secret-key"), "the secret is redacted:\n{text}");
    let shown: toml_table::Table = toml_table::parse(&text);
    let s3 = shown.get("s3").unwrap_or_else(|| panic!("no [s3] table in the text form:\n{text}"));
    assert_eq!(s3.get("endpoint").map(String::as_str), Some("\"http://127.0.0.1:9000\""), "{text}");
    assert_eq!(s3.get("region").map(String::as_str), Some("\"eu-west-3\""), "{text}");
    assert_eq!(s3.get("anonymous").map(String::as_str), Some("false"), "{text}");
    assert_eq!(s3.get("access_key_id").map(String::as_str), Some("\"AKIDEXAMPLE\""), "{text}");
    assert_eq!(s3.get("secret_access_key").map(String::as_str), Some("\"***\""), "{text}");
    for table in ["gcs", "jobs", "analysis"] {
        assert!(shown.contains_key(table), "[{table}] is shown:\n{text}");
    }
}

#[test]
fn without_s3_settings_the_text_still_shows_the_s3_defaults_json_shows() {
    let dir = tempfile::tempdir().unwrap();
    let out = falcon_with(dir.path(), &["config", "show", "--json"], &[]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json(&out)["config"]["s3"]["anonymous"], false);

    let out = falcon_with(dir.path(), &["config", "show"], &[]);
    let text = String::from_utf8(out.stdout).unwrap();
    let shown = toml_table::parse(&text);
    assert_eq!(shown.get("s3").and_then(|s3| s3.get("anonymous")).map(String::as_str), Some("false"), "{text}");
}

/// Just enough TOML reading for the flat tables `config show` prints: `[name]` headers and `key = value`
/// lines (values kept as written), so the test needs no TOML crate.
mod toml_table {
    use std::collections::BTreeMap;

    pub type Table = BTreeMap<String, BTreeMap<String, String>>;

    pub fn parse(text: &str) -> Table {
        let mut tables = Table::new();
        let mut current = String::new();
        for line in text.lines().map(str::trim) {
            if line.starts_with("[[") || line.starts_with('#') || line.is_empty() {
                if line.starts_with("[[") {
                    current = String::from("(array)");
                }
                continue;
            }
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                current = name.to_string();
                tables.entry(current.clone()).or_default();
            } else if let Some((key, value)) = line.split_once(" = ") {
                tables.entry(current.clone()).or_default().insert(key.to_string(), value.to_string());
            }
        }
        tables
    }
}
