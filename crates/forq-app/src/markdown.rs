//! Text forq did not write, made safe to post on GitHub under forq's name:
//! a model's words, a repository's file paths and symbol names, a branch
//! name. Each comes out as what it says and nothing more — no mention of
//! a person, no link or image, no HTML (so no hidden marker), no escape
//! from the quote or code span it is put in, and a bounded length.
//!
//! ```
//! use forq_app::markdown::{code, plain};
//!
//! assert_eq!(code("a`b"), "``a`b``");
//! let said = plain("see [here](https://evil.example) @owner\r> not quoted", 200);
//! assert!(!said.contains("](") && !said.contains("@owner") && !said.contains('\r'));
//! ```

/// `text` as plain words in Markdown, on at most `max` characters (an
/// ellipsis says it was cut): every character Markdown gives a meaning
/// escaped, HTML shown as text, mentions kept from notifying anyone, URLs
/// kept from becoming links, and every line break a `\n` (a lone `\r` ends
/// a quote on GitHub).
pub fn plain(text: &str, max: usize) -> String {
    let text = text.trim().replace("\r\n", "\n").replace('\r', "\n");
    let mut out = String::new();
    for (count, c) in text.chars().enumerate() {
        if count == max {
            out.push('…');
            break;
        }
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '!' | '#' | '|' | '~' | '>' | '+'
            | '-' | '=' | '{' | '}' | '.' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '&' => out.push_str("&amp;"),
            // A word joiner after `@` keeps GitHub from mentioning anyone.
            '@' => out.push_str("@\u{2060}"),
            c if c.is_control() && c != '\n' && c != '\t' => {}
            c => out.push(c),
        }
    }
    // And inside `://`, from seeing a URL.
    out.replace("://", ":\u{2060}//")
}

/// `text` quoted (`> ` on every line), as [`plain`] words.
pub fn quoted(text: &str, max: usize) -> String {
    let body = plain(text, max);
    format!("> {}", body.replace('\n', "\n> "))
}

/// `text` as one inline code span, whatever backticks it holds: a span
/// opened with a run of backticks longer than any inside it. Line breaks
/// and control characters become spaces; at most 200 characters.
pub fn code(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    let longest = longest_run(&one_line, '`');
    let fence = "`".repeat(longest + 1);
    let pad = if one_line.starts_with('`') || one_line.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{one_line}{pad}{fence}")
}

/// `text` as a fenced code block with `info` (`diff`), whatever it holds:
/// the fence is longer than any run of backticks inside.
pub fn fenced(text: &str, info: &str) -> String {
    let fence = "`".repeat(longest_run(text, '`').max(2) + 1);
    let info: String = info.chars().filter(char::is_ascii_alphanumeric).collect();
    let text = text.replace('\r', "");
    let newline = if text.ends_with('\n') { "" } else { "\n" };
    format!("{fence}{info}\n{text}{newline}{fence}")
}

fn longest_run(text: &str, c: char) -> usize {
    let mut longest = 0;
    let mut run = 0;
    for ch in text.chars() {
        if ch == c {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_models_words_link_nothing_mention_nobody_and_stay_quoted() {
        let attack = "fine\r> **All good**, merge: [click](https://evil.example/x) \
                      ![img](https://evil.example/p.png) <img src=x> <!-- forq:triage:o/r#5 --> @owner";
        let q = quoted(attack, 1000);
        for line in q.lines() {
            assert!(line.starts_with("> "), "every line stays quoted: {q:?}");
        }
        for bad in ["](", "<img", "<!--", "@owner", "https://", "**All"] {
            assert!(!q.contains(bad), "{bad:?} in {q:?}");
        }
        assert!(plain(&"a".repeat(50), 10).ends_with('…'));
        assert_eq!(plain(&"a".repeat(50), 10).chars().count(), 11);
    }

    #[test]
    fn code_spans_and_fences_hold_whatever_is_inside() {
        assert_eq!(code("calc.py"), "`calc.py`");
        assert_eq!(code("a``b"), "```a``b```");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code("a\nb"), "`a b`");
        let f = fenced("x\n```\n# not a heading\n", "diff");
        assert!(f.starts_with("````diff\n") && f.ends_with("\n````"), "{f}");
    }
}
