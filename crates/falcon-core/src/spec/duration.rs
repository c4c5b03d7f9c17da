//! Durations as specs write them: `90s`, `30m`, `2h`, `1h30m`, `1d`.

/// Seconds per unit, largest first; a duration names each unit at most once, in this order.
const UNITS: [(char, u64); 4] = [('d', 86_400), ('h', 3_600), ('m', 60), ('s', 1)];

/// Parses a duration such as `90s`, `30m`, `2h`, `1h30m` or `1d12h` into seconds. Units are `d`, `h`, `m`,
/// `s`, each at most once and largest first; the result must be positive.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let bad = |why: &str| format!("invalid duration `{text}`: {why} (write e.g. `90s`, `30m`, `2h`, `1h30m`)");
    let s = text.trim();
    if s.is_empty() {
        return Err(bad("it is empty"));
    }
    let mut total: u64 = 0;
    let mut next_unit = 0; // index into UNITS of the largest unit still allowed
    let mut digits = String::new();
    for c in s.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = c.to_ascii_lowercase();
        let Some(pos) = UNITS.iter().position(|(u, _)| *u == unit) else {
            return Err(bad(&format!("`{c}` is not a unit (d, h, m, s)")));
        };
        if digits.is_empty() {
            return Err(bad(&format!("`{c}` has no number before it")));
        }
        if pos < next_unit {
            return Err(bad("units must appear once each, largest first"));
        }
        let n: u64 = digits.parse().map_err(|_| bad("the number is too large"))?;
        total = n.checked_mul(UNITS[pos].1).and_then(|x| total.checked_add(x)).ok_or_else(|| bad("too large"))?;
        next_unit = pos + 1;
        digits.clear();
    }
    if !digits.is_empty() {
        return Err(bad("a number needs a unit"));
    }
    if total == 0 {
        return Err(bad("it must be longer than zero"));
    }
    Ok(total)
}

/// Writes seconds the way [`parse_duration`] reads them, shortest form: `5400` → `1h30m`, `90` → `1m30s`.
pub fn format_duration(seconds: u64) -> String {
    if seconds == 0 {
        return "0s".to_string();
    }
    let mut rest = seconds;
    let mut out = String::new();
    for (unit, size) in UNITS {
        let n = rest / size;
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
            rest %= size;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_usual_forms() {
        for (text, secs) in [
            ("90s", 90),
            ("30m", 1800),
            ("2h", 7200),
            ("1h30m", 5400),
            ("1d", 86_400),
            ("1d2h3m4s", 93_784),
            (" 2H ", 7200),
        ] {
            assert_eq!(parse_duration(text), Ok(secs), "{text}");
        }
    }

    #[test]
    fn refuses_what_is_not_a_duration() {
        for bad in ["", "90", "2 hours", "h", "1x", "30m1h", "1h1h", "0s", "-5m", "1.5h", "99999999999999999999d"] {
            let err = parse_duration(bad).unwrap_err();
            assert!(err.contains("invalid duration") && err.contains("1h30m"), "{bad}: {err}");
        }
    }

    #[test]
    fn formats_round_trip() {
        for secs in [1, 59, 60, 90, 3600, 5400, 86_400, 93_784, 7 * 86_400 + 1] {
            assert_eq!(parse_duration(&format_duration(secs)), Ok(secs));
        }
        assert_eq!(format_duration(5400), "1h30m");
        assert_eq!(format_duration(90), "1m30s");
    }
}
