//! Timestamps: milliseconds since the Unix epoch, the one representation every store uses.
//!
//! A [`Millis`] serializes as its number of milliseconds (`"created": 1796035435123`). JSON views give each
//! timestamp a `<field>_iso` sibling in RFC 3339 UTC as well (`"created_iso": "2026-11-30T10:43:55.123Z"`),
//! written with [`rfc3339`] / [`rfc3339_opt`] as `serialize_with` helpers: the number for programs, the text for
//! people reading the same document, and the two never disagree.

use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// A point in time, in milliseconds since 1970-01-01T00:00:00Z.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct Millis(pub i64);

impl Millis {
    /// Formats as RFC 3339 in UTC with millisecond precision, e.g. `2026-11-30T10:43:55.123Z`.
    pub fn to_rfc3339(self) -> String {
        let ms = self.0.rem_euclid(1000);
        let secs = self.0.div_euclid(1000);
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z", rem / 3600, (rem % 3600) / 60, rem % 60)
    }
}

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

/// `#[serde(serialize_with = "falcon_core::time::rfc3339")]`: a [`Millis`] as its RFC 3339 text
/// ([`Millis::to_rfc3339`]), for the `*_iso` sibling of a millisecond field.
pub fn rfc3339<S: Serializer>(at: &Millis, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&at.to_rfc3339())
}

/// [`rfc3339`] of an optional timestamp: `null` when there is none.
pub fn rfc3339_opt<S: Serializer>(at: &Option<Millis>, serializer: S) -> Result<S::Ok, S::Error> {
    match at {
        Some(at) => serializer.serialize_some(&at.to_rfc3339()),
        None => serializer.serialize_none(),
    }
}

/// Converts days since the epoch to a proleptic Gregorian (year, month, day) (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(Millis(0).to_rfc3339(), "1970-01-01T00:00:00.000Z");
        // 2026-11-30T10:43:55.123Z, computed independently with `date -u -d @1796035435`.
        assert_eq!(Millis(1_796_035_435_123).to_rfc3339(), "2026-11-30T10:43:55.123Z");
        assert_eq!(Millis(951_782_400_000).to_rfc3339(), "2000-02-29T00:00:00.000Z");
        assert_eq!(Millis(-1).to_rfc3339(), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn iso_siblings_serialize_beside_the_milliseconds() {
        #[derive(Serialize, schemars::JsonSchema)]
        struct View {
            created: Millis,
            #[schemars(with = "String")]
            #[serde(serialize_with = "rfc3339")]
            created_iso: Millis,
            #[schemars(with = "Option<String>")]
            #[serde(serialize_with = "rfc3339_opt")]
            lease_iso: Option<Millis>,
            #[schemars(with = "Option<String>")]
            #[serde(serialize_with = "rfc3339_opt")]
            none_iso: Option<Millis>,
        }
        let at = Millis(1_796_035_435_123);
        let v = View { created: at, created_iso: at, lease_iso: Some(Millis(0)), none_iso: None };
        assert_eq!(
            serde_json::to_value(&v).unwrap(),
            serde_json::json!({
                "created": 1_796_035_435_123i64,
                "created_iso": "2026-11-30T10:43:55.123Z",
                "lease_iso": "1970-01-01T00:00:00.000Z",
                "none_iso": null
            })
        );
    }
}
