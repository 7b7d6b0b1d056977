//! Statements and intra-procedural def-use links.
//!
//! Each function (and the file's top level) is a scope. A statement is a
//! named child of a block; every identifier is attributed to its innermost
//! statement and classified, through the language's [`Syntax`] tables, as
//! a write (assignment target, parameter, loop variable, `with`/`using`
//! binding, import) or a read. A definition reaches a use when it comes
//! before it and no unconditional rebinding lies between them; a
//! rebinding is unconditional when the block holding its statement also
//! holds the use. A definition later in a loop body reaches uses earlier in
//! the body (the back edge) unless the body rebinds the name before the
//! use. Uses in a function of a name the function never binds link to the
//! file's top-level definitions of it (its imports and globals).

use std::collections::{BTreeMap, HashMap};

use super::{line_of, text, Import, Span};
use crate::lang::{Lang, Syntax};
use crate::store::Symbol;

/// A statement of a scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Statement {
    /// The enclosing function's id; `None` at top level.
    pub(crate) scope: Option<String>,
    /// The node kind (`expression_statement`, `for_statement`, ...), or
    /// `signature` for a function's parameters.
    pub(crate) kind: String,
    pub(crate) line: u32,
    pub(crate) end_line: u32,
    /// The statement's bytes in the file (its text is read back from
    /// them; a signature's text is its function's signature).
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// A variable written or read by a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VarOcc {
    /// Index into the file's statements.
    pub(crate) stmt: u32,
    pub(crate) name: String,
    pub(crate) write: bool,
    pub(crate) line: u32,
    pub(crate) col: u32,
}

/// The value of `name` written by statement `def` may be read by `use_`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct DefUse {
    pub(crate) def: u32,
    pub(crate) use_: u32,
    pub(crate) name: String,
}

/// The result of the analysis of one file.
#[derive(Debug, Default)]
pub(super) struct Flow {
    pub(super) statements: Vec<Statement>,
    pub(super) vars: Vec<VarOcc>,
    pub(super) defuse: Vec<DefUse>,
}

/// A binding or a read, as the walk meets it.
#[derive(Debug, Clone)]
struct Occ {
    stmt: u32,
    /// Where it takes effect: a read at the identifier, a write once its
    /// binding construct is done.
    pos: usize,
    /// For a write: whether it hides the earlier ones (not a loop header's).
    kills: bool,
    /// The byte range of the block holding the statement (a write hides
    /// earlier ones only from uses inside it).
    block: Span,
    /// The outermost loop of the scope holding a read.
    outer_loop: Option<Span>,
}

#[derive(Default)]
struct ScopeVars {
    writes: BTreeMap<String, Vec<Occ>>,
    reads: BTreeMap<String, Vec<Occ>>,
}

/// The node kinds the walk tests at every node, as tables by kind id:
/// `Node::kind` reads and checks the kind's name each time, which cost
/// the walk more than anything it does with the answer.
struct Kinds {
    identifier: Vec<bool>,
    block: Vec<bool>,
    import: Vec<bool>,
    loop_: Vec<bool>,
    comment: Vec<bool>,
}

impl Kinds {
    fn of(language: &tree_sitter::Language, syntax: &Syntax) -> Kinds {
        let n = language.node_kind_count();
        let table = |wanted: &dyn Fn(&str) -> bool| -> Vec<bool> {
            (0..n)
                .map(|id| language.node_kind_for_id(id as u16).is_some_and(wanted))
                .collect()
        };
        Kinds {
            identifier: table(&|k| syntax.identifiers.contains(&k)),
            block: table(&|k| syntax.blocks.contains(&k)),
            import: table(&|k| syntax.imports.contains(&k)),
            loop_: table(&|k| syntax.loops.contains(&k)),
            comment: table(&|k| k.contains("comment")),
        }
    }
}

/// Whether `node`'s kind is marked in `table`.
fn is(table: &[bool], node: tree_sitter::Node<'_>) -> bool {
    table
        .get(usize::from(node.kind_id()))
        .copied()
        .unwrap_or(false)
}

/// Statements, variables and def-use links of every scope of a file.
pub(super) fn analyse(
    lang: Lang,
    tree: &tree_sitter::Tree,
    source: &[u8],
    symbols: &[Symbol],
    spans: &[Span],
    imports: &[Import],
) -> Flow {
    let syntax = lang.syntax();
    let scopes: Vec<usize> = symbols
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s.kind.as_str(), "function" | "method" | "test"))
        .map(|(i, _)| i)
        .collect();
    let mut scope_spans: Vec<Span> = scopes.iter().map(|&i| spans[i]).collect();
    scope_spans.sort_unstable();
    let kinds = Kinds::of(&tree.language(), syntax);
    let mut import_locals: HashMap<usize, Vec<&Import>> = HashMap::new();
    for import in imports.iter().filter(|i| i.local.is_some()) {
        import_locals
            .entry(import.stmt_start)
            .or_default()
            .push(import);
    }
    let mut flow = Flow::default();
    let mut walker = Walker {
        syntax,
        kinds: &kinds,
        source,
        scope_spans: &scope_spans,
        import_locals: &import_locals,
        flow: &mut flow,
    };
    let root = tree.root_node();
    let top = walker.scope(root, None, None);
    let mut defuse = Vec::new();
    for &i in &scopes {
        let (start, end) = spans[i];
        let Some(node) = root.descendant_for_byte_range(start, end) else {
            continue;
        };
        let signature = (symbols[i].kind != "test").then_some(&symbols[i]);
        let vars = walker.scope(node, Some(&symbols[i].id), signature);
        link(&vars, Some(&top), &mut defuse);
    }
    link(&top, None, &mut defuse);
    defuse.sort();
    defuse.dedup();
    flow.defuse = defuse;
    flow
}

struct Walker<'a> {
    syntax: &'static Syntax,
    kinds: &'a Kinds,
    source: &'a [u8],
    /// The scopes' spans, sorted.
    scope_spans: &'a [Span],
    import_locals: &'a HashMap<usize, Vec<&'a Import>>,
    flow: &'a mut Flow,
}

/// One step of the path from the scope's node to the current node.
#[derive(Clone, Copy)]
struct Step<'t> {
    node: tree_sitter::Node<'t>,
    field: Option<&'t str>,
}

impl Walker<'_> {
    fn new_statement(
        &mut self,
        scope: Option<&str>,
        kind: &str,
        node: tree_sitter::Node<'_>,
    ) -> u32 {
        self.flow.statements.push(Statement {
            scope: scope.map(str::to_owned),
            kind: kind.to_owned(),
            line: line_of(node),
            end_line: node.end_position().row as u32 + 1,
            start: node.start_byte(),
            end: node.end_byte(),
        });
        self.flow.statements.len() as u32 - 1
    }

    /// Walks one scope (not entering nested ones), recording statements and
    /// variables; returns its variables for linking.
    fn scope<'t>(
        &mut self,
        node: tree_sitter::Node<'t>,
        scope: Option<&str>,
        signature: Option<&Symbol>,
    ) -> ScopeVars {
        let mut vars = ScopeVars::default();
        let whole = (node.start_byte(), node.end_byte());
        let signature_stmt = signature.map(|_| {
            let id = self.new_statement(scope, "signature", node);
            let s = &mut self.flow.statements[id as usize];
            (s.end_line, s.end) = (s.line, s.start);
            id
        });
        // Open statements: (end byte, index, block span).
        let mut open: Vec<(usize, u32, Span)> = Vec::new();
        let mut path: Vec<Step<'t>> = vec![Step { node, field: None }];
        let mut cursor = node.walk();
        loop {
            let current = cursor.node();
            let mut descend = true;
            if current != node {
                while open
                    .last()
                    .is_some_and(|&(end, _, _)| end <= current.start_byte())
                {
                    open.pop();
                }
                let span = (current.start_byte(), current.end_byte());
                if self.scope_spans.binary_search(&span).is_ok() {
                    descend = false; // a nested function is its own scope
                } else {
                    descend = self.visit(
                        current,
                        &path,
                        scope,
                        signature_stmt,
                        whole,
                        &mut open,
                        &mut vars,
                    );
                }
            }
            if descend && cursor.goto_first_child() {
                path.push(Step {
                    node: cursor.node(),
                    field: cursor.field_name(),
                });
                continue;
            }
            loop {
                if cursor.node() == node {
                    return vars;
                }
                if cursor.goto_next_sibling() {
                    let last = path.len() - 1;
                    path[last] = Step {
                        node: cursor.node(),
                        field: cursor.field_name(),
                    };
                    break;
                }
                if !cursor.goto_parent() {
                    return vars;
                }
                path.pop();
            }
        }
    }

    /// Handles one node; returns whether to walk into it.
    #[allow(clippy::too_many_arguments)]
    fn visit<'t>(
        &mut self,
        current: tree_sitter::Node<'t>,
        path: &[Step<'t>],
        scope: Option<&str>,
        signature_stmt: Option<u32>,
        whole: Span,
        open: &mut Vec<(usize, u32, Span)>,
        vars: &mut ScopeVars,
    ) -> bool {
        let kinds = self.kinds;
        // The path ends with `current`; its parent is the step before
        // (`Node::parent` would walk down from the root again).
        let parent = path.len().checked_sub(2).map(|i| path[i].node);
        if current.is_named()
            && !is(&kinds.comment, current)
            && parent.is_some_and(|p| is(&kinds.block, p))
        {
            let block = parent.map_or(whole, |p| (p.start_byte(), p.end_byte()));
            let id = self.new_statement(scope, current.kind(), current);
            open.push((current.end_byte(), id, block));
        }
        let Some(&(_, stmt, block)) = open.last() else {
            // Outside every statement: a function's signature.
            if let Some(stmt) = signature_stmt {
                if is(&kinds.identifier, current) {
                    self.record(current, path, stmt, whole, vars);
                }
            }
            return true;
        };
        if is(&kinds.import, current) {
            if let Some(locals) = self.import_locals.get(&current.start_byte()) {
                for import in locals {
                    let Some(local) = import.local.as_deref() else {
                        continue;
                    };
                    let occ = Occ {
                        stmt,
                        pos: current.end_byte(),
                        kills: true,
                        block,
                        outer_loop: None,
                    };
                    self.flow.vars.push(VarOcc {
                        stmt,
                        name: local.to_owned(),
                        write: true,
                        line: import.line,
                        col: import.col,
                    });
                    vars.writes.entry(local.to_owned()).or_default().push(occ);
                }
            }
            return false;
        }
        if is(&kinds.identifier, current) {
            self.record(current, path, stmt, block, vars);
        }
        true
    }

    fn push_var(&mut self, stmt: u32, name: &str, write: bool, node: tree_sitter::Node<'_>) {
        self.flow.vars.push(VarOcc {
            stmt,
            name: name.to_owned(),
            write,
            line: line_of(node),
            col: node.start_position().column as u32 + 1,
        });
    }

    /// Classifies an identifier and records it.
    fn record(
        &mut self,
        ident: tree_sitter::Node<'_>,
        path: &[Step<'_>],
        stmt: u32,
        block: Span,
        vars: &mut ScopeVars,
    ) {
        let syntax = self.syntax;
        let name = text(ident, self.source);
        if name.is_empty() || path.len() < 2 {
            return;
        }
        let matches = |table: &[(&str, &str)], kind: &str, field: Option<&str>| {
            table
                .iter()
                .any(|&(k, f)| k == kind && (f.is_empty() || Some(f) == field))
        };
        let last = path.len() - 1;
        if matches(
            syntax.not_vars,
            path[last - 1].node.kind(),
            path[last].field,
        ) {
            return;
        }
        let outer_loop = path
            .iter()
            .find(|s| is(&self.kinds.loop_, s.node))
            .map(|s| (s.node.start_byte(), s.node.end_byte()));
        let read = Occ {
            stmt,
            pos: ident.start_byte(),
            kills: false,
            block,
            outer_loop,
        };
        let mut i = last;
        while i > 0 {
            let (child, binder) = (path[i], path[i - 1].node);
            let kind = binder.kind();
            let params = syntax.params.contains(&kind);
            if matches(syntax.binds, kind, child.field) || params {
                let loop_bind = syntax.loop_binds.contains(&kind);
                let reads_too = syntax.read_writes.contains(&kind)
                    || binder
                        .child_by_field_name("operator")
                        .is_some_and(|op| !matches!(text(op, self.source), "=" | ":="));
                if reads_too {
                    self.push_var(stmt, name, false, ident);
                    vars.reads
                        .entry(name.to_owned())
                        .or_default()
                        .push(read.clone());
                }
                let pos = if loop_bind || params {
                    child.node.end_byte()
                } else {
                    binder.end_byte()
                };
                self.push_var(stmt, name, true, ident);
                vars.writes.entry(name.to_owned()).or_default().push(Occ {
                    pos,
                    kills: !loop_bind,
                    ..read
                });
                return;
            }
            if syntax.patterns.contains(&kind) && !matches(syntax.pattern_reads, kind, child.field)
            {
                i -= 1;
                continue;
            }
            break;
        }
        self.push_var(stmt, name, false, ident);
        vars.reads.entry(name.to_owned()).or_default().push(read);
    }
}

/// Def-use links of one scope; reads of names the scope never binds link
/// to `outer`'s writes of them.
fn link(vars: &ScopeVars, outer: Option<&ScopeVars>, out: &mut Vec<DefUse>) {
    for (name, reads) in &vars.reads {
        let Some(writes) = vars.writes.get(name) else {
            if let Some(outer_writes) = outer.and_then(|o| o.writes.get(name)) {
                for r in reads {
                    for w in outer_writes {
                        out.push(DefUse {
                            def: w.stmt,
                            use_: r.stmt,
                            name: name.clone(),
                        });
                    }
                }
            }
            continue;
        };
        for r in reads {
            let holds = |w: &Occ| w.kills && w.block.0 <= r.pos && r.pos < w.block.1;
            // The last unconditional rebinding before the read.
            let last_kill = writes
                .iter()
                .filter(|w| w.pos <= r.pos && holds(w))
                .map(|w| w.pos)
                .max();
            for w in writes {
                let forward = w.pos <= r.pos && last_kill.is_none_or(|k| w.pos >= k);
                let back_edge = r.outer_loop.is_some_and(|(start, end)| {
                    w.pos > r.pos
                        && w.pos <= end
                        && !writes
                            .iter()
                            .any(|k| k.pos >= start && k.pos <= r.pos && holds(k))
                });
                if forward || back_edge {
                    out.push(DefUse {
                        def: w.stmt,
                        use_: r.stmt,
                        name: name.clone(),
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// Every file of the polyglot fixture: no variable occurrence is
    /// recorded twice at one place (the table's key relies on it).
    #[test]
    fn each_occurrence_is_recorded_once() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/polyglot");
        let mut checked = 0;
        for (lang, rel, path) in crate::index::walk_sources(&root) {
            let source = std::fs::read(&path).unwrap();
            let queries = crate::extract::Queries::get(lang).unwrap();
            let mut parser = tree_sitter::Parser::new();
            let tree = crate::extract::parse(&mut parser, lang, &source).unwrap();
            let options = crate::extract::Options { flow: true };
            let facts = crate::extract::extract(queries, &tree, &rel, &source, options);
            let mut seen = std::collections::HashSet::new();
            for v in &facts.vars {
                assert!(
                    seen.insert((v.stmt, v.line, v.col, v.write)),
                    "{rel}: {v:?} twice"
                );
            }
            checked += facts.vars.len();
        }
        assert!(checked > 100, "{checked}");
    }
}
