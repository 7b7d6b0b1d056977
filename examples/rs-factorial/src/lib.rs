/// n squared.
pub fn square(n: u64) -> u64 {
    n * n
}

/// n! for small n.
pub fn factorial(n: u64) -> u64 {
    let mut acc = 1;
    let mut i = 1;
    while i < n {
        acc *= i;
        i += 1;
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::{factorial, square};

    #[test]
    fn squares() {
        assert_eq!(square(7), 49);
    }

    #[test]
    fn zero_and_one() {
        assert_eq!(factorial(0), 1);
        assert_eq!(factorial(1), 1);
    }

    #[test]
    fn five() {
        assert_eq!(factorial(5), 120);
    }
}
