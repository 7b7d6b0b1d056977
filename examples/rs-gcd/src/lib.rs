/// Whether n is even.
pub fn is_even(n: u64) -> bool {
    n % 2 == 0
}

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
    use super::{gcd, is_even};

    #[test]
    fn evens() {
        assert!(is_even(4) && !is_even(5));
    }

    #[test]
    fn with_zero() {
        assert_eq!(gcd(7, 0), 7);
    }

    #[test]
    fn common_factor() {
        assert_eq!(gcd(12, 8), 4);
    }
}
