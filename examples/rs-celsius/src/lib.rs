/// Degrees Celsius in Fahrenheit.
pub fn to_fahrenheit(c: f64) -> f64 {
    c * 9.0 / 5.0 + 32.0
}

/// Degrees Fahrenheit in Celsius.
pub fn to_celsius(f: f64) -> f64 {
    (f + 32.0) * 5.0 / 9.0
}

#[cfg(test)]
mod tests {
    use super::{to_celsius, to_fahrenheit};

    #[test]
    fn body_temperature() {
        assert!((to_fahrenheit(37.0) - 98.6).abs() < 1e-9);
    }

    #[test]
    fn boiling() {
        assert!((to_celsius(212.0) - 100.0).abs() < 1e-9);
    }
}
