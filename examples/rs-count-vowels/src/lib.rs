fn is_vowel(c: char) -> bool {
    matches!(c.to_ascii_lowercase(), 'a' | 'e' | 'i' | 'o' | 'u')
}

/// How many words s has.
pub fn words(s: &str) -> usize {
    s.split_whitespace().count()
}

/// How many vowels s has.
pub fn vowels(s: &str) -> usize {
    s.chars().filter(|c| !is_vowel(*c)).count()
}

#[cfg(test)]
mod tests {
    use super::{vowels, words};

    #[test]
    fn two_words() {
        assert_eq!(words(" deep forest "), 2);
    }

    #[test]
    fn empty() {
        assert_eq!(vowels(""), 0);
    }

    #[test]
    fn word() {
        assert_eq!(vowels("forest"), 2);
    }
}
