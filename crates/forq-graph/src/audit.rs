//! Read-only findings over the graph: definitions without docs,
//! functions whose cyclomatic complexity passes a bound, call sites that
//! break the pattern of their callee's other call sites, and definitions
//! nothing in the repository uses.

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;

use serde::Serialize;

use crate::store::{row_symbol, SYMBOL_COLUMNS};
use crate::{Index, Lang, Result, Symbol};

/// What to look for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuditQuery {
    /// Public definitions without docs ([`Index::undocumented`]).
    Undocumented,
    /// Functions and methods of cyclomatic complexity above this.
    Complexity(u32),
    /// Call sites that break a pattern held by 75% of their callee's
    /// call sites ([`Index::call_patterns`]).
    Suspected,
    /// Definitions no reference, import or read in the repository names
    /// (tests, `main`, dunder methods and `_private` ones left out).
    Unused,
}

impl AuditQuery {
    /// Every query, complexity above 10.
    pub const ALL: [AuditQuery; 4] = [
        AuditQuery::Undocumented,
        AuditQuery::Complexity(10),
        AuditQuery::Suspected,
        AuditQuery::Unused,
    ];
}

impl FromStr for AuditQuery {
    type Err = String;

    /// `undocumented`, `complexity` (above 10) or `complexity>N`,
    /// `suspected`, `unused`.
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        match s {
            "undocumented" => return Ok(AuditQuery::Undocumented),
            "complexity" => return Ok(AuditQuery::Complexity(10)),
            "suspected" => return Ok(AuditQuery::Suspected),
            "unused" => return Ok(AuditQuery::Unused),
            _ => {}
        }
        s.strip_prefix("complexity>")
            .and_then(|n| n.trim().parse().ok())
            .map(AuditQuery::Complexity)
            .ok_or_else(|| {
                format!("unknown audit query {s:?}: use undocumented, complexity>N, suspected or unused")
            })
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct AuditFinding {
    /// `undocumented`, `complexity`, `suspected` or `unused`.
    pub kind: String,
    /// The definition it is about (for `suspected`, the callee).
    pub symbol: String,
    /// The file.
    pub file: String,
    /// The line.
    pub line: u32,
    /// What was found, in words, with the evidence.
    pub message: String,
}

/// Callees whose call sites are read for `suspected`, most called first.
const MAX_CALLEES: i64 = 200;

impl Index {
    /// The findings of `queries`, at most `limit` of each, by file and
    /// line within a query.
    pub fn audit(&self, queries: &[AuditQuery], limit: usize) -> Result<Vec<AuditFinding>> {
        self.check_complete()?;
        let mut out = Vec::new();
        for q in queries {
            let mut found = match *q {
                AuditQuery::Undocumented => self
                    .undocumented(limit)?
                    .into_iter()
                    .map(|s| {
                        finding(
                            "undocumented",
                            &s,
                            format!("{} {} has no docs", s.kind, s.qualname),
                        )
                    })
                    .collect(),
                AuditQuery::Complexity(bound) => self.complex(bound)?,
                AuditQuery::Suspected => self.suspected_sites()?,
                AuditQuery::Unused => self.unused()?,
            };
            found.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
            found.truncate(limit);
            out.extend(found);
        }
        Ok(out)
    }

    fn symbols_sql(&self, sql: &str) -> Result<Vec<Symbol>> {
        let db = self.store.db();
        let mut stmt = self.store.conn.prepare(sql).map_err(&db)?;
        let rows = stmt
            .query_map([], row_symbol)
            .map_err(&db)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(&db);
        rows
    }

    fn complex(&self, bound: u32) -> Result<Vec<AuditFinding>> {
        let functions = self.symbols_sql(&format!(
            "SELECT {SYMBOL_COLUMNS} FROM symbols WHERE kind IN ('function', 'method') AND NOT test ORDER BY file, line"
        ))?;
        let mut by_file: BTreeMap<&str, Vec<&Symbol>> = BTreeMap::new();
        for f in &functions {
            by_file.entry(&f.file).or_default().push(f);
        }
        let mut out = Vec::new();
        for (file, defs) in by_file {
            let Some(lang) = Lang::of_path(Path::new(file)) else {
                continue;
            };
            let Ok(text) = std::fs::read_to_string(self.root().join(file)) else {
                continue;
            };
            let mut parser = tree_sitter::Parser::new();
            if parser.set_language(&lang.grammar()).is_err() {
                continue;
            }
            let Some(tree) = parser.parse(&text, None) else {
                continue;
            };
            for def in defs {
                let Some(node) = node_spanning(tree.root_node(), def.line - 1, def.end_line - 1)
                else {
                    continue;
                };
                let n = 1 + decisions(node, &text, true);
                if n > bound {
                    out.push(finding(
                        "complexity",
                        def,
                        format!(
                            "{} has cyclomatic complexity {n} (over {bound})",
                            def.qualname
                        ),
                    ));
                }
            }
        }
        Ok(out)
    }

    fn suspected_sites(&self) -> Result<Vec<AuditFinding>> {
        let db = self.store.db();
        let mut stmt = self
            .store
            .conn
            .prepare(
                "SELECT dst FROM edges WHERE kind = 'calls' AND confidence != 'ambiguous'
                 GROUP BY dst HAVING COUNT(*) >= 3 ORDER BY COUNT(*) DESC LIMIT ?1",
            )
            .map_err(&db)?;
        let callees: Vec<String> = stmt
            .query_map([MAX_CALLEES], |r| r.get(0))
            .map_err(&db)?
            .collect::<rusqlite::Result<_>>()
            .map_err(&db)?;
        let mut out = Vec::new();
        for id in callees {
            let Ok(p) = self.call_patterns(&id) else {
                continue;
            };
            for s in p.suspected {
                out.push(AuditFinding {
                    kind: "suspected".to_owned(),
                    symbol: id.clone(),
                    file: s.file,
                    line: s.line,
                    message: format!("a call of {id}: {}", s.why),
                });
            }
        }
        Ok(out)
    }

    fn unused(&self) -> Result<Vec<AuditFinding>> {
        // A definition read as a variable anywhere is used: every file's
        // reads are needed.
        self.fill_flow(crate::flow::fill::Needed::All)?;
        crate::store::Store::ensure_lookup_indexes(&self.store.conn).map_err(self.store.db())?;
        let unused = self.symbols_sql(&format!(
            "SELECT {SYMBOL_COLUMNS} FROM symbols s
             WHERE NOT s.test AND s.kind IN ('function', 'method', 'class', 'struct', 'enum', 'trait', 'interface')
               AND s.name NOT LIKE '\\_%' ESCAPE '\\' AND s.name != 'main'
               AND NOT EXISTS (SELECT 1 FROM edges e WHERE e.dst = s.id)
               AND NOT EXISTS (SELECT 1 FROM refs r WHERE r.name = s.name)
               AND NOT EXISTS (SELECT 1 FROM imports i WHERE i.name = s.name OR i.local = s.name)
               AND NOT EXISTS (SELECT 1 FROM flow_name v WHERE v.name = s.name AND v.reads)
             ORDER BY s.file, s.line"
        ))?;
        Ok(unused
            .iter()
            .map(|s| {
                finding(
                    "unused",
                    s,
                    format!(
                        "nothing in the repository calls, imports or reads {} {}",
                        s.kind, s.qualname
                    ),
                )
            })
            .collect())
    }
}

fn finding(kind: &str, s: &Symbol, message: String) -> AuditFinding {
    AuditFinding {
        kind: kind.to_owned(),
        symbol: s.id.clone(),
        file: s.file.clone(),
        line: s.line,
        message,
    }
}

/// The outermost node that starts on `first` and ends on `last` (0-based
/// rows): a definition's node.
fn node_spanning(
    node: tree_sitter::Node<'_>,
    first: u32,
    last: u32,
) -> Option<tree_sitter::Node<'_>> {
    let (start, end) = (
        node.start_position().row as u32,
        node.end_position().row as u32,
    );
    if start == first && end == last && node.kind() != "module" && node.kind() != "source_file" {
        return Some(node);
    }
    if first < start || last > end {
        return None;
    }
    let mut cursor = node.walk();
    let children: Vec<_> = node.children(&mut cursor).collect();
    children
        .into_iter()
        .find_map(|c| node_spanning(c, first, last))
}

/// Decision points under `node`: branches, loops, handlers, conditional
/// expressions, match arms, and short-circuit operators; nested
/// definitions count for themselves, not here.
fn decisions(node: tree_sitter::Node<'_>, text: &str, top: bool) -> u32 {
    let kind = node.kind();
    if !top
        && matches!(
            kind,
            "function_definition"
                | "function_declaration"
                | "function_item"
                | "method_definition"
                | "class_definition"
        )
    {
        return 0;
    }
    let own = match kind {
        "if_statement"
        | "elif_clause"
        | "if_expression"
        | "for_statement"
        | "for_in_statement"
        | "for_expression"
        | "while_statement"
        | "while_expression"
        | "do_statement"
        | "loop_expression"
        | "except_clause"
        | "catch_clause"
        | "conditional_expression"
        | "ternary_expression"
        | "case_clause"
        | "switch_case"
        | "expression_case"
        | "match_arm"
        | "case_statement"
        | "boolean_operator" => 1,
        "binary_expression" => node.child_by_field_name("operator").map_or(0, |op| {
            u32::from(matches!(&text[op.byte_range()], "&&" | "||"))
        }),
        _ => 0,
    };
    let mut cursor = node.walk();
    let children: u32 = node
        .children(&mut cursor)
        .map(|c| decisions(c, text, false))
        .sum();
    own + children
}
