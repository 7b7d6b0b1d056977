//! Definitions: run the language's definitions query, mark tests (query
//! or naming convention), then nest the definitions by span to give each
//! its container chain and a stable descriptor id.

use std::collections::HashMap;

use super::{capture, line_of, squeeze, text, Caps, Matches, Span};
use crate::lang::Lang;
use crate::store::Symbol;

/// A definition as the queries found it, before nesting.
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
    doc: Option<String>,
    test: bool,
}

/// Longest signature line kept.
const SIGNATURE_CHARS: usize = 200;
/// Longest doc comment kept.
const DOC_CHARS: usize = 500;

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

fn found(kind: &str, name: String, node: tree_sitter::Node<'_>, source: &[u8]) -> Found {
    let signature = squeeze(
        text(node, source).lines().next().unwrap_or_default(),
        SIGNATURE_CHARS,
    );
    Found {
        kind: kind.to_owned(),
        name,
        container: None,
        start_byte: node.start_byte(),
        end_byte: node.end_byte(),
        line: line_of(node),
        end_line: last_line(node),
        signature,
        doc: None,
        test: false,
    }
}

/// Calls `f` with the captures of each match.
pub(super) fn each<'t>(
    matches: &[Caps<'t>],
    mut f: impl FnMut(&[(&'static str, tree_sitter::Node<'t>)]),
) {
    for caps in matches {
        f(caps);
    }
}

/// The definitions, nested, with their byte spans (same order).
pub(super) fn definitions(
    lang: Lang,
    matches: &Matches<'_>,
    path: &str,
    source: &[u8],
) -> (Vec<Symbol>, Vec<Span>) {
    let mut all = Vec::new();
    each(&matches.defs, |caps| {
        let (mut def, mut name, mut container) = (None, None, None);
        for &(cap, node) in caps {
            if cap == "name" {
                name = Some(node);
            } else if cap == "container" {
                container = Some(text(node, source).to_owned());
            } else if let Some(kind) = cap.strip_prefix("def.") {
                def = Some((kind, node));
            }
        }
        let (Some((kind, node)), Some(name_node)) = (def, name) else {
            return;
        };
        let mut name = text(name_node, source).to_owned();
        if kind == "impl" {
            // `impl<T> Foo<T>` is named `Foo`.
            name = name.split('<').next().unwrap_or_default().trim().to_owned();
        }
        let mut f = found(kind, name, node, source);
        f.container = container;
        f.doc = doc_comment(lang, node, source);
        all.push(f);
    });
    mark_tests(lang, &matches.tests, path, source, &mut all);
    // Outer definitions first, so a stack of open ones gives the containers.
    all.sort_by(|a, b| {
        a.start_byte
            .cmp(&b.start_byte)
            .then(b.end_byte.cmp(&a.end_byte))
    });
    let (mut symbols, spans) = nest(path, all);
    match lang {
        Lang::Python => python_tests(path, &mut symbols),
        Lang::Go => go_tests(path, &mut symbols),
        _ => {}
    }
    (symbols, spans)
}

/// Gives each definition its parent, qualified name and id.
fn nest(path: &str, all: Vec<Found>) -> (Vec<Symbol>, Vec<Span>) {
    let mut out: Vec<Symbol> = Vec::with_capacity(all.len());
    let mut spans = Vec::with_capacity(all.len());
    let mut open: Vec<(usize, usize)> = Vec::new(); // (end_byte, index in out)
    let mut seen = HashMap::<String, u32>::new();
    for f in all {
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
            doc: f.doc,
            test: f.test,
        });
        spans.push((f.start_byte, f.end_byte));
        open.push((f.end_byte, out.len() - 1));
    }
    (out, spans)
}

/// Applies the tests query: a `@test` node that is already a definition is
/// marked (and renamed after `@name` when a macro names it, as in
/// `TEST(Suite, Name)`); one that is not (a JavaScript `it(...)`) becomes a
/// definition of kind `test`. A `@test.attr` node marks the next item.
fn mark_tests(lang: Lang, matches: &[Caps<'_>], path: &str, source: &[u8], all: &mut Vec<Found>) {
    let in_test_file = is_test_path(path);
    let mut added = Vec::new();
    each(matches, |caps| {
        let get = |name: &str| capture(caps, name);
        if let Some(attr) = get("test.attr") {
            let mut next = attr.next_named_sibling();
            while let Some(n) =
                next.filter(|n| n.kind() == "attribute_item" || n.kind().contains("comment"))
            {
                next = n.next_named_sibling();
            }
            if let Some(item) = next {
                if let Some(f) = all.iter_mut().find(|f| f.start_byte == item.start_byte()) {
                    f.test = true;
                }
            }
            return;
        }
        let (Some(node), Some(name)) = (get("test"), get("name")) else {
            return;
        };
        let macro_named = get("macro").is_some();
        if lang == Lang::C && !macro_named && !in_test_file {
            return; // a `test_x` function outside test files is not a test
        }
        let title = if macro_named {
            // `(Suite, Name)` or `("adds two numbers", "[tag]")`
            let inner = text(name, source)
                .trim_start_matches('(')
                .trim_end_matches(')');
            inner
                .split(',')
                .map(|part| part.trim().trim_matches('"'))
                .filter(|part| !part.is_empty() && !part.starts_with('['))
                .collect::<Vec<_>>()
                .join(".")
        } else {
            text(name, source)
                .trim_matches(|c| c == '`' || c == '"' || c == '\'')
                .to_owned()
        };
        if let Some(f) = all.iter_mut().find(|f| f.start_byte == node.start_byte()) {
            f.test = true;
            if macro_named {
                f.name = title;
                f.kind = "test".to_owned();
            }
        } else {
            let mut f = found("test", squeeze(&title, SIGNATURE_CHARS), node, source);
            f.test = true;
            added.push(f);
        }
    });
    all.extend(added);
}

/// A path that follows a test-file convention: a `test`/`tests` directory,
/// or a file named `test_*`, `*_test.*`, `*.test.*`, `*.spec.*`, `*Test.*`.
pub(crate) fn is_test_path(path: &str) -> bool {
    let mut parts = path.rsplit('/');
    let file = parts.next().unwrap_or_default();
    let stem = file.split('.').next().unwrap_or_default();
    parts.any(|dir| matches!(dir, "test" | "tests" | "testing" | "__tests__" | "spec"))
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("Test")
        || stem.ends_with("Tests")
        || file.contains(".test.")
        || file.contains(".spec.")
        || stem == "conftest"
}

/// pytest and unittest: `test*` functions in test files, `test*` methods
/// of `Test*` classes or of `TestCase` subclasses, and `Test*` classes in
/// test files.
fn python_tests(path: &str, symbols: &mut [Symbol]) {
    let in_test_file = is_test_path(path);
    let test_classes: Vec<String> = symbols
        .iter()
        .filter(|s| {
            s.kind == "class" && (s.name.starts_with("Test") || s.signature.contains("TestCase"))
        })
        .map(|s| s.id.clone())
        .collect();
    for s in symbols.iter_mut() {
        let in_test_class = s.parent.as_ref().is_some_and(|p| test_classes.contains(p));
        s.test |= match s.kind.as_str() {
            "function" => s.name.starts_with("test") && s.parent.is_none() && in_test_file,
            "method" => s.name.starts_with("test") && in_test_class,
            "class" => in_test_file && test_classes.contains(&s.id),
            _ => false,
        };
    }
}

/// `go test`: `TestX(t *testing.T)` and `FuzzX` in `_test.go` files.
fn go_tests(path: &str, symbols: &mut [Symbol]) {
    if !path.ends_with("_test.go") {
        return;
    }
    for s in symbols.iter_mut().filter(|s| s.kind == "function") {
        let rest = s
            .name
            .strip_prefix("Test")
            .or_else(|| s.name.strip_prefix("Fuzz"));
        s.test |= rest.is_some_and(|r| !r.starts_with(|c: char| c.is_ascii_lowercase()));
    }
}

/// The doc comment of a definition: a Python docstring, or the comments
/// right above it (past attributes, decorators and `export`).
fn doc_comment(lang: Lang, node: tree_sitter::Node<'_>, source: &[u8]) -> Option<String> {
    if lang == Lang::Python {
        let body = node.child_by_field_name("body")?;
        let first = body.named_child(0)?;
        let string = (first.kind() == "expression_statement")
            .then(|| first.named_child(0))
            .flatten()
            .filter(|s| s.kind() == "string")?;
        let doc = text(string, source)
            .trim_start_matches(['r', 'u', 'b', 'R', 'U', 'B'])
            .trim_matches(|c| c == '"' || c == '\'');
        return Some(squeeze(doc, DOC_CHARS)).filter(|d| !d.is_empty());
    }
    let mut anchor = node;
    while let Some(parent) = anchor.parent().filter(|p| {
        matches!(
            p.kind(),
            "export_statement" | "decorated_definition" | "template_declaration"
        )
    }) {
        anchor = parent;
    }
    let mut lines = Vec::new();
    let mut prev = anchor.prev_named_sibling();
    let mut expect_row = anchor.start_position().row;
    while let Some(p) = prev {
        let kind = p.kind();
        if kind == "attribute_item" || kind == "decorator" || kind == "annotation" {
            expect_row = p.start_position().row;
            prev = p.prev_named_sibling();
            continue;
        }
        if !kind.contains("comment") || p.end_position().row + 1 < expect_row {
            break;
        }
        lines.push(text(p, source));
        expect_row = p.start_position().row;
        prev = p.prev_named_sibling();
    }
    if lines.is_empty() {
        return None;
    }
    lines.reverse();
    let doc: Vec<&str> = lines
        .iter()
        .flat_map(|c| c.lines())
        .map(|l| {
            l.trim()
                .trim_start_matches("/**")
                .trim_start_matches("/*")
                .trim_end_matches("*/")
                .trim_start_matches('/')
                .trim_start_matches('!')
                .trim_start_matches('*')
                .trim()
        })
        .filter(|l| !l.is_empty())
        .collect();
    Some(squeeze(&doc.join(" "), DOC_CHARS)).filter(|d| !d.is_empty())
}
