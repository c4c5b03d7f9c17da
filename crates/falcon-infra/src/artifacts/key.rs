//! Object keys: what may name an object, so no key can escape the store's prefix or confuse a backend.

use crate::error::{InfraError, Result};

/// The folder the local backend stages writes in before renaming them into place; no key may start with it.
pub(crate) const STAGING_DIR: &str = ".falcon-staging";
const MAX_KEY_BYTES: usize = 1024;

/// Checks an object key: relative, `/`-separated, no empty, `.` or `..` segment, no control character, no
/// backslash, at most 1024 bytes.
pub fn validate_key(key: &str) -> Result<()> {
    let refuse = |reason| Err(InfraError::InvalidKey { key: key.escape_default().to_string(), reason });
    if key.is_empty() {
        return refuse("the key is empty");
    }
    if key.len() > MAX_KEY_BYTES {
        return refuse("the key is longer than 1024 bytes");
    }
    if key.starts_with('/') {
        return refuse("absolute keys are not allowed; give a path relative to the store");
    }
    if key.ends_with('/') {
        return refuse("a key names an object, not a folder (it ends with `/`)");
    }
    check_segments(key, refuse)
}

/// Checks a listing or deletion prefix: like a key, but may be empty (everything) and may end with `/`.
pub fn validate_prefix(prefix: &str) -> Result<()> {
    let refuse = |reason| Err(InfraError::InvalidKey { key: prefix.escape_default().to_string(), reason });
    if prefix.is_empty() {
        return Ok(());
    }
    if prefix.starts_with('/') {
        return refuse("absolute prefixes are not allowed; give a path relative to the store");
    }
    check_segments(prefix.strip_suffix('/').unwrap_or(prefix), refuse)
}

fn check_segments(path: &str, refuse: impl Fn(&'static str) -> Result<()>) -> Result<()> {
    if path.chars().any(char::is_control) {
        return refuse("control characters are not allowed");
    }
    if path.contains('\\') {
        return refuse("backslashes are not allowed; separate folders with `/`");
    }
    for (i, segment) in path.split('/').enumerate() {
        match segment {
            "" => return refuse("empty path segment (`//`)"),
            "." | ".." => return refuse("`.` and `..` segments are not allowed"),
            STAGING_DIR if i == 0 => return refuse("`.falcon-staging/` is reserved for in-progress writes"),
            _ => {}
        }
    }
    Ok(())
}

/// The folder form of a prefix for listing: `""` stays empty, anything else ends with `/`.
pub(crate) fn as_folder(prefix: &str) -> String {
    if prefix.is_empty() || prefix.ends_with('/') {
        prefix.to_string()
    } else {
        format!("{prefix}/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_keys_pass() {
        for key in ["a", "experiments/e-1/plugins/profile/run1/vm.xplane.pb", "logs/1/proc.log", ".hidden/x", "a..b/c"]
        {
            validate_key(key).unwrap_or_else(|e| panic!("{key}: {e}"));
        }
    }

    #[test]
    fn unsafe_keys_are_refused_with_a_reason() {
        let cases = [
            ("", "empty"),
            ("/etc/passwd", "absolute"),
            ("a/../../etc", "`..`"),
            ("../x", "`..`"),
            ("./x", "`.`"),
            ("a//b", "empty path segment"),
            ("a/", "folder"),
            ("a\u{0}b", "control"),
            ("a\nb", "control"),
            ("a\\b", "backslash"),
            (".falcon-staging/x", "reserved"),
        ];
        for (key, why) in cases {
            let err = validate_key(key).unwrap_err().to_string();
            assert!(err.contains(why), "{key:?}: {err}");
        }
        assert!(validate_key(&"k".repeat(1025)).is_err());
    }

    #[test]
    fn prefixes_may_be_empty_or_folders() {
        validate_prefix("").unwrap();
        validate_prefix("experiments/e-1/").unwrap();
        validate_prefix("experiments/e-1").unwrap();
        assert!(validate_prefix("../").is_err());
        assert!(validate_prefix("/abs/").is_err());
        assert_eq!(as_folder("a/b"), "a/b/");
        assert_eq!(as_folder(""), "");
    }
}
