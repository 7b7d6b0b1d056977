//! The questions an agent asks of the graph. Every answer is bounded: a
//! row cap, a truncation flag, and a hint saying how to narrow.

use std::collections::{HashMap, HashSet};

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::index::Index;
use crate::store::{row_symbol, Symbol, SYMBOL_COLUMNS};

/// Edges followed from one node at most, per step of a walk.
pub const MAX_FANOUT: usize = 64;
/// Definitions a `path` search visits at most.
pub const MAX_PATH_NODES: usize = 2000;
/// Rows an answer holds at most.
pub const MAX_ROWS: usize = 200;

/// A bounded answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Bounded<T> {
    /// The rows, best first.
    pub items: Vec<T>,
    /// Whether rows were left out (by the row cap or a fan-out cap).
    pub truncated: bool,
    /// How to narrow the question when truncated.
    pub hint: Option<String>,
}

impl<T> Bounded<T> {
    pub(crate) fn new(mut items: Vec<T>, capped: bool, hint: &str) -> Bounded<T> {
        let truncated = capped || items.len() > MAX_ROWS;
        items.truncate(MAX_ROWS);
        Bounded {
            items,
            truncated,
            hint: truncated.then(|| hint.to_owned()),
        }
    }
}

/// How sure the graph is of an edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
#[non_exhaustive]
pub enum Confidence {
    /// Resolved through scope, receiver or import.
    Exact,
    /// Only one definition in the repository has the name.
    Unique,
    /// `candidates` definitions have it; an edge goes to each, none is
    /// picked silently.
    Ambiguous {
        /// How many.
        candidates: usize,
    },
}

impl Confidence {
    fn from_row(confidence: &str, candidates: usize) -> Confidence {
        match confidence {
            "exact" => Confidence::Exact,
            "unique" => Confidence::Unique,
            _ => Confidence::Ambiguous { candidates },
        }
    }
}

/// An edge of the graph: a call, an inheritance or an import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CallEdge {
    /// The calling definition's id (a file path for top-level code).
    pub caller: String,
    /// The called definition's id.
    pub callee: String,
    /// The file of the call.
    pub file: String,
    /// Its 1-based line.
    pub line: u32,
    /// How sure the edge is.
    pub confidence: Confidence,
    /// 1 for a direct call, 2 for a call of a call, ...
    pub depth: u32,
}

/// Something that depends on a symbol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Dependent {
    /// Its id (a file path for a file's top-level code or an import).
    pub id: String,
    /// `calls`, `inherits` or `imports`: how it depends on the one before.
    pub via: String,
    /// Steps from the symbol asked about.
    pub depth: u32,
    /// The weakest confidence along the way.
    pub confidence: Confidence,
}

/// A test that reaches a symbol through calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Covering {
    /// The test's id.
    pub test: String,
    /// Its file.
    pub file: String,
    /// Its first line.
    pub line: u32,
    /// Calls from the test to the symbol.
    pub depth: u32,
    /// The weakest confidence along the way.
    pub confidence: Confidence,
}

/// A statement with its def-use links.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct StatementInfo {
    /// The file.
    pub file: String,
    /// First line, 1-based.
    pub line: u32,
    /// Last line.
    pub end_line: u32,
    /// The syntax node kind (`signature` for a function's parameters).
    pub kind: String,
    /// The text, whitespace collapsed, cut to 200 characters.
    pub text: String,
    /// The enclosing function's id.
    pub scope: Option<String>,
    /// Variables it reads, each with the statements that may have defined
    /// the value read.
    pub reads: Vec<VarLinks>,
    /// Variables it writes, each with the statements that may read the
    /// value written.
    pub writes: Vec<VarLinks>,
}

/// A variable and the lines at the other end of its def-use links.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct VarLinks {
    /// The variable.
    pub name: String,
    /// Lines of the linked statements, with their text.
    pub links: Vec<LineText>,
}

/// A line and its statement's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct LineText {
    /// 1-based line.
    pub line: u32,
    /// The statement's text.
    pub text: String,
}

/// A statement that reads a name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct UseSite {
    /// The file.
    pub file: String,
    /// The line of the read.
    pub line: u32,
    /// The column, 1-based.
    pub col: u32,
    /// The statement's text.
    pub text: String,
    /// The enclosing function's id.
    pub scope: Option<String>,
    /// In the function holding the `--file`/`--line` asked about.
    pub same_function: bool,
}

/// What a walk step yields: the far node, the edge kind, confidence.
struct Step {
    far: String,
    edge: CallEdge,
    via: String,
}

fn visited<K, V>(a: &HashMap<K, V>, b: &HashMap<K, V>) -> usize {
    a.len() + b.len()
}

/// The names of the languages of a family.
fn family_langs(family: &str) -> impl Iterator<Item = &'static str> + '_ {
    crate::lang::Lang::ALL
        .into_iter()
        .filter(move |l| l.family() == family)
        .map(crate::lang::Lang::name)
}

/// `'a', 'b'` for an SQL `IN (...)` of the crate's own constant names.
fn sql_list<'a>(items: impl Iterator<Item = &'a str>) -> String {
    items
        .map(|i| format!("'{i}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn family_of_lang(lang: &str) -> &'static str {
    crate::lang::Lang::ALL
        .into_iter()
        .find(|l| l.name() == lang)
        .map_or("", crate::lang::Lang::family)
}

fn weakest(a: Confidence, b: Confidence) -> Confidence {
    let rank = |c: &Confidence| match c {
        Confidence::Exact => 0,
        Confidence::Unique => 1,
        Confidence::Ambiguous { candidates } => 1 + *candidates,
    };
    if rank(&a) >= rank(&b) {
        a
    } else {
        b
    }
}

impl Index {
    /// The one symbol a user's argument names: a descriptor id, a
    /// qualified name, a bare name, or `file:line` (the innermost
    /// definition there). Several matches are refused with the candidates.
    pub fn find_symbol(&self, query: &str) -> Result<Symbol> {
        if let Some(s) = self.store.symbol(query)? {
            return Ok(s);
        }
        if let Some((file, line)) = query
            .rsplit_once(':')
            .and_then(|(f, l)| Some((f, l.parse::<u32>().ok()?)))
        {
            let sql = format!(
                "SELECT {SYMBOL_COLUMNS} FROM symbols WHERE file = ?1 AND line <= ?2 AND end_line >= ?2
                 ORDER BY line DESC, end_line ASC LIMIT 1"
            );
            let found = self
                .store
                .conn
                .prepare_cached(&sql)
                .and_then(|mut s| {
                    s.query_map(params![file, line], row_symbol)?
                        .collect::<rusqlite::Result<Vec<_>>>()
                })
                .map_err(self.store.db())?;
            return found.into_iter().next().ok_or_else(|| Error::NoSuchSymbol {
                query: query.to_owned(),
            });
        }
        // A dotted name is a qualified name; a bare one matches every
        // definition of that name, wherever it is nested.
        let column = if query.contains('.') {
            "qualname = ?1"
        } else {
            "name = ?1"
        };
        let mut found = self.store.symbols_where(column, query)?;
        match found.len() {
            0 => Err(Error::NoSuchSymbol {
                query: query.to_owned(),
            }),
            1 => Ok(found.remove(0)),
            _ => Err(Error::AmbiguousSymbol {
                query: query.to_owned(),
                candidates: found.into_iter().take(20).map(|s| s.id).collect(),
            }),
        }
    }

    /// Edges at `node`: leaving it (`column` = `src`) or arriving
    /// (`dst`). A by-name ambiguous row stands for every candidate: leaving,
    /// it is expanded to them; arriving, the rows that name this symbol's
    /// name (in its language family) count.
    fn edges(&self, column: &str, node: &str, kinds: &str) -> Result<Vec<Step>> {
        let db = self.store.db();
        let sql = format!(
            "SELECT src, dst, file, line, confidence, candidates, kind FROM edges
             WHERE {column} = ?1 AND kind IN ({kinds}) ORDER BY (confidence = 'ambiguous'), file, line, src, dst"
        );
        let mut stmt = self.store.conn.prepare_cached(&sql).map_err(&db)?;
        let read = |r: &rusqlite::Row<'_>| -> rusqlite::Result<(String, String, String, u32, String, i64, String)> {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?))
        };
        let mut rows: Vec<_> = stmt
            .query_map([node], read)
            .map_err(&db)?
            .collect::<rusqlite::Result<_>>()
            .map_err(&db)?;
        if column == "dst" {
            if let Some(sym) = self.store.symbol(node)? {
                let marker = match sym.kind.as_str() {
                    "method" => Some('m'),
                    k if crate::resolve::marker_kinds('f').contains(&k) => Some('f'),
                    _ => None,
                };
                if let Some(m) = marker {
                    let family = self.family_of(&sym.file)?;
                    let key = format!("{}{m}:{}", crate::resolve::AMBIGUOUS_PREFIX, sym.name);
                    // A popular name can have tens of thousands of by-name
                    // callers: read one more than a walk keeps (so it knows
                    // it was cut), in the symbol's language family only.
                    let langs = sql_list(family_langs(family));
                    let sql = format!(
                        "SELECT e.src, e.dst, e.file, e.line, e.confidence, e.candidates, e.kind
                         FROM edges e JOIN files f ON f.path = e.file
                         WHERE e.dst = ?1 AND e.kind IN ({kinds}) AND f.lang IN ({})
                         ORDER BY e.file, e.line, e.src LIMIT {}",
                        langs,
                        MAX_FANOUT + 1
                    );
                    let mut by_name = self.store.conn.prepare_cached(&sql).map_err(&db)?;
                    for mut row in by_name
                        .query_map([&key], read)
                        .map_err(&db)?
                        .collect::<rusqlite::Result<Vec<_>>>()
                        .map_err(&db)?
                    {
                        row.1 = node.to_owned();
                        rows.push(row);
                    }
                }
            }
        }
        let mut out = Vec::new();
        for (src, dst, file, line, conf, candidates, via) in rows {
            let confidence = Confidence::from_row(&conf, candidates as usize);
            let targets = match dst.strip_prefix(crate::resolve::AMBIGUOUS_PREFIX) {
                Some(marker) if column == "src" => self.candidates(marker, &file)?,
                _ => vec![dst],
            };
            for dst in targets {
                out.push(Step {
                    far: if column == "src" {
                        dst.clone()
                    } else {
                        src.clone()
                    },
                    edge: CallEdge {
                        caller: src.clone(),
                        callee: dst,
                        file: file.clone(),
                        line,
                        confidence,
                        depth: 0,
                    },
                    via: via.clone(),
                });
            }
        }
        Ok(out)
    }

    /// The definitions a by-name marker (`m:name`, `f:name`) stands for,
    /// seen from `file`.
    fn candidates(&self, marker: &str, file: &str) -> Result<Vec<String>> {
        let Some((kind, name)) = marker.split_once(':') else {
            return Ok(Vec::new());
        };
        let kinds = sql_list(
            crate::resolve::marker_kinds(kind.chars().next().unwrap_or('f'))
                .iter()
                .copied(),
        );
        let langs = sql_list(family_langs(self.family_of(file)?));
        // At most one more than a walk follows from one node.
        let sql = format!(
            "SELECT s.id FROM symbols s JOIN files f ON f.path = s.file
             WHERE s.name = ?1 AND s.kind IN ({kinds}) AND f.lang IN ({langs})
             ORDER BY s.id LIMIT {}",
            MAX_FANOUT + 1
        );
        let db = self.store.db();
        let mut stmt = self.store.conn.prepare_cached(&sql).map_err(&db)?;
        let rows = stmt.query_map([name], |r| r.get(0)).map_err(&db)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db)
    }

    fn family_of(&self, file: &str) -> Result<&'static str> {
        let lang: Option<String> = self
            .store
            .conn
            .prepare_cached("SELECT lang FROM files WHERE path = ?1")
            .and_then(|mut s| s.query_row([file], |r| r.get(0)).optional())
            .map_err(self.store.db())?;
        Ok(lang.as_deref().map_or("", family_of_lang))
    }

    /// Breadth-first walk; each node expanded once, at most `MAX_FANOUT`
    /// edges per node. Returns the steps with their depth, and whether a
    /// cap cut anything.
    fn walk(
        &self,
        start: &str,
        depth: u32,
        step: impl Fn(&str) -> Result<Vec<Step>>,
    ) -> Result<(Vec<(u32, Step)>, bool)> {
        let mut out = Vec::new();
        let mut capped = false;
        let mut seen = HashSet::from([start.to_owned()]);
        let mut frontier = vec![start.to_owned()];
        for level in 1..=depth {
            let mut next = Vec::new();
            for node in &frontier {
                let steps = step(node)?;
                capped |= steps.len() > MAX_FANOUT;
                for mut s in steps.into_iter().take(MAX_FANOUT) {
                    s.edge.depth = level;
                    if seen.insert(s.far.clone()) {
                        next.push(s.far.clone());
                    }
                    out.push((level, s));
                }
                if out.len() > MAX_ROWS {
                    return Ok((out, true));
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        Ok((out, capped))
    }

    /// What `id` calls, breadth first to `depth` levels, with the
    /// confidence of each edge.
    pub fn callees(&self, id: &str, depth: u32) -> Result<Bounded<CallEdge>> {
        self.check_complete()?;
        let (steps, capped) = self.walk(id, depth, |n| self.edges("src", n, "'calls'"))?;
        Ok(Bounded::new(
            steps.into_iter().map(|(_, s)| s.edge).collect(),
            capped,
            "lower --depth",
        ))
    }

    /// What calls `id`, breadth first to `depth` levels.
    pub fn callers(&self, id: &str, depth: u32) -> Result<Bounded<CallEdge>> {
        self.check_complete()?;
        let (steps, capped) = self.walk(id, depth, |n| self.edges("dst", n, "'calls'"))?;
        Ok(Bounded::new(
            steps.into_iter().map(|(_, s)| s.edge).collect(),
            capped,
            "lower --depth",
        ))
    }

    /// The shortest chain of calls from `from` to `to`, at most
    /// `max_depth` calls long; `None` when there is none (or none within
    /// `MAX_PATH_NODES` visited definitions). Searches from both ends,
    /// always growing the smaller frontier.
    pub fn path(&self, from: &str, to: &str, max_depth: u32) -> Result<Option<Vec<CallEdge>>> {
        self.check_complete()?;
        if from == to {
            return Ok(Some(Vec::new()));
        }
        // node -> the edge it was reached by (forward: from its caller;
        // backward: to its callee).
        let mut fwd: HashMap<String, Option<CallEdge>> = HashMap::from([(from.to_owned(), None)]);
        let mut bwd: HashMap<String, Option<CallEdge>> = HashMap::from([(to.to_owned(), None)]);
        let (mut ff, mut bf) = (vec![from.to_owned()], vec![to.to_owned()]);
        let mut depth = 0;
        while depth < max_depth && !ff.is_empty() && !bf.is_empty() {
            depth += 1;
            let forward = ff.len() <= bf.len();
            let (frontier, seen, other, column) = if forward {
                (&mut ff, &mut fwd, &bwd, "src")
            } else {
                (&mut bf, &mut bwd, &fwd, "dst")
            };
            let mut next = Vec::new();
            let mut meet = None;
            'grow: for node in frontier.iter() {
                for s in self
                    .edges(column, node, "'calls'")?
                    .into_iter()
                    .take(MAX_FANOUT)
                {
                    if seen.contains_key(&s.far) {
                        continue;
                    }
                    seen.insert(s.far.clone(), Some(s.edge));
                    if other.contains_key(&s.far) {
                        meet = Some(s.far);
                        break 'grow;
                    }
                    next.push(s.far);
                }
                if visited(seen, other) > MAX_PATH_NODES {
                    return Ok(None);
                }
            }
            if let Some(mid) = meet {
                let mut chain = Vec::new();
                let mut at = mid.clone();
                while let Some(Some(edge)) = fwd.get(&at) {
                    at = edge.caller.clone();
                    chain.push(edge.clone());
                }
                chain.reverse();
                let mut at = mid;
                while let Some(Some(edge)) = bwd.get(&at) {
                    at = edge.callee.clone();
                    chain.push(edge.clone());
                }
                for (i, e) in chain.iter_mut().enumerate() {
                    e.depth = i as u32 + 1;
                }
                return Ok((chain.len() as u32 <= max_depth).then_some(chain));
            }
            *frontier = next;
        }
        Ok(None)
    }

    /// What transitively depends on `id`: its callers, subclasses and
    /// importers, and theirs, to `depth` steps, nearest first.
    pub fn affected_by(&self, id: &str, depth: u32) -> Result<Bounded<Dependent>> {
        self.check_complete()?;
        let (out, capped) = self.dependents(id, depth, "'calls', 'inherits', 'imports'")?;
        Ok(Bounded::new(out, capped, "lower --depth"))
    }

    /// Tests that reach `id` through calls (at most `depth` calls away),
    /// nearest first, then most confident.
    pub fn tests_for(&self, id: &str, depth: u32) -> Result<Bounded<Covering>> {
        self.check_complete()?;
        let (callers, capped) = self.dependents(id, depth, "'calls'")?;
        let mut out = Vec::new();
        for d in callers {
            if let Some(sym) = self.store.symbol(&d.id)?.filter(|t| t.test) {
                out.push(Covering {
                    test: sym.id,
                    file: sym.file,
                    line: sym.line,
                    depth: d.depth,
                    confidence: d.confidence,
                });
            }
        }
        out.sort_by_key(|c| (c.depth, !matches!(c.confidence, Confidence::Exact)));
        Ok(Bounded::new(out, capped, "lower --depth"))
    }

    /// Each node that reaches `id` backwards along edges of `kinds`, once,
    /// at its first depth, with the weakest confidence along the way; and
    /// whether a cap cut the walk.
    fn dependents(&self, id: &str, depth: u32, kinds: &str) -> Result<(Vec<Dependent>, bool)> {
        let mut confidence: HashMap<String, Confidence> =
            HashMap::from([(id.to_owned(), Confidence::Exact)]);
        let (steps, capped) = self.walk(id, depth, |n| self.edges("dst", n, kinds))?;
        let mut out = Vec::new();
        let mut listed = HashSet::new();
        for (level, s) in steps {
            let before = confidence
                .get(&s.edge.callee)
                .copied()
                .unwrap_or(Confidence::Exact);
            let c = weakest(before, s.edge.confidence);
            confidence.entry(s.far.clone()).or_insert(c);
            if listed.insert(s.far.clone()) {
                out.push(Dependent {
                    id: s.far,
                    via: s.via,
                    depth: level,
                    confidence: c,
                });
            }
        }
        Ok((out, capped))
    }

    pub(crate) fn known_file(&self, file: &str) -> Result<()> {
        let n: i64 = self
            .store
            .conn
            .query_row("SELECT COUNT(*) FROM files WHERE path = ?1", [file], |r| {
                r.get(0)
            })
            .map_err(self.store.db())?;
        if n == 0 {
            return Err(Error::NoSuchFile {
                file: file.to_owned(),
            });
        }
        Ok(())
    }

    /// Ids of the symbols and files one step from `node` along any edge,
    /// both directions (for the repo map).
    pub(crate) fn all_edges(&self) -> Result<Vec<(String, String, String)>> {
        let db = self.store.db();
        let mut stmt = self
            .store
            .conn
            .prepare("SELECT s.name, d.name, e.confidence FROM edge e JOIN node s ON s.nid = e.src JOIN node d ON d.nid = e.dst")
            .map_err(&db)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(&db)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db)
    }
}
