//! Repair templates read from what a failing test expected: the
//! exception it asked for (`assertRaises(E)`, `pytest.raises(E,
//! match=…)`) and either never got — a check is missing, so `if CHECK:
//! raise E(…)` goes at the start of the function or of a block the test
//! ran — or got as another exception escaping from a line of the code —
//! an input goes unchecked there, so the line is guarded, wrapped in a
//! `try` that raises `E` instead, or its own `raise` names `E`. Python
//! only: the expectations come from the Python tracer
//! ([`crate::spectrum`]). Only with `Mutate::templates`.

use super::reach::{free_name, names_a_use};
use crate::brancher::mutate::Mutation;
use crate::brancher::syntax::is_read;
use crate::spectrum::Expected;

/// Python's built-in exception classes: names a handler can catch in any
/// module without an import.
const BUILTIN_EXCEPTIONS: &[&str] = &[
    "ArithmeticError",
    "AssertionError",
    "AttributeError",
    "BufferError",
    "EOFError",
    "Exception",
    "FileExistsError",
    "FileNotFoundError",
    "FloatingPointError",
    "ImportError",
    "IndexError",
    "IsADirectoryError",
    "KeyError",
    "LookupError",
    "MemoryError",
    "ModuleNotFoundError",
    "NameError",
    "NotADirectoryError",
    "NotImplementedError",
    "OSError",
    "OverflowError",
    "PermissionError",
    "RecursionError",
    "ReferenceError",
    "RuntimeError",
    "StopIteration",
    "SyntaxError",
    "TimeoutError",
    "TypeError",
    "UnicodeDecodeError",
    "UnicodeEncodeError",
    "UnicodeError",
    "ValueError",
    "ZeroDivisionError",
];

/// Parameters a missing check is tried on, at most.
const MAX_PARAMS: usize = 4;
/// Names read on a line a guard is tried on, at most.
const MAX_GUARDED: usize = 3;

/// How `expected` is written in a module whose top level binds the names
/// `binds` accepts: its own name, for a built-in or a class the module
/// defines or imports; `None` when the module cannot name it.
pub(crate) fn class_name(expected: &Expected, binds: impl Fn(&str) -> bool) -> Option<&str> {
    let class = expected.class.as_str();
    let builtin = expected.module == "builtins" && BUILTIN_EXCEPTIONS.contains(&class);
    (builtin || binds(class)).then_some(class)
}

/// Whether `class` (an error's class name) can be caught in a module
/// whose top level binds the names `binds` accepts.
fn catchable(class: &str, binds: impl Fn(&str) -> bool) -> bool {
    BUILTIN_EXCEPTIONS.contains(&class) || binds(class)
}

/// `text` as a Python string literal.
fn literal(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The whitespace before `n` on its line, when nothing else is there.
pub(crate) fn indent_of<'s>(n: tree_sitter::Node<'_>, source: &'s str) -> Option<&'s str> {
    let line_start = source[..n.start_byte()].rfind('\n').map_or(0, |i| i + 1);
    let indent = &source[line_start..n.start_byte()];
    indent.trim().is_empty().then_some(indent)
}

/// The first statement of a block (a docstring and comments skipped).
fn first_statement(block: tree_sitter::Node<'_>) -> Option<tree_sitter::Node<'_>> {
    let mut c = block.walk();
    let first = block.named_children(&mut c).find(|s| {
        let docstring = s.kind() == "expression_statement"
            && s.named_child(0).is_some_and(|c| c.kind() == "string");
        s.kind() != "comment" && !docstring
    });
    first
}

/// A check that is missing: `if CHECK: raise E(MSG)` for each of `params`
/// (the function's, `self` left out) at the start of `func`'s body and of
/// each block in it whose first line a failing test ran (`ran`, by
/// 1-based line), where `E` is written `class`. The checks are those of a
/// bad argument (`None`, negative, empty); a message pattern the test
/// gave is the message, and the checks it names (`n`, `None`) weigh more.
/// So do those the failing tests' names say (`named`, a word at a time:
/// `test_maxsize_negative` says `maxsize` and negative).
pub(crate) fn missing_raise(
    func: tree_sitter::Node<'_>,
    source: &str,
    params: &[String],
    class: &str,
    expected: &Expected,
    ran: &dyn Fn(u32) -> bool,
    named: &dyn Fn(&str) -> bool,
) -> Vec<Mutation> {
    let Some(body) = func.child_by_field_name("body") else {
        return Vec::new();
    };
    let message = expected.message();
    // The message's words, in order: the parameter it names first is the
    // one most likely checked.
    let words: Vec<&str> = message
        .as_deref()
        .map(|m| {
            m.split(|c: char| !c.is_alphanumeric() && c != '_')
                .filter(|w| !w.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let says = |word: &str| words.contains(&word);
    let subject = words.iter().find(|w| params.iter().any(|p| p == *w));
    let mut places = Vec::new();
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
        if n.kind() != "block" {
            continue;
        }
        let Some(first) = first_statement(n) else {
            continue;
        };
        let own = n.id() == body.id();
        if own || ran(first.start_position().row as u32 + 1) {
            places.push((first, if own { 1.0 } else { 0.6 }));
        }
    }
    let mut out = Vec::new();
    for (first, place_weight) in places {
        let Some(indent) = indent_of(first, source) else {
            continue;
        };
        for p in params.iter().take(MAX_PARAMS) {
            let tests_name = super::reach::words(p).iter().all(|w| named(w));
            let weight = if subject == Some(&p.as_str()) {
                2.0
            } else if says(p) || tests_name {
                1.5
            } else {
                1.0
            };
            for (check, default, hint) in [
                (
                    format!("{p} is None"),
                    "must not be None",
                    says("None") || named("none"),
                ),
                (
                    format!("{p} < 0"),
                    "must not be negative",
                    says("negative") || named("negative"),
                ),
                (
                    format!("not {p}"),
                    "must not be empty",
                    says("empty") || named("empty"),
                ),
            ] {
                let text = message.clone().unwrap_or_else(|| format!("{p} {default}"));
                out.push(Mutation {
                    start: first.start_byte(),
                    end: first.start_byte(),
                    text: format!(
                        "if {check}:\n{indent}    raise {class}({})\n{indent}",
                        literal(&text)
                    ),
                    operator: "missing raise",
                    weight: place_weight * weight * if hint { 1.5 } else { 1.0 },
                });
            }
        }
    }
    out
}

/// The statement a line starts: the innermost statement whose first byte
/// is the line's first non-blank one (`start..end`, bytes).
fn statement_at<'t>(
    root: tree_sitter::Node<'t>,
    source: &str,
    start: usize,
    end: usize,
) -> Option<tree_sitter::Node<'t>> {
    let line = source.get(start..end)?;
    let at = start + (line.len() - line.trim_start().len());
    let mut n = root.descendant_for_byte_range(at, at)?;
    loop {
        if n.start_byte() != at {
            return None;
        }
        if n.kind().ends_with("_statement") {
            return Some(n);
        }
        n = n.parent()?;
    }
}

/// Another exception than the expected one (written `class`) escaped
/// from the line `start..end` (bytes) of the file, raised as `raised`:
/// the line's statement guarded by a check on each name it reads (`if
/// not x: raise E(…)`, `x is None` first for a `TypeError` or an
/// `AttributeError`), wrapped in `try: … except RAISED as e: raise E(…)
/// from e`, or, when it is itself a `raise RAISED(…)`, raising `E`.
pub(crate) fn raised_instead(
    root: tree_sitter::Node<'_>,
    source: &str,
    (start, end): (usize, usize),
    raised: &str,
    class: &str,
    expected: &Expected,
    binds: &dyn Fn(&str) -> bool,
) -> Vec<Mutation> {
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(source.as_bytes()).unwrap_or("");
    let Some(statement) = statement_at(root, source, start, end) else {
        return Vec::new();
    };
    let Some(indent) = indent_of(statement, source) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let names = names_read(statement, source, (start, end), binds);
    let null_first = matches!(raised, "TypeError" | "AttributeError");
    for name in names.into_iter().take(MAX_GUARDED) {
        let message = expected
            .message()
            .unwrap_or_else(|| format!("invalid {name}"));
        for (check, weight) in [
            (format!("not {name}"), if null_first { 0.5 } else { 1.0 }),
            (
                format!("{name} is None"),
                if null_first { 1.0 } else { 0.5 },
            ),
        ] {
            out.push(Mutation {
                start: statement.start_byte(),
                end: statement.start_byte(),
                text: format!(
                    "if {check}:\n{indent}    raise {class}({})\n{indent}",
                    literal(&message)
                ),
                operator: "raise expected",
                weight,
            });
        }
    }
    out.extend(wrong_class_raised(statement, source, raised, class));
    // The statement in a `try` that turns its error into the expected one
    // (re-indenting would change a multi-line string's text: not then).
    let whole = text(statement);
    let quoted = whole.contains("\"\"\"") || whole.contains("'''");
    if catchable(raised, binds) && statement.kind() != "raise_statement" && !quoted {
        if let Some(error) = free_name(statement, source, &["error", "exc", "caught"]) {
            let cause = match expected.message() {
                Some(m) => literal(&m),
                None => format!("str({error})"),
            };
            let body = whole.replace('\n', "\n    ");
            out.push(Mutation {
                start: statement.start_byte(),
                end: statement.end_byte(),
                text: format!(
                    "try:\n{indent}    {body}\n{indent}except {raised} as {error}:\n{indent}    raise {class}({cause}) from {error}"
                ),
                operator: "raise expected",
                weight: 1.0,
            });
        }
    }
    out
}

/// Names read on the statement's first line (`start..end`), not the
/// module's own, in the order the line reads them.
fn names_read<'s>(
    statement: tree_sitter::Node<'_>,
    source: &'s str,
    (start, end): (usize, usize),
    binds: &dyn Fn(&str) -> bool,
) -> Vec<&'s str> {
    let mut names: Vec<&str> = Vec::new();
    let mut stack = vec![statement];
    while let Some(n) = stack.pop() {
        if n.start_byte() >= end {
            continue;
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
        let name = n.utf8_text(source.as_bytes()).unwrap_or("");
        if n.kind() == "identifier"
            && is_read(n)
            && names_a_use(n)
            && !binds(name)
            && !names.contains(&name)
        {
            names.push(name);
        }
    }
    names.sort_by_key(|n| source[start..end].find(n));
    names
}

/// A `raise RAISED(…)` statement raising `class` instead; in a handler,
/// where the raise may hide the very error expected (a subclass of what it
/// catches), also a bare `raise` that lets it go on as it was.
fn wrong_class_raised(
    statement: tree_sitter::Node<'_>,
    source: &str,
    raised: &str,
    class: &str,
) -> Vec<Mutation> {
    let called = statement
        .named_child(0)
        .and_then(|v| v.child_by_field_name("function"))
        .filter(|f| {
            statement.kind() == "raise_statement"
                && f.utf8_text(source.as_bytes()).unwrap_or("") == raised
        });
    let Some(f) = called else {
        return Vec::new();
    };
    let mut out = vec![Mutation {
        start: f.start_byte(),
        end: f.end_byte(),
        text: class.to_owned(),
        operator: "raise expected",
        weight: 1.0,
    }];
    let handler = std::iter::successors(statement.parent(), |p| p.parent())
        .take_while(|p| !p.kind().contains("definition"))
        .any(|p| p.kind() == "except_clause");
    if handler {
        out.push(Mutation {
            start: statement.start_byte(),
            end: statement.end_byte(),
            text: "raise".to_owned(),
            operator: "raise expected",
            weight: 1.0,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::brancher::mutate::parse_python as parse;

    fn apply(src: &str, m: &Mutation) -> String {
        m.applied_to(src)
    }

    fn line(src: &str, n: usize) -> (usize, usize) {
        let start: usize = src.split_inclusive('\n').take(n - 1).map(str::len).sum();
        let len = src.split_inclusive('\n').nth(n - 1).unwrap().len();
        (start, start + len)
    }

    #[test]
    fn a_pattern_is_a_message_only_when_it_is_an_escaped_string() {
        let e = |p: &str| Expected::new("ValueError", "builtins", Some(p)).message();
        assert_eq!(
            e(r"n must not be None when using strict mode\."),
            Some("n must not be None when using strict mode.".to_owned())
        );
        assert_eq!(e(r"bad \d+"), None);
        assert_eq!(e("a (b)"), None);
        assert_eq!(Expected::new("E", "m", None).message(), None);
    }

    #[test]
    fn a_class_is_named_where_the_module_can_name_it() {
        let value = Expected::new("ValueError", "builtins", None);
        let own = Expected::new("IDNAError", "idna.core", None);
        assert_eq!(class_name(&value, |_| false), Some("ValueError"));
        assert_eq!(class_name(&own, |n| n == "IDNAError"), Some("IDNAError"));
        assert_eq!(class_name(&own, |_| false), None);
    }

    #[test]
    fn a_missing_check_raises_what_the_test_expected_where_it_ran() {
        let src = "def chunked(iterable, n, strict=False):\n    \"\"\"Doc.\"\"\"\n    it = iter(iterable)\n    if strict:\n        return check(it, n)\n    return it\n";
        let tree = parse(src);
        let func = tree.root_node().named_child(0).unwrap();
        let expected = Expected::new(
            "ValueError",
            "builtins",
            Some(r"n must not be None when using strict mode\."),
        );
        let params = ["iterable".to_owned(), "n".to_owned(), "strict".to_owned()];
        // The failing test ran line 5, the `if strict:` block.
        let found = missing_raise(
            func,
            src,
            &params,
            "ValueError",
            &expected,
            &|l| l == 5,
            &|_| false,
        );
        let best = found
            .iter()
            .max_by(|a, b| a.weight.total_cmp(&b.weight))
            .unwrap();
        assert_eq!(
            apply(src, best),
            "def chunked(iterable, n, strict=False):\n    \"\"\"Doc.\"\"\"\n    if n is None:\n        raise ValueError(\"n must not be None when using strict mode.\")\n    it = iter(iterable)\n    if strict:\n        return check(it, n)\n    return it\n"
        );
        let inside = "    if strict:\n        if n is None:\n            raise ValueError(\"n must not be None when using strict mode.\")\n        return check(it, n)\n";
        assert!(found.iter().any(|m| apply(src, m).contains(inside)));
        // Three checks per parameter, in two places.
        assert_eq!(found.len(), 3 * 3 * 2);
        // A block no failing test ran gets none.
        let unrun = missing_raise(
            func,
            src,
            &params,
            "ValueError",
            &expected,
            &|_| false,
            &|_| false,
        );
        assert_eq!(unrun.len(), 3 * 3);
        // Without a pattern, the message says what is wrong.
        let plain = Expected::new("ValueError", "builtins", None);
        let found = missing_raise(
            func,
            src,
            &params[1..2],
            "ValueError",
            &plain,
            &|_| false,
            &|_| false,
        );
        assert!(apply(src, &found[1]).contains(
            "    if n < 0:\n        raise ValueError(\"n must not be negative\")\n    it = iter"
        ));
    }

    #[test]
    fn the_check_the_failing_tests_names_say_weighs_most() {
        // cachetools 7.1.8: `test_maxsize_negative` expects a ValueError
        // and gives no message.
        let src = "def __init__(self, maxsize, getsizeof=None):\n    self.__maxsize = maxsize\n";
        let tree = parse(src);
        let func = tree.root_node().named_child(0).unwrap();
        let params = ["maxsize".to_owned(), "getsizeof".to_owned()];
        let plain = Expected::new("ValueError", "builtins", None);
        let named = |w: &str| ["test", "maxsize", "negative"].contains(&w);
        let found = missing_raise(func, src, &params, "ValueError", &plain, &|_| false, &named);
        let best = found
            .iter()
            .max_by(|a, b| a.weight.total_cmp(&b.weight))
            .unwrap();
        assert!(apply(src, best).starts_with(
            "def __init__(self, maxsize, getsizeof=None):\n    if maxsize < 0:\n        raise ValueError(\"maxsize must not be negative\")\n"
        ));
        // Without the names, every check of every parameter weighs alike.
        let flat = missing_raise(
            func,
            src,
            &params,
            "ValueError",
            &plain,
            &|_| false,
            &|_| false,
        );
        assert!(flat.iter().all(|m| m.weight == flat[0].weight));
    }

    #[test]
    fn another_error_escaping_a_line_becomes_the_expected_one() {
        let src = "def encode(s, label):\n    if isinstance(s, bytes):\n        s = s.decode('ascii')\n    if label.decode('ascii')[-1] == '-':\n        raise ValueError('bad')\n    return s\n";
        let tree = parse(src);
        let root = tree.root_node();
        let expected = Expected::new("IDNAError", "idna.core", None);
        let binds = |n: &str| n == "IDNAError";
        let at3 = raised_instead(
            root,
            src,
            line(src, 3),
            "UnicodeDecodeError",
            "IDNAError",
            &expected,
            &binds,
        );
        let all: Vec<String> = at3.iter().map(|m| apply(src, m)).collect();
        assert!(all.iter().any(|a| a.contains(
            "        try:\n            s = s.decode('ascii')\n        except UnicodeDecodeError as error:\n            raise IDNAError(str(error)) from error\n    if label"
        )));
        assert!(all.iter().any(|a| a.contains(
            "        if not s:\n            raise IDNAError(\"invalid s\")\n        s = s.decode"
        )));
        // An `if` header's line: the whole statement is guarded or wrapped.
        let at4 = raised_instead(
            root,
            src,
            line(src, 4),
            "IndexError",
            "IDNAError",
            &expected,
            &binds,
        );
        let all: Vec<String> = at4.iter().map(|m| apply(src, m)).collect();
        assert!(all.iter().any(|a| a.contains(
            "    if not label:\n        raise IDNAError(\"invalid label\")\n    if label.decode"
        )));
        assert!(all.iter().any(|a| a.contains(
            "    try:\n        if label.decode('ascii')[-1] == '-':\n            raise ValueError('bad')\n    except IndexError as error:"
        )));
        // The guard reads names of the header only, not of the body.
        assert!(!all.iter().any(|a| a.contains("if not ValueError")));
        // A raise of the wrong class raises the expected one.
        let at5 = raised_instead(
            root,
            src,
            line(src, 5),
            "ValueError",
            "IDNAError",
            &expected,
            &binds,
        );
        assert!(at5
            .iter()
            .any(|m| apply(src, m).contains("        raise IDNAError('bad')\n")));
        // A raise in a handler that hides the expected error: re-raised.
        let src2 = "def alabel(label):\n    try:\n        check(label)\n    except LabelError:\n        raise LabelError('bad label')\n    return label\n";
        let tree2 = parse(src2);
        let expected2 = Expected::new("InvalidCodepoint", "idna.core", None);
        let binds2 = |n: &str| n == "InvalidCodepoint" || n == "LabelError";
        let at5 = raised_instead(
            tree2.root_node(),
            src2,
            line(src2, 5),
            "LabelError",
            "InvalidCodepoint",
            &expected2,
            &binds2,
        );
        let all: Vec<String> = at5.iter().map(|m| apply(src2, m)).collect();
        assert!(
            all.iter()
                .any(|a| a.contains("    except LabelError:\n        raise\n")),
            "{all:#?}"
        );
        assert!(all
            .iter()
            .any(|a| a.contains("        raise InvalidCodepoint('bad label')\n")));
        // An error the module cannot name is not caught.
        let other = raised_instead(
            root,
            src,
            line(src, 3),
            "DecodeFailure",
            "IDNAError",
            &expected,
            &binds,
        );
        assert!(other.iter().all(|m| !m.text.contains("except")));
    }
}
