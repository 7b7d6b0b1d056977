//! Statements and def-use links, one feature in three parts: the
//! questions asked of them (here, answered from each file's stored flow and
//! its own text), their stored form (`codec`), and their computation on a
//! file's first question (`fill`).

pub(crate) mod codec;
pub(crate) mod fill;

use std::collections::BTreeMap;

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::extract::squeeze;
use crate::index::{git_blob_id, Index};
use crate::query::{Bounded, LineText, StatementInfo, UseSite, VarLinks, MAX_ROWS};
use codec::Flow;
use fill::Needed;

/// Longest statement text shown.
const STATEMENT_CHARS: usize = 200;

/// Links listed per statement and direction at most.
const MAX_LINKS: usize = 200;

/// A file's statements, the variables each reads and writes, and the
/// def-use links between them: everything the index knows of the file's
/// data flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FileFlow {
    /// The file.
    pub file: String,
    /// Statements, in the order the analysis met them (a function's
    /// signature first, then its body, nested statements after the one
    /// holding them).
    pub statements: Vec<FlowStatement>,
    /// Every read and write of a variable.
    pub vars: Vec<FlowVar>,
    /// The value of a variable written by one statement may be read by
    /// another; sorted by `def`, then `use_`.
    pub links: Vec<FlowLink>,
}

/// A statement of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FlowStatement {
    /// First line, 1-based.
    pub line: u32,
    /// Last line.
    pub end_line: u32,
    /// The syntax node kind (`signature` for a function's parameters).
    pub kind: String,
    /// The text, whitespace collapsed, cut to 200 characters.
    pub text: String,
    /// The enclosing function's id; `None` at top level.
    pub scope: Option<String>,
}

/// A variable read or written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FlowVar {
    /// Index of its statement in [`FileFlow::statements`].
    pub statement: usize,
    /// The variable.
    pub name: String,
    /// A write (assignment target, parameter, loop variable, binding,
    /// import); otherwise a read.
    pub write: bool,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
}

/// A def-use link: statement `def` writes `name`, and statement `use_`
/// may read that value (indexes into [`FileFlow::statements`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FlowLink {
    /// The writing statement.
    pub def: usize,
    /// The reading statement.
    pub use_: usize,
    /// The variable.
    pub name: String,
}

/// A read or write of a variable, with its statement's scope and text.
pub(crate) struct VarSite {
    pub(crate) line: u32,
    pub(crate) col: u32,
    pub(crate) write: bool,
    pub(crate) scope: Option<String>,
    pub(crate) text: String,
}

/// One file's stored flow with what shows it: its symbols' ids and
/// signatures (by the index the flow names them with) and its text.
struct Loaded {
    flow: Flow,
    /// `(id, signature)` of the file's symbols, in the order written.
    symbols: Vec<(String, String)>,
    source: Vec<u8>,
}

impl Loaded {
    fn name(&self, i: u32) -> &str {
        &self.flow.names[i as usize]
    }

    fn scope(&self, stmt: u32) -> Option<String> {
        let scope = self.flow.statements[stmt as usize].scope?;
        self.symbols.get(scope as usize).map(|(id, _)| id.clone())
    }

    fn text(&self, stmt: u32) -> String {
        let s = &self.flow.statements[stmt as usize];
        if self.name(s.kind) == "signature" {
            if let Some((_, signature)) = s.scope.and_then(|i| self.symbols.get(i as usize)) {
                return signature.clone();
            }
        }
        let bytes = self.source.get(s.start..s.end).unwrap_or_default();
        squeeze(&String::from_utf8_lossy(bytes), STATEMENT_CHARS)
    }

    fn statement(&self, stmt: u32) -> FlowStatement {
        let s = &self.flow.statements[stmt as usize];
        FlowStatement {
            line: s.line,
            end_line: s.end_line,
            kind: self.name(s.kind).to_owned(),
            text: self.text(stmt),
            scope: self.scope(stmt),
        }
    }

    /// The variables `stmt` reads (`reads`) or writes, each with the lines
    /// and texts at the other end of its links.
    fn links(&self, stmt: u32, reads: bool) -> Vec<VarLinks> {
        let mut by_name: BTreeMap<&str, Vec<LineText>> = BTreeMap::new();
        for l in &self.flow.links {
            let (this, other) = if reads {
                (l.use_, l.def)
            } else {
                (l.def, l.use_)
            };
            if this == stmt {
                by_name
                    .entry(self.name(l.name))
                    .or_default()
                    .push(LineText {
                        line: self.flow.statements[other as usize].line,
                        text: self.text(other),
                    });
            }
        }
        let mut left = MAX_LINKS;
        let mut out = Vec::new();
        for (name, mut links) in by_name {
            if left == 0 {
                break;
            }
            links.sort_by_key(|l| l.line);
            links.truncate(left);
            left -= links.len();
            out.push(VarLinks {
                name: name.to_owned(),
                links,
            });
        }
        out
    }
}

impl Index {
    /// The statements, variable occurrences and def-use links of `file`
    /// (a path relative to the indexed root). Empty for a file without
    /// statements or an index built without flow; an error when the file
    /// changed since it was indexed (its text would not match the lines).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// std::fs::write(dir.path().join("m.py"), "x = 1\nprint(x)\n").unwrap();
    /// let index = forq_graph::Index::open_current(dir.path()).unwrap();
    /// let flow = index.flow("m.py").unwrap();
    /// let link = &flow.links[0];
    /// assert_eq!(flow.statements[link.def].text, "x = 1");
    /// assert_eq!(flow.statements[link.use_].text, "print(x)");
    /// ```
    pub fn flow(&self, file: &str) -> Result<FileFlow> {
        self.check_complete()?;
        self.known_file(file)?;
        let mut out = FileFlow {
            file: file.to_owned(),
            statements: Vec::new(),
            vars: Vec::new(),
            links: Vec::new(),
        };
        let Some(loaded) = self.load_flow(file)? else {
            return Ok(out);
        };
        out.statements = (0..loaded.flow.statements.len() as u32)
            .map(|i| loaded.statement(i))
            .collect();
        out.vars = loaded
            .flow
            .vars
            .iter()
            .map(|v| FlowVar {
                statement: v.stmt as usize,
                name: loaded.name(v.name).to_owned(),
                write: v.write,
                line: v.line,
                col: v.col,
            })
            .collect();
        out.links = loaded
            .flow
            .links
            .iter()
            .map(|l| FlowLink {
                def: l.def as usize,
                use_: l.use_ as usize,
                name: loaded.name(l.name).to_owned(),
            })
            .collect();
        Ok(out)
    }

    /// Statements within `radius` lines of `file:line`, with their def-use
    /// links: what defined the values used there, and what uses the values
    /// defined there.
    pub fn statements(&self, file: &str, line: u32, radius: u32) -> Result<Bounded<StatementInfo>> {
        self.check_complete()?;
        self.known_file(file)?;
        let Some(loaded) = self.load_flow(file)? else {
            return Ok(Bounded::new(Vec::new(), false, "lower --radius"));
        };
        let (lo, hi) = (line.saturating_sub(radius), line + radius);
        let mut near: Vec<u32> = (0..loaded.flow.statements.len() as u32)
            .filter(|&i| {
                let s = &loaded.flow.statements[i as usize];
                s.line <= hi && s.end_line >= lo
            })
            .collect();
        near.sort_by_key(|&i| (loaded.flow.statements[i as usize].line, i));
        // A compound statement that encloses the window (a whole function
        // body) says little: keep statements that start in the window, and
        // the innermost one holding `line`.
        let innermost = near
            .iter()
            .copied()
            .filter(|&i| {
                let s = &loaded.flow.statements[i as usize];
                s.line <= line && s.end_line >= line
            })
            .min_by_key(|&i| {
                let s = &loaded.flow.statements[i as usize];
                s.end_line - s.line
            });
        let out = near
            .into_iter()
            .filter(|&i| loaded.flow.statements[i as usize].line >= lo || Some(i) == innermost)
            .map(|i| {
                let s = loaded.statement(i);
                StatementInfo {
                    file: file.to_owned(),
                    line: s.line,
                    end_line: s.end_line,
                    kind: s.kind,
                    text: s.text,
                    scope: s.scope,
                    reads: loaded.links(i, true),
                    writes: loaded.links(i, false),
                }
            })
            .collect();
        Ok(Bounded::new(out, false, "lower --radius"))
    }

    /// Statements that read `name`; with `file` (and `line`), those in the
    /// function holding that line come first, then the rest of the file,
    /// then other files.
    pub fn uses(
        &self,
        name: &str,
        file: Option<&str>,
        line: Option<u32>,
    ) -> Result<Bounded<UseSite>> {
        self.check_complete()?;
        if let Some(f) = file {
            self.known_file(f)?;
        }
        let db = self.store.db();
        let scope: Option<String> = match (file, line) {
            (Some(f), Some(l)) => self
                .store
                .conn
                .query_row(
                    "SELECT id FROM symbols WHERE file = ?1 AND line <= ?2 AND end_line >= ?2
                     AND kind IN ('function', 'method', 'test') ORDER BY line DESC LIMIT 1",
                    params![f, l],
                    |r| r.get(0),
                )
                .optional()
                .map_err(&db)?,
            _ => None,
        };
        self.fill_flow(Needed::Mentioning(name))?;
        let files = self.files_with_var(name, true, file)?;
        let mut out: Vec<UseSite> = Vec::new();
        for f in files {
            if out.len() > MAX_ROWS {
                break;
            }
            let Some(loaded) = self.load_flow(&f)? else {
                continue;
            };
            let mut here: Vec<UseSite> = loaded
                .flow
                .vars
                .iter()
                .filter(|v| !v.write && loaded.name(v.name) == name)
                .map(|v| {
                    let scope_of = loaded.scope(v.stmt);
                    UseSite {
                        file: f.clone(),
                        line: v.line,
                        col: v.col,
                        text: loaded.text(v.stmt),
                        same_function: scope.is_some() && scope_of == scope,
                        scope: scope_of,
                    }
                })
                .collect();
            here.sort_by_key(|u| (!u.same_function, u.line, u.col));
            out.extend(here);
        }
        Ok(Bounded::new(
            out,
            false,
            "pass --file and --line to rank, or a rarer name",
        ))
    }

    /// Files whose flow holds variable `name` (only those that read it,
    /// with `reads`), `first` before the others, then by path.
    pub(crate) fn files_with_var(
        &self,
        name: &str,
        reads: bool,
        first: Option<&str>,
    ) -> Result<Vec<String>> {
        let db = self.store.db();
        let mut stmt = self
            .store
            .conn
            .prepare_cached(
                "SELECT f.path FROM flow_name n JOIN files f ON f.fid = n.fid
                 WHERE n.name = ?1 AND (n.reads OR NOT ?2)
                 ORDER BY (f.path IS NOT ?3), f.path",
            )
            .map_err(&db)?;
        let rows = stmt
            .query_map(params![name, reads, first], |r| r.get(0))
            .map_err(&db)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db)
    }

    /// Variable occurrences of `name` in `file`.
    pub(crate) fn var_occurrences(&self, file: &str, name: &str) -> Result<Vec<VarSite>> {
        let Some(loaded) = self.load_flow(file)? else {
            return Ok(Vec::new());
        };
        Ok(loaded
            .flow
            .vars
            .iter()
            .filter(|v| loaded.name(v.name) == name)
            .map(|v| VarSite {
                line: v.line,
                col: v.col,
                write: v.write,
                scope: loaded.scope(v.stmt),
                text: loaded.text(v.stmt),
            })
            .collect())
    }

    /// The stored flow of `file` and what shows it; `None` when it has
    /// none.
    fn load_flow(&self, file: &str) -> Result<Option<Loaded>> {
        self.fill_flow(Needed::File(file))?;
        let db = self.store.db();
        let conn = &self.store.conn;
        let row: Option<(i64, String, Vec<u8>)> = conn
            .prepare_cached(
                "SELECT f.fid, f.hash, l.data FROM files f JOIN flow l ON l.fid = f.fid
                 WHERE f.path = ?1 AND l.statements > 0",
            )
            .map_err(&db)?
            .query_row([file], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()
            .map_err(&db)?;
        let Some((fid, hash, data)) = row else {
            return Ok(None);
        };
        let flow = codec::decode(&data).ok_or_else(|| Error::Db {
            path: self.store.path().to_path_buf(),
            source: format!(
                "the stored flow of {file} is unreadable; delete the database and index again"
            )
            .into(),
        })?;
        let path = self.root.join(file);
        let source = std::fs::read(&path).map_err(|source| Error::Io {
            op: "read",
            path: path.clone(),
            source,
        })?;
        if git_blob_id(&source) != hash {
            return Err(Error::Stale {
                file: file.to_owned(),
            });
        }
        let symbols = conn
            .prepare_cached("SELECT id, signature FROM sym WHERE fid = ?1 ORDER BY sid")
            .map_err(&db)?
            .query_map([fid], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(&db)?
            .collect::<rusqlite::Result<_>>()
            .map_err(&db)?;
        Ok(Some(Loaded {
            flow,
            symbols,
            source,
        }))
    }
}
