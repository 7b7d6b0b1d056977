//! Symbols of one file: run the language's definitions query, then nest the
//! definitions by span to give each its container chain.

use streaming_iterator::StreamingIterator;

use crate::lang::Lang;
use crate::store::Symbol;

/// A definition as the query found it, before nesting.
struct Found {
    kind: String,
    name: String,
    /// A container named by the definition itself (a Go receiver, a C++
    /// `Class::method`), for definitions that sit outside their container.
    container: Option<String>,
    start_byte: usize,
    end_byte: usize,
    line: u32,
    end_line: u32,
    signature: String,
}

/// The 1-based last line of a node; a node that ends with its newline
/// (a C `#define`) ends on the line before.
fn last_line(node: tree_sitter::Node<'_>) -> u32 {
    let (start, end) = (node.start_position(), node.end_position());
    if end.column == 0 && end.row > start.row {
        end.row as u32
    } else {
        end.row as u32 + 1
    }
}

/// Longest signature line kept.
const SIGNATURE_CHARS: usize = 200;

/// A call site: the name called, where, and from which definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallSite {
    /// The innermost enclosing definition's id; `None` at top level.
    pub(crate) caller: Option<String>,
    pub(crate) name: String,
    pub(crate) line: u32,
}

/// The queries of one language.
#[derive(Debug)]
pub(crate) struct Queries {
    pub(crate) defs: tree_sitter::Query,
    pub(crate) calls: tree_sitter::Query,
}

/// Symbols and call sites of `source` (a file at `path`, relative to the
/// indexed root). `None` when the file does not parse at all.
pub(crate) fn extract(
    lang: Lang,
    queries: &Queries,
    path: &str,
    source: &[u8],
) -> Option<(Vec<Symbol>, Vec<CallSite>)> {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&lang.grammar())
        .expect("bundled grammars match the tree-sitter core");
    let tree = parser.parse(source, None)?;
    let (symbols, spans) = definitions(&queries.defs, &tree, path, source)?;
    let calls = call_sites(&queries.calls, &tree, source, &symbols, &spans);
    Some((symbols, calls))
}

/// Each call of the calls query, attributed to the innermost definition
/// whose span holds it.
fn call_sites(
    query: &tree_sitter::Query,
    tree: &tree_sitter::Tree,
    source: &[u8],
    symbols: &[Symbol],
    spans: &[Span],
) -> Vec<CallSite> {
    let names = query.capture_names();
    let Some(callee_idx) = names.iter().position(|n| *n == "callee") else {
        return Vec::new();
    };
    let mut cursor = tree_sitter::QueryCursor::new();
    let mut matches = cursor.matches(query, tree.root_node(), source);
    let mut out = Vec::new();
    while let Some(m) = matches.next() {
        let Some(callee) = m.captures().iter().find(|c| c.index as usize == callee_idx) else {
            continue;
        };
        let at = callee.node.start_byte();
        // Spans are sorted outer first, so the last holder is the innermost.
        let caller = spans
            .iter()
            .enumerate()
            .rev()
            .find(|(_, &(start, end))| start <= at && at < end)
            .map(|(i, _)| symbols[i].id.clone());
        out.push(CallSite {
            caller,
            name: callee.node.utf8_text(source).unwrap_or_default().to_owned(),
            line: callee.node.start_position().row as u32 + 1,
        });
    }
    out
}

/// A definition's byte range in its file.
type Span = (usize, usize);

/// The definitions, nested, with their byte spans (same order).
fn definitions(
    query: &tree_sitter::Query,
    tree: &tree_sitter::Tree,
    path: &str,
    source: &[u8],
) -> Option<(Vec<Symbol>, Vec<Span>)> {
    let names = query.capture_names();
    let name_idx = names.iter().position(|n| *n == "name")?;
    let mut cursor = tree_sitter::QueryCursor::new();
    let mut matches = cursor.matches(query, tree.root_node(), source);
    let mut found = Vec::new();
    while let Some(m) = matches.next() {
        let (mut def, mut name, mut container) = (None, None, None);
        for c in m.captures() {
            let cap = names[c.index as usize];
            if c.index as usize == name_idx {
                name = Some(c.node);
            } else if cap == "container" {
                container = c.node.utf8_text(source).ok().map(str::to_owned);
            } else if let Some(kind) = cap.strip_prefix("def.") {
                def = Some((kind, c.node));
            }
        }
        let (Some((kind, node)), Some(name_node)) = (def, name) else {
            continue;
        };
        let mut name = name_node.utf8_text(source).unwrap_or_default().to_owned();
        if kind == "impl" {
            // `impl<T> Foo<T>` is named `Foo`.
            name = name.split('<').next().unwrap_or_default().trim().to_owned();
        }
        let text = node.utf8_text(source).unwrap_or_default();
        let signature: String = text
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .chars()
            .take(SIGNATURE_CHARS)
            .collect();
        found.push(Found {
            kind: kind.to_owned(),
            name,
            container,
            start_byte: node.start_byte(),
            end_byte: node.end_byte(),
            line: node.start_position().row as u32 + 1,
            end_line: last_line(node),
            signature,
        });
    }
    // Outer definitions first, so a stack of open ones gives the containers.
    found.sort_by(|a, b| {
        a.start_byte
            .cmp(&b.start_byte)
            .then(b.end_byte.cmp(&a.end_byte))
    });
    let mut out: Vec<Symbol> = Vec::with_capacity(found.len());
    let mut spans = Vec::with_capacity(found.len());
    let mut open: Vec<(usize, usize)> = Vec::new(); // (end_byte, index in out)
    let mut seen = std::collections::HashMap::<String, u32>::new();
    for f in found {
        while open.last().is_some_and(|&(end, _)| end <= f.start_byte) {
            open.pop();
        }
        let parent = open.last().map(|&(_, i)| i);
        let parent_kind = parent.map(|i| out[i].kind.as_str());
        let kind = match (f.kind.as_str(), parent_kind) {
            ("function", Some("class" | "impl" | "trait" | "struct" | "interface")) => {
                "method".to_owned()
            }
            (k, _) => k.to_owned(),
        };
        let qualname = match (parent, &f.container) {
            (Some(i), _) => format!("{}.{}", out[i].qualname, f.name),
            (None, Some(c)) => format!("{c}.{}", f.name),
            (None, None) => f.name.clone(),
        };
        let base_id = format!("{path}#{qualname}:{kind}");
        let n = seen.entry(base_id.clone()).or_insert(0);
        *n += 1;
        // A name defined twice in one scope (a redefinition, a cfg'd twin)
        // keeps both, in order.
        let id = if *n == 1 {
            base_id
        } else {
            format!("{base_id}~{n}")
        };
        out.push(Symbol {
            id,
            name: f.name,
            qualname,
            kind,
            file: path.to_owned(),
            line: f.line,
            end_line: f.end_line,
            parent: parent.map(|i| out[i].id.clone()),
            signature: f.signature,
        });
        spans.push((f.start_byte, f.end_byte));
        open.push((f.end_byte, out.len() - 1));
    }
    Some((out, spans))
}
