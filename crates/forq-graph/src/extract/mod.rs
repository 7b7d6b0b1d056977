//! Facts of one file, from its syntax tree alone: definitions, call and
//! inheritance references, imports, statements and def-use links. Pure:
//! no database, no other file; the index resolves names across files.

mod defs;
mod flow;
mod matcher;
mod refs;

use crate::error::Result;
use crate::lang::{Lang, QueryKind};
use crate::store::Symbol;

pub(crate) use flow::{DefUse, Statement, VarOcc};
pub(crate) use refs::{Import, Ref, RefKind};

/// The queries of one language, compiled for one walk of each tree
/// ([`matcher`]): every kind of match is found in a single pass, and each
/// pattern remembers which file it came from.
#[derive(Debug)]
pub(crate) struct Queries {
    lang: Lang,
    matcher: matcher::Matcher,
}

/// The captures of one match: `(capture name, node)`.
pub(crate) type Caps<'t> = Vec<(&'static str, tree_sitter::Node<'t>)>;

/// A file's matches, by query kind.
#[derive(Default)]
pub(crate) struct Matches<'t> {
    pub(crate) defs: Vec<Caps<'t>>,
    pub(crate) calls: Vec<Caps<'t>>,
    pub(crate) imports: Vec<Caps<'t>>,
    pub(crate) bases: Vec<Caps<'t>>,
    pub(crate) tests: Vec<Caps<'t>>,
}

impl Queries {
    /// The language's queries, compiled once per process.
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
        let files: Vec<_> = QueryKind::ALL
            .into_iter()
            .filter_map(|kind| {
                lang.query_source(kind)
                    .map(|source| (kind.file_name(), kind, source))
            })
            .collect();
        let compiled = Queries {
            lang,
            matcher: matcher::Matcher::new(lang, &files)?,
        };
        Ok(slot.get_or_init(|| compiled))
    }

    /// Every match of every query over `tree`, by kind.
    pub(crate) fn run<'t>(
        &'static self,
        tree: &'t tree_sitter::Tree,
        source: &[u8],
    ) -> Matches<'t> {
        let mut out = Matches::default();
        self.matcher.run(tree, source, |found| {
            let list = match found.kind {
                QueryKind::Defs => &mut out.defs,
                QueryKind::Calls => &mut out.calls,
                QueryKind::Imports => &mut out.imports,
                QueryKind::Bases => &mut out.bases,
                QueryKind::Tests => &mut out.tests,
            };
            list.push(found.captures);
        });
        out
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
    /// Whether statements and def-use were computed (an empty list then
    /// means the file has none).
    pub(crate) flow: bool,
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
    queries: &'static Queries,
    tree: &tree_sitter::Tree,
    path: &str,
    source: &[u8],
    options: Options,
) -> FileFacts {
    let matches = queries.run(tree, source);
    let (symbols, spans) = defs::definitions(queries.lang, &matches, path, source);
    let refs = refs::references(queries.lang, &matches, source, &symbols, &spans);
    let imports = refs::imports(queries.lang, &matches, source, &symbols, &spans);
    let mut facts = FileFacts {
        symbols,
        refs,
        imports,
        ..FileFacts::default()
    };
    facts.flow = options.flow;
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

/// The node captured as `name` in a match, if any.
pub(crate) fn capture<'t>(
    caps: &[(&str, tree_sitter::Node<'t>)],
    name: &str,
) -> Option<tree_sitter::Node<'t>> {
    caps.iter().find(|(c, _)| *c == name).map(|&(_, n)| n)
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
