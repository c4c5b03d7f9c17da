//! Identifiers of goals, sessions, experiments and jobs: a numeric key with a readable prefix (`e-41`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A string that is not a valid id of the expected kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{input}` is not a valid {what} id (expected `{prefix}-<number>`, e.g. `{prefix}-12`)")]
pub struct IdParseError {
    /// The rejected text.
    pub input: String,
    /// What kind of id was expected ("experiment", …).
    pub what: &'static str,
    /// The expected prefix.
    pub prefix: &'static str,
}

macro_rules! define_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub i64);

        impl $name {
            /// The prefix this id is written with.
            pub const PREFIX: &'static str = $prefix;
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}-{}", $prefix, self.0)
            }
        }

        impl FromStr for $name {
            type Err = IdParseError;
            /// Accepts `e-41` (the canonical form) and a bare `41`.
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                let err = || IdParseError { input: s.to_string(), what: $what, prefix: $prefix };
                let digits = s.strip_prefix(concat!($prefix, "-")).unwrap_or(s);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(err());
                }
                digits.parse::<i64>().map($name).map_err(|_| err())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": "string",
                    "pattern": concat!("^", $prefix, "-[0-9]+$"),
                    "description": concat!("A ", $what, " id: `", $prefix, "-<n>`."),
                })
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

define_id!(
    /// An optimization goal, written `g-<n>`.
    GoalId, "g", "goal"
);
define_id!(
    /// A session (a batch of experiments), written `s-<n>`.
    SessionId, "s", "session"
);
define_id!(
    /// An experiment, written `e-<n>`.
    ExperimentId, "e", "experiment"
);
define_id!(
    /// A job of the Job module, written `j-<n>`.
    JobId, "j", "job"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_through_text_and_json() {
        let id: ExperimentId = "e-41".parse().unwrap();
        assert_eq!(id, ExperimentId(41));
        assert_eq!(id.to_string(), "e-41");
        assert_eq!("41".parse::<ExperimentId>().unwrap(), ExperimentId(41));
        assert_eq!(serde_json::to_string(&GoalId(7)).unwrap(), "\"g-7\"");
        assert_eq!(serde_json::from_str::<GoalId>("\"g-7\"").unwrap(), GoalId(7));
    }

    #[test]
    fn wrong_prefix_or_garbage_is_rejected_with_the_expected_form() {
        for bad in ["g-41", "e-", "e-4x", "", "e--1", "-1", "e-99999999999999999999"] {
            let err = bad.parse::<ExperimentId>().unwrap_err();
            assert!(err.to_string().contains("e-<number>"), "{bad}: {err}");
        }
    }
}
