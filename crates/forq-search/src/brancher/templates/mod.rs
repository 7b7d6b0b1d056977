//! Repair templates: the fix patterns of the program-repair literature and
//! of released code that the mutation operators do not make. This file
//! holds the local ones (bounds ±1, reduced conditions, moved statements)
//! and those built from a function's own ingredients; each file beside it
//! is a family: `errors` (what a failing test's error names), `raises`
//! (what it expected), `values` (what it compared), `reach` (past one
//! expression), `forward` (keyword arguments), `shapes` (a computation's
//! shape), `implied` (a `return` or `break` the code implies and lacks); `names` is what a whole file offers them (its identifiers and
//! which are alike, its functions, its named tuples).

use forq_graph::Lang;

use crate::brancher::mutate::{is_single_comparison, Mutation, Parsed};
use crate::brancher::syntax::{
    grouped, is_binary, is_boolean_op, is_literal, is_operand, parameters, unparenthesized,
};
use crate::spectrum::Expected;
use raises::{class_name, missing_raise};

pub(crate) mod classic;
pub(crate) mod errors;
pub(crate) mod forward;
pub(crate) mod implied;
pub(crate) mod names;
pub(crate) mod raises;
pub(crate) mod reach;
pub(crate) mod shapes;
pub(crate) mod values;

/// The checks that may be missing in the function `func` of the file for
/// each exception a failing test expected and never got
/// ([`missing_raise`]).
pub(crate) fn missing_raises(
    file: &Parsed,
    func: tree_sitter::Node<'_>,
    unmet: &[Expected],
    ran: &dyn Fn(u32) -> bool,
    named: &dyn Fn(&str) -> bool,
) -> Vec<Mutation> {
    let source = file.source.as_str();
    let binds = |name: &str| file.ingredients.binds(name);
    let params: Vec<String> = parameters(func, source)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    unmet
        .iter()
        .filter_map(|e| class_name(e, binds).map(|c| (e, c)))
        .flat_map(|(e, class)| missing_raise(func, source, &params, class, e, ran, named))
        .collect()
}

/// The repair templates at node `n` (TBar's and PraPR's commonest fix
/// patterns that the mutation operators above do not make).
pub(crate) fn repair_templates(
    n: tree_sitter::Node<'_>,
    children: &[tree_sitter::Node<'_>],
    source: &str,
    out: &mut Vec<Mutation>,
) {
    let bytes = source.as_bytes();
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(bytes).unwrap_or("").to_owned();
    let kind = n.kind();
    // Off by one where a value bounds something: `lo = mid` for
    // `lo = mid + 1`, `i < n` for `i < n - 1`, `xs[a:b]`, `range(a, b)`.
    if is_operand(n, source) && bounds_something(n, source) {
        // A loop's step (`lo = mid` inside `while lo < hi`) is where an
        // off-by-one most often hides, and where a loop that never ends
        // is most often mended.
        let weight = if steps_a_loop(n, source) { 2.0 } else { 0.6 };
        for d in ["+ 1", "- 1"] {
            out.push(Mutation {
                start: n.start_byte(),
                end: n.end_byte(),
                text: format!("{} {d}", text(n)),
                operator: "boundary",
                weight,
            });
        }
    }
    // A compound condition with a side too many: `a and b` for `a`.
    if is_boolean_op(n, source) && n.named_child_count() == 2 {
        for side in [n.named_child(0), n.named_child(1)].into_iter().flatten() {
            out.push(Mutation {
                start: n.start_byte(),
                end: n.end_byte(),
                text: text(side),
                operator: "reduce condition",
                weight: 0.6,
            });
        }
    }
    // Two statements in the wrong order: each adjacent pair swapped.
    if matches!(kind, "block" | "statement_block" | "compound_statement") {
        let statements: Vec<tree_sitter::Node<'_>> = children
            .iter()
            .copied()
            .filter(|c| {
                let k = c.kind();
                c.is_named()
                    && (k.ends_with("statement") || k.ends_with("declaration"))
                    && !k.contains("function")
                    && !k.contains("class")
            })
            .collect();
        for pair in statements.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            // A docstring stays first.
            if [a, b]
                .iter()
                .any(|s| s.named_child(0).is_some_and(|c| c.kind() == "string"))
            {
                continue;
            }
            // Only neighbours: nothing but blanks between them.
            let between = &source[a.end_byte()..b.start_byte()];
            if !between.trim().is_empty() || text(a).contains('\n') || text(b).contains('\n') {
                continue;
            }
            out.push(Mutation {
                start: a.start_byte(),
                end: b.end_byte(),
                text: format!("{}{between}{}", text(b), text(a)),
                operator: "move statement",
                weight: 0.3,
            });
        }
    }
}

/// What the templates reuse from the function under repair (its
/// "ingredients", in the program-repair literature's word): the
/// conditions it tests, the values it returns, its parameters, and its
/// body's first statement (where a guard goes).
#[derive(Default)]
pub(crate) struct Ingredients {
    /// `(start byte, text)` of each `if`/`while` condition and comparison.
    pub(crate) conditions: Vec<(usize, String)>,
    /// Each distinct returned expression.
    pub(crate) returns: Vec<String>,
    /// Parameter names (`self`, `cls` and `this` left out).
    pub(crate) params: Vec<String>,
    /// Each parameter's declared type as written ("" when none).
    pub(crate) param_types: Vec<String>,
    /// The function returns no value (`void` in C, no `->` in Rust).
    pub(crate) returns_nothing: bool,
    /// The body's first statement (a docstring skipped), by node id.
    pub(crate) first_statement: Option<usize>,
}

impl Ingredients {
    pub(crate) fn of(lang: Lang, func: tree_sitter::Node<'_>, source: &str) -> Ingredients {
        let bytes = source.as_bytes();
        let text = |n: tree_sitter::Node<'_>| n.utf8_text(bytes).unwrap_or("").to_owned();
        let mut out = Ingredients::default();
        for (name, ty) in parameters(func, source) {
            out.params.push(name);
            out.param_types.push(ty);
        }
        out.returns_nothing = match lang {
            Lang::C | Lang::Cpp => func
                .child_by_field_name("type")
                .is_some_and(|t| text(t) == "void"),
            Lang::Rust => func.child_by_field_name("return_type").is_none(),
            _ => false,
        };
        if let Some(body) = func.child_by_field_name("body") {
            let mut c = body.walk();
            out.first_statement = body
                .named_children(&mut c)
                .find(|s| {
                    let docstring = s.kind() == "expression_statement"
                        && s.named_child(0).is_some_and(|c| c.kind() == "string");
                    !s.kind().contains("comment") && !docstring
                })
                .filter(|_| {
                    matches!(
                        lang,
                        Lang::Python
                            | Lang::JavaScript
                            | Lang::TypeScript
                            | Lang::C
                            | Lang::Cpp
                            | Lang::Rust
                    )
                })
                .map(|s| s.id());
        }
        let mut stack = vec![func];
        while let Some(n) = stack.pop() {
            let mut c = n.walk();
            stack.extend(n.children(&mut c));
            if let Some(cond) = n.child_by_field_name("condition") {
                let inner = unparenthesized(cond);
                out.conditions.push((inner.start_byte(), text(inner)));
            } else if is_single_comparison(n, source) {
                out.conditions.push((n.start_byte(), text(n)));
            }
            if matches!(n.kind(), "return_statement" | "return_expression") {
                if let Some(value) = n.named_child(0) {
                    let value = text(value);
                    if !out.returns.contains(&value) {
                        out.returns.push(value);
                    }
                }
            }
        }
        out.conditions.sort();
        out.conditions.dedup_by(|a, b| a.1 == b.1);
        out
    }
}

/// `a - b` as `a.saturating_sub(b)` (the left side parenthesised unless
/// it is a name, a field, a call or an index); `None` for a float
/// literal on either side.
pub(crate) fn saturating(n: tree_sitter::Node<'_>, source: &str) -> Option<String> {
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(source.as_bytes()).unwrap_or("");
    let left = n.child_by_field_name("left")?;
    let right = n.child_by_field_name("right")?;
    if [left, right].iter().any(|s| s.kind() == "float_literal") {
        return None;
    }
    let simple = matches!(
        left.kind(),
        "identifier"
            | "field_expression"
            | "call_expression"
            | "index_expression"
            | "integer_literal"
    );
    let receiver = if simple {
        text(left).to_owned()
    } else {
        format!("({})", text(left))
    };
    Some(format!("{receiver}.saturating_sub({})", text(right)))
}

/// A guard that returns `value` early when parameter `p` (of declared
/// type `ty`) is empty or missing, in `lang`'s syntax; `value` empty
/// means a bare `return`. `None` where the language cannot say "empty"
/// of that type.
pub(crate) fn guard_text(
    lang: Lang,
    p: &str,
    ty: &str,
    value: &str,
    indent: &str,
) -> Option<String> {
    let ret = if value.is_empty() {
        "return".to_owned()
    } else {
        format!("return {value}")
    };
    Some(match lang {
        Lang::Python => format!("if not {p}:\n{indent}    {ret}\n{indent}"),
        Lang::Rust => {
            let empty = if ty.contains('[')
                || ty.contains("Vec<")
                || ty.contains("str")
                || ty.contains("String")
            {
                format!("{p}.is_empty()")
            } else if ty.starts_with("Option<") {
                format!("{p}.is_none()")
            } else if matches!(
                ty,
                "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize"
            ) {
                format!("{p} == 0")
            } else {
                return None;
            };
            format!("if {empty} {{\n{indent}    {ret};\n{indent}}}\n{indent}")
        }
        _ => format!("if (!{p}) {ret};\n{indent}"),
    })
}

/// The templates that reuse what the function already holds: a condition
/// widened or narrowed by another of its conditions, a guard for an empty
/// or missing argument, a return value replaced by another it returns,
/// and an argument too many removed.
pub(crate) fn ingredient_templates(
    lang: Lang,
    n: tree_sitter::Node<'_>,
    source: &str,
    ingredients: &Ingredients,
    exceptions: &[String],
    out: &mut Vec<Mutation>,
) {
    let py = lang == Lang::Python;
    expanded_conditions(n, source, ingredients, py, out);
    // Before the body: a guard (`if not xs: return xs`, or a literal the
    // function returns elsewhere) and a missing precondition.
    if ingredients.first_statement == Some(n.id()) {
        let line_start = source[..n.start_byte()].rfind('\n').map_or(0, |i| i + 1);
        let indent = &source[line_start..n.start_byte()];
        if indent.trim().is_empty() {
            argument_guards(lang, n, ingredients, indent, out);
            if !matches!(lang, Lang::C | Lang::Cpp | Lang::Rust) {
                preconditions(n, ingredients, exceptions, py, indent, out);
            }
        }
    }
    other_returns(n, source, ingredients, out);
    removed_arguments(n, out);
}

/// `if a:` → `if a and b:` / `if a or b:`, `b` another condition of the
/// function, the nearest first.
fn expanded_conditions(
    n: tree_sitter::Node<'_>,
    source: &str,
    ingredients: &Ingredients,
    py: bool,
    out: &mut Vec<Mutation>,
) {
    let kind = n.kind();
    let Some(cond) = n.child_by_field_name("condition") else {
        return;
    };
    if !(kind.contains("if") || kind.contains("while") || kind == "elif_clause") {
        return;
    }
    let inner = unparenthesized(cond);
    let own = inner.utf8_text(source.as_bytes()).unwrap_or("").to_owned();
    let mut others: Vec<&(usize, String)> = ingredients
        .conditions
        .iter()
        .filter(|(_, c)| !own.contains(c.as_str()) && !c.contains(own.as_str()))
        .collect();
    others.sort_by_key(|(at, _)| at.abs_diff(inner.start_byte()));
    let (and, or) = if py { ("and", "or") } else { ("&&", "||") };
    for (_, other) in others.into_iter().take(3) {
        for op in [and, or] {
            out.push(Mutation {
                start: inner.start_byte(),
                end: inner.end_byte(),
                text: format!("{} {op} {}", grouped(&own), grouped(other)),
                operator: "expand condition",
                weight: 0.5,
            });
        }
    }
}

/// A guard before the body for each of the first parameters: returning
/// the parameter itself or a literal the function returns elsewhere
/// ("nothing" when it returns none).
fn argument_guards(
    lang: Lang,
    n: tree_sitter::Node<'_>,
    ingredients: &Ingredients,
    indent: &str,
    out: &mut Vec<Mutation>,
) {
    let py = lang == Lang::Python;
    let mut literals: Vec<&str> = ingredients
        .returns
        .iter()
        .map(String::as_str)
        .filter(|r| is_literal(r))
        .take(2)
        .collect();
    let native = matches!(lang, Lang::C | Lang::Cpp | Lang::Rust);
    if literals.is_empty() && !native {
        literals.push(if py { "None" } else { "null" });
    }
    for (i, p) in ingredients.params.iter().enumerate().take(4) {
        let ty = ingredients.param_types.get(i).map_or("", String::as_str);
        // C and Rust return what the function returns elsewhere (the
        // parameter itself only when it is what is returned).
        let mut values: Vec<&str> = if native {
            let own = ingredients.returns.iter().any(|r| r == p);
            own.then_some(p.as_str()).into_iter().collect()
        } else {
            vec![p.as_str()]
        };
        values.extend(literals.iter().copied());
        if native && ingredients.returns_nothing {
            values = vec![""];
        }
        for value in values {
            let Some(guard) = guard_text(lang, p, ty, value, indent) else {
                continue;
            };
            out.push(Mutation {
                start: n.start_byte(),
                end: n.start_byte(),
                text: guard,
                operator: "guard",
                weight: 0.5,
            });
        }
    }
}

/// A missing precondition: `if maxsize < 0: raise ValueError(…)`, raising
/// the language's usual error for a bad argument, and what the file raises
/// most when that is another (cachetools raises KeyError ten times, but a
/// bad size is a ValueError).
fn preconditions(
    n: tree_sitter::Node<'_>,
    ingredients: &Ingredients,
    exceptions: &[String],
    py: bool,
    indent: &str,
    out: &mut Vec<Mutation>,
) {
    let usual = if py { "ValueError" } else { "Error" };
    let mut errors = vec![usual];
    errors.extend(
        exceptions
            .first()
            .map(String::as_str)
            .filter(|e| *e != usual),
    );
    for (p, error) in ingredients
        .params
        .iter()
        .take(4)
        .flat_map(|p| errors.iter().map(move |e| (p, e)))
    {
        let checks = if py {
            [
                format!("{p} is None"),
                format!("{p} < 0"),
                format!("not {p}"),
            ]
        } else {
            [format!("{p} == null"), format!("{p} < 0"), format!("!{p}")]
        };
        for check in checks {
            let raise = if py {
                format!("if {check}:\n{indent}    raise {error}(\"invalid {p}\")\n{indent}")
            } else {
                format!("if ({check}) throw new {error}(\"invalid {p}\");\n{indent}")
            };
            out.push(Mutation {
                start: n.start_byte(),
                end: n.start_byte(),
                text: raise,
                operator: "precondition",
                weight: 0.4,
            });
        }
    }
}

/// `return a` → `return b`, `b` another value the function returns.
fn other_returns(
    n: tree_sitter::Node<'_>,
    source: &str,
    ingredients: &Ingredients,
    out: &mut Vec<Mutation>,
) {
    if !matches!(n.kind(), "return_statement" | "return_expression") {
        return;
    }
    let Some(value) = n.named_child(0) else {
        return;
    };
    let own = value.utf8_text(source.as_bytes()).unwrap_or("");
    for other in ingredients.returns.iter().filter(|r| **r != own).take(4) {
        out.push(Mutation {
            start: value.start_byte(),
            end: value.end_byte(),
            text: other.clone(),
            operator: "return value",
            weight: 0.5,
        });
    }
}

/// An argument too many: each one removed, with its separator.
fn removed_arguments(n: tree_sitter::Node<'_>, out: &mut Vec<Mutation>) {
    if !matches!(n.kind(), "argument_list" | "arguments") || n.named_child_count() < 2 {
        return;
    }
    let mut c = n.walk();
    let args: Vec<tree_sitter::Node<'_>> = n
        .named_children(&mut c)
        .filter(|a| !a.kind().contains("comment"))
        .collect();
    for (i, a) in args.iter().enumerate() {
        let (start, end) = match args.get(i + 1) {
            Some(next) => (a.start_byte(), next.start_byte()),
            None => (args[i - 1].end_byte(), a.end_byte()),
        };
        out.push(Mutation {
            start,
            end,
            text: String::new(),
            operator: "remove argument",
            weight: 0.3,
        });
    }
}

/// Whether `n` is the value assigned to a variable that an enclosing
/// `while` loop's condition reads: the loop's step.
pub(crate) fn steps_a_loop(n: tree_sitter::Node<'_>, source: &str) -> bool {
    let bytes = source.as_bytes();
    let Some(assignment) = n.parent().filter(|p| p.kind().contains("assignment")) else {
        return false;
    };
    let Some(target) = assignment
        .child_by_field_name("left")
        .and_then(|l| l.utf8_text(bytes).ok())
    else {
        return false;
    };
    let mut up = assignment.parent();
    while let Some(a) = up {
        if a.kind().starts_with("while") {
            let reads = a
                .child_by_field_name("condition")
                .and_then(|c| c.utf8_text(bytes).ok())
                .is_some_and(|c| {
                    c.split(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                        .any(|w| w == target)
                });
            if reads {
                return true;
            }
        }
        up = a.parent();
    }
    false
}

/// Whether `n` bounds something: an assignment's whole value, a side of
/// a comparison, a slice bound, or an argument of `range`.
pub(crate) fn bounds_something(n: tree_sitter::Node<'_>, source: &str) -> bool {
    let Some(parent) = n.parent() else {
        return false;
    };
    let is_field = |name: &str| {
        parent
            .child_by_field_name(name)
            .is_some_and(|c| c.id() == n.id())
    };
    let pk = parent.kind();
    if pk.contains("assignment") || pk == "variable_declarator" || pk == "init_declarator" {
        return is_field("right") || is_field("value");
    }
    if pk == "let_declaration" {
        return is_field("value");
    }
    if pk == "slice" {
        return true;
    }
    if is_binary(pk) && parent.named_child_count() == 2 {
        return is_single_comparison(parent, source);
    }
    if matches!(pk, "argument_list" | "arguments") {
        return parent
            .parent()
            .and_then(|call| call.child_by_field_name("function"))
            .and_then(|f| f.utf8_text(source.as_bytes()).ok())
            .is_some_and(|f| f == "range");
    }
    false
}
