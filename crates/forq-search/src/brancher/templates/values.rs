//! Repair templates read from the values a failing test compared: where
//! `assertEqual(a, b)` or `assert a == b` failed, a literal of the
//! suspect that wrote what the code produced is made to write what the
//! test wanted — the whole literal, or the part of it where the two values
//! differ (a changed word of a message, a separator, a number). Which of
//! the two values the code produced the tracer cannot tell, so both ways
//! are proposed; a literal holds the produced one's part far more often
//! than the other's. Python only: the values come from the Python tracer
//! ([`crate::spectrum`]). Only with `Mutate::templates`.

use crate::brancher::mutate::Mutation;
use crate::spectrum::Compared;

/// The pairs read at most: one failing test's values say as much as
/// twenty's when a single literal is wrong.
const MAX_PAIRS: usize = 6;

/// A literal's text shorter than this is not taken to end or begin the
/// part a value lacks (a space or a quote would match everywhere).
const MIN_ANCHOR: usize = 2;

/// The edits of the literals in `start..end` of `source` (its parsed
/// `root`), and of the module's constants the code there reads
/// ([`constants_read`]), that make one of `compared`'s values the other.
pub(crate) fn expected_values(
    root: tree_sitter::Node<'_>,
    source: &str,
    start: usize,
    end: usize,
    compared: &[Compared],
) -> Vec<Mutation> {
    let mut out = Vec::new();
    // Most searches compared nothing: no walk for them.
    if compared.is_empty() {
        return out;
    }
    let mut literals = Vec::new();
    collect(root, start, end, &mut literals);
    for (from, to) in constants_read(root, source, start, end) {
        collect(root, from, to, &mut literals);
    }
    for pair in compared.iter().take(MAX_PAIRS) {
        for (got, wanted) in both_ways(pair) {
            for &n in &literals {
                match (pair, n.kind()) {
                    (Compared::Text(..), "string_content") => {
                        out.extend(text_edit(n, source, got, wanted));
                    }
                    (Compared::Number(..), "integer" | "float")
                        if same_number(&source[n.byte_range()], got) =>
                    {
                        out.push(mutation(n.start_byte(), n.end_byte(), wanted.to_owned()));
                    }
                    _ => {}
                }
            }
        }
    }
    out
}

fn both_ways(pair: &Compared) -> [(&str, &str); 2] {
    let (a, b) = match pair {
        Compared::Text(a, b) | Compared::Number(a, b) => (a.as_str(), b.as_str()),
    };
    [(a, b), (b, a)]
}

fn mutation(start: usize, end: usize, text: String) -> Mutation {
    Mutation {
        start,
        end,
        text,
        operator: "expected value",
        weight: 1.0,
    }
}

/// The literals inside `start..end`: string contents and numbers.
fn collect<'t>(
    n: tree_sitter::Node<'t>,
    start: usize,
    end: usize,
    out: &mut Vec<tree_sitter::Node<'t>>,
) {
    if n.end_byte() <= start || n.start_byte() >= end {
        return;
    }
    match n.kind() {
        "string_content" | "integer" | "float" => out.push(n),
        _ => {
            let mut cursor = n.walk();
            for child in n.children(&mut cursor) {
                collect(child, start, end, out);
            }
        }
    }
}

/// The values of the module's constants (`NAME = 'text'`, `NAME = 3`,
/// at the top level) that the code in `start..end` reads by name.
fn constants_read(
    root: tree_sitter::Node<'_>,
    source: &str,
    start: usize,
    end: usize,
) -> Vec<(usize, usize)> {
    let mut read = std::collections::HashSet::new();
    names(root, source, start, end, &mut read);
    let mut cursor = root.walk();
    root.named_children(&mut cursor)
        .filter(|n| {
            n.kind() == "expression_statement" && (n.end_byte() <= start || n.start_byte() >= end)
        })
        .filter_map(|n| n.named_child(0).filter(|a| a.kind() == "assignment"))
        .filter_map(|a| {
            Some((
                a.child_by_field_name("left")?,
                a.child_by_field_name("right")?,
            ))
        })
        .filter(|(name, value)| {
            name.kind() == "identifier"
                && read.contains(&source[name.byte_range()])
                && matches!(
                    value.kind(),
                    "string" | "concatenated_string" | "integer" | "float"
                )
        })
        .map(|(_, value)| (value.start_byte(), value.end_byte()))
        .collect()
}

/// The identifiers in `start..end`.
fn names<'s>(
    n: tree_sitter::Node<'_>,
    source: &'s str,
    start: usize,
    end: usize,
    out: &mut std::collections::HashSet<&'s str>,
) {
    if n.end_byte() <= start || n.start_byte() >= end {
        return;
    }
    if n.kind() == "identifier" {
        out.insert(&source[n.byte_range()]);
    }
    let mut cursor = n.walk();
    for child in n.children(&mut cursor) {
        names(child, source, start, end, out);
    }
}

fn same_number(text: &str, value: &str) -> bool {
    let clean = text.replace('_', "");
    match (clean.parse::<f64>(), value.parse::<f64>()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `got` and `wanted` without their common head and tail: the part that
/// differs in each, and the common head and tail.
fn differing<'a>(got: &'a str, wanted: &'a str) -> (&'a str, &'a str, &'a str, &'a str) {
    let head = got
        .char_indices()
        .zip(wanted.chars())
        .take_while(|((_, a), b)| a == b)
        .last()
        .map_or(0, |((i, a), _)| i + a.len_utf8());
    let (g, w) = (&got[head..], &wanted[head..]);
    let tail = g
        .chars()
        .rev()
        .zip(w.chars().rev())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a.len_utf8())
        .sum::<usize>();
    (
        &g[..g.len() - tail],
        &w[..w.len() - tail],
        &got[..head],
        &g[g.len() - tail..],
    )
}

/// The edit of one string literal's content (a plain run of text: none
/// with escapes, whose value its source would not spell) that turns the
/// part of `got` it holds into `wanted`'s.
fn text_edit(n: tree_sitter::Node<'_>, source: &str, got: &str, wanted: &str) -> Option<Mutation> {
    let mut cursor = n.walk();
    if n.named_children(&mut cursor).next().is_some() {
        return None;
    }
    let value = &source[n.byte_range()];
    let quote = Quote::of(n, source)?;
    let (part, instead, head, tail) = differing(got, wanted);
    let new = if value == got {
        wanted.to_owned()
    } else if !part.is_empty() && value.contains(part) {
        value.replacen(part, instead, 1)
    } else if part.is_empty() && value.chars().count() >= MIN_ANCHOR && head.ends_with(value) {
        format!("{value}{instead}")
    } else if part.is_empty() && value.chars().count() >= MIN_ANCHOR && tail.starts_with(value) {
        format!("{instead}{value}")
    } else {
        return None;
    };
    if new == value {
        return None;
    }
    Some(mutation(n.start_byte(), n.end_byte(), quote.escape(&new)?))
}

/// How a Python string literal is delimited, which says how its content
/// spells a value.
struct Quote {
    delimiter: String,
    raw: bool,
    format: bool,
}

impl Quote {
    fn of(content: tree_sitter::Node<'_>, source: &str) -> Option<Quote> {
        let string = content.parent().filter(|p| p.kind() == "string")?;
        let start = string.child(0).filter(|c| c.kind() == "string_start")?;
        let text = &source[start.byte_range()];
        let prefix_len = text.find(['\'', '"'])?;
        let prefix = text[..prefix_len].to_ascii_lowercase();
        if prefix.contains('b') {
            return None;
        }
        Some(Quote {
            delimiter: text[prefix_len..].to_owned(),
            raw: prefix.contains('r'),
            format: prefix.contains('f'),
        })
    }

    /// `value` spelt as this literal's content; `None` where a raw
    /// literal cannot spell it.
    fn escape(&self, value: &str) -> Option<String> {
        let triple = self.delimiter.len() == 3;
        let quote = self.delimiter.chars().next()?;
        let mut out = String::new();
        for c in value.chars() {
            match c {
                '\\' | '\n' | '\t' | '\r' if self.raw && !(triple && c == '\n') => return None,
                c if c == quote && self.raw => return None,
                '\\' => out.push_str("\\\\"),
                '\n' if !triple => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if c == quote => {
                    out.push('\\');
                    out.push(c);
                }
                '{' | '}' if self.format => {
                    out.push(c);
                    out.push(c);
                }
                c => out.push(c),
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::brancher::mutate::parse_python;

    fn edits(src: &str, compared: &[Compared]) -> Vec<String> {
        let tree = parse_python(src);
        expected_values(tree.root_node(), src, 0, src.len(), compared)
            .iter()
            .map(|m| m.applied_to(src))
            .collect()
    }

    fn text(a: &str, b: &str) -> Compared {
        Compared::Text(a.into(), b.into())
    }

    #[test]
    fn the_differing_part_of_a_message_is_rewritten_either_way() {
        let src = "def f(n):\n    return 'found %d items' % n\n";
        let found = edits(src, &[text("found 3 items", "found 3 entries")]);
        assert_eq!(found, ["def f(n):\n    return 'found %d entries' % n\n"]);
        // The test wrote the wanted value first: the same edit.
        assert_eq!(
            edits(src, &[text("found 3 entries", "found 3 items")]),
            found
        );
    }

    #[test]
    fn a_whole_literal_a_missing_tail_and_a_number() {
        let src = "def f(xs):\n    sep = ', '\n    return sep.join(xs) + '.'\n";
        // `a, b.` produced, `a; b.` wanted: the separator.
        let found = edits(src, &[text("a, b.", "a; b.")]);
        assert!(
            found.contains(
                &"def f(xs):\n    sep = '; '\n    return sep.join(xs) + '.'\n".to_owned()
            ),
            "{found:?}"
        );
        // A missing part after a literal the head ends with.
        let src = "def f(x):\n    return 'id=' + x\n";
        let found = edits(src, &[text("id=7", "id=#7")]);
        assert_eq!(found, ["def f(x):\n    return 'id=#' + x\n"]);
        let src = "def f():\n    return 3\n";
        let found = edits(src, &[Compared::Number("3".into(), "4".into())]);
        assert_eq!(found, ["def f():\n    return 4\n"]);
    }

    #[test]
    fn a_module_constant_the_function_reads_is_a_literal_of_it() {
        let src = "SEP = ', '\nOTHER = '; '\n\n\ndef f(xs):\n    return SEP.join(xs)\n";
        let tree = parse_python(src);
        let start = src.find("def f").unwrap();
        let found: Vec<String> = expected_values(
            tree.root_node(),
            src,
            start,
            src.len(),
            &[text("a, b", "a - b")],
        )
        .iter()
        .map(|m| m.applied_to(src))
        .collect();
        // OTHER is not read by f: left alone.
        assert_eq!(
            found,
            ["SEP = ' - '\nOTHER = '; '\n\n\ndef f(xs):\n    return SEP.join(xs)\n"]
        );
    }

    #[test]
    fn what_a_literal_cannot_spell_is_escaped_or_left_alone() {
        let src = "def f():\n    return \"a\" + f\"{x}b\" + r'c' + '\\\\d' + b'e'\n";
        let found = edits(src, &[text("a", "say \"hi\"\n")]);
        assert!(
            found.contains(
                &"def f():\n    return \"say \\\"hi\\\"\\n\" + f\"{x}b\" + r'c' + '\\\\d' + b'e'\n"
                    .to_owned()
            ),
            "{found:?}"
        );
        // An f-string's braces are doubled.
        let found = edits(src, &[text("Xb", "X{b}")]);
        assert!(
            found.iter().any(|f| f.contains("f\"{x}{{b}}\"")),
            "{found:?}"
        );
        // A raw literal cannot spell a quote; an escaped one is not read;
        // bytes are not text.
        assert!(edits(src, &[text("c", "c'")]).is_empty());
        assert!(edits(src, &[text("\\d", "\\e")]).is_empty());
        assert!(edits(src, &[text("e", "E")]).is_empty());
    }
}
