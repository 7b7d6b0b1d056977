//! Repair templates for the classic single-point mistakes of hand-written
//! code, in every language the branchers edit: the wrong one of a pair of
//! library calls (`min`/`max`, `any`/`all`, `lower`/`upper`,
//! `startswith`/`endswith`, `floor`/`ceil`), a call missing around a value
//! (`abs(a - b)`, `len(xs)`, `sorted(xs)`, `set(xs)`, `str(n)`) or one too
//! many, a case fold missing on a string compared (`.lower()`), a literal
//! of the same type mistaken for another (`' '` for `''`). (The operands of
//! a non-commutative operator swapped are the shape templates', in every
//! language.)

use forq_graph::Lang;
use tree_sitter::Node;

use crate::brancher::mutate::Mutation;
use crate::brancher::syntax::node_text;

/// Pairs of names where one is often written for the other, per language.
fn swapped_name(lang: Lang, name: &str) -> &'static [&'static str] {
    let common: &'static [&'static str] = match name {
        "min" => &["max"],
        "max" => &["min"],
        "floor" => &["ceil"],
        "ceil" => &["floor"],
        _ => &[],
    };
    if !common.is_empty() {
        return common;
    }
    match lang {
        Lang::Python => match name {
            "any" => &["all"],
            "all" => &["any"],
            "lower" => &["upper", "swapcase"],
            "upper" => &["lower", "swapcase"],
            "swapcase" => &["lower", "upper"],
            "startswith" => &["endswith"],
            "endswith" => &["startswith"],
            "isupper" => &["islower"],
            "islower" => &["isupper"],
            "append" => &["extend"],
            "extend" => &["append"],
            "find" => &["rfind"],
            "rfind" => &["find"],
            "split" => &["rsplit"],
            _ => &[],
        },
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx => match name {
            "some" => &["every"],
            "every" => &["some"],
            "toLowerCase" => &["toUpperCase"],
            "toUpperCase" => &["toLowerCase"],
            "startsWith" => &["endsWith"],
            "endsWith" => &["startsWith"],
            "indexOf" => &["lastIndexOf"],
            "lastIndexOf" => &["indexOf"],
            "push" => &["unshift"],
            "pop" => &["shift"],
            "shift" => &["pop"],
            _ => &[],
        },
        Lang::Rust => match name {
            "any" => &["all"],
            "all" => &["any"],
            "to_lowercase" => &["to_uppercase"],
            "to_uppercase" => &["to_lowercase"],
            "to_ascii_lowercase" => &["to_ascii_uppercase"],
            "to_ascii_uppercase" => &["to_ascii_lowercase"],
            "starts_with" => &["ends_with"],
            "ends_with" => &["starts_with"],
            "is_uppercase" => &["is_lowercase"],
            "is_lowercase" => &["is_uppercase"],
            "first" => &["last"],
            "last" => &["first"],
            "min_by_key" => &["max_by_key"],
            "max_by_key" => &["min_by_key"],
            _ => &[],
        },
        Lang::C | Lang::Cpp => match name {
            "tolower" => &["toupper"],
            "toupper" => &["tolower"],
            "isupper" => &["islower"],
            "islower" => &["isupper"],
            "fmin" => &["fmax"],
            "fmax" => &["fmin"],
            _ => &[],
        },
        _ => &[],
    }
}

/// Calls one too many is often written around a value: unwrapped, the
/// argument alone.
fn unwrappable(lang: Lang, name: &str) -> bool {
    match lang {
        Lang::Python => matches!(
            name,
            "abs" | "len" | "sorted" | "set" | "str" | "int" | "list" | "reversed" | "round"
        ),
        Lang::C | Lang::Cpp => matches!(name, "abs" | "fabs" | "labs"),
        _ => false,
    }
}

/// Whether `n` is the name a call calls (`f` of `f(x)`, `m` of `o.m(x)`).
fn is_called_name(n: Node<'_>) -> bool {
    let Some(parent) = n.parent() else {
        return false;
    };
    let callee = |c: Node<'_>| {
        c.parent().is_some_and(|p| {
            matches!(p.kind(), "call" | "call_expression")
                && p.child_by_field_name("function") == Some(c)
        })
    };
    if callee(n) {
        return true;
    }
    // `o.m` / `o::m` whose whole is called.
    matches!(
        parent.kind(),
        "attribute" | "member_expression" | "field_expression" | "scoped_identifier"
    ) && callee(parent)
}

/// The templates of this family at node `n`.
pub(crate) fn classic_templates(lang: Lang, n: Node<'_>, source: &str, out: &mut Vec<Mutation>) {
    let kind = n.kind();
    let text = || node_text(n, source);
    // The other of a pair of library calls.
    if matches!(
        kind,
        "identifier" | "property_identifier" | "field_identifier"
    ) && is_called_name(n)
    {
        for other in swapped_name(lang, &text()) {
            out.push(Mutation {
                start: n.start_byte(),
                end: n.end_byte(),
                text: (*other).to_owned(),
                operator: "swap call",
                weight: 0.8,
            });
        }
    }
    // A call one too many: `len(xs)` for `xs`.
    if matches!(kind, "call" | "call_expression") {
        let callee = n.child_by_field_name("function");
        let args = n.child_by_field_name("arguments");
        if let (Some(f), Some(args)) = (callee, args) {
            let named: Vec<Node<'_>> = {
                let mut c = args.walk();
                args.named_children(&mut c).collect()
            };
            if f.kind() == "identifier"
                && unwrappable(lang, &node_text(f, source))
                && named.len() == 1
                && named[0].kind() != "keyword_argument"
            {
                out.push(Mutation {
                    start: n.start_byte(),
                    end: n.end_byte(),
                    text: node_text(named[0], source),
                    operator: "remove call",
                    weight: 0.3,
                });
            }
        }
    }
    missing_calls(lang, n, source, out);
    literal_swaps(lang, n, source, out);
}

/// A call missing around a value: `abs(a - b)` for a difference, `len(xs)`
/// for a collection compared with or counted as a number, `sorted(xs)` and
/// `set(xs)` for a collection returned, `str(n)` for a number joined to a
/// string, and `.lower()` for a string compared.
fn missing_calls(lang: Lang, n: Node<'_>, source: &str, out: &mut Vec<Mutation>) {
    let kind = n.kind();
    let text = node_text(n, source);
    let mut wrap = |before: &str, after: &str, operator: &'static str, weight: f64| {
        out.push(Mutation {
            start: n.start_byte(),
            end: n.end_byte(),
            text: format!("{before}{text}{after}"),
            operator,
            weight,
        });
    };
    let difference = matches!(kind, "binary_operator" | "binary_expression")
        && n.child_by_field_name("operator")
            .is_some_and(|o| node_text(o, source) == "-");
    if difference {
        match lang {
            Lang::Python | Lang::C | Lang::Cpp => wrap("abs(", ")", "missing call", 0.5),
            Lang::JavaScript | Lang::TypeScript | Lang::Tsx => {
                wrap("Math.abs(", ")", "missing call", 0.5)
            }
            Lang::Rust => wrap(&format!("({}", ""), ").abs()", "missing call", 0.4),
            _ => {}
        }
    }
    if lang != Lang::Python || !matches!(kind, "identifier" | "attribute" | "call") {
        return;
    }
    let Some(parent) = n.parent() else {
        return;
    };
    match parent.kind() {
        // Returned: maybe it should have been sorted, or deduplicated.
        "return_statement" => {
            wrap("sorted(", ")", "missing call", 0.15);
            wrap("sorted(set(", "))", "missing call", 0.1);
        }
        // Compared: a count for the collection, a case fold for a string.
        "comparison_operator" => {
            wrap("len(", ")", "missing call", 0.15);
            if kind != "call" {
                wrap("", ".lower()", "missing call", 0.1);
            }
        }
        // An argument: `range(xs)` for `range(len(xs))`; `sorted(xs)` for
        // `sorted(set(xs))`, `set(s)` for `set(s.lower())`.
        "argument_list" => {
            let called = parent
                .parent()
                .and_then(|c| c.child_by_field_name("function"))
                .map(|f| node_text(f, source))
                .unwrap_or_default();
            match called.as_str() {
                "range" => wrap("len(", ")", "missing call", 0.2),
                "sorted" | "len" | "list" | "sum" | "tuple" | "max" | "min" | "set" => {
                    if called != "set" {
                        wrap("set(", ")", "missing call", 0.2);
                    }
                    if kind != "call" {
                        wrap("", ".lower()", "missing call", 0.1);
                    }
                }
                _ => {}
            }
        }
        // Joined to a string.
        "binary_operator"
            if {
                let mut c = parent.walk();
                let joins = parent.named_children(&mut c).any(|s| s.kind() == "string");
                joins
            } =>
        {
            wrap("str(", ")", "missing call", 0.2);
        }
        // Iterated: the first item or the last left out.
        "for_statement" | "for_in_clause" if parent.child_by_field_name("right") == Some(n) => {
            wrap("", "[1:]", "missing slice", 0.1);
            wrap("", "[:-1]", "missing slice", 0.1);
        }
        _ => {}
    }
}

/// A literal mistaken for another of its type: `' '` ↔ `''`, a one-letter
/// string in the other case.
fn literal_swaps(lang: Lang, n: Node<'_>, source: &str, out: &mut Vec<Mutation>) {
    let is_string = match lang {
        Lang::Python | Lang::JavaScript | Lang::TypeScript | Lang::Tsx => n.kind() == "string",
        Lang::Rust | Lang::C | Lang::Cpp => n.kind() == "string_literal",
        _ => false,
    };
    if !is_string {
        return;
    }
    let text = node_text(n, source);
    let Some(q) = text.chars().next().filter(|c| *c == '"' || *c == '\'') else {
        return; // prefixed strings (f'', r"") are left alone
    };
    if !text.ends_with(q) || text.len() < 2 {
        return;
    }
    let inner = &text[1..text.len() - 1];
    let mut others: Vec<String> = Vec::new();
    match inner {
        "" => others.push(" ".to_owned()),
        " " => others.push(String::new()),
        s if s.chars().count() == 1 && s.chars().all(char::is_alphabetic) => {
            let c = s.chars().next().unwrap_or(' ');
            let flipped: String = if c.is_uppercase() {
                c.to_lowercase().collect()
            } else {
                c.to_uppercase().collect()
            };
            if flipped != s {
                others.push(flipped);
            }
        }
        _ => {}
    }
    for other in others {
        out.push(Mutation {
            start: n.start_byte(),
            end: n.end_byte(),
            text: format!("{q}{other}{q}"),
            operator: "literal",
            weight: 0.3,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(lang: Lang, source: &str) -> tree_sitter::Tree {
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&lang.grammar()).expect("grammar");
        parser.parse(source, None).expect("tree")
    }

    /// Every template of the family over `source`, as the edited source.
    fn edits(lang: Lang, source: &str) -> Vec<String> {
        let tree = parse(lang, source);
        let mut out = Vec::new();
        let mut stack = vec![tree.root_node()];
        while let Some(n) = stack.pop() {
            let mut c = n.walk();
            stack.extend(n.children(&mut c));
            classic_templates(lang, n, source, &mut out);
            let strings = std::collections::HashSet::new();
            crate::brancher::templates::shapes::shape_templates(
                lang, n, source, &strings, None, &mut out,
            );
        }
        out.iter().map(|m| m.applied_to(source)).collect()
    }

    #[test]
    fn a_difference_gets_its_absolute_value_in_each_language() {
        let py = edits(
            Lang::Python,
            "def f(a, b):\n    d = a - b\n    return d < 1\n",
        );
        assert!(py.iter().any(|e| e.contains("d = abs(a - b)")), "{py:?}");
        let js = edits(Lang::JavaScript, "function f(a, b) { return a - b < 1; }\n");
        assert!(
            js.iter().any(|e| e.contains("Math.abs(a - b) < 1")),
            "{js:?}"
        );
        let rs = edits(Lang::Rust, "fn f(a: i64, b: i64) -> bool { a - b < 1 }\n");
        assert!(rs.iter().any(|e| e.contains("(a - b).abs() < 1")), "{rs:?}");
        let c = edits(Lang::C, "int f(int a, int b) { return a - b < 1; }\n");
        assert!(c.iter().any(|e| e.contains("abs(a - b) < 1")), "{c:?}");
    }

    #[test]
    fn the_other_of_a_pair_of_calls_is_tried() {
        let py = edits(
            Lang::Python,
            "def f(xs):\n    return max(xs), s.startswith('a')\n",
        );
        assert!(py.iter().any(|e| e.contains("return min(xs)")), "{py:?}");
        assert!(py.iter().any(|e| e.contains("s.endswith('a')")), "{py:?}");
        let js = edits(
            Lang::JavaScript,
            "const f = (xs) => xs.some((x) => x > 0);\n",
        );
        assert!(js.iter().any(|e| e.contains("xs.every(")), "{js:?}");
        let rs = edits(Lang::Rust, "fn f(s: &str) -> String { s.to_lowercase() }\n");
        assert!(rs.iter().any(|e| e.contains("s.to_uppercase()")), "{rs:?}");
        let c = edits(Lang::C, "int f(int c) { return tolower(c); }\n");
        assert!(c.iter().any(|e| e.contains("toupper(c)")), "{c:?}");
        // A variable that happens to be called `max` is no call.
        let named = edits(Lang::Python, "def f(max):\n    return max + 1\n");
        assert!(!named.iter().any(|e| e.contains("min")), "{named:?}");
    }

    #[test]
    fn a_call_too_many_and_a_call_missing_around_a_collection() {
        let py = edits(
            Lang::Python,
            "def f(xs, n):\n    if xs > n:\n        return len(set(xs))\n    return xs\n",
        );
        assert!(py.iter().any(|e| e.contains("return len(xs)")), "{py:?}");
        assert!(py.iter().any(|e| e.contains("if len(xs) > n:")), "{py:?}");
        assert!(
            py.iter().any(|e| e.contains("    return sorted(xs)\n")),
            "{py:?}"
        );
        let distinct = edits(Lang::Python, "def f(s):\n    return len(set(s))\n");
        assert!(
            distinct.iter().any(|e| e.contains("len(set(s.lower()))")),
            "{distinct:?}"
        );
        let unique = edits(Lang::Python, "def f(l):\n    return sorted(l)\n");
        assert!(
            unique.iter().any(|e| e.contains("sorted(set(l))")),
            "{unique:?}"
        );
    }

    #[test]
    fn a_blank_and_an_empty_string_are_taken_for_each_other() {
        let py = edits(Lang::Python, "def f(xs):\n    return ' '.join(xs)\n");
        assert!(
            py.iter().any(|e| e.contains("return ''.join(xs)")),
            "{py:?}"
        );
        let js = edits(Lang::JavaScript, "const f = (xs) => xs.join(\"\");\n");
        assert!(js.iter().any(|e| e.contains("xs.join(\" \")")), "{js:?}");
    }

    #[test]
    fn operands_of_a_difference_swap_outside_python() {
        let c = edits(Lang::C, "int f(int a, int b) { return a - b; }\n");
        assert!(c.iter().any(|e| e.contains("return b - a;")), "{c:?}");
        let rs = edits(Lang::Rust, "fn f(a: u32, b: u32) -> u32 { a % b }\n");
        assert!(rs.iter().any(|e| e.contains("{ b % a }")), "{rs:?}");
    }
}
