//! The mutation operators: what one node of a suspect function can be
//! swapped for (operators, constants, conditions, variables in scope,
//! statements), each a `Mutation` with its class's weight; the repair
//! templates are called from the same walk (`mutations`).

use std::collections::HashSet;

use forq_graph::Lang;

use crate::brancher::syntax::{
    binding_site, function_name, function_within, is_binary, is_compound_assignment, is_index,
    is_integer, is_read, is_string, string_names,
};
use crate::brancher::templates::classic::classic_templates;
use crate::brancher::templates::reach::{reach_templates, FileIngredients};
use crate::brancher::templates::shapes::shape_templates;
use crate::brancher::templates::{ingredient_templates, repair_templates, saturating, Ingredients};

/// One mutation: replace bytes `start..end` with `text`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Mutation {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) text: String,
    /// The operator, for the hypothesis and its weight.
    pub(crate) operator: &'static str,
    pub(crate) weight: f64,
}

impl Mutation {
    /// `source` with the mutation made.
    pub(crate) fn applied_to(&self, source: &str) -> String {
        let mut out = source.to_owned();
        out.replace_range(self.start..self.end, &self.text);
        out
    }
}

/// `source` parsed as Python (the templates' tests).
#[cfg(test)]
pub(crate) fn parse_python(source: &str) -> tree_sitter::Tree {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&Lang::Python.grammar())
        .expect("the bundled grammar loads");
    parser.parse(source, None).expect("a tree")
}

/// Swaps of a binary operator token.
pub(crate) fn operator_swaps(op: &str, lang: Lang) -> &'static [&'static str] {
    let py = lang == Lang::Python;
    match op {
        "<" => &["<=", ">", ">=", "==", "!="],
        "<=" => &["<", ">=", ">", "==", "!="],
        ">" => &[">=", "<", "<=", "==", "!="],
        ">=" => &[">", "<=", "<", "==", "!="],
        "==" => &["!=", "<", ">", "<=", ">="],
        "!=" => &["==", "<", ">", "<=", ">="],
        "===" => &["!=="],
        "!==" => &["==="],
        "+" => &["-", "*"],
        "-" => &["+", "*"],
        "*" if py => &["/", "//", "+"],
        "*" => &["/", "+"],
        "/" if py => &["//", "*", "%"],
        "/" => &["*", "%"],
        "//" => &["/", "*"],
        "%" => &["/", "*"],
        "&&" => &["||"],
        "||" => &["&&"],
        "and" => &["or"],
        "or" => &["and"],
        "&" => &["|", "^"],
        "|" => &["&", "^"],
        "^" => &["&", "|"],
        "<<" => &[">>"],
        ">>" => &["<<"],
        _ => &[],
    }
}

/// How likely a fault is of each class, roughly after the frequencies of
/// one-statement fix patterns in studies of real bug fixes (a changed
/// operand or identifier, a changed binary operator and a changed literal
/// lead): a mutant's prior is its class's share split over the class's
/// mutants in the function (by their weights), so a function with many
/// sites of one kind does not crowd out the others.
pub(crate) const CLASS_SHARE: [(&str, f64); 41] = [
    // A name the failing test's `NameError` says is not defined, on the
    // line it was raised: the error says where the fix is.
    ("undefined name", 1.0),
    // A function used where its result was meant, on the line the failing
    // test's `AttributeError` says a function has no such attribute.
    ("call function", 1.0),
    // A `{}` string formatted with `%`, where a `TypeError` says the
    // arguments did not fit.
    ("format string", 1.0),
    // The loop stepping an index an `IndexError` says ran past the end,
    // bounded by the length.
    ("bound index", 1.0),
    // The exception a failing test expected, raised where another escaped
    // (a guard, a `try`, the `raise` itself), or where a check is missing.
    ("raise expected", 1.0),
    ("missing raise", 1.0),
    // A literal made to write what a failing test's equality wanted
    // where it wrote what the test got.
    ("expected value", 0.5),
    ("operator", 0.24),
    ("replace variable", 0.22),
    ("constant", 0.14),
    ("index", 0.08),
    ("negate condition", 0.08),
    ("drop negation", 0.05),
    ("boolean", 0.05),
    ("swap arguments", 0.05),
    ("delete statement", 0.05),
    ("negate return", 0.04),
    // The templates (only with `Mutate::templates`).
    ("boundary", 0.14),
    ("reduce condition", 0.04),
    ("move statement", 0.03),
    ("expand condition", 0.05),
    ("guard", 0.05),
    ("return value", 0.04),
    ("remove argument", 0.02),
    ("unwrap call", 0.05),
    ("negate operand", 0.04),
    ("similar name", 0.05),
    ("widen type check", 0.03),
    ("unwrap try", 0.02),
    ("chain raise", 0.02),
    ("named tuple", 0.03),
    ("forward argument", 0.05),
    ("wrap call", 0.04),
    ("guard yield", 0.03),
    ("precondition", 0.04),
    ("saturate", 0.03),
    // The shapes of a computation (`shapes`).
    ("swap operands", 0.05),
    ("accumulate", 0.04),
    ("return shape", 0.05),
    ("loop condition", 0.04),
    ("missing statement", 0.05),
];

pub(crate) fn class_share(class: &str) -> f64 {
    CLASS_SHARE
        .iter()
        .find(|(c, _)| *c == class)
        .map_or(0.02, |(_, s)| *s)
}

/// Whether `op` compares (each has its negation among its swaps).
pub(crate) fn is_comparison(op: &str) -> bool {
    matches!(op, "<" | "<=" | ">" | ">=" | "==" | "!=" | "===" | "!==")
}

pub(crate) fn operator_weight(op: &str) -> f64 {
    match op {
        op if is_comparison(op) => 1.0,
        "+" | "-" | "*" | "/" | "//" | "%" => 0.9,
        "&&" | "||" | "and" | "or" => 0.9,
        _ => 0.6,
    }
}

/// Whether `n` is one comparison (`a < b`, not `a < b < c`), whose
/// negation an operator swap already makes (`<` → `>=`, `==` → `!=`).
pub(crate) fn is_single_comparison(n: tree_sitter::Node<'_>, source: &str) -> bool {
    if !is_binary(n.kind()) || n.named_child_count() != 2 {
        return false;
    }
    let mut cursor = n.walk();
    let ops: Vec<&str> = n
        .children(&mut cursor)
        .filter(|c| !c.is_named())
        .filter_map(|c| c.utf8_text(source.as_bytes()).ok())
        .collect();
    matches!(ops.as_slice(), [op] if is_comparison(op))
}

/// The operand that `n` (a binary operation) would reduce to with `op` as
/// its operator, when the other operand makes it an identity: `x * 1`,
/// `x / 1`, `x // 1`, `1 * x`, `x + 0`, `0 + x`, `x - 0`, `x | 0`,
/// `x ^ 0`, `x << 0`, `x >> 0`.
pub(crate) fn identity_operand(n: tree_sitter::Node<'_>, op: &str, source: &str) -> Option<String> {
    if n.named_child_count() != 2 {
        return None;
    }
    let (left, right) = (n.named_child(0)?, n.named_child(1)?);
    let text = |c: tree_sitter::Node<'_>| c.utf8_text(source.as_bytes()).ok().map(str::trim);
    let (l, r) = (text(left)?, text(right)?);
    let neutral_right = match op {
        "*" | "/" | "//" => "1",
        "+" | "-" | "|" | "^" | "<<" | ">>" => "0",
        _ => return None,
    };
    if r == neutral_right {
        return Some(l.to_owned());
    }
    let neutral_left = match op {
        "*" => "1",
        "+" | "|" | "^" => "0",
        _ => return None,
    };
    (l == neutral_left).then(|| r.to_owned())
}

pub(crate) fn negate(lang: Lang, text: &str) -> String {
    if lang == Lang::Python {
        format!("not ({text})")
    } else {
        format!("!({text})")
    }
}

/// The variables a function binds (its parameters, and names assigned,
/// declared or bound by a loop, `with` or `except`), each with where it is
/// bound: the candidates of a wrong-variable replacement, restricted, as
/// a def-use analysis would, to what is in scope where the name is read.
pub(crate) struct Bindings<'t> {
    /// `(byte where bound, name)`, parameters at 0.
    pub(crate) bound: Vec<(usize, &'t str)>,
}

/// Most replacements of one read name.
pub(crate) const MAX_REPLACEMENTS: usize = 4;

impl<'t> Bindings<'t> {
    pub(crate) fn of(func: tree_sitter::Node<'t>, source: &'t str) -> Bindings<'t> {
        let mut bound = Vec::new();
        let mut stack = vec![func];
        while let Some(n) = stack.pop() {
            if n.kind() == "identifier" {
                if let Some(at) = binding_site(n) {
                    if let Ok(t) = n.utf8_text(source.as_bytes()) {
                        if !matches!(t, "self" | "cls" | "this" | "_") {
                            bound.push((at, t));
                        }
                    }
                }
            }
            let mut c = n.walk();
            stack.extend(n.children(&mut c));
        }
        Bindings { bound }
    }

    /// Other variables bound before byte `at` (parameters always), the
    /// most recently bound first.
    pub(crate) fn visible_at(&self, at: usize, own: &str) -> Vec<&'t str> {
        let mut before: Vec<(usize, &str)> = self
            .bound
            .iter()
            .copied()
            .filter(|&(pos, name)| pos < at && name != own)
            .collect();
        before.sort_by_key(|&(pos, _)| std::cmp::Reverse(pos));
        let mut out: Vec<&str> = Vec::new();
        for (_, name) in before {
            if !out.contains(&name) {
                out.push(name);
            }
            if out.len() == MAX_REPLACEMENTS {
                break;
            }
        }
        out
    }
}

/// One file read and parsed, with the facts every suspect in it shares
/// (each a walk of the whole file, so made once per file, not per suspect).
pub(crate) struct Parsed {
    pub(crate) lang: Lang,
    pub(crate) source: String,
    pub(crate) tree: tree_sitter::Tree,
    /// Names the file binds to a string literal.
    pub(crate) strings: HashSet<String>,
    /// The file's names, functions and exceptions, for the templates
    /// (empty without them).
    pub(crate) ingredients: FileIngredients,
}

impl Parsed {
    /// `source` parsed as `lang`; `None` when the grammar gives up.
    pub(crate) fn new(lang: Lang, source: String, templates: bool) -> Option<Parsed> {
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&lang.grammar()).ok()?;
        let tree = parser.parse(&source, None)?;
        let root = tree.root_node();
        let strings = string_names(root, &source);
        let ingredients = if templates {
            FileIngredients::of(root, &source)
        } else {
            FileIngredients::default()
        };
        Some(Parsed {
            lang,
            source,
            tree,
            strings,
            ingredients,
        })
    }
}

/// Every mutation of the nodes inside `start..end` (bytes) of the file;
/// with `templates`, the repair templates too.
/// One node of a suspect function, as the operators see it.
struct At<'a, 't> {
    lang: Lang,
    source: &'a str,
    strings: &'a HashSet<String>,
    n: tree_sitter::Node<'t>,
    children: &'a [tree_sitter::Node<'t>],
    templates: bool,
}

impl At<'_, '_> {
    fn text(&self, n: tree_sitter::Node<'_>) -> String {
        n.utf8_text(self.source.as_bytes()).unwrap_or("").to_owned()
    }
}

/// Every mutant of the definition spanning `start..end` in `file`: the
/// operators at each node (and, with `templates`, the repair templates).
pub(crate) fn mutations(file: &Parsed, start: usize, end: usize, templates: bool) -> Vec<Mutation> {
    let (lang, source, strings, in_file) = (
        file.lang,
        file.source.as_str(),
        &file.strings,
        &file.ingredients,
    );
    let bytes = source.as_bytes();
    let mut out = Vec::new();
    let root = file.tree.root_node();
    let Some(func) = root.descendant_for_byte_range(start, end.max(start + 1).min(source.len()))
    else {
        return out;
    };
    // The smallest node covering the span is the definition (or its body).
    let vars = Bindings::of(func, source);
    let repaired = function_within(func, start, end);
    let within = repaired
        .and_then(function_name)
        .and_then(|n| n.utf8_text(bytes).ok());
    let ingredients = match repaired.filter(|_| templates) {
        Some(f) => Ingredients::of(lang, f, source),
        None => Ingredients::default(),
    };
    let mut stack = vec![func];
    while let Some(n) = stack.pop() {
        let mut c = n.walk();
        let children: Vec<tree_sitter::Node<'_>> = n.children(&mut c).collect();
        stack.extend(children.iter().rev().copied());
        if n.start_byte() < start || n.end_byte() > end {
            continue;
        }
        let at = At {
            lang,
            source,
            strings,
            n,
            children: &children,
            templates,
        };
        operator_swaps_at(&at, &mut out);
        value_swaps(&at, &mut out);
        negated_condition(&at, &mut out);
        rewrites(&at, &vars, &mut out);
        if templates {
            repair_templates(n, &children, source, &mut out);
            ingredient_templates(lang, n, source, &ingredients, &in_file.exceptions, &mut out);
            reach_templates(lang, n, source, in_file, within, &mut out);
            shape_templates(lang, n, source, strings, repaired, &mut out);
            classic_templates(lang, n, source, &mut out);
            crate::brancher::templates::implied::implied_templates(lang, n, source, &mut out);
        }
    }
    out
}

/// The operator swaps at `at`'s node: a binary operator's (written as the
/// kept operand where the swap would do nothing; with the templates, Rust's
/// saturating subtraction) and a compound assignment's.
fn operator_swaps_at(at: &At<'_, '_>, out: &mut Vec<Mutation>) {
    let (lang, source, n, children) = (at.lang, at.source, at.n, at.children);
    let kind = n.kind();
    let text = |x: tree_sitter::Node<'_>| at.text(x);
    let (strings, templates) = (at.strings, at.templates);
    // `"<img " + src` joins strings: no other arithmetic applies.
    let joins_strings = is_string(n, strings, source);
    if is_binary(kind) {
        for op in children.iter().filter(|c| !c.is_named()) {
            let o = text(*op);
            if joins_strings && matches!(o.as_str(), "+" | "-" | "*" | "/" | "//" | "%") {
                continue;
            }
            for swap in operator_swaps(&o, lang) {
                // A swap that makes the operation do nothing (`mid - 1`
                // → `mid * 1`) is written as a person would: the
                // operand alone (`mid`).
                let (start, end, new) = match identity_operand(n, swap, source) {
                    Some(kept) => (n.start_byte(), n.end_byte(), kept),
                    None => (op.start_byte(), op.end_byte(), (*swap).to_owned()),
                };
                out.push(Mutation {
                    start,
                    end,
                    text: new,
                    operator: "operator",
                    weight: operator_weight(&o),
                });
            }
            // Rust: an unsigned subtraction that can go below zero
            // panics in tests; the fix is the saturating one.
            if templates && lang == Lang::Rust && o == "-" {
                if let Some(overflow) = saturating(n, source) {
                    out.push(Mutation {
                        start: n.start_byte(),
                        end: n.end_byte(),
                        text: overflow,
                        operator: "saturate",
                        weight: 0.5,
                    });
                }
            }
        }
    } else if is_compound_assignment(kind) {
        // `n ^= n - 1` where `n &= n - 1` is meant: the operator of a
        // compound assignment swaps as its binary one does.
        for op in children.iter().filter(|c| !c.is_named()) {
            let o = text(*op);
            let Some(base) = o.strip_suffix('=').filter(|b| !b.is_empty()) else {
                continue;
            };
            if matches!(base, "=" | "!" | "<" | ">") {
                continue;
            }
            for swap in operator_swaps(base, lang) {
                out.push(Mutation {
                    start: op.start_byte(),
                    end: op.end_byte(),
                    text: format!("{swap}="),
                    operator: "operator",
                    weight: operator_weight(base),
                });
            }
        }
    }
}

/// The value swaps at `at`'s node: an integer constant ±1, a boolean
/// literal flipped, an index ±1, a negation dropped.
fn value_swaps(at: &At<'_, '_>, out: &mut Vec<Mutation>) {
    let (n, children) = (at.n, at.children);
    let kind = n.kind();
    let text = |x: tree_sitter::Node<'_>| at.text(x);
    if is_integer(kind) && n.child_count() == 0 {
        if let Ok(v) = text(n).parse::<i64>() {
            for d in [1, -1] {
                out.push(Mutation {
                    start: n.start_byte(),
                    end: n.end_byte(),
                    text: (v + d).to_string(),
                    operator: "constant",
                    weight: 0.85,
                });
            }
        }
    } else if matches!(text(n).as_str(), "true" | "false" | "True" | "False")
        && n.child_count() == 0
    {
        let flipped = match text(n).as_str() {
            "true" => "false",
            "false" => "true",
            "True" => "False",
            _ => "True",
        };
        out.push(Mutation {
            start: n.start_byte(),
            end: n.end_byte(),
            text: flipped.to_owned(),
            operator: "boolean",
            weight: 0.7,
        });
    } else if is_index(kind) {
        let idx = n
            .child_by_field_name("index")
            .or_else(|| n.child_by_field_name("subscript"))
            .or_else(|| n.named_child(n.named_child_count().saturating_sub(1) as u32));
        if let Some(idx) = idx.filter(|i| !i.kind().contains("slice") && i.id() != n.id()) {
            for d in ["+ 1", "- 1"] {
                out.push(Mutation {
                    start: idx.start_byte(),
                    end: idx.end_byte(),
                    text: format!("{} {d}", text(idx)),
                    operator: "index",
                    weight: 0.8,
                });
            }
        }
    } else if matches!(kind, "not_operator")
        || (kind == "unary_expression" && children.first().is_some_and(|c| text(*c) == "!"))
    {
        if let Some(arg) = n
            .child_by_field_name("argument")
            .or_else(|| n.named_child(0))
        {
            out.push(Mutation {
                start: n.start_byte(),
                end: n.end_byte(),
                text: text(arg),
                operator: "drop negation",
                weight: 0.6,
            });
        }
    }
}

/// An `if`/`while` condition negated (a single comparison is left to the
/// operator swaps, which read as a person would write it).
fn negated_condition(at: &At<'_, '_>, out: &mut Vec<Mutation>) {
    let (lang, source, n) = (at.lang, at.source, at.n);
    let kind = n.kind();
    let text = |x: tree_sitter::Node<'_>| at.text(x);
    if let Some(cond) = n.child_by_field_name("condition") {
        // `(a && b)` in C-like syntax keeps its own parentheses.
        let parenthesized = cond.kind() == "parenthesized_expression";
        let inner = cond
            .named_child(0)
            .filter(|_| parenthesized)
            .unwrap_or(cond);
        // `not (a > b)` is the operator swap `a <= b`, which reads as a
        // person would write it: a single comparison is left to those.
        let swaps_cover_it = is_single_comparison(inner, source);
        if (kind.contains("if") || kind.contains("while") || kind == "elif_clause")
            && !swaps_cover_it
        {
            let bare = text(inner);
            let negated = negate(lang, &bare);
            let wrapped = if parenthesized && lang != Lang::Python {
                format!("({negated})")
            } else {
                negated
            };
            out.push(Mutation {
                start: cond.start_byte(),
                end: cond.end_byte(),
                text: wrapped,
                operator: "negate condition",
                weight: 0.7,
            });
        }
    }
}

/// Rewrites of whole expressions and statements at `at`'s node: two call
/// arguments swapped, a return value negated, a statement deleted, a read
/// variable replaced by another the function binds before it.
fn rewrites(at: &At<'_, '_>, vars: &Bindings<'_>, out: &mut Vec<Mutation>) {
    let (lang, source, n) = (at.lang, at.source, at.n);
    let kind = n.kind();
    let text = |x: tree_sitter::Node<'_>| at.text(x);
    let strings = at.strings;
    if matches!(kind, "argument_list" | "arguments") && n.named_child_count() == 2 {
        if let (Some(a), Some(b)) = (n.named_child(0), n.named_child(1)) {
            out.push(Mutation {
                start: a.start_byte(),
                end: b.end_byte(),
                text: format!(
                    "{}{}{}",
                    text(b),
                    &source[a.end_byte()..b.start_byte()],
                    text(a)
                ),
                operator: "swap arguments",
                weight: 0.5,
            });
        }
    }
    if kind == "return_statement" {
        if let Some(value) = n.named_child(0).filter(|v| !is_string(*v, strings, source)) {
            out.push(Mutation {
                start: value.start_byte(),
                end: value.end_byte(),
                text: negate(lang, &text(value)),
                operator: "negate return",
                weight: 0.4,
            });
        }
    }
    let docstring = n.named_child(0).is_some_and(|c| c.kind() == "string");
    if kind == "expression_statement" && !docstring {
        // Delete the statement, keeping the line (Python needs a body).
        let filler = if lang == Lang::Python { "pass" } else { ";" };
        out.push(Mutation {
            start: n.start_byte(),
            end: n.end_byte(),
            text: filler.to_owned(),
            operator: "delete statement",
            weight: 0.3,
        });
    }
    if kind == "identifier" && is_read(n) {
        let name = text(n);
        for other in vars.visible_at(n.start_byte(), &name) {
            out.push(Mutation {
                start: n.start_byte(),
                end: n.end_byte(),
                text: (*other).to_owned(),
                operator: "replace variable",
                weight: 0.3,
            });
        }
    }
}
