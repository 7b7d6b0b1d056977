/// The greatest common divisor of a and b.
pub fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a / b)
    }
}

#[cfg(test)]
mod tests {
    use super::gcd;

    #[test]
    fn with_zero() {
        assert_eq!(gcd(7, 0), 7);
    }

    #[test]
    fn common_factor() {
        assert_eq!(gcd(12, 8), 4);
    }
}
