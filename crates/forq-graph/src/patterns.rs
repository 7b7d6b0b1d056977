//! How a definition is called: every call site the graph knows, read
//! again with tree-sitter for the shape of its arguments (positional or
//! keyword, the kind of each value, `None`/`null` passed) and what the
//! caller does with the result (checks it, assigns it, returns it, passes
//! it on, or ignores it); and the call sites that stand out against the
//! dominant pattern, with the evidence ("4 of 5 call sites check the
//! result; this one does not").

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::{Index, Lang, Result};

/// One argument at a call site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Argument {
    /// The keyword it is passed by, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keyword: Option<String>,
    /// `str`, `int`, `float`, `bool`, `none`, `list`, `dict`, `name`,
    /// `call`, `lambda` or `expr`.
    pub kind: String,
}

/// One call site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CallSite {
    /// The file.
    pub file: String,
    /// The line, 1-based.
    pub line: u32,
    /// The calling definition's id.
    pub caller: String,
    /// Its arguments.
    pub arguments: Vec<Argument>,
    /// What the caller does with the result: `checked`, `assigned`,
    /// `returned`, `passed`, `ignored` or `used`.
    pub result: String,
}

/// A call site that stands out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Suspect {
    /// The file.
    pub file: String,
    /// The line.
    pub line: u32,
    /// The evidence.
    pub why: String,
}

/// How a definition is called.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CallPatterns {
    /// The definition's id.
    pub symbol: String,
    /// Every call site read.
    pub sites: Vec<CallSite>,
    /// Call sites by number of arguments.
    pub arity: BTreeMap<usize, usize>,
    /// Call sites by what they do with the result.
    pub results: BTreeMap<String, usize>,
    /// Keyword arguments, by how many call sites pass each.
    pub keywords: BTreeMap<String, usize>,
    /// Call sites passing `None`/`null` somewhere.
    pub none_passed: usize,
    /// Call sites that stand out against a dominant pattern.
    pub suspected: Vec<Suspect>,
}

impl CallPatterns {
    /// The patterns in a few lines for a model's prompt: how many call
    /// sites, their arities, keywords, `None` passed, what callers do with
    /// the result, and the suspected sites with their evidence. Empty when
    /// nothing calls the definition.
    pub fn prompt(&self) -> String {
        if self.sites.is_empty() {
            return String::new();
        }
        let counts = |m: &mut dyn Iterator<Item = (String, usize)>| {
            m.map(|(k, n)| format!("{k} ×{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut out = format!(
            "{} — {} call site(s); arguments: {}; result: {}",
            self.symbol,
            self.sites.len(),
            counts(&mut self.arity.iter().map(|(k, n)| (k.to_string(), *n))),
            counts(&mut self.results.iter().map(|(k, n)| (k.clone(), *n)))
        );
        if !self.keywords.is_empty() {
            out.push_str(&format!(
                "; keywords: {}",
                counts(&mut self.keywords.iter().map(|(k, n)| (k.clone(), *n)))
            ));
        }
        if self.none_passed > 0 {
            out.push_str(&format!("; None/null passed at {}", self.none_passed));
        }
        out.push('\n');
        for s in &self.suspected {
            out.push_str(&format!("  suspected {}:{}: {}\n", s.file, s.line, s.why));
        }
        out
    }
}

/// Share of call sites a pattern needs to be the rule others break.
const DOMINANT: f64 = 0.75;

impl Index {
    /// How `id` is called (see [`CallPatterns`]).
    pub fn call_patterns(&self, id: &str) -> Result<CallPatterns> {
        let symbol = self.find_symbol(id)?;
        let callers = self.callers(&symbol.id, 1)?;
        let mut by_file: BTreeMap<String, Vec<(u32, String)>> = BTreeMap::new();
        for edge in callers.items {
            by_file
                .entry(edge.file)
                .or_default()
                .push((edge.line, edge.caller));
        }
        let mut sites = Vec::new();
        for (file, lines) in by_file {
            let Some(lang) = Lang::of_path(Path::new(&file)) else {
                continue;
            };
            let Ok(text) = std::fs::read_to_string(self.root().join(&file)) else {
                continue;
            };
            let mut parser = tree_sitter::Parser::new();
            if parser.set_language(&lang.grammar()).is_err() {
                continue;
            }
            let Some(tree) = parser.parse(&text, None) else {
                continue;
            };
            for (line, caller) in lines {
                let mut found = Vec::new();
                calls_on_line(tree.root_node(), line - 1, &symbol.name, &text, &mut found);
                for call in found {
                    sites.push(CallSite {
                        file: file.clone(),
                        line,
                        caller: caller.clone(),
                        arguments: arguments(call, &text),
                        result: result_use(call),
                    });
                }
            }
        }
        Ok(summarize(symbol.id, sites))
    }
}

/// The patterns of `sites`, and the ones that break a dominant one.
fn summarize(symbol: String, sites: Vec<CallSite>) -> CallPatterns {
    let mut arity = BTreeMap::new();
    let mut results = BTreeMap::new();
    let mut keywords = BTreeMap::new();
    let mut none_passed = 0;
    for s in &sites {
        *arity.entry(s.arguments.len()).or_insert(0) += 1;
        *results.entry(s.result.clone()).or_insert(0) += 1;
        for a in &s.arguments {
            if let Some(k) = &a.keyword {
                *keywords.entry(k.clone()).or_insert(0) += 1;
            }
        }
        none_passed += usize::from(s.arguments.iter().any(|a| a.kind == "none"));
    }
    let total = sites.len();
    let dominant = |counts: &BTreeMap<String, usize>| {
        counts
            .iter()
            .max_by_key(|(_, n)| **n)
            .filter(|(_, n)| total >= 3 && (**n as f64) / (total as f64) >= DOMINANT && **n < total)
            .map(|(k, n)| (k.clone(), *n))
    };
    let mut suspected = Vec::new();
    if let Some((rule, n)) = dominant(&results) {
        for s in sites.iter().filter(|s| s.result != rule) {
            suspected.push(Suspect {
                file: s.file.clone(),
                line: s.line,
                why: format!(
                    "{n} of {total} call sites {} the result; this one {}",
                    verb(&rule),
                    past(&s.result)
                ),
            });
        }
    }
    let arities: BTreeMap<String, usize> = arity.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    if let Some((rule, n)) = dominant(&arities) {
        for s in sites
            .iter()
            .filter(|s| s.arguments.len().to_string() != rule)
        {
            suspected.push(Suspect {
                file: s.file.clone(),
                line: s.line,
                why: format!(
                    "{n} of {total} call sites pass {rule} argument(s); this one passes {}",
                    s.arguments.len()
                ),
            });
        }
    }
    CallPatterns {
        symbol,
        sites,
        arity,
        results,
        keywords,
        none_passed,
        suspected,
    }
}

fn verb(result: &str) -> &str {
    match result {
        "checked" => "check",
        "assigned" => "assign",
        "returned" => "return",
        "passed" => "pass on",
        "ignored" => "ignore",
        _ => "use",
    }
}

fn past(result: &str) -> &str {
    match result {
        "checked" => "checks it",
        "assigned" => "assigns it",
        "returned" => "returns it",
        "passed" => "passes it on",
        "ignored" => "ignores it",
        _ => "uses it otherwise",
    }
}

/// Call nodes starting on `row` whose callee's last name is `name`.
fn calls_on_line<'t>(
    node: tree_sitter::Node<'t>,
    row: u32,
    name: &str,
    text: &str,
    out: &mut Vec<tree_sitter::Node<'t>>,
) {
    let (start, end) = (
        node.start_position().row as u32,
        node.end_position().row as u32,
    );
    if row < start || row > end {
        return;
    }
    if matches!(
        node.kind(),
        "call" | "call_expression" | "method_invocation"
    ) && start == row
        && callee_name(node, text).as_deref() == Some(name)
    {
        out.push(node);
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        calls_on_line(child, row, name, text, out);
    }
}

/// The last name of a call's callee (`load` of `io.load(...)`).
fn callee_name(call: tree_sitter::Node<'_>, text: &str) -> Option<String> {
    let callee = call
        .child_by_field_name("function")
        .or_else(|| call.child_by_field_name("name"))?;
    let source = callee.utf8_text(text.as_bytes()).ok()?;
    let last = source
        .rsplit(['.', ':'])
        .next()
        .unwrap_or(source)
        .trim_end_matches('!');
    Some(last.to_owned())
}

/// The arguments of a call, each with its keyword and kind.
fn arguments(call: tree_sitter::Node<'_>, text: &str) -> Vec<Argument> {
    let Some(list) = call.child_by_field_name("arguments") else {
        return Vec::new();
    };
    let mut cursor = list.walk();
    list.named_children(&mut cursor)
        .filter(|n| n.kind() != "comment")
        .map(|n| {
            if n.kind() == "keyword_argument" {
                Argument {
                    keyword: n
                        .child_by_field_name("name")
                        .and_then(|k| k.utf8_text(text.as_bytes()).ok())
                        .map(str::to_owned),
                    kind: value_kind(n.child_by_field_name("value").unwrap_or(n)),
                }
            } else {
                Argument {
                    keyword: None,
                    kind: value_kind(n),
                }
            }
        })
        .collect()
}

/// The kind of a value, by its syntax.
fn value_kind(node: tree_sitter::Node<'_>) -> String {
    match node.kind() {
        "string" | "string_literal" | "template_string" | "raw_string_literal" => "str",
        "integer" | "integer_literal" | "number" | "int_literal" => "int",
        "float" | "float_literal" => "float",
        "true" | "false" | "boolean_literal" => "bool",
        "none" | "null" | "undefined" | "nil" => "none",
        "list" | "array" | "array_expression" | "tuple" => "list",
        "dictionary" | "object" => "dict",
        "identifier" | "attribute" | "member_expression" | "field_expression" => "name",
        "call" | "call_expression" => "call",
        "lambda" | "arrow_function" | "closure_expression" => "lambda",
        _ => "expr",
    }
    .to_owned()
}

/// What the code around a call does with its result.
fn result_use(call: tree_sitter::Node<'_>) -> String {
    let mut node = call;
    // Through what only wraps the value: `await f()`, `f()?`, `(f())`.
    while let Some(parent) = node.parent() {
        if matches!(
            parent.kind(),
            "await" | "await_expression" | "parenthesized_expression"
        ) {
            node = parent;
            continue;
        }
        let kind = match parent.kind() {
            "expression_statement" => "ignored",
            "if_statement"
            | "while_statement"
            | "elif_clause"
            | "if_expression"
            | "while_expression"
            | "conditional_expression"
            | "ternary_expression"
            | "not_operator"
            | "unary_expression"
            | "boolean_operator"
            | "comparison_operator"
            | "binary_expression"
            | "assert_statement"
            | "try_expression"
            | "match_expression" => "checked",
            "assignment"
            | "augmented_assignment"
            | "variable_declarator"
            | "let_declaration"
            | "init_declarator"
            | "assignment_expression"
            | "short_var_declaration" => "assigned",
            "return_statement" | "return_expression" => "returned",
            "argument_list" | "arguments" => "passed",
            _ => "used",
        };
        return kind.to_owned();
    }
    "used".to_owned()
}
