//! What a syntax node is, across the grammars the branchers edit: binary
//! and boolean operators, reads and bindings, parameters and function names,
//! strings and literals.

use std::collections::HashSet;

/// Node kinds whose operator token is swapped.
pub(crate) fn is_binary(kind: &str) -> bool {
    matches!(
        kind,
        "binary_expression" | "binary_operator" | "comparison_operator" | "boolean_operator"
    )
}

/// Whether `n` joins two conditions: Python's `and`/`or`, or `&&`/`||`.
pub(crate) fn is_boolean_op(n: tree_sitter::Node<'_>, source: &str) -> bool {
    if n.kind() == "boolean_operator" {
        return true;
    }
    let mut c = n.walk();
    let op = n.children(&mut c).find(|c| !c.is_named());
    is_binary(n.kind())
        && op.is_some_and(|op| matches!(op.utf8_text(source.as_bytes()), Ok("&&" | "||")))
}

/// A compound assignment (`x += 1`) in the grammars forq reads.
pub(crate) fn is_compound_assignment(kind: &str) -> bool {
    matches!(
        kind,
        "augmented_assignment"
            | "augmented_assignment_expression"
            | "compound_assignment_expr"
            | "assignment_expression"
    )
}

pub(crate) fn is_integer(kind: &str) -> bool {
    matches!(
        kind,
        "integer"
            | "integer_literal"
            | "number"
            | "number_literal"
            | "int_literal"
            | "decimal_integer_literal"
    )
}

pub(crate) fn is_index(kind: &str) -> bool {
    matches!(
        kind,
        "subscript" | "subscript_expression" | "index_expression" | "array_access"
    )
}

/// Where identifier `n` binds a variable, if it does: 0 for a parameter,
/// else the start of the statement or clause that binds it.
pub(crate) fn binding_site(n: tree_sitter::Node<'_>) -> Option<usize> {
    let mut child = n;
    let mut parent = n.parent()?;
    // Through tuple and list patterns: `a, b = …`, `for i, x in …`.
    while matches!(
        parent.kind(),
        "pattern_list" | "tuple_pattern" | "list_pattern" | "array_pattern" | "object_pattern"
    ) {
        child = parent;
        parent = parent.parent()?;
    }
    let is = |field: &str| {
        parent
            .child_by_field_name(field)
            .is_some_and(|c| c.id() == child.id())
    };
    let pk = parent.kind();
    if pk.contains("parameter")
        || matches!(pk, "parameters" | "formal_parameters" | "lambda_parameters")
    {
        return Some(0);
    }
    let binds = (pk.contains("assignment") && is("left"))
        || (matches!(pk, "for_statement" | "for_in_statement" | "for_in_clause") && is("left"))
        || (matches!(pk, "variable_declarator" | "init_declarator")
            && (is("name") || is("declarator")))
        || (pk == "let_declaration" && is("pattern"))
        || (pk == "named_expression" && is("name"))
        || pk == "as_pattern_target";
    binds.then(|| parent.start_byte())
}

/// An identifier read as a value: not a called function's name, an
/// attribute/field name, or a definition's name.
pub(crate) fn is_read(n: tree_sitter::Node<'_>) -> bool {
    let Some(parent) = n.parent() else {
        return false;
    };
    let field_of = |name: &str| {
        parent
            .child_by_field_name(name)
            .is_some_and(|c| c.id() == n.id())
    };
    let pk = parent.kind();
    if field_of("function")
        || field_of("name")
        || field_of("attribute")
        || field_of("field")
        || field_of("property")
    {
        return false;
    }
    // C's declared names: `int *xs`, `int f(…)`, `int n = 0`'s `n`.
    if pk.contains("declarator") && field_of("declarator") {
        return false;
    }
    !(pk.contains("definition")
        || pk.contains("declaration")
        || pk == "parameters"
        || pk == "formal_parameters"
        || pk == "parameter_list"
        || pk.contains("import"))
}

/// The name a C declarator declares, through pointers and arrays
/// (`int *xs` → `xs`).
pub(crate) fn declared_name(p: tree_sitter::Node<'_>) -> Option<tree_sitter::Node<'_>> {
    let mut d = p.child_by_field_name("declarator")?;
    while d.kind() != "identifier" {
        d = d.child_by_field_name("declarator")?;
    }
    Some(d)
}

/// A function's parameters, each its name and declared type as written
/// ("" when none); `self`, `cls` and `this` left out.
pub(crate) fn parameters(func: tree_sitter::Node<'_>, source: &str) -> Vec<(String, String)> {
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(source.as_bytes()).unwrap_or("").to_owned();
    let Some(params) = parameters_of(func) else {
        return Vec::new();
    };
    let mut c = params.walk();
    let mut out = Vec::new();
    for p in params.named_children(&mut c) {
        let name = match p.kind() {
            "identifier" => Some(p),
            // Python's `x: int`.
            "typed_parameter" => p.named_child(0),
            _ => p
                .child_by_field_name("name")
                .or_else(|| p.child_by_field_name("pattern"))
                .or_else(|| p.child_by_field_name("left"))
                .or_else(|| declared_name(p)),
        };
        let Some(name) = name.filter(|n| n.kind() == "identifier").map(text) else {
            continue;
        };
        if !matches!(name.as_str(), "self" | "cls" | "this") {
            out.push((
                name,
                p.child_by_field_name("type").map(text).unwrap_or_default(),
            ));
        }
    }
    out
}

/// A function's parameter list: its own field, or in C and C++ its
/// declarator's (`int *f(int n)`: through the pointer to the function
/// declarator).
pub(crate) fn parameters_of(func: tree_sitter::Node<'_>) -> Option<tree_sitter::Node<'_>> {
    if let Some(p) = func.child_by_field_name("parameters") {
        return Some(p);
    }
    let mut d = func.child_by_field_name("declarator")?;
    loop {
        if d.kind() == "function_declarator" {
            return d.child_by_field_name("parameters");
        }
        d = d.child_by_field_name("declarator")?;
    }
}

/// The node naming a function definition: its `name` field, or in C and
/// C++ the identifier its function declarator declares (`int *f(int n)`).
pub(crate) fn function_name(def: tree_sitter::Node<'_>) -> Option<tree_sitter::Node<'_>> {
    def.child_by_field_name("name").or_else(|| {
        parameters_of(def)
            .and_then(|p| p.parent())
            .and_then(|d| d.child_by_field_name("declarator"))
    })
}

/// The outermost function definition inside `start..end` (bytes) at or
/// below `node`: what a suspect's span holds.
pub(crate) fn function_within(
    node: tree_sitter::Node<'_>,
    start: usize,
    end: usize,
) -> Option<tree_sitter::Node<'_>> {
    let mut queue = std::collections::VecDeque::from([node]);
    while let Some(n) = queue.pop_front() {
        if n.start_byte() >= start
            && n.end_byte() <= end
            && parameters_of(n).is_some()
            && n.child_by_field_name("body").is_some()
        {
            return Some(n);
        }
        let mut c = n.walk();
        queue.extend(
            n.named_children(&mut c)
                .filter(|k| k.end_byte() > start && k.start_byte() < end),
        );
    }
    None
}

/// `cond` without the parentheses C-like syntax requires around it.
pub(crate) fn unparenthesized(cond: tree_sitter::Node<'_>) -> tree_sitter::Node<'_> {
    if cond.kind() == "parenthesized_expression" {
        cond.named_child(0).unwrap_or(cond)
    } else {
        cond
    }
}

/// `text` in parentheses when it holds a boolean operator of its own.
pub(crate) fn grouped(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words
        .iter()
        .any(|w| matches!(*w, "and" | "or" | "&&" | "||"))
    {
        format!("({text})")
    } else {
        text.to_owned()
    }
}

/// Whether a returned expression is a literal (`0`, `None`, `[]`, `""`,
/// `-1`, `false`): a guard's plausible answer for an empty input.
pub(crate) fn is_literal(text: &str) -> bool {
    let t = text.trim_start_matches('-');
    matches!(
        t,
        "None"
            | "True"
            | "False"
            | "null"
            | "undefined"
            | "true"
            | "false"
            | "[]"
            | "{}"
            | "()"
            | "\"\""
            | "''"
    ) || t.parse::<f64>().is_ok()
}

/// An expression a boundary template may add one to: a variable read, a
/// call, an attribute (a literal is the constant operator's).
pub(crate) fn is_operand(n: tree_sitter::Node<'_>, source: &str) -> bool {
    match n.kind() {
        "identifier" => is_read(n),
        // A call only where it counts something: `escape(text) + 1` is
        // no bound.
        "call" | "call_expression" => n
            .child_by_field_name("function")
            .and_then(|f| f.utf8_text(source.as_bytes()).ok())
            .map(|f| f.rsplit(['.', ':']).next().unwrap_or(f))
            .is_some_and(|name| NUMERIC_CALLS.contains(&name)),
        "attribute" | "member_expression" | "field_expression" | "selector_expression" => true,
        _ => false,
    }
}

/// Names the file binds to a string literal (`PREFIX = "xn--"`, `const
/// sep = ", "`): operands arithmetic makes no sense of, like the literals.
pub(crate) fn string_names(root: tree_sitter::Node<'_>, source: &str) -> HashSet<String> {
    let mut names = HashSet::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        let (name, value) = match n.kind() {
            "assignment" => (
                n.child_by_field_name("left"),
                n.child_by_field_name("right"),
            ),
            "variable_declarator" => (
                n.child_by_field_name("name"),
                n.child_by_field_name("value"),
            ),
            _ => (None, None),
        };
        if let (Some(name), Some(value)) = (name, value) {
            if name.kind() == "identifier" && is_string_literal(value) {
                if let Ok(text) = name.utf8_text(source.as_bytes()) {
                    names.insert(text.to_owned());
                }
            }
        }
        let mut c = n.walk();
        stack.extend(n.children(&mut c));
    }
    names
}

/// The source text of `n` (empty when it is not UTF-8).
pub(crate) fn node_text(n: tree_sitter::Node<'_>, source: &str) -> String {
    n.utf8_text(source.as_bytes()).unwrap_or("").to_owned()
}

pub(crate) fn is_string_literal(n: tree_sitter::Node<'_>) -> bool {
    matches!(
        n.kind(),
        "string"
            | "concatenated_string"
            | "string_literal"
            | "template_string"
            | "raw_string_literal"
    )
}

/// Whether `n` is a string: a literal, a name the file binds to one, or
/// an operation on either (`'<' + s + '>'`): a value arithmetic and
/// negation make no sense of.
pub(crate) fn is_string(n: tree_sitter::Node<'_>, strings: &HashSet<String>, source: &str) -> bool {
    if is_string_literal(n) {
        return true;
    }
    if n.kind() == "identifier" {
        return n
            .utf8_text(source.as_bytes())
            .is_ok_and(|t| strings.contains(t));
    }
    let mut c = n.walk();
    is_binary(n.kind())
        && n.named_children(&mut c)
            .any(|child| is_string(child, strings, source))
}

/// Byte offsets of 1-based lines `first..=last` of `source`.
pub(crate) fn line_span(source: &str, first: u32, last: u32) -> (usize, usize) {
    let mut start = source.len();
    let mut end = source.len();
    let mut at = 0usize;
    for (line, l) in (1u32..).zip(source.split_inclusive('\n')) {
        if line == first {
            start = at;
        }
        at += l.len();
        if line == last {
            end = at;
            break;
        }
    }
    (start.min(end), end)
}

/// Calls whose value is a count, an index or a number.
pub(crate) const NUMERIC_CALLS: [&str; 16] = [
    "len", "int", "abs", "min", "max", "sum", "round", "count", "index", "find", "rfind", "ord",
    "size", "length", "floor", "ceil",
];
