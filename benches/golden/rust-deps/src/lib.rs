//! Counts the words of a text and formats the count: two dependencies from
//! crates.io (one of them with dependencies of its own).

/// The number of words in `text`, as decimal digits.
pub fn word_count(text: &str) -> String {
    let words = regex::Regex::new(r"\b\w+\b").expect("a valid pattern");
    let mut buf = itoa::Buffer::new();
    buf.format(words.find_iter(text).count()).to_owned()
}

#[cfg(test)]
mod tests {
    use super::word_count;

    #[test]
    fn counts_words() {
        assert_eq!(word_count("one two, three"), "3");
    }

    #[test]
    fn empty_is_zero() {
        assert_eq!(word_count(""), "0");
    }
}
