//! Facts of one file, from its syntax tree alone: definitions, call and
//! inheritance references, imports, statements and def-use links. Pure:
//! no database, no other file; the index resolves names across files.

mod defs;
mod flow;
mod refs;

use streaming_iterator::StreamingIterator;

use crate::error::Result;
use crate::lang::{Lang, QueryKind};
use crate::store::Symbol;

pub(crate) use flow::{DefUse, Statement, VarOcc};
pub(crate) use refs::{Import, Ref, RefKind};

/// The compiled queries of one language.
#[derive(Debug)]
pub(crate) struct Queries {
    lang: Lang,
    defs: tree_sitter::Query,
    calls: tree_sitter::Query,
    imports: tree_sitter::Query,
    bases: Option<tree_sitter::Query>,
    tests: Option<tree_sitter::Query>,
}

impl Queries {
    /// The language's queries, compiled once per process (compiling is
    /// the slow part of opening an index).
    pub(crate) fn get(lang: Lang) -> Result<&'static Queries> {
        static CACHE: [std::sync::OnceLock<Queries>; Lang::ALL.len()] =
            [const { std::sync::OnceLock::new() }; Lang::ALL.len()];
        let slot = &CACHE[Lang::ALL
            .iter()
            .position(|&l| l == lang)
            .expect("every language is in ALL")];
        if let Some(q) = slot.get() {
            return Ok(q);
        }
        let compiled = Queries::new(lang)?;
        Ok(slot.get_or_init(|| compiled))
    }

    fn new(lang: Lang) -> Result<Queries> {
        let required = |kind| {
            lang.query(kind)
                .map(|q| q.expect("every language has definitions, calls and imports queries"))
        };
        Ok(Queries {
            lang,
            defs: required(QueryKind::Defs)?,
            calls: required(QueryKind::Calls)?,
            imports: required(QueryKind::Imports)?,
            bases: lang.query(QueryKind::Bases)?,
            tests: lang.query(QueryKind::Tests)?,
        })
    }
}

/// Everything one file says.
#[derive(Debug, Default)]
pub(crate) struct FileFacts {
    pub(crate) symbols: Vec<Symbol>,
    pub(crate) refs: Vec<Ref>,
    pub(crate) imports: Vec<Import>,
    pub(crate) statements: Vec<Statement>,
    pub(crate) vars: Vec<VarOcc>,
    pub(crate) defuse: Vec<DefUse>,
}

/// Options of extraction.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Options {
    /// Record statements, variable occurrences and def-use links.
    pub(crate) flow: bool,
}

/// A definition's byte range in its file.
pub(crate) type Span = (usize, usize);

/// Parses `source` (the file at `path`, relative to the indexed root).
/// `None` when the parser gives up on it.
pub(crate) fn parse(
    parser: &mut tree_sitter::Parser,
    lang: Lang,
    source: &[u8],
) -> Option<tree_sitter::Tree> {
    parser
        .set_language(&lang.grammar())
        .expect("bundled grammars match the tree-sitter core");
    parser.parse(source, None)
}

/// The facts of a parsed file.
pub(crate) fn extract(
    queries: &Queries,
    tree: &tree_sitter::Tree,
    path: &str,
    source: &[u8],
    options: Options,
) -> FileFacts {
    let (symbols, spans) = defs::definitions(queries, tree, path, source);
    let refs = refs::references(queries, tree, source, &symbols, &spans);
    let imports = refs::imports(queries, tree, source, &symbols, &spans);
    let mut facts = FileFacts {
        symbols,
        refs,
        imports,
        ..FileFacts::default()
    };
    if options.flow {
        let flow = flow::analyse(
            queries.lang,
            tree,
            source,
            &facts.symbols,
            &spans,
            &facts.imports,
        );
        facts.statements = flow.statements;
        facts.vars = flow.vars;
        facts.defuse = flow.defuse;
    }
    facts
}

/// The innermost definition whose span holds byte `at` (spans are sorted
/// outer first, so the last holder is the innermost).
pub(crate) fn enclosing(spans: &[Span], at: usize) -> Option<usize> {
    spans
        .iter()
        .enumerate()
        .rev()
        .find(|(_, &(start, end))| start <= at && at < end)
        .map(|(i, _)| i)
}

/// Each match of `query`, as `(capture name, node)` pairs.
pub(crate) fn for_each_match<'t>(
    query: &tree_sitter::Query,
    tree: &'t tree_sitter::Tree,
    source: &[u8],
    mut f: impl FnMut(&[(&str, tree_sitter::Node<'t>)]),
) {
    let names = query.capture_names();
    let mut cursor = tree_sitter::QueryCursor::new();
    let mut matches = cursor.matches(query, tree.root_node(), source);
    let mut caps = Vec::new();
    while let Some(m) = matches.next() {
        caps.clear();
        caps.extend(
            m.captures()
                .iter()
                .map(|c| (names[c.index as usize], c.node)),
        );
        f(&caps);
    }
}

/// The text of a node (empty when it is not UTF-8).
pub(crate) fn text<'s>(node: tree_sitter::Node<'_>, source: &'s [u8]) -> &'s str {
    node.utf8_text(source).unwrap_or_default()
}

/// The 1-based line of a node's start.
pub(crate) fn line_of(node: tree_sitter::Node<'_>) -> u32 {
    node.start_position().row as u32 + 1
}

/// `text` with whitespace runs collapsed, cut to `max` characters.
pub(crate) fn squeeze(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, word) in text.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(word);
        if out.len() >= max * 4 {
            break;
        }
    }
    if out.chars().count() > max {
        out = out.chars().take(max).collect();
    }
    out
}
