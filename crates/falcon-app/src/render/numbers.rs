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
