//! Repair templates for a statement the surrounding code implies but
//! lacks, the commonest omissions in people's own small bugs: a function
//! that computes a value and falls off its end without returning it (the
//! final `return total` forgotten), and a loop that finds what it looks
//! for and goes on looking (the `break` after the match forgotten).
//! Python and JavaScript; only with `Mutate::templates`.

use forq_graph::Lang;
use tree_sitter::Node;

use super::raises::indent_of;
use crate::brancher::mutate::Mutation;
use crate::brancher::syntax::node_text;

/// Names returned at the end, at most (the latest assigned first).
const MAX_RETURNS: usize = 3;

/// The templates at node `n`.
pub(crate) fn implied_templates(lang: Lang, n: Node<'_>, source: &str, out: &mut Vec<Mutation>) {
    let js = matches!(lang, Lang::JavaScript | Lang::TypeScript | Lang::Tsx);
    if lang != Lang::Python && !js {
        return;
    }
    if is_function(n.kind()) {
        missing_return(n, source, js, out);
    }
    if matches!(
        n.kind(),
        "for_statement" | "while_statement" | "for_in_statement"
    ) {
        missing_break(n, source, js, out);
    }
}

fn is_function(kind: &str) -> bool {
    matches!(
        kind,
        "function_definition"
            | "function_declaration"
            | "method_definition"
            | "function_expression"
    )
}

/// The statements of `block` (a Python block or a JavaScript statement
/// block), comments left out.
fn statements(block: Node<'_>) -> Vec<Node<'_>> {
    let mut c = block.walk();
    block
        .named_children(&mut c)
        .filter(|s| s.kind() != "comment")
        .collect()
}

/// Whether `s` ends its block's flow: a return, raise, throw, break or
/// continue.
fn ends_flow(s: Node<'_>) -> bool {
    matches!(
        s.kind(),
        "return_statement"
            | "raise_statement"
            | "throw_statement"
            | "break_statement"
            | "continue_statement"
    )
}

/// The names `body` assigns (not inside a nested function), the latest
/// assigned first, each once.
fn assigned(body: Node<'_>, source: &str) -> Vec<String> {
    let mut found: Vec<(usize, String)> = Vec::new();
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        if n != body && is_function(n.kind()) {
            continue;
        }
        let target = match n.kind() {
            "assignment"
            | "augmented_assignment"
            | "assignment_expression"
            | "augmented_assignment_expression" => n.child_by_field_name("left"),
            "variable_declarator" => n.child_by_field_name("name"),
            _ => None,
        };
        if let Some(t) = target.filter(|t| t.kind() == "identifier") {
            found.push((n.start_byte(), node_text(t, source)));
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
    }
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    let mut names: Vec<String> = Vec::new();
    for (_, name) in found {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// `return NAME` after the last statement of function `f` when its body
/// can fall off its end, for the names it assigns.
fn missing_return(f: Node<'_>, source: &str, js: bool, out: &mut Vec<Mutation>) {
    let Some(body) = f.child_by_field_name("body") else {
        return;
    };
    let Some(last) = statements(body).last().copied() else {
        return;
    };
    if ends_flow(last) {
        return;
    }
    let Some(indent) = indent_of(last, source) else {
        return;
    };
    for name in assigned(body, source).into_iter().take(MAX_RETURNS) {
        let end = if js { ";" } else { "" };
        out.push(Mutation {
            start: last.end_byte(),
            end: last.end_byte(),
            text: format!("\n{indent}return {name}{end}"),
            operator: "missing statement",
            weight: 0.8,
        });
    }
}

/// `break` after an assignment inside an `if` of loop `l` whose branch
/// does not end the loop's turn: the loop that found what it looked for
/// goes on and overwrites it.
fn missing_break(l: Node<'_>, source: &str, js: bool, out: &mut Vec<Mutation>) {
    let Some(body) = l.child_by_field_name("body") else {
        return;
    };
    for s in statements(body) {
        if s.kind() != "if_statement" {
            continue;
        }
        let Some(branch) = s.child_by_field_name("consequence") else {
            continue;
        };
        let inner = statements(branch);
        let Some(last) = inner.last().copied() else {
            continue;
        };
        if ends_flow(last) || assigned(branch, source).is_empty() {
            continue;
        }
        let Some(indent) = indent_of(last, source) else {
            continue;
        };
        let word = if js { "break;" } else { "break" };
        out.push(Mutation {
            start: last.end_byte(),
            end: last.end_byte(),
            text: format!("\n{indent}{word}"),
            operator: "missing statement",
            weight: 0.4,
        });
    }
}
