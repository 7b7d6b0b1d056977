//! Repair templates read from a failing test's error, on the line where
//! it was raised ([`LineSuspect::error`]): the error is the strongest
//! evidence a search has, so these candidates come before every other.
//! A name a `NameError` says is not defined is replaced by one the module
//! binds; a function an `AttributeError` says has no such attribute is
//! called; a `{}` string a `TypeError` says `%` could not fill is
//! formatted with `.format`; and another exception than the one the test
//! expected is turned into it ([`super::raises::raised_instead`]).

use super::raises::{class_name, raised_instead};
use super::reach::{names_a_use, top_level, FileIngredients};
use crate::brancher::mutate::Mutation;
use crate::spectrum::LineSuspect;

/// The candidates `line`'s error asks for, on its bytes `span` of the
/// file parsed as `root`.
pub(crate) fn from_error(
    root: tree_sitter::Node<'_>,
    source: &str,
    file: &FileIngredients,
    line: &LineSuspect,
    span: (usize, usize),
) -> Vec<Mutation> {
    let mut out = Vec::new();
    let on_line = nodes_on(root, span);
    if let Some(name) = line.undefined_name() {
        out.extend(undefined_name(&on_line, source, file, name));
    }
    if let Some(attr) = line.attribute_of_function() {
        out.extend(call_function(&on_line, source, attr));
    }
    let error = line.error.as_deref().unwrap_or_default();
    if error.starts_with("TypeError:")
        && (error.contains("during string formatting") || error.contains("for format string"))
    {
        out.extend(format_string(root, &on_line, source));
    }
    if line.error_class() == Some("IndexError") {
        out.extend(bound_index(&on_line, source));
    }
    if let (Some(expected), Some(raised)) = (&line.expected, line.error_class()) {
        let binds = |name: &str| file.binds(name);
        if let Some(class) = class_name(expected, binds) {
            out.extend(raised_instead(
                root, source, span, raised, class, expected, &binds,
            ));
        }
    }
    out
}

/// Every node of the tree that overlaps the bytes `start..end`.
fn nodes_on(
    root: tree_sitter::Node<'_>,
    (start, end): (usize, usize),
) -> Vec<tree_sitter::Node<'_>> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if n.end_byte() <= start || n.start_byte() >= end {
            continue;
        }
        out.push(n);
        let mut c = n.walk();
        stack.extend(n.children(&mut c));
    }
    out
}

/// Replacements of `name`, which a `NameError` says is not defined, by
/// the file's names it may have been meant as
/// ([`FileIngredients::meant_for_undefined`]).
fn undefined_name(
    on_line: &[tree_sitter::Node<'_>],
    source: &str,
    file: &FileIngredients,
    name: &str,
) -> Vec<Mutation> {
    let meant = file.meant_for_undefined(name);
    let mut out = Vec::new();
    for n in on_line {
        if n.kind() == "identifier" && n.utf8_text(source.as_bytes()) == Ok(name) && names_a_use(*n)
        {
            for other in &meant {
                out.push(Mutation {
                    start: n.start_byte(),
                    end: n.end_byte(),
                    text: (*other).to_owned(),
                    operator: "undefined name",
                    weight: 1.0,
                });
            }
        }
    }
    out
}

/// `f.attr` → `f().attr` for each `f.attr`, where an `AttributeError`
/// says a function has no `attr`.
fn call_function(on_line: &[tree_sitter::Node<'_>], source: &str, attr: &str) -> Vec<Mutation> {
    let bytes = source.as_bytes();
    let mut out = Vec::new();
    for n in on_line.iter().filter(|n| n.kind() == "attribute") {
        let named = n
            .child_by_field_name("attribute")
            .is_some_and(|a| a.utf8_text(bytes) == Ok(attr));
        if let Some(object) = n.child_by_field_name("object").filter(|_| named) {
            let text = object.utf8_text(bytes).unwrap_or("");
            out.push(Mutation {
                start: object.start_byte(),
                end: object.end_byte(),
                text: format!("{text}()"),
                operator: "call function",
                weight: 1.0,
            });
        }
    }
    out
}

/// `X[I]` where an `IndexError` says `I` ran past `X`: the loop that
/// steps `I` bounded by `len(X)` too — `while I < end` → `while I < end
/// and I < len(X)`, `for I in range(a, b)` → `range(a, min(b, len(X)))`
/// (wcwidth 0.8.2: `n` past the string's end).
fn bound_index(on_line: &[tree_sitter::Node<'_>], source: &str) -> Vec<Mutation> {
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(source.as_bytes()).unwrap_or("");
    let mut out = Vec::new();
    for n in on_line.iter().filter(|n| n.kind() == "subscript") {
        let (Some(seq), Some(index)) = (
            n.child_by_field_name("value"),
            n.child_by_field_name("subscript"),
        ) else {
            continue;
        };
        if index.kind() != "identifier" || !matches!(seq.kind(), "identifier" | "attribute") {
            continue;
        }
        let (seq, index) = (text(seq), text(index));
        let length = format!("len({seq})");
        let loops = std::iter::successors(n.parent(), |p| p.parent())
            .take_while(|p| !p.kind().contains("definition"))
            .filter(|p| matches!(p.kind(), "while_statement" | "for_statement"));
        for l in loops {
            if l.kind() == "while_statement" {
                let Some(cond) = l.child_by_field_name("condition") else {
                    continue;
                };
                let steps = nodes_on(cond, (cond.start_byte(), cond.end_byte()))
                    .iter()
                    .any(|c| c.kind() == "identifier" && text(*c) == index);
                if steps && !text(cond).contains(&length) {
                    out.push(Mutation {
                        start: cond.start_byte(),
                        end: cond.end_byte(),
                        text: format!("{} and {index} < {length}", text(cond)),
                        operator: "bound index",
                        weight: 1.0,
                    });
                }
                continue;
            }
            let over_range = l.child_by_field_name("left").map(text) == Some(index)
                && l.child_by_field_name("right")
                    .and_then(|r| r.child_by_field_name("function"))
                    .is_some_and(|f| text(f) == "range");
            let args = l
                .child_by_field_name("right")
                .and_then(|r| r.child_by_field_name("arguments"))
                .filter(|_| over_range);
            let Some(args) = args else { continue };
            let mut c = args.walk();
            let bounds: Vec<tree_sitter::Node<'_>> = args.named_children(&mut c).collect();
            let end = match bounds.as_slice() {
                [end] | [_, end] | [_, end, _] => *end,
                _ => continue,
            };
            out.push(Mutation {
                start: end.start_byte(),
                end: end.end_byte(),
                text: format!("min({}, {length})", text(end)),
                operator: "bound index",
                weight: 1.0,
            });
        }
    }
    out
}

/// `TEMPLATE % value` where a `TypeError` says `%` could not fill the
/// string — a `str.format` template (`"{spec} is not supported"`): the
/// same values through `.format`, positionally and, when the template
/// names as many fields as there are values, by name. A template that is
/// a module-level name is read from its assignment.
fn format_string(
    root: tree_sitter::Node<'_>,
    on_line: &[tree_sitter::Node<'_>],
    source: &str,
) -> Vec<Mutation> {
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(source.as_bytes()).unwrap_or("");
    let mut out = Vec::new();
    for n in on_line.iter().filter(|n| n.kind() == "binary_operator") {
        let op = n.child_by_field_name("operator").map(text);
        let (Some("%"), Some(left), Some(right)) = (
            op,
            n.child_by_field_name("left"),
            n.child_by_field_name("right"),
        ) else {
            continue;
        };
        let fields = match left.kind() {
            "string" => format_fields(text(left)),
            "identifier" => module_template_fields(root, source, text(left)),
            _ => Vec::new(),
        };
        let values: Vec<&str> = if right.kind() == "tuple" {
            let mut c = right.walk();
            right.named_children(&mut c).map(text).collect()
        } else {
            vec![text(right)]
        };
        let receiver = match left.kind() {
            "string" | "identifier" | "attribute" => text(left).to_owned(),
            _ => format!("({})", text(left)),
        };
        // A literal says which style it is; a name's template is known
        // only when the module assigns it (`fields`).
        let literal = left.kind() == "string";
        let braces = if literal {
            text(left).contains('{')
        } else {
            true
        };
        let percents = if literal {
            text(left).contains('%')
        } else {
            fields.is_empty()
        };
        let mut push = |text: String| {
            out.push(Mutation {
                start: n.start_byte(),
                end: n.end_byte(),
                text,
                operator: "format string",
                weight: 1.0,
            })
        };
        // `%` given a tuple where one value was meant: the value in a
        // one-tuple.
        if percents && right.kind() != "tuple" {
            push(format!("{} % ({},)", text(left), text(right)));
        }
        // A `str.format` template filled with `%` (on a literal without
        // `{}` fields, `.format` would change nothing).
        if !braces {
            continue;
        }
        push(format!("{receiver}.format({})", values.join(", ")));
        if !fields.is_empty() && fields.len() == values.len() {
            let named: Vec<String> = fields
                .iter()
                .zip(&values)
                .map(|(f, v)| format!("{f}={v}"))
                .collect();
            push(format!("{receiver}.format({})", named.join(", ")));
        }
    }
    out
}

/// The `str.format` fields of the template the module's top level
/// assigns to `name`: a string literal's, or the fields a `.format` call
/// on a literal leaves for later (its doubled braces: `'{{spec}} is not
/// one of {supported}'.format(supported=…)` leaves `spec`).
fn module_template_fields<'s>(
    root: tree_sitter::Node<'_>,
    source: &'s str,
    name: &str,
) -> Vec<&'s str> {
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(source.as_bytes()).unwrap_or("");
    let Some(value) = module_value(root, source, name) else {
        return Vec::new();
    };
    if value.kind() == "string" {
        return format_fields(text(value));
    }
    let formatted = value
        .child_by_field_name("function")
        .filter(|f| f.kind() == "attribute")
        .filter(|f| f.child_by_field_name("attribute").map(text) == Some("format"))
        .and_then(|f| f.child_by_field_name("object"))
        .filter(|o| o.kind() == "string");
    let Some(literal) = formatted else {
        return Vec::new();
    };
    // `{{spec}}` is what `{spec}` becomes once formatted.
    let mut out = Vec::new();
    let mut rest = text(literal);
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else { break };
        let field = &after[..close];
        if field.chars().all(|c| c.is_alphanumeric() || c == '_')
            && field.starts_with(|c: char| c.is_alphabetic() || c == '_')
            && !out.contains(&field)
        {
            out.push(field);
        }
        rest = &after[close + 2..];
    }
    out
}

/// The value the module's top level assigns to `name`.
fn module_value<'t>(
    root: tree_sitter::Node<'t>,
    source: &str,
    name: &str,
) -> Option<tree_sitter::Node<'t>> {
    top_level(root)
        .into_iter()
        .filter(|a| a.kind() == "assignment")
        .filter(|a| {
            a.child_by_field_name("left")
                .is_some_and(|l| l.utf8_text(source.as_bytes()) == Ok(name))
        })
        .filter_map(|a| a.child_by_field_name("right"))
        .next_back()
}

/// The named fields of a `str.format` template, in order, each once
/// (`{spec}`, `{name!r}`, `{width:>4}`); empty when any field is
/// positional (`{}`, `{0}`).
fn format_fields(template: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        if let Some(escaped) = after.strip_prefix('{') {
            rest = escaped;
            continue;
        }
        let Some(close) = after.find('}') else { break };
        let field = after[..close]
            .split(['!', ':'])
            .next()
            .unwrap_or_default()
            .split(['.', '['])
            .next()
            .unwrap_or_default();
        let named = field
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_');
        if !named {
            return Vec::new();
        }
        if !out.contains(&field) {
            out.push(field);
        }
        rest = &after[close + 1..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::brancher::mutate::parse_python as parse;

    /// The candidates for an error raised on line `n` of `src`, applied.
    fn repairs(src: &str, n: u32, error: &str) -> Vec<String> {
        let tree = parse(src);
        let file = FileIngredients::of(tree.root_node(), src);
        let line = LineSuspect {
            file: "m.py".into(),
            line: n,
            score: 1.0,
            failing: 1,
            passing: 0,
            raised: true,
            error: Some(error.into()),
            expected: None,
        };
        let start: usize = src
            .split_inclusive('\n')
            .take(n as usize - 1)
            .map(str::len)
            .sum();
        let end = start + src.split_inclusive('\n').nth(n as usize - 1).unwrap().len();
        from_error(tree.root_node(), src, &file, &line, (start, end))
            .into_iter()
            .map(|m| m.applied_to(src))
            .collect()
    }

    #[test]
    fn errors_name_their_repairs() {
        // idna 3.12: `joining_types` became a function.
        let src = "from . import idnadata\n\ndef kind(c):\n    return idnadata.joining_types.get(ord(c))\n";
        let error = "AttributeError: 'function' object has no attribute";
        let called = repairs(src, 4, &format!("{error} 'get'"));
        assert_eq!(called.len(), 1);
        assert!(called[0].contains("    return idnadata.joining_types().get(ord(c))\n"));
        assert!(repairs(src, 4, &format!("{error} 'put'")).is_empty());
        // A name not defined, replaced by the module's.
        let src = "from .emphasis import finalize_tokens\n\ndef parse(t):\n    return _finalize_tokens(t)\n";
        let named = repairs(src, 4, "NameError: name '_finalize_tokens' is not defined");
        assert_eq!(named, ["from .emphasis import finalize_tokens\n\ndef parse(t):\n    return finalize_tokens(t)\n"]);
    }

    #[test]
    fn an_index_past_the_end_is_bounded_by_the_length_in_its_loop() {
        let src = "def width(s, n):\n    end = n\n    i = 0\n    while i < end:\n        c = s[i]\n        i += 1\n    for j in range(1, end):\n        c = s[j]\n";
        let error = "IndexError: string index out of range";
        assert_eq!(
            repairs(src, 5, error),
            ["def width(s, n):\n    end = n\n    i = 0\n    while i < end and i < len(s):\n        c = s[i]\n        i += 1\n    for j in range(1, end):\n        c = s[j]\n"]
        );
        assert_eq!(
            repairs(src, 8, error),
            ["def width(s, n):\n    end = n\n    i = 0\n    while i < end:\n        c = s[i]\n        i += 1\n    for j in range(1, min(end, len(s))):\n        c = s[j]\n"]
        );
        assert!(repairs(src, 8, "KeyError: 3").is_empty());
    }

    #[test]
    fn format_fields_are_the_named_ones_in_order() {
        assert_eq!(
            format_fields("'{spec}' is not {spec!r} in {x:>4}"),
            ["spec", "x"]
        );
        assert_eq!(format_fields("{{literal}} {a.b} {c[0]}"), ["a", "c"]);
        assert!(format_fields("{} and {0}").is_empty());
        assert!(format_fields("%s plain").is_empty());
    }

    #[test]
    fn a_format_template_filled_with_percent_is_formatted() {
        // webcolors 1.7: the template is itself formatted once, leaving
        // `{spec}` for later.
        let src = "TEMPLATE = '{{spec}} is not one of {supported}'.format(\n    supported=', '.join(SPECS))\n\n\ndef check(spec):\n    raise ValueError(TEMPLATE % spec)\n";
        let tree = parse(src);
        let line = LineSuspect {
            file: "m.py".into(),
            line: 5,
            score: 1.0,
            failing: 1,
            passing: 0,
            raised: true,
            error: Some("TypeError: not all arguments converted during string formatting".into()),
            expected: None,
        };
        let start = src.find("    raise").unwrap();
        let found = from_error(
            tree.root_node(),
            src,
            &FileIngredients::default(),
            &line,
            (start, src.len()),
        );
        let texts: Vec<&str> = found.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(
            texts,
            ["TEMPLATE.format(spec)", "TEMPLATE.format(spec=spec)"]
        );
        assert!(found.iter().all(|m| m.operator == "format string"));
        // A `%` template given a tuple where one value was meant: the value
        // in a one-tuple, and no `.format` (the literal has no fields).
        let src = "def show(tag):\n    return 'tag=%r' % tag\n";
        let error = "TypeError: not all arguments converted during string formatting";
        assert_eq!(
            repairs(src, 2, error),
            ["def show(tag):\n    return 'tag=%r' % (tag,)\n"]
        );
        // Another TypeError asks for nothing of the kind.
        let mut other = line.clone();
        other.error = Some("TypeError: unsupported operand".into());
        let none = from_error(
            tree.root_node(),
            src,
            &FileIngredients::default(),
            &other,
            (start, src.len()),
        );
        assert!(none.is_empty());
    }
}
