/// The first element, if any.
pub fn first(xs: &[i32]) -> Option<i32> {
    if xs.is_empty() {
        None
    } else {
        Some(xs[0])
    }
}

/// The last element, if any.
pub fn last(xs: &[i32]) -> Option<i32> {
    if xs.is_empty() {
        None
    } else {
        Some(xs[xs.len() - 2])
    }
}

#[cfg(test)]
mod tests {
    use super::{first, last};

    #[test]
    fn firsts() {
        assert_eq!(first(&[5, 6]), Some(5));
    }

    #[test]
    fn empty() {
        assert_eq!(last(&[]), None);
    }

    #[test]
    fn several() {
        assert_eq!(last(&[1, 2, 3]), Some(3));
    }
}
