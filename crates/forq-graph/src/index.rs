//! Building and refreshing the index of a repository.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;
use sha1::Digest;

use crate::error::{Error, Result};
use crate::extract;
use crate::lang::Lang;
use crate::store::{FileRow, Store, Symbol, SymbolFilter};

/// Files larger than this are recorded as skipped, not parsed.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// A line longer than this, on average, marks a file as minified.
const MINIFIED_AVG_LINE: usize = 300;

/// What one `update` did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct IndexReport {
    /// Source files of a supported language found.
    pub files: usize,
    /// Files parsed (new or changed).
    pub parsed: usize,
    /// Files whose content hash had not changed.
    pub unchanged: usize,
    /// Files gone since the last update.
    pub removed: usize,
    /// Files skipped as binary, minified or larger than `MAX_FILE_BYTES`.
    pub skipped: usize,
    /// Files that did not parse.
    pub failed: usize,
    /// Symbols written by this update.
    pub symbols_written: usize,
}

/// The code graph of one repository, in one SQLite file.
pub struct Index {
    root: PathBuf,
    store: Store,
    queries: HashMap<Lang, extract::Queries>,
}

/// How sure the graph is that a call goes to a definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
#[non_exhaustive]
pub enum Confidence {
    /// Only one definition in the repository has the called name.
    Unique,
    /// `candidates` definitions have it; an edge goes to each, none is
    /// picked silently.
    Ambiguous {
        /// How many.
        candidates: usize,
    },
}

/// A call from one definition to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CallEdge {
    /// The calling definition's id.
    pub caller: String,
    /// The called definition's id.
    pub callee: String,
    /// Where the call is: file and 1-based line.
    pub file: String,
    /// Line of the call.
    pub line: u32,
    /// How sure the edge is.
    pub confidence: Confidence,
    /// 1 for a direct call, 2 for a call of a call, ...
    pub depth: u32,
}

/// Counts of what an index holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Stats {
    /// Files recorded (parsed or skipped).
    pub files: usize,
    /// Definitions.
    pub symbols: usize,
    /// Call sites.
    pub calls: usize,
    /// Files per language.
    pub files_by_language: std::collections::BTreeMap<String, usize>,
    /// Files per status (`parsed`, `binary`, `minified`, `too_large`, `parse_failed`).
    pub files_by_status: std::collections::BTreeMap<String, usize>,
    /// Definitions per kind.
    pub symbols_by_kind: std::collections::BTreeMap<String, usize>,
}

/// Edges followed from one definition at most, per step of a walk.
pub const MAX_FANOUT: usize = 64;

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

fn confidence(candidates: usize) -> Confidence {
    if candidates == 1 {
        Confidence::Unique
    } else {
        Confidence::Ambiguous { candidates }
    }
}

/// The id git gives a blob: SHA-1 of `blob <len>\0<content>`, in hex.
fn git_blob_id(content: &[u8]) -> String {
    let mut h = sha1::Sha1::new();
    h.update(format!("blob {}\0", content.len()).as_bytes());
    h.update(content);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Why a file is not parsed, if it is not.
fn skip_reason(content: &[u8]) -> Option<&'static str> {
    if content.iter().take(8000).any(|&b| b == 0) {
        return Some("binary");
    }
    let lines = content.iter().filter(|&&b| b == b'\n').count().max(1);
    if content.len() / lines > MINIFIED_AVG_LINE {
        return Some("minified");
    }
    None
}

impl Index {
    /// Opens (or creates) the index at `db` for the repository at `root`.
    pub fn open(db: &Path, root: &Path) -> Result<Index> {
        let root = root.canonicalize().map_err(|source| Error::Io {
            op: "open the repository",
            path: root.to_path_buf(),
            source,
        })?;
        let store = Store::open(db)?;
        let mut queries = HashMap::new();
        for lang in Lang::ALL {
            queries.insert(
                lang,
                extract::Queries {
                    defs: lang.defs_query()?,
                    calls: lang.calls_query()?,
                },
            );
        }
        Ok(Index {
            root,
            store,
            queries,
        })
    }

    /// Brings the index up to date with the files on disk: new and changed
    /// files are parsed (each in its own transaction), unchanged ones are
    /// not read past their hash, deleted ones are dropped.
    #[tracing::instrument(skip_all, fields(root = %self.root.display()))]
    pub fn update(&mut self) -> Result<IndexReport> {
        let mut report = IndexReport::default();
        let mut seen = BTreeSet::new();
        let walker = ignore::WalkBuilder::new(&self.root)
            .hidden(true)
            .git_ignore(true)
            .require_git(false)
            .filter_entry(|e| e.file_name() != ".forq")
            .build();
        for entry in walker.flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Some(lang) = Lang::of_path(entry.path()) else {
                continue;
            };
            let rel = entry
                .path()
                .strip_prefix(&self.root)
                .expect("the walk stays under its root")
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            report.files += 1;
            seen.insert(rel.clone());
            self.update_file(lang, entry.path(), rel, &mut report)?;
        }
        for gone in self.store.paths()? {
            if !seen.contains(&gone) {
                self.store.remove_file(&gone)?;
                report.removed += 1;
            }
        }
        tracing::debug!(?report, "index updated");
        Ok(report)
    }

    fn update_file(
        &mut self,
        lang: Lang,
        path: &Path,
        rel: String,
        report: &mut IndexReport,
    ) -> Result<()> {
        let io = |source| Error::Io {
            op: "read",
            path: path.to_path_buf(),
            source,
        };
        let size = std::fs::metadata(path).map_err(io)?.len();
        let mut row = FileRow {
            path: rel,
            lang: lang.name().to_owned(),
            hash: String::new(),
            size,
            status: "parsed",
        };
        if size > MAX_FILE_BYTES {
            row.status = "too_large";
            row.hash = format!("size:{size}");
        }
        let content = if row.status == "parsed" {
            std::fs::read(path).map_err(io)?
        } else {
            Vec::new()
        };
        if row.status == "parsed" {
            row.hash = git_blob_id(&content);
        }
        if self.store.file_hash(&row.path)?.as_deref() == Some(row.hash.as_str()) {
            report.unchanged += 1;
            return Ok(());
        }
        let mut symbols: Vec<Symbol> = Vec::new();
        let mut calls = Vec::new();
        if let Some(reason) = (row.status == "parsed")
            .then(|| skip_reason(&content))
            .flatten()
        {
            row.status = reason;
        }
        if row.status == "parsed" {
            match extract::extract(lang, &self.queries[&lang], &row.path, &content) {
                Some((found, sites)) => (symbols, calls) = (found, sites),
                None => row.status = "parse_failed",
            }
        }
        match row.status {
            "parsed" => report.parsed += 1,
            "parse_failed" => report.failed += 1,
            _ => report.skipped += 1,
        }
        report.symbols_written += symbols.len();
        self.store.replace_file(&row, &symbols, &calls)
    }

    /// Symbols matching `filter`, by file then line.
    pub fn symbols(&self, filter: &SymbolFilter) -> Result<Vec<Symbol>> {
        self.store.symbols(filter)
    }

    /// The symbol with this id.
    pub fn symbol(&self, id: &str) -> Result<Option<Symbol>> {
        self.store.symbol(id)
    }

    /// What `id` calls, breadth first to `depth` levels. Calls are matched
    /// by name: an edge goes to every function or method of that name,
    /// with the confidence saying how many there were.
    pub fn callees(&self, id: &str, depth: u32) -> Result<Vec<CallEdge>> {
        self.walk(id, depth, |from| {
            let mut edges = Vec::new();
            for (name, file, line) in self.store.calls_from(from)? {
                let targets = self.store.callable_ids(&name)?;
                let confidence = confidence(targets.len());
                for callee in targets {
                    edges.push((
                        callee.clone(),
                        CallEdge {
                            caller: from.to_owned(),
                            callee,
                            file: file.clone(),
                            line,
                            confidence,
                            depth: 0,
                        },
                    ));
                }
            }
            Ok(edges)
        })
    }

    /// What calls `id`, breadth first to `depth` levels.
    pub fn callers(&self, id: &str, depth: u32) -> Result<Vec<CallEdge>> {
        self.walk(id, depth, |to| {
            let Some(symbol) = self.store.symbol(to)? else {
                return Ok(Vec::new());
            };
            let confidence = confidence(self.store.callable_ids(&symbol.name)?.len());
            Ok(self
                .store
                .calls_of(&symbol.name)?
                .into_iter()
                .map(|(caller, file, line)| {
                    (
                        caller.clone(),
                        CallEdge {
                            caller,
                            callee: to.to_owned(),
                            file,
                            line,
                            confidence,
                            depth: 0,
                        },
                    )
                })
                .collect())
        })
    }

    /// The shortest chain of calls from `from` to `to`, at most
    /// `max_depth` calls long; `None` when there is none.
    pub fn path(&self, from: &str, to: &str, max_depth: u32) -> Result<Option<Vec<CallEdge>>> {
        let mut came_by: HashMap<String, CallEdge> = HashMap::new();
        let mut frontier = vec![from.to_owned()];
        let mut seen = BTreeSet::from([from.to_owned()]);
        for level in 1..=max_depth {
            let mut next = Vec::new();
            for node in &frontier {
                for mut edge in self.callees(node, 1)?.into_iter().take(MAX_FANOUT) {
                    edge.depth = level;
                    let far = edge.callee.clone();
                    if !seen.insert(far.clone()) {
                        continue;
                    }
                    came_by.insert(far.clone(), edge);
                    if far == to {
                        let mut chain = Vec::new();
                        let mut at = far;
                        while let Some(edge) = came_by.remove(&at) {
                            at = edge.caller.clone();
                            chain.push(edge);
                        }
                        chain.reverse();
                        return Ok(Some(chain));
                    }
                    next.push(far);
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        Ok(None)
    }

    /// Counts of what the index holds.
    pub fn stats(&self) -> Result<Stats> {
        let total = |rows: &[(String, usize)]| rows.iter().map(|(_, n)| n).sum();
        let files_by_language = self
            .store
            .counts("SELECT lang, COUNT(*) FROM files GROUP BY lang ORDER BY lang")?;
        let files_by_status = self
            .store
            .counts("SELECT status, COUNT(*) FROM files GROUP BY status ORDER BY status")?;
        let symbols_by_kind = self
            .store
            .counts("SELECT kind, COUNT(*) FROM symbols GROUP BY kind ORDER BY kind")?;
        let calls = self.store.counts("SELECT 'calls', COUNT(*) FROM calls")?;
        Ok(Stats {
            files: total(&files_by_language),
            symbols: total(&symbols_by_kind),
            calls: total(&calls),
            files_by_language: files_by_language.into_iter().collect(),
            files_by_status: files_by_status.into_iter().collect(),
            symbols_by_kind: symbols_by_kind.into_iter().collect(),
        })
    }

    /// Breadth-first walk: `step` gives each node's edges with the node at
    /// their far end; each node is expanded once, at most `MAX_FANOUT`
    /// edges per node.
    fn walk(
        &self,
        start: &str,
        depth: u32,
        step: impl Fn(&str) -> Result<Vec<(String, CallEdge)>>,
    ) -> Result<Vec<CallEdge>> {
        let mut out = Vec::new();
        let mut seen = BTreeSet::from([start.to_owned()]);
        let mut frontier = vec![start.to_owned()];
        for level in 1..=depth {
            let mut next = Vec::new();
            for node in &frontier {
                for (far, mut edge) in step(node)?.into_iter().take(MAX_FANOUT) {
                    edge.depth = level;
                    out.push(edge);
                    if seen.insert(far.clone()) {
                        next.push(far);
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        Ok(out)
    }

    /// The indexed root.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_ids_are_gits() {
        // `printf 'hello\n' | git hash-object --stdin` and `git hash-object /dev/null`
        assert_eq!(
            git_blob_id(b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        assert_eq!(git_blob_id(b""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
    }

    #[test]
    fn binary_and_minified_files_are_skipped() {
        assert_eq!(skip_reason(b"a\0b"), Some("binary"));
        assert_eq!(skip_reason(&vec![b'x'; 5000]), Some("minified"));
        assert_eq!(skip_reason(b"def f():\n    pass\n"), None);
    }
}
