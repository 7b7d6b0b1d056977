//! Repair templates that look past the operators of one expression, after
//! the fix patterns most often found in real one-line fixes (PraPR's
//! method-call and name mutators, TBar's condition and type-check
//! templates): a call replaced by one of its arguments (or a method call
//! by its receiver), one operand of `and`/`or` negated, a name replaced by
//! a similar name of the same file (`_finalize` for `finalize`, a typo),
//! a type added to an `isinstance` check, a `try` whose handler hides
//! the error unwrapped, a value passed through the file's function named
//! after it (`title` → `_escape_title(title)`), and a `yield` of a value
//! that may be empty guarded. Only with `Mutate::templates`.

use forq_graph::Lang;

use crate::brancher::mutate::Mutation;
use crate::brancher::syntax::{is_boolean_op, is_read, node_text};

pub(crate) use super::names::{top_level, words, FileIngredients};

/// Names a similar-name replacement picks from, at most this many per site.
pub(super) const MAX_SIMILAR: usize = 3;

pub(super) fn is_name(kind: &str) -> bool {
    matches!(
        kind,
        "identifier" | "property_identifier" | "field_identifier" | "type_identifier"
    )
}

/// Python's builtin types a type check most plausibly missed beside each.
fn type_neighbours(t: &str) -> &'static [&'static str] {
    match t {
        "int" => &["slice", "float", "bool"],
        "float" => &["int"],
        "str" => &["bytes"],
        "bytes" => &["str", "bytearray"],
        "list" => &["tuple", "set"],
        "tuple" => &["list"],
        "set" => &["frozenset", "list"],
        "dict" => &["list"],
        _ => &[],
    }
}

/// The templates at node `n`.
pub(crate) fn reach_templates(
    lang: Lang,
    n: tree_sitter::Node<'_>,
    source: &str,
    file: &FileIngredients,
    within: Option<&str>,
    out: &mut Vec<Mutation>,
) {
    let kind = n.kind();
    let py = lang == Lang::Python;
    let mut push = |node: tree_sitter::Node<'_>, text: String, operator, weight| {
        out.push(Mutation {
            start: node.start_byte(),
            end: node.end_byte(),
            text,
            operator,
            weight,
        })
    };

    unwrapped_calls(n, source, &mut push);
    negated_operands(n, source, py, &mut push);
    similar_names(n, source, file, &mut push);
    wrapped_values(n, source, file, within, &mut push);
    guarded_yields(n, source, py, &mut push);
    widened_type_checks(n, source, py, &mut push);
    named_tuple_calls(n, source, py, file, within, &mut push);
    unwrapped_tries(n, source, py, &mut push);

    // A handler that raises another error without saying why: `raise
    // E(…)` → `raise E(…) from error`, naming what it handles.
    if py && kind == "raise_statement" {
        if let Some((start, end, chained)) = chained_raise(n, source) {
            out.push(Mutation {
                start,
                end,
                text: chained,
                operator: "chain raise",
                weight: 0.6,
            });
        }
    }
}

/// A call too many: `escape(strip(t))` → `strip(t)`, `wraps(w, f)` →
/// `w`, `s.strip()` → `s`. A call that is a whole statement is the
/// statement deletion's.
fn unwrapped_calls(
    n: tree_sitter::Node<'_>,
    source: &str,
    push: &mut impl FnMut(tree_sitter::Node<'_>, String, &'static str, f64),
) {
    let kind = n.kind();
    let statement = n
        .parent()
        .is_some_and(|p| p.kind() == "expression_statement");
    if matches!(kind, "call" | "call_expression") && !statement {
        let args = positional_args(n);
        if (1..=3).contains(&args.len()) {
            for a in &args {
                push(n, node_text(*a, source), "unwrap call", 0.5);
            }
        }
        let receiver = n
            .child_by_field_name("function")
            .filter(|f| matches!(f.kind(), "attribute" | "member_expression"))
            .and_then(|f| f.child_by_field_name("object"));
        if let Some(r) = receiver.filter(|_| args.is_empty()) {
            push(n, node_text(r, source), "unwrap call", 0.4);
        }
    }
}

/// One side of `and`/`or` negated: `a and b` → `a and not b`.
fn negated_operands(
    n: tree_sitter::Node<'_>,
    source: &str,
    py: bool,
    push: &mut impl FnMut(tree_sitter::Node<'_>, String, &'static str, f64),
) {
    if is_boolean_op(n, source) && n.named_child_count() == 2 {
        for side in [n.named_child(0), n.named_child(1)].into_iter().flatten() {
            let plain = matches!(
                side.kind(),
                "identifier"
                    | "attribute"
                    | "member_expression"
                    | "call"
                    | "call_expression"
                    | "subscript"
                    | "subscript_expression"
            );
            if plain {
                let negated = if py {
                    format!("not {}", node_text(side, source))
                } else {
                    format!("!{}", node_text(side, source))
                };
                push(side, negated, "negate operand", 0.6);
            }
        }
    }
}

/// A name mistaken for a similar one of the file.
fn similar_names(
    n: tree_sitter::Node<'_>,
    source: &str,
    file: &FileIngredients,
    push: &mut impl FnMut(tree_sitter::Node<'_>, String, &'static str, f64),
) {
    let kind = n.kind();
    if is_name(kind) && names_a_use(n) {
        for other in file.similar(&node_text(n, source)) {
            push(n, other.to_owned(), "similar name", 0.6);
        }
    }
}

/// A value that should have gone through one of the file's functions:
/// `' "' + title + '"'` → `' "' + _escape_title(title) + '"'`.
/// Where only the value's truth is read (`if title`, `not title`), a
/// function of it rarely changes anything.
fn wrapped_values(
    n: tree_sitter::Node<'_>,
    source: &str,
    file: &FileIngredients,
    within: Option<&str>,
    push: &mut impl FnMut(tree_sitter::Node<'_>, String, &'static str, f64),
) {
    let kind = n.kind();
    if kind == "identifier" && names_a_use(n) && is_plain_value(n) {
        let name = node_text(n, source);
        let weight = if tested_for_truth(n) { 0.1 } else { 0.5 };
        for f in file.wrappers(&name, within) {
            push(n, format!("{f}({name})"), "wrap call", weight);
        }
    }
}

/// A value yielded even when empty: `yield list(it)` → a guard.
fn guarded_yields(
    n: tree_sitter::Node<'_>,
    source: &str,
    py: bool,
    push: &mut impl FnMut(tree_sitter::Node<'_>, String, &'static str, f64),
) {
    let kind = n.kind();
    if py && kind == "expression_statement" {
        if let Some(guarded) = guarded_yield(n, source) {
            push(n, guarded, "guard yield", 0.4);
        }
    }
}

/// `isinstance(x, int)` → `isinstance(x, (int, slice))`.
fn widened_type_checks(
    n: tree_sitter::Node<'_>,
    source: &str,
    py: bool,
    push: &mut impl FnMut(tree_sitter::Node<'_>, String, &'static str, f64),
) {
    let kind = n.kind();
    if py && kind == "call" {
        let is_check = n
            .child_by_field_name("function")
            .is_some_and(|f| node_text(f, source) == "isinstance");
        let args = positional_args(n);
        if let (true, [_, types]) = (is_check, args.as_slice()) {
            let listed: Vec<String> = if types.kind() == "tuple" {
                let mut c = types.walk();
                types
                    .named_children(&mut c)
                    .map(|t| node_text(t, source))
                    .collect()
            } else {
                vec![node_text(*types, source)]
            };
            let mut added: Vec<&str> = listed
                .iter()
                .flat_map(|t| type_neighbours(t).iter().copied())
                .filter(|t| !listed.iter().any(|l| l == t))
                .collect();
            added.dedup();
            for t in added {
                let widened = format!("({}, {t})", listed.join(", "));
                push(*types, widened, "widen type check", 0.6);
            }
        }
    }
}

/// A plain tuple built where the module has a named one for it:
/// `tuple(f(v) for v in rgb)` → `IntegerRGB._make(f(v) for v in rgb)`,
/// the types named like the function first.
fn named_tuple_calls(
    n: tree_sitter::Node<'_>,
    source: &str,
    py: bool,
    file: &FileIngredients,
    within: Option<&str>,
    push: &mut impl FnMut(tree_sitter::Node<'_>, String, &'static str, f64),
) {
    let kind = n.kind();
    if py && kind == "call" {
        let plain = n
            .child_by_field_name("function")
            .is_some_and(|f| node_text(f, source) == "tuple");
        let args = n.child_by_field_name("arguments");
        let one =
            args.is_some_and(|a| a.kind() == "generator_expression" || a.named_child_count() == 1);
        if let (true, true, Some(args)) = (plain, one, args) {
            let own = within.map(words).unwrap_or_default();
            let mut types: Vec<(usize, &str)> = file
                .named_tuples
                .iter()
                .map(|t| {
                    (
                        words(t).iter().filter(|w| own.contains(w)).count(),
                        t.as_str(),
                    )
                })
                .collect();
            types.sort_by_key(|(shared, _)| std::cmp::Reverse(*shared));
            for (shared, t) in types.into_iter().take(MAX_SIMILAR) {
                let weight = if shared > 0 { 1.0 } else { 0.3 };
                push(
                    n,
                    format!("{t}._make{}", node_text(args, source)),
                    "named tuple",
                    weight,
                );
            }
        }
    }
}

/// A `try` whose handler turns the error into another: its body alone.
fn unwrapped_tries(
    n: tree_sitter::Node<'_>,
    source: &str,
    py: bool,
    push: &mut impl FnMut(tree_sitter::Node<'_>, String, &'static str, f64),
) {
    let kind = n.kind();
    if py && kind == "try_statement" {
        if let Some(body) = n.child_by_field_name("body") {
            if let Some(unwrapped) = dedented_body(n, body, source) {
                push(n, unwrapped, "unwrap try", 0.4);
            }
        }
    }
}

/// `raise E(…)` in an `except X:` handler, chained to what it handles:
/// the bytes from the handler's `except` to the end of the raise, with
/// the handler naming its exception (`except X as error:`, through a name
/// the function does not use, unless it names it already) and the raise
/// ending `from error`. `None` for a bare `raise`, one already chained,
/// one outside a handler (or in a function nested in it) and a bare
/// `except:`.
fn chained_raise(raise: tree_sitter::Node<'_>, source: &str) -> Option<(usize, usize, String)> {
    let own = raise.utf8_text(source.as_bytes()).ok()?;
    if raise.named_child(0).is_none() || raise.child_by_field_name("cause").is_some() {
        return None;
    }
    let clause = std::iter::successors(raise.parent(), |p| p.parent())
        .take_while(|p| !p.kind().contains("definition"))
        .find(|p| p.kind() == "except_clause")?;
    let mut c = clause.walk();
    let colon = clause.children(&mut c).find(|k| k.kind() == ":")?;
    let header = source.get(clause.start_byte()..colon.start_byte())?;
    let caught = header.strip_prefix("except")?.trim();
    if caught.is_empty() {
        return None;
    }
    let (header, name) = match caught.rsplit_once(" as ") {
        Some((_, name)) => (header.to_owned(), name.trim().to_owned()),
        None => {
            let name = free_name(raise, source, &["error", "exc", "caught"])?;
            (format!("{header} as {name}"), name.to_owned())
        }
    };
    let between = source.get(colon.start_byte()..raise.start_byte())?;
    Some((
        clause.start_byte(),
        raise.end_byte(),
        format!("{header}{between}{own} from {name}"),
    ))
}

/// A call's positional arguments (no keywords, splats or comments).
fn positional_args(call: tree_sitter::Node<'_>) -> Vec<tree_sitter::Node<'_>> {
    let Some(args) = call.child_by_field_name("arguments") else {
        return Vec::new();
    };
    let mut c = args.walk();
    let all: Vec<tree_sitter::Node<'_>> = args.named_children(&mut c).collect();
    if all.iter().any(|a| {
        matches!(
            a.kind(),
            "keyword_argument" | "list_splat" | "dictionary_splat" | "spread_element"
        )
    }) {
        // `f(x, key=k)` without `f` changes more than one thing.
        return Vec::new();
    }
    all.into_iter()
        .filter(|a| !a.kind().contains("comment"))
        .collect()
}

/// Whether the name at `n` is used rather than defined (not a
/// definition's, a parameter's, an import's or a keyword's name).
pub(crate) fn names_a_use(n: tree_sitter::Node<'_>) -> bool {
    let Some(parent) = n.parent() else {
        return false;
    };
    let pk = parent.kind();
    let is_field = |name: &str| {
        parent
            .child_by_field_name(name)
            .is_some_and(|c| c.id() == n.id())
    };
    if (pk.contains("definition") || pk.contains("declaration") || pk.contains("declarator"))
        && is_field("name")
    {
        return false;
    }
    // What a C or C++ declarator declares (`int count_up(…)`, `int n = 0`).
    if pk.contains("declarator") && is_field("declarator") {
        return false;
    }
    if pk == "keyword_argument" && is_field("name") {
        return false;
    }
    // Assigned, not read: a new name there is a new variable.
    if (pk.contains("assignment") && is_field("left")) || pk.contains("parameter") {
        return false;
    }
    !(pk.contains("import") || pk == "dotted_name" || pk == "aliased_import")
}

/// The body of `try_statement` one level less indented, to replace the
/// whole statement (which starts after its line's indentation).
fn dedented_body(
    try_statement: tree_sitter::Node<'_>,
    body: tree_sitter::Node<'_>,
    source: &str,
) -> Option<String> {
    let own = try_statement.start_position().column;
    let inner = body.start_position().column;
    if inner <= own || body.start_position().row == try_statement.start_position().row {
        return None;
    }
    let line_start = source[..body.start_byte()].rfind('\n').map_or(0, |i| i + 1);
    let block = &source[line_start..body.end_byte()];
    let shift = inner - own;
    let mut lines = Vec::new();
    for line in block.split('\n') {
        let spaces = line.len() - line.trim_start_matches(' ').len();
        if !line.trim().is_empty() && spaces < shift {
            return None; // not indented with spaces as the body's first line
        }
        lines.push(line.get(shift.min(spaces)..).unwrap_or(""));
    }
    let text = lines.join("\n");
    Some(text.get(own..).map(str::to_owned).unwrap_or(text))
}

/// Whether only the truth of `n` is read: it is a condition, negated, or
/// an operand of `and`/`or`.
fn tested_for_truth(n: tree_sitter::Node<'_>) -> bool {
    let Some(parent) = n.parent() else {
        return false;
    };
    let condition = parent
        .child_by_field_name("condition")
        .is_some_and(|c| c.id() == n.id());
    condition
        || matches!(
            parent.kind(),
            "not_operator" | "boolean_operator" | "unary_expression"
        )
}

/// Whether identifier `n` stands for a value on its own: read (not the
/// called function, not an attribute's name, not a declared one), and
/// neither a loop's target nor a statement by itself.
fn is_plain_value(n: tree_sitter::Node<'_>) -> bool {
    let Some(parent) = n.parent() else {
        return false;
    };
    let target = matches!(parent.kind(), "for_statement" | "for_in_statement")
        && parent
            .child_by_field_name("left")
            .is_some_and(|c| c.id() == n.id());
    is_read(n) && !target && parent.kind() != "expression_statement"
}

/// A Python `yield VALUE` statement rewritten to yield only a truthy
/// value, through a new variable when the value is not a name (one the
/// enclosing function does not use: a name of the file elsewhere is no
/// clash).
fn guarded_yield(statement: tree_sitter::Node<'_>, source: &str) -> Option<String> {
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(source.as_bytes()).unwrap_or("");
    let y = statement.named_child(0).filter(|y| y.kind() == "yield")?;
    if text(y).starts_with("yield from") {
        return None;
    }
    let value = y.named_child(0)?;
    let line_start = source[..statement.start_byte()]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let indent = &source[line_start..statement.start_byte()];
    if !indent.trim().is_empty() || text(statement).contains('\n') {
        return None;
    }
    if value.kind() == "identifier" {
        let v = text(value);
        return Some(format!("if {v}:\n{indent}    yield {v}"));
    }
    let fresh = free_name(statement, source, &["value", "item", "chunk", "part"])?;
    Some(format!(
        "{fresh} = {}\n{indent}if {fresh}:\n{indent}    yield {fresh}",
        text(value)
    ))
}

/// The first of `candidates` that the function holding `at` (the module,
/// outside one) never names: a new variable there clashes with nothing.
pub(crate) fn free_name<'c>(
    at: tree_sitter::Node<'_>,
    source: &str,
    candidates: &[&'c str],
) -> Option<&'c str> {
    let mut scope = at;
    while let Some(p) = scope.parent() {
        scope = p;
        if scope.kind() == "function_definition" {
            break;
        }
    }
    let mut used = std::collections::HashSet::new();
    let mut stack = vec![scope];
    while let Some(n) = stack.pop() {
        if n.kind() == "identifier" {
            used.insert(n.utf8_text(source.as_bytes()).unwrap_or(""));
        }
        let mut c = n.walk();
        stack.extend(n.children(&mut c));
    }
    candidates.iter().copied().find(|n| !used.contains(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::brancher::templates::names::{alike, edit_distance};
    use forq_graph::Lang;

    #[test]
    fn names_alike_by_underscore_case_or_a_typo() {
        assert_eq!(alike("_finalize_tokens", "finalize_tokens"), Some(0));
        assert_eq!(alike("getValue", "get_value"), Some(0));
        assert_eq!(alike("recieved_items", "received_items"), Some(2));
        assert_eq!(alike("lenght", "length"), None); // two edits in six letters
        assert_eq!(alike("count", "counts"), Some(1));
        assert_eq!(alike("len", "min"), None); // too short to guess
        assert_eq!(alike("count", "total"), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn an_undefined_name_may_mean_a_bound_name_alike_or_ending_with_it() {
        let src = "from ._width import width as wcwidth_width\nfrom .emphasis import finalize_tokens\n\ndef f(text):\n    return _width(text) + _finalize_tokens(text)\n";
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&Lang::Python.grammar()).unwrap();
        let tree = parser.parse(src, None).unwrap();
        let file = FileIngredients::of(tree.root_node(), src);
        // `width` is written in the file but bound to nothing.
        assert_eq!(file.meant_for_undefined("_width"), ["wcwidth_width"]);
        assert_eq!(
            file.meant_for_undefined("_finalize_tokens"),
            ["finalize_tokens"]
        );
        assert!(file.meant_for_undefined("zz").is_empty());
        // An alias leads back to the name it imports.
        assert_eq!(file.original("wcwidth_width"), "width");
        assert_eq!(file.original("finalize_tokens"), "finalize_tokens");
        // Names the module binds before others ending the same way
        // (wcwidth 0.7.0: parameters `ambiguous_width`, `chunk_width`).
        let busy = "from ._width import width as wcwidth_width\n\ndef g(ambiguous_width, chunk_width, current_width):\n    return _width(chunk_width)\n";
        let tree = parser.parse(busy, None).unwrap();
        let file = FileIngredients::of(tree.root_node(), busy);
        assert_eq!(file.meant_for_undefined("_width")[0], "wcwidth_width");
    }

    #[test]
    fn a_raise_in_a_handler_is_chained_to_what_it_handles() {
        let chain = |src: &str| {
            let mut parser = tree_sitter::Parser::new();
            parser.set_language(&Lang::Python.grammar()).unwrap();
            let tree = parser.parse(src, None).unwrap();
            let mut stack = vec![tree.root_node()];
            let mut out = Vec::new();
            while let Some(n) = stack.pop() {
                if n.kind() == "raise_statement" {
                    if let Some((start, end, text)) = chained_raise(n, src) {
                        let mut new = src.to_owned();
                        new.replace_range(start..end, &text);
                        out.push(new);
                    }
                }
                let mut c = n.walk();
                stack.extend(n.children(&mut c));
            }
            out
        };
        assert_eq!(
            chain("def first(it):\n    try:\n        return next(it)\n    except StopIteration:\n        raise ValueError('empty')\n"),
            ["def first(it):\n    try:\n        return next(it)\n    except StopIteration as error:\n        raise ValueError('empty') from error\n"]
        );
        // A handler that names what it handles keeps its name; `error`
        // taken, another name.
        assert_eq!(
            chain("def f(error):\n    try:\n        g()\n    except (KeyError, IndexError) as e:\n        if error:\n            raise ValueError(error)\n"),
            ["def f(error):\n    try:\n        g()\n    except (KeyError, IndexError) as e:\n        if error:\n            raise ValueError(error) from e\n"]
        );
        assert_eq!(
            chain("def f():\n    try:\n        g()\n    except KeyError:\n        error = 1\n        raise ValueError(error)\n"),
            ["def f():\n    try:\n        g()\n    except KeyError as exc:\n        error = 1\n        raise ValueError(error) from exc\n"]
        );
        // Bare, chained already, outside a handler, a bare `except:`.
        assert!(
            chain("def f():\n    try:\n        g()\n    except KeyError:\n        raise\n")
                .is_empty()
        );
        assert!(chain("def f():\n    try:\n        g()\n    except KeyError as e:\n        raise ValueError() from None\n").is_empty());
        assert!(chain("def f():\n    raise ValueError()\n").is_empty());
        assert!(chain(
            "def f():\n    try:\n        g()\n    except:\n        raise ValueError()\n"
        )
        .is_empty());
    }

    #[test]
    fn a_plain_tuple_becomes_the_named_one_named_like_the_function() {
        assert_eq!(
            words("normalize_integer_triplet"),
            ["normalize", "integer", "triplet"]
        );
        assert_eq!(words("IntegerRGB"), ["integer", "rgb"]);
        assert_eq!(words("HTML5SimpleColor"), ["html5", "simple", "color"]);
        assert_eq!(words("HTMLRenderer"), ["html", "renderer"]);
        let src = "import collections\nPercentRGB = collections.namedtuple('PercentRGB', 'r g b')\nIntegerRGB = collections.namedtuple('IntegerRGB', 'r g b')\n\n\nclass Pair(typing.NamedTuple):\n    a: int\n\n\ndef normalize_integer_triplet(rgb):\n    return tuple(clip(v) for v in rgb)\n";
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&Lang::Python.grammar()).unwrap();
        let tree = parser.parse(src, None).unwrap();
        let file = FileIngredients::of(tree.root_node(), src);
        assert_eq!(file.named_tuples, ["PercentRGB", "IntegerRGB", "Pair"]);
        let call = tree
            .root_node()
            .descendant_for_byte_range(
                src.find("tuple(clip").unwrap(),
                src.find("tuple(clip").unwrap() + 5,
            )
            .unwrap()
            .parent()
            .unwrap();
        assert_eq!(call.kind(), "call");
        let mut out = Vec::new();
        reach_templates(
            Lang::Python,
            call,
            src,
            &file,
            Some("normalize_integer_triplet"),
            &mut out,
        );
        let named: Vec<(&str, f64)> = out
            .iter()
            .filter(|m| m.operator == "named tuple")
            .map(|m| (m.text.as_str(), m.weight))
            .collect();
        assert_eq!(
            named,
            [
                ("IntegerRGB._make(clip(v) for v in rgb)", 1.0),
                ("PercentRGB._make(clip(v) for v in rgb)", 0.3),
                ("Pair._make(clip(v) for v in rgb)", 0.3)
            ]
        );
    }

    #[test]
    fn try_bodies_come_out_one_level_less_indented() {
        let src = "def f(x):\n    try:\n        y = g(x)\n        h(y)\n    except E:\n        raise F()\n    return y\n";
        let mut p = tree_sitter::Parser::new();
        p.set_language(&Lang::Python.grammar()).unwrap();
        let tree = p.parse(src, None).unwrap();
        let mut stack = vec![tree.root_node()];
        let mut found = None;
        while let Some(n) = stack.pop() {
            if n.kind() == "try_statement" {
                let body = n.child_by_field_name("body").unwrap();
                found = Some((n, dedented_body(n, body, src).unwrap()));
            }
            let mut c = n.walk();
            stack.extend(n.children(&mut c));
        }
        let (n, text) = found.unwrap();
        let mut out = src.to_owned();
        out.replace_range(n.start_byte()..n.end_byte(), &text);
        assert_eq!(out, "def f(x):\n    y = g(x)\n    h(y)\n    return y\n");
    }
}
