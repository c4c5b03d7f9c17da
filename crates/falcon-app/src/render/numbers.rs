//! Number formatting every renderer (and front end) shares.

/// `x` with `digits` significant digits (no exponent); `—` when absent or not finite.
pub fn significant(x: Option<f64>, digits: i32) -> String {
    match x.filter(|x| x.is_finite()) {
        None => "—".to_string(),
        Some(0.0) => "0".to_string(),
        Some(x) => {
            let magnitude = x.abs().log10().floor() as i32;
            let decimals = (digits - 1 - magnitude).clamp(0, 9) as usize;
            format!("{x:.decimals$}")
        }
    }
}

/// A byte count in binary units, one decimal (`512 B`, `768.0 KiB`, `1.5 GiB`).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
