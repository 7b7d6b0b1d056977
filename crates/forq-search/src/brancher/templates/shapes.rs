//! Repair templates for the shape of a computation, after the fix
//! patterns of small algorithmic bugs (off-by-one and swapped operands,
//! the running maximum that forgot the maximum, the base case that
//! returns the wrong emptiness, the statement a loop forgot): operands of
//! a non-commutative operator swapped, each index of a multi-index
//! subscript one off or swapped with its neighbour, an accumulator in a
//! loop kept as `max`/`min` of itself, a returned `[]` or boolean given
//! the shape the function's other values suggest, `while True` bounded
//! by the collection the loop drains, a collection that is read but never
//! filled given the loop's item, the remainder a loop leaves appended
//! after it, and a variable a loop reads but never moves given the loop's
//! cursor. Python only for now; only with `Mutate::templates`.

use std::collections::HashSet;

use forq_graph::Lang;
use tree_sitter::Node;

use super::raises::indent_of;
use crate::brancher::mutate::Mutation;
use crate::brancher::syntax::{grouped, is_string, node_text, parameters};

/// Insertions of a forgotten statement per collection or variable, at most.
const MAX_INSERTIONS: usize = 8;

/// The templates at node `n` of `func` (the function under repair).
pub(crate) fn shape_templates(
    lang: Lang,
    n: Node<'_>,
    source: &str,
    strings: &HashSet<String>,
    func: Option<Node<'_>>,
    out: &mut Vec<Mutation>,
) {
    let mut push = |start: usize, end: usize, text: String, operator, weight| {
        out.push(Mutation {
            start,
            end,
            text,
            operator,
            weight,
        })
    };
    if lang != Lang::Python {
        // The operands' order matters in every language; the rest of the
        // family reads Python's shapes only.
        if n.kind() == "binary_expression" {
            swapped_operands(n, source, strings, &mut push);
        }
        return;
    }
    match n.kind() {
        "binary_operator" => swapped_operands(n, source, strings, &mut push),
        "subscript" => moved_indexes(n, source, &mut push),
        "assignment" => accumulated(n, source, func, &mut push),
        "return_statement" => return_shapes(n, source, func, &mut push),
        "while_statement" => loop_shapes(n, source, func, &mut push),
        "block" => filled(n, source, func, &mut push),
        "comparison_operator" => expanded_none_check(n, source, &mut push),
        _ => {}
    }
}

/// `result + alphabet[i]` for `alphabet[i] + result`: operands of
/// an operator where their order matters (`+` only where it joins
/// strings or lists).
fn swapped_operands(
    n: Node<'_>,
    source: &str,
    strings: &HashSet<String>,
    push: &mut impl FnMut(usize, usize, String, &'static str, f64),
) {
    let (Some(l), Some(op), Some(r)) = (
        n.child_by_field_name("left"),
        n.child_by_field_name("operator"),
        n.child_by_field_name("right"),
    ) else {
        return;
    };
    let o = node_text(op, source);
    let ordered = matches!(o.as_str(), "-" | "/" | "//" | "%" | "**" | "<<" | ">>");
    let joins = o == "+"
        && (is_string(n, strings, source)
            || [l, r]
                .iter()
                .any(|s| matches!(s.kind(), "list" | "list_comprehension" | "string")));
    if (ordered || joins) && node_text(l, source) != node_text(r, source) {
        push(
            n.start_byte(),
            n.end_byte(),
            format!(
                "{} {o} {}",
                grouped(&node_text(r, source)),
                grouped(&node_text(l, source))
            ),
            "swap operands",
            0.5,
        );
    }
}

/// `dp[i - 1, j]` for `dp[i - 1, j - 1]`, `d[i, k] + d[j, k]` for
/// `d[i, k] + d[k, j]`: the indexes past the first (the mutation
/// operators move the first) one off, and neighbours swapped.
fn moved_indexes(
    n: Node<'_>,
    source: &str,
    push: &mut impl FnMut(usize, usize, String, &'static str, f64),
) {
    let mut c = n.walk();
    let idx: Vec<Node<'_>> = n
        .children_by_field_name("subscript", &mut c)
        .filter(|i| i.kind() != "slice")
        .collect();
    if idx.len() < 2 {
        return;
    }
    for i in &idx[1..] {
        for d in ["- 1", "+ 1"] {
            push(
                i.start_byte(),
                i.end_byte(),
                format!("{} {d}", node_text(*i, source)),
                "index",
                0.8,
            );
        }
    }
    for pair in idx.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if node_text(a, source) == node_text(b, source) {
            continue;
        }
        let between = &source[a.end_byte()..b.start_byte()];
        push(
            a.start_byte(),
            b.end_byte(),
            format!("{}{between}{}", node_text(b, source), node_text(a, source)),
            "swap arguments",
            0.5,
        );
    }
}

/// `longest = length + 1` in a loop for `longest = max(longest,
/// length + 1)`; `best = best + x` for `best = max(0, best + x)`.
fn accumulated(
    n: Node<'_>,
    source: &str,
    func: Option<Node<'_>>,
    push: &mut impl FnMut(usize, usize, String, &'static str, f64),
) {
    let (Some(left), Some(right)) = (
        n.child_by_field_name("left"),
        n.child_by_field_name("right"),
    ) else {
        return;
    };
    if left.kind() != "identifier" || right.kind() != "binary_operator" || !in_loop(n, func) {
        return;
    }
    let (x, e) = (node_text(left, source), node_text(right, source));
    for wrapped in [
        format!("max({x}, {e})"),
        format!("min({x}, {e})"),
        format!("max(0, {e})"),
    ] {
        push(
            right.start_byte(),
            right.end_byte(),
            wrapped,
            "accumulate",
            0.5,
        );
    }
}

/// `return []` for `return [[]]` or `return [n]`; `return True` for
/// `return depth == 0` (a counter the function keeps).
fn return_shapes(
    n: Node<'_>,
    source: &str,
    func: Option<Node<'_>>,
    push: &mut impl FnMut(usize, usize, String, &'static str, f64),
) {
    let (Some(value), Some(func)) = (n.named_child(0), func) else {
        return;
    };
    match value.kind() {
        "list" if value.named_child_count() == 0 => {
            let mut shapes = vec!["[[]]".to_owned()];
            shapes.extend(
                parameters(func, source)
                    .iter()
                    .map(|(p, _)| format!("[{p}]")),
            );
            for s in shapes {
                push(value.start_byte(), value.end_byte(), s, "return shape", 0.5);
            }
        }
        "true" | "false" => {
            let negated = value.kind() == "false";
            for v in counters(func, source) {
                let test = if negated {
                    format!("{v} != 0")
                } else {
                    format!("{v} == 0")
                };
                push(
                    value.start_byte(),
                    value.end_byte(),
                    test,
                    "return shape",
                    0.5,
                );
            }
        }
        _ => {}
    }
}

/// At a `while` loop: the condition of a loop that drains a collection,
/// the remainder it leaves, the variable it forgets to move.
fn loop_shapes(
    n: Node<'_>,
    source: &str,
    func: Option<Node<'_>>,
    push: &mut impl FnMut(usize, usize, String, &'static str, f64),
) {
    let (Some(cond), Some(body)) = (
        n.child_by_field_name("condition"),
        n.child_by_field_name("body"),
    ) else {
        return;
    };
    // `while True:` draining a queue with `popleft()` and no way
    // out when it is empty: `while queue:`.
    if cond.kind() == "true" {
        let drained: Vec<String> = calls_on(body, source, &["pop", "popleft", "popitem"])
            .into_iter()
            .collect();
        for v in drained {
            push(cond.start_byte(), cond.end_byte(), v, "loop condition", 0.6);
        }
    }
    // The remainder a loop leaves: `while len(text) > cols:` that
    // appends to `lines` forgets `lines.append(text)` after it.
    if let Some(indent) = indent_of(n, source) {
        let read = names_in(cond, source);
        let appended = calls_on(body, source, &["append"]);
        let remainders = appended
            .iter()
            .flat_map(|l| read.iter().filter(move |w| *w != l).map(move |w| (l, w)))
            .take(MAX_INSERTIONS);
        for (l, w) in remainders {
            push(
                n.end_byte(),
                n.end_byte(),
                format!("\n{indent}{l}.append({w})"),
                "missing statement",
                0.5,
            );
        }
    }
    // A variable the loop reads but never moves, returned after
    // it: `prevnode` of a list reversal forgets `prevnode = node`.
    if let Some(func) = func {
        stalled(n, cond, body, func, source, push);
    }
}

/// A collection read but never filled: `nodesvisited` tested with
/// `in` but never added to, `opstack` popped but never pushed. The
/// item is the loop's (or the inner function's parameter).
fn filled(
    n: Node<'_>,
    source: &str,
    func: Option<Node<'_>>,
    push: &mut impl FnMut(usize, usize, String, &'static str, f64),
) {
    if let Some(f) = func.filter(|f| f.child_by_field_name("body") == Some(n)) {
        never_filled(f, source, push);
    }
}

/// `hare.successor is None` for `hare is None or hare.successor is
/// None`: the object itself may be missing too.
fn expanded_none_check(
    n: Node<'_>,
    source: &str,
    push: &mut impl FnMut(usize, usize, String, &'static str, f64),
) {
    let t = node_text(n, source);
    let Some(object) = n
        .named_child(0)
        .filter(|o| o.kind() == "attribute")
        .and_then(|o| o.child_by_field_name("object"))
    else {
        return;
    };
    if !t.ends_with("is None") || n.named_child_count() != 2 {
        return;
    }
    push(
        n.start_byte(),
        n.end_byte(),
        format!("{} is None or {t}", node_text(object, source)),
        "expand condition",
        0.5,
    );
}

/// Whether `n` sits in a loop of `func` (not of a function inside it).
fn in_loop(n: Node<'_>, func: Option<Node<'_>>) -> bool {
    let mut at = n.parent();
    while let Some(p) = at {
        if Some(p) == func || p.kind() == "function_definition" {
            return false;
        }
        if matches!(p.kind(), "for_statement" | "while_statement") {
            return true;
        }
        at = p.parent();
    }
    false
}

/// Names `func` sets to an integer literal: the counters it keeps.
fn counters(func: Node<'_>, source: &str) -> Vec<String> {
    let mut out = Vec::new();
    walk(func, &mut |n| {
        if n.kind() == "assignment" {
            if let (Some(l), Some(r)) = (
                n.child_by_field_name("left"),
                n.child_by_field_name("right"),
            ) {
                if l.kind() == "identifier" && r.kind() == "integer" {
                    let name = l.utf8_text(source.as_bytes()).unwrap_or("").to_owned();
                    if !out.contains(&name) {
                        out.push(name);
                    }
                }
            }
        }
    });
    out
}

/// The receivers of `.m(...)` calls in `n` for each method `m` named:
/// plain names only, in order found.
fn calls_on(n: Node<'_>, source: &str, methods: &[&str]) -> Vec<String> {
    let bytes = source.as_bytes();
    let mut out: Vec<String> = Vec::new();
    walk(n, &mut |c| {
        if c.kind() != "call" {
            return;
        }
        let Some(f) = c
            .child_by_field_name("function")
            .filter(|f| f.kind() == "attribute")
        else {
            return;
        };
        let (Some(object), Some(method)) = (
            f.child_by_field_name("object"),
            f.child_by_field_name("attribute"),
        ) else {
            return;
        };
        let m = method.utf8_text(bytes).unwrap_or("");
        if object.kind() == "identifier" && methods.contains(&m) {
            let name = object.utf8_text(bytes).unwrap_or("").to_owned();
            if !out.contains(&name) {
                out.push(name);
            }
        }
    });
    out
}

/// The plain names `n` reads, called functions left out, in order found.
fn names_in(n: Node<'_>, source: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    walk(n, &mut |c| {
        if c.kind() != "identifier" {
            return;
        }
        let called = c
            .parent()
            .is_some_and(|p| p.kind() == "call" && p.child_by_field_name("function") == Some(c));
        let attribute = c.parent().is_some_and(|p| {
            p.kind() == "attribute" && p.child_by_field_name("attribute") == Some(c)
        });
        if called || attribute {
            return;
        }
        let name = c.utf8_text(source.as_bytes()).unwrap_or("").to_owned();
        if !out.contains(&name) {
            out.push(name);
        }
    });
    out
}

/// The names `n` assigns (plain assignment targets, tuple targets, loop
/// targets), in order found.
fn assigned_in(n: Node<'_>, source: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    walk(n, &mut |c| {
        let target = match c.kind() {
            "assignment" | "augmented_assignment" => c.child_by_field_name("left"),
            "for_statement" => c.child_by_field_name("left"),
            _ => None,
        };
        let Some(target) = target else { return };
        let names = if target.kind() == "identifier" {
            vec![target]
        } else if !matches!(
            target.kind(),
            "pattern_list" | "tuple_pattern" | "list_pattern" | "tuple"
        ) {
            Vec::new()
        } else {
            let mut k = target.walk();
            target
                .named_children(&mut k)
                .filter(|t| t.kind() == "identifier")
                .collect()
        };
        for t in names {
            let name = t.utf8_text(source.as_bytes()).unwrap_or("").to_owned();
            if !out.contains(&name) {
                out.push(name);
            }
        }
    });
    out
}

/// Every node of `n`'s tree, `n` first.
fn walk<'t>(n: Node<'t>, f: &mut impl FnMut(Node<'t>)) {
    let mut stack = vec![n];
    while let Some(at) = stack.pop() {
        f(at);
        let mut c = at.walk();
        let children: Vec<Node<'t>> = at.children(&mut c).collect();
        stack.extend(children.into_iter().rev());
    }
}

/// A variable set before the `while` loop `w`, read in its body, never
/// assigned there and returned after it: `v = x` inserted before the
/// body's last statement and after it, for each name `x` the loop's
/// condition reads.
fn stalled(
    w: Node<'_>,
    cond: Node<'_>,
    body: Node<'_>,
    func: Node<'_>,
    source: &str,
    push: &mut impl FnMut(usize, usize, String, &'static str, f64),
) {
    let bytes = source.as_bytes();
    let Some(block) = w.parent().filter(|p| p.kind() == "block") else {
        return;
    };
    let before: Vec<String> = {
        let mut c = block.walk();
        block
            .named_children(&mut c)
            .take_while(|s| s.id() != w.id())
            .flat_map(|s| assigned_in(s, source))
            .collect()
    };
    let moved = assigned_in(body, source);
    // Read as a value (`node.successor = prevnode`), not only used.
    let mut read: Vec<String> = Vec::new();
    walk(body, &mut |n| {
        if n.kind() == "assignment" {
            if let Some(r) = n.child_by_field_name("right") {
                read.extend(names_in(r, source));
            }
        }
    });
    let mut returned: Vec<String> = Vec::new();
    walk(func, &mut |n| {
        if n.kind() == "return_statement" && n.start_byte() > w.end_byte() {
            if let Some(v) = n.named_child(0).filter(|v| v.kind() == "identifier") {
                returned.push(v.utf8_text(bytes).unwrap_or("").to_owned());
            }
        }
    });
    let cursors = names_in(cond, source);
    let mut c = body.walk();
    let statements: Vec<Node<'_>> = body.named_children(&mut c).collect();
    let Some(last) = statements.last().copied() else {
        return;
    };
    // A body on its `while` line takes no inserted line.
    let Some(indent) = indent_of(last, source) else {
        return;
    };
    let mut made = 0;
    for v in before
        .iter()
        .filter(|v| !moved.contains(v) && read.contains(v) && returned.contains(v))
    {
        for x in cursors.iter().filter(|x| *x != v) {
            if made >= MAX_INSERTIONS {
                return;
            }
            made += 2;
            push(
                last.start_byte(),
                last.start_byte(),
                format!("{v} = {x}\n{indent}"),
                "missing statement",
                0.5,
            );
            push(
                last.end_byte(),
                last.end_byte(),
                format!("\n{indent}{v} = {x}"),
                "missing statement",
                0.5,
            );
        }
    }
}

/// Collections `func` makes empty (`[]`, `set()`, `deque()`, …) and
/// reads, but never fills: `c.append(item)` (`add` for a set) inserted
/// at the start and the end of each block where an item is bound — the
/// body of a `for item in …` loop and the blocks in it, or the body of an
/// inner function taking `item`.
fn never_filled(
    func: Node<'_>,
    source: &str,
    push: &mut impl FnMut(usize, usize, String, &'static str, f64),
) {
    let bytes = source.as_bytes();
    let text = |n: Node<'_>| n.utf8_text(bytes).unwrap_or("").to_owned();
    let mut empties: Vec<(String, &'static str)> = Vec::new();
    walk(func, &mut |n| {
        if n.kind() != "assignment" {
            return;
        }
        let (Some(l), Some(r)) = (
            n.child_by_field_name("left"),
            n.child_by_field_name("right"),
        ) else {
            return;
        };
        if l.kind() != "identifier" {
            return;
        }
        let made = text(r);
        let method = match made.as_str() {
            "[]" | "list()" | "deque()" | "Queue()" => "append",
            "set()" => "add",
            _ => return,
        };
        empties.push((text(l), method));
    });
    let whole = text(func);
    for (c, method) in empties {
        let filled = [
            "append",
            "add",
            "extend",
            "update",
            "appendleft",
            "insert",
            "push",
        ]
        .iter()
        .any(|m| whole.contains(&format!("{c}.{m}(")))
            || whole.contains(&format!("{c}["))
            || whole.contains(&format!("{c} +="));
        if filled {
            continue;
        }
        // Bound items: loop targets and inner functions' parameters,
        // with the blocks they are bound in.
        let mut sites: Vec<(String, Node<'_>)> = Vec::new();
        walk(func, &mut |n| {
            let (item, body) = match n.kind() {
                "for_statement" => (
                    n.child_by_field_name("left")
                        .filter(|l| l.kind() == "identifier")
                        .map(text),
                    n.child_by_field_name("body"),
                ),
                "function_definition" if n.id() != func.id() => (
                    parameters(n, source).into_iter().next().map(|(p, _)| p),
                    n.child_by_field_name("body"),
                ),
                _ => (None, None),
            };
            if let (Some(item), Some(body)) = (item, body) {
                walk(body, &mut |b| {
                    if b.kind() == "block" {
                        sites.push((item.clone(), b));
                    }
                });
            }
        });
        let mut made = 0;
        for (item, block) in sites {
            if made >= MAX_INSERTIONS {
                break;
            }
            let mut k = block.walk();
            let statements: Vec<Node<'_>> = block.named_children(&mut k).collect();
            let (Some(first), Some(last)) = (statements.first(), statements.last()) else {
                continue;
            };
            let Some(indent) = indent_of(*first, source) else {
                continue;
            };
            for (at, insertion) in [
                (
                    first.start_byte(),
                    format!("{c}.{method}({item})\n{indent}"),
                ),
                (last.end_byte(), format!("\n{indent}{c}.{method}({item})")),
            ] {
                made += 1;
                push(at, at, insertion, "missing statement", 0.5);
            }
        }
    }
}
