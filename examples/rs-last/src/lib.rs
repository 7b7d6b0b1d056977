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
    use super::last;

    #[test]
    fn empty() {
        assert_eq!(last(&[]), None);
    }

    #[test]
    fn several() {
        assert_eq!(last(&[1, 2, 3]), Some(3));
    }
}
