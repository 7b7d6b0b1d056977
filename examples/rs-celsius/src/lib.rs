/// Degrees Fahrenheit in Celsius.
pub fn to_celsius(f: f64) -> f64 {
    (f + 32.0) * 5.0 / 9.0
}

#[cfg(test)]
mod tests {
    use super::to_celsius;

    #[test]
    fn boiling() {
        assert!((to_celsius(212.0) - 100.0).abs() < 1e-9);
    }
}
