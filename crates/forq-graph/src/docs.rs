//! Documentation as a change that must not touch code: which definitions
//! lack docs, how a doc is written into a file in its language's own form
//! (a Python docstring as the body's first statement; `///` in Rust;
//! `/** … */` in JavaScript, TypeScript, Java, C and C++; `//` in Go),
//! and the check that two versions of a file differ only in docs — the
//! text outside docstrings and doc comments byte-identical — which
//! refuses anything else.

use rusqlite::params;

use crate::store::{row_symbol, SYMBOL_COLUMNS};
use crate::{Index, Lang, Result, Symbol};

/// Kinds of definitions that get docs.
const DOCUMENTED_KINDS: &str =
    "'function', 'method', 'class', 'struct', 'enum', 'trait', 'interface'";

impl Index {
    /// Definitions without docs, at most `limit`, by file and line:
    /// functions, methods, classes and types that are not tests and whose
    /// name does not start with `_` (private by convention), nor nested
    /// in a function.
    pub fn undocumented(&self, limit: usize) -> Result<Vec<Symbol>> {
        self.check_complete()?;
        let sql = format!(
            "SELECT {SYMBOL_COLUMNS} FROM symbols s
             WHERE (s.doc IS NULL OR s.doc = '') AND NOT s.test AND s.kind IN ({DOCUMENTED_KINDS})
               AND s.name NOT LIKE '\\_%' ESCAPE '\\'
               AND NOT EXISTS (SELECT 1 FROM symbols p WHERE p.id = s.parent AND p.kind IN ('function', 'method'))
             ORDER BY s.file, s.line LIMIT ?1"
        );
        let db = self.store.db();
        let mut stmt = self.store.conn.prepare(&sql).map_err(&db)?;
        let rows = stmt
            .query_map(params![limit as i64], row_symbol)
            .map_err(&db)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(&db);
        rows
    }
}

/// Where two versions of a file differ outside their docs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line} changes code, not only docs: {new_text:?} where there was {old_text:?}")]
#[non_exhaustive]
pub struct CodeChanged {
    /// The first differing line of the new version (1-based).
    pub line: usize,
    /// The old version's text there (with docs removed), shortened.
    pub old_text: String,
    /// The new version's.
    pub new_text: String,
}

/// Checks that `new` differs from `old` (both `lang` sources) only in
/// docstrings and doc comments: with each doc and the whitespace after
/// it removed, the two texts must be byte-identical. A doc that breaks
/// out of its string or comment shows as changed code.
pub fn same_code_outside_docs(lang: Lang, old: &str, new: &str) -> Result<(), CodeChanged> {
    let (a, _) = without_docs(lang, old);
    let (b, b_lines) = without_docs(lang, new);
    if a == b {
        return Ok(());
    }
    let at = a
        .bytes()
        .zip(b.bytes())
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let snippet = |s: &str| -> String {
        let start = s[..at.min(s.len())].rfind('\n').map_or(0, |i| i + 1);
        s[start..]
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(80)
            .collect()
    };
    // The line in `new` of the kept piece where they part, plus the
    // newlines from the piece's start to there.
    let line = b_lines
        .iter()
        .rev()
        .find(|(kept, _)| *kept <= at)
        .map_or(1, |(kept, line)| {
            line + b[*kept..at.min(b.len())].matches('\n').count()
        });
    Err(CodeChanged {
        line,
        old_text: snippet(&a),
        new_text: snippet(&b),
    })
}

/// `text` with its docs (and the whitespace after each) cut out, and for
/// each kept piece its offset in the result and its line in `text`.
fn without_docs(lang: Lang, text: &str) -> (String, Vec<(usize, usize)>) {
    let mut spans = Vec::new();
    let mut parser = tree_sitter::Parser::new();
    if parser.set_language(&lang.grammar()).is_ok() {
        if let Some(tree) = parser.parse(text, None) {
            doc_spans(lang, tree.root_node(), text, &mut spans);
        }
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut map = Vec::new();
    let mut at = 0;
    for (start, end) in spans {
        if start < at {
            continue;
        }
        map.push((out.len(), line_of(text, at)));
        out.push_str(&text[at..start]);
        at = end
            + text[end..]
                .find(|c: char| !c.is_whitespace())
                .unwrap_or(text.len() - end);
    }
    map.push((out.len(), line_of(text, at)));
    out.push_str(&text[at..]);
    (out, map)
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

/// Byte spans of the docs under `node`.
fn doc_spans(lang: Lang, node: tree_sitter::Node<'_>, text: &str, out: &mut Vec<(usize, usize)>) {
    if is_doc(lang, node, text) {
        out.push((node.start_byte(), node.end_byte()));
        return;
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        doc_spans(lang, child, text, out);
    }
}

fn is_doc(lang: Lang, node: tree_sitter::Node<'_>, text: &str) -> bool {
    let body = &text[node.byte_range()];
    if lang == Lang::Python {
        // A string alone as the first statement of a module, class or
        // function body.
        let first = node
            .parent()
            .and_then(|p| p.named_child(0))
            .is_some_and(|c| c.id() == node.id());
        let in_body = node
            .parent()
            .is_some_and(|p| matches!(p.kind(), "block" | "module"));
        return node.kind() == "expression_statement"
            && node.named_child_count() == 1
            && node.named_child(0).is_some_and(|c| c.kind() == "string")
            && first
            && in_body;
    }
    if !node.kind().contains("comment") {
        return false;
    }
    if ["///", "//!", "/**", "/*!"]
        .iter()
        .any(|m| body.starts_with(m))
    {
        return true;
    }
    // Go, C and C++ document with plain comments right above a
    // definition.
    matches!(lang, Lang::Go | Lang::C | Lang::Cpp)
        && node.next_sibling().is_some_and(|n| {
            !n.kind().contains("comment") && n.start_position().row == node.end_position().row + 1
        })
}

/// `text` (a `lang` source) with `doc` written for the definition
/// `symbol`: replacing its docstring or doc comment when it has one, else
/// as its language writes one. `None` when the definition is not found
/// where the graph has it.
pub fn write_doc(lang: Lang, text: &str, symbol: &Symbol, doc: &str) -> Option<String> {
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&lang.grammar()).ok()?;
    let tree = parser.parse(text, None)?;
    let def = definition_at(tree.root_node(), symbol.line - 1, text, &symbol.name)?;
    let doc = doc.trim();
    if lang == Lang::Python {
        let body = def.child_by_field_name("body")?;
        let first = body.named_child(0)?;
        let indent = " ".repeat(first.start_position().column);
        let string = python_docstring(doc, &indent);
        let mut out = text.to_owned();
        if is_doc(lang, first, text) {
            out.replace_range(first.byte_range(), &string);
        } else {
            let at = line_start(text, first.start_byte());
            out.insert_str(at, &format!("{indent}{string}\n"));
        }
        return Some(out);
    }
    // Above the definition (and its attributes or decorators), replacing
    // the doc comments right above it.
    let mut top = def;
    while let Some(prev) = top.prev_sibling() {
        let touching = prev.end_position().row + 1 >= top.start_position().row;
        let kind = prev.kind();
        let attribute = kind.contains("attribute") || kind == "decorator";
        if touching && (attribute || is_doc(lang, prev, text)) {
            top = prev;
        } else {
            break;
        }
    }
    let mut start = top.start_byte();
    // Drop the doc comments among what sits above (attributes stay).
    let mut kept = String::new();
    let mut node = Some(top);
    while let Some(n) = node.filter(|n| n.id() != def.id()) {
        if !is_doc(lang, n, text) {
            kept.push_str(&text[n.byte_range()]);
            kept.push('\n');
        }
        node = n.next_sibling();
    }
    start = line_start(text, start);
    let indent: String = text[start..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    let comment = comment_doc(lang, doc, &indent, &symbol.name);
    let kept: String = kept
        .lines()
        .map(|l| format!("{indent}{}\n", l.trim_start()))
        .collect();
    let mut out = text.to_owned();
    out.replace_range(
        start..line_start(text, def.start_byte()),
        &format!("{comment}{kept}"),
    );
    Some(out)
}

/// The source of the first definition named `name` in `text` (a `lang`
/// source), nearest to `line` (1-based) when several are.
pub fn definition_source(lang: Lang, text: &str, name: &str, line: u32) -> Option<String> {
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&lang.grammar()).ok()?;
    let tree = parser.parse(text, None)?;
    let mut found = Vec::new();
    definitions_named(tree.root_node(), text, name, &mut found);
    found
        .into_iter()
        .min_by_key(|n| (n.start_position().row as i64 + 1 - i64::from(line)).abs())
        .map(|n| text[n.byte_range()].to_owned())
}

fn definitions_named<'t>(
    node: tree_sitter::Node<'t>,
    text: &str,
    name: &str,
    out: &mut Vec<tree_sitter::Node<'t>>,
) {
    let named = node
        .child_by_field_name("name")
        .is_some_and(|n| &text[n.byte_range()] == name);
    if named && node.kind() != "call" && node.kind() != "call_expression" {
        out.push(node);
        return;
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        definitions_named(child, text, name, out);
    }
}

/// The byte offset of the start of the line holding `offset`.
fn line_start(text: &str, offset: usize) -> usize {
    text[..offset].rfind('\n').map_or(0, |i| i + 1)
}

/// The definition node starting on `row` whose name is `name`.
fn definition_at<'t>(
    node: tree_sitter::Node<'t>,
    row: u32,
    text: &str,
    name: &str,
) -> Option<tree_sitter::Node<'t>> {
    let (start, end) = (
        node.start_position().row as u32,
        node.end_position().row as u32,
    );
    if row < start || row > end {
        return None;
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        if let Some(found) = definition_at(child, row, text, name) {
            return Some(found);
        }
    }
    let named = node
        .child_by_field_name("name")
        .is_some_and(|n| &text[n.byte_range()] == name);
    // C and C++ name a function through its declarator.
    let declared = node.kind() == "function_definition"
        && node
            .child_by_field_name("declarator")
            .and_then(|d| d.child_by_field_name("declarator"))
            .is_some_and(|n| &text[n.byte_range()] == name);
    (start == row && (named || declared)).then_some(node)
}

fn python_docstring(doc: &str, indent: &str) -> String {
    let mut lines = doc.lines();
    let first = lines.next().unwrap_or("");
    let rest: Vec<&str> = lines.collect();
    if rest.is_empty() {
        return format!("\"\"\"{first}\"\"\"");
    }
    let mut s = format!("\"\"\"{first}\n");
    for l in rest {
        match l.trim().is_empty() {
            true => s.push('\n'),
            false => s.push_str(&format!("{indent}{}\n", l.trim_end())),
        }
    }
    s.push_str(&format!("{indent}\"\"\""));
    s
}

fn comment_doc(lang: Lang, doc: &str, indent: &str, name: &str) -> String {
    let lines: Vec<&str> = doc.lines().map(str::trim_end).collect();
    let mut s = String::new();
    match lang {
        Lang::Rust => {
            for l in lines {
                s.push_str(&format!(
                    "{indent}///{}{l}\n",
                    if l.is_empty() { "" } else { " " }
                ));
            }
        }
        Lang::Go => {
            for (n, l) in lines.into_iter().enumerate() {
                // Go's convention: the comment begins with the name.
                let l = match n == 0 && !l.starts_with(name) {
                    true => format!("{name} {}", lowercase_first(l)),
                    false => l.to_owned(),
                };
                s.push_str(&format!(
                    "{indent}//{}{l}\n",
                    if l.is_empty() { "" } else { " " }
                ));
            }
        }
        _ => {
            s.push_str(&format!("{indent}/**\n"));
            for l in lines {
                s.push_str(&format!(
                    "{indent} *{}{l}\n",
                    if l.is_empty() { "" } else { " " }
                ));
            }
            s.push_str(&format!("{indent} */\n"));
        }
    }
    s
}

fn lowercase_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}
